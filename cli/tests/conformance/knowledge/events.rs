//! A base's event stream (`GET /v1/knowledge/{id}/events`): what its page and
//! `weft knowledge add` follow instead of polling. A document's ingestion is
//! told step by step — in distributed mode from the worker process, through
//! Redis, to the gateway's stream — and ends with the document exactly as the
//! API then shows it; deletions are told too, and the stream ends with its
//! base. Another user's private base has no stream (404).

use crate::sse::Sse;

use super::*;
use crate::both_backends;

both_backends!(a_bases_stream_tells_each_documents_ingestion_and_deletion);

async fn open(app: &App, token: &str, base: &str) -> reqwest::Response {
    app.http
        .get(app.url(&format!("/v1/knowledge/{base}/events")))
        .bearer_auth(token)
        .send()
        .await
        .expect("events request")
}

async fn a_bases_stream_tells_each_documents_ingestion_and_deletion(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let base = create_base(&app, &alice, "kb", "private").await;
    assert_eq!(open(&app, &bob, &base).await.status().as_u16(), 404);
    let resp = open(&app, &alice, &base).await;
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut events = Sse::new(resp);

    let (s, added) = upload(&app, &alice, &base, "h.md", HANDBOOK.as_bytes()).await;
    assert_eq!(s, 201, "{added}");
    let doc = added["documents"][0]["document"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let seen = events
        .until(|e| e.ty == "document" && e.data["document"]["status"] == "ready")
        .await;
    let statuses: Vec<&str> = seen
        .iter()
        .filter(|e| e.ty == "document")
        .inspect(|e| assert_eq!(e.data["type"], "document", "{:?}", e.data))
        .inspect(|e| assert_eq!(e.data["document"]["id"], doc.as_str()))
        .map(|e| e.data["document"]["status"].as_str().unwrap())
        .collect();
    assert!(
        statuses.contains(&"queued"),
        "the upload is told: {statuses:?}"
    );
    assert!(
        seen.iter()
            .any(|e| e.data["document"]["status"] == "processing"
                && e.data["document"]["progress"]["stage"] == "reading"),
        "the worker tells its stages: {seen:?}"
    );
    let (_, now) = app
        .get(&format!("/v1/knowledge/{base}/documents/{doc}"), &alice)
        .await;
    let last = &seen.last().unwrap().data["document"];
    assert_eq!(
        *last, now,
        "the last event is the document as the API shows it"
    );
    assert!(last["chunks"].as_u64().unwrap() > 0, "{last}");

    assert_eq!(delete_document(&app, &alice, &base, &doc).await, 204);
    let gone = events.until(|e| e.ty == "document_deleted").await;
    assert_eq!(gone.last().unwrap().data["document_id"], doc.as_str());

    let (s, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/knowledge/{base}"),
            &alice,
            None,
        )
        .await;
    assert_eq!(s, 204);
    let end = events.until(|e| e.ty == "deleted").await;
    assert_eq!(end.last().unwrap().data["knowledge_id"], base.as_str());
    assert!(
        events.next().await.is_none(),
        "the stream ends with its base"
    );
    assert_eq!(open(&app, &alice, &base).await.status().as_u16(), 404);
}
