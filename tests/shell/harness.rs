//! Running cases through a real shell, and comparing what it ran with the lexer's reading.
//!
//! Each case is `eval`ed in a subshell of its own by one shell process, with the function `rec`
//! defined: a case writes its commands as `rec WORDS…`, and `rec` prints the words it receives
//! to descriptor 9, whatever the case does with stdout. A `rec` inside a substitution or a
//! pipeline is recorded too. What the lexer reads is every command whose first word (after its
//! assignments and the shell's own words such as `then`) is `rec`, with its words as the dialect's expansions make them (bash's brace
//! expansion included); a word that holds an expansion stands for whatever the shell made of it.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use levelcode_hooks::shell::{self, literal_of, Dialect};

/// A shell found on this machine, with the dialect the lexer reads it in.
pub struct Shell {
    pub dialect: Dialect,
    pub path: PathBuf,
}

fn find(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/local/bin"]
        .iter()
        .map(|dir| PathBuf::from(dir).join(name))
        .find(|p| p.is_file())
}

/// dash, which must be there (the differential test is the lexer's reference), and bash where
/// it is present.
pub fn shells() -> Vec<Shell> {
    let mut out = Vec::new();
    let dash = find("dash");
    if crate::common::require(
        "dash",
        dash.is_some(),
        "the lexer is compared with a real /bin/sh",
    ) {
        out.push(Shell {
            dialect: Dialect::Sh,
            path: dash.unwrap(),
        });
    }
    if let Some(bash) = find("bash") {
        out.push(Shell {
            dialect: Dialect::Bash,
            path: bash,
        });
    }
    out
}

const RECORD: char = '\u{1e}';
const WORD: char = '\u{1f}';
const CASE: char = '\u{1d}';

/// What each case ran, in its order: the words of each `rec`, in the order they were printed.
pub fn run(shell: &Shell, cases: &[String]) -> Vec<Vec<Vec<String>>> {
    let mut script =
        String::from("RS=$(printf '\\036'); rec() { printf '%s\\037' \"$@\" \"$RS\" >&9; }\n");
    for (i, case) in cases.iter().enumerate() {
        let quoted = case.replace('\'', r"'\''");
        script.push_str(&format!(
            "printf '\\035{i}\\037' >&9; (eval '{quoted}'\nwait) </dev/null >/dev/null 2>&1\n"
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("records");
    let script_path = dir.path().join("script.sh");
    std::fs::write(&script_path, &script).unwrap();
    // Descriptor 9 is the records file, opened by the shell for the whole script, for
    // appending: the processes of a pipeline write to it at once.
    std::fs::write(&out_path, "").unwrap();
    let wrapper = format!(
        "exec 9>>'{}'; . '{}'",
        out_path.display(),
        script_path.display()
    );
    let status = Command::new(&shell.path)
        .arg("-c")
        .arg(&wrapper)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", "/tmp/lexer-home")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the shell runs");
    assert!(
        status.code().is_some(),
        "{} ended by {status:?}",
        shell.path.display()
    );
    let bytes = std::fs::read(&out_path).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let mut by_case: BTreeMap<usize, Vec<Vec<String>>> = BTreeMap::new();
    for chunk in text.split(CASE).skip(1) {
        let (number, records) = chunk.split_once(WORD).unwrap();
        let mut pieces: Vec<&str> = records.split(RECORD).collect();
        // What follows the last record's end.
        pieces.pop();
        let records: Vec<Vec<String>> = pieces
            .iter()
            .enumerate()
            .map(|(i, r)| {
                if i > 0 {
                    r.strip_prefix(WORD).unwrap_or(r)
                } else {
                    r
                }
            })
            .map(|r| {
                let mut words: Vec<String> = r.split(WORD).map(str::to_string).collect();
                // Each word ends with the separator, so the last piece is empty.
                words.pop();
                words
            })
            .collect();
        by_case.insert(number.parse().unwrap(), records);
    }
    (0..cases.len())
        .map(|i| by_case.remove(&i).unwrap_or_default())
        .collect()
}

/// The shell's own words that may stand before a command.
const RESERVED: &[&str] = &[
    "{", "}", "!", "if", "then", "elif", "else", "do", "while", "until",
];

/// One word as the lexer reads it: its text, or `None` when an expansion makes it.
pub type Expected = Vec<Option<String>>;

/// The `rec` commands of `case` as `dialect` reads it, or why it cannot be read.
pub fn expected(case: &str, dialect: Dialect) -> Result<Vec<Expected>, String> {
    let parse = shell::parse(case, dialect);
    if let Some(e) = parse.error {
        return Err(e.to_string());
    }
    let mut out = Vec::new();
    for command in &parse.commands {
        let mut words = command
            .words
            .iter()
            .skip_while(|w| w.is_assignment() || RESERVED.iter().any(|r| w.is(r)));
        let Some(first) = words.next() else { continue };
        if first.literal().as_deref() != Some("rec") {
            continue;
        }
        let mut record = Vec::new();
        for word in words {
            for field in word.fields(dialect).map_err(|e| e.to_string())? {
                record.push(literal_of(&field));
            }
        }
        out.push(record);
    }
    Ok(out)
}

fn fits(expected: &Expected, actual: &[String]) -> bool {
    expected.len() == actual.len()
        && expected
            .iter()
            .zip(actual)
            .all(|(e, a)| e.as_ref().is_none_or(|e| e == a))
}

/// Why what the shell ran differs from the lexer's reading, if it does: each command the lexer
/// reads must be one the shell ran, and each the shell ran one the lexer reads. In any order
/// (pipelines and background commands print theirs as they run), and as many times as each
/// likes (a substitution in a word that bash's braces make two runs twice).
pub fn differs(expected: &[Expected], actual: &[Vec<String>]) -> Option<String> {
    if let Some(e) = expected.iter().find(|e| !actual.iter().any(|a| fits(e, a))) {
        return Some(format!(
            "the lexer reads {e:?}, which the shell did not run"
        ));
    }
    if let Some(a) = actual.iter().find(|a| !expected.iter().any(|e| fits(e, a))) {
        return Some(format!(
            "the shell ran {a:?}, which the lexer does not read"
        ));
    }
    None
}

/// Checks every case against every shell; the failures, each with its case.
pub fn check(cases: &[String]) -> Vec<String> {
    let mut failures = Vec::new();
    for shell in shells() {
        let ran = run(&shell, cases);
        for (case, actual) in cases.iter().zip(&ran) {
            let why = match expected(case, shell.dialect) {
                Ok(expected) => differs(&expected, actual),
                Err(e) => Some(format!("the lexer cannot read it ({e})")),
            };
            if let Some(why) = why {
                failures.push(format!(
                    "{} ({}): {case:?}: {why}; it ran {actual:?}",
                    shell.path.display(),
                    shell.dialect.name()
                ));
            }
        }
    }
    failures
}

/// Whether `shell` accepts `text` without running it (`-n`).
pub fn accepts(shell: &Shell, text: &str) -> bool {
    let mut child = Command::new(&shell.path)
        .arg("-n")
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    child.wait().unwrap().success()
}
