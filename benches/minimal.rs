//! The least a dispatcher can do: read the payload on stdin, read the three settings files,
//! print one line. Given `spawn`, it also runs `/bin/sh -c true` the way any dispatcher that
//! captures a handler's output must (its own process group, the payload on a piped stdin, both
//! outputs piped and read to their end, the exit waited for), with std's `Command`. The bench
//! builds it with plain `rustc` (static and dynamic) and times it beside `/bin/true` and the
//! dispatcher, so the report shows what the start of any Rust binary, and one handler run from
//! one, cost on the machine, apart from what the dispatcher does on top.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

fn main() {
    let mut payload = Vec::new();
    std::io::stdin().read_to_end(&mut payload).ok();
    let home = std::env::var_os("HOME").unwrap_or_default();
    let home = std::path::Path::new(&home);
    let layers = [
        home.join(".config/levelcode/settings.json"),
        home.join(".levelcode/settings.json"),
        std::path::PathBuf::from(".levelcode/settings.json"),
    ];
    let read: usize = layers
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .map(|b| b.len())
        .sum();
    let mut ran = 0;
    if std::env::args().nth(1).as_deref() == Some("spawn") {
        ran = spawn(&payload);
    }
    let line = format!(
        "{{\"decision\":\"proceed\",\"bytes\":{},\"ran\":{ran}}}\n",
        payload.len() + read
    );
    std::io::stdout().write_all(line.as_bytes()).ok();
}

/// Runs `/bin/sh -c true` with the payload on its stdin; returns 1 when it exited 0.
fn spawn(payload: &[u8]) -> usize {
    let Ok(mut child) = Command::new("/bin/sh")
        .args(["-c", "true"])
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        return 0;
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A handler that exits without reading leaves a closed pipe: not an error.
        let _ = stdin.write_all(payload);
    }
    let mut sink = Vec::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_end(&mut sink);
    }
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_end(&mut sink);
    }
    usize::from(child.wait().is_ok_and(|s| s.success()))
}
