//! The mock LLM server checked by strict, independent clients: the official `openai`
//! and `anthropic` Python SDKs (`loadtest/sdk_check/*_check.py`), run with
//! `$WEFT_PYTHON` (default `python3`). A missing SDK is a failure, not a skip.

use std::path::Path;
use std::time::Duration;

use tokio::process::Command;
use weft_loadtest::mock_llm::{MockLlmConfig, MockLlmServer};

fn python() -> String {
    std::env::var("WEFT_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Run `sdk_check/<script>` against a fresh mock server, failing clearly if `module`
/// cannot be imported.
async fn run_check(module: &str, script: &str, base_url: impl Fn(&MockLlmServer) -> String) {
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

    let server = MockLlmServer::start(MockLlmConfig::default())
        .await
        .expect("mock server starts");
    // Read when the test runs: a compile-time path goes stale when the shared
    // target folder serves another checkout of the same code.
    let dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo or nextest");
    let script = Path::new(&dir).join("sdk_check").join(script);
    let run = Command::new(&python)
        .arg(&script)
        .arg(base_url(&server))
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

#[tokio::test]
async fn official_openai_sdk_accepts_the_mock_wire() {
    run_check("openai", "openai_check.py", MockLlmServer::openai_base_url).await;
}

#[tokio::test]
async fn official_anthropic_sdk_accepts_the_mock_wire() {
    run_check("anthropic", "anthropic_check.py", MockLlmServer::base_url).await;
}
