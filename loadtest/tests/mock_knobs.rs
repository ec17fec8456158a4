//! The mock LLM's server-wide knobs: injected faults (here at rate 1, so every
//! request gets one) and the `/stats` counters a benchmark reads afterwards.

use std::time::Duration;

use serde_json::json;
use weft_loadtest::mock_llm::{FaultRates, MockLlmConfig, MockLlmServer, StatsSnapshot};

fn body(text: &str) -> serde_json::Value {
    json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": text}]})
}

async fn server(faults: FaultRates) -> MockLlmServer {
    MockLlmServer::start(MockLlmConfig {
        faults,
        ..MockLlmConfig::default()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn a_429_rate_of_one_rejects_with_retry_after_ms() {
    let s = server(FaultRates {
        rate_429: 1.0,
        retry_after: Duration::from_millis(1500),
        ..FaultRates::default()
    })
    .await;
    let r = reqwest::Client::new()
        .post(format!("{}/chat/completions", s.openai_base_url()))
        .json(&body("hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after-ms"], "1500");
    let stats: StatsSnapshot = reqwest::get(format!("{}/stats", s.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (stats.requests, stats.injected_429, stats.in_flight),
        (1, 1, 0)
    );
}

#[tokio::test]
async fn a_529_rate_answers_anthropic_overloaded() {
    let s = server(FaultRates {
        rate_529: 1.0,
        ..FaultRates::default()
    })
    .await;
    let r = reqwest::Client::new()
        .post(format!("{}/v1/messages", s.base_url()))
        .json(&json!({"model": "m", "max_tokens": 10, "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 529);
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "overloaded_error");
}

#[tokio::test]
async fn a_cut_rate_ends_the_stream_without_done() {
    let s = server(FaultRates {
        rate_cut: 1.0,
        ..FaultRates::default()
    })
    .await;
    let r = reqwest::Client::new()
        .post(format!("{}/chat/completions", s.openai_base_url()))
        .json(&body("@mock.tokens 10"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap_or_default();
    assert!(text.contains("w5"), "half the tokens arrive: {text}");
    assert!(
        !text.contains("w6") && !text.contains("[DONE]"),
        "then nothing: {text}"
    );
    let stats: StatsSnapshot = reqwest::get(format!("{}/stats", s.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats.injected_cut, 1);
}
