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

pub mod cli;
pub mod commands;
pub(crate) mod compliance;
pub mod dispatch;
pub(crate) mod environment;
pub mod runner;
pub(crate) mod serve;
pub(crate) mod signals;
pub(crate) mod style;
