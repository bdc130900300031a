//! "Did you mean": the nearest known word to a near miss such as `comand` or `PreToolUSe`.

/// The candidate closest to `word`, when it is close enough to be a slip: same letters in another
/// case, or within one edit (two for words of five letters or more), counting a swap of two
/// neighbouring letters as one edit.
pub fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = word.to_lowercase();
    let limit = if word.chars().count() >= 5 { 2 } else { 1 };
    candidates
        .iter()
        .map(|c| (distance(&lower, &c.to_lowercase()), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// neighbouring characters.
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
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

    #[test]
    fn distance_counts_swaps_once() {
        assert_eq!(distance("ab", "ba"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
    }
}
