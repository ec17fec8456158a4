//! Agents (ARCHITECTURE §8): everyone lists them, admins create, change and
//! delete them at run time; users keep their own instructions; a session's
//! owner previews the exact system prompt its model gets.
//!
//! Each gateway keeps the agent ids in memory ([`AgentIds`]) so that choosing
//! one for a session needs no query; it reloads them after its own writes and
//! every few seconds (another gateway's admin edit arrives within that).

use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, put};
use axum::{Json, Router};
use weft_shared::api::{AgentDto, AgentList, InstructionsDto, PutAgentRequest, SystemPromptDto};
use weft_shared::config::{AgentConfig, agents::valid_id};
use weft_shared::store::{AgentRecord, Store, StoreError, builtin_agents};

use crate::AppState;
use crate::auth::{Admin, Caller};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::sessions::parse_session_id;

/// The longest instructions (an agent's or a user's) accepted.
const MAX_INSTRUCTIONS: usize = 32_000;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/agents", get(list_agents))
        .route("/v1/admin/agents/{id}", put(put_agent).delete(delete_agent))
        .route(
            "/v1/me/instructions",
            get(get_instructions).put(put_instructions),
        )
        .route("/v1/sessions/{id}/system-prompt", get(system_prompt))
}

/// Agent ids known to this gateway, and the default.
#[derive(Debug, Clone)]
pub struct AgentIds {
    ids: Vec<String>,
    default: String,
}

impl AgentIds {
    /// Before the first load: what start-up seeding writes.
    pub fn seeded(configured: &[AgentConfig]) -> AgentIds {
        let all: Vec<AgentConfig> = builtin_agents()
            .into_iter()
            .chain(configured.iter().cloned())
            .collect();
        let default = configured
            .iter()
            .find(|a| a.default)
            .map_or_else(|| "agent".to_string(), |a| a.id.clone());
        AgentIds {
            ids: all.into_iter().map(|a| a.id).collect(),
            default,
        }
    }

    fn from_records(list: &[AgentRecord]) -> Option<AgentIds> {
        let default = list
            .iter()
            .find(|a| a.spec.default)
            .or_else(|| list.iter().find(|a| a.spec.id == "agent"))
            .or(list.first())?
            .spec
            .id
            .clone();
        Some(AgentIds {
            ids: list.iter().map(|a| a.spec.id.clone()).collect(),
            default,
        })
    }

    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    pub fn default_id(&self) -> &str {
        &self.default
    }

    pub fn contains(&self, id: &str) -> bool {
        self.ids.iter().any(|i| i == id)
    }
}

pub type SharedAgentIds = Arc<RwLock<AgentIds>>;

async fn reload(store: &Store, ids: &SharedAgentIds) {
    match store.list_agents().await {
        Ok(list) => {
            if let Some(fresh) = AgentIds::from_records(&list) {
                *ids.write().expect("agent ids lock") = fresh;
            }
        }
        Err(e) => tracing::warn!(error = %e, "reloading agents failed"),
    }
}

/// Keeps `ids` current until shutdown.
pub fn spawn_refresh(state: &AppState) {
    let (store, ids, stop) = (
        state.store.clone(),
        state.agents.clone(),
        state.shutdown.clone(),
    );
    tokio::spawn(async move {
        loop {
            reload(&store, &ids).await;
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs(5)) => {}
            }
        }
    });
}

fn to_dto(a: &AgentRecord) -> AgentDto {
    let s = &a.spec;
    AgentDto {
        id: s.id.clone(),
        name: s.name.clone(),
        description: s.description.clone(),
        model: s.model.clone(),
        instructions: s.instructions.clone(),
        tools: s.tools.clone(),
        tool_policies: s
            .tool_policies
            .iter()
            .map(|(k, v)| (k.clone(), policy_str(*v).to_string()))
            .collect(),
        skills: s.skills.clone(),
        max_steps: s.max_steps,
        default: s.default,
        origin: a.origin.as_str().into(),
    }
}

fn policy_str(p: weft_shared::config::ToolPolicy) -> &'static str {
    match p {
        weft_shared::config::ToolPolicy::Auto => "auto",
        weft_shared::config::ToolPolicy::Confirm => "confirm",
        weft_shared::config::ToolPolicy::Deny => "deny",
    }
}

/// The agents you can choose (`agent` on a session or message; `mode` is an
/// alias). Instructions are shown so people know what they pick.
#[utoipa::path(get, path = "/v1/agents", responses((status = 200, body = AgentList)))]
pub async fn list_agents(
    State(state): State<AppState>,
    _caller: Caller,
) -> ApiResult<Json<AgentList>> {
    let agents = state.store.list_agents().await?;
    Ok(Json(AgentList {
        agents: agents.iter().map(to_dto).collect(),
    }))
}

/// Create or replace an agent (admin). Applied to the next run of every session
/// that uses it, without a restart.
#[utoipa::path(put, path = "/v1/admin/agents/{id}", request_body = PutAgentRequest,
    responses((status = 200, body = AgentDto), (status = 403, body = weft_shared::api::ErrorEnvelope), (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn put_agent(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<PutAgentRequest>,
) -> ApiResult<Json<AgentDto>> {
    if !valid_id(&id) {
        return Err(ApiError::Validation(
            "an agent id is 1 to 32 of a-z, 0-9, - and _".into(),
        ));
    }
    if req.name.trim().is_empty() || req.name.chars().count() > 100 {
        return Err(ApiError::Validation(
            "name must be 1 to 100 characters".into(),
        ));
    }
    if req.instructions.chars().count() > MAX_INSTRUCTIONS || req.description.chars().count() > 1000
    {
        return Err(ApiError::Validation(format!(
            "instructions must be at most {MAX_INSTRUCTIONS} characters and the description at most 1000"
        )));
    }
    if let Some(model) = &req.model {
        state.resolve_model(Some(model))?;
    }
    if req.max_steps == Some(0) {
        return Err(ApiError::Validation("max_steps must be at least 1".into()));
    }
    let mut tool_policies = std::collections::BTreeMap::new();
    for (tool, p) in &req.tool_policies {
        let policy = match p.as_str() {
            "auto" => weft_shared::config::ToolPolicy::Auto,
            "confirm" => weft_shared::config::ToolPolicy::Confirm,
            "deny" => weft_shared::config::ToolPolicy::Deny,
            other => {
                return Err(ApiError::Validation(format!(
                    "tool_policies.{tool}: {other:?} is not auto, confirm or deny"
                )));
            }
        };
        tool_policies.insert(tool.clone(), policy);
    }
    let spec = AgentConfig {
        id,
        name: req.name.trim().to_string(),
        description: req.description,
        model: req.model,
        instructions: req.instructions,
        tools: req.tools,
        tool_policies,
        skills: req.skills,
        max_steps: req.max_steps,
        default: req.default,
    };
    let saved = state.store.put_agent(&spec).await?;
    reload(&state.store, &state.agents).await;
    Ok(Json(to_dto(&saved)))
}

/// Delete an agent (admin); sessions that used it continue with the default.
#[utoipa::path(delete, path = "/v1/admin/agents/{id}",
    responses((status = 204), (status = 404, body = weft_shared::api::ErrorEnvelope), (status = 409, body = weft_shared::api::ErrorEnvelope)))]
pub async fn delete_agent(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    match state.store.delete_agent(&id).await {
        Ok(true) => {}
        Ok(false) => return Err(ApiError::NotFound),
        Err(StoreError::Conflict(_)) => {
            return Err(ApiError::Conflict(
                "the built-in agent `agent` is the fallback and cannot be deleted".into(),
            ));
        }
        Err(e) => return Err(e.into()),
    }
    reload(&state.store, &state.agents).await;
    Ok(StatusCode::NO_CONTENT)
}

/// Your own instructions, added after every agent's.
#[utoipa::path(get, path = "/v1/me/instructions", responses((status = 200, body = InstructionsDto)))]
pub async fn get_instructions(
    State(state): State<AppState>,
    Caller(user): Caller,
) -> ApiResult<Json<InstructionsDto>> {
    Ok(Json(InstructionsDto {
        instructions: state.store.user_instructions(&user.id).await?,
    }))
}

#[utoipa::path(put, path = "/v1/me/instructions", request_body = InstructionsDto,
    responses((status = 200, body = InstructionsDto), (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn put_instructions(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiJson(req): ApiJson<InstructionsDto>,
) -> ApiResult<Json<InstructionsDto>> {
    if req.instructions.chars().count() > MAX_INSTRUCTIONS {
        return Err(ApiError::Validation(format!(
            "instructions must be at most {MAX_INSTRUCTIONS} characters"
        )));
    }
    state
        .store
        .set_user_instructions(&user.id, &req.instructions)
        .await?;
    Ok(Json(req))
}

/// Exactly the system prompt this session's model gets now (agent, your
/// instructions, skills, date).
#[utoipa::path(get, path = "/v1/sessions/{id}/system-prompt",
    responses((status = 200, body = SystemPromptDto), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn system_prompt(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<SystemPromptDto>> {
    let session = state
        .store
        .get_session(&user.id, &parse_session_id(&id)?)
        .await?;
    let agent = match state.store.get_agent(&session.mode).await {
        Ok(a) => a,
        Err(StoreError::NotFound) => state.store.default_agent().await?,
        Err(e) => return Err(e.into()),
    };
    let mine = state.store.user_instructions(&user.id).await?;
    let today = weft_shared::time::rfc3339(weft_shared::time::now_ms());
    let skills = state.store.skills(Some(&state.config.skills_dir())).await?;
    let lines = weft_shared::prompt::skill_lines(&skills, &agent.spec);
    let prompt = weft_shared::prompt::system_prompt(&agent.spec, &mine, &lines, &today[..10]);
    Ok(Json(SystemPromptDto {
        agent: agent.spec.id,
        system_prompt: prompt,
    }))
}

pub fn skills_router() -> Router<AppState> {
    Router::new().route("/v1/skills", get(list_skills)).route(
        "/v1/admin/skills/{name}",
        put(put_skill).delete(delete_skill),
    )
}

/// The skills agents may load (`skills_dir` folders and admins' uploads).
#[utoipa::path(get, path = "/v1/skills", responses((status = 200, body = weft_shared::api::SkillList)))]
pub async fn list_skills(
    State(state): State<AppState>,
    _caller: Caller,
) -> ApiResult<Json<weft_shared::api::SkillList>> {
    let skills = state.store.skills(Some(&state.config.skills_dir())).await?;
    Ok(Json(weft_shared::api::SkillList {
        skills: skills
            .into_iter()
            .map(|s| weft_shared::api::SkillDto {
                name: s.name,
                description: s.description,
                files: s.files.into_keys().collect(),
            })
            .collect(),
    }))
}

/// Upload (or replace) a skill (admin). The name in the URL must match the one
/// in its SKILL.md.
#[utoipa::path(put, path = "/v1/admin/skills/{name}", request_body = weft_shared::api::PutSkillRequest,
    responses((status = 204), (status = 403, body = weft_shared::api::ErrorEnvelope), (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn put_skill(
    State(state): State<AppState>,
    _admin: Admin,
    Path(name): Path<String>,
    ApiJson(req): ApiJson<weft_shared::api::PutSkillRequest>,
) -> ApiResult<StatusCode> {
    use weft_shared::skills::{MAX_FILE_BYTES, Skill, parse_skill_md};
    let too_big = |what: &str, n: usize| {
        (n > MAX_FILE_BYTES)
            .then(|| ApiError::Validation(format!("{what} is over {} KiB", MAX_FILE_BYTES >> 10)))
    };
    if let Some(e) = too_big("SKILL.md", req.skill_md.len()) {
        return Err(e);
    }
    if req.files.len() > 32 {
        return Err(ApiError::Validation("at most 32 files per skill".into()));
    }
    for (f, text) in &req.files {
        if f.is_empty() || f.len() > 128 || f.contains(['/', '\\']) || f == "SKILL.md" {
            return Err(ApiError::Validation(format!(
                "file name {f:?} is not allowed"
            )));
        }
        if let Some(e) = too_big(f, text.len()) {
            return Err(e);
        }
    }
    let (parsed, description, body) =
        parse_skill_md(&req.skill_md).map_err(ApiError::Validation)?;
    if parsed != name {
        return Err(ApiError::Validation(format!(
            "SKILL.md names the skill {parsed:?}, the URL {name:?}"
        )));
    }
    state
        .store
        .put_skill(&Skill {
            name,
            description,
            body,
            files: req.files,
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Delete an uploaded skill (admin); folders in `skills_dir` stay.
#[utoipa::path(delete, path = "/v1/admin/skills/{name}",
    responses((status = 204), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn delete_skill(
    State(state): State<AppState>,
    _admin: Admin,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    if state.store.delete_skill(&name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound)
    }
}
