//! `levelcode-hooks schema`: the JSON Schema of settings.json's `hooks` (contract §10).

use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct SchemaArgs {}

pub fn run(_args: &SchemaArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not available yet")
}
