//! Which groups apply to a tool (contract §5).
//!
//! A matcher of plain names is an exact list, so `write_file` never matches `write_file_v2`;
//! anything else is a regular expression searched unanchored. A pattern that the `regex` crate
//! rejects only for what it lacks by design (look-ahead, look-behind, backreferences, as in
//! JavaScript's `^(?!read_)`) is compiled by `fancy-regex`, a backtracking engine made for them;
//! that engine is never built for a pattern `regex` accepts.

use regex::Regex;

/// A compiled group matcher.
#[derive(Debug)]
pub enum Matcher {
    /// Missing, `""` or `"*"`: every tool.
    Any,
    /// `a|b|c` of plain names: exactly these tools.
    Names(Vec<String>),
    /// Anything else: a regex searched anywhere in the tool name.
    Pattern(Regex),
    /// A regex with look-around or backreferences, which only a backtracking engine runs.
    Backtracking(fancy_regex::Regex),
}

/// Returns true if and only if `matcher` is a list of exact names: only ASCII letters, digits,
/// `_`, `-`, `|` and spaces.
pub fn is_name_list(matcher: &str) -> bool {
    matcher
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'|' | b' '))
}

impl Matcher {
    /// Compiles a group's matcher; the error is the regex's own message.
    pub fn compile(matcher: Option<&str>) -> Result<Matcher, String> {
        let Some(text) = matcher else {
            return Ok(Matcher::Any);
        };
        if text.is_empty() || text == "*" {
            return Ok(Matcher::Any);
        }
        if is_name_list(text) {
            let names: Vec<String> = text
                .split('|')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(String::from)
                .collect();
            if names.is_empty() {
                return Ok(Matcher::Any);
            }
            return Ok(Matcher::Names(names));
        }
        match Regex::new(text) {
            Ok(re) => Ok(Matcher::Pattern(re)),
            Err(e) if needs_backtracking(text) => fancy_regex::Regex::new(text)
                .map(Matcher::Backtracking)
                .map_err(|_| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Returns true if and only if the group applies to `tool`.
    pub fn matches(&self, tool: &str) -> bool {
        match self {
            Matcher::Any => true,
            Matcher::Names(names) => names.iter().any(|n| n == tool),
            Matcher::Pattern(re) => re.is_match(tool),
            // Tool names are short, so the backtracking limit is out of reach; were it reached,
            // the group would not apply, as with any other matcher that does not match.
            Matcher::Backtracking(re) => re.is_match(tool).unwrap_or(false),
        }
    }
}

/// Returns true if and only if the `regex` crate rejects `pattern` for look-around or a
/// backreference, the features it leaves out by design; any other error stays an error.
pub fn needs_backtracking(pattern: &str) -> bool {
    use regex_syntax::ast::ErrorKind;
    match regex_syntax::ast::parse::Parser::new().parse(pattern) {
        Err(e) => matches!(
            e.kind(),
            ErrorKind::UnsupportedLookAround | ErrorKind::UnsupportedBackreference
        ),
        Ok(_) => false,
    }
}

/// Characters that end a run of literal text in a pattern.
const META: &[char] = &[
    '\\', '.', '+', '*', '?', '(', ')', '[', ']', '{', '}', '|', '^', '$',
];

/// Returns true if and only if the regex `pattern` certainly cannot match `tool`: see
/// [`anchors_rule_out`]; a pattern that does not parse is never ruled out, since its group must
/// still be warned about.
pub fn ruled_out(pattern: &str, tool: &str) -> bool {
    anchors_rule_out(pattern, tool) && parses(pattern)
}

/// Returns true if and only if the literal text that `pattern` anchors at the start (`^write_`)
/// or the end (`_file$`) rules out `tool`, judged without compiling anything: compiling one regex
/// costs more than a whole dispatch that matches nothing, and most regex matchers are anchored
/// literals. A pattern with a top-level alternation or flags is never ruled out. Whether the
/// pattern is valid at all is [`parses`]' question.
pub fn anchors_rule_out(pattern: &str, tool: &str) -> bool {
    if pattern.is_empty() || pattern == "*" || is_name_list(pattern) {
        return false;
    }
    if pattern.contains("(?") || has_top_level_alternation(pattern) {
        return false;
    }
    let by_prefix = pattern
        .strip_prefix('^')
        .is_some_and(|rest| !tool.starts_with(literal_prefix(rest)));
    let by_suffix = pattern
        .strip_suffix('$')
        .filter(|rest| !rest.ends_with('\\'))
        .is_some_and(|rest| !tool.ends_with(literal_suffix(rest)));
    by_prefix || by_suffix
}

/// Returns true if and only if `pattern` is valid regex syntax. Only the syntax tree is built,
/// which is a fraction of the cost of compiling; the rare errors that only compilation finds
/// (an unknown Unicode class name, say) are then reported by the groups that do get compiled.
pub fn parses(pattern: &str) -> bool {
    plainly_valid(pattern)
        || regex_syntax::ast::parse::Parser::new()
            .parse(pattern)
            .is_ok()
}

/// Returns true when `pattern` keeps to a plain subset of the syntax that is valid whatever
/// it contains: literals, `.`, escaped metacharacters, `\d \w \s` and their negations, simple
/// classes such as `[a-z0-9_]`, plain groups, `|` between non-empty branches, `^`, `$`, and
/// quantifiers after something they can repeat. False means only "not plainly valid": the
/// syntax parser then decides. Building the parser's syntax tree costs tens of thousands of
/// instructions per pattern; this scan, a few per byte.
fn plainly_valid(pattern: &str) -> bool {
    /// What the scan just passed: whether a quantifier may follow, and whether a `|` or `)` may.
    #[derive(Clone, Copy, PartialEq)]
    enum Last {
        /// The start, `(` or `|`: an empty branch so far.
        Open,
        /// `^`, `$` or a quantifier: nothing a quantifier may repeat.
        Fixed,
        /// A literal, `.`, an escape, a class or a closed group.
        Item,
    }
    let bytes = pattern.as_bytes();
    let mut depth = 0usize;
    let mut last = Last::Open;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        last = match b {
            b'\\' => match bytes.get(i) {
                Some(c) if b"\\.+*?()|[]{}^$dwsDWS".contains(c) => {
                    i += 1;
                    Last::Item
                }
                _ => return false,
            },
            b'[' => match class_end(&bytes[i..]) {
                Some(len) => {
                    i += len;
                    Last::Item
                }
                None => return false,
            },
            b'(' => {
                if bytes.get(i) == Some(&b'?') || depth == 64 {
                    return false;
                }
                depth += 1;
                Last::Open
            }
            b')' | b'|' if last == Last::Open => return false,
            b')' => {
                if depth == 0 {
                    return false;
                }
                depth -= 1;
                Last::Item
            }
            b'|' => Last::Open,
            b'^' | b'$' => Last::Fixed,
            b'*' | b'+' | b'?' | b'{' if last != Last::Item => return false,
            b'*' | b'+' | b'?' => {
                if bytes.get(i) == Some(&b'?') {
                    i += 1;
                }
                Last::Fixed
            }
            b'{' => match counted_repetition_end(&bytes[i..]) {
                Some(len) => {
                    i += len;
                    Last::Fixed
                }
                None => return false,
            },
            b']' | b'}' => return false,
            _ => Last::Item,
        };
    }
    depth == 0 && last != Last::Open
}

/// The length of a plain class body after its `[`, through the closing `]`: ASCII letters,
/// digits and `_`, ordered ranges between them, and `\d \w \s`, optionally negated with `^`.
fn class_end(rest: &[u8]) -> Option<usize> {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = usize::from(rest.first() == Some(&b'^'));
    let start = i;
    loop {
        match *rest.get(i)? {
            b']' if i > start => return Some(i + 1),
            b'\\' if rest.get(i + 1).is_some_and(|c| b"dwsDWS".contains(c)) => i += 2,
            a if plain(a) => {
                if rest.get(i + 1) == Some(&b'-') && rest.get(i + 2) != Some(&b']') {
                    let z = *rest.get(i + 2)?;
                    if !plain(z) || z < a {
                        return None;
                    }
                    i += 3;
                } else {
                    i += 1;
                }
            }
            _ => return None,
        }
    }
}

/// The length of `n}`, `n,}` or `n,m}` (n ≤ m, at most four digits each) after a `{`, with a
/// lazy `?` after it.
fn counted_repetition_end(rest: &[u8]) -> Option<usize> {
    let number = |from: usize| -> Option<(u32, usize)> {
        let digits = rest[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 || digits > 4 {
            return None;
        }
        let text = std::str::from_utf8(&rest[from..from + digits]).ok()?;
        Some((text.parse().ok()?, from + digits))
    };
    let (low, mut i) = number(0)?;
    if rest.get(i) == Some(&b',') {
        i += 1;
        if rest.get(i).is_some_and(u8::is_ascii_digit) {
            let (high, end) = number(i)?;
            if high < low {
                return None;
            }
            i = end;
        }
    }
    if rest.get(i) != Some(&b'}') {
        return None;
    }
    i += 1;
    if rest.get(i) == Some(&b'?') {
        i += 1;
    }
    Some(i)
}

/// Returns true if and only if `pattern` has a `|` outside every group and class, which makes
/// its anchors apply to one branch only.
fn has_top_level_alternation(pattern: &str) -> bool {
    let mut depth = 0usize;
    let mut in_class = false;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => depth = depth.saturating_sub(1),
            '|' if !in_class && depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// The literal text a pattern starts with, less a last character that a quantifier makes optional.
fn literal_prefix(rest: &str) -> &str {
    let end = rest.find(META).unwrap_or(rest.len());
    let literal = &rest[..end];
    if rest[end..].starts_with(['?', '*', '{']) {
        let mut chars = literal.chars();
        chars.next_back();
        return chars.as_str();
    }
    literal
}

/// The literal text a pattern ends with, less a first character that an escape makes special.
fn literal_suffix(rest: &str) -> &str {
    match rest.rfind(META) {
        None => rest,
        Some(i) => {
            let literal = &rest[i + 1..];
            if rest.as_bytes()[i] == b'\\' {
                let mut chars = literal.chars();
                chars.next();
                return chars.as_str();
            }
            literal
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(matcher: Option<&str>, tool: &str) -> bool {
        Matcher::compile(matcher).unwrap().matches(tool)
    }

    #[test]
    fn missing_empty_and_star_match_everything() {
        for matcher in [None, Some(""), Some("*")] {
            assert!(m(matcher, "write_file"));
            assert!(m(matcher, "anything"));
        }
    }

    #[test]
    fn names_are_exact() {
        assert!(m(Some("write_file|str_replace"), "str_replace"));
        assert!(m(Some(" write_file | str_replace "), "write_file"));
        assert!(!m(Some("write_file"), "write_file_v2"));
        assert!(!m(Some("write_file"), "my_write_file"));
        assert!(!m(Some("Write_File"), "write_file"));
        assert!(m(Some("run-terminal"), "run-terminal"));
    }

    #[test]
    fn other_matchers_are_unanchored_regexes() {
        assert!(m(Some("write.*"), "write_file_v2"));
        assert!(m(Some("file$"), "write_file"));
        assert!(m(Some("^read"), "read_files"));
        assert!(!m(Some("^read"), "code_read"));
        assert!(m(Some("mcp__.*"), "x_mcp__server"));
        assert!(!m(Some("Write.*"), "write_file"));
    }

    /// Whatever `ruled_out` says, compiling the regex agrees whenever it rules a tool out.
    #[test]
    fn ruled_out_agrees_with_the_regex() {
        let patterns = [
            "^write_",
            "^write_.*",
            "_file$",
            "^ab?c",
            "^ab+",
            "^a{2}b",
            "x\\d$",
            "a\\.b$",
            "^mcp__github__.*",
            "^(?i)WRITE",
            "(?i)file$",
            "^read|write$",
            "^é.*",
            "files?$",
            "^\\w+_file$",
            "^[rw]",
            "code_search$",
            "^$",
            "^str_replace$",
            "^foo(",
            "^mcp__[a-z_]+__(delete|drop)_[a-z_]+$",
            "(delete|drop)_table_5$",
            "^[|]x",
            "^a\\|b",
            "^browser_(navigate|click|type)$",
            "^(read|write)_file$",
            "x(a|b)|^write",
        ];
        let tools = [
            "write_file",
            "read_files",
            "str_replace",
            "mcp__github__x",
            "abc",
            "aab",
            "ac",
            "x1",
            "xd",
            "a.b",
            "WRITE_FILE",
            "é_x",
            "code_search",
            "",
            "file",
        ];
        for pattern in patterns {
            for tool in tools {
                if ruled_out(pattern, tool) {
                    let re = Regex::new(pattern).unwrap();
                    assert!(
                        !re.is_match(tool),
                        "{pattern:?} ruled out {tool:?} but matches"
                    );
                }
            }
        }
        assert!(ruled_out("^write_", "read_files"));
        assert!(ruled_out("_file$", "read_files"));
        assert!(ruled_out("^mcp__github__.*", "write_file"));
        assert!(
            !ruled_out("^foo(", "write_file"),
            "an invalid regex is left to be warned about"
        );
        assert!(!ruled_out("^(?i)WRITE", "write_file"));
        assert!(ruled_out("^browser_(navigate|click|type)$", "write_file"));
        assert!(ruled_out("(delete|drop)_table_5$", "write_file"));
        assert!(
            !ruled_out("^read_x|write_file", "write_file"),
            "top-level alternation"
        );
    }

    #[test]
    fn plain_patterns_are_valid_without_the_parser() {
        for pattern in [
            "^mcp__server17__(read|write)_[a-z]+$",
            "(delete|drop)_table_19$",
            "^write_",
            "files?$",
            "^\\w+_file$",
            "a\\.b$",
            "^a{2}b",
            "^a{2,}b{1,3}?",
            "[^a-z0-9_]x",
            "^[rw]",
            "x\\d$",
            "^$",
            "é.*",
            "((a|b)c)+",
        ] {
            assert!(plainly_valid(pattern), "{pattern:?}");
        }
        for pattern in [
            "^foo(",
            "*a",
            "a**",
            "a{2,1}",
            "(?i)a",
            "a|",
            "(|a)",
            "[]a]",
            "[a-]",
            "[z-a]",
            "[[:alpha:]]",
            "\\q",
            "a{",
            "a{1",
            "a{x}",
            ")",
            "a]",
            "^*",
            "[a",
            "\\",
        ] {
            assert!(!plainly_valid(pattern), "{pattern:?}");
        }
    }

    #[test]
    fn look_around_and_backreferences_are_backtracking_regexes() {
        let not_read = Matcher::compile(Some("^(?!read_)")).unwrap();
        assert!(matches!(not_read, Matcher::Backtracking(_)));
        assert!(not_read.matches("write_file"));
        assert!(!not_read.matches("read_files"));
        assert!(m(Some("(?<=mcp__)github"), "mcp__github__x"));
        assert!(!m(Some("(?<=mcp__)github"), "github"));
        assert!(m(Some("^(\\w)\\1"), "aab"));
        assert!(!m(Some("^(\\w)\\1"), "abc"));
        assert!(matches!(
            Matcher::compile(Some("^write_")).unwrap(),
            Matcher::Pattern(_)
        ));
        // Invalid for both engines: the `regex` crate's message.
        let error = Matcher::compile(Some("(?!a")).unwrap_err();
        assert!(error.contains("look-around"), "{error}");
        assert!(!needs_backtracking("(unclosed"));
    }

    #[test]
    fn invalid_regex_is_an_error() {
        assert!(Matcher::compile(Some("(unclosed")).is_err());
        assert!(Matcher::compile(Some("*foo")).is_err());
    }
}
