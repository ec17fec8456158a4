//! Agents at start-up (issue 20): an `[[agents]]` entry no admin has edited
//! follows the config at every start — so `allowed_users` added to the file
//! holds after the restart — while an admin's edit and the built-in agents
//! are left as they are; the access lists round-trip.

use weft_shared::config::AgentConfig;

use crate::both_backends;
use crate::harness::Db;

both_backends!(configured_agents_take_what_the_file_changes_and_keep_admin_edits);

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
