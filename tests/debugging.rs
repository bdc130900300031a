//! The subcommands for people debugging their hooks (contract §10): `list`, `validate`, `test`,
//! `schema`, `completions`, the execution log with `log` and `stats`, and the `-v` trace.
//!
//! Each test gets a temporary directory holding `home/` (the child's `HOME`) and `project/` (its
//! current directory); every `LEVELCODE_*` variable and the color switches are removed from the
//! child's environment unless the test sets them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

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
    dir: TempDir,
}

impl Default for Env {
    fn default() -> Env {
        Env::new()
    }
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("project")).unwrap();
        Env { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    pub fn project(&self) -> PathBuf {
        self.root().join("project")
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

    /// The binary with `args`, in the project, with a clean environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_levelcode-hooks"));
        cmd.args(args)
            .current_dir(self.project())
            .env("HOME", self.home())
            .stdin(Stdio::null());
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy().into_owned();
            if name.starts_with("LEVELCODE_")
                || matches!(
                    name.as_str(),
                    "NO_COLOR" | "CLICOLOR_FORCE" | "NEXT_PUBLIC_CB_ENVIRONMENT"
                )
            {
                cmd.env_remove(name);
            }
        }
        // Project hooks are trusted for the run, except in the tests about trust.
        cmd.env(crate::common::TRUST, "1");
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
