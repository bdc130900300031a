//! `levelcode-hooks trust`: review a project's hooks and the scripts they run, and record the
//! person's answer (contract §13).

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use crate::dispatch::settings::{Action, Program};
use crate::trust::status::{self, read_project_layer, root_key, trust_all_from_layers};
use crate::trust::store::{self, Entry};
use crate::trust::{self, assess, Assessment, State};

#[derive(Debug, Clone, Args)]
pub struct TrustArgs {
    /// The project root [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub project_dir: Option<PathBuf>,

    /// Trust without asking (the review is still printed); for scripts that have reviewed the
    /// hooks some other way.
    #[arg(long, conflicts_with_all = ["status", "deny", "revoke", "digest"])]
    pub yes: bool,

    /// Trust only if the project's digest is still this one, as `--status` or a review printed
    /// it; works without a terminal.
    #[arg(long, value_name = "sha256:HEX", conflicts_with_all = ["status", "deny", "revoke"])]
    pub digest: Option<String>,

    /// Print the project's trust state. Exit status: 0 trusted (or no hooks), 3 untrusted,
    /// 4 changed, 5 denied.
    #[arg(long, conflicts_with_all = ["deny", "revoke"])]
    pub status: bool,

    /// With --status: print one JSON object.
    #[arg(long, requires = "status")]
    pub json: bool,

    /// Record that this project's hooks never run, whatever they become, until trusted again.
    #[arg(long, conflicts_with = "revoke")]
    pub deny: bool,

    /// Forget this project: its hooks are untrusted again.
    #[arg(long)]
    pub revoke: bool,
}

pub fn run(args: &TrustArgs) -> anyhow::Result<ExitCode> {
    let root = match &args.project_dir {
        Some(dir) if dir.is_absolute() => dir.clone(),
        Some(dir) => crate::environment::start_dir().join(dir),
        None => crate::environment::start_dir(),
    };
    let Some(store_path) = store::path() else {
        anyhow::bail!(
            "no data directory (neither LEVELCODE_DIR nor HOME is set): nowhere to record trust"
        );
    };
    if !root.is_dir() {
        anyhow::bail!(
            "{}: no such directory; pass the project's root with --project-dir",
            root.display()
        );
    }
    if args.deny || args.revoke {
        return record_decision(&root, &store_path, args.deny);
    }
    let (bytes, problem) = read_project_layer(&root);
    let (trust_all, mut warnings) = trust_all_from_layers();
    let assessment = assess(&root, &bytes, trust_all, true);
    warnings.extend(problem);
    warnings.extend(assessment.warnings.iter().cloned());
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }
    if args.status {
        return status(&root, &assessment, &bytes, &warnings, args.json);
    }
    if let Some(var) = trust::started_by_agent() {
        anyhow::bail!("{}", trust::agent_refusal(var, &root));
    }
    if assessment.state == State::NoHooks {
        crate::dispatch::output::write_stdout(&format!(
            "{}: no hooks to run, so nothing to trust\n",
            assessment.path.display()
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(reason) = &assessment.untrustable {
        anyhow::bail!("{}: {reason}", assessment.path.display());
    }
    let Some(digest) = assessment.digest.as_ref() else {
        anyhow::bail!("{}: no digest", assessment.path.display());
    };
    if let Some(wanted) = &args.digest {
        if *wanted != digest.digest {
            anyhow::bail!(
                "{}: the hooks' digest is now {}, not {wanted}: they changed since that digest was \
                 shown; review them again with: levelcode-hooks trust --project-dir {}",
                assessment.path.display(),
                digest.digest,
                shell_words::quote(&root.to_string_lossy())
            );
        }
        return record_trust(&store_path, &assessment);
    }
    // The review shows the very bytes the digest was computed from.
    crate::dispatch::output::write_stdout(&review(&assessment, &bytes))?;
    if args.yes {
        return record_trust(&store_path, &assessment);
    }
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        anyhow::bail!(
            "not asking without a terminal; after reviewing the hooks above, run: \
             levelcode-hooks trust --project-dir {} --digest {}",
            shell_words::quote(&digest.root.to_string_lossy()),
            digest.digest
        );
    }
    eprint!(
        "Trust these {} handler(s)? They will run with your rights whenever the agent works in this project. [y/N] ",
        assessment.handlers
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        record_trust(&store_path, &assessment)
    } else {
        eprintln!("Not trusted; nothing recorded.");
        Ok(crate::dispatch::exit::Status::Failure.into())
    }
}

fn status(
    root: &Path,
    assessment: &Assessment,
    bytes: &[u8],
    warnings: &[String],
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let text = if as_json {
        let mut line = status::status_json(root, assessment, bytes, warnings).to_string();
        line.push('\n');
        line
    } else {
        let mut text = format!(
            "{}  {}\n",
            assessment.state.name(),
            assessment.path.display()
        );
        if let State::Trusted(by) = assessment.state {
            text.push_str(&format!("  trusted by {}\n", by.name()));
        }
        if assessment.state != State::NoHooks {
            text.push_str(&format!("  {} handler(s)\n", assessment.handlers));
        }
        if let Some(digest) = &assessment.digest {
            text.push_str(&format!("  digest {}\n", digest.digest));
        }
        if let Some(other) = &assessment.trusted_at {
            text.push_str(&format!("  the same hooks are trusted at {other}\n"));
        }
        if !assessment.state.admits() {
            text.push_str(&format!(
                "  review and trust them with: levelcode-hooks trust --project-dir {}\n",
                shell_words::quote(&root.to_string_lossy())
            ));
        }
        text
    };
    crate::dispatch::output::write_stdout(&text)?;
    Ok(ExitCode::from(assessment.state.exit_code()))
}

/// What the person is asked to trust: each handler with where it is written and what it runs,
/// and each named script with its hash.
pub fn review(assessment: &Assessment, bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let shown = |text: &str| crate::commands::visible::escape(text).into_owned();
    let _ = writeln!(
        out,
        "Hooks in {}:",
        shown(&assessment.path.display().to_string())
    );
    for group in trust::all_groups(&assessment.path, bytes) {
        for handler in &group.handlers {
            let off = if group.enabled && handler.enabled {
                ""
            } else {
                "  (disabled)"
            };
            let matcher = group
                .matcher
                .as_deref()
                .map(|m| format!("  matcher {:?}", shown(m)))
                .unwrap_or_default();
            let name = handler
                .name
                .as_deref()
                .map(|n| format!("  name {:?}", shown(n)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {} {}.hooks[{}]{matcher}{name}{off}",
                group.event,
                group.path(),
                handler.index
            );
            let hidden = match &handler.action {
                Action::Process(Program::Shell(command)) => {
                    let _ = writeln!(out, "      command: {}", shown(command));
                    crate::commands::visible::needs_warning(command)
                }
                Action::Process(Program::Argv(argv)) => {
                    let _ = writeln!(out, "      argv: {}", shown(&json!(argv).to_string()));
                    argv.iter()
                        .any(|a| crate::commands::visible::needs_warning(a))
                }
            };
            if hidden {
                let _ = writeln!(
                    out,
                    "      warning: {}",
                    crate::commands::visible::warning("this handler")
                );
            }
        }
    }
    if let Some(digest) = &assessment.digest {
        let (folder, named): (Vec<_>, Vec<_>) = digest.scripts.iter().partition(|s| s.in_folder);
        if !folder.is_empty() {
            let _ = writeln!(
                out,
                "Files in {}/ (every one is covered, named or not):",
                trust::digest::HOOKS_FOLDER
            );
            for script in folder {
                let _ = writeln!(out, "  {}  {}", shown(&script.path), script.hash);
            }
        }
        if named.is_empty() {
            let _ = writeln!(out, "Files inside the project they name: none");
        } else {
            let _ = writeln!(out, "Files inside the project they name:");
            for script in named {
                let _ = writeln!(out, "  {}  {}", shown(&script.path), script.hash);
            }
        }
        for place in &digest.fallback {
            let _ = writeln!(
                out,
                "Could not split the command of {place} as a shell would: every word in it \
                 that names a file in the project is covered instead."
            );
        }
        let _ = writeln!(
            out,
            "Not covered: programs found on PATH, files outside the project, and whatever these \
             scripts read, import or download."
        );
        let _ = writeln!(out, "Digest: {}", digest.digest);
    }
    out
}

fn record_trust(store_path: &Path, assessment: &Assessment) -> anyhow::Result<ExitCode> {
    let Some(digest) = &assessment.digest else {
        anyhow::bail!("no digest to record");
    };
    let updated = status::record(store_path, assessment).map_err(anyhow::Error::msg)?;
    if let Some(aside) = updated.set_aside {
        eprintln!(
            "warning: {} could not be read; it was moved to {} and a new store started",
            store_path.display(),
            aside.display()
        );
    }
    crate::dispatch::output::write_stdout(&format!(
        "Trusted {} handler(s) of {} ({}).\n",
        assessment.handlers,
        digest.root.display(),
        digest.digest
    ))?;
    Ok(ExitCode::SUCCESS)
}

fn record_decision(root: &Path, store_path: &Path, deny: bool) -> anyhow::Result<ExitCode> {
    let canonical = root
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("cannot resolve the project root {}: {e}", root.display()))?;
    let key = root_key(&canonical).map_err(anyhow::Error::msg)?;
    let mut had = false;
    let updated = store::update(store_path, |s| {
        if deny {
            s.projects.insert(
                key,
                Entry::Denied {
                    at: Some(crate::fs::now_ms()),
                },
            );
        } else {
            had = s.projects.remove(&key).is_some();
        }
    })
    .map_err(anyhow::Error::msg)?;
    if let Some(aside) = updated.set_aside {
        eprintln!(
            "warning: {} could not be read; it was moved to {} and a new store started",
            store_path.display(),
            aside.display()
        );
    }
    let message = match (deny, had) {
        (true, _) => format!(
            "Denied: the hooks of {} will not run, whatever they become, until you trust them.\n",
            canonical.display()
        ),
        (false, true) => format!(
            "Forgot {}: its hooks are untrusted again.\n",
            canonical.display()
        ),
        (false, false) => format!("Nothing was recorded for {}.\n", canonical.display()),
    };
    crate::dispatch::output::write_stdout(&message)?;
    Ok(ExitCode::SUCCESS)
}
