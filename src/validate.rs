//! `levelcode-hooks validate`: every problem of every layer, for people and CI (contract §10).

use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {}

pub fn run(_args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not available yet")
}
