//! Vectors beside the lexical index (`[[embedding_models]]`): the load tester's
//! mock LLM serves `/v1/embeddings` on OpenAI's wire (vectors of hashed
//! character trigrams, checked with the official SDK), so a paraphrase that
//! shares no word with the document is found by vectors alone; and an
//! embedding outage leaves search lexical (saying so) and documents
//! `processing` — however long it lasts — until the provider is back.

use std::time::Duration;

use serde_json::Value;
use weft_loadtest::mock_llm::{MockLlmConfig, MockLlmServer};

use super::*;
use crate::both_backends;

both_backends!(a_paraphrase_is_found_by_vectors_and_an_outage_falls_back_to_words);

const SECURITY: &str = "# Security\n\n## Accounts\n\nPasswords rotate every ninety days; the portal reminds you a week ahead.\n\n## Travel\n\nBook flights through the travel desk, economy class under six hours.\n";

fn config(embeddings_url: &str) -> String {
    format!(
        "[[embedding_models]]\nid = \"mini\"\nprovider = \"openai\"\nbase_url = \"{embeddings_url}\"\nmodel = \"mock-embed\"\ndimensions = 256\n"
    )
}

/// The words of `text`, lower-cased.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A port nothing listens on.
fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

async fn reload(app: &App) {
    let (s, v) = app
        .post("/v1/admin/reload", ADMIN_TOKEN, serde_json::json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
}

async fn a_paraphrase_is_found_by_vectors_and_an_outage_falls_back_to_words(b: Backend) {
    let llm = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let mut env = Env::new(b, &[("WEFT_WORKER__JOB_WAIT_MS", "300")]).await;
    let file = env.dir.path().join("weft.toml");
    std::fs::write(&file, config(&llm.openai_base_url())).unwrap();
    env.extra
        .push(("WEFT_CONFIG".into(), file.display().to_string()));
    let app = App::start_in(env, true);
    let kb = create_base(&app, ADMIN_TOKEN, "handbook", "shared").await;
    let (s, v) = upload(&app, ADMIN_TOKEN, &kb, "security.md", SECURITY.as_bytes()).await;
    assert_eq!(s, 201, "{v}");
    let docs = settled(&app, ADMIN_TOKEN, &kb).await;
    assert_eq!(docs[0]["status"], "ready", "{docs:?}");
    assert!(docs[0].get("progress").is_none(), "no progress once ready");
    let chunks = docs[0]["chunks"].as_u64().unwrap() as i64;
    assert_eq!(
        app.count_rows("select count(*) from knowledge_embeddings")
            .await,
        chunks,
        "one vector per chunk"
    );

    // "password rotation" shares no word with "Passwords rotate …": the
    // lexical index cannot find it; the vectors (shared trigrams) do.
    let (s, found) = search(&app, ADMIN_TOKEN, &kb, "password rotation").await;
    assert_eq!(s, 200, "{found}");
    assert_eq!(found["mode"], "hybrid", "{found}");
    assert!(found.get("fallback").is_none(), "{found}");
    let top = found["results"][0]["text"].as_str().unwrap();
    assert!(top.contains("Passwords rotate"), "{found}");
    assert!(
        !words(top)
            .iter()
            .any(|w| w == "password" || w == "rotation"),
        "the passage found shares no word with the query: {top}"
    );
    assert_eq!(found["results"][0]["position"], "Security > Accounts");
    // Nothing near an unrelated query: no passage at all.
    let (_, unrelated) = search(&app, ADMIN_TOKEN, &kb, "zebra xylophone").await;
    assert_eq!(unrelated["results"], serde_json::json!([]), "{unrelated}");

    // The provider goes away (the config now points at a closed port).
    let file = app.env.dir.path().join("weft.toml");
    std::fs::write(&file, config(&closed_port_url())).unwrap();
    reload(&app).await;
    let (s, lexical) = search(&app, ADMIN_TOKEN, &kb, "travel desk flights").await;
    assert_eq!(s, 200, "{lexical}");
    assert_eq!(lexical["mode"], "lexical", "{lexical}");
    let why = lexical["fallback"].as_str().unwrap_or_default();
    assert!(why.contains("embedding model"), "{lexical}");
    assert!(
        lexical["results"][0]["text"]
            .as_str()
            .unwrap()
            .contains("travel desk"),
        "{lexical}"
    );
    // A document added meanwhile waits in `processing`, its error shown,
    // through more waits than it has attempts (5), and never fails.
    let (_, added) = upload(
        &app,
        ADMIN_TOKEN,
        &kb,
        "expenses.md",
        b"# Expenses\n\nReceipts are reimbursed within thirty days.\n",
    )
    .await;
    let doc = added["documents"][0]["document"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let waiting = eventually(Duration::from_secs(30), "the outage shown", async || {
        let (_, d) = app
            .get(&format!("/v1/knowledge/{kb}/documents/{doc}"), ADMIN_TOKEN)
            .await;
        let error = d["error"].as_str().unwrap_or_default().to_string();
        if d["status"] == "processing" && error.contains("embeddings") {
            Ok(d)
        } else {
            Err(d)
        }
    })
    .await;
    assert_eq!(waiting["chunks"], 0, "{waiting}");
    // Each wait is 300 ms after two quick retries in the request: well past
    // five attempts' worth of them.
    eventually(Duration::from_secs(60), "many waits", async || {
        let n = app
            .count_rows(&format!(
                "select count(*) from jobs where key = '{doc}' and state in ('queued', 'running') and attempt <= 1"
            ))
            .await;
        let waited = plain(&app.logs()).matches("background job waits for a service").count();
        if n == 1 && waited >= 7 { Ok(()) } else { Err((n, waited)) }
    })
    .await;
    let (_, d) = app
        .get(&format!("/v1/knowledge/{kb}/documents/{doc}"), ADMIN_TOKEN)
        .await;
    assert_eq!(d["status"], "processing", "{d}");

    // The provider is back: the document ends ready, found by meaning.
    std::fs::write(&file, config(&llm.openai_base_url())).unwrap();
    reload(&app).await;
    let ready: Value = eventually(
        Duration::from_secs(30),
        "ready after the outage",
        async || {
            let (_, d) = app
                .get(&format!("/v1/knowledge/{kb}/documents/{doc}"), ADMIN_TOKEN)
                .await;
            if d["status"] == "ready" {
                Ok(d)
            } else {
                Err(d)
            }
        },
    )
    .await;
    assert!(ready.get("error").is_none(), "{ready}");
    let (_, found) = search(&app, ADMIN_TOKEN, &kb, "receipt reimbursement").await;
    assert_eq!(found["mode"], "hybrid", "{found}");
    assert!(
        found["results"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Receipts are reimbursed"),
        "{found}"
    );
}
