//! What one handler's run means (the outcome table of contract §6, and the replies of §11):
//! proceed, block, ask, stop, or one of the fail-open failures, with the reason, the context,
//! the rewritten input and the message for the person it contributes. What an exit 0 or 2 means
//! is the handler's protocol's to say (`dispatch::protocol`, §12).

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::dispatch::action::{Answer, Done, Ending, Stop, KEPT, KILL_SETTLE};
use crate::signals;

/// The result of one handler, as the output names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Proceed,
    Block,
    Error,
    Timeout,
    SpawnError,
    /// Same `command` (or `argv`) as a handler already run in this dispatch: not run again.
    Duplicate,
    /// Not run because an earlier handler blocked, or the dispatcher was interrupted.
    Skipped,
    /// Stopped because the dispatcher received SIGINT, SIGTERM or SIGHUP.
    Interrupted,
    /// Asked for a person's approval of the tool call (contract §11).
    Ask,
    /// Asked the agent to stop its loop (`"continue": false`, contract §11).
    Stop,
    /// A background handler (`"async": true`), started and not waited for: its own outcome
    /// is recorded when it ends, and handed on with a later answer (contract §21).
    Started,
}

impl Outcome {
    /// The name the output, the execution log and the exported spans give the outcome.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Proceed => "proceed",
            Outcome::Block => "block",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
            Outcome::SpawnError => "spawn_error",
            Outcome::Duplicate => "duplicate",
            Outcome::Skipped => "skipped",
            Outcome::Interrupted => "interrupted",
            Outcome::Ask => "ask",
            Outcome::Stop => "stop",
            Outcome::Started => "started",
        }
    }
}

/// One handler's outcome and what it contributes to the dispatch.
#[derive(Debug)]
pub struct Judgement {
    pub outcome: Outcome,
    pub reason: Option<String>,
    pub context: Option<String>,
    pub message: Option<String>,
    pub warning: Option<String>,
    /// The tool input for later handlers and the caller, in levelcode's form (contract §11).
    pub updated_input: Option<Value>,
    /// `"continue": false`: the agent should stop, for this reason.
    pub stop: Option<String>,
    /// A message for the person, not the model.
    pub system_message: Option<String>,
    /// The handler asked for its stdout to be left out of the report (Claude Code's
    /// `suppressOutput`).
    pub suppress_output: bool,
}

/// What a handler replied when it exited 0 or 2: the exit code, stdout and stderr. What it means
/// is its protocol's to say.
#[derive(Clone, Copy, Debug)]
pub struct Reply<'a> {
    pub code: i32,
    pub stdout: &'a str,
    pub stderr: &'a str,
}

impl Judgement {
    pub fn new(outcome: Outcome) -> Judgement {
        Judgement {
            outcome,
            reason: None,
            context: None,
            message: None,
            warning: None,
            updated_input: None,
            stop: None,
            system_message: None,
            suppress_output: false,
        }
    }

    pub fn with_message(mut self, message: String) -> Judgement {
        self.message = Some(message);
        self
    }
}

/// Judges one run of a handler: every ending means the same whatever the protocol, except an
/// exit 0 or 2, which `read` reads by the handler's protocol (contract §6, §12).
pub fn judge(
    done: &Done,
    timeout: Duration,
    read: impl FnOnce(Reply<'_>) -> Judgement,
) -> Judgement {
    let mut judgement = judge_ending(done, timeout, read);
    if done.leftover_output {
        let note = "it exited while a process it started still held its output; stopped reading 100 ms later and left that process running, but its output now goes nowhere and its next write to it kills it (SIGPIPE): start background work with its output redirected (cmd >/dev/null 2>&1 &, or to a file)";
        judgement.message = Some(match judgement.message.take() {
            Some(m) => format!("{m}; {note}"),
            None => note.to_string(),
        });
    }
    judgement
}

fn judge_ending(
    run: &Done,
    timeout: Duration,
    read: impl FnOnce(Reply<'_>) -> Judgement,
) -> Judgement {
    let how = if run.killed {
        "SIGTERM, then SIGKILL 1 s later"
    } else {
        "SIGTERM"
    };
    let unkillable = if matches!(run.ending, Ending::Unkillable) {
        unkillable_note()
    } else {
        String::new()
    };
    match run.stopped {
        Some(Stop::Timeout) => {
            return Judgement::new(Outcome::Timeout).with_message(format!(
                "timed out after {} s; its process group was stopped with {how}{unkillable}; raise \"timeout\" if it needs longer",
                timeout.as_secs_f64()
            ))
        }
        Some(Stop::Interrupted(sig)) if matches!(run.ending, Ending::Failed(_)) => {
            return Judgement::new(Outcome::Interrupted).with_message(format!(
                "the dispatcher received {}; the request was abandoned",
                signals::name(sig)
            ))
        }
        Some(Stop::Interrupted(sig)) => {
            return Judgement::new(Outcome::Interrupted).with_message(format!(
                "the dispatcher received {}; the handler's process group was stopped with {how}{unkillable}",
                signals::name(sig)
            ))
        }
        None => {}
    }
    match run.ending {
        Ending::NotStarted(ref why) => {
            Judgement::new(Outcome::SpawnError).with_message(why.clone())
        }
        Ending::Missing(ref why) => Judgement::new(Outcome::Error).with_message(why.clone()),
        Ending::NotConfined(ref why) => {
            Judgement::new(Outcome::Error).with_message(format!("{why}; the tool call proceeds"))
        }
        Ending::Lost => Judgement::new(Outcome::Error).with_message(
            "its exit status was lost: something else reaped the process (does the program that \
             started the dispatcher ignore SIGCHLD?); it may have meant to block, but the tool \
             call proceeds"
                .into(),
        ),
        // Only after a stop, handled above.
        Ending::Unkillable => Judgement::new(Outcome::Error)
            .with_message(unkillable_note().trim_start_matches("; ").to_string()),
        Ending::Signaled(sig) => Judgement::new(Outcome::Error).with_message(format!(
            "killed by signal {sig} ({}); the tool call proceeds",
            signals::name(sig)
        )),
        Ending::NotRunnable(code) => {
            let what = if code == 127 {
                "not found"
            } else {
                "not executable"
            };
            Judgement::new(Outcome::Error).with_message(format!(
                "exit {code}: the program was probably {what} (see stderr); check the command and PATH"
            ))
        }
        Ending::Failed(ref why) => Judgement::new(Outcome::Error)
            .with_message(format!("{why}; the tool call proceeds")),
        Ending::Answered(answer) => match (answer.code(), answer) {
            (0, Answer::Status(status)) if !readable_body(run) => {
                let what = if run.stdout_truncated {
                    format!("a body over {} KiB", KEPT / 1024)
                } else {
                    "a body that is not a JSON object".to_string()
                };
                Judgement::new(Outcome::Error).with_message(format!(
                    "answered {status} with {what}, which is not read as a decision; the tool call proceeds"
                ))
            }
            (code @ (0 | 2), _) => read(Reply {
                code,
                stdout: &run.stdout,
                stderr: &run.stderr,
            }),
            (code, Answer::Exit(_)) => failed_exit(code, ""),
            (_, Answer::Status(status @ 300..=399)) => Judgement::new(Outcome::Error).with_message(format!(
                "answered {status}, a redirect, which is not followed (point \"url\" at where it leads); the tool call proceeds"
            )),
            (_, Answer::Status(status)) => Judgement::new(Outcome::Error).with_message(format!(
                "answered {status}; the tool call proceeds and the body is not read as a decision"
            )),
        },
    }
}

/// Returns true if and only if an http handler's 2xx body is a reply (contract §19): empty, or
/// a JSON object kept whole.
fn readable_body(run: &Done) -> bool {
    let body = run.stdout.trim();
    body.is_empty()
        || (!run.stdout_truncated
            && body.starts_with('{')
            && matches!(parse_json(body), Ok(Value::Object(_))))
}

/// An exit that is no reply: the tool call proceeds. `hint` is added after the code.
pub fn failed_exit(code: i32, hint: &str) -> Judgement {
    Judgement::new(Outcome::Error).with_message(format!(
        "exit {code}{hint}; the tool call proceeds and stdout is not read as a decision"
    ))
}

/// What a handler's message adds when the handler outlived SIGKILL.
fn unkillable_note() -> String {
    format!(
        "; it could not be killed: still there {} s after SIGKILL (stuck in uninterruptible sleep, on a hung network mount say), so the dispatcher moved on without it",
        KILL_SETTLE.as_secs_f64()
    )
}

/// A handler's trimmed stdout read as a reply: `None` when it does not start with `{`, the
/// object when it is one, else the warning to give (it was not read as a decision).
pub(crate) fn reply_object(
    trimmed: &str,
    label: &str,
) -> Result<Option<serde_json::Map<String, Value>>, String> {
    if !trimmed.starts_with('{') {
        return Ok(None);
    }
    match parse_json(trimmed) {
        Ok(Value::Object(object)) => Ok(Some(object)),
        other => {
            let why = match other {
                Err(e) => e.to_string(),
                Ok(_) => "not an object".into(),
            };
            Err(format!(
                "{label}: stdout starts with '{{' but is not a JSON object ({why}); it was not read as a decision"
            ))
        }
    }
}

/// Parses a handler's stdout as JSON.
///
/// JavaScript's `JSON.stringify` writes a lone UTF-16 surrogate (a string cut in the middle of
/// an emoji, say) as an escape such as `\ud83d`, which a Rust string cannot hold. Rather than
/// lose the whole object (and with it a block), such escapes are read as U+FFFD.
pub(crate) fn parse_json(text: &str) -> serde_json::Result<Value> {
    let strict = serde_json::from_str(text);
    if strict.is_ok() || !text.contains("\\u") {
        return strict;
    }
    match replace_lone_surrogates(text) {
        Some(repaired) => serde_json::from_str(&repaired).or(strict),
        None => strict,
    }
}

/// `text` with every `\uXXXX` escape of a surrogate that is not half of a pair replaced by
/// `\ufffd`; `None` when there is none.
fn replace_lone_surrogates(text: &str) -> Option<String> {
    fn unit_at(bytes: &[u8], at: usize) -> Option<u16> {
        if bytes.get(at..at + 2)? != b"\\u" {
            return None;
        }
        let hex = bytes.get(at + 2..at + 6)?;
        if !hex.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    }
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut replaced = false;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        // Outside strings there are no backslashes, so this starts an escape: `\` and one
        // character, or `\uXXXX`.
        let Some(unit) = unit_at(bytes, i) else {
            i += 2;
            continue;
        };
        let lone = match unit {
            0xD800..=0xDBFF => match unit_at(bytes, i + 6) {
                Some(0xDC00..=0xDFFF) => {
                    i += 12;
                    continue;
                }
                _ => true,
            },
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            // Backslashes are ASCII, so `i` is a character boundary.
            out.push_str(&text[copied..i]);
            out.push_str("\\ufffd");
            copied = i + 6;
            replaced = true;
        }
        i += 6;
    }
    if !replaced {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// A non-empty string field, trimmed.
pub(crate) fn string_field(object: &serde_json::Map<String, Value>, key: &str) -> Option<String> {
    let text = object.get(key)?.as_str()?.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The reason of a block that gave none.
pub fn default_reason(event: &str, label: &str) -> String {
    format!("blocked by {event} hook: {label}")
}

/// The reason of an `ask` that gave none.
pub fn default_ask_reason(event: &str, label: &str) -> String {
    format!("approval asked by {event} hook: {label}")
}

/// The reason of a `"continue": false` that gave no `stopReason`.
pub fn default_stop_reason(event: &str, label: &str) -> String {
    format!("stopped by {event} hook: {label}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_s_name_is_the_one_the_output_writes() {
        use Outcome::*;
        for outcome in [
            Proceed,
            Block,
            Error,
            Timeout,
            SpawnError,
            Duplicate,
            Skipped,
            Interrupted,
            Ask,
            Stop,
            Started,
        ] {
            let written = serde_json::to_value(outcome).unwrap();
            assert_eq!(written, outcome.name(), "{outcome:?}");
        }
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let cases = [
            (r#"{"r":"a\ud83d"}"#, Some(r#"{"r":"a\ufffd"}"#)),
            (r#"{"r":"\udc00b"}"#, Some(r#"{"r":"\ufffdb"}"#)),
            (r#"{"r":"\ud83d\ude00"}"#, None),
            (r#"{"r":"\ud83d\u0041"}"#, Some(r#"{"r":"\ufffd\u0041"}"#)),
            (r#"{"r":"\\ud800"}"#, None),
            (r#"{"r":"\\\ud800"}"#, Some(r#"{"r":"\\\ufffd"}"#)),
            (r#"{"r":"é\ud800é"}"#, Some(r#"{"r":"é\ufffdé"}"#)),
            (r#"{"r":"\u00e9"}"#, None),
            (r#"{"r":"\ud8"}"#, None),
        ];
        for (text, want) in cases {
            assert_eq!(replace_lone_surrogates(text).as_deref(), want, "{text}");
        }
    }

    #[test]
    fn stdout_with_a_lone_surrogate_is_still_an_object() {
        let value = parse_json(r#"{"decision":"block","reason":"no \ud83d"}"#).unwrap();
        assert_eq!(value["reason"], "no \u{FFFD}");
        assert!(parse_json(r#"{"a":"\ud800"#).is_err());
    }
}
