//! `/v1/channels` (docs/schedules.md "Channels"): where a person's
//! notifications go besides the inbox, each checked when it is made — a
//! webhook URL the SSRF guard refuses, a Lark chat the person is not in, an
//! email channel on a server without SMTP are 422s naming the field — and a
//! test message through the same outbox as every delivery. Delivering is the
//! workers' (`worker/src/jobs/deliver.rs`).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use weft_shared::api::{
    ChannelDto, ChannelList, ChannelTarget, CreateChannelRequest, DeliveryDto, DeliveryList,
    UpdateChannelRequest,
};
use weft_shared::time::rfc3339;
use weft_store::{AuthUser, ChannelRecord, DeliveryRecord};
use weft_tools::web::{Guard, SystemResolver};

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery, page_limit};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/channels", get(list_channels).post(create_channel))
        .route(
            "/v1/channels/{id}",
            get(get_channel)
                .patch(update_channel)
                .delete(delete_channel),
        )
        .route("/v1/channels/{id}/test", post(test_channel))
        .route("/v1/channels/{id}/deliveries", get(channel_deliveries))
}

const MAX_NAME_CHARS: usize = 100;
/// A webhook secret given by the person: long enough to sign with.
const SECRET_CHARS: std::ops::RangeInclusive<usize> = 16..=256;

/// The caller's channels, oldest first, each with its newest delivery.
#[utoipa::path(get, path = "/v1/channels", responses((status = 200, body = ChannelList)))]
pub async fn list_channels(
    State(state): State<AppState>,
    Caller(user): Caller,
) -> ApiResult<Json<ChannelList>> {
    let channels = state.store.list_channels(&user.id).await?;
    Ok(Json(ChannelList {
        channels: channels.iter().map(|c| to_dto(c, false)).collect(),
    }))
}

/// Make a channel. A webhook without a `secret` gets one (`whsec_…`),
/// returned this once. 422 names the field: `name`, `target.url` (refused by
/// the SSRF guard), `target.secret`, `target.chat_id` (a chat where the caller
/// has not talked to the bot, or no Lark account for a DM), `target.to`,
/// `target` (Lark or email not set up on this server).
#[utoipa::path(post, path = "/v1/channels", request_body = CreateChannelRequest,
    responses((status = 201, body = ChannelDto), (status = 409, body = weft_shared::api::ErrorEnvelope),
        (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn create_channel(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiJson(req): ApiJson<CreateChannelRequest>,
) -> ApiResult<(StatusCode, Json<ChannelDto>)> {
    let name = check_name(&req.name)?;
    let target = check_target(&state, &user, req.target).await?;
    let target = match target {
        ChannelTarget::Webhook { url, secret: None } => ChannelTarget::Webhook {
            url,
            secret: Some(new_secret()),
        },
        t => t,
    };
    let max = state.config().schedules.max_channels_per_user;
    let record = state
        .store
        .create_channel(&user.id, &name, &target, req.waits, max)
        .await?;
    Ok((StatusCode::CREATED, Json(to_dto(&record, true))))
}

#[utoipa::path(get, path = "/v1/channels/{id}",
    responses((status = 200, body = ChannelDto), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn get_channel(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<ChannelDto>> {
    Ok(Json(to_dto(
        &state.store.get_channel(&user.id, &id).await?,
        false,
    )))
}

/// Rename a channel or give it a new target (checked as on create). A new
/// webhook target without a `secret` keeps the old one (a channel that was not
/// a webhook gets a generated one); a new secret is shown in the answer.
#[utoipa::path(patch, path = "/v1/channels/{id}", request_body = UpdateChannelRequest,
    responses((status = 200, body = ChannelDto), (status = 404, body = weft_shared::api::ErrorEnvelope),
        (status = 409, body = weft_shared::api::ErrorEnvelope), (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn update_channel(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<UpdateChannelRequest>,
) -> ApiResult<Json<ChannelDto>> {
    let current = state.store.get_channel(&user.id, &id).await?;
    let name = req.name.as_deref().map(check_name).transpose()?;
    let target = match req.target {
        Some(t) => Some(check_target(&state, &user, t).await?),
        None => None,
    };
    // A channel that becomes a webhook without a secret gets one, as on create.
    let target = match target {
        Some(ChannelTarget::Webhook { url, secret: None })
            if !matches!(current.target, ChannelTarget::Webhook { .. }) =>
        {
            Some(ChannelTarget::Webhook {
                url,
                secret: Some(new_secret()),
            })
        }
        t => t,
    };
    let new_secret = matches!(
        target,
        Some(ChannelTarget::Webhook {
            secret: Some(_),
            ..
        })
    );
    let record = state
        .store
        .update_channel(&user.id, &id, name.as_deref(), target.as_ref(), req.waits)
        .await?;
    Ok(Json(to_dto(&record, new_secret)))
}

/// Delete a channel: schedules stop delivering to it; its history stays.
#[utoipa::path(delete, path = "/v1/channels/{id}",
    responses((status = 204), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn delete_channel(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    state.store.delete_channel(&user.id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Send a test message to the channel through the outbox. The answer is its
/// delivery, pending; `GET …/deliveries` (or the channel's `last_delivery`)
/// shows how it went.
#[utoipa::path(post, path = "/v1/channels/{id}/test",
    responses((status = 202, body = DeliveryDto), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn test_channel(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<DeliveryDto>)> {
    let delivery = state.store.test_channel(&user.id, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(delivery_dto(&delivery))))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    /// 1–200 (default 50).
    pub limit: Option<i64>,
}

/// A channel's deliveries, newest first: what, how it went, the last error.
#[utoipa::path(get, path = "/v1/channels/{id}/deliveries", params(DeliveriesQuery),
    responses((status = 200, body = DeliveryList), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn channel_deliveries(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<DeliveriesQuery>,
) -> ApiResult<Json<DeliveryList>> {
    let limit = page_limit(q.limit, 50, 200)?;
    let list = state.store.channel_deliveries(&user.id, &id, limit).await?;
    Ok(Json(DeliveryList {
        deliveries: list.iter().map(delivery_dto).collect(),
    }))
}

fn check_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::Validation("name: must not be empty".into()));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ApiError::Validation(format!(
            "name: must be at most {MAX_NAME_CHARS} characters"
        )));
    }
    Ok(name.to_string())
}

/// The target as it will be stored, or a 422 naming what is wrong.
async fn check_target(
    state: &AppState,
    user: &AuthUser,
    target: ChannelTarget,
) -> ApiResult<ChannelTarget> {
    let config = state.config();
    let invalid = |m: String| Err(ApiError::Validation(m));
    match target {
        ChannelTarget::Lark { chat_id } => {
            if !config.lark.enabled() {
                return invalid("target: Lark is not set up on this server ([lark] app_id)".into());
            }
            match chat_id.as_deref().map(str::trim) {
                Some(chat) => {
                    let well_formed = !chat.is_empty()
                        && chat.len() <= 128
                        && chat
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                    if !well_formed {
                        return invalid(format!(
                            "target.chat_id: {chat:?} is not a Lark chat id (oc_…)"
                        ));
                    }
                    if !state.store.lark_chat_has_user(&user.id, chat).await? {
                        return invalid(format!(
                            "target.chat_id: you have not talked to the bot in chat {chat}; a channel may only post where you are"
                        ));
                    }
                    Ok(ChannelTarget::Lark {
                        chat_id: Some(chat.to_string()),
                    })
                }
                None => {
                    if state.store.lark_open_id(&user.id).await?.is_none() {
                        return invalid(
                            "target.chat_id: your account is not linked to a Lark user, so there is no one to send a direct message to; give the chat id of a group where you talk to the bot, or ask an admin to link your account (weft admin user link-lark)".into(),
                        );
                    }
                    Ok(ChannelTarget::Lark { chat_id: None })
                }
            }
        }
        ChannelTarget::Webhook { url, secret } => {
            let url = Guard::new(&config.tools.web_fetch, Arc::new(SystemResolver))
                .vet(&url)
                .await
                .map_err(|why| ApiError::Validation(format!("target.url: {why}")))?;
            if let Some(s) = &secret
                && !SECRET_CHARS.contains(&s.chars().count())
            {
                return invalid(format!(
                    "target.secret: must be {} to {} characters (leave it out to get one)",
                    SECRET_CHARS.start(),
                    SECRET_CHARS.end()
                ));
            }
            Ok(ChannelTarget::Webhook {
                url: url.to_string(),
                secret,
            })
        }
        ChannelTarget::Email { to } => {
            if !config.email.enabled() {
                return invalid(
                    "target: email is not set up on this server (an admin sets [email] smtp_url)"
                        .into(),
                );
            }
            let to = to.trim().to_string();
            if !looks_like_address(&to) {
                return invalid(format!("target.to: {to:?} is not an email address"));
            }
            Ok(ChannelTarget::Email { to })
        }
    }
}

/// `local@domain`, one `@`, no spaces or angle brackets, at most 254 bytes
/// (the SMTP server has the last word; a refusal there fails the delivery).
fn looks_like_address(a: &str) -> bool {
    let Some((local, domain)) = a.split_once('@') else {
        return false;
    };
    a.len() <= 254
        && !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !a[local.len() + 1..].contains('@')
        && !a
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "<>,;\"".contains(c))
}

/// A webhook secret: 128 random bits.
fn new_secret() -> String {
    format!("whsec_{}", uuid::Uuid::new_v4().simple())
}

/// `whsec_…3f9a`: enough to recognise a secret, not to use it.
fn secret_hint(secret: &str) -> String {
    let tail: String = secret
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let head: String = secret.chars().take_while(|c| *c != '_').collect();
    match secret.contains('_') {
        true => format!("{head}_…{tail}"),
        false => format!("…{tail}"),
    }
}

/// A channel as its owner sees it; a webhook's secret only when `show_secret`.
fn to_dto(c: &ChannelRecord, show_secret: bool) -> ChannelDto {
    let (target, hint) = match &c.target {
        ChannelTarget::Webhook { url, secret } => (
            ChannelTarget::Webhook {
                url: url.clone(),
                secret: secret.clone().filter(|_| show_secret),
            },
            secret.as_deref().map(secret_hint),
        ),
        other => (other.clone(), None),
    };
    ChannelDto {
        id: c.id.clone(),
        name: c.name.clone(),
        target,
        secret_hint: hint,
        waits: c.waits,
        schedules: c.schedules,
        last_delivery: c.last_delivery.as_ref().map(delivery_dto),
        created_at: rfc3339(c.created_at),
        updated_at: rfc3339(c.updated_at),
    }
}

pub fn delivery_dto(d: &DeliveryRecord) -> DeliveryDto {
    DeliveryDto {
        id: d.id.clone(),
        channel_id: d.channel_id.clone(),
        channel_name: d.channel_name.clone(),
        channel_kind: d.channel_kind,
        notification_kind: d.notification_kind,
        status: d.status,
        attempts: d.attempts,
        error: d.error.clone(),
        run_id: d.run_id.clone(),
        created_at: rfc3339(d.created_at),
        delivered_at: d.delivered_at.map(rfc3339),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_hints() {
        for ok in ["a@example.com", "first.last+tag@mail.example.org"] {
            assert!(looks_like_address(ok), "{ok}");
        }
        for bad in [
            "",
            "a",
            "@example.com",
            "a@",
            "a@b",
            "a@@example.com",
            "a b@example.com",
            "a@example.com, b@example.com",
            "<a@example.com>",
            "a@.example.com",
        ] {
            assert!(!looks_like_address(bad), "{bad}");
        }
        assert_eq!(secret_hint("whsec_0123456789abcdef"), "whsec_…cdef");
        assert_eq!(secret_hint("my-own-long-secret"), "…cret");
        let s = new_secret();
        assert!(s.starts_with("whsec_") && s.len() == 38, "{s}");
    }
}
