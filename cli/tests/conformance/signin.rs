//! Sign-in behind a proxy and across replicas (issue 11, items 7 and 12): client
//! addresses come from `X-Forwarded-For` only when the peer is a trusted proxy, an
//! account backs off instead of locking, replicas share the counts through Redis,
//! and over HTTPS the session cookie is `__Host-` and `Secure`.

use serde_json::json;

use crate::both_backends;
use crate::harness::*;

both_backends!(
    behind_a_trusted_proxy_one_guesser_does_not_lock_out_everyone,
    an_account_backs_off_and_its_owner_gets_in_after_the_wait,
    the_cookie_is_host_prefixed_and_secure_over_https
);

/// The tests' gateway sees every request from 127.0.0.1: the "proxy".
const PROXY: (&str, &str) = ("WEFT_TRUSTED_PROXIES", "[\"127.0.0.1\"]");

async fn login_from(
    app: &App,
    base: &str,
    client: &str,
    user: &str,
    pw: &str,
) -> reqwest::Response {
    app.http
        .post(format!("{base}/v1/auth/login"))
        .header("x-forwarded-for", client)
        .json(&json!({"username": user, "password": pw}))
        .send()
        .await
        .unwrap()
}

async fn behind_a_trusted_proxy_one_guesser_does_not_lock_out_everyone(b: Backend) {
    let app = App::start_with(b, &[PROXY]).await;
    app.user("bob").await;
    for i in 0..10 {
        let r = login_from(
            &app,
            &app.base,
            "198.51.100.1",
            &format!("nobody{i}"),
            "wrong-password",
        )
        .await;
        assert_eq!(r.status(), 401);
    }
    let r = login_from(&app, &app.base, "198.51.100.1", "bob", "password-123").await;
    assert_eq!(r.status(), 429, "the guessing address is limited");
    // Before: every client behind the proxy shared its address and was locked out.
    let r = login_from(&app, &app.base, "198.51.100.2", "bob", "password-123").await;
    assert_eq!(
        r.status(),
        200,
        "another client behind the same proxy signs in"
    );
}

async fn an_account_backs_off_and_its_owner_gets_in_after_the_wait(b: Backend) {
    let app = App::start_with(
        b,
        &[
            PROXY,
            ("WEFT_LOGIN__BACKOFF_BASE_MS", "1000"),
            ("WEFT_LOGIN__BACKOFF_MAX_MS", "1000"),
        ],
    )
    .await;
    app.user("admin2").await;
    // A guesser hammers the account from several addresses at once.
    let app = &app;
    let guesses = (0..20).map(|i| async move {
        let client = format!("203.0.113.{}", i % 3);
        login_from(app, &app.base, &client, "admin2", "wrong-password").await
    });
    let mut refused = 0;
    for r in futures::future::join_all(guesses).await {
        match r.status().as_u16() {
            401 => {}
            429 => refused += 1,
            s => panic!("unexpected {s}"),
        }
    }
    assert!(
        refused >= 10,
        "attempts during the backoff are refused unchecked ({refused})"
    );
    // The owner, from a clean address: at most told to wait the (short) backoff,
    // then in. Before: locked for five minutes.
    let mut answers = Vec::new();
    for _ in 0..5 {
        let r = login_from(app, &app.base, "192.0.2.50", "admin2", "password-123").await;
        let status = r.status().as_u16();
        answers.push(status);
        if status == 200 {
            break;
        }
        assert_eq!(status, 429);
        let wait: u64 = r.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(wait <= 2, "a backoff of {wait} s is a lock");
        tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
    }
    assert_eq!(answers.last(), Some(&200), "{answers:?}");
}

fn set_cookie(resp: &reqwest::Response) -> String {
    resp.headers()["set-cookie"].to_str().unwrap().to_string()
}

async fn the_cookie_is_host_prefixed_and_secure_over_https(b: Backend) {
    let app = App::start_with(b, &[PROXY]).await;
    app.user("carol").await;
    let login = |proto: &'static str| {
        app.http
            .post(app.url("/v1/auth/login"))
            .header("x-forwarded-proto", proto)
            .json(&json!({"username": "carol", "password": "password-123"}))
            .send()
    };
    let resp = login("https").await.unwrap();
    assert_eq!(resp.status(), 200);
    let cookie = set_cookie(&resp);
    assert!(cookie.starts_with("__Host-weft_session="), "{cookie}");
    assert!(
        cookie.contains("; Secure") && cookie.contains("Path=/"),
        "{cookie}"
    );
    assert!(!cookie.contains("Domain"), "{cookie}");
    let token = resp.json::<serde_json::Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let me = |proto: &'static str, cookie: String| {
        app.http
            .get(app.url("/v1/me"))
            .header("x-forwarded-proto", proto)
            .header("cookie", cookie)
            .send()
    };
    let st = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(
        st(me("https", format!("__Host-weft_session={token}"))
            .await
            .unwrap()),
        200
    );
    assert_eq!(
        st(me("https", format!("weft_session={token}")).await.unwrap()),
        401,
        "over HTTPS only the __Host- cookie counts"
    );
    // Plain HTTP (a laptop): the unprefixed cookie, without Secure.
    let cookie = set_cookie(&login("http").await.unwrap());
    assert!(
        cookie.starts_with("weft_session=") && !cookie.contains("Secure"),
        "{cookie}"
    );

    // An untrusted peer cannot claim HTTPS.
    let app = App::start(b).await;
    app.user("carol").await;
    let resp = app
        .http
        .post(app.url("/v1/auth/login"))
        .header("x-forwarded-proto", "https")
        .json(&json!({"username": "carol", "password": "password-123"}))
        .send()
        .await
        .unwrap();
    let cookie = set_cookie(&resp);
    assert!(
        cookie.starts_with("weft_session=") && !cookie.contains("Secure"),
        "{cookie}"
    );
}

/// Two gateway replicas on one Redis: ten failures spread over both limit the
/// address on both (before, each counted alone: five each, nobody limited).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_sign_in_counts() {
    let app = App::start_with(Backend::Distributed, &[PROXY]).await;
    app.user("dave").await;
    let second = Proc::spawn(
        app.env.command(&["serve", "--listen", "127.0.0.1:0"]),
        "listening on http://",
    );
    let bases = [
        app.base.clone(),
        format!("http://{}", second.addr.clone().unwrap()),
    ];
    for i in 0..10 {
        let r = login_from(
            &app,
            &bases[i % 2],
            "198.51.100.9",
            &format!("x{i}"),
            "wrong-password",
        )
        .await;
        assert_eq!(r.status(), 401);
    }
    for base in &bases {
        let r = login_from(&app, base, "198.51.100.9", "dave", "password-123").await;
        assert_eq!(
            r.status(),
            429,
            "{base}: the address is limited on every replica"
        );
    }
}
