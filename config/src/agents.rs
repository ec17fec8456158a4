//! `[[agents]]`: assistants an admin defines (the way people know "GPTs"). They
//! are written to the database at start-up when missing; from then on the
//! database copy (editable in the web settings) is the one in force.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ToolPolicy;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    /// `[a-z0-9_-]`, at most 32 characters; what sessions and `--agent` name.
    pub id: String,
    pub name: String,
    pub description: String,
    /// The model new sessions with this agent use (none: the default model).
    pub model: Option<String>,
    /// Its system prompt (the user's own instructions follow it).
    pub instructions: String,
    /// Allowed tools: built-in names, `mcp:<server>`, `mcp:<server>__<tool>`.
    /// Absent: every tool; empty: none.
    pub tools: Option<Vec<String>>,
    /// Policies that override `[tools.policies]` for this agent.
    pub tool_policies: BTreeMap<String, ToolPolicy>,
    /// Skills it may load (absent: every skill).
    pub skills: Option<Vec<String>>,
    /// Knowledge bases it searches, by name (`knowledge = ["handbook"]`):
    /// with any, it is offered `knowledge_search`.
    pub knowledge: Vec<String>,
    /// `tool` (default) or `auto`: the best passages go into the context
    /// before the model is called.
    pub knowledge_mode: weft_wire::api::KnowledgeMode,
    /// The agents (ids) it may hand tasks to with `delegate`; none: it is not
    /// offered the tool.
    pub delegates: Vec<String>,
    /// Whether it remembers the people it talks to (docs/memory.md; default
    /// on): off, it recalls nothing, offers no memory tools and its turns are
    /// not learned from.
    pub memory: bool,
    pub max_steps: Option<u32>,
    pub default: bool,
    /// Usernames that may use this agent (see [`super::access`]); with
    /// `allowed_roles` both empty, everyone may.
    pub allowed_users: Vec<String>,
    /// Roles (`admin`, `user`) that may use this agent.
    pub allowed_roles: Vec<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            id: String::new(),
            name: String::new(),
            description: String::new(),
            model: None,
            instructions: String::new(),
            tools: None,
            tool_policies: BTreeMap::new(),
            skills: None,
            knowledge: Vec::new(),
            knowledge_mode: Default::default(),
            delegates: Vec::new(),
            memory: true,
            max_steps: None,
            default: false,
            allowed_users: Vec::new(),
            allowed_roles: Vec::new(),
        }
    }
}

/// The tool that hands a task to another agent (`delegates`).
pub const DELEGATE_TOOL: &str = "delegate";

/// The tool that searches an agent's knowledge bases.
pub const KNOWLEDGE_TOOL: &str = "knowledge_search";

pub fn valid_id(id: &str) -> bool {
    (1..=32).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// The knowledge base names an agent lists: valid base names, each once.
pub fn valid_knowledge(names: &[String]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for name in names {
        if !super::valid_base_name(name) {
            return Err(format!("knowledge: {name:?} is not a knowledge base name"));
        }
        if !seen.insert(name) {
            return Err(format!("knowledge: {name:?} appears twice"));
        }
    }
    Ok(())
}

/// The agent ids an agent may delegate to: valid ids, each once. (Whether
/// each exists is judged when a call names it: agents come and go.)
pub fn valid_delegates(ids: &[String]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for id in ids {
        if !valid_id(id) {
            return Err(format!("delegates: {id:?} is not an agent id"));
        }
        if !seen.insert(id) {
            return Err(format!("delegates: {id:?} appears twice"));
        }
    }
    Ok(())
}

/// The start-up check: ids valid and unique, at most one default.
pub fn validate(agents: &[AgentConfig]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for a in agents {
        if !valid_id(&a.id) {
            return Err(format!(
                "agents: id {:?} must be 1 to 32 of a-z, 0-9, - and _",
                a.id
            ));
        }
        if !seen.insert(a.id.as_str()) {
            return Err(format!("agents: id {:?} appears twice", a.id));
        }
        if a.max_steps == Some(0) {
            return Err(format!("agents: {:?}: max_steps must be at least 1", a.id));
        }
        valid_knowledge(&a.knowledge).map_err(|e| format!("agents: {:?}: {e}", a.id))?;
        valid_delegates(&a.delegates).map_err(|e| format!("agents: {:?}: {e}", a.id))?;
        super::access::validate(
            &format!("agents: {:?}", a.id),
            &a.allowed_users,
            &a.allowed_roles,
        )?;
    }
    if agents.iter().filter(|a| a.default).count() > 1 {
        return Err("agents: at most one agent can be the default".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked_and_one_default_at_most() {
        let a = |id: &str, default| AgentConfig {
            id: id.into(),
            default,
            ..AgentConfig::default()
        };
        assert!(validate(&[a("coder", true), a("writer_2", false)]).is_ok());
        assert!(
            validate(&[a("Coder", false)])
                .unwrap_err()
                .contains("\"Coder\"")
        );
        assert!(
            validate(&[a("x", false), a("x", false)])
                .unwrap_err()
                .contains("twice")
        );
        assert!(
            validate(&[a("x", true), a("y", true)])
                .unwrap_err()
                .contains("default")
        );
    }
}

/// The memory tools (docs/memory.md): offered while memory is on for the
/// instance and the person, to agents whose tools include them (every tool
/// when an agent names none).
pub const MEMORY_TOOLS: [&str; 3] = ["remember", "forget", "memory_search"];

/// Tools every agent that has tools at all may call: they only read what the
/// run already produced or what the agent's own skills say, ask the person, or
/// keep the conversation's own todo list.
const ALWAYS_WITH_TOOLS: [&str; 4] = ["ask_user", "read_output", "todo_update", "use_skill"];

impl AgentConfig {
    /// Whether `who` may choose this agent.
    pub fn allows_user(&self, who: super::access::Requester<'_>) -> bool {
        super::access::allows(&self.allowed_users, &self.allowed_roles, who)
    }

    /// Whether this agent is limited to some users or roles.
    pub fn is_restricted(&self) -> bool {
        super::access::restricted(&self.allowed_users, &self.allowed_roles)
    }

    /// Whether this agent may call `tool` (`<server>__<tool>` for MCP tools).
    pub fn allows_tool(&self, tool: &str) -> bool {
        self.allows_tool_in(tool, false)
    }

    /// [`Self::allows_tool`] in a session that searches knowledge bases of its
    /// own (`session_bases`) besides the agent's.
    pub fn allows_tool_in(&self, tool: &str, session_bases: bool) -> bool {
        if tool == DELEGATE_TOOL {
            // Offered when it has agents to delegate to, unless it has no
            // tools at all.
            return !self.delegates.is_empty() && self.tools.as_ref().is_none_or(|l| !l.is_empty());
        }
        if tool == KNOWLEDGE_TOOL {
            // Offered when there are bases to search, unless the agent has no
            // tools at all.
            return (session_bases || !self.knowledge.is_empty())
                && self.tools.as_ref().is_none_or(|l| !l.is_empty());
        }
        let Some(list) = &self.tools else {
            return true;
        };
        if list.is_empty() {
            return false;
        }
        ALWAYS_WITH_TOOLS.contains(&tool)
            || list.iter().any(|entry| match entry.strip_prefix("mcp:") {
                Some(mcp) if mcp.contains("__") => mcp == tool,
                Some(server) => tool
                    .strip_prefix(server)
                    .is_some_and(|rest| rest.starts_with("__")),
                None => entry == tool,
            })
    }

    /// Whether this agent may load `skill`: it names the skill (or names
    /// none) and it can call `use_skill` at all — an agent without tools (the
    /// default `chat`) is not told of skills it could never load.
    pub fn allows_skill(&self, skill: &str) -> bool {
        self.allows_tool("use_skill")
            && self
                .skills
                .as_ref()
                .is_none_or(|list| list.iter().any(|s| s == skill))
    }
}

#[cfg(test)]
mod allow_tests {
    use super::AgentConfig;

    #[test]
    fn tool_lists_name_builtins_servers_and_single_mcp_tools() {
        let a = AgentConfig {
            tools: Some(vec![
                "web_fetch".into(),
                "mcp:files".into(),
                "mcp:gh__search".into(),
            ]),
            ..AgentConfig::default()
        };
        assert!(a.allows_tool("web_fetch"));
        assert!(a.allows_tool("files__read"));
        assert!(
            !a.allows_tool("filesystem__read"),
            "a prefix is not the server"
        );
        assert!(a.allows_tool("gh__search"));
        assert!(!a.allows_tool("gh__delete_repo"));
        assert!(!a.allows_tool("current_time"));
        assert!(a.allows_tool("read_output"));
        let none = AgentConfig {
            tools: Some(vec![]),
            ..AgentConfig::default()
        };
        assert!(!none.allows_tool("read_output"));
        assert!(AgentConfig::default().allows_tool("anything"));
    }

    #[test]
    fn skills_need_an_agent_that_can_load_them() {
        let named = |tools: Option<Vec<String>>| AgentConfig {
            tools,
            skills: Some(vec!["pdf".into()]),
            ..AgentConfig::default()
        };
        assert!(named(None).allows_skill("pdf"));
        assert!(!named(None).allows_skill("docx"), "not named");
        assert!(
            named(Some(vec!["web_fetch".into()])).allows_skill("pdf"),
            "use_skill comes with any tool"
        );
        assert!(
            !named(Some(vec![])).allows_skill("pdf"),
            "a tool-less agent cannot call use_skill"
        );
        assert!(AgentConfig::default().allows_skill("anything"));
    }
}
