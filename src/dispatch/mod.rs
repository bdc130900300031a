//! One dispatch, end to end: the project root, the layers, the matching groups, the chain of
//! handlers (contract §6 "the whole dispatch"), and the compliance record.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::compliance;
use crate::environment;
use crate::settings::events::EventKind;
use crate::settings::filter::{Call, Verdict};
use crate::settings::layers::LayerPath;
use crate::settings::managed::HttpPolicy;
use crate::settings::matcher::Matcher;
use crate::settings::sandbox::Sandbox;
use crate::settings::{Action, Events, Group, Handler, OnFailure};
use crate::signals;
use crate::trust::Gate;
use action::{Done, Stop};
use handler_env::{handler_dir, handler_env};
use handler_input::Inputs;
use judged::{apply, fail_closed, fill_entry, worded_for};
use outcome::{Judgement, Outcome};
use output::{HandlerReport, Report, Trace};
use payload::Payload;
use protocol::{Context, Rewrite, Run};

// Data flows payload → (the settings model, `crate::settings`: layers, hooks, matchers) →
// ground → load (through the trust gate) → (this file: the chain, each handler's action,
// through its protocol) → outcome → exec_log → output → exit.
pub mod action;
pub mod background;
mod confine;
pub mod exec_log;
pub mod exit;
mod ground;
mod handler_env;
mod handler_input;
mod judged;
mod load;
mod options;
pub mod outcome;
pub mod output;
pub mod payload;
pub mod protocol;
mod spans;

pub use ground::{layer_paths, project_root, Ground};
pub use load::{load_groups, load_groups_from};
pub use options::{DispatchArgs, Options, OutputMode};

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
    let ground = Ground::find(payload, options);
    dispatch_with(
        payload,
        options,
        trace,
        started,
        ground,
        |paths, warnings, gate| load_groups(paths, events, warnings, trace, gate),
    )
}

/// [`dispatch`] on the `ground` found for it, with the groups of the payload's event for the
/// layer paths given by `groups`: `run` reads them afresh, `serve` from its cache. Everything
/// else is the same for both.
pub fn dispatch_with<G: Deref<Target = [Group]>>(
    payload: &Payload,
    options: &Options,
    trace: &Trace,
    started: Instant,
    ground: Ground,
    groups: impl FnOnce(&[LayerPath], &mut Vec<String>, &mut Gate) -> G,
) -> Report {
    let Ground {
        root,
        managed,
        managed_warnings,
        layers,
    } = ground;
    let mut report = Report::new(
        Some(payload.event.clone()),
        payload.tool_name.clone(),
        started,
    );
    report.warnings.extend(payload.warnings.iter().cloned());
    crate::telemetry::begin_dispatch(options.traceparent.as_deref(), started);
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
    report.warnings.extend(managed_warnings);
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
    match layers {
        None => {
            let plain = ground::stopped().unwrap_or_default();
            report.warnings.push(managed.stopped_warning(plain));
            if !managed.groups.is_empty() {
                run_chain(
                    payload,
                    &root,
                    &managed.groups,
                    &managed.http,
                    &mut report,
                    trace,
                    None,
                );
            }
        }
        Some((paths, warnings)) => {
            report.warnings.extend(warnings);
            let mut gate = Gate::new(&root);
            if managed.only {
                // What the other layers would have run is read only to say so.
                let others = groups(&paths, &mut Vec::new(), &mut gate);
                let tool = payload.tool_name.as_deref();
                report
                    .warnings
                    .extend(managed.held_back_warning(&others, payload.kind, tool));
                run_chain(
                    payload,
                    &root,
                    &managed.groups,
                    &managed.http,
                    &mut report,
                    trace,
                    None,
                );
            } else {
                let groups = groups(&paths, &mut report.warnings, &mut gate);
                report.project_trust = gate.held_back();
                run_chain(
                    payload,
                    &root,
                    managed.groups.iter().chain(groups.iter()),
                    &managed.http,
                    &mut report,
                    trace,
                    managed.sandboxes_projects(),
                );
            }
        }
    }
    background::hand_on(payload, &root, options.hold_background, &mut report);
    record_compliance(payload, options, &mut report.warnings);
    spans::export(payload, &mut report);
    exec_log::append(&mut report, payload, &root);
    report
}

/// Returns true if and only if an `"if"` of `group` or `handler` certainly rules out the call
/// of `payload` with `input` (contract §16): a call the chain would not run the handler for.
pub fn filtered_out(
    group: &Group,
    handler: &Handler,
    payload: &Payload,
    input: &serde_json::Value,
    root: &Path,
) -> bool {
    let call = tool_call(payload, input, root, None);
    [&group.filter, &handler.filter]
        .into_iter()
        .flatten()
        .any(|filter| matches!(filter.evaluate(call.as_ref()), Verdict::Filtered { .. }))
}

/// The tool call of `payload` with `input`, as an `"if"` is tested against it; `None` on an
/// event without one.
fn tool_call<'c>(
    payload: &'c Payload,
    input: &'c serde_json::Value,
    root: &'c Path,
    part: Option<usize>,
) -> Option<Call<'c>> {
    let tool = payload.tool_name.as_deref()?;
    payload.kind.is_tool_event().then_some(Call {
        tool,
        input: Some(input),
        root,
        part,
    })
}

/// Runs the matching handlers of `groups` one after another; the first block (or stop) ends the
/// chain, and each rewrite of the tool input reaches the handlers after it (contract §6, §11).
/// `floor` is the managed file, when it sandboxes the project's handlers (contract §20).
pub fn run_chain<'g>(
    payload: &Payload,
    root: &Path,
    groups: impl IntoIterator<Item = &'g Group>,
    policy: &HttpPolicy,
    report: &mut Report,
    trace: &Trace,
    floor: Option<&Path>,
) {
    let mut groups = groups.into_iter().peekable();
    if groups.peek().is_none() {
        return;
    }
    let mut chain = Chain {
        payload,
        root,
        inputs: Inputs::new(payload, root),
        already_run: Vec::new(),
        dir: None,
        end: None,
        deferred: Vec::new(),
        confinements: confine::Confinements::default(),
        floor,
        policy,
    };
    let tool = payload.subject();
    for group in groups {
        if !group.enabled || !group_applies(group, payload.kind, tool, report, trace) {
            continue;
        }
        for handler in group.handlers.iter().filter(|h| h.enabled) {
            chain.handler(group, handler, report, trace);
        }
    }
    let dir = chain.dir.as_deref().unwrap_or(root);
    background::start(chain.deferred, payload, root, dir, report, trace);
}

/// Why a chain ended before its last handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Blocked,
    /// A handler asked the agent to stop (`"continue": false`).
    Stopped,
    /// The dispatcher received this signal.
    Interrupted(i32),
}

impl End {
    /// The message of a handler not run because of it.
    fn not_run(self) -> String {
        match self {
            End::Blocked => "not run: an earlier handler blocked".into(),
            End::Stopped => "not run: an earlier handler asked the agent to stop".into(),
            End::Interrupted(sig) => {
                format!("not run: the dispatcher received {}", signals::name(sig))
            }
        }
    }
}

/// One chain as it runs: what its handlers read, what they have done so far, and whether it
/// has ended.
struct Chain<'a> {
    payload: &'a Payload,
    root: &'a Path,
    inputs: Inputs<'a>,
    /// A list, not a set: a chain runs few handlers, and a hash set's random seed costs a
    /// system call per dispatch.
    already_run: Vec<&'a Action>,
    /// The handlers' directory, found when the first one runs.
    dir: Option<PathBuf>,
    end: Option<End>,
    /// The background handlers' runs, started once the chain has decided (contract §21).
    deferred: Vec<background::Deferred<'a>>,
    /// The sandboxes of this dispatch, each prepared once (contract §20).
    confinements: confine::Confinements,
    /// The managed file, when it sandboxes the project's handlers.
    floor: Option<&'a Path>,
    /// What the managed layer allows http handlers (contract §19).
    policy: &'a HttpPolicy,
}

impl<'a> Chain<'a> {
    /// One enabled handler of a group that applies: held back, or each of its runs.
    fn handler(&mut self, group: &Group, handler: &'a Handler, report: &mut Report, trace: &Trace) {
        let Some(note) = self.filter(group, handler, None, report, trace) else {
            return;
        };
        let label = handler.label();
        let entry = || {
            let mut entry = HandlerReport::new(group, &label);
            entry.protocol = handler.protocol;
            entry
        };
        if let Some((outcome, message, traced)) = self.held_back(handler, report) {
            let mut entry = entry();
            entry.outcome = outcome;
            entry.message = Some(message);
            if traced {
                trace.handler(&entry);
            }
            report.handlers.push(entry);
            return;
        }
        if self.dir.is_none() {
            self.dir = Some(handler_dir(self.root, &mut report.warnings));
        }
        let (sandbox, ignored) = confine::effective(handler, group, self.floor);
        if let Some(warning) = ignored.filter(|w| !report.warnings.contains(w)) {
            report.warnings.push(warning);
        }
        if trace.enabled() && sandbox.policy.is_some() {
            trace.line(format_args!("  {label}: sandbox: {}", sandbox.describe()));
        }
        let rules = handler.protocol.rules();
        let mut runs = rules.runs(&mut self.inputs).into_iter();
        for i in 0..runs.len() {
            let first = runs.next();
            // Each later run sees the input as the runs before it left it.
            let run = match i {
                0 => first,
                _ => rules.runs(&mut self.inputs).into_iter().nth(i).or(first),
            };
            let Some(run) = run else { break };
            // A run about one part of the call (a `Read` of one path) is filtered on its own.
            let part = run.call.as_ref().and_then(|call| call.part);
            let mut note = note.clone();
            if part.is_some() {
                match self.filter(group, handler, part, report, trace) {
                    None => continue,
                    Some(own) => note = own.or(note),
                }
            }
            let mut entry = entry();
            if handler.background {
                if let Some(deferred) =
                    self.defer(group, handler, &sandbox, &run, &mut entry, report)
                {
                    self.deferred.push(deferred);
                    if let Some(note) = note {
                        entry.message = Some(match entry.message.take() {
                            Some(message) => format!("{note}; {message}"),
                            None => note,
                        });
                    }
                    report.handlers.push(entry);
                    continue;
                }
                // Its sandbox cannot be had: it is not started, as any handler is not.
            }
            self.run(group, handler, &sandbox, &label, run, &mut entry, report);
            if let Some(note) = note {
                entry.message = Some(match entry.message.take() {
                    Some(message) => format!("{note}; {message}"),
                    None => note,
                });
            }
            trace.handler(&entry);
            report.handlers.push(entry);
            if self.end.is_some() {
                break;
            }
        }
    }

    /// `None` when an `"if"` of `group` or of `handler` rules out this call, or its part
    /// `part`: such a handler is not run and not reported (contract §16). An `"if"` that cannot
    /// be evaluated lets it run, with a warning, and the note for its entry that says why.
    fn filter(
        &mut self,
        group: &Group,
        handler: &Handler,
        part: Option<usize>,
        report: &mut Report,
        trace: &Trace,
    ) -> Option<Option<String>> {
        if group.filter.is_none() && handler.filter.is_none() {
            return Some(None);
        }
        let mut note = None;
        let call = tool_call(self.payload, self.inputs.current_input(), self.root, part);
        for (filter, own) in [(&group.filter, false), (&handler.filter, true)] {
            let Some(filter) = filter else { continue };
            let at = || match own {
                true => handler.path(group),
                false => group.path(),
            };
            match filter.evaluate(call.as_ref()) {
                Verdict::Runs | Verdict::NeedsInput => {}
                Verdict::Unevaluable(why) => {
                    let warning = format!(
                        "{}: {}.if: {:?} cannot be evaluated ({why}); the handler runs",
                        group.source.file.display(),
                        at(),
                        filter.text()
                    );
                    if !report.warnings.contains(&warning) {
                        report.warnings.push(warning);
                    }
                    note.get_or_insert(format!(
                        "run: \"if\": {:?} cannot be evaluated ({why})",
                        filter.text()
                    ));
                }
                Verdict::Filtered { why, by_input } => {
                    report.depends_on_input |= by_input;
                    if trace.enabled() {
                        trace.line(format_args!(
                            "  {} {}: \"if\": {:?} does not match ({why}); {} not run",
                            group.source.file.display(),
                            at(),
                            filter.text(),
                            handler.label()
                        ));
                    }
                    return None;
                }
            }
        }
        Some(note)
    }

    /// Why `handler` does not run, when it does not: the outcome, the message and whether the
    /// trace shows it. The chain has ended, the same action already ran, or the dispatcher
    /// was interrupted, which ends the chain.
    fn held_back(
        &mut self,
        handler: &'a Handler,
        report: &mut Report,
    ) -> Option<(Outcome, String, bool)> {
        if let Some(end) = self.end {
            return Some((Outcome::Skipped, end.not_run(), false));
        }
        if self.already_run.contains(&&handler.action) {
            let message = match handler.action {
                Action::Process(_) => "not run again: the same command already ran in this dispatch",
                Action::Http(_) => "not sent again: a request to the same url with the same headers was sent in this dispatch",
            };
            return Some((Outcome::Duplicate, message.into(), true));
        }
        self.already_run.push(&handler.action);
        let sig = signals::received()?;
        report.interrupted = Some(sig);
        let end = End::Interrupted(sig);
        self.end = Some(end);
        Some((Outcome::Skipped, end.not_run(), false))
    }

    /// The run of a background handler (contract §21), started once the chain has decided, with
    /// its entry's message; `None` when its sandbox cannot be had here, so that it is refused as
    /// any handler is.
    fn defer(
        &mut self,
        group: &Group,
        handler: &'a Handler,
        sandbox: &Sandbox,
        run: &Run,
        entry: &mut HandlerReport,
        report: &Report,
    ) -> Option<background::Deferred<'a>> {
        let (confined, left_out) = self.confinements.of(sandbox.policy.as_ref(), self.root);
        if let confine::Confine::Refused(_) = confined {
            return None;
        }
        entry.message = match (run.note.clone(), left_out) {
            (Some(note), Some(left)) => Some(format!("{note}; {left}")),
            (note, left) => note.or(left),
        };
        Some(background::Deferred {
            entry: report.handlers.len(),
            action: &handler.action,
            timeout: handler.timeout,
            input: run
                .input
                .clone()
                .unwrap_or_else(|| self.inputs.native().to_vec()),
            layer: group.source.layer,
            sandbox: sandbox
                .policy
                .as_ref()
                .and_then(|policy| confine::rules_for(policy, self.root)),
        })
    }

    /// One run of `handler`: its environment, its action, its file, its judgement, and what
    /// that adds to the dispatch, into `entry`.
    // One run needs its group (the layer), its handler, its sandbox, its label, what it reads
    // and where it reports: a struct for them would only be built to be taken apart here.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        group: &Group,
        handler: &Handler,
        sandbox: &Sandbox,
        label: &str,
        run: Run,
        entry: &mut HandlerReport,
        report: &mut Report,
    ) {
        entry.message = run.note.clone();
        let rules = handler.protocol.rules();
        let run_file = rules.run_file(self.payload.kind, &mut report.warnings);
        // Its own span's trace context, when the dispatch is exported (contract §18).
        let traceparent = crate::telemetry::handler_started(report.handlers.len());
        let (mut env, unset) = handler_env(
            self.payload,
            self.root,
            run_file.as_ref(),
            group.source.layer,
        );
        env.extend(traceparent);
        let input: &[u8] = match &run.input {
            Some(bytes) => bytes,
            None => self.inputs.native(),
        };
        let dir = self.dir.as_deref().unwrap_or(self.root);
        let (confine, left_out) = self.confinements.of(sandbox.policy.as_ref(), self.root);
        if let Some(note) = left_out {
            entry.message = Some(match entry.message.take() {
                Some(m) => format!("{m}; {note}"),
                None => note,
            });
        }
        let done = match self.policy.refuses(&handler.action) {
            Some(why) => {
                report.warnings.push(format!("{label}: {why}"));
                Done::failed(format!("not sent: {why}"), std::time::Duration::ZERO)
            }
            None => action::perform(
                &handler.action,
                dir,
                input,
                handler.timeout,
                action::Environment {
                    set: &env,
                    unset: &unset,
                },
                confine,
                &|_| {},
            ),
        };
        if let Some(file) = &run_file {
            match (file.collect)(&file.path) {
                Ok(Some(text)) => report.add_session_env(&text),
                Ok(None) => {}
                Err(warning) => report.warnings.push(warning),
            }
        }
        let judgement = self.judge(handler, label, &run, &done);
        if let Some(Stop::Interrupted(sig)) = done.stopped {
            report.interrupted = Some(sig);
            self.end = Some(End::Interrupted(sig));
        }
        fill_entry(entry, done, &judgement);
        if let Some(end) = apply(judgement, entry, report, &mut self.inputs) {
            self.end = Some(end);
        }
    }

    /// What the run of `handler` means: its ending by the rules every handler shares, its exit
    /// 0 or 2 by its protocol, which may carry a rewrite of the tool call back.
    fn judge(&mut self, handler: &Handler, label: &str, run: &Run, done: &Done) -> Judgement {
        let original = run.call.as_ref().map(|_| self.inputs.tool_input());
        let rewrite = match (&original, &run.call, self.payload.tool_name.as_deref()) {
            (Some(input), Some(call), Some(tool)) => Some(Rewrite {
                tool,
                input,
                call,
                root: self.root,
            }),
            _ => None,
        };
        let context = Context {
            kind: self.payload.kind,
            event: &self.payload.event,
            label,
            rewrite,
        };
        let rules = handler.protocol.rules();
        let judgement = outcome::judge(done, handler.timeout, |reply| rules.judge(reply, &context));
        let judgement = match handler.on_failure {
            OnFailure::Block if self.payload.kind.can_block() => {
                fail_closed(judgement, label, &self.payload.event)
            }
            OnFailure::Block | OnFailure::Proceed => judgement,
        };
        worded_for(judgement, self.payload.kind)
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
                let subject = group.match_subject(kind, tool).map_or("", |(s, _)| s);
                trace.line(format_args!(
                    "  {} {}: matcher {:?} does not match {subject}{}",
                    group.source.file.display(),
                    group.path(),
                    group.matcher.as_deref().unwrap_or(""),
                    part_of_name(group, subject)
                        .map(|name| format!(
                            " ({name:?} is part of that name, but a list of names matches whole names only)"
                        ))
                        .unwrap_or_default()
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

/// A name of `group`'s name-list matcher that is part of `subject` or `subject` in another
/// case (`write` for `write_file`), for the trace: the slip a person makes most, which only the
/// commands that know levelcode's tools (`list`, `validate`) can name in general.
fn part_of_name<'g>(group: &'g Group, subject: &str) -> Option<&'g str> {
    let Ok(Matcher::Names(names)) = group.compiled_matcher() else {
        return None;
    };
    let lower = subject.to_ascii_lowercase();
    names
        .iter()
        .map(String::as_str)
        .find(|name| !name.is_empty() && lower.contains(&name.to_ascii_lowercase()))
}

/// Appends the compliance record of a team run's `PostToolUse` (contract §9).
fn record_compliance(payload: &Payload, options: &Options, warnings: &mut Vec<String>) {
    if options.caller_records_compliance {
        return;
    }
    if payload.kind != EventKind::PostToolUse {
        return;
    }
    let team = match (&options.team, &payload.team) {
        (Some(team), _) => team.clone(),
        (None, Some(serde_json::Value::String(team))) => team.clone(),
        (None, Some(other)) => {
            warnings.push(format!(
                "payload: team must be a string, not {}; nothing written to the compliance log",
                crate::settings::short_json(other)
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
    let Some(data_dir) = crate::settings::layers::data_dir() else {
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
