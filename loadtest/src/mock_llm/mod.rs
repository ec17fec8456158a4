//! The mock LLM server: the OpenAI Chat Completions wire (`llm-wire.md` §1) and the
//! Anthropic Messages wire (§2), both driven by the `@mock.*` directives of the last user message through
//! [`weft_llm::mockscript`], exactly like the in-process `mock` provider.
//!
//! It is a library so tests and other crates start it on port 0 ([`MockLlmServer`]);
//! `weft-loadtest mock-llm` is a thin wrapper. Latencies come from the message
//! (`@mock.delay`) or from the server's defaults ([`MockLlmConfig`], with jitter).
//!
//! `@mock.fail … times=k` needs to know which attempt a request is. An HTTP client's
//! retry resends the same messages, so attempts are counted per hash of the request's
//! messages; only requests that carry `fail`/`cut` are counted, so the table stays
//! small under load.
//!
//! `GET /last_request` answers the raw body of the last chat request (either wire)
//! exactly as it arrived, so a test can check the JSON a client really sent, for
//! instance against an official SDK's types. Only the last is kept (a reference to
//! bytes the request owned anyway): under load it costs one uncontended lock per
//! request and keeps one body alive.

mod anthropic;
mod anthropic_cache;
mod anthropic_wire;
pub mod embeddings;
mod knobs;
mod openai;
mod openai_wire;

use std::collections::HashMap;
use std::future::Future;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use weft_llm::ChatMessage;
use weft_llm::mockscript::{self, Outcome, ScriptError, Timing};

pub use anthropic_wire::signature as anthropic_thinking_signature;
use knobs::{Counters, Knobs};
pub use knobs::{FaultRates, StatsSnapshot};

/// Server-wide defaults, used when a message has no `@mock.delay`, and the
/// server-wide load factor and fault rates ([`knobs`]), applied to every request.
#[derive(Debug, Clone, Copy, Default)]
pub struct MockLlmConfig {
    pub ttft: Duration,
    pub itl: Duration,
    /// Each gap varies uniformly by ± this much.
    pub jitter: Duration,
    /// Each request in flight stretches the latencies of new ones by this many percent.
    pub load_factor: f64,
    pub faults: FaultRates,
}

#[derive(Clone)]
struct AppState {
    defaults: Timing,
    attempts: Arc<Attempts>,
    knobs: Arc<Knobs>,
    last_request: Arc<LastRequest>,
    /// Anthropic's prompt cache (the OpenAI wire reports cache reads by itself).
    prompt_cache: Arc<anthropic_cache::PromptCache>,
}

/// The raw body of the last chat request, for `GET /last_request`.
#[derive(Default)]
struct LastRequest(Mutex<Option<Bytes>>);

impl LastRequest {
    fn keep(&self, body: &Bytes) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(body.clone());
    }

    fn get(&self) -> Option<Bytes> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

async fn last_request(State(state): State<AppState>) -> Response {
    match state.last_request.get() {
        Some(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        None => (StatusCode::NOT_FOUND, "no chat request yet").into_response(),
    }
}

/// Attempt numbers per request fingerprint (1 for the first time a body is seen).
#[derive(Default)]
struct Attempts(Mutex<HashMap<u64, u32>>);

impl Attempts {
    fn next(&self, fingerprint: u64) -> u32 {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let n = map.entry(fingerprint).or_insert(0);
        *n += 1;
        *n
    }
}

/// What one request gets: this attempt's outcome, its timing, and the prompt size.
struct Script {
    outcome: Outcome,
    timing: Timing,
    input: u64,
}

impl AppState {
    /// Remember `body` as the last chat request (`GET /last_request`).
    fn keep(&self, body: &Bytes) {
        self.last_request.keep(body);
    }

    /// Plan the reply to `chat` and pick this attempt's outcome and timing. `wire`
    /// is the request's messages as sent, fingerprinted to count attempts.
    fn script(
        &self,
        chat: &[ChatMessage],
        max_tokens: Option<u32>,
        wire: &[serde_json::Value],
    ) -> Result<Script, ScriptError> {
        let plan = mockscript::plan(chat, max_tokens)?;
        let attempt = if plan.fail.is_some() || plan.cut.is_some() {
            let mut h = DefaultHasher::new();
            for m in wire {
                m.to_string().hash(&mut h);
            }
            self.attempts.next(h.finish())
        } else {
            1
        };
        let timing = match plan.delay {
            Some((ttft, itl)) => Timing::new(ttft, itl),
            None => self.defaults,
        };
        Ok(Script {
            outcome: self.knobs.inject(plan.outcome(attempt)),
            timing: self.knobs.loaded(timing),
            input: plan.input,
        })
    }
}

/// The routes: `/v1/chat/completions` (also without `/v1`), `/v1/messages`
/// (Anthropic), `/v1/embeddings` (deterministic vectors), `/v1/models`, `/health`, `/stats` (what the knobs did) and
/// `/last_request` (the raw body of the last chat request).
pub fn router(config: MockLlmConfig) -> Router {
    let knobs = Arc::new(Knobs {
        load_factor: config.load_factor,
        faults: config.faults,
        counters: Counters::default(),
    });
    let state = AppState {
        defaults: Timing {
            ttft: config.ttft,
            itl: config.itl,
            jitter: config.jitter,
        },
        attempts: Arc::default(),
        knobs: knobs.clone(),
        last_request: Arc::default(),
        prompt_cache: Arc::default(),
    };
    let stats = {
        let knobs = knobs.clone();
        move || {
            let knobs = knobs.clone();
            async move { axum::Json(knobs.counters.snapshot()) }
        }
    };
    Router::new()
        .route("/v1/chat/completions", post(openai::chat_completions))
        .route("/chat/completions", post(openai::chat_completions))
        .route("/v1/messages", post(anthropic::messages))
        .route("/v1/models", get(openai::models))
        .route("/v1/embeddings", post(embeddings::embeddings))
        .route("/health", get(|| async { "ok" }))
        .route("/last_request", get(last_request))
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(
            knobs,
            knobs::track_in_flight,
        ))
        .route("/stats", get(stats))
}

/// Serve with zero default latency until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, MockLlmConfig::default(), shutdown).await
}

/// Serve with the given defaults until `shutdown` completes.
pub async fn serve_with(
    listener: TcpListener,
    config: MockLlmConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    // Nagle off, as real providers' streaming endpoints do: otherwise a token
    // written while the previous one is unacknowledged waits for a delayed ACK.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router(config))
        .with_graceful_shutdown(shutdown)
        .await
}

/// A server running in the background on `127.0.0.1:0`, stopped when dropped.
pub struct MockLlmServer {
    pub addr: SocketAddr,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl MockLlmServer {
    pub async fn start(config: MockLlmConfig) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
            };
            if let Err(e) = serve_with(listener, config, shutdown).await {
                tracing::error!(error = %e, "mock LLM server failed");
            }
        });
        Ok(MockLlmServer { addr, _stop: stop })
    }

    /// The OpenAI-style base URL (`http://127.0.0.1:PORT/v1`).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The Anthropic-style base URL (`http://127.0.0.1:PORT`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The body of the last chat request it received, as JSON (`GET /last_request`).
    pub async fn last_request(&self) -> serde_json::Value {
        reqwest::get(format!("{}/last_request", self.base_url()))
            .await
            .and_then(reqwest::Response::error_for_status)
            .expect("the mock kept a request")
            .json()
            .await
            .expect("a JSON body")
    }
}
