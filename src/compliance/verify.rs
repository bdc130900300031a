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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};
use serde::Serialize;

use super::chain::{self, HeadRecord};
use super::js_json::{self, Object, Value};
use super::keys;
use super::legacy;

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
    let file = super::open_regular(&sources.log, fs::OpenOptions::new().read(true))?;
    let records = read_records(BufReader::new(file), &keys)?;
    let head = chain::read_head(&sources.head);
    let mut report = walk(&records, head, &keys);
    report.file = sources.log.clone();
    report.head_file = sources.head.clone();
    report.kids = keys.keys().cloned().collect();
    report.notes = notes;
    Ok(report)
}

/// What one line proves alone.
#[derive(Debug)]
struct Record {
    number: usize,
    hash: String,
    kind: LineKind,
    entry: Entry,
}

#[derive(Debug)]
enum LineKind {
    Blank,
    Malformed(String),
    Unsigned(legacy::Check),
    Signed {
        seq: Option<u64>,
        prev: Option<String>,
        signature: SigCheck,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum SigCheck {
    Valid,
    /// Well-formed, by a known key, and wrong for these bytes.
    Mismatch(String),
    UnknownKey(String),
    /// No usable `kid`, or a `sig` that is not 64 bytes of base64.
    Unusable(&'static str),
}

fn read_records(
    mut reader: impl io::BufRead,
    keys: &BTreeMap<String, VerifyingKey>,
) -> io::Result<Vec<Record>> {
    let mut records = Vec::new();
    let mut buf = Vec::new();
    let mut number = 0;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        number += 1;
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        records.push(read_record(number, line, keys));
    }
    Ok(records)
}

fn read_record(number: usize, line: &[u8], keys: &BTreeMap<String, VerifyingKey>) -> Record {
    let mut entry = Entry {
        line: number,
        seq: None,
        timestamp: None,
        trace_id: None,
        agent_id: None,
        tool: None,
        result: None,
        status: "ok",
    };
    let hash = chain::line_hash(line);
    let record = |kind: LineKind, entry: Entry| Record {
        number,
        hash: hash.clone(),
        kind,
        entry,
    };
    if line.iter().all(u8::is_ascii_whitespace) {
        return record(LineKind::Blank, entry);
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return record(LineKind::Malformed("not UTF-8".to_string()), entry);
    };
    let object = match js_json::parse(text) {
        Ok(Value::Object(object)) => object,
        Ok(_) => return record(LineKind::Malformed("not a JSON object".to_string()), entry),
        Err(e) => return record(LineKind::Malformed(format!("not JSON: {e}")), entry),
    };
    fill_entry(&mut entry, &object);
    if !object.contains_key("sig") {
        return record(LineKind::Unsigned(legacy::check(&object)), entry);
    }
    let Some(parts) = chain::split_signed(line) else {
        return record(
            LineKind::Malformed("it has a sig that is not its last field".to_string()),
            entry,
        );
    };
    let signature = check_signature(&object, &parts, keys);
    record(
        LineKind::Signed {
            seq: entry.seq,
            prev: chain::hex_field(&object, "prev", 64),
            signature,
        },
        entry,
    )
}

fn fill_entry(entry: &mut Entry, line: &Object) {
    let text = |value: Option<&Value>| value.and_then(Value::as_js_string).map(js_json::lossy);
    entry.seq = chain::seq_field(line, "seq");
    entry.timestamp = line.get("timestamp").and_then(Value::as_f64);
    entry.trace_id = text(line.get("traceId"));
    entry.agent_id = text(line.get("agentId"));
    let payload = line.get("payload").and_then(Value::as_object);
    entry.tool = text(payload.and_then(|p| p.get("tool")));
    entry.result = text(payload.and_then(|p| p.get("result")));
}

fn check_signature(
    line: &Object,
    parts: &chain::SignedParts<'_>,
    keys: &BTreeMap<String, VerifyingKey>,
) -> SigCheck {
    let Some(kid) = chain::hex_field(line, "kid", 16) else {
        return SigCheck::Unusable("it has no valid kid");
    };
    let Some(signature) = decode_signature(parts.sig) else {
        return SigCheck::Unusable("its sig is not a base64 Ed25519 signature");
    };
    let Some(key) = keys.get(&kid) else {
        return SigCheck::UnknownKey(kid);
    };
    match key.verify_strict(&parts.unsigned, &signature) {
        Ok(()) => SigCheck::Valid,
        Err(_) => SigCheck::Mismatch(kid),
    }
}

fn decode_signature(text: &str) -> Option<Signature> {
    let bytes: [u8; 64] = BASE64.decode(text).ok()?.try_into().ok()?;
    Some(Signature::from_bytes(&bytes))
}

/// Checks a head record's own signature.
fn head_signature(record: &HeadRecord, keys: &BTreeMap<String, VerifyingKey>) -> SigCheck {
    let Some(signature) = decode_signature(&record.sig) else {
        return SigCheck::Unusable("its sig is not a base64 Ed25519 signature");
    };
    let Some(key) = keys.get(&record.kid) else {
        return SigCheck::UnknownKey(record.kid.clone());
    };
    match key.verify_strict(&record.unsigned, &signature) {
        Ok(()) => SigCheck::Valid,
        Err(_) => SigCheck::Mismatch(record.kid.clone()),
    }
}

/// The second pass: walks the chain and collects the findings.
fn walk(
    records: &[Record],
    head: Result<Option<HeadRecord>, String>,
    keys: &BTreeMap<String, VerifyingKey>,
) -> Report {
    let mut walk = Walk::new(records);
    let (mut signed, mut unsigned) = (0, 0);
    for (at, record) in records.iter().enumerate() {
        match &record.kind {
            LineKind::Blank => {}
            LineKind::Malformed(why) => walk.issue(at, None, Kind::Malformed, why.clone()),
            LineKind::Unsigned(check) => {
                unsigned += 1;
                let legacy = match check {
                    legacy::Check::Matches => "its legacy signature matches, which proves nothing",
                    legacy::Check::Differs => {
                        "its legacy signature does not match either: levelcode's report calls it TAMPERED"
                    }
                    legacy::Check::NotCheckable => "it has no legacy signature to check",
                };
                walk.issue(
                    at,
                    None,
                    Kind::Unsigned,
                    format!("no sig: written by another writer; {legacy}"),
                );
            }
            LineKind::Signed {
                seq,
                prev,
                signature,
            } => {
                signed += 1;
                match (signature_problem(signature), *seq) {
                    (Some((kind, message)), seq) => walk.bad_signature(at, seq, kind, message),
                    (None, Some(seq)) => walk.link(at, seq, prev.as_deref()),
                    (None, None) => walk.issue(
                        at,
                        None,
                        Kind::Malformed,
                        "its seq is not a whole number".to_string(),
                    ),
                }
            }
        }
    }
    let last_seq = walk.seen.keys().copied().max();
    let head_seq = walk.head(head, keys, last_seq, signed > 0);

    let mut issues = walk.issues;
    issues.sort_by_key(|issue| issue.line.unwrap_or(usize::MAX));
    let mut entries: Vec<Entry> = records.iter().map(|r| r.entry.clone()).collect();
    for issue in issues.iter().rev() {
        if let Some(entry) = issue.line.and_then(|l| entries.get_mut(l.wrapping_sub(1))) {
            entry.status = issue.kind.as_str();
        }
    }
    Report {
        file: PathBuf::new(),
        head_file: PathBuf::new(),
        lines: records.len(),
        signed,
        unsigned,
        last_seq,
        head_seq,
        kids: Vec::new(),
        issues,
        notes: Vec::new(),
        entries,
    }
}

/// The state of the chain walk.
struct Walk<'a> {
    records: &'a [Record],
    /// Where each seq occurs among lines whose signature verifies: tells lines that come later
    /// (reordered) from lines that are gone (removed).
    positions: BTreeMap<u64, Vec<usize>>,
    /// The next seq the chain expects.
    expected: u64,
    /// The hash the next line's prev must carry; `None` after a finding, when it cannot be known.
    want_prev: Option<String>,
    /// The last line that joined the chain: (index, seq).
    last: Option<(usize, u64)>,
    /// The first line of each seq that joined the chain.
    seen: HashMap<u64, usize>,
    /// Seqs already reported as coming later than they should.
    reported_late: HashSet<u64>,
    issues: Vec<Issue>,
}

impl<'a> Walk<'a> {
    fn new(records: &'a [Record]) -> Walk<'a> {
        let mut positions: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (at, record) in records.iter().enumerate() {
            if let Some(seq) = valid_seq(record) {
                positions.entry(seq).or_default().push(at);
            }
        }
        Walk {
            records,
            positions,
            expected: 0,
            want_prev: Some(chain::GENESIS.to_string()),
            last: None,
            seen: HashMap::new(),
            reported_late: HashSet::new(),
            issues: Vec::new(),
        }
    }

    /// Records a finding about the line at index `at`.
    fn issue(&mut self, at: usize, seq: Option<u64>, kind: Kind, message: String) {
        self.issues.push(Issue {
            line: self.records.get(at).map(|r| r.number),
            seq,
            kind,
            message,
        });
    }

    /// Makes the line at `at` the chain's last link.
    fn advance(&mut self, at: usize, seq: u64, hash: Option<String>) {
        self.expected = seq.saturating_add(1);
        self.want_prev = hash;
        self.seen.entry(seq).or_insert(at);
        self.last = Some((at, seq));
    }

    /// A signed line whose signature does not verify.
    fn bad_signature(&mut self, at: usize, seq: Option<u64>, kind: Kind, message: String) {
        // Without this line, does the next good line follow on from the last one? Then the line
        // was never part of the chain.
        let next = self.records[at + 1..]
            .iter()
            .find(|r| valid_seq(r).is_some());
        let chain_skips_it = next.is_some_and(|next| match &next.kind {
            LineKind::Signed { seq, prev, .. } => {
                *seq == Some(self.expected) && self.want_prev.is_some() && *prev == self.want_prev
            }
            _ => false,
        });
        if chain_skips_it {
            self.issue(
                at,
                seq,
                Kind::Inserted,
                format!("{message}, and the chain runs on without it"),
            );
            return;
        }
        self.issue(at, seq, kind, message);
        match seq {
            // The line that follows links to the original bytes, which are gone.
            Some(seq) => self.advance(at, seq, None),
            None => self.want_prev = None,
        }
    }

    /// A line whose signature verifies: does it continue the chain?
    fn link(&mut self, at: usize, seq: u64, prev: Option<&str>) {
        let hash = self.records[at].hash.clone();
        if seq == self.expected {
            if let Some(want) = &self.want_prev {
                if prev != Some(want.as_str()) {
                    self.replaced_before(at, seq);
                }
            }
        } else if seq < self.expected {
            self.out_of_place(at, seq);
            // The chain goes on from where it was.
            return;
        } else {
            self.gap(at, seq);
        }
        self.advance(at, seq, Some(hash));
    }

    /// A line in the right place whose prev does not match the line before it.
    fn replaced_before(&mut self, at: usize, seq: u64) {
        let number = self.records[at].number;
        match self.last {
            Some((before, before_seq)) => self.issue(
                before,
                Some(before_seq),
                Kind::Edited,
                format!("replaced by another signed line: line {number}'s prev does not match it"),
            ),
            None => self.issue(
                at,
                Some(seq),
                Kind::Edited,
                "the first link's prev is not 64 zeros".to_string(),
            ),
        }
    }

    /// A line whose seq the chain has already passed.
    fn out_of_place(&mut self, at: usize, seq: u64) {
        if self.reported_late.remove(&seq) {
            // Already named where it should have been.
            return;
        }
        if let Some(&first) = self.seen.get(&seq) {
            let first_number = self.records[first].number;
            let message = if self.records[first].hash == self.records[at].hash {
                format!("a copy of line {first_number}")
            } else {
                format!("seq {seq} was already used by line {first_number}")
            };
            self.issue(at, Some(seq), Kind::Inserted, message);
        } else {
            let message = format!("seq {seq} comes after seq {}", self.expected - 1);
            self.issue(at, Some(seq), Kind::Reordered, message);
        }
    }

    /// A line whose seq skips ahead: the lines in between come later, or are gone.
    fn gap(&mut self, at: usize, seq: u64) {
        let later: Vec<(u64, usize)> = self
            .positions
            .range(self.expected..seq)
            .filter_map(|(s, ats)| ats.iter().find(|&&a| a > at).map(|&a| (*s, a)))
            .collect();
        if let Some(&(first_late, late_at)) = later.first() {
            let message = format!(
                "seq {seq} comes before seq {first_late} (line {})",
                self.records[late_at].number
            );
            self.issue(at, Some(seq), Kind::Reordered, message);
            self.reported_late.extend(later.iter().map(|(s, _)| *s));
        } else {
            let expected = self.expected;
            let missing = seq - expected;
            let range = if missing == 1 {
                format!("seq {expected} is")
            } else {
                format!("seq {expected} to {} are", seq - 1)
            };
            let plural = if missing == 1 { "" } else { "s" };
            self.issue(
                at,
                Some(expected),
                Kind::Removed,
                format!(
                    "{range} missing: {missing} line{plural} removed before this line (seq {seq})"
                ),
            );
        }
    }

    /// Checks the head against the log; returns the head's seq when its signature verifies.
    fn head(
        &mut self,
        head: Result<Option<HeadRecord>, String>,
        keys: &BTreeMap<String, VerifyingKey>,
        last_seq: Option<u64>,
        any_signed: bool,
    ) -> Option<u64> {
        let head_issue = |walk: &mut Walk<'_>, kind: Kind, message: String| {
            walk.issues.push(Issue {
                line: None,
                seq: None,
                kind,
                message,
            });
        };
        let record = match head {
            Err(why) => {
                head_issue(self, Kind::HeadInvalid, why);
                return None;
            }
            Ok(None) => {
                if any_signed {
                    head_issue(
                        self,
                        Kind::HeadMissing,
                        "the head file is missing: lines cut off the end would go unnoticed"
                            .to_string(),
                    );
                }
                return None;
            }
            Ok(Some(record)) => record,
        };
        let problem = match head_signature(&record, keys) {
            SigCheck::Valid => None,
            SigCheck::Mismatch(_) => {
                Some("its signature does not verify: the head was edited".to_string())
            }
            SigCheck::UnknownKey(kid) => Some(format!(
                "signed by key {kid}, which is not among the trusted public keys"
            )),
            SigCheck::Unusable(why) => Some(why.to_string()),
        };
        if let Some(problem) = problem {
            head_issue(self, Kind::HeadInvalid, problem);
            return None;
        }
        let head = &record.head;
        if last_seq.is_none_or(|last| head.seq > last) {
            let from = last_seq.map_or(0, |s| s + 1);
            let cut = head.seq + 1 - from;
            let ends = match last_seq {
                Some(s) => format!("the log's last signed line is seq {s}"),
                None => "the log has no signed line".to_string(),
            };
            let plural = if cut == 1 { "" } else { "s" };
            self.issues.push(Issue {
                line: Some(self.records.len() + 1),
                seq: Some(from),
                kind: Kind::Truncated,
                message: format!(
                    "the head records seq {}, but {ends}: {cut} line{plural} cut off the end",
                    head.seq
                ),
            });
        } else if let Some(&at) = self.seen.get(&head.seq) {
            if self.records[at].hash != head.hash {
                self.issue(
                    at,
                    Some(head.seq),
                    Kind::Edited,
                    "its hash differs from the one the head records for its seq".to_string(),
                );
            }
        }
        Some(head.seq)
    }
}

/// What is wrong with a line's signature, or `None` when it verifies.
fn signature_problem(signature: &SigCheck) -> Option<(Kind, String)> {
    match signature {
        SigCheck::Valid => None,
        SigCheck::Mismatch(kid) => Some((
            Kind::Edited,
            format!(
                "its bytes do not match its signature by key {kid}: changed after signing \
                 (or its sig was replaced)"
            ),
        )),
        SigCheck::UnknownKey(kid) => Some((
            Kind::Forged,
            format!(
                "signed by key {kid}, which is not among the trusted public keys (a rotated \
                 key's file can be given with --pub)"
            ),
        )),
        SigCheck::Unusable(why) => Some((Kind::Forged, (*why).to_string())),
    }
}

/// The seq of a line whose signature verifies.
fn valid_seq(record: &Record) -> Option<u64> {
    match &record.kind {
        LineKind::Signed {
            seq: Some(seq),
            signature: SigCheck::Valid,
            ..
        } => Some(*seq),
        _ => None,
    }
}

/// Writes the report for people.
pub fn write_text(report: &Report, strict: bool, out: &mut impl io::Write) -> io::Result<()> {
    writeln!(
        out,
        "{}: {} line{}: {} signed, {} unsigned",
        report.file.display(),
        report.lines,
        if report.lines == 1 { "" } else { "s" },
        report.signed,
        report.unsigned
    )?;
    for note in &report.notes {
        writeln!(out, "note: {note}")?;
    }
    const MAX_UNSIGNED_SHOWN: usize = 20;
    let mut unsigned_shown = 0;
    for issue in &report.issues {
        if issue.kind == Kind::Unsigned {
            unsigned_shown += 1;
            if unsigned_shown > MAX_UNSIGNED_SHOWN {
                continue;
            }
        }
        let place = match (issue.line, issue.seq) {
            (Some(line), Some(seq)) => format!("line {line} (seq {seq})"),
            (Some(line), None) => format!("line {line}"),
            (None, _) => report.head_file.display().to_string(),
        };
        writeln!(out, "{place}: {}: {}", issue.kind.as_str(), issue.message)?;
    }
    if unsigned_shown > MAX_UNSIGNED_SHOWN {
        writeln!(
            out,
            "… and {} more unsigned lines",
            unsigned_shown - MAX_UNSIGNED_SHOWN
        )?;
    }
    match report.first_bad() {
        Some(bad) => {
            let place = match (bad.line, bad.seq) {
                (Some(line), Some(seq)) => format!("line {line} (seq {seq})"),
                (Some(line), None) => format!("line {line}"),
                (None, _) => report.head_file.display().to_string(),
            };
            writeln!(out, "FAILED: first bad: {place}: {}", bad.kind.as_str())
        }
        None if strict && report.unsigned > 0 => writeln!(
            out,
            "FAILED (--strict): {} unsigned line{}",
            report.unsigned,
            if report.unsigned == 1 { "" } else { "s" }
        ),
        None => {
            let chain = match report.last_seq {
                Some(last) => format!("chain intact from seq 0 to {last}"),
                None => "no signed lines".to_string(),
            };
            let head = match report.head_seq {
                Some(seq) => format!("; head at seq {seq}"),
                None => String::new(),
            };
            writeln!(out, "OK: {chain}{head}")
        }
    }
}

/// The JSON form of the report, for tools.
pub fn to_json(report: &Report, strict: bool) -> serde_json::Value {
    let mut value = serde_json::to_value(report).unwrap_or(serde_json::Value::Null);
    if let Some(object) = value.as_object_mut() {
        object.insert("ok".to_string(), report.passes(strict).into());
        object.insert(
            "first_bad".to_string(),
            serde_json::to_value(report.first_bad()).unwrap_or(serde_json::Value::Null),
        );
    }
    value
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::compliance::event::ToolCallEvent;
    use crate::compliance::log;

    /// A log of `n` signed lines in a temporary folder.
    struct Fixture {
        dir: tempfile::TempDir,
    }

    impl Fixture {
        fn new(n: u32) -> Fixture {
            let fixture = Fixture {
                dir: tempfile::tempdir().expect("temp dir"),
            };
            for i in 0..n {
                fixture.append(i);
            }
            fixture
        }

        fn append(&self, i: u32) {
            let hook = js_json::parse(&format!(
                r#"{{"tool_name":"write_file","tool_call_id":"call-{i}","tool_input":{{"path":"f{i}.ts"}}}}"#
            ))
            .expect("json");
            let event = ToolCallEvent::from_hook_payload(
                hook.as_object().expect("object"),
                1_700_000_000_000,
            );
            log::append(self.dir.path(), &event).expect("appended");
        }

        fn log(&self) -> PathBuf {
            self.dir.path().join(log::LOG_FILE)
        }

        fn lines(&self) -> Vec<String> {
            fs::read_to_string(self.log())
                .expect("log")
                .lines()
                .map(str::to_string)
                .collect()
        }

        fn set_lines(&self, lines: &[String]) {
            let mut text = lines.join("\n");
            text.push('\n');
            fs::write(self.log(), text).expect("written");
        }

        fn verify_with(&self, head: PathBuf, public_keys: Vec<PathBuf>) -> Report {
            verify(&Sources {
                log: self.log(),
                head,
                public_keys,
            })
            .expect("readable")
        }

        fn verify(&self) -> Report {
            self.verify_with(chain::head_path(&self.log()), Vec::new())
        }
    }

    /// The first failing finding as (line, seq, kind).
    fn first_bad(report: &Report) -> Option<(Option<usize>, Option<u64>, Kind)> {
        report.first_bad().map(|i| (i.line, i.seq, i.kind))
    }

    #[test]
    fn an_intact_chain_passes() {
        let fixture = Fixture::new(5);
        let report = fixture.verify();
        assert!(report.passes(true), "{:?}", report.issues);
        assert_eq!((report.lines, report.signed, report.unsigned), (5, 5, 0));
        assert_eq!(report.last_seq, Some(4));
        assert_eq!(report.head_seq, Some(4));
        assert!(report.entries.iter().all(|e| e.status == "ok"));
    }

    #[test]
    fn an_edited_line_is_named() {
        let fixture = Fixture::new(5);
        let mut lines = fixture.lines();
        lines[2] = lines[2].replace("f2.ts", "f9.ts");
        fixture.set_lines(&lines);
        let report = fixture.verify();
        assert_eq!(first_bad(&report), Some((Some(3), Some(2), Kind::Edited)));
        // The line after it is not blamed for the edit.
        assert_eq!(report.issues.len(), 1, "{:?}", report.issues);
    }

    #[test]
    fn an_edited_timestamp_is_named() {
        let fixture = Fixture::new(3);
        let mut lines = fixture.lines();
        lines[1] = lines[1].replace("1700000000000", "1600000000000");
        fixture.set_lines(&lines);
        assert_eq!(
            first_bad(&fixture.verify()),
            Some((Some(2), Some(1), Kind::Edited))
        );
    }

    #[test]
    fn a_removed_line_is_named() {
        let fixture = Fixture::new(5);
        let mut lines = fixture.lines();
        lines.remove(2);
        fixture.set_lines(&lines);
        let report = fixture.verify();
        assert_eq!(first_bad(&report), Some((Some(3), Some(2), Kind::Removed)));
        assert_eq!(report.issues.len(), 1, "{:?}", report.issues);
    }

    #[test]
    fn removed_first_lines_are_named() {
        let fixture = Fixture::new(4);
        let lines = fixture.lines();
        fixture.set_lines(&lines[2..]);
        let report = fixture.verify();
        assert_eq!(first_bad(&report), Some((Some(1), Some(0), Kind::Removed)));
        assert!(
            report.issues[0].message.contains("seq 0 to 1"),
            "{}",
            report.issues[0].message
        );
    }

    #[test]
    fn an_inserted_copy_is_named() {
        let fixture = Fixture::new(5);
        let mut lines = fixture.lines();
        let copy = lines[1].clone();
        lines.insert(4, copy);
        fixture.set_lines(&lines);
        let report = fixture.verify();
        assert_eq!(first_bad(&report), Some((Some(5), Some(1), Kind::Inserted)));
        assert!(report.issues[0].message.contains("copy of line 2"));
        assert_eq!(report.issues.len(), 1, "{:?}", report.issues);
    }

    #[test]
    fn an_inserted_made_up_line_is_named() {
        let fixture = Fixture::new(4);
        let mut lines = fixture.lines();
        // A line that claims to be the next link but was not signed by the writer.
        let made_up = lines[2].replace("f2.ts", "evil.ts");
        lines.insert(2, made_up);
        fixture.set_lines(&lines);
        let report = fixture.verify();
        assert_eq!(first_bad(&report), Some((Some(3), Some(2), Kind::Inserted)));
        assert_eq!(report.issues.len(), 1, "{:?}", report.issues);
    }

    #[test]
    fn reordered_lines_are_named() {
        let fixture = Fixture::new(5);
        let mut lines = fixture.lines();
        lines.swap(2, 3);
        fixture.set_lines(&lines);
        let report = fixture.verify();
        assert_eq!(
            first_bad(&report),
            Some((Some(3), Some(3), Kind::Reordered))
        );
        assert!(report.issues[0].message.contains("before seq 2 (line 4)"));
        assert_eq!(report.issues.len(), 1, "{:?}", report.issues);
    }

    #[test]
    fn a_line_moved_to_the_end_is_named_where_it_went_missing() {
        let fixture = Fixture::new(5);
        let mut lines = fixture.lines();
        let moved = lines.remove(1);
        lines.push(moved);
        fixture.set_lines(&lines);
        assert_eq!(
            first_bad(&fixture.verify()),
            Some((Some(2), Some(2), Kind::Reordered))
        );
    }

    #[test]
    fn a_line_signed_by_another_key_is_forged() {
        let fixture = Fixture::new(4);
        let other = tempfile::tempdir().expect("temp dir");
        let other_key = keys::load_or_create(other.path()).expect("key");
        let mut lines = fixture.lines();
        let parts = chain::split_signed(lines[1].as_bytes()).expect("signed");
        let unsigned = String::from_utf8(parts.unsigned).expect("UTF-8");
        let line = js_json::parse(&lines[1]).expect("json");
        let kid = chain::hex_field(line.as_object().expect("object"), "kid", 16).expect("kid");
        let forged = unsigned
            .replace("f1.ts", "evil.ts")
            .replace(&kid, other_key.kid());
        lines[1] = chain::sign(&forged, &other_key);
        fixture.set_lines(&lines);
        let report = fixture.verify();
        assert_eq!(first_bad(&report), Some((Some(2), Some(1), Kind::Forged)));
        assert!(report.issues[0].message.contains(other_key.kid()));
    }

    #[test]
    fn a_sig_that_is_not_a_signature_is_forged() {
        let fixture = Fixture::new(3);
        let mut lines = fixture.lines();
        let parts = chain::split_signed(lines[1].as_bytes()).expect("signed");
        let sig = parts.sig.to_string();
        lines[1] = lines[1].replace(&sig, "AAAA");
        fixture.set_lines(&lines);
        assert_eq!(
            first_bad(&fixture.verify()),
            Some((Some(2), Some(1), Kind::Forged))
        );
    }

    #[test]
    fn a_cut_tail_is_caught_by_the_head() {
        let fixture = Fixture::new(5);
        let lines = fixture.lines();
        fixture.set_lines(&lines[..3]);
        let report = fixture.verify();
        assert_eq!(
            first_bad(&report),
            Some((Some(4), Some(3), Kind::Truncated))
        );
        assert!(
            report.issues[0].message.contains("2 lines cut off"),
            "{}",
            report.issues[0].message
        );
    }

    #[test]
    fn an_emptied_log_is_caught_by_the_head() {
        let fixture = Fixture::new(2);
        fs::write(fixture.log(), "").expect("emptied");
        assert_eq!(
            first_bad(&fixture.verify()),
            Some((Some(1), Some(0), Kind::Truncated))
        );
    }

    #[test]
    fn a_missing_or_edited_head_fails() {
        let fixture = Fixture::new(2);
        let head = chain::head_path(&fixture.log());
        let text = fs::read_to_string(&head).expect("head");
        fs::write(&head, text.replace("\"seq\":1", "\"seq\":9")).expect("edited");
        assert_eq!(
            first_bad(&fixture.verify()).map(|b| b.2),
            Some(Kind::HeadInvalid)
        );
        fs::remove_file(&head).expect("removed");
        assert_eq!(
            first_bad(&fixture.verify()).map(|b| b.2),
            Some(Kind::HeadMissing)
        );
    }

    #[test]
    fn a_head_kept_elsewhere_still_catches_a_cut_tail() {
        let fixture = Fixture::new(3);
        let anchored = fixture.dir.path().join("anchored.head");
        fs::copy(chain::head_path(&fixture.log()), &anchored).expect("copied");
        fixture.append(3);
        fixture.append(4);
        // An older head is fine while the line it names is intact.
        let report = fixture.verify_with(anchored.clone(), Vec::new());
        assert!(report.passes(true), "{:?}", report.issues);
        // Cutting the log and rewriting the head beside it does not fool the kept copy.
        let lines = fixture.lines();
        fixture.set_lines(&lines[..2]);
        fs::remove_file(chain::head_path(&fixture.log())).expect("removed");
        let report = fixture.verify_with(anchored, Vec::new());
        assert_eq!(
            first_bad(&report),
            Some((Some(3), Some(2), Kind::Truncated))
        );
    }

    #[test]
    fn unsigned_lines_fail_only_when_strict() {
        let fixture = Fixture::new(2);
        let mut lines = fixture.lines();
        lines.insert(
            1,
            r#"{"traceId":"toolu_01","timestamp":1700000000000,"eventType":"tool-call","payload":{"tool":"write_file","args":{"path":"src/a.ts","content":"x"},"result":"success"},"signature":"-16626"}"#
                .to_string(),
        );
        fixture.set_lines(&lines);
        fixture.append(2);
        let report = fixture.verify();
        assert!(report.passes(false), "{:?}", report.issues);
        assert!(!report.passes(true));
        assert_eq!(report.unsigned, 1);
        assert_eq!(report.issues[0].line, Some(2));
        assert_eq!(report.issues[0].kind, Kind::Unsigned);
        assert!(report.issues[0]
            .message
            .contains("legacy signature matches"));
    }

    #[test]
    fn garbage_lines_are_malformed() {
        let fixture = Fixture::new(2);
        let mut lines = fixture.lines();
        lines.insert(1, "not json".to_string());
        fixture.set_lines(&lines);
        assert_eq!(
            first_bad(&fixture.verify()),
            Some((Some(2), None, Kind::Malformed))
        );
    }

    #[test]
    fn a_rotated_key_keeps_old_lines_valid() {
        let fixture = Fixture::new(2);
        fs::remove_file(fixture.dir.path().join(keys::SECRET_FILE)).expect("removed");
        fixture.append(2);
        let report = fixture.verify();
        assert!(report.passes(true), "{:?}", report.issues);
        assert_eq!(report.kids.len(), 2);
        // Trusting only the new key shows the old lines as signed by an unknown key.
        let new_key = fixture.dir.path().join(keys::PUBLIC_FILE);
        let report = fixture.verify_with(chain::head_path(&fixture.log()), vec![new_key]);
        assert_eq!(first_bad(&report), Some((Some(1), Some(0), Kind::Forged)));
    }

    #[test]
    fn changed_bytes_anywhere_fail_verification() {
        let fixture = Fixture::new(3);
        let log = fs::read(fixture.log()).expect("log");
        let head_path = chain::head_path(&fixture.log());
        let head = fs::read(&head_path).expect("head");
        for (path, original) in [(fixture.log(), &log), (head_path.clone(), &head)] {
            // Every 13th byte (checking each one costs minutes in a debug build), and the
            // bytes around each line break, where a line's framing is decided.
            let mut positions: Vec<usize> = (0..original.len()).step_by(13).collect();
            for (at, byte) in original.iter().enumerate() {
                if *byte == b'\n' {
                    positions.extend([at.saturating_sub(2), at.saturating_sub(1), at]);
                }
            }
            for (i, &at) in positions.iter().enumerate() {
                let change = if i % 2 == 0 { 0x01u8 } else { 0x20 };
                let mut changed = original.clone();
                changed[at] ^= change;
                fs::write(&path, &changed).expect("written");
                let report = fixture.verify();
                assert!(
                    !report.passes(false),
                    "{}: byte {at} ^ {change:#x} went unnoticed",
                    path.display()
                );
            }
            fs::write(&path, original).expect("restored");
        }
        assert!(fixture.verify().passes(true));
    }

    #[test]
    fn the_json_report_names_the_first_bad_line() {
        let fixture = Fixture::new(3);
        let mut lines = fixture.lines();
        lines.remove(1);
        fixture.set_lines(&lines);
        let json = to_json(&fixture.verify(), false);
        assert_eq!(json["ok"], false);
        assert_eq!(json["first_bad"]["line"], 2);
        assert_eq!(json["first_bad"]["seq"], 1);
        assert_eq!(json["first_bad"]["kind"], "removed");
    }
}
