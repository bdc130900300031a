//! `levelcode-hooks`: the hook dispatcher of the levelcode coding agent.
//!
//! The modules follow the data as it flows through one dispatch:
//! [`payload`] (stdin) → [`layers`] (which settings files) → [`settings`] (their `hooks`) →
//! [`matcher`] (which groups apply) → [`runner`] (one handler process, its timeout and output) →
//! [`outcome`] (what one handler decided) → [`dispatch`] (the chain) → [`output`] (the JSON the
//! caller reads) → [`exit`] (the status it acts on). [`signals`] lets all of them notice
//! SIGINT, SIGTERM and SIGHUP.
//!
//! The binary (`src/main.rs`) only parses the command line and calls [`cli::execute`]; everything
//! else lives here, so tests and fuzz targets reach the same code.

pub mod capture;
pub mod cli;
pub mod command_check;
pub mod completions;
pub mod compliance;
pub mod dispatch;
pub mod environment;
pub mod exec_log;
pub mod exit;
pub mod handler_input;
pub mod import;
pub mod inspect;
pub mod layers;
pub mod list;
pub mod matcher;
pub mod outcome;
pub mod output;
pub mod payload;
pub mod protocol;
pub mod runner;
pub mod schema;
pub mod serve;
pub mod session_env;
pub mod settings;
pub mod signals;
pub mod style;
pub mod suggest;
pub mod test_event;
pub mod tools;
pub mod validate;
