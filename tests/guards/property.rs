//! The filter's promise on generated commands: when it says a command does not match, no
//! program the real shell runs for it matches the pattern. Each command line runs in dash and
//! in bash with recording stand-ins for `git` and `ls` first on `PATH` (and in the home
//! directory's `bin/`), so whatever starts them (a wrapper, `eval`, a shell given a string,
//! `xargs`) is seen; what they record, the program's name and its words joined by one space, is
//! what a pattern is tested against.

use std::path::Path;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use serde_json::json;

use levelcode_hooks::settings::filter::{Call, CommandPattern, Filter, Verdict};

const RECORD: char = '\u{1e}';
const WORD: char = '\u{1f}';

/// Recording stand-ins for `git` and `ls`, on `PATH` and in the home directory's `bin/`.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        for bin in ["bin", "home/bin"] {
            let bin = dir.path().join(bin);
            std::fs::create_dir_all(&bin).unwrap();
            for name in ["git", "ls"] {
                // One write of a whole record: the case that started it (the file its
                // descriptor 7 names, which `env -i`, `exec` and a job left running keep), its
                // name and its words.
                let script = "#!/bin/sh\ncase=$(readlink /proc/$$/fd/7)\nprintf '%s\\037' \"${case##*.}\" \"${0##*/}\" \"$@\" \"$(printf '\\036')\" >&9\n";
                std::fs::write(bin.join(name), script).unwrap();
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755))
                    .unwrap();
            }
        }
        World { dir }
    }

    fn fake(&self) -> String {
        self.dir.path().join("bin").display().to_string()
    }

    /// What each case started, in `shell`: each program's name and words, joined by a space.
    /// The records come through a pipe read to its end, which comes only once every process
    /// that could write one has ended, a job a case left in the background (`bash -c git &
    /// exec git` never reaches its `wait`) included; each says which case started it.
    fn run(&self, shell: &Path, cases: &[String]) -> Vec<Vec<String>> {
        let mut script = String::new();
        for (i, case) in cases.iter().enumerate() {
            let quoted = case.replace('\'', r"'\''");
            let mark = self.dir.path().join(format!("case.{i}"));
            std::fs::write(&mark, "").unwrap();
            script.push_str(&format!(
                "(exec 7<'{}'; eval '{quoted}'\nwait) </dev/null >/dev/null 2>&1\n",
                mark.display()
            ));
        }
        let script_path = self.dir.path().join("script.sh");
        std::fs::write(&script_path, script).unwrap();
        let out = Command::new(shell)
            .arg("-c")
            .arg(format!(
                "exec 9>&1 >/dev/null; . '{}'",
                script_path.display()
            ))
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", self.fake()))
            .env("HOME", self.dir.path().join("home"))
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.code().is_some());
        let text = String::from_utf8(out.stdout).unwrap();
        let mut ran = vec![Vec::new(); cases.len()];
        for (k, record) in text.split(RECORD).enumerate() {
            let record = if k > 0 {
                record.strip_prefix(WORD).unwrap_or(record)
            } else {
                record
            };
            let mut words: Vec<&str> = record.split(WORD).collect();
            words.pop();
            let Some((case, words)) = words.split_first() else {
                continue;
            };
            let i: usize = case
                .parse()
                .unwrap_or_else(|_| panic!("a record of no case: {record:?}"));
            ran[i].push(words.join(" "));
        }
        ran
    }
}

/// Where the stand-ins are, in a generated line: replaced by their folder before it runs.
const FAKE: &str = "/FAKE";

fn program() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(
        &[
            "git",
            "git",
            "\\git",
            "'git'",
            "g\"\"it",
            "\"git\"",
            "gi\\\nt",
            "{git,}",
            "~/bin/git",
            "/FAKE/git",
            "ls",
            "l's'",
        ][..],
    )
}

fn wrapper() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(
        &[
            "",
            "",
            "",
            "",
            "env ",
            "env -i PATH=\"$PATH\" ",
            "env X=1 ",
            "command ",
            "nice ",
            "nice -n 5 ",
            "nohup ",
            "timeout 5 ",
            "timeout -s KILL 5 ",
            "stdbuf -oL ",
            "time ",
            "exec ",
            "X=1 ",
            "eval ",
            "! ",
            "{ ",
        ][..],
    )
}

fn argument() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(
        &[
            "push",
            "push",
            "status",
            "origin",
            "main",
            "'push'",
            "pu\\\nsh",
            "\"push\"",
            "-C .",
            "--no-pager",
            "$((1))",
            "\"$(echo push)\"",
            "$(echo push)",
            "{push,x}",
            "p\"\"ush",
            "--force",
            "-la",
            "\\push",
        ][..],
    )
}

/// One simple command, in one of the ways a command line may start a program.
fn simple() -> impl Strategy<Value = String> {
    (
        wrapper(),
        program(),
        proptest::collection::vec(argument(), 0..3),
        proptest::sample::select(&[0u8, 0, 0, 0, 1, 2, 3, 4, 5][..]),
    )
        .prop_map(|(wrapper, program, args, how)| {
            let mut command = format!("{wrapper}{program}");
            for arg in args {
                command.push(' ');
                command.push_str(arg);
            }
            if wrapper == "{ " {
                command.push_str("; }");
            }
            match how {
                1 => format!("bash -c '{}'", command.replace('\'', "")),
                2 => format!("sh <<'EOF'\n{command}\nEOF"),
                3 => format!("echo {} | xargs {program}", "push"),
                4 => format!("x={program}; $x push"),
                5 => format!("echo \"$({command})\""),
                _ => command,
            }
        })
}

fn line() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(simple(), 1..3),
        proptest::sample::select(&["; ", " && ", "\n", " | ", " & ", ";"][..]),
        proptest::sample::select(
            &[
                "",
                "",
                "echo $((1<<2))\n",
                ": <<'X'\ngit push\nX\n",
                "# git push\n",
            ][..],
        ),
    )
        .prop_map(|(commands, separator, before)| format!("{before}{}", commands.join(separator)))
}

const PATTERNS: &[&str] = &[
    "git push*",
    "git push",
    "git push *",
    "git *",
    "git status",
    "ls",
    "ls *",
    "* push",
    "*--force*",
];

fn verdict(pattern: &str, command: &str) -> Verdict {
    let input = json!({ "command": command });
    Filter::new(format!("Bash({pattern})")).evaluate(Some(&Call {
        tool: "run_terminal_command",
        input: Some(&input),
        root: Path::new("/"),
        part: None,
    }))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 8,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn what_the_filter_filters_out_runs_nothing_the_pattern_matches(
        lines in proptest::collection::vec(line(), 40)
    ) {
        let world = World::new();
        let lines: Vec<String> = lines.iter().map(|l| l.replace(FAKE, &world.fake())).collect();
        let mut filtered = 0;
        for shell in super::shells() {
            let ran = world.run(&shell, &lines);
            for (line, started) in lines.iter().zip(&ran) {
                for pattern in PATTERNS {
                    if !matches!(verdict(pattern, line), Verdict::Filtered { .. }) {
                        continue;
                    }
                    filtered += 1;
                    let parsed = CommandPattern::parse(pattern);
                    let matching: Vec<&String> =
                        started.iter().filter(|c| parsed.matches(c)).collect();
                    prop_assert!(
                        matching.is_empty(),
                        "{}: {line:?} was filtered out of {pattern:?}, and it ran {matching:?}",
                        shell.display()
                    );
                }
            }
        }
        prop_assert!(filtered > 0, "the filter filtered nothing out: {lines:#?}");
    }
}

/// The harness itself: what a job a case left running starts is recorded as that case's, even
/// when the case never waits for it and the next case has begun, and even under `env -i`.
#[test]
fn what_a_case_leaves_running_is_recorded_as_its_own() {
    let world = World::new();
    let cases = [
        "bash -c 'sleep 0.2; git push' & exec git".to_string(),
        "env -i PATH=\"$PATH\" sh -c 'sleep 0.1; ls -la' & exec ls".to_string(),
        "ls".to_string(),
    ];
    for shell in super::shells() {
        let mut ran = world.run(&shell, &cases);
        for started in &mut ran {
            started.sort();
        }
        assert_eq!(
            ran,
            [vec!["git", "git push"], vec!["ls", "ls -la"], vec!["ls"]],
            "{}",
            shell.display()
        );
    }
}
