//! The Lark bot end to end: real `weft` processes (embedded, or gateways and
//! workers on Postgres and Redis) against `weft-lark`'s fake Lark server, which
//! speaks the real long-connection and REST protocols (validated against the
//! official `lark-oapi` SDK in the lark crate's tests). Users are simulated by
//! pushing `im.message.receive_v1` events; what they would see is read back from
//! the messages the fake holds (cards as last patched) and its call records.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weft_lark::fake::{FakeConfig, FakeLark, PushOptions, SentMessage};

use crate::both_backends;
use crate::harness::*;

both_backends!(
    dm_streams_one_card_with_reaction_and_footer,
    redelivered_events_get_one_reply,
    many_messages_get_one_reply_each,
    groups_need_a_mention_and_threads_get_thread_replies,
    stop_word_cancels_and_the_card_says_stopped,
    flush_answers_the_queue_at_once,
    killed_worker_keeps_one_card,
    refused_card_falls_back,
    rate_limited_calls_are_retried,
    linked_user_sees_the_lark_session_live,
    commands_and_unreadable_messages,
    limits_answer_with_a_friendly_card,
    bad_secret_stops_start_up_clearly,
    long_and_awkward_replies_stay_readable,
    failed_runs_end_the_card_red,
);

const WAIT: Duration = Duration::from_secs(30);

/// A fake Lark and Weft processes connected to it.
struct LarkWorld {
    fake: FakeLark,
    env: Env,
    gateways: Vec<Proc>,
    workers: Vec<Proc>,
    http: reqwest::Client,
    next: u64,
}

fn fake_config() -> FakeConfig {
    FakeConfig {
        ack_timeout: Duration::from_secs(1),
        redelivery_delays: vec![Duration::from_millis(300)],
        ..FakeConfig::default()
    }
}

fn lark_env(fake: &FakeLark) -> Vec<(String, String)> {
    vec![
        ("WEFT_LARK__APP_ID".into(), fake.config().app_id.clone()),
        (
            "WEFT_LARK__APP_SECRET".into(),
            fake.config().app_secret.clone(),
        ),
        ("WEFT_LARK__BASE_URL".into(), fake.base_url()),
    ]
}

impl LarkWorld {
    async fn start(b: Backend) -> LarkWorld {
        LarkWorld::start_with(b, 1, fake_config(), &[]).await
    }

    /// `replicas` gateways and as many workers (embedded: one process).
    async fn start_with(
        b: Backend,
        replicas: usize,
        config: FakeConfig,
        extra: &[(&str, &str)],
    ) -> LarkWorld {
        let fake = FakeLark::spawn(config).await.expect("fake lark binds");
        let mut env = Env::new(b, extra).await;
        env.extra.extend(lark_env(&fake));
        let mut world = LarkWorld {
            fake,
            env,
            gateways: Vec::new(),
            workers: Vec::new(),
            http: reqwest::Client::new(),
            next: 0,
        };
        let replicas = if b == Backend::Embedded { 1 } else { replicas };
        for _ in 0..replicas {
            world.gateways.push(world.spawn_gateway());
            if b == Backend::Distributed {
                world.workers.push(App::spawn_worker(&world.env));
            }
        }
        world.wait_connections(replicas).await;
        world
    }

    fn spawn_gateway(&self) -> Proc {
        let cmd = match self.env.backend {
            Backend::Embedded => "up",
            Backend::Distributed => "serve",
        };
        Proc::spawn(
            self.env.command(&[cmd, "--listen", "127.0.0.1:0"]),
            "listening on http://",
        )
    }

    async fn wait_connections(&self, n: usize) {
        let deadline = Instant::now() + WAIT;
        while self.fake.live_connections() != n {
            assert!(
                Instant::now() < deadline,
                "{n} lark connections never came up"
            );
            let _ = self
                .fake
                .wait_until(Duration::from_millis(200), |r| r.connections_opened > 0)
                .await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Kills gateway `i` and starts it again on the same data.
    async fn restart_gateway(&mut self, i: usize) {
        self.gateways[i].kill();
        let n = self.gateways.len();
        self.wait_connections(n - 1).await;
        self.gateways[i] = self.spawn_gateway();
        self.wait_connections(n).await;
    }

    fn base(&self) -> String {
        format!(
            "http://{}",
            self.gateways[0].addr.clone().expect("gateway address")
        )
    }

    fn logs(&self) -> String {
        let all: Vec<String> = self
            .gateways
            .iter()
            .chain(&self.workers)
            .map(Proc::logs)
            .collect();
        all.join("\n---\n")
    }

    fn ids(&mut self) -> (String, String) {
        self.next += 1;
        (
            format!("ev_{}", self.next),
            format!("om_user_{}", self.next),
        )
    }

    /// A direct message from `sender`; returns its Lark message id.
    fn dm(&mut self, sender: &str, text: &str) -> String {
        let (event, message) = self.ids();
        let chat = format!("oc_dm_{sender}");
        self.fake.push_event(
            message_event(&event, &message, &chat, "p2p", "", sender, text, json!([])),
            PushOptions::default(),
        );
        message
    }

    /// Waits until `check` finds something in what the fake holds.
    async fn until<T>(&self, what: &str, check: impl Fn(&FakeLark) -> Option<T>) -> T {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(found) = check(&self.fake) {
                return found;
            }
            let seen = self.fake.records().calls.len();
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting for {what}\n{}",
                self.logs()
            );
            let _ = self
                .fake
                .wait_until(left.min(Duration::from_millis(500)), |r| {
                    r.calls.len() > seen
                })
                .await;
        }
    }

    /// The replies to Lark message `to` (cards and notices), oldest first.
    fn replies(&self, to: &str) -> Vec<SentMessage> {
        self.fake
            .sent_messages()
            .into_iter()
            .filter(|m| m.reply_to == to)
            .collect()
    }

    /// The reply card to `to` once it shows an ended reply.
    async fn final_card(&self, to: &str) -> SentMessage {
        self.until(&format!("the final card for {to}"), |_| {
            self.replies(to)
                .into_iter()
                .find(|m| matches!(template(m), "green" | "red" | "grey"))
        })
        .await
    }

    async fn get_json(&self, path: &str, token: &str) -> Value {
        let resp = self
            .http
            .get(format!("{}{path}", self.base()))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        resp.json().await.unwrap()
    }

    async fn admin(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base()))
            .bearer_auth(ADMIN_TOKEN);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}

#[allow(clippy::too_many_arguments)]
fn message_event(
    event_id: &str,
    message_id: &str,
    chat_id: &str,
    chat_type: &str,
    thread_id: &str,
    sender: &str,
    text: &str,
    mentions: Value,
) -> Value {
    let now = weft_shared::time::now_ms().to_string();
    json!({
        "schema": "2.0",
        "header": {"event_id": event_id, "event_type": "im.message.receive_v1", "create_time": now,
                   "token": "", "app_id": "cli_fake_app", "tenant_key": "tenant_fake"},
        "event": {
            "sender": {"sender_id": {"open_id": sender, "union_id": "on_x", "user_id": "u_x"},
                       "sender_type": "user", "tenant_key": "tenant_fake"},
            "message": {"message_id": message_id, "root_id": "", "parent_id": "", "create_time": now,
                        "chat_id": chat_id, "thread_id": thread_id, "chat_type": chat_type,
                        "message_type": "text", "content": json!({"text": text}).to_string(),
                        "mentions": mentions},
        },
    })
}

fn bot_mention() -> Value {
    json!([{"key": "@_user_1", "id": {"open_id": "ou_fake_bot", "union_id": "", "user_id": ""}, "name": "Weft"}])
}

fn template(m: &SentMessage) -> &str {
    m.content["header"]["template"].as_str().unwrap_or_default()
}

/// The markdown of a card element, by id.
fn element(m: &SentMessage, id: &str) -> String {
    m.content["body"]["elements"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["element_id"] == id)
        .filter_map(|e| e["content"].as_str())
        .collect()
}

fn body(m: &SentMessage) -> String {
    element(m, "reply_body")
}

fn notice(m: &SentMessage) -> String {
    element(m, "notice_text")
}

async fn dm_streams_one_card_with_reaction_and_footer(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let msg = w.dm("ou_alice", "@mock.tokens 40 @mock.delay 0 25");
    let card = w.final_card(&msg).await;
    assert_eq!(template(&card), "green");
    assert_eq!(body(&card), words(40));
    let footer = element(&card, "footer");
    assert!(
        footer.contains("tokens") && footer.contains("tok/s") && footer.ends_with("mock"),
        "{footer}"
    );
    assert_eq!(w.replies(&msg).len(), 1, "exactly one card");
    let records = w.fake.records();
    let patches = records.calls_to(
        "PATCH",
        &format!("/open-apis/im/v1/messages/{}", card.message_id),
    );
    assert!(!patches.is_empty(), "the card grew in place");
    let added = records.calls_to(
        "POST",
        &format!("/open-apis/im/v1/messages/{msg}/reactions"),
    );
    assert_eq!(added.len(), 1, "one THINKING reaction");
    assert_eq!(added[0].body["reaction_type"]["emoji_type"], "THINKING");
    w.until("the reaction to go", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
}

async fn redelivered_events_get_one_reply(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let (event, msg) = w.ids();
    let envelope = message_event(
        &event,
        &msg,
        "oc_dm_a",
        "p2p",
        "",
        "ou_alice",
        "hello",
        json!([]),
    );
    w.fake.push_event(envelope.clone(), PushOptions::default());
    w.final_card(&msg).await;

    // Redelivered after its ack.
    w.fake.push_event(envelope.clone(), PushOptions::default());
    w.until("the second delivery's ack", |f| {
        let r = f.records();
        let attempts = r.attempts_of(&event);
        (attempts.len() == 2
            && attempts
                .iter()
                .all(|a| matches!(a.outcome, weft_lark::fake::AttemptOutcome::Acked(_))))
        .then_some(())
    })
    .await;
    // Redelivered because the ack was "lost": the fake pushes it again itself.
    let (lost_event, lost_msg) = w.ids();
    w.fake.lose_next_acks(1);
    w.fake.push_event(
        message_event(
            &lost_event,
            &lost_msg,
            "oc_dm_a",
            "p2p",
            "",
            "ou_alice",
            "again",
            json!([]),
        ),
        PushOptions::default(),
    );
    w.until("the redelivery", |f| {
        (f.records().attempts_of(&lost_event).len() >= 2 && f.records().acked(&lost_event))
            .then_some(())
    })
    .await;
    w.final_card(&lost_msg).await;
    // After a restart of the gateway that took it.
    w.restart_gateway(0).await;
    w.fake.push_event(envelope, PushOptions::default());
    let marker = w.dm("ou_alice", "marker");
    w.final_card(&marker).await;
    assert_eq!(
        w.replies(&msg).len(),
        1,
        "one reply to the redelivered message"
    );
    assert_eq!(
        w.replies(&lost_msg).len(),
        1,
        "one reply to the unacked message"
    );
    assert!(w.fake.records().attempts_of(&event).len() >= 3);
}

async fn many_messages_get_one_reply_each(b: Backend) {
    // Four processes share the app's 50 calls/s (the fake enforces it like Lark).
    let share = if b == Backend::Distributed {
        "12"
    } else {
        "50"
    };
    let mut w = LarkWorld::start_with(
        b,
        2,
        fake_config(),
        &[("WEFT_LARK__CALLS_PER_SECOND", share)],
    )
    .await;
    let sent: Vec<(usize, String)> = (0..50)
        .map(|i| (i, w.dm(&format!("ou_user{i}"), &format!("message {i}"))))
        .collect();
    for (i, msg) in &sent {
        let card = w.final_card(msg).await;
        assert_eq!(body(&card), format!("You said: message {i}"));
    }
    for (_, msg) in &sent {
        assert_eq!(w.replies(msg).len(), 1, "one reply to {msg}");
    }
    if b == Backend::Distributed {
        let conns: std::collections::HashSet<_> = w
            .fake
            .records()
            .pushes
            .iter()
            .filter_map(|p| p.conn_id)
            .collect();
        assert_eq!(conns.len(), 2, "both replicas received events");
    }
}

async fn groups_need_a_mention_and_threads_get_thread_replies(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let (e1, plain) = w.ids();
    w.fake.push_event(
        message_event(
            &e1,
            &plain,
            "oc_group",
            "group",
            "",
            "ou_alice",
            "hello all",
            json!([]),
        ),
        PushOptions::default(),
    );
    let (e2, everyone) = w.ids();
    w.fake.push_event(
        message_event(
            &e2,
            &everyone,
            "oc_group",
            "group",
            "",
            "ou_alice",
            "@_all standup",
            json!([{"key": "@_all", "id": {"open_id": ""}, "name": "all"}]),
        ),
        PushOptions::default(),
    );
    let (e3, asked) = w.ids();
    w.fake.push_event(
        message_event(
            &e3,
            &asked,
            "oc_group",
            "topic_group",
            "omt_topic",
            "ou_bob",
            "@_user_1 what now?",
            bot_mention(),
        ),
        PushOptions::default(),
    );
    let card = w.final_card(&asked).await;
    assert_eq!(
        body(&card),
        "You said: what now?",
        "the mention is stripped"
    );
    assert_eq!(card.thread_id, "omt_topic", "answered in the thread");
    w.until("the acks", |f| {
        (f.records().acked(&e1) && f.records().acked(&e2)).then_some(())
    })
    .await;
    assert!(w.replies(&plain).is_empty(), "no mention, no answer");
    assert!(w.replies(&everyone).is_empty(), "@_all never triggers");
}

async fn stop_word_cancels_and_the_card_says_stopped(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let long = w.dm("ou_alice", "@mock.tokens 400 @mock.delay 0 25");
    w.until("text on the card", |_| {
        w.replies(&long)
            .into_iter()
            .find(|m| !body(m).is_empty() && body(m) != "…")
    })
    .await;
    let stop = w.dm("ou_alice", "停");
    let card = w.final_card(&long).await;
    assert_eq!(template(&card), "grey");
    let text = body(&card);
    assert!(
        text.starts_with("w1 w2") && text.ends_with("_🛑 stopped_"),
        "{text}"
    );
    assert!(!text.contains("w400"), "stopped before the end");
    let answer = w
        .until("the stop answer", |_| w.replies(&stop).into_iter().next())
        .await;
    assert_eq!(notice(&answer), "🛑 已停止");
    // With nothing running a stop word is just text for the agent.
    let idle = w.dm("ou_alice", "stop");
    assert_eq!(body(&w.final_card(&idle).await), "You said: stop");
}

async fn flush_answers_the_queue_at_once(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let long = w.dm("ou_alice", "@mock.tokens 400 @mock.delay 0 25");
    w.until("the card", |_| w.replies(&long).into_iter().next())
        .await;
    let second = w.dm("ou_alice", "second");
    let third = w.dm("ou_alice", "third");
    // Both wait behind the long reply (their THINKING reactions show that).
    w.until("both queued", |f| {
        let r = f.records();
        [&second, &third]
            .iter()
            .all(|m| {
                !r.calls_to("POST", &format!("/open-apis/im/v1/messages/{m}/reactions"))
                    .is_empty()
            })
            .then_some(())
    })
    .await;
    let flush = w.dm("ou_alice", "/flush");
    assert_eq!(template(&w.final_card(&long).await), "grey");
    let merged = w.final_card(&third).await;
    assert_eq!(template(&merged), "green");
    assert!(body(&merged).starts_with("You said:"), "{}", body(&merged));
    assert!(
        w.replies(&second).is_empty(),
        "the queue is answered once, in one card"
    );
    assert!(notice(&w.replies(&flush)[0]).contains("stopped"));
    let records = w.fake.records();
    assert!(
        records
            .calls_to(
                "POST",
                &format!("/open-apis/im/v1/messages/{flush}/reactions")
            )
            .is_empty(),
        "commands get no reaction"
    );
    w.until("reactions removed", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
}

async fn killed_worker_keeps_one_card(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let msg = w.dm("ou_alice", "@mock.tokens 120 @mock.delay 0 30");
    w.until("text on the card", |_| {
        w.replies(&msg)
            .into_iter()
            .find(|m| body(m).starts_with("w1 w2 w3"))
    })
    .await;
    match b {
        Backend::Distributed => {
            w.workers[0].kill();
            w.workers.push(App::spawn_worker(&w.env));
        }
        Backend::Embedded => w.restart_gateway(0).await,
    }
    let card = w.final_card(&msg).await;
    assert_eq!(template(&card), "green", "{}", w.logs());
    assert_eq!(body(&card), words(120), "complete at the end");
    assert_eq!(w.replies(&msg).len(), 1, "still one card after the crash");
}

async fn refused_card_falls_back(b: Backend) {
    let config = FakeConfig {
        card_table_limit: 1,
        ..fake_config()
    };
    let mut w = LarkWorld::start_with(b, 1, config, &[]).await;
    let tables = "tables:\n| a | b |\n|---|---|\n| 1 | 2 |\n\n| c | d |\n|---|---|\n| 3 | 4 |";
    let msg = w.dm("ou_alice", tables);
    let card = w.final_card(&msg).await;
    assert_eq!(template(&card), "green");
    let text = body(&card);
    assert!(
        text.contains("| 3 | 4 |") && text.contains("```text"),
        "tables shown as text: {text}"
    );
    let refused = w
        .fake
        .records()
        .calls
        .iter()
        .filter(|c| c.code == 230099)
        .count();
    assert!(refused > 0, "the fake refused the card with tables first");
}

async fn rate_limited_calls_are_retried(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    w.fake
        .fail_next_calls(4, 429, 99991400, "request trigger frequency limit");
    let msg = w.dm("ou_alice", "@mock.tokens 30 @mock.delay 0 10");
    let card = w.final_card(&msg).await;
    assert_eq!(body(&card), words(30), "nothing lost");
    assert_eq!(w.replies(&msg).len(), 1);
    let limited = w
        .fake
        .records()
        .calls
        .iter()
        .filter(|c| c.status == 429)
        .count();
    assert_eq!(limited, 4);
}

async fn linked_user_sees_the_lark_session_live(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let (s, alice) = w
        .admin(
            reqwest::Method::POST,
            "/v1/admin/users",
            Some(json!({"username": "alice", "password": "password-123"})),
        )
        .await;
    assert_eq!(s, 201, "{alice}");
    let msg = w.dm("ou_alice", "@mock.tokens 150 @mock.delay 0 30");
    w.until("the card", |_| {
        w.replies(&msg)
            .into_iter()
            .find(|m| !body(m).is_empty() && body(m) != "…")
    })
    .await;
    let path = format!("/v1/admin/users/{}/lark", alice["id"].as_str().unwrap());
    let (s, linked) = w
        .admin(
            reqwest::Method::PUT,
            &path,
            Some(json!({"open_id": "ou_alice"})),
        )
        .await;
    assert_eq!(s, 200, "{linked}");
    assert_eq!(linked["moved_sessions"], 1);
    let (s, again) = w
        .admin(
            reqwest::Method::PUT,
            &path,
            Some(json!({"open_id": "bad id!"})),
        )
        .await;
    assert_eq!(s, 422, "{again}");

    let login = w
        .http
        .post(format!("{}/v1/auth/login", w.base()))
        .json(&json!({"username": "alice", "password": "password-123"}))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let token = login["token"].as_str().unwrap();
    let sessions = w.get_json("/v1/sessions", token).await;
    let session = &sessions["sessions"][0];
    assert_eq!(session["source"], "lark", "{sessions}");
    assert!(
        session["active_run_id"].is_string(),
        "the reply is still streaming: {session}"
    );
    let resp = w
        .http
        .get(format!(
            "{}/v1/sessions/{}/stream",
            w.base(),
            session["id"].as_str().unwrap()
        ))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let events = Sse::new(resp).until_terminal().await;
    assert_eq!(events.last().unwrap().ty, "done");
    assert_eq!(rendered_text(&events), words(150));
    // Later messages from that Lark identity are alice's.
    let next = w.dm("ou_alice", "after linking");
    w.final_card(&next).await;
    let sessions = w.get_json("/v1/sessions", token).await;
    assert_eq!(
        sessions["sessions"].as_array().unwrap().len(),
        1,
        "same conversation: {sessions}"
    );
}

async fn commands_and_unreadable_messages(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let first = w.dm("ou_alice", "first conversation");
    w.final_card(&first).await;
    let help = w.dm("ou_alice", "/help");
    let help_card = w
        .until("help", |_| w.replies(&help).into_iter().next())
        .await;
    assert!(notice(&help_card).contains("/flush"));
    let new = w.dm("ou_alice", "/new");
    w.until("/new", |_| w.replies(&new).into_iter().next())
        .await;
    let second = w.dm("ou_alice", "second conversation");
    w.final_card(&second).await;
    let list = w.dm("ou_alice", "/sessions");
    let listing = notice(
        &w.until("/sessions", |_| w.replies(&list).into_iter().next())
            .await,
    );
    assert!(
        listing.contains("1. second conversation ←") && listing.contains("2. first conversation"),
        "{listing}"
    );
    let resume = w.dm("ou_alice", "/resume 2");
    w.until("/resume", |_| w.replies(&resume).into_iter().next())
        .await;
    let models = w.dm("ou_alice", "/model");
    assert!(
        notice(
            &w.until("/model", |_| w.replies(&models).into_iter().next())
                .await
        )
        .contains("`mock` ←")
    );
    let bad = w.dm("ou_alice", "/model nope");
    assert!(
        notice(
            &w.until("/model nope", |_| w.replies(&bad).into_iter().next())
                .await
        )
        .contains("unknown model")
    );
    let unknown = w.dm("ou_alice", "/frobnicate");
    let unknown_card = notice(
        &w.until("unknown", |_| w.replies(&unknown).into_iter().next())
            .await,
    );
    assert!(unknown_card.contains("/frobnicate") && unknown_card.contains("/help"));
    let (event, image) = w.ids();
    let mut envelope = message_event(
        &event,
        &image,
        "oc_dm_ou_alice",
        "p2p",
        "",
        "ou_alice",
        "",
        json!([]),
    );
    envelope["event"]["message"]["message_type"] = json!("image");
    envelope["event"]["message"]["content"] = json!(r#"{"image_key":"img_1"}"#);
    w.fake.push_event(envelope, PushOptions::default());
    let unreadable = w
        .until("the image answer", |_| w.replies(&image).into_iter().next())
        .await;
    assert!(notice(&unreadable).contains("only read text"));
    // Back in the first conversation: the agent sees its history.
    let back = w.dm("ou_alice", "back again");
    assert_eq!(body(&w.final_card(&back).await), "You said: back again");
    // Junk is acked and ignored; the bot keeps working.
    let junk = w.fake.push_event(
        json!({"schema": "2.0", "header": {"event_id": "junk1", "event_type": "im.message.receive_v1", "app_id": "cli_fake_app"}, "event": {"message": 7}}),
        PushOptions::default(),
    );
    let other_app = w.fake.push_event(
        json!({"schema": "2.0", "header": {"event_id": "other1", "event_type": "im.message.receive_v1", "app_id": "cli_other"},
               "event": message_event("x", "om_other", "oc_x", "p2p", "", "ou_x", "hi", json!([]))["event"].clone()}),
        PushOptions::default(),
    );
    let alive = w.dm("ou_alice", "still there?");
    w.final_card(&alive).await;
    w.until("the acks", |f| {
        (f.records().acked(&junk) && f.records().acked(&other_app)).then_some(())
    })
    .await;
    // The admin command links a Lark identity from the shell.
    let (s, _) = w
        .admin(
            reqwest::Method::POST,
            "/v1/admin/users",
            Some(json!({"username": "bob", "password": "password-123"})),
        )
        .await;
    assert_eq!(s, 201);
    let link = |user: &str| {
        let mut cmd = w
            .env
            .command(&["admin", "user", "link-lark", user, "ou_alice"]);
        cmd.output().unwrap()
    };
    let missing = link("nobody");
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no user"));
    let linked = link("bob");
    assert!(
        linked.status.success(),
        "{}",
        String::from_utf8_lossy(&linked.stderr)
    );
    let said = String::from_utf8_lossy(&linked.stdout);
    assert!(
        said.contains("linked ou_alice to bob (2 Lark sessions moved over)"),
        "{said}"
    );
    let records = w.fake.records();
    assert!(w.replies("om_other").is_empty());
    for command in [&help, &new, &list, &resume, &models, &bad, &unknown] {
        assert!(
            records
                .calls_to(
                    "POST",
                    &format!("/open-apis/im/v1/messages/{command}/reactions")
                )
                .is_empty()
        );
    }
}

async fn limits_answer_with_a_friendly_card(b: Backend) {
    let mut w = LarkWorld::start_with(
        b,
        1,
        fake_config(),
        &[("WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER", "1")],
    )
    .await;
    let first = w.dm("ou_alice", "one");
    w.final_card(&first).await;
    let second = w.dm("ou_alice", "two");
    let card = w
        .until("the limit card", |_| w.replies(&second).into_iter().next())
        .await;
    assert!(notice(&card).contains("⏳"), "{}", notice(&card));
    w.until("no reaction left", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
}

async fn bad_secret_stops_start_up_clearly(b: Backend) {
    let fake = FakeLark::spawn(fake_config()).await.unwrap();
    let mut env = Env::new(b, &[]).await;
    env.extra.extend(lark_env(&fake));
    env.extra
        .push(("WEFT_LARK__APP_SECRET".into(), "wrong".into()));
    let cmd = if b == Backend::Embedded {
        "up"
    } else {
        "serve"
    };
    let mut command = env.command(&[cmd, "--listen", "127.0.0.1:0"]);
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("app secret invalid"),
        "Lark's own words: {stderr}"
    );
    assert!(stderr.contains("lark.app_secret"), "what to fix: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

async fn long_and_awkward_replies_stay_readable(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    // About 33 KB of text: more than one card holds.
    let long = w.dm("ou_alice", "@mock.tokens 5000");
    let first = w.final_card(&long).await;
    let cards = w
        .until("every card", |_| {
            let cards = w.replies(&long);
            (cards.len() == 2 && cards.iter().all(|c| template(c) == "green")).then_some(cards)
        })
        .await;
    assert_eq!(cards[0], first);
    let title = cards[1].content["header"]["title"]["content"]
        .as_str()
        .unwrap();
    assert_eq!(title, "Weft (continued 2/2)");
    let text: String = cards.iter().map(body).collect();
    assert_eq!(
        text.split_whitespace().collect::<Vec<_>>(),
        words(5000).split_whitespace().collect::<Vec<_>>()
    );
    assert!(
        element(&cards[1], "footer").contains("tok/s"),
        "the footer ends the last card"
    );
    // The model cannot @everyone.
    let at = w.dm("ou_alice", "<at id=all></at> hi");
    let card = w.final_card(&at).await;
    assert!(!body(&card).contains("<at"), "{}", body(&card));
    assert!(body(&card).contains("&lt;at id=all>"));
}

async fn failed_runs_end_the_card_red(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let msg = w.dm("ou_alice", "@mock.fail 400");
    let card = w.final_card(&msg).await;
    assert_eq!(template(&card), "red");
    assert!(body(&card).starts_with("**❌ "), "{}", body(&card));
    w.until("the reaction to go", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
}
