//! The execution log: one JSON line per dispatch appended to `LEVELCODE_HOOKS_LOG`, and the
//! `log` and `stats` subcommands that read it.

use std::process::ExitCode;

use clap::Args;

use crate::output::Report;

/// Appends the dispatch to the file named by `LEVELCODE_HOOKS_LOG`, if any; a failure is a
/// warning in the report.
pub fn append(_report: &mut Report) {}

#[derive(Debug, Clone, Args)]
pub struct LogArgs {}

pub fn run_log(_args: &LogArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not available yet")
}

#[derive(Debug, Clone, Args)]
pub struct StatsArgs {}

pub fn run_stats(_args: &StatsArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not available yet")
}
