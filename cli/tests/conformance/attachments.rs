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

both_backends!(
    an_image_and_a_pdf_reach_the_model,
    images_reach_openai_and_anthropic_wires,
    multipart_sends_files_and_the_bytes_decide_the_type,
    every_limit_refuses_and_nothing_is_stored,
    files_go_with_the_last_session_that_names_them,
    a_model_without_vision_is_told_instead,
    uploads_wait_for_gateway_memory
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

async fn every_limit_refuses_and_nothing_is_stored(b: Backend) {
    let app = App::start_with(
        b,
        &[
            ("WEFT_ATTACHMENTS__IMAGE_BYTES", "4000"),
            ("WEFT_ATTACHMENTS__DOCUMENT_BYTES", "6000"),
            ("WEFT_LIMITS__ATTACHMENTS_BYTES", "12000"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let png = samples::png();
    let big_png = samples::image_sized(samples::ImageFormat::Png, 40);
    assert!(big_png.len() > 4000, "{}", big_png.len());
    let text = |n: usize| b64("x".repeat(n).as_bytes());
    let file = |name: &str, data: String| json!({"name": name, "data": data});
    let cases: Vec<(Value, u16, &str)> = vec![
        (
            json!(
                (0..5)
                    .map(|i| file(&format!("{i}.png"), b64(&png)))
                    .collect::<Vec<_>>()
            ),
            413,
            "images_per_message",
        ),
        (
            json!(
                (0..4)
                    .map(|i| file(&format!("{i}.txt"), text(10)))
                    .collect::<Vec<_>>()
            ),
            413,
            "documents_per_message",
        ),
        (json!([file("big.png", b64(&big_png))]), 413, "image_bytes"),
        (json!([file("big.txt", text(7000))]), 413, "document_bytes"),
        (
            json!([
                file("a.txt", text(5000)),
                file("b.txt", text(5000)),
                file("c.txt", text(5000))
            ]),
            413,
            "attachments_bytes",
        ),
        // A PNG that claims to be a PDF.
        (
            json!([{"name": "x.pdf", "data": b64(&png), "mime": "application/pdf"}]),
            422,
            "",
        ),
        // Bytes of no type we take.
        (
            json!([file(
                "tool.exe",
                b64(b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\xff\xff")
            )]),
            422,
            "",
        ),
        (json!([file("a.png", "not base64!".into())]), 422, "base64"),
        (json!([file("empty.txt", String::new())]), 422, "empty"),
    ];
    for (files, status, names) in cases {
        let (st, v) = app
            .post(
                &format!("/v1/sessions/{s}/messages"),
                &alice,
                json!({"text": "look", "attachments": files}),
            )
            .await;
        assert_eq!(st, status, "{names}: {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(names),
            "{names}: {v}"
        );
    }
    // A refusal after the files were checked (the session has a running reply
    // and the send says reject): nothing stays either.
    let run = app
        .send(&alice, &s, "@mock.tokens 200 @mock.delay 0 20")
        .await;
    let (st, v) = app
        .post(
            &format!("/v1/sessions/{s}/messages"),
            &alice,
            json!({"text": "and this?", "multitask": "reject",
                   "attachments": [file("a.png", b64(&png))]}),
        )
        .await;
    assert_eq!(st, 409, "{v}");
    app.wait_run(&alice, &run, std::time::Duration::from_secs(60))
        .await;
    assert_eq!(stored_files(&app), 0);
    let users = app
        .messages(&alice, &s)
        .await
        .into_iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(users, 1, "only the message without files was stored");
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

/// moto's S3 server in a child process (see `s3/s3.py`), stopped when dropped.
struct LocalS3 {
    child: std::process::Child,
    endpoint: String,
}

const S3_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/s3/s3.py");

fn python() -> String {
    std::env::var("WEFT_PYTHON").expect(
        "set WEFT_PYTHON to a Python with moto and boto3 (scripts/test makes one: ~/.cache/weft-venv/bin/python)",
    )
}

impl LocalS3 {
    fn start(bucket: &str) -> LocalS3 {
        use std::io::BufRead;
        let mut child = std::process::Command::new(python())
            .args([S3_SCRIPT, "serve", bucket])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start moto");
        // moto says a few things first; our script's line is `port N`.
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let port = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| l.trim().strip_prefix("port ").map(str::to_string))
            .expect("moto did not start (is moto[server] installed in WEFT_PYTHON?)");
        // Keep reading, so the server never writes into a closed pipe.
        std::thread::spawn(move || lines.for_each(drop));
        LocalS3 {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        }
    }

    /// `(key, size, sha256)` of every object, read back with boto3.
    fn objects(&self, bucket: &str) -> Vec<(String, usize, String)> {
        let out = std::process::Command::new(python())
            .args([S3_SCRIPT, "list", &self.endpoint, bucket])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let mut parts = l.split(' ');
                let (k, n, h) = (parts.next(), parts.next(), parts.next());
                (
                    k.unwrap().into(),
                    n.unwrap().parse().unwrap(),
                    h.unwrap().into(),
                )
            })
            .collect()
    }
}

impl Drop for LocalS3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A cluster whose gateway and worker share no disk: the worker reads what the
/// gateway received from an S3-compatible store, checked with the AWS SDK.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_store_serves_a_cluster_without_a_shared_disk() {
    let s3 = LocalS3::start("weft-files");
    let store = [
        ("WEFT_ATTACHMENTS__STORE", "s3://weft-files/tenant-a"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", s3.endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
    ];
    let env = Env::new(Backend::Distributed, &store).await;
    let worker_home = tempfile::tempdir().unwrap();
    let mut worker = env.command(&["worker"]);
    worker.env("HOME", worker_home.path());
    let mut app = App::start_in(env, false);
    app.workers.push(Proc::spawn(worker, "worker started"));

    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let (png, pdf) = image_and_pdf_reach_the_model(&app, &alice, &s).await;

    let (png_sha, pdf_sha) = (weft_files::sha256_hex(&png), weft_files::sha256_hex(&pdf));
    let mut objects = s3.objects("weft-files");
    objects.sort();
    let keys: Vec<&str> = objects.iter().map(|o| o.0.as_str()).collect();
    assert_eq!(
        keys,
        [
            format!("tenant-a/blobs/{}/{png_sha}", &png_sha[..2]),
            format!("tenant-a/blobs/{}/{pdf_sha}", &pdf_sha[..2]),
            format!("tenant-a/text/{}/{pdf_sha}", &pdf_sha[..2]),
        ]
        .iter()
        .map(String::as_str)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
    );
    let png_object = objects.iter().find(|o| o.0.ends_with(&png_sha)).unwrap();
    assert_eq!((png_object.1, &png_object.2), (png.len(), &png_sha));
    // Neither process kept a copy on its own disk.
    assert_eq!(stored_files(&app), 0);
    assert!(!worker_home.path().join(".local/share/weft/files").exists());

    let (st, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/sessions/{s}"),
            &alice,
            None,
        )
        .await;
    assert_eq!(st, 204);
    assert_eq!(
        s3.objects("weft-files"),
        Vec::new(),
        "deleted with the session"
    );
}

/// A gateway holds at most `attachments.gateway_upload_memory_bytes` of uploads:
/// while a slow client holds it all, another large send waits, then gets 503 +
/// `Retry-After`; once the slow one is gone, sends go through again.
async fn uploads_wait_for_gateway_memory(b: Backend) {
    use tokio::io::AsyncWriteExt;
    let app = App::start_with(
        b,
        &[("WEFT_ATTACHMENTS__GATEWAY_UPLOAD_MEMORY_BYTES", "4194304")],
    )
    .await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let image = samples::image_sized(samples::ImageFormat::Png, 700);
    assert!(
        image.len() > 1 << 20,
        "larger than body_bytes: {}",
        image.len()
    );
    let body = json!({"text": "hi", "wait": true, "attachments": [{"name": "big.png", "data": b64(&image)}]})
        .to_string();

    // A client that sends its headers and half its body, then stalls.
    let addr = app.base.trim_start_matches("http://").to_string();
    let mut slow = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /v1/sessions/{s}/messages HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {alice}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&body.as_bytes()[..body.len() / 2])
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;

    let res = app
        .http
        .post(app.url(&format!("/v1/sessions/{s}/messages")))
        .bearer_auth(&alice)
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    assert!(res.headers().contains_key("retry-after"));
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["error"]["code"], "unavailable", "{v}");

    drop(slow);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (st, v) = app
        .post(
            &format!("/v1/sessions/{s}/messages"),
            &alice,
            serde_json::from_str(&body).unwrap(),
        )
        .await;
    assert_eq!(st, 200, "{v}");
}
