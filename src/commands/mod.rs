//! The commands for people: each file owns its arguments and its entry point.

pub mod command_check;
pub mod completions;
pub mod http_check;
pub mod import;
pub mod inspect;
pub mod list;
pub mod log;
pub mod run;
pub mod sandbox;
pub mod schema;
pub mod suggest;
pub mod test;
pub mod tools;
pub mod trust;
pub mod validate;
pub mod visible;
