//! Lark users are ordinary users to the access lists (issue 20): `/model` and
//! `/agent` list only what is open to the sender, and choosing anything else
//! is refused in the chat, the session unchanged.

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(lark_users_choose_only_open_models_and_agents);

async fn lark_users_choose_only_open_models_and_agents(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.toml");
    std::fs::write(
        &path,
        "[[models]]\nid = \"mock\"\nprovider = \"mock\"\ndefault = true\n\n\
         [[models]]\nid = \"mock-vip\"\nprovider = \"mock\"\nallowed_users = [\"vip\"]\n\n\
         [[agents]]\nid = \"club\"\nname = \"Club\"\nallowed_roles = [\"admin\"]\n",
    )
    .unwrap();
    let config = path.display().to_string();
    let mut w =
        LarkWorld::start_with(b, 1, fake_config(), &[("WEFT_CONFIG", config.as_str())]).await;
    let ask = |w: &mut LarkWorld, text: &str| w.dm("ou_alice", text);

    let list = ask(&mut w, "/model");
    let listing = notice(
        &w.until("/model", |_| w.replies(&list).into_iter().next())
            .await,
    );
    assert!(
        listing.contains("`mock` ←") && !listing.contains("mock-vip"),
        "{listing}"
    );
    let pick = ask(&mut w, "/model mock-vip");
    let answer = notice(
        &w.until("/model mock-vip", |_| w.replies(&pick).into_iter().next())
            .await,
    );
    assert!(answer.contains("not open to you"), "{answer}");
    let list = ask(&mut w, "/agent");
    let listing = notice(
        &w.until("/agent", |_| w.replies(&list).into_iter().next())
            .await,
    );
    assert!(
        listing.contains("`agent` ←") && !listing.contains("club"),
        "{listing}"
    );
    let pick = ask(&mut w, "/agent club");
    let answer = notice(
        &w.until("/agent club", |_| w.replies(&pick).into_iter().next())
            .await,
    );
    assert!(answer.contains("not open to you"), "{answer}");
    // The conversation carries on with what it had.
    let hello = ask(&mut w, "@mock.reply still mock");
    let card = w.final_card(&hello).await;
    assert_eq!(body(&card), "still mock", "{:?}", card.content);
}
