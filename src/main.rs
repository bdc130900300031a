//! `levelcode-hooks`: the hook dispatcher of the levelcode coding agent.
//!
//! The modules follow the data as it flows through one dispatch:
//! [`payload`] (stdin) → [`layers`] (which settings files) → [`settings`] (their `hooks`) →
//! [`matcher`] (which groups apply) → [`runner`] (one handler process, its timeout and output) →
//! [`outcome`] (what one handler decided) → [`dispatch`] (the chain) → [`output`] (the JSON the
//! caller reads) → [`exit`] (the status it acts on). [`signals`] lets all of them notice
//! SIGINT, SIGTERM and SIGHUP.

mod capture;
mod cli;
mod completions;
mod compliance;
mod dispatch;
mod environment;
mod exec_log;
mod exit;
mod layers;
mod list;
mod matcher;
mod outcome;
mod output;
mod payload;
mod runner;
mod schema;
mod serve;
mod settings;
mod signals;
mod test_event;
mod validate;

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::parse();
    match cli::execute(cli) {
        Ok(code) => code,
        Err(err) => {
            if exit::is_broken_pipe(&err) {
                return exit::Status::Failure.into();
            }
            eprintln!("levelcode-hooks: {err:#}");
            exit::Status::Failure.into()
        }
    }
}
