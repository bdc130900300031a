//! Which groups apply to a tool (contract §5).
//!
//! A matcher of plain names is an exact list, so `write_file` never matches `write_file_v2`;
//! anything else is a regular expression searched unanchored.

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
        Regex::new(text)
            .map(Matcher::Pattern)
            .map_err(|e| e.to_string())
    }

    /// Returns true if and only if the group applies to `tool`.
    pub fn matches(&self, tool: &str) -> bool {
        match self {
            Matcher::Any => true,
            Matcher::Names(names) => names.iter().any(|n| n == tool),
            Matcher::Pattern(re) => re.is_match(tool),
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

    #[test]
    fn invalid_regex_is_an_error() {
        assert!(Matcher::compile(Some("(unclosed")).is_err());
        assert!(Matcher::compile(Some("*foo")).is_err());
    }
}
