//! Which session a dispatch belongs to (contract §21): the payload's `session_id` (else its
//! `sessionId`), or, for a payload without one, its project root. A background handler's result
//! goes to the next dispatch of the same session; the session's key names its spool, so the
//! id is checked, then hashed, and never put into a path as it is.

use std::path::Path;

use sha2::{Digest, Sha256};

/// The longest session id taken.
const MAX_ID: usize = 256;

/// A dispatch's session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// The key its results are kept under, and its spool's folder name: hexadecimal digits.
    pub key: String,
    /// The id as the payload gave it; `None` for the project root's unnamed session.
    pub id: Option<String>,
}

impl Session {
    /// The session of a payload with `id` (its `session_id`) about the project `root`; the
    /// warning when the id cannot name one.
    pub fn of(id: Option<&str>, root: &Path) -> Result<Session, String> {
        let Some(id) = id else {
            let mut seed = b"project\0".to_vec();
            seed.extend_from_slice(root.as_os_str().as_encoded_bytes());
            return Ok(Session {
                key: hashed(&seed),
                id: None,
            });
        };
        check(id)?;
        let mut seed = b"session\0".to_vec();
        seed.extend_from_slice(id.as_bytes());
        Ok(Session {
            key: hashed(&seed),
            id: Some(id.to_string()),
        })
    }
}

/// Returns why `id` cannot name a session, if it cannot: empty, longer than [`MAX_ID`], or
/// holding a `/`, a `\`, `..`, NUL or another control character.
fn check(id: &str) -> Result<(), String> {
    let why = if id.is_empty() {
        "it is empty"
    } else if id.len() > MAX_ID {
        "it is longer than 256 bytes"
    } else if id.contains(['/', '\\']) || id.contains("..") {
        "it holds '/', '\\' or '..'"
    } else if id.chars().any(char::is_control) {
        "it holds a control character"
    } else {
        return Ok(());
    };
    Err(format!(
        "payload: session_id {} cannot name a session ({why}); background handlers were not started",
        crate::settings::short_json(&serde_json::Value::String(id.to_string()))
    ))
}

/// The first 16 bytes of the SHA-256 of `seed`, in hexadecimal.
fn hashed(seed: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = Sha256::digest(seed);
    digest[..16]
        .iter()
        .fold(String::with_capacity(32), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_hashed_and_never_a_path() {
        let root = Path::new("/p");
        let a = Session::of(Some("3f2a-uuid"), root).unwrap();
        assert_eq!(a.key.len(), 32);
        assert!(a.key.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(a, Session::of(Some("3f2a-uuid"), Path::new("/q")).unwrap());
        assert_ne!(a.key, Session::of(Some("3f2a-uuie"), root).unwrap().key);
        let unnamed = Session::of(None, root).unwrap();
        assert_eq!(unnamed.id, None);
        assert_ne!(unnamed.key, Session::of(None, Path::new("/q")).unwrap().key);
        // No id can stand for a project's unnamed session.
        assert_ne!(
            unnamed.key,
            Session::of(Some("/p"), root)
                .map(|s| s.key)
                .unwrap_or_default()
        );
    }

    #[test]
    fn an_id_that_could_walk_out_of_a_folder_is_refused() {
        for id in [
            "",
            "../../etc",
            "a/b",
            "a\\b",
            "..",
            "a\0b",
            "a\nb",
            &"x".repeat(257),
        ] {
            let warning = Session::of(Some(id), Path::new("/p")).unwrap_err();
            assert!(warning.contains("cannot name a session"), "{warning}");
        }
        assert!(Session::of(Some("a.b-c_d:e"), Path::new("/p")).is_ok());
    }
}
