//! Keeping a handler's output: the first 64 KiB of a stream, cut at a UTF-8 boundary, while the
//! rest is drained and counted (contract §6).

/// How much of each stream a result keeps.
pub const KEEP_BYTES: usize = 64 * 1024;

/// One captured stream.
#[derive(Debug, Default)]
pub struct Capture {
    kept: Vec<u8>,
    total: u64,
}

impl Capture {
    pub fn push(&mut self, bytes: &[u8]) {
        let room = KEEP_BYTES.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.total += bytes.len() as u64;
    }

    /// Returns true if and only if more was written than is kept.
    pub fn truncated(&self) -> bool {
        self.total > self.kept.len() as u64
    }

    /// The kept text: bytes that are not UTF-8 replaced, and when cut short, a character split by
    /// the cut dropped whole.
    pub fn text(&self) -> String {
        let mut kept = &self.kept[..];
        if self.truncated() {
            kept = &kept[..complete_prefix_len(kept)];
        }
        String::from_utf8_lossy(kept).into_owned()
    }
}

/// The length of `bytes` without a multi-byte UTF-8 sequence that the end cuts in two.
fn complete_prefix_len(bytes: &[u8]) -> usize {
    // A sequence is at most 4 bytes, so only the last 3 can start an incomplete one.
    for back in 1..=bytes.len().min(3) {
        let i = bytes.len() - back;
        let b = bytes[i];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for its start
        }
        let needed = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if needed > back { i } else { bytes.len() };
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_64_kib_and_counts_the_rest() {
        let mut c = Capture::default();
        c.push(&vec![b'a'; KEEP_BYTES - 1]);
        assert!(!c.truncated());
        c.push(b"bcd");
        assert!(c.truncated());
        assert_eq!(c.text().len(), KEEP_BYTES);
        assert!(c.text().ends_with("ab"));
    }

    #[test]
    fn cut_drops_a_split_character() {
        let mut c = Capture::default();
        c.push(&vec![b'a'; KEEP_BYTES - 2]);
        c.push("€€".as_bytes()); // 3 bytes each: the first is split by the cut
        assert!(c.truncated());
        assert_eq!(c.text().len(), KEEP_BYTES - 2);
        assert!(!c.text().contains('\u{FFFD}'));
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let mut c = Capture::default();
        c.push(b"ok \xff\xfe end");
        assert_eq!(c.text(), "ok \u{FFFD}\u{FFFD} end");
    }

    #[test]
    fn complete_sequences_stay() {
        assert_eq!(complete_prefix_len("a€".as_bytes()), 4);
        assert_eq!(complete_prefix_len(&"a€".as_bytes()[..3]), 1);
        assert_eq!(complete_prefix_len("😀".as_bytes()), 4);
        assert_eq!(complete_prefix_len(&"😀".as_bytes()[..3]), 0);
    }
}
