//! Claude Code's hook protocol (contract §12), as a pair of pure functions: [`payloads`] gives
//! the stdin a Claude Code hook script expects for one of our payloads, [`judge`] reads its reply
//! (exit code, stdout, stderr) as one of our outcomes. [`input_from_claude`] carries an
//! `updatedInput` back to the levelcode tool's own input.
//!
//! Tool names and inputs follow the table of §12: `write_file` is `Write`, `str_replace` is
//! `Edit` (one replacement) or `MultiEdit`, `run_terminal_command` is `Bash`, `read_files` is one
//! `Read` per path, `code_search` is `Grep`, `glob` is `Glob`; any other tool keeps its name and
//! input. Paths are joined to the project root and normalized lexically, as Claude Code gives
//! them.
//!
//! This file holds the protocol's entry in the table of rules (its tool names and settings files
//! are `settings::protocol::claude`); the way in is
//! `tool_calls.rs` (our tool calls as Claude Code's, and its `updatedInput` back) and
//! `payload.rs` (the envelope around them), the way out `reply.rs` (what an exit 0 or 2 and its
//! output mean).

use crate::dispatch::handler_input::Inputs;
use crate::dispatch::outcome::{Judgement, Reply};
use crate::dispatch::protocol::{Context, Rules, Run, RunFile};
use crate::settings::events::EventKind;

mod by_event;
mod payload;
mod reply;
mod session_env;
mod tool_calls;

pub use crate::settings::protocol::claude::{default_timeout, tool_names, NAME, SESSION_SOURCE};
pub use payload::{payload, payloads, tool_response};
pub use reply::judge;
pub use tool_calls::{input_from_claude, tool_calls};

/// Claude Code's protocol in the table of protocols.
pub struct Claude;

impl Rules for Claude {
    fn name(&self) -> &'static str {
        NAME
    }

    /// One run, or for `read_files` one per path, each reading Claude Code's payload for the
    /// input as it stands.
    fn runs(&self, inputs: &mut Inputs<'_>) -> Vec<Run> {
        let input = inputs.tool_input();
        let input = (!input.is_null()).then_some(input);
        let (payload, root) = (inputs.payload(), inputs.root());
        let runs = payloads(
            inputs.fields(),
            &payload.event,
            payload.kind,
            payload.tool_name.as_deref(),
            input.as_ref(),
            root,
        );
        let parts = runs.len();
        runs.into_iter()
            .enumerate()
            .map(|(i, (call, object))| {
                let note = match call.as_ref().and_then(|c| c.input.get("file_path")) {
                    Some(path) if parts > 1 => Some(format!(
                        "run for {} ({} of {parts} paths of read_files)",
                        path.as_str().unwrap_or_default(),
                        i + 1
                    )),
                    _ => None,
                };
                Run {
                    input: Some(serde_json::to_vec(&object).unwrap_or_default()),
                    call,
                    note,
                }
            })
            .collect()
    }

    /// `CLAUDE_ENV_FILE`, on `SessionStart`.
    fn run_file(&self, kind: EventKind, warnings: &mut Vec<String>) -> Option<RunFile> {
        if kind != EventKind::SessionStart {
            return None;
        }
        Some(RunFile {
            variable: session_env::VARIABLE,
            path: session_env::create(warnings)?,
            collect: session_env::collect,
        })
    }

    fn given_before(&self) -> &'static [&'static str] {
        if session_env::given_before() {
            &[session_env::VARIABLE]
        } else {
            &[]
        }
    }

    /// Claude Code's name for the project root (contract §12), given to every handler since it
    /// names the same directory.
    fn root_variable(&self) -> Option<&'static str> {
        Some("CLAUDE_PROJECT_DIR")
    }

    fn judge(&self, reply: Reply<'_>, context: &Context<'_>) -> Judgement {
        judge(
            context.kind,
            context.event,
            context.label,
            reply.code,
            reply.stdout,
            reply.stderr,
            context.rewrite,
        )
    }
}

#[cfg(test)]
mod tests;
