//! Configuration that changes while the process runs (`POST /v1/admin/reload`,
//! `weft admin reload`, `SIGHUP`, the web settings).
//!
//! A process holds one [`LiveConfig`]: the config it runs with now, swapped
//! whole. Readers take a snapshot ([`LiveConfig::get`], an `Arc`) and keep it
//! for the work at hand — a run's attempt keeps the one it started with, so a
//! reload never changes a run half-way. A reload builds the next config
//! completely (file, environment, the admins' settings from the database),
//! validates it, and checks it against the current one ([`changes`]): a
//! setting that only a restart can change (listen addresses, database and
//! Redis URLs, the Lark app, pool and memory sizes) refuses the whole reload,
//! naming the key; otherwise it is swapped in at once and the answer lists
//! what changed, per item (`models.gpt-4o: added`,
//! `limits.runs_per_minute_per_user: 60 → 120`, `mcp.files: restarted`).
//! Nothing is half-applied: any error leaves the running config as it was.
//!
//! Subscribers ([`LiveConfig::subscribe`]) rebuild what they derive from it:
//! the worker its model clients, tools and MCP servers (only the servers whose
//! settings changed restart).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::watch;

use super::masking::is_secret;
use super::{Config, ConfigError, ModelConfig};

/// The config a process runs with, and the models derived from it.
#[derive(Debug)]
pub struct Current {
    pub config: Arc<Config>,
    /// `config.effective_models()`: the models served, the default first.
    pub models: Arc<[ModelConfig]>,
}

impl Current {
    fn of(config: Config) -> Arc<Current> {
        let models = config.effective_models().into();
        Arc::new(Current {
            config: Arc::new(config),
            models,
        })
    }
}

/// What the command line set over the file and the environment, applied
/// again to every reloaded config.
pub type Flags = Arc<dyn Fn(&mut Config) + Send + Sync>;

/// See the module docs. Cheap to clone; clones share the config.
#[derive(Clone)]
pub struct LiveConfig {
    current: Arc<watch::Sender<Arc<Current>>>,
    /// The file it was read from (`--config` / `WEFT_CONFIG`), read again on reload.
    file: Option<PathBuf>,
    flags: Flags,
    version: Arc<std::sync::atomic::AtomicI64>,
}

impl std::fmt::Debug for LiveConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveConfig")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl LiveConfig {
    /// `config` as loaded from `file` with the command line's `flags` over it.
    pub fn new(config: Config, file: Option<PathBuf>, flags: Flags) -> LiveConfig {
        let (tx, _) = watch::channel(Current::of(config));
        LiveConfig {
            current: Arc::new(tx),
            file,
            flags,
            version: Arc::default(),
        }
    }

    /// A config from no file and no flags (tests, tools).
    pub fn fixed(config: Config) -> LiveConfig {
        LiveConfig::new(config, None, Arc::new(|_| {}))
    }

    /// The config now; keep the `Arc` for the work at hand.
    pub fn get(&self) -> Arc<Config> {
        self.current.borrow().config.clone()
    }

    /// The config now with its models.
    pub fn current(&self) -> Arc<Current> {
        self.current.borrow().clone()
    }

    /// Told of every config swapped in.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Current>> {
        self.current.subscribe()
    }

    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The SHA-256 (hex) of the config file as it is now; `None` without a
    /// file or when it cannot be read (loading it says why).
    pub fn file_hash(&self) -> Option<String> {
        use sha2::{Digest, Sha256};
        let bytes = std::fs::read(self.file()?).ok()?;
        Some(hex::encode(Sha256::digest(&bytes)))
    }

    /// Reads the config again — the file, the environment, then `settings`
    /// (the admins' settings from the database) — and swaps it in when it is
    /// valid and changes nothing that needs a restart. `Ok` lists what changed
    /// (empty: nothing did).
    pub fn reload(&self, settings: Option<&Value>) -> Result<Vec<Change>, ReloadError> {
        let (next, found) = self.prepare(settings)?;
        if !found.is_empty() {
            self.current.send_replace(Current::of(next));
        }
        Ok(found)
    }

    /// What [`Self::reload`] with `settings` would swap in, and what it
    /// changes; nothing is swapped.
    pub fn prepare(&self, settings: Option<&Value>) -> Result<(Config, Vec<Change>), ReloadError> {
        // figment names the file and key itself; a failed check names the key.
        let invalid = |e: ConfigError| match (e, self.file()) {
            (ConfigError::Load(e), _) => ReloadError::Invalid(format!("{e}")),
            (ConfigError::Invalid(why), Some(file)) => {
                ReloadError::Invalid(format!("{}: {why}", file.display()))
            }
            (ConfigError::Invalid(why), None) => ReloadError::Invalid(why),
        };
        let mut next = Config::load_with(self.file(), settings).map_err(invalid)?;
        (self.flags)(&mut next);
        next.validate().map_err(invalid)?;
        let found = changes(&self.get(), &next)?;
        Ok((next, found))
    }

    /// Swaps `next` in (see [`Self::reload`]).
    pub fn apply(&self, next: Config) -> Result<Vec<Change>, ReloadError> {
        let found = changes(&self.get(), &next)?;
        if !found.is_empty() {
            self.current.send_replace(Current::of(next));
        }
        Ok(found)
    }

    /// The settings version this process last applied (see `crate::reload`).
    pub fn version(&self) -> i64 {
        self.version.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn set_version(&self, version: i64) {
        self.version
            .store(version, std::sync::atomic::Ordering::Release);
    }
}

/// Why a reload changed nothing.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ReloadError {
    /// The new config does not load or validate: file, key and reason.
    #[error("{0}")]
    Invalid(String),
    /// It changes settings only a restart applies.
    #[error("{} (nothing was changed): {}", if .0.len() == 1 { "this setting needs a restart" } else { "these settings need a restart" }, .0.join(", "))]
    NeedsRestart(Vec<String>),
}

/// One thing a reload changes, as `key: what`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    pub key: String,
    pub change: String,
}

impl Change {
    /// `changes` on one line, for logs: `a: x → y; b: added`.
    pub fn list(changes: &[Change]) -> String {
        let lines: Vec<String> = changes.iter().map(ToString::to_string).collect();
        lines.join("; ")
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.change)
    }
}

/// Settings read once at start-up (sockets, pools, connections, memory
/// budgets sized at start): a reload that changes one is refused.
const RESTART_ONLY: &[&str] = &[
    "listen",
    "metrics_listen",
    "database_url",
    "database_max_connections",
    "redis_url",
    "redis_prefix",
    "data_dir",
    "log_format",
    "admin_token",
    "trusted_proxies",
    "login",
    "http",
    "files",
    "skills_dir",
    "lark.app_id",
    "lark.app_secret",
    "lark.base_url",
    "lark.calls_per_second",
    "lark.max_concurrent_messages",
    "lark.queued_messages_per_chat",
    "lark.inbox_lease_ms",
    "worker.concurrency",
    "worker.job_concurrency",
    "limits.body_bytes",
    "limits.attachments_bytes",
    "limits.message_chars",
    "limits.streams_per_user",
    "limits.streams_per_run",
    "attachments.store",
    "attachments.gateway_upload_memory_bytes",
    "attachments.upload_memory_per_user_bytes",
    "attachments.worker_image_memory_bytes",
];

/// Lists whose items are told apart by a field (`models` by `id`), so a change
/// reads `models.gpt-4o: added` rather than by position; `mcp_servers` are
/// shown as `mcp.<name>`.
const KEYED_LISTS: &[(&str, &str, &str)] = &[
    ("models", "id", "models"),
    ("embedding_models", "id", "embedding_models"),
    ("mcp_servers", "name", "mcp"),
    ("agents", "id", "agents"),
];

/// What changes from `old` to `new`, or why that needs a restart.
pub fn changes(old: &Config, new: &Config) -> Result<Vec<Change>, ReloadError> {
    let (old, new) = (to_value(old), to_value(new));
    let mut restart = Vec::new();
    for key in RESTART_ONLY {
        if at(&old, key) != at(&new, key) {
            restart.push((*key).to_owned());
        }
    }
    if !restart.is_empty() {
        return Err(ReloadError::NeedsRestart(restart));
    }
    let mut out = Vec::new();
    for (list, id_field, shown) in KEYED_LISTS {
        keyed_changes(&old[*list], &new[*list], id_field, shown, &mut out);
    }
    let (Value::Object(old), Value::Object(new)) = (old, new) else {
        return Ok(out);
    };
    for (key, value) in &new {
        if KEYED_LISTS.iter().any(|(list, ..)| list == key) {
            continue;
        }
        diff(key, old.get(key).unwrap_or(&Value::Null), value, &mut out);
    }
    Ok(out)
}

pub(super) fn to_value(config: &Config) -> Value {
    serde_json::to_value(config).unwrap_or(Value::Null)
}

/// The value at a dotted path.
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| &v[k])
}

fn keyed_changes(old: &Value, new: &Value, id: &str, shown: &str, out: &mut Vec<Change>) {
    let items = |v: &Value| -> Vec<(String, Value)> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|item| {
                (
                    item[id].as_str().unwrap_or_default().to_owned(),
                    item.clone(),
                )
            })
            .collect()
    };
    let (old, new) = (items(old), items(new));
    let restarted = if shown == "mcp" {
        "restarted"
    } else {
        "changed"
    };
    for (name, item) in &new {
        let change = match old.iter().find(|(n, _)| n == name) {
            None => "added".to_owned(),
            Some((_, before)) if before == item => continue,
            Some((_, before)) => {
                let mut fields = Vec::new();
                diff("", before, item, &mut fields);
                let what: Vec<String> = fields
                    .iter()
                    .map(|c| c.to_string().trim_start_matches('.').to_owned())
                    .collect();
                format!("{restarted} ({})", what.join("; "))
            }
        };
        out.push(Change {
            key: format!("{shown}.{name}"),
            change,
        });
    }
    for (name, _) in old.iter().filter(|(n, _)| !new.iter().any(|(m, _)| m == n)) {
        out.push(Change {
            key: format!("{shown}.{name}"),
            change: if shown == "mcp" { "stopped" } else { "removed" }.to_owned(),
        });
    }
}

/// Changes under `key`, one per leaf that differs.
fn diff(key: &str, old: &Value, new: &Value, out: &mut Vec<Change>) {
    if old == new {
        return;
    }
    let child = |k: &str| {
        if key.is_empty() {
            k.to_owned()
        } else {
            format!("{key}.{k}")
        }
    };
    match (old, new) {
        (Value::Object(a), Value::Object(b)) if !is_secret(key) => {
            for (k, v) in b {
                diff(&child(k), a.get(k).unwrap_or(&Value::Null), v, out);
            }
            for (k, v) in a.iter().filter(|(k, _)| !b.contains_key(*k)) {
                diff(&child(k), v, &Value::Null, out);
            }
        }
        _ if is_secret(key) => out.push(Change {
            key: key.to_owned(),
            change: "changed".to_owned(),
        }),
        _ => out.push(Change {
            key: key.to_owned(),
            change: format!("{} → {}", shown(old), shown(new)),
        }),
    }
}

fn shown(v: &Value) -> String {
    match v {
        Value::Null => "unset".to_owned(),
        Value::String(s) => format!("{s:?}"),
        other => {
            let text = other.to_string();
            if text.chars().count() > 80 {
                format!("{}…", text.chars().take(80).collect::<String>())
            } else {
                text
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::masking::{MASK, masked, unmask};
    use crate::{McpServerConfig, Secret};

    fn model(id: &str) -> ModelConfig {
        ModelConfig {
            id: id.into(),
            ..ModelConfig::mock()
        }
    }

    #[test]
    fn a_reload_lists_what_changed_per_item() {
        let old = Config {
            models: vec![model("mock"), model("old")],
            ..Config::default()
        };
        let mut new = old.clone();
        new.models.retain(|m| m.id != "old");
        new.models.push(model("gpt-4o"));
        new.limits.runs_per_minute_per_user = old.limits.runs_per_minute_per_user * 2;
        let found: Vec<String> = changes(&old, &new)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        let was = old.limits.runs_per_minute_per_user;
        assert_eq!(
            found,
            [
                "models.gpt-4o: added".to_owned(),
                "models.old: removed".to_owned(),
                format!("limits.runs_per_minute_per_user: {was} → {}", was * 2),
            ]
        );
        assert!(changes(&old, &old).unwrap().is_empty());
    }

    #[test]
    fn a_changed_mcp_server_restarts_and_secrets_never_show() {
        let server = |cmd: &str| McpServerConfig {
            name: "files".into(),
            command: Some(cmd.into()),
            ..McpServerConfig::default()
        };
        let old = Config {
            mcp_servers: vec![server("a")],
            ..Config::default()
        };
        let new = Config {
            mcp_servers: vec![server("b")],
            ..Config::default()
        };
        let found = changes(&old, &new).unwrap();
        assert_eq!(found[0].key, "mcp.files");
        assert!(found[0].change.starts_with("restarted"), "{found:?}");
        let mut keyed = old.clone();
        keyed.mcp_servers[0]
            .env
            .insert("TOKEN".into(), Secret("tok-old".into()));
        let mut rekeyed = keyed.clone();
        rekeyed.mcp_servers[0]
            .env
            .insert("TOKEN".into(), Secret("tok-new".into()));
        let found = changes(&keyed, &rekeyed).unwrap();
        assert_eq!(found[0].to_string(), "mcp.files: restarted (env: changed)");
        let shown = masked(&rekeyed).to_string();
        assert!(
            !shown.contains("tok-new") && shown.contains(MASK),
            "{shown}"
        );
        let mut back = masked(&rekeyed);
        unmask(&mut back, &to_value(&rekeyed));
        assert_eq!(back["mcp_servers"][0]["env"]["TOKEN"], "tok-new");
    }

    #[test]
    fn what_needs_a_restart_refuses_the_whole_reload() {
        let old = Config::default();
        let new = Config {
            listen: Some("0.0.0.0:1".into()),
            database_max_connections: 99,
            ..Config::default()
        };
        let e = changes(&old, &new).unwrap_err();
        assert_eq!(
            e.to_string(),
            "these settings need a restart (nothing was changed): listen, database_max_connections"
        );
        let live = LiveConfig::fixed(old);
        assert!(live.apply(new).is_err());
        assert_eq!(live.get().listen, None, "nothing changed");
    }
}
