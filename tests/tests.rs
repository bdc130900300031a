//! Black-box tests: the real binary, a temporary HOME and project, never the real HOME.

mod common;
mod compliance;
