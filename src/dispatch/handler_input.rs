//! What each handler of a chain reads on stdin: the payload as levelcode gives it (contract §2)
//! or in Claude Code's form (§12), with the tool input as the handlers before it rewrote it
//! (§11).

use std::borrow::Cow;
use std::path::Path;

use serde_json::{Map, Value};

use crate::dispatch::payload::Payload;
use crate::dispatch::protocol::claude::{self, ToolCall};

/// The stdin of the handlers of one dispatch, made once and made again only after a rewrite.
pub struct Inputs<'a> {
    payload: &'a Payload,
    root: &'a Path,
    /// `tool_input` as the last rewrite left it; `None` while nothing rewrote it.
    rewritten: Option<Value>,
    /// The bytes a levelcode handler reads, once made.
    native: Option<Cow<'a, [u8]>>,
    /// The payload's members, parsed the first time a Claude Code handler or a rewrite needs them.
    fields: Option<Map<String, Value>>,
}

/// One run of a Claude Code handler: the call it is about (tool events) and its stdin.
pub struct ClaudeRun {
    pub call: Option<ToolCall>,
    pub input: Vec<u8>,
}

impl<'a> Inputs<'a> {
    pub fn new(payload: &'a Payload, root: &'a Path) -> Inputs<'a> {
        Inputs {
            payload,
            root,
            rewritten: None,
            native: None,
            fields: None,
        }
    }

    /// The bytes a levelcode handler reads: the payload with `event` and `cwd` added when it
    /// lacks them, and `tool_input` replaced by the last rewrite, every other member unchanged.
    pub fn native(&mut self) -> &[u8] {
        if self.native.is_none() {
            let plain = self.payload.handler_input(self.root);
            self.native = Some(match &self.rewritten {
                None => plain,
                Some(input) => {
                    let mut object: Map<String, Value> =
                        serde_json::from_slice(&plain).unwrap_or_default();
                    object.insert("tool_input".into(), input.clone());
                    Cow::Owned(serde_json::to_vec(&object).unwrap_or_else(|_| plain.into_owned()))
                }
            });
        }
        self.native.as_deref().unwrap_or_default()
    }

    fn fields(&mut self) -> &Map<String, Value> {
        self.fields
            .get_or_insert_with(|| serde_json::from_slice(self.payload.raw()).unwrap_or_default())
    }

    /// The tool input as it stands: the last rewrite, else the payload's.
    pub fn tool_input(&mut self) -> Value {
        if let Some(input) = &self.rewritten {
            return input.clone();
        }
        self.fields()
            .get("tool_input")
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Returns true if and only if `input` differs from the tool input as it stands.
    pub fn differs(&mut self, input: &Value) -> bool {
        &self.tool_input() != input
    }

    /// Replaces the tool input for every later handler.
    pub fn rewrite(&mut self, input: Value) {
        self.rewritten = Some(input);
        self.native = None;
    }

    /// The runs of a Claude Code handler with the input as it stands: one, or one per path of
    /// `read_files`.
    pub fn claude_runs(&mut self) -> Vec<ClaudeRun> {
        let input = self.tool_input();
        let payload = self.payload;
        let root = self.root;
        let input = (!input.is_null()).then_some(input);
        claude::payloads(
            self.fields(),
            &payload.event,
            payload.kind,
            payload.tool_name.as_deref(),
            input.as_ref(),
            root,
        )
        .into_iter()
        .map(|(call, object)| ClaudeRun {
            call,
            input: serde_json::to_vec(&object).unwrap_or_default(),
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_replaces_only_the_tool_input() {
        let payload = Payload::parse(
            br#"{"event":"PreToolUse","tool_name":"run_terminal_command","tool_input":{"command":"ls"},"x":1}"#.to_vec(),
            None,
        )
        .unwrap();
        let mut inputs = Inputs::new(&payload, Path::new("/p"));
        assert_eq!(
            inputs.native(),
            br#"{"event":"PreToolUse","tool_name":"run_terminal_command","tool_input":{"command":"ls"},"x":1,"cwd":"/p"}"#
        );
        inputs.rewrite(serde_json::json!({"command": "ls -a"}));
        assert_eq!(
            inputs.native(),
            br#"{"event":"PreToolUse","tool_name":"run_terminal_command","tool_input":{"command":"ls -a"},"x":1,"cwd":"/p"}"#
        );
        let runs = inputs.claude_runs();
        let claude: Value = serde_json::from_slice(&runs[0].input).unwrap();
        assert_eq!(claude["tool_name"], "Bash");
        assert_eq!(claude["tool_input"]["command"], "ls -a");
        assert_eq!(claude["x"], 1);
    }
}
