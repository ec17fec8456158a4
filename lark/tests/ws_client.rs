//! Our long-connection client against the fake Lark server.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use weft_lark::event::CardActionResponse;
use weft_lark::fake::{
    AttemptOutcome, ClientConfigJson, CloseKind, DiscoveryBehaviour, FailReason, FakeConfig,
    FragmentOrder, HandshakeBehaviour, PushOptions, sample_card_action, sample_message_event,
};
use weft_lark::ws::{self, AckSent, Delivery, ServerConfig, WsError};

fn message(event_id: &str, text: &str) -> serde_json::Value {
    sample_message_event(event_id, &format!("om_{event_id}"), "oc_chat", text)
}

#[tokio::test]
async fn delivers_and_acks_an_event_with_valid_frames() {
    let fake = fake(fast_config()).await;
    let cancel = CancellationToken::new();
    let (mut rx, task) = ws::start(ws_config(&fake), cancel.clone());
    let records = fake
        .wait_until(WAIT, |r| !r.pings.is_empty())
        .await
        .expect("ping on connect");
    assert_eq!(
        records.pings[0].service, 33554678,
        "ping carries the service_id from the URL"
    );

    let id = fake.push_event(message("ev_normal", "hello"), PushOptions::default());
    match next_delivery(&mut rx, "the event").await {
        Delivery::Event(event) => {
            assert_eq!(event.envelope.header.event_id, id);
            let msg = event.envelope.message_receive().unwrap().unwrap();
            assert_eq!(msg.message.text().as_deref(), Some("hello"));
            assert_eq!(event.ack.send(), AckSent::Queued);
        }
        other => panic!("unexpected {other:?}"),
    }
    let records = fake
        .wait_until(WAIT, |r| r.acked(&id))
        .await
        .expect("ack accepted");
    assert!(
        records.bad_frames.is_empty(),
        "strict decoding flagged: {:?}",
        records.bad_frames
    );
    cancel.cancel();
    assert!(task.await.unwrap().is_ok());
}

#[tokio::test]
async fn reassembles_out_of_order_interleaved_fragments() {
    let fake = fake(fast_config()).await;
    let cancel = CancellationToken::new();
    let (mut rx, _task) = ws::start(ws_config(&fake), cancel.clone());
    fake.wait_until(WAIT, |r| r.connections_opened == 1)
        .await
        .unwrap();

    let long_text = "fragmented ".repeat(200);
    let ids = fake.push_interleaved(vec![
        (
            message("ev_frag_a", &long_text),
            PushOptions {
                fragments: 5,
                order: FragmentOrder::Shuffled,
            },
        ),
        (
            message("ev_frag_b", "second"),
            PushOptions {
                fragments: 3,
                order: FragmentOrder::Reversed,
            },
        ),
    ]);
    let mut got = vec![next_event_id(&mut rx).await, next_event_id(&mut rx).await];
    got.sort();
    assert_eq!(got, ids);
    let records = fake
        .wait_until(WAIT, |r| ids.iter().all(|id| r.acked(id)))
        .await
        .expect("both acked");
    assert!(records.bad_frames.is_empty(), "{:?}", records.bad_frames);
    assert_eq!(records.attempts_of("ev_frag_a")[0].fragments, 5);
    cancel.cancel();
}

#[tokio::test]
async fn watchdog_replaces_a_connection_that_stops_ponging() {
    let fake = fake(fast_config()).await;
    let cancel = CancellationToken::new();
    let (mut rx, _task) = ws::start(ws_config(&fake), cancel.clone());
    fake.wait_until(WAIT, |r| r.connections_opened == 1)
        .await
        .unwrap();

    // The socket stays open but goes silent, like a half-open connection.
    fake.silence_connections();
    fake.wait_until(WAIT, |r| r.connections_opened == 2)
        .await
        .expect("watchdog reconnects");
    let id = fake.push_event(
        message("ev_after_watchdog", "still here"),
        PushOptions::default(),
    );
    assert_eq!(next_event_id(&mut rx).await, id);
    cancel.cancel();
}

#[tokio::test]
async fn reconnects_after_dropped_connections_and_keeps_receiving() {
    let fake = fake(fast_config()).await;
    let cancel = CancellationToken::new();
    let (mut rx, _task) = ws::start(ws_config(&fake), cancel.clone());
    fake.wait_until(WAIT, |r| r.connections_opened == 1)
        .await
        .unwrap();

    for (round, kind) in [CloseKind::Abrupt, CloseKind::CloseFrame]
        .into_iter()
        .enumerate()
    {
        fake.drop_connections(kind);
        fake.wait_until(WAIT, |r| r.connections_opened == round + 2)
            .await
            .expect("reconnected");
        let id = fake.push_event(
            message(&format!("ev_drop_{round}"), "again"),
            PushOptions::default(),
        );
        assert_eq!(next_event_id(&mut rx).await, id);
    }
    assert!(
        fake.records().discoveries >= 3,
        "each reconnect runs discovery again"
    );
    cancel.cancel();
}

#[tokio::test]
async fn retries_busy_discovery_then_connects() {
    let fake = fake(fast_config()).await;
    fake.set_discovery(DiscoveryBehaviour::Code {
        code: 1,
        msg: "system busy".into(),
    });
    let cancel = CancellationToken::new();
    let mut config = ws_config(&fake);
    // No ClientConfig arrives while discovery fails, so these pace the retries.
    config.initial_server_config = ServerConfig {
        reconnect_interval: Duration::from_millis(200),
        reconnect_nonce: Duration::ZERO,
        ..ServerConfig::default()
    };
    let (_rx, task) = ws::start(config, cancel.clone());
    fake.wait_until(WAIT, |r| r.discoveries >= 2)
        .await
        .expect("retried");
    assert!(!task.is_finished(), "code 1 is retryable");
    fake.set_discovery(DiscoveryBehaviour::Normal);
    fake.wait_until(WAIT, |r| r.connections_opened == 1)
        .await
        .expect("connects once discovery recovers");
    cancel.cancel();
}

#[tokio::test]
async fn fatal_discovery_error_stops_with_a_clear_error() {
    let fake = fake(fast_config()).await;
    let mut config = ws_config(&fake);
    config.credentials =
        weft_lark::AppCredentials::new(fake.config().app_id.clone(), "wrong secret");
    let (_rx, task) = ws::start(config, CancellationToken::new());
    let result = tokio::time::timeout(WAIT, task)
        .await
        .expect("stops promptly")
        .unwrap();
    match result {
        Err(WsError::DiscoveryRejected { code, .. }) => assert_eq!(code, 10014),
        other => panic!("expected a fatal discovery error, got {other:?}"),
    }
    assert_eq!(
        fake.records().discoveries,
        1,
        "fatal errors are not retried"
    );
}

#[tokio::test]
async fn connection_limit_handshake_is_fatal() {
    let fake = fake(fast_config()).await;
    fake.set_handshake(HandshakeBehaviour::Reject {
        status: 514,
        msg: "exceed connection limit".into(),
        auth_code: 1000040350,
    });
    let (_rx, task) = ws::start(ws_config(&fake), CancellationToken::new());
    let result = tokio::time::timeout(WAIT, task)
        .await
        .expect("stops promptly")
        .unwrap();
    assert!(
        matches!(result, Err(WsError::ConnectionLimit { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn an_event_is_acked_when_the_consumer_says_so_and_not_before() {
    let fake = fake(fast_config()).await;
    let cancel = CancellationToken::new();
    let (mut rx, _task) = ws::start(ws_config(&fake), cancel.clone());
    fake.wait_until(WAIT, |r| r.connections_opened == 1)
        .await
        .unwrap();

    // Held past Lark's deadline (1 s here), as while the database is down.
    let id = fake.push_event(message("ev_held", "keep me"), PushOptions::default());
    let Delivery::Event(held) = next_delivery(&mut rx, "the event").await else {
        panic!("expected an event");
    };
    let records = fake
        .wait_until(WAIT, |r| {
            r.attempts_of(&id)
                .iter()
                .any(|a| a.outcome != AttemptOutcome::Pending)
        })
        .await
        .unwrap();
    assert_eq!(
        records.attempts_of(&id)[0].outcome,
        AttemptOutcome::Failed(FailReason::Timeout),
        "no ack went out on its own"
    );
    // The late ack is ignored; the redelivery is acked in time.
    assert_eq!(held.ack.send(), AckSent::Queued);
    assert_eq!(next_event_id(&mut rx).await, id, "redelivered");
    let records = fake.wait_until(WAIT, |r| r.acked(&id)).await.unwrap();
    assert_eq!(records.late_acks, 1, "{:?}", records.bad_frames);
    assert!(records.bad_frames.is_empty(), "{:?}", records.bad_frames);

    // An ack dropped unsent is no ack: Lark delivers the event again.
    let dropped = fake.push_event(message("ev_dropped", "again"), PushOptions::default());
    let Delivery::Event(event) = next_delivery(&mut rx, "the event").await else {
        panic!("expected an event");
    };
    drop(event);
    assert_eq!(next_event_id(&mut rx).await, dropped);
    let records = fake.wait_until(WAIT, |r| r.acked(&dropped)).await.unwrap();
    assert_eq!(records.attempts_of(&dropped).len(), 2);
    cancel.cancel();
}

#[tokio::test]
async fn an_ack_after_its_connection_closed_is_dropped() {
    let fake = fake(fast_config()).await;
    let cancel = CancellationToken::new();
    let (mut rx, _task) = ws::start(ws_config(&fake), cancel.clone());
    fake.wait_until(WAIT, |r| r.connections_opened == 1)
        .await
        .unwrap();
    let id = fake.push_event(message("ev_orphan", "x"), PushOptions::default());
    let Delivery::Event(event) = next_delivery(&mut rx, "the event").await else {
        panic!("expected an event");
    };
    fake.drop_connections(CloseKind::Abrupt);
    fake.wait_until(WAIT, |r| r.connections_opened == 2)
        .await
        .expect("reconnected");
    assert_eq!(event.ack.send(), AckSent::ConnectionClosed);
    assert_eq!(
        next_event_id(&mut rx).await,
        id,
        "redelivered on the new one"
    );
    cancel.cancel();
}

#[tokio::test]
async fn unacked_event_is_redelivered_with_the_same_event_id() {
    let fake = fake(fast_config()).await;
    let cancel = CancellationToken::new();
    let (mut rx, _task) = ws::start(ws_config(&fake), cancel.clone());
    fake.wait_until(WAIT, |r| r.connections_opened == 1)
        .await
        .unwrap();

    fake.lose_next_acks(1);
    let id = fake.push_event(message("ev_redeliver", "twice"), PushOptions::default());
    assert_eq!(next_event_id(&mut rx).await, id);
    assert_eq!(
        next_event_id(&mut rx).await,
        id,
        "redelivered after the lost ack"
    );
    let records = fake.wait_until(WAIT, |r| r.acked(&id)).await.unwrap();
    let attempts = records.attempts_of(&id);
    assert_eq!(
        attempts[0].outcome,
        AttemptOutcome::Failed(FailReason::Timeout)
    );
    assert_eq!(attempts[1].attempt, 2);
    assert!(matches!(attempts[1].outcome, AttemptOutcome::Acked(_)));
    cancel.cancel();
}

#[tokio::test]
async fn card_action_response_rides_in_the_ack() {
    let fake = fake(fast_config()).await;
    let cancel = CancellationToken::new();
    let (mut rx, _task) = ws::start(ws_config(&fake), cancel.clone());
    fake.wait_until(WAIT, |r| r.connections_opened == 1)
        .await
        .unwrap();

    let value = json!({"approval_id": "ap1", "decision": "approve"});
    let id = fake.push_event(
        sample_card_action("ev_card", "om_card", value.clone()),
        PushOptions::default(),
    );
    match next_delivery(&mut rx, "the card action").await {
        Delivery::CardAction(action) => {
            assert_eq!(action.action.action.value, value);
            action.respond(CardActionResponse::toast("success", "Approved"));
        }
        other => panic!("unexpected {other:?}"),
    }
    let records = fake
        .wait_until(WAIT, |r| r.acked(&id))
        .await
        .expect("callback acked");
    match &records.attempts_of(&id)[0].outcome {
        AttemptOutcome::Acked(ack) => {
            assert_eq!(
                ack.data,
                Some(json!({"toast": {"type": "success", "content": "Approved"}}))
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    cancel.cancel();
}

#[tokio::test]
async fn pong_config_retimes_pings() {
    let mut config = fast_config();
    config.client_config.ping_interval = 60;
    let fake = fake(config).await;
    fake.set_pong_config(Some(ClientConfigJson {
        reconnect_count: -1,
        reconnect_interval: 1,
        reconnect_nonce: 0,
        ping_interval: 1,
    }));
    let cancel = CancellationToken::new();
    let (_rx, _task) = ws::start(ws_config(&fake), cancel.clone());
    // With the discovery interval (60 s) only one ping would arrive in this window.
    fake.wait_until(Duration::from_secs(8), |r| r.pings.len() >= 4)
        .await
        .expect("pings every second after the pong");
    cancel.cancel();
}

#[tokio::test]
async fn cluster_mode_delivers_each_event_to_one_connection() {
    let fake = fake(FakeConfig { ..fast_config() }).await;
    let cancel = CancellationToken::new();
    let (mut rx_a, _a) = ws::start(ws_config(&fake), cancel.clone());
    let (mut rx_b, _b) = ws::start(ws_config(&fake), cancel.clone());
    fake.wait_until(WAIT, |r| r.connections_opened == 2)
        .await
        .unwrap();
    let ids: Vec<String> = (0..6)
        .map(|i| {
            fake.push_event(
                message(&format!("ev_cluster_{i}"), "x"),
                PushOptions::default(),
            )
        })
        .collect();
    let mut seen = Vec::new();
    while seen.len() < ids.len() {
        let id = tokio::select! {
            id = next_event_id(&mut rx_a) => id,
            id = next_event_id(&mut rx_b) => id,
        };
        seen.push(id);
    }
    fake.wait_until(WAIT, |r| ids.iter().all(|id| r.acked(id)))
        .await
        .unwrap();
    assert!(rx_a.try_recv().is_err() && rx_b.try_recv().is_err());
    seen.sort();
    assert_eq!(
        seen, ids,
        "every event exactly once across both connections"
    );
    cancel.cancel();
}
