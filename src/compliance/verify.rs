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
use std::fs::File;
use std::io::{self, BufRead as _, BufReader};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
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
    let file = File::open(&sources.log)?;
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
    let mut issues: Vec<Issue> = Vec::new();
    let mut issue = |line: Option<usize>, seq: Option<u64>, kind: Kind, message: String| {
        issues.push(Issue {
            line,
            seq,
            kind,
            message,
        });
    };

    // Where each seq occurs among lines whose signature verifies: to tell lines that come
    // later (reordered) from lines that are gone (removed).
    let mut positions: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (at, record) in records.iter().enumerate() {
        if let Some(seq) = valid_seq(record) {
            positions.entry(seq).or_default().push(at);
        }
    }

    let mut signed = 0;
    let mut unsigned = 0;
    // The next seq the chain expects, and the hash the next line's prev must carry (`None`
    // after a finding, when it cannot be known).
    let mut expected: u64 = 0;
    let mut want_prev: Option<String> = Some(chain::GENESIS.to_string());
    // The last line that joined the chain: (index, seq).
    let mut last: Option<(usize, u64)> = None;
    // First line of each seq that joined the chain.
    let mut seen: HashMap<u64, usize> = HashMap::new();
    // Seqs already reported as coming later than they should.
    let mut reported_late: HashSet<u64> = HashSet::new();

    for (at, record) in records.iter().enumerate() {
        let line = Some(record.number);
        match &record.kind {
            LineKind::Blank => {}
            LineKind::Malformed(why) => issue(line, None, Kind::Malformed, why.clone()),
            LineKind::Unsigned(check) => {
                unsigned += 1;
                let legacy = match check {
                    legacy::Check::Matches => "its legacy signature matches, which proves nothing",
                    legacy::Check::Differs => {
                        "its legacy signature does not match either: levelcode's report calls it TAMPERED"
                    }
                    legacy::Check::NotCheckable => "it has no legacy signature to check",
                };
                issue(
                    line,
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
                if let Some((kind, message)) = signature_problem(signature) {
                    // Without this line, does the next good line follow on from the last one?
                    // Then the line was never part of the chain.
                    let next = records[at + 1..].iter().find(|r| valid_seq(r).is_some());
                    let chain_skips_it = next.is_some_and(|next| match &next.kind {
                        LineKind::Signed { seq, prev, .. } => {
                            *seq == Some(expected)
                                && want_prev.is_some()
                                && prev.as_ref() == want_prev.as_ref()
                        }
                        _ => false,
                    });
                    if chain_skips_it {
                        issue(
                            line,
                            *seq,
                            Kind::Inserted,
                            format!("{message}, and the chain runs on without it"),
                        );
                    } else {
                        issue(line, *seq, kind, message);
                        if let Some(seq) = *seq {
                            expected = seq.saturating_add(1);
                            seen.entry(seq).or_insert(at);
                            last = Some((at, seq));
                        }
                        want_prev = None;
                    }
                    continue;
                }
                let Some(seq) = *seq else {
                    issue(line, None, Kind::Malformed, "its seq is not a whole number".to_string());
                    continue;
                };
                if seq == expected {
                    if let Some(want) = &want_prev {
                        if prev.as_ref() != Some(want) {
                            match last {
                                Some((before, before_seq)) => issue(
                                    Some(records[before].number),
                                    Some(before_seq),
                                    Kind::Edited,
                                    format!(
                                        "replaced by another signed line: line {}'s prev does \
                                         not match it",
                                        record.number
                                    ),
                                ),
                                None => issue(
                                    line,
                                    Some(seq),
                                    Kind::Edited,
                                    "the first link's prev is not 64 zeros".to_string(),
                                ),
                            }
                        }
                    }
                } else if seq < expected {
                    if reported_late.remove(&seq) {
                        // Already named where it should have been.
                    } else if let Some(&first) = seen.get(&seq) {
                        let message = if records[first].hash == record.hash {
                            format!("a copy of line {}", records[first].number)
                        } else {
                            format!("seq {seq} was already used by line {}", records[first].number)
                        };
                        issue(line, Some(seq), Kind::Inserted, message);
                    } else {
                        issue(
                            line,
                            Some(seq),
                            Kind::Reordered,
                            format!("seq {seq} comes after seq {}", expected - 1),
                        );
                    }
                    // Out of place: the chain goes on from where it was.
                    continue;
                } else {
                    let later: Vec<(u64, usize)> = positions
                        .range(expected..seq)
                        .filter_map(|(s, ats)| ats.iter().find(|&&a| a > at).map(|&a| (*s, a)))
                        .collect();
                    if let Some(&(first_late, late_at)) = later.first() {
                        issue(
                            line,
                            Some(seq),
                            Kind::Reordered,
                            format!(
                                "seq {seq} comes before seq {first_late} (line {})",
                                records[late_at].number
                            ),
                        );
                        reported_late.extend(later.iter().map(|(s, _)| *s));
                    } else {
                        let missing = seq - expected;
                        let range = if missing == 1 {
                            format!("seq {expected} is")
                        } else {
                            format!("seq {expected} to {} are", seq - 1)
                        };
                        issue(
                            line,
                            Some(expected),
                            Kind::Removed,
                            format!(
                                "{range} missing: {missing} line{} removed before this line (seq {seq})",
                                if missing == 1 { "" } else { "s" }
                            ),
                        );
                    }
                }
                expected = seq.saturating_add(1);
                want_prev = Some(record.hash.clone());
                seen.entry(seq).or_insert(at);
                last = Some((at, seq));
            }
        }
    }

    let last_seq = seen.keys().copied().max();
    let mut head_seq = None;
    match head {
        Err(why) => issue(None, None, Kind::HeadInvalid, why),
        Ok(None) if signed > 0 => issue(
            None,
            None,
            Kind::HeadMissing,
            "the head file is missing: lines cut off the end would go unnoticed".to_string(),
        ),
        Ok(None) => {}
        Ok(Some(record)) => match head_signature(&record, keys) {
            SigCheck::Valid => {
                head_seq = Some(record.head.seq);
                let head = &record.head;
                if last_seq.is_none_or(|last| head.seq > last) {
                    let from = last_seq.map_or(0, |s| s + 1);
                    let cut = head.seq + 1 - from;
                    let ends = match last_seq {
                        Some(s) => format!("the log's last signed line is seq {s}"),
                        None => "the log has no signed line".to_string(),
                    };
                    issue(
                        Some(records.len() + 1),
                        Some(from),
                        Kind::Truncated,
                        format!(
                            "the head records seq {}, but {ends}: {cut} line{} cut off the end",
                            head.seq,
                            if cut == 1 { "" } else { "s" }
                        ),
                    );
                } else if let Some(&at) = seen.get(&head.seq) {
                    if records[at].hash != head.hash {
                        issue(
                            Some(records[at].number),
                            Some(head.seq),
                            Kind::Edited,
                            "its hash differs from the one the head records for its seq".to_string(),
                        );
                    }
                }
            }
            SigCheck::Mismatch(_) => issue(
                None,
                None,
                Kind::HeadInvalid,
                "its signature does not verify: the head was edited".to_string(),
            ),
            SigCheck::UnknownKey(kid) => issue(
                None,
                None,
                Kind::HeadInvalid,
                format!("signed by key {kid}, which is not among the trusted public keys"),
            ),
            SigCheck::Unusable(why) => issue(None, None, Kind::HeadInvalid, why.to_string()),
        },
    }

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
