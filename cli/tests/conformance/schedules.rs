//! Schedules (docs/schedules.md) through the API and the workers' scheduler:
//! bad input refused naming its field, another person's schedule a 404, a
//! one-off fire that runs as an ordinary run and answers, "run now", pause;
//! and every fire exactly once while processes are SIGKILLed mid-fire
//! (distributed: three gateways, two workers racing for the same due
//! schedules, one killed;
//! embedded: the one process killed and started again on the same database);
//! a fire over its owner's run limits retried once per poll, not in a loop.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

crate::both_backends!(
    a_schedule_is_checked_fires_once_and_answers,
    every_fire_happens_once_through_kills,
    made_from_chat_with_confirmation_and_never_auto_approved,
    a_persons_timezone_is_their_schedules_default,
    a_fire_over_the_run_limits_waits_for_the_owner_without_spinning,
);

fn rfc3339_in(ms_from_now: i64) -> String {
    weft_shared::time::rfc3339(weft_shared::time::now_ms() + ms_from_now)
}

async fn a_schedule_is_checked_fires_once_and_answers(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;

    // Bad input: a 422 naming the field, nothing stored.
    for (body, field) in [
        (
            json!({"prompt": "x", "trigger": {"cron": "61 9 * * *"}}),
            "trigger.cron",
        ),
        (
            json!({"prompt": "x", "trigger": {"cron": "0 9 * * *"}, "timezone": "Mars/Olympus"}),
            "timezone",
        ),
        (
            json!({"prompt": "x", "trigger": {"every_secs": 30}}),
            "trigger.every_secs",
        ),
        (
            json!({"prompt": "x", "trigger": {"at": "2020-01-01T00:00:00Z"}}),
            "trigger.at",
        ),
        (
            json!({"prompt": "x", "trigger": {"at": "tomorrow"}}),
            "trigger.at",
        ),
        (
            json!({"prompt": "x", "trigger": {"every_secs": 60}, "target": {"session": "nope"}}),
            "target.session",
        ),
        (
            json!({"prompt": " ", "trigger": {"every_secs": 60}}),
            "prompt",
        ),
    ] {
        let (st, err) = app.post("/v1/schedules", &alice, body.clone()).await;
        assert_eq!(st, 422, "{body} → {err}");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(field),
            "{body}: {message:?} should name {field}"
        );
    }
    let (st, list) = app.get("/v1/schedules", &alice).await;
    assert_eq!((st, list["schedules"].as_array().unwrap().len()), (200, 0));

    // The form's preview: weekdays at 09:00 in Shanghai.
    let (st, preview) = app
        .post(
            "/v1/schedules/preview",
            &alice,
            json!({"trigger": {"cron": "0 9 * * 1-5"}, "timezone": "Asia/Shanghai"}),
        )
        .await;
    assert_eq!(st, 200, "{preview}");
    let next = preview["next"].as_array().unwrap();
    assert_eq!(next.len(), 5);
    assert!(
        next.iter()
            .all(|t| t.as_str().unwrap().ends_with("T09:00:00+08:00")),
        "{next:?}"
    );

    // A one-off two seconds from now.
    let (st, made) = app
        .post(
            "/v1/schedules",
            &alice,
            json!({"name": "greeting", "prompt": "say hello to the team", "trigger": {"at": rfc3339_in(2000)},
                   "timezone": "Asia/Shanghai"}),
        )
        .await;
    assert_eq!(st, 201, "{made}");
    let id = made["id"].as_str().unwrap().to_string();
    assert_eq!(made["target"], "new_session");
    assert_eq!(
        (made["misfire"].as_str(), made["overlap"].as_str()),
        (Some("run_once"), Some("skip"))
    );
    assert!(
        made["next_fire_at"].as_str().unwrap().ends_with("+08:00"),
        "{made}"
    );

    // Bob sees none of it.
    let path = format!("/v1/schedules/{id}");
    assert_eq!(app.get(&path, &bob).await.0, 404);
    for method in [reqwest::Method::PATCH, reqwest::Method::DELETE] {
        let (st, _) = app
            .call(method, &path, &bob, Some(json!({"enabled": false})))
            .await;
        assert_eq!(st, 404);
    }
    assert_eq!(
        app.post(&format!("{path}/run"), &bob, json!({})).await.0,
        404
    );

    // It fires once; its run answers in a session of its own.
    let fires_path = format!("{path}/fires");
    let fire: Value = eventually(
        Duration::from_secs(30),
        "the fire's run to succeed",
        async || {
            let (_, fires) = app.get(&fires_path, &alice).await;
            match fires["fires"].as_array().and_then(|f| f.first()) {
                Some(f) if f["run_status"] == "succeeded" => Ok(f.clone()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    assert_eq!(
        (fire["outcome"].as_str(), fire["manual"].as_bool()),
        (Some("started"), Some(false))
    );
    let session = fire["session_id"].as_str().unwrap();
    let messages = app.messages(&alice, session).await;
    assert_eq!(messages[0]["content"], "say hello to the team");
    assert!(
        messages.iter().any(|m| m["role"] == "assistant"),
        "{messages:?}"
    );
    // Alice's inbox says so, once; Bob's is empty; read, it is unread no more.
    let (st, inbox) = app.get("/v1/me/notifications", &alice).await;
    assert_eq!((st, inbox["unread"].as_u64()), (200, Some(1)), "{inbox}");
    let note = &inbox["notifications"][0];
    assert_eq!(
        (note["kind"].as_str(), note["title"].as_str()),
        (Some("schedule_finished"), Some("greeting"))
    );
    assert!(
        note["body"].as_str().unwrap().starts_with("succeeded: "),
        "{note}"
    );
    assert_eq!(
        (&note["run_id"], &note["session_id"]),
        (&fire["run_id"], &fire["session_id"])
    );
    assert_eq!(app.get("/v1/me/notifications", &bob).await.1["unread"], 0);
    let id = note["id"].as_str().unwrap();
    let (st, _) = app
        .post("/v1/me/notifications/read", &bob, json!({"ids": [id]}))
        .await;
    assert_eq!(st, 204);
    assert_eq!(
        app.get("/v1/me/notifications?unread=true", &alice).await.1["unread"],
        1,
        "not Bob's to read"
    );
    let (st, _) = app
        .post("/v1/me/notifications/read", &alice, json!({"ids": [id]}))
        .await;
    assert_eq!(st, 204);
    let (_, inbox) = app.get("/v1/me/notifications?unread=true", &alice).await;
    assert_eq!(
        (
            inbox["unread"].as_u64(),
            inbox["notifications"].as_array().unwrap().len()
        ),
        (Some(0), 0)
    );
    let (_, shown) = app.get(&path, &alice).await;
    assert!(
        shown.get("next_fire_at").is_none(),
        "an `at` fires once: {shown}"
    );
    assert_eq!(shown["last_fire"]["run_id"], fire["run_id"]);

    // "Run now", then pause and delete.
    let (st, now) = app.post(&format!("{path}/run"), &alice, json!({})).await;
    assert_eq!(st, 201, "{now}");
    assert_eq!(
        (now["outcome"].as_str(), now["manual"].as_bool()),
        (Some("started"), Some(true))
    );
    let run = now["run_id"].as_str().unwrap();
    assert_eq!(
        app.wait_run(&alice, run, Duration::from_secs(30)).await["status"],
        "succeeded"
    );
    let (st, _) = app
        .call(
            reqwest::Method::PATCH,
            &path,
            &alice,
            Some(json!({"trigger": {"every_secs": 3600}, "name": "hourly"})),
        )
        .await;
    assert_eq!(st, 200);
    let (st, paused) = app
        .call(
            reqwest::Method::PATCH,
            &path,
            &alice,
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(
        (st, paused["enabled"].as_bool()),
        (200, Some(false)),
        "{paused}"
    );
    assert!(paused.get("next_fire_at").is_none());
    assert_eq!(paused["name"], "hourly");
    let (_, fires) = app.get(&fires_path, &alice).await;
    assert_eq!(fires["fires"].as_array().unwrap().len(), 2);
    assert_eq!(
        app.call(reqwest::Method::DELETE, &path, &alice, None)
            .await
            .0,
        204
    );
    assert_eq!(app.get(&path, &alice).await.0, 404);
}

/// Schedules made through the API, then made due 25 ms apart.
const MANY: usize = 120;

async fn every_fire_happens_once_through_kills(b: Backend) {
    let mut app = App::start_with(
        b,
        &[
            ("WEFT_SCHEDULES__MAX_PER_USER", "0"),
            ("WEFT_LIMITS__ACTIVE_RUNS_PER_USER", "0"),
            ("WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER", "0"),
            ("WEFT_DATABASE_MAX_CONNECTIONS", "4"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    // Distributed: three gateways (the schedules made through all of them)
    // and two workers, as the issue asks; a gateway fires nothing itself.
    let mut gateways = vec![app.base.clone()];
    let _more: Vec<Proc> = match b {
        Backend::Distributed => (0..2)
            .map(|_| {
                let gw = Proc::spawn(
                    app.env.command(&["serve", "--listen", "127.0.0.1:0"]),
                    "listening on http://",
                );
                gateways.push(format!("http://{}", gw.addr.clone().expect("its address")));
                gw
            })
            .collect(),
        Backend::Embedded => Vec::new(),
    };
    for i in 0..MANY {
        let res = app
            .http
            .post(format!("{}/v1/schedules", gateways[i % gateways.len()]))
            .bearer_auth(&alice)
            .json(&json!({"name": format!("s{i}"), "prompt": format!("report {i}"), "trigger": {"every_secs": 3600}}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());
    }
    if b == Backend::Distributed {
        app.workers.push(App::spawn_worker(&app.env));
    }
    // Due one after another over three seconds from now; the scheduler is
    // killed once the first have fired, with most still to come.
    app.execute_sql(&format!(
        "update schedules set next_fire_at = {} + cast(substr(name, 2) as bigint) * 25",
        weft_shared::time::now_ms()
    ))
    .await;
    let before_kill = eventually(
        Duration::from_secs(20),
        "the first fires",
        async || match app.count_rows("select count(*) from schedule_fires").await {
            0 => Err("none yet"),
            n => Ok(n),
        },
    )
    .await;
    match b {
        Backend::Distributed => app.workers[0].kill(),
        Backend::Embedded => app.restart_gateway(),
    }
    let total = MANY as i64;
    assert!(before_kill < total, "the kill came after every fire");
    eventually(
        Duration::from_secs(60),
        "every schedule fired",
        async || {
            let fired = app.count_rows("select count(*) from schedule_fires").await;
            if fired == total { Ok(()) } else { Err(fired) }
        },
    )
    .await;
    assert_eq!(
        app.count_rows("select count(*) from runs").await,
        total,
        "one run per fire"
    );
    assert_eq!(
        app.count_rows(
            "select count(*) from schedule_fires where run_id is null or outcome <> 'started'"
        )
        .await,
        0
    );
    // Every run completes (those the killed process held are taken over).
    eventually(
        Duration::from_secs(90),
        "every fire's run to succeed",
        async || {
            let done = app
                .count_rows("select count(*) from runs where status = 'succeeded'")
                .await;
            if done == total { Ok(()) } else { Err(done) }
        },
    )
    .await;
    // Each schedule moved on to its next hour, not fired again.
    assert_eq!(
        app.count_rows(&format!(
            "select count(*) from schedules where next_fire_at <= {}",
            weft_shared::time::now_ms()
        ))
        .await,
        0
    );
    assert_eq!(
        app.count_rows("select count(*) from schedule_fires").await,
        total
    );
}

/// `schedule_create` from chat asks first (its default policy is `confirm`)
/// and schedules into this conversation; a fire there never takes the
/// session's "always allow": its confirm tool waits for the owner.
async fn made_from_chat_with_confirmation_and_never_auto_approved(b: Backend) {
    use crate::approvals::{decide, tool_message};
    let app = App::start_with(b, &[("WEFT_TOOLS__POLICIES__CURRENT_TIME", "confirm")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;

    // "Always allow" current_time in this conversation.
    let mut sse = app
        .send_stream(&alice, &s, "@mock.tool current_time {}")
        .await;
    let asked = sse.until(|e| e.ty == "approval_required").await;
    let id = tool_message(&asked, "approval_required")[0]["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(decide(&app, &alice, &id, "always").await.0, 200);
    sse.until_terminal().await;

    // The model schedules a prompt; the person confirms it first.
    let at = rfc3339_in(3000);
    let call =
        json!({"prompt": "what time is it? @mock.tool current_time {}", "at": at, "name": "clock"});
    // The prompt's own directive escaped, so it is not read as this message's.
    let call = call.to_string().replace("@mock", "\\u0040mock");
    let text = format!("@mock.tool schedule_create {call}");
    let mut sse = app.send_stream(&alice, &s, &text).await;
    let asked = sse.until(|e| e.ty == "approval_required").await;
    let required = &tool_message(&asked, "approval_required")[0];
    assert_eq!(required["name"], "schedule_create");
    assert_eq!(
        app.get("/v1/schedules", &alice).await.1["schedules"],
        json!([]),
        "nothing before the yes"
    );
    let id = required["approval_id"].as_str().unwrap().to_string();
    assert_eq!(decide(&app, &alice, &id, "approve").await.0, 200);
    let events = sse.until_terminal().await;
    let end = &tool_message(&events, "tool_end")[0];
    assert_eq!(end["ok"], true, "{end}");
    assert!(
        end["output"]
            .as_str()
            .unwrap()
            .contains("in this conversation"),
        "{end}"
    );
    let (_, list) = app.get("/v1/schedules", &alice).await;
    let made = &list["schedules"][0];
    assert_eq!(
        (made["name"].as_str(), made["target"]["session"].as_str()),
        (Some("clock"), Some(s.as_str()))
    );

    // The fire's run asks for current_time despite the session's grant.
    let path = format!("/v1/schedules/{}/fires", made["id"].as_str().unwrap());
    eventually(
        Duration::from_secs(30),
        "the scheduled run to wait for approval",
        async || {
            let (_, fires) = app.get(&path, &alice).await;
            match fires["fires"][0]["run_status"].as_str() {
                Some("waiting_approval") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    let (_, inbox) = app.get("/v1/me/notifications", &alice).await;
    let note = &inbox["notifications"][0];
    assert_eq!(note["kind"], "schedule_waiting", "{inbox}");
    assert_eq!(note["body"], "waits for your approval: current_time");
    let (_, pending) = app
        .get(&format!("/v1/sessions/{s}/approvals"), &alice)
        .await;
    assert!(pending.to_string().contains("current_time"), "{pending}");
}

async fn a_persons_timezone_is_their_schedules_default(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let (st, tz) = app.get("/v1/me/timezone", &alice).await;
    assert_eq!(st, 200);
    assert_eq!(tz, json!({"timezone": null, "effective": "UTC"}));
    // What a GET answers is not what a PUT takes (`effective` is read only).
    let (st, _) = app
        .call(
            reqwest::Method::PUT,
            "/v1/me/timezone",
            &alice,
            Some(json!({"timezone": "Asia/Shanghai", "effective": "UTC"})),
        )
        .await;
    assert_eq!(st, 422);
    let put = |body: Value| {
        let app = &app;
        let alice = alice.clone();
        async move {
            app.call(reqwest::Method::PUT, "/v1/me/timezone", &alice, Some(body))
                .await
        }
    };
    let (st, err) = put(json!({"timezone": "Mars/Olympus"})).await;
    assert_eq!(st, 422, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("timezone")
    );
    let (st, set) = put(json!({"timezone": "Asia/Shanghai"})).await;
    assert_eq!(st, 200, "{set}");
    assert_eq!(set["effective"], "Asia/Shanghai");
    let (st, made) = app
        .post(
            "/v1/schedules",
            &alice,
            json!({"prompt": "standup", "trigger": {"cron": "0 9 * * 1-5"}}),
        )
        .await;
    assert_eq!(st, 201, "{made}");
    assert_eq!(made["timezone"], "Asia/Shanghai");
    assert!(
        made["next_fire_at"]
            .as_str()
            .unwrap()
            .ends_with("T09:00:00+08:00"),
        "{made}"
    );
    let (_, preview) = app
        .post(
            "/v1/schedules/preview",
            &alice,
            json!({"trigger": {"cron": "0 9 * * *"}}),
        )
        .await;
    assert_eq!(preview["timezone"], "Asia/Shanghai");
    // Cleared: the server's again; the schedule keeps its own.
    let (st, cleared) = put(json!({"timezone": null})).await;
    assert_eq!((st, &cleared["effective"]), (200, &json!("UTC")));
    let (_, kept) = app
        .get(
            &format!("/v1/schedules/{}", made["id"].as_str().unwrap()),
            &alice,
        )
        .await;
    assert_eq!(kept["timezone"], "Asia/Shanghai");
}

/// The `weft_schedule_fires_total{outcome="deferred"}` count on `scheduler`'s
/// `/metrics`.
async fn deferred_fires(app: &App, scheduler: &Proc) -> u64 {
    let body = app
        .http
        .get(scheduler.metrics_url())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    body.lines()
        .filter(|l| l.starts_with("weft_schedule_fires_total{") && l.contains("\"deferred\""))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// A fire over its owner's run limits stays due and is tried again on each
/// pass of the scheduler (`worker/src/scheduler.rs`): once per `poll_ms`, and it
/// fires once the owner's run is over. Until 2026-12-07 the scheduler slept
/// until the earliest due time — already past — and spun through passes.
async fn a_fire_over_the_run_limits_waits_for_the_owner_without_spinning(b: Backend) {
    let app = App::start_with(
        b,
        &[
            ("WEFT_LIMITS__ACTIVE_RUNS_PER_USER", "1"),
            ("WEFT_METRICS_LISTEN", "127.0.0.1:0"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    // Alice's one active run, for about three seconds.
    let busy = app
        .send(&alice, &s, "busy @mock.tokens 150 @mock.delay 0 20")
        .await;
    let made_at = std::time::Instant::now();
    let (st, made) = app
        .post(
            "/v1/schedules",
            &alice,
            json!({"prompt": "after the busy one", "trigger": {"at": rfc3339_in(1000)}}),
        )
        .await;
    assert_eq!(st, 201, "{made}");
    let busy = app.wait_run(&alice, &busy, Duration::from_secs(60)).await;
    assert_eq!(busy["status"], "succeeded", "{busy}");
    let fires_path = format!("/v1/schedules/{}/fires", made["id"].as_str().unwrap());
    let fire: Value = eventually(
        Duration::from_secs(30),
        "the deferred fire's run to succeed",
        async || {
            let (_, fires) = app.get(&fires_path, &alice).await;
            match fires["fires"].as_array().map(Vec::as_slice) {
                Some([f]) if f["run_status"] == "succeeded" => Ok(f.clone()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    assert_eq!(fire["outcome"], "started", "{fire}");
    let waited = made_at.elapsed();

    let scheduler = match b {
        Backend::Embedded => &app.gateway,
        Backend::Distributed => &app.workers[0],
    };
    let deferred = deferred_fires(&app, scheduler).await;
    // Due after a second, behind a run of three or more: deferred at least once,
    // and at most once per pass (`schedules.poll_ms`, 1 s by default) while it
    // waited, give or take one. A loop that did not wait counts thousands.
    let passes = waited.as_secs() + 2;
    assert!(
        (1..=passes).contains(&deferred),
        "{deferred} deferred fires in {waited:?}, expected 1..={passes}"
    );
}
