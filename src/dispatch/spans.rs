//! A dispatch's report as OpenTelemetry spans (contract §18): what the dispatch and each handler
//! that ran say of themselves, in attributes named `levelcode.hook.*`. The payload, the
//! handlers' output and the reasons they give are left out unless `LEVELCODE_HOOKS_OTEL_CONTENT`
//! asks for them: they may hold source code and secrets.

use crate::dispatch::outcome::Outcome;
use crate::dispatch::output::{HandlerReport, Report};
use crate::dispatch::payload::Payload;
use crate::telemetry::{self, Attr, Finished, FinishedHandler};

/// How much of one text attribute is kept, when content is asked for.
const MAX_TEXT: usize = 16 << 10;

/// Exports the spans of `report`, when export is on and a handler ran; a failure is a warning
/// in the report.
pub fn export(payload: &Payload, report: &mut Report) {
    if !telemetry::pending() {
        return;
    }
    let content = telemetry::content();
    let mut attributes = common(payload);
    attributes.push(("levelcode.hook.decision", text(report.decision())));
    attributes.push((
        "levelcode.hook.handlers",
        Attr::Int(count(report.handlers.len())),
    ));
    attributes.push((
        "levelcode.hook.blocked",
        Attr::Bool(report.decision() == "block"),
    ));
    attributes.push(("levelcode.hook.asked", Attr::Bool(!report.asks.is_empty())));
    attributes.push((
        "levelcode.hook.rewrote_input",
        Attr::Bool(report.updated_input.is_some()),
    ));
    attributes.push((
        "levelcode.hook.warnings",
        Attr::Int(count(report.warnings.len())),
    ));
    attributes.push((
        "levelcode.hook.duration_ms",
        Attr::Double(report.started.elapsed().as_secs_f64() * 1000.0),
    ));
    if let Some(sig) = report.interrupted {
        attributes.push(("levelcode.hook.interrupted_by", Attr::Int(i64::from(sig))));
    }
    if content {
        attributes.push((
            "levelcode.hook.payload",
            text(&String::from_utf8_lossy(cut(payload.raw()))),
        ));
        if let Some(reason) = report.decision_reason() {
            attributes.push(("levelcode.hook.reason", text(&reason)));
        }
    }
    let tool = payload.tool_name.as_deref();
    let handlers = report
        .handlers
        .iter()
        .enumerate()
        // A background handler's span is reported when it ends (`background`).
        .filter(|(_, handler)| handler.outcome != Outcome::Started)
        .map(|(index, handler)| FinishedHandler {
            index,
            name: format!("hook {}", handler.event),
            attributes: handler_attributes(&payload.event, tool, handler, content),
            error: failure(handler),
            duration: std::time::Duration::from_secs_f64(handler.duration_ms.max(0.0) / 1000.0),
        })
        .collect();
    let finished = Finished {
        name: format!("hooks {}", payload.event),
        attributes,
        error: report
            .interrupted
            .map(|sig| format!("interrupted by signal {sig}")),
        handlers,
    };
    telemetry::finish(finished, &mut report.warnings);
}

/// Exports the span of a background handler that has ended (contract §21), as a child of its
/// dispatch's span (`detached`); a failure is a warning in `warnings`.
pub fn background(
    handler: &HandlerReport,
    tool: Option<&str>,
    detached: &telemetry::Detached,
    warnings: &mut Vec<String>,
) {
    let mut attributes = handler_attributes(&handler.event, tool, handler, telemetry::content());
    attributes.push(("levelcode.hook.background", Attr::Bool(true)));
    telemetry::export_detached(
        detached,
        format!("hook {} (background)", handler.event),
        attributes,
        failure(handler),
        warnings,
    );
}

fn common(payload: &Payload) -> Vec<(&'static str, Attr)> {
    event_and_tool(&payload.event, payload.tool_name.as_deref())
}

fn event_and_tool(event: &str, tool: Option<&str>) -> Vec<(&'static str, Attr)> {
    let mut attributes = vec![("levelcode.hook.event", text(event))];
    if let Some(tool) = tool {
        attributes.push(("levelcode.hook.tool", text(tool)));
    }
    attributes
}

fn handler_attributes(
    event: &str,
    tool: Option<&str>,
    handler: &HandlerReport,
    content: bool,
) -> Vec<(&'static str, Attr)> {
    let mut attributes = event_and_tool(event, tool);
    attributes.extend([
        ("levelcode.hook.layer", text(handler.layer)),
        ("levelcode.hook.source", text(&handler.source)),
        ("levelcode.hook.label", text(&handler.label)),
        ("levelcode.hook.outcome", text(handler.outcome.name())),
        (
            "levelcode.hook.duration_ms",
            Attr::Double(handler.duration_ms),
        ),
        (
            "levelcode.hook.rewrote_input",
            Attr::Bool(handler.rewrote_input),
        ),
        (
            "levelcode.hook.asked",
            Attr::Bool(handler.outcome == Outcome::Ask),
        ),
        (
            "levelcode.hook.blocked",
            Attr::Bool(handler.outcome == Outcome::Block),
        ),
    ]);
    if let Some(matcher) = &handler.matcher {
        attributes.push(("levelcode.hook.matcher", text(matcher)));
    }
    if let Some(code) = handler.exit_code {
        attributes.push(("levelcode.hook.exit_code", Attr::Int(i64::from(code))));
    }
    if let Some(sig) = handler.signal {
        attributes.push(("levelcode.hook.signal", Attr::Int(i64::from(sig))));
    }
    if let Some(status) = handler.http_status {
        // The OpenTelemetry semantic conventions' name for it.
        attributes.push(("http.response.status_code", Attr::Int(i64::from(status))));
    }
    if content {
        attributes.push(("levelcode.hook.stdout", text(cut_str(&handler.stdout))));
        attributes.push(("levelcode.hook.stderr", text(cut_str(&handler.stderr))));
        if let Some(message) = &handler.message {
            attributes.push(("levelcode.hook.message", text(message)));
        }
    }
    attributes
}

/// A handler that failed to do its job (not one that blocked: that is its job).
fn failure(handler: &HandlerReport) -> Option<String> {
    match handler.outcome {
        Outcome::Error | Outcome::Timeout | Outcome::SpawnError | Outcome::Interrupted => {
            Some(handler.outcome.name().to_string())
        }
        _ => None,
    }
}

fn text(s: &str) -> Attr {
    Attr::Str(s.to_string())
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn cut(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.len().min(MAX_TEXT)]
}

fn cut_str(s: &str) -> &str {
    let mut end = s.len().min(MAX_TEXT);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
