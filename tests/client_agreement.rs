//! The TypeScript client (`packages/levelcode-hooks/src/`) keeps lists of what the dispatcher
//! knows, since it cannot read them when it builds: the variables that change an answer, the
//! tool events, the protocols. Each test here reads the client's list from its source (a block
//! `export const NAME = [ … ] as const`) and fails when it differs from the dispatcher's own.

use std::collections::BTreeSet;
use std::path::Path;

use levelcode_hooks::environment::{AGENT, ANSWER_VARS, NO_ANSWER_VARS};
use levelcode_hooks::settings::events::EVENTS;
use levelcode_hooks::settings::protocol::Protocol;

fn source(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The string literals of the block `export const <name> = [ … ] as const` of a client file.
fn client_list(file: &str, name: &str) -> Vec<String> {
    let text = source(&format!("packages/levelcode-hooks/src/{file}"));
    client_list_in(&text, name).unwrap_or_else(|why| panic!("{file}: {why}"))
}

fn client_list_in(text: &str, name: &str) -> Result<Vec<String>, String> {
    let start = format!("export const {name} = [");
    let from = text.find(&start).ok_or_else(|| format!("no `{start}`"))? + start.len();
    let end = text[from..]
        .find(']')
        .ok_or_else(|| format!("`{start}` is not closed"))?;
    if !text[from + end..].starts_with("] as const") {
        return Err(format!("{name} is not `[ … ] as const`"));
    }
    let items: Vec<String> = text[from..from + end]
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            item.strip_prefix('"')
                .and_then(|rest| rest.strip_suffix('"'))
                .map(str::to_string)
                .ok_or_else(|| format!("{name} has {item}, not a plain string"))
        })
        .collect::<Result<_, _>>()?;
    Ok(items)
}

/// The value of `export const <name> = "…";` in a client file.
fn client_string(file: &str, name: &str) -> String {
    let text = source(&format!("packages/levelcode-hooks/src/{file}"));
    let start = format!("export const {name} = \"");
    let from = text
        .find(&start)
        .unwrap_or_else(|| panic!("{file} has no `{start}`"))
        + start.len();
    text[from..from + text[from..].find('"').unwrap()].to_string()
}

/// `code` without the items marked `#[cfg(test)]`, wherever they are in the file.
fn without_tests(code: &str) -> String {
    let mut rest = code;
    let mut kept = String::new();
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        rest = &rest[at..];
        // The item ends at its first `;` before any brace, or where its braces close.
        let mut depth = 0usize;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    kept.push_str(rest);
    kept
}

/// Every variable `src/environment.rs` reads: each name it writes as a string, outside its
/// tests and comments.
fn variables_read_by_the_dispatcher() -> BTreeSet<String> {
    let text = source("src/environment.rs");
    let code: String = without_tests(&text)
        .lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    code.split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            s.len() > 1
                && s.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && s.chars()
                    .skip(1)
                    .any(|c| c.is_ascii_uppercase() || c == '_')
        })
        .map(str::to_string)
        .collect()
}

fn set<I: IntoIterator<Item = S>, S: ToString>(items: I) -> BTreeSet<String> {
    items.into_iter().map(|s| s.to_string()).collect()
}

/// A variable added on one side and not the other leaves answers on disk (kept.ts) that the
/// next process, under another value, would give wrongly.
#[test]
fn env_keys_are_the_variables_that_change_an_answer() {
    let read = variables_read_by_the_dispatcher();
    assert!(read.len() >= 20, "environment.rs reads {read:?}");
    let answering = set(ANSWER_VARS);
    let quiet = set(NO_ANSWER_VARS);
    assert!(
        answering.is_disjoint(&quiet),
        "both in ANSWER_VARS and NO_ANSWER_VARS: {:?}",
        answering.intersection(&quiet).collect::<Vec<_>>()
    );
    let unsorted: Vec<&String> = read
        .iter()
        .filter(|name| !answering.contains(*name) && !quiet.contains(*name))
        .collect();
    assert!(
        unsorted.is_empty(),
        "src/environment.rs reads {unsorted:?}: put each in ANSWER_VARS (it changes an answer) \
         or NO_ANSWER_VARS (it does not)"
    );
    let unread: Vec<&String> = answering
        .union(&quiet)
        .filter(|n| !read.contains(*n))
        .collect();
    assert!(
        unread.is_empty(),
        "listed in src/environment.rs but never read: {unread:?}"
    );

    let keys = client_list("process.ts", "ENV_KEYS");
    assert_eq!(
        keys.len(),
        set(&keys).len(),
        "ENV_KEYS has a name twice: {keys:?}"
    );
    // Besides the dispatcher's own: the path its runner looks programs up on, and the client's
    // choice of binary.
    let mut expected = answering;
    expected.insert("PATH".to_string());
    expected.insert(client_string("binary.ts", "BINARY_ENV"));
    let keys = set(keys);
    assert_eq!(
        keys,
        expected,
        "ENV_KEYS in packages/levelcode-hooks/src/process.ts and ANSWER_VARS in \
         src/environment.rs (+ PATH, BINARY_ENV): missing {:?}, not an answer's {:?}",
        expected.difference(&keys).collect::<Vec<_>>(),
        keys.difference(&expected).collect::<Vec<_>>()
    );
}

/// The client's `trust()` refuses under the same marks as `levelcode-hooks trust`.
#[test]
fn the_client_s_agent_marks_are_the_dispatcher_s() {
    assert_eq!(
        client_list("process.ts", "AGENT_MARKS"),
        AGENT,
        "AGENT_MARKS in packages/levelcode-hooks/src/process.ts and AGENT in src/environment.rs"
    );
}

#[test]
fn the_client_s_tool_events_are_the_table_s() {
    let tools: Vec<&str> = EVENTS
        .iter()
        .filter(|event| event.kind.is_tool_event())
        .map(|event| event.name)
        .collect();
    assert!(tools.contains(&"PreToolUse"), "{tools:?}");
    assert_eq!(
        client_list("types.ts", "TOOL_EVENT_NAMES"),
        tools,
        "TOOL_EVENT_NAMES in packages/levelcode-hooks/src/types.ts and the tool events of \
         src/settings/events.rs"
    );
    // The events whose answers the client waits for, probes and keeps: tool events each.
    let summarized = client_list("memory.ts", "SUMMARIZED_EVENTS");
    assert!(!summarized.is_empty());
    for name in &summarized {
        assert!(
            tools.contains(&name.as_str()),
            "SUMMARIZED_EVENTS in packages/levelcode-hooks/src/memory.ts has {name}, not a tool \
             event of src/settings/events.rs"
        );
    }
}

#[test]
fn the_client_s_protocols_are_the_table_s() {
    let table: Vec<&str> = Protocol::all().map(Protocol::name).collect();
    assert!(Protocol::all().next().is_some_and(Protocol::is_levelcode));
    assert_eq!(
        client_list("types.ts", "HOOK_PROTOCOLS"),
        table,
        "HOOK_PROTOCOLS in packages/levelcode-hooks/src/types.ts and the protocol table \
         (src/settings/protocol/mod.rs), in its order: the first is every handler's default"
    );
}

#[test]
fn a_client_list_is_read_only_as_a_block_of_plain_strings() {
    let list = client_list_in("export const X = [\n  \"a\",\n  \"b\",\n] as const;", "X");
    assert_eq!(list, Ok(vec!["a".to_string(), "b".to_string()]));
    assert!(client_list_in("export const X = [\"a\"];", "X").is_err());
    assert!(client_list_in("export const X = [\"a\", B] as const;", "X").is_err());
    assert!(client_list_in("export const Y = [\"a\"] as const;", "X").is_err());
}

#[test]
fn test_items_are_left_out_wherever_they_are() {
    let code = "a\n#[cfg(test)]\nmod tests {\n fn f() { \"T\" }\n}\nb\n#[cfg(test)]\nuse x;\nc";
    assert_eq!(without_tests(code), "a\n\nb\n\nc");
}
