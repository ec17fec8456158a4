//! The gateway's one error type. Every failure leaves as
//! `{"error":{"code","message"}}` with a fitting status; internal errors answer a
//! bare 500 and are logged once, here, with their cause (never in handlers).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use weft_shared::api::{ErrorBody, ErrorEnvelope};
use weft_store::{Conflict, OverLimit, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    InvalidRequest(String),
    #[error("authentication required")]
    Unauthorized,
    #[error("admin only")]
    Forbidden,
    /// An agent or model the caller may not use (403 `forbidden`, saying which).
    #[error("{0}")]
    NotAllowed(String),
    #[error("not found")]
    NotFound,
    /// The path exists, not with this method (axum adds `Allow`).
    #[error("{0} is not allowed here")]
    MethodNotAllowed(String),
    #[error("{0}")]
    RunActive(String),
    #[error("events of this run have expired; read the session's messages instead")]
    EventsExpired,
    #[error("{0}")]
    PayloadTooLarge(String),
    /// The request body did not arrive within `http.body_timeout_ms`.
    #[error("the request body did not arrive in time")]
    RequestTimeout,
    #[error("{0}")]
    Validation(String),
    #[error("{message}")]
    RateLimited {
        message: String,
        retry_after_secs: u64,
    },
    #[error("{0}")]
    Unavailable(String),
    /// Too busy for this request right now (503 `unavailable` + `Retry-After`).
    #[error("{message}")]
    Overloaded {
        message: String,
        retry_after_secs: u64,
    },
    #[error("{0}")]
    Conflict(String),
    /// A 409 with its own code (`already_decided`, `expired`, `run_ended`).
    #[error("{message}")]
    ConflictWith { code: &'static str, message: String },
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::InvalidRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden | ApiError::NotAllowed(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::RunActive(_) | ApiError::Conflict(_) | ApiError::ConflictWith { .. } => {
                StatusCode::CONFLICT
            }
            ApiError::EventsExpired => StatusCode::GONE,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::Validation(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable(_) | ApiError::Overloaded { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidRequest(_) => "invalid_request",
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden | ApiError::NotAllowed(_) => "forbidden",
            ApiError::NotFound => "not_found",
            ApiError::MethodNotAllowed(_) => "method_not_allowed",
            ApiError::RunActive(_) => "run_active",
            ApiError::EventsExpired => "events_expired",
            ApiError::PayloadTooLarge(_) => "payload_too_large",
            ApiError::RequestTimeout => "request_timeout",
            ApiError::Validation(_) => "validation_failed",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::Unavailable(_) | ApiError::Overloaded { .. } => "unavailable",
            ApiError::Conflict(_) => "conflict",
            ApiError::ConflictWith { code, .. } => code,
            ApiError::Internal(_) => "internal",
        }
    }

    pub fn internal(e: impl Into<anyhow::Error>) -> ApiError {
        ApiError::Internal(e.into())
    }

    /// Seconds for `Retry-After`, where the client should come back.
    fn retry_after_secs(&self) -> Option<u64> {
        match self {
            ApiError::RateLimited {
                retry_after_secs, ..
            }
            | ApiError::Overloaded {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            _ => None,
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => ApiError::NotFound,
            StoreError::Forbidden => ApiError::Forbidden,
            StoreError::Conflict(Conflict::UsernameTaken) => {
                ApiError::Conflict("that username is taken".into())
            }
            StoreError::Conflict(Conflict::RunActive) => {
                ApiError::RunActive("the session already has an active run".into())
            }
            StoreError::Conflict(Conflict::ChannelNameTaken) => {
                ApiError::Conflict("name: you have a channel of that name".into())
            }
            StoreError::Conflict(what) => ApiError::Conflict(what.as_str().replace('_', " ")),
            StoreError::Invalid(why) => ApiError::Validation(why),
            StoreError::OverLimit(over) => over.into(),
            other => ApiError::Internal(other.into()),
        }
    }
}

/// A limit a write would pass, as the 413 that names it.
impl From<OverLimit> for ApiError {
    fn from(over: OverLimit) -> Self {
        use weft_shared::memory_room::human_size as mib;
        ApiError::PayloadTooLarge(match over {
            OverLimit::Documents { held, limit } => format!(
                "knowledge.max_documents_per_base: the base holds {held} of its {limit} documents"
            ),
            OverLimit::Storage {
                used,
                adding,
                limit,
            } => format!(
                "limits.storage_bytes_per_user: the files of this base's owner take {} of their {}, and these documents need {} more; delete documents or sessions to free space",
                mib(used),
                mib(limit),
                mib(adding)
            ),
            OverLimit::Memories { held, limit } => format!(
                "memory.max_per_user: {held} of {limit} memories are kept; forget some first"
            ),
            OverLimit::Schedules { held, limit } => format!(
                "schedules.max_per_user: you have {held} of {limit} schedules; delete one first"
            ),
            OverLimit::Channels { held, limit } => format!(
                "schedules.max_channels_per_user: you have {held} of {limit} channels; delete one first"
            ),
        })
    }
}

/// The run service's refusals, as the API states them (only the gateway knows
/// HTTP status codes).
impl From<weft_runs::Refusal> for ApiError {
    fn from(r: weft_runs::Refusal) -> Self {
        use weft_runs::Refusal;
        let message = r.to_string();
        let retry_after_secs = r.retry_after_secs();
        match r {
            Refusal::Invalid(_) => ApiError::Validation(message),
            Refusal::TooLong { .. } | Refusal::OverStorage { .. } => {
                ApiError::PayloadTooLarge(message)
            }
            Refusal::RunActive { .. } => ApiError::RunActive(message),
            Refusal::TooManyActive { .. }
            | Refusal::RateLimited { .. }
            | Refusal::QueueFull { .. } => ApiError::RateLimited {
                message,
                retry_after_secs: retry_after_secs.unwrap_or(5),
            },
            Refusal::Store(e) => e.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let message = match &self {
            ApiError::Internal(cause) => {
                tracing::error!(error = ?cause, "internal error");
                "internal error".to_string()
            }
            other => other.to_string(),
        };
        let body = ErrorEnvelope {
            error: ErrorBody {
                code: self.code().into(),
                message,
            },
        };
        let mut resp = (status, axum::Json(body)).into_response();
        if let Some(secs) = self.retry_after_secs() {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use weft_runs::Refusal;
    use weft_shared::ids::RunId;
    use weft_store::{Conflict, StorageUse, StoreError};

    use super::*;

    /// What a client sees of an error: status, `error.code`, `Retry-After`, and
    /// the message.
    async fn seen(e: ApiError) -> (u16, String, Option<String>, String) {
        let resp = e.into_response();
        let status = resp.status().as_u16();
        let retry = resp
            .headers()
            .get(header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_string());
        let body = axum::body::to_bytes(resp.into_body(), 1 << 16)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        (
            status,
            v["error"]["code"].as_str().unwrap().to_string(),
            retry,
            v["error"]["message"].as_str().unwrap().to_string(),
        )
    }

    /// The run service's refusals are domain words; this is the one place they
    /// become statuses, codes and `Retry-After` (the table the API documents).
    #[tokio::test]
    async fn every_refusal_has_its_status_code_and_retry_after() {
        let run = RunId("r-1".into());
        let cases: Vec<(Refusal, u16, &str, Option<&str>)> = vec![
            (
                Refusal::Invalid("text must not be empty".into()),
                422,
                "validation_failed",
                None,
            ),
            (
                Refusal::TooLong { limit: 10 },
                413,
                "payload_too_large",
                None,
            ),
            (
                Refusal::RunActive {
                    active_run_id: run.clone(),
                },
                409,
                "run_active",
                None,
            ),
            (
                Refusal::TooManyActive { limit: 4 },
                429,
                "rate_limited",
                Some("5"),
            ),
            (
                Refusal::RateLimited {
                    per_minute: 60,
                    retry_after_secs: 17,
                },
                429,
                "rate_limited",
                Some("17"),
            ),
            (
                Refusal::QueueFull {
                    active_run_id: run,
                    limit: 3,
                },
                429,
                "rate_limited",
                Some("5"),
            ),
            (
                Refusal::OverStorage {
                    usage: StorageUse {
                        used_bytes: 900,
                        adding_bytes: 200,
                    },
                    limit: 1000,
                },
                413,
                "payload_too_large",
                None,
            ),
            (Refusal::Store(StoreError::NotFound), 404, "not_found", None),
            (
                Refusal::Store(StoreError::Conflict(Conflict::RunActive)),
                409,
                "run_active",
                None,
            ),
            (
                Refusal::Store(StoreError::Other("disk on fire".into())),
                500,
                "internal",
                None,
            ),
        ];
        for (refusal, status, code, retry) in cases {
            let said = refusal.to_string();
            let from_store = matches!(refusal, Refusal::Store(_));
            let (s, c, r, message) = seen(refusal.into()).await;
            assert_eq!(
                (s, c.as_str(), r.as_deref()),
                (status, code, retry),
                "{said}"
            );
            if status == 500 {
                assert_eq!(message, "internal error", "no internals leave: {said}");
            } else if !from_store {
                assert_eq!(message, said, "the refusal's own words reach the client");
            }
        }
    }
}
