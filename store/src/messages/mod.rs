//! Messages: the conversation history, the agent's step checkpoints and the final
//! replies. A checkpoint is written once — the `messages_checkpoint` unique index
//! turns a repeated write (a retried attempt, a duplicate worker) into a no-op.

use sqlx::any::AnyRow;

use super::Attachment;
use super::session_writes::{count_writes, lock_session};
use super::{Result, Store, StoreError, get_i64, get_opt_i64, get_opt_str, get_str};
use weft_wire::api::{Citation, MessageDto, ToolCallDto};
use weft_wire::ids::{MessageId, RunId, SessionId, UserId};
use weft_wire::reasoning::Reasoning;
use weft_wire::time::{now_ms, rfc3339};

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub id: MessageId,
    pub session_id: SessionId,
    pub role: String,
    pub content: String,
    pub run_id: Option<RunId>,
    pub step: Option<u32>,
    pub call_id: String,
    pub name: Option<String>,
    pub tool_calls: Vec<ToolCallDto>,
    pub created_at: i64,
    /// The conversation-order key (see [`order_key`]).
    pub ord: String,
    /// Files sent with a user message (filled by the listing queries).
    pub attachments: Vec<Attachment>,
    /// Who sent a user message (None on rows older than migration 0013: the
    /// session's owner).
    pub author_id: Option<UserId>,
    /// The sender's name in a shared conversation (a Lark group), as the
    /// model sees it: `[name] text`. None in one-person sessions.
    pub author_name: Option<String>,
    /// The session's write count when this message was written (migration
    /// 0017; 0 on older rows): what a reader that saw up to N has not seen is
    /// `seq > N`.
    pub seq: i64,
    /// The sources an assistant reply cites (migration 0022).
    pub citations: Vec<Citation>,
    /// The model's reasoning before an assistant message (migration 0031).
    pub reasoning: Vec<Reasoning>,
    /// Its run was sent in plan mode (filled for history pages only).
    pub plan: bool,
}

impl Message {
    fn from_row(row: &AnyRow) -> Result<Message> {
        let tool_calls = match get_opt_str(row, "tool_calls")? {
            Some(json) => serde_json::from_str(&json)
                .map_err(|e| StoreError::Other(format!("tool_calls: {e}")))?,
            None => Vec::new(),
        };
        let citations = match get_opt_str(row, "citations")? {
            Some(json) => serde_json::from_str(&json)
                .map_err(|e| StoreError::Other(format!("citations: {e}")))?,
            None => Vec::new(),
        };
        let reasoning = match get_opt_str(row, "reasoning")? {
            Some(json) => serde_json::from_str(&json)
                .map_err(|e| StoreError::Other(format!("reasoning: {e}")))?,
            None => Vec::new(),
        };
        Ok(Message {
            id: MessageId(get_str(row, "id")?),
            session_id: SessionId(get_str(row, "session_id")?),
            role: get_str(row, "role")?,
            content: get_str(row, "content")?,
            run_id: get_opt_str(row, "run_id")?.map(RunId),
            step: get_opt_i64(row, "step")?.map(|s| s as u32),
            call_id: get_str(row, "call_id")?,
            name: get_opt_str(row, "name")?,
            tool_calls,
            created_at: get_i64(row, "created_at")?,
            ord: get_str(row, "ord")?,
            attachments: Vec::new(),
            author_id: get_opt_str(row, "author_id")?.map(UserId),
            author_name: get_opt_str(row, "author_name")?,
            seq: get_i64(row, "seq")?,
            citations,
            reasoning,
            plan: false,
        })
    }

    pub fn to_dto(&self) -> MessageDto {
        MessageDto {
            id: self.id.0.clone(),
            session_id: self.session_id.0.clone(),
            role: self.role.clone(),
            content: self.content.clone(),
            run_id: self.run_id.as_ref().map(|r| r.0.clone()),
            step: self.step,
            created_at: rfc3339(self.created_at),
            tool_calls: self.tool_calls.clone(),
            call_id: (!self.call_id.is_empty()).then(|| self.call_id.clone()),
            name: self.name.clone(),
            attachments: self.attachments.iter().map(Attachment::to_dto).collect(),
            author_id: self.author_id.as_ref().map(|u| u.0.clone()),
            author_name: self.author_name.clone(),
            citations: self.citations.clone(),
            thinking: thinking_text(&self.reasoning),
            plan: self.plan,
        }
    }
}

/// What people read of a message's reasoning: its blocks' text, one paragraph each.
fn thinking_text(reasoning: &[Reasoning]) -> Option<String> {
    let parts: Vec<&str> = reasoning
        .iter()
        .map(Reasoning::text)
        .filter(|t| !t.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// `reasoning` as its column holds it: JSON, or null for none.
pub(super) fn reasoning_json(reasoning: &[Reasoning]) -> Result<Option<String>> {
    if reasoning.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(reasoning)
        .map(Some)
        .map_err(|e| StoreError::Other(format!("reasoning: {e}")))
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub call_id: String,
    pub name: String,
    pub content: String,
}

/// One completed agent step: the assistant turn that asked for tools, and the
/// tools' results. Written atomically, so a resumed attempt starts after it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepCheckpoint {
    pub step: u32,
    pub content: String,
    pub tool_calls: Vec<ToolCallDto>,
    /// The model's reasoning before the step's calls.
    pub reasoning: Vec<Reasoning>,
    pub results: Vec<ToolResult>,
}

/// A message's columns, as `Message::from_row` reads them (a macro, so the
/// context reads can add to the same list: `context`).
macro_rules! message_columns {
    () => {
        "id, session_id, role, content, run_id, step, call_id, name, tool_calls, created_at, ord, author_id, author_name, seq, citations, reasoning"
    };
}
const COLUMNS: &str = message_columns!();

mod context;
pub use context::HistoryState;

/// A new message's `seq`: one past the session's write count, which the
/// writing transaction bumps after its inserts (it holds the session's row).
pub(super) const NEXT_SEQ: &str = "(select msg_seq + 1 from sessions where id = $2)";

/// The conversation-order key of a message (see migration 0003): run, then user
/// messages before steps, step, assistant before tool results, then the id.
pub(super) fn order_key(run: Option<&RunId>, role: &str, step: u32, id: &MessageId) -> String {
    let hex = |s: &str| s.replace('-', "");
    match run {
        None => format!("z{}", hex(&id.0)),
        Some(run) => {
            let (phase, sub) = match role {
                "user" => (0, 0),
                "assistant" => (1, 0),
                _ => (1, 1),
            };
            format!("{}{phase}{step:06}{sub}{}", hex(&run.0), hex(&id.0))
        }
    }
}

/// Cursors are order keys: `[0-9a-z]`, bounded.
pub fn valid_cursor(c: &str) -> bool {
    !c.is_empty()
        && c.len() <= 80
        && c.bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
}

impl Store {
    /// The most recent page (oldest→newest within it); `before` pages further back.
    pub async fn list_messages(
        &self,
        user: &UserId,
        session: &SessionId,
        limit: i64,
        before: Option<&str>,
    ) -> Result<(Vec<Message>, Option<String>)> {
        self.get_session(user, session).await?;
        let sql = format!(
            "select {COLUMNS} from messages where session_id = $1 and hidden = 0 and ($2 = '' or ord < $2) order by ord desc limit $3"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&session.0)
            .bind(before.unwrap_or_default())
            .bind(limit + 1)
            .fetch_all(&self.pool)
            .await?;
        let next = if rows.len() as i64 > limit {
            Some(get_str(&rows[limit as usize - 1], "ord")?)
        } else {
            None
        };
        let mut msgs = rows
            .iter()
            .take(limit as usize)
            .map(Message::from_row)
            .collect::<Result<Vec<_>>>()?;
        msgs.reverse();
        self.fill_attachments(&mut msgs).await?;
        self.mark_plans(session, &mut msgs).await?;
        Ok((msgs, next))
    }

    /// Marks the messages of the session's plan-mode runs (a client shows their
    /// plans; a rejected plan leaves no call to tell such a reply by). One
    /// read, and only when the session ever planned.
    async fn mark_plans(&self, session: &SessionId, msgs: &mut [Message]) -> Result<()> {
        let rows = sqlx::query("select distinct run_id from plans where session_id = $1")
            .bind(&session.0)
            .fetch_all(&self.pool)
            .await?;
        if rows.is_empty() {
            return Ok(());
        }
        let planned = rows
            .iter()
            .map(|r| get_str(r, "run_id"))
            .collect::<Result<std::collections::HashSet<_>>>()?;
        for m in msgs.iter_mut() {
            m.plan = m.run_id.as_ref().is_some_and(|r| planned.contains(&r.0));
        }
        Ok(())
    }

    /// Attach each user message's files.
    async fn fill_attachments(&self, msgs: &mut [Message]) -> Result<()> {
        let users: Vec<MessageId> = msgs
            .iter()
            .filter(|m| m.role == "user")
            .map(|m| m.id.clone())
            .collect();
        self.attach_files(msgs, &users).await
    }

    /// Attach their files to the messages `ids` of `msgs` (one read, none for
    /// no ids).
    async fn attach_files(&self, msgs: &mut [Message], ids: &[MessageId]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let ids: Vec<&MessageId> = ids.iter().collect();
        let mut by_message = self.attachments_of(&ids).await?;
        for m in msgs.iter_mut() {
            if let Some(files) = by_message.remove(&m.id) {
                m.attachments = files;
            }
        }
        Ok(())
    }

    /// One message by id (internal: the caller has already scoped the run).
    pub async fn get_message(&self, id: &MessageId) -> Result<Option<Message>> {
        let sql = format!("select {COLUMNS} from messages where id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&id.0)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(Message::from_row).transpose()
    }

    /// The last checkpointed step of a run (0 when none).
    pub async fn last_checkpoint(&self, run: &RunId) -> Result<u32> {
        let row = sqlx::query(
            "select max(step) as step from messages where run_id = $1 and role = 'assistant'",
        )
        .bind(&run.0)
        .fetch_one(&self.pool)
        .await?;
        Ok(get_opt_i64(&row, "step")?.unwrap_or(0) as u32)
    }

    /// Write a completed step, if this worker still owns the run. Returns false
    /// when ownership was lost (the caller stops).
    pub async fn checkpoint_step(
        &self,
        run: &RunId,
        worker: &str,
        session: &SessionId,
        cp: &StepCheckpoint,
        seq: u64,
    ) -> Result<bool> {
        let mut tx = self.begin().await?;
        let now = now_ms();
        // The session's row first (the send's lock order): its write count
        // stamps the step's messages (migration 0017).
        if self.dialect == super::Dialect::Postgres {
            lock_session(&mut tx, self.lock_suffix(), session).await?;
        }
        let owned = sqlx::query(
            "update runs set heartbeat_at = $1, last_seq = case when last_seq > $4 then last_seq else $4 end,
                 pending_step = null
             where id = $2 and worker_id = $3 and status = 'running'",
        )
            .bind(now)
            .bind(&run.0)
            .bind(worker)
            .bind(seq as i64)
            .execute(&mut *tx)
            .await?;
        if owned.rows_affected() == 0 {
            return Ok(false);
        }
        let calls =
            serde_json::to_string(&cp.tool_calls).map_err(|e| StoreError::Other(e.to_string()))?;
        let reasoning = reasoning_json(&cp.reasoning)?;
        let turn = StepMessage {
            role: "assistant",
            content: &cp.content,
            call_id: "",
            name: None,
            tool_calls: Some(&calls),
            reasoning: reasoning.as_deref(),
        };
        insert_step_message(&mut tx, session, run, cp.step, turn, now).await?;
        for r in &cp.results {
            let result = StepMessage {
                role: "tool",
                content: &r.content,
                call_id: &r.call_id,
                name: Some(&r.name),
                tool_calls: None,
                reasoning: None,
            };
            insert_step_message(&mut tx, session, run, cp.step, result, now).await?;
        }
        count_writes(&mut tx, session).await?;
        tx.commit().await?;
        Ok(true)
    }
}

/// A message of a run step, as [`insert_step_message`] writes it.
pub(super) struct StepMessage<'a> {
    pub role: &'a str,
    pub content: &'a str,
    /// The call a tool result answers; empty otherwise.
    pub call_id: &'a str,
    /// The tool's name, for a tool result.
    pub name: Option<&'a str>,
    /// The calls an assistant message asks for (JSON).
    pub tool_calls: Option<&'a str>,
    /// The model's reasoning before an assistant message (JSON).
    pub reasoning: Option<&'a str>,
}

/// The insert of a run step's assistant/tool message `id`; a row an earlier
/// attempt wrote for the same step stands (`returning id` tells which).
fn step_message_insert(
    session: &SessionId,
    run: &RunId,
    step: u32,
    m: StepMessage<'_>,
    now: i64,
    id: &MessageId,
    returning: &str,
) -> sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments> {
    let StepMessage {
        role,
        content,
        call_id,
        name,
        tool_calls,
        reasoning,
    } = m;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "insert into messages (id, session_id, role, content, run_id, step, call_id, name, tool_calls, queued, created_at, ord, seq, reasoning)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0, $10, $11, {NEXT_SEQ}, $12)
         on conflict (run_id, step, role, call_id) where role <> 'user' do nothing{returning}"
    )))
    .bind(id.0.clone())
    .bind(session.0.clone())
    .bind(role.to_owned())
    .bind(content.to_owned())
    .bind(run.0.clone())
    .bind(i64::from(step))
    .bind(call_id.to_owned())
    .bind(name.map(str::to_owned))
    .bind(tool_calls.map(str::to_owned))
    .bind(now)
    .bind(order_key(Some(run), role, step, id))
    .bind(reasoning.map(str::to_owned))
}

/// Insert an assistant/tool message of a run step; a duplicate is ignored. Returns
/// the id of the stored row (the earlier one on a duplicate).
pub(super) async fn insert_step_message(
    tx: &mut crate::TxConn,
    session: &SessionId,
    run: &RunId,
    step: u32,
    m: StepMessage<'_>,
    now: i64,
) -> Result<MessageId> {
    let (role, call_id) = (m.role, m.call_id);
    let id = MessageId::new();
    let inserted = step_message_insert(session, run, step, m, now, &id, " returning id")
        .fetch_optional(&mut *tx)
        .await?;
    if inserted.is_some() {
        return Ok(id);
    }
    // Written by an earlier attempt: that row stands.
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "select {} as id",
        step_message_id("$1", "$2", "$3", "$4")
    )))
    .bind(&run.0)
    .bind(i64::from(step))
    .bind(role)
    .bind(call_id)
    .fetch_one(&mut *tx)
    .await?;
    Ok(MessageId(get_str(&row, "id")?))
}

/// [`insert_step_message`] deferred (`TxConn::defer`): which row stands —
/// this one, or one an earlier attempt wrote — is read later, by the
/// statement that needs its id ([`step_message_id`]).
pub(super) fn defer_step_message(
    tx: &mut crate::TxConn,
    session: &SessionId,
    run: &RunId,
    step: u32,
    m: StepMessage<'_>,
    now: i64,
) -> Result<()> {
    tx.defer(step_message_insert(
        session,
        run,
        step,
        m,
        now,
        &MessageId::new(),
        "",
    ))
}

/// The id of the message of run `run` at step `step` with `role` and
/// `call_id` (SQL expressions: parameters or literals), by the unique index
/// that decides which row stands (`role <> 'user'` is its condition: SQLite
/// uses a partial index only for a query that states it).
pub(super) fn step_message_id(run: &str, step: &str, role: &str, call_id: &str) -> String {
    format!(
        "(select id from messages where run_id = {run} and step = {step} and role = {role} and call_id = {call_id} and role <> 'user')"
    )
}
