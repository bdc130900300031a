//! What compiling and testing one dispatch's regex matchers costs, per engine: the seven
//! unanchored `PreToolUse` patterns of the bench's `no_match_regex` scenario
//! (`benches/bench.py`, `REGEX_MATCHERS`), each compiled and tested once against `write_file`,
//! as a dispatch does. docs/BENCHMARKS.md ("Matchers") records the figures.
//!
//! ```text
//! cargo bench --bench matchers                 # median time per engine, in microseconds
//! valgrind --tool=callgrind target/release/deps/matchers-* --bench --once ENGINE
//!                                              # instructions: one round of ENGINE (or `none`)
//! ```
//!
//! Engines: `regex` (the `regex` crate, as before), `regex-lite`, `pikevm` and `backtrack`
//! (`regex-automata` with only its NFA engines: no literal searchers, lazy DFA or reverse
//! automata), and `matcher` (what the dispatcher now does, `Matcher::compile`). Under
//! `cargo test` it only checks that every engine gives the same answers.

use std::hint::black_box;
use std::time::Instant;

use levelcode_hooks::settings::matcher::Matcher;
use regex_automata::nfa::thompson::{self, backtrack::BoundedBacktracker, pikevm::PikeVM};

/// The seven patterns of `REGEX_MATCHERS` in benches/bench.py.
const PATTERNS: [&str; 7] = [
    "mcp__.*__(delete|drop)_",
    "(?i)(bash|shell)",
    "browser_(navigate|click|type)",
    "\\bdeploy\\b|release_\\w+",
    "git_(push|commit|rebase)",
    "(spawn|run)_agents?$",
    "[Ww]eb_?(fetch|search)",
];

const TOOL: &str = "write_file";

/// The NFA engines are built without capture states: only whether a pattern matches is asked.
fn nfa_config() -> thompson::Config {
    thompson::Config::new()
        .shrink(false)
        .which_captures(thompson::WhichCaptures::None)
}

/// How many of the patterns match `tool`, by each engine.
fn run(engine: &str, tool: &str) -> usize {
    let matched = |f: &dyn Fn(&str) -> bool| PATTERNS.iter().filter(|p| f(p)).count();
    match engine {
        "none" => 0,
        "regex" => matched(&|p| regex::Regex::new(p).unwrap().is_match(tool)),
        "regex-lite" => matched(&|p| regex_lite::Regex::new(p).unwrap().is_match(tool)),
        "pikevm" => matched(&|p| {
            let vm = PikeVM::builder().thompson(nfa_config()).build(p).unwrap();
            vm.is_match(&mut vm.create_cache(), tool)
        }),
        "backtrack" => matched(&|p| {
            let vm = BoundedBacktracker::builder()
                .thompson(nfa_config())
                .build(p)
                .unwrap();
            vm.try_is_match(&mut vm.create_cache(), tool).unwrap()
        }),
        "matcher" => matched(&|p| Matcher::compile(Some(p)).unwrap().matches(tool)),
        other => panic!("unknown engine {other}"),
    }
}

const ENGINES: [&str; 5] = ["regex", "regex-lite", "pikevm", "backtrack", "matcher"];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    for tool in [TOOL, "mcp__github__delete_repo", "run_BASH", "release_v2"] {
        let answers: Vec<usize> = ENGINES.iter().map(|e| run(e, tool)).collect();
        assert!(
            answers.iter().all(|a| *a == answers[0]),
            "{tool}: {answers:?}"
        );
    }
    if !args.iter().any(|a| a == "--bench") {
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--once") {
        black_box(run(&args[i + 1], black_box(TOOL)));
        return;
    }
    for engine in ENGINES {
        let mut times: Vec<f64> = (0..2000)
            .map(|_| {
                let start = Instant::now();
                black_box(run(engine, black_box(TOOL)));
                start.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!(
            "{engine:10} {:8.1} µs for the seven patterns (median of {}; quartiles {:.1}–{:.1})",
            times[times.len() / 2],
            times.len(),
            times[times.len() / 4],
            times[3 * times.len() / 4]
        );
    }
}
