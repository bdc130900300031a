//! Which groups apply to a tool (contract §5).
//!
//! A matcher of plain names is an exact list, so `write_file` never matches `write_file_v2`;
//! anything else is a regular expression searched unanchored, with the `regex` crate's syntax
//! and meaning. A matcher is compiled once per dispatch and tested against a name of a few
//! dozen bytes, so the engine that runs it is chosen for its compile time, not its search
//! speed: `regex` builds literal searchers, a lazy DFA and reverse automata for each pattern
//! (tens to hundreds of microseconds; over half a millisecond for a Unicode `\w`), while
//! `regex-lite` compiles one small NFA in one or two (docs/BENCHMARKS.md, "Matchers").
//!
//! `regex-lite` reads some patterns differently: its `\w`, `\d`, `\s` and `\b` know only
//! ASCII, its case folding only ASCII letters, and it takes `(?-u)` where `regex` refuses what
//! could match invalid UTF-8. On an ASCII name and a pattern [`lite_reads_as_regex`] accepts,
//! the two agree; any other pattern, and any name that is not ASCII, go to `regex` (built on
//! first need for a name that is not ASCII). A pattern that the `regex` crate rejects only for
//! what it lacks by design (look-ahead, look-behind, backreferences, as in JavaScript's
//! `^(?!read_)`) is compiled by `fancy-regex`, a backtracking engine made for them; neither of
//! the larger engines is built for a pattern that a smaller one takes.

use std::sync::OnceLock;

use regex::Regex;

/// A compiled group matcher.
#[derive(Debug)]
pub enum Matcher {
    /// Missing, `""` or `"*"`: every tool.
    Any,
    /// `a|b|c` of plain names: exactly these tools.
    Names(Vec<String>),
    /// A regex that `regex-lite` runs as `regex` would, on ASCII names.
    Lite(LitePattern),
    /// Anything else: a regex searched anywhere in the tool name.
    Pattern(Regex),
    /// A regex with look-around or backreferences, which only a backtracking engine runs.
    Backtracking(fancy_regex::Regex),
}

/// A regex compiled by `regex-lite`, with the `regex` crate's compilation of the same pattern
/// kept for a name that is not ASCII.
#[derive(Debug)]
pub struct LitePattern {
    lite: regex_lite::Regex,
    /// Built the first time a name that is not ASCII is tested; `None` if `regex` refused it,
    /// which [`LITE_SIZE_LIMIT`] rules out.
    full: OnceLock<Option<Regex>>,
}

impl LitePattern {
    /// Returns true if and only if the pattern matches somewhere in `tool`.
    fn is_match(&self, tool: &str) -> bool {
        if tool.is_ascii() {
            return self.lite.is_match(tool);
        }
        self.full
            .get_or_init(|| Regex::new(self.lite.as_str()).ok())
            .as_ref()
            .is_some_and(|re| re.is_match(tool))
    }
}

/// The largest `regex-lite` automaton, in bytes, for which [`Matcher::compile`] takes its
/// verdict that a pattern is valid. The `regex` crate refuses automata over 10 MiB of its own,
/// and its Unicode `\w` costs it about 750 times what `regex-lite`'s ASCII one costs (it takes
/// at most 209 of them in a row), so a pattern `regex-lite` builds in 4 KiB (at most 62 `\w`,
/// or some 120 literal characters) is well within `regex`'s limit; a larger one goes to
/// `regex`, which decides. A unit test holds the margin.
pub const LITE_SIZE_LIMIT: usize = 4 * 1024;

/// Patterns longer than this go to `regex`: `regex-lite` refuses nesting deeper than 50, the
/// `regex` crate deeper than 250, and a pattern this short cannot nest deeper than that.
const LITE_MAX_LEN: usize = 250;

/// Returns true if and only if `regex-lite` and the `regex` crate read `pattern` alike on every
/// ASCII name, judged from its text alone: it is at most [`LITE_MAX_LEN`] bytes long, no
/// `(?...)` group names the `u` flag (`regex-lite` ignores it, so `(?-u:.)`, which `regex`
/// refuses, would be valid) or the `x` flag, no flag group like `(?i)` is followed by a
/// repetition operator, and, where a group names the `i` flag, the text is ASCII with no
/// `\x`, `\u` or `\U` escape and no negated POSIX class, which could bring in the Kelvin sign
/// or the long s, whose Unicode case folding reaches the ASCII `k` and `s`. The Perl classes,
/// word boundaries and ASCII case folding of `regex-lite` agree with `regex`'s on ASCII text.
/// The check is conservative: a flag named anywhere, even in a comment or a group name, counts.
pub fn lite_reads_as_regex(pattern: &str) -> bool {
    if pattern.len() > LITE_MAX_LEN {
        return false;
    }
    let bytes = pattern.as_bytes();
    let mut case_insensitive = false;
    let mut at = 0;
    while let Some(found) = crate::bytes::find(&bytes[at..], b"(?") {
        let flags_start = at + found + 2;
        let flags = &bytes[flags_start..];
        let flags = &flags[..flags
            .iter()
            .position(|b| matches!(b, b':' | b')'))
            .unwrap_or(flags.len())];
        // `regex-lite` repeats what came before a flag group, as in `a(?i)*`; `regex` says
        // the repetition has nothing to repeat. In `x` mode, spaces and comments could come
        // between the two.
        let closes = bytes.get(flags_start + flags.len()) == Some(&b')');
        let repeated = bytes
            .get(flags_start + flags.len() + 1)
            .is_some_and(|b| b"*+?{".contains(b));
        if flags.contains(&b'u') || flags.contains(&b'x') || (closes && repeated) {
            return false;
        }
        case_insensitive |= flags.contains(&b'i');
        at = flags_start;
    }
    !case_insensitive || (pattern.is_ascii() && !has_code_point_escape(bytes))
}

/// Returns true if and only if `pattern` has a `\x`, `\u` or `\U` escape (a code point by
/// number) or a negated POSIX class (`[:^alpha:]`).
fn has_code_point_escape(pattern: &[u8]) -> bool {
    let mut i = 0;
    while i < pattern.len() {
        match pattern[i] {
            b'\\' => {
                if matches!(pattern.get(i + 1), Some(b'x' | b'u' | b'U')) {
                    return true;
                }
                i += 2;
            }
            b'[' if pattern[i + 1..].starts_with(b":^") => return true,
            _ => i += 1,
        }
    }
    false
}

/// Returns true if and only if `matcher` is a list of exact names: only ASCII letters, digits,
/// `_`, `-`, `|` and spaces.
pub fn is_name_list(matcher: &str) -> bool {
    matcher
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'|' | b' '))
}

impl Matcher {
    /// Compiles a group's matcher; the error is the `regex` crate's own message.
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
        if lite_reads_as_regex(text) {
            // A pattern `regex-lite` refuses (a Unicode class, a set operation, look-around,
            // an automaton over the limit) is `regex`'s to judge, below.
            if let Ok(lite) = regex_lite::RegexBuilder::new(text)
                .size_limit(LITE_SIZE_LIMIT)
                .build()
            {
                return Ok(Matcher::Lite(LitePattern {
                    lite,
                    full: OnceLock::new(),
                }));
            }
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
            Matcher::Lite(pattern) => pattern.is_match(tool),
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

/// Returns true if and only if `b` is a character that ends a run of literal text in a
/// pattern. All of them are ASCII, so a byte of a longer UTF-8 character is never one.
fn is_meta(b: u8) -> bool {
    matches!(
        b,
        b'\\'
            | b'.'
            | b'+'
            | b'*'
            | b'?'
            | b'('
            | b')'
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'|'
            | b'^'
            | b'$'
    )
}

/// Returns true if and only if the regex `pattern` certainly cannot match `tool`: see
/// [`anchors_rule_out`]; a pattern that does not parse is never ruled out, since its group must
/// still be warned about.
pub fn ruled_out(pattern: &str, tool: &str) -> bool {
    if never_ruled_out(pattern) {
        return false;
    }
    let plain = plain_shape(pattern);
    rule_out(pattern, tool, plain)
        && (plain.is_some()
            || regex_syntax::ast::parse::Parser::new()
                .parse(pattern)
                .is_ok())
}

/// Returns true if and only if literal text that every match of `pattern` must contain rules
/// out `tool`, judged without compiling anything: compiling one regex costs more than a whole
/// dispatch that matches nothing, and most regex matchers name literal text. The text is what a
/// pattern anchors at the start (`^write_`) or the end (`_file$`), or, in a pattern of the plain
/// syntax [`plainly_valid`] vouches for, any run of literals outside groups and classes
/// (`mcp__` and `__` in `mcp__.*__(delete|drop)`); a top-level alternation is ruled out when
/// each of its branches is, and only in that plain syntax. A pattern with flags is never ruled
/// out. Whether the pattern is valid at all is [`parses`]' question.
pub fn anchors_rule_out(pattern: &str, tool: &str) -> bool {
    !never_ruled_out(pattern) && rule_out(pattern, tool, plain_shape(pattern))
}

/// Returns true for what matches every tool or is a list of names: no regex to rule out.
fn never_ruled_out(pattern: &str) -> bool {
    pattern.is_empty() || pattern == "*" || is_name_list(pattern)
}

/// [`anchors_rule_out`] of a regex whose [`plain_shape`] is `plain`.
fn rule_out(pattern: &str, tool: &str, plain: Option<Plain>) -> bool {
    let (excluded, alternation) = match plain {
        // A plainly valid pattern has no stacked quantifier (each of its quantifiers follows
        // something it can repeat, which a quantifier is not), and its scan saw the rest.
        Some(shape) => (shape.flag_text, shape.top_level_alternation),
        None => (
            pattern.as_bytes().windows(2).any(|w| w == b"(?") || has_stacked_quantifiers(pattern),
            has_top_level_alternation(pattern),
        ),
    };
    if excluded {
        return false;
    }
    if !alternation {
        return anchored_text_rules_out(pattern, tool)
            || (plain.is_some() && literal_runs_rule_out(pattern, tool));
    }
    plain.is_some()
        && top_level_branches(pattern)
            .iter()
            .all(|b| anchored_text_rules_out(b, tool) || literal_runs_rule_out(b, tool))
}

/// Returns true if and only if a quantifier of `pattern` is itself repeated, as in `a+??` (the
/// lazy `a+?` made optional, which matches the empty text) or `a{2}*`. Such a pattern is never
/// ruled out: the rules above read a `+` as "at least once", which a second quantifier undoes.
/// A `?` right after a quantifier makes it lazy and is not counted; escapes and classes are
/// passed over.
fn has_stacked_quantifiers(pattern: &str) -> bool {
    let bytes = pattern.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let after = match bytes[i] {
            b'\\' => {
                i += 2;
                continue;
            }
            b'[' => {
                i += 1 + class_end(&bytes[i + 1..]).unwrap_or(0);
                continue;
            }
            b'?' | b'*' | b'+' => i + 1,
            b'{' => match bytes[i..].iter().position(|b| *b == b'}') {
                Some(p) => i + p + 1,
                None => return true,
            },
            _ => {
                i += 1;
                continue;
            }
        };
        let next = if bytes.get(after) == Some(&b'?') {
            after + 1
        } else {
            after
        };
        if matches!(bytes.get(next), Some(b'?' | b'*' | b'+' | b'{')) {
            return true;
        }
        i = next;
    }
    false
}

/// Returns true if and only if the literal text that `branch` anchors at its start or end is
/// not where `tool` has it.
fn anchored_text_rules_out(branch: &str, tool: &str) -> bool {
    let by_prefix = || {
        branch
            .strip_prefix('^')
            .is_some_and(|rest| !tool.starts_with(literal_prefix(rest)))
    };
    let by_suffix = || {
        branch
            .strip_suffix('$')
            .filter(|rest| !rest.ends_with('\\'))
            .is_some_and(|rest| !tool.ends_with(literal_suffix(rest)))
    };
    by_prefix() || by_suffix()
}

/// The length of a group's text after its `(`, through its `)`, in a plainly valid pattern.
fn group_end(rest: &[u8]) -> usize {
    let mut depth = 1;
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            b'\\' => i += 1,
            b'[' => i += class_end(&rest[i + 1..]).unwrap_or(0),
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    rest.len()
}

/// The branches of a plainly valid pattern's top-level alternation.
fn top_level_branches(pattern: &str) -> Vec<&str> {
    let bytes = pattern.as_bytes();
    let mut branches = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'[' => i += 1 + class_end(&bytes[i + 1..]).unwrap_or(0),
            b'(' => i += 1 + group_end(&bytes[i + 1..]),
            b'|' => {
                branches.push(&pattern[start..i]);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    branches.push(&pattern[start..]);
    branches
}

/// Returns true if and only if a run of literal characters that every match of `branch` holds
/// is missing from `tool`. `branch` has no top-level `|` and keeps to [`plainly_valid`]'s
/// syntax. A run ends at anything but a literal or an escaped metacharacter; a character that
/// `?`, `*` or `{..}` repeats leaves its run, `+` keeps it (it is there at least once).
fn literal_runs_rule_out(branch: &str, tool: &str) -> bool {
    let bytes = branch.as_bytes();
    let mut run = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let ends_run = match bytes[i] {
            b'\\' => {
                let escaped = bytes.get(i + 1).copied().unwrap_or(b'\\');
                i += 2;
                if b"dwsDWSbB".contains(&escaped) {
                    true
                } else {
                    run.push(char::from(escaped));
                    false
                }
            }
            b'[' => {
                i += 1 + class_end(&bytes[i + 1..]).unwrap_or(0);
                true
            }
            b'(' => {
                i += 1 + group_end(&bytes[i + 1..]);
                true
            }
            b'?' | b'*' => {
                run.pop();
                i += 1;
                true
            }
            b'{' => {
                run.pop();
                i += bytes[i..]
                    .iter()
                    .position(|b| *b == b'}')
                    .map_or(bytes.len(), |p| p + 1);
                true
            }
            b'+' | b'.' | b'^' | b'$' | b')' | b'|' => {
                i += 1;
                true
            }
            _ => {
                let c = branch[i..].chars().next().unwrap_or_default();
                run.push(c);
                i += c.len_utf8();
                false
            }
        };
        if ends_run {
            if !run.is_empty() && !tool.contains(run.as_str()) {
                return true;
            }
            run.clear();
        }
    }
    !run.is_empty() && !tool.contains(run.as_str())
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
/// it contains: literals, `.`, escaped metacharacters, `\d \w \s` and their negations, `\b`
/// and `\B`, simple
/// classes such as `[a-z0-9_]`, plain groups, `|` between non-empty branches, `^`, `$`, and
/// quantifiers after something they can repeat. False means only "not plainly valid": the
/// syntax parser then decides. Building the parser's syntax tree costs tens of thousands of
/// instructions per pattern; this scan, a few per byte.
fn plainly_valid(pattern: &str) -> bool {
    plain_shape(pattern).is_some()
}

/// The bytes [`plain_shape`] reads as syntax; every other byte is a literal.
const SYNTAX: [bool; 256] = {
    let mut table = [false; 256];
    let syntax = b"\\[()|^$*+?{]}";
    let mut i = 0;
    while i < syntax.len() {
        table[syntax[i] as usize] = true;
        i += 1;
    }
    table
};

/// What the scan of a plainly valid pattern found besides its validity.
#[derive(Clone, Copy)]
struct Plain {
    /// A `|` outside every group and class, as [`has_top_level_alternation`] finds it (in a
    /// plainly valid pattern a class holds no `[`, `]` or `|`, and every escape is one byte).
    top_level_alternation: bool,
    /// The text `(?` somewhere: in a plainly valid pattern, only an escaped `\(` made optional.
    flag_text: bool,
}

/// [`plainly_valid`], in the same scan telling what [`rule_out`] also asks.
fn plain_shape(pattern: &str) -> Option<Plain> {
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
    let mut shape = Plain {
        top_level_alternation: false,
        flag_text: false,
    };
    let mut depth = 0usize;
    let mut last = Last::Open;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        if !SYNTAX[usize::from(b)] {
            // A literal character (or a byte of one), the most of most patterns.
            last = Last::Item;
            continue;
        }
        last = match b {
            b'\\' => match bytes.get(i) {
                Some(c) if b"\\.+*?()|[]{}^$dwsDWSbB".contains(c) => {
                    shape.flag_text |= *c == b'(' && bytes.get(i + 1) == Some(&b'?');
                    i += 1;
                    Last::Item
                }
                _ => return None,
            },
            b'[' => match class_end(&bytes[i..]) {
                Some(len) => {
                    i += len;
                    Last::Item
                }
                None => return None,
            },
            b'(' => {
                if bytes.get(i) == Some(&b'?') || depth == 64 {
                    return None;
                }
                depth += 1;
                Last::Open
            }
            b')' | b'|' if last == Last::Open => return None,
            b')' => {
                if depth == 0 {
                    return None;
                }
                depth -= 1;
                Last::Item
            }
            b'|' => {
                shape.top_level_alternation |= depth == 0;
                Last::Open
            }
            b'^' | b'$' => Last::Fixed,
            b'*' | b'+' | b'?' | b'{' if last != Last::Item => return None,
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
                None => return None,
            },
            b']' | b'}' => return None,
            _ => Last::Item,
        };
    }
    (depth == 0 && last != Last::Open).then_some(shape)
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
    // Bytes, not characters: every byte that matters is ASCII, and an escape that skips only
    // the first byte of a longer character leaves bytes that are never one of them.
    let mut bytes = pattern.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'\\' => {
                bytes.next();
            }
            b'[' if !in_class => in_class = true,
            b']' if in_class => in_class = false,
            b'(' if !in_class => depth += 1,
            b')' if !in_class => depth = depth.saturating_sub(1),
            b'|' if !in_class && depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// The literal text a pattern starts with, less a last character that a quantifier makes optional.
fn literal_prefix(rest: &str) -> &str {
    let end = rest.bytes().position(is_meta).unwrap_or(rest.len());
    let literal = &rest[..end];
    if rest[end..].starts_with(['?', '*', '{']) {
        let mut chars = literal.chars();
        chars.next_back();
        return chars.as_str();
    }
    literal
}

/// The literal text a pattern ends with, less a first character that an escape makes special;
/// nothing after an escaped letter or digit.
fn literal_suffix(rest: &str) -> &str {
    match rest.bytes().rposition(is_meta) {
        None => rest,
        Some(i) => {
            let literal = &rest[i + 1..];
            if rest.as_bytes()[i] == b'\\' {
                // An escaped letter or digit opens a class or a code (`\pL`, `\x41`, `\u{..}`)
                // whose end this does not read: nothing is known of the text then.
                if literal.starts_with(|c: char| c.is_ascii_alphanumeric()) {
                    return "";
                }
                let mut chars = literal.chars();
                chars.next();
                return chars.as_str();
            }
            literal
        }
    }
}

#[cfg(test)]
#[path = "matcher_tests.rs"]
mod tests;
