//! levelcode's tool names, in one place: `validate` checks exact-name matchers against them,
//! `list` and `test` mark a matcher that names no tool, and `docs/hooks.md` lists them (a test
//! keeps the two the same).

use crate::settings::protocol::Protocol;

/// Every tool levelcode's agents can call, sorted.
pub const TOOLS: &[&str] = &[
    "add_message",
    "add_subgoal",
    "ask_user",
    "browser_logs",
    "code_search",
    "context_branch",
    "context_commit",
    "context_merge",
    "create_plan",
    "end_turn",
    "find_files",
    "glob",
    "list_directory",
    "lookup_agent_info",
    "propose_str_replace",
    "propose_write_file",
    "read_docs",
    "read_files",
    "read_subtree",
    "remember",
    "repo_map",
    "run_file_change_hooks",
    "run_terminal_command",
    "send_message",
    "set_messages",
    "set_output",
    "skill",
    "spawn_agent_inline",
    "spawn_agents",
    "str_replace",
    "suggest_followups",
    "task_completed",
    "task_create",
    "task_get",
    "task_list",
    "task_update",
    "team_create",
    "team_delete",
    "team_list",
    "team_load",
    "team_save",
    "think_deeply",
    "update_subgoal",
    "verify_changes",
    "web_search",
    "write_file",
    "write_todos",
];

/// Names people write for a levelcode tool that does not exist under that name, and the tool
/// they mean: the nearest spelling would not find these.
const MISNAMED: &[(&str, &str)] = &[
    ("edit_file", "str_replace"),
    ("replace", "str_replace"),
    ("edit", "str_replace"),
    ("read_file", "read_files"),
    ("create_file", "write_file"),
    ("run_command", "run_terminal_command"),
    ("terminal", "run_terminal_command"),
    ("shell", "run_terminal_command"),
    ("grep", "code_search"),
    ("search", "code_search"),
    ("spawn_agent", "spawn_agents"),
];

/// Returns true if and only if `name` is a levelcode tool or an MCP tool (`mcp__server__tool`),
/// which levelcode names as the server gives them.
pub fn is_known(name: &str) -> bool {
    name.starts_with("mcp__") || TOOLS.binary_search(&name).is_ok()
}

/// The levelcode tool `name` probably means, when it is not one: a name people write for it
/// (`edit_file`), another agent's name for it in any case (`bash`, `multiedit`), a near
/// spelling (`write_files`), or the one tool whose name it is the start or a part of
/// (`run_terminal`, `terminal_command`).
pub fn did_you_mean(name: &str) -> Option<&'static str> {
    if is_known(name) {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    MISNAMED
        .iter()
        .find(|(wrong, _)| *wrong == lower)
        .map(|(_, right)| *right)
        .or_else(|| another_agents(name))
        .or_else(|| crate::commands::suggest::nearest(name, TOOLS))
        .or_else(|| part_of(&lower))
}

/// levelcode's name for a tool another agent calls `name`, whatever its case.
fn another_agents(name: &str) -> Option<&'static str> {
    Protocol::all().find_map(|p| {
        p.facts()
            .agent_tools
            .iter()
            .find(|(theirs, _)| theirs.eq_ignore_ascii_case(name))
            .and_then(|(_, ours)| *ours)
    })
}

/// The one tool whose name starts with `lower`, else the one that holds it, when it is long
/// enough to mean something (`run` starts two): several candidates suggest none.
fn part_of(lower: &str) -> Option<&'static str> {
    let word = lower
        .trim_matches(|c| c == '_' || c == '-')
        .replace('-', "_");
    if word.len() < 4 {
        return None;
    }
    let only = |pick: &dyn Fn(&str) -> bool| {
        let mut found = TOOLS.iter().filter(|t| pick(t));
        match (found.next(), found.next()) {
            (Some(tool), None) => Some(*tool),
            _ => None,
        }
    };
    only(&|t| t.starts_with(word.as_str())).or_else(|| only(&|t| t.contains(word.as_str())))
}

/// What is wrong with `name` in an exact-name matcher of a group whose matcher follows
/// `protocol`, when it names no tool: another agent's name for a levelcode tool (fine in a
/// group of that agent's protocol), a tool levelcode does not have, or a slip, with the tool
/// probably meant. `None` for a levelcode tool, an MCP tool (`mcp__…`, the servers' own), and a
/// name `protocol` has for a levelcode tool.
pub fn name_problem(name: &str, protocol: Protocol) -> Option<String> {
    let protocol_names = || TOOLS.iter().flat_map(|t| protocol.tool_names(t));
    if is_known(name) || protocol_names().any(|c| *c == name) {
        return None;
    }
    Some(match Protocol::agent_tool(name) {
        Some((theirs, Some(ours))) => format!(
            "{name:?} is another agent's tool name and never matches here; levelcode calls it {ours:?} (or add \"protocol\": \"{}\" to the group to run a {} script that expects its names)",
            theirs.name(),
            theirs.facts().agent
        ),
        Some((_, None)) => match did_you_mean(name) {
            Some(ours) => format!(
                "{name:?} is another agent's tool name and never matches here; levelcode's nearest is {ours:?}"
            ),
            None => format!(
                "{name:?} is another agent's tool name and never matches here: levelcode has no such tool"
            ),
        },
        None => match (!protocol.is_levelcode())
            .then(|| {
                let names: Vec<&str> = protocol_names().copied().collect();
                crate::commands::suggest::nearest(name, &names)
            })
            .flatten()
            .or_else(|| did_you_mean(name))
        {
            Some(ours) => {
                format!("{name:?} is not a levelcode tool and never matches; did you mean {ours:?}?")
            }
            None => format!(
                "{name:?} is not a levelcode tool and never matches (levelcode's tools are listed in docs/hooks.md; MCP tools are named mcp__<server>__<tool>)"
            ),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_sorted_without_repeats() {
        assert!(TOOLS.windows(2).all(|w| w[0] < w[1]));
        for (_, right) in MISNAMED {
            assert!(is_known(right), "{right}");
        }
    }

    /// docs/hooks.md lists exactly these tools.
    #[test]
    fn the_guide_lists_the_same_tools() {
        let guide =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/hooks.md")).unwrap();
        let section = guide
            .split("### levelcode's tools")
            .nth(1)
            .expect("docs/hooks.md has a section \"levelcode's tools\"");
        let block = section
            .split("```text")
            .nth(1)
            .and_then(|b| b.split("```").next())
            .expect("the section lists the tools in a text block");
        let listed: Vec<&str> = block.split_whitespace().collect();
        assert_eq!(listed, TOOLS);
    }

    #[test]
    fn near_names_get_a_suggestion() {
        assert_eq!(did_you_mean("edit_file"), Some("str_replace"));
        assert_eq!(did_you_mean("write_files"), Some("write_file"));
        assert_eq!(did_you_mean("read_file"), Some("read_files"));
        assert_eq!(did_you_mean("write_file"), None);
        assert_eq!(did_you_mean("mcp__github__create_issue"), None);
        assert!(is_known("mcp__x"));
        assert!(!is_known("edit_file"));
        assert_eq!(did_you_mean("frobnicate_everything"), None);
    }

    /// A part of a tool's name, and another agent's name in any case, get a suggestion too;
    /// a part that several tools share gets none.
    #[test]
    fn parts_of_names_and_other_agents_names_get_a_suggestion() {
        assert_eq!(did_you_mean("write"), Some("write_file"));
        assert_eq!(did_you_mean("run_terminal"), Some("run_terminal_command"));
        assert_eq!(
            did_you_mean("terminal_command"),
            Some("run_terminal_command")
        );
        assert_eq!(did_you_mean("terminal"), Some("run_terminal_command"));
        assert_eq!(did_you_mean("bash"), Some("run_terminal_command"));
        assert_eq!(did_you_mean("multiedit"), Some("str_replace"));
        assert_eq!(did_you_mean("read"), Some("read_files"));
        assert_eq!(did_you_mean("websearch"), Some("web_search"));
        assert_eq!(
            did_you_mean("subgoal"),
            None,
            "add_subgoal or update_subgoal"
        );
        assert_eq!(did_you_mean("team"), None, "five team_ tools");
        assert_eq!(did_you_mean("run"), None);
        assert_eq!(did_you_mean("str_rep"), Some("str_replace"));
    }

    #[test]
    fn name_problems_follow_the_group_s_protocol() {
        let claude = Protocol::parse("claude").unwrap();
        assert_eq!(name_problem("Bash", claude), None);
        assert_eq!(name_problem("write_file", Protocol::LEVELCODE), None);
        assert_eq!(name_problem("mcp__x__y", Protocol::LEVELCODE), None);
        let bash = name_problem("Bash", Protocol::LEVELCODE).unwrap();
        assert!(bash.contains("\"run_terminal_command\""), "{bash}");
        let write = name_problem("write", Protocol::LEVELCODE).unwrap();
        assert!(write.contains("did you mean \"write_file\"?"), "{write}");
        let search = name_problem("WebSearch", Protocol::LEVELCODE).unwrap();
        assert!(search.contains("\"web_search\""), "{search}");
    }
}
