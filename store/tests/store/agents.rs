//! Agents at start-up (issue 20): an `[[agents]]` entry no admin has edited
//! follows the config at every start — so `allowed_users` added to the file
//! holds after the restart — while an admin's edit and the built-in agents
//! are left as they are; the access lists round-trip.

use weft_config::AgentConfig;

use crate::both_backends;
use weft_shared::ids::SessionId;
use weft_store::{AuthUser, RunLimits};

use crate::harness::{Db, claim, session, start, succeed_claimed, user};

both_backends!(
    configured_agents_take_what_the_file_changes_and_keep_admin_edits,
    every_write_of_the_prompt_moves_the_revision_a_claim_reads
);

fn club(instructions: &str, allowed_users: &[&str]) -> AgentConfig {
    AgentConfig {
        id: "club".into(),
        name: "Club".into(),
        instructions: instructions.into(),
        allowed_users: allowed_users.iter().map(|u| u.to_string()).collect(),
        ..AgentConfig::default()
    }
}

async fn configured_agents_take_what_the_file_changes_and_keep_admin_edits(db: Db) {
    let s = &db.store;
    s.seed_agents(&[club("v1", &[])]).await.unwrap();
    let a = s.get_agent("club").await.unwrap().spec;
    assert_eq!((a.instructions.as_str(), a.allowed_users.len()), ("v1", 0));

    // A restart with a restriction in the file: it holds.
    s.seed_agents(&[club("v2", &["vip"])]).await.unwrap();
    let a = s.get_agent("club").await.unwrap().spec;
    assert_eq!(a.instructions, "v2");
    assert_eq!(a.allowed_users, ["vip"]);
    assert!(a.allowed_roles.is_empty());

    // An admin's edit stays through a restart with the same file.
    let mut edited = club("admin's", &["vip", "bob"]);
    edited.allowed_roles = vec!["admin".into()];
    s.put_agent(&edited).await.unwrap();
    s.seed_agents(&[club("v2", &["vip"])]).await.unwrap();
    let a = s.get_agent("club").await.unwrap().spec;
    assert_eq!(a.instructions, "admin's");
    assert_eq!(a.allowed_users, ["vip", "bob"]);
    assert_eq!(a.allowed_roles, ["admin"]);

    // A file that changes some fields: those are the file's again, the
    // field only the admin changed stays the admin's.
    s.seed_agents(&[club("v3", &[])]).await.unwrap();
    let a = s.get_agent("club").await.unwrap().spec;
    assert_eq!(a.instructions, "v3");
    assert!(a.allowed_users.is_empty());
    assert_eq!(a.allowed_roles, ["admin"]);
}

/// The `prompt` revision a run claimed now gets (the run then ends).
async fn claimed_rev(db: &Db, alice: &AuthUser, chat: &SessionId) -> i64 {
    let run = start(db, &alice.id, chat, "hi").await;
    let claimed = claim(db, &run.run_id, "w1").await;
    succeed_claimed(db, &claimed, &RunLimits::unlimited()).await;
    claimed.prompt_rev
}

/// Workers keep agents, instructions and skills while the `prompt` revision
/// the claim returns stays put (issue 23): every write of one of them must
/// move it, and a run alone must not.
async fn every_write_of_the_prompt_moves_the_revision_a_claim_reads(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let chat = session(&db, &alice).await.id;
    let mut before = claimed_rev(&db, &alice, &chat).await;
    assert_eq!(claimed_rev(&db, &alice, &chat).await, before, "a run alone");
    let skill = weft_shared::skills::Skill {
        name: "notes".into(),
        description: "d".into(),
        body: "b".into(),
        files: Default::default(),
    };
    for step in 0..7 {
        let by = match step {
            0 => s
                .seed_agents(&[club("v1", &[])])
                .await
                .map(|_| "seed_agents"),
            1 => s.put_agent(&club("v2", &[])).await.map(|_| "put_agent"),
            2 => s.delete_agent("club").await.map(|_| "delete_agent"),
            3 => s
                .set_user_instructions(&alice.id, "Call me Ana.")
                .await
                .map(|_| "set_user_instructions"),
            4 => s.put_skill(&skill).await.map(|_| "put_skill"),
            5 => s.delete_skill("notes").await.map(|_| "delete_skill"),
            _ => Ok("nothing"),
        }
        .unwrap();
        let now = claimed_rev(&db, &alice, &chat).await;
        assert_eq!(now > before, by != "nothing", "{by}: {before} -> {now}");
        before = now;
    }
}
