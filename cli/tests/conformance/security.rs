//! What a hostile or unlucky client can do to the HTTP surface (issue 11): logout
//! really revokes.

use serde_json::json;

use crate::both_backends;
use crate::harness::*;

both_backends!(logout_revokes_the_presented_token);

async fn logout(app: &App, auth: (&str, &str)) -> u16 {
    app.http
        .post(app.url("/v1/auth/logout"))
        .header(auth.0, auth.1)
        .header("x-weft-csrf", "1")
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn logout_revokes_the_presented_token(b: Backend) {
    let app = App::start(b).await;
    let login_token = app.user("erin").await;
    let (st, created) = app
        .post("/v1/tokens", &login_token, json!({"name": "laptop"}))
        .await;
    assert_eq!(st, 201, "{created}");
    let api_token = created["token"].as_str().unwrap().to_string();

    // `weft logout` presents a personal API token as a bearer.
    let bearer = format!("Bearer {api_token}");
    assert_eq!(logout(&app, ("authorization", &bearer)).await, 204);
    let (st, _) = app.get("/v1/me", &api_token).await;
    assert_eq!(st, 401, "the API token no longer works after logout");
    let (st, _) = app.get("/v1/me", &login_token).await;
    assert_eq!(st, 200, "only the presented token was revoked");

    // A login token presented as a bearer, and a web session presented as a cookie.
    let bearer = format!("Bearer {login_token}");
    assert_eq!(logout(&app, ("authorization", &bearer)).await, 204);
    let (st, _) = app.get("/v1/me", &login_token).await;
    assert_eq!(st, 401, "the login token no longer works after logout");
    let web = app.login("erin").await;
    let cookie = format!("weft_session={web}");
    assert_eq!(logout(&app, ("cookie", &cookie)).await, 204);
    let (st, _) = app.get("/v1/me", &web).await;
    assert_eq!(st, 401, "the web session no longer works after logout");

    // Logging out twice is harmless.
    assert_eq!(logout(&app, ("cookie", &cookie)).await, 204);
}
