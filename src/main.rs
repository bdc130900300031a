//! The `levelcode-hooks` executable: parse the command line, run, map errors to exit statuses.
//! Modules are declared in `src/lib.rs`.

use std::process::ExitCode;

use levelcode_hooks::{cli, exit};

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
