//! Black-box tests: the real binary, a temporary HOME and project, never the real HOME.

mod architecture;
#[cfg(unix)]
mod background;
#[cfg(unix)]
mod claude;
#[cfg(unix)]
mod claude_layers;
mod client_agreement;
mod common;
mod compliance;

mod debugging;
#[cfg(unix)]
mod events;
#[cfg(unix)]
mod faults;
#[cfg(unix)]
mod handlers;
#[cfg(unix)]
mod hardening;
#[cfg(unix)]
mod if_filters;
#[cfg(unix)]
mod io;
#[cfg(unix)]
mod layers;
#[cfg(unix)]
mod managed;
#[cfg(unix)]
mod matching;
#[cfg(unix)]
mod on_failure;
#[cfg(unix)]
mod otel;
#[cfg(unix)]
mod path_rules;
#[cfg(unix)]
mod payload;
mod properties;
#[cfg(unix)]
mod rewriting;
#[cfg(unix)]
mod serve;
#[cfg(unix)]
mod signals;
#[cfg(unix)]
mod static_build;
#[cfg(unix)]
mod timeouts;
#[cfg(unix)]
mod trust;
