//! Commands timed in turns: each spawned once per round, in an order that rotates each round,
//! so that a slow spell of a shared machine falls on all of them alike (docs/BENCHMARKS.md,
//! "One-shot dispatch"). stdin is the payload file and stdout `/dev/null`, as with
//! `hyperfine -N --input`.
//!
//! ```text
//! rustc -O benches/turns.rs -o target/turns
//! target/turns ROUNDS SPEC...
//! ```
//!
//! A SPEC is `DIR,HOME,PAYLOAD,OPT_IN,PROGRAM[,ARGUMENT]`: run in DIR with only HOME and PATH
//! in its environment, plus `LEVELCODE_TRUST_PROJECT_HOOKS=1` when OPT_IN is 1. For each spec
//! it prints the median time and its interquartile range, and the median over rounds of its
//! time against the first spec's and against the one before it in the same round.

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::Instant;

struct Spec {
    dir: String,
    home: String,
    payload: String,
    opt_in: bool,
    program: String,
    argument: Option<String>,
}

fn spec(text: &str) -> Spec {
    let parts: Vec<&str> = text.split(',').collect();
    assert!(
        parts.len() >= 5,
        "a spec is DIR,HOME,PAYLOAD,OPT_IN,PROGRAM[,ARGUMENT]: {text}"
    );
    Spec {
        dir: parts[0].into(),
        home: parts[1].into(),
        payload: parts[2].into(),
        opt_in: parts[3] == "1",
        program: parts[4].into(),
        argument: parts.get(5).map(|a| a.to_string()),
    }
}

fn run(spec: &Spec) -> f64 {
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.argument)
        .current_dir(&spec.dir)
        .env_clear()
        .env("HOME", &spec.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(File::open(&spec.payload).expect("the payload opens"))
        .stdout(Stdio::null());
    if spec.opt_in {
        command.env("LEVELCODE_TRUST_PROJECT_HOOKS", "1");
    }
    let start = Instant::now();
    let status = command.status().expect("the command starts");
    let elapsed = start.elapsed().as_secs_f64() * 1e3;
    assert!(status.success(), "{} exited with {status}", spec.program);
    elapsed
}

/// The median and the quartiles of `values`.
fn quartiles(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |q: usize| values[(values.len() - 1) * q / 4];
    (at(2), at(1), at(3))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(1).and_then(|r| r.parse().ok()).expect("ROUNDS");
    let specs: Vec<Spec> = args[2..].iter().map(|s| spec(s)).collect();
    let mut times = vec![Vec::with_capacity(rounds); specs.len()];
    for round in 0..rounds + 20 {
        for turn in 0..specs.len() {
            let i = (turn + round) % specs.len();
            let t = run(&specs[i]);
            // The first 20 rounds warm the caches and are not counted.
            if round >= 20 {
                times[i].push(t);
            }
        }
    }
    for (i, spec) in specs.iter().enumerate() {
        let (median, low, high) = quartiles(&mut times[i].clone());
        let against = |j: usize| {
            let mut ratios: Vec<f64> = times[i].iter().zip(&times[j]).map(|(a, b)| a / b).collect();
            let (m, l, h) = quartiles(&mut ratios);
            format!("{m:.3} ({l:.3}-{h:.3})")
        };
        println!(
            "{i} {} {}: median {median:.3} ms ({low:.3}-{high:.3}); / first {}; / previous {}",
            spec.program,
            spec.dir,
            against(0),
            against(i.saturating_sub(1)),
        );
    }
}
