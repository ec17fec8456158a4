//! Who may choose which agent and which model (docs/agent.md, "Who may use
//! an agent or a model"). Both are limited by `allowed_users` and
//! `allowed_roles` (`weft_config::access`); a user sees only the ones
//! open to them, and naming another — or sending in a session that still names
//! one — is 403 `forbidden`. Everything here is decided from memory: the models
//! come from the config, the agents from the gateway's copy ([`AgentIds`]), so
//! the usual send pays nothing; only when some agent or model is limited does a
//! send read its session to check the choice it carries from earlier.
//!
//! [`AgentIds`]: crate::agents::AgentIds

use weft_config::Requester;
use weft_shared::api::ModelDto;
use weft_shared::ids::{SessionId, UserId};
use weft_store::{AuthUser, Role};

use crate::AppState;
use crate::error::{ApiError, ApiResult};

/// `user` as the access lists see them.
pub fn requester(user: &AuthUser) -> Requester<'_> {
    Requester {
        username: &user.username,
        admin: user.role == Role::Admin,
    }
}

fn not_allowed(what: &str, id: &str) -> ApiError {
    ApiError::NotAllowed(format!("the {what} {id:?} is not open to you"))
}

impl AppState {
    /// The models `user` may choose, the one they get by default first (and
    /// marked `default`).
    pub fn models_for(&self, user: &AuthUser) -> Vec<ModelDto> {
        let who = requester(user);
        self.models()
            .iter()
            .filter(|m| m.allows_user(who))
            .enumerate()
            .map(|(i, m)| ModelDto {
                id: m.id.clone(),
                provider: m.provider.as_str().into(),
                default: i == 0,
            })
            .collect()
    }

    /// A model `user` may use: `id`, or (none given) the default — the
    /// configured one when it is open to them, else the first that is.
    pub fn resolve_model(&self, user: &AuthUser, id: Option<&str>) -> ApiResult<String> {
        let who = requester(user);
        match id {
            None => self
                .models()
                .iter()
                .find(|m| m.allows_user(who))
                .map(|m| m.id.clone())
                .ok_or_else(|| ApiError::NotAllowed("no model is open to you".into())),
            Some(id) => match self.models().iter().find(|m| m.id == id) {
                Some(m) if m.allows_user(who) => Ok(m.id.clone()),
                Some(_) => Err(not_allowed("model", id)),
                None => Err(ApiError::Validation(format!(
                    "unknown model {id:?}; see GET /v1/models"
                ))),
            },
        }
    }

    /// `resolve_model` for an optional override: `None` stays `None`.
    pub fn model_override(&self, user: &AuthUser, id: Option<&str>) -> ApiResult<Option<String>> {
        id.map(|m| self.resolve_model(user, Some(m))).transpose()
    }

    /// An agent id (`agent`, or its alias `mode`) `user` may use; their default
    /// agent when none is given.
    pub fn resolve_agent(&self, user: &AuthUser, id: Option<&str>) -> ApiResult<String> {
        let who = requester(user);
        let agents = self.agents.read().expect("agent ids lock");
        match id {
            None => agents
                .default_for(who)
                .map(str::to_string)
                .ok_or_else(|| ApiError::NotAllowed("no agent is open to you".into())),
            Some(id) => match agents.allows(id, who) {
                Some(true) => Ok(id.to_string()),
                Some(false) => Err(not_allowed("agent", id)),
                None => Err(ApiError::Validation(format!(
                    "unknown agent {id:?}; see GET /v1/agents"
                ))),
            },
        }
    }

    /// `resolve_agent` for an optional override: `None` stays `None`.
    pub fn agent_override(&self, user: &AuthUser, id: Option<&str>) -> ApiResult<Option<String>> {
        id.map(|m| self.resolve_agent(user, Some(m))).transpose()
    }

    /// The agents `user` may choose now.
    pub fn agent_ids_for(&self, user: &AuthUser) -> Vec<String> {
        self.agents
            .read()
            .expect("agent ids lock")
            .ids_for(requester(user))
    }

    /// Whether some agent or model is limited to some users or roles (else
    /// every choice is open to everyone and nothing needs checking).
    fn any_restricted(&self) -> bool {
        self.models().iter().any(|m| m.is_restricted())
            || self.agents.read().expect("agent ids lock").any_restricted()
    }

    /// Before a run is made in `session` for `user`: the model and agent it
    /// will run with — `model`/`agent` when the request chose them (already
    /// checked), else the session's own, chosen earlier — must be open to
    /// `user`. The worker checks again when it runs (the lists may change).
    pub async fn check_session_choice(
        &self,
        user: &AuthUser,
        owner: &UserId,
        session: &SessionId,
        model: Option<&str>,
        agent: Option<&str>,
    ) -> ApiResult<()> {
        if !self.any_restricted() || (model.is_some() && agent.is_some()) {
            return Ok(());
        }
        let s = self.store.get_session(owner, session).await?;
        let who = requester(user);
        if model.is_none()
            && let Some(m) = self.models().iter().find(|m| m.id == s.model)
            && !m.allows_user(who)
        {
            return Err(ApiError::NotAllowed(format!(
                "this session's model {:?} is not open to you; choose another",
                s.model
            )));
        }
        if agent.is_none() {
            let agents = self.agents.read().expect("agent ids lock");
            let agent = agents.in_force(&s.agent);
            if agents.allows(agent, who) == Some(false) {
                return Err(ApiError::NotAllowed(format!(
                    "this session's agent {agent:?} is not open to you; choose another"
                )));
            }
        }
        Ok(())
    }
}
