//! The layout's invariants (docs/ARCHITECTURE.md), read from the source itself: which module
//! may import which, no import circle between files, the size of `src/`'s top level and of each
//! file, every variable read in `src/environment.rs` and cleared by the test sandbox, and every
//! test starting the binary through that sandbox.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every module of the library and binary, by path (`settings::layers`, `crate` for lib.rs,
/// `main` for main.rs), with the file that holds it.
fn modules() -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("src/ is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files
        .into_iter()
        .map(|file| {
            let relative = file.strip_prefix(&src).unwrap().with_extension("");
            let mut parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            let name = match parts.join("::").as_str() {
                "lib" => "crate".to_string(),
                other => other.to_string(),
            };
            (name, file)
        })
        .collect()
}

/// The modules each module names outside its tests, each resolved to the longest module path
/// that exists: through `crate::…`, `super::…` and `self::…` anywhere in its code, and through
/// every leaf of its `use` trees, relative ones included (`use protocol::{claude, Protocol}` in
/// `dispatch` names `dispatch::protocol::claude` and `dispatch::protocol`).
fn imports(modules: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let sources: BTreeMap<String, String> = modules
        .iter()
        .map(|(name, file)| (name.clone(), std::fs::read_to_string(file).unwrap()))
        .collect();
    import_graph(&sources)
}

/// [`imports`] over the modules' texts, by module path.
fn import_graph(sources: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let known: BTreeSet<&str> = sources.keys().map(String::as_str).collect();
    let mut graph = BTreeMap::new();
    for (name, text) in sources {
        // A test module kept in a file of its own (`tests.rs`, `claude_tests.rs`) is test code.
        let last = name.rsplit("::").next().unwrap_or(name);
        if last == "tests" || last.ends_with("_tests") {
            continue;
        }
        let code = without_comments(text.split("#[cfg(test)]").next().unwrap_or_default());
        let here: Vec<&str> = if name == "crate" {
            Vec::new()
        } else {
            name.split("::").collect()
        };
        let mut deps = BTreeSet::new();
        let mut depend_on = |path: &[&str]| {
            if let Some(module) = resolve(&here, path, &known) {
                if module != *name {
                    deps.insert(module);
                }
            }
        };
        for path in use_paths(&code) {
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            depend_on(&path);
        }
        for prefix in ["crate::", "super::", "self::"] {
            for (at, _) in code.match_indices(prefix) {
                let preceded_by_word = code[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
                if preceded_by_word {
                    continue;
                }
                let path_text: String = code[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let path: Vec<&str> = path_text.split("::").filter(|p| !p.is_empty()).collect();
                depend_on(&path);
            }
        }
        graph.insert(name.clone(), deps);
    }
    graph
}

/// The module `path`, named in module `here`, stands for: the longest module path it begins
/// with, or `None` for a path outside the crate (`std::…`, `serde::…`).
fn resolve(here: &[&str], path: &[&str], known: &BTreeSet<&str>) -> Option<String> {
    let mut full: Vec<&str> = Vec::new();
    let mut rest = path;
    match path.first() {
        Some(&"crate") => rest = &path[1..],
        Some(&"self") => {
            full.extend_from_slice(here);
            rest = &path[1..];
        }
        Some(&"super") => {
            full.extend_from_slice(here);
            while rest.first() == Some(&"super") {
                full.pop();
                rest = &rest[1..];
            }
        }
        Some(first) => {
            // A relative path: a child module of `here`, or nothing of the crate's.
            let mut child = here.to_vec();
            child.push(first);
            if !known.contains(child.join("::").as_str()) {
                return None;
            }
            full.extend_from_slice(here);
        }
        None => return None,
    }
    full.extend(rest.iter().copied().filter(|p| *p != "self" && *p != "*"));
    (1..=full.len())
        .rev()
        .map(|len| full[..len].join("::"))
        .find(|candidate| known.contains(candidate.as_str()))
}

/// `code` with its `//` and `/* */` comments blanked out, strings left as they are.
fn without_comments(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            // A character literal that is a quote must not open a string.
            ('\'', Some('"')) => {
                out.push(c);
                out.push(chars.next().unwrap());
            }
            _ => out.push(c),
        }
    }
    out
}

/// Every leaf of every `use` declaration in `code`, as path segments: `use a::{b, c::{self, D}}`
/// gives `a::b`, `a::c` and `a::c::D`; a glob `a::*` gives `a`.
fn use_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for (at, _) in code.match_indices("use ") {
        let starts_item = code[..at]
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || matches!(c, ';' | '{' | '}' | ')'));
        if !starts_item {
            continue;
        }
        let tree = &code[at + "use ".len()..];
        let Some(end) = tree.find(';') else {
            continue;
        };
        let tokens = tokenize(&tree[..end]);
        let mut position = 0;
        expand(&tokens, &mut position, Vec::new(), &mut paths);
    }
    paths
}

fn tokenize(tree: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut chars = tree.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            tokens.push(std::mem::take(&mut word));
        }
        match c {
            ':' if chars.peek() == Some(&':') => {
                chars.next();
                tokens.push("::".into());
            }
            '{' | '}' | ',' | '*' => tokens.push(c.to_string()),
            _ => {}
        }
    }
    if !word.is_empty() {
        tokens.push(word);
    }
    tokens
}

/// Reads one use tree from `tokens` at `position`, under `prefix`, into `out`.
fn expand(
    tokens: &[String],
    position: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) {
    let mut path = prefix;
    while let Some(token) = tokens.get(*position) {
        match token.as_str() {
            "::" => *position += 1,
            "{" => {
                *position += 1;
                loop {
                    match tokens.get(*position).map(String::as_str) {
                        None => return,
                        Some("}") => {
                            *position += 1;
                            return;
                        }
                        Some(",") => *position += 1,
                        Some(_) => expand(tokens, position, path.clone(), out),
                    }
                }
            }
            "," | "}" => break,
            "*" => {
                *position += 1;
                out.push(path.clone());
                return;
            }
            "as" => {
                // `x as y`: the path is `x`'s; skip the new name.
                *position += 2;
                break;
            }
            word => {
                path.push(word.to_string());
                *position += 1;
            }
        }
    }
    out.push(path);
}

fn top(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

/// The first import circle of `graph`, as the path around it, leaving out the edges from a
/// module to its own submodules: a folder's `mod.rs` declares and uses its parts, and they may
/// use what it defines, so a folder is one unit. Any other circle is a tangle of files.
fn first_circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn is_part_of(child: &str, parent: &str) -> bool {
        parent == "crate"
            || child
                .strip_prefix(parent)
                .is_some_and(|rest| rest.starts_with("::"))
    }
    // Depth-first search for a back edge; a path found is returned whole.
    fn visit<'a>(
        node: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| *n == node) {
            let mut circle: Vec<String> = stack[at..].iter().map(|s| s.to_string()).collect();
            circle.push(node.to_string());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node);
        for next in graph.get(node).into_iter().flatten() {
            if is_part_of(next, node) {
                continue;
            }
            if let Some(circle) = visit(next, graph, stack, done) {
                return Some(circle);
            }
        }
        stack.pop();
        done.insert(node);
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    if let Some(circle) = first_circle(&imports(&modules())) {
        panic!("import circle: {}", circle.join(" -> "));
    }
}

/// The parts of `src/` (its folders and top-level files) import each other one way only: the
/// file-level check above lets a folder's files use each other, so a circle between two folders
/// through different files needs this one.
#[test]
fn no_part_imports_one_that_imports_it_back() {
    let mut parts: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, deps) in imports(&modules()) {
        if module == "crate" || module == "main" {
            continue;
        }
        let from = top(&module).to_string();
        let entry = parts.entry(from.clone()).or_default();
        entry.extend(
            deps.iter()
                .map(|d| top(d).to_string())
                .filter(|d| *d != from && d != "crate"),
        );
    }
    if let Some(circle) = first_circle(&parts) {
        panic!(
            "import circle between parts of src/: {}",
            circle.join(" -> ")
        );
    }
}

/// The circle this check once missed: `outcome` took `Program` through its re-export in
/// `settings`, which took `claude` through a brace import, and `claude` imports `outcome`.
#[test]
fn a_circle_through_a_brace_import_and_a_re_export_is_found() {
    let sources: BTreeMap<String, String> = [
        ("crate", "pub mod dispatch;\npub mod runner;"),
        ("runner", "pub struct Program;"),
        (
            "dispatch",
            "pub mod outcome;\npub mod protocol;\npub mod settings;\n\
             use protocol::claude::{self, Rewrite};",
        ),
        (
            "dispatch::outcome",
            "use crate::dispatch::settings::Program;\nuse crate::runner::{Ending, Stop};",
        ),
        (
            "dispatch::protocol",
            "pub mod claude;\npub enum Protocol {}",
        ),
        (
            "dispatch::protocol::claude",
            "use crate::dispatch::outcome::{self, Judgement, Outcome};",
        ),
        (
            "dispatch::settings",
            "mod checked;\nuse crate::dispatch::protocol::{claude, Protocol};\n\
             pub use crate::runner::Program;\nuse checked::parse_event;",
        ),
        ("dispatch::settings::checked", "use super::*;"),
    ]
    .into_iter()
    .map(|(name, text)| (name.to_string(), text.to_string()))
    .collect();
    let graph = import_graph(&sources);
    let names = |module: &str| -> Vec<&str> { graph[module].iter().map(String::as_str).collect() };
    assert_eq!(
        names("dispatch::settings"),
        [
            "dispatch::protocol",
            "dispatch::protocol::claude",
            "dispatch::settings::checked",
            "runner"
        ]
    );
    assert_eq!(
        names("dispatch"),
        ["dispatch::protocol::claude"],
        "a relative path names a submodule"
    );
    // A folder's parts using it are no circle; the three files are.
    assert_eq!(names("dispatch::settings::checked"), ["dispatch::settings"]);
    assert_eq!(
        first_circle(&graph).expect("the circle is found"),
        [
            "dispatch::outcome",
            "dispatch::settings",
            "dispatch::protocol::claude",
            "dispatch::outcome"
        ]
    );
    // Taking `Program` from where it is defined breaks it.
    let mut fixed = sources.clone();
    fixed.insert(
        "dispatch::outcome".into(),
        "use crate::runner::{Ending, Program, Stop};".into(),
    );
    assert_eq!(first_circle(&import_graph(&fixed)), None);
}

#[test]
fn use_trees_are_read_leaf_by_leaf() {
    let paths = use_paths(
        "pub(crate) use a::{b, c::{self, D as E}, f::*};\n\
         // use commented::out;\n\
         let x = \"use not::this\";\n\
         use crate::g;",
    );
    let paths: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert!(paths.contains(&"a::b".to_string()), "{paths:?}");
    assert!(paths.contains(&"a::c::self".to_string()), "{paths:?}");
    assert!(paths.contains(&"a::c::D".to_string()), "{paths:?}");
    assert!(paths.contains(&"a::f".to_string()), "{paths:?}");
    assert!(paths.contains(&"crate::g".to_string()), "{paths:?}");
    let code = without_comments("use kept::x; // use commented::out;\n");
    assert!(!code.contains("commented"), "{code}");
}

#[test]
fn layers_of_the_code_import_only_downwards() {
    let graph = imports(&modules());
    // What each part may not name: the pipeline and the runner never reach a command or the
    // command line, the runner knows nothing of settings or the pipeline, and only main.rs
    // names cli.rs.
    // The cross-cutting modules at the top of src/ serve every part and import none.
    const LEAF: &[&str] = &[
        "settings",
        "shell",
        "dispatch",
        "commands",
        "cli",
        "serve",
        "runner",
        "trust",
        "compliance",
    ];
    let forbidden: &[(&str, &[&str])] = &[
        ("dispatch", &["commands", "cli", "serve"]),
        // The settings model is below trust and the pipeline: trust reads it, it reads neither.
        (
            "settings",
            &[
                "dispatch",
                "trust",
                "commands",
                "cli",
                "serve",
                "compliance",
                "telemetry",
            ],
        ),
        ("trust", &["dispatch", "commands", "cli", "serve"]),
        (
            "runner",
            &[
                "settings",
                "dispatch",
                "commands",
                "cli",
                "serve",
                "compliance",
            ],
        ),
        (
            "compliance",
            &["dispatch", "commands", "cli", "serve", "runner"],
        ),
        (
            "telemetry",
            &[
                "settings", "dispatch", "commands", "cli", "serve", "runner", "trust",
            ],
        ),
        // The shell's reading of a command line serves settings, trust and the commands alike.
        (
            "shell",
            &[
                "settings",
                "dispatch",
                "trust",
                "commands",
                "cli",
                "serve",
                "runner",
                "compliance",
                "telemetry",
            ],
        ),
        // The one HTTP client serves the pipeline, the settings' checks and the export, and
        // knows none of them.
        (
            "http",
            &[
                "settings",
                "dispatch",
                "commands",
                "cli",
                "serve",
                "runner",
                "trust",
                "compliance",
                "telemetry",
            ],
        ),
        ("serve", &["commands", "cli"]),
        ("commands", &["cli"]),
        ("environment", LEAF),
        ("signals", LEAF),
        ("style", LEAF),
        ("lock", LEAF),
        ("fs", LEAF),
        ("bytes", LEAF),
    ];
    let mut wrong = Vec::new();
    for (module, deps) in &graph {
        for dep in deps {
            let bad = forbidden
                .iter()
                .any(|(part, never)| top(module) == *part && never.contains(&top(dep)));
            if bad {
                wrong.push(format!("{module} imports {dep}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn no_protocol_is_named_outside_its_own_module() {
    // The dispatcher asks a `Protocol`; only `import`, which converts Claude Code's own
    // settings, takes that protocol's name from its module.
    let foreign: Vec<&str> = levelcode_hooks::settings::protocol::Protocol::all()
        .filter(|p| !p.is_levelcode())
        .map(|p| p.name())
        .collect();
    let mut wrong = Vec::new();
    for (name, file) in modules() {
        // Test files (`tests.rs` beside a module) spell names, as settings do.
        if name.starts_with("dispatch::protocol")
            || name.starts_with("settings::protocol")
            || name.ends_with("tests")
        {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for protocol in &foreign {
                let spelled = [format!("\"{protocol}\""), format!("\\\"{protocol}\\\"")];
                let module = format!("protocol::{protocol}");
                let imports = line.contains(&module) && name != "commands::import";
                if imports || spelled.iter().any(|s| line.contains(s.as_str())) {
                    wrong.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn src_stays_small_at_the_top_and_in_each_file() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let top_files: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(top_files.len() <= 8, "src/ holds {top_files:?}");
    for (name, file) in modules() {
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
        assert!(
            lines <= 800,
            "{name} ({}) has {lines} lines",
            file.display()
        );
    }
}

#[test]
fn the_code_map_names_every_folder() {
    let map =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ARCHITECTURE.md"))
            .expect("docs/ARCHITECTURE.md exists");
    let folders: BTreeSet<String> = modules()
        .values()
        .filter_map(|file| {
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
            let relative = file.strip_prefix(&src).ok()?;
            let parent = relative.parent()?;
            (!parent.as_os_str().is_empty()).then(|| format!("src/{}/", parent.display()))
        })
        .collect();
    for folder in folders {
        assert!(
            map.contains(&format!("`{folder}`")),
            "docs/ARCHITECTURE.md does not name `{folder}`"
        );
    }
}

/// The sandbox's list of variables a child never inherits covers every variable the dispatcher
/// reads: each is named in `src/environment.rs`, the one place that reads them.
#[test]
fn the_sandbox_clears_every_variable_the_dispatcher_reads() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/environment.rs"))
            .unwrap();
    let code = without_comments(text.split("#[cfg(test)]").next().unwrap_or_default());
    let names: BTreeSet<&str> = code
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            s.len() > 1
                && s.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
        .collect();
    assert!(names.len() >= 9, "environment.rs reads {names:?}");
    // HOME is the sandbox's own, set rather than cleared.
    let missing: Vec<&&str> = names
        .iter()
        .filter(|name| **name != "HOME" && !crate::common::CLEARED.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "tests/common/sandbox.rs does not clear {missing:?}"
    );
    // Elsewhere only what a shell would read to find a program is read: `command_check` and the
    // spawner look up `PATH` (and `PATHEXT`, and `~` in a command) as the handler's shell would.
    let shell = ["(\"PATH\"", "(\"PATHEXT\"", "(\"HOME\""];
    let mut readers = Vec::new();
    for (name, file) in modules() {
        if name == "environment" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = without_comments(text.split("#[cfg(test)]").next().unwrap_or_default());
        for (at, _) in code.match_indices("env::var") {
            let call: String = code[at..].chars().take_while(|c| *c != ')').collect();
            if !shell.iter().any(|allowed| call.contains(allowed)) {
                readers.push(format!("{name}: {call})"));
            }
        }
    }
    assert!(
        readers.is_empty(),
        "variables read outside src/environment.rs: {readers:?}"
    );
}

/// Every black-box test starts the binary through the sandbox of `tests/common/`.
#[test]
fn every_test_file_starts_the_binary_through_the_sandbox() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files = Vec::new();
    walk(&tests, &mut files);
    assert!(files.len() > 10, "{files:?}");
    let own = [
        "CARGO_BIN_EXE",
        "Command::new(bin",
        "Command::new(crate::common::bin",
    ];
    let wrong: Vec<String> = files
        .iter()
        .filter(|file| {
            !file.starts_with(tests.join("common")) && !file.ends_with("architecture.rs")
        })
        .filter(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            own.iter().any(|needle| text.contains(needle))
        })
        .map(|file| file.display().to_string())
        .collect();
    assert!(
        wrong.is_empty(),
        "these start the binary themselves: {wrong:?}"
    );
}

/// HTTP is spoken by one client, a crate made for it (`src/http/`): neither it nor the export
/// opens a socket of its own, writes a request by hand or holds an `unsafe` block.
#[test]
fn the_export_and_the_http_client_hold_no_socket_code_and_no_unsafe() {
    let mut found = Vec::new();
    for (name, file) in modules() {
        if !(name.starts_with("telemetry") || name.starts_with("http")) {
            continue;
        }
        let code = without_comments(&std::fs::read_to_string(&file).unwrap());
        for needle in [
            "unsafe",
            "TcpStream",
            "libc::",
            "HTTP/1.1\\r\\n",
            "CLONE_VM",
        ] {
            if code.contains(needle) {
                found.push(format!("{name}: {needle}"));
            }
        }
    }
    assert!(found.is_empty(), "{found:?}");
}

/// `memchr`'s top-level functions ask the processor what it can do at their first call (ten
/// `CPUID` instructions, each a trip to the hypervisor on a virtual machine); the crate's byte
/// searches go through `bytes`, which asks nothing.
#[test]
fn byte_searches_go_through_bytes() {
    let mut found = Vec::new();
    for (name, file) in modules() {
        if name == "bytes" {
            continue;
        }
        let code = without_comments(&std::fs::read_to_string(&file).unwrap());
        if code.contains("memchr::") {
            found.push(name);
        }
    }
    assert!(found.is_empty(), "{found:?}");
}
