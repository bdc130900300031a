//! The chain that makes the log tamper-evident: what a signed line and the head file look like.
//!
//! Each line we write carries, after levelcode's fields, `seq` (0, 1, 2, … per file), `prev` (hex
//! SHA-256 of the previous signed line's bytes, without its newline; 64 zeros for the first),
//! `kid` (which key signed) and, last, `sig`: the Ed25519 signature of the line's bytes as
//! serialized without `sig`, inserted as `,"sig":"<base64>"` before the final `}`. A verifier
//! recovers the signed bytes by cutting that suffix off again, so no re-serialization (and no
//! agreement on number or key formats) is ever needed to check a line.
//!
//! `prev` links to the previous *signed* line rather than to whatever line precedes it: levelcode
//! may still append its own unsigned lines without our lock, and such a line landing between our
//! reading the tail and writing would otherwise fork the chain.
//!
//! The head file beside the log (`events.head` for `events.jsonl`) holds the last `seq` and line
//! hash, signed the same way, so cutting lines off the end of the log is caught.

use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::js_json::{self, Object, Value};
use super::keys::{self, KeyPair};

/// `prev` of the first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

const SIG_KEY: &str = ",\"sig\":\"";

/// Hex SHA-256 of a line's bytes (without its newline).
pub fn line_hash(line: &[u8]) -> String {
    keys::hex(&Sha256::digest(line))
}

/// Adds the chain fields to a line object and signs it: the finished line, without newline.
pub fn seal(mut line: Object, seq: u64, prev: &str, key: &KeyPair) -> String {
    // Sequence numbers stay far below 2^53, so the conversion is exact.
    line.set("seq", Value::Number(seq as f64));
    line.set("prev", Value::string(prev));
    line.set("kid", Value::string(key.kid()));
    sign(&js_json::stringify(&Value::Object(line)), key)
}

/// Inserts `,"sig":"<base64>"` before the final `}` of `unsigned`, a serialized JSON object.
pub fn sign(unsigned: &str, key: &KeyPair) -> String {
    let sig = key.sign(unsigned.as_bytes());
    let body = unsigned.strip_suffix('}').unwrap_or(unsigned);
    format!("{body}{SIG_KEY}{sig}\"}}")
}

/// A line split back into the bytes that were signed and the base64 signature.
pub struct SignedParts<'a> {
    pub unsigned: Vec<u8>,
    pub sig: &'a str,
}

/// Splits a line that ends in `,"sig":"<base64>"}` into the signed bytes and the signature.
/// `None` when the line does not end that way.
pub fn split_signed(line: &[u8]) -> Option<SignedParts<'_>> {
    let body = line.strip_suffix(b"\"}")?;
    let at = body
        .windows(SIG_KEY.len())
        .rposition(|window| window == SIG_KEY.as_bytes())?;
    let sig = &body[at + SIG_KEY.len()..];
    if !sig
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
    {
        return None;
    }
    let mut unsigned = body[..at].to_vec();
    unsigned.push(b'}');
    Some(SignedParts {
        unsigned,
        sig: std::str::from_utf8(sig).ok()?,
    })
}

/// Reads a non-negative integer field that a JavaScript reader would see exactly.
pub fn seq_field(line: &Object, name: &str) -> Option<u64> {
    let n = line.get(name)?.as_f64()?;
    // 2^53: beyond it doubles skip integers.
    let exact = (0.0..9_007_199_254_740_992.0).contains(&n) && n.fract() == 0.0;
    // The range check makes the conversion exact.
    exact.then_some(n as u64)
}

/// Reads a string field of lowercase hex digits of the given length.
pub fn hex_field(line: &Object, name: &str, len: usize) -> Option<String> {
    let text = js_json::lossy(line.get(name)?.as_js_string()?);
    let ok = text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    ok.then_some(text)
}

/// The head file of a log: `events.head` for `events.jsonl`.
pub fn head_path(log: &Path) -> PathBuf {
    let stem = log.file_stem().map_or_else(
        || "events".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    log.with_file_name(format!("{stem}.head"))
}

/// The last link of the chain, as the head file records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub seq: u64,
    /// Hex SHA-256 of the line with that `seq`.
    pub hash: String,
}

impl Head {
    /// The signed head line (without newline).
    pub fn to_line(&self, key: &KeyPair) -> String {
        let mut head = Object::new();
        // Sequence numbers stay far below 2^53, so the conversion is exact.
        head.set("seq", Value::Number(self.seq as f64));
        head.set("hash", Value::string(&self.hash));
        head.set("kid", Value::string(key.kid()));
        sign(&js_json::stringify(&Value::Object(head)), key)
    }

    /// Writes the head file atomically.
    pub fn write(&self, path: &Path, key: &KeyPair) -> io::Result<()> {
        keys::write_line(path, &self.to_line(key), 0o644)
    }
}

/// A head file as read back: its fields and the parts needed to check its signature.
#[derive(Debug, Clone)]
pub struct HeadRecord {
    pub head: Head,
    pub kid: String,
    pub unsigned: Vec<u8>,
    pub sig: String,
}

/// Parses the text of a head file. `None` when it is not a head line.
pub fn parse_head(text: &str) -> Option<HeadRecord> {
    let line = text.trim_end_matches(['\n', '\r']);
    let object = js_json::parse(line).ok()?;
    let object = object.as_object()?;
    let parts = split_signed(line.as_bytes())?;
    Some(HeadRecord {
        head: Head {
            seq: seq_field(object, "seq")?,
            hash: hex_field(object, "hash", 64)?,
        },
        kid: hex_field(object, "kid", 16)?,
        unsigned: parts.unsigned,
        sig: parts.sig.to_string(),
    })
}

/// Reads a head file: `Ok(None)` when it does not exist, `Err` with a reason when it cannot be
/// read or is not a head.
pub fn read_head(path: &Path) -> Result<Option<HeadRecord>, String> {
    match crate::fs::read_regular(path) {
        Ok(text) => parse_head(&text)
            .map(Some)
            .ok_or_else(|| format!("{} is not a signed head line", path.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_line_splits_back_into_what_was_signed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let key = keys::load_or_create(dir.path()).expect("key");
        let mut line = Object::new();
        line.set("traceId", Value::string("t"));
        line.set(
            "payload",
            js_json::parse(r#"{"sig":"x","n":1.0}"#).expect("json"),
        );
        let sealed = seal(line, 7, GENESIS, &key);
        let unsigned = format!(
            r#"{{"traceId":"t","payload":{{"sig":"x","n":1}},"seq":7,"prev":"{GENESIS}","kid":"{}"}}"#,
            key.kid()
        );
        assert!(sealed.starts_with(unsigned.strip_suffix('}').expect("object")));
        let parts = split_signed(sealed.as_bytes()).expect("signed");
        assert_eq!(parts.unsigned, unsigned.as_bytes());
        assert_eq!(parts.sig.len(), 88);

        let parsed = js_json::parse(&sealed).expect("valid JSON");
        let parsed = parsed.as_object().expect("object");
        assert_eq!(seq_field(parsed, "seq"), Some(7));
        assert_eq!(hex_field(parsed, "kid", 16).as_deref(), Some(key.kid()));
        assert_eq!(
            parsed.ordered().last().map(|(k, _)| js_json::lossy(k)),
            Some("sig".to_string())
        );
    }

    #[test]
    fn unsigned_lines_do_not_split() {
        assert!(split_signed(br#"{"a":1}"#).is_none());
        assert!(split_signed(br#"{"sig":"abc"}"#).is_none());
        assert!(split_signed(br#"{"a":1,"sig":"ab c"}"#).is_none());
    }

    #[test]
    fn head_round_trips() {
        let dir = tempfile::tempdir().expect("temp dir");
        let key = keys::load_or_create(dir.path()).expect("key");
        let head = Head {
            seq: 41,
            hash: line_hash(b"x"),
        };
        let path = dir.path().join("events.head");
        head.write(&path, &key).expect("written");
        let record = read_head(&path).expect("readable").expect("present");
        assert_eq!(record.head, head);
        assert_eq!(record.kid, key.kid());
        assert!(read_head(&dir.path().join("none.head"))
            .expect("no error")
            .is_none());
    }

    #[test]
    fn head_sits_beside_the_log() {
        assert_eq!(
            head_path(Path::new("a/b/events.jsonl")),
            PathBuf::from("a/b/events.head")
        );
    }
}
