//! The soak: 2,000 dispatches (`SOAK_RUNS`) of random handler chains, a few at a time
//! (`SOAK_WORKERS`), each checked against what its handlers were told to do. Run it with
//! `make soak`; it is ignored by the default test run because it takes minutes.
//!
//! Handlers randomly succeed, block, fail, time out quickly while leaving descendants in their
//! group (which must die with it), ignore SIGTERM until SIGKILL, or exit normally while a
//! short-lived background process still holds their output (which the contract lets live).
//! Probe handlers report the dispatcher's open descriptors and peak memory from /proc.
//!
//! Afterwards:
//! - every run printed exactly one JSON object, with the outcomes its chain called for, in a
//!   bounded time;
//! - once the short-lived background processes have ended on their own, no process started by
//!   the soak is alive (each carries a marker variable in its environment; zombies waiting for
//!   init to reap them hold nothing and do not count);
//! - the dispatcher's open descriptors are the same at every probe of every run, and its peak
//!   memory does not grow along a chain or from run to run.

#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

// The black-box tests' sandbox: its directory and the one list of variables a child never
// inherits. This binary uses only part of it.
#[allow(dead_code)]
#[path = "common/sandbox.rs"]
mod sandbox;

const MARK: &str = "LEVELCODE_HOOKS_SOAK_MARK";

/// A small deterministic generator, so a failing seed can be replayed (`SOAK_SEED`).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What one handler of a chain is told to do.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Succeed,
    Block,
    Fail,
    /// Times out after 0.2 s with two `sleep 30` descendants in its group.
    TimeOut,
    /// Ignores SIGTERM with a descendant that does too: only SIGKILL, 1 s later, ends it.
    TimeOutIgnoringTerm,
    /// Exits at once while a background `sleep` holds its stdout for a moment.
    LeaveBackground,
    /// Reports the dispatcher's descriptors and peak memory.
    Probe,
}

impl Kind {
    fn random(rng: &mut Rng) -> Kind {
        match rng.below(100) {
            0..=29 => Kind::Succeed,
            30..=37 => Kind::Block,
            38..=57 => Kind::Fail,
            58..=71 => Kind::TimeOut,
            72..=73 => Kind::TimeOutIgnoringTerm,
            _ => Kind::LeaveBackground,
        }
    }

    /// The handler entry; `n` keeps every command distinct, so none is a duplicate.
    fn handler(self, n: usize, rng: &mut Rng) -> Value {
        let argv = rng.below(4) == 0;
        match self {
            Kind::Succeed if argv => {
                json!({ "argv": ["sh", "-c", format!("cat > /dev/null; echo '{{\"additionalContext\":\"ok {n}\"}}'")] })
            }
            Kind::Succeed => {
                json!({ "command": format!("cat > /dev/null; echo '{{\"additionalContext\":\"ok {n}\"}}'") })
            }
            Kind::Block => json!({ "command": format!("echo 'blocked {n}' >&2; exit 2") }),
            Kind::Fail if argv => {
                json!({ "argv": ["sh", "-c", format!("echo fail {n} >&2; exit 1")] })
            }
            Kind::Fail => {
                json!({ "command": format!("echo fail {n} >&2; exit {}", [1, 3, 42, 125, 255][rng.below(5) as usize]) })
            }
            Kind::TimeOut => {
                json!({ "command": format!("sleep 30 & sleep 30 & echo timeout {n}; wait"), "timeout": 0.2 })
            }
            Kind::TimeOutIgnoringTerm => {
                json!({ "command": format!("trap '' TERM; sleep 30 & echo stubborn {n}; wait"), "timeout": 0.2 })
            }
            Kind::LeaveBackground => {
                json!({ "command": format!("sleep 0.{} & echo background {n}", 1 + rng.below(4)) })
            }
            Kind::Probe => json!({ "command": format!(
                "cat > /dev/null; echo \"probe {n} $(ls /proc/$PPID/fd | wc -l) $(awk '/^VmHWM/ {{print $2}}' /proc/$PPID/status)\""
            ) }),
        }
    }

    fn outcome(self) -> &'static str {
        match self {
            Kind::Succeed | Kind::LeaveBackground | Kind::Probe => "proceed",
            Kind::Block => "block",
            Kind::Fail => "error",
            Kind::TimeOut | Kind::TimeOutIgnoringTerm => "timeout",
        }
    }

    /// The most this handler may cost by the contract: its timeout + 1.5 s, else a little.
    fn budget(self) -> Duration {
        match self {
            Kind::TimeOut | Kind::TimeOutIgnoringTerm => Duration::from_millis(1700),
            _ => Duration::from_millis(300),
        }
    }
}

/// One probe's reading: open descriptors and peak resident memory (KiB) of the dispatcher.
#[derive(Clone, Copy, Debug)]
struct Probe {
    fds: u32,
    peak_kib: u64,
}

#[derive(Default)]
struct Findings {
    runs: usize,
    handlers: usize,
    outcomes: std::collections::BTreeMap<String, usize>,
    probes: Vec<(usize, Vec<Probe>)>,
    slowest: Duration,
    failures: Vec<String>,
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A chain: probes first and last, random handlers between; every 100th run is long, to see
/// descriptors and memory along many handlers in one dispatcher.
fn chain(run: usize, rng: &mut Rng) -> Vec<Kind> {
    let middle = if run.is_multiple_of(100) {
        60
    } else {
        1 + rng.below(5) as usize
    };
    let mut kinds = vec![Kind::Probe];
    for i in 0..middle {
        kinds.push(Kind::random(rng));
        if middle > 10 && i % 20 == 19 {
            kinds.push(Kind::Probe);
        }
    }
    kinds.push(Kind::Probe);
    // Long chains keep going to the end: no block, no slow timeouts.
    if middle > 10 {
        for kind in &mut kinds {
            if matches!(
                kind,
                Kind::Block | Kind::TimeOut | Kind::TimeOutIgnoringTerm
            ) {
                *kind = Kind::Fail;
            }
        }
    }
    kinds
}

fn dispatch(
    home: &Path,
    project: &Path,
    mark: &str,
    run: usize,
    rng: &mut Rng,
) -> Result<(Vec<Probe>, Duration, Vec<String>), String> {
    let kinds = chain(run, rng);
    let handlers: Vec<Value> = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| k.handler(run * 1000 + i, rng))
        .collect();
    let settings =
        json!({ "hooks": { "PreToolUse": [ { "matcher": "write_file", "hooks": handlers } ] } });
    std::fs::write(
        project.join(".levelcode/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let payload = json!({
        "event": "PreToolUse",
        "tool_name": "write_file",
        "tool_input": { "path": "a.txt", "content": "x".repeat(rng.below(200_000) as usize) },
        "cwd": project,
    });
    let started = Instant::now();
    // The project layer is rewritten before every run: trusted for the run, as in CI.
    let mut child = sandbox::command(home, project)
        .env(MARK, mark)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let bytes = payload.to_string().into_bytes();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes);
    });
    let mut stdout = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    let elapsed = started.elapsed();
    writer.join().unwrap();

    let text = String::from_utf8(stdout).map_err(|e| format!("stdout not UTF-8: {e}"))?;
    if !text.ends_with('\n') || text.matches('\n').count() != 1 {
        return Err(format!("stdout is not one line: {text:?}"));
    }
    let json: Value =
        serde_json::from_str(&text).map_err(|e| format!("stdout is not JSON ({e}): {text}"))?;
    if !json.is_object() {
        return Err(format!("stdout is not an object: {text}"));
    }

    // The outcomes the chain calls for: the first block ends it, the rest are skipped.
    let mut expected = Vec::new();
    let mut blocked = false;
    for kind in &kinds {
        expected.push(if blocked { "skipped" } else { kind.outcome() });
        blocked |= *kind == Kind::Block;
    }
    let got: Vec<&str> = json["handlers"]
        .as_array()
        .ok_or_else(|| format!("no handlers: {text}"))?
        .iter()
        .map(|h| h["outcome"].as_str().unwrap_or("?"))
        .collect();
    if got != expected {
        return Err(format!("outcomes {got:?}, expected {expected:?}: {text}"));
    }
    let want_status = if blocked { 2 } else { 0 };
    if status.code() != Some(want_status) {
        return Err(format!("exit {status}, expected {want_status}: {text}"));
    }
    let budget: Duration =
        kinds.iter().map(|k| k.budget()).sum::<Duration>() + Duration::from_secs(5);
    if elapsed > budget {
        return Err(format!("took {elapsed:?}, over {budget:?}"));
    }

    let mut probes = Vec::new();
    for handler in json["handlers"].as_array().unwrap() {
        let out = handler["stdout"].as_str().unwrap_or("");
        if let Some(rest) = out.strip_prefix("probe ") {
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let probe = Probe {
                fds: fields.get(1).and_then(|f| f.parse().ok()).ok_or(out)?,
                peak_kib: fields.get(2).and_then(|f| f.parse().ok()).ok_or(out)?,
            };
            probes.push(probe);
        }
    }
    Ok((probes, elapsed, got.into_iter().map(String::from).collect()))
}

/// Live (not zombie) processes whose environment carries `mark`.
fn marked_processes(mark: &str) -> Vec<(i32, String)> {
    let needle = format!("{MARK}={mark}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if !environ
            .split(|b| *b == 0)
            .any(|var| var == needle.as_bytes())
        {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .unwrap_or("?");
        if state != "Z" && state != "X" && state != "?" {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push((pid, format!("{state} {cmdline}")));
        }
    }
    found
}

#[test]
#[ignore = "minutes long: run with `make soak`"]
fn soak() {
    let runs = env_number("SOAK_RUNS", 2000) as usize;
    let workers = env_number("SOAK_WORKERS", 4).max(1) as usize;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let seed = env_number("SOAK_SEED", now | 1);
    let mark = format!("{}-{seed}", std::process::id());
    let dir = sandbox::Sandbox::new();
    eprintln!("soak: {runs} dispatches, {workers} at a time, SOAK_SEED={seed}");

    let next = Arc::new(AtomicUsize::new(0));
    let findings = Arc::new(Mutex::new(Findings::default()));
    let started = Instant::now();
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let (next, findings, mark) = (Arc::clone(&next), Arc::clone(&findings), mark.clone());
            let home = dir.root().join(format!("home-{w}"));
            let project = dir.root().join(format!("project-{w}"));
            std::fs::create_dir_all(&home).unwrap();
            std::fs::create_dir_all(project.join(".levelcode")).unwrap();
            std::thread::spawn(move || {
                let mut rng =
                    Rng((seed ^ ((w as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))) | 1);
                loop {
                    let run = next.fetch_add(1, Ordering::SeqCst);
                    if run >= runs {
                        return;
                    }
                    let result = dispatch(&home, &project, &mark, run, &mut rng);
                    let mut f = findings.lock().unwrap();
                    f.runs += 1;
                    match result {
                        Ok((probes, elapsed, outcomes)) => {
                            f.handlers += outcomes.len();
                            for o in outcomes {
                                *f.outcomes.entry(o).or_default() += 1;
                            }
                            f.slowest = f.slowest.max(elapsed);
                            f.probes.push((run, probes));
                        }
                        Err(e) => f.failures.push(format!("run {run}: {e}")),
                    }
                    if f.runs.is_multiple_of(250) {
                        eprintln!(
                            "soak: {} runs, {:.0} s",
                            f.runs,
                            started.elapsed().as_secs_f64()
                        );
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let total = started.elapsed();

    // The short-lived background processes end on their own within half a second; anything
    // marked that is still alive after that was left behind.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left = marked_processes(&mark);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        left = marked_processes(&mark);
    }
    for (pid, _) in &left {
        // SAFETY: kill(2) with plain integers; the processes are the soak's own leftovers.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }

    let f = findings.lock().unwrap();
    let mut probes: Vec<(usize, Vec<Probe>)> = f.probes.clone();
    probes.sort_by_key(|(run, _)| *run);
    let all: Vec<Probe> = probes.iter().flat_map(|(_, p)| p.iter().copied()).collect();
    let fds_min = all.iter().map(|p| p.fds).min().unwrap_or(0);
    let fds_max = all.iter().map(|p| p.fds).max().unwrap_or(0);
    let firsts: Vec<u64> = probes
        .iter()
        .filter_map(|(_, p)| p.first().map(|p| p.peak_kib))
        .collect();
    let chain_growth = probes
        .iter()
        .filter_map(|(_, p)| Some(p.last()?.peak_kib.saturating_sub(p.first()?.peak_kib)))
        .max()
        .unwrap_or(0);
    let tenth = (firsts.len() / 10).max(1);
    let median = |v: &[u64]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let early = median(&firsts[..tenth.min(firsts.len())]);
    let late = median(&firsts[firsts.len() - tenth.min(firsts.len())..]);
    let peak_max = all.iter().map(|p| p.peak_kib).max().unwrap_or(0);

    eprintln!(
        "soak: {} runs, {} handlers in {:.1} s (slowest run {:.2} s); outcomes {:?}",
        f.runs,
        f.handlers,
        total.as_secs_f64(),
        f.slowest.as_secs_f64(),
        f.outcomes
    );
    eprintln!(
        "soak: dispatcher open descriptors at every probe: {fds_min}..={fds_max}; peak memory \
         at the first probe: median {early} KiB in the first tenth of runs, {late} KiB in the \
         last; largest growth along one chain {chain_growth} KiB; highest peak {peak_max} KiB"
    );
    eprintln!("soak: processes left behind: {}", left.len());

    assert!(
        f.failures.is_empty(),
        "{} runs failed:\n{}",
        f.failures.len(),
        f.failures.join("\n")
    );
    assert!(left.is_empty(), "processes left behind: {left:#?}");
    assert_eq!(f.runs, runs);
    assert!(!all.is_empty(), "no probe ran");
    assert_eq!(
        fds_min, fds_max,
        "the dispatcher's descriptors changed between probes"
    );
    assert!(
        chain_growth <= 4 * 1024,
        "peak memory grew by {chain_growth} KiB along one chain"
    );
    assert!(
        late <= early + 1024,
        "peak memory grew from run to run: {early} KiB early, {late} KiB late"
    );
}
