//! What the Lark bot keeps in the database (docs/lark.md): inbound dedupe
//! (the inbox itself is [`super::lark_inbox`]),
//! which Weft user a Lark sender is, which session a Lark conversation talks to,
//! the THINKING reaction on each user message, and the reply cards of each run.
//!
//! Everything that must hold across gateway replicas and restarts lives here and
//! not in memory: any replica may receive any event (Lark spreads events over the
//! long connections of an app), and Lark redelivers an event for hours when it
//! thinks an ack was lost.

use super::lark_cards::{LarkCard, decode_cards};
use super::sessions::{SELECT as SESSION_SELECT, SessionRecord};
use super::users::AuthUser;
use super::{Conflict, Result, Store, StoreError, get_i64, get_opt_str, get_str};
use weft_wire::ids::{MessageId, RunId, SessionId, UserId};
use weft_wire::time::now_ms;

/// Marks a reaction whose reply has ended (see the migration's comment).
const REACTION_ENDED: &str = "-";

/// Whether an inbound Lark message is new to every replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboundClaim {
    /// Stored by this delivery: its holder handles it.
    New,
    /// Seen before (a redelivery, or another replica's event): do nothing.
    Duplicate,
}

/// A Lark conversation: a p2p chat, a group, or a topic thread inside a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LarkChat {
    pub chat_id: String,
    /// Empty outside topic threads.
    pub thread_id: String,
}

impl LarkChat {
    /// The key a conversation's binding is stored under.
    pub fn key(&self) -> String {
        if self.thread_id.is_empty() {
            self.chat_id.clone()
        } else {
            format!("{}/{}", self.chat_id, self.thread_id)
        }
    }
}

/// Where a run's reply goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LarkTarget {
    pub chat: LarkChat,
    /// The Lark message to reply to: the newest user message of the run's turn
    /// (a retried or edited turn's first run holds them) that came from Lark. `None` when the run's messages were sent from another client.
    pub reply_to: Option<String>,
    /// Reply cards already sent for this run (the card, then continuations).
    pub cards: Vec<LarkCard>,
    /// The start of the run's newest user message (its first 200 characters):
    /// what the chat's language is read from.
    pub text: String,
    /// A conversation several people share (a group): its user messages
    /// carry their speakers' names.
    pub shared: bool,
}

/// What recording a THINKING reaction found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReactionRecord {
    /// Recorded; the worker removes it when the reply ends.
    Kept,
    /// The reply already ended: the caller removes the reaction itself.
    ReplyEnded,
}

/// What linking a Lark identity to an account did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkOutcome {
    /// Linked; `moved_sessions` came over from the auto-created `lark:` user.
    Linked { moved_sessions: u64 },
    /// Another (not auto-created) account has this identity.
    TakenBy(String),
}

/// The username an unlinked Lark sender gets.
pub fn lark_username(open_id: &str) -> String {
    format!("lark:{open_id}")
}

/// Auto-created Lark users cannot log in: this is no argon2 hash, so no password
/// ever verifies against it.
const NO_PASSWORD: &str = "!lark-no-password";

impl Store {
    /// Forgets inbound ids received before `before` (unix ms) that are done
    /// with; a pending one stays until it is handled (see `lark_inbox`).
    pub async fn purge_lark_inbound(&self, before: i64) -> Result<u64> {
        let mut w = self.writer().await?;
        let done =
            sqlx::query("delete from lark_inbound where received_at < $1 and state <> 'pending'")
                .bind(before)
                .execute(&mut *w)
                .await?;
        Ok(done.rows_affected())
    }

    /// The Weft user a Lark sender is: the linked account, or `lark:<open_id>`
    /// (role `user`), created on first sight.
    pub async fn lark_user(&self, open_id: &str) -> Result<AuthUser> {
        weft_shared::auth::check_lark_open_id(open_id).map_err(StoreError::Invalid)?;
        if let Some(user) = self.user_by_lark_id(open_id).await? {
            return Ok(user);
        }
        let id = UserId::new();
        let now = now_ms();
        let inserted = {
            let mut w = self.writer().await?;
            sqlx::query(
                "insert into users (id, username, password_hash, role, created_at, lark_open_id) values ($1, $2, $3, 'user', $4, $5)",
            )
            .bind(&id.0)
            .bind(lark_username(open_id))
            .bind(NO_PASSWORD)
            .bind(now)
            .bind(open_id)
            .execute(&mut *w)
            .await
        };
        match inserted {
            Ok(_) => {}
            // Another replica created it meanwhile.
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {}
            Err(e) => return Err(e.into()),
        }
        self.user_by_lark_id(open_id)
            .await?
            .ok_or(StoreError::Other(format!(
                "lark user {open_id} vanished after creation"
            )))
    }

    /// Whether any session talks to a Lark conversation (a worker without the
    /// Lark settings must not start then: its cards could never be sent).
    pub async fn has_lark_conversations(&self) -> Result<bool> {
        let row = sqlx::query("select count(*) as n from (select 1 from lark_chats limit 1) t")
            .fetch_one(&self.pool)
            .await?;
        Ok(get_i64(&row, "n")? > 0)
    }

    /// The Lark identity linked to (or behind) `user`, if any.
    pub async fn lark_open_id(&self, user: &UserId) -> Result<Option<String>> {
        let row = sqlx::query("select lark_open_id from users where id = $1")
            .bind(&user.0)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row
            .map(|r| get_opt_str(&r, "lark_open_id"))
            .transpose()?
            .flatten())
    }

    async fn user_by_lark_id(&self, open_id: &str) -> Result<Option<AuthUser>> {
        let row =
            sqlx::query("select id, username, role, created_at from users where lark_open_id = $1")
                .bind(open_id)
                .fetch_optional(&self.pool)
                .await?;
        row.as_ref().map(AuthUser::from_row).transpose()
    }

    /// Links the Lark identity `open_id` to `user`. The sessions and runs of the
    /// auto-created `lark:<open_id>` user move to `user` (who then sees them in
    /// every client) and that placeholder is deleted.
    pub async fn link_lark(&self, user: &UserId, open_id: &str) -> Result<LinkOutcome> {
        weft_shared::auth::check_lark_open_id(open_id).map_err(StoreError::Invalid)?;
        let mut tx = self.begin().await?;
        let target = sqlx::query("select username from users where id = $1")
            .bind(&user.0)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound)?;
        let target_name = get_str(&target, "username")?;
        let holder = sqlx::query("select id, username from users where lark_open_id = $1")
            .bind(open_id)
            .fetch_optional(&mut *tx)
            .await?;
        let mut moved_sessions = 0;
        if let Some(holder) = holder {
            let holder_id = get_str(&holder, "id")?;
            let holder_name = get_str(&holder, "username")?;
            if holder_id == user.0 {
                return Ok(LinkOutcome::Linked { moved_sessions: 0 });
            }
            if holder_name != lark_username(open_id) {
                return Ok(LinkOutcome::TakenBy(holder_name));
            }
            moved_sessions = sqlx::query("update sessions set user_id = $1 where user_id = $2")
                .bind(&user.0)
                .bind(&holder_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            for sql in [
                "update runs set user_id = $1 where user_id = $2",
                "update idempotency_keys set user_id = $1 where user_id = $2",
                // the files of the moved sessions' messages go with them
                "update attachments set user_id = $1 where user_id = $2",
                // what they said in shared conversations stays theirs
                "update messages set author_id = $1 where author_id = $2",
                // approvals they are asked for, pending or decided
                "update approvals set user_id = $1 where user_id = $2",
            ] {
                sqlx::query(sql)
                    .bind(&user.0)
                    .bind(&holder_id)
                    .execute(&mut *tx)
                    .await?;
            }
            sqlx::query("delete from users where id = $1")
                .bind(&holder_id)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query("update users set lark_open_id = $1 where id = $2")
            .bind(open_id)
            .bind(&user.0)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        tracing::info!(user = %target_name, moved_sessions, "lark identity linked");
        Ok(LinkOutcome::Linked { moved_sessions })
    }

    /// The session `chat` talks to now; a new one (owned by `owner`, source
    /// `lark`) when it has none yet.
    pub async fn lark_session(
        &self,
        chat: &LarkChat,
        owner: &UserId,
        model: &str,
        agent: &str,
    ) -> Result<SessionRecord> {
        if let Some(s) = self.bound_session(&chat.key()).await? {
            return Ok(s);
        }
        match self
            .new_lark_session(chat, owner, model, agent, false)
            .await
        {
            Err(StoreError::Conflict(_)) => self
                .bound_session(&chat.key())
                .await?
                .ok_or(StoreError::NotFound),
            other => other,
        }
    }

    /// `/new`: a fresh session for `chat`, bound from now on.
    pub async fn lark_new_session(
        &self,
        chat: &LarkChat,
        owner: &UserId,
        model: &str,
        agent: &str,
    ) -> Result<SessionRecord> {
        self.new_lark_session(chat, owner, model, agent, true).await
    }

    async fn new_lark_session(
        &self,
        chat: &LarkChat,
        owner: &UserId,
        model: &str,
        agent: &str,
        replace: bool,
    ) -> Result<SessionRecord> {
        let mut tx = self.begin().await?;
        let now = now_ms();
        let id = SessionId::new();
        sqlx::query(
            "insert into sessions (id, user_id, title, title_lower, model, agent, source, created_at, updated_at, lark_chat_key)
             values ($1, $2, '', '', $3, $4, 'lark', $5, $5, $6)",
        )
        .bind(&id.0)
        .bind(&owner.0)
        .bind(model)
        .bind(agent)
        .bind(now)
        .bind(chat.key())
        .execute(&mut *tx)
        .await?;
        if replace {
            sqlx::query("delete from lark_chats where chat_key = $1")
                .bind(chat.key())
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query(
            "insert into lark_chats (chat_key, chat_id, thread_id, session_id, updated_at) values ($1, $2, $3, $4, $5)",
        )
        .bind(chat.key())
        .bind(&chat.chat_id)
        .bind(&chat.thread_id)
        .bind(&id.0)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(|e| StoreError::unique(e, Conflict::LarkChatBound))?;
        tx.commit().await?;
        self.get_session(owner, &id).await
    }

    async fn bound_session(&self, chat_key: &str) -> Result<Option<SessionRecord>> {
        let sql = format!(
            "{SESSION_SELECT} join lark_chats c on c.session_id = s.id where c.chat_key = $1"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(chat_key)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(SessionRecord::from_row).transpose()
    }

    /// The sessions `chat` has had, newest first (`/sessions`).
    pub async fn lark_chat_sessions(
        &self,
        chat: &LarkChat,
        limit: i64,
    ) -> Result<Vec<SessionRecord>> {
        let sql = format!(
            "{SESSION_SELECT} where s.lark_chat_key = $1 order by s.updated_at desc, s.id desc limit $2"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(chat.key())
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(SessionRecord::from_row).collect()
    }

    /// `/resume`: `chat` talks to `session` (one of its own) from now on.
    pub async fn lark_bind(&self, chat: &LarkChat, session: &SessionId) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query("update lark_chats set session_id = $1, updated_at = $2 where chat_key = $3")
            .bind(&session.0)
            .bind(now_ms())
            .bind(chat.key())
            .execute(&mut *w)
            .await?;
        Ok(())
    }

    /// Records the THINKING reaction put on `message`'s Lark message, unless the
    /// reply to it has already ended.
    pub async fn record_lark_reaction(
        &self,
        message: &MessageId,
        reaction_id: &str,
    ) -> Result<ReactionRecord> {
        let mut w = self.writer().await?;
        let done = sqlx::query(
            "update messages set lark_reaction_id = $1 where id = $2 and lark_reaction_id is null",
        )
        .bind(reaction_id)
        .bind(&message.0)
        .execute(&mut *w)
        .await?;
        Ok(if done.rows_affected() == 1 {
            ReactionRecord::Kept
        } else {
            ReactionRecord::ReplyEnded
        })
    }

    /// The reply of `run` ended: returns the reactions to remove, as
    /// `(lark_message_id, reaction_id)`, and marks every user message of the run
    /// so a reaction recorded later is removed by its recorder.
    pub async fn take_lark_reactions(&self, run: &RunId) -> Result<Vec<(String, String)>> {
        let mut tx = self.begin().await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select lark_message_id, lark_reaction_id from messages
             where run_id = $1 and role = 'user' and lark_message_id is not null{}",
            self.lock_suffix()
        )))
        .bind(&run.0)
        .fetch_all(&mut *tx)
        .await?;
        sqlx::query(
            "update messages set lark_reaction_id = $1 where run_id = $2 and role = 'user' and lark_message_id is not null",
        )
        .bind(REACTION_ENDED)
        .bind(&run.0)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let mut out = Vec::new();
        for row in &rows {
            if let Some(reaction) =
                get_opt_str(row, "lark_reaction_id")?.filter(|r| r != REACTION_ENDED)
            {
                out.push((get_str(row, "lark_message_id")?, reaction));
            }
        }
        Ok(out)
    }

    /// Where `run` replies, if its session is a Lark conversation.
    pub async fn lark_target(&self, run: &RunId) -> Result<Option<LarkTarget>> {
        let row = sqlx::query(
            "select c.chat_id, c.thread_id, r.lark_cards,
                 (select m.lark_message_id from messages m
                  where m.run_id = coalesce(r.turn_of, r.id) and m.role = 'user' and m.lark_message_id is not null
                  order by m.ord desc limit 1) as reply_to,
                 (select substr(m.content, 1, 200) from messages m
                  where m.run_id = coalesce(r.turn_of, r.id) and m.role = 'user'
                  order by m.ord desc limit 1) as text,
                 (select count(*) from messages m
                  where m.run_id = coalesce(r.turn_of, r.id) and m.role = 'user'
                    and m.author_name is not null) as shared
             from runs r
             join sessions s on s.id = r.session_id
             join lark_chats c on c.chat_key = s.lark_chat_key
             where r.id = $1",
        )
        .bind(&run.0)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(Some(LarkTarget {
            chat: LarkChat {
                chat_id: get_str(&row, "chat_id")?,
                thread_id: get_str(&row, "thread_id")?,
            },
            reply_to: get_opt_str(&row, "reply_to")?,
            cards: decode_cards(get_opt_str(&row, "lark_cards")?.as_deref())?,
            text: get_opt_str(&row, "text")?.unwrap_or_default(),
            shared: get_i64(&row, "shared")? > 0,
        }))
    }
}

impl Store {
    /// Whether `user` has talked to the bot in Lark chat `chat_id` (a Lark
    /// channel may only post where its owner is).
    pub async fn lark_chat_has_user(&self, user: &UserId, chat_id: &str) -> Result<bool> {
        let found = sqlx::query(
            "select 1 from sessions s join messages m on m.session_id = s.id
             where s.lark_chat_key is not null and (s.lark_chat_key = $1 or s.lark_chat_key like $2)
               and (m.author_id = $3 or s.user_id = $3) limit 1",
        )
        .bind(chat_id)
        // The caller checked the id's characters (no `%`); a `_` matching
        // any one character cannot reach another chat's `chat_id/thread` key.
        .bind(format!("{chat_id}/%"))
        .bind(&user.0)
        .fetch_optional(&self.pool)
        .await?;
        Ok(found.is_some())
    }
}
