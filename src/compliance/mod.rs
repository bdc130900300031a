//! The signed compliance log of team runs (contract §9).

use std::path::Path;
use std::process::ExitCode;

pub fn is_valid_team(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 50
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub fn append(_data_dir: &Path, _team: &str, _payload: &[u8]) -> Result<(), String> {
    Ok(())
}

#[derive(Debug, clap::Subcommand)]
pub enum ComplianceCommand {
    Verify,
}

pub fn run_command(_cmd: &ComplianceCommand) -> anyhow::Result<ExitCode> {
    Ok(ExitCode::SUCCESS)
}
