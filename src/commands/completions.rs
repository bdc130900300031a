//! `levelcode-hooks completions SHELL`: shell completion scripts, and the man page, both made
//! from the command line's own definition so they never fall behind it.
//!
//! `docs/levelcode-hooks.1` is [`man_page`]; a test fails when the two differ.

use std::process::ExitCode;

use clap::Args;
use clap_complete::Shell;
use clap_mangen::roff::{bold, italic, roman, Roff};
use clap_mangen::Man;

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

/// Prints the completion script of `cli`, the whole command line's definition.
pub fn run(args: &CompletionsArgs, mut cli: clap::Command) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, NAME, &mut script);
    crate::dispatch::output::write_stdout(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}

const NAME: &str = "levelcode-hooks";

/// The man page (roff): the options of `run` and of every subcommand, then the exit statuses,
/// environment and files, of `cli`, the whole command line's definition.
pub fn man_page(cli: clap::Command) -> String {
    let cmd = cli.disable_help_subcommand(true);
    let man = Man::new(cmd.clone());
    let mut out = Vec::new();
    // The title is written by hand: an empty date would shift the fields after it.
    out.extend_from_slice(
        format!(
            ".TH LEVELCODE\\-HOOKS 1 \"\" \"{NAME} {}\" \"User Commands\"\n",
            env!("CARGO_PKG_VERSION")
        )
        .as_bytes(),
    );
    // Writing to a Vec cannot fail.
    let _ = man.render_name_section(&mut out);
    let _ = man.render_synopsis_section(&mut out);
    let _ = man.render_description_section(&mut out);
    let _ = man.render_options_section(&mut out);

    let mut commands = Roff::default();
    commands.control("SH", ["COMMANDS"]);
    let _ = commands.to_writer(&mut out);
    let mut cmd = cmd;
    cmd.build();
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        subcommand(&mut out, sub, &format!("{NAME} {}", sub.get_name()));
    }
    let _ = extra_sections().to_writer(&mut out);
    let _ = man.render_version_section(&mut out);
    without_repeated_preamble(&String::from_utf8_lossy(&out))
}

/// Every rendered piece starts with the same two lines defining the apostrophe string; keeps
/// them once, at the top.
fn without_repeated_preamble(page: &str) -> String {
    const PREAMBLE: [&str; 2] = [".ie \\n(.g .ds Aq \\(aq", ".el .ds Aq '"];
    let mut out = format!("{}\n{}\n", PREAMBLE[0], PREAMBLE[1]);
    for line in page.lines().filter(|l| !PREAMBLE.contains(l)) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// One subcommand as a subsection: its synopsis, description and options; nested subcommands
/// (such as `compliance verify`) follow it.
fn subcommand(out: &mut Vec<u8>, sub: &clap::Command, title: &str) {
    let mut heading = Roff::default();
    heading.control("SS", [title]);
    let _ = heading.to_writer(out);
    let man = Man::new(sub.clone().bin_name(title));
    let mut body = Vec::new();
    let _ = man.render_synopsis_section(&mut body);
    let _ = man.render_description_section(&mut body);
    if sub
        .get_arguments()
        .any(|a| !a.is_hide_set() && a.get_id() != "help")
    {
        let _ = man.render_options_section(&mut body);
    }
    // The sections of a subcommand's own page become paragraphs of this subsection.
    for line in String::from_utf8_lossy(&body).lines() {
        match line.strip_prefix(".SH ") {
            Some("SYNOPSIS") => {}
            Some(_) => out.extend_from_slice(b".PP\n"),
            None => {
                out.extend_from_slice(line.as_bytes());
                out.push(b'\n');
            }
        }
    }
    let mut inner = sub.clone().disable_help_subcommand(true);
    inner.build();
    for nested in inner.get_subcommands().filter(|s| !s.is_hide_set()) {
        subcommand(out, nested, &format!("{title} {}", nested.get_name()));
    }
}

fn tagged(roff: &mut Roff, tag: &str, text: &str) {
    roff.control("TP", []);
    roff.text([bold(tag)]);
    roff.text([roman(text)]);
}

fn extra_sections() -> Roff {
    let mut roff = Roff::default();
    roff.control("SH", ["EXIT STATUS"]);
    tagged(
        &mut roff,
        "0",
        "Proceed: no handler blocked (handler failures fail open).",
    );
    tagged(
        &mut roff,
        "1",
        "The dispatcher could not do its job (bad payload or arguments); stdout carries {\"error\": ...}. For validate: a problem was found.",
    );
    tagged(
        &mut roff,
        "2",
        "A PreToolUse handler blocked the tool call; the reason is also on stderr.",
    );
    tagged(
        &mut roff,
        "128+N",
        "Stopped by signal N, after printing the result so far.",
    );
    tagged(
        &mut roff,
        "3, 4, 5",
        "For trust --status: the project's hooks are untrusted, changed since they were trusted, or denied (0: trusted, or no hooks).",
    );

    roff.control("SH", ["ENVIRONMENT"]);
    for (name, text) in [
        ("LEVELCODE_HOOKS", "0, false or off (any case) runs no handler at all."),
        ("LEVELCODE_HOOKS_NO_PROJECT", "1, true or on skips the project layer, like --no-project."),
        ("LEVELCODE_HOOKS_DEPTH", "Set for handlers to one more than the dispatcher's own; a dispatcher started at depth 4 or more runs nothing."),
        ("LEVELCODE_HOOKS_LOG", "A file to which every dispatch appends one JSON line; read it with the log and stats commands."),
        ("LEVELCODE_DIR", "The data directory (default: $HOME/.levelcode): its settings.json is the data layer, its trusted-hooks.json the trust store."),
        ("LEVELCODE_TRUST_PROJECT_HOOKS", "1 trusts the project's hooks for this run (CI, levelcode -p); sha256:<hex> trusts them only while their digest is that one."),
        ("LEVELCODE_TEAM", "The team whose compliance log records PostToolUse events, when neither --team nor the payload names one."),
        ("NEXT_PUBLIC_CB_ENVIRONMENT", "When set and not prod, the user layer is read from levelcode-<value> instead of levelcode."),
        ("NO_COLOR", "When set and not empty, no colors; otherwise colors only on a terminal (CLICOLOR_FORCE forces them)."),
    ] {
        tagged(&mut roff, name, text);
    }
    roff.control("P", []);
    roff.text([roman(
        "Handlers also receive LEVELCODE_PROJECT_DIR (the project root), LEVELCODE_HOOK_EVENT and, for tool events, LEVELCODE_TOOL_NAME.",
    )]);

    roff.control("SH", ["FILES"]);
    for (path, text) in [
        ("$HOME/.config/levelcode/settings.json", "The user layer."),
        (
            "$HOME/.levelcode/settings.json",
            "The data layer ($LEVELCODE_DIR/settings.json when set).",
        ),
        ("<project>/.levelcode/settings.json", "The project layer; its hooks run only once trusted (levelcode-hooks trust)."),
        (
            "$HOME/.levelcode/trusted-hooks.json",
            "The trust store: each trusted project's digest, or its denial ($LEVELCODE_DIR/trusted-hooks.json when set).",
        ),
    ] {
        tagged(&mut roff, path, text);
    }
    roff.control("P", []);
    roff.text([roman(
        "All layers contribute, in this order; only their hooks key is read. levelcode-hooks schema prints the JSON Schema of that key.",
    )]);

    roff.control("SH", ["EXAMPLES"]);
    for (what, example) in [
        ("Would my guard block this write?", "levelcode-hooks test --event PreToolUse --tool write_file --input '{\"path\":\"src/generated/a.ts\"}' -v"),
        ("What runs for a tool, without running it:", "levelcode-hooks list --event PreToolUse --tool write_file"),
        ("Guard a repository in CI:", "levelcode-hooks validate --settings .levelcode/settings.json"),
        ("Review a cloned project's hooks and trust them:", "levelcode-hooks trust --project-dir ~/src/cloned"),
        ("Which hook is slow? Record every dispatch, use the agent, then summarise:", "export LEVELCODE_HOOKS_LOG=$HOME/.levelcode/hooks.jsonl\nlevelcode-hooks stats"),
    ] {
        roff.control("PP", []);
        roff.text([roman(what)]);
        roff.control("RS", []);
        roff.control("nf", []);
        for line in example.lines() {
            roff.text([italic(line)]);
            roff.control("br", []);
        }
        roff.control("fi", []);
        roff.control("RE", []);
    }
    roff
}
