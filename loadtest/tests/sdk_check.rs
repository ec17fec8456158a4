//! The mock LLM server checked by strict, independent clients: the official `openai`
//! and `anthropic` Python SDKs (`loadtest/sdk_check/*_check.py`), run with
//! `$WEFT_PYTHON` (default `python3`). A missing SDK is a failure, not a skip.
//!
//! The same scripts check our side of the wire: each test first sends a conversation
//! with images through Weft's own provider to the mock (which must describe the
//! images back), then hands the raw body the mock received (`GET /last_request`) to
//! the script, which validates it against the SDK's own request types.

use std::path::Path;
use std::time::Duration;

use futures::TryStreamExt;
use serde_json::json;
use tokio::process::Command;
use weft_llm::anthropic::{AnthropicConfig, AnthropicProvider};
use weft_llm::openai::{OpenAiConfig, OpenAiProvider};
use weft_llm::{
    ChatMessage, ChatRequest, Image, Provider, Reasoning, StreamEvent, ToolCall, ToolSpec,
};
use weft_loadtest::mock_llm::{MockLlmConfig, MockLlmServer, anthropic_thinking_signature};

fn python() -> String {
    std::env::var("WEFT_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Fail clearly if `module` cannot be imported.
async fn require(module: &str) {
    let python = python();
    let probe = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .output()
        .await;
    let importable = matches!(&probe, Ok(out) if out.status.success());
    assert!(
        importable,
        "the official `{module}` Python SDK is not importable by {python:?} ({probe:?}). Install it: \
         `python3 -m venv ~/.cache/weft-venv && ~/.cache/weft-venv/bin/pip install openai anthropic` \
         and run with WEFT_PYTHON=~/.cache/weft-venv/bin/python"
    );
}

/// Run `sdk_check/<script> BASE_URL PROVIDER_BODY` and require it to pass.
async fn run_check(module: &str, script: &str, base_url: String, provider_body: &Path) {
    // Read when the test runs: a compile-time path goes stale when the shared
    // target folder serves another checkout of the same code.
    let dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo or nextest");
    let script = Path::new(&dir).join("sdk_check").join(script);
    let run = Command::new(python())
        .arg(&script)
        .arg(base_url)
        .arg(provider_body)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the SDK check finishes within 2 minutes")
        .expect("the SDK check starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{module} SDK check failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("checks passed"),
        "unexpected output:\n{stdout}\n{stderr}"
    );
}

/// A real 1×1 PNG and a real 1×1 GIF; the sizes and SHA-256 sums are from coreutils.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const GIF: &str = "R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==";
const DESCRIBED: &str = "image 1: image/png, 70 bytes, sha256 c414cd0e204de974f73753c7e28d7638e7b3691bb8b1a2bab6b25bb7fed7ce77\n\
    image 2: image/gif, 43 bytes, sha256 b1442e85b03bdcaf66dc58c7abb98745dd2687d86350be9a298a1d9382ac849b";

/// A conversation using every message kind: an image with a question, a tool call
/// and its result, then two images with the `@mock.describe_images` directive.
fn conversation_with_images() -> ChatRequest {
    let image = |mime: &str, data: &str| Image {
        mime: mime.into(),
        data: data.into(),
    };
    let call = ToolCall {
        id: "call_zoom".into(),
        name: "zoom".into(),
        args: json!({"factor": 2}),
    };
    ChatRequest {
        thinking_budget: Some(1024),
        model: String::new(),
        messages: vec![
            ChatMessage::System {
                content: "You are terse.".into(),
            },
            ChatMessage::User {
                content: "what is in this screenshot?".into(),
                images: vec![image("image/png", PNG)],
            },
            ChatMessage::Assistant {
                reasoning: vec![Reasoning::Thinking {
                    thinking: "A closer look first.".into(),
                    signature: anthropic_thinking_signature("A closer look first."),
                }],
                content: String::new(),
                tool_calls: vec![call.clone()],
            },
            ChatMessage::Tool {
                call_id: call.id,
                name: call.name,
                content: "zoomed in".into(),
            },
            ChatMessage::User {
                content: "and these? @mock.describe_images".into(),
                images: vec![image("image/png", PNG), image("image/gif", GIF)],
            },
        ]
        .into(),
        tools: vec![ToolSpec {
            name: "zoom".into(),
            description: "Zoom into the screenshot".into(),
            parameters: json!({"type": "object", "properties": {"factor": {"type": "number"}}}),
        }]
        .into(),
        max_tokens: Some(2048),
        attempt: 1,
    }
}

/// Stream the conversation through `provider`, check the mock saw both images, and
/// save the body it received in `dir`.
async fn provider_body(
    server: &MockLlmServer,
    provider: &dyn Provider,
    dir: &Path,
) -> std::path::PathBuf {
    let events: Vec<StreamEvent> = provider
        .stream(conversation_with_images())
        .await
        .expect("the mock accepts our request")
        .try_collect()
        .await
        .expect("the stream completes");
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, DESCRIBED);
    let body = reqwest::get(format!("{}/last_request", server.base_url()))
        .await
        .and_then(reqwest::Response::error_for_status)
        .expect("the mock kept the request")
        .bytes()
        .await
        .unwrap();
    let path = dir.join("provider_body.json");
    std::fs::write(&path, &body).unwrap();
    path
}

async fn start_mock() -> MockLlmServer {
    MockLlmServer::start(MockLlmConfig::default())
        .await
        .expect("mock server starts")
}

#[tokio::test]
async fn official_openai_sdk_accepts_the_mock_wire_and_our_requests() {
    require("openai").await;
    let server = start_mock().await;
    let provider = OpenAiProvider::new(OpenAiConfig {
        base_url: server.openai_base_url(),
        api_key: Some("sk-test".into()),
        model_name: "mock-model".into(),
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(30),
    });
    let dir = tempfile::tempdir().unwrap();
    let body = provider_body(&server, &provider, dir.path()).await;
    run_check("openai", "openai_check.py", server.openai_base_url(), &body).await;
}

#[tokio::test]
async fn official_anthropic_sdk_accepts_the_mock_wire_and_our_requests() {
    require("anthropic").await;
    let server = start_mock().await;
    let provider = AnthropicProvider::new(AnthropicConfig {
        base_url: server.base_url(),
        api_key: Some("sk-ant-test".into()),
        model_name: "claude-mock".into(),
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(30),
        prompt_cache: true,
    });
    let dir = tempfile::tempdir().unwrap();
    let body = provider_body(&server, &provider, dir.path()).await;
    run_check("anthropic", "anthropic_check.py", server.base_url(), &body).await;
}
