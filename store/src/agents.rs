//! Agents and users' own instructions. Agents live in the database: the two
//! built-in ones are written at start-up when missing, `[[agents]]` are brought
//! up to date at start-up and on every reload ([`Store::seed_agents`]), admins
//! edit them at run time, and every run reads the one its session names.

use std::collections::BTreeMap;

use sqlx::any::AnyRow;

use super::{Conflict, Result, Store, StoreError, get_i64, get_opt_i64, get_opt_str, get_str};
use weft_config::{AgentConfig, ToolPolicy};
use weft_wire::ids::UserId;
use weft_wire::time::now_ms;

/// Where an agent came from (and so whether a restart may write it again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentOrigin {
    Builtin,
    Config,
    Admin,
}

impl AgentOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentOrigin::Builtin => "builtin",
            AgentOrigin::Config => "config",
            AgentOrigin::Admin => "admin",
        }
    }

    fn parse(s: &str) -> AgentOrigin {
        match s {
            "builtin" => AgentOrigin::Builtin,
            "config" => AgentOrigin::Config,
            _ => AgentOrigin::Admin,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentRecord {
    pub spec: AgentConfig,
    pub origin: AgentOrigin,
    pub updated_at: i64,
}

impl AgentRecord {
    fn from_row(row: &AnyRow) -> Result<AgentRecord> {
        let json = |col: &str| -> Result<Option<Vec<String>>> {
            get_opt_str(row, col)?
                .map(|s| {
                    serde_json::from_str(&s).map_err(|e| StoreError::Other(format!("{col}: {e}")))
                })
                .transpose()
        };
        let policies: BTreeMap<String, ToolPolicy> =
            serde_json::from_str(&get_str(row, "tool_policies")?)
                .map_err(|e| StoreError::Other(format!("tool_policies: {e}")))?;
        Ok(AgentRecord {
            spec: AgentConfig {
                id: get_str(row, "id")?,
                name: get_str(row, "name")?,
                description: get_str(row, "description")?,
                model: get_opt_str(row, "model")?,
                instructions: get_str(row, "instructions")?,
                tools: json("tools")?,
                tool_policies: policies,
                skills: json("skills")?,
                knowledge: json("knowledge")?.unwrap_or_default(),
                knowledge_mode: get_str(row, "knowledge_mode")?.parse().unwrap_or_default(),
                delegates: json("delegates")?.unwrap_or_default(),
                memory: get_i64(row, "memory")? != 0,
                max_steps: get_opt_i64(row, "max_steps")?.map(|n| n as u32),
                default: get_i64(row, "is_default")? != 0,
                allowed_users: json("allowed_users")?.unwrap_or_default(),
                allowed_roles: json("allowed_roles")?.unwrap_or_default(),
            },
            origin: AgentOrigin::parse(&get_str(row, "origin")?),
            updated_at: get_i64(row, "updated_at")?,
        })
    }
}

/// The two agents every deployment has (`weft_wire::builtin_agent::BuiltinAgent`).
pub fn builtin_agents() -> Vec<AgentConfig> {
    vec![
        AgentConfig {
            id: "agent".into(),
            name: "Assistant".into(),
            description: "Answers and uses tools when they help.".into(),
            instructions: "You are Weft, a helpful assistant. Answer in the language the user writes in. Use the tools you are given when they help.".into(),
            default: true,
            ..AgentConfig::default()
        },
        AgentConfig {
            id: "chat".into(),
            name: "Chat".into(),
            description: "Plain conversation, no tools.".into(),
            instructions: "You are Weft, a helpful assistant. Answer in the language the user writes in. Tools are disabled in this conversation.".into(),
            tools: Some(Vec::new()),
            ..AgentConfig::default()
        },
    ]
}

const COLUMNS: &str = "id, name, description, model, instructions, tools, tool_policies, skills, max_steps, is_default, origin, created_at, updated_at, allowed_users, allowed_roles, knowledge, knowledge_mode, memory, delegates";

impl Store {
    /// Start-up: write the built-in agents and `[[agents]]` that are not in the
    /// database yet, and bring the `[[agents]]` no admin has edited up to date
    /// with the config (an operator who adds `allowed_users` to one expects it to
    /// hold after the restart; an agent edited by an admin keeps the admin's
    /// version). A configured default becomes the default.
    /// Writes the built-in agents when missing and brings the `[[agents]]` of
    /// the file up to date (at start-up and on every reload). An agent the
    /// file defines is created when missing; one already there takes each
    /// field the file changed since it last defined it, and keeps the others —
    /// so an admin's edit in the web editor stays until the file changes that
    /// same field. (An agent from before the file's definitions were kept
    /// takes the file's fields only while nobody edited it.)
    pub async fn seed_agents(&self, configured: &[AgentConfig]) -> Result<()> {
        let now = now_ms();
        let mut tx = self.begin().await?;
        for a in builtin_agents() {
            write_agent(&mut tx, &a, AgentOrigin::Builtin, now, Upsert::IfMissing).await?;
        }
        for a in configured {
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "select {COLUMNS}, from_file from agents where id = $1"
            )))
            .bind(&a.id)
            .fetch_optional(&mut *tx)
            .await?;
            let file = serde_json::to_string(a).map_err(|e| StoreError::Other(e.to_string()))?;
            match row {
                None => write_agent(&mut tx, a, AgentOrigin::Config, now, Upsert::Always).await?,
                Some(row) => {
                    let now_there = AgentRecord::from_row(&row)?;
                    let base = match get_opt_str(&row, "from_file")? {
                        Some(json) => serde_json::from_str(&json)
                            .map_err(|e| StoreError::Other(format!("agents.from_file: {e}")))?,
                        None if now_there.origin == AgentOrigin::Config => now_there.spec.clone(),
                        None => a.clone(),
                    };
                    let merged = merge_fields(&base, a, &now_there.spec)?;
                    if merged != now_there.spec {
                        write_agent(&mut tx, &merged, now_there.origin, now, Upsert::Always)
                            .await?;
                    }
                }
            }
            sqlx::query("update agents set from_file = $1 where id = $2")
                .bind(file)
                .bind(&a.id)
                .execute(&mut *tx)
                .await?;
        }
        if let Some(default) = configured.iter().find(|a| a.default) {
            set_default(&mut tx, &default.id).await?;
        }
        super::revisions::bump_prompt(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn list_agents(&self) -> Result<Vec<AgentRecord>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS} from agents order by is_default desc, id"
        )))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(AgentRecord::from_row).collect()
    }

    pub async fn get_agent(&self, id: &str) -> Result<AgentRecord> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS} from agents where id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        AgentRecord::from_row(&row)
    }

    /// The agent sessions get when they name none.
    pub async fn default_agent(&self) -> Result<AgentRecord> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {COLUMNS} from agents order by is_default desc, case when id = 'agent' then 0 else 1 end, id limit 1"
        )))
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        AgentRecord::from_row(&row)
    }

    /// The agent a session naming `id` runs with: that one, or the default one
    /// when it names none that exists (the built-in one in a database nobody
    /// seeded, such as a bare store in a test).
    pub async fn agent_or_default(&self, id: &str) -> Result<AgentConfig> {
        match self.get_agent(id).await {
            Ok(a) => Ok(a.spec),
            Err(StoreError::NotFound) => match self.default_agent().await {
                Ok(a) => Ok(a.spec),
                Err(StoreError::NotFound) => Ok(builtin_agents().remove(0)),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// An admin creates or replaces an agent (it is then the admin's).
    pub async fn put_agent(&self, agent: &AgentConfig) -> Result<AgentRecord> {
        let now = now_ms();
        let mut tx = self.begin().await?;
        write_agent(&mut tx, agent, AgentOrigin::Admin, now, Upsert::Always).await?;
        if agent.default {
            set_default(&mut tx, &agent.id).await?;
        }
        super::revisions::bump_prompt(&mut *tx).await?;
        tx.commit().await?;
        self.get_agent(&agent.id).await
    }

    /// Deletes an agent; the built-in `agent` stays (it is the fallback). Sessions
    /// that named a deleted agent run with the default one.
    pub async fn delete_agent(&self, id: &str) -> Result<bool> {
        if id == "agent" {
            return Err(StoreError::Conflict(Conflict::BuiltinAgent));
        }
        let mut tx = self.begin().await?;
        let done = sqlx::query("delete from agents where id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        super::revisions::bump_prompt(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn user_instructions(&self, user: &UserId) -> Result<String> {
        let row = sqlx::query("select instructions from users where id = $1")
            .bind(&user.0)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        get_str(&row, "instructions")
    }

    pub async fn set_user_instructions(&self, user: &UserId, text: &str) -> Result<()> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("update users set instructions = $1 where id = $2")
            .bind(text)
            .bind(&user.0)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        super::revisions::bump_prompt(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }
}

/// `stored` with every field the file changed from `base` to `file`.
fn merge_fields(
    base: &AgentConfig,
    file: &AgentConfig,
    stored: &AgentConfig,
) -> Result<AgentConfig> {
    let value =
        |a: &AgentConfig| serde_json::to_value(a).map_err(|e| StoreError::Other(e.to_string()));
    let (base, file, mut out) = (value(base)?, value(file)?, value(stored)?);
    if let (Some(file), Some(out)) = (file.as_object(), out.as_object_mut()) {
        for (k, v) in file {
            if base.get(k) != Some(v) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    serde_json::from_value(out).map_err(|e| StoreError::Other(e.to_string()))
}

/// What writing an agent does to the row already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Upsert {
    /// Leave it alone (the built-in agents: admins may have edited them).
    IfMissing,
    /// Replace it (an admin's write).
    Always,
}

async fn write_agent(
    tx: &mut crate::TxConn,
    a: &AgentConfig,
    origin: AgentOrigin,
    now: i64,
    upsert: Upsert,
) -> Result<()> {
    let list = |v: &Option<Vec<String>>| {
        v.as_ref()
            .map(|v| serde_json::to_string(v).unwrap_or_default())
    };
    let policies =
        serde_json::to_string(&a.tool_policies).map_err(|e| StoreError::Other(e.to_string()))?;
    const REPLACE: &str = "do update set name = excluded.name, description = excluded.description, model = excluded.model,
             instructions = excluded.instructions, tools = excluded.tools, tool_policies = excluded.tool_policies,
             skills = excluded.skills, max_steps = excluded.max_steps, origin = excluded.origin,
             allowed_users = excluded.allowed_users, allowed_roles = excluded.allowed_roles,
             knowledge = excluded.knowledge, knowledge_mode = excluded.knowledge_mode,
             memory = excluded.memory, delegates = excluded.delegates, updated_at = excluded.updated_at";
    let conflict = match upsert {
        Upsert::IfMissing => "do nothing".to_string(),
        Upsert::Always => REPLACE.to_string(),
    };
    let people = |v: &Vec<String>| serde_json::to_string(v).unwrap_or_else(|_| "[]".into());
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "insert into agents ({COLUMNS}) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13, $14, $15, $16, $17, $18)
         on conflict (id) {conflict}"
    )))
    .bind(&a.id)
    .bind(&a.name)
    .bind(&a.description)
    .bind(a.model.as_deref())
    .bind(&a.instructions)
    .bind(list(&a.tools))
    .bind(policies)
    .bind(list(&a.skills))
    .bind(a.max_steps.map(i64::from))
    .bind(i64::from(a.default))
    .bind(origin.as_str())
    .bind(now)
    .bind(people(&a.allowed_users))
    .bind(people(&a.allowed_roles))
    .bind(people(&a.knowledge))
    .bind(a.knowledge_mode.as_str())
    .bind(i64::from(a.memory))
    .bind(people(&a.delegates))
    .execute(&mut *tx)
    .await?;
    Ok(())
}

async fn set_default(tx: &mut crate::TxConn, id: &str) -> Result<()> {
    sqlx::query("update agents set is_default = case when id = $1 then 1 else 0 end")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}
