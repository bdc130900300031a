//! `levelcode-hooks validate`: every problem of every layer, for people and CI (contract §10).
//!
//! It reports every warning a dispatch would give about the settings (§3 to §5), then takes a
//! second, slower look that a dispatch never takes: unknown keys (with a "did you mean"), event
//! names levelcode does not fire, matchers on events that ignore them, tool names from other
//! agents, timeouts written in milliseconds, programs missing from `PATH` and script paths
//! missing from the project. Any problem makes it exit 1.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::commands::command_check::{self, Lookup};
use crate::commands::http_check;
use crate::commands::inspect::{self, Inspection, LayerState, LayerView};
use crate::commands::suggest;
use crate::dispatch::exit::Status;
use crate::dispatch::output::write_stdout;
use crate::dispatch::Options;
use crate::settings::events::{self, EventKind, Subject, EVENTS};
use crate::settings::kind::{self, Kind};
use crate::settings::layers::LayerKind;
use crate::settings::matcher;
use crate::settings::protocol::Protocol;
use crate::settings::sandbox;
use crate::settings::{Action, Program, Written};
use crate::style::{Painter, Style};

#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// Check exactly these settings files instead of the three standard layers.
    #[arg(long = "settings", value_name = "FILE")]
    pub settings: Vec<PathBuf>,

    /// The project root: where the project layer is, and where relative script paths resolve
    /// [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub project_dir: Option<PathBuf>,

    /// Skip the project layer (also LEVELCODE_HOOKS_NO_PROJECT=1).
    #[arg(long)]
    pub no_project: bool,

    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One thing wrong with a settings file.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub layer: &'static str,
    pub file: String,
    /// Where in the file, such as `hooks.PreToolUse[0].hooks[1].timeout`; `null` for the file
    /// as a whole.
    pub path: Option<String>,
    /// A stable name for the kind of problem.
    pub kind: &'static str,
    pub message: String,
}

const TOP_KEYS: &[&str] = &["hooks"];
const GROUP_KEYS: &[&str] = &[
    "matcher",
    "enabled",
    "hooks",
    "protocol",
    "if",
    sandbox::KEY,
];
/// The keys a handler written as `fields` may have: every handler's that levelcode honours, and
/// its kind's, from the table of kinds. A kind this version does not run is refused by its
/// `type` alone, so its handler's keys are `command`'s and its own.
fn handler_keys(fields: &Map<String, Value>) -> Vec<&'static str> {
    let kind = fields
        .get("type")
        .and_then(Value::as_str)
        .and_then(Kind::parse)
        .unwrap_or(Kind::DEFAULT);
    let mut keys: Vec<&'static str> = kind::COMMON_FIELDS
        .iter()
        .copied()
        .filter(|key| crate::commands::import::not_honoured(key).is_none())
        .collect();
    if !kind.runs() {
        keys.extend(Kind::DEFAULT.entry().fields);
    }
    keys.extend(kind.entry().fields);
    keys
}

pub fn run(args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    let options = Options::reading(
        args.project_dir.clone(),
        args.settings.clone(),
        args.no_project,
    );
    let mut inspection = inspect::inspect(&options, inspect::root_without_payload(&options));
    if args.settings.is_empty() {
        inspection
            .notes
            .extend(crate::commands::import::suggestion(&inspection));
    }
    let problems = validate(&inspection);
    let text = if args.json {
        let mut line = serde_json::to_string(&to_json(&inspection, &problems))?;
        line.push('\n');
        line
    } else {
        report(&inspection, &problems, Painter::stdout())
    };
    write_stdout(&text)?;
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        Status::Failure.into()
    })
}

/// Every problem of every layer, in file order.
pub fn validate(inspection: &Inspection) -> Vec<Problem> {
    let mut problems = Vec::new();
    for layer in &inspection.layers {
        check_layer(layer, inspection, &mut problems);
    }
    problems
}

fn check_layer(layer: &LayerView, inspection: &Inspection, problems: &mut Vec<Problem>) {
    let mut found = Found {
        layer,
        problems: Vec::new(),
        millisecond_timeouts: HashMap::new(),
    };
    match layer.state {
        LayerState::Missing if layer.kind == LayerKind::Cli => {
            found.add(None, "missing_file", "no such file".into());
        }
        LayerState::Missing | LayerState::Repeated => {}
        LayerState::Unusable | LayerState::Read => {
            if let Some(text) = &layer.text {
                check_raw(text, &mut found);
            }
            check_commands(layer, &inspection.root, &mut found);
            check_filters(layer, &mut found);
            for problem in crate::commands::sandbox::problems(layer, &inspection.root) {
                found.add(problem.path, problem.kind, problem.message);
            }
            let parsed = parse_warnings(&mut found);
            found.problems.extend(parsed);
        }
    }
    let order = event_order(layer);
    found
        .problems
        .sort_by_key(|p| position(p.path.as_deref(), &order));
    problems.extend(found.problems);
}

/// Problems found in one layer.
struct Found<'a> {
    layer: &'a LayerView,
    problems: Vec<Problem>,
    /// Handler paths whose timeout looks like milliseconds, with the seconds it probably means.
    millisecond_timeouts: HashMap<String, f64>,
}

impl Found<'_> {
    fn add(&mut self, path: Option<String>, kind: &'static str, message: String) {
        self.problems.push(Problem {
            layer: self.layer.kind.name(),
            file: self.layer.file(),
            path,
            kind,
            message,
        });
    }
}

/// The warnings of a dispatch (contract §3 to §5), with the part of the entry they concern.
fn parse_warnings(found: &mut Found<'_>) -> Vec<Problem> {
    let file = found.layer.file();
    let mut out = Vec::new();
    for warning in &found.layer.warnings {
        let rest = warning
            .strip_prefix(&file)
            .and_then(|r| r.strip_prefix(": "))
            .unwrap_or(warning);
        let (path, message) = match rest.split_once(": ") {
            Some((path, message)) if path.starts_with("hooks") && !path.contains(' ') => {
                (Some(path.to_string()), message.to_string())
            }
            _ => (None, rest.to_string()),
        };
        let field = path.as_deref().and_then(|p| p.rsplit('.').next());
        let (kind, message) = match (path.as_deref(), field) {
            (None, _) => ("invalid_file", message),
            (Some(p), Some("timeout")) => {
                let handler = p.trim_end_matches(".timeout");
                match found.millisecond_timeouts.get(handler) {
                    Some(secs) => (
                        "timeout_milliseconds",
                        format!("{message}; did you mean \"timeout\": {secs}?"),
                    ),
                    None => ("timeout", message),
                }
            }
            (Some(_), Some("matcher")) => ("invalid_matcher", message),
            (Some(_), Some("if")) => ("invalid_if", message),
            (Some(_), _) => ("invalid_entry", message),
        };
        out.push(Problem {
            layer: found.layer.kind.name(),
            file: file.clone(),
            path,
            kind,
            message,
        });
    }
    out
}

/// The second look at the JSON, which a dispatch never takes.
fn check_raw(text: &str, found: &mut Found<'_>) {
    let Ok(Value::Object(top)) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let kind = found.layer.kind;
    if kind == LayerKind::Project && top.contains_key(crate::trust::TRUST_ALL) {
        found.add(
            Some(crate::trust::TRUST_ALL.to_string()),
            "ignored_in_project",
            format!(
                "{} is read only from the user and data layers: a project cannot trust its own hooks; remove it",
                crate::trust::TRUST_ALL
            ),
        );
    }
    if !matches!(kind, LayerKind::User | LayerKind::Data) {
        let mut switches: Vec<&str> = crate::settings::layers::agent_layers()
            .filter_map(|(k, _)| k.switch())
            .collect();
        switches.dedup();
        for switch in switches.into_iter().filter(|s| top.contains_key(*s)) {
            found.add(
                Some(switch.to_string()),
                "ignored_outside_user_and_data",
                format!(
                    "{switch} is read only from the user and data layers (the person's own settings), so it does nothing here; move it to ~/.config/levelcode/settings.json"
                ),
            );
        }
    }
    // An agent's own file holds that agent's other settings, which are its own business.
    if !top.contains_key("hooks") && !matches!(kind, LayerKind::Agent(..)) {
        for key in top.keys() {
            if let Some(hint) = suggest::nearest(key, TOP_KEYS) {
                found.add(
                    Some(key.clone()),
                    "unknown_key",
                    format!("unknown key {key:?}; did you mean {hint:?}? Only \"hooks\" is read, so this file has no hooks"),
                );
            }
        }
    }
    let Some(events) = inspect::raw_hooks(text) else {
        return;
    };
    let mut seen: Vec<&str> = Vec::new();
    for (event, value) in &events {
        let path = format!("hooks.{event}");
        if seen.contains(&event.as_str()) {
            found.add(
                Some(path.clone()),
                "duplicate_event",
                format!("{event:?} appears twice in \"hooks\"; both are read here, but most JSON tools keep only the last: merge their groups into one array"),
            );
        }
        seen.push(event);
        check_event_name(event, &path, found);
        let Value::Array(groups) = value else {
            continue;
        };
        for (i, group) in groups.iter().enumerate() {
            if let Value::Object(fields) = group {
                check_group(event, &format!("{path}[{i}]"), fields, found);
            }
        }
    }
}

fn check_event_name(event: &str, path: &str, found: &mut Found<'_>) {
    if EventKind::of(event) != EventKind::Unknown {
        return;
    }
    let message = match meant_event(event) {
        Some(ours) if ours.aliases.contains(&event) => format!(
            "{event:?} is another agent's event; levelcode calls it {:?}",
            ours.name
        ),
        Some(ours) => format!(
            "{event:?} is not an event levelcode-hooks knows; did you mean {:?}? Event names are case-sensitive",
            ours.name
        ),
        None if events::FOREIGN.contains(&event) => format!(
            "levelcode does not fire {event:?} ({}); these hooks never run",
            events::fired_and_known()
        ),
        None => format!(
            "{event:?} is not an event levelcode-hooks knows ({}); its hooks run only when something dispatches that exact name",
            events::fired_and_known()
        ),
    };
    found.add(Some(path.to_string()), "unknown_event", message);
}

/// The event an unknown name was probably meant to be: ours under another agent's name
/// (`BeforeTool`), or a near miss (`PreToolUSe`).
fn meant_event(event: &str) -> Option<&'static events::Event> {
    EVENTS
        .iter()
        .find(|ours| ours.aliases.contains(&event))
        .or_else(|| {
            let hint = suggest::nearest(event, &events::names())?;
            EVENTS.iter().find(|ours| ours.name == hint)
        })
}

fn check_group(event: &str, path: &str, fields: &Map<String, Value>, found: &mut Found<'_>) {
    let has_hooks = fields.get("hooks").is_some_and(|h| !h.is_null());
    let handler_written_as_group = !has_hooks
        && ["command", "argv", "type"]
            .iter()
            .any(|k| fields.contains_key(*k));
    // A group under an unknown name is judged as under the event it was meant to be, so the
    // advice still holds once the name is fixed; under a name that means nothing, its matcher
    // is nobody's to judge.
    let meant = match EventKind::of(event) {
        EventKind::Unknown => meant_event(event),
        kind => kind.event(),
    };
    let (kind, event) = meant.map_or((EventKind::Unknown, event), |e| (e.kind, e.name));
    let tool_event = kind.is_tool_event();
    let protocol = matcher_protocol(fields, found.layer.kind.protocol());
    if !handler_written_as_group {
        for key in fields.keys() {
            if GROUP_KEYS.contains(&key.as_str()) {
                continue;
            }
            let message = if handler_keys(fields).contains(&key.as_str()) {
                format!("{key:?} belongs on each handler inside \"hooks\", not on the group; here it is ignored")
            } else {
                unknown_key_message(key, GROUP_KEYS, fields, tool_event)
            };
            found.add(Some(format!("{path}.{key}")), "unknown_key", message);
        }
    }
    match fields.get("matcher") {
        _ if kind == EventKind::Unknown => {}
        // A protocol may test the matcher on an event without a tool (Claude Code's against
        // `startup` on SessionStart).
        Some(Value::String(_)) if !tool_event && protocol.match_subject(kind, None).is_some() => {}
        Some(Value::String(m)) if !tool_event && !m.is_empty() && m != "*" => found.add(
            Some(format!("{path}.matcher")),
            "matcher_ignored",
            format!(
                "{event} ignores matchers (only {} have something to match); this group runs for every {event}: remove the matcher",
                events::listed("and", |e| e.matcher != Subject::Nothing)
            ),
        ),
        Some(Value::String(m)) if tool_event && matcher::is_name_list(m) => {
            check_tool_names(m, &format!("{path}.matcher"), protocol, found);
        }
        _ => {}
    }
    if let Some(Value::Array(handlers)) = fields.get("hooks") {
        for (j, handler) in handlers.iter().enumerate() {
            if let Value::Object(hfields) = handler {
                check_handler(&format!("{path}.hooks[{j}]"), hfields, found);
            }
        }
    }
}

/// The protocol a group's matcher follows, by the dispatch's rule (`Group::matcher_protocol`):
/// each handler speaks its own `"protocol"`, else its group's, else its layer's (`layer`:
/// Claude Code's in its own files); a `"protocol"` that names none counts as levelcode's.
fn matcher_protocol(fields: &Map<String, Value>, layer: Protocol) -> Protocol {
    let group = fields.get("protocol").and_then(Value::as_str);
    let named = |name: Option<&str>| name.map_or(layer, |n| Protocol::parse(n).unwrap_or_default());
    let handlers = match fields.get("hooks") {
        Some(Value::Array(handlers)) if !handlers.is_empty() => handlers.as_slice(),
        // A group without handlers runs nothing; its matcher is read as its layer's.
        _ => return group.map_or(layer, |g| Protocol::parse(g).unwrap_or_default()),
    };
    Protocol::of_group(
        group.and_then(Protocol::parse),
        handlers
            .iter()
            .map(|h| named(h.get("protocol").and_then(Value::as_str).or(group))),
    )
}

/// Names in an exact-name matcher that no tool has ([`crate::commands::tools::name_problem`]).
fn check_tool_names(matcher: &str, path: &str, protocol: Protocol, found: &mut Found<'_>) {
    for name in matcher.split('|').map(str::trim).filter(|n| !n.is_empty()) {
        if let Some(message) = crate::commands::tools::name_problem(name, protocol) {
            found.add(Some(path.to_string()), "tool_name", message);
        }
    }
}

fn check_handler(path: &str, fields: &Map<String, Value>, found: &mut Found<'_>) {
    let known = handler_keys(fields);
    for key in fields.keys() {
        if known.contains(&key.as_str()) {
            continue;
        }
        let message = if key == "matcher" || key == "hooks" {
            format!("{key:?} belongs on the group, next to its \"hooks\" array, not on a handler; here it is ignored")
        } else if let Some(why) = crate::commands::import::not_honoured(key) {
            found.add(Some(format!("{path}.{key}")), "not_honoured", why);
            continue;
        } else {
            unknown_key_message(key, &known, fields, false)
        };
        found.add(Some(format!("{path}.{key}")), "unknown_key", message);
    }
    let background = ["async", "asyncRewake"]
        .iter()
        .any(|key| fields.get(*key) == Some(&Value::Bool(true)));
    if background && fields.get("onFailure").and_then(Value::as_str) == Some("block") {
        found.add(
            Some(format!("{path}.onFailure")),
            "async_cannot_block",
            "has no effect with \"async\": a background handler runs after the dispatch has answered, so its failure cannot block; drop one of them".to_string(),
        );
    }
    if let Some(secs) = fields.get("timeout").and_then(Value::as_f64) {
        if secs >= 1000.0 {
            found
                .millisecond_timeouts
                .insert(path.to_string(), secs / 1000.0);
        }
    }
}

/// The message for an unknown key: what it was probably meant to be, and what ignoring it means.
fn unknown_key_message(
    key: &str,
    known: &[&str],
    fields: &Map<String, Value>,
    tool_event: bool,
) -> String {
    let alias = match key {
        "disabled" | "disable" => {
            return format!(
                "unknown key {key:?}, ignored; to turn this off write \"enabled\": false"
            )
        }
        "cmd" | "run" | "script" | "exec" => Some("command"),
        "arguments" => Some("argv"),
        "timeout_ms" | "timeoutMs" | "timeoutSeconds" | "timeout_secs" => Some("timeout"),
        "label" | "title" => Some("name"),
        "matches" | "match" | "tools" | "tool" => Some("matcher"),
        _ => None,
    };
    let hint = alias
        .filter(|a| known.contains(a))
        .or_else(|| suggest::nearest(key, known));
    let Some(hint) = hint else {
        return format!(
            "unknown key {key:?}, ignored when hooks run (known keys: {})",
            known.join(", ")
        );
    };
    let effect = if fields.contains_key(hint) {
        String::new()
    } else {
        match hint {
            "matcher" if tool_event => {
                " As written, the group has no matcher and runs for every tool".into()
            }
            "command" | "argv" => " As written, the handler has no command and is skipped".into(),
            "timeout" => {
                " As written, the default of 10 seconds applies (the unit is seconds)".into()
            }
            "enabled" => " As written, it stays enabled".into(),
            "hooks" => " As written, the group has no handlers and is skipped".into(),
            _ => String::new(),
        }
    };
    format!("unknown key {key:?}; did you mean {hint:?}?{effect}")
}

/// Programs not on `PATH`, scripts not in the project: only for handlers that can run.
fn check_commands(layer: &LayerView, root: &std::path::Path, found: &mut Found<'_>) {
    let lookup = Lookup::from_env(root);
    for group in &layer.groups {
        if !group.enabled {
            continue;
        }
        for handler in group.handlers.iter().filter(|h| h.enabled) {
            let program = match &handler.action {
                Action::Process(program) => program,
                Action::Http(hook) => {
                    let at = format!("{}.hooks[{}]", group.path(), handler.index);
                    for problem in http_check::check(hook) {
                        found.add(
                            Some(format!("{at}.{}", problem.field)),
                            problem.kind,
                            problem.message,
                        );
                    }
                    continue;
                }
            };
            let field = match program {
                Program::Shell(_) | Program::PowerShell(_) | Program::Exec { .. } => "command",
                Program::Argv(_) => "argv",
            };
            let place = format!("{}.hooks[{}].{field}", group.path(), handler.index);
            if let Some((key, problem)) =
                crate::commands::command_check::nul_byte(&Written::of(program))
            {
                let at = format!("{}.hooks[{}].{key}", group.path(), handler.index);
                found.add(Some(at), "nul_byte", problem);
                continue;
            }
            if let Some((key, problem)) =
                crate::commands::command_check::tilde(&Written::of(program))
            {
                let at = format!("{}.hooks[{}].{key}", group.path(), handler.index);
                found.add(Some(at), "tilde_not_expanded", problem);
            }
            let shown = Written::of(program).texts().collect::<Vec<_>>().join(" ");
            if crate::commands::visible::needs_warning(&shown) {
                found.add(
                    Some(place.clone()),
                    "invisible_characters",
                    format!(
                        "{}: {}",
                        crate::commands::visible::warning("this handler"),
                        crate::commands::visible::escape(&shown)
                    ),
                );
            }
            for problem in command_check::check(program, &lookup) {
                found.add(
                    Some(format!("{}.hooks[{}].{field}", group.path(), handler.index)),
                    problem.kind,
                    problem.message,
                );
            }
        }
    }
}

/// Each `"if"` (contract §16): a rule that cannot be evaluated (the handler then runs for every
/// call, with a warning), a tool that no call has (it never runs), a pattern on a tool nothing
/// is tested against, an `"if"` on an event without a tool call (it never runs).
fn check_filters(layer: &LayerView, found: &mut Found<'_>) {
    for group in &layer.groups {
        let tool_event = EventKind::of(&group.event).is_tool_event();
        let own = group
            .handlers
            .iter()
            .map(|h| (h.filter.as_ref(), h.path(group)));
        for (filter, path) in std::iter::once((group.filter.as_ref(), group.path())).chain(own) {
            let Some(filter) = filter else { continue };
            let place = Some(format!("{path}.if"));
            let rule = filter.text();
            if !tool_event {
                found.add(place, "if_ignored", format!(
                    "{} has no tool call for \"if\": {rule:?} to match, so the handler never runs; remove the \"if\"",
                    group.event
                ));
                continue;
            }
            if let Some(why) = filter.problem() {
                found.add(place, "invalid_if", format!(
                    "{rule:?} cannot be evaluated ({why}); until it is fixed the handler runs for every call its matcher matches, with a warning"
                ));
                continue;
            }
            let Ok(tool) = filter.tool() else { continue };
            let ours = filter.names_a_kind()
                || match Protocol::agent_tool(tool) {
                    Some((_, ours)) => ours.is_some(),
                    None => crate::commands::tools::is_known(tool),
                };
            if !ours {
                let mut names: Vec<&str> = crate::commands::tools::TOOLS.to_vec();
                for protocol in Protocol::all() {
                    let theirs = protocol.facts().agent_tools.iter();
                    names.extend(theirs.filter(|(_, ours)| ours.is_some()).map(|(n, _)| *n));
                }
                let hint = crate::commands::tools::did_you_mean(tool)
                    .or_else(|| suggest::nearest(tool, &names))
                    .map(|t| format!("; did you mean {t:?}?"))
                    .unwrap_or_default();
                found.add(place, "if_tool", format!(
                    "{rule:?} is about {tool:?}, which is no levelcode tool (nor another agent's name for one), so the handler never runs{hint}"
                ));
            } else if filter.unreadable_pattern() {
                found.add(place, "if_pattern", format!(
                    "levelcode-hooks tests patterns against run_terminal_command, file and search calls only: {rule:?} cannot be evaluated, so the handler runs for every {tool} call, with a warning; write {tool:?} alone"
                ));
            }
        }
    }
}

/// Each event's first position in the file, for sorting problems in file order.
fn event_order(layer: &LayerView) -> Vec<String> {
    layer
        .text
        .as_deref()
        .and_then(inspect::raw_hooks)
        .map(|events| events.into_iter().map(|(e, _)| e).collect())
        .unwrap_or_default()
}

/// Where a path sits in its file: (event, group, handler); the file itself first.
fn position(path: Option<&str>, order: &[String]) -> (usize, usize, usize) {
    let Some(rest) = path.and_then(|p| p.strip_prefix("hooks.")) else {
        return (0, 0, 0);
    };
    let event_end = rest.find(['[', '.']).unwrap_or(rest.len());
    let event = &rest[..event_end];
    let event_pos = order
        .iter()
        .position(|e| e == event)
        .map_or(usize::MAX, |p| p + 1);
    let mut numbers = rest[event_end..]
        .split('[')
        .skip(1)
        .filter_map(|s| s.split(']').next()?.parse::<usize>().ok())
        .map(|n| n + 1);
    (
        event_pos,
        numbers.next().unwrap_or(0),
        numbers.next().unwrap_or(0),
    )
}

#[derive(Serialize)]
struct ValidateJson<'a> {
    ok: bool,
    project_root: String,
    files: Vec<FileJson>,
    problems: &'a [Problem],
    notes: &'a [String],
    /// The project layer's trust, when it has hooks; never a problem by itself.
    project_trust: Option<serde_json::Value>,
}

#[derive(Serialize)]
struct FileJson {
    layer: &'static str,
    file: String,
    state: &'static str,
    handlers: usize,
    problems: usize,
}

fn to_json<'a>(inspection: &'a Inspection, problems: &'a [Problem]) -> ValidateJson<'a> {
    ValidateJson {
        ok: problems.is_empty(),
        project_root: inspection.root.display().to_string(),
        files: inspection
            .layers
            .iter()
            .map(|l| FileJson {
                layer: l.kind.name(),
                file: l.file(),
                state: l.state.name(),
                handlers: l.groups.iter().map(|g| g.handlers.len()).sum(),
                problems: problems.iter().filter(|p| p.file == l.file()).count(),
            })
            .collect(),
        problems,
        notes: &inspection.notes,
        project_trust: inspection
            .held_back()
            .or(inspection.trust.first())
            .map(crate::commands::list::trust_json),
    }
}

fn report(inspection: &Inspection, problems: &[Problem], painter: Painter) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let mut files_with_problems = 0;
    for layer in &inspection.layers {
        let file = layer.file();
        let own: Vec<&Problem> = problems.iter().filter(|p| p.file == file).collect();
        let handlers: usize = layer.groups.iter().map(|g| g.handlers.len()).sum();
        let state = match layer.state {
            LayerState::Missing => "not there".to_string(),
            LayerState::Repeated => "same file as an earlier layer, checked once".to_string(),
            LayerState::Unusable => "unusable".to_string(),
            LayerState::Read => format!("{handlers} handler(s)"),
        };
        let mark = if own.is_empty() {
            painter.paint(Style::Good, "ok  ")
        } else {
            files_with_problems += 1;
            painter.paint(Style::Bad, "FAIL")
        };
        let _ = writeln!(
            out,
            "{mark} {:<8} {}  ({state})",
            layer.kind.name(),
            layer.path.display()
        );
        for problem in own {
            let at = problem.path.as_deref().unwrap_or("(file)");
            let _ = writeln!(
                out,
                "     {}: {}  {}",
                painter.paint(Style::Bold, at),
                problem.message,
                painter.paint(Style::Dim, format!("[{}]", problem.kind))
            );
        }
    }
    for note in &inspection.notes {
        let _ = writeln!(out, "{} {note}", painter.paint(Style::Warn, "note:"));
    }
    for line in crate::commands::list::trust_lines(inspection) {
        let _ = writeln!(out, "{} {line}", painter.paint(Style::Warn, "trust:"));
    }
    if inspection
        .layers
        .iter()
        .all(|l| l.state == LayerState::Missing)
        && problems.is_empty()
    {
        let _ = writeln!(out, "no settings file found; nothing to check");
    }
    if problems.is_empty() {
        let _ = writeln!(out, "{}", painter.paint(Style::Good, "no problems found"));
    } else {
        let _ = writeln!(
            out,
            "{}",
            painter.paint(
                Style::Bad,
                format!(
                    "{} problem(s) in {files_with_problems} file(s)",
                    problems.len()
                )
            )
        );
    }
    out
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
