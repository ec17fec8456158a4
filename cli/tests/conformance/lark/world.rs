//! The world the Lark scenarios run in: a fake Lark, Weft processes connected
//! to it, and helpers that read what users would see back from the fake (cards
//! as last patched, call records).

use std::time::Duration;

use serde_json::{Value, json};
use weft_lark::fake::{FakeConfig, FakeLark, PushOptions, SentMessage};

use crate::harness::*;

pub(super) const WAIT: Duration = Duration::from_secs(30);

/// A fake Lark and Weft processes connected to it.
pub(super) struct LarkWorld {
    pub(super) fake: FakeLark,
    pub(super) env: Env,
    pub(super) gateways: Vec<Proc>,
    pub(super) workers: Vec<Proc>,
    pub(super) http: reqwest::Client,
    next: u64,
}

pub(super) fn fake_config() -> FakeConfig {
    FakeConfig {
        ack_timeout: Duration::from_secs(1),
        redelivery_delays: vec![Duration::from_millis(300)],
        ..FakeConfig::default()
    }
}

pub(super) fn lark_env(fake: &FakeLark) -> Vec<(String, String)> {
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
    pub(super) async fn start(b: Backend) -> LarkWorld {
        LarkWorld::start_with(b, 1, fake_config(), &[]).await
    }

    /// `replicas` gateways and as many workers (embedded: one process).
    pub(super) async fn start_with(
        b: Backend,
        replicas: usize,
        config: FakeConfig,
        extra: &[(&str, &str)],
    ) -> LarkWorld {
        let fake = FakeLark::spawn(config).await.expect("fake lark binds");
        let env = Env::new(b, extra).await;
        LarkWorld::start_in(fake, env, replicas).await
    }

    /// [`Self::start_with`] in a prepared `env` (one whose settings need its
    /// database name, say).
    pub(super) async fn start_in(fake: FakeLark, mut env: Env, replicas: usize) -> LarkWorld {
        let b = env.backend;
        // The contact API knows the usual members by name.
        for (open_id, name) in [("ou_alice", "Alice"), ("ou_bob", "Bob"), ("ou_li", "李雷")] {
            fake.set_user_name(open_id, name);
        }
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

    pub(super) fn spawn_gateway(&self) -> Proc {
        let cmd = match self.env.backend {
            Backend::Embedded => "up",
            Backend::Distributed => "serve",
        };
        Proc::spawn(
            self.env.command(&[cmd, "--listen", "127.0.0.1:0"]),
            "listening on http://",
        )
    }

    pub(super) async fn wait_connections(&self, n: usize) {
        eventually(
            WAIT,
            &format!("{n} live lark connections"),
            async || match self.fake.live_connections() {
                live if live == n => Ok(()),
                live => Err(live),
            },
        )
        .await
    }

    /// Kills gateway `i` and starts it again on the same data.
    pub(super) async fn restart_gateway(&mut self, i: usize) {
        self.gateways[i].kill();
        let n = self.gateways.len();
        self.wait_connections(n - 1).await;
        self.gateways[i] = self.spawn_gateway();
        self.wait_connections(n).await;
    }

    pub(super) fn base(&self) -> String {
        format!(
            "http://{}",
            self.gateways[0].addr.clone().expect("gateway address")
        )
    }

    pub(super) fn logs(&self) -> String {
        let all: Vec<String> = self
            .gateways
            .iter()
            .chain(&self.workers)
            .map(Proc::logs)
            .collect();
        all.join("\n---\n")
    }

    pub(super) fn ids(&mut self) -> (String, String) {
        self.next += 1;
        (
            format!("ev_{}", self.next),
            format!("om_user_{}", self.next),
        )
    }

    /// A direct message from `sender`; returns its Lark message id.
    pub(super) fn dm(&mut self, sender: &str, text: &str) -> String {
        let (event, message) = self.ids();
        let chat = format!("oc_dm_{sender}");
        self.fake.push_event(
            message_event(&event, &message, &chat, "p2p", "", sender, text, json!([])),
            PushOptions::default(),
        );
        message
    }

    /// A message in group `chat` from `sender` that @mentions the bot; returns
    /// its Lark message id.
    pub(super) fn group(&mut self, chat: &str, sender: &str, text: &str) -> String {
        let (event, message) = self.ids();
        self.fake.push_event(
            message_event(
                &event,
                &message,
                chat,
                "group",
                "",
                sender,
                &format!("@_user_1 {text}"),
                bot_mention(),
            ),
            PushOptions::default(),
        );
        message
    }

    /// A Weft account `name` linked to Lark identity `open_id`; its login token.
    pub(super) async fn linked_account(&self, name: &str, open_id: &str) -> String {
        let (s, user) = self
            .admin(
                reqwest::Method::POST,
                "/v1/admin/users",
                Some(json!({"username": name, "password": "password-123"})),
            )
            .await;
        assert_eq!(s, 201, "{user}");
        let path = format!("/v1/admin/users/{}/lark", user["id"].as_str().unwrap());
        let (s, linked) = self
            .admin(
                reqwest::Method::PUT,
                &path,
                Some(json!({"open_id": open_id})),
            )
            .await;
        assert_eq!(s, 200, "{linked}");
        let login: Value = self
            .http
            .post(format!("{}/v1/auth/login", self.base()))
            .json(&json!({"username": name, "password": "password-123"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        login["token"].as_str().unwrap().to_owned()
    }

    /// Waits until `check` finds something in what the fake holds.
    pub(super) async fn until<T>(&self, what: &str, check: impl Fn(&FakeLark) -> Option<T>) -> T {
        eventually_with(
            WAIT,
            POLL,
            what,
            || self.logs(),
            async || check(&self.fake).ok_or("nothing yet"),
        )
        .await
    }

    /// The replies to Lark message `to` (cards and notices), oldest first.
    pub(super) fn replies(&self, to: &str) -> Vec<SentMessage> {
        self.fake
            .sent_messages()
            .into_iter()
            .filter(|m| m.reply_to == to)
            .collect()
    }

    /// The reply card to `to` once it shows an ended reply (approval,
    /// question and plan cards, which turn green, red or grey when answered,
    /// are not reply cards).
    pub(super) async fn final_card(&self, to: &str) -> SentMessage {
        self.until(&format!("the final card for {to}"), |_| {
            self.replies(to).into_iter().find(|m| {
                matches!(template(m), "green" | "red" | "grey")
                    && element(m, "approval_call").is_empty()
                    && element(m, "question_text").is_empty()
                    && element(m, "plan_text").is_empty()
            })
        })
        .await
    }

    /// The decoded answer that rode in the ack of card callback `event`.
    pub(super) async fn answer(&self, event: &str) -> Value {
        self.until(&format!("the answer to click {event}"), |f| {
            f.records().ack_data(event).cloned()
        })
        .await
    }

    pub(super) async fn get_json(&self, path: &str, token: &str) -> Value {
        let resp = self
            .http
            .get(format!("{}{path}", self.base()))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        resp.json().await.unwrap()
    }

    pub(super) async fn admin(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        self.call(method, path, ADMIN_TOKEN, body).await
    }

    /// An API call with `token`: its status and JSON body (null when none).
    pub(super) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base()))
            .bearer_auth(token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn message_event(
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

pub(super) fn bot_mention() -> Value {
    json!([{"key": "@_user_1", "id": {"open_id": "ou_fake_bot", "union_id": "", "user_id": ""}, "name": "Weft"}])
}

pub(super) fn template(m: &SentMessage) -> &str {
    m.content["header"]["template"].as_str().unwrap_or_default()
}

/// The markdown of a card element, by id.
pub(super) fn element(m: &SentMessage, id: &str) -> String {
    m.content["body"]["elements"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["element_id"] == id)
        .filter_map(|e| e["content"].as_str())
        .collect()
}

pub(super) fn body(m: &SentMessage) -> String {
    element(m, "reply_body")
}

/// A card element by id, anywhere in a card document (panels included).
pub(super) fn find(card: &Value, id: &str) -> Option<Value> {
    match card {
        Value::Object(map) if map.get("element_id").and_then(Value::as_str) == Some(id) => {
            Some(card.clone())
        }
        Value::Object(map) => map.values().find_map(|v| find(v, id)),
        Value::Array(items) => items.iter().find_map(|v| find(v, id)),
        _ => None,
    }
}

/// The tool calls on a card, one line each: the older calls' lines, then each
/// folded panel's title (`✅ current_time · 12 ms`).
pub(super) fn tools(m: &SentMessage) -> String {
    let elements = m.content["body"]["elements"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut lines: Vec<String> = element(m, "tools_more")
        .lines()
        .map(str::to_owned)
        .collect();
    lines.extend(
        elements
            .iter()
            .filter(|e| e["tag"] == "collapsible_panel")
            .filter(|e| {
                e["element_id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("tool_"))
            })
            .filter_map(|e| e["header"]["title"]["content"].as_str().map(str::to_owned)),
    );
    lines.join("\n")
}

impl LarkWorld {
    /// Every document card `m` showed, oldest first: a CardKit entity's create
    /// and updates, or a plain card's send and patches.
    pub(super) fn history(&self, m: &SentMessage) -> Vec<Value> {
        let records = self.fake.records();
        if let Some(card_id) = &m.card_id {
            return records
                .entity_documents(card_id)
                .into_iter()
                .map(|(_, doc)| doc)
                .collect();
        }
        let patch = format!("/open-apis/im/v1/messages/{}", m.message_id);
        let reply = format!("/open-apis/im/v1/messages/{}/reply", m.reply_to);
        records
            .calls
            .iter()
            .filter(|c| c.status == 200 && (c.path == patch || c.path == reply))
            .filter(|c| c.path == patch || c.answer["data"]["message_id"] == m.message_id.as_str())
            .filter_map(|c| serde_json::from_str(c.body["content"].as_str()?).ok())
            .collect()
    }
}

pub(super) fn notice(m: &SentMessage) -> String {
    element(m, "notice_text")
}

/// What the model was sent, as the newest `@mock.context` reply among a
/// session's `messages` shows it (`{"system", "users", "tools"}`).
pub(super) fn picture(messages: &[Value]) -> Value {
    serde_json::from_str(
        messages
            .iter()
            .rev()
            .find(|m| m["role"] == "assistant")
            .and_then(|m| m["content"].as_str())
            .expect("a reply"),
    )
    .expect("a @mock.context picture")
}
