//! Operational endpoints (health, readiness, metrics, OpenAPI) and catalogues
//! (models, modes).

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use weft_shared::api::{Health, ModeDto, ModeList, ModelList};

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/v1/models", get(models))
        .route("/v1/modes", get(modes))
        .route("/v1/mcp", get(mcp))
}

/// Liveness.
#[utoipa::path(get, path = "/health", responses((status = 200, body = Health)))]
pub async fn health() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        version: weft_shared::VERSION.into(),
    })
}

/// Readiness: the database, the queue and the bus answer.
#[utoipa::path(get, path = "/ready", responses((status = 200, body = Health), (status = 503, body = weft_shared::api::ErrorEnvelope)))]
pub async fn ready(State(state): State<AppState>) -> Response {
    let checks = tokio::time::timeout(std::time::Duration::from_secs(3), async {
        state
            .store
            .ping()
            .await
            .map_err(|e| format!("database: {e}"))?;
        state
            .queue
            .ping()
            .await
            .map_err(|e| format!("queue: {e}"))?;
        state.bus.ping().await.map_err(|e| format!("bus: {e}"))?;
        Ok::<(), String>(())
    })
    .await;
    match checks {
        Ok(Ok(())) => Json(Health {
            status: "ready".into(),
            version: weft_shared::VERSION.into(),
        })
        .into_response(),
        Ok(Err(what)) => {
            tracing::warn!(check = %what, "not ready");
            ApiError::Unavailable(
                what.split(':').next().unwrap_or("dependency").to_string() + " unreachable",
            )
            .into_response()
        }
        Err(_) => ApiError::Unavailable("readiness checks timed out".into()).into_response(),
    }
}

/// Prometheus metrics (routed by `crate::router`, which knows where they go).
pub async fn metrics(State(state): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

/// The models you can choose (the ones open to you: `allowed_users`,
/// `allowed_roles`), the one your new sessions get first and marked `default`.
#[utoipa::path(get, path = "/v1/models", responses((status = 200, body = ModelList)))]
pub async fn models(State(state): State<AppState>, Caller(user): Caller) -> Json<ModelList> {
    Json(ModelList {
        models: state.models_for(&user),
    })
}

/// The agents you can choose, as modes (the older name; see `GET /v1/agents`).
#[utoipa::path(get, path = "/v1/modes", responses((status = 200, body = ModeList)))]
pub async fn modes(
    State(state): State<AppState>,
    Caller(user): Caller,
) -> crate::error::ApiResult<Json<ModeList>> {
    let all = state.store.list_agents().await?;
    let agents = crate::agents::open_agents(&all, crate::access::requester(&user));
    Ok(Json(ModeList {
        modes: agents
            .into_iter()
            .map(|a| ModeDto {
                id: a.spec.id,
                description: a.spec.description,
                default: a.spec.default,
            })
            .collect(),
    }))
}

/// MCP servers: configured, and as each worker sees them (state, tools, last
/// error). Workers report every few seconds; silent ones are left out after a
/// minute.
#[utoipa::path(get, path = "/v1/mcp", responses((status = 200, body = weft_shared::api::McpStatusList), (status = 403, body = weft_shared::api::ErrorEnvelope)))]
pub async fn mcp(
    State(state): State<AppState>,
    _admin: crate::auth::Admin,
) -> crate::error::ApiResult<Json<weft_shared::api::McpStatusList>> {
    let since = weft_shared::time::now_ms() - 60_000;
    let workers = state
        .store
        .mcp_status(since)
        .await?
        .into_iter()
        .map(|(worker_id, json, at)| weft_shared::api::McpWorkerStatus {
            worker_id,
            updated_at: weft_shared::time::rfc3339(at),
            servers: serde_json::from_str(&json).unwrap_or_default(),
        })
        .collect();
    Ok(Json(weft_shared::api::McpStatusList {
        configured: state
            .config()
            .mcp_servers
            .iter()
            .map(|s| s.name.clone())
            .collect(),
        workers,
    }))
}
