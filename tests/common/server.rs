//! A running `serve` for the tests that talk to one: requests written one by one, answers
//! read one by one, the process killed when dropped.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::Test;

/// How long an answer may take.
pub const ANSWER_LIMIT: Duration = Duration::from_secs(30);

/// A running `serve`: requests written one by one, answers read one by one.
pub struct Server {
    pub child: Child,
    /// `None` once closed.
    pub stdin: Option<ChildStdin>,
    pub answers: Receiver<String>,
}

impl Server {
    pub fn start(mut command: Command) -> Server {
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        Server {
            stdin: child.stdin.take(),
            child,
            answers,
        }
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    pub fn send(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next answer line, raw.
    pub fn answer_text(&self) -> String {
        self.answers
            .recv_timeout(ANSWER_LIMIT)
            .expect("an answer within the limit")
    }

    pub fn answer(&self) -> Value {
        let text = self.answer_text();
        let value: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("an answer is one JSON object ({e}): {text:?}"));
        assert!(value.is_object(), "{text}");
        value
    }

    /// Sends one request and returns its answer.
    pub fn ask(&mut self, request: &Value) -> Value {
        self.send(request.to_string().as_bytes());
        self.answer()
    }

    /// Closes stdin and waits for the exit status; every answer not yet read is returned.
    pub fn finish(mut self) -> (i32, Vec<String>) {
        self.stdin = None;
        let status = self.wait();
        (status, self.answers.iter().collect())
    }

    pub fn wait(&mut self) -> i32 {
        let deadline = Instant::now() + ANSWER_LIMIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().expect("an exit code, not death by a signal");
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("serve did not exit");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits until the server is asleep waiting for input.
    pub fn wait_until_idle(&self) {
        super::wait_asleep(self.pid(), "serve");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The answers of one `serve` of `test` fed `requests` (one line each) until its input ends,
/// in the order of their `id`s; the server exits 0 and answers each once.
pub fn answers(test: Test, requests: &[Value]) -> Vec<Value> {
    let lines: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let out = test.arg("serve").stdin(lines).run();
    assert_eq!(out.status(), 0, "{}", out.stderr());
    let mut answers: Vec<Value> = out
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    answers.sort_by_key(|a| a["id"].as_u64());
    assert_eq!(answers.len(), requests.len(), "{}", out.stdout());
    answers
}

/// `payloads` as requests, each `id` its place.
pub fn numbered(payloads: &[Value]) -> Vec<Value> {
    payloads
        .iter()
        .enumerate()
        .map(|(id, payload)| {
            let mut request = payload.clone();
            request["id"] = json!(id);
            request
        })
        .collect()
}
