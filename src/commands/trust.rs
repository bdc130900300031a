//! `levelcode-hooks trust`: review a project's hooks and the scripts they run, and record the
//! person's answer (contract §13).

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::settings::Written;
use crate::trust::reviewed::{self, Reviewed};
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

    /// After the review, print the text of every file it covers (on a terminal, the review
    /// offers them in a pager instead).
    #[arg(long, conflicts_with_all = ["status", "deny", "revoke"])]
    pub show_scripts: bool,
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
    let mut text: String = with_hooks
        .iter()
        .map(|l| review(&l.assessment, &l.bytes, Some(&store_path)))
        .collect::<Vec<_>>()
        .join("\n");
    let scripts = scripts_text(&with_hooks);
    if args.show_scripts {
        text.push_str(&scripts);
    }
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
    // The scripts' text is offered in the question itself, so that a plain answer stays one.
    let offer = !args.show_scripts && !scripts.is_empty();
    let mut answer = String::new();
    loop {
        let choices = if offer {
            "[y/N] (or s: show the files' text first)"
        } else {
            "[y/N]"
        };
        eprint!(
            "Trust these {handlers} handler(s)? They will run with your rights whenever the agent works in this project. {choices} "
        );
        let _ = std::io::stderr().flush();
        answer.clear();
        std::io::stdin().lock().read_line(&mut answer)?;
        if offer && matches!(answer.trim().to_ascii_lowercase().as_str(), "s" | "show") {
            page(&scripts)?;
            continue;
        }
        break;
    }
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

/// What the person is asked to trust: each handler with where it is written, what it runs and
/// every other field that changes what runs, each covered file with its hash, and, when these
/// hooks changed since they were trusted and the store at `store_path` kept what was reviewed
/// then, what changed, handler by handler and file by file.
pub fn review(assessment: &Assessment, bytes: &[u8], store_path: Option<&Path>) -> String {
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
    let raw = match &assessment.digest {
        Some(digest) => Reviewed::of(bytes, digest),
        None => Reviewed::default(),
    };
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
            let written = Written::of_action(&handler.action);
            for (field, value) in written.json_members() {
                let value = match value {
                    serde_json::Value::String(text) => text,
                    other => other.to_string(),
                };
                let _ = writeln!(out, "      {field}: {}", shown(&value));
            }
            // Every other field that changes what runs, as written (the group's first).
            if let Some(fields) =
                raw.handlers
                    .get(&format!("{}.hooks[{}]", group.path(), handler.index))
            {
                for (field, value) in fields {
                    if SHOWN_ABOVE.contains(&field.as_str()) {
                        continue;
                    }
                    let value = match value {
                        serde_json::Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    let _ = writeln!(out, "      {field}: {}", shown(&value));
                }
            }
            // What it may do is part of what is trusted (contract §20).
            let _ = writeln!(out, "      sandbox: {}", shown(&handler.sandbox.describe()));
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
        if !digest.readings.is_empty() {
            let _ = writeln!(
                out,
                "Words that /bin/sh and bash read differently (every reading is covered):"
            );
            for reading in &digest.readings {
                let _ = writeln!(out, "  {}", shown(reading));
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
    if let (Some(before), Some(store_path)) = (&assessment.trusted_digest, store_path) {
        match reviewed::load(store_path, before) {
            Some(then) => {
                let changes = raw.changes_since(&then);
                let _ = writeln!(out, "Changed since you trusted {before}:");
                if changes.is_empty() {
                    let _ = writeln!(
                        out,
                        "  nothing in the hooks or their files (the project moved, or its root \
                         resolves elsewhere)"
                    );
                }
                for change in changes {
                    let _ = writeln!(out, "  {}", shown(&change));
                }
            }
            None => {
                let _ = writeln!(
                    out,
                    "Changed since you trusted {before}; what was reviewed then was not kept, so \
                     review everything above."
                );
            }
        }
    }
    out
}

/// The fields the review shows in their own places: the group's matcher and the handler's name
/// on its first line, and its program (`Written`) below it.
const SHOWN_ABOVE: &[&str] = &["group.matcher", "name", "command", "args", "argv", "shell"];

/// The text of every file the layers' digests cover, each under its path, control and invisible
/// characters shown escaped; each at most 64 KiB.
fn scripts_text(layers: &[&Layer]) -> String {
    use std::fmt::Write as _;
    const MAX: u64 = 64 << 10;
    let mut out = String::new();
    for layer in layers {
        let Some(digest) = &layer.assessment.digest else {
            continue;
        };
        for script in &digest.scripts {
            let path = digest.root.join(&script.path);
            let _ = writeln!(
                out,
                "\n==> {} <==",
                crate::commands::visible::escape(&script.path)
            );
            let text = crate::fs::open_regular(&path, std::fs::OpenOptions::new().read(true))
                .and_then(|mut file| {
                    let len = file.metadata()?.len();
                    let cut = len > MAX;
                    let bytes = crate::fs::read_expected(&mut file, len.min(MAX), MAX)?;
                    Ok((bytes, cut))
                });
            match text {
                Ok((bytes, cut)) => {
                    let text = String::from_utf8_lossy(&bytes);
                    let _ = write!(out, "{}", crate::commands::visible::escape_text(&text));
                    if !text.ends_with('\n') {
                        out.push('\n');
                    }
                    if cut {
                        let _ = writeln!(out, "[cut at {} KiB]", MAX >> 10);
                    }
                }
                Err(e) => {
                    let _ = writeln!(out, "[could not be read: {e}]");
                }
            }
        }
    }
    out
}

/// Shows the covered files' text in a pager (`$PAGER`, else `less`), or plainly when there is
/// none to be had.
fn page(scripts: &str) -> anyhow::Result<()> {
    let pager = crate::environment::pager().unwrap_or_else(|| "less".to_string());
    let words = shell_words::split(&pager).unwrap_or_else(|_| vec![pager.clone()]);
    let shown = words.split_first().and_then(|(program, args)| {
        let mut child = std::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .ok()?;
        let mut stdin = child.stdin.take()?;
        let _ = stdin.write_all(scripts.as_bytes());
        drop(stdin);
        child.wait().ok()
    });
    if shown.is_none() {
        // No pager to be had: the text itself.
        crate::dispatch::output::write_stdout(scripts)?;
    }
    Ok(())
}

fn record_trust(store_path: &Path, layers: &[&Layer]) -> anyhow::Result<ExitCode> {
    for layer in layers {
        let assessment = &layer.assessment;
        let Some(digest) = &assessment.digest else {
            anyhow::bail!("no digest to record");
        };
        let mut warnings = Vec::new();
        let updated =
            status::record(store_path, layer, &mut warnings).map_err(anyhow::Error::msg)?;
        for warning in warnings {
            eprintln!("warning: {warning}");
        }
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
