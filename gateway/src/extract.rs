//! Request extractors whose rejections speak the API's error envelope: malformed
//! JSON is 400 `invalid_request`, a well-formed body of the wrong shape is 422
//! `validation_failed`, an oversized body is 413 `payload_too_large`, a body that
//! does not arrive within `http.body_timeout_ms` is 408 `request_timeout`.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(ApiJson(v)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(r: JsonRejection) -> ApiError {
    if crate::transport::is_body_timeout(&r) {
        return ApiError::RequestTimeout;
    }
    match r {
        JsonRejection::JsonDataError(e) => ApiError::Validation(e.body_text()),
        JsonRejection::JsonSyntaxError(e) => ApiError::InvalidRequest(e.body_text()),
        JsonRejection::MissingJsonContentType(_) => ApiError::InvalidRequest(
            "expected a JSON body with Content-Type: application/json".into(),
        ),
        other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::PayloadTooLarge("the request body is too large".into())
        }
        other => ApiError::InvalidRequest(other.body_text()),
    }
}

pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(ApiQuery(v)),
            Err(QueryRejection::FailedToDeserializeQueryString(e)) => {
                Err(ApiError::InvalidRequest(e.body_text()))
            }
            Err(e) => Err(ApiError::InvalidRequest(e.body_text())),
        }
    }
}

/// Clamp a page size to 1..=max with a default.
pub fn page_limit(limit: Option<i64>, default: i64, max: i64) -> Result<i64, ApiError> {
    match limit {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(_) => Err(ApiError::Validation(format!(
            "limit must be between 1 and {max}"
        ))),
    }
}
