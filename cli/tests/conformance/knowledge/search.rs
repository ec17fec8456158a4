//! Searches follow the base: a document added is found by the next search and
//! one deleted is gone from it (the process's copy of the index brought up to
//! date document by document), and a base too large to copy is searched in the
//! database's full-text index with the same answers.

use serde_json::json;

use super::*;
use crate::both_backends;

both_backends!(
    searches_follow_documents_added_and_deleted,
    a_base_too_large_to_copy_is_searched_in_the_database
);

async fn searches_follow_documents_added_and_deleted(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let base = create_base(&app, &alice, "kb", "private").await;
    let (_, added) = upload(&app, &alice, &base, "h.md", HANDBOOK.as_bytes()).await;
    let doc = added["documents"][0]["document"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    settled(&app, &alice, &base).await;
    // The first search reads the base into the process's index.
    let (_, found) = search(&app, &alice, &base, "laptops").await;
    assert_eq!(found["results"].as_array().unwrap().len(), 1);
    // A document added since is found by the next search.
    let (s, v) = upload(&app, &alice, &base, "p.md", PARKING.as_bytes()).await;
    assert_eq!(s, 201, "{v}");
    settled(&app, &alice, &base).await;
    let (_, found) = search(&app, &alice, &base, "where do bicycles go").await;
    assert_eq!(found["results"][0]["document_name"], "p.md", "{found}");
    assert_eq!(delete_document(&app, &alice, &base, &doc).await, 204);
    let (_, found) = search(&app, &alice, &base, "laptops").await;
    assert_eq!(found["results"], json!([]), "the deleted document is gone");
    let (_, found) = search(&app, &alice, &base, "bicycles laptops").await;
    let names: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["document_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["p.md"], "{found}");
    let (s, _) = app
        .get(&format!("/v1/knowledge/{base}/documents/{doc}"), &alice)
        .await;
    assert_eq!(s, 404);
    let (s, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/knowledge/{base}"),
            &alice,
            None,
        )
        .await;
    assert_eq!(s, 204);
    let (s, _) = app.get(&format!("/v1/knowledge/{base}"), &alice).await;
    assert_eq!(s, 404);
}

const PARKING: &str =
    "# Parking\n\nBicycles go in the rack by the north door. Cars park on level two.\n";

/// With no memory for copies, every search is the database's full-text
/// index's: the same answers.
async fn a_base_too_large_to_copy_is_searched_in_the_database(b: Backend) {
    let app = App::start_with(b, &[("WEFT_KNOWLEDGE__CACHE_MIB", "0")]).await;
    let base = create_base(&app, ADMIN_TOKEN, "handbook", "shared").await;
    for (name, text) in [("handbook.md", HANDBOOK), ("p.md", PARKING)] {
        let (s, v) = upload(&app, ADMIN_TOKEN, &base, name, text.as_bytes()).await;
        assert_eq!(s, 201, "{v}");
    }
    settled(&app, ADMIN_TOKEN, &base).await;
    let (s, found) = search(&app, ADMIN_TOKEN, &base, "how many vacation days").await;
    assert_eq!(s, 200, "{found}");
    assert_eq!(
        found["results"][0]["position"], "Handbook > Leave",
        "{found}"
    );
    let (_, found) = search(&app, ADMIN_TOKEN, &base, "bicycles").await;
    assert_eq!(found["results"][0]["document_name"], "p.md", "{found}");
    let (_, found) = search(&app, ADMIN_TOKEN, &base, "kubernetes").await;
    assert_eq!(found["results"], json!([]));
    let logs = app.logs();
    assert!(
        logs.contains("too large to copy"),
        "the database answered, not a copy: {logs}"
    );
}
