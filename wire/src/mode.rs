//! The built-in modes a session (and each of its runs) is in. The wire carries
//! the id string (`"agent"`, `"chat"`); code compares [`RunMode`]s.

/// What the agent may do in a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunMode {
    /// Answers and uses tools when they help (the default).
    Agent,
    /// Plain conversation: no tools are offered.
    Chat,
}

impl RunMode {
    pub const ALL: [RunMode; 2] = [RunMode::Agent, RunMode::Chat];

    pub fn as_str(self) -> &'static str {
        match self {
            RunMode::Agent => "agent",
            RunMode::Chat => "chat",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            RunMode::Agent => "Answers and uses tools when they help.",
            RunMode::Chat => "Plain conversation, no tools.",
        }
    }

    pub fn is_default(self) -> bool {
        self == RunMode::Agent
    }

    pub fn tools_enabled(self) -> bool {
        self == RunMode::Agent
    }

    pub fn parse(id: &str) -> Option<RunMode> {
        RunMode::ALL.into_iter().find(|m| m.as_str() == id)
    }
}

#[cfg(test)]
mod tests {
    use super::RunMode;

    #[test]
    fn ids_round_trip_and_unknown_ids_are_none() {
        for m in RunMode::ALL {
            assert_eq!(RunMode::parse(m.as_str()), Some(m));
        }
        assert_eq!(RunMode::parse("Agent"), None);
        assert_eq!(RunMode::ALL.iter().filter(|m| m.is_default()).count(), 1);
    }
}
