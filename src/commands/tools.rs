//! levelcode's tool names, in one place: `validate` checks exact-name matchers against them, and
//! `docs/hooks.md` lists them (a test keeps the two the same).

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

/// The levelcode tool `name` probably means, when it is not one.
pub fn did_you_mean(name: &str) -> Option<&'static str> {
    if is_known(name) {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    MISNAMED
        .iter()
        .find(|(wrong, _)| *wrong == lower)
        .map(|(_, right)| *right)
        .or_else(|| crate::commands::suggest::nearest(name, TOOLS))
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
}
