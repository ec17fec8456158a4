//! Connections per client address (`http.max_connections_per_address`, default
//! 256): one client must not take the whole `http.max_connections`.
//!
//! Counted when a connection is accepted, so the address is the TCP peer's —
//! `X-Forwarded-For` is not known before a request is read. Behind a reverse
//! proxy every connection comes from the proxy; peers in `trusted_proxies` are
//! therefore exempt (the proxy has its own limits), and any other proxy's
//! address counts as one client. IPv6 peers count per /64, the block one host is
//! usually given; IPv4 per address (IPv4-mapped IPv6 is IPv4).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use crate::client::TrustedProxies;

/// Open connections per client address.
pub struct PerAddress {
    cap: usize,
    exempt: Arc<TrustedProxies>,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One admitted connection; its count is given back when dropped.
pub struct AddressSlot {
    owner: Arc<PerAddress>,
    key: Option<IpAddr>,
}

impl PerAddress {
    /// `cap` 0 counts nothing.
    pub fn new(cap: usize, exempt: Arc<TrustedProxies>) -> Arc<PerAddress> {
        Arc::new(PerAddress {
            cap,
            exempt,
            open: Mutex::default(),
        })
    }

    /// A slot for a connection from `peer`, or `None` when it already has `cap`.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<AddressSlot> {
        let peer = peer.to_canonical();
        if self.cap == 0 || self.exempt.trusts(peer) {
            return Some(AddressSlot {
                owner: self.clone(),
                key: None,
            });
        }
        let key = client_key(peer);
        let mut open = self.open.lock().expect("per-address counts");
        let n = open.entry(key).or_default();
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            owner: self.clone(),
            key: Some(key),
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let Some(key) = self.key else { return };
        let mut open = self.owner.open.lock().expect("per-address counts");
        if let Some(n) = open.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                open.remove(&key);
            }
        }
    }
}

/// The address a client is counted under: IPv4 as is, IPv6 by its /64.
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn each_address_gets_its_cap_and_slots_come_back() {
        let caps = PerAddress::new(2, Arc::new(TrustedProxies::default()));
        let a1 = caps.admit(ip("10.0.0.1")).unwrap();
        let _a2 = caps.admit(ip("::ffff:10.0.0.1")).unwrap();
        assert!(
            caps.admit(ip("10.0.0.1")).is_none(),
            "IPv4-mapped is the same client"
        );
        assert!(caps.admit(ip("10.0.0.2")).is_some(), "another client");
        drop(a1);
        assert!(caps.admit(ip("10.0.0.1")).is_some());
        // One /64 is one client.
        let _b1 = caps.admit(ip("2001:db8:1:2::1")).unwrap();
        let _b2 = caps.admit(ip("2001:db8:1:2:ffff::9")).unwrap();
        assert!(caps.admit(ip("2001:db8:1:2::3")).is_none());
        assert!(caps.admit(ip("2001:db8:1:3::1")).is_some());
    }

    #[test]
    fn trusted_proxies_and_a_zero_cap_are_not_counted() {
        let proxies = Arc::new(TrustedProxies::from_entries(&["10.0.0.0/8"]));
        let caps = PerAddress::new(1, proxies);
        let held: Vec<_> = (0..5).map(|_| caps.admit(ip("10.1.2.3"))).collect();
        assert!(held.iter().all(Option::is_some));
        let off = PerAddress::new(0, Arc::new(TrustedProxies::default()));
        let held: Vec<_> = (0..5).map(|_| off.admit(ip("192.0.2.1"))).collect();
        assert!(held.iter().all(Option::is_some));
        assert!(off.open.lock().unwrap().is_empty());
    }
}
