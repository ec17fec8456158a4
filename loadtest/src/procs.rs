//! Processes the load tester starts itself (weft, the mock LLM, LangGraph), and
//! their memory and CPU read from `/proc` while a scenario runs.
//!
//! Each child writes its stderr/stdout to a log file in the run directory; start-up
//! waits for the `listening on http://ADDR` line that `weft` and `mock-llm` print.
//! A restarted process keeps its name and address, so clients reconnect to the
//! same URL.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use tokio::process::{Child, Command};

/// How to (re)start one process.
#[derive(Debug, Clone)]
pub struct ProcSpec {
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// Wait for `listening on http://ADDR` (or this pattern's text before the address).
    pub ready_marker: Option<String>,
}

/// A running child.
pub struct Proc {
    pub spec: ProcSpec,
    pub child: Child,
    pub addr: Option<String>,
    pub log: PathBuf,
}

impl Proc {
    pub async fn start(spec: ProcSpec, dir: &Path) -> anyhow::Result<Proc> {
        let log = dir.join(format!("{}.log", spec.name));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("opening {}", log.display()))?;
        let start_len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .kill_on_drop(true);
        if let Some(cwd) = &spec.cwd {
            cmd.current_dir(cwd);
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}", spec.program.display()))?;
        let mut proc = Proc {
            spec,
            child,
            addr: None,
            log,
        };
        if let Some(marker) = proc.spec.ready_marker.clone() {
            proc.addr = Some(proc.wait_for(&marker, start_len).await?);
        }
        Ok(proc)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Wait (≤ 60 s) for `marker` followed by an address in the log.
    async fn wait_for(&mut self, marker: &str, from: u64) -> anyhow::Result<String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let text = std::fs::read(&self.log).unwrap_or_default();
            let text =
                String::from_utf8_lossy(&text[(from as usize).min(text.len())..]).into_owned();
            if let Some(i) = text.find(marker) {
                let rest = text[i + marker.len()..].trim_start();
                let addr: String = rest
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '"')
                    .collect();
                if !addr.is_empty() {
                    return Ok(addr);
                }
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "{} exited with {status} before it was ready; see {}",
                    self.spec.name,
                    self.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!(
            "{} was not ready within 60 s; see {}",
            self.spec.name,
            self.log.display()
        )
    }

    /// SIGKILL, and reap.
    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
    }

    /// SIGTERM (graceful), then SIGKILL after `grace`.
    pub async fn stop(&mut self, grace: Duration) {
        if let Some(pid) = self.pid() {
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .await;
            if tokio::time::timeout(grace, self.child.wait()).await.is_ok() {
                return;
            }
        }
        self.kill().await;
    }

    /// Start the same process again (same arguments, so the same address when it
    /// was given one).
    pub async fn restart(&mut self, dir: &Path) -> anyhow::Result<()> {
        let spec = self.spec.clone();
        let fresh = Proc::start(spec, dir).await?;
        *self = fresh;
        Ok(())
    }
}

/// Memory and CPU of one process over a scenario.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProcUsage {
    pub name: String,
    pub pid: u32,
    pub rss_start_mib: f64,
    pub rss_peak_mib: f64,
    pub rss_end_mib: f64,
    /// CPU seconds (user + system) spent during the scenario.
    pub cpu_s: f64,
    /// Average CPU over the scenario, in percent of one core.
    pub cpu_pct: f64,
}

/// Resident set size in KiB, from `/proc/PID/status`.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// utime + stime in clock ticks, from `/proc/PID/stat`.
pub(crate) fn cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name (which may contain spaces).
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Linux reports CPU times in USER_HZ, 100 on every mainstream architecture.
pub(crate) const TICKS_PER_S: f64 = 100.0;

struct Watched {
    usage: ProcUsage,
    ticks_start: u64,
    ticks_last: u64,
}

/// Samples the given processes every 200 ms until stopped.
pub struct ProcWatch {
    inner: Arc<Mutex<BTreeMap<u32, Watched>>>,
    started: Instant,
    stop: tokio::sync::watch::Sender<bool>,
}

impl ProcWatch {
    pub fn start(procs: &[(String, u32)]) -> ProcWatch {
        let mut map = BTreeMap::new();
        for (name, pid) in procs {
            let rss = rss_kib(*pid).unwrap_or(0) as f64 / 1024.0;
            let ticks = cpu_ticks(*pid).unwrap_or(0);
            map.insert(
                *pid,
                Watched {
                    usage: ProcUsage {
                        name: name.clone(),
                        pid: *pid,
                        rss_start_mib: rss,
                        rss_peak_mib: rss,
                        rss_end_mib: rss,
                        ..ProcUsage::default()
                    },
                    ticks_start: ticks,
                    ticks_last: ticks,
                },
            );
        }
        let inner = Arc::new(Mutex::new(map));
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let sampler = inner.clone();
        tokio::spawn(async move {
            loop {
                sample(&sampler);
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                    _ = stopped.changed() => break,
                }
            }
        });
        ProcWatch {
            inner,
            started: Instant::now(),
            stop,
        }
    }

    /// Stop sampling and report.
    pub fn finish(self) -> Vec<ProcUsage> {
        sample(&self.inner);
        let _ = self.stop.send(true);
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        map.values()
            .map(|w| {
                let mut u = w.usage.clone();
                u.cpu_s = w.ticks_last.saturating_sub(w.ticks_start) as f64 / TICKS_PER_S;
                u.cpu_pct = 100.0 * u.cpu_s / secs;
                u
            })
            .collect()
    }
}

fn sample(inner: &Mutex<BTreeMap<u32, Watched>>) {
    let mut map = inner.lock().unwrap_or_else(|p| p.into_inner());
    for (pid, w) in map.iter_mut() {
        if let Some(kib) = rss_kib(*pid) {
            let mib = kib as f64 / 1024.0;
            w.usage.rss_end_mib = mib;
            w.usage.rss_peak_mib = w.usage.rss_peak_mib.max(mib);
        }
        if let Some(t) = cpu_ticks(*pid) {
            w.ticks_last = t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_process() {
        let me = std::process::id();
        assert!(rss_kib(me).unwrap() > 0);
        assert!(cpu_ticks(me).is_some());
    }
}
