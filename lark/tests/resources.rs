//! Downloading the files and images users send: our REST client against the fake
//! Lark server (and, for the size cap, against a server that never stops).

mod common;

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::routing::{get, post};
use common::*;
use serde_json::json;
use weft_lark::fake::FakeResource;
use weft_lark::rest::{ErrorClass, LarkError, ResourceType, RestClient, RestConfig};
use weft_lark::sender::{RateAwareSender, RateLimits};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR not a whole image";

fn code(result: Result<weft_lark::rest::Resource, LarkError>) -> i64 {
    let err = result.expect_err("refused");
    assert_eq!(err.class(), ErrorClass::Fatal, "{err}");
    err.code().unwrap_or_else(|| panic!("no Lark code: {err}"))
}

#[tokio::test]
async fn images_and_files_download_whole_with_their_type() {
    let fake = fake(fast_config()).await;
    fake.add_resource("om_img", "img_v3_1", FakeResource::image(PNG));
    let pdf = b"%PDF-1.4 quarterly".to_vec();
    fake.add_resource(
        "om_file",
        "file_v3_1",
        FakeResource::file("q3.pdf", pdf.clone()),
    );
    let rest = rest(&fake);

    let image = rest
        .download_resource("om_img", "img_v3_1", ResourceType::Image, 1 << 20)
        .await
        .unwrap();
    assert_eq!(image.bytes, PNG);
    assert_eq!(image.content_type.as_deref(), Some("image/png"));
    let file = rest
        .download_resource("om_file", "file_v3_1", ResourceType::File, 1 << 20)
        .await
        .unwrap();
    assert_eq!(file.bytes, pdf);
    assert_eq!(file.content_type.as_deref(), Some("application/pdf"));

    let records = fake.records();
    let call = records.calls_to("GET", "/open-apis/im/v1/messages/om_img/")[0];
    assert_eq!(
        call.path,
        "/open-apis/im/v1/messages/om_img/resources/img_v3_1"
    );
    assert_eq!(call.query, "type=image");

    // A key of another message, an unknown key, a wrong `type`: Lark's codes.
    let other = rest
        .download_resource("om_file", "img_v3_1", ResourceType::Image, 1 << 20)
        .await;
    assert_eq!(code(other), 234003);
    let unknown = rest
        .download_resource("om_img", "img_nope", ResourceType::Image, 1 << 20)
        .await;
    assert_eq!(code(unknown), 234003);
    let wrong = rest
        .download_resource("om_img", "img_v3_1", ResourceType::File, 1 << 20)
        .await;
    assert_eq!(code(wrong), 234001);
}

#[tokio::test]
async fn a_file_over_the_limit_is_refused() {
    let fake = fake(fast_config()).await;
    fake.add_resource(
        "om_1",
        "file_1",
        FakeResource::file("a.txt", vec![b'a'; 1000]),
    );
    let rest = rest(&fake);
    let over = rest
        .download_resource("om_1", "file_1", ResourceType::File, 999)
        .await
        .unwrap_err();
    assert!(matches!(over, LarkError::TooLarge { limit: 999 }), "{over}");
    assert_eq!(over.class(), ErrorClass::Fatal);
    let exact = rest
        .download_resource("om_1", "file_1", ResourceType::File, 1000)
        .await
        .unwrap();
    assert_eq!(exact.bytes.len(), 1000);
}

/// A server whose resource never ends and declares no length: the client must
/// stop reading at its limit, not when the body ends.
#[tokio::test]
async fn an_endless_body_is_cut_at_the_limit() {
    let app = axum::Router::new()
        .route(
            "/open-apis/auth/v3/tenant_access_token/internal",
            post(|| async {
                axum::Json(
                    json!({"code": 0, "msg": "ok", "tenant_access_token": "t-1", "expire": 7200}),
                )
            }),
        )
        .route(
            "/open-apis/im/v1/messages/{id}/resources/{key}",
            get(|| async {
                let chunks = futures::stream::repeat_with(|| {
                    Ok::<_, Infallible>(Bytes::from_static(&[0u8; 4096]))
                });
                Body::from_stream(chunks)
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let rest = RestClient::new(RestConfig::new(
        weft_lark::AppCredentials::new("cli_x", "secret"),
        base,
    ));
    let cut = tokio::time::timeout(
        WAIT,
        rest.download_resource("om_1", "file_1", ResourceType::File, 10 << 20),
    )
    .await
    .expect("the download stops at the limit");
    assert!(matches!(cut, Err(LarkError::TooLarge { .. })), "{cut:?}");
}

#[tokio::test]
async fn a_stale_token_is_refreshed_and_a_rate_limit_is_retryable() {
    let fake = fake(fast_config()).await;
    fake.add_resource("om_1", "img_1", FakeResource::image(PNG));
    let sender = RateAwareSender::new(rest(&fake), RateLimits::default());
    sender
        .download_resource("om_1", "img_1", ResourceType::Image, 1 << 20)
        .await
        .unwrap();
    fake.revoke_tokens();
    let again = sender
        .download_resource("om_1", "img_1", ResourceType::Image, 1 << 20)
        .await
        .expect("downloads after refreshing the token");
    assert_eq!(again.bytes, PNG);
    let codes: Vec<i64> = fake
        .records()
        .calls_to("GET", "/open-apis/im/v1/messages/om_1/resources/img_1")
        .iter()
        .map(|c| c.code)
        .collect();
    assert_eq!(codes, vec![0, 99991663, 0]);

    fake.fail_next_calls(1, 429, 99991400, "request trigger frequency limit");
    let limited = sender
        .download_resource("om_1", "img_1", ResourceType::Image, 1 << 20)
        .await
        .unwrap_err();
    assert_eq!(limited.class(), ErrorClass::Retryable, "{limited}");
}
