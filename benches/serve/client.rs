//! The client of the `serve` benchmark: keeps one `levelcode-hooks serve` running and sends it
//! one event at a time, as an agent does, timing each from the first byte written to the answer's
//! newline read. Beside it, the floor, what no server can avoid: where handlers run, the
//! scenario's handlers spawned by this program directly with `std::process::Command` (own
//! process group, payload on a piped stdin, stdout and stderr piped and read to their end); where
//! none runs, the same request's round trip through `cat`. Also timed: the signal-disposition
//! resets glibc's `posix_spawn` makes in each child, which the dispatcher's own spawn skips, so
//! the report can show the floor without them.
//!
//! Both are measured in interleaved rounds, so a slow moment of the machine lands on both alike.
//! Then bursts: `--burst` copies of the request written at once, as an agent's step fans out its
//! tool calls, timed from the first byte written to the last answer read.
//! Prints one JSON object: medians and 95th percentiles per event, in microseconds.
//!
//! Built by `benches/serve.sh` with plain `rustc`; only the standard library.
//!
//! ```text
//! client --bin PATH --home DIR --project DIR --payload FILE --handlers N
//!        [--handler 'sh -c true'] [--events 10000] [--floor-events 2000] [--rounds 10]
//!        [--warmup 500] [--burst 200] [--bursts 20]
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Variables that change what the dispatcher does; the benchmark controls all of them.
const DISPATCHER_ENV: [&str; 8] = [
    "LEVELCODE_DIR",
    "LEVELCODE_TRUST_PROJECT_HOOKS",
    "LEVELCODE_HOOKS",
    "LEVELCODE_HOOKS_NO_PROJECT",
    "LEVELCODE_HOOKS_DEPTH",
    "LEVELCODE_HOOKS_LOG",
    "LEVELCODE_TEAM",
    "NEXT_PUBLIC_CB_ENVIRONMENT",
];

struct Args {
    bin: String,
    home: String,
    project: String,
    payload: String,
    handlers: usize,
    handler: Vec<String>,
    events: usize,
    floor_events: usize,
    rounds: usize,
    warmup: usize,
    burst: usize,
    bursts: usize,
}

fn parse_args() -> Args {
    let mut args = Args {
        bin: String::new(),
        home: String::new(),
        project: String::new(),
        payload: String::new(),
        handlers: 0,
        handler: vec!["/bin/sh".into(), "-c".into(), "true".into()],
        events: 10_000,
        floor_events: 2_000,
        rounds: 10,
        warmup: 500,
        burst: 200,
        bursts: 20,
    };
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let value = given
            .next()
            .unwrap_or_else(|| fail(&format!("{flag} needs a value")));
        let number = || {
            value
                .parse::<usize>()
                .unwrap_or_else(|_| fail(&format!("{flag}: not a number: {value}")))
        };
        match flag.as_str() {
            "--bin" => args.bin = value,
            "--home" => args.home = value,
            "--project" => args.project = value,
            "--payload" => args.payload = value,
            "--handlers" => args.handlers = number(),
            "--handler" => args.handler = value.split_whitespace().map(String::from).collect(),
            "--events" => args.events = number(),
            "--floor-events" => args.floor_events = number(),
            "--rounds" => args.rounds = number().max(1),
            "--warmup" => args.warmup = number(),
            "--burst" => args.burst = number(),
            "--bursts" => args.bursts = number(),
            _ => fail(&format!("unknown flag {flag}")),
        }
    }
    if args.bin.is_empty() || args.home.is_empty() || args.project.is_empty() {
        fail("--bin, --home, --project and --payload are needed");
    }
    args
}

fn fail(message: &str) -> ! {
    eprintln!("serve client: {message}");
    std::process::exit(2);
}

/// A running server and the request it is sent again and again.
struct Server {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    request: Vec<u8>,
    answer: String,
}

impl Server {
    /// `levelcode-hooks serve`, or with `echo`, `cat`: the same round trip through two pipes
    /// with nothing done in between, the floor of any server.
    fn start(args: &Args, payload: &[u8], echo: bool) -> Server {
        let mut command = if echo {
            Command::new("cat")
        } else {
            let mut command = Command::new(&args.bin);
            command.arg("serve");
            command
        };
        command
            .current_dir(&args.project)
            .env("HOME", &args.home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for key in DISPATCHER_ENV {
            command.env_remove(key);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| fail(&format!("cannot start {}: {e}", args.bin)));
        let mut request = payload.trim_ascii().to_vec();
        if request.contains(&b'\n') {
            fail("the payload must be JSON on one line");
        }
        request.push(b'\n');
        Server {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            request,
            answer: String::with_capacity(64 * 1024),
        }
    }

    /// One event, answered; returns the time it took.
    fn event(&mut self) -> Duration {
        self.answer.clear();
        let start = Instant::now();
        self.stdin.write_all(&self.request).unwrap();
        self.stdin.flush().unwrap();
        self.stdout.read_line(&mut self.answer).unwrap();
        let took = start.elapsed();
        if !self.answer.ends_with('\n') {
            fail("the server closed its stdout");
        }
        took
    }

    /// `count` copies of the request written at once (by a thread, so that answers and requests
    /// flow at the same time, as they do for an agent), and every answer read; returns the time
    /// from the first byte written to the last answer's newline.
    fn burst(&mut self, count: usize) -> Duration {
        let lines = self.request.repeat(count);
        let start = Instant::now();
        std::thread::scope(|scope| {
            let stdin = &mut self.stdin;
            scope.spawn(move || {
                stdin.write_all(&lines).unwrap();
                stdin.flush().unwrap();
            });
            for _ in 0..count {
                self.answer.clear();
                self.stdout.read_line(&mut self.answer).unwrap();
                if !self.answer.ends_with('\n') {
                    fail("the server closed its stdout");
                }
            }
        });
        start.elapsed()
    }

    /// Checks that the last answer ran exactly `handlers` handlers, all proceeding; the error
    /// says what is wrong.
    fn check(&self, handlers: usize) -> Result<(), String> {
        let ran = self.answer.matches("\"outcome\":\"proceed\"").count();
        let matched = self.answer.matches("\"outcome\":").count();
        if self.answer.contains("\"error\":") || ran != handlers || matched != handlers {
            return Err(format!(
                "expected {handlers} handler(s) proceeding, got: {}",
                self.answer.trim_end()
            ));
        }
        Ok(())
    }

    fn stop(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        if !status.success() {
            fail(&format!("serve exited with {status}"));
        }
    }
}

/// The scenario's handlers spawned directly, once each, through the same three pipes.
fn floor_event(args: &Args, payload: &[u8]) -> Duration {
    let start = Instant::now();
    for _ in 0..args.handlers {
        let mut child = Command::new(&args.handler[0])
            .args(&args.handler[1..])
            .current_dir(&args.project)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| fail(&format!("cannot start {:?}: {e}", args.handler)));
        let mut stdin = child.stdin.take().unwrap();
        // A handler that exits without reading leaves a closed pipe: not an error.
        let _ = stdin.write_all(payload);
        drop(stdin);
        let mut sink = Vec::new();
        child.stdout.take().unwrap().read_to_end(&mut sink).unwrap();
        child.stderr.take().unwrap().read_to_end(&mut sink).unwrap();
        child.wait().unwrap();
    }
    start.elapsed()
}

/// What glibc's `posix_spawn`, which `std::process::Command` uses, does in every child before it
/// executes: read and reset each signal's disposition, two system calls per signal. The
/// dispatcher's own spawn skips this (docs/BENCHMARKS.md), so the floor above holds this much
/// per handler that a leaner spawn does not pay. Timed here on the client's own dispositions,
/// each set back to what it was.
fn signal_resets() -> Duration {
    extern "C" {
        fn sigaction(sig: i32, act: *const u8, old: *mut u8) -> i32;
    }
    // Larger than any platform's `struct sigaction`.
    let mut buf = [0u8; 512];
    let start = Instant::now();
    for sig in 1..65 {
        // SIGKILL, SIGSTOP and the C library's two internal signals refuse a new disposition.
        if matches!(sig, 9 | 19 | 32 | 33) {
            continue;
        }
        // SAFETY: `buf` is larger than `struct sigaction`; the disposition read is set back.
        unsafe {
            sigaction(sig, std::ptr::null(), buf.as_mut_ptr());
            sigaction(sig, buf.as_ptr(), std::ptr::null_mut());
        }
    }
    start.elapsed()
}

/// The `q` quantile (0..=1) of sorted values, interpolated.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = q * (sorted.len() - 1) as f64;
    let (low, high) = (at.floor() as usize, at.ceil() as usize);
    sorted[low] + (sorted[high] - sorted[low]) * (at - low as f64)
}

/// `"name":{"median":…,"p95":…}` in microseconds.
fn stats(name: &str, mut micros: Vec<f64>) -> String {
    micros.sort_by(f64::total_cmp);
    format!(
        "\"{name}\":{{\"count\":{},\"median_us\":{:.2},\"p95_us\":{:.2},\"min_us\":{:.2},\"max_us\":{:.2}}}",
        micros.len(),
        quantile(&micros, 0.5),
        quantile(&micros, 0.95),
        micros.first().copied().unwrap_or(f64::NAN),
        micros.last().copied().unwrap_or(f64::NAN),
    )
}

fn main() {
    let args = parse_args();
    let payload = std::fs::read(&args.payload)
        .unwrap_or_else(|e| fail(&format!("{}: {e}", args.payload)));
    let mut server = Server::start(&args, &payload, false);
    let mut echo = (args.handlers == 0).then(|| Server::start(&args, &payload, true));
    server.event();
    if let Err(problem) = server.check(args.handlers) {
        fail(&problem);
    }
    for _ in 0..args.warmup {
        server.event();
    }
    if let Some(echo) = echo.as_mut() {
        for _ in 0..args.warmup {
            echo.event();
        }
    } else {
        for _ in 0..args.warmup.min(args.floor_events) / 5 + 1 {
            floor_event(&args, &payload);
        }
    }

    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let mut served = Vec::with_capacity(args.events);
    let mut floor = Vec::with_capacity(args.floor_events);
    for round in 0..args.rounds {
        let share = |total: usize| total / args.rounds + usize::from(round < total % args.rounds);
        for _ in 0..share(args.events) {
            served.push(micros(server.event()));
        }
        for _ in 0..share(args.floor_events) {
            floor.push(micros(match echo.as_mut() {
                Some(echo) => echo.event(),
                None => floor_event(&args, &payload),
            }));
        }
    }
    if let Err(problem) = server.check(args.handlers) {
        fail(&problem);
    }
    let mut bursts = Vec::with_capacity(args.bursts);
    if args.burst > 0 {
        server.burst(args.burst);
        for _ in 0..args.bursts {
            bursts.push(micros(server.burst(args.burst)));
        }
        if let Err(problem) = server.check(args.handlers) {
            fail(&problem);
        }
    }
    server.stop();
    if let Some(echo) = echo {
        echo.stop();
    }

    let resets: Vec<f64> = (0..args.floor_events.max(100))
        .map(|_| micros(signal_resets()))
        .collect();
    let parts = [
        format!("\"handlers\":{}", args.handlers),
        format!("\"payload_bytes\":{}", payload.trim_ascii().len()),
        format!(
            "\"floor_is\":\"{}\"",
            if args.handlers == 0 {
                "round trip through cat"
            } else {
                "handlers spawned directly"
            }
        ),
        stats("serve", served),
        stats("floor", floor),
        stats("signal_resets", resets),
        format!("\"burst_size\":{}", args.burst),
        stats("burst", bursts),
    ];
    println!("{{{}}}", parts.join(","));
}
