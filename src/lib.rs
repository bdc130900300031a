//! `levelcode-hooks`: the hook dispatcher of the levelcode coding agent.
//!
//! Where things are (docs/ARCHITECTURE.md): [`settings`] is the settings model (layers, hooks,
//! events, matchers, filters); [`shell`] reads a command line as the shell does, for the filters,
//! trust and `validate`; [`trust`] decides which project layers run; [`dispatch`] is the
//! pipeline of one dispatch, from the payload on stdin to the exit status; [`runner`] runs one handler process; [`commands`]
//! are the commands for people; `serve` is the long-lived mode and `compliance` the signed log
//! of team runs, `telemetry` the OpenTelemetry export and `http` the one HTTP client that http
//! handlers and the export post through. `environment`, `fs`, `lock`, `signals`, `style` and
//! `bytes` (byte searches that ask the processor nothing) serve all of them.
//!
//! The binary (`src/main.rs`) only parses the command line and calls [`cli::execute`]; everything
//! else lives here, so tests and fuzz targets reach the same code.

pub(crate) mod bytes;
pub mod cli;
pub mod commands;
pub(crate) mod compliance;
pub mod dispatch;
pub mod environment;
pub(crate) mod fs;
pub(crate) mod http;
pub(crate) mod lock;
pub mod runner;
pub(crate) mod serve;
pub mod settings;
pub mod shell;
pub(crate) mod signals;
pub(crate) mod style;
pub(crate) mod telemetry;
pub mod trust;
