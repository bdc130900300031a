//! The subcommands for people debugging their hooks (contract §10): `list`, `validate`, `test`,
//! `schema`, `completions`, the execution log with `log` and `stats`, and the `-v` trace.
//!
//! Each test gets the harness's sandbox (`tests/common/sandbox.rs`): a temporary directory
//! holding `home/` (the child's `HOME`) and `project/` (its current directory), with the
//! variables the dispatcher reads and the color switches removed from the child's environment
//! unless the test sets them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common::Sandbox;

#[path = "debugging/docs.rs"]
mod docs;
#[path = "debugging/exec_log.rs"]
mod exec_log;
#[path = "debugging/list.rs"]
mod list;
#[path = "debugging/test_command.rs"]
mod test_command;
#[path = "debugging/validate.rs"]
mod validate;

/// A temporary home and project, and the real binary run against them.
pub struct Env {
    sandbox: Sandbox,
}

impl Default for Env {
    fn default() -> Env {
        Env::new()
    }
}

impl Env {
    pub fn new() -> Env {
        Env {
            sandbox: Sandbox::new(),
        }
    }

    fn root(&self) -> &Path {
        self.sandbox.root()
    }

    pub fn home(&self) -> PathBuf {
        self.sandbox.home()
    }

    pub fn project(&self) -> PathBuf {
        self.sandbox.project()
    }

    /// A path in the temporary directory, outside both home and project.
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.root().join(name)
    }

    /// Writes `contents` at `path`, creating its folders.
    pub fn write(&self, path: &Path, contents: &str) -> &Env {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, contents).unwrap();
        self
    }

    pub fn project_settings(&self, json: &str) -> &Env {
        self.write(
            &self.project().join(".levelcode").join("settings.json"),
            json,
        )
    }

    pub fn user_settings(&self, json: &str) -> &Env {
        self.write(
            &self
                .home()
                .join(".config")
                .join("levelcode")
                .join("settings.json"),
            json,
        )
    }

    /// The binary with `args`, in the project, with a clean environment; project hooks are
    /// trusted for the run, except in the tests about trust.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.sandbox.command();
        cmd.args(args).stdin(Stdio::null());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Out {
        Out::from(self.command(args).output().unwrap())
    }

    /// Runs with extra environment variables.
    pub fn run_env(&self, args: &[&str], vars: &[(&str, &str)]) -> Out {
        let mut cmd = self.command(args);
        for (name, value) in vars {
            cmd.env(name, value);
        }
        Out::from(cmd.output().unwrap())
    }

    /// Runs with `stdin` as standard input.
    pub fn run_stdin(&self, args: &[&str], vars: &[(&str, &str)], stdin: &str) -> Out {
        use std::io::Write;
        let mut cmd = self.command(args);
        for (name, value) in vars {
            cmd.env(name, value);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        Out::from(child.wait_with_output().unwrap())
    }
}

/// What one run printed, and its exit status.
pub struct Out {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Out {
    fn from(output: Output) -> Out {
        Out {
            status: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Out {
    /// Stdout as one JSON value.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Asserts the exit status, showing the output when it differs.
    pub fn status(&self, expected: i32) -> &Out {
        assert_eq!(
            self.status, expected,
            "exit status\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// The values of `key` in each object of `array`.
pub fn column<'a>(array: &'a Value, key: &str) -> Vec<&'a Value> {
    array
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {array}"))
        .iter()
        .map(|item| &item[key])
        .collect()
}

/// The string values of `key` in each object of `array`.
pub fn strings<'a>(array: &'a Value, key: &str) -> Vec<&'a str> {
    column(array, key)
        .into_iter()
        .map(|v| v.as_str().unwrap_or(""))
        .collect()
}
