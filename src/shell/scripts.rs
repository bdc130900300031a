//! What a command runs, from its reading ([`super::parse`]): the program of each simple command
//! (past variable assignments, redirections and wrappers such as `exec` and `env`), and the
//! script an interpreter runs (`sh .levelcode/hooks/guard.sh`, `bun run scripts/x.ts`). `validate`
//! checks that these exist, and a dispatch refuses to start a handler whose script is not there
//! (contract §6): dash exits 2 on a missing script, which would otherwise read as a block.

use super::{Dialect, Word};

/// Words that run the word after them: the program is the next word.
const WRAPPERS: &[&str] = &["exec", "command", "env", "nohup", "time"];

/// Programs whose first argument is the script they run.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "fish", "node", "nodejs", "bun", "deno", "tsx", "ts-node",
    "python", "python3", "ruby", "perl", "php", "lua", "pwsh", "uv",
];

/// The words of each simple command of `command` as `/bin/sh` reads it, quotes removed and
/// expansions as written, without redirections and comments.
pub fn simple_commands(command: &str) -> Result<Vec<Vec<String>>, super::Error> {
    let parse = super::parse(command, Dialect::Sh);
    if let Some(error) = parse.error {
        return Err(error);
    }
    Ok(parse
        .commands
        .iter()
        .map(|c| c.words.iter().map(Word::text).collect::<Vec<_>>())
        .filter(|words| !words.is_empty())
        .collect())
}

/// The program of a simple command: the first word that is not a variable assignment, a
/// redirection, or a wrapper such as `exec` or `env`; `None` when it cannot be known without a
/// shell.
pub fn program_word(words: &[String]) -> Option<(usize, &str)> {
    let mut i = 0;
    let mut after_env = false;
    while i < words.len() {
        let word = words[i].as_str();
        if is_assignment(word) || (after_env && word.starts_with('-')) {
            i += 1;
            continue;
        }
        if let Some(takes_next) = redirection(word) {
            i += if takes_next { 2 } else { 1 };
            continue;
        }
        if WRAPPERS.contains(&word) {
            after_env = word == "env";
            i += 1;
            continue;
        }
        let rest = strip_project_dir(word).unwrap_or(word);
        if rest.chars().any(|c| "$`*?[]()<>|&;{}\\\"'~".contains(c)) && !rest.starts_with("~/") {
            return None;
        }
        return Some((i, word));
    }
    None
}

/// Returns true if and only if `word` is a variable assignment (`NAME=value`).
pub fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// `Some(true)` for a redirection operator whose target is the next word (`>`, `2>>`), `Some(false)`
/// for one that carries its target (`>/dev/null`, `2>&1`), `None` for any other word.
pub fn redirection(word: &str) -> Option<bool> {
    let rest = word.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
    let op_len = rest
        .find(|c: char| c != '>' && c != '<')
        .unwrap_or(rest.len());
    if op_len == 0 {
        return None;
    }
    Some(op_len == rest.len())
}

/// The script an interpreter runs: the word right after it (after `run` for `deno run`,
/// `bun run`, `uv run`), unless that is a flag.
pub fn interpreter_script<'w>(program: &str, args: &'w [String]) -> Option<&'w str> {
    let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
    if !INTERPRETERS.contains(&name) {
        return None;
    }
    let mut args = args.iter().map(String::as_str);
    let mut first = args.next()?;
    if first == "run" && matches!(name, "deno" | "bun" | "uv") {
        first = args.next()?;
    }
    (!first.starts_with('-') && redirection(first).is_none()).then_some(first)
}

/// The rest of a word that starts with `$LEVELCODE_PROJECT_DIR` or `${LEVELCODE_PROJECT_DIR}`.
pub fn strip_project_dir(word: &str) -> Option<&str> {
    ["$LEVELCODE_PROJECT_DIR", "${LEVELCODE_PROJECT_DIR}"]
        .iter()
        .find_map(|var| word.strip_prefix(var))
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The scripts the interpreters of `command` run, as written (quotes removed), up to a `cd` or
/// `pushd`, after which a relative path would resolve elsewhere; none when it cannot be read.
pub fn interpreter_scripts(command: &str) -> Vec<String> {
    let Ok(commands) = simple_commands(command) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for simple in &commands {
        let Some((index, word)) = program_word(simple) else {
            continue;
        };
        if word == "cd" || word == "pushd" {
            break;
        }
        if let Some(script) = interpreter_script(word, &simple[index + 1..]) {
            out.push(script.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_of_each_interpreter_is_found() {
        assert_eq!(
            interpreter_scripts("sh .levelcode/hooks/guard.sh && bun run scripts/x.ts; true"),
            [".levelcode/hooks/guard.sh", "scripts/x.ts"]
        );
        assert_eq!(
            interpreter_scripts("FOO=1 env -i python3 'a b.py' >log"),
            ["a b.py"]
        );
        assert_eq!(interpreter_scripts("true&&sh g.sh"), ["g.sh"]);
        // A flag first, no script; after a cd, nothing relative is known.
        assert!(interpreter_scripts("bash -c 'echo hi'").is_empty());
        assert!(interpreter_scripts("cd sub && sh g.sh").is_empty());
        assert!(interpreter_scripts("sh 'open").is_empty());
    }
}
