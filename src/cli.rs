//! The command line: what each subcommand accepts, and the glue from arguments to work.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::commands::run::RunArgs;
use crate::compliance;
use crate::dispatch::OutputMode;

/// Runs the levelcode hooks configured for one agent event and prints one decision.
///
/// Reads the event payload (JSON) on stdin, merges the `hooks` of the user, data and project
/// settings.json layers, runs the matching handlers one after another, and prints one JSON object.
/// Exit status: 0 proceed, 2 block (reason also on stderr), 1 the dispatcher could not do its job,
/// 128+N stopped by signal N.
#[derive(Debug, Parser)]
#[command(
    name = "levelcode-hooks",
    version,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Dispatch the event payload read on stdin (the default subcommand).
    Run(RunArgs),
    /// Show every hook of the merged layers, and what would run for an event and tool.
    List(crate::commands::list::ListArgs),
    /// Check every settings layer for problems; exit 1 when anything is wrong.
    Validate(crate::commands::validate::ValidateArgs),
    /// Build a payload from flags and dispatch it as `run` would (or only show what would run).
    Test(crate::commands::test::TestArgs),
    /// Print the JSON Schema of settings.json's `hooks`.
    Schema(crate::commands::schema::SchemaArgs),
    /// Show the recent entries of the execution log (LEVELCODE_HOOKS_LOG).
    Log(crate::commands::log::LogArgs),
    /// Summarise the execution log per handler: runs, blocks, errors, timeouts, times.
    Stats(crate::commands::log::StatsArgs),
    /// Serve many events: one JSON payload per line on stdin, one result per line on stdout.
    Serve(crate::serve::ServeArgs),
    /// The signed compliance log of team runs.
    #[command(subcommand)]
    Compliance(compliance::ComplianceCommand),
    /// Review a project's hooks and the scripts they run, and trust them (or deny them).
    Trust(crate::commands::trust::TrustArgs),
    /// Print a shell completion script.
    Completions(crate::commands::completions::CompletionsArgs),
    /// Read another agent's hook settings (Claude Code's) and print them as levelcode settings.
    Import(crate::commands::import::ImportArgs),
    /// Keeps one background handler for the dispatch that started it (contract §21); its spec
    /// comes on stdin. Not for people: hidden from the help, the completions and the man page.
    #[command(hide = true)]
    Background,
    /// Show what this system can enforce of a handler's "sandbox" (Landlock, seccomp).
    Sandbox(crate::commands::sandbox::SandboxArgs),
}

/// Parses the command line. Help and version print as usual; any other mistake prints
/// `{"error": ...}` on stdout (callers read one JSON object on every path) and its explanation on
/// stderr, and exits 1, never clap's 2, which callers would read as a block.
pub fn parse() -> Cli {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    // A background handler's supervisor, started by a dispatch: no command tree to build.
    if args.len() == 1 && args[0] == crate::dispatch::background::process::COMMAND {
        return Cli {
            command: Some(Command::Background),
            run: RunArgs::default(),
        };
    }
    if let Some(run) = parse_run_fast(&args) {
        return Cli { command: None, run };
    }
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => err.exit(),
        Err(err) => {
            let rendered = err.render().to_string();
            let first = rendered
                .lines()
                .find(|line| !line.trim().is_empty())
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ")
                .to_string();
            let _ = crate::dispatch::output::write_line(&crate::dispatch::output::error_json(
                &format!("arguments: {first}; see levelcode-hooks --help"),
            ));
            eprint!("{rendered}");
            std::process::exit(i32::from(crate::dispatch::exit::Status::Failure.code()));
        }
    }
}

/// `run`'s own flags, parsed by hand. The dispatcher starts on every tool call, and building
/// clap's whole command tree (every subcommand and its help) costs more than the rest of a
/// dispatch that matches no hook. Anything this does not recognise, including a value that looks
/// like a flag, is left to clap, so help, errors and the other subcommands behave as before.
pub fn parse_run_fast(args: &[OsString]) -> Option<RunArgs> {
    let mut run = RunArgs::default();
    let mut output_given = false;
    let mut rest = args.iter();
    let mut pending = rest.next();
    if pending.is_some_and(|a| a == "run") {
        pending = rest.next();
    }
    while let Some(arg) = pending {
        let arg = arg.to_str()?;
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value)),
            _ => (arg, None),
        };
        match (flag, inline) {
            ("--no-project", None) if !run.dispatch.no_project => run.dispatch.no_project = true,
            ("-v" | "--verbose", None) if !run.dispatch.verbose => run.dispatch.verbose = true,
            ("--caller-records-compliance", None) if !run.dispatch.caller_records_compliance => {
                run.dispatch.caller_records_compliance = true;
            }
            ("--event" | "--team" | "--output" | "--project-dir" | "--settings", _) => {
                let text: OsString = match inline {
                    Some(v) => OsString::from(v),
                    None => rest
                        .next()
                        .filter(|v| !v.to_str().is_some_and(|v| v.starts_with('-')))?
                        .clone(),
                };
                // A flag given twice is clap's error to report.
                let once = |given: bool| (!given).then_some(());
                match flag {
                    "--event" => {
                        once(run.event.is_some())?;
                        run.event = Some(text.into_string().ok()?);
                    }
                    "--team" => {
                        once(run.dispatch.team.is_some())?;
                        run.dispatch.team = Some(text.into_string().ok()?);
                    }
                    "--output" => {
                        once(output_given)?;
                        output_given = true;
                        run.dispatch.output = match text.to_str()? {
                            "full" => OutputMode::Full,
                            "compact" => OutputMode::Compact,
                            _ => return None,
                        }
                    }
                    "--project-dir" => {
                        once(run.dispatch.project_dir.is_some())?;
                        run.dispatch.project_dir = Some(PathBuf::from(text));
                    }
                    _ => run.dispatch.settings.push(PathBuf::from(text)),
                }
            }
            _ => return None,
        }
        pending = rest.next();
    }
    Some(run)
}

/// The man page, `docs/levelcode-hooks.1`.
pub fn man_page() -> String {
    crate::commands::completions::man_page(Cli::command())
}

pub fn execute(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        None => crate::commands::run::exec(&cli.run),
        Some(Command::Run(args)) => crate::commands::run::exec(&args),
        Some(Command::List(args)) => crate::commands::list::run(&args),
        Some(Command::Validate(args)) => crate::commands::validate::run(&args),
        Some(Command::Test(args)) => crate::commands::test::run(&args),
        Some(Command::Schema(args)) => crate::commands::schema::run(&args),
        Some(Command::Log(args)) => crate::commands::log::run_log(&args),
        Some(Command::Stats(args)) => crate::commands::log::run_stats(&args),
        Some(Command::Serve(args)) => crate::serve::run(&args),
        Some(Command::Compliance(cmd)) => compliance::run_command(&cmd),
        Some(Command::Trust(args)) => crate::commands::trust::run(&args),
        Some(Command::Completions(args)) => {
            crate::commands::completions::run(&args, Cli::command())
        }
        Some(Command::Import(args)) => crate::commands::import::run(&args),
        Some(Command::Background) => crate::dispatch::background::supervise(),
        Some(Command::Sandbox(args)) => crate::commands::sandbox::run(&args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand parser and clap agree on every command line the hand parser accepts, and leave
    /// the rest to clap.
    #[test]
    fn fast_path_agrees_with_clap() {
        let accepted: &[&[&str]] = &[
            &[],
            &["run"],
            &["-v"],
            &["run", "--event", "Stop", "--no-project", "--verbose"],
            &[
                "--settings",
                "a.json",
                "--settings=b.json",
                "--project-dir",
                "p",
            ],
            &["--output", "compact", "--team=t1", "--event=PreToolUse"],
            &["run", "--output=full", "--project-dir=x y"],
        ];
        for args in accepted {
            let os: Vec<OsString> = args.iter().map(OsString::from).collect();
            let fast = parse_run_fast(&os).unwrap_or_else(|| panic!("{args:?} not accepted"));
            let clap =
                Cli::try_parse_from(std::iter::once("levelcode-hooks").chain(args.iter().copied()))
                    .unwrap();
            let slow = match clap.command {
                Some(Command::Run(run)) => run,
                None => clap.run,
                Some(other) => panic!("{other:?}"),
            };
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{args:?}");
        }
        let refused: &[&[&str]] = &[
            &["--help"],
            &["-h"],
            &["--version"],
            &["list"],
            &["run", "list"],
            &["--output", "weird"],
            &["--event"],
            &["--event", "--no-project"],
            &["--event", "a", "--event", "b"],
            &["-vv"],
            &["--no-such-flag"],
            &["--no-project=1"],
        ];
        for args in refused {
            let os: Vec<OsString> = args.iter().map(OsString::from).collect();
            assert!(parse_run_fast(&os).is_none(), "{args:?} should go to clap");
        }
    }
}
