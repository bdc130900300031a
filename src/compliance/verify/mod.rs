//! Checking a log: every signature, the chain from line to line, and the tail against the head.
//!
//! The first pass reads each line and checks what a line can prove alone (is it JSON, is it
//! signed, does its signature verify under the key it names). The second pass walks the chain
//! and names what went wrong where: a line `edited` after signing, lines `removed`, a line
//! `inserted` (a copy, or one whose signature does not verify and without which the chain runs
//! on), lines `reordered`, a `forged` signature (an unknown key or no signature at all in the
//! `sig` field), lines `truncated` off the end (the head records a later `seq`). Lines without
//! `sig` come from another writer, levelcode itself, and are `unsigned`: reported, but only a
//! failure under `--strict`.

use std::fs;
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::chain;
use super::keys;

/// What was found wrong, from the worst to the merely notable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Edited,
    Removed,
    Inserted,
    Reordered,
    Forged,
    Truncated,
    Malformed,
    HeadMissing,
    HeadInvalid,
    Unsigned,
}

impl Kind {
    /// Returns true if and only if this kind makes `verify` fail without `--strict`.
    pub fn is_tampering(self) -> bool {
        self != Kind::Unsigned
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Edited => "edited",
            Kind::Removed => "removed",
            Kind::Inserted => "inserted",
            Kind::Reordered => "reordered",
            Kind::Forged => "forged",
            Kind::Truncated => "truncated",
            Kind::Malformed => "malformed",
            Kind::HeadMissing => "head-missing",
            Kind::HeadInvalid => "head-invalid",
            Kind::Unsigned => "unsigned",
        }
    }
}

/// One finding. `line` is 1-based; `None` for findings about the head file itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    pub line: Option<usize>,
    pub seq: Option<u64>,
    pub kind: Kind,
    pub message: String,
}

/// One line as `show` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub line: usize,
    pub seq: Option<u64>,
    #[serde(serialize_with = "js_number")]
    pub timestamp: Option<f64>,
    #[serde(rename = "traceId")]
    pub trace_id: Option<String>,
    #[serde(rename = "agentId")]
    pub agent_id: Option<String>,
    pub tool: Option<String>,
    pub result: Option<String>,
    /// `ok`, or the kind of the first issue found on this line.
    pub status: &'static str,
}

/// Writes a number as JavaScript would read it back: whole numbers without a fraction.
fn js_number<S: serde::Serializer>(n: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match n {
        // Within ±2^53 the conversion is exact.
        Some(n) if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 => {
            serializer.serialize_i64(*n as i64)
        }
        Some(n) if n.is_finite() => serializer.serialize_f64(*n),
        _ => serializer.serialize_none(),
    }
}

/// The outcome of checking one log.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub file: PathBuf,
    pub head_file: PathBuf,
    pub lines: usize,
    pub signed: usize,
    pub unsigned: usize,
    /// The highest `seq` among lines whose signature verifies.
    pub last_seq: Option<u64>,
    /// The head's `seq`, when a head was read and its signature verifies.
    pub head_seq: Option<u64>,
    /// Key ids that signatures were checked against.
    pub kids: Vec<String>,
    pub issues: Vec<Issue>,
    /// Public key files that could not be used.
    pub notes: Vec<String>,
    #[serde(skip)]
    pub entries: Vec<Entry>,
}

impl Report {
    /// The first finding that makes the log fail verification.
    pub fn first_bad(&self) -> Option<&Issue> {
        self.issues.iter().find(|issue| issue.kind.is_tampering())
    }

    /// Returns true if and only if the log passes: nothing tampered and, under `strict`, no
    /// unsigned line either.
    pub fn passes(&self, strict: bool) -> bool {
        self.first_bad().is_none() && !(strict && self.unsigned > 0)
    }
}

/// Where to find the log, its head, and the keys to trust.
pub struct Sources {
    pub log: PathBuf,
    pub head: PathBuf,
    /// When non-empty, only these public key files are trusted; else every `signing*.pub`
    /// beside the log.
    pub public_keys: Vec<PathBuf>,
}

/// Checks the log described by `sources`. `Err` only when the log cannot be read at all.
pub fn verify(sources: &Sources) -> io::Result<Report> {
    let dir = sources
        .log
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let (keys, notes) = if sources.public_keys.is_empty() {
        keys::public_keys(Some(&dir), &[])
    } else {
        keys::public_keys(None, &sources.public_keys)
    };
    let file = crate::fs::open_regular(&sources.log, fs::OpenOptions::new().read(true))?;
    let records = read_records(BufReader::new(file), &keys)?;
    let head = chain::read_head(&sources.head);
    let mut report = walk(&records, head, &keys);
    report.file = sources.log.clone();
    report.head_file = sources.head.clone();
    report.kids = keys.keys().cloned().collect();
    report.notes = notes;
    Ok(report)
}

mod records;
mod render;
mod walk;

use records::*;
pub use render::{to_json, write_text};
use walk::*;

#[cfg(test)]
mod tests;
