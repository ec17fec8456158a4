//! Knowledge bases from a Lark chat (issue 25): `/kb` lists the bases open to
//! the speaker, `/kb use NAME` makes the chat's conversation search one besides
//! its agent's, the answer's card lists the sources it cites, and `/kb off`
//! takes the base away again — the tool is refused from then on.

use serde_json::json;

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(kb_binds_a_base_to_the_chat_and_cards_show_sources);

const HANDBOOK: &str = "# Handbook\n\nWelcome to the team.\n\n## Leave\n\nEveryone gets 25 vacation days a year.\n\n## Equipment\n\nLaptops are replaced every three years.\n";

async fn kb_binds_a_base_to_the_chat_and_cards_show_sources(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let (st, base) = w
        .admin(
            reqwest::Method::POST,
            "/v1/knowledge",
            Some(json!({"name": "handbook", "description": "how we work", "visibility": "shared"})),
        )
        .await;
    assert_eq!(st, 201, "{base}");
    let id = base["id"].as_str().unwrap().to_string();
    use base64::Engine;
    let (st, up) = w
        .admin(
            reqwest::Method::POST,
            &format!("/v1/knowledge/{id}/documents"),
            Some(json!({"name": "handbook.md",
                        "data": base64::engine::general_purpose::STANDARD.encode(HANDBOOK)})),
        )
        .await;
    assert_eq!(st, 201, "{up}");
    eventually(WAIT, "the handbook is ready", async || {
        let (_, docs) = w
            .admin(
                reqwest::Method::GET,
                &format!("/v1/knowledge/{id}/documents"),
                None,
            )
            .await;
        if docs["documents"][0]["status"] == "ready" {
            Ok(())
        } else {
            Err(docs)
        }
    })
    .await;

    let ask = |w: &mut LarkWorld, text: &str| w.dm("ou_alice", text);
    let list = ask(&mut w, "/kb");
    let listing = notice(
        &w.until("/kb", |_| w.replies(&list).into_iter().next())
            .await,
    );
    assert!(
        listing.contains("`handbook` — how we work") && !listing.contains("in use"),
        "{listing}"
    );
    let bad = ask(&mut w, "/kb use nope");
    let refused = notice(
        &w.until("/kb use nope", |_| w.replies(&bad).into_iter().next())
            .await,
    );
    assert!(
        refused.contains("No knowledge base named `nope`"),
        "{refused}"
    );
    let pick = ask(&mut w, "/kb use handbook");
    let picked = notice(
        &w.until("/kb use", |_| w.replies(&pick).into_iter().next())
            .await,
    );
    assert!(picked.contains("`handbook`"), "{picked}");
    let list = ask(&mut w, "/kb");
    let listing = notice(
        &w.until("/kb again", |_| w.replies(&list).into_iter().next())
            .await,
    );
    assert!(
        listing.contains("`handbook` — how we work ← in use"),
        "{listing}"
    );

    // The default agent names no base; the chat's own makes the tool appear.
    let question = ask(
        &mut w,
        r#"@mock.tool knowledge_search {"query": "vacation days"}"#,
    );
    let card = w.final_card(&question).await;
    assert_eq!(template(&card), "green", "{:?}", card.content);
    assert!(body(&card).contains("25 vacation days"), "{}", body(&card));
    let sources = element(&card, "sources");
    assert!(
        sources.starts_with("**Sources**\n[1] handbook.md — Handbook > Leave"),
        "the card lists what the answer cites: {sources}\n{:?}",
        card.content
    );

    let off = ask(&mut w, "/kb off");
    w.until("/kb off", |_| w.replies(&off).into_iter().next())
        .await;
    let question = ask(
        &mut w,
        r#"@mock.tool knowledge_search {"query": "vacation days"}"#,
    );
    let card = w.final_card(&question).await;
    let text = body(&card);
    assert!(
        text.contains("not available") && !text.contains("25 vacation days"),
        "{text}"
    );
    assert!(element(&card, "sources").is_empty());
}
