//! What the protocols a handler can speak (contract §12) do when it runs: what it reads on
//! stdin and how its reply is read. Each protocol is one module beside this one, answering the
//! questions of [`Rules`]: which runs one handler becomes and what each reads, what a run is
//! given besides its stdin, and what its exit 0 or 2 means. What settings know of a protocol
//! (its name, its tool names, its own settings files) is its line in `settings::protocol`; this
//! table has one line for each of those, in the same order, and the rest of the dispatcher asks
//! a [`Protocol`] (`protocol.rules()`), never a protocol's module.

pub mod claude;
mod levelcode;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::dispatch::handler_input::Inputs;
use crate::dispatch::outcome::{Judgement, Reply};
use crate::dispatch::payload::Payload;
use crate::settings::events::EventKind;
use crate::settings::protocol::{self, Protocol};

/// The table of rules, one line for each protocol of `settings::protocol`, in its order.
static TABLE: [&dyn Rules; protocol::COUNT] = [&levelcode::Levelcode, &claude::Claude];

/// What one protocol does when a handler runs. Every method but [`Rules::name`],
/// [`Rules::runs`] and [`Rules::judge`] has the answer of a protocol that translates nothing.
pub trait Rules: Sync {
    /// The value of `"protocol"` that names it, as its line in `settings::protocol` does.
    fn name(&self) -> &'static str;

    /// The runs one handler becomes for the input as it stands, each with what it reads.
    fn runs(&self, inputs: &mut Inputs<'_>) -> Vec<Run>;

    /// A file one run on an event of `kind` is given, named by a variable; `None`, after a
    /// warning when one should have been made and could not be, otherwise.
    fn run_file(&self, _kind: EventKind, _warnings: &mut Vec<String>) -> Option<RunFile> {
        None
    }

    /// Variables this process gave an earlier run, which a run that is not given them must not
    /// inherit.
    fn given_before(&self) -> &'static [&'static str] {
        &[]
    }

    /// The variable naming the project root in this protocol's own terms, given to every
    /// handler, for scripts written for it.
    fn root_variable(&self) -> Option<&'static str> {
        None
    }

    /// What a handler's exit 0 or 2 means. Every other ending means the same whatever the
    /// protocol (`outcome::judge`).
    fn judge(&self, reply: Reply<'_>, context: &Context<'_>) -> Judgement;
}

// The pipeline's half of a `Protocol`, defined beside the table it reads.
impl Protocol {
    /// The rules the protocol follows when a handler runs.
    pub fn rules(self) -> &'static dyn Rules {
        TABLE[self.index()]
    }

    /// What a handler speaking this protocol reads on stdin for `payload` in the project
    /// `root`, one entry for each run it becomes, as the chain gives it when no handler before
    /// it rewrote the input: what `test --dry-run` shows.
    pub fn stdins(self, payload: &Payload, root: &Path) -> Vec<Vec<u8>> {
        let mut inputs = Inputs::new(payload, root);
        let runs = self.rules().runs(&mut inputs);
        runs.into_iter()
            .map(|run| run.input.unwrap_or_else(|| inputs.native().to_vec()))
            .collect()
    }
}

/// One tool call in a protocol's own terms, as its handler reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The protocol's name of the tool, such as Claude Code's `Write`; empty when it has none.
    pub name: &'static str,
    /// `tool_input` in the protocol's form.
    pub input: Value,
    /// When one levelcode call is several of the protocol's, which part this one is.
    pub part: Option<usize>,
}

/// One run of a handler: what it reads and the call it is about.
pub struct Run {
    /// Its stdin; `None` for the payload in levelcode's own form ([`Inputs::native`]), which is
    /// made once for every handler that reads it.
    pub input: Option<Vec<u8>>,
    /// The tool call it is about, when the protocol translates the call.
    pub call: Option<ToolCall>,
    /// What the handler's entry says about the run, when a handler runs more than once.
    pub note: Option<String>,
}

/// A file one run of a handler is given, named by a variable, and how what the handler wrote to
/// it is read back.
pub struct RunFile {
    pub variable: &'static str,
    pub path: PathBuf,
    /// Reads what the handler wrote (the output's `session_env`) and removes the file; `Err` is
    /// the warning.
    pub collect: fn(&Path) -> Result<Option<String>, String>,
}

/// What a protocol's judge needs besides the reply.
pub struct Context<'a> {
    pub kind: EventKind,
    pub event: &'a str,
    /// Names the handler in default reasons and warnings.
    pub label: &'a str,
    /// How to carry an `updatedInput` back, for a run about a translated tool call.
    pub rewrite: Option<Rewrite<'a>>,
}

/// What carrying an `updatedInput` back needs: the levelcode tool, its input as the run's call
/// was made from, the call, and the project root.
#[derive(Clone, Copy, Debug)]
pub struct Rewrite<'a> {
    pub tool: &'a str,
    pub input: &'a Value,
    pub call: &'a ToolCall,
    pub root: &'a Path,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_of_rules_is_the_protocol_of_the_same_line_of_settings() {
        for p in Protocol::all() {
            assert_eq!(p.rules().name(), p.name());
        }
    }
}
