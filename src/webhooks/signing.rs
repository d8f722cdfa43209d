//! Standard Webhooks signatures: the server's signing secret (`AGENTD_WEBHOOK_SECRET`,
//! `whsec_<base64>`), the endpoint secrets derived from it, and the `webhook-signature` header.
//!
//! An endpoint's secret is never stored: it is HMAC-SHA256(server secret, salt), the salt being
//! random bytes kept with the endpoint (useless without the server secret). A rotation draws a new
//! salt and keeps the previous one for a grace period, during which both secrets sign.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// The prefix of Standard Webhooks secrets.
pub const SECRET_PREFIX: &str = "whsec_";
/// Bytes of a salt (and of a derived secret).
pub const SALT_BYTES: usize = 32;
/// Shortest server secret accepted, in bytes (Standard Webhooks: 24 to 64).
const MIN_SECRET_BYTES: usize = 24;
const MAX_SECRET_BYTES: usize = 64;

/// The server's signing secret. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct SigningKey {
    bytes: Vec<u8>,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey(***)")
    }
}

/// One secret a message is signed with.
pub struct EndpointSecret(Vec<u8>);

impl fmt::Debug for EndpointSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EndpointSecret(***)")
    }
}

impl EndpointSecret {
    /// As a receiver configures it: `whsec_<base64>`.
    pub fn to_whsec(&self) -> String {
        format!("{SECRET_PREFIX}{}", STANDARD.encode(&self.0))
    }
}

impl SigningKey {
    /// Read `whsec_<base64>` (24 to 64 bytes; `openssl rand -base64 32` after the prefix).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let encoded = text.strip_prefix(SECRET_PREFIX).ok_or("must start with whsec_")?;
        let bytes = STANDARD
            .decode(encoded)
            .map_err(|_| "must be whsec_ followed by base64 (e.g. whsec_$(openssl rand -base64 32))")?;
        if !(MIN_SECRET_BYTES..=MAX_SECRET_BYTES).contains(&bytes.len()) {
            return Err(format!(
                "must hold {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} bytes, not {}",
                bytes.len()
            ));
        }
        Ok(Self { bytes })
    }

    /// The secret of an endpoint with this salt; the server secret itself without one (a
    /// kickoff's own webhooks).
    pub fn endpoint_secret(&self, salt: Option<&[u8]>) -> EndpointSecret {
        match salt {
            None => EndpointSecret(self.bytes.clone()),
            Some(salt) => {
                let key = hmac::Key::new(hmac::HMAC_SHA256, &self.bytes);
                let mut context = hmac::Context::with_key(&key);
                context.update(b"agentd webhook endpoint\0");
                context.update(salt);
                EndpointSecret(context.sign().as_ref().to_vec())
            }
        }
    }
}

/// A fresh random salt.
pub fn new_salt() -> Result<Vec<u8>, String> {
    let mut salt = vec![0u8; SALT_BYTES];
    SystemRandom::new().fill(&mut salt).map_err(|_| "the system random source failed".to_owned())?;
    Ok(salt)
}

/// The `webhook-signature` header of a message: `v1,<base64>` per secret, space-separated.
pub fn signature_header(secrets: &[EndpointSecret], id: &str, timestamp: i64, body: &str) -> String {
    let signed = format!("{id}.{timestamp}.");
    secrets
        .iter()
        .map(|secret| {
            let key = hmac::Key::new(hmac::HMAC_SHA256, &secret.0);
            let mut context = hmac::Context::with_key(&key);
            context.update(signed.as_bytes());
            context.update(body.as_bytes());
            format!("v1,{}", STANDARD.encode(context.sign().as_ref()))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_secret_is_whsec_base64_of_24_to_64_bytes() {
        assert!(SigningKey::parse(&format!("whsec_{}", STANDARD.encode([7u8; 32]))).is_ok());
        assert!(SigningKey::parse(&STANDARD.encode([7u8; 32])).is_err(), "no prefix");
        assert!(SigningKey::parse("whsec_not base64!").is_err());
        assert!(SigningKey::parse(&format!("whsec_{}", STANDARD.encode([7u8; 16]))).is_err());
        assert_eq!(
            format!("{:?}", SigningKey::parse(&format!("whsec_{}", STANDARD.encode([7u8; 32])))),
            "Ok(SigningKey(***))"
        );
    }

    #[test]
    fn the_signature_is_the_standard_webhooks_example() {
        // The example of the Standard Webhooks specification (and its libraries' tests).
        let key = SigningKey::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("key");
        let header = signature_header(
            &[key.endpoint_secret(None)],
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(header, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn endpoint_secrets_differ_by_salt_and_sign_alongside() {
        let key = SigningKey::parse(&format!("whsec_{}", STANDARD.encode([9u8; 32]))).expect("key");
        let (a, b) = (key.endpoint_secret(Some(&[1; 32])), key.endpoint_secret(Some(&[2; 32])));
        assert_ne!(a.to_whsec(), b.to_whsec());
        assert_eq!(a.to_whsec(), key.endpoint_secret(Some(&[1; 32])).to_whsec(), "derivation is stable");
        let both = signature_header(&[a, b], "msg_1", 1, "{}");
        assert_eq!(both.split(' ').count(), 2);
        assert!(both.split(' ').all(|s| s.starts_with("v1,")));
    }
}
