//! The first pass: each line read on its own, and what a line can prove alone (is it JSON, is it
//! signed, does its signature verify under the key it names).

use std::collections::BTreeMap;
use std::io::{self};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};

use crate::compliance::chain::{self, HeadRecord};
use crate::compliance::js_json::{self, Object, Value};
use crate::compliance::legacy;

use super::*;

/// What one line proves alone.
#[derive(Debug)]
pub(super) struct Record {
    pub(super) number: usize,
    pub(super) hash: String,
    pub(super) kind: LineKind,
    pub(super) entry: Entry,
}

#[derive(Debug)]
pub(super) enum LineKind {
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
pub(super) enum SigCheck {
    Valid,
    /// Well-formed, by a known key, and wrong for these bytes.
    Mismatch(String),
    UnknownKey(String),
    /// No usable `kid`, or a `sig` that is not 64 bytes of base64.
    Unusable(&'static str),
}

pub(super) fn read_records(
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

pub(super) fn read_record(
    number: usize,
    line: &[u8],
    keys: &BTreeMap<String, VerifyingKey>,
) -> Record {
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

pub(super) fn fill_entry(entry: &mut Entry, line: &Object) {
    let text = |value: Option<&Value>| value.and_then(Value::as_js_string).map(js_json::lossy);
    entry.seq = chain::seq_field(line, "seq");
    entry.timestamp = line.get("timestamp").and_then(Value::as_f64);
    entry.trace_id = text(line.get("traceId"));
    entry.agent_id = text(line.get("agentId"));
    let payload = line.get("payload").and_then(Value::as_object);
    entry.tool = text(payload.and_then(|p| p.get("tool")));
    entry.result = text(payload.and_then(|p| p.get("result")));
}

pub(super) fn check_signature(
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

pub(super) fn decode_signature(text: &str) -> Option<Signature> {
    let bytes: [u8; 64] = BASE64.decode(text).ok()?.try_into().ok()?;
    Some(Signature::from_bytes(&bytes))
}

/// Checks a head record's own signature.
pub(super) fn head_signature(
    record: &HeadRecord,
    keys: &BTreeMap<String, VerifyingKey>,
) -> SigCheck {
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
