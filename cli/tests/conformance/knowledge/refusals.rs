//! What a knowledge base refuses, naming the rule: unsupported and malformed
//! uploads, documents past their size, a scanned PDF, bad searches and names,
//! and documents past their owner's storage quota.

use serde_json::json;
use weft_files::samples;

use super::*;
use crate::both_backends;

both_backends!(
    bad_input_is_refused_naming_the_rule,
    documents_count_against_the_owners_storage_quota
);

async fn bad_input_is_refused_naming_the_rule(b: Backend) {
    let app = App::start_with(b, &[("WEFT_KNOWLEDGE__MAX_DOCUMENT_BYTES", "20000")]).await;
    let alice = app.user("alice").await;
    let base = create_base(&app, &alice, "kb", "private").await;
    let (s, v) = upload(&app, &alice, &base, "photo.png", &samples::png()).await;
    assert_eq!(s, 422, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("images"));
    let (s, v) = upload(&app, &alice, &base, "big.txt", &vec![b'a'; 30_000]).await;
    assert_eq!(s, 413, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("knowledge.max_document_bytes"),
        "{v}"
    );
    let (s, v) = upload(&app, &alice, &base, "empty.txt", b"").await;
    assert_eq!(s, 422, "{v}");
    let (s, v) = app
        .post(
            &format!("/v1/knowledge/{base}/documents"),
            &alice,
            json!({"name": "x.txt", "data": "not base64!"}),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    // A PDF that is only a picture: no text layer.
    let scanned = samples::pdf_of(&samples::pdf_objects("0 0 m 100 100 l S"));
    let (s, v) = upload(&app, &alice, &base, "scan.pdf", &scanned).await;
    assert_eq!(s, 201, "{v}");
    let docs = settled(&app, &alice, &base).await;
    assert_eq!(docs[0]["status"], "failed");
    assert_eq!(docs[0]["error"], "no text layer (scanned PDF)");
    assert_eq!(docs[0]["chunks"], 0);

    let (s, _) = search(&app, &alice, "kb_nope", "x").await;
    assert_eq!(s, 404);
    let (s, v) = app
        .post(
            &format!("/v1/knowledge/{base}/search"),
            &alice,
            json!({"query": "x", "top_k": 0}),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    let (s, v) = app
        .post("/v1/knowledge", &alice, json!({"name": "a/b"}))
        .await;
    assert_eq!(s, 422, "{v}");
}

/// A base's documents are its owner's files: they count in `/v1/me`'s storage
/// and an upload past `limits.storage_bytes_per_user` is refused with 413
/// naming it; deleting a document frees its bytes at once.
async fn documents_count_against_the_owners_storage_quota(b: Backend) {
    let app = App::start_with(b, &[("WEFT_LIMITS__STORAGE_BYTES_PER_USER", "3000")]).await;
    let alice = app.user("alice").await;
    let base = create_base(&app, &alice, "kb", "private").await;
    let first = "alpha ".repeat(340);
    let (s, v) = upload(&app, &alice, &base, "first.txt", first.as_bytes()).await;
    assert_eq!(s, 201, "{v}");
    let doc = v["documents"][0]["document"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, me) = app.get("/v1/me", &alice).await;
    assert_eq!(me["storage"]["used_bytes"], first.len() as u64, "{me}");
    // The same bytes again are the same document: nothing more to store.
    let (s, v) = upload(&app, &alice, &base, "again.txt", first.as_bytes()).await;
    assert_eq!(s, 201, "{v}");
    let second = "omega ".repeat(340);
    let (s, v) = upload(&app, &alice, &base, "second.txt", second.as_bytes()).await;
    assert_eq!(s, 413, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limits.storage_bytes_per_user"),
        "{v}"
    );
    assert_eq!(delete_document(&app, &alice, &base, &doc).await, 204);
    let (_, me) = app.get("/v1/me", &alice).await;
    assert_eq!(me["storage"]["used_bytes"], 0, "{me}");
    let (s, v) = upload(&app, &alice, &base, "second.txt", second.as_bytes()).await;
    assert_eq!(s, 201, "{v}");
}
