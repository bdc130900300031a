//! Settings parsing (contract §3–§5) on arbitrary bytes: warnings only, never a panic; every
//! handler that comes out is one the schema allows; every matcher compiles or errs.

#![no_main]

use std::path::Path;

use levelcode_hooks::settings::layers::LayerKind;
use levelcode_hooks::settings::{self, Action, Events, Program, MAX_TIMEOUT_SECS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for events in [Events::All, Events::Only("PreToolUse")] {
        let mut groups = Vec::new();
        let mut warnings = Vec::new();
        let source = settings::Source {
            layer: LayerKind::Project,
            file: Path::new("settings.json").into(),
        };
        settings::parse(source, data, events, &mut groups, &mut warnings);
        assert!(warnings.iter().all(|w| w.starts_with("settings.json: ")));
        for group in &groups {
            if let Ok(matcher) = group.compiled_matcher() {
                let _ = matcher.matches("write_file");
            }
            for handler in &group.handlers {
                match &handler.action {
                    Action::Process(Program::Shell(c)) => assert!(!c.trim().is_empty()),
                    Action::Process(Program::Argv(a)) => assert!(!a.is_empty() && !a[0].is_empty()),
                }
                assert!(handler.timeout.as_secs_f64() <= MAX_TIMEOUT_SECS);
                let _ = handler.label();
            }
        }
    }
});
