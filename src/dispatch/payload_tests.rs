//! Unit tests of the payload's reading and checks (`payload.rs`).

use super::*;

fn parse(text: &str) -> Result<Payload, String> {
    Payload::parse(text.as_bytes().to_vec(), None)
}

/// What reading `text` gives, as text that tells every difference: each member read, or
/// the error.
fn fields_text(read: serde_json::Result<Fields>) -> String {
    match read {
        Ok(f) => format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            f.event,
            f.hook_event_name,
            f.cwd,
            f.tool_name,
            f.team,
            f.session_id,
            f.session_id_camel,
            f.id.map(|r| r.get().to_string()),
            f.options.map(|r| r.get().to_string()),
        ),
        Err(e) => format!("error: {e}"),
    }
}

/// Payloads and request lines of the usual shape and of odd ones: members known and not,
/// values of every kind, keys with escapes, a member given twice, spaced out or not, and
/// now and then one piece of syntax put in or taken out.
fn payload_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let key = prop::sample::select(vec![
        "\"event\"",
        "\"hook_event_name\"",
        "\"cwd\"",
        "\"tool_name\"",
        "\"team\"",
        "\"id\"",
        "\"options\"",
        "\"tool_input\"",
        "\"session_id\"",
        "\"sessionId\"",
        "\"tool_n\\u0061me\"",
    ]);
    let value = prop::sample::select(vec![
        "\"PreToolUse\"",
        "\"write_file\"",
        "\"/p\"",
        "\"\"",
        "\"a\\\"b\\\\c\\n\"",
        "\"\\u00e9\\u0000\"",
        "\"\\ud800\"",
        "null",
        "1",
        "-2.5e3",
        "true",
        "[1,{\"a\":[]}]",
        "{\"path\":\"src/x.rs\",\"content\":\"fn main() {\\n    println!(\\\"hi\\\");\\n}\\n\"}",
        "{\"timeout\":5}",
    ]);
    let members = prop::collection::vec((key, value), 0..6);
    (
        members,
        any::<bool>(),
        prop::option::weighted(0.3, (0.0..1.0f64, 0..6usize)),
    )
        .prop_map(|(members, spaced, edit)| {
            let sep = if spaced { " , \n" } else { "," };
            let colon = if spaced { " :\t" } else { ":" };
            let body: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("{k}{colon}{v}"))
                .collect();
            let mut text = format!("{{{}}}", body.join(sep));
            if let Some((at, what)) = edit {
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    clippy::cast_precision_loss
                )]
                let at = ((text.len() as f64) * at) as usize;
                let at = (0..=at)
                    .rev()
                    .find(|i| text.is_char_boundary(*i))
                    .unwrap_or(0);
                match what {
                    0 => text.insert(at, ','),
                    1 => text.insert(at, '"'),
                    2 => text.insert(at, '}'),
                    3 => text.insert(at, '\u{1}'),
                    4 => text.truncate(at),
                    _ => {
                        if let Some(c) = text[at..].chars().next() {
                            text.replace_range(at..at + c.len_utf8(), "");
                        }
                    }
                }
            }
            text
        })
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(3000))]

    /// The hand-written reader reads every payload and request line as `serde_json` alone
    /// does: the same members, or the same error.
    #[test]
    fn the_members_read_are_serde_jsons(text in payload_text(), request in proptest::bool::ANY) {
        let fast = fields_text(Fields::read(text.as_bytes(), request));
        let serde = fields_text(Fields::read_by_serde(text.as_bytes(), request));
        proptest::prop_assert_eq!(fast, serde, "{}", text);
    }
}

#[test]
fn the_usual_payload_is_read_by_the_hand_written_reader() {
    let usual = br#"{"event":"PreToolUse","cwd":"/p","tool_name":"write_file","tool_input":{"path":"a","content":"x\ny"},"session_id":"s"}"#;
    let fields = Fields::read_plain(usual, false).expect("taken");
    assert_eq!(fields.tool_name, Some(Value::String("write_file".into())));
    for left in [
        &br#"{"tool_name":"a","tool_name":"b"}"#[..],
        br#"{"tool_n\u0061me":"a"}"#,
        br#"{"cwd":1}"#,
        br#"{"event":"Stop"} x"#,
    ] {
        assert!(Fields::read_plain(left, false).is_err(), "{left:?}");
    }
}

#[test]
fn event_and_cwd_are_appended_in_order() {
    let p = parse(r#" {"tool_name":"x","event":"PreToolUse"} "#).unwrap();
    assert_eq!(
        &*p.handler_input(Path::new("/p")),
        br#"{"tool_name":"x","event":"PreToolUse","cwd":"/p"}"#
    );
    let p = Payload::parse(b"{ }".to_vec(), Some("Stop")).unwrap();
    assert_eq!(
        &*p.handler_input(Path::new("/p")),
        br#"{ "event":"Stop","cwd":"/p"}"#
    );
}

#[test]
fn alias_counts_as_event_and_stays() {
    let p = parse(r#"{"hook_event_name":"Stop","cwd":"/x"}"#).unwrap();
    assert_eq!(p.event, "Stop");
    assert_eq!(
        &*p.handler_input(Path::new("/p")),
        br#"{"hook_event_name":"Stop","cwd":"/x","event":"Stop"}"#
    );
}

#[test]
fn depth_limit_is_128() {
    let ok = format!(
        "{{\"event\":\"Stop\",\"x\":{}{}}}",
        "[".repeat(127),
        "]".repeat(127)
    );
    assert!(parse(&ok).is_ok());
    let deep = format!(
        "{{\"event\":\"Stop\",\"x\":{}{}}}",
        "[".repeat(128),
        "]".repeat(128)
    );
    assert!(parse(&deep).unwrap_err().contains("deeper than 128"));
    // Many brackets, but side by side or inside strings: not deep.
    let wide = format!(
        "{{\"event\":\"Stop\",\"x\":[{}],\"s\":\"{}\\\"{}\"}}",
        "[],".repeat(200) + "[]",
        "[".repeat(200),
        "{".repeat(200)
    );
    assert!(too_deep(wide.as_bytes(), MAX_DEPTH).is_none());
    assert!(parse(&wide).is_ok());
}

#[test]
fn members_are_read_in_one_pass_as_a_derived_reader_would() {
    // `id` and `options` are a payload's own members like any other; only serve reads them.
    let twice = parse(r#"{"event":"Stop","id":1,"id":2,"options":[],"options":{}}"#);
    assert!(twice.is_ok(), "{twice:?}");
    let request = Payload::read_request(br#"{"event":"Stop","id":[1],"options":{"a":1}}"#)
        .expect("a request line");
    assert_eq!(request.id.as_deref().map(RawValue::get), Some("[1]"));
    assert_eq!(
        request.options.as_deref().map(RawValue::get),
        Some(r#"{"a":1}"#)
    );
    assert!(Payload::read_request(br#"{"event":"Stop","id":1,"id":2}"#).is_none());
    let error = parse(r#"{"event":"Stop","x":{"event":1},"event":"Stop"}"#).unwrap_err();
    assert!(error.contains("duplicate field `event`"), "{error}");
    let error = parse(r#"{"event":"Stop"} {}"#).unwrap_err();
    assert!(error.contains("trailing characters"), "{error}");
    let escaped = parse(r#"{"\u0065vent":"Stop","tool_name":5}"#).unwrap();
    assert_eq!(escaped.event, "Stop");
}

#[test]
fn null_event_is_not_missing() {
    assert!(parse(r#"{"event":null}"#)
        .unwrap_err()
        .contains("not a string"));
}
