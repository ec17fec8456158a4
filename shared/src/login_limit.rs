//! Sign-in attempt accounting: per client address a hard limit, per account an
//! exponential backoff (`[login]` config), in process memory (embedded) or in
//! Redis (distributed, so every gateway replica sees the same counts).
//!
//! Why this shape (issue 11):
//! * **Per address, a limit** (`attempts_per_address`, default 10 per
//!   `window_secs` = 300 s, counted from the window's first attempt). The address
//!   is the client's as `gateway::client` trusts it (`X-Forwarded-For` only from
//!   `trusted_proxies`), so behind a proxy one guesser no longer locks out
//!   everyone. Only failures count: a successful sign-in gives back its own
//!   charge, and no more (clearing the address's count let a guesser with one
//!   account of their own reset it at will).
//! * **Per account, a backoff, never a lock.** The first `free_failures_per_account`
//!   (5) failures cost nothing; each further one makes the next attempt wait
//!   `backoff_base_ms` (1 s), doubling per failure up to `backoff_max_ms` (60 s).
//!   An attempt during the wait is refused unchecked (429 + `Retry-After`), so
//!   concurrent guesses cannot slip through, but once it has passed the owner's
//!   correct password — from an address not over its own limit — gets in. Before,
//!   10 failures locked the account for 5 minutes, and anyone could keep `admin`
//!   locked for ever. Guessing is held to about one try a minute per account.
//!   Failures are forgotten `window_secs` after the account's last attempt, or at
//!   once on a correct password.
//! * An attempt is charged *before* its password is checked (checking first let
//!   100 concurrent guesses run 55 checks against a limit of 10); one that was
//!   never checked (the server too busy to hash) is refunded.
//! * **Bounded memory:** the in-process table is an LRU of `max_tracked_keys`
//!   (100,000) keys; a spray of usernames forgets the least recently used
//!   instead of dropping every count at once (which reset a guesser's count too).
//!   Redis keys expire on their own (`window_secs` plus the current backoff).
//!
//! Redis layout (prefix `P`, version `v1`; both keys of one attempt are read and
//! written by one Lua script, atomically):
//! * `P login:v1:acct:<username>` — hash `f` (failures), `next` (unix ms before
//!   which no attempt is checked), `last` (unix ms of the last attempt).
//! * `P login:v1:addr:<ip>` — hash `n` (attempts in the window), `since` (unix ms
//!   the window began).

use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use lru::LruCache;
use redis::aio::ConnectionManager;

use crate::time::now_ms;
use weft_config::LoginConfig;

/// Whether an attempt may have its password checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    /// Refused unchecked; come back after this many seconds.
    Limited {
        retry_after_secs: u64,
        by: LimitedBy,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitedBy {
    /// The client address made too many attempts in the window.
    Address,
    /// The account is in its backoff after repeated failures.
    Account,
}

#[derive(Debug, Clone, Copy)]
struct Policy {
    per_address: u32,
    window_ms: i64,
    free: u32,
    base_ms: i64,
    max_ms: i64,
}

impl From<&LoginConfig> for Policy {
    fn from(c: &LoginConfig) -> Policy {
        Policy {
            per_address: c.attempts_per_address,
            window_ms: (c.window_secs as i64).saturating_mul(1000),
            free: c.free_failures_per_account,
            base_ms: c.backoff_base_ms as i64,
            max_ms: c.backoff_max_ms as i64,
        }
    }
}

impl Policy {
    /// How long the attempt after `failures` failures must wait.
    fn backoff_ms(&self, failures: u32) -> i64 {
        if failures <= self.free {
            return 0;
        }
        let doublings = (failures - self.free - 1).min(40);
        self.base_ms.saturating_mul(1 << doublings).min(self.max_ms)
    }
}

fn limited(wait_ms: i64, by: LimitedBy) -> Admission {
    Admission::Limited {
        retry_after_secs: (wait_ms.max(0) as u64).div_ceil(1000).max(1),
        by,
    }
}

#[derive(Debug, thiserror::Error)]
#[error("login limiter: {0}")]
pub struct LimiterError(#[from] redis::RedisError);

#[async_trait::async_trait]
pub trait LoginAttempts: Send + Sync + 'static {
    /// Charge one attempt on `account` from `addr`, or refuse it (charging nothing).
    async fn admit(&self, account: &str, addr: IpAddr) -> Result<Admission, LimiterError>;
    /// Give back an admitted attempt whose password was never checked.
    async fn refund(&self, account: &str, addr: IpAddr) -> Result<(), LimiterError>;
    /// A correct password: forget the account's failures and give back this
    /// attempt's charge on the address (not the address's earlier failures).
    async fn succeeded(&self, account: &str, addr: IpAddr) -> Result<(), LimiterError>;
}

pub type SharedLoginAttempts = Arc<dyn LoginAttempts>;

/// One key's state; accounts use `n` = failures, `since` = last attempt and
/// `next`; addresses `n` = attempts and `since` = window start.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    n: u32,
    since: i64,
    next: i64,
}

/// Embedded mode: an LRU of keys in this process.
pub struct MemoryLoginAttempts {
    policy: Policy,
    keys: Mutex<LruCache<String, Entry>>,
}

fn acct_key(account: &str) -> String {
    format!("acct:{account}")
}

fn addr_key(addr: IpAddr) -> String {
    format!("addr:{addr}")
}

impl MemoryLoginAttempts {
    pub fn new(cfg: &LoginConfig) -> MemoryLoginAttempts {
        let cap = NonZeroUsize::new(cfg.max_tracked_keys).unwrap_or(NonZeroUsize::MIN);
        MemoryLoginAttempts {
            policy: Policy::from(cfg),
            keys: Mutex::new(LruCache::new(cap)),
        }
    }

    fn admit_at(&self, now: i64, account: &str, addr: IpAddr) -> Admission {
        let p = self.policy;
        let mut keys = self.keys.lock().expect("login limiter lock");
        let (ak, ck) = (addr_key(addr), acct_key(account));
        let mut a = keys.get(&ak).copied().unwrap_or(Entry {
            since: now,
            ..Entry::default()
        });
        if now - a.since >= p.window_ms {
            a = Entry {
                since: now,
                ..Entry::default()
            };
        }
        if a.n >= p.per_address {
            return limited(a.since + p.window_ms - now, LimitedBy::Address);
        }
        let mut c = keys.get(&ck).copied().unwrap_or_default();
        if now - c.since > p.window_ms {
            c = Entry::default();
        }
        if now < c.next {
            return limited(c.next - now, LimitedBy::Account);
        }
        c.n += 1;
        c.since = now;
        c.next = now + p.backoff_ms(c.n);
        a.n += 1;
        keys.put(ak, a);
        keys.put(ck, c);
        Admission::Admitted
    }

    fn refund_at(&self, now: i64, account: &str, addr: IpAddr) {
        let mut keys = self.keys.lock().expect("login limiter lock");
        if let Some(a) = keys.get_mut(&addr_key(addr)) {
            a.n = a.n.saturating_sub(1);
        }
        if let Some(c) = keys.get_mut(&acct_key(account)) {
            c.n = c.n.saturating_sub(1);
            c.next = now + self.policy.backoff_ms(c.n);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.keys.lock().unwrap().len()
    }
}

#[async_trait::async_trait]
impl LoginAttempts for MemoryLoginAttempts {
    async fn admit(&self, account: &str, addr: IpAddr) -> Result<Admission, LimiterError> {
        Ok(self.admit_at(now_ms(), account, addr))
    }

    async fn refund(&self, account: &str, addr: IpAddr) -> Result<(), LimiterError> {
        self.refund_at(now_ms(), account, addr);
        Ok(())
    }

    async fn succeeded(&self, account: &str, addr: IpAddr) -> Result<(), LimiterError> {
        let mut keys = self.keys.lock().expect("login limiter lock");
        keys.pop(&acct_key(account));
        if let Some(a) = keys.get_mut(&addr_key(addr)) {
            a.n = a.n.saturating_sub(1);
        }
        Ok(())
    }
}

/// Distributed mode: counts in Redis, shared by every gateway.
pub struct RedisLoginAttempts {
    conn: ConnectionManager,
    prefix: String,
    policy: Policy,
}

/// KEYS: account, address. ARGV: now, window, per_address, free, base, max (ms).
/// Returns {0, 0} admitted, {1, wait_ms} address limited, {2, wait_ms} account backoff.
const ADMIT: &str = r"
local now, window, per_addr = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local free, base, maxw = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local a = redis.call('HMGET', KEYS[2], 'n', 'since')
local n, since = tonumber(a[1]) or 0, tonumber(a[2]) or now
if now - since >= window then n = 0; since = now end
if n >= per_addr then return {1, since + window - now} end
local c = redis.call('HMGET', KEYS[1], 'f', 'next', 'last')
local f, nxt, last = tonumber(c[1]) or 0, tonumber(c[2]) or 0, tonumber(c[3]) or now
if now - last > window then f = 0; nxt = 0 end
if now < nxt then return {2, nxt - now} end
f = f + 1
local wait = 0
if f > free then wait = math.min(base * 2 ^ math.min(f - free - 1, 40), maxw) end
redis.call('HSET', KEYS[1], 'f', f, 'next', now + wait, 'last', now)
redis.call('PEXPIRE', KEYS[1], window + wait)
redis.call('HSET', KEYS[2], 'n', n + 1, 'since', since)
redis.call('PEXPIRE', KEYS[2], math.max(since + window - now, 1))
return {0, 0}
";

/// KEYS: account, address. ARGV: now, free, base, max.
const REFUND: &str = r"
local n = tonumber(redis.call('HGET', KEYS[2], 'n') or '0')
if n > 0 then redis.call('HSET', KEYS[2], 'n', n - 1) end
local f = tonumber(redis.call('HGET', KEYS[1], 'f') or '0')
if f > 0 then
  f = f - 1
  local free, base, maxw = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  local wait = 0
  if f > free then wait = math.min(base * 2 ^ math.min(f - free - 1, 40), maxw) end
  redis.call('HSET', KEYS[1], 'f', f, 'next', tonumber(ARGV[1]) + wait)
end
return 0
";

/// KEYS: account, address.
const SUCCEEDED: &str = r"
redis.call('DEL', KEYS[1])
local n = tonumber(redis.call('HGET', KEYS[2], 'n') or '0')
if n > 0 then redis.call('HSET', KEYS[2], 'n', n - 1) end
return 0
";

impl RedisLoginAttempts {
    pub async fn connect(
        url: &str,
        prefix: &str,
        cfg: &LoginConfig,
    ) -> Result<RedisLoginAttempts, LimiterError> {
        let client = redis::Client::open(url)?;
        let conn = crate::bus::redis::connection_manager(&client).await?;
        Ok(RedisLoginAttempts {
            conn,
            prefix: prefix.to_string(),
            policy: Policy::from(cfg),
        })
    }

    fn keys(&self, account: &str, addr: IpAddr) -> [String; 2] {
        [
            format!("{}login:v1:{}", self.prefix, acct_key(account)),
            format!("{}login:v1:{}", self.prefix, addr_key(addr)),
        ]
    }
}

#[async_trait::async_trait]
impl LoginAttempts for RedisLoginAttempts {
    async fn admit(&self, account: &str, addr: IpAddr) -> Result<Admission, LimiterError> {
        let p = self.policy;
        let [ck, ak] = self.keys(account, addr);
        let (code, wait): (i64, i64) = redis::Script::new(ADMIT)
            .key(ck)
            .key(ak)
            .arg(now_ms())
            .arg(p.window_ms)
            .arg(p.per_address)
            .arg(p.free)
            .arg(p.base_ms)
            .arg(p.max_ms)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(match code {
            0 => Admission::Admitted,
            1 => limited(wait, LimitedBy::Address),
            _ => limited(wait, LimitedBy::Account),
        })
    }

    async fn refund(&self, account: &str, addr: IpAddr) -> Result<(), LimiterError> {
        let p = self.policy;
        let [ck, ak] = self.keys(account, addr);
        let _: i64 = redis::Script::new(REFUND)
            .key(ck)
            .key(ak)
            .arg(now_ms())
            .arg(p.free)
            .arg(p.base_ms)
            .arg(p.max_ms)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    async fn succeeded(&self, account: &str, addr: IpAddr) -> Result<(), LimiterError> {
        let [ck, ak] = self.keys(account, addr);
        let _: i64 = redis::Script::new(SUCCEEDED)
            .key(ck)
            .key(ak)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> LoginConfig {
        LoginConfig {
            attempts_per_address: 10,
            window_secs: 300,
            free_failures_per_account: 5,
            backoff_base_ms: 1_000,
            backoff_max_ms: 60_000,
            max_tracked_keys: 100,
        }
    }

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([192, 0, 2, n])
    }

    #[test]
    fn an_account_backs_off_and_its_owner_gets_in_after_the_wait() {
        let l = MemoryLoginAttempts::new(&cfg());
        let t0 = 1_000_000;
        // A guesser spreads 5 free failures over addresses, then one more.
        for i in 0..6 {
            assert_eq!(l.admit_at(t0, "admin", ip(i)), Admission::Admitted);
        }
        // The 6th failure makes the next attempt wait 1 s: refused, unchecked.
        let refused = l.admit_at(t0 + 10, "admin", ip(99));
        assert_eq!(
            refused,
            Admission::Limited {
                retry_after_secs: 1,
                by: LimitedBy::Account
            }
        );
        // After the wait, the owner's attempt from a clean address is checked.
        assert_eq!(l.admit_at(t0 + 1_000, "admin", ip(99)), Admission::Admitted);
        // Each further failure doubles the wait, up to the maximum: never a lock.
        let mut now = t0 + 1_000;
        let mut waits = Vec::new();
        for i in 0..10 {
            let Admission::Limited {
                retry_after_secs, ..
            } = l.admit_at(now, "admin", ip(100 + i))
            else {
                panic!("no backoff after failure {i}");
            };
            waits.push(retry_after_secs);
            now += retry_after_secs as i64 * 1000;
            assert_eq!(l.admit_at(now, "admin", ip(100 + i)), Admission::Admitted);
        }
        assert_eq!(waits, [2, 4, 8, 16, 32, 60, 60, 60, 60, 60]);
    }

    #[test]
    fn an_address_is_limited_and_success_does_not_reset_it() {
        let l = MemoryLoginAttempts::new(&cfg());
        let t0 = 5_000_000;
        for i in 0..9 {
            assert_eq!(l.admit_at(t0, &format!("u{i}"), ip(1)), Admission::Admitted);
        }
        // The guesser signs in to an account of their own: that attempt is
        // given back, the 9 failures stay.
        assert_eq!(l.admit_at(t0, "mine", ip(1)), Admission::Admitted);
        futures::executor::block_on(l.succeeded("mine", ip(1))).unwrap();
        assert_eq!(l.admit_at(t0, "u9", ip(1)), Admission::Admitted);
        let Admission::Limited {
            by,
            retry_after_secs,
        } = l.admit_at(t0, "mine", ip(1))
        else {
            panic!("the 11th attempt from one address was admitted");
        };
        assert_eq!((by, retry_after_secs), (LimitedBy::Address, 300));
        // Another address is unaffected; the window ends.
        assert_eq!(l.admit_at(t0, "mine", ip(2)), Admission::Admitted);
        assert_eq!(l.admit_at(t0 + 300_000, "mine", ip(1)), Admission::Admitted);
    }

    #[test]
    fn refunds_give_back_and_the_table_is_a_bounded_lru() {
        let l = MemoryLoginAttempts::new(&cfg());
        let t0 = 9_000_000;
        for _ in 0..10 {
            l.admit_at(t0, "x", ip(3));
            l.refund_at(t0, "x", ip(3));
        }
        assert_eq!(l.admit_at(t0, "x", ip(3)), Admission::Admitted, "refunded");
        // A spray of 1,000 usernames from 1,000 addresses keeps at most 100 keys,
        // and a guesser at its limit who keeps trying stays limited (clearing the
        // whole table at a size reset their count too).
        for _ in 0..10 {
            l.admit_at(t0, "y", ip(4));
        }
        for i in 0..1_000u32 {
            let sprayer = IpAddr::from([10, 0, (i / 256) as u8, (i % 256) as u8]);
            l.admit_at(t0 + 1, &format!("junk{i}"), sprayer);
            if i % 10 == 0 {
                assert!(matches!(
                    l.admit_at(t0 + 1, "y", ip(4)),
                    Admission::Limited { .. }
                ));
            }
        }
        assert!(l.len() <= 100, "{}", l.len());
        assert!(matches!(
            l.admit_at(t0 + 2, "y", ip(4)),
            Admission::Limited { .. }
        ));
    }
}
