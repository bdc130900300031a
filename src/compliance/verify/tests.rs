use std::fs;

use super::*;
use crate::compliance::event::ToolCallEvent;
use crate::compliance::js_json;
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
        let event =
            ToolCallEvent::from_hook_payload(hook.as_object().expect("object"), 1_700_000_000_000);
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
