//! What each handler of a chain reads on stdin is made from: the payload as levelcode gives it
//! (contract §2), its members for a protocol that translates it (§12), and the tool input as the
//! handlers before it rewrote it (§11).

use std::borrow::Cow;
use std::path::Path;

use serde_json::{Map, Value};

use crate::dispatch::payload::Payload;

/// The stdin of the handlers of one dispatch, made once and made again only after a rewrite.
pub struct Inputs<'a> {
    payload: &'a Payload,
    root: &'a Path,
    /// `tool_input` as the last rewrite left it; `None` while nothing rewrote it.
    rewritten: Option<Value>,
    /// The bytes a levelcode handler reads, once made.
    native: Option<Cow<'a, [u8]>>,
    /// The payload's members, parsed the first time a translating protocol or a rewrite needs
    /// them.
    fields: Option<Map<String, Value>>,
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

    /// The payload being dispatched.
    pub fn payload(&self) -> &'a Payload {
        self.payload
    }

    /// The project root.
    pub fn root(&self) -> &'a Path {
        self.root
    }

    /// The payload's members as the agent gave them.
    pub fn fields(&mut self) -> &Map<String, Value> {
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

    /// The tool input as it stands, borrowed: the last rewrite, else the payload's (`null` when
    /// it has none).
    pub fn current_input(&mut self) -> &Value {
        static NULL: Value = Value::Null;
        if self.rewritten.is_none() {
            self.fields();
        }
        match (&self.rewritten, &self.fields) {
            (Some(input), _) => input,
            (None, Some(fields)) => fields.get("tool_input").unwrap_or(&NULL),
            (None, None) => &NULL,
        }
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
        let claude = crate::settings::protocol::Protocol::parse("claude").unwrap();
        let runs = claude.rules().runs(&mut inputs);
        let claude: Value = serde_json::from_slice(runs[0].input.as_ref().unwrap()).unwrap();
        assert_eq!(claude["tool_name"], "Bash");
        assert_eq!(claude["tool_input"]["command"], "ls -a");
        assert_eq!(claude["x"], 1);
    }
}
