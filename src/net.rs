//! Listening sockets for agentd's servers (the API, and the fake model's).

use tokio::net::{TcpListener, TcpSocket};

/// Connections the kernel may queue before they are accepted. tokio's default (1,024) overflows
/// when thousands of clients connect at once (thousands of kickoffs, say), and a dropped SYN is
/// retried only after 1 s, then 3 s: seconds added to a kickoff. The kernel caps this at
/// `net.core.somaxconn`.
const ACCEPT_BACKLOG: u32 = 8192;

/// A listening socket on `addr` (port 0: a free one) with a deep accept queue.
pub fn listen(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(ACCEPT_BACKLOG)
}

/// Which browser origins may call the agent protocols' endpoints (`/mcp`, `/a2a…`, the AG-UI
/// endpoint): the defence against DNS rebinding the MCP transport demands ("Servers MUST validate
/// the `Origin` header on all incoming connections … If the `Origin` header is present and
/// invalid, servers MUST respond with HTTP 403 Forbidden"). A request without `Origin` (any
/// client that is not a browser) is not affected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum OriginPolicy {
    /// The listening address's own origins: `http(s)://` + `localhost`, `127.0.0.1` or `[::1]`
    /// when it listens on loopback or on every address, or its one address, with its port.
    #[default]
    Bind,
    /// Any origin (`*`).
    Any,
    /// These origins (`scheme://host[:port]`, serialized as browsers send them).
    Only(Vec<String>),
}

impl OriginPolicy {
    /// Read the `allowed_origins` setting: empty for [`OriginPolicy::Bind`], `*`, or a
    /// comma-separated list of origins.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Self::Bind);
        }
        if text == "*" {
            return Ok(Self::Any);
        }
        let mut origins = Vec::new();
        for item in text.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            if item == "*" {
                return Err("`*` allows every origin: give it alone".to_owned());
            }
            origins.push(origin_of(item).ok_or_else(|| {
                format!("'{item}' is not an origin: scheme://host[:port], http or https, no path")
            })?);
        }
        Ok(Self::Only(origins))
    }

    /// Does a request with `Origin: origin` to a server listening on `local` pass?
    pub fn allows(&self, origin: &str, local: std::net::SocketAddr) -> bool {
        match self {
            Self::Any => true,
            Self::Only(allowed) => origin_of(origin).is_some_and(|origin| allowed.contains(&origin)),
            Self::Bind => {
                let Some(url) = url::Url::parse(origin).ok().filter(|url| origin_of(url.as_str()).is_some())
                else {
                    return false;
                };
                let Some(host) = url.host_str().map(str::to_ascii_lowercase) else { return false };
                if url.port_or_known_default() != Some(local.port()) {
                    return false;
                }
                let ip = local.ip();
                let loopback_name = matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]");
                if ip.is_loopback() || ip.is_unspecified() {
                    return loopback_name;
                }
                let own = match ip {
                    std::net::IpAddr::V4(v4) => v4.to_string(),
                    std::net::IpAddr::V6(v6) => format!("[{v6}]"),
                };
                host == own
            }
        }
    }
}

/// `text` as an origin (`scheme://host[:port]`, the default port left out, lower case), if it is
/// one: http or https, a host, nothing after it but an optional `/`.
fn origin_of(text: &str) -> Option<String> {
    let url = url::Url::parse(text).ok()?;
    let bare = url.path() == "/" && url.query().is_none() && url.fragment().is_none();
    let plain = url.username().is_empty() && url.password().is_none();
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() || !bare || !plain {
        return None;
    }
    Some(url.origin().ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> std::net::SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_bind_allows_its_own_origins_only() {
        let policy = OriginPolicy::Bind;
        let local = addr("127.0.0.1:8080");
        for ok in
            ["http://localhost:8080", "http://127.0.0.1:8080", "http://[::1]:8080", "https://LOCALHOST:8080"]
        {
            assert!(policy.allows(ok, local), "{ok}");
        }
        for refused in [
            "http://evil.example.com",
            "http://evil.example.com:8080",
            "http://localhost:9090",
            "http://localhost",
            "null",
            "file://",
            "http://127.0.0.1:8080/path",
        ] {
            assert!(!policy.allows(refused, local), "{refused}");
        }
        let public = addr("10.1.2.3:80");
        assert!(policy.allows("http://10.1.2.3", public));
        assert!(!policy.allows("http://localhost", public));
        assert!(policy.allows("http://localhost:9000", addr("0.0.0.0:9000")));
    }

    #[test]
    fn the_setting_lists_origins_or_any() {
        assert_eq!(OriginPolicy::parse(" ").unwrap(), OriginPolicy::Bind);
        assert_eq!(OriginPolicy::parse("*").unwrap(), OriginPolicy::Any);
        let listed = OriginPolicy::parse("https://app.example.com, http://localhost:3000/").unwrap();
        assert_eq!(
            listed,
            OriginPolicy::Only(vec!["https://app.example.com".into(), "http://localhost:3000".into()])
        );
        assert!(listed.allows("https://app.example.com:443", addr("127.0.0.1:8080")));
        assert!(!listed.allows("https://other.example.com", addr("127.0.0.1:8080")));
        assert!(OriginPolicy::parse("app.example.com").is_err());
        assert!(OriginPolicy::parse("https://a.example.com/path").is_err());
        assert!(OriginPolicy::parse("*, https://a.example.com").is_err());
    }
}
