//! `levelcode-hooks serve`: one dispatcher for many events, one JSON request and answer per line.

use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {}

pub fn run(_args: &ServeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not available yet")
}
