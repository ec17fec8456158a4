//! The built-in agents every deployment has, whatever `[[agents]]` adds: a
//! session (and each of its runs) names its agent by id. The wire carries the
//! id string (`"agent"`, `"chat"`); code compares [`BuiltinAgent`]s.

/// What the agent may do in a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BuiltinAgent {
    /// Answers and uses tools when they help (the default).
    Agent,
    /// Plain conversation: no tools are offered.
    Chat,
}

impl BuiltinAgent {
    pub const ALL: [BuiltinAgent; 2] = [BuiltinAgent::Agent, BuiltinAgent::Chat];

    pub fn as_str(self) -> &'static str {
        match self {
            BuiltinAgent::Agent => "agent",
            BuiltinAgent::Chat => "chat",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            BuiltinAgent::Agent => "Answers and uses tools when they help.",
            BuiltinAgent::Chat => "Plain conversation, no tools.",
        }
    }

    pub fn is_default(self) -> bool {
        self == BuiltinAgent::Agent
    }

    pub fn tools_enabled(self) -> bool {
        self == BuiltinAgent::Agent
    }

    pub fn parse(id: &str) -> Option<BuiltinAgent> {
        BuiltinAgent::ALL.into_iter().find(|a| a.as_str() == id)
    }
}

#[cfg(test)]
mod tests {
    use super::BuiltinAgent;

    #[test]
    fn ids_round_trip_and_unknown_ids_are_none() {
        for a in BuiltinAgent::ALL {
            assert_eq!(BuiltinAgent::parse(a.as_str()), Some(a));
        }
        assert_eq!(BuiltinAgent::parse("Agent"), None);
        assert_eq!(
            BuiltinAgent::ALL.iter().filter(|a| a.is_default()).count(),
            1
        );
    }
}
