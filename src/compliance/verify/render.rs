//! A report as people read it (text) and as programs read it (JSON).

use std::io::{self};

use super::*;

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
