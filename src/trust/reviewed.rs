//! What a person reviewed and trusted, kept beside the store so that the next review can show
//! what changed since (contract §13): each handler with every field it was written with, and
//! each covered file with its hash. One file per digest under `<data dir>/trusted-hooks/`,
//! written whole (mode 0600) when the digest is recorded, read only by the `trust` command; a
//! dispatch never reads it, so it costs the hot path nothing.
//!
//! It is a record for people, not a security boundary: the digest in the store decides what
//! runs. A record that is missing, unreadable or too large only means the review cannot say
//! what changed, and says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::digest::Digest;

/// The folder of the records, beside the store.
pub const FOLDER: &str = "trusted-hooks";

/// A record larger than this is not written (the review then says it cannot compare).
pub const MAX_BYTES: usize = 1 << 20;

/// How many records are kept; the oldest go first.
pub const MAX_RECORDS: usize = 256;

/// What was reviewed under one digest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reviewed {
    /// Each handler by its place (`hooks.PreToolUse[0].hooks[1]`), with every field of its
    /// group (as `group.<field>`, the handlers left out) and its own.
    pub handlers: BTreeMap<String, BTreeMap<String, Value>>,
    /// Each covered file by its path relative to the root, with its hash.
    pub files: BTreeMap<String, String>,
}

impl Reviewed {
    /// The record of the hooks in `bytes` (a layer's settings file) and the files `digest`
    /// covers.
    pub fn of(bytes: &[u8], digest: &Digest) -> Reviewed {
        Reviewed {
            handlers: handlers(bytes),
            files: digest
                .scripts
                .iter()
                .map(|s| (s.path.clone(), s.hash.clone()))
                .collect(),
        }
    }

    /// What changed from `before` to `self`, a line each, in the order of places and paths:
    /// handlers added, removed, or with a field added, removed or changed; files added,
    /// removed or changed.
    pub fn changes_since(&self, before: &Reviewed) -> Vec<String> {
        let mut out = Vec::new();
        for (place, fields) in &self.handlers {
            match before.handlers.get(place) {
                None => out.push(format!("{place}: new handler")),
                Some(old) => {
                    for (field, value) in fields {
                        match old.get(field) {
                            None => out.push(format!("{place}: {field} added: {}", text(value))),
                            Some(was) if was != value => out.push(format!(
                                "{place}: {field} changed: {} -> {}",
                                text(was),
                                text(value)
                            )),
                            Some(_) => {}
                        }
                    }
                    for (field, was) in old {
                        if !fields.contains_key(field) {
                            out.push(format!("{place}: {field} removed (was {})", text(was)));
                        }
                    }
                }
            }
        }
        for place in before.handlers.keys() {
            if !self.handlers.contains_key(place) {
                out.push(format!("{place}: handler removed"));
            }
        }
        for (path, hash) in &self.files {
            match before.files.get(path) {
                None => out.push(format!("{path}: new file")),
                Some(was) if was != hash => out.push(format!("{path}: changed")),
                Some(_) => {}
            }
        }
        for path in before.files.keys() {
            if !self.files.contains_key(path) {
                out.push(format!(
                    "{path}: no longer covered (removed, or no longer named)"
                ));
            }
        }
        out
    }
}

/// A value as a change line shows it: a string as itself, anything else as JSON.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Every handler of a settings file's `hooks`, by place, with its group's fields and its own.
fn handlers(bytes: &[u8]) -> BTreeMap<String, BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    let Ok(Value::Object(top)) = serde_json::from_slice::<Value>(bytes) else {
        return out;
    };
    let Some(Value::Object(events)) = top.get("hooks") else {
        return out;
    };
    for (event, groups) in events {
        let Value::Array(groups) = groups else {
            continue;
        };
        for (i, group) in groups.iter().enumerate() {
            let Value::Object(group) = group else {
                continue;
            };
            let shared: Vec<(String, Value)> = group
                .iter()
                .filter(|(k, _)| k.as_str() != "hooks")
                .map(|(k, v)| (format!("group.{k}"), v.clone()))
                .collect();
            let Some(Value::Array(list)) = group.get("hooks") else {
                continue;
            };
            for (j, handler) in list.iter().enumerate() {
                let mut fields: BTreeMap<String, Value> = shared.iter().cloned().collect();
                if let Value::Object(own) = handler {
                    fields.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                out.insert(format!("hooks.{event}[{i}].hooks[{j}]"), fields);
            }
        }
    }
    out
}

/// The record of `digest` (`sha256:<hex>`) in the folder beside the store at `store_path`.
fn record_path(store_path: &Path, digest: &str) -> Option<PathBuf> {
    let hex = digest.strip_prefix("sha256:")?;
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(
        store_path
            .parent()?
            .join(FOLDER)
            .join(format!("{hex}.json")),
    )
}

/// Keeps `reviewed` as what was trusted under `digest`; `Err` is the warning.
pub fn save(store_path: &Path, digest: &str, reviewed: &Reviewed) -> Result<(), String> {
    let path = record_path(store_path, digest).ok_or("not a digest the store records")?;
    let bytes = serde_json::to_vec(reviewed).map_err(|e| e.to_string())?;
    if bytes.len() > MAX_BYTES {
        return Err(format!(
            "the review is over {} KiB; what changes next time cannot be shown",
            MAX_BYTES >> 10
        ));
    }
    let dir = path.parent().ok_or("no folder")?;
    crate::fs::create_private_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    crate::fs::write_atomically(&path, &bytes, 0o600, crate::fs::Writers::Unlocked)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    prune(dir);
    Ok(())
}

/// What was trusted under `digest`, if it was kept and can be read.
pub fn load(store_path: &Path, digest: &str) -> Option<Reviewed> {
    let path = record_path(store_path, digest)?;
    let mut file = crate::fs::open_regular(&path, std::fs::OpenOptions::new().read(true)).ok()?;
    let len = file.metadata().ok()?.len();
    let bytes = crate::fs::read_expected(&mut file, len, MAX_BYTES as u64).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Removes the oldest records past [`MAX_RECORDS`].
fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut records: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if records.len() <= MAX_RECORDS {
        return;
    }
    records.sort();
    for (_, path) in &records[..records.len() - MAX_RECORDS] {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reviewed(settings: &str, files: &[(&str, &str)]) -> Reviewed {
        Reviewed {
            handlers: handlers(settings.as_bytes()),
            files: files
                .iter()
                .map(|(p, h)| (p.to_string(), h.to_string()))
                .collect(),
        }
    }

    #[test]
    fn every_field_of_a_handler_and_its_group_is_recorded() {
        let r = reviewed(
            r#"{"hooks":{"PreToolUse":[{"matcher":"write_file","if":"Edit(src/**)","hooks":[{"command":"sh g.sh","timeout":5,"onFailure":"block"}]}]}}"#,
            &[],
        );
        let fields = &r.handlers["hooks.PreToolUse[0].hooks[0]"];
        assert_eq!(fields["group.matcher"], "write_file");
        assert_eq!(fields["group.if"], "Edit(src/**)");
        assert_eq!(fields["timeout"], 5);
        assert_eq!(fields["onFailure"], "block");
        assert!(!fields.contains_key("group.hooks"));
    }

    #[test]
    fn changes_name_each_handler_field_and_file() {
        let before = reviewed(
            r#"{"hooks":{"Stop":[{"hooks":[{"command":"a","timeout":5},{"command":"gone"}]}]}}"#,
            &[("scripts/lint.sh", "sha256:1"), ("old.sh", "sha256:2")],
        );
        let after = reviewed(
            r#"{"hooks":{"Stop":[{"hooks":[{"command":"a","onFailure":"block"}]}],"PreToolUse":[{"hooks":[{"command":"b"}]}]}}"#,
            &[("scripts/lint.sh", "sha256:3"), ("new.sh", "sha256:4")],
        );
        let changes = after.changes_since(&before);
        assert_eq!(
            changes,
            [
                "hooks.PreToolUse[0].hooks[0]: new handler",
                "hooks.Stop[0].hooks[0]: onFailure added: block",
                "hooks.Stop[0].hooks[0]: timeout removed (was 5)",
                "hooks.Stop[0].hooks[1]: handler removed",
                "new.sh: new file",
                "scripts/lint.sh: changed",
                "old.sh: no longer covered (removed, or no longer named)",
            ]
        );
        assert!(after.changes_since(&after).is_empty());
    }

    #[test]
    fn a_record_is_kept_by_digest_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("trusted-hooks.json");
        let digest = format!("sha256:{}", "ab".repeat(32));
        let r = reviewed(
            r#"{"hooks":{"Stop":[{"hooks":[{"command":"a"}]}]}}"#,
            &[("a", "h")],
        );
        save(&store, &digest, &r).unwrap();
        assert_eq!(load(&store, &digest), Some(r));
        assert_eq!(load(&store, &format!("sha256:{}", "cd".repeat(32))), None);
        // A digest that is not one names no file.
        assert!(save(&store, "sha256:../../x", &Reviewed::default()).is_err());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let file = dir
                .path()
                .join(FOLDER)
                .join(format!("{}.json", "ab".repeat(32)));
            let mode = std::fs::metadata(file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
