//! MCP servers end to end: a real server written with the official `mcp` Python
//! SDK (`tools/tests/mcp_servers/demo.py`) configured by an admin, its tools
//! offered to the agent under `<server>__<tool>`, `confirm` by default (so a call
//! goes through an approval), the per-call timeout, and `GET /v1/mcp`.

use std::time::Duration;

use serde_json::json;

use crate::harness::*;

crate::both_backends!(
    web_and_mcp_in_one_turn_with_an_approval_holding_no_worker,
    an_mcp_tool_runs_after_its_approval,
    a_slow_mcp_tool_hits_the_timeout
);

/// A config file naming the demo server; returned with the dir that keeps it.
fn mcp_config(extra: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tools/tests/mcp_servers/demo.py"
    );
    let path = dir.path().join("weft.toml");
    std::fs::write(
        &path,
        format!(
            "[[mcp_servers]]\nname = \"demo\"\ncommand = {:?}\nargs = [{:?}]\n{extra}",
            python(),
            script
        ),
    )
    .unwrap();
    (dir, path.display().to_string())
}

async fn an_mcp_tool_runs_after_its_approval(b: Backend) {
    let (_dir, config) = mcp_config("");
    let app = App::start_with(b, &[("WEFT_CONFIG", config.as_str())]).await;
    let alice = app.user("alice").await;

    // The admin sees the server come up with its tools; users may not look.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (st, v) = app.get("/v1/mcp", ADMIN_TOKEN).await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["configured"], json!(["demo"]));
        let server = &v["workers"][0]["servers"][0];
        if server["state"] == "ready" {
            assert_eq!(server["name"], "demo");
            assert_eq!(server["policy"], "confirm");
            let tools = server["tools"].as_array().unwrap();
            assert!(tools.contains(&json!("demo__add")), "{server}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "demo never ready: {v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.get("/v1/mcp", &alice).await.0, 403);

    let s = app.session(&alice).await;
    let mut sse = app
        .send_stream(&alice, &s, r#"@mock.tool demo__add {"a": 2, "b": 3}"#)
        .await;
    let mut events = sse.until(|e| e.ty == "approval_required").await;
    let required = events.last().unwrap().data.clone();
    assert_eq!(required["name"], "demo__add");
    let approval = required["approval_id"].as_str().unwrap();
    let (st, v) = app
        .post(
            &format!("/v1/approvals/{approval}"),
            &alice,
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    events.extend(sse.until_terminal().await);
    assert_contiguous(&events);
    assert_eq!(events.last().unwrap().ty, "done");
    assert_eq!(rendered_text(&events), "tool demo__add said: 5");

    // A schema violation never reaches the server: the model is told.
    let events = app
        .send_stream(&alice, &s, r#"@mock.tool demo__add {"a": "two"}"#)
        .await
        .until_terminal()
        .await;
    assert!(
        rendered_text(&events).contains("error: invalid arguments for demo__add"),
        "{}",
        rendered_text(&events)
    );
}

async fn a_slow_mcp_tool_hits_the_timeout(b: Backend) {
    let (dir, config) = mcp_config("policy = \"auto\"\n");
    let app = App::start_with(
        b,
        &[
            ("WEFT_CONFIG", config.as_str()),
            ("WEFT_TOOLS__CALL_TIMEOUT_SECS", "1"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let marker = dir.path().join("slow.marker");
    let text = format!(
        r#"@mock.tool demo__slow {{"seconds": 120, "marker": {:?}}}"#,
        marker.display().to_string()
    );
    // The server may still be starting: the tool is offered once it is ready.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let events = loop {
        let events = app
            .send_stream(&alice, &s, &text)
            .await
            .until_terminal()
            .await;
        let end = events.iter().find(|e| e.ty == "tool_end").unwrap();
        if !end.data["output"]
            .as_str()
            .unwrap()
            .contains("no tool named")
        {
            break events;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "demo never offered its tools"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(events.last().unwrap().ty, "done", "the run goes on");
    let end = events.iter().find(|e| e.ty == "tool_end").unwrap();
    assert_eq!(end.data["ok"], false);
    assert!(
        end.data["output"]
            .as_str()
            .unwrap()
            .contains("did not answer within 1 s"),
        "{}",
        end.data
    );
    // The server was told to stop (the call's cancellation reached it).
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while std::fs::read_to_string(&marker).unwrap_or_default() != "cancelled" {
        assert!(
            std::time::Instant::now() < deadline,
            "marker: {:?}",
            std::fs::read_to_string(&marker)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The issue's "done when": an admin configured an MCP server and `web_fetch`; a
/// user's question needs both; the side-effecting call is approved while the run
/// holds no worker (one slot, and another user's run gets it meanwhile); the
/// answer arrives with both results.
async fn web_and_mcp_in_one_turn_with_an_approval_holding_no_worker(b: Backend) {
    let page = "Weft release notes: approvals landed.".to_string();
    let port = crate::tools::serve_text(page.clone());
    let (_dir, config) = mcp_config("");
    let app = App::start_with(
        b,
        &[
            ("WEFT_CONFIG", config.as_str()),
            ("WEFT_TOOLS__WEB_FETCH__ENABLED", "true"),
            ("WEFT_TOOLS__WEB_FETCH__ALLOW_HOSTS", "[\"127.0.0.1\"]"),
            ("WEFT_WORKER__CONCURRENCY", "1"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let s = app.session(&alice).await;
    let text = format!(
        r#"summarise and save @mock.tool web_fetch {{"url": "http://127.0.0.1:{port}/notes"}} @mock.tool demo__echo {{"text": "saved"}}"#
    );
    // The MCP server may still be starting: until it is ready its tool is unknown.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let (mut sse, mut events) = loop {
        let mut sse = app.send_stream(&alice, &s, &text).await;
        let events = sse
            .until(|e| e.ty == "approval_required" || e.ty == "done" || e.ty == "error")
            .await;
        if events.last().unwrap().ty == "approval_required" {
            break (sse, events);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "demo never offered its tools"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let required = tool_data(&events, "approval_required");
    assert_eq!(
        required.len(),
        1,
        "web_fetch is auto, only the MCP call waits"
    );
    assert_eq!(required[0]["name"], "demo__echo");
    // While it waits, the only worker slot serves bob.
    let bs = app.session(&bob).await;
    let brun = app.send(&bob, &bs, "@mock.reply meanwhile").await;
    assert_eq!(
        app.wait_run(&bob, &brun, Duration::from_secs(20)).await["status"],
        "succeeded"
    );
    let approval = required[0]["approval_id"].as_str().unwrap();
    let (st, v) = app
        .post(
            &format!("/v1/approvals/{approval}"),
            &alice,
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    events.extend(sse.until_terminal().await);
    let said = rendered_text(&events);
    assert!(said.contains(&page), "{said}");
    assert!(said.contains("tool demo__echo said: saved"), "{said}");
    assert_eq!(events.last().unwrap().ty, "done");
}

fn tool_data(events: &[Ev], ty: &str) -> Vec<serde_json::Value> {
    events
        .iter()
        .filter(|e| e.ty == ty)
        .map(|e| e.data.clone())
        .collect()
}
