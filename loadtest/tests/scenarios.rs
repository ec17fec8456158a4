//! The load tester run briefly against a live embedded Weft (gateway + worker in
//! this process, SQLite in a temp dir, the in-process `mock` model), checking what
//! a user of the tool relies on: reports with runs in them, and `reconnect`
//! finding no lost or duplicated reply. No timing assertions: speed is what the
//! tool measures, not what these tests check.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use weft_loadtest::client::Gateways;
use weft_loadtest::runner::{RunContext, WeftTarget, run_weft};
use weft_loadtest::scenario::{Params, Scenario};
use weft_loadtest::turn::TurnPlan;
use weft_shared::bus::MemoryBus;
use weft_shared::config::{Config, Secret};
use weft_shared::queue::MemoryQueue;
use weft_shared::store::Store;

const ADMIN: &str = "weft_loadtest_admin_token_0123456789";

/// A running embedded Weft; stops when dropped.
struct Weft {
    url: String,
    shutdown: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Drop for Weft {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn start_weft() -> Weft {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config {
        data_dir: Some(dir.path().to_path_buf()),
        admin_token: Some(Secret(ADMIN.into())),
        ..Config::default()
    };
    cfg.limits.active_runs_per_user = 0;
    cfg.limits.runs_per_minute_per_user = 0;
    // The attach scenario holds many streams of one user on a few runs.
    cfg.limits.streams_per_user = 0;
    cfg.limits.streams_per_run = 0;
    let cfg = Arc::new(cfg);
    let db = match cfg.mode().unwrap() {
        weft_shared::config::Mode::Embedded { database_url } => database_url,
        other => panic!("expected embedded mode, got {other:?}"),
    };
    let store = Store::connect(&db).await.unwrap();
    store.migrate().await.unwrap();
    let unusable = weft_shared::auth::hash_password(&weft_shared::auth::new_token()).unwrap();
    store
        .ensure_bootstrap_admin(&weft_shared::auth::token_hash(ADMIN), &unusable)
        .await
        .unwrap();
    let bus: weft_shared::bus::SharedBus = Arc::new(MemoryBus::new(cfg.events.max_len as usize));
    let queue: weft_shared::queue::SharedQueue = Arc::new(MemoryQueue::default());
    let shutdown = CancellationToken::new();
    let deps = weft_worker::WorkerDeps {
        store: store.clone(),
        bus: bus.clone(),
        queue: queue.clone(),
        config: cfg.clone(),
        lark: None,
    };
    tokio::spawn(weft_worker::run(deps, shutdown.clone(), true));
    let state = weft_gateway::AppState::new(store, bus, queue, cfg, shutdown.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(weft_gateway::serve(listener, state));
    Weft {
        url,
        shutdown,
        _dir: dir,
    }
}

fn params(scenario: Scenario, users: usize, secs: u64, plan: TurnPlan) -> Params {
    Params {
        scenario,
        users,
        duration: Duration::from_secs(secs),
        plan,
        ramp: Duration::from_millis(200),
        turn_timeout: Duration::from_secs(20),
        attach_clients: 200,
    }
}

fn target(weft: &Weft) -> WeftTarget {
    WeftTarget {
        gateways: Gateways::new(vec![weft.url.clone()]).unwrap(),
        token: ADMIN.into(),
        shared_token: false,
        accounts: 1,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_reports_completed_runs_with_ttft_and_json() {
    let weft = start_weft().await;
    let p = params(Scenario::Latency, 5, 2, TurnPlan::mock(5, 20, 5));
    let report = run_weft(&p, &target(&weft), &RunContext::default())
        .await
        .unwrap();
    assert!(report.runs_ok > 0, "no run completed:\n{}", report.table());
    assert_eq!(report.runs_failed, 0, "{}", report.table());
    assert_eq!(
        report.ttft_ms.count, report.runs_ok,
        "one TTFT per completed run"
    );
    assert_eq!(report.incoherent_streams, 0, "{}", report.table());
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["scenario"], "latency");
    assert!(json["runs_per_s"].as_f64().unwrap() > 0.0);
    assert!(json["ttft_overhead_ms"]["p99"].is_number());
    assert!(report.table().contains("ttft overhead"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_drops_streams_and_loses_or_duplicates_nothing() {
    let weft = start_weft().await;
    let p = params(Scenario::Reconnect, 5, 3, TurnPlan::mock(20, 10, 5));
    let report = run_weft(&p, &target(&weft), &RunContext::default())
        .await
        .unwrap();
    let v = report
        .verify
        .clone()
        .expect("reconnect verifies through the API");
    assert!(report.runs_ok > 0, "{}", report.table());
    assert!(
        report.reconnects > 0,
        "the scenario must actually drop streams:\n{}",
        report.table()
    );
    assert_eq!(
        (v.lost, v.duplicated, v.wrong),
        (0, 0, 0),
        "{}",
        report.table()
    );
    assert_eq!(v.complete_replies, v.user_messages, "{}", report.table());
    assert!(v.user_messages >= report.runs_ok, "{}", report.table());
    assert_eq!(
        report.duplicated_events + report.gaps + report.incoherent_streams,
        0,
        "{}",
        report.table()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_holds_every_idle_client() {
    let weft = start_weft().await;
    let p = params(Scenario::Attach, 1, 2, TurnPlan::mock(1, 0, 0));
    let report = run_weft(&p, &target(&weft), &RunContext::default())
        .await
        .unwrap();
    let a = report.attach.clone().expect("attach result");
    assert_eq!(a.clients_connected, 200, "{}", report.table());
    assert_eq!(a.still_open_at_end, 200, "{}", report.table());
}
