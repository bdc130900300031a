//! The shell lexer (`levelcode_hooks::shell`) against real shells: every command a case runs,
//! with the words each receives, as dash (`/bin/sh`'s reading) and bash print them, compared
//! with the lexer's reading in the same dialect. A table of hand-written cases, and generated
//! ones; each shell runs a whole batch in one process.

mod cases;
mod generated;
mod harness;
