//! Path patterns of an `if` on a file tool (contract §16), as Claude Code's `Read(…)` and
//! `Edit(…)` rules write them: the gitignore syntax, relative to the project root.
//!
//! - `//path` is absolute (`//etc/**` is `/etc/**`), `~/path` is under the home directory,
//!   `/path`, `./path` and `path` are under the project root.
//! - As in a `.gitignore` at the root: a pattern with a `/` before its end is anchored there
//!   (`src/*.rs` is `src/a.rs`, not `lib/src/a.rs`); one without matches at any depth (`*.env`
//!   is `.env` and `config/prod.env`). `*` and `?` stay within one path segment, `**` crosses
//!   them (`**/x`, `a/**/b`, `a/**`), `[abc]`, `[a-z]` and `[!a]` are classes, `\` escapes. A
//!   trailing `/` matches directories only.
//! - A path matches when the pattern matches it or one of the directories it is in, as
//!   everything under an ignored directory is ignored: `src` matches `src/a/b.rs`.
//! - A path outside the pattern's base (a `path` outside the project for `src/**`) never
//!   matches. Paths are compared as written, after `.` and `..` are resolved: no symbolic
//!   link is followed.

use std::path::{Path, PathBuf};

/// What a pattern is relative to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    Root,
    Home,
    Filesystem,
}

/// One compiled path pattern.
#[derive(Debug)]
pub struct PathPattern {
    base: Base,
    regex: regex_lite::Regex,
    dir_only: bool,
}

impl PathPattern {
    /// The pattern `spec`, or why it is not one.
    pub fn parse(spec: &str) -> Result<PathPattern, String> {
        let (base, rest, anchored) = if let Some(rest) = spec.strip_prefix("//") {
            (Base::Filesystem, rest, true)
        } else if let Some(rest) = spec.strip_prefix("~/") {
            (Base::Home, rest, true)
        } else if let Some(rest) = spec.strip_prefix("./") {
            (Base::Root, rest, true)
        } else if let Some(rest) = spec.strip_prefix('/') {
            (Base::Root, rest, true)
        } else {
            let inner = spec.strip_suffix('/').unwrap_or(spec);
            (Base::Root, spec, inner.contains('/'))
        };
        if spec.starts_with('!') {
            return Err(format!(
                "{spec:?} is a negated pattern, which means nothing in a single rule; name the paths it should match"
            ));
        }
        let (rest, dir_only) = match rest.strip_suffix('/') {
            Some(inner) => (inner, true),
            None => (rest, false),
        };
        if rest.is_empty() {
            return Err(format!(
                "{spec:?} names no path; write one such as \"src/**\""
            ));
        }
        let source = format!(
            "^{}{}$",
            if anchored { "" } else { "(?:.*/)?" },
            glob_regex(rest).map_err(|why| format!("{spec:?}: {why}"))?
        );
        let regex = regex_lite::Regex::new(&source)
            .map_err(|e| format!("{spec:?} is not a valid path pattern ({e})"))?;
        Ok(PathPattern {
            base,
            regex,
            dir_only,
        })
    }

    /// Returns true if and only if `given` (a path as a tool input holds it, relative to
    /// `root` or absolute) matches; `is_dir` says it names a directory.
    pub fn matches(&self, given: &str, root: &Path, home: Option<&Path>, is_dir: bool) -> bool {
        let path = crate::fs::normalize(&root.join(given));
        let base = match self.base {
            Base::Root => crate::fs::normalize(root),
            Base::Home => match home {
                Some(home) => crate::fs::normalize(home),
                None => return false,
            },
            Base::Filesystem => PathBuf::from("/"),
        };
        let Ok(relative) = path.strip_prefix(&base) else {
            return false;
        };
        let parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.is_empty() {
            return is_dir && self.regex.is_match("");
        }
        let mut prefix = String::new();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                prefix.push('/');
            }
            prefix.push_str(part);
            let last = i + 1 == parts.len();
            if last && self.dir_only && !is_dir {
                return false;
            }
            if self.regex.is_match(&prefix) {
                return true;
            }
        }
        false
    }
}

/// The regular expression, without anchors, of a gitignore glob.
fn glob_regex(glob: &str) -> Result<String, String> {
    let chars: Vec<char> = glob.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' => {
                let mut stars = 0;
                while chars.get(i + stars) == Some(&'*') {
                    stars += 1;
                }
                let starts_segment = i == 0 || chars[i - 1] == '/';
                let after = chars.get(i + stars).copied();
                i += stars;
                if stars >= 2 && starts_segment && after.is_none() {
                    // `a/**`: everything inside; `**` alone: everything.
                    out.push_str(".*");
                } else if stars >= 2 && starts_segment && after == Some('/') {
                    // `**/`: any number of directories, none included.
                    out.push_str("(?:.*/)?");
                    i += 1;
                } else {
                    out.push_str("[^/]*");
                }
                continue;
            }
            '?' => out.push_str("[^/]"),
            '[' => {
                let (class, len) = class(&chars[i..])?;
                out.push_str(&class);
                i += len;
                continue;
            }
            '\\' => match chars.get(i + 1) {
                Some(escaped) => {
                    out.push_str(&regex_lite::escape(&escaped.to_string()));
                    i += 2;
                    continue;
                }
                None => return Err("it ends with a lone \\".into()),
            },
            other => out.push_str(&regex_lite::escape(&other.to_string())),
        }
        i += 1;
    }
    Ok(out)
}

/// A bracket expression at the start of `chars` as a regex class, and how many characters it
/// took.
fn class(chars: &[char]) -> Result<(String, usize), String> {
    let mut i = 1;
    let mut out = String::from("[");
    if matches!(chars.get(i), Some('!' | '^')) {
        out.push('^');
        i += 1;
    }
    let first = i;
    loop {
        match chars.get(i) {
            None => return Err("a [ is never closed; write \\[ for the character itself".into()),
            Some(']') if i > first => {
                out.push(']');
                return Ok((out, i + 1));
            }
            Some('\\') => {
                let escaped = chars
                    .get(i + 1)
                    .ok_or("a [ is never closed; write \\[ for the character itself")?;
                if !escaped.is_alphanumeric() {
                    out.push('\\');
                }
                out.push(*escaped);
                i += 2;
            }
            Some(c @ ('[' | ']' | '^' | '&' | '~')) => {
                out.push('\\');
                out.push(*c);
                i += 1;
            }
            Some(c) => {
                out.push(*c);
                i += 1;
            }
        }
    }
}
