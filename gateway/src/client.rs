//! Where a request came from, as far as it can be trusted. Behind a reverse proxy
//! every TCP peer is the proxy, so the sign-in limiter keyed on the peer let ten
//! bad sign-ins from anyone lock out everyone. The proxy tells us the client in
//! `X-Forwarded-For` and the scheme in `X-Forwarded-Proto`, but anybody can send
//! those headers: they count only when the peer is in `trusted_proxies`.
//!
//! `X-Forwarded-For` is read right to left (each proxy appends the address it
//! saw): the client is the first address that is not itself a trusted proxy. A
//! malformed entry stops the walk at the last address we trust to have written it.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use ipnet::IpNet;
use weft_config::{Config, parse_proxy};

use crate::AppState;
use crate::error::ApiError;

/// The configured `trusted_proxies`.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// From a validated config (entries that do not parse were refused at start-up).
    pub fn from_config(cfg: &Config) -> TrustedProxies {
        TrustedProxies(
            cfg.trusted_proxies
                .iter()
                .filter_map(|p| parse_proxy(p))
                .collect(),
        )
    }

    /// From entries as in `trusted_proxies` (those that do not parse are skipped).
    #[cfg(test)]
    pub fn from_entries(entries: &[&str]) -> TrustedProxies {
        TrustedProxies(entries.iter().filter_map(|p| parse_proxy(p)).collect())
    }

    pub(crate) fn trusts(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }
}

/// The client's address and whether it reached us over HTTPS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientOrigin {
    pub ip: IpAddr,
    pub https: bool,
}

/// Whether the TCP peer of a request is one of `trusted` (a configured proxy):
/// only then are its forwarded headers — `X-Forwarded-*`, a `traceparent` —
/// believed.
pub fn peer_is_trusted(parts_ext: &axum::http::Extensions, trusted: &TrustedProxies) -> bool {
    parts_ext
        .get::<ConnectInfo<SocketAddr>>()
        .is_some_and(|c| trusted.trusts(c.0.ip()))
}

impl ClientOrigin {
    pub fn of(peer: IpAddr, headers: &HeaderMap, trusted: &TrustedProxies) -> ClientOrigin {
        let peer = peer.to_canonical();
        if !trusted.trusts(peer) {
            return ClientOrigin {
                ip: peer,
                https: false,
            };
        }
        let mut ip = peer;
        let hops = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        for hop in hops.iter().rev() {
            match hop.parse::<IpAddr>() {
                Ok(addr) => {
                    ip = addr.to_canonical();
                    if !trusted.trusts(ip) {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        // The proto the nearest proxy saw (the last value, if a chain appended).
        let https = headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit(',').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"));
        ClientOrigin { ip, https }
    }

    /// For code that has the request parts (extractors, the log span).
    pub fn from_parts(
        parts_ext: &axum::http::Extensions,
        headers: &HeaderMap,
        trusted: &TrustedProxies,
    ) -> ClientOrigin {
        let peer = parts_ext
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::from([0, 0, 0, 0]), |c| c.0.ip());
        ClientOrigin::of(peer, headers, trusted)
    }
}

impl FromRequestParts<AppState> for ClientOrigin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Ok(ClientOrigin::from_parts(
            &parts.extensions,
            &parts.headers,
            &state.trusted_proxies,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(peer: &str, xff: &[&str], proto: Option<&str>, trusted: &[&str]) -> ClientOrigin {
        let mut h = HeaderMap::new();
        for v in xff {
            h.append("x-forwarded-for", v.parse().unwrap());
        }
        if let Some(p) = proto {
            h.insert("x-forwarded-proto", p.parse().unwrap());
        }
        let trusted = TrustedProxies(trusted.iter().map(|t| parse_proxy(t).unwrap()).collect());
        ClientOrigin::of(peer.parse().unwrap(), &h, &trusted)
    }

    #[test]
    fn forwarded_headers_count_only_from_trusted_proxies() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // Untrusted peer: headers ignored.
        let o = origin("203.0.113.9", &["1.2.3.4"], Some("https"), &["10.0.0.0/8"]);
        assert_eq!(
            o,
            ClientOrigin {
                ip: ip("203.0.113.9"),
                https: false
            }
        );
        // Trusted proxy: the right-most untrusted hop is the client.
        let o = origin(
            "10.0.0.2",
            &["6.6.6.6, 1.2.3.4", "10.0.0.7"],
            Some("https"),
            &["10.0.0.0/8"],
        );
        assert_eq!(
            o,
            ClientOrigin {
                ip: ip("1.2.3.4"),
                https: true
            }
        );
        // No header from a trusted proxy: the proxy itself.
        let o = origin("::ffff:10.0.0.2", &[], None, &["10.0.0.0/8"]);
        assert_eq!(
            o,
            ClientOrigin {
                ip: ip("10.0.0.2"),
                https: false
            }
        );
        // Garbage stops the walk at the last trusted hop.
        let o = origin("10.0.0.2", &["1.2.3.4, junk"], None, &["10.0.0.2"]);
        assert_eq!(o.ip, ip("10.0.0.2"));
    }
}
