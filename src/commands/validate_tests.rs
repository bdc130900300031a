//! `validate`'s pure parts: where a problem sits in its file, and what an unknown key says.

use super::*;

#[test]
fn positions_follow_the_file() {
    let order = vec!["Stop".to_string(), "PreToolUse".to_string()];
    assert!(
        position(Some("hooks.Stop[2].hooks[0]"), &order) < position(Some("hooks.Stop[10]"), &order)
    );
    assert!(
        position(Some("hooks.Stop[10]"), &order)
            < position(Some("hooks.PreToolUse[0].matcher"), &order)
    );
    assert_eq!(position(None, &order), (0, 0, 0));
}

#[test]
fn unknown_keys_say_what_was_meant() {
    let fields = Map::new();
    let m = unknown_key_message("matchers", GROUP_KEYS, &fields, true);
    assert!(
        m.contains("did you mean \"matcher\"") && m.contains("every tool"),
        "{m}"
    );
    let m = unknown_key_message("timout", &handler_keys(&fields), &fields, false);
    assert!(
        m.contains("did you mean \"timeout\"") && m.contains("10 seconds"),
        "{m}"
    );
    let m = unknown_key_message("cmd", &handler_keys(&fields), &fields, false);
    assert!(m.contains("did you mean \"command\""), "{m}");
    let m = unknown_key_message("disabled", &handler_keys(&fields), &fields, false);
    assert!(m.contains("\"enabled\": false"), "{m}");
    let m = unknown_key_message("description", &handler_keys(&fields), &fields, false);
    assert!(m.contains("known keys"), "{m}");
}
