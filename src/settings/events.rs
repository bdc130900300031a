//! The events the dispatcher knows (contract §2), each described once in [`EVENTS`]: its name,
//! other agents' names for it, what it is, whether it can block, what its matcher is tested
//! against and its own payload members.
//!
//! Everything that differs by event asks the table: the payload's checks, the judging of a
//! reply, the schema, `validate`, the messages and the help that name events. Code that must
//! decide something of its own for each event matches on [`EventKind`] without a `_` arm, so a
//! new event is a new variant and a new entry, and the compiler points at every such place.

/// An event of the table, or [`EventKind::Unknown`] for any other name.
///
/// The known variants are in the order of [`EVENTS`], which is checked when the crate builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    SessionStart,
    PreToolUse,
    PostToolUse,
    Stop,
    UserPromptSubmit,
    SessionEnd,
    PostToolUseFailure,
    SubagentStart,
    SubagentStop,
    PreCompact,
    Notification,
    /// Any other name: hooks configured under it run, nothing can block.
    Unknown,
}

/// What an event's matcher is tested against (contract §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    /// Nothing: the matcher is ignored, even an invalid one, and every enabled group runs
    /// (but for Claude Code's source on `SessionStart`, which its protocol adds, §12).
    Nothing,
    /// The payload's `tool_name`, which the payload must then have.
    Tool,
    /// The string value of this payload member (`SessionEnd`'s `reason`, say); a payload
    /// without it, or with a value that is not a string, is tested as `""`, so only a group
    /// without a matcher (or `"*"`) runs.
    Member(Field),
}

/// One event, as the dispatcher knows it.
#[derive(Debug)]
pub struct Event {
    pub kind: EventKind,
    /// The name levelcode fires it by, case-sensitive.
    pub name: &'static str,
    /// Whether levelcode itself fires it today (contract §2: the four). The others (§15) are
    /// known so that levelcode can fire them and other agents' configurations carry over; until
    /// then their hooks run only when something dispatches them (docs/hooks.md says the same).
    pub fired: bool,
    /// Other agents' names for the same event (Gemini CLI's `BeforeTool`): `validate` points
    /// from them to [`Event::name`]. A dispatch does not take them for it: hooks configured
    /// under such a name run only when something dispatches that exact name.
    pub aliases: &'static [&'static str],
    /// What it is, for people (the schema's description). What the matcher is tested against
    /// is added where it is shown, from [`Event::matcher`].
    pub description: &'static str,
    /// What a block does, for an event a handler can block: exit 2, `"decision": "block"` or
    /// `"continue": false` blocks it (contract §6, §7, §11). `None` for an event that cannot
    /// block, on which exit 2 is an `error`.
    pub blocks: Option<&'static str>,
    /// What goes on when its handlers do not block, or fail open: the end of a failed
    /// handler's message.
    pub goes_on: &'static str,
    /// A handler can answer with a permission decision instead: `"decision": "ask"` asks a
    /// person's approval (§11), and Claude Code's `permissionDecision` denies or asks (§12).
    pub asks: bool,
    /// A handler's `updatedInput` replaces the tool's input for later handlers and the caller
    /// (§11).
    pub rewrites_input: bool,
    pub matcher: Subject,
    /// The payload members of this event besides `event` and `cwd`: what handlers find there,
    /// and what the TypeScript client's `HookPayload` types.
    pub fields: &'static [Field],
}

/// A payload member that events of the table carry besides `event` and `cwd` (contract §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    ToolName,
    ToolInput,
    ToolResult,
    Prompt,
    Reason,
    Error,
    AgentType,
    AgentId,
    Trigger,
    CustomInstructions,
    Message,
    NotificationType,
}

impl Field {
    /// Its name in the payload.
    pub fn name(self) -> &'static str {
        match self {
            Field::ToolName => "tool_name",
            Field::ToolInput => "tool_input",
            Field::ToolResult => "tool_result",
            Field::Prompt => "prompt",
            Field::Reason => "reason",
            Field::Error => "error",
            Field::AgentType => "agent_type",
            Field::AgentId => "agent_id",
            Field::Trigger => "trigger",
            Field::CustomInstructions => "custom_instructions",
            Field::Message => "message",
            Field::NotificationType => "notification_type",
        }
    }
}

/// The events the dispatcher knows, those levelcode fires first, in the order messages and the
/// schema list them.
pub const EVENTS: &[Event] = &[
    Event {
        kind: EventKind::SessionStart,
        name: "SessionStart",
        fired: true,
        aliases: &[],
        description: "Fired once when a session starts.",
        blocks: None,
        goes_on: "the dispatch goes on",
        asks: false,
        rewrites_input: false,
        matcher: Subject::Nothing,
        fields: &[],
    },
    Event {
        kind: EventKind::PreToolUse,
        name: "PreToolUse",
        fired: true,
        aliases: &["BeforeTool"],
        description: "Fired before a tool runs. A handler exiting 2, or printing {\"decision\":\"block\"}, stops the tool call; {\"decision\":\"ask\"} asks a person; {\"updatedInput\":{...}} rewrites the tool's input.",
        blocks: Some("stops the tool call, with the reason given to the model"),
        goes_on: "the tool call proceeds",
        asks: true,
        rewrites_input: true,
        matcher: Subject::Tool,
        fields: &[Field::ToolName, Field::ToolInput],
    },
    Event {
        kind: EventKind::PostToolUse,
        name: "PostToolUse",
        fired: true,
        aliases: &["AfterTool"],
        description: "Fired after a tool ran, with its result.",
        blocks: None,
        goes_on: "the tool call proceeds",
        asks: false,
        rewrites_input: false,
        matcher: Subject::Tool,
        fields: &[Field::ToolName, Field::ToolInput, Field::ToolResult],
    },
    Event {
        kind: EventKind::Stop,
        name: "Stop",
        fired: true,
        aliases: &[],
        description: "Fired when the agent stops.",
        blocks: None,
        goes_on: "the dispatch goes on",
        asks: false,
        rewrites_input: false,
        matcher: Subject::Nothing,
        fields: &[],
    },
    Event {
        kind: EventKind::UserPromptSubmit,
        name: "UserPromptSubmit",
        fired: false,
        aliases: &["BeforeAgent"],
        description: "Fired when the person submits a prompt, before the model sees it. A handler exiting 2, or printing {\"decision\":\"block\"}, refuses the prompt; additionalContext is added for the model.",
        blocks: Some("refuses the prompt before the model sees it"),
        goes_on: "the prompt goes on to the model",
        asks: false,
        rewrites_input: false,
        matcher: Subject::Nothing,
        fields: &[Field::Prompt],
    },
    Event {
        kind: EventKind::SessionEnd,
        name: "SessionEnd",
        fired: false,
        aliases: &[],
        description: "Fired once when a session ends, with why (reason: clear, logout, prompt_input_exit or other).",
        blocks: None,
        goes_on: "the dispatch goes on",
        asks: false,
        rewrites_input: false,
        matcher: Subject::Member(Field::Reason),
        fields: &[Field::Reason],
    },
    Event {
        kind: EventKind::PostToolUseFailure,
        name: "PostToolUseFailure",
        fired: false,
        aliases: &[],
        description: "Fired after a tool call failed, with its error.",
        blocks: None,
        goes_on: "the tool call proceeds",
        asks: false,
        rewrites_input: false,
        matcher: Subject::Tool,
        fields: &[Field::ToolName, Field::ToolInput, Field::Error],
    },
    Event {
        kind: EventKind::SubagentStart,
        name: "SubagentStart",
        fired: false,
        aliases: &[],
        description: "Fired when a subagent starts.",
        blocks: None,
        goes_on: "the dispatch goes on",
        asks: false,
        rewrites_input: false,
        matcher: Subject::Member(Field::AgentType),
        fields: &[Field::AgentType, Field::AgentId],
    },
    Event {
        kind: EventKind::SubagentStop,
        name: "SubagentStop",
        fired: false,
        aliases: &[],
        description: "Fired when a subagent finishes; levelcode does not wait for it, so it cannot be kept going.",
        blocks: None,
        goes_on: "the dispatch goes on",
        asks: false,
        rewrites_input: false,
        matcher: Subject::Member(Field::AgentType),
        fields: &[Field::AgentType, Field::AgentId],
    },
    Event {
        kind: EventKind::PreCompact,
        name: "PreCompact",
        fired: false,
        aliases: &["PreCompress"],
        description: "Fired before the conversation is compacted (trigger: manual or auto).",
        blocks: None,
        goes_on: "the dispatch goes on",
        asks: false,
        rewrites_input: false,
        matcher: Subject::Member(Field::Trigger),
        fields: &[Field::Trigger, Field::CustomInstructions],
    },
    Event {
        kind: EventKind::Notification,
        name: "Notification",
        fired: false,
        aliases: &[],
        description: "Fired when the agent notifies the person (waiting for input, a permission prompt).",
        blocks: None,
        goes_on: "the dispatch goes on",
        asks: false,
        rewrites_input: false,
        matcher: Subject::Member(Field::NotificationType),
        fields: &[Field::Message, Field::NotificationType],
    },
];

/// Other agents' events that levelcode neither fires nor has under another name: `validate`
/// says their hooks never run. An event added to [`EVENTS`] leaves this list (a test says so).
pub const FOREIGN: &[&str] = &[
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "StopFailure",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "PostCompact",
    "ConfigChange",
    "CwdChanged",
    "FileChanged",
    "InstructionsLoaded",
    "Elicitation",
    "ElicitationResult",
    "WorktreeCreate",
    "WorktreeRemove",
    "AfterAgent",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
];

/// The names of [`EVENTS`], in order. (A function, not a table of its own: every pointer in a
/// table costs a relocation when the dispatcher starts.)
pub fn names() -> Vec<&'static str> {
    EVENTS.iter().map(|event| event.name).collect()
}

// `EventKind::event` finds an entry by its variant's place: every known variant has its entry,
// in the same order, or the crate does not build.
const _: () = {
    assert!(
        EVENTS.len() == EventKind::Unknown as usize,
        "EVENTS needs one entry for each EventKind but Unknown"
    );
    let mut i = 0;
    while i < EVENTS.len() {
        assert!(
            EVENTS[i].kind as usize == i,
            "EVENTS lists the events in the order of EventKind"
        );
        i += 1;
    }
};

impl EventKind {
    /// The event named `name` exactly, else [`EventKind::Unknown`].
    pub fn of(name: &str) -> EventKind {
        EVENTS
            .iter()
            .find(|event| event.name == name)
            .map_or(EventKind::Unknown, |event| event.kind)
    }

    /// The event's entry; `None` for [`EventKind::Unknown`].
    pub fn event(self) -> Option<&'static Event> {
        // `Unknown` is the variant after the last entry.
        EVENTS.get(self as usize)
    }

    /// What goes on when the event's handlers fail open ([`Event::goes_on`]); for an unknown
    /// event, the dispatch.
    pub fn goes_on(self) -> &'static str {
        self.event().map_or("the dispatch goes on", |e| e.goes_on)
    }

    /// Returns true if and only if a handler can block the event ([`Event::blocks`]).
    pub fn can_block(self) -> bool {
        self.event().is_some_and(|e| e.blocks.is_some())
    }

    /// Returns true if and only if a handler can ask a person instead ([`Event::asks`]).
    pub fn can_ask(self) -> bool {
        self.event().is_some_and(|e| e.asks)
    }

    /// Returns true if and only if a handler can rewrite the tool's input
    /// ([`Event::rewrites_input`]).
    pub fn rewrites_input(self) -> bool {
        self.event().is_some_and(|e| e.rewrites_input)
    }

    /// Returns true if and only if the event concerns one tool call, so matchers apply to its
    /// tool's name and the payload must name the tool.
    pub fn is_tool_event(self) -> bool {
        self.event().is_some_and(|e| e.matcher == Subject::Tool)
    }

    /// What the event's matcher is tested against; [`Subject::Nothing`] for an unknown event.
    pub fn subject(self) -> Subject {
        self.event().map_or(Subject::Nothing, |e| e.matcher)
    }
}

/// Which events levelcode fires and which others the dispatcher knows, as messages say it (and
/// docs/hooks.md, which a test compares): `levelcode fires A, B, C and D; the dispatcher also
/// knows E, …, which run only when something dispatches them`.
pub fn fired_and_known() -> String {
    format!(
        "levelcode fires {}; the dispatcher also knows {}, whose hooks run when something dispatches them",
        listed("and", |e| e.fired),
        listed("and", |e| !e.fired)
    )
}

/// The names of the events `pick` selects, as a sentence lists them: `A`, `A and B`,
/// `A, B and C`, with `last` (`and`, `or`) before the last one.
pub fn listed(last: &str, pick: impl Fn(&Event) -> bool) -> String {
    let names: Vec<&str> = EVENTS.iter().filter(|e| pick(e)).map(|e| e.name).collect();
    match names.split_last() {
        None => String::new(),
        Some((only, [])) => (*only).to_string(),
        Some((final_name, rest)) => format!("{} {last} {final_name}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_find_their_events_and_nothing_else() {
        for event in EVENTS {
            assert_eq!(EventKind::of(event.name), event.kind);
            assert_eq!(event.kind.event().map(|e| e.name), Some(event.name));
            for alias in event.aliases {
                assert_eq!(EventKind::of(alias), EventKind::Unknown, "{alias}");
            }
        }
        assert_eq!(EventKind::of("pretooluse"), EventKind::Unknown);
        assert!(EventKind::Unknown.event().is_none());
        assert!(!EventKind::Unknown.can_block() && !EventKind::Unknown.is_tool_event());
    }

    #[test]
    fn an_event_is_either_in_the_table_or_foreign() {
        for name in FOREIGN {
            let ours = EVENTS
                .iter()
                .find(|e| e.name == *name || e.aliases.contains(name));
            assert!(
                ours.is_none(),
                "{name} is in EVENTS now: remove it from FOREIGN"
            );
        }
    }

    /// docs/hooks.md says which events levelcode fires as the table does.
    #[test]
    fn the_guide_names_the_events_levelcode_fires() {
        let guide =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/hooks.md")).unwrap();
        let fired: Vec<String> = EVENTS
            .iter()
            .filter(|e| e.fired)
            .map(|e| format!("`{}`", e.name))
            .collect();
        let (last, rest) = fired.split_last().unwrap();
        let sentence = format!("levelcode fires {} and {last} today", rest.join(", "));
        assert!(guide.contains(&sentence), "docs/hooks.md says {sentence:?}");
        let known = EVENTS.iter().filter(|e| !e.fired).count();
        let words = [
            "", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
        ];
        let also = format!("also knows the {} events below", words[known]);
        assert!(guide.contains(&also), "docs/hooks.md says {also:?}");
        // The four come first, so `EVENTS[..4]` are the ones the contract's §2 names.
        assert!(EVENTS.iter().take(fired.len()).all(|e| e.fired));
    }

    #[test]
    fn lists_read_as_sentences() {
        assert_eq!(
            listed("or", |e| e.kind as usize <= EventKind::Stop as usize),
            "SessionStart, PreToolUse, PostToolUse or Stop"
        );
        assert_eq!(
            listed("and", |e| e.matcher == Subject::Tool),
            "PreToolUse, PostToolUse and PostToolUseFailure"
        );
        assert_eq!(
            listed("and", |e| e.blocks.is_some()),
            "PreToolUse and UserPromptSubmit"
        );
        assert_eq!(listed("and", |e| e.asks), "PreToolUse");
        assert_eq!(listed("and", |_| false), "");
    }

    /// The TypeScript client cannot read this table when it builds, so this test keeps its
    /// types in step: `HOOK_EVENT_NAMES` lists exactly the table's events, in order, and
    /// `HookPayload` has a member for each event's own payload members.
    #[test]
    fn the_typescript_types_list_exactly_the_table_s_events() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/packages/levelcode-hooks/src/types.ts"
        );
        let types = std::fs::read_to_string(path).expect("types.ts is readable");
        let between = |start: &str, end: &str| -> &str {
            let from = types
                .find(start)
                .unwrap_or_else(|| panic!("types.ts has {start}"));
            let rest = &types[from + start.len()..];
            &rest[..rest
                .find(end)
                .unwrap_or_else(|| panic!("{start} ends with {end}"))]
        };
        let names: Vec<&str> = between("export const HOOK_EVENT_NAMES = [", "]")
            .split(',')
            .map(|name| name.trim().trim_matches('"'))
            .filter(|name| !name.is_empty())
            .collect();
        assert_eq!(names, super::names(), "HOOK_EVENT_NAMES in types.ts");
        let members = between("export const MATCHER_MEMBERS", "\n};");
        for event in EVENTS {
            let line = match event.matcher {
                Subject::Member(field) => format!("\n  {}: \"{}\",", event.name, field.name()),
                Subject::Nothing | Subject::Tool => format!("\n  {}:", event.name),
            };
            assert_eq!(
                members.contains(&line),
                matches!(event.matcher, Subject::Member(_)),
                "MATCHER_MEMBERS in types.ts and {}'s matcher",
                event.name
            );
        }
        let payload = between("export type HookPayload = {", "\n};");
        for event in EVENTS {
            for field in event.fields.iter().map(|f| f.name()) {
                assert!(
                    payload.contains(&format!("\n  {field}?:"))
                        || payload.contains(&format!("\n  {field}:")),
                    "HookPayload in types.ts has no member {field} ({} payloads have it)",
                    event.name
                );
            }
        }
    }
}
