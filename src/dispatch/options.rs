//! What shapes a dispatch: the options of every subcommand that dispatches (`run`, `test`,
//! `serve`), as flags and as the [`Options`] the pipeline reads.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// The options that shape a dispatch, from `run`'s flags (or a `serve` request).
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub project_dir: Option<PathBuf>,
    pub settings: Vec<PathBuf>,
    pub no_project: bool,
    pub team: Option<String>,
    /// A `serve` request's W3C `traceparent`; `run` reads `TRACEPARENT` (contract §18).
    pub traceparent: Option<String>,
    /// The answer is shown to no one (a client's probe): background results of the session
    /// stay for the next dispatch (contract §21).
    pub hold_background: bool,
    /// The caller writes this call's compliance line itself (levelcode's `logToolCall` through
    /// `@levelcode/hooks`): the dispatch writes none, whatever the team.
    pub caller_records_compliance: bool,
}

impl Options {
    /// The options of a command that reads the settings without dispatching (`list`,
    /// `validate`): where they are, and nothing of a dispatch.
    pub fn reading(
        project_dir: Option<PathBuf>,
        settings: Vec<PathBuf>,
        no_project: bool,
    ) -> Options {
        Options {
            project_dir,
            settings,
            no_project,
            ..Options::default()
        }
    }
}

/// The options of every subcommand that dispatches (`run`, `test`, `serve`).
#[derive(Debug, Clone, Default, Args)]
pub struct DispatchArgs {
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

    /// The caller records this call in the compliance log itself (as `logToolCall` of
    /// @levelcode/hooks does): write no line for it, whatever --team or LEVELCODE_TEAM say.
    #[arg(long)]
    pub caller_records_compliance: bool,

    /// `full` prints every handler's result; `compact` only decision, reason, additionalContext.
    #[arg(long, value_enum, default_value_t = OutputMode::Full, value_name = "MODE")]
    pub output: OutputMode,

    /// Write a readable trace of the dispatch to stderr.
    #[arg(short, long)]
    pub verbose: bool,
}

impl DispatchArgs {
    /// The options that shape a dispatch.
    pub fn options(&self) -> Options {
        Options {
            project_dir: self.project_dir.clone(),
            settings: self.settings.clone(),
            no_project: self.no_project,
            team: self.team.clone(),
            traceparent: None,
            hold_background: false,
            caller_records_compliance: self.caller_records_compliance,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputMode {
    #[default]
    Full,
    Compact,
}
