//! `/v1/schedules` (docs/schedules.md): a person's schedules, their fires, and
//! "run now". Firing itself is the workers' (`worker/src/scheduler.rs`); this
//! checks what a person asks for — a bad cron, timezone or interval is a 422
//! naming its field, someone else's schedule a 404 — and stores it.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use weft_shared::api::{
    CreateScheduleRequest, FireDto, FireList, Misfire, Overlap, PreviewRequest, PreviewResponse,
    ScheduleDto, ScheduleList, ScheduleTarget, SetTimezoneRequest, TimezoneDto, Trigger,
    UpdateScheduleRequest,
};
use weft_shared::ids::SessionId;
use weft_shared::schedule_time::Timing;
use weft_shared::time::{now_ms, rfc3339};
use weft_store::{
    AuthUser, DeliveryRecord, FireRecord, NewSchedule, ScheduleRecord, ScheduleUpdate, auto_title,
};

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery, page_limit};
use crate::sessions::model_for;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/schedules", get(list_schedules).post(create_schedule))
        .route("/v1/schedules/preview", post(preview_schedule))
        .route(
            "/v1/schedules/{id}",
            get(get_schedule)
                .patch(update_schedule)
                .delete(delete_schedule),
        )
        .route("/v1/schedules/{id}/run", post(run_schedule))
        .route("/v1/schedules/{id}/fires", get(schedule_fires))
        .route("/v1/me/timezone", get(get_timezone).put(set_timezone))
}

/// The timezone a schedule of `user`'s made without one takes: theirs, else
/// the server's (`schedules.default_timezone`).
async fn owner_timezone(state: &AppState, user: &AuthUser) -> ApiResult<String> {
    Ok(match state.store.user_timezone(&user.id).await? {
        Some(tz) => tz,
        None => state.config().schedules.default_timezone.clone(),
    })
}

/// The caller's timezone: the default of the schedules they make.
#[utoipa::path(get, path = "/v1/me/timezone", responses((status = 200, body = TimezoneDto)))]
pub async fn get_timezone(
    State(state): State<AppState>,
    Caller(user): Caller,
) -> ApiResult<Json<TimezoneDto>> {
    Ok(Json(TimezoneDto {
        timezone: state.store.user_timezone(&user.id).await?,
        effective: owner_timezone(&state, &user).await?,
    }))
}

/// Set the caller's timezone (IANA), or clear it (`null`) to take the
/// server's. 422 `timezone` for a name that is not IANA. Schedules made
/// before keep theirs.
#[utoipa::path(put, path = "/v1/me/timezone", request_body = SetTimezoneRequest,
    responses((status = 200, body = TimezoneDto), (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn set_timezone(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiJson(req): ApiJson<SetTimezoneRequest>,
) -> ApiResult<Json<TimezoneDto>> {
    let tz = req
        .timezone
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    if let Some(tz) = tz {
        weft_shared::schedule_time::parse_timezone(tz)
            .map_err(|e| ApiError::Validation(e.to_string()))?;
    }
    state.store.set_user_timezone(&user.id, tz).await?;
    Ok(Json(TimezoneDto {
        timezone: tz.map(str::to_string),
        effective: owner_timezone(&state, &user).await?,
    }))
}

/// Names: at most 200 characters.
const MAX_NAME_CHARS: usize = 200;

/// The caller's schedules, oldest first, each with its newest fire.
#[utoipa::path(get, path = "/v1/schedules", responses((status = 200, body = ScheduleList)))]
pub async fn list_schedules(
    State(state): State<AppState>,
    Caller(user): Caller,
) -> ApiResult<Json<ScheduleList>> {
    let schedules = state.store.list_schedules(&user.id).await?;
    Ok(Json(ScheduleList {
        schedules: schedules.iter().map(to_dto).collect(),
    }))
}

/// Make a schedule. 422 names the field that is wrong (`trigger.cron`,
/// `trigger.every_secs`, `trigger.at`, `timezone`, `target.session`, `prompt`,
/// `deliver`: a channel that is not the caller's).
#[utoipa::path(post, path = "/v1/schedules", request_body = CreateScheduleRequest,
    responses((status = 201, body = ScheduleDto), (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn create_schedule(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiJson(req): ApiJson<CreateScheduleRequest>,
) -> ApiResult<(StatusCode, Json<ScheduleDto>)> {
    let config = state.config();
    state
        .runs
        .check_text(&req.prompt, false)
        .map_err(|r| field("prompt", r))?;
    let timezone = match req.timezone.clone().filter(|t| !t.trim().is_empty()) {
        Some(tz) => tz,
        None => owner_timezone(&state, &user).await?,
    };
    check_timing(&req.trigger, &timezone)?;
    let name = match req.name.as_deref().map(str::trim) {
        Some(n) if !n.is_empty() => check_name(n)?,
        _ => auto_title(&req.prompt),
    };
    let agent = state.resolve_agent(&user, req.agent.as_deref())?;
    let model = model_for(&state, &user, &agent, None).await?;
    let session_id = target_session(&state, &user, req.target.as_ref()).await?;
    let record = state
        .store
        .create_schedule(
            &NewSchedule {
                user_id: user.id.clone(),
                name,
                agent,
                model,
                prompt: req.prompt,
                trigger: req.trigger,
                timezone: timezone.trim().to_string(),
                enabled: req.enabled.unwrap_or(true),
                session_id,
                misfire: req.misfire.unwrap_or(Misfire::RunOnce),
                overlap: req.overlap.unwrap_or(Overlap::Skip),
                deliver: req.deliver.unwrap_or_default(),
            },
            config.schedules.max_per_user,
        )
        .await?;
    Ok((StatusCode::CREATED, Json(to_dto(&record))))
}

#[utoipa::path(get, path = "/v1/schedules/{id}",
    responses((status = 200, body = ScheduleDto), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn get_schedule(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<ScheduleDto>> {
    Ok(Json(to_dto(
        &state.store.get_schedule(&user.id, &id).await?,
    )))
}

/// Change a schedule: rename, pause (`enabled: false`), resume, retime, retarget.
#[utoipa::path(patch, path = "/v1/schedules/{id}", request_body = UpdateScheduleRequest,
    responses((status = 200, body = ScheduleDto), (status = 404, body = weft_shared::api::ErrorEnvelope),
        (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn update_schedule(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<UpdateScheduleRequest>,
) -> ApiResult<Json<ScheduleDto>> {
    let current = state.store.get_schedule(&user.id, &id).await?;
    if let Some(p) = &req.prompt {
        state
            .runs
            .check_text(p, false)
            .map_err(|r| field("prompt", r))?;
    }
    let trigger = req.trigger.as_ref().unwrap_or(&current.trigger);
    let timezone = req.timezone.as_deref().unwrap_or(&current.timezone);
    if req.trigger.is_some() || req.timezone.is_some() {
        check_timing(trigger, timezone)?;
    }
    let name = match req.name.as_deref().map(str::trim) {
        Some("") => return Err(ApiError::Validation("name: must not be empty".into())),
        Some(n) => Some(check_name(n)?),
        None => None,
    };
    let (agent, model) = match &req.agent {
        Some(a) => {
            let agent = state.resolve_agent(&user, Some(a))?;
            let model = model_for(&state, &user, &agent, None).await?;
            (Some(agent), Some(model))
        }
        None => (None, None),
    };
    let session_id = match &req.target {
        Some(t) => Some(target_session(&state, &user, Some(t)).await?),
        None => None,
    };
    let record = state
        .store
        .update_schedule(
            &user.id,
            &id,
            &ScheduleUpdate {
                name,
                agent,
                model,
                prompt: req.prompt,
                trigger: req.trigger,
                timezone: req.timezone.map(|t| t.trim().to_string()),
                enabled: req.enabled,
                session_id,
                misfire: req.misfire,
                overlap: req.overlap,
                deliver: req.deliver,
            },
        )
        .await?;
    Ok(Json(to_dto(&record)))
}

/// Delete a schedule and its history; the runs it made and their sessions stay.
#[utoipa::path(delete, path = "/v1/schedules/{id}",
    responses((status = 204), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn delete_schedule(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    state.store.delete_schedule(&user.id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// "Run now": one fire outside the trigger (its times stay as they are). The
/// overlap rule applies as to any fire; the answer is the fire, with its run.
#[utoipa::path(post, path = "/v1/schedules/{id}/run",
    responses((status = 201, body = FireDto), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn run_schedule(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<FireDto>)> {
    let fired = state.runs.fire_now(&user.id, &id).await?;
    let fire = state
        .store
        .schedule_fires(&user.id, &id, 20)
        .await?
        .into_iter()
        .find(|f| f.fire_at == fired.fire_at)
        .ok_or(ApiError::NotFound)?;
    Ok((StatusCode::CREATED, Json(fire_dto(&fire, &[]))))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FiresQuery {
    /// 1–200 (default 50).
    pub limit: Option<i64>,
}

/// A schedule's fires, newest first: when each was due and claimed, how it
/// went, and its run.
#[utoipa::path(get, path = "/v1/schedules/{id}/fires", params(FiresQuery),
    responses((status = 200, body = FireList), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn schedule_fires(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<FiresQuery>,
) -> ApiResult<Json<FireList>> {
    let limit = page_limit(q.limit, 50, 200)?;
    let fires = state.store.schedule_fires(&user.id, &id, limit).await?;
    let runs: Vec<String> = fires
        .iter()
        .filter_map(|f| f.run_id.as_ref().map(|r| r.0.clone()))
        .collect();
    let deliveries = state.store.run_deliveries(&runs).await?;
    Ok(Json(FireList {
        fires: fires.iter().map(|f| fire_dto(f, &deliveries)).collect(),
    }))
}

/// A trigger's next fire times in a timezone (the form's preview).
#[utoipa::path(post, path = "/v1/schedules/preview", request_body = PreviewRequest,
    responses((status = 200, body = PreviewResponse), (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn preview_schedule(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiJson(req): ApiJson<PreviewRequest>,
) -> ApiResult<Json<PreviewResponse>> {
    let timezone = match req.timezone.filter(|t| !t.trim().is_empty()) {
        Some(tz) => tz,
        None => owner_timezone(&state, &user).await?,
    };
    let count = req.count.unwrap_or(5);
    if !(1..=20).contains(&count) {
        return Err(ApiError::Validation(
            "count: must be between 1 and 20".into(),
        ));
    }
    let now = now_ms();
    let timing = check_timing(&req.trigger, &timezone)?;
    let mut next = Vec::new();
    let mut after = now;
    while next.len() < count as usize {
        let Some(t) = timing.next_after(after) else {
            break;
        };
        next.push(timing.local(t));
        after = t;
    }
    Ok(Json(PreviewResponse {
        timezone: timezone.trim().to_string(),
        describe: timing.describe(),
        next,
    }))
}

/// The trigger in its timezone, or a 422 naming the field; an `at` must be ahead.
fn check_timing(trigger: &Trigger, timezone: &str) -> ApiResult<Timing> {
    let now = now_ms();
    let timing =
        Timing::new(trigger, timezone, now).map_err(|e| ApiError::Validation(e.to_string()))?;
    if matches!(trigger, Trigger::At(_)) && timing.next_after(now).is_none() {
        return Err(ApiError::Validation("trigger.at: is in the past".into()));
    }
    Ok(timing)
}

fn check_name(name: &str) -> ApiResult<String> {
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ApiError::Validation(format!(
            "name: must be at most {MAX_NAME_CHARS} characters"
        )));
    }
    Ok(name.to_string())
}

/// A refusal of the run service about one field, as a 422 naming it.
fn field(name: &str, refusal: weft_runs::Refusal) -> ApiError {
    ApiError::Validation(format!("{name}: {refusal}"))
}

/// The session a target names, checked to be the caller's (422 otherwise).
async fn target_session(
    state: &AppState,
    user: &AuthUser,
    target: Option<&ScheduleTarget>,
) -> ApiResult<Option<SessionId>> {
    let Some(ScheduleTarget::Session(id)) = target else {
        return Ok(None);
    };
    let missing = || ApiError::Validation(format!("target.session: no session {id:?} of yours"));
    let session = SessionId::parse(id).ok_or_else(missing)?;
    state
        .store
        .get_session(&user.id, &session)
        .await
        .map_err(|_| missing())?;
    Ok(Some(session))
}

pub fn to_dto(s: &ScheduleRecord) -> ScheduleDto {
    let timing = s.timing().ok();
    let local = |ms: i64| {
        timing
            .as_ref()
            .map(|t| t.local(ms))
            .unwrap_or_else(|| rfc3339(ms))
    };
    ScheduleDto {
        id: s.id.clone(),
        name: s.name.clone(),
        agent: s.agent.clone(),
        prompt: s.prompt.clone(),
        trigger: s.trigger.clone(),
        timezone: s.timezone.clone(),
        enabled: s.enabled,
        target: match &s.session_id {
            Some(id) => ScheduleTarget::Session(id.0.clone()),
            None => ScheduleTarget::NewSession,
        },
        misfire: s.misfire,
        overlap: s.overlap,
        deliver: s.deliver.clone(),
        next_fire_at: s.next_fire_at.map(local),
        describe: timing.as_ref().map(Timing::describe).unwrap_or_default(),
        last_fire: s.last_fire.as_ref().map(|f| fire_dto(f, &[])),
        created_at: rfc3339(s.created_at),
        updated_at: rfc3339(s.updated_at),
    }
}

/// A fire with the deliveries of its run's notifications (from `deliveries`).
fn fire_dto(f: &FireRecord, deliveries: &[DeliveryRecord]) -> FireDto {
    let run = f.run_id.as_ref().map(|r| r.0.as_str());
    FireDto {
        fire_at: rfc3339(f.fire_at),
        fired_at: rfc3339(f.fired_at),
        outcome: f.outcome,
        manual: f.manual,
        run_id: f.run_id.as_ref().map(|r| r.0.clone()),
        session_id: f.session_id.as_ref().map(|s| s.0.clone()),
        run_status: f.run_status,
        detail: f.detail.clone(),
        deliveries: deliveries
            .iter()
            .filter(|d| run.is_some() && d.run_id.as_deref() == run)
            .map(crate::channels::delivery_dto)
            .collect(),
    }
}
