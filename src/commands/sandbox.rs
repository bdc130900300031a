//! `levelcode-hooks sandbox --check`: what the running system can enforce of a handler's sandbox
//! (contract §20): the Landlock ABI, each part of a policy and what it needs, seccomp, and
//! whether the default policy can run here. And the sandbox problems `validate` reports: a path
//! a policy names that is not there, a policy this kernel cannot enforce.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use serde_json::{json, Value};

use crate::commands::inspect::LayerView;
use crate::dispatch::exit::Status;
use crate::dispatch::output::write_stdout;
use crate::environment;
use crate::runner::confine::{self, Part, Support};
use crate::settings::layers;
use crate::settings::sandbox::{self, Origin, Sandbox};

#[derive(Debug, Clone, Args)]
pub struct SandboxArgs {
    /// Print what this system can enforce: the Landlock ABI, writes, TCP, scoping, seccomp.
    #[arg(long, required = true)]
    pub check: bool,

    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Prints what the system can enforce; exits 1 when the default policy cannot be.
pub fn run(args: &SandboxArgs) -> anyhow::Result<ExitCode> {
    let support = confine::support();
    let strict = confine::missing(false, &support);
    let text = if args.json {
        let mut line = serde_json::to_string(&report_json(&support))?;
        line.push('\n');
        line
    } else {
        report(&support)
    };
    write_stdout(&text)?;
    Ok(if strict.is_empty() {
        ExitCode::SUCCESS
    } else {
        Status::Failure.into()
    })
}

fn report(support: &Support) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let landlock = match (support.linux, support.landlock) {
        (false, _) => "not Linux: no handler can be sandboxed here".to_string(),
        (true, Some(abi)) => format!("Landlock ABI {abi}"),
        (true, None) => "no Landlock (not in this kernel, or off)".to_string(),
    };
    let seccomp = if support.seccomp { "yes" } else { "no" };
    let _ = writeln!(
        out,
        "{landlock}; seccomp filters: {seccomp} ({})",
        std::env::consts::ARCH
    );
    let _ = writeln!(
        out,
        "temporary folder a sandboxed handler may write in: {}",
        environment::temp_dir().display()
    );
    let _ = writeln!(
        out,
        "\nwhat a sandbox refuses, what it needs, and what \"network\": true changes of it:"
    );
    let width = Part::ALL.iter().map(|p| p.name().len()).max().unwrap_or(0);
    for part in Part::ALL {
        let mark = if part.enforced_by(support) {
            "enforced"
        } else {
            "MISSING"
        };
        let _ = writeln!(
            out,
            "  {mark:<8}  {:<width$}  {:<16}  {}",
            part.name(),
            part.needs(),
            part.with_network()
        );
    }
    out.push('\n');
    for (network, what) in [
        (false, "the default policy (\"sandbox\": true)"),
        (true, "a policy with \"network\": true"),
    ] {
        let missing = confine::missing(network, support);
        let _ = if missing.is_empty() {
            writeln!(out, "{what}: can be enforced here")
        } else {
            writeln!(
                out,
                "{what}: cannot be enforced here, so such handlers do not run (outcome error; \"best-effort\" runs them without what is missing): {}",
                confine::refusal(&missing, support)
            )
        };
    }
    out
}

fn report_json(support: &Support) -> Value {
    let parts: Vec<Value> = Part::ALL
        .into_iter()
        .map(|part| {
            json!({
                "refuses": part.name(),
                "needs": part.needs(),
                "enforced": part.enforced_by(support),
                "with_network": part.with_network(),
            })
        })
        .collect();
    let policy = |network: bool| {
        let missing = confine::missing(network, support);
        json!({
            "enforced": missing.is_empty(),
            "missing": missing.iter().map(|p| p.name()).collect::<Vec<_>>(),
        })
    };
    json!({
        "linux": support.linux,
        "landlock_abi": support.landlock,
        "seccomp": support.seccomp,
        "arch": std::env::consts::ARCH,
        "temporary_folder": environment::temp_dir().display().to_string(),
        "parts": parts,
        "default_policy": policy(false),
        "network_policy": policy(true),
    })
}

/// One sandbox problem of a layer, for `validate`: where (`None`: the file's top level), its
/// kind and what to do.
pub struct Problem {
    pub path: Option<String>,
    pub kind: &'static str,
    pub message: String,
}

/// The sandbox problems of `layer`'s enabled handlers in the project at `root`: each path a
/// policy may write that is not there, a policy this system cannot enforce (the handler would
/// not run), a temporary folder that holds the home directory; each once per place it is
/// written. And a `sandboxProjectHooks` in a layer inside the project, which is not read there.
pub fn problems(layer: &LayerView, root: &Path) -> Vec<Problem> {
    let support = confine::support();
    let home = environment::home();
    let mut out: Vec<Problem> = Vec::new();
    let text = layer.text.as_deref().unwrap_or_default();
    let named = layers::boolean_setting(text.as_bytes(), sandbox::PROJECT_SWITCH);
    if layer.kind.project_file().is_some() && !matches!(named, Ok(None)) {
        out.push(Problem {
            path: Some(sandbox::PROJECT_SWITCH.to_string()),
            kind: "ignored_in_project",
            message: format!(
                "{} is read only from the user, data and managed layers: a project cannot choose its own sandbox; remove it",
                sandbox::PROJECT_SWITCH
            ),
        });
    }
    let groups = &layer.groups;
    let mut add = |problem: Problem| {
        if !out
            .iter()
            .any(|p| p.path == problem.path && p.message == problem.message)
        {
            out.push(problem);
        }
    };
    for group in groups.iter().filter(|g| g.enabled) {
        for handler in group.handlers.iter().filter(|h| h.enabled) {
            let Some(policy) = &handler.sandbox.policy else {
                continue;
            };
            let at = place(&handler.sandbox, || handler.path(group), || group.path());
            for (i, written) in policy.write.iter().enumerate() {
                let Some(path) = sandbox::resolve(written, root, home) else {
                    continue;
                };
                if !path.exists() {
                    add(Problem {
                        path: at.clone(),
                        kind: "sandbox_path_missing",
                        message: format!(
                            "write[{i}]: {} does not exist, so the sandbox lets nothing be written there; create it, or take it out",
                            path.display()
                        ),
                    });
                }
            }
            let missing = confine::missing(policy.network, &support);
            if !missing.is_empty() && !policy.best_effort {
                add(Problem {
                    path: at.clone(),
                    kind: "sandbox_not_enforceable",
                    message: format!(
                        "its sandbox cannot be enforced here ({}), so the handler does not run on this machine; \"best-effort\" runs it with what can be",
                        confine::refusal(&missing, &support)
                    ),
                });
            }
            let temp = environment::temp_dir();
            if home.is_some_and(|home| home.starts_with(temp)) {
                add(Problem {
                    path: at.clone(),
                    kind: "sandbox_temporary_folder",
                    message: format!(
                        "the temporary folder {} holds the home directory, so this sandbox cannot grant it and the handler does not run (best effort runs it without); set TMPDIR to a folder of its own",
                        temp.display()
                    ),
                });
            }
        }
    }
    out
}

/// Where a handler's sandbox is written: its own entry's `sandbox`, its group's, or the file's.
fn place(
    sandbox: &Sandbox,
    handler: impl FnOnce() -> String,
    group: impl FnOnce() -> String,
) -> Option<String> {
    let key = sandbox::KEY;
    Some(match sandbox.origin {
        Origin::Handler | Origin::Unset | Origin::Switch => format!("{}.{key}", handler()),
        Origin::Group => format!("{}.{key}", group()),
        Origin::Layer => key.to_string(),
    })
}
