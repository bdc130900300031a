//! The trust store, `<data dir>/trusted-hooks.json` (contract §13): for each canonical project
//! root, the digest the person trusted, or that they denied it.
//!
//! ```json
//! {"version":1,"projects":{"/home/u/proj":{"digest":"sha256:…","content":"sha256:…","at":1764547200000},
//!                          "/home/u/odd":{"denied":true,"at":1764547200000}}}
//! ```
//!
//! Reading never fails a dispatch: a store that cannot be read or makes no sense is a warning,
//! and every project stays untrusted. Writing takes an exclusive lock on a file beside it, reads
//! the store afresh under the lock, and replaces it through a temporary file that is synced
//! before the rename, so concurrent writers never lose each other's entries and a crash leaves
//! either the old store or the new one, mode 0600.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use std::borrow::Cow;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{json, Map};

use super::digest::is_digest;
use super::seal::Seal;
use crate::fs::with_suffix;

/// The store's file name inside the data directory.
pub const FILE: &str = "trusted-hooks.json";
/// A store larger than this is not read.
const MAX_BYTES: u64 = 16 << 20;
/// How long a writer waits for another one.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// What the store says about one project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    Trusted {
        digest: String,
        /// The digest without the root: the same hooks trusted at another path.
        content: Option<String>,
        at: Option<u64>,
        /// The identities of the files trusted, for a dispatch to admit them unhashed.
        seal: Option<Seal>,
    },
    Denied {
        at: Option<u64>,
    },
}

/// The store's contents, by canonical project root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Store {
    pub projects: BTreeMap<String, Entry>,
}

/// `<data dir>/trusted-hooks.json`, the data directory found as the compliance log finds it.
pub fn path() -> Option<PathBuf> {
    crate::environment::data_dir().map(|dir| dir.join(FILE))
}

/// Reads the store at `path`: empty when there is none; a warning naming the file when it cannot
/// be read or is not a store, with every project untrusted. Entries that make no sense are left
/// out, each with a warning.
pub fn load(path: &Path) -> (Store, Vec<String>) {
    load_only(path, Only::All)
}

/// [`load`], keeping only the entries of `roots` (keys of the store): what a dispatch needs of
/// a store that may name hundreds of projects. The rest is checked to be JSON and passed over,
/// and an entry of another project that makes no sense is not this dispatch's warning.
pub fn load_for(path: &Path, roots: &[&str]) -> (Store, Vec<String>) {
    load_only(path, Only::Roots(roots))
}

/// Which projects' entries a read keeps.
#[derive(Clone, Copy)]
enum Only<'w> {
    All,
    Roots(&'w [&'w str]),
}

impl Only<'_> {
    fn keeps(self, root: &str) -> bool {
        match self {
            Only::All => true,
            Only::Roots(roots) => roots.contains(&root),
        }
    }
}

fn load_only(path: &Path, only: Only<'_>) -> (Store, Vec<String>) {
    match read(path) {
        Ok(None) => (Store::default(), Vec::new()),
        Ok(Some(text)) => match parse(&text, only) {
            Ok(parsed) => parsed,
            Err(problem) => (Store::default(), vec![corrupt(path, &problem)]),
        },
        Err(problem) => (Store::default(), vec![corrupt(path, &problem)]),
    }
}

fn corrupt(path: &Path, problem: &str) -> String {
    format!(
        "{}: {problem}; every project's hooks stay untrusted until it is fixed or removed \
         (the next `levelcode-hooks trust` sets it aside and starts a new one)",
        path.display()
    )
}

/// The store's text, `None` when there is no file.
fn read(path: &Path) -> Result<Option<String>, String> {
    let file = match crate::fs::open_nonblocking(path, OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open the trust store: {e}")),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot stat the trust store: {e}"))?;
    if !meta.is_file() {
        return Err("the trust store is not a regular file".into());
    }
    if meta.len() > MAX_BYTES {
        return Err(format!("the trust store is over {} MiB", MAX_BYTES >> 20));
    }
    let mut file = file;
    let bytes = crate::fs::read_expected(&mut file, meta.len(), MAX_BYTES)
        .map_err(|e| format!("cannot read the trust store: {e}"))?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| "cannot read the trust store: stream did not contain valid UTF-8".into())
}

/// The store's top level, read in one pass as it is written, borrowing its strings: members of
/// any kind are accepted, and each project's entry is read leniently ([`Loose`]), so that one
/// that makes no sense leaves the others readable.
struct Raw<'a> {
    version: Loose<u64>,
    projects: Loose<Projects<'a>>,
}

/// Reads a [`Raw`], keeping the projects `Only` says.
struct RawSeed<'w>(Only<'w>);

impl<'de> DeserializeSeed<'de> for RawSeed<'_> {
    type Value = Raw<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Raw<'de>, D::Error> {
        struct Visit<'w>(Only<'w>);
        impl<'de> Visitor<'de> for Visit<'_> {
            type Value = Raw<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw<'de>, A::Error> {
                let mut raw = Raw {
                    version: Loose::default(),
                    projects: Loose::default(),
                };
                let (mut version, mut projects) = (false, false);
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    match &*key {
                        "version" if std::mem::replace(&mut version, true) => {
                            return Err(serde::de::Error::duplicate_field("version"))
                        }
                        "projects" if std::mem::replace(&mut projects, true) => {
                            return Err(serde::de::Error::duplicate_field("projects"))
                        }
                        "version" => raw.version = map.next_value()?,
                        "projects" => raw.projects = map.next_value_seed(ProjectsSeed(self.0))?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(raw)
            }
        }
        deserializer.deserialize_map(Visit(self.0))
    }
}

/// Reads `"projects"` as a [`Loose`] of [`Projects`] reads it, keeping the entries `Only` says.
struct ProjectsSeed<'w>(Only<'w>);

impl<'de> DeserializeSeed<'de> for ProjectsSeed<'_> {
    type Value = Loose<Projects<'de>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        struct Visit<'w>(Only<'w>);
        /// Another kind of value than an object.
        fn other<'de, E>() -> Result<Loose<Projects<'de>>, E> {
            Ok(Loose(None, true))
        }
        impl<'de> Visitor<'de> for Visit<'_> {
            type Value = Loose<Projects<'de>>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Loose(None, false))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Loose(None, false))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                other()
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                other()
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                other()
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                other()
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                other()
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                other()
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(Key(root)) = map.next_key::<Key<'de>>()? {
                    if self.0.keeps(&root) {
                        let entry = map.next_value::<Loose<Entry>>()?;
                        out.push((root, entry.0));
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Loose(Some(Projects(out)), false))
            }
        }
        deserializer.deserialize_any(Visit(self.0))
    }
}

/// A value of any kind, kept when it is of the kind wanted (`Some`), passed over otherwise.
struct Loose<T>(Option<T>, /* another kind was there */ bool);

impl<T> Default for Loose<T> {
    fn default() -> Self {
        Loose(None, false)
    }
}

/// What a [`Loose`] keeps, from the kinds of JSON value it reads.
trait Wanted<'de>: Sized {
    fn from_u64(_: u64) -> Option<Self> {
        None
    }
    fn from_bool(_: bool) -> Option<Self> {
        None
    }
    fn from_str(_: Cow<'de, str>) -> Option<Self> {
        None
    }
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

impl<'de, T: Wanted<'de>> Deserialize<'de> for Loose<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        fn kept<T>(value: Option<T>) -> Loose<T> {
            let other = value.is_none();
            Loose(value, other)
        }
        impl<'de, T: Wanted<'de>> Visitor<'de> for Visit<T> {
            type Value = Loose<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Loose<T>, E> {
                Ok(Loose(None, false))
            }
            fn visit_none<E>(self) -> Result<Loose<T>, E> {
                Ok(Loose(None, false))
            }
            fn visit_bool<E>(self, b: bool) -> Result<Loose<T>, E> {
                Ok(kept(T::from_bool(b)))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Loose<T>, E> {
                Ok(kept(T::from_u64(n)))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Loose<T>, E> {
                Ok(kept(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Loose<T>, E> {
                Ok(kept(None))
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Loose<T>, E> {
                Ok(kept(T::from_str(Cow::Borrowed(s))))
            }
            fn visit_str<E>(self, s: &str) -> Result<Loose<T>, E> {
                Ok(kept(T::from_str(Cow::Owned(s.to_string()))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Loose<T>, A::Error> {
                T::from_seq(seq).map(kept)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Loose<T>, A::Error> {
                T::from_map(map).map(kept)
            }
        }
        deserializer.deserialize_any(Visit(std::marker::PhantomData))
    }
}

impl Wanted<'_> for u64 {
    fn from_u64(n: u64) -> Option<u64> {
        Some(n)
    }
}

impl Wanted<'_> for bool {
    fn from_bool(b: bool) -> Option<bool> {
        Some(b)
    }
}

impl<'de: 'a, 'a> Wanted<'de> for Cow<'a, str> {
    fn from_str(s: Cow<'de, str>) -> Option<Self> {
        Some(s)
    }
}

/// The projects in the order written, each entry `None` when it makes no sense.
struct Projects<'a>(Vec<(Cow<'a, str>, Option<Entry>)>);

/// An object's key, borrowed where it holds no escape.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Loose::<Cow<'de, str>>::deserialize(deserializer).map(|k| Key(k.0.unwrap_or_default()))
    }
}

impl<'de> Wanted<'de> for Entry {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        let (mut denied, mut at, mut digest, mut content, mut seal) =
            (false, None, None, None, None);
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match &*key {
                "denied" => denied = map.next_value::<Loose<bool>>()?.0 == Some(true),
                "at" => at = map.next_value::<Loose<u64>>()?.0,
                "digest" => digest = map.next_value::<Loose<Cow<'de, str>>>()?.0,
                "content" => content = map.next_value::<Loose<Cow<'de, str>>>()?.0,
                "seal" => seal = map.next_value::<Loose<Seal>>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if denied {
            return Ok(Some(Entry::Denied { at }));
        }
        let Some(digest) = digest.filter(|d| is_digest(d)) else {
            return Ok(None);
        };
        Ok(Some(Entry::Trusted {
            digest: digest.into_owned(),
            content: content.filter(|d| is_digest(d)).map(Cow::into_owned),
            at,
            seal,
        }))
    }
}

/// A seal that makes no sense is no seal: the digest is computed instead.
impl<'de> Wanted<'de> for Seal {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        let (mut format, mut handlers, mut files) = (None, None, None);
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match &*key {
                "format" => format = map.next_value::<Loose<u64>>()?.0,
                "handlers" => handlers = map.next_value::<Loose<u64>>()?.0,
                "files" => files = map.next_value::<Loose<Files>>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let handlers = handlers
            .and_then(|h| usize::try_from(h).ok())
            .filter(|_| format == Some(super::seal::FORMAT));
        Ok(handlers.zip(files).and_then(|(handlers, Files(files))| {
            Some(Seal {
                handlers,
                files: files?,
            })
        }))
    }
}

/// A seal's pairs of a path and an identity; `None` when one is not a pair of strings.
struct Files(Option<Vec<(String, String)>>);

impl<'de> Wanted<'de> for Files {
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        let mut files = Some(Vec::new());
        while let Some(pair) = seq.next_element::<Loose<Pair>>()? {
            match (pair.0, &mut files) {
                (Some(Pair(Some(pair))), Some(files)) => files.push(pair),
                _ => files = None,
            }
        }
        Ok(Some(Files(files)))
    }
}

struct Pair(Option<(String, String)>);

impl<'de> Wanted<'de> for Pair {
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        let mut items = Vec::with_capacity(2);
        let mut strings = true;
        while let Some(item) = seq.next_element::<Loose<Cow<'de, str>>>()? {
            match item.0 {
                Some(s) => items.push(s.into_owned()),
                None => strings = false,
            }
        }
        let pair = match (strings, items.len()) {
            (true, 2) => {
                let identity = items.pop().unwrap_or_default();
                Some((items.pop().unwrap_or_default(), identity))
            }
            _ => None,
        };
        Ok(Some(Pair(pair)))
    }
}

fn parse(text: &str, only: Only<'_>) -> Result<(Store, Vec<String>), String> {
    let trimmed = text.trim_start();
    let mut reader = serde_json::Deserializer::from_str(text);
    let raw = RawSeed(only)
        .deserialize(&mut reader)
        .and_then(|raw| reader.end().map(|()| raw));
    let raw: Raw = match raw {
        Ok(raw) if trimmed.starts_with('{') => raw,
        Ok(_) => return Err("the trust store is not a JSON object".into()),
        Err(_) if !trimmed.starts_with('{') && serde_json::from_str::<IgnoredAny>(text).is_ok() => {
            return Err("the trust store is not a JSON object".into())
        }
        Err(e) => return Err(format!("the trust store is not valid JSON ({e})")),
    };
    match raw.version {
        Loose(Some(1), _) => {}
        Loose(None, false) => return Err("the trust store has no version".into()),
        Loose(_, _) => {
            return Err(
                "the trust store has a version other than 1, which this version does not read"
                    .into(),
            )
        }
    }
    let projects = match raw.projects {
        Loose(Some(Projects(projects)), _) => projects,
        Loose(None, false) => Vec::new(),
        Loose(None, true) => return Err("the trust store's \"projects\" is not an object".into()),
    };
    let mut store = Store::default();
    let mut notes = Vec::new();
    for (root, entry) in projects {
        match entry {
            Some(entry) => {
                store.projects.insert(root.into_owned(), entry);
            }
            None => notes.push(format!(
                "the trust store's entry for {root:?} makes no sense; that project stays untrusted"
            )),
        }
    }
    Ok((store, notes))
}

impl Store {
    fn to_text(&self) -> String {
        let mut projects = Map::new();
        for (root, entry) in &self.projects {
            let value = match entry {
                Entry::Trusted {
                    digest,
                    content,
                    at,
                    seal,
                } => {
                    let mut v = json!({ "digest": digest });
                    if let Some(content) = content {
                        v["content"] = json!(content);
                    }
                    if let Some(at) = at {
                        v["at"] = json!(at);
                    }
                    if let Some(seal) = seal {
                        v["seal"] = json!({
                            "format": super::seal::FORMAT,
                            "handlers": seal.handlers,
                            "files": seal.files,
                        });
                    }
                    v
                }
                Entry::Denied { at } => {
                    let mut v = json!({ "denied": true });
                    if let Some(at) = at {
                        v["at"] = json!(at);
                    }
                    v
                }
            };
            projects.insert(root.clone(), value);
        }
        let mut text = serde_json::to_string_pretty(&json!({ "version": 1, "projects": projects }))
            .unwrap_or_default();
        text.push('\n');
        text
    }

    /// The root, other than `except`, at which hooks with this content hash are trusted.
    pub fn trusted_elsewhere(&self, content: &str, except: &str) -> Option<&str> {
        self.projects.iter().find_map(|(root, entry)| match entry {
            Entry::Trusted {
                content: Some(c), ..
            } if c == content && root != except => Some(root.as_str()),
            _ => None,
        })
    }
}

/// What [`update`] did besides the change asked for.
#[derive(Debug, Default)]
pub struct Updated {
    /// Where an unreadable store was set aside before a new one was started.
    pub set_aside: Option<PathBuf>,
}

/// Changes the store at `path` with `change`, under the lock, and replaces it atomically.
pub fn update(path: &Path, change: impl FnOnce(&mut Store)) -> Result<Updated, String> {
    update_with(path, LOCK_WAIT, true, |store| {
        change(store);
        true
    })
}

/// How long a dispatch waits for the lock to add a seal: it is only saving later work.
const SEAL_LOCK_WAIT: Duration = Duration::from_millis(50);

/// Gives `root`'s entry the seal `seal`, when the entry still trusts exactly `digest` and holds
/// another seal or none: a dispatch that computed the digest of a project trusted right after an
/// edit seals it once its files have settled. The lock is waited for only briefly, and a store
/// that cannot be read is left as it is (only `trust` sets one aside).
pub fn seal_if_trusted(path: &Path, root: &str, digest: &str, seal: Seal) -> Result<(), String> {
    update_with(path, SEAL_LOCK_WAIT, false, |store| {
        match store.projects.get_mut(root) {
            Some(Entry::Trusted {
                digest: trusted,
                seal: sealed,
                ..
            }) if trusted == digest && sealed.as_ref() != Some(&seal) => {
                *sealed = Some(seal);
                true
            }
            _ => false,
        }
    })
    .map(|_| ())
}

/// Changes the store at `path` with `change`, which says whether there is anything to write,
/// under the lock (waited for at most `wait`), and replaces it atomically; a store that cannot
/// be read is set aside when `set_aside`, else left alone with an error.
fn update_with(
    path: &Path,
    wait: Duration,
    set_aside: bool,
    change: impl FnOnce(&mut Store) -> bool,
) -> Result<Updated, String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::fs::create_private_dir(dir).map_err(|e| {
        format!(
            "cannot create the folder {}: {e}; check that each part of that path is a writable folder",
            dir.display()
        )
    })?;
    let lock_path = with_suffix(path, ".lock");
    let lock = open_lock(&lock_path).map_err(|e| {
        format!(
            "cannot open the lock file {}: {e}; check that its folder is writable",
            lock_path.display()
        )
    })?;
    crate::lock::exclusive(&lock, &lock_path, wait)?;
    let result = update_locked(path, set_aside, change);
    let _ = lock.unlock();
    result
}

fn update_locked(
    path: &Path,
    set_aside: bool,
    change: impl FnOnce(&mut Store) -> bool,
) -> Result<Updated, String> {
    let mut updated = Updated::default();
    let mut store = match read(path).and_then(|text| match text {
        None => Ok(Store::default()),
        Some(text) => parse(&text, Only::All).map(|(store, _)| store),
    }) {
        Ok(store) => store,
        Err(problem) if !set_aside => return Err(format!("{}: {problem}", path.display())),
        Err(problem) => {
            // Only a file that does not read as a store is set aside; anything else is the
            // person's to look at.
            if !fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
                return Err(format!(
                    "{}: {problem}; move or remove it, then try again",
                    path.display()
                ));
            }
            let aside = with_suffix(path, &format!(".unreadable-{}", crate::fs::now_ms()));
            fs::rename(path, &aside).map_err(|e| {
                format!(
                    "{} cannot be read and cannot be set aside ({e}); move or remove it, then try again",
                    path.display()
                )
            })?;
            updated.set_aside = Some(aside);
            Store::default()
        }
    };
    if !change(&mut store) {
        return Ok(updated);
    }
    let text = store.to_text();
    // Past its bound the store could not be read again, and every project in it would be
    // untrusted: the change is refused instead, and the store stays as it was.
    if text.len() as u64 > MAX_BYTES {
        return Err(format!(
            "{}: with this change the trust store would be over {} MiB ({} bytes), past what it \
             can read back; nothing was recorded and every entry it holds is kept. Forget \
             projects you no longer use with `levelcode-hooks trust --revoke --project-dir DIR`",
            path.display(),
            MAX_BYTES >> 20,
            text.len()
        ));
    }
    crate::fs::write_atomically(path, text.as_bytes(), 0o600, crate::fs::Writers::LockHeld)
        .map_err(|e| {
            format!(
                "cannot write {}: {e}; check that its folder is writable",
                path.display()
            )
        })?;
    Ok(updated)
}

fn open_lock(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    crate::fs::open_regular(path, crate::fs::with_mode(&mut options, 0o600))
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
