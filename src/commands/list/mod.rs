//! `levelcode-hooks list`: the merged hooks of every layer, and what would run for an event (§10).
//!
//! Without `--event` each handler is `enabled`, `disabled` or `invalid`. With `--event` (and
//! `--tool` for tool events) each is marked the way a dispatch would treat it: `would_run` with
//! its place in the chain, or why not (`other_event`, `no_match`, `filtered`, `disabled`,
//! `duplicate`, `invalid`, `off`). [`plan`] follows the same rules, in the same order, as
//! [`crate::dispatch::run_chain`]; `test --dry-run` prints it too.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use crate::commands::inspect::{self, Entry, Inspection, LayerState};
use crate::dispatch::output::write_stdout;
use crate::dispatch::Options;
use crate::environment;
use crate::settings::events::{self, EventKind, Subject};
use crate::settings::filter;
use crate::settings::layers::LayerKind;
use crate::settings::Action;
use crate::style::{Painter, Style};

mod json;

use json::to_json;
pub use json::{sandbox_json, trust_json, HandlerJson};

#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Mark what would run for this event.
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,

    /// The tool of a tool event.
    #[arg(long, value_name = "NAME", requires = "event", help = format!(
        "The tool of a {} event",
        events::listed("or", |e| e.matcher == Subject::Tool)
    ))]
    pub tool: Option<String>,

    /// The tool's input, as JSON, to test each handler's "if" against, e.g.
    /// '{"command":"git commit -m x"}'.
    #[arg(long, value_name = "JSON", requires = "tool")]
    pub input: Option<String>,

    /// The project root [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub project_dir: Option<PathBuf>,

    /// Use exactly these settings files, in this order, instead of the three standard layers.
    #[arg(long = "settings", value_name = "FILE")]
    pub settings: Vec<PathBuf>,

    /// Skip the project layer (also LEVELCODE_HOOKS_NO_PROJECT=1).
    #[arg(long)]
    pub no_project: bool,

    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// What a dispatch does with one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No event asked: the handler runs when its event fires and its matcher matches.
    Enabled,
    /// Runs, at this 1-based place in the chain.
    WouldRun(usize),
    /// Configured under another event.
    OtherEvent,
    /// The group's matcher does not match the tool.
    NoMatch,
    /// An `"if"` of the handler or its group does not match the call (contract §16).
    Filtered,
    /// `enabled: false` on the handler or its group.
    Disabled,
    /// The same command as the handler at this place already runs.
    Duplicate(usize),
    /// Skipped because of a settings problem.
    Invalid,
    /// Hooks are turned off (`LEVELCODE_HOOKS`, or the nesting depth): nothing runs.
    Off,
    /// A project handler that does not run because the project's hooks are not trusted.
    Untrusted,
    /// A handler of another layer than the managed one, kept out by `managedHooksOnly`.
    ManagedOnly,
}

impl Verdict {
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Enabled => "enabled",
            Verdict::WouldRun(_) => "would_run",
            Verdict::OtherEvent => "other_event",
            Verdict::NoMatch => "no_match",
            Verdict::Filtered => "filtered",
            Verdict::Disabled => "disabled",
            Verdict::Duplicate(_) => "duplicate",
            Verdict::Invalid => "invalid",
            Verdict::Off => "off",
            Verdict::Untrusted => "untrusted",
            Verdict::ManagedOnly => "managed_only",
        }
    }

    fn style(&self) -> Style {
        match self {
            Verdict::Enabled | Verdict::WouldRun(_) => Style::Good,
            Verdict::Invalid => Style::Bad,
            Verdict::Off | Verdict::Untrusted | Verdict::ManagedOnly => Style::Warn,
            _ => Style::Dim,
        }
    }

    fn short(&self) -> String {
        match self {
            Verdict::WouldRun(n) => format!("run #{n}"),
            Verdict::OtherEvent => "other event".into(),
            Verdict::NoMatch => "no match".into(),
            Verdict::ManagedOnly => "managed only".into(),
            other => other.name().into(),
        }
    }
}

/// One entry and its verdict, with the reason when it does not run.
pub struct Planned<'a> {
    pub entry: Entry<'a>,
    pub verdict: Verdict,
    pub why: Option<String>,
}

/// Marks every entry for `event` and `tool` (or only enabled/disabled/invalid without an event),
/// following the rules of a dispatch: layer, group and handler order; disabled groups and
/// handlers skipped; a tool event's matcher tested against the tool; each `"if"` tested against
/// the call, with `input` when it is known; a repeated command not run twice.
pub fn plan<'a>(
    inspection: &'a Inspection,
    event: Option<&str>,
    tool: Option<&str>,
    input: Option<&Value>,
) -> Vec<Planned<'a>> {
    let call = Call {
        event,
        tool,
        input,
        root: &inspection.root,
    };
    let off = hooks_off();
    let mut order = 0;
    let mut already: Vec<(&Action, usize)> = Vec::new();
    let mut out = Vec::new();
    let held_back = |kind: LayerKind| {
        inspection.held_back_layer(kind).map(|a| {
            format!(
                "the project's hooks{} are {}: review them with levelcode-hooks trust --project-dir {}",
                match kind {
                    LayerKind::Project => String::new(),
                    other => format!(" in {}", other.name()),
                },
                a.state.name(),
                shell_words::quote(&inspection.root.to_string_lossy())
            )
        })
    };
    let managed_only = inspection.managed_only.as_ref().map(|file| {
        format!(
            "{} sets managedHooksOnly: only the managed layer's hooks run",
            file.display()
        )
    });
    for entry in inspect::entries(inspection) {
        let managed = entry.layer.kind == LayerKind::Managed;
        let (verdict, why) = match (&held_back(entry.layer.kind), &managed_only) {
            (_, Some(reason)) if !managed => {
                // Judged as if it ran, without taking a place in the chain.
                let (mut order, mut already) = (order, already.clone());
                match judge(&entry, &call, &mut order, &mut already) {
                    (Verdict::WouldRun(_) | Verdict::Enabled | Verdict::Duplicate(_), _) => {
                        (Verdict::ManagedOnly, Some(reason.clone()))
                    }
                    other => other,
                }
            }
            (Some(reason), _) => {
                // Judged as if it ran, without taking a place in the chain.
                let (mut order, mut already) = (order, already.clone());
                match judge(&entry, &call, &mut order, &mut already) {
                    (Verdict::WouldRun(_) | Verdict::Enabled | Verdict::Duplicate(_), _) => {
                        (Verdict::Untrusted, Some(reason.clone()))
                    }
                    other => other,
                }
            }
            _ => judge(&entry, &call, &mut order, &mut already),
        };
        let (verdict, why) = match (verdict, &off) {
            // Nothing turns the managed layer off (contract §17).
            (Verdict::WouldRun(_), Some(reason)) if !managed => {
                (Verdict::Off, Some(reason.clone()))
            }
            (verdict, _) => (verdict, why),
        };
        out.push(Planned {
            entry,
            verdict,
            why,
        });
    }
    out
}

/// The call a plan is made for.
struct Call<'c> {
    event: Option<&'c str>,
    tool: Option<&'c str>,
    input: Option<&'c Value>,
    root: &'c Path,
}

fn judge<'a>(
    entry: &Entry<'a>,
    call: &Call<'_>,
    order: &mut usize,
    already: &mut Vec<(&'a Action, usize)>,
) -> (Verdict, Option<String>) {
    let (event, tool) = (call.event, call.tool);
    if let Some(why) = &entry.invalid {
        return (Verdict::Invalid, Some(why.clone()));
    }
    let (Some(group), Some(handler)) = (entry.group, entry.handler) else {
        return (Verdict::Invalid, None);
    };
    let Some(event) = event else {
        return if entry.enabled() {
            (Verdict::Enabled, None)
        } else {
            (Verdict::Disabled, Some(disabled_why(group.enabled)))
        };
    };
    if entry.event != event {
        return (
            Verdict::OtherEvent,
            Some(format!("configured for {}, not {event}", entry.event)),
        );
    }
    if !group.enabled {
        return (Verdict::Disabled, Some(disabled_why(false)));
    }
    let kind = EventKind::of(event);
    if let Some((subject, _)) = group.match_subject(kind, tool) {
        match group.applies(kind, tool) {
            Ok(true) => {}
            Ok(false) => {
                return (
                    Verdict::NoMatch,
                    Some(format!(
                        "matcher {:?} does not match {subject}",
                        group.matcher.as_deref().unwrap_or("")
                    )),
                )
            }
            Err(e) => {
                return (
                    Verdict::Invalid,
                    Some(format!("matcher: invalid regular expression ({e})")),
                )
            }
        }
    }
    if !handler.enabled {
        return (Verdict::Disabled, Some(disabled_why(true)));
    }
    let mut condition = None;
    let tested = tool
        .filter(|_| kind.is_tool_event())
        .map(|tool| filter::Call {
            tool,
            input: call.input,
            root: call.root,
            part: None,
        });
    for filter in [&group.filter, &handler.filter].into_iter().flatten() {
        let rule = filter.text();
        match filter.evaluate(tested.as_ref()) {
            filter::Verdict::Runs => {}
            filter::Verdict::Filtered { why, .. } => {
                return (
                    Verdict::Filtered,
                    Some(format!("\"if\": {rule:?} does not match: {why}")),
                )
            }
            filter::Verdict::NeedsInput => {
                condition = Some(format!(
                    "only for calls that \"if\": {rule:?} matches (--input tests one)"
                ));
            }
            filter::Verdict::Unevaluable(why) => {
                condition = Some(format!(
                    "\"if\": {rule:?} cannot be evaluated ({why}), so the handler runs"
                ));
            }
        }
    }
    if let Some((_, first)) = already.iter().find(|(a, _)| **a == handler.action) {
        return (
            Verdict::Duplicate(*first),
            Some(format!(
                "same command as #{first}, which already runs in this dispatch"
            )),
        );
    }
    *order += 1;
    already.push((&handler.action, *order));
    (Verdict::WouldRun(*order), condition)
}

fn disabled_why(group_enabled: bool) -> String {
    if group_enabled {
        "\"enabled\": false on the handler".into()
    } else {
        "\"enabled\": false on its group".into()
    }
}

/// Why nothing runs at all, when hooks are turned off.
pub fn hooks_off() -> Option<String> {
    if environment::hooks_disabled() {
        Some("hooks are turned off (LEVELCODE_HOOKS is off): no handler runs".into())
    } else if environment::depth() >= environment::MAX_DEPTH {
        Some(format!(
            "LEVELCODE_HOOKS_DEPTH is {}: a dispatcher this deep runs no handler",
            environment::depth()
        ))
    } else {
        None
    }
}

/// Refuses a tool event without a tool, as a dispatch does.
fn check_event_and_tool(event: Option<&str>, tool: Option<&str>) -> anyhow::Result<()> {
    if let (Some(event), None) = (event, tool) {
        if EventKind::of(event).is_tool_event() {
            anyhow::bail!(
                "{event} is a tool event: pass --tool NAME as well, e.g. --tool write_file"
            );
        }
    }
    Ok(())
}

pub fn run(args: &ListArgs) -> anyhow::Result<ExitCode> {
    check_event_and_tool(args.event.as_deref(), args.tool.as_deref())?;
    let options = Options::reading(
        args.project_dir.clone(),
        args.settings.clone(),
        args.no_project,
    );
    let inspection = inspect::inspect(&options, inspect::root_without_payload(&options));
    let tool = tool_for(args.event.as_deref(), args.tool.as_deref());
    let input = match &args.input {
        Some(text) => Some(serde_json::from_str::<Value>(text).map_err(|e| {
            anyhow::anyhow!("--input: not valid JSON ({e}); the tool input is JSON, e.g. '{{\"command\":\"git commit -m x\"}}'")
        })?),
        None => None,
    };
    let planned = plan(&inspection, args.event.as_deref(), tool, input.as_ref());
    let text = if args.json {
        let mut line =
            serde_json::to_string(&to_json(&inspection, args.event.as_deref(), tool, &planned))?;
        line.push('\n');
        line
    } else {
        table(
            &inspection,
            args.event.as_deref(),
            tool,
            &planned,
            Painter::stdout(),
        )
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The tool, for tool events only: other events carry none.
pub fn tool_for<'a>(event: Option<&str>, tool: Option<&'a str>) -> Option<&'a str> {
    match event {
        Some(event) if EventKind::of(event).is_tool_event() => tool,
        _ => None,
    }
}

/// One line on the trust of each layer inside the project that has hooks, for the tables of
/// `list` and `validate`.
pub fn trust_lines(inspection: &Inspection) -> Vec<String> {
    let root = shell_words::quote(&inspection.root.to_string_lossy()).into_owned();
    inspection
        .trust
        .iter()
        .map(|assessment| {
            let what = match assessment.layer {
                LayerKind::Project => "project hooks".to_string(),
                other => format!("project hooks of {} ({})", other.name(), short_name(assessment, &inspection.root)),
            };
            match assessment.state {
                crate::trust::State::Trusted(by) => format!(
                    "{what} trusted (by {}){}",
                    by.name(),
                    assessment
                        .digest
                        .as_ref()
                        .map(|d| format!(", digest {}", d.digest))
                        .unwrap_or_default()
                ),
                state => format!(
                    "{what} {}: its {} handler(s) do not run; review and trust them with: levelcode-hooks trust --project-dir {root}",
                    state.name(),
                    assessment.handlers
                ),
            }
        })
        .collect()
}

fn short_name(assessment: &crate::trust::Assessment, root: &std::path::Path) -> String {
    inspect::short_path(&assessment.path, root)
}

/// Every warning: those about no single file, then each layer's.
pub fn all_warnings(inspection: &Inspection) -> Vec<String> {
    let mut warnings = inspection.notes.clone();
    if let Some(off) = hooks_off() {
        let managed_runs = inspection
            .layers
            .iter()
            .any(|l| l.kind == LayerKind::Managed && l.groups.iter().any(|g| g.enabled));
        warnings.push(if managed_runs {
            format!("{off} but the managed layer's, which nothing turns off")
        } else {
            off
        });
    }
    for layer in &inspection.layers {
        warnings.extend(layer.warnings.iter().cloned());
    }
    warnings
}

fn table(
    inspection: &Inspection,
    event: Option<&str>,
    tool: Option<&str>,
    planned: &[Planned<'_>],
    painter: Painter,
) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let root = &inspection.root;
    let _ = writeln!(
        out,
        "{} {}",
        painter.paint(Style::Bold, "project"),
        root.display()
    );
    let name_width = inspection
        .layers
        .iter()
        .map(|l| l.kind.name().len())
        .max()
        .unwrap_or(0)
        .max(8);
    for layer in &inspection.layers {
        let state = match layer.state {
            LayerState::Read => {
                let handlers: usize = layer.groups.iter().map(|g| g.handlers.len()).sum();
                format!(
                    "{} group(s), {handlers} handler(s){}",
                    layer.groups.len(),
                    match layer.warnings.len() {
                        0 => String::new(),
                        n => format!(", {n} warning(s)"),
                    }
                )
            }
            LayerState::Missing => "not there".into(),
            LayerState::Repeated => "same file as an earlier layer, read once".into(),
            LayerState::Unusable => "unusable, see warnings".into(),
        };
        let _ = writeln!(
            out,
            "  {:<name_width$} {}  ({state})",
            layer.kind.name(),
            layer.path.display()
        );
    }
    for (line, assessment) in trust_lines(inspection).into_iter().zip(&inspection.trust) {
        let style = if assessment.state.admits() {
            Style::Dim
        } else {
            Style::Warn
        };
        let _ = writeln!(out, "  {}", painter.paint(style, line));
    }
    if let Some(event) = event {
        let _ = writeln!(
            out,
            "{} {event}{}",
            painter.paint(Style::Bold, "for"),
            tool.map(|t| format!(" with tool {t}")).unwrap_or_default()
        );
    }
    out.push('\n');
    if planned.is_empty() {
        out.push_str("no hooks configured\n");
    } else {
        let width = |f: &dyn Fn(&Planned<'_>) -> usize, min: usize| {
            planned.iter().map(f).max().unwrap_or(0).max(min)
        };
        let w_state = width(&|p| p.verdict.short().len(), 5);
        let w_event = width(&|p| p.entry.event.len(), 5);
        let w_matcher = width(&|p| matcher_text(p).chars().count(), 7);
        let w_layer = width(&|p| p.entry.layer.kind.name().len(), 5);
        let _ = writeln!(
            out,
            "{}",
            painter.paint(
                Style::Bold,
                format!(
                    "{:<w_state$}  {:<w_event$}  {:<w_matcher$}  {:>7}  {:<w_layer$}  HANDLER",
                    "STATE", "EVENT", "MATCHER", "TIMEOUT", "LAYER"
                )
            )
        );
        for p in planned {
            let timeout = p
                .entry
                .handler
                .map(|h| inspect::seconds(h.timeout.as_secs_f64()))
                .unwrap_or_else(|| "-".into());
            let _ = writeln!(
                out,
                "{:<w_state$}  {:<w_event$}  {:<w_matcher$}  {:>7}  {:<w_layer$}  {}",
                painter.paint(p.verdict.style(), p.verdict.short()),
                p.entry.event,
                matcher_text(p),
                timeout,
                p.entry.layer.kind.name(),
                match p.entry.handler.map(|h| h.protocol) {
                    Some(protocol) if !protocol.is_levelcode() =>
                        format!("{} ({})", p.entry.label, protocol.name()),
                    _ => p.entry.label.clone(),
                },
            );
            let file = inspect::short_path(&p.entry.layer.path, root);
            let _ = writeln!(
                out,
                "{}",
                painter.paint(Style::Dim, format!("    {file}: {}", p.entry.path))
            );
            let group_if = p.entry.group.and_then(|g| g.filter.as_ref());
            let own_if = p.entry.handler.and_then(|h| h.filter.as_ref());
            for filter in [group_if, own_if].into_iter().flatten() {
                let rule = crate::commands::visible::escape(filter.text());
                let _ = writeln!(out, "    if: {rule}");
            }
            if p.entry.handler.is_some_and(|h| h.background) {
                let _ = writeln!(
                    out,
                    "    async: started once the chain has decided; the dispatch does not wait for it"
                );
            }
            if let Some(h) = p.entry.handler.filter(|h| h.sandbox.policy.is_some()) {
                let _ = writeln!(out, "    sandbox: {}", h.sandbox.describe());
            }
            if let Some(why) = &p.why {
                let style = if p.verdict == Verdict::Invalid {
                    Style::Bad
                } else {
                    Style::Dim
                };
                let _ = writeln!(out, "    {}", painter.paint(style, format!("why: {why}")));
            }
            for warning in &p.entry.warnings {
                let _ = writeln!(
                    out,
                    "    {}",
                    painter.paint(Style::Warn, format!("warning: {warning}"))
                );
            }
        }
    }
    // Warnings about an entry are shown under it; the others (a whole file, no home) here.
    let warnings: Vec<String> = all_warnings(inspection)
        .into_iter()
        .filter(|w| !planned.iter().any(|p| is_about(w, p)))
        .collect();
    if !warnings.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            painter.paint(Style::Warn, format!("{} warning(s):", warnings.len()))
        );
        for warning in &warnings {
            let _ = writeln!(out, "  {warning}");
        }
    }
    if event.is_some() {
        let runs = planned
            .iter()
            .filter(|p| matches!(p.verdict, Verdict::WouldRun(_)))
            .count();
        let _ = writeln!(out, "\n{runs} of {} handler(s) would run", planned.len());
    }
    out
}

/// Returns true if and only if `warning` concerns the entry of `p` or its group.
fn is_about(warning: &str, p: &Planned<'_>) -> bool {
    let file = p.entry.layer.file();
    let Some(rest) = warning
        .strip_prefix(file.as_str())
        .and_then(|r| r.strip_prefix(": "))
    else {
        return false;
    };
    let group_path = p.entry.group.map(|g| g.path());
    [Some(p.entry.path.clone()), group_path]
        .into_iter()
        .flatten()
        .any(|path| {
            rest.strip_prefix(path.as_str())
                .is_some_and(|r| r.starts_with(':') || r.starts_with('.'))
        })
}

fn matcher_text(p: &Planned<'_>) -> String {
    match (
        &p.entry.matcher,
        EventKind::of(&p.entry.event).is_tool_event(),
    ) {
        (Some(m), _) if !m.is_empty() => m.clone(),
        (_, true) => "*".into(),
        (_, false) => "-".into(),
    }
}
