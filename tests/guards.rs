//! A person's own guard is never skipped by the `if` filter (docs/hooks.md, "What the filter
//! promises"): for each way round it that a review found, the command that got through really
//! runs the program in a real shell, and the guard now starts for it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::{server, Test};

/// A user-layer guard with `if: rule` that blocks whatever it sees.
fn guard(rule: &str) -> Value {
    json!({"hooks": {"PreToolUse": [{"matcher": "run_terminal_command", "hooks": [
        {"command": "cat > /dev/null; echo guarded >&2; exit 2", "name": "guard", "if": rule}
    ]}]}})
}

fn bash(command: &str) -> Value {
    json!({"event": "PreToolUse", "tool_name": "run_terminal_command",
           "tool_input": {"command": command}})
}

/// The answers of one `serve` to a call of each command, with the guard of `rule`.
fn answers(rule: &str, commands: &[&str]) -> Vec<Value> {
    let calls: Vec<Value> = commands.iter().map(|command| bash(command)).collect();
    server::answers(
        Test::new().user_settings(guard(rule)),
        &server::numbered(&calls),
    )
}

/// Returns true if and only if the guard started for the answer's call (and blocked it).
fn guarded(answer: &Value) -> bool {
    answer["decision"] == "block" && answer["reason"] == "guarded"
}

/// A folder with a `git` that records its arguments, one call a line, in `calls`.
pub struct FakeGit {
    dir: tempfile::TempDir,
}

impl FakeGit {
    pub fn new() -> FakeGit {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let log = dir.path().join("calls");
        let script = format!(
            "#!/bin/sh\nprintf '%s\\n' \"git $*\" >> '{}'\n",
            log.display()
        );
        std::fs::write(bin.join("git"), script).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(bin.join("git"), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
        FakeGit { dir }
    }

    pub fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// What `shell -c command` made `git` do, the fake first on `PATH`.
    pub fn calls(&self, shell: &Path, command: &str) -> Vec<String> {
        let log = self.dir.path().join("calls");
        let _ = std::fs::remove_file(&log);
        let path = format!("{}:/usr/bin:/bin", self.bin().display());
        let _ = Command::new(shell)
            .arg("-c")
            .arg(command)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", &path)
            .env("HOME", self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("the shell runs");
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// The shells a command is run in to show what it does: dash (`/bin/sh` on Debian and Ubuntu)
/// and bash, each where present.
pub fn shells() -> Vec<PathBuf> {
    ["/usr/bin/dash", "/bin/dash", "/usr/bin/bash", "/bin/bash"]
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .fold(Vec::new(), |mut found, p| {
            let name = p.file_name().map(|n| n.to_owned());
            if !found
                .iter()
                .any(|f: &PathBuf| f.file_name().map(|n| n.to_owned()) == name)
            {
                found.push(p);
            }
            found
        })
}

/// Asserts that `command` runs `git push` in every shell present, and that the guard of
/// `Bash(git push*)` starts for it.
fn a_push_is_guarded(commands: &[&str]) {
    let git = FakeGit::new();
    let shells = shells();
    assert!(!shells.is_empty(), "no shell to run the commands in");
    for command in commands {
        for shell in &shells {
            let calls = git.calls(shell, command);
            assert!(
                calls.iter().any(|c| c.starts_with("git push")),
                "{}: {command:?} ran {calls:?}",
                shell.display()
            );
        }
    }
    for (command, answer) in commands.iter().zip(answers("Bash(git push*)", commands)) {
        assert!(guarded(&answer), "{command:?}: {answer}");
    }
}

/// Finding 1: `<<` inside arithmetic was read as a here-document, and the lines after it
/// skipped.
#[test]
fn a_shift_in_arithmetic_hides_no_later_line() {
    a_push_is_guarded(&[
        "echo $((1<<2))\ngit push",
        "n=$(( 8 << 1 ))\ngit push",
        "echo \"$((1 << 2))\" >/dev/null; git push",
    ]);
    // bash's arithmetic command; to dash it is a here-document, which the filter reads too.
    let bash = PathBuf::from("/usr/bin/bash");
    if bash.is_file() {
        let git = FakeGit::new();
        let command = "(( x <<= 1 ))\ngit push";
        assert_eq!(git.calls(&bash, command), ["git push"]);
        assert!(guarded(&answers("Bash(git push*)", &[command])[0]));
    }
}

/// Finding 2: a backslash-newline ended a word where the shell removes it, and a `#` after it
/// began a comment that hid a quote.
#[test]
fn a_backslash_newline_joins_a_word_as_the_shell_does() {
    a_push_is_guarded(&[
        "git pu\\\nsh",
        "git \\\npush",
        "echo x\\\n#'\n'; git push #'",
    ]);
}

/// Finding 3: a carriage return was taken for a blank, so a `#` after it began a comment that
/// hid a quote, and the next line's `git push` looked quoted.
#[test]
fn a_carriage_return_is_part_of_its_word() {
    a_push_is_guarded(&["echo x\r#'\n'; git push #'", "true\r;git push"]);
}

/// Finding 11: fourteen spellings of the same push got through `Bash(git push*)`. Twelve are
/// `git push` itself to the shell (a wrapper in front, the word quoted or escaped, the program
/// by its path) or hide it where the filter cannot see (`eval`, a shell given a string, a
/// substitution or a variable as the command word): the guard starts for each, and for those it
/// cannot see through its entry and the warnings say why.
#[test]
fn every_spelling_of_a_push_starts_the_guard() {
    let git = FakeGit::new();
    let fake = git.bin().join("git");
    let by_path = format!("{} push", fake.display());
    let spellings: Vec<(&str, String)> = vec![
        ("env git push", "env git push".into()),
        ("command git push", "command git push".into()),
        ("exec git push", "exec git push".into()),
        ("eval git push", "eval git push".into()),
        ("\\git push", "\\git push".into()),
        ("'git' push", "'git' push".into()),
        ("g\"\"it push", "g\"\"it push".into()),
        ("bash -c \"git push\"", "bash -c \"git push\"".into()),
        ("sh <<EOF\ngit push\nEOF", "sh <<EOF\ngit push\nEOF".into()),
        ("$(echo git) push", "$(echo git) push".into()),
        ("x=git; $x push", "x=git; $x push".into()),
        // The fake's own path stands for /usr/bin/git when the shell runs it.
        ("/usr/bin/git push", by_path),
    ];
    for shell in shells() {
        for (_, run) in &spellings {
            let calls = git.calls(&shell, run);
            assert_eq!(calls, ["git push"], "{}: {run:?}", shell.display());
        }
    }
    let commands: Vec<&str> = spellings.iter().map(|(c, _)| *c).collect();
    let answers = answers("Bash(git push*)", &commands);
    for (command, answer) in commands.iter().zip(&answers) {
        assert!(guarded(answer), "{command:?}: {answer}");
    }
    // Where the filter cannot see what runs, it says so.
    for (command, why) in [
        ("eval git push", "eval runs its words"),
        ("bash -c \"git push\"", "bash -c runs its text"),
        ("sh <<EOF\ngit push\nEOF", "a here-document fed to it"),
        ("$(echo git) push", "what a substitution prints"),
        ("x=git; $x push", "a variable's value"),
    ] {
        let at = commands.iter().position(|c| *c == command).unwrap();
        let answer = &answers[at];
        let warnings = answer["warnings"].to_string();
        assert!(
            warnings.contains("cannot see what the command runs") && warnings.contains(why),
            "{command:?}: {warnings}"
        );
        let message = answer["handlers"][0]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(message.contains(why), "{command:?}: {answer}");
    }
}

/// `git -C . push` and `git --no-pager push` push too, but are other commands to a pattern, as
/// they are to Claude Code: `git push*` does not match them (docs/hooks.md says so). A guard
/// that must catch them says so in its rule: `Bash(git *push*)`, or a second `if`.
#[test]
fn git_options_before_the_subcommand_make_another_command_as_documented() {
    let git = FakeGit::new();
    let forms = ["git -C . push", "git --no-pager push"];
    for shell in shells() {
        for form in forms {
            let calls = git.calls(&shell, form);
            assert_eq!(calls, [form], "{}: {form:?}", shell.display());
        }
    }
    for answer in answers("Bash(git push*)", &forms) {
        assert!(!guarded(&answer), "{answer}");
        assert_eq!(answer["handlers"], json!([]), "{answer}");
    }
    for answer in answers("Bash(git *push*)", &forms) {
        assert!(guarded(&answer), "{answer}");
    }
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/hooks.md"))
        .unwrap();
    assert!(
        docs.contains("`git -C . push`") && docs.contains("`Bash(git *push*)`"),
        "docs/hooks.md documents the forms that stay other commands"
    );
}

mod property;
