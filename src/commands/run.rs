//! `levelcode-hooks run`, the default subcommand: one payload on stdin, one decision on stdout,
//! with the exit status the caller acts on.

use std::process::ExitCode;
use std::time::Instant;

use clap::Args;

use crate::dispatch::output::{self, Report, Trace};
use crate::dispatch::payload::{self, Payload, ReadError};
use crate::dispatch::{dispatch, DispatchArgs};
use crate::signals;

/// Options of `run`, also accepted without the subcommand's name.
#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// The event, when the payload has none (a payload's own event must agree).
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,

    #[command(flatten)]
    pub dispatch: DispatchArgs,
}

/// `levelcode-hooks run`: stdin to stdout, with the exit status the caller acts on.
pub fn exec(args: &RunArgs) -> anyhow::Result<ExitCode> {
    signals::install();
    let started = Instant::now();
    let trace = Trace::new(args.dispatch.verbose);
    let bytes = match payload::read_stdin(terminal_hint) {
        Ok(bytes) => bytes,
        Err(ReadError::Interrupted(sig)) => {
            let mut report = Report::new(args.event.clone(), None, started);
            report.interrupted = Some(sig);
            report.warnings.push(format!(
                "interrupted by {} while reading the payload; no handler ran",
                signals::name(sig)
            ));
            return output::print_report(&report, args.dispatch.output, &trace);
        }
        Err(ReadError::Invalid(message)) => return output::print_error(&message),
    };
    let payload = match Payload::parse(bytes, args.event.as_deref()) {
        Ok(payload) => payload,
        Err(message) => return output::print_error(&message),
    };
    let report = dispatch(&payload, &args.dispatch.options(), &trace, started);
    let printed = output::print_report(&report, args.dispatch.output, &trace);
    // The background handlers it started, once its answer is out (contract §21); with the
    // answer written, the dispatcher may end at once, with its status, and leave them to a
    // process of their own.
    let code = printed
        .as_ref()
        .ok()
        .map(|code| crate::dispatch::exit::number(*code));
    crate::dispatch::background::launch(code);
    printed
}

/// What a person who ran the dispatcher at a terminal is told before it waits for them: it reads
/// a payload, how to end it, and the command that builds one from flags.
fn terminal_hint() {
    eprintln!(
        "levelcode-hooks: reading a payload (one JSON object) from stdin; type or paste it and end with Ctrl-D, or press Ctrl-C. To build one from flags: levelcode-hooks test --event PreToolUse --tool write_file; all commands: levelcode-hooks --help"
    );
}
