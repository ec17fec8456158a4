//! Name resolution for `web_fetch`: one lookup, whose vetted answer is what
//! the HTTP client connects to.
//!
//! reqwest asks its [`reqwest::dns::Resolve`] for every name it connects to;
//! [`VettedResolver`] answers through the [`Guard`], so a refused name fails
//! the connection and an accepted one is connected to exactly the addresses
//! that were checked (no second lookup for DNS rebinding to slip into). The
//! lookup itself is a [`NameResolver`], so tests can say what a name resolves
//! to without a DNS server; the vetting is the same either way.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::guard::Guard;

/// Looks a host name up. Production uses the system resolver.
#[async_trait::async_trait]
pub trait NameResolver: Send + Sync + 'static {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>>;
}

/// `getaddrinfo`, through tokio.
pub struct SystemResolver;

#[async_trait::async_trait]
impl NameResolver for SystemResolver {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        let addrs = tokio::net::lookup_host((host, 0)).await?;
        let mut ips: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
        ips.dedup();
        Ok(ips)
    }
}

/// reqwest's resolver: only guard-approved addresses come out of it.
pub(super) struct VettedResolver(pub(super) Arc<Guard>);

impl Resolve for VettedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = self.0.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let ips = guard.resolve(&host).await?;
            // Port 0 is replaced by the URL's port.
            let addrs: Addrs = Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}
