//! Reloading the config on every replica (docs/configuration.md, "Config reload").
//!
//! One replica is asked (`POST /v1/admin/reload`, `SIGHUP`, a save of the web
//! settings): it reads its config again, validates it completely and checks
//! what would need a restart before anything changes ([`LiveConfig`]); on
//! success it brings the file's agents up to date in the database and bumps
//! the config version (`config_settings.version`). Every replica — gateways
//! and workers alike — reads that one-row version every [`POLL`] and, when it
//! moved, reads its own config again the same way. So a change reaches every
//! replica within a poll and a reload (well inside the 2 s the operators are
//! promised), with no message to lose: a Redis pub/sub notice would be missed
//! by a replica that is reconnecting, a version in the database is not.
//!
//! A replica whose own copy of the config does not load keeps the config it
//! runs with and logs why, once per version; the others go on. Runs in flight
//! keep the config their attempt started with (they hold its `Arc`).
//!
//! **A copy that lags.** Each replica reads its *own* copy of the file, and
//! copies do not change at the same moment: a Kubernetes ConfigMap reaches
//! each pod's volume in its own time (up to a minute or more), and an operator
//! may copy a file to one machine after another. So the version also records
//! the SHA-256 of the file the reloading replica read. A follower whose copy
//! differs applies what it has (a replica with a file of its own on purpose
//! is not held back) and then watches its copy for [`FILE_LAG`]: once it
//! matches, it is read again (any other edit of the copy waits for a reload
//! of its own, as it would without the lag). Without this a pod whose
//! volume updated a second after the version moved would run the old config
//! until the next reload.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::Store;
use weft_config::masking::{masked, unmask};
use weft_config::{Change, LiveConfig, ReloadError};

/// How often every replica reads the config version.
pub const POLL: Duration = Duration::from_secs(1);

/// How long a replica whose copy of the config file differs from the one a
/// new version was made with watches its copy for the change (module docs).
pub const FILE_LAG: Duration = Duration::from_secs(180);

/// The sections of the config the web settings may set.
pub const SETTABLE: &[&str] = &["models", "limits", "tools", "mcp_servers"];

/// Reads the config again on this replica and, when that worked, makes every
/// other replica do the same; what changed here. `by` is recorded with the
/// new version (`admin`, `SIGHUP`).
pub async fn reload(
    store: &Store,
    live: &LiveConfig,
    by: &str,
) -> Result<Vec<Change>, ReloadError> {
    let settings = store
        .config_settings()
        .await
        .map_err(|e| ReloadError::Invalid(format!("reading the saved settings failed: {e}")))?;
    let changed = live.reload(settings.as_ref().map(|s| &s.document))?;
    after_change(store, live, by).await;
    Ok(changed)
}

/// Saves `edited` (some of [`SETTABLE`], a secret sent back as its mask kept as it
/// are) over the saved settings, when the config that makes is valid and
/// needs no restart, and applies it here and on every replica.
pub async fn save_settings(
    store: &Store,
    live: &LiveConfig,
    edited: Map<String, Value>,
    by: &str,
) -> Result<Vec<Change>, ReloadError> {
    if let Some(other) = edited.keys().find(|k| !SETTABLE.contains(&k.as_str())) {
        return Err(ReloadError::Invalid(format!(
            "{other} cannot be set here; the settings are {}",
            SETTABLE.join(", ")
        )));
    }
    let saved = store
        .config_settings()
        .await
        .map_err(|e| ReloadError::Invalid(format!("reading the saved settings failed: {e}")))?;
    let mut document = match saved.map(|s| s.document) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let now = serde_json::to_value(&*live.get()).unwrap_or(Value::Null);
    for (key, mut value) in edited {
        unmask(&mut value, &now[&key]);
        document.insert(key, value);
    }
    let document = Value::Object(document);
    let (next, changed) = live.prepare(Some(&document))?;
    store
        .put_config_settings(&document, by, live.file_hash().as_deref())
        .await
        .map_err(|e| ReloadError::Invalid(format!("saving the settings failed: {e}")))?;
    live.apply(next)?;
    after_change(store, live, by).await;
    Ok(changed)
}

/// The settings as admins see them: the sections they may set, from the
/// config this replica runs with, secrets masked.
pub fn settings_view(live: &LiveConfig) -> Value {
    let all = masked(&live.get());
    Value::Object(
        SETTABLE
            .iter()
            .map(|k| ((*k).to_owned(), all[*k].clone()))
            .collect(),
    )
}

/// The file's agents into the database, and a new version for the others.
async fn after_change(store: &Store, live: &LiveConfig, by: &str) {
    if let Err(e) = store.seed_agents(&live.get().agents).await {
        tracing::warn!(error = %e, "bringing the file's agents up to date failed; the next reload tries again");
    }
    match store
        .bump_config_version(by, live.file_hash().as_deref())
        .await
    {
        Ok(version) => live.set_version(version),
        Err(e) => {
            tracing::warn!(error = %e, "bumping the config version failed: other replicas keep their config until the next reload")
        }
    }
}

/// A new version's file that this replica's copy did not match yet.
struct Lag {
    version: i64,
    /// The hash the version was made with.
    want: String,
    until: Instant,
}

/// Follows the config version until `shutdown`: whenever another replica
/// bumped it, this one reads its config again, and keeps reading a copy of
/// the file that lags (see the module docs).
pub async fn follow(store: Store, live: LiveConfig, shutdown: CancellationToken) {
    match store.config_version().await {
        Ok(v) => live.set_version(v),
        Err(e) => tracing::warn!(error = %e, "reading the config version failed"),
    }
    let mut lagging: Option<Lag> = None;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(POLL) => {}
        }
        let version = match store.config_version().await {
            Ok(v) => v,
            Err(e) => {
                tracing::debug!(error = %e, "reading the config version failed");
                continue;
            }
        };
        if version != live.version() {
            live.set_version(version);
            let loaded = live.file_hash();
            let Some(settings) = apply_here(&store, &live, version).await else {
                continue;
            };
            lagging = settings
                .and_then(|s| s.file_hash)
                .filter(|want| loaded.as_ref() != Some(want))
                .map(|want| Lag {
                    version,
                    want,
                    until: Instant::now() + FILE_LAG,
                });
            if lagging.is_some() {
                tracing::info!(
                    config.version = version,
                    "this replica's copy of the config file differs from the one the reload read; watching it for {} s",
                    FILE_LAG.as_secs()
                );
            }
            continue;
        }
        let Some(lag) = &lagging else { continue };
        // Only the copy the reload read: an edit not reloaded yet waits for
        // its own reload, here as everywhere.
        if live.file_hash().as_ref() == Some(&lag.want) {
            tracing::info!(
                config.version = lag.version,
                "this replica's copy of the config file now matches the one the reload read"
            );
            apply_here(&store, &live, version).await;
            lagging = None;
        } else if Instant::now() >= lag.until {
            tracing::warn!(
                config.version = lag.version,
                "this replica's config file still differs from the one the reload read; it runs with its own copy"
            );
            lagging = None;
        }
    }
}

/// Reads the config again here with the saved settings; the settings read,
/// or `None` when they could not be.
async fn apply_here(
    store: &Store,
    live: &LiveConfig,
    version: i64,
) -> Option<Option<crate::ConfigSettings>> {
    let settings = match store.config_settings().await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "reading the saved settings failed");
            return None;
        }
    };
    match live.reload(settings.as_ref().map(|s| &s.document)) {
        Ok(changed) if changed.is_empty() => {}
        Ok(changed) => {
            tracing::info!(config.version = version, changes = %Change::list(&changed), "config reloaded");
        }
        Err(e) => {
            tracing::error!(config.version = version, error = %e, "the new config could not be applied here; this replica keeps the config it runs with");
        }
    }
    Some(settings)
}
