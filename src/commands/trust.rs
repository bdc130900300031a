//! `levelcode-hooks trust`: review a project's hooks and the scripts they run, and record the
//! person's answer (contract §13).

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::settings::{Action, Written};
use crate::trust::status::{self, root_key, Layer};
use crate::trust::store::{self, Entry};
use crate::trust::{self, Assessment, State};

#[derive(Debug, Clone, Args)]
pub struct TrustArgs {
    /// The project root [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub project_dir: Option<PathBuf>,

    /// Trust without asking (the review is still printed); for scripts that have reviewed the
    /// hooks some other way.
    #[arg(long, conflicts_with_all = ["status", "deny", "revoke", "digest"])]
    pub yes: bool,

    /// Trust only the hooks whose digest is still this one, as `--status` or a review printed
    /// it; works without a terminal. Repeat it for each file of hooks (each has its own digest).
    #[arg(long, value_name = "sha256:HEX", conflicts_with_all = ["status", "deny", "revoke"])]
    pub digest: Vec<String>,

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
    let personal = status::personal();
    let mut warnings = personal.warnings.clone();
    let layers = status::assess_all(&root, &personal, &mut warnings);
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }
    if args.status {
        return show_status(&root, &layers, &warnings, args.json);
    }
    if let Some(var) = trust::started_by_agent() {
        anyhow::bail!("{}", trust::agent_refusal(var, &root));
    }
    let with_hooks: Vec<&Layer> = layers
        .iter()
        .filter(|l| l.assessment.state != State::NoHooks)
        .collect();
    if with_hooks.is_empty() {
        crate::dispatch::output::write_stdout(&format!(
            "{}: no hooks to run, so nothing to trust\n",
            trust::settings_file(&root).display()
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut digests = Vec::with_capacity(with_hooks.len());
    for layer in &with_hooks {
        let path = layer.assessment.path.display();
        if let Some(reason) = &layer.assessment.untrustable {
            anyhow::bail!("{path}: {reason}");
        }
        let Some(digest) = layer.assessment.digest.as_ref() else {
            anyhow::bail!("{path}: no digest");
        };
        digests.push(digest.digest.as_str());
    }
    if !args.digest.is_empty() {
        if let Some(wanted) = args.digest.iter().find(|d| !digests.contains(&d.as_str())) {
            anyhow::bail!(
                "{}: the hooks' digest is now {}, not {wanted}: they changed since that digest was \
                 shown; review them again with: levelcode-hooks trust --project-dir {}",
                with_hooks[0].assessment.path.display(),
                digests.join(" and "),
                shell_words::quote(&root.to_string_lossy())
            );
        }
        let chosen: Vec<&Layer> = with_hooks
            .iter()
            .copied()
            .filter(|l| {
                l.assessment
                    .digest
                    .as_ref()
                    .is_some_and(|d| args.digest.contains(&d.digest))
            })
            .collect();
        return record_trust(&store_path, &chosen);
    }
    // The review shows the very bytes each digest was computed from.
    let text: String = with_hooks
        .iter()
        .map(|l| review(&l.assessment, &l.bytes))
        .collect::<Vec<_>>()
        .join("\n");
    crate::dispatch::output::write_stdout(&text)?;
    if args.yes {
        return record_trust(&store_path, &with_hooks);
    }
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        let flags: Vec<String> = digests.iter().map(|d| format!("--digest {d}")).collect();
        anyhow::bail!(
            "not asking without a terminal; after reviewing the hooks above, run: \
             levelcode-hooks trust --project-dir {} {}",
            shell_words::quote(&root.to_string_lossy()),
            flags.join(" ")
        );
    }
    let handlers: usize = with_hooks.iter().map(|l| l.assessment.handlers).sum();
    eprint!(
        "Trust these {handlers} handler(s)? They will run with your rights whenever the agent works in this project. [y/N] "
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        record_trust(&store_path, &with_hooks)
    } else {
        eprintln!("Not trusted; nothing recorded.");
        Ok(crate::dispatch::exit::Status::Failure.into())
    }
}

fn show_status(
    root: &Path,
    layers: &[Layer],
    warnings: &[String],
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let overall = status::overall(layers).or(layers.first());
    let state = overall.map_or(State::NoHooks, |l| l.assessment.state);
    let text = if as_json {
        let mut line = status::status_json(root, layers, warnings).to_string();
        line.push('\n');
        line
    } else {
        let mut text = String::new();
        let shown: Vec<&Layer> = match layers
            .iter()
            .filter(|l| l.assessment.state != State::NoHooks)
            .collect::<Vec<_>>()
        {
            none if none.is_empty() => overall.into_iter().collect(),
            some => some,
        };
        for layer in shown {
            let assessment = &layer.assessment;
            text.push_str(&format!(
                "{}  {}\n",
                assessment.state.name(),
                assessment.path.display()
            ));
            if assessment.layer != crate::settings::layers::LayerKind::Project {
                text.push_str(&format!("  layer {}\n", assessment.layer.name()));
            }
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
        }
        if !state.admits() {
            text.push_str(&format!(
                "  review and trust them with: levelcode-hooks trust --project-dir {}\n",
                shell_words::quote(&root.to_string_lossy())
            ));
        }
        text
    };
    crate::dispatch::output::write_stdout(&text)?;
    Ok(ExitCode::from(state.exit_code()))
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
    if assessment.layer != crate::settings::layers::LayerKind::Project {
        let _ = writeln!(out, "  (layer {})", assessment.layer.name());
    }
    for group in trust::all_groups(assessment.layer, &assessment.path, bytes) {
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
            // A background handler runs on after the agent has gone on (contract §21).
            let background = if handler.background {
                "  (async: in the background, not waited for)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  {} {}.hooks[{}]{matcher}{name}{background}{off}",
                group.event,
                group.path(),
                handler.index
            );
            let Action::Process(program) = &handler.action;
            let written = Written::of(program);
            for (field, value) in written.json_members() {
                let value = match value {
                    serde_json::Value::String(text) => text,
                    other => other.to_string(),
                };
                let _ = writeln!(out, "      {field}: {}", shown(&value));
            }
            let hidden = written.texts().any(crate::commands::visible::needs_warning);
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
                assessment
                    .layer
                    .hooks_folder()
                    .unwrap_or(trust::digest::HOOKS_FOLDER)
            );
            for script in folder {
                match &script.via {
                    // Reached through a link: where the folder shows it, and what it is.
                    Some(via) => {
                        let _ = writeln!(
                            out,
                            "  {} -> {}  {}",
                            shown(via),
                            shown(&script.path),
                            script.hash
                        );
                    }
                    None => {
                        let _ = writeln!(out, "  {}  {}", shown(&script.path), script.hash);
                    }
                }
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

fn record_trust(store_path: &Path, layers: &[&Layer]) -> anyhow::Result<ExitCode> {
    for layer in layers {
        let assessment = &layer.assessment;
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
        let whose = match assessment.layer {
            crate::settings::layers::LayerKind::Project => digest.root.display().to_string(),
            other => format!("layer {}, {}", other.name(), assessment.path.display()),
        };
        crate::dispatch::output::write_stdout(&format!(
            "Trusted {} handler(s) of {whose} ({}).\n",
            assessment.handlers, digest.digest
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn record_decision(root: &Path, store_path: &Path, deny: bool) -> anyhow::Result<ExitCode> {
    let canonical = root
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("cannot resolve the project root {}: {e}", root.display()))?;
    let key = root_key(&canonical).map_err(anyhow::Error::msg)?;
    let mut had = false;
    let updated = store::update(store_path, |s| {
        // The project's other layers' entries go either way: a denial covers them all.
        let own = format!("{key}//");
        let before = s.projects.len();
        s.projects.retain(|k, _| !k.starts_with(&own));
        had = s.projects.len() != before;
        if deny {
            s.projects.insert(
                key,
                Entry::Denied {
                    at: Some(crate::fs::now_ms()),
                },
            );
        } else {
            had |= s.projects.remove(&key).is_some();
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
