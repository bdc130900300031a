//! `levelcode-hooks completions SHELL`: shell completion scripts from the CLI definition.

use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {}

pub fn run(_args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not available yet")
}
