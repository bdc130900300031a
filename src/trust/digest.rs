//! The digest a person trusts (contract §13): the canonical project root, the canonical JSON of
//! the project layer's `hooks`, and the SHA-256 of every regular file inside the project that a
//! handler names.
//!
//! Two hashes come out of one pass. The *content* hash covers the hooks and the named files;
//! the *digest* covers the canonical root and the content hash, so the same hooks at another
//! path have another digest, yet can be recognised as copied or moved.
//!
//! Reading named files is guarded: a path is resolved by the file system as the handler's would
//! be, symlinks and `..` alike, and only a regular file that is then inside the root is opened
//! (a FIFO or a device never is); sizes and counts are bounded. A file past the size bounds is
//! identified by its size, inode and change time instead of its contents, which any write moves.
//! The hooks folder is covered whole, so what it holds must be reviewable: its links are
//! followed while they stay inside the project, and any other entry makes the hooks
//! untrustable ([`hooks_folder`]).

use std::borrow::Cow;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use sha2::{Digest as _, Sha256};

use super::words::Words;
use crate::settings::layers::LayerKind;
use crate::settings::{Action, Group, Program};

/// A named file larger than this is identified, not hashed.
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// Once this much has been hashed, further files are identified, not hashed.
pub const MAX_TOTAL_BYTES: u64 = 64 << 20;
/// A word this long names no file: the system refuses to open a path of that many bytes.
#[cfg(unix)]
const MAX_PATH_BYTES: usize = 4096;
#[cfg(not(unix))]
const MAX_PATH_BYTES: usize = 32 << 10;
/// Distinct words that may name a file in the project (every relative word, and absolute ones
/// under the root); more makes the hooks untrustable.
pub const MAX_NAMED_PATHS: usize = 4096;

const VERSION: &[u8] = b"levelcode-hooks trust v1";

/// The project layer's hooks folder, relative to the root: every regular file under it is
/// covered.
pub const HOOKS_FOLDER: &str = crate::settings::layers::PROJECT_HOOKS_FOLDER;
/// Files (and folders) the hooks folder may hold; more makes the hooks untrustable.
pub const MAX_FOLDER_FILES: usize = 1000;
/// What the hooks folder's files may add up to; more makes the hooks untrustable.
pub const MAX_FOLDER_BYTES: u64 = 16 << 20;
/// How deep the hooks folder is walked.
const MAX_FOLDER_DEPTH: usize = 16;

/// The digest of one project layer, and what went into it.
#[derive(Clone, Debug)]
pub struct Digest {
    /// `sha256:<hex>` of the root and the content: what the store records.
    pub digest: String,
    /// `sha256:<hex>` of the hooks and the named files alone.
    pub content: String,
    /// The canonical project root.
    pub root: PathBuf,
    /// The covered files inside the project, sorted by path: the hooks folder's and the named.
    pub scripts: Vec<Script>,
    /// Every path inside the project that a handler names, whether or not a file is there (a
    /// file appearing at one of them changes the digest), and the hooks folder's folders and
    /// files. The seal and `serve` watch them.
    pub watched: Vec<PathBuf>,
    /// The handlers (`hooks.Stop[0].hooks[1]`) whose command could not be split as a shell
    /// would: every token of theirs that names a file in the project is covered instead.
    pub fallback: Vec<String>,
    /// The words `/bin/sh` and bash read differently, each with its handler and both readings
    /// (every one is covered), for the review.
    pub readings: Vec<String>,
}

/// One covered file inside the project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    /// Relative to the canonical root, `/`-separated.
    pub path: String,
    /// `sha256:<hex>` of the contents, or `identity:<size>:<dev>:<ino>:<ctime>` for a file past
    /// the size bounds.
    pub hash: String,
    /// Whether it is covered as a file of the hooks folder (else because a handler names it).
    pub in_folder: bool,
    /// For a file of the hooks folder reached through a symbolic link, its path through the
    /// folder (`.levelcode/hooks/lib/util.sh` for `vendor/lib/util.sh`), as the review shows it.
    pub via: Option<String>,
}

/// Computes the digest of the project layer whose file holds `bytes` and whose handlers (of
/// every event) are `groups`, for the project at `root`. An error says why the hooks cannot be
/// trusted at all (the root cannot be resolved, too many named paths, too large a hooks
/// folder).
pub fn compute(
    root: &Path,
    layer: LayerKind,
    bytes: &[u8],
    groups: &[Group],
) -> Result<Digest, String> {
    let root = crate::fs::canonical(root)
        .map_err(|e| format!("cannot resolve the project root {}: {e}", root.display()))?;
    let hooks = canonical_top(bytes, layer.reads_layer_sandbox())?;
    let folder = hooks_folder(&root, layer.hooks_folder().unwrap_or(HOOKS_FOLDER))?;

    // Each distinct word once: resolving a path costs more than comparing a string.
    let mut words = Words::default();
    let mut fallback = Vec::new();
    let mut readings = Vec::new();
    for group in groups {
        for handler in &group.handlers {
            words.fallback = false;
            words.readings.clear();
            match &handler.action {
                Action::Process(Program::Shell(command) | Program::PowerShell(command)) => {
                    words.add_command(command)
                }
                Action::Process(Program::Argv(argv)) => words.add_argv(argv),
                Action::Process(Program::Exec { program, args }) => {
                    words.add_argv(std::iter::once(program).chain(args));
                }
                // It names no file: its url, headers and allowedEnvVars are in the hooks'
                // canonical JSON, which the digest covers whole (contract §19).
                Action::Http(_) => {}
            }
            let place = format!("{}.hooks[{}]", group.path(), handler.index);
            if let Some(why) = &words.refused {
                return Err(format!(
                    "{why} (past it at {place}); such hooks cannot be reviewed, so they cannot \
                     be trusted"
                ));
            }
            if words.fallback {
                fallback.push(place.clone());
            }
            for reading in &words.readings {
                readings.push(format!(
                    "{place}: {:?} is {} to /bin/sh and {} to bash",
                    reading.written,
                    quoted_list(&reading.sh),
                    quoted_list(&reading.bash)
                ));
            }
        }
    }
    // A tree, not a list: a settings file of many megabytes can repeat a word millions of times.
    let mut candidates: std::collections::BTreeSet<PathBuf> = std::collections::BTreeSet::new();
    for word in &words.words {
        if let Some(path) = candidate(&root, word) {
            if candidates.len() == MAX_NAMED_PATHS && !candidates.contains(&path) {
                return Err(format!(
                    "the handlers' commands hold more than {MAX_NAMED_PATHS} different words \
                     that could name a file in the project; such hooks cannot be reviewed, so \
                     they cannot be trusted"
                ));
            }
            candidates.insert(path);
        }
    }
    let candidates: Vec<PathBuf> = candidates.into_iter().collect();

    let mut scripts: Vec<Script> = Vec::new();
    let mut hashed = 0u64;
    // The folder's files first: they are bounded, so each is hashed by its contents.
    for (path, in_folder) in folder
        .files
        .iter()
        .map(|p| (p, true))
        .chain(candidates.iter().map(|p| (p, false)))
    {
        let Some((relative, hash)) = examine(&root, path, &mut hashed) else {
            continue;
        };
        if !scripts.iter().any(|s| s.path == relative) {
            let via = Some(shown(&root, path)).filter(|through| in_folder && *through != relative);
            scripts.push(Script {
                path: relative,
                hash,
                in_folder,
                via,
            });
        }
    }
    scripts.sort_by(|a, b| a.path.cmp(&b.path));

    let mut content = Sha256::new();
    field(&mut content, VERSION);
    // Another layer's file (an agent's) is named, so that the same hooks in two layers have
    // two digests; levelcode's project layer keeps the digest it always had.
    if layer != LayerKind::Project {
        field(&mut content, b"layer");
        field(
            &mut content,
            layer.project_file().unwrap_or_default().as_bytes(),
        );
    }
    field(&mut content, &hooks);
    for script in &scripts {
        field(&mut content, script.path.as_bytes());
        field(&mut content, script.hash.as_bytes());
    }
    let content = format!("sha256:{}", hex(&content.finalize()));

    let mut digest = Sha256::new();
    field(&mut digest, VERSION);
    field(&mut digest, &path_bytes(&root));
    field(&mut digest, content.as_bytes());
    let digest = format!("sha256:{}", hex(&digest.finalize()));

    let mut watched = folder.dirs;
    watched.extend(folder.files);
    watched.extend(candidates);
    Ok(Digest {
        digest,
        content,
        root,
        scripts,
        watched,
        fallback,
        readings,
    })
}

/// `"a"`, or `"a", "b"`: words as the review shows them.
fn quoted_list(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("{w:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The hooks folder's files, by their paths through the folder, and its folders (whose entries
/// change when a file appears in them); the folder itself when it is not there.
#[derive(Default)]
struct Folder {
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

/// What an entry of the hooks folder is, its symbolic links followed.
enum Entry {
    /// A folder, and its canonical path.
    Dir(PathBuf),
    /// A regular file, and its size.
    File(u64),
}

/// Every regular file under the hooks folder, within the bounds. A symbolic link is followed
/// when it leads inside the project: to a file, covered as one of the folder's, or to a
/// folder, walked as one of its own (once, however many links lead to it). Anything else there
/// (a link out of the project, to nothing, or through `/proc`, a FIFO, a socket, a device)
/// makes the hooks untrustable until it is gone: a handler given its path would read what no
/// review showed, its own stdin through `/proc/self/fd/0` included. Here folders are listed and
/// entries looked at, never opened: files are opened by [`examine`], once resolved inside the
/// root.
fn hooks_folder(root: &Path, relative: &str) -> Result<Folder, String> {
    let top = crate::settings::layers::under(root, relative);
    let mut folder = Folder::default();
    folder.dirs.push(top.clone());
    let Ok(meta) = std::fs::symlink_metadata(&top) else {
        return Ok(folder);
    };
    let real_top = if meta.file_type().is_symlink() {
        match entry(root, &top, relative, meta.file_type(), relative)? {
            Entry::Dir(real) => real,
            // A file where the folder would be holds nothing a handler could run from it.
            Entry::File(_) => return Ok(folder),
        }
    } else if meta.is_dir() {
        // `.levelcode` itself may be a link: the folder is resolved whole.
        match top.canonicalize() {
            Ok(real) if real.starts_with(root) => real,
            _ => {
                return Err(format!(
                    "the folder {relative} leads out of the project; the hooks folder is \
                     covered whole, so the hooks cannot be trusted until it is inside it"
                ))
            }
        }
    } else {
        return Ok(folder);
    };
    let too_many = || {
        format!(
            "the folder {} holds more than {MAX_FOLDER_FILES} files and folders; the hooks \
             folder is covered whole, and one that large cannot be reviewed, so the hooks \
             cannot be trusted: move what the hooks do not run out of {relative}/",
            top.display()
        )
    };
    let mut total = 0u64;
    let mut walked = std::collections::BTreeSet::from([real_top.clone()]);
    let mut stack = vec![(top.clone(), real_top, 0usize)];
    while let Some((through, real, depth)) = stack.pop() {
        let entries = std::fs::read_dir(&real).map_err(|e| {
            format!(
                "cannot read the folder {}: {e}; the hooks folder is covered whole, so the \
                 hooks cannot be trusted until it can be read",
                through.display()
            )
        })?;
        for item in entries {
            let item =
                item.map_err(|e| format!("cannot read the folder {}: {e}", through.display()))?;
            let name = item.file_name();
            let path = through.join(&name);
            let Ok(kind) = item.file_type() else {
                // Gone since the folder was listed.
                continue;
            };
            if folder.files.len() + folder.dirs.len() >= MAX_FOLDER_FILES {
                return Err(too_many());
            }
            match entry(root, &real.join(&name), &shown(root, &path), kind, relative)? {
                Entry::Dir(canonical) => {
                    if !walked.insert(canonical.clone()) {
                        continue;
                    }
                    if depth + 1 >= MAX_FOLDER_DEPTH {
                        return Err(format!(
                            "the folder {} is nested more than {MAX_FOLDER_DEPTH} folders deep; \
                             such a hooks folder cannot be reviewed, so the hooks cannot be \
                             trusted",
                            top.display()
                        ));
                    }
                    folder.dirs.push(path.clone());
                    stack.push((path, canonical, depth + 1));
                }
                Entry::File(size) => {
                    total += size;
                    if total > MAX_FOLDER_BYTES {
                        return Err(format!(
                            "the files in {} add up to more than {} MiB (past it at {}, {size} \
                             bytes); the hooks folder is covered whole, and one that large \
                             cannot be reviewed, so the hooks cannot be trusted: move what the \
                             hooks do not run out of {relative}/",
                            top.display(),
                            MAX_FOLDER_BYTES >> 20,
                            path.display(),
                        ));
                    }
                    folder.files.push(path);
                }
            }
        }
    }
    folder.files.sort();
    folder.dirs.sort();
    Ok(folder)
}

/// What the entry at `path` (whose own type is `kind`, and which the review shows as `shown`)
/// of the hooks folder `relative` is, or why it keeps the hooks from being trusted. `path` is
/// canonical up to its last component.
fn entry(
    root: &Path,
    path: &Path,
    shown: &str,
    kind: std::fs::FileType,
    relative: &str,
) -> Result<Entry, String> {
    let refused = |what: String| {
        format!(
            "{shown} is {what}; the hooks folder is covered whole, and a handler given this \
             path would read what no review shows, so the hooks cannot be trusted until it is \
             gone from {relative}/"
        )
    };
    if kind.is_dir() {
        return Ok(Entry::Dir(path.to_path_buf()));
    }
    if kind.is_file() {
        let size = std::fs::symlink_metadata(path).map_or(0, |m| m.len());
        return Ok(Entry::File(size));
    }
    if !kind.is_symlink() {
        return Err(refused(format!(
            "{}, not a regular file or a folder",
            what_is(kind)
        )));
    }
    let target = std::fs::read_link(path).unwrap_or_default();
    let to = |rest: &str| format!("a symbolic link to {}{rest}", target.display());
    // What `/proc` and `/dev/fd` lead to is each process's own: the handler's stdin is not the
    // file this process would see there.
    if target.starts_with("/proc")
        || target.starts_with("/dev/fd")
        || target.starts_with("/dev/std")
    {
        return Err(refused(to(", which leads to each process's own files")));
    }
    let Ok(real) = std::fs::canonicalize(path) else {
        return Err(refused(to(", which leads to nothing")));
    };
    if !real.starts_with(root) {
        return Err(refused(to(&format!(
            ", out of the project ({})",
            real.display()
        ))));
    }
    match std::fs::metadata(&real) {
        Ok(meta) if meta.is_dir() => Ok(Entry::Dir(real)),
        Ok(meta) if meta.is_file() => Ok(Entry::File(meta.len())),
        Ok(meta) => Err(refused(to(&format!(
            ", which is {}",
            what_is(meta.file_type())
        )))),
        Err(_) => Err(refused(to(", which leads to nothing"))),
    }
}

/// What a file that is neither a regular file, a folder nor a link is, as a message says it.
#[cfg(unix)]
fn what_is(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn what_is(_: std::fs::FileType) -> &'static str {
    "a special file"
}

/// `path` relative to `root`, `/`-separated, as the review shows it; as given when it is not
/// under the root.
fn shown(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(relative) => relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => path.display().to_string(),
    }
}

/// Returns true if and only if `text` is `sha256:` and 64 lowercase hex digits.
pub fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// One length-prefixed field, so that no two different inputs frame to the same bytes.
fn field(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

#[cfg(unix)]
fn path_bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt as _;
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
fn path_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().into_owned().into_bytes()
}

/// The path `word` names as a handler running in `root` would open it: a relative word joined
/// to the root as written; an absolute one when it leads under the root, written so or through
/// symlinks (a root reached through a symlinked `/home`, `/proc/self/cwd`, which is the root for
/// a handler). `..` is left for the file system to resolve, as it does for the handler: after
/// a symlink, `..` leads to the link's target's parent, so resolving it by text could hash one
/// file while the handler runs another. Whether the file is inside the root is decided once
/// every link is resolved ([`examine`]).
fn candidate(root: &Path, word: &str) -> Option<PathBuf> {
    // The system opens no path that long: such a word names no file a handler could run.
    if word.is_empty() || word.len() >= MAX_PATH_BYTES || word.contains('\0') {
        return None;
    }
    let path = Path::new(word);
    if !path.is_absolute() {
        return Some(root.join(path));
    }
    for cwd in ["/proc/self/cwd", "/proc/thread-self/cwd"] {
        if let Ok(rest) = path.strip_prefix(cwd) {
            return (!rest.as_os_str().is_empty()).then(|| root.join(rest));
        }
    }
    if path.starts_with(root) {
        return (path != root).then(|| path.to_path_buf());
    }
    // Through symlinks: the longest leading part that resolves, resolved, and the rest as
    // written. A part resolves only if every shorter one does, so it is found by halving, in
    // a few resolutions whatever the word's length.
    let parts: Vec<std::path::Component<'_>> = path.components().collect();
    let prefix = |n: usize| -> PathBuf { parts[..n].iter().collect() };
    let lead = parts
        .iter()
        .take_while(|c| {
            matches!(
                c,
                std::path::Component::Prefix(_) | std::path::Component::RootDir
            )
        })
        .count()
        .max(1);
    let (mut good, mut bad) = (lead, parts.len() + 1);
    let mut real = prefix(lead).canonicalize().ok()?;
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        match prefix(mid).canonicalize() {
            Ok(resolved) => {
                good = mid;
                real = resolved;
            }
            Err(_) => bad = mid,
        }
    }
    let mut full = real;
    full.extend(parts[good..].iter());
    (full.starts_with(root) && full != root).then_some(full)
}

/// The relative path and hash of the regular file at `path`, when it is one and, all symlinks
/// resolved, is still inside `root`.
fn examine(root: &Path, path: &Path, hashed: &mut u64) -> Option<(String, String)> {
    // `stat` first: a word naming nothing costs one system call, and a FIFO or a device is
    // never opened.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let real = path.canonicalize().ok()?;
    let relative = real.strip_prefix(root).ok()?;
    if relative.as_os_str().is_empty() {
        return None;
    }
    let file = crate::fs::open_nonblocking_no_symlink(&real).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let relative = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let size = meta.len();
    if size > MAX_FILE_BYTES || *hashed + size > MAX_TOTAL_BYTES {
        return Some((relative, identity(&meta)));
    }
    // Sized to the file: a script is small, and a zeroed buffer would cost more than its hash.
    let mut contents = Vec::with_capacity(usize::try_from(size).unwrap_or(0) + 1);
    if file
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut contents)
        .is_err()
        || contents.len() as u64 > MAX_FILE_BYTES
    {
        // Unreadable, or grew while being read: not a file to take a content hash of.
        return Some((relative, identity(&meta)));
    }
    *hashed += contents.len() as u64;
    Some((
        relative,
        format!("sha256:{}", hex(&Sha256::digest(&contents))),
    ))
}

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt as _;
    format!(
        "identity:{}:{}:{}:{}.{}",
        meta.size(),
        meta.dev(),
        meta.ino(),
        meta.ctime(),
        meta.ctime_nsec()
    )
}

#[cfg(not(unix))]
fn identity(meta: &std::fs::Metadata) -> String {
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("identity:{}:{modified}", meta.len())
}

/// The canonical JSON of the file's `hooks` value: object keys sorted (a stable sort, so
/// repeated keys keep their order and are all kept: the dispatch reads every one of them),
/// no white space. Every top-level `hooks` member is included, in order.
pub fn canonical_hooks(bytes: &[u8]) -> Result<Vec<u8>, String> {
    canonical_top(bytes, false)
}

/// [`canonical_hooks`], then, when `with_sandbox` and the file has a top-level `"sandbox"` (the
/// policy of its handlers, contract §20), a newline, `sandbox:` and each one's canonical JSON:
/// a file that loosens its sandbox is trusted again. Canonical JSON holds no raw newline, and a
/// file without the key keeps the digest it had.
pub fn canonical_top(bytes: &[u8], with_sandbox: bool) -> Result<Vec<u8>, String> {
    let top: Canon = serde_json::from_slice(bytes)
        .map_err(|e| format!("the settings file cannot be read for its digest: {e}"))?;
    let mut out = Vec::new();
    let mut sandbox = Vec::new();
    let mut plain_http = Vec::new();
    if let Canon::Object(members) = top {
        for (key, value) in members {
            if key == "hooks" {
                value.write(&mut out);
            } else if with_sandbox && key == crate::settings::sandbox::KEY {
                sandbox.extend_from_slice(b"\nsandbox:");
                value.write(&mut sandbox);
            } else if key == crate::settings::ALLOW_PLAIN_HTTP {
                // It decides whether an http handler is sent (contract §19), so it is trusted
                // with the hooks; a file without it digests as it always did.
                plain_http.extend_from_slice(b"\0");
                plain_http.extend_from_slice(key.as_bytes());
                plain_http.push(b'=');
                value.write(&mut plain_http);
            }
        }
    }
    out.extend(sandbox);
    out.extend(plain_http);
    Ok(out)
}

/// A JSON value that keeps every member of an object, repeated keys included; its strings are
/// borrowed from the file where they hold no escape.
enum Canon<'a> {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(Cow<'a, str>),
    Array(Vec<Canon<'a>>),
    Object(Vec<(Cow<'a, str>, Canon<'a>)>),
}

/// An object's key, borrowed where it can be.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key<'de>, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl Canon<'_> {
    fn write(mut self, out: &mut Vec<u8>) {
        match &mut self {
            Canon::Null => out.extend_from_slice(b"null"),
            Canon::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Canon::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Canon::String(s) => write_string(s, out),
            Canon::Array(items) => {
                out.push(b'[');
                for (i, item) in std::mem::take(items).into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write(out);
                }
                out.push(b']');
            }
            Canon::Object(members) => {
                let mut members = std::mem::take(members);
                members.sort_by(|a, b| a.0.cmp(&b.0));
                out.push(b'{');
                for (i, (key, value)) in members.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_string(&key, out);
                    out.push(b':');
                    value.write(out);
                }
                out.push(b'}');
            }
        }
    }
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    // Serializing a string cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

impl<'de> Deserialize<'de> for Canon<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Canon<'de>, D::Error> {
        deserializer.deserialize_any(CanonVisitor)
    }
}

struct CanonVisitor;

impl<'de> Visitor<'de> for CanonVisitor {
    type Value = Canon<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Canon<'de>, E> {
        Ok(Canon::Null)
    }

    fn visit_none<E>(self) -> Result<Canon<'de>, E> {
        Ok(Canon::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Canon<'de>, E> {
        Ok(Canon::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Canon<'de>, E> {
        Ok(Canon::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Canon<'de>, E> {
        Ok(Canon::Number(n.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Canon<'de>, E> {
        serde_json::Number::from_f64(n)
            .map(Canon::Number)
            .ok_or_else(|| E::custom("a number JSON cannot hold"))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Canon<'de>, E> {
        Ok(Canon::String(Cow::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Canon<'de>, E> {
        Ok(Canon::String(Cow::Owned(s.to_string())))
    }

    fn visit_string<E>(self, s: String) -> Result<Canon<'de>, E> {
        Ok(Canon::String(Cow::Owned(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Canon<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Canon::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Canon<'de>, A::Error> {
        let mut members = Vec::new();
        while let Some((Key(key), value)) = map.next_entry::<Key<'de>, Canon<'de>>()? {
            members.push((key, value));
        }
        Ok(Canon::Object(members))
    }
}

#[cfg(test)]
#[path = "digest_tests.rs"]
mod tests;
