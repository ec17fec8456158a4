//! Who may use which agent and model (docs/agent.md, issue 20): `allowed_users`
//! and `allowed_roles` on `[[agents]]`, `[[models]]` and agents admins write. A
//! user sees only what is open to them, choosing anything else is 403
//! `forbidden` on every path (session create and patch, a send's `model` or
//! `agent`, `/v1/chat`, the choice a session carries from earlier), and a run
//! whose agent was closed to its user after it was accepted fails `forbidden`
//! in the worker instead of running. Non-admins never see an agent's
//! instructions.

use serde_json::{Value, json};

use crate::harness::*;

crate::both_backends!(
    closed_agents_and_models_are_hidden_and_refused,
    only_admins_see_an_agents_instructions,
    the_worker_refuses_a_run_whose_agent_was_closed_meanwhile
);

const CONFIG: &str = r#"
[[models]]
id = "mock"
provider = "mock"
default = true

[[models]]
id = "mock-vip"
provider = "mock"
allowed_users = ["vip"]

[[agents]]
id = "secret"
name = "Secret"
description = "Admins only."
instructions = "TOP-SECRET-INSTRUCTIONS"
allowed_roles = ["admin"]

[[agents]]
id = "club"
name = "Club"
description = "For the club."
instructions = "CLUB-INSTRUCTIONS"
allowed_users = ["vip"]
"#;

/// A Weft with [`CONFIG`] (and `extra` environment); the dir keeps the file.
async fn start(b: Backend, extra: &[(&str, &str)]) -> (App, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.toml");
    std::fs::write(&path, CONFIG).unwrap();
    let config = path.display().to_string();
    let mut env: Vec<(&str, &str)> = vec![("WEFT_CONFIG", config.as_str())];
    env.extend_from_slice(extra);
    (App::start_with(b, &env).await, dir)
}

fn ids(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect()
}

fn forbidden(status: u16, body: &Value, what: &str) {
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("forbidden")),
        "{what}: {body}"
    );
}

async fn closed_agents_and_models_are_hidden_and_refused(b: Backend) {
    let (app, _dir) = start(b, &[]).await;
    let alice = app.user("alice").await;
    let vip = app.user("vip").await;

    // Hidden from the lists.
    let (_, models) = app.get("/v1/models", &alice).await;
    assert_eq!(ids(&models, "models"), ["mock"], "{models}");
    let (_, agents) = app.get("/v1/agents", &alice).await;
    assert_eq!(ids(&agents, "agents"), ["agent", "chat"], "{agents}");
    let (_, modes) = app.get("/v1/modes", &alice).await;
    assert_eq!(ids(&modes, "modes"), ["agent", "chat"], "{modes}");
    let (_, models) = app.get("/v1/models", &vip).await;
    assert_eq!(ids(&models, "models"), ["mock", "mock-vip"], "{models}");
    let (_, agents) = app.get("/v1/agents", &vip).await;
    assert_eq!(ids(&agents, "agents"), ["agent", "chat", "club"]);
    let (_, agents) = app.get("/v1/agents", ADMIN_TOKEN).await;
    assert_eq!(ids(&agents, "agents"), ["agent", "chat", "club", "secret"]);

    // Refused when chosen: creating a session, changing one, a send's own
    // choice, `/v1/chat`.
    for body in [
        json!({"model": "mock-vip"}),
        json!({"agent": "club"}),
        json!({"mode": "secret"}),
    ] {
        let (st, v) = app.post("/v1/sessions", &alice, body.clone()).await;
        forbidden(st, &v, &body.to_string());
    }
    let (st, v) = app
        .post("/v1/sessions", &alice, json!({"agent": "nope"}))
        .await;
    assert_eq!(st, 422, "an unknown agent stays 422: {v}");
    let s = app.session(&alice).await;
    for body in [json!({"model": "mock-vip"}), json!({"agent": "secret"})] {
        let (st, v) = app
            .call(
                reqwest::Method::PATCH,
                &format!("/v1/sessions/{s}"),
                &alice,
                Some(body.clone()),
            )
            .await;
        forbidden(st, &v, &format!("patch {body}"));
        let mut send = body.clone();
        send["text"] = json!("hello");
        let (st, v) = app
            .post(&format!("/v1/sessions/{s}/messages"), &alice, send)
            .await;
        forbidden(st, &v, &format!("send {body}"));
    }
    let (st, v) = app
        .post(
            "/v1/chat",
            &alice,
            json!({"message": "hi", "model": "mock-vip"}),
        )
        .await;
    forbidden(st, &v, "/v1/chat");
    assert!(
        app.messages(&alice, &s).await.is_empty(),
        "a refused send stores nothing"
    );
    let (_, session) = app.get(&format!("/v1/sessions/{s}"), &alice).await;
    assert_eq!(
        (session["model"].as_str(), session["agent"].as_str()),
        (Some("mock"), Some("agent")),
        "{session}"
    );

    // The ones open to a user work for them.
    let (st, club) = app
        .post(
            "/v1/sessions",
            &vip,
            json!({"agent": "club", "model": "mock-vip"}),
        )
        .await;
    assert_eq!(st, 201, "{club}");
    let club = club["id"].as_str().unwrap().to_string();
    let events = app
        .send_stream(&vip, &club, "@mock.reply welcome")
        .await
        .until_terminal()
        .await;
    assert_eq!(rendered_text(&events), "welcome", "{events:?}");
    assert_eq!(events.last().unwrap().data["model"], "mock-vip");

    // Closing the agent to vip: the session's choice from earlier is refused
    // now, and so is the rest of what would make a run in it.
    let (st, v) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/agents/club",
            ADMIN_TOKEN,
            Some(json!({"name": "Club", "instructions": "CLUB-INSTRUCTIONS", "allowed_users": ["someone-else"]})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let (st, v) = app
        .post(
            &format!("/v1/sessions/{club}/messages"),
            &vip,
            json!({"text": "still here?"}),
        )
        .await;
    forbidden(st, &v, "send in a session whose agent closed");
    let (st, v) = app
        .post(&format!("/v1/sessions/{club}/regenerate"), &vip, json!({}))
        .await;
    forbidden(st, &v, "regenerate");
    let (_, agents) = app.get("/v1/agents", &vip).await;
    assert_eq!(ids(&agents, "agents"), ["agent", "chat"]);
    // Choosing an open agent again makes the session usable.
    let (st, v) = app
        .post(
            &format!("/v1/sessions/{club}/messages"),
            &vip,
            json!({"text": "@mock.reply back", "agent": "agent", "wait": true}),
        )
        .await;
    assert_eq!((st, v["content"].as_str()), (200, Some("back")), "{v}");
}

async fn only_admins_see_an_agents_instructions(b: Backend) {
    let (app, _dir) = start(b, &[]).await;
    let vip = app.user("vip").await;
    let (_, agents) = app.get("/v1/agents", &vip).await;
    for a in agents["agents"].as_array().unwrap() {
        for hidden in [
            "instructions",
            "tool_policies",
            "allowed_users",
            "allowed_roles",
        ] {
            assert!(a.get(hidden).is_none(), "a user sees {hidden}: {a}");
        }
        assert!(a["name"].is_string() && a["description"].is_string(), "{a}");
    }
    let (_, agents) = app.get("/v1/agents", ADMIN_TOKEN).await;
    let club = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "club")
        .unwrap()
        .clone();
    assert_eq!(club["instructions"], "CLUB-INSTRUCTIONS", "{club}");
    assert_eq!(club["allowed_users"], json!(["vip"]), "{club}");
    assert_eq!(club["allowed_roles"], json!([]), "{club}");

    // The system-prompt preview leaves the agent's own instructions out for
    // a user; an admin's shows them.
    let (_, s) = app
        .post("/v1/sessions", &vip, json!({"agent": "club"}))
        .await;
    let s = s["id"].as_str().unwrap();
    let (st, preview) = app
        .get(&format!("/v1/sessions/{s}/system-prompt"), &vip)
        .await;
    assert_eq!(st, 200, "{preview}");
    let text = preview["system_prompt"].as_str().unwrap();
    assert!(!text.contains("CLUB-INSTRUCTIONS"), "{text}");
    assert!(text.contains("shown to admins only"), "{text}");
    let (_, mine) = app
        .post("/v1/sessions", ADMIN_TOKEN, json!({"agent": "secret"}))
        .await;
    let (_, preview) = app
        .get(
            &format!(
                "/v1/sessions/{}/system-prompt",
                mine["id"].as_str().unwrap()
            ),
            ADMIN_TOKEN,
        )
        .await;
    assert!(
        preview["system_prompt"]
            .as_str()
            .unwrap()
            .starts_with("TOP-SECRET-INSTRUCTIONS"),
        "{preview}"
    );
}

async fn the_worker_refuses_a_run_whose_agent_was_closed_meanwhile(b: Backend) {
    // A confirm tool makes the run wait, accepted, for a person; the agent is
    // closed to its user meanwhile; the approval wakes it in a worker.
    let (app, _dir) = start(b, &[("WEFT_TOOLS__POLICIES__CURRENT_TIME", "confirm")]).await;
    let vip = app.user("vip").await;
    let (_, s) = app
        .post("/v1/sessions", &vip, json!({"agent": "club"}))
        .await;
    let s = s["id"].as_str().unwrap().to_string();
    let mut sse = app
        .send_stream(&vip, &s, "@mock.tool current_time {}")
        .await;
    let events = sse.until(|e| e.ty == "approval_required").await;
    let approval = events.last().unwrap().data["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (st, v) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/agents/club",
            ADMIN_TOKEN,
            Some(json!({"name": "Club", "allowed_roles": ["admin"]})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let (st, v) = app
        .post(
            &format!("/v1/approvals/{approval}"),
            &vip,
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let events = sse.until_terminal().await;
    let last = events.last().unwrap();
    assert_eq!(
        (last.ty.as_str(), last.data["code"].as_str()),
        ("error", Some("forbidden")),
        "{:?}",
        last.data
    );
    assert!(
        !events.iter().any(|e| e.ty == "tool_start"),
        "nothing of the run ran: {events:?}"
    );
}
