//! `notify.deliver`: one notification to one channel (docs/schedules.md
//! "Channels"). The delivery row and this job were written with the
//! notification, in the transaction that ended or suspended the scheduled run
//! (`store::channels`); this does the sending and records each try.
//!
//! Each delivery is its own job, so a receiver that is down holds back only
//! its own deliveries (and one slot while a try waits out its timeout,
//! `schedules.delivery_timeout_ms`); a try that fails for a reason that may
//! pass — a timeout, a refused connection, a 5xx (but 501 and 505), 408 or
//! 429 — is tried again
//! after 2 s, 4 s, 8 s … (9 tries over about 8.5 minutes), its error visible
//! in the delivery meanwhile; one that cannot — a 4xx, a URL the SSRF guard
//! refuses, a Lark permission, an address the SMTP server rejects for good —
//! fails at once. Either way the schedule's history and the channel show it.
//!
//! **Never twice.** A delivery is made once per notification and channel
//! (the notification is unique by its key, and fans out only when it is
//! inserted), and a delivered one is never sent again. Only a worker that
//! dies between the receiver's answer and the record of it can make a second
//! try of a message that arrived; for that:
//! - Lark sends carry the delivery id as the `uuid`, which Lark deduplicates
//!   for an hour: the second send returns the first message;
//! - a webhook carries the delivery id in `Weft-Delivery` (and the body's
//!   `id`), the same on every try, for the receiver to drop a repeat;
//! - an email carries a `Message-ID` made of the delivery id.
//!
//! **Webhook signature.** `Weft-Signature: t=<unix seconds>,v1=<hex>`, where
//! `v1` is HMAC-SHA256 under the channel's secret of `"{t}.{body}"`: a
//! receiver recomputes it over the raw body and rejects old `t`s (replays).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hmac::{Hmac, Mac};
use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde_json::Value;
use sha2::Sha256;
use weft_config::{Config, LiveConfig};
use weft_lark::card::{
    ApprovalAnswer, ApprovalCard, CardState, ClickContext, PlanAnswer, PlanCard, QuestionAnswer,
    QuestionCard, notice_card,
};
use weft_lark::rest::{ErrorClass, MessageContent, ReceiveIdType};
use weft_lark::sender::RateAwareSender;
use weft_lark::text::Lang;
use weft_shared::api::{ChannelTarget, DeliveryStatus, NotificationKind, WebhookPayload};
use weft_shared::ids::RunId;
use weft_shared::job::DeliverNotification;
use weft_shared::states::{ApprovalStatus, PlanStatus, QuestionStatus};
use weft_shared::time::rfc3339;
use weft_store::{DeliveryWork, Store};
use weft_tools::web::{GuardedPost, PostError};

use super::{BackgroundJob, JobContext, JobError};
use crate::lark::open_for;

/// Deliveries tried at once by one worker: most of a try is waiting on a
/// receiver, so more than the default job slots.
pub const AT_ONCE: usize = 16;

pub struct Deliver {
    pub live: LiveConfig,
    /// The Lark REST side, when `[lark]` is configured.
    pub lark: Option<RateAwareSender>,
    /// The webhook client of the configuration it was made for (see
    /// [`Deliver::poster`]).
    post: Mutex<Option<(Arc<Config>, Arc<GuardedPost>)>>,
}

impl Deliver {
    pub fn new(live: LiveConfig, lark: Option<RateAwareSender>) -> Deliver {
        Deliver {
            live,
            lark,
            post: Mutex::new(None),
        }
    }

    /// The webhook client for `config`: one per configuration, so its
    /// connections are pooled and its TLS roots loaded once, and made anew
    /// after a reload (the guard's rules or the timeout may have changed).
    fn poster(&self, config: &Arc<Config>) -> Result<Arc<GuardedPost>, String> {
        let mut cached = self.post.lock().expect("not poisoned");
        if let Some((made_for, post)) = cached.as_ref()
            && Arc::ptr_eq(made_for, config)
        {
            return Ok(post.clone());
        }
        let timeout = Duration::from_millis(config.schedules.delivery_timeout_ms);
        let post = Arc::new(GuardedPost::new(&config.tools.web_fetch, timeout)?);
        *cached = Some((config.clone(), post.clone()));
        Ok(post)
    }
}

/// How a try went, before it is recorded.
enum Tried {
    Delivered,
    /// Worth another try.
    Again(String),
    /// No try will fix it.
    Never(String),
}

impl BackgroundJob for Deliver {
    type Payload = DeliverNotification;

    async fn run(&self, cx: JobContext, job: DeliverNotification) -> Result<(), JobError> {
        let store = &cx.store;
        let id = &job.delivery_id;
        let Some(work) = store.delivery(id).await.map_err(retry)? else {
            return Ok(()); // its notification is gone (the person was deleted)
        };
        if work.delivery.status != DeliveryStatus::Pending {
            return Ok(()); // delivered, or failed for good, before this try
        }
        let config = self.live.get();
        let tried = match &work.target {
            None => Tried::Never("the channel was deleted".into()),
            Some(target) => self.try_once(store, &config, target, &work).await,
        };
        match tried {
            Tried::Delivered => {
                store
                    .delivery_tried(id, DeliveryStatus::Delivered, None)
                    .await
                    .map_err(retry)?;
                metrics::counter!("weft_deliveries_total", "outcome" => "delivered").increment(1);
                Ok(())
            }
            Tried::Again(why) => {
                store
                    .delivery_tried(id, DeliveryStatus::Pending, Some(&why))
                    .await
                    .map_err(retry)?;
                metrics::counter!("weft_deliveries_total", "outcome" => "retried").increment(1);
                Err(JobError::Retry(why))
            }
            Tried::Never(why) => {
                store
                    .delivery_tried(id, DeliveryStatus::Failed, Some(&why))
                    .await
                    .map_err(retry)?;
                metrics::counter!("weft_deliveries_total", "outcome" => "failed").increment(1);
                Err(JobError::Fail(why))
            }
        }
    }

    async fn gave_up(&self, store: &Store, job: DeliverNotification, error: &str) {
        if let Err(e) = store.delivery_gave_up(&job.delivery_id, error).await {
            tracing::warn!(delivery = %job.delivery_id, error = %e, "could not mark a delivery failed");
        }
    }
}

fn retry(e: weft_store::StoreError) -> JobError {
    JobError::Retry(e.to_string())
}

impl Deliver {
    async fn try_once(
        &self,
        store: &Store,
        config: &Arc<Config>,
        target: &ChannelTarget,
        work: &DeliveryWork,
    ) -> Tried {
        let timeout = Duration::from_millis(config.schedules.delivery_timeout_ms);
        match target {
            ChannelTarget::Webhook { url, secret } => match self.poster(config) {
                Ok(post) => webhook(&post, url, secret.as_deref().unwrap_or(""), work).await,
                Err(e) => Tried::Again(e),
            },
            ChannelTarget::Lark { chat_id } => {
                let Some(lark) = &self.lark else {
                    return Tried::Again("this worker has no [lark] settings".into());
                };
                let (id_type, receive_id) = match (chat_id, &work.owner_open_id) {
                    (Some(chat), _) => (ReceiveIdType::ChatId, chat.clone()),
                    (None, Some(open_id)) => (ReceiveIdType::OpenId, open_id.clone()),
                    (None, None) => {
                        return Tried::Never(
                            "the owner's account is no longer linked to Lark".into(),
                        );
                    }
                };
                let lang = crate::lark::tenant_lang(&config.lark);
                let cards = match wait_cards(store, work, lang).await {
                    Ok(cards) => cards,
                    Err(e) => return Tried::Again(e.to_string()),
                };
                lark_send(lark, timeout, id_type, &receive_id, work, cards).await
            }
            ChannelTarget::Email { to } => email(config, timeout, to, work).await,
        }
    }
}

/// The event a notification is, as webhooks and subjects name it.
fn event(kind: NotificationKind) -> &'static str {
    match kind {
        NotificationKind::ScheduleFinished => "schedule.finished",
        NotificationKind::ScheduleWaiting => "schedule.waiting",
        NotificationKind::RunWaiting => "run.waiting",
        NotificationKind::ChannelTest => "channel.test",
    }
}

/// `t=<unix seconds>,v1=<hex HMAC-SHA256 of "{t}.{body}">`.
pub fn signature(secret: &str, unix_secs: i64, body: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(format!("{unix_secs}.").as_bytes());
    mac.update(body.as_bytes());
    format!(
        "t={unix_secs},v1={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

async fn webhook(post: &GuardedPost, url: &str, secret: &str, work: &DeliveryWork) -> Tried {
    let url = match url::Url::parse(url) {
        Ok(u) => u,
        Err(e) => return Tried::Never(format!("the stored URL does not parse: {e}")),
    };
    let payload = WebhookPayload {
        id: work.delivery.id.clone(),
        event: event(work.delivery.notification_kind).into(),
        title: work.title.clone(),
        text: work.text.clone(),
        schedule_id: work.schedule_id.clone(),
        run_id: work.delivery.run_id.clone(),
        session_id: work.session_id.clone(),
        created_at: rfc3339(work.notification_created_at),
    };
    let body = serde_json::to_string(&payload).expect("a payload serialises");
    let now = weft_shared::time::now_ms() / 1000;
    let headers = [
        ("Weft-Delivery", work.delivery.id.clone()),
        ("Weft-Event", payload.event.clone()),
        ("Weft-Signature", signature(secret, now, &body)),
    ];
    match post.post_json(&url, &headers, body).await {
        Ok(answer) if (200..300).contains(&answer.status) => Tried::Delivered,
        Ok(answer) => {
            let why = match answer.body_start.trim() {
                "" => format!("the receiver answered {}", answer.status),
                start => format!("the receiver answered {}: {start}", answer.status),
            };
            match answer.status {
                // 501 and 505: the receiver does not do what is asked; no
                // retry changes that.
                501 | 505 => Tried::Never(why),
                408 | 425 | 429 | 500.. => Tried::Again(why),
                300..=399 => Tried::Never(format!(
                    "{why} (redirects are not followed: give the final URL)"
                )),
                _ => Tried::Never(why),
            }
        }
        Err(PostError::Refused(why)) => Tried::Never(why),
        Err(PostError::Transport(why)) => Tried::Again(why),
    }
}

/// The cards a waiting notification brings to Lark: each approval, question
/// and plan of its step that is still open, with its buttons — a click
/// decides it as one on the run's own card would (the gateway's click
/// handler goes by the wait's id and the clicker, not by the chat). Empty
/// for other notifications, or when everything was decided meanwhile.
async fn wait_cards(
    store: &Store,
    work: &DeliveryWork,
    lang: Lang,
) -> Result<Vec<(String, Value)>, weft_store::StoreError> {
    if !matches!(
        work.delivery.notification_kind,
        NotificationKind::ScheduleWaiting | NotificationKind::RunWaiting
    ) {
        return Ok(Vec::new());
    }
    let (Some(run), Some(step)) = (
        work.delivery.run_id.as_deref().and_then(RunId::parse),
        work.notification_key
            .rsplit(':')
            .nth(1)
            .and_then(|s| s.parse::<u32>().ok()),
    ) else {
        return Ok(Vec::new());
    };
    let context = ClickContext {
        run: run.clone(),
        step,
        lang,
    }
    .to_map();
    // The delivery's id keeps these apart from the run's own cards (a
    // schedule into a Lark chat shows them there too; the first click wins).
    let uuid = |what: &str, id: &str| -> String {
        format!("{}-{what}-{id}", work.delivery.id)
            .chars()
            .take(50)
            .collect()
    };
    let mut cards = Vec::new();
    for a in store.step_approvals(&run, step).await? {
        if a.status == ApprovalStatus::Pending {
            let card = ApprovalCard {
                approval_id: a.id.clone(),
                tool: a.name,
                args: a.args,
                context: context.clone(),
                answer: ApprovalAnswer::Open {
                    expires_in: open_for(a.expires_at),
                },
            };
            cards.push((uuid("a", &a.id), card.render_in(lang)));
        }
    }
    for q in store.step_questions(&run, step).await? {
        if q.status == QuestionStatus::Pending {
            let card = QuestionCard {
                question_id: q.id.clone(),
                question: q.question,
                options: q.options,
                multiple: q.multiple,
                allow_text: q.allow_text,
                context: context.clone(),
                answer: QuestionAnswer::Open {
                    expires_in: open_for(q.expires_at),
                },
            };
            cards.push((uuid("q", &q.id), card.render_in(lang)));
        }
    }
    for p in store.step_plans(&run, step).await? {
        if p.status == PlanStatus::Proposed {
            let card = PlanCard {
                plan_id: p.id.clone(),
                markdown: p.markdown,
                context: context.clone(),
                answer: PlanAnswer::Open {
                    expires_in: open_for(p.expires_at),
                },
            };
            cards.push((uuid("p", &p.id), card.render_in(lang)));
        }
    }
    Ok(cards)
}

/// Sends the notice card, then each of `cards`: all under uuids made of the
/// delivery's id, so a second try re-sends none that Lark already has.
async fn lark_send(
    lark: &RateAwareSender,
    timeout: Duration,
    id_type: ReceiveIdType,
    receive_id: &str,
    work: &DeliveryWork,
    cards: Vec<(String, Value)>,
) -> Tried {
    let state = match work.delivery.notification_kind {
        NotificationKind::ScheduleWaiting | NotificationKind::RunWaiting => {
            CardState::AwaitingApproval
        }
        _ if work.text.starts_with("failed") => CardState::Failed,
        _ => CardState::Done,
    };
    let notice = notice_card(&work.title, state, &work.text);
    let all = std::iter::once((work.delivery.id.clone(), notice)).chain(cards);
    for (uuid, card) in all {
        let card = MessageContent::Interactive(card);
        let send = lark.send_message_once(id_type, receive_id, &card, &uuid);
        match tokio::time::timeout(timeout, send).await {
            Err(_) => {
                return Tried::Again(format!(
                    "Lark did not answer within {} s",
                    timeout.as_secs()
                ));
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                return match e.class() {
                    ErrorClass::Retryable => Tried::Again(e.to_string()),
                    _ => Tried::Never(e.to_string()),
                };
            }
        }
    }
    Tried::Delivered
}

async fn email(config: &Config, timeout: Duration, to: &str, work: &DeliveryWork) -> Tried {
    let smtp = config.email.smtp_url.expose().trim();
    if smtp.is_empty() {
        return Tried::Never("email is not set up on this server ([email] smtp_url)".into());
    }
    let from: Mailbox = match config.email.from.parse() {
        Ok(m) => m,
        Err(e) => return Tried::Never(format!("email.from {:?}: {e}", config.email.from)),
    };
    let to: Mailbox = match to.parse() {
        Ok(m) => m,
        Err(e) => return Tried::Never(format!("{to:?} is not an address: {e}")),
    };
    let domain = from.email.domain().to_string();
    let message = Message::builder()
        .from(from)
        .to(to)
        .subject(format!("[Weft] {}", work.title))
        .message_id(Some(format!("<{}@{domain}>", work.delivery.id)))
        .header(lettre::message::header::ContentType::TEXT_PLAIN)
        .body(email_text(work));
    let message = match message {
        Ok(m) => m,
        Err(e) => return Tried::Never(format!("the message could not be built: {e}")),
    };
    let transport = match AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp) {
        Ok(t) => t.timeout(Some(timeout)).build(),
        Err(e) => return Tried::Never(format!("email.smtp_url: {e}")),
    };
    match tokio::time::timeout(timeout, transport.send(message)).await {
        Err(_) => Tried::Again(format!(
            "the SMTP server did not answer within {} s",
            timeout.as_secs()
        )),
        Ok(Ok(_)) => Tried::Delivered,
        Ok(Err(e)) if e.is_permanent() => Tried::Never(format!("the SMTP server refused it: {e}")),
        Ok(Err(e)) => Tried::Again(format!("SMTP: {e}")),
    }
}

fn email_text(work: &DeliveryWork) -> String {
    let mut text = format!("{}\n\n{}\n", work.title, work.text);
    if let Some(run) = &work.delivery.run_id {
        text.push_str(&format!("\nRun: {run}"));
    }
    if let Some(session) = &work.session_id {
        text.push_str(&format!("\nSession: {session}"));
    }
    text.push_str(&format!("\nDelivery: {}\n", work.delivery.id));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_time_dot_body() {
        // Computed independently: python3 -c "import hmac,hashlib;
        // print(hmac.new(b'whsec_test', b'1700000000.{\"a\":1}', hashlib.sha256).hexdigest())"
        assert_eq!(
            signature("whsec_test", 1_700_000_000, r#"{"a":1}"#),
            "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
        );
    }
}
