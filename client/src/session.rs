//! Choosing the session a message goes to: a new one, an id (full or the short
//! suffix people see), or the most recently used one (`-r last`).

use weft_wire::api::{CreateSessionRequest, SessionDto};

use crate::api::Gateway;
use crate::error::{ClientError, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    New,
    /// A full id or a unique suffix of one (`/resume 1a2b3c4d`).
    Id(String),
    /// The most recently updated session.
    Last,
}

impl SessionChoice {
    /// `-r/--resume` takes `last` or an id.
    pub fn from_resume(arg: &str) -> SessionChoice {
        if arg.eq_ignore_ascii_case("last") {
            SessionChoice::Last
        } else {
            SessionChoice::Id(arg.to_string())
        }
    }
}

/// The short form shown to people: the last 8 characters of the id.
pub fn short(id: &str) -> &str {
    &id[id.len().saturating_sub(8)..]
}

/// Resolve an existing session (`Id`/`Last`), or create one (`New`).
pub async fn open(
    gw: &Gateway,
    choice: &SessionChoice,
    model: Option<&str>,
    agent: Option<&str>,
) -> Result<SessionDto> {
    match choice {
        SessionChoice::New => {
            let req = CreateSessionRequest {
                title: None,
                model: model.map(Into::into),
                agent: agent.map(Into::into),
                mode: None,
            };
            gw.create_session(&req).await
        }
        SessionChoice::Last => {
            let list = gw.sessions(1).await?;
            list.sessions.into_iter().next().ok_or_else(|| {
                ClientError::Usage(
                    "there is no session to resume yet; start one with `weft`".into(),
                )
            })
        }
        SessionChoice::Id(id) => find(gw, id).await,
    }
}

/// A session by full id, else by a unique suffix among the 100 most recent.
pub async fn find(gw: &Gateway, id: &str) -> Result<SessionDto> {
    let id = id.trim();
    if id.is_empty() {
        return Err(ClientError::Usage("a session id is needed".into()));
    }
    if uuid::Uuid::try_parse(id).is_ok() {
        return gw.session(id).await.map_err(|e| {
            if e.is_not_found() {
                ClientError::Usage(format!("no session {id}"))
            } else {
                e
            }
        });
    }
    let needle = id.to_ascii_lowercase();
    let mut hits: Vec<SessionDto> = gw
        .sessions(100)
        .await?
        .sessions
        .into_iter()
        .filter(|s| s.id.ends_with(&needle))
        .collect();
    match hits.len() {
        1 => Ok(hits.remove(0)),
        0 => Err(ClientError::Usage(format!(
            "no session ends with {id:?}; `weft sessions list` shows them"
        ))),
        n => Err(ClientError::Usage(format!(
            "{n} sessions end with {id:?}; give more characters"
        ))),
    }
}
