//! Who may use an agent or a model: `allowed_users` (usernames) and
//! `allowed_roles` (`admin`, `user`) on `[[agents]]` and `[[models]]` (and on
//! agents admins write through the API). Both empty: everyone, as before these
//! keys existed. Otherwise a user may use it when their username is listed or
//! their role is. Admins may use every agent and model: they can change the
//! lists anyway, and they must see an agent to edit it.

/// The roles `allowed_roles` may name.
pub const ROLES: [&str; 2] = ["admin", "user"];

/// The person asking to use an agent or a model.
#[derive(Debug, Clone, Copy)]
pub struct Requester<'a> {
    pub username: &'a str,
    pub admin: bool,
}

/// Whether `who` may use what these lists guard.
pub fn allows(allowed_users: &[String], allowed_roles: &[String], who: Requester<'_>) -> bool {
    who.admin
        || (allowed_users.is_empty() && allowed_roles.is_empty())
        || allowed_users.iter().any(|u| u == who.username)
        || allowed_roles.iter().any(|r| r == "user")
}

/// Whether the lists restrict anyone at all.
pub fn restricted(allowed_users: &[String], allowed_roles: &[String]) -> bool {
    !allowed_users.is_empty() || !allowed_roles.is_empty()
}

/// The start-up (and API) check: roles are `admin` or `user`, usernames are
/// not blank. `what` names the entry in the message.
pub fn validate(
    what: &str,
    allowed_users: &[String],
    allowed_roles: &[String],
) -> Result<(), String> {
    if let Some(r) = allowed_roles.iter().find(|r| !ROLES.contains(&r.as_str())) {
        return Err(format!(
            "{what}: allowed_roles: {r:?} is not \"admin\" or \"user\""
        ));
    }
    if allowed_users
        .iter()
        .any(|u| u.trim().is_empty() || u.len() > 128)
    {
        return Err(format!(
            "{what}: allowed_users: a username must be 1 to 128 characters"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn lists_admit_named_users_roles_and_admins() {
        let alice = Requester {
            username: "alice",
            admin: false,
        };
        let root = Requester {
            username: "root",
            admin: true,
        };
        assert!(allows(&[], &[], alice), "no lists: everyone");
        assert!(allows(&v(&["alice"]), &[], alice));
        assert!(!allows(&v(&["bob"]), &[], alice));
        assert!(!allows(&[], &v(&["admin"]), alice));
        assert!(allows(&[], &v(&["user"]), alice));
        assert!(allows(&v(&["bob"]), &v(&["admin"]), root));
        assert!(!restricted(&[], &[]) && restricted(&[], &v(&["admin"])));
    }

    #[test]
    fn roles_and_usernames_are_checked() {
        assert!(validate("models[0]", &v(&["alice"]), &v(&["admin", "user"])).is_ok());
        let e = validate("models[0]", &[], &v(&["owner"])).unwrap_err();
        assert!(e.contains("\"owner\""), "{e}");
        assert!(validate("agents.x", &v(&[" "]), &[]).is_err());
    }
}
