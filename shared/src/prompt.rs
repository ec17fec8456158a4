//! The system prompt, built in one place: the worker sends it to the model and
//! the gateway's `GET /v1/sessions/{id}/system-prompt` shows the owner exactly
//! the same text. Order: the agent's instructions, today's date, the user's own
//! instructions, the skills the agent may load (names and descriptions only:
//! the model loads a body with `use_skill` when it needs it).

use weft_config::AgentConfig;

/// A skill as the prompt lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillLine {
    pub name: String,
    pub description: String,
}

pub fn system_prompt(
    agent: &AgentConfig,
    user_instructions: &str,
    skills: &[SkillLine],
    today: &str,
) -> String {
    let mut out = agent.instructions.trim().to_string();
    if out.is_empty() {
        out.push_str("You are a helpful assistant.");
    }
    out.push_str(&format!("\n\nToday is {today} (UTC)."));
    let mine = user_instructions.trim();
    if !mine.is_empty() {
        out.push_str("\n\n# The user's instructions\n");
        out.push_str(mine);
    }
    if !skills.is_empty() {
        out.push_str("\n\n# Skills\nLoad a skill with the use_skill tool when a task needs it:\n");
        for s in skills {
            out.push_str(&format!("- {}: {}\n", s.name, s.description));
        }
        out.truncate(out.trim_end().len());
    }
    out
}

/// The skills `agent` may load, as the prompt lists them.
pub fn skill_lines(skills: &[crate::skills::Skill], agent: &AgentConfig) -> Vec<SkillLine> {
    skills
        .iter()
        .filter(|s| agent.allows_skill(&s.name))
        .map(|s| SkillLine {
            name: s.name.clone(),
            description: s.description.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_then_date_then_the_user_then_skills() {
        let agent = AgentConfig {
            instructions: "Be terse.".into(),
            ..AgentConfig::default()
        };
        let skills = [SkillLine {
            name: "pdf".into(),
            description: "Read PDFs".into(),
        }];
        let p = system_prompt(&agent, "Call me Ana.", &skills, "2026-11-30");
        assert_eq!(
            p,
            "Be terse.\n\nToday is 2026-11-30 (UTC).\n\n# The user's instructions\nCall me Ana.\n\n# Skills\nLoad a skill with the use_skill tool when a task needs it:\n- pdf: Read PDFs"
        );
        assert_eq!(
            system_prompt(&AgentConfig::default(), " ", &[], "d"),
            "You are a helpful assistant.\n\nToday is d (UTC)."
        );
    }
}
