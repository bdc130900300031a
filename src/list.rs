//! `levelcode-hooks list`: the merged hooks of every layer, and what would run for an event (contract §10).

use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct ListArgs {}

pub fn run(_args: &ListArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not available yet")
}
