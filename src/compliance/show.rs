//! `compliance show`: the log as a table people can read, each line with its verification status.

use std::io;

use serde_json::json;

use super::js_json;
use super::verify::{Entry, Report};

/// Longest trace or agent id shown in full; longer ones are cut with an ellipsis.
const MAX_ID: usize = 24;

/// Writes the table and a one-line summary.
pub fn write_table(report: &Report, out: &mut impl io::Write) -> io::Result<()> {
    let header = [
        "LINE",
        "SEQ",
        "TIME (UTC)",
        "TOOL",
        "RESULT",
        "AGENT",
        "TRACE",
        "STATUS",
    ];
    let rows: Vec<[String; 8]> = report.entries.iter().map(row).collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    write_row(out, &header.map(str::to_string), &widths)?;
    for row in &rows {
        write_row(out, row, &widths)?;
    }
    let verdict = match report.first_bad() {
        Some(bad) => format!(
            "TAMPERED: first bad line {}; run `compliance verify` for details",
            bad.line
                .map_or_else(|| "the head file".to_string(), |l| l.to_string())
        ),
        None => "verified".to_string(),
    };
    writeln!(
        out,
        "{} line{}, {} signed, {} unsigned: {verdict}",
        report.lines,
        if report.lines == 1 { "" } else { "s" },
        report.signed,
        report.unsigned
    )
}

/// Writes `{"file", "entries": [...], "ok"}` as one JSON object.
pub fn write_json(report: &Report, out: &mut impl io::Write) -> io::Result<()> {
    let entries: Vec<serde_json::Value> = report
        .entries
        .iter()
        .map(|entry| {
            let mut value = serde_json::to_value(entry).unwrap_or(serde_json::Value::Null);
            if let Some(object) = value.as_object_mut() {
                object.insert(
                    "time".to_string(),
                    entry.timestamp.and_then(utc_time).into(),
                );
            }
            value
        })
        .collect();
    let document = json!({
        "file": report.file,
        "entries": entries,
        "ok": report.first_bad().is_none(),
    });
    serde_json::to_writer(&mut *out, &document)?;
    writeln!(out)
}

fn row(entry: &Entry) -> [String; 8] {
    let dash = || "-".to_string();
    [
        entry.line.to_string(),
        entry.seq.map_or_else(dash, |s| s.to_string()),
        entry.timestamp.and_then(utc_time).unwrap_or_else(dash),
        entry.tool.as_deref().map_or_else(dash, shorten),
        entry.result.as_deref().map_or_else(dash, shorten),
        entry.agent_id.as_deref().map_or_else(dash, shorten),
        entry.trace_id.as_deref().map_or_else(dash, shorten),
        entry.status.to_string(),
    ]
}

fn write_row(out: &mut impl io::Write, cells: &[String; 8], widths: &[usize; 8]) -> io::Result<()> {
    let mut line = String::new();
    for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
        if i > 0 {
            line.push_str("  ");
        }
        line.push_str(cell);
        if i + 1 < cells.len() {
            let pad = width.saturating_sub(cell.chars().count());
            line.extend(std::iter::repeat_n(' ', pad));
        }
    }
    writeln!(out, "{}", line.trim_end())
}

/// Cuts long ids, and replaces control characters so a hostile line cannot redraw the terminal.
fn shorten(id: &str) -> String {
    let clean: String = id
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if clean.chars().count() <= MAX_ID {
        clean
    } else {
        let head: String = clean.chars().take(MAX_ID - 1).collect();
        format!("{head}…")
    }
}

/// `2023-11-14 22:13:20.000` for a millisecond timestamp; `None` outside years 0–9999.
fn utc_time(ms: f64) -> Option<String> {
    // Years 0 to 9999, so the integer conversions below are exact.
    if !(-62_167_219_200_000.0..253_402_300_800_000.0).contains(&ms) || ms.fract() != 0.0 {
        return (ms.is_finite()).then(|| js_json::number_to_string(ms));
    }
    let ms = ms as i64;
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (year, month, day) = crate::fs::civil_from_days(days);
    let seconds = ms_of_day / 1000;
    Some(format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:03}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        ms_of_day % 1000
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_written_in_utc() {
        assert_eq!(utc_time(0.0).as_deref(), Some("1970-01-01 00:00:00.000"));
        assert_eq!(
            utc_time(1_700_000_000_123.0).as_deref(),
            Some("2023-11-14 22:13:20.123")
        );
        assert_eq!(
            utc_time(951_782_400_000.0).as_deref(),
            Some("2000-02-29 00:00:00.000")
        );
        assert_eq!(utc_time(-1.0).as_deref(), Some("1969-12-31 23:59:59.999"));
        assert_eq!(utc_time(1.5).as_deref(), Some("1.5"));
        assert_eq!(utc_time(f64::NAN), None);
    }

    #[test]
    fn long_and_hostile_ids_are_tamed() {
        assert_eq!(shorten("short"), "short");
        assert_eq!(shorten(&"x".repeat(30)).chars().count(), MAX_ID);
        assert_eq!(shorten("a\u{1b}[2Jb"), "a?[2Jb");
    }
}
