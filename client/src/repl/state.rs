//! What the REPL remembers between turns: the session (created lazily, so `/new`
//! never leaves empty sessions behind), the model and agent to use, the catalogue
//! for completion and validation, the last reply for the status line, and the
//! files attached for the next message (shown in the prompt), and the last
//! `/memory` list (its numbers are what `/memory forget N` means).

use weft_wire::api::{AgentDto, CreateSessionRequest, ModelDto, SessionDto, UpdateSessionRequest};

use crate::api::Gateway;
use crate::attach::LocalFile;
use crate::error::Result;
use crate::render::{DIM, RESET, human_ms};
use crate::reply::Reply;
use crate::session::short;

pub struct ReplState {
    pub session_id: Option<String>,
    /// `/model` override; `None` uses the session's (or the gateway's default).
    pub model: Option<String>,
    /// The model of the current session, for the status line.
    pub session_model: String,
    pub agent: String,
    pub models: Vec<ModelDto>,
    pub agents: Vec<AgentDto>,
    pub last: Option<Reply>,
    /// `/attach`ed files; they go with the next message.
    pub pending: Vec<LocalFile>,
    /// The memories of the last `/memory` list, in its order.
    pub memories: Vec<super::memory::Listed>,
    /// The session's todo list as the last reply left it (`todo` events), for
    /// the status line.
    pub todos: Vec<weft_wire::api::TodoItem>,
}

impl ReplState {
    pub fn new(models: Vec<ModelDto>, agents: Vec<AgentDto>) -> ReplState {
        let agent = agents
            .iter()
            .find(|a| a.default)
            .or(agents.first())
            .map_or_else(|| "agent".to_string(), |a| a.id.clone());
        let session_model = models
            .iter()
            .find(|m| m.default)
            .map_or_else(String::new, |m| m.id.clone());
        ReplState {
            session_id: None,
            model: None,
            session_model,
            agent,
            models,
            agents,
            last: None,
            pending: Vec::new(),
            memories: Vec::new(),
            todos: Vec::new(),
        }
    }

    pub fn adopt(&mut self, s: &SessionDto) {
        self.session_id = Some(s.id.clone());
        self.session_model = s.model.clone();
        self.agent = s.agent.clone();
        self.model = None;
        self.last = None;
        self.todos.clear();
    }

    /// The current session's id, creating the session on first use.
    pub async fn ensure_session(&mut self, gw: &Gateway) -> Result<String> {
        if let Some(id) = &self.session_id {
            return Ok(id.clone());
        }
        let req = CreateSessionRequest {
            title: None,
            model: self.model.clone(),
            agent: Some(self.agent.clone()),
            mode: None,
        };
        let s = gw.create_session(&req).await?;
        self.session_id = Some(s.id.clone());
        self.session_model = s.model;
        Ok(s.id)
    }

    /// Persist a model/agent change on the session, when there is one.
    pub async fn sync_session(&self, gw: &Gateway) -> Result<()> {
        if let Some(id) = &self.session_id {
            let req = UpdateSessionRequest {
                title: None,
                model: self.model.clone(),
                agent: Some(self.agent.clone()),
                mode: None,
                knowledge: None,
            };
            gw.update_session(id, &req).await?;
        }
        Ok(())
    }

    /// `❯ `, or `[2 files] ❯ ` while files wait for the next message.
    pub fn prompt(&self) -> String {
        match self.pending.len() {
            0 => super::PROMPT.to_string(),
            n => format!("[{}] {}", crate::attach::count(n), super::PROMPT),
        }
    }

    pub fn current_model(&self) -> &str {
        self.model.as_deref().unwrap_or(&self.session_model)
    }

    /// `model · host · session · ↑in ↓out · cache · ttft · todo 1/3`, dimmed.
    pub fn status_line(&self, gw: &Gateway) -> String {
        let mut parts = vec![
            self.current_model().to_string(),
            format!("agent {}", self.agent),
            gw.host().to_string(),
        ];
        parts.push(self.session_id.as_deref().map_or_else(
            || "new session".to_string(),
            |s| format!("session {}", short(s)),
        ));
        if let Some(r) = &self.last {
            parts.push(format!("↑{} ↓{}", r.usage.input, r.usage.output));
            parts.push(format!("cache {}", r.usage.cache_read));
            if let Some(pct) = (r.usage.context_tokens * 100).checked_div(r.usage.context_window) {
                parts.push(format!("ctx {pct}%"));
            }
            if let Some(t) = r.ttft_ms {
                parts.push(format!("ttft {}", human_ms(t)));
            }
        }
        let todo = crate::render::todo_progress(&self.todos);
        if !todo.is_empty() {
            parts.push(todo);
        }
        format!("{DIM}── {} ──{RESET}", parts.join(" · "))
    }
}
