//! The warning-collecting path: every group and handler checked entry by entry, each problem a
//! warning naming the file and the entry's path, and only the bad entry skipped (contract §3, §4).

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use super::*;
use crate::settings::sandbox::{self, Sandbox};
use crate::settings::short_json;

/// Where problems are reported: the file, and the warnings list; and the file's text, for the
/// top-level settings a handler's reading depends on.
pub(super) struct Location<'a> {
    pub(super) file: &'a Path,
    pub(super) warnings: &'a mut Vec<String>,
    /// The file's text.
    pub(super) text: &'a str,
    /// Its `"allowPlainHttp"`, read for its first http handler.
    pub(super) plain_http: OnceLock<bool>,
}

/// The top-level key by which a settings file lets its http handlers post plain `http://` to
/// another machine (contract §19).
pub const ALLOW_PLAIN_HTTP: &str = "allowPlainHttp";

impl Location<'_> {
    /// The file's `"allowPlainHttp"`; a value that is not a boolean is a warning, and off.
    fn plain_http(&mut self) -> bool {
        if let Some(on) = self.plain_http.get() {
            return *on;
        }
        let on = match crate::settings::layers::boolean_setting(
            self.text.as_bytes(),
            ALLOW_PLAIN_HTTP,
        ) {
            Ok(on) => on.unwrap_or(false),
            Err(problem) => {
                self.warnings
                    .push(format!("{}: {problem}", self.file.display()));
                false
            }
        };
        let _ = self.plain_http.set(on);
        on
    }

    fn warn(&mut self, path: EntryPath<'_>, message: impl fmt::Display) {
        self.warnings
            .push(format!("{}: {path}: {message}", self.file.display()));
    }
}

/// An entry's path such as `hooks.PreToolUse[1].hooks[0].timeout`, written out only when a
/// warning needs it: formatting it for every entry would cost more than parsing the file.
#[derive(Clone, Copy)]
pub(super) struct EntryPath<'a> {
    event: &'a str,
    group: Option<usize>,
    handler: Option<usize>,
    key: Option<&'static str>,
}

impl<'a> EntryPath<'a> {
    fn event(event: &'a str) -> EntryPath<'a> {
        EntryPath {
            event,
            group: None,
            handler: None,
            key: None,
        }
    }

    fn group(self, index: usize) -> EntryPath<'a> {
        EntryPath {
            group: Some(index),
            ..self
        }
    }

    fn handler(self, index: usize) -> EntryPath<'a> {
        EntryPath {
            handler: Some(index),
            ..self
        }
    }

    fn key(self, key: &'static str) -> EntryPath<'a> {
        EntryPath {
            key: Some(key),
            ..self
        }
    }
}

impl fmt::Display for EntryPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hooks.{}", self.event)?;
        if let Some(group) = self.group {
            write!(f, "[{group}]")?;
        }
        if let Some(handler) = self.handler {
            write!(f, ".hooks[{handler}]")?;
        }
        if let Some(key) = self.key {
            write!(f, ".{key}")?;
        }
        Ok(())
    }
}

pub(super) fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(super) fn parse_event(
    source: &Arc<Source>,
    event: &str,
    value: Value,
    groups: &mut Vec<Group>,
    at: &mut Location<'_>,
) {
    let path = EntryPath::event(event);
    let Value::Array(entries) = value else {
        at.warn(
            path,
            format!(
                "must be an array of groups like [{{\"matcher\":\"write_file\",\"hooks\":[{{\"command\":\"...\"}}]}}], not {}; event skipped",
                describe(&value)
            ),
        );
        return;
    };
    for (index, entry) in entries.into_iter().enumerate() {
        if let Some(group) = parse_group(source, event, index, entry, path.group(index), at) {
            groups.push(group);
        }
    }
}

pub(super) fn parse_group(
    source: &Arc<Source>,
    event: &str,
    index: usize,
    entry: Value,
    path: EntryPath<'_>,
    at: &mut Location<'_>,
) -> Option<Group> {
    let Value::Object(mut fields) = entry else {
        at.warn(
            path,
            format!(
                "a group must be an object {{\"matcher\":...,\"hooks\":[...]}}, not {}; skipped",
                describe(&entry)
            ),
        );
        return None;
    };
    let looks_like_handler = ["command", "argv", "type"]
        .iter()
        .any(|k| fields.contains_key(*k));
    let hooks = match fields.remove("hooks") {
        None | Some(Value::Null) if looks_like_handler => {
            at.warn(
                path,
                "a handler written directly under the event; wrap it in a group: {\"hooks\":[{\"command\":...}]}; skipped",
            );
            return None;
        }
        None | Some(Value::Null) => {
            at.warn(path, "no \"hooks\" array of handlers; group skipped");
            return None;
        }
        Some(Value::Array(hooks)) if hooks.is_empty() => {
            at.warn(
                path.key("hooks"),
                "is empty; add a handler like {\"command\":\"...\"}; group skipped",
            );
            return None;
        }
        Some(Value::Array(hooks)) => hooks,
        Some(other) => {
            at.warn(
                path.key("hooks"),
                format!(
                    "must be an array of handlers, not {}; group skipped",
                    describe(&other)
                ),
            );
            return None;
        }
    };
    let matcher = match fields.remove("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(m),
        Some(other) => {
            at.warn(
                path.key("matcher"),
                format!(
                    "must be a string such as \"write_file|str_replace\", not {}; group skipped",
                    describe(&other)
                ),
            );
            return None;
        }
    };
    let enabled = parse_enabled(fields.get("enabled"), path.key("enabled"), at);
    let protocol = match fields.get("protocol") {
        None | Some(Value::Null) => None,
        Some(value) => Some(parse_protocol(value, path.key("protocol"), "group", at)?),
    };
    let filter = parse_filter(fields.get("if"), path.key("if"), "group", at);
    let sandbox = parse_sandbox(
        fields.get(sandbox::KEY),
        path.key(sandbox::KEY),
        "group",
        at,
    )?;
    let mut handlers = Vec::with_capacity(hooks.len());
    // In an agent's own file its handlers speak its protocol, with its default timeout.
    let defaults = Defaults {
        protocol: protocol.unwrap_or(source.layer.protocol()),
        timeout: source.layer.default_timeout(EventKind::of(event)),
        sandbox,
    };
    for (h, value) in hooks.into_iter().enumerate() {
        if let Some(handler) = parse_handler(h, value, &defaults, path.handler(h), at) {
            handlers.push(handler);
        }
    }
    Some(Group {
        source: Arc::clone(source),
        event: event.to_string(),
        index,
        matcher,
        enabled,
        protocol,
        filter,
        handlers,
        compiled: OnceLock::new(),
        parses: OnceLock::new(),
    })
}

pub(super) fn parse_enabled(
    value: Option<&Value>,
    path: EntryPath<'_>,
    at: &mut Location<'_>,
) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            at.warn(
                path,
                format!(
                    "must be true or false, not {}; treated as true",
                    short_json(other)
                ),
            );
            true
        }
    }
}

/// A `"protocol"` value; `None` (after a warning) when it names no protocol, since running a
/// handler in a protocol it does not speak would misread its answers.
fn parse_protocol(
    value: &Value,
    path: EntryPath<'_>,
    what: &str,
    at: &mut Location<'_>,
) -> Option<Protocol> {
    if let Some(protocol) = value.as_str().and_then(Protocol::parse) {
        return Some(protocol);
    }
    at.warn(
        path,
        format!(
            "{} is not a protocol (use {}); {what} skipped",
            short_json(value),
            Protocol::choices()
        ),
    );
    None
}

/// What a handler of a group is unless it says otherwise.
#[derive(Clone)]
pub(super) struct Defaults {
    /// The group's protocol, else its layer's.
    pub(super) protocol: Protocol,
    /// The layer's default timeout, when it is not levelcode's.
    pub(super) timeout: Option<f64>,
    /// The group's `"sandbox"`.
    pub(super) sandbox: sandbox::Setting,
}

pub(super) fn parse_handler(
    index: usize,
    value: Value,
    defaults: &Defaults,
    path: EntryPath<'_>,
    at: &mut Location<'_>,
) -> Option<Handler> {
    let Value::Object(mut fields) = value else {
        at.warn(
            path,
            format!(
                "a handler must be an object like {{\"command\":\"...\"}}, not {}; skipped",
                describe(&value)
            ),
        );
        return None;
    };
    let kind = match fields.get("type") {
        None | Some(Value::Null) => Some(Kind::DEFAULT),
        Some(Value::String(t)) => Kind::parse(t),
        Some(_) => None,
    };
    let not_run = |at: &mut Location<'_>, fields: &serde_json::Map<String, Value>| {
        at.warn(
            path.key("type"),
            format!(
                "{} is not a handler type this version runs (only {}); handler skipped",
                short_json(&fields["type"]),
                Kind::choices()
            ),
        );
    };
    let program = match kind {
        Some(Kind::Command) => Action::Process(parse_program(&mut fields, path, at)?),
        Some(Kind::Http) => Action::Http(parse_http(&mut fields, path, at)?),
        Some(Kind::Prompt | Kind::Agent) | None => {
            not_run(at, &fields);
            return None;
        }
    };
    // Claude Code has `async` on command handlers only; an http handler that asks for it is
    // waited for, so that a guard behind it still decides.
    let background = parse_background(&fields, path, at)
        && match &program {
            Action::Process(_) => true,
            Action::Http(_) => {
                at.warn(
                    path.key("async"),
                    "is for command handlers only (as in Claude Code); this http handler is waited for",
                );
                false
            }
        };
    let (secs, problem) = match (fields.get("timeout"), defaults.timeout) {
        (None | Some(Value::Null), _) if background => (BACKGROUND_TIMEOUT_SECS, None),
        (None | Some(Value::Null), Some(secs)) => (secs, None),
        (value, _) => clamp_timeout(value),
    };
    if let Some(problem) = problem {
        at.warn(path.key("timeout"), problem);
    }
    let enabled = parse_enabled(fields.get("enabled"), path.key("enabled"), at);
    let name = match fields.remove("name") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) if !n.trim().is_empty() => Some(n),
        Some(other) => {
            at.warn(
                path.key("name"),
                format!(
                    "must be a non-empty string, not {}; ignored",
                    short_json(&other)
                ),
            );
            None
        }
    };
    let protocol = match fields.get("protocol") {
        None | Some(Value::Null) => defaults.protocol,
        Some(value) => parse_protocol(value, path.key("protocol"), "handler", at)?,
    };
    let on_failure = match fields.get("onFailure") {
        None | Some(Value::Null) => OnFailure::Proceed,
        Some(Value::String(v)) if v == "proceed" => OnFailure::Proceed,
        Some(Value::String(v)) if v == "block" => OnFailure::Block,
        Some(other) => {
            at.warn(
                path.key("onFailure"),
                format!(
                    "must be \"block\" or \"proceed\", not {}; the handler fails open (\"proceed\")",
                    short_json(other)
                ),
            );
            OnFailure::Proceed
        }
    };
    let filter = parse_filter(fields.get("if"), path.key("if"), "handler", at);
    let own = parse_sandbox(
        fields.get(sandbox::KEY),
        path.key(sandbox::KEY),
        "handler",
        at,
    )?;
    Some(Handler {
        index,
        action: program,
        timeout: Duration::from_secs_f64(secs),
        enabled,
        name,
        protocol,
        on_failure,
        filter,
        background,
        sandbox: Sandbox::resolve(own, defaults.sandbox.clone()),
    })
}

/// Whether the handler runs in the background: `"async": true`, or Claude Code's
/// `"asyncRewake": true`, which implies it (contract §21). Any other value than a boolean is a
/// warning, and the handler runs in the foreground.
fn parse_background(
    fields: &serde_json::Map<String, Value>,
    path: EntryPath<'_>,
    at: &mut Location<'_>,
) -> bool {
    let mut background = false;
    for key in ["async", "asyncRewake"] {
        match fields.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Bool(on)) => background |= on,
            Some(other) => at.warn(
                path.key(key),
                format!(
                    "must be true or false, not {}; the handler runs in the foreground",
                    short_json(other)
                ),
            ),
        }
    }
    background
}

/// A `"sandbox"` (contract §20); `None`, after a warning, when it is not one this reads: a
/// handler is never run with fewer restrictions than its settings meant, so `what` is skipped.
fn parse_sandbox(
    value: Option<&Value>,
    path: EntryPath<'_>,
    what: &str,
    at: &mut Location<'_>,
) -> Option<sandbox::Setting> {
    match value.map(sandbox::parse) {
        None => Some(None),
        Some(Ok(setting)) => Some(setting),
        Some(Err(problem)) => {
            at.warn(path, format!("{problem}; {what} skipped"));
            None
        }
    }
}

/// What a handler runs: `command` (by `/bin/sh`, or by PowerShell with `"shell":
/// "powershell"`), `argv`, or `command` with `args` (Claude Code's exec form, contract §16).
/// `None`, after a warning, when it cannot be run as written.
fn parse_program(
    fields: &mut serde_json::Map<String, Value>,
    path: EntryPath<'_>,
    at: &mut Location<'_>,
) -> Option<Program> {
    let command = fields.remove("command").filter(|v| !v.is_null());
    let argv = fields.remove("argv").filter(|v| !v.is_null());
    let args = fields.remove("args").filter(|v| !v.is_null());
    let shell = fields.remove("shell").filter(|v| !v.is_null());
    let args = match (args, &command, &argv) {
        (None, _, _) => None,
        (Some(_), _, Some(_)) => {
            at.warn(
                path.key("args"),
                "goes with command (Claude Code's exec form); with argv, put the arguments in argv itself; handler skipped",
            );
            return None;
        }
        (Some(_), None, None) => {
            at.warn(
                path.key("args"),
                "needs command, the program it is given to, as in {\"command\":\"node\",\"args\":[\"guard.js\"]}; handler skipped",
            );
            return None;
        }
        (Some(args), Some(_), None) => Some(strings(args, "args", path, at)?),
    };
    let program = match (command, argv) {
        (Some(_), Some(_)) => {
            at.warn(
                path,
                "both command and argv given; keep one; handler skipped",
            );
            return None;
        }
        (None, None) => {
            at.warn(
                path,
                "neither command nor argv given; add \"command\":\"...\" or \"argv\":[...]; handler skipped",
            );
            return None;
        }
        (Some(Value::String(c)), None) if !c.trim().is_empty() => match args {
            Some(_) if c.trim() != c => {
                at.warn(
                        path.key("command"),
                        format!(
                            "{} has spaces around it; with args, command is the program alone, run without a shell: write its name or path without them; handler skipped",
                            short_json(&Value::String(c))
                        ),
                    );
                return None;
            }
            Some(args) => Program::Exec { program: c, args },
            None => Program::Shell(c),
        },
        (Some(other), None) => {
            at.warn(
                path.key("command"),
                format!(
                    "must be a non-empty string, not {}; handler skipped",
                    short_json(&other)
                ),
            );
            return None;
        }
        (None, Some(items)) => {
            let items = match items {
                Value::Array(items)
                    if !items.is_empty() && items[0].as_str().is_some_and(|s| !s.is_empty()) =>
                {
                    Value::Array(items)
                }
                other => {
                    at.warn(
                        path.key("argv"),
                        format!(
                            "must be a non-empty array of strings, program first, not {}; handler skipped",
                            short_json(&other)
                        ),
                    );
                    return None;
                }
            };
            Program::Argv(strings(items, "argv", path, at)?)
        }
    };
    match shell {
        None => Some(program),
        Some(Value::String(name)) if name == BASH || name == POWERSHELL => match program {
            Program::Shell(command) if name == POWERSHELL => Some(Program::PowerShell(command)),
            // The default said out loud changes nothing, with or without a shell.
            other if name == BASH => Some(other),
            other => {
                at.warn(
                    path.key("shell"),
                    "has no effect: with args or argv the program runs without a shell; ignored",
                );
                Some(other)
            }
        },
        Some(other) => {
            at.warn(
                path.key("shell"),
                format!(
                    "{} is not a shell this version runs (\"{BASH}\", the default, runs the command by /bin/sh; \"{POWERSHELL}\" by PowerShell); handler skipped",
                    short_json(&other)
                ),
            );
            None
        }
    }
}

/// An http handler's `url`, `headers` and `allowedEnvVars` (contract §19); `None`, after a
/// warning, when it cannot be run as written.
fn parse_http(
    fields: &mut serde_json::Map<String, Value>,
    path: EntryPath<'_>,
    at: &mut Location<'_>,
) -> Option<HttpHook> {
    let url = match fields.remove("url") {
        Some(Value::String(url)) => match crate::http::Url::parse(&url) {
            Ok(_) => url,
            Err(why) => {
                at.warn(path.key("url"), format!("{why}; handler skipped"));
                return None;
            }
        },
        None | Some(Value::Null) => {
            at.warn(
                path,
                "an http handler needs \"url\", the address it posts the event to, as in {\"type\":\"http\",\"url\":\"https://policy.example.com/hooks\"}; handler skipped",
            );
            return None;
        }
        Some(other) => {
            at.warn(
                path.key("url"),
                format!(
                    "must be a string such as \"https://policy.example.com/hooks\", not {}; handler skipped",
                    short_json(&other)
                ),
            );
            return None;
        }
    };
    let headers = match fields.remove("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(map)) => {
            let mut headers = Vec::with_capacity(map.len());
            for (name, value) in map {
                let Value::String(value) = value else {
                    at.warn(
                        path.key("headers"),
                        format!(
                            "{name:?} is {}, not a string: every header value is a string; handler skipped",
                            describe(&value)
                        ),
                    );
                    return None;
                };
                if let Err(why) = header_problem(&name, &value) {
                    at.warn(path.key("headers"), format!("{why}; handler skipped"));
                    return None;
                }
                headers.push((name, value));
            }
            headers
        }
        Some(other) => {
            at.warn(
                path.key("headers"),
                format!(
                    "must be an object of header names and string values such as {{\"Authorization\":\"Bearer $TOKEN\"}}, not {}; handler skipped",
                    short_json(&other)
                ),
            );
            return None;
        }
    };
    let allowed_env_vars = match fields.remove("allowedEnvVars") {
        None | Some(Value::Null) => Vec::new(),
        Some(value) => strings(value, "allowedEnvVars", path, at)?,
    };
    Some(HttpHook {
        url,
        headers,
        allowed_env_vars,
        plain_allowed: at.plain_http(),
    })
}

/// Why a header cannot be sent as written: its name is not an HTTP token, or its value holds a
/// line break or a NUL, which would end it early.
fn header_problem(name: &str, value: &str) -> Result<(), String> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(format!(
            "{name:?} is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)"
        ));
    }
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(format!(
            "the value of {name:?} holds a line break or a NUL, which no header may"
        ));
    }
    Ok(())
}

/// An `"if"`: a string, read as a rule when a call is tested against it (a string that is no
/// rule lets the handler run, with a warning then); anything else is ignored, with a warning.
fn parse_filter(
    value: Option<&Value>,
    path: EntryPath<'_>,
    what: &str,
    at: &mut Location<'_>,
) -> Option<Filter> {
    match value {
        None | Some(Value::Null) => None,
        Some(Value::String(rule)) => Some(Filter::new(rule.as_str())),
        Some(other) => {
            at.warn(
                path,
                format!(
                    "must be a permission rule such as \"Bash(git commit *)\" or \"Edit(src/**)\", not {}; ignored, so the {what} runs for every call its matcher matches",
                    short_json(other)
                ),
            );
            None
        }
    }
}

/// `value` as the strings of `key` (`args`, `argv`); `None`, after a warning naming the first
/// element that is not a string, otherwise.
fn strings(
    value: Value,
    key: &'static str,
    path: EntryPath<'_>,
    at: &mut Location<'_>,
) -> Option<Vec<String>> {
    let Value::Array(items) = value else {
        at.warn(
            path.key(key),
            format!(
                "must be an array of strings, each one argument, not {}; handler skipped",
                short_json(&value)
            ),
        );
        return None;
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        match item {
            // A NUL byte is the runner's to refuse (a `spawn_error`, so that a guard that
            // fails closed still blocks); `validate` names it.
            Value::String(text) => out.push(text),
            other => {
                at.warn(
                    path.key(key),
                    format!(
                        "element {i} is {}, not a string: every argument is a string (write numbers and booleans in quotes); handler skipped",
                        describe(&other)
                    ),
                );
                return None;
            }
        }
    }
    Some(out)
}

/// The timeout in seconds for a handler's `timeout` value, and the warning to give, if any
/// (contract §4): missing or null is 10; not a number or ≤ 0 is 10 with a warning; over 600 is
/// 600 with a warning, which from 1000 on also says that the unit is seconds.
pub fn clamp_timeout(value: Option<&Value>) -> (f64, Option<String>) {
    let secs = match value {
        None | Some(Value::Null) => return (DEFAULT_TIMEOUT_SECS, None),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(other) => {
            return (
                DEFAULT_TIMEOUT_SECS,
                Some(format!(
                    "must be a number of seconds, not {}; using 10",
                    short_json(other)
                )),
            )
        }
    };
    clamp_secs(secs)
}

/// [`clamp_timeout`] for a number.
pub(super) fn clamp_secs(secs: f64) -> (f64, Option<String>) {
    if secs.is_nan() || secs <= 0.0 {
        return (
            DEFAULT_TIMEOUT_SECS,
            Some(format!(
                "{secs} is not a positive number of seconds; using 10"
            )),
        );
    }
    if secs > MAX_TIMEOUT_SECS {
        let unit = if secs >= 1000.0 {
            " (the unit is seconds, not milliseconds)"
        } else {
            ""
        };
        return (
            MAX_TIMEOUT_SECS,
            Some(format!(
                "{secs} seconds is over the 600-second maximum{unit}; using 600"
            )),
        );
    }
    (secs, None)
}
