use serde_json::{Value, json};

use super::*;

const RUN: &str = "0193a000-0000-7000-8000-000000000001";
const APPROVAL: &str = "ap_1";

fn ev(seq: u64, body: Value) -> RunEvent {
    let mut v = body;
    v["run_id"] = json!(RUN);
    v["seq"] = json!(seq);
    v["ts"] = json!(1_000 + seq as i64);
    serde_json::from_value(v).unwrap()
}

/// The log of a run that asked, was approved and finished.
fn good_log() -> Vec<RunEvent> {
    let started = |attempt| json!({"type":"run_started","session_id":RUN,"model":"mock","attempt":attempt,"resume_step":1});
    vec![
        ev(1, started(1)),
        ev(
            2,
            json!({"type":"approval_required","step":1,"approval_id":APPROVAL,"call_id":"c1","name":"current_time","args":{},"expires_at":9}),
        ),
        ev(
            3,
            json!({"type":"approval_decided","step":1,"approval_id":APPROVAL,"call_id":"c1","name":"current_time","decision":"approved","by":"u"}),
        ),
        ev(4, started(1)),
        ev(
            5,
            json!({"type":"tool_start","step":1,"call_id":"c1","name":"current_time","args":{}}),
        ),
        ev(
            6,
            json!({"type":"tool_end","step":1,"call_id":"c1","name":"current_time","ok":true,"output":"12:00","duration_ms":1}),
        ),
        ev(
            7,
            json!({"type":"text","step":2,"delta":"tool current_time said: 12:00"}),
        ),
        ev(
            8,
            json!({"type":"done","message_id":RUN,"model":"mock","usage":{"input":1,"output":1,"cache_read":0,"reasoning":0},"ttft_ms":null,"duration_ms":5}),
        ),
    ]
}

fn message(role: &str, content: &str, tool_call: bool, call_id: Option<&str>) -> MessageDto {
    serde_json::from_value(json!({
        "id": "m", "session_id": "s", "role": role, "content": content, "run_id": RUN,
        "step": null, "created_at": "2026-11-30T00:00:00Z",
        "tool_calls": if tool_call { json!([{"id":"c1","name":"current_time","args":{}}]) } else { json!([]) },
        "call_id": call_id,
    }))
    .unwrap()
}

fn good_messages() -> Vec<MessageDto> {
    vec![
        message("user", "@mock.tool current_time {}", false, None),
        message("assistant", "", true, None),
        message("tool", "12:00", false, Some("c1")),
        message("assistant", "tool current_time said: 12:00", false, None),
    ]
}

#[test]
fn a_clean_run_has_no_findings() {
    let mut f = Findings::default();
    let s = events(&good_log(), APPROVAL, &mut f);
    assert_eq!(s.done_ts, Some(1_008));
    messages(&good_messages(), "c1", &s, &mut f);
    assert!(f.clean(), "{f:?}");
}

#[test]
fn repeated_seqs_and_events_are_duplicates() {
    let mut log = good_log();
    log.insert(3, log[2].clone());
    let mut f = Findings::default();
    events(&log, APPROVAL, &mut f);
    assert!(f.duplicated && !f.lost, "{f:?}");
    assert_eq!(f.notes, ["event_seq_repeated"]);

    // A second tool run, renumbered: a duplicate even with contiguous seqs.
    let mut log = good_log();
    log.insert(6, log[5].clone());
    for (i, e) in log.iter_mut().enumerate() {
        e.seq = i as u64 + 1;
    }
    let mut f = Findings::default();
    events(&log, APPROVAL, &mut f);
    assert_eq!(f.notes, ["tool_end_repeated"], "{f:?}");
}

#[test]
fn gaps_missing_done_and_missing_messages_are_lost() {
    let mut log = good_log();
    log.remove(4);
    let mut f = Findings::default();
    events(&log, APPROVAL, &mut f);
    assert!(f.lost);
    assert!(f.notes.contains(&"event_gap".to_string()), "{f:?}");

    let mut f = Findings::default();
    let s = events(&good_log()[..7], APPROVAL, &mut f);
    assert_eq!(f.notes, ["no_terminal_event"]);
    let mut ms = good_messages();
    ms.remove(2);
    let mut f = Findings::default();
    messages(&ms, "c1", &s, &mut f);
    assert!(f.lost && f.notes.contains(&"tool_result_missing".to_string()));
}

#[test]
fn a_second_stored_reply_is_a_duplicate_and_a_different_one_is_wrong() {
    let mut f = Findings::default();
    let s = events(&good_log(), APPROVAL, &mut f);
    let mut ms = good_messages();
    ms.push(ms[3].clone());
    messages(&ms, "c1", &s, &mut f);
    assert_eq!(f.notes, ["final_reply_repeated"]);

    let mut ms = good_messages();
    ms[3].content = "tool current_time said: 13:00".into();
    let mut f = Findings::default();
    messages(&ms, "c1", &s, &mut f);
    assert!(f.wrong && !f.lost && !f.duplicated, "{f:?}");
}
