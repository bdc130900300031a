//! Would a handler's program start: its programs found on `PATH`, and the scripts it names
//! present under the project root, read from the command as `/bin/sh` reads it
//! ([`crate::shell`]).
//!
//! This is a static look for `validate`, deliberately cautious: a word it cannot resolve without
//! running a shell (a variable, a glob, a substitution) is left alone rather than reported.

use std::path::{Path, PathBuf};

use crate::settings::{Program, Written};
use crate::shell::scripts::{
    interpreter_script, is_assignment, program_word, redirection, simple_commands,
    strip_project_dir,
};

/// One problem with a handler's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandProblem {
    /// `program_not_found`, `not_executable`, `script_not_found` or `unparsable_command`.
    pub kind: &'static str,
    pub message: String,
}

/// Where to look things up.
pub struct Lookup<'a> {
    /// The project root: handlers run there, so relative paths resolve against it.
    pub root: &'a Path,
    /// The `PATH` to search.
    pub path_var: Option<std::ffi::OsString>,
    pub home: Option<PathBuf>,
}

impl Lookup<'_> {
    pub fn from_env(root: &Path) -> Lookup<'_> {
        Lookup {
            root,
            path_var: std::env::var_os("PATH"),
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
        }
    }
}

/// Shell builtins and keywords: never looked up on `PATH`.
const BUILTINS: &[&str] = &[
    ":", ".", "[", "[[", "alias", "bg", "break", "builtin", "case", "cd", "continue", "declare",
    "do", "done", "echo", "elif", "else", "esac", "eval", "exit", "export", "false", "fg", "fi",
    "for", "function", "getopts", "hash", "if", "jobs", "kill", "let", "local", "printf", "pwd",
    "read", "readonly", "return", "select", "set", "shift", "source", "test", "then", "times",
    "trap", "true", "type", "typeset", "ulimit", "umask", "unalias", "unset", "until", "wait",
    "while", "{", "}", "!",
];

/// File name endings of scripts, for telling a script path from any other argument.
const SCRIPT_ENDINGS: &[&str] = &[
    ".sh", ".bash", ".zsh", ".fish", ".py", ".rb", ".pl", ".php", ".js", ".mjs", ".cjs", ".ts",
    ".mts", ".cts", ".tsx", ".jsx", ".lua", ".ps1", ".cmd", ".bat", ".go", ".exs", ".jar",
];

/// Checks one handler's program.
pub fn check(program: &Program, lookup: &Lookup<'_>) -> Vec<CommandProblem> {
    let mut problems = Vec::new();
    match program {
        Program::Shell(command) => {
            let commands = match simple_commands(command) {
                Ok(commands) => commands,
                Err(e) => {
                    problems.push(CommandProblem {
                        kind: "unparsable_command",
                        message: format!(
                            "cannot be read as /bin/sh reads it ({e}); the shell will fail to run it"
                        ),
                    });
                    return problems;
                }
            };
            let mut paths_reliable = true;
            for simple in commands {
                let Some((index, word)) = program_word(&simple) else {
                    continue;
                };
                if word == "cd" || word == "pushd" {
                    // Relative paths after this resolve elsewhere.
                    paths_reliable = false;
                    continue;
                }
                if BUILTINS.contains(&word) {
                    continue;
                }
                check_program(word, lookup, paths_reliable, &mut problems);
                if paths_reliable {
                    check_args(word, &simple[index + 1..], lookup, &mut problems);
                }
            }
        }
        // PowerShell's syntax is not a POSIX shell's: only whether PowerShell starts is checked.
        Program::PowerShell(_) => {
            check_program(program.line().0, lookup, true, &mut problems);
        }
        Program::Argv(argv) => {
            if let Some((first, args)) = argv.split_first() {
                check_direct(first, args, lookup, &mut problems);
            }
        }
        Program::Exec { program, args } => check_direct(program, args, lookup, &mut problems),
    }
    problems
}

/// A program started directly (`argv`, or `command` with `args`): no shell expands a variable
/// in its words, so one written as if it did is a problem of its own; the others are checked
/// as a shell command's are.
fn check_direct(
    program: &str,
    args: &[String],
    lookup: &Lookup<'_>,
    problems: &mut Vec<CommandProblem>,
) {
    let mut words = std::iter::once(program).chain(args.iter().map(String::as_str));
    if let Some(word) = words.find(|w| names_variable(w)) {
        problems.push(CommandProblem {
            kind: "variable_not_expanded",
            message: format!(
                "{word:?} is passed as written: without a shell no variable is expanded; handlers run in the project root, so a path relative to it (such as \".claude/hooks/guard.js\") works, or write the command as one string to run it by /bin/sh"
            ),
        });
        return;
    }
    check_program(program, lookup, true, problems);
    check_args(program, args, lookup, problems);
}

/// Returns true if and only if `word` holds `$NAME` or `${NAME}`, as a shell would expand it.
fn names_variable(word: &str) -> bool {
    word.match_indices('$').any(|(at, _)| {
        word[at + 1..]
            .chars()
            .next()
            .is_some_and(|c| c == '{' || c == '_' || c.is_ascii_alphabetic())
    })
}

/// Expands `~/` and `$LEVELCODE_PROJECT_DIR` (set for every handler) at the start of a word;
/// `None` when the word still needs a shell to be known.
fn expand(word: &str, lookup: &Lookup<'_>) -> Option<PathBuf> {
    if let Some(rest) = strip_project_dir(word) {
        let rest = rest.trim_start_matches('/');
        return plain(rest).then(|| lookup.root.join(rest));
    }
    if let Some(rest) = word.strip_prefix("~/") {
        return match (&lookup.home, plain(rest)) {
            (Some(home), true) => Some(home.join(rest)),
            _ => None,
        };
    }
    plain(word).then(|| PathBuf::from(word))
}

fn plain(word: &str) -> bool {
    !word.chars().any(|c| "$`*?[]{}~".contains(c))
}

fn check_program(
    word: &str,
    lookup: &Lookup<'_>,
    paths_reliable: bool,
    problems: &mut Vec<CommandProblem>,
) {
    let Some(path) = expand(word, lookup) else {
        return;
    };
    if word.contains('/') || word.contains('\\') {
        if path.is_relative() && !paths_reliable {
            return;
        }
        let full = lookup.root.join(&path);
        if !full.exists() {
            let where_ = if path.is_relative() {
                format!(" under the project root {}", lookup.root.display())
            } else {
                String::new()
            };
            problems.push(CommandProblem {
                kind: "program_not_found",
                message: format!(
                    "program {word:?} does not exist{where_}; handlers run in the project root, so relative paths resolve there"
                ),
            });
        } else if !is_executable(&full) {
            problems.push(CommandProblem {
                kind: "not_executable",
                message: format!(
                    "program {word:?} is not executable; run chmod +x on it, or start it with its interpreter (sh, bun, python3, ...)"
                ),
            });
        }
        return;
    }
    if find_on_path(word, lookup.path_var.as_deref()).is_none() {
        problems.push(CommandProblem {
            kind: "program_not_found",
            message: format!(
                "program {word:?} is not found on PATH; install it, fix the name, or give its full path"
            ),
        });
    }
}

/// Checks a handler's arguments: the script an interpreter runs, and any argument that is a path
/// to a script (a path with a script's file name ending).
fn check_args(
    program: &str,
    args: &[String],
    lookup: &Lookup<'_>,
    problems: &mut Vec<CommandProblem>,
) {
    let script = interpreter_script(program, args);
    for word in args {
        let is_interpreter_script = script.is_some_and(|s| std::ptr::eq(s, word.as_str()));
        if !is_interpreter_script
            && (word.starts_with('-') || redirection(word).is_some() || is_assignment(word))
        {
            continue;
        }
        let Some(path) = expand(word, lookup) else {
            continue;
        };
        let text = path.to_string_lossy();
        let script_path = SCRIPT_ENDINGS.iter().any(|e| text.ends_with(e))
            && (word.contains('/') || word.contains('\\'));
        if !(is_interpreter_script || script_path) {
            continue;
        }
        let full = lookup.root.join(&path);
        if full.exists() {
            continue;
        }
        let message = if path.is_relative() {
            format!(
                "{word:?} does not exist under the project root {}; handlers run there, so relative script paths resolve against it",
                lookup.root.display()
            )
        } else {
            format!("{word:?} does not exist ({})", full.display())
        };
        problems.push(CommandProblem {
            kind: "script_not_found",
            message,
        });
    }
}

/// The first executable called `name` in the directories of `path_var`.
pub fn find_on_path(name: &str, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    let path_var = path_var?;
    for dir in std::env::split_paths(path_var) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        for candidate in candidates(&dir, name) {
            if candidate.is_file() && is_executable(&candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

#[cfg(unix)]
fn candidates(dir: &Path, name: &str) -> Vec<PathBuf> {
    vec![dir.join(name)]
}

#[cfg(windows)]
fn candidates(dir: &Path, name: &str) -> Vec<PathBuf> {
    let exts = std::env::var("PATHEXT").unwrap_or_else(|_| ".COM;.EXE;.BAT;.CMD".into());
    let mut out = vec![dir.join(name)];
    out.extend(
        exts.split(';')
            .filter(|e| !e.is_empty())
            .map(|e| dir.join(format!("{name}{e}"))),
    );
    out
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_dir() || m.permissions().mode() & 0o111 != 0)
}

#[cfg(windows)]
fn is_executable(path: &Path) -> bool {
    path.exists()
}

/// The field of a program started without a shell (`argv`, or `command` with `args`) with an
/// element that starts with `~`, and what to say of it: only a shell turns `~` into the home
/// directory, so the program gets the `~` itself and finds no such file.
pub fn tilde(written: &Written<'_>) -> Option<(&'static str, String)> {
    let direct = written.argv.is_some() || written.args.is_some();
    let program = written.command.filter(|_| written.args.is_some());
    let items = [("command", program.into_iter().collect::<Vec<_>>())]
        .into_iter()
        .chain(
            [("args", written.args), ("argv", written.argv)].map(|(key, items)| {
                (
                    key,
                    items.into_iter().flatten().map(String::as_str).collect(),
                )
            }),
        );
    for (key, items) in items.filter(|_| direct) {
        if let Some((i, item)) = items.iter().enumerate().find(|(_, w)| w.starts_with('~')) {
            let at = if key == "command" {
                key.to_string()
            } else {
                format!("element {i}")
            };
            return Some((key, format!(
                "{at} {item:?} starts with ~, which only a shell expands: without one the program gets the ~ as written and finds no such file; write the path in full, or the whole line as a \"command\" (run by /bin/sh, which expands ~ and $HOME)"
            )));
        }
    }
    None
}

/// The field of a handler's program that holds a NUL byte, and what to say of it: no
/// program's argument can hold one, so the handler fails to start every time.
pub fn nul_byte(written: &Written<'_>) -> Option<(&'static str, String)> {
    let at = |text: &str| text.find('\0');
    let said = |what: String, byte: usize| {
        format!("{what} contains a NUL byte (\\u0000) at byte {byte}, which no program's argument can hold, so the handler can never start; remove it")
    };
    if let Some(byte) = written.command.and_then(at) {
        return Some(("command", said("the command".into(), byte)));
    }
    for (key, items) in [("args", written.args), ("argv", written.argv)] {
        for (i, item) in items.into_iter().flatten().enumerate() {
            if let Some(byte) = at(item) {
                return Some((key, said(format!("element {i}"), byte)));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn programs(command: &str) -> Vec<String> {
        simple_commands(command)
            .unwrap()
            .into_iter()
            .filter_map(|s| program_word(&s).map(|(_, w)| w.to_string()))
            .collect()
    }

    #[test]
    fn finds_the_program_of_each_simple_command() {
        assert_eq!(programs("bun .levelcode/hooks/guard.ts"), ["bun"]);
        assert_eq!(programs("FOO=1 BAR=x python3 x.py"), ["python3"]);
        assert_eq!(programs("exec node a.js"), ["node"]);
        assert_eq!(programs("env -i A=1 deno run x.ts"), ["deno"]);
        assert_eq!(
            programs("jq .x && prettier --check . || true"),
            ["jq", "prettier", "true"]
        );
        assert_eq!(
            programs("2>/dev/null cat x ; echo done # a comment"),
            ["cat", "echo"]
        );
        assert_eq!(programs("> out.txt grep x"), ["grep"]);
        assert_eq!(programs("cat a; wc -l"), ["cat", "wc"]);
        assert!(programs("$HOME/bin/x").is_empty());
        assert_eq!(
            programs("\"$LEVELCODE_PROJECT_DIR\"/x.sh"),
            ["$LEVELCODE_PROJECT_DIR/x.sh"]
        );
    }

    #[test]
    fn redirections() {
        assert_eq!(redirection(">"), Some(true));
        assert_eq!(redirection("2>>"), Some(true));
        assert_eq!(redirection(">/dev/null"), Some(false));
        assert_eq!(redirection("2>&1"), Some(false));
        assert_eq!(redirection("&>log"), Some(false));
        assert_eq!(redirection("x>y"), None);
        assert_eq!(redirection("12"), None);
    }

    #[cfg(unix)]
    #[test]
    fn reports_missing_programs_and_scripts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("hooks")).unwrap();
        std::fs::write(dir.path().join("hooks/ok.sh"), "exit 0").unwrap();
        let lookup = Lookup {
            root: dir.path(),
            path_var: Some("/bin:/usr/bin".into()),
            home: None,
        };
        let kinds = |command: &str| -> Vec<&'static str> {
            check(&Program::Shell(command.into()), &lookup)
                .into_iter()
                .map(|p| p.kind)
                .collect()
        };
        assert!(kinds("sh hooks/ok.sh").is_empty());
        assert_eq!(kinds("sh hooks/missing.sh"), ["script_not_found"]);
        assert_eq!(kinds("no-such-program-xyz --flag"), ["program_not_found"]);
        assert_eq!(kinds("./hooks/ok.sh"), ["not_executable"]);
        assert_eq!(
            kinds("sh $LEVELCODE_PROJECT_DIR/hooks/gone.sh"),
            ["script_not_found"]
        );
        assert!(kinds("cd sub && sh hooks/missing.sh").is_empty());
        // Operators glued to their words cut commands as blanks around them do.
        assert_eq!(kinds("true && ./hooks/missing.sh"), ["program_not_found"]);
        assert_eq!(kinds("true&&./hooks/missing2.sh"), ["program_not_found"]);
        assert_eq!(kinds("true;sh hooks/missing.sh|cat"), ["script_not_found"]);
        assert!(kinds("echo 'unbalanced").contains(&"unparsable_command"));
        assert!(kinds("grep -q foo/bar x").is_empty());
        assert!(kinds("sh -c 'exit 0'").is_empty());
        assert_eq!(kinds("sh check.sh"), ["script_not_found"]);
        assert_eq!(
            kinds("$LEVELCODE_PROJECT_DIR/hooks/nope.sh"),
            ["program_not_found"]
        );
        assert_eq!(
            kinds("sh \"${LEVELCODE_PROJECT_DIR}/hooks/ok.sh\""),
            [] as [&str; 0]
        );
        let argv = Program::Argv(vec!["no-such-program-xyz".into(), "a/b.py".into()]);
        let kinds: Vec<_> = check(&argv, &lookup).into_iter().map(|p| p.kind).collect();
        assert_eq!(kinds, ["program_not_found", "script_not_found"]);
    }
}
