//! `list --json`: the listing as one JSON object, and the parts of it `test --dry-run --json`
//! and `validate --json` print too.

use serde::Serialize;
use serde_json::Value;

use super::{all_warnings, Planned, Verdict};
use crate::commands::inspect::Inspection;
use crate::settings::{sandbox::Sandbox, Written};

#[derive(Serialize)]
pub(super) struct ListJson<'a> {
    project_root: String,
    event: Option<&'a str>,
    tool: Option<&'a str>,
    layers: Vec<LayerJson>,
    handlers: Vec<HandlerJson>,
    warnings: Vec<String>,
    /// The project layer's trust, when it has hooks.
    project_trust: Option<serde_json::Value>,
}

#[derive(Serialize)]
struct LayerJson {
    layer: &'static str,
    file: String,
    state: &'static str,
}

/// One entry as `list --json` prints it; `test --dry-run --json` prints the same.
#[derive(Serialize)]
pub struct HandlerJson {
    pub layer: &'static str,
    pub file: String,
    pub event: String,
    pub path: String,
    pub matcher: Option<String>,
    pub label: String,
    pub name: Option<String>,
    pub command: Option<String>,
    pub argv: Option<Vec<String>>,
    /// The exec form's arguments: `command` is then the program, run without a shell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// The shell that runs `command`, when it is not the default (`"powershell"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell: Option<&'static str>,
    /// An http handler's `url`, `headers` and `allowedEnvVars` (contract §19).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headers: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(rename = "allowedEnvVars", skip_serializing_if = "Option::is_none")]
    pub allowed_env_vars: Option<Vec<String>>,
    pub timeout: Option<f64>,
    pub enabled: bool,
    /// The handler's protocol, by name (contract §12).
    pub protocol: Option<&'static str>,
    /// The handler's `"if"` (contract §16).
    #[serde(rename = "if")]
    pub filter: Option<String>,
    /// Its group's `"if"`.
    pub group_if: Option<String>,
    /// `"async": true`: started in the background, not waited for (contract §21).
    #[serde(rename = "async")]
    pub background: bool,
    /// Its sandbox (contract §20) and where it was said; `null` for none.
    pub sandbox: Option<Value>,
    pub state: &'static str,
    pub order: Option<usize>,
    pub why: Option<String>,
    pub warnings: Vec<String>,
}

impl HandlerJson {
    pub fn new(planned: &Planned<'_>) -> HandlerJson {
        let entry = &planned.entry;
        let handler = entry.handler;
        let written = handler.map_or_else(Written::default, |h| Written::of_action(&h.action));
        HandlerJson {
            layer: entry.layer.kind.name(),
            file: entry.layer.file(),
            event: entry.event.clone(),
            path: entry.path.clone(),
            matcher: entry.matcher.clone(),
            label: entry.label.clone(),
            name: handler.and_then(|h| h.name.clone()),
            command: written.command.map(String::from),
            argv: written.argv.map(<[String]>::to_vec),
            args: written.args.map(<[String]>::to_vec),
            shell: written.shell,
            url: written.url.map(String::from),
            headers: written.headers.map(|headers| {
                headers
                    .iter()
                    .map(|(n, v)| (n.clone(), serde_json::Value::from(v.as_str())))
                    .collect()
            }),
            allowed_env_vars: written.allowed_env_vars.map(<[String]>::to_vec),
            timeout: handler.map(|h| h.timeout.as_secs_f64()),
            enabled: entry.enabled(),
            protocol: handler.map(|h| h.protocol.name()),
            filter: handler
                .and_then(|h| h.filter.as_ref())
                .map(|f| f.text().to_string()),
            group_if: entry
                .group
                .and_then(|g| g.filter.as_ref())
                .map(|f| f.text().to_string()),
            background: handler.is_some_and(|h| h.background),
            sandbox: handler.and_then(|h| sandbox_json(&h.sandbox)),
            state: planned.verdict.name(),
            order: match planned.verdict {
                Verdict::WouldRun(n) => Some(n),
                _ => None,
            },
            why: planned.why.clone(),
            warnings: entry.warnings.clone(),
        }
    }
}

pub(super) fn to_json<'a>(
    inspection: &Inspection,
    event: Option<&'a str>,
    tool: Option<&'a str>,
    planned: &[Planned<'_>],
) -> ListJson<'a> {
    ListJson {
        project_root: inspection.root.display().to_string(),
        event,
        tool,
        layers: inspection
            .layers
            .iter()
            .map(|l| LayerJson {
                layer: l.kind.name(),
                file: l.file(),
                state: l.state.name(),
            })
            .collect(),
        handlers: planned.iter().map(HandlerJson::new).collect(),
        warnings: all_warnings(inspection),
        project_trust: inspection
            .held_back()
            .or(inspection.trust.first())
            .map(trust_json),
    }
}

/// A handler's sandbox as `list --json` prints it, with where it was said; `None` for none.
pub fn sandbox_json(sandbox: &Sandbox) -> Option<Value> {
    let mut json = sandbox.policy.as_ref()?.json();
    json["from"] = Value::from(sandbox.origin.name());
    Some(json)
}

/// A project layer's trust as `list --json` and `validate --json` print it.
pub fn trust_json(assessment: &crate::trust::Assessment) -> serde_json::Value {
    serde_json::json!({
        "layer": assessment.layer.name(),
        "state": assessment.state.name(),
        "trusted_by": match assessment.state {
            crate::trust::State::Trusted(by) => Some(by.name()),
            _ => None,
        },
        "digest": assessment.digest.as_ref().map(|d| d.digest.clone()),
        "path": assessment.path.display().to_string(),
        "handlers": assessment.handlers,
    })
}
