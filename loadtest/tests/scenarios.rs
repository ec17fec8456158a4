//! The load tester run briefly against a live embedded Weft (gateway + worker in
//! this process, SQLite in a temp dir, the in-process `mock` model), checking what
//! a user of the tool relies on: reports with runs in them, and `reconnect`
//! finding no lost or duplicated reply. No timing assertions: speed is what the
//! tool measures, not what these tests check.

mod support;

use std::time::Duration;

use support::{ADMIN, Weft, start_weft};
use weft_loadtest::client::Gateways;
use weft_loadtest::runner::{RunContext, WeftTarget, run_weft};
use weft_loadtest::scenario::{Params, Scenario};
use weft_loadtest::turn::TurnPlan;

fn params(scenario: Scenario, users: usize, secs: u64, plan: TurnPlan) -> Params {
    Params {
        scenario,
        users,
        duration: Duration::from_secs(secs),
        plan,
        ramp: Duration::from_millis(200),
        turn_timeout: Duration::from_secs(20),
        attach_clients: 200,
        prefill_turns: 0,
        turns_per_user: None,
        memories: 0,
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
    let weft = start_weft(|_| {}).await;
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

/// `--memories`: every account keeps them before the measured phase, and
/// every measured run recalls them (issue 26's on/off comparison measures
/// what that costs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memories_given_to_accounts_are_recalled_by_every_run() {
    let weft = start_weft(|_| {}).await;
    let mut p = params(Scenario::Latency, 2, 1, TurnPlan::mock(3, 0, 0));
    p.memories = 4;
    let report = run_weft(&p, &target(&weft), &RunContext::default())
        .await
        .unwrap();
    assert!(report.runs_ok > 0, "{}", report.table());
    assert_eq!(report.runs_failed, 0, "{}", report.table());
    let db = sqlx::SqlitePool::connect(&weft.database_url())
        .await
        .unwrap();
    let memories: i64 = sqlx::query_scalar("select count(*) from memories")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(memories, 4, "one account, four memories");
    let (runs, recalled): (i64, i64) = sqlx::query_as(
        "select count(*), count(memories_used) from runs where status = 'succeeded'",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(runs, recalled, "every run recalled them");
    let used: String = sqlx::query_scalar("select memories_used from runs limit 1")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(serde_json::from_str::<Vec<String>>(&used).unwrap().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_drops_streams_and_loses_or_duplicates_nothing() {
    let weft = start_weft(|_| {}).await;
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
    let weft = start_weft(|_| {}).await;
    let p = params(Scenario::Attach, 1, 2, TurnPlan::mock(1, 0, 0));
    let report = run_weft(&p, &target(&weft), &RunContext::default())
        .await
        .unwrap();
    let a = report.attach.clone().expect("attach result");
    assert_eq!(a.clients_connected, 200, "{}", report.table());
    assert_eq!(a.still_open_at_end, 200, "{}", report.table());
}
