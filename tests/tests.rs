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
mod guards;
#[cfg(unix)]
mod handlers;
#[cfg(unix)]
mod hardening;
#[cfg(unix)]
mod http_hooks;
#[cfg(unix)]
mod if_filters;
#[cfg(unix)]
mod imports;
#[cfg(unix)]
mod io;
#[cfg(unix)]
mod layers;
#[cfg(unix)]
mod managed;
#[cfg(unix)]
mod matching;
#[cfg(unix)]
mod missing_script;
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
#[cfg(target_os = "linux")]
mod sandbox;
#[cfg(unix)]
mod serve;
#[cfg(unix)]
mod shell;
#[cfg(unix)]
mod signals;
#[cfg(unix)]
mod static_build;
#[cfg(unix)]
mod timeouts;
#[cfg(unix)]
mod trust;
