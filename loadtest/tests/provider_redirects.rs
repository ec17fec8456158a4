//! The providers never follow a redirect. A redirect from a provider URL (a
//! compromised or misconfigured endpoint, a captive proxy) would otherwise carry the
//! API key (`x-api-key` survives reqwest's cross-host header scrubbing; a same-host
//! redirect keeps `Authorization` too) and, on 307/308, the whole conversation to
//! wherever `Location` points.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use futures::TryStreamExt;
use weft_llm::anthropic::{AnthropicConfig, AnthropicProvider};
use weft_llm::openai::{OpenAiConfig, OpenAiProvider};
use weft_llm::{ChatMessage, ChatRequest, LlmError, Provider, StreamEvent};

type Seen = Arc<Mutex<Vec<String>>>;

/// A server that records every request it gets: method, path and credentials.
async fn recorder() -> (String, Seen) {
    async fn record(State(seen): State<Seen>, req: Request) -> StatusCode {
        let h = req.headers();
        let cred = |name: &str| h.get(name).map(|v| v.to_str().unwrap_or("?").to_owned());
        seen.lock().unwrap().push(format!(
            "{} {} authorization={:?} x-api-key={:?}",
            req.method(),
            req.uri().path(),
            cred("authorization"),
            cred("x-api-key"),
        ));
        StatusCode::OK
    }
    let seen = Seen::default();
    let app = Router::new().fallback(record).with_state(seen.clone());
    (serve(app).await, seen)
}

/// A server that answers every request with `status` and `Location: target`.
async fn redirector(status: StatusCode, target: String) -> String {
    let app = Router::new().fallback(move |_: HeaderMap| {
        let target = target.clone();
        async move { (status, [(header::LOCATION, target)]).into_response() }
    });
    serve(app).await
}

async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn request() -> ChatRequest {
    ChatRequest {
        model: String::new(),
        messages: vec![ChatMessage::User {
            content: "a private conversation".into(),
            images: Vec::new(),
        }]
        .into(),
        tools: vec![].into(),
        max_tokens: None,
        thinking_budget: None,
        attempt: 1,
    }
}

async fn run(provider: &dyn Provider) -> Result<Vec<StreamEvent>, LlmError> {
    provider.stream(request()).await?.try_collect().await
}

fn providers(base: &str) -> Vec<(&'static str, Box<dyn Provider>)> {
    let openai = OpenAiProvider::new(OpenAiConfig {
        base_url: format!("{base}/v1"),
        api_key: Some("sk-secret-openai".into()),
        model_name: "gpt".into(),
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(10),
    });
    let anthropic = AnthropicProvider::new(AnthropicConfig {
        base_url: base.to_string(),
        api_key: Some("sk-ant-secret".into()),
        model_name: "claude".into(),
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(10),
        prompt_cache: true,
    });
    vec![
        ("openai", Box::new(openai)),
        ("anthropic", Box::new(anthropic)),
    ]
}

#[tokio::test]
async fn providers_do_not_follow_redirects() {
    for status in [
        StatusCode::FOUND,
        StatusCode::TEMPORARY_REDIRECT,
        StatusCode::PERMANENT_REDIRECT,
    ] {
        let (elsewhere, seen) = recorder().await;
        let base = redirector(status, format!("{elsewhere}/collect")).await;
        for (name, provider) in providers(&base) {
            let result = run(provider.as_ref()).await;
            assert!(
                seen.lock().unwrap().is_empty(),
                "{name} followed a {status} to another server: {:?}",
                seen.lock().unwrap()
            );
            match result {
                Err(LlmError::Fatal {
                    status: Some(s),
                    reason,
                }) => {
                    assert_eq!(s, status.as_u16(), "{name}: {reason}");
                }
                other => panic!("{name}: a {status} should fail the step, got {other:?}"),
            }
        }
    }
}
