//! One dispatch, end to end: the project root, the layers, the matching groups, the chain of
//! handlers (contract §6 "the whole dispatch"), and the compliance record.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::compliance;
use crate::environment;
use crate::runner::{self, Ending, Finished, Invocation, Stop};
use crate::signals;
use crate::trust::Gate;
use events::EventKind;
use handler_input::{ClaudeRun, Inputs};
use layers::LayerPath;
use outcome::{Dialect, Judgement, Outcome};
use output::{HandlerReport, Report, Trace};
use payload::Payload;
use protocol::claude::{self, Rewrite};
use protocol::Protocol;
use settings::{Events, Group, Program};

// Data flows payload → layers → settings → matcher → (this file: the chain, through the runner)
// → outcome → exec_log → output → exit.
pub mod events;
pub mod exec_log;
pub mod exit;
mod handler_input;
pub mod layers;
pub mod managed;
pub mod matcher;
mod options;
pub mod outcome;
pub mod output;
pub mod payload;
pub mod protocol;
mod session_env;
pub mod settings;
mod spans;

pub use options::{DispatchArgs, Options, OutputMode};

/// The project root: `--project-dir`, else the payload's `cwd`, else the current directory,
/// made absolute.
pub fn project_root(payload: &Payload, options: &Options) -> PathBuf {
    let cwd = environment::start_dir();
    let chosen = options
        .project_dir
        .clone()
        .or_else(|| payload.cwd.as_ref().map(PathBuf::from));
    match chosen {
        Some(dir) if dir.is_absolute() => dir,
        Some(dir) => cwd.join(dir),
        None => cwd,
    }
}

/// The layers to read: the `--settings` files, or the three standard ones.
pub fn layer_paths(root: &Path, options: &Options, warnings: &mut Vec<String>) -> Vec<LayerPath> {
    if options.settings.is_empty() {
        let include_project = !(options.no_project || environment::no_project());
        layers::standard(root, include_project, warnings)
    } else {
        layers::from_cli(&options.settings)
    }
}

/// Reads every layer's groups for `events`, in layer order, reading a file reached twice once.
pub fn load_groups(
    paths: &[LayerPath],
    events: Events<'_>,
    warnings: &mut Vec<String>,
    trace: &Trace,
    gate: &mut Gate,
) -> Vec<Group> {
    let mut reader = layers::Reader::default();
    load_groups_from(paths, events, warnings, trace, gate, |layer| {
        reader.read(&layer.path)
    })
}

/// [`load_groups`] with each layer read by `read`, which `serve` wraps to remember what was read.
/// A layer's contents go through `gate` first: a project layer that is not trusted contributes
/// nothing (contract §13).
pub fn load_groups_from(
    paths: &[LayerPath],
    events: Events<'_>,
    warnings: &mut Vec<String>,
    trace: &Trace,
    gate: &mut Gate,
    mut read: impl FnMut(&LayerPath) -> layers::Loaded,
) -> Vec<Group> {
    let mut groups = Vec::new();
    for layer in paths {
        let before = groups.len();
        match read(layer) {
            layers::Loaded::Missing => {
                trace.line(format_args!(
                    "{} layer: {} (not there)",
                    layer.kind.name(),
                    layer.path.display()
                ));
                continue;
            }
            layers::Loaded::Repeated => {
                trace.line(format_args!(
                    "{} layer: {} (same file as an earlier layer, read once)",
                    layer.kind.name(),
                    layer.path.display()
                ));
                continue;
            }
            layers::Loaded::Unusable(warning) => warnings.push(warning),
            layers::Loaded::Contents(bytes) if !gate.admit(layer, &bytes, warnings) => {
                trace.line(format_args!(
                    "{} layer: {} (not trusted: skipped)",
                    layer.kind.name(),
                    layer.path.display()
                ));
                continue;
            }
            layers::Loaded::Contents(bytes) => {
                let source = settings::Source {
                    layer: layer.kind,
                    file: layer.path.clone().into_boxed_path(),
                };
                settings::parse(source, &bytes, events, &mut groups, warnings);
            }
        }
        if trace.enabled() {
            trace.line(format_args!(
                "{} layer: {} ({} group(s){})",
                layer.kind.name(),
                layer.path.display(),
                groups.len() - before,
                match events {
                    Events::Only(event) => format!(" for {event}"),
                    Events::OnlyFor(event, tool) =>
                        format!(" for {event} that can apply to {tool}"),
                    Events::All => String::new(),
                }
            ));
        }
    }
    groups
}

/// Dispatches one payload: loads the settings, runs the chain, and records the dispatch in the
/// compliance log (team runs) and the execution log (`LEVELCODE_HOOKS_LOG`).
pub fn dispatch(payload: &Payload, options: &Options, trace: &Trace, started: Instant) -> Report {
    // Groups the chain would pass over silently need not be built, unless the trace says so.
    let events = match payload.tool_name.as_deref() {
        Some(tool) if payload.kind.is_tool_event() && !trace.enabled() => {
            Events::OnlyFor(&payload.event, tool)
        }
        _ => Events::Only(&payload.event),
    };
    dispatch_with(payload, options, trace, started, |paths, warnings, gate| {
        load_groups(paths, events, warnings, trace, gate)
    })
}

/// [`dispatch`] with the groups of the payload's event for the layer paths given by `groups`:
/// `run` reads them afresh, `serve` from its cache. Everything else is the same for both.
pub fn dispatch_with<G: Deref<Target = [Group]>>(
    payload: &Payload,
    options: &Options,
    trace: &Trace,
    started: Instant,
    groups: impl FnOnce(&[LayerPath], &mut Vec<String>, &mut Gate) -> G,
) -> Report {
    let mut report = Report::new(
        Some(payload.event.clone()),
        payload.tool_name.clone(),
        started,
    );
    report.warnings.extend(payload.warnings.iter().cloned());
    crate::telemetry::begin_dispatch(options.traceparent.as_deref(), started);
    let root = project_root(payload, options);
    if trace.enabled() {
        trace.line(format_args!(
            "event {}{}, project {}",
            payload.event,
            payload
                .tool_name
                .as_deref()
                .map(|t| format!(" (tool {t})"))
                .unwrap_or_default(),
            root.display()
        ));
    }
    // The managed layer runs first and whatever else is switched off (contract §17).
    let managed = managed::Managed::load(Events::Only(&payload.event), &mut report.warnings);
    if let (Some(path), true) = (&managed.path, trace.enabled()) {
        trace.line(format_args!(
            "managed layer: {} ({} group(s) for {}{})",
            path.display(),
            managed.groups.len(),
            payload.event,
            if managed.only {
                "; managedHooksOnly: no other layer runs"
            } else {
                ""
            }
        ));
    }
    let stopped = if environment::hooks_disabled() {
        Some("hooks are turned off (LEVELCODE_HOOKS is off): no handler ran".to_string())
    } else if environment::depth() >= environment::MAX_DEPTH {
        Some(format!(
            "LEVELCODE_HOOKS_DEPTH is {}: hooks started by hooks {} levels deep; no handler ran, to stop a loop",
            environment::depth(),
            environment::MAX_DEPTH
        ))
    } else {
        None
    };
    if let Some(plain) = stopped {
        report.warnings.push(managed.stopped_warning(plain));
        if !managed.groups.is_empty() {
            run_chain(payload, &root, &managed.groups, &mut report, trace);
            runner::restore_dir();
        }
    } else {
        let paths = layer_paths(&root, options, &mut report.warnings);
        let mut gate = Gate::new(&root);
        if managed.only {
            // What the other layers would have run is read only to say so.
            let others = groups(&paths, &mut Vec::new(), &mut gate);
            let tool = payload.tool_name.as_deref();
            report
                .warnings
                .extend(managed.held_back_warning(&others, payload.kind, tool));
            run_chain(payload, &root, &managed.groups, &mut report, trace);
        } else {
            let groups = groups(&paths, &mut report.warnings, &mut gate);
            report.project_trust = gate.held_back();
            run_chain(
                payload,
                &root,
                managed.groups.iter().chain(groups.iter()),
                &mut report,
                trace,
            );
        }
        runner::restore_dir();
    }
    record_compliance(payload, options, &mut report.warnings);
    spans::export(payload, &mut report);
    exec_log::append(&mut report);
    report
}

/// Runs the matching handlers of `groups` one after another; the first block (or stop) ends the
/// chain, and each rewrite of the tool input reaches the handlers after it (contract §6, §11).
pub fn run_chain<'g>(
    payload: &Payload,
    root: &Path,
    groups: impl IntoIterator<Item = &'g Group>,
    report: &mut Report,
    trace: &Trace,
) {
    let kind = payload.kind;
    let tool = payload.tool_name.as_deref();
    let mut inputs = Inputs::new(payload, root);
    let mut exported: Option<Vec<(&'static str, String)>> = None;
    // A list, not a set: a chain runs few handlers, and a hash set's random seed costs a
    // system call per dispatch.
    let mut already_run: Vec<&Program> = Vec::new();
    let mut dir: Option<PathBuf> = None;
    let mut ended: Option<&'static str> = None;

    for group in groups {
        if !group.enabled || !group_applies(group, kind, tool, report, trace) {
            continue;
        }
        for handler in group.handlers.iter().filter(|h| h.enabled) {
            let label = handler.label();
            let mut entry = HandlerReport::new(group, &label);
            entry.protocol = handler.protocol;
            if let Some(why) = ended {
                entry.outcome = Outcome::Skipped;
                entry.message = Some(match report.interrupted {
                    Some(sig) => format!("not run: the dispatcher received {}", signals::name(sig)),
                    None => format!("not run: an earlier handler {why}"),
                });
                report.handlers.push(entry);
                continue;
            }
            if already_run.contains(&&handler.program) {
                entry.outcome = Outcome::Duplicate;
                entry.message =
                    Some("not run again: the same command already ran in this dispatch".into());
                trace.handler(&entry);
                report.handlers.push(entry);
                continue;
            }
            already_run.push(&handler.program);
            if let Some(sig) = signals::received() {
                report.interrupted = Some(sig);
                ended = Some("was interrupted");
                entry.outcome = Outcome::Skipped;
                entry.message = Some(format!(
                    "not run: the dispatcher received {}",
                    signals::name(sig)
                ));
                report.handlers.push(entry);
                continue;
            }
            let dir = dir.get_or_insert_with(|| handler_dir(root, &mut report.warnings));
            let claude = handler.protocol == Protocol::Claude;
            let runs = if claude {
                inputs.claude_runs()
            } else {
                vec![ClaudeRun {
                    call: None,
                    input: Vec::new(),
                }]
            };
            let parts = runs.len();
            for (i, run) in runs.into_iter().enumerate() {
                let mut entry = if i == 0 {
                    std::mem::replace(&mut entry, HandlerReport::new(group, &label))
                } else {
                    let mut next = HandlerReport::new(group, &label);
                    next.protocol = handler.protocol;
                    next
                };
                // Each per-path run sees the input as the runs before it left it.
                let run = if i > 0 && claude {
                    inputs.claude_runs().into_iter().nth(i).unwrap_or(run)
                } else {
                    run
                };
                if parts > 1 {
                    if let Some(path) = run.call.as_ref().and_then(|c| c.input.get("file_path")) {
                        entry.message = Some(format!(
                            "run for {} ({} of {parts} paths of read_files)",
                            path.as_str().unwrap_or_default(),
                            i + 1
                        ));
                    }
                }
                let env_file = (claude && kind == EventKind::SessionStart)
                    .then(|| session_env::create(&mut report.warnings))
                    .flatten();
                let (mut env, remove) = handler_env(payload, root, env_file.as_deref());
                env.extend(crate::telemetry::handler_started(report.handlers.len()));
                if exported.as_ref() != Some(&env) {
                    // SAFETY: dispatches run on the process's one thread (`run` and `serve`
                    // start no other), so nothing reads the environment while it changes.
                    unsafe { runner::export_env(&env, &remove) };
                    exported = Some(env);
                }
                let original = claude.then(|| inputs.tool_input());
                let input: &[u8] = if claude { &run.input } else { inputs.native() };
                let finished = runner::run(&Invocation {
                    program: &handler.program,
                    dir,
                    input,
                    timeout: handler.timeout,
                });
                if let Some(file) = &env_file {
                    session_env::collect(file, report);
                }
                let rewrite = match (&original, &run.call, tool) {
                    (Some(original), Some(call), Some(tool)) => Some(Rewrite {
                        tool,
                        input: original,
                        call,
                        root,
                    }),
                    _ => None,
                };
                let read_claude = |code: i32, stdout: &str, stderr: &str| {
                    claude::judge(kind, &payload.event, &label, code, stdout, stderr, rewrite)
                };
                let dialect = if claude {
                    Dialect::Other(&read_claude)
                } else {
                    Dialect::Levelcode
                };
                let judgement = outcome::judge(
                    kind,
                    &payload.event,
                    &label,
                    &handler.program,
                    &finished,
                    handler.timeout,
                    dialect,
                );
                if let Some(Stop::Interrupted(sig)) = finished.stopped {
                    report.interrupted = Some(sig);
                    ended = Some("was interrupted");
                }
                fill_entry(&mut entry, &finished, &judgement);
                if let Some(why) = apply(judgement, &mut entry, report, &mut inputs) {
                    ended = Some(why);
                }
                trace.handler(&entry);
                report.handlers.push(entry);
                if ended.is_some() {
                    break;
                }
            }
        }
    }
}

/// A handler's report from how it ended and what that means.
fn fill_entry(entry: &mut HandlerReport, finished: &Finished, judgement: &Judgement) {
    entry.outcome = judgement.outcome;
    entry.duration_ms = output::millis(finished.duration);
    match finished.ending {
        Ending::Exited(code) if finished.stopped.is_none() => entry.exit_code = Some(code),
        Ending::Exited(code) if code >= 0 => entry.exit_code = Some(code),
        Ending::Signaled(sig) => entry.signal = Some(sig),
        _ => {}
    }
    entry.stderr_truncated = finished.stderr.truncated();
    entry.stderr = finished.stderr.text();
    if !judgement.suppress_output {
        entry.stdout_truncated = finished.stdout.truncated();
        entry.stdout = finished.stdout.text();
    }
    entry.message = match (entry.message.take(), judgement.message.clone()) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
}

/// What one handler's judgement adds to the dispatch (contract §6, §11): its warning, context,
/// message for the person, rewrite of the tool input, and its block, ask or stop. Returns why
/// the chain ends, when it does.
fn apply(
    judgement: Judgement,
    entry: &mut HandlerReport,
    report: &mut Report,
    inputs: &mut Inputs<'_>,
) -> Option<&'static str> {
    report.warnings.extend(judgement.warning);
    report.additional_context.extend(judgement.context);
    report.system_messages.extend(judgement.system_message);
    if let Some(updated) = judgement.updated_input {
        if inputs.differs(&updated) {
            entry.rewrote_input = true;
            report.updated_input = Some(updated.clone());
            inputs.rewrite(updated);
        }
    }
    match judgement.outcome {
        Outcome::Block => {
            if report.reason.is_none() {
                report.reason = judgement.reason;
            }
            Some("blocked")
        }
        Outcome::Ask => {
            report.asks.extend(judgement.reason);
            None
        }
        Outcome::Stop => {
            if report.reason.is_none() {
                report.reason = judgement.reason;
            }
            if report.stop.is_none() {
                report.stop = judgement.stop;
            }
            Some("asked the agent to stop")
        }
        _ => None,
    }
}

/// Returns true if and only if `group` applies to this dispatch ([`Group::applies`]); an
/// invalid matcher is a warning, and its group does not apply.
fn group_applies(
    group: &Group,
    kind: EventKind,
    tool: Option<&str>,
    report: &mut Report,
    trace: &Trace,
) -> bool {
    match group.applies(kind, tool) {
        Ok(true) => true,
        Ok(false) => {
            if trace.enabled() {
                trace.line(format_args!(
                    "  {} {}: matcher {:?} does not match {}",
                    group.source.file.display(),
                    group.path(),
                    group.matcher.as_deref().unwrap_or(""),
                    group.match_subject(kind, tool).map_or("", |(s, _)| s)
                ));
            }
            false
        }
        Err(e) => {
            report.warnings.push(format!(
                "{}: {}.matcher: invalid regular expression ({}); group skipped",
                group.source.file.display(),
                group.path(),
                e.lines().last().unwrap_or("invalid").trim()
            ));
            false
        }
    }
}

/// The handlers' current directory: the project root, or when it does not exist, ours.
fn handler_dir(root: &Path, warnings: &mut Vec<String>) -> PathBuf {
    if root.is_dir() {
        return root.to_path_buf();
    }
    let here = environment::start_dir();
    warnings.push(format!(
        "project directory {} does not exist; handlers run in {} instead",
        root.display(),
        here.display()
    ));
    here
}

/// The variables a handler gets, and those it must not inherit: `CLAUDE_ENV_FILE` only for a
/// Claude Code handler on `SessionStart` (contract §12), the tool's name only on tool events.
fn handler_env(
    payload: &Payload,
    root: &Path,
    env_file: Option<&Path>,
) -> (Vec<(&'static str, String)>, Vec<&'static str>) {
    let mut env = vec![
        ("LEVELCODE_PROJECT_DIR", root.to_string_lossy().into_owned()),
        ("LEVELCODE_HOOK_EVENT", payload.event.clone()),
        // Claude Code's name for the project root, for scripts written for it (contract §12);
        // given to every handler, since it names the same directory.
        ("CLAUDE_PROJECT_DIR", root.to_string_lossy().into_owned()),
        (
            "LEVELCODE_HOOKS_DEPTH",
            (environment::depth() + 1).to_string(),
        ),
    ];
    let mut remove = Vec::new();
    match &payload.tool_name {
        Some(tool) => env.push(("LEVELCODE_TOOL_NAME", tool.clone())),
        None => remove.push("LEVELCODE_TOOL_NAME"),
    }
    match env_file {
        Some(file) => env.push(("CLAUDE_ENV_FILE", file.display().to_string())),
        None if session_env::given_before() => remove.push("CLAUDE_ENV_FILE"),
        None => {}
    }
    (env, remove)
}

/// Appends the compliance record of a team run's `PostToolUse` (contract §9).
fn record_compliance(payload: &Payload, options: &Options, warnings: &mut Vec<String>) {
    if payload.kind != EventKind::PostToolUse {
        return;
    }
    let team = match (&options.team, &payload.team) {
        (Some(team), _) => team.clone(),
        (None, Some(serde_json::Value::String(team))) => team.clone(),
        (None, Some(other)) => {
            warnings.push(format!(
                "payload: team must be a string, not {}; nothing written to the compliance log",
                payload::short_json(other)
            ));
            return;
        }
        (None, None) => match environment::team() {
            Some(team) => team,
            None => return,
        },
    };
    if !compliance::is_valid_team(&team) {
        warnings.push(format!(
            "team {:?} is not a valid team name (1 to 50 of A-Z a-z 0-9 _ -); nothing written to the compliance log",
            team
        ));
        return;
    }
    let Some(data_dir) = layers::data_dir() else {
        warnings.push(
            "no data directory (neither LEVELCODE_DIR nor HOME is set); nothing written to the compliance log"
                .into(),
        );
        return;
    };
    if let Err(warning) = compliance::append(&data_dir, &team, payload.raw()) {
        warnings.push(warning);
    }
}
