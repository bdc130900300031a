//! What a command runs, as the filter reads it: its forms, and what it cannot see through.

use super::*;
use crate::settings::filter::CommandPattern;

/// Whether `pattern` matches a form of `command`; panics when the filter cannot see through it.
fn matches(pattern: &str, command: &str) -> bool {
    let reading = read(command).unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        reading.unseen.is_empty(),
        "{command:?}: {:?}",
        reading.unseen
    );
    let pattern = CommandPattern::parse(pattern);
    reading.forms.iter().any(|f| pattern.matches_form(f))
}

fn unseen(command: &str) -> String {
    let reading = read(command).unwrap_or_else(|e| panic!("{command:?}: {e}"));
    reading.unseen.join("; ")
}

#[test]
fn wrappers_are_stripped_with_their_options() {
    for command in [
        "env git push",
        "env -i PATH=/bin A=1 git push",
        "env -u HOME -- git push",
        "command git push",
        "command -p git push",
        "exec git push",
        "exec -a name git push",
        "nice git push",
        "nice -n 5 git push",
        "nice -5 git push",
        "nohup git push",
        "timeout 30 git push",
        "timeout -s KILL -k 5 30 git push",
        "timeout --signal=TERM 1m git push",
        "sudo git push",
        "sudo -u root -E git push",
        "sudo --user=root git push",
        "time git push",
        "time -p git push",
        "builtin git push",
        "stdbuf -oL git push",
        "env nice nohup timeout 3 git push",
        "! git push",
    ] {
        assert!(matches("git push*", command), "{command:?}");
        assert!(matches("git push", command), "{command:?}");
    }
    // The wrappers are a form too.
    assert!(matches("env *", "env git push"));
    assert!(matches("timeout *", "timeout 30 git push"));
    // xargs adds the words of its input.
    assert!(matches("git push", "echo push | xargs git"));
    assert!(matches("git push*", "xargs -n 1 git < list"));
}

#[test]
fn the_program_is_unquoted_and_known_by_its_name() {
    for command in [
        "\\git push",
        "'git' push",
        "g\"\"it push",
        "\"git\" push",
        "gi\\\nt push",
        "/usr/bin/git push",
        "./git push",
        "~/bin/git push",
        "git 'push'",
        "git pu\"\"sh",
    ] {
        assert!(matches("git push", command), "{command:?}");
    }
    assert!(matches("/usr/bin/git push", "/usr/bin/git push"));
    // Bash's braces make the command word of two.
    assert!(matches("git push", "{git,} push"));
    assert!(!matches("git push", "git -C . push"));
    assert!(!matches("git push*", "echo git push"));
}

#[test]
fn what_is_known_only_when_it_runs_matches_whatever_it_could_be() {
    assert!(matches("git push origin main", "git push origin $BRANCH"));
    assert!(matches(
        "git push origin main",
        "git push origin \"$(git branch)\""
    ));
    assert!(matches("git push --force", "git push $FLAGS"));
    // An unquoted expansion may make no word at all.
    assert!(matches("git push", "git $EMPTY push"));
    assert!(matches("rm -rf /", "rm -rf *"));
    assert!(!matches("git push*", "git status $X"));
    assert!(!matches("ls", "git $X"));
}

#[test]
fn what_the_filter_cannot_see_through_says_why() {
    for (command, why) in [
        ("eval git push", "eval"),
        ("source ./x.sh", "source"),
        (". ./x.sh", ". runs"),
        ("trap 'git push' EXIT", "trap"),
        ("alias p='git push'", "alias"),
        ("$x push", "a variable's value"),
        ("\"$GIT\" push", "a variable's value"),
        ("$(echo git) push", "what a substitution prints"),
        ("`echo git` push", "what a substitution prints"),
        ("gi* push", "a pattern"),
        ("bash -c 'git push'", "bash -c"),
        ("sh -ec 'git push'", "sh -c"),
        ("zsh -c 'git push'", "zsh -c"),
        ("sh <<EOF\ngit push\nEOF", "a here-document"),
        ("bash <<< 'git push'", "a here-string"),
        ("echo git push | sh", "its input"),
        ("bash -s < /dev/null", "bash -s"),
        ("env -S 'git push'", "env -S"),
        ("sudo -s git push", "sudo -s"),
        ("xargs -I{} git {} < list", "xargs -I"),
        ("BASH_ENV=./x.sh bash y.sh", "BASH_ENV"),
        ("env $OPTS git push", "a word after env"),
        ("echo $((x))", "arithmetic"),
        ("(( y ))", "arithmetic"),
        ("echo ${s:n}", "arithmetic"),
        ("let y=x", "let"),
        ("[[ $a -eq 1 ]]", "[["),
    ] {
        let said = unseen(command);
        assert!(said.contains(why), "{command:?}: {said:?}");
    }
    // What neither shell reads as written (bash's `@(…)` only with an option on) is no command.
    for command in ["@(git) push", "echo (git push)", "git push '"] {
        assert!(read(command).is_err(), "{command:?}");
    }
    for command in [
        "sh ./script.sh",
        "bash -e deploy.sh",
        "sh < script.sh",
        "echo $((1<<2))",
        "[ -f x ] && ls",
        "ls *.rs",
        "git push origin $BRANCH",
        "x=$(date) git commit",
        "echo ${X:-default}",
        "echo $((0x1F + 2#101))",
    ] {
        assert_eq!(unseen(command), "", "{command:?}");
    }
}

#[test]
fn a_pattern_and_a_form_meet_as_two_wildcard_texts() {
    let els = |text: &str| -> Vec<El> {
        text.chars()
            .map(|c| if c == '%' { El::Any } else { El::Char(c) })
            .collect()
    };
    let p = CommandPattern::parse;
    assert!(p("git push*").matches_form(&els("git %")));
    assert!(p("git push*").matches_form(&els("% push")));
    assert!(!p("git push*").matches_form(&els("ls %")));
    assert!(p("git commit *").matches_form(&els("git commit%")));
    assert!(p("* --force").matches_form(&els("git push%")));
    assert!(!p("a*b").matches_form(&els("a%c")));
    assert!(p("a*b*c").matches_form(&els("%b%")));
    assert!(!p("abc").matches_form(&els("ab%d")));
    // A long form costs a pass over it.
    let long = format!("git {}%", "x ".repeat(1 << 20));
    let started = std::time::Instant::now();
    assert!(!p("git push*").matches_form(&els(&long)));
    assert!(started.elapsed().as_secs() < 10);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Whatever the command, the filter answers, and never panics.
    #[test]
    fn any_command_is_read_without_a_panic(
        pieces in proptest::collection::vec(proptest::sample::select(&[
            "git", "push", " ", "\n", "'", "\"", "\\", "$", "$x", "$(", ")", "$((", "))", "${a[",
            "${s:", "}", "[", "]", "=", "a=", "BASH_ENV=", "env", "-S", "-u", "sudo", "-s", "xargs",
            "-I", "timeout", "bash", "-c", "sh", "<<", "<<<", "|", ";", "&&", "*", "{a,}", "~",
            "eval", "let", "[[", "-eq", "declare", "-i", "é",
        ][..]), 0..30)
    ) {
        let text: String = pieces.concat();
        if let Ok(reading) = read(&text) {
            let pattern = CommandPattern::parse("git push*");
            for form in &reading.forms {
                let _ = pattern.matches_form(form);
            }
        }
    }
}
