//! Knowledge bases (issue 25) over the API, on both backends: documents of
//! every kind become searchable with their place (page or heading path), in
//! English and Chinese; who may see and change a base; deletes (searches that
//! follow documents added and deleted in `search`, bad input and limits in
//! `refusals`); and a worker SIGKILLed mid-ingest leaving every document
//! `ready` once with no chunk twice.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use weft_files::samples;

use crate::both_backends;
use crate::harness::*;

mod conversation;
mod events;
mod refusals;
mod search;
mod vectors;

both_backends!(
    documents_become_searchable_with_their_place,
    private_bases_are_the_owners_and_shared_ones_read_only_to_others,
    a_worker_killed_mid_ingest_leaves_each_document_ready_once,
    documents_come_from_urls_through_the_fetch_guard
);

const HANDBOOK: &str = "# Handbook\n\nWelcome to the team.\n\n## Leave\n\nEveryone gets 25 vacation days a year. Ask your manager two weeks ahead.\n\n## Equipment\n\nLaptops are replaced every three years.\n";

async fn create_base(app: &App, token: &str, name: &str, visibility: &str) -> String {
    let (s, v) = app
        .post(
            "/v1/knowledge",
            token,
            json!({"name": name, "description": "docs", "visibility": visibility}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    v["id"].as_str().unwrap().to_string()
}

async fn upload(app: &App, token: &str, base: &str, name: &str, bytes: &[u8]) -> (u16, Value) {
    app.post(
        &format!("/v1/knowledge/{base}/documents"),
        token,
        json!({"name": name, "data": STANDARD.encode(bytes)}),
    )
    .await
}

async fn upload_multipart(app: &App, token: &str, base: &str, files: &[(&str, Vec<u8>)]) -> Value {
    let mut form = reqwest::multipart::Form::new();
    for (name, bytes) in files {
        form = form.part(
            "file",
            reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.to_string()),
        );
    }
    let resp = app
        .http
        .post(app.url(&format!("/v1/knowledge/{base}/documents")))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    resp.json().await.unwrap()
}

async fn documents(app: &App, token: &str, base: &str) -> Vec<Value> {
    let (s, v) = app
        .get(&format!("/v1/knowledge/{base}/documents"), token)
        .await;
    assert_eq!(s, 200, "{v}");
    v["documents"].as_array().unwrap().clone()
}

/// Waits until every document of `base` has left `queued` and `processing`.
/// A shared base "handbook" (the admin's) holding [`HANDBOOK`], indexed; its id.
async fn shared_handbook(app: &App) -> String {
    let handbook = create_base(app, ADMIN_TOKEN, "handbook", "shared").await;
    upload(
        app,
        ADMIN_TOKEN,
        &handbook,
        "handbook.md",
        HANDBOOK.as_bytes(),
    )
    .await;
    settled(app, ADMIN_TOKEN, &handbook).await;
    handbook
}

async fn settled(app: &App, token: &str, base: &str) -> Vec<Value> {
    eventually(Duration::from_secs(60), "documents ingested", async || {
        let docs = documents(app, token, base).await;
        if docs
            .iter()
            .all(|d| d["status"] == "ready" || d["status"] == "failed")
        {
            Ok(docs)
        } else {
            Err(docs)
        }
    })
    .await
}

/// `DELETE /v1/knowledge/{base}/documents/{doc}`: its status.
async fn delete_document(app: &App, token: &str, base: &str, doc: &str) -> u16 {
    app.call(
        reqwest::Method::DELETE,
        &format!("/v1/knowledge/{base}/documents/{doc}"),
        token,
        None,
    )
    .await
    .0
}

async fn search(app: &App, token: &str, base: &str, query: &str) -> (u16, Value) {
    app.post(
        &format!("/v1/knowledge/{base}/search"),
        token,
        json!({"query": query, "top_k": 3}),
    )
    .await
}

async fn documents_become_searchable_with_their_place(b: Backend) {
    let app = App::start(b).await;
    let base = create_base(&app, ADMIN_TOKEN, "handbook", "shared").await;
    let (s, first) = upload(&app, ADMIN_TOKEN, &base, "handbook.md", HANDBOOK.as_bytes()).await;
    assert_eq!(s, 201, "{first}");
    assert_eq!(first["documents"][0]["created"], true);
    assert_eq!(first["documents"][0]["document"]["status"], "queued");
    let pdf = samples::pdf_pages(&[
        &["Security policy overview"],
        &["Passwords rotate every ninety days"],
        &["Badges open the north door"],
    ]);
    let added = upload_multipart(
        &app,
        ADMIN_TOKEN,
        &base,
        &[
            ("policy.pdf", pdf),
            (
                "手册.txt",
                "报销流程：请在每月五号之前提交发票，部门经理审批后财务付款。"
                    .as_bytes()
                    .to_vec(),
            ),
            (
                "setup.docx",
                samples::docx(&["Install the VPN client before your first day"]),
            ),
        ],
    )
    .await;
    assert_eq!(added["documents"].as_array().unwrap().len(), 3);
    let docs = settled(&app, ADMIN_TOKEN, &base).await;
    assert_eq!(docs.len(), 4);
    for d in &docs {
        assert_eq!(d["status"], "ready", "{d}");
        assert!(d["chunks"].as_u64().unwrap() >= 1, "{d}");
    }

    let (s, found) = search(&app, ADMIN_TOKEN, &base, "how many vacation days").await;
    assert_eq!(s, 200, "{found}");
    assert_eq!(found["mode"], "lexical");
    let top = &found["results"][0];
    assert_eq!(top["document_name"], "handbook.md");
    assert_eq!(top["position"], "Handbook > Leave");
    assert!(top["text"].as_str().unwrap().contains("25 vacation days"));
    assert!(top["chunk_id"].as_str().unwrap().starts_with("ch_"));

    let (_, found) = search(&app, ADMIN_TOKEN, &base, "north door badges").await;
    let top = &found["results"][0];
    assert_eq!(top["document_name"], "policy.pdf");
    assert_eq!(top["position"], "page 3", "{found}");
    assert_eq!(top["page"], 3);

    let (_, found) = search(&app, ADMIN_TOKEN, &base, "发票报销").await;
    assert_eq!(found["results"][0]["document_name"], "手册.txt", "{found}");
    let (_, found) = search(&app, ADMIN_TOKEN, &base, "VPN").await;
    assert_eq!(
        found["results"][0]["document_name"], "setup.docx",
        "{found}"
    );
    let (_, found) = search(&app, ADMIN_TOKEN, &base, "kubernetes").await;
    assert_eq!(found["results"], json!([]));

    // The same bytes again are the same document.
    let (s, again) = upload(&app, ADMIN_TOKEN, &base, "copy.md", HANDBOOK.as_bytes()).await;
    assert_eq!(s, 201);
    assert_eq!(again["documents"][0]["created"], false);
    assert_eq!(
        again["documents"][0]["document"]["id"],
        first["documents"][0]["document"]["id"]
    );
    let (_, listed) = app.get(&format!("/v1/knowledge/{base}"), ADMIN_TOKEN).await;
    assert_eq!(listed["documents"], 4);
}

async fn private_bases_are_the_owners_and_shared_ones_read_only_to_others(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let private = create_base(&app, &alice, "notes", "private").await;
    let shared = create_base(&app, ADMIN_TOKEN, "handbook", "shared").await;
    let (s, _) = upload(&app, &alice, &private, "a.md", b"alpha notes").await;
    assert_eq!(s, 201);
    let (s, _) = upload(&app, ADMIN_TOKEN, &shared, "h.md", HANDBOOK.as_bytes()).await;
    assert_eq!(s, 201);
    settled(&app, &alice, &private).await;
    settled(&app, ADMIN_TOKEN, &shared).await;

    // Bob: alice's private base does not exist for him.
    for (status, body) in [
        app.get(&format!("/v1/knowledge/{private}"), &bob).await,
        app.get(&format!("/v1/knowledge/{private}/documents"), &bob)
            .await,
        search(&app, &bob, &private, "alpha").await,
        upload(&app, &bob, &private, "x.md", b"x").await,
    ] {
        assert_eq!(status, 404, "{body}");
        assert_eq!(body["error"]["code"], "not_found");
    }
    let (_, list) = app.get("/v1/knowledge", &bob).await;
    let names: Vec<&str> = list["knowledge_bases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["handbook"]);
    assert_eq!(list["knowledge_bases"][0]["can_edit"], false);

    // The shared base: Bob searches it, and changes nothing.
    let (s, found) = search(&app, &bob, &shared, "vacation").await;
    assert_eq!(s, 200);
    assert_eq!(found["results"].as_array().unwrap().len(), 1);
    let (s, _) = upload(&app, &bob, &shared, "mine.md", b"bob's").await;
    assert_eq!(s, 403);
    let (s, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/knowledge/{shared}"),
            &bob,
            None,
        )
        .await;
    assert_eq!(s, 403);
    let (s, v) = app
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/knowledge/{shared}"),
            &bob,
            Some(json!({"name": "mine"})),
        )
        .await;
    assert_eq!(s, 403, "{v}");
    // Sharing with everyone is for admins.
    let (s, v) = app
        .post(
            "/v1/knowledge",
            &alice,
            json!({"name": "team", "visibility": "shared"}),
        )
        .await;
    assert_eq!(s, 403, "{v}");
    let (s, v) = app
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/knowledge/{private}"),
            &alice,
            Some(json!({"visibility": "shared"})),
        )
        .await;
    assert_eq!(s, 403, "{v}");
    let (s, v) = app
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/knowledge/{private}"),
            &alice,
            Some(json!({"name": "my notes", "description": "mine"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["name"], "my notes");
    // A name is unique per owner.
    let (s, v) = app
        .post("/v1/knowledge", &alice, json!({"name": "my notes"}))
        .await;
    assert_eq!(s, 409, "{v}");
}

/// A document that takes a while to index: many sections of mixed English
/// and Chinese text (jieba segments the Chinese).
fn long_document(n: usize) -> Vec<u8> {
    let mut text = String::new();
    for section in 0..300 {
        text.push_str(&format!("\n## Section {n}-{section}\n\n"));
        for _ in 0..6 {
            text.push_str(
                "The quarterly report describes revenue, costs and hiring plans in detail. ",
            );
            text.push_str("季度报告详细介绍了收入、成本和招聘计划。");
        }
        text.push('\n');
    }
    text.into_bytes()
}

async fn a_worker_killed_mid_ingest_leaves_each_document_ready_once(b: Backend) {
    // Leases of 1.5 s: the takeover after the kill comes quickly.
    let mut app = App::start_with(b, &[("WEFT_WORKER__JOB_LEASE_MS", "1500")]).await;
    let alice = app.user("alice").await;
    let base = create_base(&app, &alice, "kb", "private").await;
    for n in 0..6 {
        let (s, v) = upload(
            &app,
            &alice,
            &base,
            &format!("doc-{n}.md"),
            &long_document(n),
        )
        .await;
        assert_eq!(s, 201, "{v}");
    }
    eventually(
        Duration::from_secs(60),
        "an ingestion under way",
        async || {
            let running = app
                .count_rows("select count(*) from jobs where state = 'running'")
                .await;
            if running > 0 { Ok(()) } else { Err(running) }
        },
    )
    .await;
    match b {
        Backend::Distributed => {
            app.workers[0].kill();
            app.workers.push(App::spawn_worker(&app.env));
        }
        Backend::Embedded => app.restart_gateway(),
    }
    let docs = settled(&app, &alice, &base).await;
    assert_eq!(docs.len(), 6);
    let mut total = 0;
    for d in &docs {
        assert_eq!(d["status"], "ready", "{d}");
        total += d["chunks"].as_i64().unwrap();
    }
    assert_eq!(
        app.count_rows("select count(*) from knowledge_chunks")
            .await,
        total,
        "no chunk twice"
    );
    assert!(
        app.count_rows("select count(*) from jobs where attempt >= 2")
            .await
            >= 1,
        "an ingestion was taken over after the kill"
    );
    let (_, found) = search(&app, &alice, &base, "Section 3-299").await;
    assert_eq!(found["results"][0]["position"], "Section 3-299", "{found}");
}

/// `{url}` uploads go through `web_fetch`'s guard: an allowed host's file is
/// fetched and indexed under its URL's name, an internal address is refused
/// naming why, a file over `knowledge.max_document_bytes` is 413 naming it, and
/// `data` and `url` together (or neither) are refused.
async fn documents_come_from_urls_through_the_fetch_guard(b: Backend) {
    let guide = "# Guide\n\n## Parking\n\nVisitors park on level minus two.\n".to_string();
    let small = crate::tools::serve_text(guide);
    let big = crate::tools::serve_text("x".repeat(5000));
    let app = App::start_with(
        b,
        &[
            ("WEFT_TOOLS__WEB_FETCH__ALLOW_HOSTS", "[\"127.0.0.1\"]"),
            ("WEFT_KNOWLEDGE__MAX_DOCUMENT_BYTES", "4096"),
        ],
    )
    .await;
    let base = create_base(&app, ADMIN_TOKEN, "guides", "private").await;
    let add = |body: Value| {
        let app = &app;
        let path = format!("/v1/knowledge/{base}/documents");
        async move { app.post(&path, ADMIN_TOKEN, body).await }
    };
    let (st, v) =
        add(json!({"url": format!("http://127.0.0.1:{small}/docs/visitor%20guide.md")})).await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(
        v["documents"][0]["document"]["name"], "visitor guide.md",
        "{v}"
    );
    settled(&app, ADMIN_TOKEN, &base).await;
    let (st, found) = app
        .post(
            &format!("/v1/knowledge/{base}/search"),
            ADMIN_TOKEN,
            json!({"query": "where do visitors park"}),
        )
        .await;
    assert_eq!(st, 200, "{found}");
    assert!(
        found["results"][0]["text"]
            .as_str()
            .unwrap()
            .contains("level minus two"),
        "{found}"
    );

    let (st, v) = add(json!({"url": "http://10.0.0.1/secrets.md"})).await;
    assert_eq!(st, 422, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("refused"),
        "{v}"
    );
    let (st, v) = add(json!({"url": format!("http://127.0.0.1:{big}/big.txt")})).await;
    assert_eq!(st, 413, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("knowledge.max_document_bytes"),
        "{v}"
    );
    let (st, v) = add(json!({"name": "a.md", "data": "aGk=", "url": "http://127.0.0.1/"})).await;
    assert_eq!(st, 422, "{v}");
    let (st, v) = add(json!({"name": "a.md"})).await;
    assert_eq!(st, 422, "{v}");
    let docs = documents(&app, ADMIN_TOKEN, &base).await;
    assert_eq!(docs.len(), 1, "nothing refused was added: {docs:?}");
}
