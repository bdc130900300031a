//! What a person is shown is what runs (contract §13): control characters, bidirectional
//! overrides and other invisible characters in a command or a path are shown escaped, so that
//! a terminal cannot be made to draw something other than what the text holds.
//!
//! `\r`, `\x1b[2K` or a right-to-left override in a hook's command could otherwise hide the
//! part that matters behind a harmless line. Each such character is written as an escape: `\n`,
//! `\r`, `\t`, `\xHH` for the other C0 and C1 controls and DEL, `\uHHHH` (or `\UHHHHHHHH`) for
//! the invisible and direction-changing characters. Once any character is escaped, a backslash
//! is written `\\`, so that no escape can be mistaken for text.

use std::borrow::Cow;

/// Returns true if and only if `c` is drawn as something other than itself, or not at all.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\0'..='\x1f' | '\x7f'..='\u{9f}'
        // Soft hyphen, Arabic letter mark, Mongolian vowel separator.
        | '\u{ad}' | '\u{61c}' | '\u{180e}'
        // Zero-width spaces and joiners, direction marks, line and paragraph separators,
        // embeddings and overrides, word joiner and invisible operators, isolates.
        | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{206f}'
        // Hangul fillers, the byte-order mark, interlinear annotations, tags, variation
        // selectors.
        | '\u{115f}' | '\u{1160}' | '\u{3164}' | '\u{ffa0}'
        | '\u{feff}' | '\u{fff9}'..='\u{fffb}'
        | '\u{e0000}'..='\u{e007f}' | '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}')
}

/// Returns true if and only if `text` holds a character that a terminal would not show as
/// itself, other than a line break or a tab (which a multi-line command has).
pub fn needs_warning(text: &str) -> bool {
    text.chars()
        .any(|c| is_invisible(c) && c != '\n' && c != '\t')
}

/// `text` with every invisible character escaped; borrowed when there is none.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_invisible) {
        return Cow::Borrowed(text);
    }
    use std::fmt::Write as _;
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_invisible(c) && u32::from(c) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if is_invisible(c) && u32::from(c) <= 0xffff => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if is_invisible(c) => {
                let _ = write!(out, "\\U{:08x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A text of many lines (a script) with every invisible character escaped but its line breaks
/// and tabs: each line that holds another is escaped whole, as [`escape`] does.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if needs_warning(line) {
            out.push_str(&escape(line));
        } else {
            out.push_str(line);
        }
    }
    out
}

/// A line of JSON with every invisible character that is not ASCII written as a JSON escape
/// (`\u202e`): the same JSON value, shown as what it holds. (JSON already escapes the ASCII
/// control characters; outside its strings there is nothing but ASCII.)
pub fn json(line: &str) -> Cow<'_, str> {
    if !line.chars().any(|c| !c.is_ascii() && is_invisible(c)) {
        return Cow::Borrowed(line);
    }
    use std::fmt::Write as _;
    let mut out = String::with_capacity(line.len() + 16);
    for c in line.chars() {
        if !c.is_ascii() && is_invisible(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The warning for a handler at `place` whose command holds invisible characters.
pub fn warning(place: &str) -> String {
    format!(
        "{place}: the command holds control or invisible characters (shown escaped, as \\x1b or \
         \\u202e); a terminal would not show them as they are, so read it closely before you \
         trust it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_characters_are_escaped_and_the_rest_is_not() {
        assert!(matches!(escape("sh a.sh > b"), Cow::Borrowed(_)));
        assert_eq!(escape("é ü 中"), "é ü 中");
        assert_eq!(
            escape("curl x|sh\r\x1b[2K  command: ok \\"),
            "curl x|sh\\r\\x1b[2K  command: ok \\\\"
        );
        assert_eq!(escape("a\u{202e}b\u{200b}\u{85}"), "a\\u202eb\\u200b\\x85");
        assert_eq!(escape("\u{e0041}"), "\\U000e0041");
        assert_eq!(escape("a\nb"), "a\\nb");
        assert!(!needs_warning("a\nb\tc"));
        assert!(needs_warning("a\u{2066}b"));
        let line = serde_json::json!({"s": "a\u{202e}b\u{e0041}\x1b"}).to_string();
        let shown = json(&line);
        assert_eq!(shown, r#"{"s":"a\u202eb\udb40\udc41\u001b"}"#);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&shown).unwrap(),
            serde_json::from_str::<serde_json::Value>(&line).unwrap()
        );
    }
}
