//! Our tool calls as Claude Code's (contract §12), and back: [`tool_calls`] gives the calls a
//! handler runs for, [`input_from_claude`] carries its `updatedInput` back to the levelcode
//! tool's own input. Paths are joined to the project root and normalized lexically, as Claude
//! Code gives them, and made relative again on the way back.

use std::path::Path;

use serde_json::{Map, Value};

use super::tool_names;
use crate::dispatch::protocol::ToolCall;

/// The tool calls a Claude Code handler runs for: one, except for `read_files`, which gives one
/// per path. `None` for a tool without a Claude Code name: it is passed on as it is.
pub fn tool_calls(tool: &str, input: &Value, root: &Path) -> Vec<ToolCall> {
    let call = |name: &'static str, input: Map<String, Value>| ToolCall {
        name,
        input: Value::Object(input),
        part: None,
    };
    let Some(fields) = input.as_object() else {
        return vec![ToolCall {
            name: tool_names(tool).first().copied().unwrap_or(""),
            input: input.clone(),
            part: None,
        }];
    };
    let path_of = |key: &str| fields.get(key).map(|v| absolute(root, v));
    match tool {
        "write_file" => {
            let mut out = Map::new();
            put(&mut out, "file_path", path_of("path"));
            put(&mut out, "content", fields.get("content").cloned());
            vec![call("Write", out)]
        }
        "str_replace" => {
            let mut out = Map::new();
            put(&mut out, "file_path", path_of("path"));
            match fields.get("replacements") {
                Some(Value::Array(list)) if list.len() != 1 => {
                    let edits = list.iter().map(|r| Value::Object(edit(r))).collect();
                    out.insert("edits".into(), Value::Array(edits));
                    vec![call("MultiEdit", out)]
                }
                Some(Value::Array(list)) => {
                    out.extend(edit(&list[0]));
                    vec![call("Edit", out)]
                }
                _ => vec![call("Edit", out)],
            }
        }
        "run_terminal_command" => {
            let mut out = Map::new();
            put(&mut out, "command", fields.get("command").cloned());
            out.insert("description".into(), Value::String(String::new()));
            put(
                &mut out,
                "timeout",
                fields.get("timeout_seconds").and_then(millis),
            );
            let background =
                fields.get("process_type").and_then(Value::as_str) == Some("BACKGROUND");
            out.insert("run_in_background".into(), Value::Bool(background));
            vec![call("Bash", out)]
        }
        "read_files" => match fields.get("paths") {
            Some(Value::Array(paths)) if !paths.is_empty() => paths
                .iter()
                .enumerate()
                .map(|(i, path)| {
                    let mut out = Map::new();
                    out.insert("file_path".into(), absolute(root, path));
                    ToolCall {
                        name: "Read",
                        input: Value::Object(out),
                        part: Some(i),
                    }
                })
                .collect(),
            _ => vec![call("Read", Map::new())],
        },
        "code_search" | "glob" => {
            let mut out = Map::new();
            put(&mut out, "pattern", fields.get("pattern").cloned());
            put(&mut out, "path", path_of("cwd"));
            vec![call(if tool == "glob" { "Glob" } else { "Grep" }, out)]
        }
        _ => vec![ToolCall {
            name: "",
            input: input.clone(),
            part: None,
        }],
    }
}

/// One replacement `{old, new, allowMultiple}` as Claude Code's `{old_string, new_string,
/// replace_all}`.
fn edit(replacement: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    put(&mut out, "old_string", replacement.get("old").cloned());
    put(&mut out, "new_string", replacement.get("new").cloned());
    out.insert(
        "replace_all".into(),
        replacement
            .get("allowMultiple")
            .cloned()
            .unwrap_or(Value::Bool(false)),
    );
    out
}

fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        map.insert(key.into(), value);
    }
}

/// `timeout_seconds` as Claude Code's milliseconds; none for `-1` (no timeout) or anything that
/// is not a number of seconds.
fn millis(seconds: &Value) -> Option<Value> {
    if let Some(secs) = seconds.as_i64() {
        return (secs >= 0).then(|| Value::from(secs.saturating_mul(1000)));
    }
    let secs = seconds.as_f64().filter(|s| *s >= 0.0 && s.is_finite())?;
    Some(number(secs * 1000.0))
}

/// A number as an integer when it is one.
fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        #[allow(clippy::cast_possible_truncation)]
        return Value::from(value as i64);
    }
    Value::from(value)
}

/// A path value joined to the project root and normalized lexically; anything but a string is
/// left as it is.
fn absolute(root: &Path, path: &Value) -> Value {
    match path {
        Value::String(path) => Value::String(
            crate::fs::normalize(&root.join(path))
                .to_string_lossy()
                .into(),
        ),
        other => other.clone(),
    }
}

/// A path Claude Code gave back, in levelcode's form: relative to the project root when it is
/// inside it, else as given.
fn relative(root: &Path, path: &Value) -> Value {
    let Value::String(text) = path else {
        return path.clone();
    };
    let given = Path::new(text);
    if !given.is_absolute() {
        return path.clone();
    }
    match crate::fs::normalize(given).strip_prefix(crate::fs::normalize(root)) {
        Ok(rest) if rest.as_os_str().is_empty() => Value::String(".".into()),
        Ok(rest) => Value::String(rest.to_string_lossy().into()),
        Err(_) => path.clone(),
    }
}

/// The levelcode tool input after a Claude Code handler answered `updatedInput` for `call`
/// (made from `original` by [`tool_calls`]): each field that differs from what the handler was
/// given is carried back to the levelcode field it came from; every other field keeps its
/// levelcode value, so an `updatedInput` that changes nothing gives `original` back unchanged.
pub fn input_from_claude(
    tool: &str,
    original: &Value,
    call: &ToolCall,
    updated: &Map<String, Value>,
    root: &Path,
) -> Value {
    let given = call.input.as_object();
    let changed = |key: &str| {
        updated
            .get(key)
            .filter(|value| given.and_then(|g| g.get(key)) != Some(*value))
    };
    if updated.keys().all(|key| changed(key).is_none()) {
        return original.clone();
    }
    let mut out = original.as_object().cloned().unwrap_or_default();
    match tool {
        "write_file" => {
            if let Some(path) = changed("file_path") {
                out.insert("path".into(), relative(root, path));
            }
            if let Some(content) = changed("content") {
                out.insert("content".into(), content.clone());
            }
        }
        "str_replace" => {
            if let Some(path) = changed("file_path") {
                out.insert("path".into(), relative(root, path));
            }
            let before = match out.get("replacements") {
                Some(Value::Array(list)) => list.clone(),
                _ => Vec::new(),
            };
            let mut replacements = before.clone();
            if let Some(Value::Array(edits)) = changed("edits") {
                let given_edits = given.and_then(|g| g.get("edits")).and_then(Value::as_array);
                replacements = edits
                    .iter()
                    .enumerate()
                    .map(|(i, e)| {
                        let unchanged = given_edits.and_then(|g| g.get(i)) == Some(e);
                        match before.get(i) {
                            Some(r) if unchanged => r.clone(),
                            r => replacement(r, e),
                        }
                    })
                    .collect();
            }
            if ["old_string", "new_string", "replace_all"]
                .iter()
                .any(|k| changed(k).is_some())
            {
                let first = replacements.first().cloned();
                let mut fields = Map::new();
                for key in ["old_string", "new_string", "replace_all"] {
                    if let Some(value) = changed(key) {
                        fields.insert(key.into(), value.clone());
                    }
                }
                let merged = replacement(first.as_ref(), &Value::Object(fields));
                if replacements.is_empty() {
                    replacements.push(merged);
                } else {
                    replacements[0] = merged;
                }
            }
            if replacements != before {
                out.insert("replacements".into(), Value::Array(replacements));
            }
        }
        "run_terminal_command" => {
            if let Some(command) = changed("command") {
                out.insert("command".into(), command.clone());
            }
            if let Some(ms) = changed("timeout").and_then(Value::as_f64) {
                out.insert("timeout_seconds".into(), number(ms / 1000.0));
            }
            if let Some(background) = changed("run_in_background").and_then(Value::as_bool) {
                let kind = if background { "BACKGROUND" } else { "SYNC" };
                out.insert("process_type".into(), Value::String(kind.into()));
            }
        }
        "read_files" => {
            if let Some(path) = changed("file_path") {
                let path = relative(root, path);
                match (out.get_mut("paths"), call.part) {
                    (Some(Value::Array(paths)), Some(i)) if i < paths.len() => paths[i] = path,
                    _ => {
                        out.insert("paths".into(), Value::Array(vec![path]));
                    }
                }
            }
        }
        "code_search" | "glob" => {
            if let Some(pattern) = changed("pattern") {
                out.insert("pattern".into(), pattern.clone());
            }
            if let Some(path) = changed("path") {
                out.insert("cwd".into(), relative(root, path));
            }
        }
        _ => {
            for (key, value) in updated {
                if changed(key).is_some() {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
    }
    Value::Object(out)
}

/// A levelcode replacement: `before` (if any) with the fields of Claude Code's `edit` written
/// over it.
fn replacement(before: Option<&Value>, edit: &Value) -> Value {
    let mut out = before
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (theirs, ours) in [
        ("old_string", "old"),
        ("new_string", "new"),
        ("replace_all", "allowMultiple"),
    ] {
        if let Some(value) = edit.get(theirs) {
            out.insert(ours.into(), value.clone());
        }
    }
    Value::Object(out)
}
