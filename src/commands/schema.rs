//! `levelcode-hooks schema`: the JSON Schema (draft 2020-12) of settings.json's `hooks`
//! (contract §4 and §10).
//!
//! The schema describes a whole settings.json whose `hooks` key is checked and whose other keys
//! are left alone, so an editor can use it on the file itself. It is stricter than a dispatch,
//! like `validate`: unknown keys of groups and handlers are flagged. `docs/settings.schema.json`
//! is this output; a test fails when the two differ.

use std::process::ExitCode;

use clap::Args;
use serde_json::{json, Value};

use crate::dispatch::output::write_stdout;
use crate::settings::events::{self, Subject, EVENTS};
use crate::settings::kind::{Kind, KINDS};
use crate::settings::protocol::Protocol;
use crate::settings::{BACKGROUND_TIMEOUT_SECS, DEFAULT_TIMEOUT_SECS, MAX_TIMEOUT_SECS};

#[derive(Debug, Clone, Args)]
pub struct SchemaArgs {}

pub fn run(_args: &SchemaArgs) -> anyhow::Result<ExitCode> {
    write_stdout(&text())?;
    Ok(ExitCode::SUCCESS)
}

/// The schema as printed: pretty JSON and a final newline.
pub fn text() -> String {
    let mut text = serde_json::to_string_pretty(&document()).unwrap_or_default();
    text.push('\n');
    text
}

/// The schema.
pub fn document() -> Value {
    let levelcode = Protocol::LEVELCODE.name();
    let mut group_protocol =
        "The protocol of the group's handlers, unless a handler says otherwise.".to_string();
    for protocol in Protocol::all() {
        if let Some(note) = protocol.facts().matcher_note {
            group_protocol.push_str(&format!(" \"{}\": {note}", protocol.name()));
        }
    }
    let protocols: Vec<String> = Protocol::all()
        .map(|p| format!("\"{}\": {}", p.name(), p.facts().summary))
        .collect();
    let mut protocol_names: Vec<Value> = Protocol::all().map(|p| p.name().into()).collect();
    protocol_names.push(Value::Null);
    // The kinds this version runs are the schema's; the others are named, so that a person
    // reading it knows why a Claude Code handler of that type is refused.
    let running: Vec<String> = Kind::running()
        .map(|k| format!("\"{}\" ({})", k.name(), k.entry().summary))
        .collect();
    let others: Vec<String> = KINDS
        .iter()
        .filter(|e| !e.runs)
        .map(|e| format!("\"{}\"", e.name))
        .collect();
    let kind_description = format!(
        "The handler kind: {}. Claude Code's {} are not run by this version.",
        running.join(", "),
        others.join(", ")
    );
    let mut kind_names: Vec<Value> = Kind::running().map(|k| k.name().into()).collect();
    kind_names.push(Value::Null);
    let mut events = serde_json::Map::new();
    for event in EVENTS {
        let description = match event.matcher {
            Subject::Nothing => format!(
                "{} Matchers are ignored; every enabled group runs.",
                event.description
            ),
            Subject::Tool => event.description.to_string(),
            Subject::Member(field) => format!(
                "{} The matcher is tested against the payload's {}.",
                event.description,
                field.name()
            ),
        };
        events.insert(
            event.name.to_string(),
            json!({ "description": description, "$ref": "#/$defs/groups" }),
        );
    }
    let tool_events = events::listed("and", |e| e.matcher == Subject::Tool);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "levelcode settings.json (hooks)",
        "description": "The hooks of a levelcode settings file. Only the \"hooks\", \"sandbox\", \"sandboxProjectHooks\" and \"allowPlainHttp\" keys are read by levelcode-hooks; other keys belong to levelcode and are allowed.",
        "type": "object",
        "properties": {
            "hooks": { "$ref": "#/$defs/hooks" },
            "sandbox": {
                "description": "The sandbox of every handler of this file that neither it nor its group gives one.",
                "$ref": "#/$defs/sandbox"
            },
            "sandboxProjectHooks": {
                "description": "In the user, data or managed layer: every handler of the project's layers runs in at least the default sandbox, whatever the project says; the project cannot widen it.",
                "type": ["boolean", "null"],
                "default": false
            },
            "allowPlainHttp": {
                "description": "true lets this file's http handlers post plain http:// to another machine; without it plain http:// goes to this machine's loopback only, and https:// anywhere.",
                "type": ["boolean", "null"],
                "default": false
            }
        },
        "$defs": {
            "hooks": {
                "description": "Hook groups by event. Other event names are allowed: their hooks run only when something dispatches that exact name.",
                "type": ["object", "null"],
                "properties": events,
                "additionalProperties": { "$ref": "#/$defs/groups" }
            },
            "groups": {
                "description": "The groups of one event, run in order.",
                "type": "array",
                "items": { "$ref": "#/$defs/group" }
            },
            "group": {
                "description": "Handlers that share a matcher.",
                "type": "object",
                "properties": {
                    "matcher": {
                        "description": format!("Which tools the group applies to ({tool_events} only). Missing, \"\" or \"*\": every tool. Only letters, digits, _, -, | and spaces: a |-separated list of exact tool names. Anything else: a regular expression searched anywhere in the tool name."),
                        "type": ["string", "null"],
                        "examples": ["write_file|str_replace", "run_terminal_command", "*", "^mcp__"]
                    },
                    "if": {
                        "description": "A permission rule in Claude Code's syntax, Tool or Tool(pattern): each handler of the group runs only for the tool calls it matches (and those its own \"if\" matches).",
                        "$ref": "#/$defs/if"
                    },
                    "enabled": {
                        "description": "false turns off every handler of the group.",
                        "type": ["boolean", "null"],
                        "default": true
                    },
                    "protocol": {
                        "description": group_protocol,
                        "$ref": "#/$defs/protocol"
                    },
                    "sandbox": {
                        "description": "The sandbox of each of the group's handlers that gives none of its own.",
                        "$ref": "#/$defs/sandbox"
                    },
                    "hooks": {
                        "description": "The handlers, run one after another.",
                        "type": "array",
                        "minItems": 1,
                        "items": { "$ref": "#/$defs/handler" }
                    }
                },
                "required": ["hooks"],
                "additionalProperties": false
            },
            "handler": {
                "description": "One program to run, or a URL to post the event to (\"type\": \"http\"). A program reads the event payload (JSON) on stdin; exit 2 on PreToolUse blocks the tool call with stderr as the reason. An http handler's 2xx answer with a JSON object is read as a program's stdout on exit 0.",
                "type": "object",
                "properties": {
                    "type": {
                        "description": kind_description,
                        "type": ["string", "null"],
                        "enum": kind_names,
                        "default": Kind::DEFAULT.name()
                    },
                    "command": {
                        "description": "Run by /bin/sh -c (cmd.exe /d /s /c on Windows) in the project root; with \"args\", the program itself, run without a shell.",
                        "type": "string",
                        "minLength": 1,
                        "examples": ["bun .levelcode/hooks/guard.ts"]
                    },
                    "args": {
                        "description": "Claude Code's exec form: command is the program (looked up on PATH, or a path relative to the project root) and these are its arguments, each passed exactly as written, without a shell; no variable is expanded.",
                        "type": "array",
                        "items": { "type": "string" },
                        "examples": [["scripts/guard.js", "--strict"]]
                    },
                    "shell": {
                        "description": "What runs a command written without args: \"bash\" (the default) runs it by /bin/sh -c, \"powershell\" by PowerShell (pwsh, else powershell) with -NoProfile -NonInteractive -Command.",
                        "type": ["string", "null"],
                        "enum": ["bash", "powershell", null],
                        "default": "bash"
                    },
                    "argv": {
                        "description": "Run directly, without a shell; the first item is looked up on PATH.",
                        "type": "array",
                        "minItems": 1,
                        "items": { "type": "string" },
                        "prefixItems": [{ "type": "string", "minLength": 1 }],
                        "examples": [["bun", ".levelcode/hooks/guard.ts"]]
                    },
                    "url": {
                        "description": "An http handler's address: the event is POSTed to it as JSON. https:// is verified against the system's certificates; plain http:// goes to this machine's loopback only, unless the file sets \"allowPlainHttp\": true. Redirects are not followed.",
                        "type": "string",
                        "pattern": "^[hH][tT][tT][pP][sS]?://",
                        "examples": ["https://policy.example.com/hooks", "http://127.0.0.1:8080/hook"]
                    },
                    "headers": {
                        "description": "An http handler's headers. A value may name variables as $NAME or ${NAME}: only those allowedEnvVars lists are filled in, any other is sent as the empty string.",
                        "type": ["object", "null"],
                        "additionalProperties": { "type": "string" },
                        "examples": [{ "Authorization": "Bearer $POLICY_TOKEN" }]
                    },
                    "allowedEnvVars": {
                        "description": "The variables an http handler's headers may name.",
                        "type": ["array", "null"],
                        "items": { "type": "string" },
                        "examples": [["POLICY_TOKEN"]]
                    },
                    "timeout": {
                        "description": format!(
                            "Seconds (not milliseconds), fractions allowed; at most {MAX_TIMEOUT_SECS}. When it expires the handler's process group is stopped (an http handler's exchange abandoned) and the tool call proceeds."
                        ),
                        "type": ["number", "null"],
                        "exclusiveMinimum": 0,
                        "maximum": MAX_TIMEOUT_SECS,
                        "default": DEFAULT_TIMEOUT_SECS
                    },
                    "enabled": {
                        "description": "false turns the handler off.",
                        "type": ["boolean", "null"],
                        "default": true
                    },
                    "name": {
                        "description": "A label for output and logs; default: the command.",
                        "type": ["string", "null"],
                        "minLength": 1
                    },
                    "onFailure": {
                        "description": format!("What the handler's own failure (it could not start, timed out, died by a signal, exited with a code other than 0 and 2) means: \"block\" blocks on {} (the reason says how the guard failed), and changes nothing on other events; \"proceed\" (the default) fails open.", events::listed("and", |e| e.blocks.is_some())),
                        "enum": ["block", "proceed", null]
                    },
                    "protocol": {
                        "description": format!("What the handler reads and how its reply is read; default: its group's, else \"{levelcode}\"."),
                        "$ref": "#/$defs/protocol"
                    },
                    "if": {
                        "description": "A permission rule in Claude Code's syntax, Tool or Tool(pattern): the handler runs only for the tool calls it matches, tested before anything is spawned.",
                        "$ref": "#/$defs/if"
                    },
                    "async": {
                        "description": format!("true: run in the background (Claude Code's form). Started once the handlers before and after it have decided, and only when nothing blocked; it cannot block, ask or rewrite, and the dispatch does not wait for it. Its timeout is {BACKGROUND_TIMEOUT_SECS} s unless given. What it comes to is recorded in the execution log and handed to the agent with the next answer of the same session: its additionalContext and systemMessage, or its failure as a warning."),
                        "type": ["boolean", "null"],
                        "default": false
                    },
                    "sandbox": {
                        "description": "The handler's sandbox; default: its group's, else its file's.",
                        "$ref": "#/$defs/sandbox"
                    }
                },
                "oneOf": [
                    { "required": ["command"], "not": { "anyOf": [{ "required": ["argv"] }, { "required": ["url"] }] } },
                    { "required": ["argv"], "not": { "anyOf": [{ "required": ["command"] }, { "required": ["args"] }, { "required": ["url"] }] } },
                    {
                        "required": ["type", "url"],
                        "properties": { "type": { "const": "http" } },
                        "not": { "anyOf": [{ "required": ["command"] }, { "required": ["argv"] }, { "required": ["args"] }, { "required": ["shell"] }] }
                    }
                ],
                "additionalProperties": false
            },
            "if": {
                "description": "The tool by its levelcode or Claude Code name (Bash, Write, Edit, MultiEdit, Read, Grep, Glob); for run_terminal_command a command pattern tested against each subcommand (* is any text), for write_file, str_replace and read_files a gitignore-style path pattern relative to the project root (//abs, ~/home), for code_search and glob one tested against the directory searched. A rule that cannot be evaluated lets the handler run, with a warning; on an event without a tool call a handler with \"if\" never runs.",
                "type": ["string", "null"],
                "examples": ["Bash(git commit *)", "Edit(src/**)", "Write(*.env)", "Read(//etc/**)", "run_terminal_command"]
            },
            "sandbox": {
                "description": "What the handler and everything it starts may do (Linux: Landlock and a seccomp filter). true: the default policy, writes only inside the project root, the temporary folder (TMPDIR, else /tmp) and /dev/null, no network (no IP socket, no Unix socket outside the sandbox, no DNS), no signal to a process outside it. false: none. \"best-effort\": the default policy with what the kernel can enforce, the rest named in the handler's message. An object widens the default policy. A policy the kernel cannot enforce does not run the handler (outcome error, or a block under \"onFailure\": \"block\").",
                "oneOf": [
                    { "type": ["boolean", "null"] },
                    { "const": "best-effort" },
                    {
                        "type": "object",
                        "properties": {
                            "write": {
                                "description": "More paths it may write beneath: absolute, relative to the project root, or ~/...",
                                "type": ["array", "null"],
                                "items": { "type": "string", "minLength": 1 },
                                "examples": [["build", "~/.cache/prettier"]]
                            },
                            "network": {
                                "description": "true allows IP and Unix sockets alike.",
                                "type": ["boolean", "null"],
                                "default": false
                            },
                            "bestEffort": {
                                "description": "true runs it with what the kernel can enforce, as \"best-effort\" does.",
                                "type": ["boolean", "null"],
                                "default": false
                            }
                        },
                        "additionalProperties": false
                    }
                ]
            },
            "protocol": {
                "description": protocols.join(" "),
                "type": ["string", "null"],
                "enum": protocol_names,
                "default": levelcode
            }
        }
    })
}
