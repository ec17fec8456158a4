//! The SSRF guard: which URLs `web_fetch` may follow and which addresses it may
//! connect to.
//!
//! A hosted Weft runs next to databases, admin panels and cloud metadata
//! services; a model that can be talked into fetching `http://10.0.0.5/` must
//! not reach them. So the guard refuses every address that is not public
//! unicast, in any spelling (the `url` crate already turns decimal, octal and
//! hex IPv4 into dotted form; IPv4 hidden inside IPv6 is unwrapped here), and a
//! name is only accepted when *every* address it resolves to is. The addresses
//! it vets are the ones the connection uses (see `resolve.rs`), so a name
//! cannot resolve to something else between the check and the connect.
//!
//! The admin's `allow_hosts` is the only way in: a listed name accepts whatever
//! it resolves to, a listed network accepts its addresses. There is no switch
//! that turns the guard off.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use url::{Host, Url};
use weft_config::WebFetchConfig;

use super::resolve::NameResolver;

/// Why an address may not be fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    Unspecified,
    Loopback,
    Private,
    LinkLocal,
    SharedCgnat,
    UniqueLocal,
    SiteLocal,
    CloudMetadata,
    Multicast,
    Broadcast,
    Documentation,
    Reserved,
}

impl Blocked {
    pub fn describe(self) -> &'static str {
        match self {
            Blocked::Unspecified => "an unspecified (this-host) address",
            Blocked::Loopback => "a loopback address",
            Blocked::Private => "a private address",
            Blocked::LinkLocal => "a link-local address",
            Blocked::SharedCgnat => "a shared (CGNAT) address",
            Blocked::UniqueLocal => "an IPv6 unique-local (private) address",
            Blocked::SiteLocal => "an IPv6 site-local (private) address",
            Blocked::CloudMetadata => "a cloud metadata address",
            Blocked::Multicast => "a multicast address",
            Blocked::Broadcast => "a broadcast address",
            Blocked::Documentation => "a documentation address",
            Blocked::Reserved => "a reserved address",
        }
    }
}

/// Metadata services of the big clouds that sit on otherwise unremarkable
/// addresses (the rest are caught as link-local anyway).
const METADATA_V4: [Ipv4Addr; 5] = [
    Ipv4Addr::new(169, 254, 169, 254), // AWS, GCP, Azure, OpenStack, Oracle…
    Ipv4Addr::new(169, 254, 170, 2),   // AWS ECS task metadata
    Ipv4Addr::new(168, 63, 129, 16),   // Azure WireServer (a public address)
    Ipv4Addr::new(100, 100, 100, 200), // Alibaba Cloud
    Ipv4Addr::new(192, 0, 0, 192),     // Oracle Cloud (classic)
];
const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254); // AWS

/// Host names of metadata services, refused before any lookup.
const METADATA_NAMES: [&str; 5] = [
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
];

/// `None` for a public unicast address, else why it is blocked.
pub fn classify(ip: IpAddr) -> Option<Blocked> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Blocked> {
    if METADATA_V4.contains(&ip) {
        return Some(Blocked::CloudMetadata);
    }
    let [a, b, c, _] = ip.octets();
    let blocked = match (a, b, c) {
        (0, _, _) => Blocked::Unspecified,
        (10, _, _) => Blocked::Private,
        (100, 64..=127, _) => Blocked::SharedCgnat,
        (127, _, _) => Blocked::Loopback,
        (169, 254, _) => Blocked::LinkLocal,
        (172, 16..=31, _) => Blocked::Private,
        (192, 0, 0) | (192, 88, 99) => Blocked::Reserved,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => Blocked::Documentation,
        (192, 168, _) => Blocked::Private,
        (198, 18..=19, _) => Blocked::Reserved, // benchmarking
        (224..=239, _, _) => Blocked::Multicast,
        _ if ip == Ipv4Addr::BROADCAST => Blocked::Broadcast,
        (240..=255, _, _) => Blocked::Reserved,
        _ => return None,
    };
    Some(blocked)
}

fn classify_v6(ip: Ipv6Addr) -> Option<Blocked> {
    if ip == METADATA_V6 {
        return Some(Blocked::CloudMetadata);
    }
    if ip.is_unspecified() {
        return Some(Blocked::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Blocked::Loopback);
    }
    // IPv4 in IPv6 clothing: judge the IPv4 address it carries.
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    let s = ip.segments();
    let blocked = match s[0] {
        0x2001 if s[1] == 0x0db8 => Blocked::Documentation,
        0x2001 if s[1] < 0x0200 => Blocked::Reserved, // Teredo, ORCHID, benchmarking…
        0x2000..=0x3fff => return None,               // global unicast
        0xfc00..=0xfdff => Blocked::UniqueLocal,
        0xfe80..=0xfebf => Blocked::LinkLocal,
        0xfec0..=0xfeff => Blocked::SiteLocal,
        0xff00..=0xffff => Blocked::Multicast,
        _ => Blocked::Reserved,
    };
    Some(blocked)
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) or 6to4 (`2002::/16`) address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0, 0, 0, 0, 0, 0, hi, lo] => Some(tail(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(tail(hi, lo)),
        [0x2002, hi, lo, ..] => Some(tail(hi, lo)),
        _ => None,
    }
}

/// A refusal, worded for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("refused: {0:?} is not a valid URL ({1})")]
    Invalid(String, String),
    #[error("refused: {0}: URLs are not fetched, only http and https")]
    Scheme(String),
    #[error("refused: the URL carries a user name or password (user@host)")]
    Credentials,
    #[error("refused: {ip} is {}", .kind.describe())]
    Address { ip: IpAddr, kind: Blocked },
    #[error("refused: {host} resolves to {ip}, {}", .kind.describe())]
    ResolvesTo {
        host: String,
        ip: IpAddr,
        kind: Blocked,
    },
    #[error("refused: {host} is {what}")]
    Name { host: String, what: &'static str },
    #[error("could not resolve {host}: {reason}")]
    Unresolved { host: String, reason: String },
}

/// Decides what `web_fetch` may reach. Cheap to share.
pub struct Guard {
    config: WebFetchConfig,
    resolver: Arc<dyn NameResolver>,
}

impl Guard {
    pub fn new(config: &WebFetchConfig, resolver: Arc<dyn NameResolver>) -> Guard {
        Guard {
            config: config.clone(),
            resolver,
        }
    }

    /// Parses a URL the model gave and checks it like any redirect target.
    pub fn parse(&self, raw: &str) -> Result<Url, Refusal> {
        let url =
            Url::parse(raw.trim()).map_err(|e| Refusal::Invalid(raw.into(), e.to_string()))?;
        self.check_url(&url)?;
        Ok(url)
    }

    /// Everything that can be decided without a lookup: the scheme, no
    /// credentials, an IP host's address, and names that are never public.
    /// Names are resolved (and their addresses vetted) when connecting.
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal::Scheme(url.scheme().into()));
        }
        // `http://example.com@10.0.0.5/` reads like example.com to a person.
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refusal::Credentials);
        }
        match url.host() {
            Some(Host::Ipv4(v4)) => self.vet_ip(IpAddr::V4(v4)),
            Some(Host::Ipv6(v6)) => self.vet_ip(IpAddr::V6(v6)),
            Some(Host::Domain(name)) => self.check_name(&normalize(name)),
            None => Err(Refusal::Invalid(url.to_string(), "no host".into())),
        }
    }

    /// Checks a URL now — its form, and every address its host resolves to
    /// — so a person hears at once that it will be refused (a webhook's URL
    /// when its channel is made; each POST is checked again).
    pub async fn vet(&self, raw: &str) -> Result<Url, Refusal> {
        let url = self.parse(raw)?;
        if let Some(host) = url.host_str() {
            self.resolve(host).await?;
        }
        Ok(url)
    }

    /// Resolves a host name and returns its addresses if every one of them
    /// may be fetched. This is the only lookup: the connection uses exactly
    /// these addresses.
    pub async fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, Refusal> {
        let host = normalize(host);
        if let Ok(ip) = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            self.vet_ip(ip)?;
            return Ok(vec![ip]);
        }
        self.check_name(&host)?;
        let unresolved = |reason: String| Refusal::Unresolved {
            host: host.clone(),
            reason,
        };
        let ips = self
            .resolver
            .lookup(&host)
            .await
            .map_err(|e| unresolved(e.to_string()))?;
        if ips.is_empty() {
            return Err(unresolved("no addresses".into()));
        }
        if self.config.allows_name(&host) {
            return Ok(ips);
        }
        // One bad answer spoils the name: a mixed answer is a rebinding trick
        // or a misconfiguration, and either way not ours to pick through.
        for &ip in &ips {
            if let Some(kind) = self.blocked(ip) {
                return Err(Refusal::ResolvesTo { host, ip, kind });
            }
        }
        Ok(ips)
    }

    fn check_name(&self, host: &str) -> Result<(), Refusal> {
        if self.config.allows_name(host) {
            return Ok(());
        }
        let what = if host == "localhost" || host.ends_with(".localhost") {
            "a loopback name"
        } else if METADATA_NAMES.contains(&host) {
            "a cloud metadata name"
        } else {
            return Ok(());
        };
        Err(Refusal::Name {
            host: host.into(),
            what,
        })
    }

    fn vet_ip(&self, ip: IpAddr) -> Result<(), Refusal> {
        match self.blocked(ip) {
            Some(kind) => Err(Refusal::Address { ip, kind }),
            None => Ok(()),
        }
    }

    fn blocked(&self, ip: IpAddr) -> Option<Blocked> {
        classify(ip).filter(|_| !self.config.allows_ip(ip))
    }
}

/// Lowercase, without trailing dots: `LocalHost.` is `localhost`.
fn normalize(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(ip: &str) -> Option<Blocked> {
        classify(ip.parse().unwrap())
    }

    #[test]
    fn public_unicast_passes_and_everything_else_has_a_reason() {
        for public in [
            "93.184.216.34",
            "1.1.1.1",
            "8.8.8.8",
            "2606:4700::1111",
            "2a00:1450::1",
            "100.128.0.1",
            "172.32.0.1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(kind(public), None, "{public}");
        }
        let cases = [
            ("0.1.2.3", Blocked::Unspecified),
            ("127.8.8.8", Blocked::Loopback),
            ("10.255.255.255", Blocked::Private),
            ("172.31.0.1", Blocked::Private),
            ("192.168.0.1", Blocked::Private),
            ("100.127.255.255", Blocked::SharedCgnat),
            ("169.254.0.1", Blocked::LinkLocal),
            ("169.254.169.254", Blocked::CloudMetadata),
            ("192.0.0.8", Blocked::Reserved),
            ("192.0.2.1", Blocked::Documentation),
            ("203.0.113.9", Blocked::Documentation),
            ("239.255.255.250", Blocked::Multicast),
            ("240.0.0.1", Blocked::Reserved),
            ("255.255.255.255", Blocked::Broadcast),
            ("::", Blocked::Unspecified),
            ("::1", Blocked::Loopback),
            ("::ffff:192.168.1.1", Blocked::Private),
            ("::10.0.0.1", Blocked::Private),
            ("64:ff9b::a9fe:a9fe", Blocked::CloudMetadata),
            ("2002:a00:1::", Blocked::Private),
            ("2001::1", Blocked::Reserved),
            ("2001:db8::1", Blocked::Documentation),
            ("fd12:3456::1", Blocked::UniqueLocal),
            ("fe80::abcd", Blocked::LinkLocal),
            ("fec0::1", Blocked::SiteLocal),
            ("ff02::1", Blocked::Multicast),
            ("100::1", Blocked::Reserved),
        ];
        for (ip, want) in cases {
            assert_eq!(kind(ip), Some(want), "{ip}");
        }
    }

    struct NoLookups;

    #[async_trait::async_trait]
    impl NameResolver for NoLookups {
        async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
            panic!("{host} was looked up");
        }
    }

    #[tokio::test]
    async fn refused_names_and_literals_are_never_looked_up() {
        let guard = Guard::new(&WebFetchConfig::default(), Arc::new(NoLookups));
        for host in [
            "localhost",
            "LocalHost.",
            "x.localhost",
            "metadata.google.internal",
            "127.0.0.1",
            "[::1]",
        ] {
            assert!(guard.resolve(host).await.is_err(), "{host}");
        }
    }
}
