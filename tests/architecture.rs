//! The layout's invariants (docs/ARCHITECTURE.md), read from the source itself: which module
//! may import which, no import circle, and the size of `src/`'s top level and of each file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every module of the library and binary, by path (`dispatch::settings`, `crate` for lib.rs,
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

/// The modules each module names through `crate::…` or `super::…` outside its tests, each
/// resolved to the longest module path that exists.
fn imports(modules: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for (name, file) in modules {
        let text = std::fs::read_to_string(file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let mut deps = BTreeSet::new();
        let parent: Vec<&str> = name.split("::").collect();
        let parent = &parent[..parent.len().saturating_sub(1)];
        for (prefix, base) in [("crate::", &[][..]), ("super::", parent)] {
            for (at, _) in code.match_indices(prefix) {
                let preceded_by_word = code[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
                if preceded_by_word {
                    continue;
                }
                let rest = &code[at + prefix.len()..];
                let path_text: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let mut path: Vec<&str> = base.to_vec();
                path.extend(path_text.split("::").filter(|p| !p.is_empty()));
                for len in (1..=path.len()).rev() {
                    let candidate = path[..len].join("::");
                    if modules.contains_key(&candidate) {
                        if &candidate != name {
                            deps.insert(candidate);
                        }
                        break;
                    }
                }
            }
        }
        graph.insert(name.clone(), deps);
    }
    graph
}

fn top(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let graph = imports(&modules());
    // Depth-first search for a back edge; a path found is printed whole.
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
            if let Some(circle) = visit(next, graph, stack, done) {
                return Some(circle);
            }
        }
        stack.pop();
        done.insert(node);
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(circle) = visit(node, &graph, &mut Vec::new(), &mut done) {
            panic!("import circle: {}", circle.join(" -> "));
        }
    }
}

#[test]
fn layers_of_the_code_import_only_downwards() {
    let graph = imports(&modules());
    // What each part may not name: the pipeline and the runner never reach a command or the
    // command line, the runner knows nothing of settings or the pipeline, and only main.rs
    // names cli.rs.
    let forbidden: &[(&str, &[&str])] = &[
        ("dispatch", &["commands", "cli", "serve"]),
        ("trust", &["commands", "cli", "serve"]),
        (
            "runner",
            &["dispatch", "commands", "cli", "serve", "compliance"],
        ),
        ("compliance", &["commands", "cli", "serve", "runner"]),
        (
            "telemetry",
            &["dispatch", "commands", "cli", "serve", "runner", "trust"],
        ),
        ("serve", &["commands", "cli"]),
        ("commands", &["cli"]),
        (
            "environment",
            &["dispatch", "commands", "cli", "serve", "runner"],
        ),
        (
            "signals",
            &["dispatch", "commands", "cli", "serve", "runner"],
        ),
        ("style", &["dispatch", "commands", "cli", "serve", "runner"]),
        ("lock", &["dispatch", "commands", "cli", "serve", "runner"]),
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
