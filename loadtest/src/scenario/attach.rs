//! `attach`: many idle SSE clients on one gateway. A few runs are started that
//! wait ten minutes for their first token (`@mock.delay 600000 0`), so their
//! streams stay open and quiet; then N clients attach to them and hold. The
//! gateway's RSS growth divided by N is the cost of one idle client. Afterwards
//! the runs are cancelled and every client is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::client::WeftClient;
use crate::procs::rss_kib;
use crate::report::AttachResult;
use crate::sse::SseReader;

/// Open `n` idle clients against the gateway of `client`, hold them `hold`.
pub async fn run(
    client: &WeftClient,
    n: usize,
    hold: Duration,
    gateway_pid: Option<u32>,
) -> anyhow::Result<AttachResult> {
    let runs = start_quiet_runs(client, n.div_ceil(100).clamp(1, 100)).await?;
    let mut out = AttachResult {
        clients_requested: n as u64,
        ..AttachResult::default()
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    out.gateway_rss_before_mib = pid_mib(gateway_pid);
    let connected = Arc::new(AtomicU64::new(0));
    let open = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let gate = Arc::new(Semaphore::new(128));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let (client, run) = (client.clone(), runs[i % runs.len()].clone());
        let (connected, open, failed, gate) = (
            connected.clone(),
            open.clone(),
            failed.clone(),
            gate.clone(),
        );
        let mut stop = stop_rx.clone();
        tasks.push(tokio::spawn(async move {
            let permit = gate.acquire_owned().await;
            let response = match client.attach(&run, 0).await {
                Ok(r) if r.status().is_success() => r,
                _ => {
                    failed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            };
            let mut reader = SseReader::new(Box::pin(response.bytes_stream()));
            // The replayed `run_started` proves the client is attached.
            match tokio::time::timeout(Duration::from_secs(30), reader.next()).await {
                Ok(Ok(_)) => {}
                _ => {
                    failed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
            drop(permit);
            connected.fetch_add(1, Ordering::Relaxed);
            open.fetch_add(1, Ordering::Relaxed);
            // Hold: keep reading (pings) until told to stop or the stream ends.
            loop {
                tokio::select! {
                    r = reader.next() => if r.is_err() { break },
                    _ = stop.changed() => break,
                }
            }
            open.fetch_sub(1, Ordering::Relaxed);
        }));
    }
    // Wait until every client is connected or failed (bounded).
    let deadline = Instant::now() + Duration::from_secs(120);
    while connected.load(Ordering::Relaxed) + failed.load(Ordering::Relaxed) < n as u64
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let held_from = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    out.clients_connected = connected.load(Ordering::Relaxed);
    out.connect_failures = failed.load(Ordering::Relaxed);
    out.gateway_rss_after_mib = pid_mib(gateway_pid);
    tokio::time::sleep(hold.saturating_sub(held_from.elapsed())).await;
    out.held_s = held_from.elapsed().as_secs_f64();
    out.still_open_at_end = open.load(Ordering::Relaxed);
    if out.clients_connected > 0 && gateway_pid.is_some() {
        out.rss_per_client_kib = (out.gateway_rss_after_mib - out.gateway_rss_before_mib) * 1024.0
            / out.clients_connected as f64;
    }
    let _ = stop_tx.send(true);
    for r in &runs {
        let _ = client.cancel(r).await;
    }
    for t in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
    }
    Ok(out)
}

fn pid_mib(pid: Option<u32>) -> f64 {
    pid.and_then(rss_kib).map_or(0.0, |k| k as f64 / 1024.0)
}

/// Start `k` runs that stay silent for ten minutes (concurrently: in distributed
/// mode each waits for a worker to pick it up); returns their ids.
async fn start_quiet_runs(client: &WeftClient, k: usize) -> anyhow::Result<Vec<String>> {
    let starts = (0..k).map(|_| start_quiet_run(client));
    futures::future::try_join_all(starts).await
}

async fn start_quiet_run(client: &WeftClient) -> anyhow::Result<String> {
    let session = client.create_session().await?;
    let key = uuid::Uuid::new_v4().to_string();
    let r = client
        .send_streaming(&session.id, "@mock.tokens 1 @mock.delay 600000 0", &key)
        .await?;
    anyhow::ensure!(
        r.status().is_success(),
        "starting a quiet run: {}",
        r.status()
    );
    let mut reader = SseReader::new(Box::pin(r.bytes_stream()));
    let first = tokio::time::timeout(Duration::from_secs(30), reader.next())
        .await
        .map_err(|_| anyhow::anyhow!("no run_started within 30 s"))?
        .map_err(|e| anyhow::anyhow!("quiet run stream ended: {e:?}"))?;
    let ev: weft_shared::event::RunEvent = serde_json::from_str(&first.data)?;
    Ok(ev.run_id.0)
}
