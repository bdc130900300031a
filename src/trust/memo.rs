//! The digest memo, `<data dir>/trust-digests.json`: the last digest computed for a project
//! layer that is not sealed (untrusted, changed, denied, pinned by a `sha256:` opt-in), with the
//! identities of everything it covers, as a [`Seal`] keeps them. A dispatch whose files all
//! still have those identities shows that digest without hashing anything again; any
//! difference, and the digest is computed afresh. It follows the seal's rules: an identity holds
//! the change time, which no unprivileged process can set back, and a memo is taken only of
//! files that had settled before the digest it records started to be computed.
//!
//! It lives beside the trust store, never in the project, and is keyed by the canonical root
//! and the layer's file: what a repository holds cannot write it. It only saves work: a memo
//! that cannot be read, or makes no sense, is no memo. It holds at most [`MAX_ENTRIES`]
//! layers and [`MAX_BYTES`], the least recently written going first. Writers do not lock: two
//! dispatches writing at once may lose one entry, which the next dispatch computes again.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::digest::is_digest;
use super::seal::Seal;

/// The memo's format: a memo of an older one is no memo, since the digests it remembers did not
/// cover what the hooks folder's links lead to.
const VERSION: u32 = 2;

/// The memo's file name inside the data directory.
pub const FILE: &str = "trust-digests.json";
/// Layers remembered at most.
pub const MAX_ENTRIES: usize = 32;
/// What the memo may hold; an entry that would take it past this evicts older ones.
pub const MAX_BYTES: usize = 1 << 20;

/// What a digest remembered by its files says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recalled {
    /// `sha256:…` with the root, as the store records it.
    pub digest: String,
    /// `sha256:…` without the root.
    pub content: String,
    /// The identities it was computed from: the layer's file first.
    pub seal: Seal,
}

#[derive(Serialize, Deserialize)]
struct File<'a> {
    version: u32,
    #[serde(borrow, default)]
    entries: Vec<Entry<'a>>,
}

#[derive(Serialize, Deserialize)]
struct Entry<'a> {
    #[serde(borrow)]
    root: Cow<'a, str>,
    #[serde(borrow)]
    layer: Cow<'a, str>,
    #[serde(borrow)]
    digest: Cow<'a, str>,
    #[serde(borrow)]
    content: Cow<'a, str>,
    handlers: usize,
    #[serde(borrow)]
    files: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    at: u64,
}

/// `<data dir>/trust-digests.json`.
pub fn path() -> Option<PathBuf> {
    crate::environment::data_dir().map(|dir| dir.join(FILE))
}

/// The digest remembered for the layer `layer` (its file, relative to the root) of the project
/// at the canonical `root`, when every file it covers still has its identity and the layer's
/// file that was read (`read`, the metadata of the open file) is the one it was computed from.
pub fn recall(root: &str, layer: &str, read: &std::fs::Metadata) -> Option<Recalled> {
    let text = read_text(&path()?)?;
    let file: File = serde_json::from_str(&text).ok()?;
    if file.version != VERSION {
        return None;
    }
    let entry = file
        .entries
        .into_iter()
        .find(|e| e.root == root && e.layer == layer)?;
    if !is_digest(&entry.digest) || !is_digest(&entry.content) {
        return None;
    }
    let seal = Seal {
        handlers: entry.handlers,
        files: entry
            .files
            .into_iter()
            .map(|(p, i)| (p.into_owned(), i.into_owned()))
            .collect(),
    };
    seal.holds(read).then(|| Recalled {
        digest: entry.digest.into_owned(),
        content: entry.content.into_owned(),
        seal,
    })
}

/// Remembers `recalled` for the layer `layer` of the project at the canonical `root`, in place
/// of what was remembered for it; the oldest entries go when the memo would be past its bounds.
/// Failing to write is silent: the memo only saves work. Nothing is written when the data
/// directory is not there.
pub fn remember(root: &str, layer: &str, recalled: &Recalled) {
    let Some(path) = path() else { return };
    let text = read_text(&path);
    let mut entries = text
        .as_deref()
        .and_then(|t| serde_json::from_str::<File>(t).ok())
        .filter(|f| f.version == VERSION)
        .map(|f| f.entries)
        .unwrap_or_default();
    entries.retain(|e| !(e.root == root && e.layer == layer));
    entries.push(Entry {
        root: Cow::Borrowed(root),
        layer: Cow::Borrowed(layer),
        digest: Cow::Borrowed(&recalled.digest),
        content: Cow::Borrowed(&recalled.content),
        handlers: recalled.seal.handlers,
        files: recalled
            .seal
            .files
            .iter()
            .map(|(p, i)| (Cow::Borrowed(p.as_str()), Cow::Borrowed(i.as_str())))
            .collect(),
        at: crate::fs::now_ms(),
    });
    // The most recent last; the oldest go first.
    entries.sort_by_key(|e| e.at);
    let excess = entries.len().saturating_sub(MAX_ENTRIES);
    entries.drain(..excess);
    // Past the bound in bytes, the oldest go too; a newest entry too large alone is not kept.
    let sizes: Vec<usize> = entries
        .iter()
        .map(|e| serde_json::to_string(e).map_or(usize::MAX, |t| t.len() + 1))
        .collect();
    let mut total = sizes.iter().fold(32usize, |a, b| a.saturating_add(*b));
    let mut first = 0;
    while total > MAX_BYTES && first < entries.len() {
        total -= sizes[first];
        first += 1;
    }
    if first == entries.len() {
        return;
    }
    entries.drain(..first);
    let Ok(out) = serde_json::to_string(&File {
        version: VERSION,
        entries,
    }) else {
        return;
    };
    // Only into a data directory that is there: a dispatch never creates one (its folder is
    // the data layer's, which clients watch).
    if !path.parent().is_some_and(Path::is_dir) {
        return;
    }
    let _ = crate::fs::write_atomically(&path, out.as_bytes(), 0o600, crate::fs::Writers::Unlocked);
}

/// The memo's text, when it is a regular file within its bound.
fn read_text(path: &Path) -> Option<String> {
    use std::io::Read as _;
    let file = crate::fs::open_regular(path, std::fs::OpenOptions::new().read(true)).ok()?;
    let mut text = String::new();
    file.take(MAX_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .ok()?;
    (text.len() <= MAX_BYTES).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_are_bounded() {
        let entry = |i: usize| Entry {
            root: Cow::Owned(format!("/p{i}")),
            layer: Cow::Borrowed(".levelcode/settings.json"),
            digest: Cow::Borrowed("sha256:00"),
            content: Cow::Borrowed("sha256:11"),
            handlers: i,
            files: vec![(Cow::Borrowed("/p/x"), Cow::Borrowed("100644:1:2:3:4.5:6.7"))],
            at: i as u64,
        };
        let text = serde_json::to_string(&File {
            version: VERSION,
            entries: (0..3).map(entry).collect(),
        })
        .unwrap();
        let back: File = serde_json::from_str(&text).unwrap();
        assert_eq!(back.entries.len(), 3);
        assert_eq!(back.entries[2].root, "/p2");
        assert_eq!(back.entries[2].files[0].1, "100644:1:2:3:4.5:6.7");
        assert!(matches!(back.entries[0].root, Cow::Borrowed(_)));
    }
}
