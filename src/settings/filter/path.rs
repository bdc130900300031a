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
//! - A file matches when the pattern matches it or one of the directories it is in, as
//!   everything under an ignored directory is ignored: `src` matches `src/a/b.rs`. A folder a
//!   tool lists or searches matches when the pattern could match it, a directory it is in, or
//!   anything inside it: `secrets/**` matches a search of the project root.
//! - A path is tested twice: as written, after `.` and `..` are resolved as text, and with the
//!   symbolic links of its longest existing part resolved, as the system reads it, against the
//!   bases resolved the same way. It matches when either does, so a link `gen -> src/generated`
//!   shipped in a repository does not take an edit out of `src/generated/**`.
//! - A path outside the pattern's base (a `path` outside the project for `src/**`) never
//!   matches.

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use crate::fs::normalize;

/// What a pattern is relative to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    Root,
    Home,
    Filesystem,
}

/// What a path a tool input holds names, which decides how a pattern is tested against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// A file the tool reads or writes.
    File,
    /// A folder the tool lists or searches, everything inside it included.
    Folder,
}

/// One compiled path pattern.
#[derive(Debug)]
pub struct PathPattern {
    base: Base,
    regex: regex_lite::Regex,
    dir_only: bool,
    /// The glob after its base, and whether it is anchored, for [`PathPattern::segments`].
    glob: String,
    anchored: bool,
    segments: OnceLock<Option<Vec<Segment>>>,
}

/// One segment of a pattern between slashes, as a folder is tested against it.
#[derive(Debug)]
enum Segment {
    /// A name: one segment of a path.
    Name(regex_lite::Regex),
    /// `**`: any number of segments, none included.
    Any,
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
            glob: rest.to_string(),
            anchored,
            segments: OnceLock::new(),
        })
    }

    /// Returns true if and only if `given` (a path as a tool input holds it, relative to
    /// `root` or absolute), as written or with its symbolic links resolved, matches: the file
    /// or a directory it is in, or for a folder, anything the tool could reach inside it.
    pub fn matches(&self, given: &str, root: &Path, home: Option<&Path>, reach: Reach) -> bool {
        let joined = root.join(given);
        let written = normalize(&joined);
        let base = |resolve: fn(&Path) -> PathBuf| match self.base {
            Base::Root => Some(resolve(root)),
            Base::Home => home.map(resolve),
            Base::Filesystem => Some(PathBuf::from("/")),
        };
        let Some(written_base) = base(normalize) else {
            return false;
        };
        if self.matches_in(&written, &written_base, reach) {
            return true;
        }
        match (resolved(&joined), base(real)) {
            (Some(path), Some(real_base)) if path != written || real_base != written_base => {
                self.matches_in(&path, &real_base, reach)
            }
            _ => false,
        }
    }

    /// [`PathPattern::matches`] of the absolute, normalized `path`, with the pattern's base at
    /// `base`.
    fn matches_in(&self, path: &Path, base: &Path, reach: Reach) -> bool {
        if reach == Reach::Folder && base.starts_with(path) {
            // Everything the pattern can name is inside the folder.
            return true;
        }
        let Ok(relative) = path.strip_prefix(base) else {
            return false;
        };
        let parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        match reach {
            Reach::File => self.matches_file(&parts),
            Reach::Folder => self.reaches_into(&parts),
        }
    }

    /// Returns true if and only if the file whose path below the base is `parts` matches, or a
    /// directory it is in does.
    fn matches_file(&self, parts: &[String]) -> bool {
        if parts.is_empty() {
            return false;
        }
        let mut prefix = String::new();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                prefix.push('/');
            }
            prefix.push_str(part);
            let last = i + 1 == parts.len();
            if last && self.dir_only {
                return false;
            }
            if self.regex.is_match(&prefix) {
                return true;
            }
        }
        false
    }

    /// Returns true if and only if the pattern could match the folder whose path below the base
    /// is `parts`, a directory it is in, or a path inside it: the pattern's segments are
    /// followed along the folder's, and any left over can be filled by what the folder holds.
    fn reaches_into(&self, parts: &[String]) -> bool {
        let Some(segments) = self.segments() else {
            // A class that holds a `/` crosses segments: unsure, so it could.
            return true;
        };
        let end = segments.len();
        let close = |states: &mut Vec<bool>| {
            for i in 0..end {
                if states[i] && matches!(segments[i], Segment::Any) {
                    states[i + 1] = true;
                }
            }
        };
        let mut states = vec![false; end + 1];
        states[0] = true;
        close(&mut states);
        for part in parts {
            if states[end] {
                // The pattern matched a folder this one is in.
                return true;
            }
            let mut next = vec![false; end + 1];
            for (i, segment) in segments.iter().enumerate().filter(|(i, _)| states[*i]) {
                match segment {
                    Segment::Any => next[i] = true,
                    Segment::Name(name) if name.is_match(part) => next[i + 1] = true,
                    Segment::Name(_) => {}
                }
            }
            close(&mut next);
            if !next.contains(&true) {
                return false;
            }
            states = next;
        }
        true
    }

    /// The pattern's segments, or `None` when a class or an escape holds a `/`.
    fn segments(&self) -> Option<&[Segment]> {
        self.segments
            .get_or_init(|| segments(&self.glob, self.anchored))
            .as_deref()
    }
}

/// `path` with the symbolic links of its longest existing part resolved and the rest as
/// written, `.` and `..` resolved; `None` when not even its first component can be resolved.
fn resolved(path: &Path) -> Option<PathBuf> {
    let components: Vec<Component> = path.components().collect();
    let prefix = |n: usize| components[..n].iter().collect::<PathBuf>();
    // Whether a prefix resolves only ever goes from yes to no as it grows (the system resolves
    // a path component by component), so a binary search finds the longest in a few calls.
    let (mut yes, mut no) = (0, components.len() + 1);
    let mut best = None;
    while no - yes > 1 {
        let mid = (yes + no) / 2;
        match std::fs::canonicalize(prefix(mid)) {
            Ok(real) => {
                yes = mid;
                best = Some(real);
            }
            Err(_) => no = mid,
        }
    }
    let mut out = best?;
    let mut rest = components[yes..].iter();
    if let Some(first) = rest.next() {
        out.push(first.as_os_str());
        // A link to what does not exist yet: a write through it creates its target.
        if let Ok(target) = std::fs::read_link(&out) {
            out.pop();
            out.push(target);
        }
    }
    for component in rest {
        out.push(component.as_os_str());
    }
    Some(normalize(&out))
}

/// `path` as the system reads it, or as written when it cannot be resolved.
fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| normalize(path))
}

/// The segments of `glob`, after `**/` when it is not `anchored`; `None` when a class or an
/// escape holds a `/`, which a segment cannot.
fn segments(glob: &str, anchored: bool) -> Option<Vec<Segment>> {
    let chars: Vec<char> = glob.chars().collect();
    let mut pieces = vec![String::new()];
    let mut i = 0;
    while i < chars.len() {
        let taken = match chars[i] {
            '/' => {
                pieces.push(String::new());
                i += 1;
                continue;
            }
            '\\' => 2.min(chars.len() - i),
            '[' => class(&chars[i..]).ok()?.1,
            _ => 1,
        };
        let text: String = chars[i..i + taken].iter().collect();
        if taken > 1 && text.contains('/') {
            return None;
        }
        pieces.last_mut()?.push_str(&text);
        i += taken;
    }
    let mut out = Vec::new();
    if !anchored {
        out.push(Segment::Any);
    }
    for piece in pieces {
        if piece.len() >= 2 && piece.chars().all(|c| c == '*') {
            out.push(Segment::Any);
        } else {
            let source = format!("^{}$", glob_regex(&piece).ok()?);
            out.push(Segment::Name(regex_lite::Regex::new(&source).ok()?));
        }
    }
    Some(out)
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

#[cfg(test)]
#[path = "path_tests.rs"]
mod tests;
