//! The dispatcher's exit statuses (contract §7), in one place.

use std::process::ExitCode;

/// What the caller acts on: only `Block` stops a tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Proceed with the tool call (0).
    Proceed,
    /// A `PreToolUse` handler blocked the tool call (2).
    Block,
    /// A `PreToolUse` handler asked for a person's approval and none blocked (2, as a block,
    /// so that a caller that knows only block and proceed stays on the safe side).
    Ask,
    /// The dispatcher could not do its job: bad payload, bad arguments (1).
    Failure,
    /// Stopped by signal N (128 + N), after printing the result so far.
    Signal(i32),
}

impl Status {
    pub fn code(self) -> u8 {
        match self {
            Status::Proceed => 0,
            Status::Failure => 1,
            Status::Block | Status::Ask => 2,
            Status::Signal(n) => u8::try_from(128 + n).unwrap_or(u8::MAX),
        }
    }
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> ExitCode {
        ExitCode::from(status.code())
    }
}

/// Returns true if and only if a broken pipe is somewhere in the error's chain: the reader of our
/// output went away, which is not worth a message.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The number an [`ExitCode`] stands for, for an entry point that returns it to the C library
/// itself (std offers no accessor; codes do compare).
pub fn number(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|n| ExitCode::from(*n) == code)
        .unwrap_or(Status::Failure.code())
}
