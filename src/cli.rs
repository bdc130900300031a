//! The command line: what each subcommand accepts, and the glue from arguments to work.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::compliance;
use crate::dispatch;

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
    /// The signed compliance log of team runs.
    #[command(subcommand)]
    Compliance(compliance::ComplianceCommand),
}

/// Options of `run`, also accepted without the subcommand's name.
#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// The event, when the payload has none (a payload's own event must agree).
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,

    /// The project root [default: the payload's cwd, else the current directory].
    #[arg(long, value_name = "DIR")]
    pub project_dir: Option<PathBuf>,

    /// Use exactly these settings files, in this order, instead of the three standard layers.
    #[arg(long = "settings", value_name = "FILE")]
    pub settings: Vec<PathBuf>,

    /// Skip the project layer (also LEVELCODE_HOOKS_NO_PROJECT=1).
    #[arg(long)]
    pub no_project: bool,

    /// The team whose compliance log records PostToolUse events.
    #[arg(long, value_name = "NAME")]
    pub team: Option<String>,

    /// `full` prints every handler's result; `compact` only decision, reason, additionalContext.
    #[arg(long, value_enum, default_value_t = OutputMode::Full, value_name = "MODE")]
    pub output: OutputMode,

    /// Write a readable trace of the dispatch to stderr.
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputMode {
    #[default]
    Full,
    Compact,
}

pub fn parse() -> Cli {
    Cli::parse()
}

pub fn execute(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        None => dispatch::run_command(&cli.run),
        Some(Command::Run(args)) => dispatch::run_command(&args),
        Some(Command::Compliance(cmd)) => compliance::run_command(&cmd),
    }
}
