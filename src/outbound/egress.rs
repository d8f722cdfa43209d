//! The egress guard for every outbound tool request (SSRF defence). This module owns the
//! operator's allow-list of private tool hosts ([`EgressPolicy`], from
//! `AGENTD_ALLOW_PRIVATE_TOOL_HOSTS`), the classification of IP addresses as public or not
//! ([`is_public_ip`]; the reserved ranges and the allow-list's networks are `ipnet` networks, so
//! the prefix arithmetic is the crate's), the recognition of IP literals in every spelling
//! ([`parse_host_ip`]), the URL check ([`EgressPolicy::check_url`]) and the guarded HTTP client
//! ([`guarded_client`]).
//!
//! How the layers fit together:
//! - [`EgressPolicy::check_url`] judges the scheme and an IP-literal host. Callers **must** run it
//!   on the first URL of every request: hyper connects to IP literals directly, without asking
//!   the resolver, so the client alone does not see them.
//! - [`GuardedResolver`] (installed by [`guarded_client`]) resolves host names and drops every
//!   address the policy does not allow. reqwest connects only to addresses the resolver returned,
//!   so the address judged is the address connected to (no DNS-rebinding window).
//! - The client's redirect policy runs [`EgressPolicy::check_url`] on every hop (host names on a
//!   hop go through the resolver again) and stops after [`MAX_REDIRECTS`] hops.
//! - [`EgressError::find_in`] digs the guard's verdict out of a `reqwest::Error`, so the tool can
//!   show the short, secret-free message to the model.
//! - [`EgressPolicy::refusing_public`] turns public addresses away too, leaving only the
//!   allow-list: the end-to-end tests' guard, so that nothing a test names leaves the machine.

use std::error::Error as StdError;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

/// Redirect hops a guarded client follows before giving up.
pub const MAX_REDIRECTS: usize = 5;

/// Longest host name or scheme quoted in an error message.
const MAX_QUOTED: usize = 80;

/// Why an outbound request was refused. Messages are short and safe to show to a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressError {
    #[error("blocked: only http and https URLs are allowed, not {0}")]
    Scheme(String),
    #[error("blocked: the URL has no host")]
    NoHost,
    #[error("blocked: {0} is a loopback/private/reserved address")]
    PrivateAddress(IpAddr),
    #[error("blocked: {0} resolves only to loopback/private/reserved addresses")]
    PrivateHost(String),
    #[error("blocked: {0} is not on the allow-list, and public addresses are refused")]
    NotAllowed(String),
    #[error("could not resolve host {0}")]
    Unresolved(String),
    #[error("blocked: more than {} redirects", MAX_REDIRECTS)]
    TooManyRedirects,
    #[error("could not build the HTTP client: {0}")]
    Client(String),
}

impl EgressError {
    /// The guard's verdict inside an error chain (e.g. a `reqwest::Error` from a blocked
    /// resolution or redirect), if the guard is why the request failed.
    pub fn find_in<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a EgressError> {
        let mut current = Some(err);
        while let Some(e) = current {
            if let Some(found) = e.downcast_ref::<EgressError>() {
                return Some(found);
            }
            current = e.source();
        }
        None
    }
}

/// Cuts a string quoted in an error message to [`MAX_QUOTED`] characters.
fn quoted(s: &str) -> String {
    match s.char_indices().nth(MAX_QUOTED) {
        Some((end, _)) => format!("{}...", &s[..end]),
        None => s.to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Address classification
// ---------------------------------------------------------------------------------------------

/// IPv4 ranges that are not public.
const NON_PUBLIC_V4: [Ipv4Net; 15] = [
    v4net(0, 0, 0, 0, 8),       // "this network"
    v4net(10, 0, 0, 0, 8),      // private
    v4net(100, 64, 0, 0, 10),   // CGNAT, includes Alibaba metadata 100.100.100.200
    v4net(127, 0, 0, 0, 8),     // loopback
    v4net(169, 254, 0, 0, 16),  // link-local, includes cloud metadata 169.254.169.254
    v4net(172, 16, 0, 0, 12),   // private
    v4net(192, 0, 0, 0, 24),    // IETF protocol assignments
    v4net(192, 0, 2, 0, 24),    // TEST-NET-1
    v4net(192, 88, 99, 0, 24),  // 6to4 relay anycast
    v4net(192, 168, 0, 0, 16),  // private
    v4net(198, 18, 0, 0, 15),   // benchmarking
    v4net(198, 51, 100, 0, 24), // TEST-NET-2
    v4net(203, 0, 113, 0, 24),  // TEST-NET-3
    v4net(224, 0, 0, 0, 4),     // multicast
    v4net(240, 0, 0, 0, 4),     // reserved, includes broadcast 255.255.255.255
];

/// Global unicast: the only IPv6 range that can be public.
const GLOBAL_UNICAST_V6: Ipv6Net = v6net([0x2000, 0, 0, 0, 0, 0, 0, 0], 3);

/// IPv6 ranges inside global unicast 2000::/3 that are not public.
const NON_PUBLIC_V6_GLOBAL: [Ipv6Net; 4] = [
    v6net([0x2001, 0x0db8, 0, 0, 0, 0, 0, 0], 32), // documentation
    v6net([0x2001, 0x0002, 0, 0, 0, 0, 0, 0], 48), // benchmarking
    v6net([0x2001, 0x0010, 0, 0, 0, 0, 0, 0], 28), // ORCHID (deprecated)
    v6net([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20),      // documentation (RFC 9637)
];

/// IPv6 ranges whose addresses embed an IPv4 address.
const V4_COMPATIBLE: Ipv6Net = v6net([0, 0, 0, 0, 0, 0, 0, 0], 96);
const V4_MAPPED: Ipv6Net = v6net([0, 0, 0, 0, 0, 0xffff, 0, 0], 96);
const NAT64: Ipv6Net = v6net([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96);
const NAT64_LOCAL: Ipv6Net = v6net([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48);
const NAT64_LOCAL_96: Ipv6Net = v6net([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 96);
const SIX_TO_FOUR: Ipv6Net = v6net([0x2002, 0, 0, 0, 0, 0, 0, 0], 16);
const TEREDO: Ipv6Net = v6net([0x2001, 0, 0, 0, 0, 0, 0, 0], 32);

const fn v4net(a: u8, b: u8, c: u8, d: u8, prefix: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), prefix)
}

const fn v6net(s: [u16; 8], prefix: u8) -> Ipv6Net {
    Ipv6Net::new_assert(Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]), prefix)
}

/// Whether an address may be reached by a tool without the operator's permission: false for
/// loopback, private, link-local, CGNAT, documentation, multicast and other reserved ranges.
/// IPv6 addresses outside global unicast 2000::/3 are never public (this covers ::, ::1,
/// fc00::/7, fe80::/10, fec0::/10, ff00::/8 and 100::/64); IPv6 forms that embed an IPv4
/// address are judged by the embedded address.
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(addr) => is_public_v4(addr),
        IpAddr::V6(addr) => is_public_v6(addr),
    }
}

fn is_public_v4(addr: Ipv4Addr) -> bool {
    !NON_PUBLIC_V4.iter().any(|net| net.contains(&addr))
}

fn is_public_v6(addr: Ipv6Addr) -> bool {
    if let Some(verdict) = judge_embedded_v4(addr) {
        return verdict;
    }
    GLOBAL_UNICAST_V6.contains(&addr) && !NON_PUBLIC_V6_GLOBAL.iter().any(|net| net.contains(&addr))
}

/// The verdict for an IPv6 address that embeds an IPv4 address, or `None` for other addresses.
fn judge_embedded_v4(addr: Ipv6Addr) -> Option<bool> {
    let bits = u128::from(addr);
    let low = Ipv4Addr::from(bits as u32);
    if V4_COMPATIBLE.contains(&addr) || V4_MAPPED.contains(&addr) {
        // IPv4-compatible ::a.b.c.d (this includes :: and ::1) and IPv4-mapped ::ffff:a.b.c.d
        return Some(is_public_v4(low));
    }
    if NAT64.contains(&addr) {
        // NAT64 well-known prefix 64:ff9b::/96
        return Some(is_public_v4(low));
    }
    if NAT64_LOCAL.contains(&addr) {
        // Local-use NAT64 64:ff9b:1::/48: only the /96 layout has a knowable embedded address.
        return Some(NAT64_LOCAL_96.contains(&addr) && is_public_v4(low));
    }
    if SIX_TO_FOUR.contains(&addr) {
        // 6to4 2002:a.b.c.d::/48
        return Some(is_public_v4(Ipv4Addr::from((bits >> 80) as u32)));
    }
    if TEREDO.contains(&addr) {
        // Teredo 2001:0:server::/32; the client address is the last 32 bits inverted.
        let server = Ipv4Addr::from((bits >> 64) as u32);
        return Some(is_public_v4(server) && is_public_v4(Ipv4Addr::from(!(bits as u32))));
    }
    None
}

// ---------------------------------------------------------------------------------------------
// IP literals
// ---------------------------------------------------------------------------------------------

/// Recognises an IP literal host in any spelling that `inet_aton` or a browser accepts: dotted
/// decimal, a single 32-bit number, hex and octal parts, short forms (`127.1`), a trailing dot,
/// bracketed or bare IPv6, and IPv6 with a zone id (`%25eth0` or `%eth0`, ignored). `None` means
/// the host is not an IP literal (it is then a name, judged by the resolver).
pub fn parse_host_ip(host: &str) -> Option<IpAddr> {
    let host = host.trim();
    if let Some(inner) = host.strip_prefix('[') {
        return parse_v6(inner.strip_suffix(']')?).map(IpAddr::V6);
    }
    if host.contains(':') {
        return parse_v6(host).map(IpAddr::V6);
    }
    parse_v4(host).map(IpAddr::V4)
}

fn parse_v6(s: &str) -> Option<Ipv6Addr> {
    let addr = s.split_once('%').map_or(s, |(addr, _zone)| addr);
    addr.parse().ok()
}

fn parse_v4(s: &str) -> Option<Ipv4Addr> {
    let s = s.strip_suffix('.').unwrap_or(s);
    if s.is_empty() {
        return None;
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let numbers = parts.iter().map(|p| parse_v4_part(p)).collect::<Option<Vec<u64>>>()?;
    combine_v4(&numbers)
}

/// One part of an IPv4 literal: `0x` hex, leading-zero octal or decimal.
fn parse_v4_part(part: &str) -> Option<u64> {
    let (digits, radix) = if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
        (hex, 16)
    } else if part.len() > 1 && part.starts_with('0') {
        (&part[1..], 8)
    } else {
        (part, 10)
    };
    if digits.is_empty() {
        // "0x" alone is zero; an empty part is not a number.
        return (radix == 16).then_some(0);
    }
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let significant = digits.trim_start_matches('0');
    if significant.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(significant, radix).ok()
}

/// Joins parsed parts: all but the last are bytes, the last fills the remaining bytes.
fn combine_v4(numbers: &[u64]) -> Option<Ipv4Addr> {
    let (&last, init) = numbers.split_last()?;
    if init.iter().any(|&n| n > 255) {
        return None;
    }
    let last_bits = 8 * (4 - init.len() as u32);
    if last >= 1u64 << last_bits {
        return None;
    }
    let head = init.iter().enumerate().fold(0u64, |acc, (i, &n)| acc | n << (24 - 8 * i as u32));
    u32::try_from(head | last).ok().map(Ipv4Addr::from)
}

// ---------------------------------------------------------------------------------------------
// Policy
// ---------------------------------------------------------------------------------------------

/// A network in the allow-list: `net/prefix`, or a bare address meaning that single address.
/// The address may be spelt any way [`parse_host_ip`] reads; the prefix is plain decimal.
fn parse_cidr(entry: &str) -> Result<IpNet, &'static str> {
    let (addr, prefix) = match entry.split_once('/') {
        Some((addr, prefix)) => (addr, Some(prefix)),
        None => (entry, None),
    };
    let ip = parse_host_ip(addr).ok_or("not an IP address")?;
    let width = if ip.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix {
        None => width,
        Some(p) => parse_prefix(p, width).ok_or("bad prefix length")?,
    };
    let net = IpNet::new(ip, prefix).map_err(|_| "bad prefix length")?;
    if net.trunc() != net {
        return Err("address has bits set beyond the prefix length");
    }
    Ok(net)
}

/// Whether an allowed network holds the address; an IPv4-mapped IPv6 address counts as its
/// IPv4 address.
fn net_contains(net: &IpNet, ip: IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    };
    net.contains(&ip)
}

fn parse_prefix(s: &str, width: u8) -> Option<u8> {
    if s.is_empty() || s.len() > 3 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u8>().ok().filter(|&p| p <= width)
}

/// A host name as compared: lower case, without one trailing dot.
fn normalize_host(host: &str) -> String {
    let host = host.strip_suffix('.').unwrap_or(host);
    host.to_ascii_lowercase()
}

/// An allow-list host name, normalised the way URL hosts are (IDNA, lower case).
fn parse_host_name(entry: &str) -> Result<String, &'static str> {
    let parsed = Host::parse(entry).map_err(|_| "not a host name, IP address or CIDR")?;
    let Host::Domain(domain) = parsed else {
        return Err("not a host name, IP address or CIDR");
    };
    let name = normalize_host(&domain);
    let valid_label =
        |l: &str| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !name.split('.').all(valid_label) {
        return Err("not a valid host name");
    }
    Ok(name)
}

/// Which private destinations tools may reach: the operator's `AGENTD_ALLOW_PRIVATE_TOOL_HOSTS`.
/// The default allows nothing private and every public address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressPolicy {
    /// Host names whose every address is allowed (normalised).
    hosts: Vec<String>,
    /// Networks whose addresses are allowed even though not public.
    nets: Vec<IpNet>,
    /// Whether public addresses are allowed (always, except with [`EgressPolicy::refusing_public`]).
    public: bool,
}

impl Default for EgressPolicy {
    fn default() -> Self {
        Self { hosts: Vec::new(), nets: Vec::new(), public: true }
    }
}

impl EgressPolicy {
    /// Parses a comma-separated list of host names, CIDRs (`10.0.0.0/8`, `::1/128`) and bare IP
    /// addresses. Blank entries are ignored; a malformed entry is an error naming it.
    pub fn parse(list: &str) -> Result<EgressPolicy, String> {
        let mut policy = EgressPolicy::default();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            policy.add_entry(entry).map_err(|reason| {
                format!("malformed entry {entry:?} in the private tool host allow-list: {reason}")
            })?;
        }
        Ok(policy)
    }

    fn add_entry(&mut self, entry: &str) -> Result<(), &'static str> {
        if entry.contains('/') || parse_host_ip(entry).is_some() {
            self.nets.push(parse_cidr(entry)?);
        } else {
            self.hosts.push(parse_host_name(entry)?);
        }
        Ok(())
    }

    /// True when nothing private is allowed.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty() && self.nets.is_empty()
    }

    /// The same allow-list with public addresses refused too: only what the list names may be
    /// reached. The end-to-end tests use it so that no request of theirs leaves the machine; a
    /// host name nothing on the list could allow is refused without asking DNS.
    pub fn refusing_public(self) -> Self {
        Self { public: false, ..self }
    }

    /// Whether the host name is allow-listed (case-insensitive, trailing dot ignored).
    pub fn allows_host(&self, host: &str) -> bool {
        let host = normalize_host(host);
        self.hosts.contains(&host)
    }

    /// Whether a tool may connect to the address: public (unless public addresses are refused),
    /// or inside an allowed network.
    pub fn allows_ip(&self, ip: IpAddr) -> bool {
        (self.public && is_public_ip(ip)) || self.nets.iter().any(|net| net_contains(net, ip))
    }

    /// Judges a URL before it is requested: only http and https, a host is required, and an
    /// IP-literal host must be allowed. Host names pass here; the resolver judges their addresses.
    #[tracing::instrument(level = "debug", skip_all, fields(host = url.host_str()))]
    pub fn check_url(&self, url: &Url) -> Result<(), EgressError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(EgressError::Scheme(quoted(url.scheme())));
        }
        let verdict = match url.host().ok_or(EgressError::NoHost)? {
            Host::Ipv4(addr) => self.check_ip(IpAddr::V4(addr)),
            Host::Ipv6(addr) => self.check_ip(IpAddr::V6(addr)),
            Host::Domain(name) => self.check_name(name),
        };
        if let Err(e) = &verdict {
            tracing::warn!(error = %e, "egress: URL blocked");
        }
        verdict
    }

    fn check_ip(&self, ip: IpAddr) -> Result<(), EgressError> {
        if self.allows_ip(ip) {
            Ok(())
        } else if is_public_ip(ip) {
            Err(EgressError::NotAllowed(ip.to_string()))
        } else {
            Err(EgressError::PrivateAddress(ip))
        }
    }

    fn check_name(&self, name: &str) -> Result<(), EgressError> {
        if name.is_empty() {
            return Err(EgressError::NoHost);
        }
        match parse_host_ip(name) {
            Some(ip) => self.check_ip(ip),
            None => Ok(()),
        }
    }

    /// Resolves a host name to the addresses a tool may connect to (port 0: the caller sets
    /// it). All addresses of an allow-listed name are kept; otherwise only allowed addresses.
    #[tracing::instrument(level = "debug", skip(self))]
    pub async fn resolve_host(&self, host: &str) -> Result<Vec<SocketAddr>, EgressError> {
        if !self.public && self.nets.is_empty() && !self.allows_host(host) {
            // No address could be allowed: DNS is not asked.
            return Err(EgressError::NotAllowed(quoted(host)));
        }
        let found = lookup(host).await?;
        let total = found.len();
        let kept: Vec<SocketAddr> = if self.allows_host(host) {
            found
        } else {
            found.into_iter().filter(|addr| self.allows_ip(addr.ip())).collect()
        };
        tracing::debug!(total, kept = kept.len(), "egress: resolved");
        if kept.is_empty() {
            tracing::warn!(host, "egress: host resolves only to disallowed addresses");
            return Err(match self.public {
                true => EgressError::PrivateHost(quoted(host)),
                false => EgressError::NotAllowed(quoted(host)),
            });
        }
        Ok(kept)
    }
}

/// The addresses of a host; an IP literal in any spelling is its own address (no DNS query).
async fn lookup(host: &str) -> Result<Vec<SocketAddr>, EgressError> {
    if let Some(ip) = parse_host_ip(host) {
        return Ok(vec![SocketAddr::new(ip, 0)]);
    }
    let unresolved = || EgressError::Unresolved(quoted(host));
    let found: Vec<SocketAddr> =
        tokio::net::lookup_host((host, 0)).await.map_err(|_| unresolved())?.collect();
    if found.is_empty() {
        return Err(unresolved());
    }
    Ok(found)
}

// ---------------------------------------------------------------------------------------------
// Guarded client
// ---------------------------------------------------------------------------------------------

/// A `reqwest` resolver that returns only addresses the policy allows.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    policy: Arc<EgressPolicy>,
}

impl GuardedResolver {
    pub fn new(policy: Arc<EgressPolicy>) -> Self {
        Self { policy }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            match policy.resolve_host(&host).await {
                Ok(addrs) => Ok(Box::new(addrs.into_iter()) as Addrs),
                Err(e) => Err(Box::new(e) as Box<dyn StdError + Send + Sync>),
            }
        })
    }
}

/// Re-checks every redirect hop and stops after [`MAX_REDIRECTS`] hops.
fn redirect_policy(policy: Arc<EgressPolicy>) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        // `previous` holds the first URL and every hop followed so far.
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(EgressError::TooManyRedirects);
        }
        match policy.check_url(attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(e) => attempt.error(e),
        }
    })
}

/// An HTTP client for tool requests: rustls, no environment proxy, the guarded resolver, a
/// per-request timeout, and redirects re-checked hop by hop. Callers must still run
/// [`EgressPolicy::check_url`] on the first URL (IP literals never reach the resolver).
#[tracing::instrument(level = "debug", skip(policy))]
pub fn guarded_client(policy: Arc<EgressPolicy>, timeout: Duration) -> Result<reqwest::Client, EgressError> {
    reqwest::Client::builder()
        .use_rustls_tls()
        .tcp_nodelay(true)
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver::new(Arc::clone(&policy))))
        .timeout(timeout)
        .redirect(redirect_policy(policy))
        .build()
        .map_err(|e| EgressError::Client(e.to_string()))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn policy(list: &str) -> EgressPolicy {
        EgressPolicy::parse(list).unwrap()
    }

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn non_public_addresses() {
        let blocked = [
            // IPv4
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "100.64.0.1",
            "100.100.100.200",
            "100.127.255.255",
            "127.0.0.1",
            "127.255.255.254",
            "169.254.0.1",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.1",
            "192.0.0.170",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.0.1",
            "192.168.255.255",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.254",
            "255.255.255.255",
            // IPv6
            "::",
            "::1",
            "fc00::1",
            "fd00::1",
            "fd00:ec2::254",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "ff0e::1",
            "2001:db8::1",
            "2001:db8:ffff::1",
            "100::1",
            "100::ffff:ffff:ffff:ffff",
            "3fff::1",
            "2001:2::1",
            "2001:10::1",
            // IPv6 embedding a non-public IPv4 address
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::ffff:0.0.0.0",
            "::127.0.0.1",
            "::10.0.0.1",
            "64:ff9b::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::10.0.0.1",
            "64:ff9b:1:7f00:1::",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "2002:c0a8:0101::",
            "2001:0:4136:e378:8000:63bf:80ff:fffe",
            "2001:0:4136:e378:8000:63bf:f5ff:fffe",
            "2001:0:a00:1::",
            // unallocated, outside 2000::/3
            "4000::1",
            "::2:0:0:1",
        ];
        for s in blocked {
            assert!(!is_public_ip(ip(s)), "{s} must not be public");
        }
    }

    #[test]
    fn public_addresses() {
        let public = [
            "8.8.8.8",
            "1.1.1.1",
            "9.9.9.9",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.0.1.1",
            "192.88.98.1",
            "192.169.0.1",
            "198.17.255.255",
            "198.20.0.1",
            "223.255.255.255",
            "11.0.0.1",
            "126.255.255.255",
            "128.0.0.1",
            "169.253.0.1",
            "2606:4700::1111",
            "2001:4860:4860::8888",
            "2a00:1450:4001::1",
            "::ffff:8.8.8.8",
            "::8.8.8.8",
            "64:ff9b::8.8.8.8",
            "64:ff9b:1::1.1.1.1",
            "2002:808:808::1",
            "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
        ];
        for s in public {
            assert!(is_public_ip(ip(s)), "{s} must be public");
        }
    }

    #[test]
    fn ip_literal_spellings() {
        let cases = [
            ("127.0.0.1", "127.0.0.1"),
            ("2130706433", "127.0.0.1"),
            ("0x7f000001", "127.0.0.1"),
            ("0X7F000001", "127.0.0.1"),
            ("0x7f.0.0.1", "127.0.0.1"),
            ("0x7f.0x0.0x0.0x1", "127.0.0.1"),
            ("0177.0.0.1", "127.0.0.1"),
            ("017700000001", "127.0.0.1"),
            ("00000000177.0.0.1", "127.0.0.1"),
            ("127.1", "127.0.0.1"),
            ("127.0.1", "127.0.0.1"),
            ("127.0.0.1.", "127.0.0.1"),
            ("0x7f.1.", "127.0.0.1"),
            ("169.254.43518", "169.254.169.254"),
            ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
            ("2852039166", "169.254.169.254"),
            ("0", "0.0.0.0"),
            ("0x", "0.0.0.0"),
            ("10.0x", "10.0.0.0"),
            ("4294967295", "255.255.255.255"),
            (" 127.0.0.1 ", "127.0.0.1"),
            ("[::1]", "::1"),
            ("::1", "::1"),
            ("[::ffff:127.0.0.1]", "::ffff:127.0.0.1"),
            ("[::FFFF:7F00:1]", "::ffff:127.0.0.1"),
            ("[fe80::1%25eth0]", "fe80::1"),
            ("[fe80::1%eth0]", "fe80::1"),
            ("fe80::1%eth0", "fe80::1"),
        ];
        for (input, expected) in cases {
            assert_eq!(parse_host_ip(input), Some(ip(expected)), "{input}");
        }
    }

    #[test]
    fn not_ip_literals() {
        let names = [
            "",
            ".",
            "localhost",
            "example.com",
            "1.2.3.4.5",
            "1..2",
            ".1.2",
            "256.0.0.1",
            "1.256.0.1",
            "1.2.65536",
            "1.16777216",
            "4294967296",
            "0x100000000",
            "08.0.0.1",
            "0129",
            "0xg",
            "+1.2.3.4",
            "1.2.3.-4",
            "127.0.0.1..",
            "1e3",
            "[::1",
            "::1]",
            "[127.0.0.1]",
            "[::g]",
            "99999999999999999999999",
            "0x7f000001.example",
        ];
        for name in names {
            assert_eq!(parse_host_ip(name), None, "{name:?}");
        }
    }

    #[test]
    fn url_normalises_ip_spellings_and_the_guard_agrees() {
        // For http(s) the url crate turns every IPv4 spelling into an IPv4 host; whatever host
        // string it hands over, `parse_host_ip` must read the same address.
        let cases = [
            ("http://2130706433/", "127.0.0.1"),
            ("http://0x7f000001/", "127.0.0.1"),
            ("http://0x7f.0.0.1/", "127.0.0.1"),
            ("http://0177.0.0.1/", "127.0.0.1"),
            ("http://017700000001/", "127.0.0.1"),
            ("http://127.1/", "127.0.0.1"),
            ("http://127.0.1/", "127.0.0.1"),
            ("http://127.0.0.1./", "127.0.0.1"),
            ("http://%31%32%37.0.0.1/", "127.0.0.1"),
            ("http://\u{ff11}\u{ff12}\u{ff17}.0.0.1/", "127.0.0.1"),
            ("http://127\u{3002}0\u{3002}0\u{3002}1/", "127.0.0.1"),
            ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1"),
            ("http://[0:0:0:0:0:ffff:7f00:1]/", "::ffff:127.0.0.1"),
        ];
        for (input, expected) in cases {
            let parsed = url(input);
            assert_eq!(parse_host_ip(parsed.host_str().unwrap()), Some(ip(expected)), "{input}");
            match parsed.host().unwrap() {
                Host::Domain(d) => panic!("{input} parsed as domain {d}"),
                Host::Ipv4(a) => assert_eq!(IpAddr::V4(a), ip(expected), "{input}"),
                Host::Ipv6(a) => assert_eq!(IpAddr::V6(a), ip(expected), "{input}"),
            }
        }
        // Spellings the url crate refuses never reach the guard.
        for input in
            ["http://[fe80::1%25eth0]/", "http://1.2.3.08/", "http://256.0.0.1/", "http://0x100000000/"]
        {
            assert!(Url::parse(input).is_err(), "{input}");
        }
    }

    #[test]
    fn check_url_blocks_private_literals() {
        let guard = EgressPolicy::default();
        let blocked = [
            "http://127.0.0.1/",
            "https://127.0.0.1:8443/x",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://0177.0.0.1/",
            "http://127.0.0.1./",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::127.0.0.1]/",
            "http://[64:ff9b::7f00:1]/",
            "http://[2002:7f00:1::]/",
            "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://100.100.100.200/",
            "http://[fd00:ec2::254]/",
            "http://0/",
            "http://0.0.0.0:8080/",
            "http://10.1.2.3/",
            "http://192.168.1.1/",
            "http://user:pw@127.0.0.1/",
            "http://example.com@127.0.0.1/",
            "http://%31%32%37.0.0.1/",
            "http://[fe80::1]/",
        ];
        for input in blocked {
            let err = guard.check_url(&url(input)).unwrap_err();
            assert!(matches!(err, EgressError::PrivateAddress(_)), "{input}: {err:?}");
        }
        let allowed = [
            "http://8.8.8.8/",
            "https://1.1.1.1./",
            "http://[2606:4700::1111]/",
            "https://example.com/",
            "http://127.0.0.1@example.com/",
            "http://localhost/",
            "HTTPS://EXAMPLE.COM:8443/a?b=c",
        ];
        for input in allowed {
            assert_eq!(guard.check_url(&url(input)), Ok(()), "{input}");
        }
    }

    #[test]
    fn check_url_refuses_other_schemes() {
        let guard = EgressPolicy::default();
        for input in
            ["ftp://example.com/", "file:///etc/passwd", "gopher://127.0.0.1:6379/_x", "data:text/plain,hi"]
        {
            assert!(matches!(guard.check_url(&url(input)), Err(EgressError::Scheme(_))), "{input}");
        }
        let long = format!("{}://x/", "a".repeat(300));
        let message = guard.check_url(&url(&long)).unwrap_err().to_string();
        assert!(message.len() < 150, "{message}");
    }

    #[test]
    fn error_messages() {
        let guard = EgressPolicy::default();
        assert_eq!(
            guard.check_url(&url("http://127.0.0.1/")).unwrap_err().to_string(),
            "blocked: 127.0.0.1 is a loopback/private/reserved address"
        );
        assert_eq!(
            EgressError::PrivateHost("localhost".into()).to_string(),
            "blocked: localhost resolves only to loopback/private/reserved addresses"
        );
        assert_eq!(EgressError::TooManyRedirects.to_string(), "blocked: more than 5 redirects");
    }

    #[test]
    fn allow_list_parsing() {
        assert_eq!(policy(""), EgressPolicy::default());
        assert_eq!(policy(" , ,, "), EgressPolicy::default());
        assert!(EgressPolicy::default().is_empty());
        let p = policy(
            "10.0.0.0/8, 127.0.0.1/32,::1/128, 192.168.1.5 ,fd00::/8, LocalHost., tools.internal,[fe80::7]",
        );
        assert!(!p.is_empty());
        assert_eq!(p.hosts, vec!["localhost".to_owned(), "tools.internal".to_owned()]);
        assert_eq!(p.nets.len(), 6);
        let malformed = [
            "10.0.0.0/33",
            "10.0.0.1/8",
            "::1/129",
            "::1/64",
            "10.0.0.0/",
            "/8",
            "10.0.0.0/+8",
            "10.0.0.0/8x",
            "10.0.0.0/08000",
            "http://foo",
            "foo bar",
            "*.internal",
            "a..b",
            "foo:80",
            "1.2.3.4.5/32",
            "host/8",
        ];
        for entry in malformed {
            let err = EgressPolicy::parse(&format!("localhost, {entry}")).unwrap_err();
            assert!(err.contains(&format!("{entry:?}")), "{entry}: {err}");
        }
    }

    #[test]
    fn allow_list_matching() {
        let p =
            policy("10.0.0.0/8, 127.0.0.1/32, ::1/128, 192.168.1.5, fd00::/8, localhost., Tools.Internal");
        for allowed in [
            "10.0.0.1",
            "10.255.255.255",
            "127.0.0.1",
            "::1",
            "192.168.1.5",
            "fd00::1",
            "fdff::1",
            "::ffff:10.1.2.3",
            "8.8.8.8",
        ] {
            assert!(p.allows_ip(ip(allowed)), "{allowed}");
        }
        for blocked in [
            "127.0.0.2",
            "172.16.0.1",
            "192.168.1.6",
            "fc00::1",
            "fe80::1",
            "169.254.169.254",
            "::ffff:127.0.0.2",
        ] {
            assert!(!p.allows_ip(ip(blocked)), "{blocked}");
        }
        for host in ["localhost", "LOCALHOST", "localhost.", "tools.internal", "TOOLS.internal."] {
            assert!(p.allows_host(host), "{host}");
        }
        for host in ["localhost..", "other", "tools.internal.evil", "evil.tools.internal", ""] {
            assert!(!p.allows_host(host), "{host}");
        }
        for ip_text in ["127.0.0.1", "10.0.0.1", "192.168.1.5"] {
            assert!(!EgressPolicy::default().allows_ip(ip(ip_text)), "{ip_text}");
        }
    }

    #[test]
    fn allow_list_cidr_edges() {
        let all_v4 = policy("0.0.0.0/0");
        assert!(all_v4.allows_ip(ip("127.0.0.1")) && !all_v4.allows_ip(ip("::1")));
        let all_v6 = policy("::/0");
        assert!(all_v6.allows_ip(ip("fe80::1")) && !all_v6.allows_ip(ip("10.0.0.1")));
        let cgnat = policy("100.64.0.0/10");
        assert!(cgnat.allows_ip(ip("100.127.255.255")) && !cgnat.allows_ip(ip("192.168.0.1")));
    }

    #[test]
    fn check_url_with_allow_list() {
        let p = policy("127.0.0.0/8, internal.example");
        for input in [
            "http://127.0.0.1/",
            "http://0x7f.1/",
            "http://127.9.9.9/",
            "http://[::ffff:127.0.0.1]/",
            "http://internal.example/",
        ] {
            assert_eq!(p.check_url(&url(input)), Ok(()), "{input}");
        }
        for input in ["http://10.0.0.1/", "http://[::1]/", "http://169.254.169.254/"] {
            assert!(p.check_url(&url(input)).is_err(), "{input}");
        }
    }

    #[tokio::test]
    async fn resolver_drops_private_addresses() {
        let default = EgressPolicy::default();
        assert_eq!(
            default.resolve_host("localhost").await,
            Err(EgressError::PrivateHost("localhost".into()))
        );
        // Literal spellings are judged without asking DNS.
        assert!(matches!(default.resolve_host("0x7f.1").await, Err(EgressError::PrivateHost(_))));
        let public = default.resolve_host("8.8.8.8").await.unwrap();
        assert_eq!(public, vec![SocketAddr::new(ip("8.8.8.8"), 0)]);

        let by_name = policy("localhost").resolve_host("LocalHost").await.unwrap();
        assert!(by_name.iter().any(|a| a.ip() == ip("127.0.0.1")), "{by_name:?}");
        let by_net = policy("127.0.0.0/8").resolve_host("localhost").await.unwrap();
        assert!(by_net.iter().all(|a| a.ip().is_ipv4() && a.ip().is_loopback()), "{by_net:?}");
    }

    #[tokio::test]
    async fn refusing_public_leaves_only_the_allow_list() {
        let nothing = EgressPolicy::default().refusing_public();
        for public in ["8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(!nothing.allows_ip(ip(public)), "{public}");
        }
        assert_eq!(
            nothing.check_url(&url("https://8.8.8.8/")).unwrap_err().to_string(),
            "blocked: 8.8.8.8 is not on the allow-list, and public addresses are refused"
        );
        assert!(matches!(nothing.check_url(&url("http://127.0.0.1/")), Err(EgressError::PrivateAddress(_))));
        assert_eq!(nothing.resolve_host("8.8.8.8").await, Err(EgressError::NotAllowed("8.8.8.8".into())));
        assert_eq!(nothing.resolve_host("localhost").await, Err(EgressError::NotAllowed("localhost".into())));

        let loopback = policy("127.0.0.1/32").refusing_public();
        assert!(loopback.allows_ip(ip("127.0.0.1")) && !loopback.allows_ip(ip("8.8.8.8")));
        assert_eq!(loopback.check_url(&url("http://127.0.0.1:9/x")), Ok(()));
        assert!(loopback.check_url(&url("http://8.8.8.8/")).is_err());
        assert_eq!(loopback.resolve_host("8.8.8.8").await, Err(EgressError::NotAllowed("8.8.8.8".into())));
        let by_net = loopback.resolve_host("localhost").await.unwrap();
        assert!(by_net.iter().all(|a| a.ip() == ip("127.0.0.1")), "{by_net:?}");
        let by_name = policy("localhost").refusing_public().resolve_host("localhost").await.unwrap();
        assert!(by_name.iter().any(|a| a.ip() == ip("127.0.0.1")), "{by_name:?}");
        // The allow-list is unchanged; the default still allows public addresses.
        assert_eq!(policy("127.0.0.1/32").refusing_public().nets, policy("127.0.0.1/32").nets);
        assert!(EgressPolicy::default().allows_ip(ip("8.8.8.8")));
    }

    #[tokio::test]
    async fn resolver_through_the_reqwest_trait() {
        let resolver = GuardedResolver::new(Arc::new(EgressPolicy::default()));
        let err = resolver.resolve("localhost".parse().unwrap()).await.err().unwrap();
        assert_eq!(EgressError::find_in(&*err), Some(&EgressError::PrivateHost("localhost".into())));
        let allowing = GuardedResolver::new(Arc::new(policy("localhost")));
        let addrs: Vec<SocketAddr> = allowing.resolve("localhost".parse().unwrap()).await.unwrap().collect();
        assert!(!addrs.is_empty());
    }

    /// A tiny HTTP/1.1 server on 127.0.0.1 that counts connections and records request paths.
    struct TestServer {
        port: u16,
        connections: Arc<AtomicUsize>,
        paths: Arc<Mutex<Vec<String>>>,
    }

    impl TestServer {
        async fn start() -> TestServer {
            Self::start_on("127.0.0.1").await
        }

        async fn start_on(host: &str) -> TestServer {
            let listener = TcpListener::bind((host, 0)).await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let connections = Arc::new(AtomicUsize::new(0));
            let paths = Arc::new(Mutex::new(Vec::new()));
            let (count, seen) = (Arc::clone(&connections), Arc::clone(&paths));
            tokio::spawn(async move {
                while let Ok((socket, _)) = listener.accept().await {
                    count.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(serve(socket, port, Arc::clone(&seen)));
                }
            });
            TestServer { port, connections, paths }
        }

        fn connections(&self) -> usize {
            self.connections.load(Ordering::SeqCst)
        }

        fn paths(&self) -> Vec<String> {
            self.paths.lock().unwrap().clone()
        }
    }

    async fn serve(mut socket: TcpStream, port: u16, paths: Arc<Mutex<Vec<String>>>) {
        let mut head = Vec::new();
        let mut chunk = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&chunk[..n]),
            }
        }
        let path = String::from_utf8_lossy(&head).split_whitespace().nth(1).unwrap_or("/").to_owned();
        paths.lock().unwrap().push(path.clone());
        let _ = socket.write_all(response(&path, port).as_bytes()).await;
        let _ = socket.shutdown().await;
    }

    fn response(path: &str, port: u16) -> String {
        let redirect = |to: String| {
            format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        };
        if path == "/redirect" {
            return redirect(format!("http://127.0.0.1:{port}/other"));
        }
        if path == "/redirect-by-name" {
            // Same port: the resolver must refuse before anything could connect.
            return redirect(format!("http://localhost:{port}/other"));
        }
        if let Some(n) = path.strip_prefix("/loop/").and_then(|n| n.parse::<u32>().ok()) {
            return redirect(format!("http://localhost:{port}/loop/{}", n + 1));
        }
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello".to_owned()
    }

    /// What a tool does: check the first URL, then send with the guarded client.
    async fn fetch(guard: EgressPolicy, target: &str) -> Result<String, EgressError> {
        let guard = Arc::new(guard);
        let client = guarded_client(Arc::clone(&guard), Duration::from_secs(10))?;
        let target = url(target);
        guard.check_url(&target)?;
        match client.get(target).send().await {
            Ok(response) => Ok(response.text().await.unwrap()),
            Err(e) => {
                Err(EgressError::find_in(&e).cloned().unwrap_or_else(|| panic!("not the guard: {e:?}")))
            }
        }
    }

    #[tokio::test]
    async fn e2e_ip_literal_is_blocked() {
        let server = TestServer::start().await;
        let result = fetch(EgressPolicy::default(), &format!("http://127.0.0.1:{}/", server.port)).await;
        assert_eq!(result, Err(EgressError::PrivateAddress(ip("127.0.0.1"))));
        assert_eq!(server.connections(), 0);
    }

    #[tokio::test]
    async fn e2e_localhost_is_blocked_at_resolution() {
        let server = TestServer::start().await;
        let result = fetch(EgressPolicy::default(), &format!("http://localhost:{}/", server.port)).await;
        assert_eq!(result, Err(EgressError::PrivateHost("localhost".into())));
        assert_eq!(server.connections(), 0);
    }

    #[tokio::test]
    async fn e2e_allow_listed_host_succeeds() {
        let server = TestServer::start().await;
        let result = fetch(policy("localhost"), &format!("http://localhost:{}/", server.port)).await;
        assert_eq!(result, Ok("hello".to_owned()));
        assert_eq!(server.paths(), vec!["/".to_owned()]);
    }

    #[tokio::test]
    async fn e2e_redirect_to_disallowed_literal_is_blocked() {
        let server = TestServer::start().await;
        let result = fetch(policy("localhost"), &format!("http://localhost:{}/redirect", server.port)).await;
        assert_eq!(result, Err(EgressError::PrivateAddress(ip("127.0.0.1"))));
        assert_eq!(server.connections(), 1);
        assert_eq!(server.paths(), vec!["/redirect".to_owned()]);
    }

    #[tokio::test]
    async fn e2e_redirect_to_disallowed_name_is_blocked_at_resolution() {
        // The server listens on 127.0.0.2, which alone is allowed; the hop to `localhost`
        // (127.0.0.1, neither allow-listed nor in an allowed network) must die in the resolver.
        let server = TestServer::start_on("127.0.0.2").await;
        let first = format!("http://127.0.0.2:{}/redirect-by-name", server.port);
        let result = fetch(policy("127.0.0.2"), &first).await;
        assert_eq!(result, Err(EgressError::PrivateHost("localhost".into())));
        assert_eq!(server.connections(), 1);
    }

    #[tokio::test]
    async fn e2e_allowed_cidr_succeeds() {
        let server = TestServer::start().await;
        let result = fetch(policy("127.0.0.0/8"), &format!("http://127.0.0.1:{}/", server.port)).await;
        assert_eq!(result, Ok("hello".to_owned()));
        assert_eq!(server.connections(), 1);
    }

    #[tokio::test]
    async fn e2e_redirects_stop_after_five_hops() {
        let server = TestServer::start().await;
        let result = fetch(policy("localhost"), &format!("http://localhost:{}/loop/0", server.port)).await;
        assert_eq!(result, Err(EgressError::TooManyRedirects));
        assert_eq!(server.paths().len(), 1 + MAX_REDIRECTS);
    }
}
