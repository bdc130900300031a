//! `levelcode-hooks test`: builds a payload from flags and dispatches it as `run` would (contract §10).

use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct TestArgs {}

pub fn run(_args: &TestArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not available yet")
}
