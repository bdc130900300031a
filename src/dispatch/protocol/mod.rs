//! The protocols a handler can speak (contract §12): levelcode's own (§2 and §6) and Claude
//! Code's. Each foreign protocol is one module of pure functions, their payload from ours and our
//! outcome from their reply, so it can be tested without a process and another protocol can be
//! added beside it.

pub mod claude;

use serde::Serialize;

/// What a handler reads on stdin and how its reply is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// levelcode's payload and replies (contract §2, §6, §11).
    #[default]
    Levelcode,
    /// Claude Code's payload and replies, for its hook scripts unmodified (contract §12).
    Claude,
}

impl Protocol {
    /// Every value `"protocol"` may have.
    pub const NAMES: [&'static str; 2] = ["levelcode", "claude"];

    /// The protocol a settings value names, if it names one.
    pub fn parse(name: &str) -> Option<Protocol> {
        match name {
            "levelcode" => Some(Protocol::Levelcode),
            "claude" => Some(Protocol::Claude),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Levelcode => "levelcode",
            Protocol::Claude => "claude",
        }
    }
}
