//! Payload parsing (contract §2, §8) on arbitrary bytes: an error or a payload, never a panic;
//! and an accepted payload always gives handlers one JSON object with `event` and `cwd`, and
//! carries no NUL byte in what becomes an environment variable or a path.

#![no_main]

use std::path::Path;

use levelcode_hooks::dispatch::payload::Payload;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks whether `--event` is given, so both paths are explored.
    let (flag, bytes) = match data.split_first() {
        Some((b, rest)) if b % 3 == 0 => (Some("PreToolUse"), rest),
        Some((b, rest)) if b % 3 == 1 => (Some("Stop"), rest),
        _ => (None, data),
    };
    let Ok(payload) = Payload::parse(bytes.to_vec(), flag) else {
        return;
    };
    let input = payload.handler_input(Path::new("/project"));
    // Fields the dispatcher does not read pass through as they are, lone surrogate escapes
    // (`"\ud800"`) included, which JSON's grammar allows but a Rust `Value` cannot hold: check
    // the grammar, then the keys when a `Value` can be built.
    serde_json::from_slice::<serde::de::IgnoredAny>(&input).expect("handler input is JSON");
    assert!(input.starts_with(b"{") && input.ends_with(b"}"));
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(&input) {
        let object = value.as_object().expect("handler input is an object");
        assert!(object.contains_key("event") && object.contains_key("cwd"));
    }
    if payload.kind.is_tool_event() {
        assert!(payload.tool_name.is_some());
    }
    // What becomes an environment variable or a path can hold no NUL byte (`"\u0000"` is valid
    // JSON): an accepted payload never carries one there, or exporting it would panic.
    assert!(!payload.event.contains('\0'));
    assert!(!payload.cwd.as_deref().is_some_and(|c| c.contains('\0')));
    if payload.kind.is_tool_event() {
        assert!(!payload.tool_name.as_deref().is_some_and(|t| t.contains('\0')));
    }
});
