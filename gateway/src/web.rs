//! The web UI: `web/dist`, embedded into the binary at build time (no Node.js at
//! run time). Unknown non-API paths fall back to `index.html` so client-side
//! routes (`/chat/…`) survive a reload.

use axum::http::{StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};

use crate::error::ApiError;

#[derive(rust_embed::Embed)]
#[folder = "../web/dist"]
#[allow_missing = true]
struct Assets;

pub async fn serve(uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    if path.starts_with("v1/") || path == "v1" {
        return ApiError::NotFound.into_response();
    }
    if let Some(resp) = asset(path) {
        return resp;
    }
    match asset("index.html") {
        Some(resp) => resp,
        None => (
            StatusCode::OK,
            Html("<!doctype html><title>Weft</title><p>Weft is running. The web UI was not built into this binary: run <code>npm ci &amp;&amp; npm run build</code> in <code>web/</code> and rebuild.</p>"),
        )
            .into_response(),
    }
}

fn asset(path: &str) -> Option<Response> {
    if path.is_empty() {
        return None;
    }
    let file = Assets::get(path)?;
    let mime = file.metadata.mimetype().to_string();
    // Hashed assets never change; index.html must always be revalidated.
    let cache = if path.starts_with("assets/") {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    Some(
        (
            [
                (header::CONTENT_TYPE, mime),
                (header::CACHE_CONTROL, cache.to_string()),
            ],
            file.data,
        )
            .into_response(),
    )
}
