//! What a handler does, as settings write it (contract §4): the data half of a handler's action.
//! How it is done is the pipeline's (`dispatch::action`).

use crate::runner::Program;

/// What a handler does.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Start a process: `command` by the shell, or `argv` (or `command` with `args`) directly
    /// (contract §4, §6, §16).
    Process(Program),
}

impl Action {
    /// The action as people read it: the command, or the argv (or the exec form's program and
    /// arguments) joined as a shell would quote it.
    pub fn text(&self) -> String {
        match self {
            Action::Process(Program::Shell(command) | Program::PowerShell(command)) => {
                command.clone()
            }
            Action::Process(Program::Argv(argv)) => shell_words::join(argv),
            Action::Process(Program::Exec { program, args }) => {
                shell_words::join(std::iter::once(program).chain(args))
            }
        }
    }
}
