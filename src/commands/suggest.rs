//! "Did you mean": the nearest known word to a near miss such as `comand` or `PreToolUSe`.

/// The candidate closest to `word`, when it is close enough to be a slip: same letters in another
/// case, or within one edit (two for words of five letters or more), counting a swap of two
/// neighbouring letters as one edit (the optimal string alignment distance).
pub fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = word.to_lowercase();
    let limit = if word.chars().count() >= 5 { 2 } else { 1 };
    candidates
        .iter()
        .map(|c| (strsim::osa_distance(&lower, &c.to_lowercase()), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HANDLER: &[&str] = &["type", "command", "argv", "timeout", "enabled", "name"];

    #[test]
    fn near_misses() {
        assert_eq!(nearest("comand", HANDLER), Some("command"));
        assert_eq!(nearest("timout", HANDLER), Some("timeout"));
        assert_eq!(nearest("Timeout", HANDLER), Some("timeout"));
        assert_eq!(nearest("args", HANDLER), Some("argv"));
        assert_eq!(nearest("enable", HANDLER), Some("enabled"));
        assert_eq!(nearest("commnad", HANDLER), Some("command"));
        assert_eq!(
            nearest("matchers", &["matcher", "hooks", "enabled"]),
            Some("matcher")
        );
        assert_eq!(
            nearest("PreToolUSe", &["PreToolUse", "PostToolUse"]),
            Some("PreToolUse")
        );
    }

    #[test]
    fn far_words_get_no_suggestion() {
        assert_eq!(nearest("description", HANDLER), None);
        assert_eq!(nearest("x", HANDLER), None);
        assert_eq!(nearest("env", HANDLER), None);
    }
}
