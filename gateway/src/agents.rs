//! Agents (docs/agent.md, "Agents and instructions"): everyone lists them, admins
//! create, change and delete them at run time; users keep their own instructions; a
//! session's owner previews the exact system prompt its model gets.
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
use weft_config::{AgentConfig, Requester, agents::valid_id};
use weft_shared::api::{AgentDto, AgentList, InstructionsDto, PutAgentRequest, SystemPromptDto};
use weft_store::{AgentRecord, Store, StoreError, builtin_agents};

use crate::AppState;
use crate::auth::{Admin, Caller};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::sessions::parse_session_id;

/// The longest instructions (an agent's or a user's) accepted.
const MAX_INSTRUCTIONS: usize = 32_000;

/// What a non-admin's system-prompt preview shows instead of the agent's own
/// instructions.
const HIDDEN_INSTRUCTIONS: &str = "[The agent's instructions: shown to admins only.]";

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

/// The agents known to this gateway (ids and who may choose each), and the
/// default.
#[derive(Debug, Clone)]
pub struct AgentIds {
    agents: Vec<AgentChoice>,
    default: String,
}

/// An agent as choosing one needs it.
#[derive(Debug, Clone)]
struct AgentChoice {
    id: String,
    allowed_users: Vec<String>,
    allowed_roles: Vec<String>,
}

impl AgentChoice {
    fn of(a: &AgentConfig) -> AgentChoice {
        AgentChoice {
            id: a.id.clone(),
            allowed_users: a.allowed_users.clone(),
            allowed_roles: a.allowed_roles.clone(),
        }
    }

    fn allows(&self, who: Requester<'_>) -> bool {
        weft_config::access::allows(&self.allowed_users, &self.allowed_roles, who)
    }
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
            agents: all.iter().map(AgentChoice::of).collect(),
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
            agents: list.iter().map(|a| AgentChoice::of(&a.spec)).collect(),
            default,
        })
    }

    /// The agents `who` may choose, in list order.
    pub fn ids_for(&self, who: Requester<'_>) -> Vec<String> {
        self.agents
            .iter()
            .filter(|a| a.allows(who))
            .map(|a| a.id.clone())
            .collect()
    }

    /// The agent sessions of `who` get when they name none: the default when
    /// `who` may use it, else the first that `who` may.
    pub fn default_for(&self, who: Requester<'_>) -> Option<&str> {
        let default = self.agents.iter().find(|a| a.id == self.default);
        default
            .filter(|a| a.allows(who))
            .or_else(|| self.agents.iter().find(|a| a.allows(who)))
            .map(|a| a.id.as_str())
    }

    /// The agent a session naming `id` runs with: `id`, or the default when no
    /// such agent exists (any more).
    pub fn in_force<'a>(&'a self, id: &'a str) -> &'a str {
        if self.contains(id) { id } else { &self.default }
    }

    /// `None`: no such agent.
    pub fn allows(&self, id: &str, who: Requester<'_>) -> Option<bool> {
        self.agents
            .iter()
            .find(|a| a.id == id)
            .map(|a| a.allows(who))
    }

    pub fn contains(&self, id: &str) -> bool {
        self.agents.iter().any(|a| a.id == id)
    }

    /// Whether any agent is limited to some users or roles.
    pub fn any_restricted(&self) -> bool {
        self.agents
            .iter()
            .any(|a| weft_config::access::restricted(&a.allowed_users, &a.allowed_roles))
    }
}

pub type SharedAgentIds = Arc<RwLock<AgentIds>>;

pub(crate) async fn reload(store: &Store, ids: &SharedAgentIds) {
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

/// What the caller may see of an agent: admins everything, everyone else its
/// name, description, model and tools (never its instructions, tool policies or
/// who else may use it).
fn to_dto(a: &AgentRecord, admin: bool) -> AgentDto {
    let s = &a.spec;
    AgentDto {
        id: s.id.clone(),
        name: s.name.clone(),
        description: s.description.clone(),
        model: s.model.clone(),
        instructions: admin.then(|| s.instructions.clone()),
        tools: s.tools.clone(),
        tool_policies: admin.then(|| {
            s.tool_policies
                .iter()
                .map(|(k, v)| (k.clone(), policy_str(*v).to_string()))
                .collect()
        }),
        allowed_users: admin.then(|| s.allowed_users.clone()),
        allowed_roles: admin.then(|| s.allowed_roles.clone()),
        skills: s.skills.clone(),
        knowledge: s.knowledge.clone(),
        knowledge_mode: s.knowledge_mode,
        delegates: s.delegates.clone(),
        memory: s.memory,
        max_steps: s.max_steps,
        default: s.default,
        origin: a.origin.as_str().into(),
    }
}

fn policy_str(p: weft_config::ToolPolicy) -> &'static str {
    match p {
        weft_config::ToolPolicy::Auto => "auto",
        weft_config::ToolPolicy::Confirm => "confirm",
        weft_config::ToolPolicy::Deny => "deny",
    }
}

/// The agents you can choose (`agent` on a session or message; `mode` is an
/// alias): the ones open to you (`allowed_users`, `allowed_roles`), `default`
/// marking the one your new sessions get. Admins see every agent whole; others
/// see its name, description, model and tools, not its instructions.
#[utoipa::path(get, path = "/v1/agents", responses((status = 200, body = AgentList)))]
pub async fn list_agents(
    State(state): State<AppState>,
    Caller(user): Caller,
) -> ApiResult<Json<AgentList>> {
    let agents = state.store.list_agents().await?;
    let who = crate::access::requester(&user);
    let admin = who.admin;
    let mine = open_agents(&agents, who);
    Ok(Json(AgentList {
        agents: mine.iter().map(|a| to_dto(a, admin)).collect(),
    }))
}

/// The agents `who` may choose, the one their sessions get by default marked
/// `default` (the configured default, unless it is not open to them).
pub fn open_agents(all: &[AgentRecord], who: Requester<'_>) -> Vec<AgentRecord> {
    let mut mine: Vec<AgentRecord> = all
        .iter()
        .filter(|a| a.spec.allows_user(who))
        .cloned()
        .collect();
    let Some(ids) = AgentIds::from_records(all) else {
        return mine;
    };
    let default = ids.default_for(who).map(str::to_string);
    for a in &mut mine {
        a.spec.default = default.as_deref() == Some(a.spec.id.as_str());
    }
    mine
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
    if let Some(model) = &req.model
        && !state.models().iter().any(|m| &m.id == model)
    {
        return Err(ApiError::Validation(format!(
            "unknown model {model:?}; see GET /v1/models"
        )));
    }
    weft_config::access::validate("agent", &req.allowed_users, &req.allowed_roles)
        .map_err(ApiError::Validation)?;
    weft_config::agents::valid_knowledge(&req.knowledge).map_err(ApiError::Validation)?;
    weft_config::agents::valid_delegates(&req.delegates).map_err(ApiError::Validation)?;
    if req.max_steps == Some(0) {
        return Err(ApiError::Validation("max_steps must be at least 1".into()));
    }
    let mut tool_policies = std::collections::BTreeMap::new();
    for (tool, p) in &req.tool_policies {
        let policy = match p.as_str() {
            "auto" => weft_config::ToolPolicy::Auto,
            "confirm" => weft_config::ToolPolicy::Confirm,
            "deny" => weft_config::ToolPolicy::Deny,
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
        knowledge: req.knowledge,
        knowledge_mode: req.knowledge_mode,
        delegates: req.delegates,
        memory: req.memory,
        max_steps: req.max_steps,
        default: req.default,
        allowed_users: req.allowed_users,
        allowed_roles: req.allowed_roles,
    };
    let saved = state.store.put_agent(&spec).await?;
    reload(&state.store, &state.agents).await;
    Ok(Json(to_dto(&saved, true)))
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
/// instructions, skills, date, and what it remembers of you — pinned memories,
/// plus those related to `message` when given); for anyone but an admin the
/// agent's own instructions are left out (a line says so).
#[utoipa::path(get, path = "/v1/sessions/{id}/system-prompt", params(SystemPromptQuery),
    responses((status = 200, body = SystemPromptDto), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn system_prompt(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<SystemPromptQuery>,
) -> ApiResult<Json<SystemPromptDto>> {
    let session = state
        .store
        .get_session(&user.id, &parse_session_id(&id)?)
        .await?;
    let agent = match state.store.get_agent(&session.agent).await {
        Ok(a) => a,
        Err(StoreError::NotFound) => state.store.default_agent().await?,
        Err(e) => return Err(e.into()),
    };
    let mine = state.store.user_instructions(&user.id).await?;
    let today = weft_shared::time::rfc3339(weft_shared::time::now_ms());
    let skills = state
        .store
        .skills(Some(&state.config().skills_dir()))
        .await?;
    let lines = weft_shared::prompt::skill_lines(&skills, &agent.spec);
    let mut spec = agent.spec;
    if user.role != weft_store::Role::Admin {
        spec.instructions = HIDDEN_INSTRUCTIONS.into();
    }
    let mut prompt = weft_shared::prompt::system_prompt(&spec, &mine, &lines, &today[..10]);
    let memory = &state.config().memory;
    let mut memories = Vec::new();
    if memory.enabled && spec.memory && state.store.memory_enabled(&user.id).await? {
        let kept = state.store.memories(&user.id, None).await?;
        let turn = q.message.as_deref().unwrap_or_default();
        let chosen = weft_knowledge::recall::for_prompt(&kept, turn, memory.prompt_budget_tokens);
        if !chosen.is_empty() {
            prompt.push_str(&weft_knowledge::recall::prompt_section(&chosen));
        }
        memories = chosen.iter().map(|m| m.to_ref()).collect();
    }
    Ok(Json(SystemPromptDto {
        agent: spec.id,
        system_prompt: prompt,
        memories,
    }))
}

/// `GET /v1/sessions/{id}/system-prompt` options.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SystemPromptQuery {
    /// A message to preview the memories it would recall (none: only the
    /// pinned ones, which every turn gets).
    message: Option<String>,
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
    let skills = state
        .store
        .skills(Some(&state.config().skills_dir()))
        .await?;
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
