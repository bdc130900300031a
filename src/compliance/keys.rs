//! The Ed25519 key pair that signs a team's log, and the public keys that verify it.
//!
//! Beside the log: `signing.key` (the 32-byte seed in base64, mode 0600) and `signing.pub` (the
//! 32-byte public key in base64). A retired public key is kept as `signing-<kid>.pub` so lines it
//! signed still verify after a rotation. The key id (`kid`) is the first 16 hex digits of the
//! SHA-256 of the public key: it names the key in every line without repeating it.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest as _, Sha256};

pub const SECRET_FILE: &str = "signing.key";
pub const PUBLIC_FILE: &str = "signing.pub";

/// The writer's key pair.
pub struct KeyPair {
    signing: SigningKey,
    kid: String,
}

/// Shows the key id only: the seed never reaches a log or a panic message.
impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPair")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl KeyPair {
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The Ed25519 signature of `message`, in base64.
    pub fn sign(&self, message: &[u8]) -> String {
        BASE64.encode(self.signing.sign(message).to_bytes())
    }
}

/// The key id of a public key: the first 16 hex digits of its SHA-256.
pub fn kid_of(key: &VerifyingKey) -> String {
    let digest = Sha256::digest(key.as_bytes());
    hex(&digest[..8])
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// Loads the key pair in `dir`, creating it on first use. The caller holds the log's lock, so two
/// writers never create two pairs.
pub fn load_or_create(dir: &Path) -> Result<KeyPair, String> {
    let secret_path = dir.join(SECRET_FILE);
    let public_path = dir.join(PUBLIC_FILE);
    match crate::fs::read_regular(&secret_path) {
        Ok(text) => {
            let signing = decode_seed(&text).ok_or_else(|| {
                format!(
                    "{} is not a base64 32-byte Ed25519 seed: restore it from a backup, or move it \
                     away (keeping {PUBLIC_FILE}) so a new key pair is created",
                    secret_path.display()
                )
            })?;
            let verifying = signing.verifying_key();
            // A missing public key is recreated from the seed; a different one is left alone,
            // so `verify` reports the mismatch instead of us hiding it.
            if !public_path.exists() {
                write_public(&public_path, &verifying)?;
            }
            Ok(KeyPair {
                kid: kid_of(&verifying),
                signing,
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => create(dir),
        Err(e) => Err(format!(
            "cannot read {}: {e}; check its permissions",
            secret_path.display()
        )),
    }
}

fn create(dir: &Path) -> Result<KeyPair, String> {
    let public_path = dir.join(PUBLIC_FILE);
    // A public key without its seed belongs to a retired pair: keep it under its kid so the
    // lines it signed still verify.
    if let Ok(text) = crate::fs::read_regular(&public_path) {
        let retired = match decode_public(&text) {
            Some(key) => dir.join(format!("signing-{}.pub", kid_of(&key))),
            None => dir.join(format!("signing-unreadable-{}.pub", crate::fs::now_ms())),
        };
        fs::rename(&public_path, &retired).map_err(|e| {
            format!(
                "cannot move the old {} aside to {}: {e}",
                public_path.display(),
                retired.display()
            )
        })?;
    }
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| {
        format!(
            "cannot create a signing key in {}: no randomness: {e}",
            dir.display()
        )
    })?;
    let signing = SigningKey::from_bytes(&seed);
    let secret_path = dir.join(SECRET_FILE);
    write_line(&secret_path, &BASE64.encode(seed), 0o600)
        .map_err(|e| format!("cannot write {}: {e}", secret_path.display()))?;
    let verifying = signing.verifying_key();
    write_public(&public_path, &verifying)?;
    Ok(KeyPair {
        kid: kid_of(&verifying),
        signing,
    })
}

/// Writes `signing.pub`: the public key in base64, readable by anyone.
fn write_public(path: &Path, key: &VerifyingKey) -> Result<(), String> {
    write_line(path, &BASE64.encode(key.as_bytes()), 0o644)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Replaces `path` with `text` and a newline, atomically; the caller holds the log's lock.
pub(super) fn write_line(path: &Path, text: &str, mode: u32) -> io::Result<()> {
    let line = format!("{text}\n");
    crate::fs::write_atomically(path, line.as_bytes(), mode, crate::fs::Writers::LockHeld)
}

fn decode_seed(text: &str) -> Option<SigningKey> {
    let bytes: [u8; 32] = BASE64.decode(text.trim()).ok()?.try_into().ok()?;
    Some(SigningKey::from_bytes(&bytes))
}

/// Decodes a base64 32-byte Ed25519 public key.
pub fn decode_public(text: &str) -> Option<VerifyingKey> {
    let bytes: [u8; 32] = BASE64.decode(text.trim()).ok()?.try_into().ok()?;
    VerifyingKey::from_bytes(&bytes).ok()
}

/// The public keys that may have signed lines of a log in `dir`, by kid: `signing.pub` and every
/// retired `signing-*.pub` there (when `dir` is given), and the `extra` files. Files that cannot be read
/// or decoded are reported in the second result.
pub fn public_keys(
    dir: Option<&Path>,
    extra: &[PathBuf],
) -> (BTreeMap<String, VerifyingKey>, Vec<String>) {
    let mut paths: Vec<PathBuf> = Vec::new();
    if let Some(entries) = dir.and_then(|dir| fs::read_dir(dir).ok()) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name == PUBLIC_FILE || (name.starts_with("signing-") && name.ends_with(".pub")) {
                paths.push(entry.path());
            }
        }
    }
    paths.sort();
    paths.extend(extra.iter().cloned());
    let mut keys = BTreeMap::new();
    let mut problems = Vec::new();
    for path in paths {
        match crate::fs::read_regular(&path) {
            Ok(text) => match decode_public(&text) {
                Some(key) => {
                    keys.insert(kid_of(&key), key);
                }
                None => problems.push(format!(
                    "{}: not a base64 32-byte Ed25519 public key",
                    path.display()
                )),
            },
            Err(e) => problems.push(format!("{}: {e}", path.display())),
        }
    }
    (keys, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_pair_is_created_once_and_reused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let first = load_or_create(dir.path()).expect("created");
        let second = load_or_create(dir.path()).expect("loaded");
        assert_eq!(first.kid(), second.kid());
        assert_eq!(first.kid().len(), 16);

        let seed = fs::read_to_string(dir.path().join(SECRET_FILE)).expect("seed");
        assert_eq!(BASE64.decode(seed.trim()).expect("base64").len(), 32);
        let public = fs::read_to_string(dir.path().join(PUBLIC_FILE)).expect("public key");
        let public = decode_public(&public).expect("a public key");
        assert_eq!(kid_of(&public), first.kid());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = fs::metadata(dir.path().join(SECRET_FILE))
                .expect("metadata")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn removing_the_seed_rotates_and_keeps_the_old_public_key() {
        let dir = tempfile::tempdir().expect("temp dir");
        let old = load_or_create(dir.path()).expect("created");
        fs::remove_file(dir.path().join(SECRET_FILE)).expect("removed");
        let new = load_or_create(dir.path()).expect("rotated");
        assert_ne!(old.kid(), new.kid());
        let (keys, problems) = public_keys(Some(dir.path()), &[]);
        assert!(problems.is_empty(), "{problems:?}");
        assert!(keys.contains_key(old.kid()) && keys.contains_key(new.kid()));
        assert!(dir
            .path()
            .join(format!("signing-{}.pub", old.kid()))
            .exists());
    }

    #[test]
    fn a_damaged_seed_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        fs::write(dir.path().join(SECRET_FILE), "not base64!").expect("written");
        let err = load_or_create(dir.path()).expect_err("refused");
        assert!(err.contains(SECRET_FILE), "{err}");
    }
}
