//! The `approvals` scenario run small against a live embedded Weft with two
//! worker slots and `current_time` behind `confirm`: fifty runs wait for
//! approval at once holding no slot (the gateway's `/metrics`, which is the
//! worker's in embedded mode, says 0 executing, and ordinary runs still get
//! through), and approving them all gives each run exactly one tool call and
//! one reply, nothing lost or duplicated. No timing assertions.

mod support;

use std::time::Duration;

use support::{ADMIN, start_weft};
use weft_config::ToolPolicy;
use weft_loadtest::client::Gateways;
use weft_loadtest::runner::WeftTarget;
use weft_loadtest::scenario::approvals::{self, ApprovalParams};

const RUNS: u64 = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_waiting_runs_hold_no_slot_and_resume_exactly_once() {
    let weft = start_weft(|cfg| {
        cfg.worker.concurrency = 2;
        cfg.tools
            .policies
            .insert("current_time".into(), ToolPolicy::Confirm);
    })
    .await;
    let target = WeftTarget {
        gateways: Gateways::new(vec![weft.url.clone()]).unwrap(),
        token: ADMIN.into(),
        shared_token: false,
        accounts: 5,
    };
    let p = ApprovalParams {
        runs: RUNS as usize,
        clients: 16,
        accounts: 5,
        metrics_urls: Vec::new(),
        worker_concurrency: Some(2),
        hold: Duration::from_millis(500),
        probe_runs: 2,
        timeout: Duration::from_secs(120),
    };
    let report = approvals::run(&target, &p, "embedded").await.unwrap();
    let table = report.table();
    println!("{table}");
    let a = report.approvals.clone().expect("an approvals section");

    assert_eq!((a.runs_started, a.suspended), (RUNS, RUNS), "{table}");
    // More runs wait than there are slots, and the worker says it holds none.
    assert!(a.hold_samples > 0, "{table}");
    assert_eq!(a.slots_held_while_waiting, Some(0), "{table}");
    assert_eq!(a.still_waiting_after_hold, RUNS, "{table}");
    assert_eq!(a.probe_runs_done, 2, "{table}");
    // The suspending runs did execute (the gauge is live, not stuck at 0).
    assert!(
        a.peak_executing_while_suspending.unwrap_or(0) > 0,
        "{table}"
    );

    assert_eq!(a.approved, RUNS, "{table}");
    assert_eq!((a.lost, a.duplicated, a.wrong), (0, 0, 0), "{table}");
    assert_eq!(a.complete, RUNS, "{table}");
    assert!(a.findings.is_empty(), "{table}");
    assert_eq!(a.approve_to_done_ms.count, RUNS, "{table}");
    // The worker ran the tool once per run and asked once per run.
    assert_eq!(a.tool_calls_at_workers, Some(RUNS as i64), "{table}");
    assert_eq!(
        a.approvals_requested_at_workers,
        Some(RUNS as i64),
        "{table}"
    );
    assert!(a.holds(), "{table}");

    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["scenario"], "approvals");
    assert_eq!(json["approvals"]["slots_held_while_waiting"], 0);
    assert!(table.contains("slots held while waiting: 0"), "{table}");
}
