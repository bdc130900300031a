//! The second pass: the chain walked from line to line, naming what went wrong where (edited,
//! removed, inserted, reordered, forged, truncated, unsigned).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use ed25519_dalek::VerifyingKey;

use crate::compliance::chain::{self, HeadRecord};
use crate::compliance::legacy;

use super::*;

/// The second pass: walks the chain and collects the findings.
pub(super) fn walk(
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
pub(super) struct Walk<'a> {
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
pub(super) fn signature_problem(signature: &SigCheck) -> Option<(Kind, String)> {
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
pub(super) fn valid_seq(record: &Record) -> Option<u64> {
    match &record.kind {
        LineKind::Signed {
            seq: Some(seq),
            signature: SigCheck::Valid,
            ..
        } => Some(*seq),
        _ => None,
    }
}
