//! `use_skill {name, file?}`: the body of a skill (or one of its files), for a
//! skill the session's agent may use. The prompt lists only names and
//! descriptions, so a body costs context only when the model asks for it.

use std::path::PathBuf;

use weft_llm::ToolSpec;
use weft_shared::ids::{SessionId, UserId};
use weft_store::{Store, StoreError};
use weft_tools::{Tool, ToolContext};

pub(crate) struct UseSkill {
    pub store: Store,
    pub dir: PathBuf,
}

impl UseSkill {
    async fn agent_allows(&self, ctx: &ToolContext, name: &str) -> Result<bool, StoreError> {
        let session = self
            .store
            .get_session(
                &UserId(ctx.user_id.clone()),
                &SessionId(ctx.session_id.clone()),
            )
            .await?;
        let agent = self.store.agent_or_default(&session.agent).await?;
        Ok(agent.allows_skill(name))
    }
}

#[async_trait::async_trait]
impl Tool for UseSkill {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "use_skill".into(),
            description: "Load a skill listed in your instructions: its full instructions, or one of its files.".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The skill's name."},
                    "file": {"type": "string", "description": "A file of the skill (optional)."}
                },
                "required": ["name"],
                "additionalProperties": false
            }),
        }
    }

    /// Reads a skill's instructions.
    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, args: serde_json::Value, ctx: &ToolContext) -> Result<String, String> {
        let name = args["name"].as_str().unwrap_or_default();
        let unknown = || format!("there is no skill {name:?} for this agent");
        match self.agent_allows(ctx, name).await {
            Ok(true) => {}
            Ok(false) => return Err(unknown()),
            Err(e) => return Err(format!("loading the skill failed: {e}")),
        }
        let skills = self
            .store
            .skills(Some(&self.dir))
            .await
            .map_err(|e| format!("loading the skill failed: {e}"))?;
        let Some(skill) = skills.into_iter().find(|s| s.name == name) else {
            return Err(unknown());
        };
        match args["file"].as_str() {
            None => {
                let mut out = format!("# Skill: {}\n\n{}", skill.name, skill.body);
                if !skill.files.is_empty() {
                    let names: Vec<&str> = skill.files.keys().map(String::as_str).collect();
                    out.push_str(&format!(
                        "\n\n(Files of this skill, readable with use_skill and `file`: {})",
                        names.join(", ")
                    ));
                }
                Ok(out)
            }
            Some(file) => skill
                .files
                .get(file)
                .cloned()
                .ok_or_else(|| format!("the skill {name:?} has no file {file:?}")),
        }
    }
}
