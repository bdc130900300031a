//! The least a dispatcher can do when nothing matches: read the payload on stdin, read the
//! three settings files, print one line. The bench builds it with plain `rustc` (static and
//! dynamic) and times it beside `/bin/true`, so the report shows what the start of any Rust
//! binary costs on the machine, apart from what the dispatcher does on top.

use std::io::{Read, Write};

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
    let line = format!(
        "{{\"decision\":\"proceed\",\"bytes\":{}}}\n",
        payload.len() + read
    );
    std::io::stdout().write_all(line.as_bytes()).ok();
}
