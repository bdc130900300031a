//! The paths a call of a file tool names, each a file or a folder, as the tool reads its input
//! (contract §16): what a path rule is tested against. Where a tool could reach more than its
//! arguments say (ripgrep's own arguments in `flags`), every path it could reach is named, so
//! a rule that could match runs its handler; where that cannot be told, the call cannot be
//! evaluated, and the handler runs too.

use std::path::Path;

use serde_json::Value;

use super::path::Reach;

/// How a levelcode tool's input names the paths it reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `path`, a file (`write_file`, `str_replace`).
    File,
    /// Each of `paths`, files (`read_files`).
    Files,
    /// `cwd`, the folder ripgrep searches (the project root without one), and what its
    /// `flags` may name (`code_search`).
    Search,
    /// `cwd`, narrowed to the folders the `pattern` starts with (`glob`).
    Glob,
    /// `path`, a folder (`list_directory`).
    Folder,
    /// Each of `paths`, files or folders; the project root without any (`read_subtree`).
    Subtrees,
    /// The whole project (`find_files`, which takes a description, not a path).
    Project,
}

/// One path a call names, as its input holds it (relative to the project root, or absolute),
/// and what it is.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    pub path: String,
    pub reach: Reach,
}

impl Target {
    fn file(path: &str) -> Target {
        Target {
            path: path.to_string(),
            reach: Reach::File,
        }
    }

    fn folder(path: impl Into<String>) -> Target {
        Target {
            path: path.into(),
            reach: Reach::Folder,
        }
    }
}

/// The paths `input` names for a tool of `shape`, or why they cannot be told; `part` is the
/// one path of `paths` a protocol runs a handler for (Claude Code's `Read` of one file).
pub fn of(shape: Shape, input: &Value, part: Option<usize>) -> Result<Vec<Target>, String> {
    match shape {
        Shape::File => Ok(vec![Target::file(required(input, "path")?)]),
        Shape::Files => {
            let list =
                strings(input, "paths")?.ok_or_else(|| missing("paths", "an array of paths"))?;
            let chosen: Vec<&str> = match part {
                Some(part) => list.get(part).copied().into_iter().collect(),
                None => list,
            };
            Ok(chosen.into_iter().map(Target::file).collect())
        }
        Shape::Search => search(input),
        Shape::Glob => {
            let cwd = string(input, "cwd")?.unwrap_or(".");
            let pattern = string(input, "pattern")?;
            Ok(vec![Target::folder(glob_folder(cwd, pattern))])
        }
        Shape::Folder => Ok(vec![Target::folder(required(input, "path")?)]),
        Shape::Subtrees => match strings(input, "paths")? {
            Some(list) if !list.is_empty() => Ok(list.into_iter().map(Target::folder).collect()),
            _ => Ok(vec![Target::folder(".")]),
        },
        Shape::Project => Ok(vec![Target::folder(".")]),
    }
}

/// The folders a `code_search` reaches. levelcode runs `rg <flags> -- <pattern> .` in `cwd`,
/// with `flags` split at spaces: a word of the flags that is no option is taken by ripgrep as
/// its pattern, and `pattern` then as a path, as is an option's value that names a file
/// (`-f`, `--ignore-file=`). So with flags, each word and each value, and the pattern, are
/// folders it may search too.
fn search(input: &Value) -> Result<Vec<Target>, String> {
    let cwd = string(input, "cwd")?.unwrap_or(".");
    let mut out = vec![Target::folder(cwd)];
    let Some(flags) = string(input, "flags")? else {
        return Ok(out);
    };
    let words: Vec<&str> = flags
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(|w| {
            w.trim_start_matches(['\'', '"'])
                .trim_end_matches(['\'', '"'])
        })
        .collect();
    if words.is_empty() {
        return Ok(out);
    }
    let within = |path: &str| Path::new(cwd).join(path).to_string_lossy().into_owned();
    for word in &words {
        let named = if let Some(long) = word.strip_prefix("--") {
            if long == "follow" {
                return Err(following());
            }
            long.split_once('=')
                .map(|(_, value)| value.trim_matches(['\'', '"']))
        } else if let Some(short) = word.strip_prefix('-') {
            if short.contains('L') {
                return Err(following());
            }
            short.get(1..)
        } else {
            Some(*word)
        };
        if let Some(path) = named.filter(|p| !p.is_empty()) {
            out.push(Target::folder(within(path)));
        }
    }
    if let Some(pattern) = string(input, "pattern")? {
        out.push(Target::folder(within(pattern)));
    }
    Ok(out)
}

fn following() -> String {
    "the search follows symbolic links (-L, --follow), which may lead out of every folder it names"
        .into()
}

/// The folder a `glob` lists: levelcode matches `pattern` against the project's files by their
/// path from the root, keeping those under `cwd`, so its files are under both `cwd` and the
/// folders `pattern` starts with. Only plain names count as such folders: a pattern that starts
/// with `!` or holds a wildcard, a brace or a class there narrows nothing.
fn glob_folder(cwd: &str, pattern: Option<&str>) -> String {
    let Some(mut pattern) = pattern else {
        return cwd.to_string();
    };
    while let Some(rest) = pattern.strip_prefix("./") {
        pattern = rest;
    }
    let mut segments: Vec<&str> = pattern.split('/').collect();
    // The last segment is the file's own name.
    segments.pop();
    let plain = |s: &&str| {
        !s.is_empty()
            && *s != "."
            && *s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    let lead: Vec<&str> = segments.iter().copied().take_while(plain).collect();
    let lead = lead.join("/");
    let inside = crate::fs::normalize(Path::new(&lead));
    if !lead.is_empty() && inside.starts_with(crate::fs::normalize(Path::new(cwd))) {
        lead
    } else {
        cwd.to_string()
    }
}

/// `input[key]` as a string, `None` when it is missing or null.
fn string<'a>(input: &'a Value, key: &str) -> Result<Option<&'a str>, String> {
    match input.get(key) {
        Some(Value::String(text)) => Ok(Some(text)),
        None | Some(Value::Null) => Ok(None),
        Some(_) => Err(missing(key, "a path")),
    }
}

/// `input[key]` as a string, which the tool needs.
fn required<'a>(input: &'a Value, key: &str) -> Result<&'a str, String> {
    string(input, key)?.ok_or_else(|| missing(key, "a path"))
}

/// `input[key]` as an array of strings: `None` when it is missing or null.
fn strings<'a>(input: &'a Value, key: &str) -> Result<Option<Vec<&'a str>>, String> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(list)) => list
            .iter()
            .map(|item| item.as_str().ok_or_else(|| missing(key, "strings")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(missing(key, "an array of paths")),
    }
}

fn missing(key: &str, what: &str) -> String {
    format!("the tool input has no {key:?} holding {what} to test")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn folders(shape: Shape, input: Value) -> Vec<String> {
        of(shape, &input, None)
            .unwrap()
            .into_iter()
            .map(|t| {
                assert_eq!(t.reach, Reach::Folder, "{t:?}");
                t.path
            })
            .collect()
    }

    #[test]
    fn a_glob_lists_the_folders_its_pattern_starts_with() {
        let glob = |cwd: Option<&str>, pattern: &str| {
            let mut input = json!({ "pattern": pattern });
            if let Some(cwd) = cwd {
                input["cwd"] = json!(cwd);
            }
            folders(Shape::Glob, input)
        };
        assert_eq!(glob(None, "src/**/*.ts"), ["src"]);
        assert_eq!(glob(None, "./docs/api/*.md"), ["docs/api"]);
        assert_eq!(glob(None, "**/*.pem"), ["."]);
        assert_eq!(glob(None, "*.md"), ["."]);
        assert_eq!(glob(None, "!secrets/**"), ["."]);
        assert_eq!(glob(None, "{src,secrets}/*"), ["."]);
        assert_eq!(glob(None, "src/../secrets/*"), ["src"]);
        assert_eq!(glob(Some("src"), "src/deep/*.rs"), ["src/deep"]);
        // A cwd below the pattern's folders, or beside them: the cwd.
        assert_eq!(glob(Some("src/deep"), "src/*"), ["src/deep"]);
        assert_eq!(glob(Some("docs"), "secrets/*"), ["docs"]);
    }

    #[test]
    fn a_search_with_flags_reaches_what_ripgrep_would_take_as_paths() {
        let search = |input: Value| folders(Shape::Search, input);
        assert_eq!(search(json!({"pattern": "x"})), ["."]);
        assert_eq!(search(json!({"pattern": "x", "cwd": "src"})), ["src"]);
        assert_eq!(
            search(json!({"pattern": "x", "cwd": "src", "flags": "-i"})),
            ["src", "src/x"]
        );
        assert_eq!(
            search(json!({"pattern": "../secrets", "cwd": "docs", "flags": "KEY"})),
            ["docs", "docs/KEY", "docs/../secrets"]
        );
        assert_eq!(
            search(json!({"pattern": "x", "flags": "-f/etc/shadow --ignore-file='a/b' -n"})),
            [".", "/etc/shadow", "./a/b", "./x"]
        );
        for follows in ["-L", "-iL", "--follow"] {
            let input = json!({"pattern": "x", "flags": follows});
            let why = of(Shape::Search, &input, None).unwrap_err();
            assert!(why.contains("symbolic links"), "{why}");
        }
    }

    #[test]
    fn inputs_without_what_a_shape_needs_say_so() {
        let why = of(Shape::File, &json!({}), None).unwrap_err();
        assert!(why.contains("\"path\""), "{why}");
        let why = of(Shape::Folder, &json!({"path": 3}), None).unwrap_err();
        assert!(why.contains("\"path\""), "{why}");
        let why = of(Shape::Files, &json!({"paths": [1]}), None).unwrap_err();
        assert!(why.contains("strings"), "{why}");
        let why = of(Shape::Search, &json!({"pattern": "x", "cwd": 1}), None).unwrap_err();
        assert!(why.contains("\"cwd\""), "{why}");
        assert_eq!(folders(Shape::Subtrees, json!({})), ["."]);
        assert_eq!(folders(Shape::Subtrees, json!({"paths": []})), ["."]);
        assert_eq!(folders(Shape::Project, json!({"prompt": "x"})), ["."]);
    }
}
