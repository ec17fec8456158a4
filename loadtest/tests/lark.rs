//! The `lark` scenario run small against a live embedded Weft whose Lark bot is
//! connected to the scenario's fake Lark: every message gets exactly one card
//! ending with the whole reply, within Lark's rate limits, and the report carries
//! a latency sample per message; in the groups phase every message is stored and
//! answered once. No timing assertions (the tool measures speed).

mod support;

use std::time::Duration;

use support::start_weft;
use weft_config::Secret;
use weft_lark::fake::FakeLark;
use weft_loadtest::scenario::lark::groups::GroupParams;
use weft_loadtest::scenario::lark::{self, LarkParams};
use weft_loadtest::turn::TurnPlan;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_conversations_get_one_complete_card_each() {
    let fake = FakeLark::spawn(lark::fake_config()).await.unwrap();
    let config = fake.config().clone();
    let weft = start_weft(|cfg| {
        cfg.lark.app_id = config.app_id.clone();
        cfg.lark.app_secret = Secret(config.app_secret.clone());
        cfg.lark.base_url = fake.base_url();
        // One call of room: the start-up `bot/v3/info` goes around the limiter,
        // and this test pushes within a second of it.
        cfg.lark.calls_per_second = 49;
    })
    .await;
    let plan = TurnPlan::mock(10, 20, 20);
    let group_plan = LarkParams::probe_plan(&plan);
    let p = LarkParams {
        probes: 3,
        probe_interval: Duration::from_millis(50),
        probe_plan: LarkParams::probe_plan(&plan),
        conversations: 10,
        plan,
        ramp: Duration::from_millis(100),
        timeout: Duration::from_secs(60),
        connections: 1,
        groups: Some(GroupParams {
            groups: 3,
            speakers: 2,
            messages: 3,
            spread: Duration::from_millis(500),
            plan: group_plan,
        }),
        database_url: Some(weft.database_url()),
    };
    let r = lark::run(&fake, &p).await.unwrap();
    let mut table = String::new();
    r.write_table(&mut table);
    for (phase, n) in [(&r.probes, 3), (&r.burst, 10)] {
        assert_eq!(phase.messages, n, "{table}");
        assert_eq!(phase.complete, n, "{table}");
        assert_eq!(
            (phase.lost, phase.duplicated, phase.wrong),
            (0, 0, 0),
            "{table}"
        );
        for s in [
            &phase.ack_ms,
            &phase.reaction_ms,
            &phase.first_text_ms,
            &phase.final_ms,
        ] {
            assert_eq!(s.count, n, "one sample per message:\n{table}");
        }
    }
    let groups = r.groups.as_ref().expect("the groups phase ran");
    assert!(groups.checked, "{table}");
    assert_eq!(groups.messages, 18, "{table}");
    assert_eq!(groups.fates.len(), 18, "{table}");
    assert_eq!(
        (groups.lost, groups.duplicated, groups.refused),
        (0, 0, 0),
        "{table}"
    );
    assert_eq!(
        groups.ack_ms.count, 18,
        "one ack sample per message:\n{table}"
    );
    assert!(groups.runs > 0 && groups.runs <= 18, "{table}");
    // Every run is its first message's speaker's, and each carries its owner.
    assert_eq!(groups.misowned_runs, 0, "{table}");
    assert!(
        groups
            .fates
            .iter()
            .flat_map(|f| &f.runs)
            .all(|r| r.owner.starts_with("lark:ou_") && !r.first_speaker.is_empty()),
        "{table}"
    );
    assert_eq!(r.rate_limited_calls, 0, "{table}");
    assert_eq!(r.reactions_left, 0, "{table}");
    assert!(r.peak_calls_per_s > 0, "{table}");
}
