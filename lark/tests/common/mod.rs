//! Shared helpers: a fast fake Lark and a client configured against it.
#![allow(dead_code)]

use std::time::Duration;

use tokio::sync::mpsc;
use weft_lark::AppCredentials;
use weft_lark::fake::{ClientConfigJson, FakeConfig, FakeLark};
use weft_lark::rest::{RestClient, RestConfig};
use weft_lark::ws::{Delivery, WsConfig};

pub const WAIT: Duration = Duration::from_secs(15);

/// Test-sized timings: 1 s pings, 1 s reconnect interval, no jitter, 1 s ack deadline.
pub fn fast_config() -> FakeConfig {
    FakeConfig {
        client_config: ClientConfigJson {
            reconnect_count: -1,
            reconnect_interval: 1,
            reconnect_nonce: 0,
            ping_interval: 1,
        },
        ack_timeout: Duration::from_secs(1),
        redelivery_delays: vec![Duration::from_millis(200), Duration::from_millis(200)],
        ..FakeConfig::default()
    }
}

pub async fn fake(config: FakeConfig) -> FakeLark {
    FakeLark::spawn(config).await.expect("fake lark binds")
}

pub fn credentials(fake: &FakeLark) -> AppCredentials {
    AppCredentials::new(
        fake.config().app_id.clone(),
        fake.config().app_secret.clone(),
    )
}

pub fn ws_config(fake: &FakeLark) -> WsConfig {
    WsConfig {
        discovery_timeout: Duration::from_secs(2),
        dial_timeout: Duration::from_secs(2),
        pong_timeout: Duration::from_secs(1),
        ..WsConfig::new(credentials(fake), fake.base_url())
    }
}

pub fn rest(fake: &FakeLark) -> RestClient {
    RestClient::new(RestConfig::new(credentials(fake), fake.base_url()))
}

/// The next delivery, or a panic naming what was awaited.
pub async fn next_delivery(rx: &mut mpsc::UnboundedReceiver<Delivery>, what: &str) -> Delivery {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
        .unwrap_or_else(|| panic!("delivery channel closed while waiting for {what}"))
}

/// The next plain event's id, after acking it.
pub async fn next_event_id(rx: &mut mpsc::UnboundedReceiver<Delivery>) -> String {
    match next_delivery(rx, "an event").await {
        Delivery::Event(event) => {
            let _ = event.ack.send();
            event.envelope.header.event_id
        }
        Delivery::CardAction(_) => panic!("expected an event, got a card action"),
    }
}
