//! Agents and instructions (docs/agent.md, "Agents and instructions"): admins
//! define agents at run time, a session names one (`agent`, or the older `mode`),
//! its instructions and the user's own reach the model's system prompt exactly as
//! the preview shows, and a tool the agent may not use is never offered and refused
//! when called.

use serde_json::{Value, json};

use crate::harness::*;

crate::both_backends!(
    agents_choose_the_prompt_and_the_tools,
    a_configured_agent_is_the_default,
    skills_are_listed_and_loaded_on_demand,
    every_edit_of_the_prompt_reaches_the_next_run
);

/// What the mock model was sent (`@mock.context`).
async fn context(app: &App, token: &str, session: &str) -> Value {
    let events = app
        .send_stream(token, session, "@mock.context")
        .await
        .until_terminal()
        .await;
    assert_eq!(events.last().unwrap().ty, "done", "{events:?}");
    serde_json::from_str(&rendered_text(&events)).expect("the mock's JSON picture")
}

async fn agents_choose_the_prompt_and_the_tools(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let (st, v) = app.get("/v1/agents", &alice).await;
    assert_eq!(st, 200, "{v}");
    let ids: Vec<&str> = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["agent", "chat"], "the default first");
    assert_eq!(v["agents"][0]["default"], true);

    // Only admins define agents.
    let timeless = json!({
        "name": "Timeless",
        "instructions": "You never tell the time.",
        "tools": ["web_fetch"],
    });
    assert_eq!(
        app.call(
            reqwest::Method::PUT,
            "/v1/admin/agents/timeless",
            &alice,
            Some(timeless.clone())
        )
        .await
        .0,
        403
    );
    let (st, v) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/agents/timeless",
            ADMIN_TOKEN,
            Some(timeless),
        )
        .await;
    assert_eq!((st, v["origin"].as_str()), (200, Some("admin")), "{v}");
    let (st, v) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/agents/Bad%20Id",
            ADMIN_TOKEN,
            Some(json!({"name": "x"})),
        )
        .await;
    assert_eq!(st, 422, "{v}");

    let (st, s) = app
        .post("/v1/sessions", &alice, json!({"agent": "timeless"}))
        .await;
    assert_eq!((st, s["agent"].as_str()), (201, Some("timeless")), "{s}");
    let s = s["id"].as_str().unwrap().to_string();
    let (st, v) = app
        .call(
            reqwest::Method::PUT,
            "/v1/me/instructions",
            &alice,
            Some(json!({"instructions": "Call me Ana."})),
        )
        .await;
    assert_eq!(st, 200, "{v}");

    let seen = context(&app, &alice, &s).await;
    let system = seen["system"][0].as_str().unwrap();
    assert!(system.starts_with("You never tell the time."), "{system}");
    assert!(
        system.contains("# The user's instructions\nCall me Ana."),
        "{system}"
    );
    // web_fetch is not enabled here and current_time is not the agent's; an
    // agent with tools may always ask the person and page long outputs.
    assert_eq!(
        seen["tools"],
        json!(["ask_user", "read_output", "todo_update"]),
        "{seen}"
    );
    let (st, preview) = app
        .get(&format!("/v1/sessions/{s}/system-prompt"), &alice)
        .await;
    assert_eq!(st, 200);
    assert_eq!(preview["agent"], "timeless");
    // Exact, but for the agent's own instructions: shown to admins only.
    assert_eq!(
        preview["system_prompt"].as_str().unwrap(),
        system.replacen(
            "You never tell the time.",
            "[The agent's instructions: shown to admins only.]",
            1
        ),
        "the preview is exact"
    );
    let bob = app.user("bob").await;
    assert_eq!(
        app.get(&format!("/v1/sessions/{s}/system-prompt"), &bob)
            .await
            .0,
        404
    );

    // A forced call of a tool the agent may not use is refused.
    let events = app
        .send_stream(&alice, &s, "@mock.tool current_time {}")
        .await
        .until_terminal()
        .await;
    let end = events.iter().find(|e| e.ty == "tool_end").unwrap();
    assert_eq!(end.data["ok"], false);
    assert_eq!(
        end.data["output"],
        "error: current_time is not available to this agent"
    );

    // An admin's edit applies to the next run, without a restart.
    let (st, _) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/agents/timeless",
            ADMIN_TOKEN,
            Some(json!({"name": "Timeless", "instructions": "Now you may.", "tools": ["current_time"]})),
        )
        .await;
    assert_eq!(st, 200);
    let seen = context(&app, &alice, &s).await;
    assert!(
        seen["system"][0]
            .as_str()
            .unwrap()
            .starts_with("Now you may."),
        "{seen}"
    );
    assert_eq!(
        seen["tools"],
        json!(["ask_user", "current_time", "read_output", "todo_update"]),
        "{seen}"
    );

    // `mode` is the older name; `chat` offers nothing; unknown agents are 422.
    let (st, c) = app
        .post("/v1/sessions", &alice, json!({"mode": "chat"}))
        .await;
    assert_eq!((st, c["agent"].as_str()), (201, Some("chat")));
    let seen = context(&app, &alice, c["id"].as_str().unwrap()).await;
    assert_eq!(seen["tools"], json!([]));
    assert_eq!(
        app.post("/v1/sessions", &alice, json!({"agent": "nope"}))
            .await
            .0,
        422
    );
    let (_, modes) = app.get("/v1/modes", &alice).await;
    assert_eq!(modes["modes"].as_array().unwrap().len(), 3, "{modes}");

    // Deleting it: its sessions carry on with the default agent.
    assert_eq!(
        app.call(
            reqwest::Method::DELETE,
            "/v1/admin/agents/timeless",
            ADMIN_TOKEN,
            None
        )
        .await
        .0,
        204
    );
    let seen = context(&app, &alice, &s).await;
    assert!(
        seen["system"][0]
            .as_str()
            .unwrap()
            .starts_with("You are Weft"),
        "{seen}"
    );
    assert_eq!(
        app.call(
            reqwest::Method::DELETE,
            "/v1/admin/agents/agent",
            ADMIN_TOKEN,
            None
        )
        .await
        .0,
        409
    );
}

async fn a_configured_agent_is_the_default(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.toml");
    std::fs::write(
        &path,
        "[[agents]]\nid = \"helper\"\nname = \"Helper\"\ninstructions = \"You are the helpdesk.\"\ntools = []\ndefault = true\n",
    )
    .unwrap();
    let config = path.display().to_string();
    let app = App::start_with(b, &[("WEFT_CONFIG", config.as_str())]).await;
    let alice = app.user("alice").await;
    let (_, s) = app.post("/v1/sessions", &alice, json!({})).await;
    assert_eq!(s["agent"], "helper", "{s}");
    let seen = context(&app, &alice, s["id"].as_str().unwrap()).await;
    assert!(
        seen["system"][0]
            .as_str()
            .unwrap()
            .starts_with("You are the helpdesk.")
    );
    assert_eq!(seen["tools"], json!([]));
}

async fn skills_are_listed_and_loaded_on_demand(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let skill = json!({
        "skill_md": "---\nname: release-notes\ndescription: Write release notes from a changelog\n---\nSTEP-BY-STEP-BODY: group by feature, then fixes.",
        "files": {"template.md": "## What's new"}
    });
    assert_eq!(
        app.call(
            reqwest::Method::PUT,
            "/v1/admin/skills/release-notes",
            &alice,
            Some(skill.clone())
        )
        .await
        .0,
        403
    );
    let (st, v) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/skills/release-notes",
            ADMIN_TOKEN,
            Some(skill),
        )
        .await;
    assert_eq!(st, 204, "{v}");
    let (st, v) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/skills/other",
            ADMIN_TOKEN,
            Some(json!({"skill_md": "---\nname: mismatch\ndescription: d\n---\n"})),
        )
        .await;
    assert_eq!(st, 422, "{v}");
    let (_, list) = app.get("/v1/skills", &alice).await;
    assert_eq!(list["skills"][0]["name"], "release-notes");
    assert_eq!(list["skills"][0]["files"], json!(["template.md"]));

    // The prompt lists the skill by name and description, not its body.
    let s = app.session(&alice).await;
    let seen = context(&app, &alice, &s).await;
    let system = seen["system"][0].as_str().unwrap();
    assert!(
        system.contains("- release-notes: Write release notes from a changelog"),
        "{system}"
    );
    assert!(!system.contains("STEP-BY-STEP-BODY"), "{system}");
    assert!(
        seen["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("use_skill"))
    );
    // The body arrives only through use_skill.
    let events = app
        .send_stream(
            &alice,
            &s,
            r#"@mock.tool use_skill {"name": "release-notes"}"#,
        )
        .await
        .until_terminal()
        .await;
    let said = rendered_text(&events);
    assert!(
        said.contains("STEP-BY-STEP-BODY") && said.contains("template.md"),
        "{said}"
    );
    let events = app
        .send_stream(
            &alice,
            &s,
            r#"@mock.tool use_skill {"name": "release-notes", "file": "template.md"}"#,
        )
        .await
        .until_terminal()
        .await;
    assert!(rendered_text(&events).ends_with("## What's new"));

    // An agent limited to other skills neither lists nor loads it.
    let (st, _) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/agents/plain",
            ADMIN_TOKEN,
            Some(json!({"name": "Plain", "instructions": "Plain.", "skills": [], "tools": ["current_time"]})),
        )
        .await;
    assert_eq!(st, 200);
    let (_, p) = app
        .post("/v1/sessions", &alice, json!({"agent": "plain"}))
        .await;
    let p = p["id"].as_str().unwrap().to_string();
    let seen = context(&app, &alice, &p).await;
    assert!(
        !seen["system"][0]
            .as_str()
            .unwrap()
            .contains("release-notes")
    );
    assert_eq!(
        seen["tools"],
        json!(["ask_user", "current_time", "read_output", "todo_update"])
    );
    let events = app
        .send_stream(
            &alice,
            &p,
            r#"@mock.tool use_skill {"name": "release-notes"}"#,
        )
        .await
        .until_terminal()
        .await;
    // Not offered, so refused if called anyway.
    assert!(
        rendered_text(&events).contains("use_skill is not available"),
        "{}",
        rendered_text(&events)
    );

    // The tool-less `chat` agent could never load a skill: none is listed.
    let (_, c) = app
        .post("/v1/sessions", &alice, json!({"agent": "chat"}))
        .await;
    let c = c["id"].as_str().unwrap().to_string();
    let seen = context(&app, &alice, &c).await;
    let system = seen["system"][0].as_str().unwrap();
    assert!(!system.contains("# Skills"), "{system}");
    assert!(!system.contains("release-notes"), "{system}");
    assert_eq!(seen["tools"], json!([]));
}

/// Workers keep a run's agent, instructions and skills between runs (issue 23):
/// each kind of edit must still reach the very next run — the agent's own
/// instructions, its deletion (back to the default), the user's instructions,
/// an uploaded skill and its deletion, a skill folder added and edited on disk.
async fn every_edit_of_the_prompt_reaches_the_next_run(b: Backend) {
    let skills = tempfile::tempdir().unwrap();
    let dir = skills.path().to_str().unwrap().to_string();
    let app = App::start_with(b, &[("WEFT_SKILLS_DIR", &dir)]).await;
    let alice = app.user("alice").await;
    let put_agent = |instructions: &'static str| {
        app.call(
            reqwest::Method::PUT,
            "/v1/admin/agents/helper",
            ADMIN_TOKEN,
            // A tool (so `use_skill` too): a tool-less agent lists no skills.
            Some(
                json!({"name": "Helper", "instructions": instructions, "tools": ["current_time"]}),
            ),
        )
    };
    assert_eq!(put_agent("HELPER-V1.").await.0, 200);
    let (st, s) = app
        .post("/v1/sessions", &alice, json!({"agent": "helper"}))
        .await;
    assert_eq!(st, 201, "{s}");
    let s = s["id"].as_str().unwrap().to_string();
    let system = |seen: Value| seen["system"][0].as_str().unwrap().to_string();

    let first = system(context(&app, &alice, &s).await);
    assert!(first.starts_with("HELPER-V1."), "{first}");
    assert!(!first.contains("Call me Ana."), "{first}");
    // Twice: the second run is served what the worker kept.
    assert_eq!(system(context(&app, &alice, &s).await), first);

    assert_eq!(put_agent("HELPER-V2.").await.0, 200);
    let now = system(context(&app, &alice, &s).await);
    assert!(now.starts_with("HELPER-V2."), "the agent's edit: {now}");

    let (st, v) = app
        .call(
            reqwest::Method::PUT,
            "/v1/me/instructions",
            &alice,
            Some(json!({"instructions": "Call me Ana."})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let now = system(context(&app, &alice, &s).await);
    assert!(
        now.contains("Call me Ana."),
        "the user's instructions: {now}"
    );

    let skill =
        json!({"skill_md": "---\nname: uploaded-one\ndescription: An uploaded skill\n---\nBody."});
    let (st, v) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/skills/uploaded-one",
            ADMIN_TOKEN,
            Some(skill),
        )
        .await;
    assert_eq!(st, 204, "{v}");
    let now = system(context(&app, &alice, &s).await);
    assert!(
        now.contains("- uploaded-one: An uploaded skill"),
        "an upload: {now}"
    );
    let (st, _) = app
        .call(
            reqwest::Method::DELETE,
            "/v1/admin/skills/uploaded-one",
            ADMIN_TOKEN,
            None,
        )
        .await;
    assert_eq!(st, 204);
    let now = system(context(&app, &alice, &s).await);
    assert!(!now.contains("uploaded-one"), "a deleted upload: {now}");

    // The folder is not in the database: a skill added there, then edited.
    let folder = skills.path().join("on-disk");
    std::fs::create_dir(&folder).unwrap();
    let write = |description: &str| {
        std::fs::write(
            folder.join("SKILL.md"),
            format!("---\nname: on-disk\ndescription: {description}\n---\nBody."),
        )
        .unwrap()
    };
    write("First words");
    let now = system(context(&app, &alice, &s).await);
    assert!(
        now.contains("- on-disk: First words"),
        "a folder added: {now}"
    );
    write("Second words, longer");
    let now = system(context(&app, &alice, &s).await);
    assert!(
        now.contains("- on-disk: Second words, longer"),
        "a folder edited: {now}"
    );

    let (st, _) = app
        .call(
            reqwest::Method::DELETE,
            "/v1/admin/agents/helper",
            ADMIN_TOKEN,
            None,
        )
        .await;
    assert_eq!(st, 204);
    let now = system(context(&app, &alice, &s).await);
    assert!(
        !now.contains("HELPER-V2."),
        "a deleted agent: back to the default: {now}"
    );
}
