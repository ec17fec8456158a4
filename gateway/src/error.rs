//! The gateway's one error type. Every failure leaves as
//! `{"error":{"code","message"}}` with a fitting status; internal errors answer a
//! bare 500 and are logged once, here, with their cause (never in handlers).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use weft_shared::api::{ErrorBody, ErrorEnvelope};
use weft_shared::store::StoreError;

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
            StoreError::Conflict("username_taken") => {
                ApiError::Conflict("that username is taken".into())
            }
            StoreError::Conflict("run_active") => {
                ApiError::RunActive("the session already has an active run".into())
            }
            StoreError::Conflict(what) => ApiError::Conflict(what.replace('_', " ")),
            StoreError::Invalid(why) => ApiError::Validation(why),
            other => ApiError::Internal(other.into()),
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
