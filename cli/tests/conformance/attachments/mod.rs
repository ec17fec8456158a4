//! Attachments (issue 15): images and documents sent as base64 or multipart,
//! typed by their bytes, limited, stored by content hash, shown in history,
//! downloadable by their owner only, and seen by the model — images in each
//! provider's wire format, documents as text.

use std::path::PathBuf;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use weft_files::samples;
use weft_loadtest::mock_llm::{MockLlmConfig, MockLlmServer};

use crate::both_backends;
use crate::harness::*;

mod limits;
mod quota;
mod s3;

both_backends!(
    an_image_and_a_pdf_reach_the_model,
    images_reach_openai_and_anthropic_wires,
    multipart_sends_files_and_the_bytes_decide_the_type,
    files_go_with_the_last_session_that_names_them,
    a_model_without_vision_is_told_instead
);

const REPORT: &str = "Quarterly revenue grew 42 percent";

fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Where the files of `app` are kept (every process of a test shares `HOME`).
fn files_dir(app: &App) -> PathBuf {
    match app.env.backend {
        Backend::Embedded => app.env.dir.path().join("data/files"),
        Backend::Distributed => app.env.dir.path().join(".local/share/weft/files"),
    }
}

/// Files under the store, recursively.
fn stored_files(app: &App) -> usize {
    fn walk(p: &std::path::Path) -> usize {
        let Ok(entries) = std::fs::read_dir(p) else {
            return 0;
        };
        entries
            .flatten()
            .map(|e| {
                let path = e.path();
                if path.is_dir() { walk(&path) } else { 1 }
            })
            .sum()
    }
    walk(&files_dir(app))
}

async fn send_wait(app: &App, token: &str, session: &str, body: Value) -> Value {
    let mut body = body;
    body["wait"] = json!(true);
    let (s, v) = app
        .post(&format!("/v1/sessions/{session}/messages"), token, body)
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["status"], "succeeded", "{v}");
    v
}

fn described(bytes: &[u8], mime: &str, n: usize) -> String {
    format!(
        "image {n}: {mime}, {} bytes, sha256 {}",
        bytes.len(),
        weft_files::sha256_hex(bytes)
    )
}

/// Send a PNG (as a data: URL) and a PDF (plain base64) asking the mock to
/// describe the images, then the PDF alone: the image reaches the model whole
/// and the PDF as its text. Returns the two files.
async fn image_and_pdf_reach_the_model(
    app: &App,
    token: &str,
    session: &str,
) -> (Vec<u8>, Vec<u8>) {
    let png = samples::png();
    let pdf = samples::pdf(&[REPORT]);
    let reply = send_wait(
        app,
        token,
        session,
        json!({"text": "what is in these? @mock.describe_images", "attachments": [
            {"name": "shot.png", "data": format!("data:image/png;base64,{}", b64(&png))},
            {"name": "report.pdf", "data": b64(&pdf)},
        ]}),
    )
    .await;
    assert_eq!(reply["content"], described(&png, "image/png", 1), "{reply}");
    // The document's text is what the model reads (the mock echoes its input).
    let reply = send_wait(
        app,
        token,
        session,
        json!({"text": "summarise", "attachments": [{"name": "report.pdf", "data": b64(&pdf)}]}),
    )
    .await;
    let echoed = reply["content"].as_str().unwrap();
    assert!(
        echoed.contains("<document name=\"report.pdf\" type=\"application/pdf\">")
            && echoed.contains(REPORT),
        "{echoed}"
    );
    (png, pdf)
}

async fn an_image_and_a_pdf_reach_the_model(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let (png, pdf) = image_and_pdf_reach_the_model(&app, &alice, &s).await;

    // History lists each message's files; the owner downloads them.
    let msgs = app.messages(&alice, &s).await;
    let first = &msgs[0];
    assert_eq!(first["role"], "user");
    let files = first["attachments"].as_array().expect("attachments");
    assert_eq!(files.len(), 2, "{first}");
    assert_eq!(files[0]["name"], "shot.png");
    assert_eq!(files[0]["kind"], "image");
    assert_eq!(files[0]["mime"], "image/png");
    assert_eq!(files[0]["bytes"], png.len());
    assert_eq!(files[1]["kind"], "document");
    assert_eq!(files[1]["mime"], "application/pdf");
    let id = files[0]["id"].as_str().unwrap();
    let res = app
        .http
        .get(app.url(&format!("/v1/files/{id}")))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "image/png");
    assert_eq!(
        res.headers()["content-disposition"],
        "inline; filename=\"shot.png\"; filename*=UTF-8''shot.png"
    );
    assert_eq!(res.bytes().await.unwrap(), png);
    let doc = files[1]["id"].as_str().unwrap();
    let res = app
        .http
        .get(app.url(&format!("/v1/files/{doc}")))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert!(
        res.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment;")
    );
    assert_eq!(res.bytes().await.unwrap(), pdf);

    // Someone else's file does not exist for bob; nor does a made-up id.
    let bob = app.user("bob").await;
    let (st, v) = app.get(&format!("/v1/files/{id}"), &bob).await;
    assert_eq!(st, 404, "{v}");
    assert_eq!(v["error"]["code"], "not_found");
    let (st, _) = app.get("/v1/files/not-an-id", &alice).await;
    assert_eq!(st, 404);

    // The same PDF twice is stored once (content-addressed): one PNG, one PDF
    // and the PDF's text.
    assert_eq!(stored_files(&app), 3);
}

async fn images_reach_openai_and_anthropic_wires(b: Backend) {
    let llm = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let mut env = Env::new(b, &[]).await;
    let config = env.dir.path().join("weft.toml");
    std::fs::write(
        &config,
        format!(
            "[[models]]\nid = \"gpt-vision\"\nprovider = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"TEST_KEY\"\nvision = true\ndefault = true\n\n\
             [[models]]\nid = \"claude-test\"\nprovider = \"anthropic\"\nbase_url = \"{}\"\napi_key_env = \"TEST_KEY\"\n",
            llm.openai_base_url(),
            llm.base_url()
        ),
    )
    .unwrap();
    env.extra
        .push(("WEFT_CONFIG".into(), config.display().to_string()));
    env.extra.push(("TEST_KEY".into(), "sk-test".into()));
    let app = App::start_in(env, true);
    let alice = app.user("alice").await;
    let png = samples::png();
    let jpeg = samples::image(samples::ImageFormat::Jpeg);
    for model in ["gpt-vision", "claude-test"] {
        let (_, s) = app
            .post("/v1/sessions", &alice, json!({"model": model}))
            .await;
        let s = s["id"].as_str().unwrap();
        let reply = send_wait(
            &app,
            &alice,
            s,
            json!({"text": "@mock.describe_images", "attachments": [
                {"name": "a.png", "data": b64(&png)},
                {"name": "b.jpg", "data": b64(&jpeg)},
            ]}),
        )
        .await;
        assert_eq!(
            reply["content"],
            format!(
                "{}\n{}",
                described(&png, "image/png", 1),
                described(&jpeg, "image/jpeg", 2)
            ),
            "{model}"
        );
    }
}

/// A multipart send.
async fn post_form(
    app: &App,
    token: &str,
    session: &str,
    form: reqwest::multipart::Form,
) -> (u16, Value) {
    let res = app
        .http
        .post(app.url(&format!("/v1/sessions/{session}/messages")))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap())
}

async fn multipart_sends_files_and_the_bytes_decide_the_type(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let png = samples::png();
    let docx = samples::docx(&["Minutes of the meeting", "Ship it on Friday"]);
    // A PNG that says it is a JPEG (name and part type): corrected to PNG.
    let form = reqwest::multipart::Form::new()
        .part(
            "json",
            reqwest::multipart::Part::text(
                json!({"text": "@mock.describe_images", "wait": true}).to_string(),
            )
            .mime_str("application/json")
            .unwrap(),
        )
        .part(
            "file",
            reqwest::multipart::Part::bytes(png.clone())
                .file_name("photo.jpg")
                .mime_str("image/jpeg")
                .unwrap(),
        )
        .part(
            "file",
            reqwest::multipart::Part::bytes(docx.clone()).file_name("minutes.docx"),
        );
    let (st, v) = post_form(&app, &alice, &s, form).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["content"], described(&png, "image/png", 1), "{v}");
    let msgs = app.messages(&alice, &s).await;
    let files = &msgs[0]["attachments"];
    assert_eq!(files[0]["name"], "photo.jpg");
    assert_eq!(files[0]["mime"], "image/png", "{files}");
    assert_eq!(
        files[1]["mime"],
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    );

    // A multipart send without its json part says what is missing.
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(png.clone()).file_name("a.png"),
    );
    let (st, v) = post_form(&app, &alice, &s, form).await;
    assert_eq!(st, 400, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"json\" part"),
        "{v}"
    );
}

async fn files_go_with_the_last_session_that_names_them(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let png = samples::png();
    let one = app.session(&alice).await;
    let two = app.session(&alice).await;
    for s in [&one, &two] {
        send_wait(
            &app,
            &alice,
            s,
            json!({"text": "hi", "attachments": [{"name": "a.png", "data": b64(&png)}]}),
        )
        .await;
    }
    assert_eq!(stored_files(&app), 1, "stored once");
    let (st, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/sessions/{one}"),
            &alice,
            None,
        )
        .await;
    assert_eq!(st, 204);
    assert_eq!(stored_files(&app), 1, "the other session still names it");
    let id = app.messages(&alice, &two).await[0]["attachments"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (st, _) = app.get(&format!("/v1/files/{id}"), &alice).await;
    assert_eq!(st, 200);
    let (st, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/sessions/{two}"),
            &alice,
            None,
        )
        .await;
    assert_eq!(st, 204);
    assert_eq!(stored_files(&app), 0, "deleted with the last session");
    let (st, _) = app.get(&format!("/v1/files/{id}"), &alice).await;
    assert_eq!(st, 404);
}

async fn a_model_without_vision_is_told_instead(b: Backend) {
    let mut env = Env::new(b, &[]).await;
    let config = env.dir.path().join("weft.toml");
    std::fs::write(
        &config,
        "[[models]]\nid = \"blind\"\nprovider = \"mock\"\nvision = false\ndefault = true\n",
    )
    .unwrap();
    env.extra
        .push(("WEFT_CONFIG".into(), config.display().to_string()));
    let app = App::start_in(env, true);
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let reply = send_wait(
        &app,
        &alice,
        &s,
        json!({"text": "what is this?", "attachments": [{"name": "shot.png", "data": b64(&samples::png())}]}),
    )
    .await;
    let echoed = reply["content"].as_str().unwrap();
    assert!(
        echoed.contains("[attached image \"shot.png\" (image/png")
            && echoed.contains("this model cannot see images"),
        "{echoed}"
    );
}
