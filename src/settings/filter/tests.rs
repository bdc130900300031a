use std::path::Path;

use serde_json::{json, Value};

use super::shell::{subcommands, SplitError};
use super::*;

fn split(command: &str) -> Vec<String> {
    subcommands(command).unwrap_or_else(|e| panic!("{command:?}: {e}"))
}

#[test]
fn a_command_is_cut_at_each_operator() {
    assert_eq!(
        split("git add . && git commit -m x"),
        ["git add .", "git commit -m x"]
    );
    assert_eq!(split("make || echo failed"), ["make", "echo failed"]);
    assert_eq!(split("cd web; npm test"), ["cd web", "npm test"]);
    assert_eq!(split("git log | head -5"), ["git log", "head -5"]);
    assert_eq!(split("make 2>&1 |& tee log"), ["make", "tee log"]);
    assert_eq!(split("sleep 1 & wait"), ["sleep 1", "wait"]);
    assert_eq!(split("ls\ngit push\n"), ["ls", "git push"]);
    assert_eq!(split("a;;b"), ["a", "b"]);
    assert_eq!(split("  ls  "), ["ls"]);
    assert!(split("").is_empty());
    assert!(split("# just a comment").is_empty());
}

#[test]
fn leading_assignments_and_wrappers_are_not_what_runs() {
    assert_eq!(split("VAR=1 git commit"), ["git commit"]);
    assert_eq!(
        split("A=1 B=\"x y\" C+=z git commit -m m"),
        ["git commit -m m"]
    );
    assert_eq!(split("X=1"), Vec::<String>::new());
    assert_eq!(split("timeout -s KILL 30 git push"), ["git push"]);
    assert_eq!(split("nohup nice -n 5 git gc"), ["git gc"]);
    assert_eq!(split("time -p stdbuf -oL make"), ["make"]);
    // An assignment later in the command is an argument.
    assert_eq!(
        split("git -c user.name=x commit"),
        ["git -c user.name=x commit"]
    );
    // Not an assignment: a name cannot start with a digit, and a quoted `=` names nothing.
    assert_eq!(split("1A=2 run"), ["1A=2 run"]);
}

#[test]
fn quotes_keep_their_operators_and_spaces() {
    assert_eq!(
        split("git commit -m 'a && b; c | d'"),
        ["git commit -m 'a && b; c | d'"]
    );
    assert_eq!(
        split(r#"echo "it's; fine" && git   commit"#),
        [r#"echo "it's; fine""#, "git commit"]
    );
    assert_eq!(split(r"echo a\;b; ls"), [r"echo a\;b", "ls"]);
    assert_eq!(split(r"echo $'a\'b'; ls"), [r"echo $'a\'b'", "ls"]);
    assert_eq!(
        split("echo ${X:-\"a;b\"}; ls"),
        ["echo ${X:-\"a;b\"}", "ls"]
    );
    assert_eq!(split("git commit \\\n  -m x"), ["git commit -m x"]);
}

#[test]
fn substitutions_and_subshells_are_commands_too() {
    assert_eq!(split("(cd web && git commit)"), ["cd web", "git commit"]);
    assert_eq!(
        split("echo $(git rev-parse HEAD) `date`"),
        [
            "git rev-parse HEAD",
            "date",
            "echo $(git rev-parse HEAD) `date`"
        ]
    );
    assert_eq!(
        split("diff <(ls a) <(ls b)"),
        ["ls a", "ls b", "diff <(ls a) <(ls b)"]
    );
    assert_eq!(split("{ make; git push; }"), ["make", "git push"]);
    assert_eq!(
        split("if [ -f x ]; then git commit; fi"),
        ["[ -f x ]", "git commit"]
    );
    assert_eq!(
        split("for f in *.rs; do rustfmt \"$f\"; done"),
        ["for f in *.rs", "rustfmt \"$f\""]
    );
}

#[test]
fn redirections_are_left_out() {
    assert_eq!(split("npm test > out.txt 2>&1"), ["npm test"]);
    assert_eq!(split("make>log"), ["make"]);
    assert_eq!(split("sort < in >> out"), ["sort"]);
    assert_eq!(split("cmd &> all 2> /dev/null"), ["cmd"]);
    assert_eq!(split("cat <<< 'text; more'"), ["cat"]);
}

#[test]
fn a_here_document_is_skipped_whatever_it_holds() {
    let commit =
        "git commit -m \"$(cat <<'EOF'\nFix (the) parser; it's \"done\"\n)\nEOF\n)\" && git push";
    assert_eq!(
        split(commit),
        [
            "cat",
            "git commit -m \"$(cat <<'EOF'\nFix (the) parser; it's \"done\"\n)\nEOF\n)\"",
            "git push"
        ]
    );
    assert_eq!(
        split("cat <<-END > f\n\tgit push\n\tEND\nls"),
        ["cat", "ls"]
    );
}

#[test]
fn what_a_shell_cannot_split_is_an_error() {
    assert_eq!(
        subcommands("git commit -m 'oops"),
        Err(SplitError::UnclosedQuote('\''))
    );
    assert_eq!(subcommands("echo \"x"), Err(SplitError::UnclosedQuote('"')));
    assert_eq!(
        subcommands("echo $(date"),
        Err(SplitError::Unclosed("( … )"))
    );
    assert_eq!(
        subcommands("echo `date"),
        Err(SplitError::Unclosed("` … `"))
    );
    assert_eq!(subcommands("echo ${X"), Err(SplitError::Unclosed("${ … }")));
    let deep = format!("{}x{}", "$(".repeat(40), ")".repeat(40));
    assert_eq!(subcommands(&deep), Err(SplitError::TooDeep));
    // Nothing panics on what is left of a multi-byte character after a backslash.
    assert_eq!(split("echo \\é; ls"), ["echo \\é", "ls"]);
}

#[test]
fn command_patterns_are_claude_codes() {
    let p = CommandPattern::parse;
    assert!(p("git commit *").matches("git commit -m x"));
    assert!(p("git commit *").matches("git commit"));
    assert!(!p("git commit *").matches("git commitx"));
    assert!(!p("git commit *").matches("git add ."));
    assert!(p("ls*").matches("lsof"));
    assert!(!p("ls *").matches("lsof"));
    assert!(p("npm run build").matches("npm run build"));
    assert!(!p("npm run build").matches("npm run build:dev"));
    assert!(p("git * main").matches("git checkout main"));
    assert!(!p("git * main").matches("git checkout dev"));
    assert!(p("* --version").matches("node --version"));
    assert!(p("npm run test:*").matches("npm run test unit"));
    assert!(p("npm run test:*").matches("npm run test"));
    assert!(p(r"echo \*").matches("echo *"));
    assert!(!p(r"echo \*").matches("echo x"));
    // Two wildcards: the trailing one is not optional.
    assert!(!p("git * *").matches("git x"));
    assert!(p("a*b*c").matches("abc"));
    assert!(!p("ab*ba").matches("aba"));
}

fn call<'a>(tool: &'a str, input: &'a Value) -> Call<'a> {
    Call {
        tool,
        input: Some(input),
        root: Path::new("/proj"),
        part: None,
    }
}

fn verdict(rule: &str, tool: &str, input: Value) -> Verdict {
    Filter::new(rule).evaluate(Some(&call(tool, &input)))
}

fn runs(rule: &str, tool: &str, input: Value) -> bool {
    match verdict(rule, tool, input) {
        Verdict::Runs => true,
        Verdict::Filtered { .. } => false,
        other => panic!("{rule}: {other:?}"),
    }
}

#[test]
fn a_bash_rule_matches_when_any_subcommand_does() {
    let bash = |c: &str| json!({"command": c});
    for tool in ["run_terminal_command"] {
        for rule in ["Bash(git commit *)", "run_terminal_command(git commit *)"] {
            assert!(runs(rule, tool, bash("git commit -m x")), "{rule}");
            assert!(
                runs(rule, tool, bash("git add . && git commit -m x")),
                "{rule}"
            );
            assert!(runs(rule, tool, bash("VAR=1 git commit")), "{rule}");
            assert!(
                runs(rule, tool, bash("make; git commit -am wip | tee")),
                "{rule}"
            );
            assert!(runs(rule, tool, bash("false || git commit")), "{rule}");
            assert!(!runs(rule, tool, bash("ls")), "{rule}");
            assert!(!runs(rule, tool, bash("echo 'git commit -m x'")), "{rule}");
        }
    }
    assert!(runs("Bash", "run_terminal_command", bash("ls")));
    assert!(runs("Bash(*)", "run_terminal_command", bash("ls")));
    assert_eq!(
        verdict("Bash(git commit *)", "run_terminal_command", bash("ls")),
        Verdict::Filtered {
            why: "no subcommand of the command matches \"git commit *\"".into(),
            by_input: true
        }
    );
}

#[test]
fn a_rule_about_another_tool_filters_whatever_the_input() {
    let v = verdict("Bash(git *)", "write_file", json!({"path": "a"}));
    assert!(
        matches!(
            v,
            Verdict::Filtered {
                by_input: false,
                ..
            }
        ),
        "{v:?}"
    );
    let v = verdict("Write", "str_replace", json!({}));
    assert!(
        matches!(
            v,
            Verdict::Filtered {
                by_input: false,
                ..
            }
        ),
        "{v:?}"
    );
    // No tool call at all (a Stop): never.
    let v = Filter::new("Bash").evaluate(None);
    assert!(
        matches!(
            v,
            Verdict::Filtered {
                by_input: false,
                ..
            }
        ),
        "{v:?}"
    );
}

#[test]
fn tools_by_either_name_and_mcp_servers() {
    assert!(runs("Edit", "str_replace", json!({})));
    assert!(runs("MultiEdit", "str_replace", json!({})));
    assert!(runs("Write", "write_file", json!({})));
    assert!(runs("Read", "read_files", json!({})));
    assert!(runs("Grep", "code_search", json!({})));
    assert!(runs("Glob", "glob", json!({})));
    assert!(runs("spawn_agents", "spawn_agents", json!({})));
    assert!(runs("Task", "spawn_agents", json!({})));
    // Claude Code's file tools stand for their kind; `Write`, `MultiEdit` and `NotebookEdit`
    // with a path, as Claude Code reads them, and bare, their own tool.
    let edit = |p: &str| json!({"path": p});
    for rule in [
        "Edit",
        "Edit(src/**)",
        "Write(src/**)",
        "MultiEdit(src/**)",
        "NotebookEdit(src/**)",
    ] {
        assert!(runs(rule, "write_file", edit("src/a")), "{rule}");
        assert!(runs(rule, "str_replace", edit("src/a")), "{rule}");
        assert!(
            !runs(rule, "read_files", json!({"paths": ["src/a"]})),
            "{rule}"
        );
    }
    assert!(!runs("Write", "str_replace", json!({})));
    assert!(!runs("MultiEdit", "write_file", json!({})));
    assert!(!runs("NotebookEdit", "write_file", json!({})));
    for read in [
        "read_files",
        "code_search",
        "glob",
        "list_directory",
        "read_subtree",
        "find_files",
    ] {
        assert!(runs("Read", read, json!({})), "{read}");
        assert!(
            runs("Read(**)", read, json!({"paths": ["a"], "path": "a"})),
            "{read}"
        );
    }
    assert!(!runs("Read", "write_file", json!({})));
    assert!(runs("LS", "list_directory", json!({})));
    assert!(!runs("Grep", "glob", json!({})));
    assert!(!runs("write_file", "str_replace", json!({})));
    assert!(runs("mcp__github", "mcp__github__create_issue", json!({})));
    assert!(runs(
        "mcp__github__*",
        "mcp__github__create_issue",
        json!({})
    ));
    assert!(runs(
        "mcp__github__create_issue",
        "mcp__github__create_issue",
        json!({})
    ));
    assert!(!runs("mcp__git", "mcp__github__create_issue", json!({})));
    assert!(!runs("mcp__github", "mcp__githubx__a", json!({})));
}

#[test]
fn path_rules_follow_gitignore_relative_to_the_root() {
    let edit = |p: &str| json!({"path": p, "replacements": []});
    assert!(runs("Edit(src/**)", "str_replace", edit("src/a.rs")));
    assert!(runs(
        "Edit(src/**)",
        "str_replace",
        edit("src/deep/er/a.rs")
    ));
    assert!(runs("Edit(src/**)", "str_replace", edit("/proj/src/a.rs")));
    assert!(runs(
        "Edit(src/**)",
        "str_replace",
        edit("./docs/../src/a.rs")
    ));
    assert!(!runs("Edit(src/**)", "str_replace", edit("docs/x.md")));
    assert!(!runs("Edit(src/**)", "str_replace", edit("lib/src/a.rs")));
    assert!(!runs(
        "Edit(src/**)",
        "str_replace",
        edit("../proj2/src/a.rs")
    ));
    assert!(!runs(
        "Edit(src/**)",
        "str_replace",
        edit("/elsewhere/src/a.rs")
    ));
    // No slash but at the end: at any depth.
    assert!(runs("Write(*.env)", "write_file", edit(".env")));
    assert!(runs("Write(*.env)", "write_file", edit("config/prod.env")));
    assert!(runs("Write(src)", "write_file", edit("src/a/b.rs")));
    assert!(runs("Write(src)", "write_file", edit("lib/src/b.rs")));
    // Anchored by a slash: `/` and `./` are the project root, `*` stays in one segment.
    assert!(runs("Write(/*.md)", "write_file", edit("README.md")));
    assert!(!runs("Write(/*.md)", "write_file", edit("docs/a.md")));
    assert!(runs("Write(./docs/*.md)", "write_file", edit("docs/a.md")));
    assert!(!runs("Write(docs/*.md)", "write_file", edit("docs/x/a.md")));
    assert!(runs("Write(docs/**/*.md)", "write_file", edit("docs/a.md")));
    assert!(runs(
        "Write(docs/**/*.md)",
        "write_file",
        edit("docs/x/y/a.md")
    ));
    assert!(runs(
        "Write(**/test_*.py)",
        "write_file",
        edit("a/b/test_x.py")
    ));
    assert!(runs("Write(src/[ab].rs)", "write_file", edit("src/b.rs")));
    assert!(!runs("Write(src/[!ab].rs)", "write_file", edit("src/b.rs")));
    assert!(runs("Write(src/?.rs)", "write_file", edit("src/c.rs")));
    // A trailing slash: directories only, so the files inside them.
    assert!(runs("Write(build/)", "write_file", edit("build/out.o")));
    assert!(!runs("Write(build/)", "write_file", edit("build")));
    // Absolute, and under the home directory.
    assert!(runs("Write(//etc/**)", "write_file", edit("/etc/hosts")));
    assert!(!runs("Write(//etc/**)", "write_file", edit("etc/hosts")));
}

#[test]
fn read_files_matches_when_any_path_does_and_a_part_is_its_own_path() {
    let input = json!({"paths": ["README.md", "secrets/key.pem"]});
    assert!(runs("Read(secrets/**)", "read_files", input.clone()));
    assert!(!runs(
        "Read(secrets/**)",
        "read_files",
        json!({"paths": ["a", "b"]})
    ));
    let filter = Filter::new("Read(secrets/**)");
    let part = |i| Call {
        part: Some(i),
        ..call("read_files", &input)
    };
    assert!(matches!(
        filter.evaluate(Some(&part(0))),
        Verdict::Filtered { .. }
    ));
    assert_eq!(filter.evaluate(Some(&part(1))), Verdict::Runs);
}

#[test]
fn searches_are_tested_against_their_directory() {
    assert!(runs(
        "Grep(vendor/**)",
        "code_search",
        json!({"pattern": "x", "cwd": "vendor/a"})
    ));
    assert!(!runs(
        "Grep(vendor/**)",
        "code_search",
        json!({"pattern": "x", "cwd": "src"})
    ));
    // The whole project holds vendor/.
    assert!(runs(
        "Grep(vendor/**)",
        "code_search",
        json!({"pattern": "x"})
    ));
    assert!(runs(
        "Glob(vendor/)",
        "glob",
        json!({"pattern": "*", "cwd": "vendor"})
    ));
    assert!(runs("Glob(**)", "glob", json!({"pattern": "*"})));
}

#[test]
fn what_cannot_be_evaluated_says_why() {
    let unevaluable = |rule: &str, tool: &str, input: Value| match verdict(rule, tool, input) {
        Verdict::Unevaluable(why) => why,
        other => panic!("{rule}: {other:?}"),
    };
    let why = unevaluable(
        "Bash(git commit *)",
        "run_terminal_command",
        json!({"command": "git commit -m 'unbalanced"}),
    );
    assert!(
        why.contains("cannot be split") && why.contains("quote"),
        "{why}"
    );
    let why = unevaluable("Bash(git", "run_terminal_command", json!({"command": "ls"}));
    assert!(why.contains("does not end with the )"), "{why}");
    let why = unevaluable("Edit(src/[a)", "str_replace", json!({"path": "src/a"}));
    assert!(why.contains("never closed"), "{why}");
    let why = unevaluable("Edit(src/**)", "str_replace", json!({"replacements": []}));
    assert!(why.contains("\"path\""), "{why}");
    let why = unevaluable("Bash(ls)", "run_terminal_command", json!({}));
    assert!(why.contains("\"command\""), "{why}");
    let why = unevaluable("web_search(domain:x)", "web_search", json!({"query": "q"}));
    assert!(why.contains("no pattern"), "{why}");
    for bad in [
        "",
        "  ",
        "(x)",
        "Bash)",
        "Ba sh(x)",
        "Edit(!src/**)",
        "Edit(/)",
    ] {
        let filter = Filter::new(bad);
        assert!(filter.problem().is_some(), "{bad:?}");
    }
    // A bad pattern on another tool's rule does not matter to a call of this one.
    assert!(!runs(
        "Edit(src/[a)",
        "run_terminal_command",
        json!({"command": "ls"})
    ));
}

#[test]
fn without_the_input_a_pattern_needs_it_and_a_bare_name_does_not() {
    let filter = Filter::new("Bash(git *)");
    let unknown = Call {
        input: None,
        ..call("run_terminal_command", &Value::Null)
    };
    assert_eq!(filter.evaluate(Some(&unknown)), Verdict::NeedsInput);
    assert_eq!(Filter::new("Bash").evaluate(Some(&unknown)), Verdict::Runs);
}

#[test]
fn a_home_pattern_is_under_the_home_directory() {
    let pattern = super::path::PathPattern::parse("~/.ssh/**").unwrap();
    let (root, home) = (Path::new("/proj"), Some(Path::new("/home/u")));
    let file = super::path::Reach::File;
    assert!(pattern.matches("/home/u/.ssh/id_ed25519", root, home, file));
    assert!(!pattern.matches(".ssh/id_ed25519", root, home, file));
    assert!(!pattern.matches("/home/u/.ssh/id", root, None, file));
}
