//! Notices (`bus::Notice`) on both buses: a notice reaches the watchers of every
//! process that subscribed before it was sent — on Redis, two connections
//! stand for two processes — in the order it was sent; one bus's prefix never
//! hears another's. (One sent just before a watcher subscribed may reach it
//! too on Redis, where it is still on its way: watchers are told so.)

use std::sync::Arc;
use std::time::Duration;

use weft_shared::bus::{Bus, MemoryBus, Notice, RedisBus};

fn notice(topic: &str, n: u32) -> Notice {
    Notice {
        topic: Arc::from(topic),
        kind: Arc::from("document"),
        json: Arc::from(format!("{{\"n\":{n}}}")),
    }
}

/// The next notice of topic `knowledge:kb` (a resync from the bus's own
/// connecting, or the notice sent before subscribing, may come first).
async fn next(rx: &mut tokio::sync::broadcast::Receiver<Notice>) -> Notice {
    loop {
        let got = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("a notice within 5 s")
            .expect("the channel is open");
        if &*got.topic == "knowledge:kb" {
            return got;
        }
    }
}

async fn notices_reach_earlier_watchers_in_order(sender: &dyn Bus, watcher: &dyn Bus) {
    sender.notify(&notice("knowledge:early", 0)).await.unwrap();
    let mut rx = watcher.notices();
    for n in 1..=3 {
        sender.notify(&notice("knowledge:kb", n)).await.unwrap();
    }
    for n in 1..=3 {
        let got = next(&mut rx).await;
        assert_eq!(
            got,
            notice("knowledge:kb", n),
            "the one sent before subscribing never arrives"
        );
    }
}

#[tokio::test]
async fn memory_bus_fans_notices_out() {
    let bus = MemoryBus::new(100);
    notices_reach_earlier_watchers_in_order(&bus, &bus).await;
    let mut rx = bus.notices();
    bus.notify(&notice("knowledge:other", 4)).await.unwrap();
    assert_eq!(rx.recv().await.unwrap(), notice("knowledge:other", 4));
    assert!(
        rx.try_recv().is_err(),
        "nothing else: the early one never arrives"
    );
}

#[tokio::test]
async fn redis_bus_fans_notices_out_between_processes() {
    let prefix = format!("weft-test-{}:", uuid::Uuid::new_v4());
    let connect = async |prefix: &str| {
        RedisBus::connect("redis://127.0.0.1:6379", prefix, 100)
            .await
            .unwrap()
    };
    let (a, b) = (connect(&prefix).await, connect(&prefix).await);
    notices_reach_earlier_watchers_in_order(&a, &b).await;
    // Another instance's notices (another prefix) are not this one's.
    let other = connect(&format!("weft-test-{}:", uuid::Uuid::new_v4())).await;
    let mut rx = b.notices();
    other.notify(&notice("knowledge:kb", 9)).await.unwrap();
    a.notify(&notice("knowledge:kb", 10)).await.unwrap();
    assert_eq!(next(&mut rx).await, notice("knowledge:kb", 10));
}
