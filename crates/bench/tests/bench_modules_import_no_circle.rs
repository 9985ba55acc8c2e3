//! The bench crate's modules form layers at every level of folders: imports point down
//! only (`lib.rs`: experiments → compare → workloads → output, metrics, knobs; and inside
//! each folder, e.g. `workloads/`: session → driver, tpcb). Like the engine's
//! `engine_modules_import_no_circle.rs`, this reads every source file outside
//! `#[cfg(test)]` modules and comments, resolves each `crate::…` and `super::…` path to
//! the module it names, and turns it into an edge between the two children of the folder
//! both lie in; it fails naming any circle. Run with `--nocapture` to see the graphs.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The text without comments and without `#[cfg(test)] mod … { … }` blocks.
fn code(text: &str) -> String {
    let mut kept = String::new();
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or("");
        kept.push_str(line);
        kept.push('\n');
    }
    let mut out = String::new();
    let mut rest = kept.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let t = after.trim_start();
        if !t.starts_with("mod ") || !t.split('\n').next().unwrap_or("").contains('{') {
            out.push_str("#[cfg(test)]");
            rest = after;
            continue;
        }
        let open = after.find('{').unwrap();
        let mut depth = 0;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

type Module = Vec<String>;

/// The module a source file is: `lib.rs` the root, `a/mod.rs` and `a.rs` module `a`
/// (`a.rs` beside a folder `a/` holding its children, as `commit_sweep.rs` does),
/// `a/b.rs` module `a::b`.
fn module_of(root: &Path, file: &Path) -> Module {
    let mut m: Module = file
        .strip_prefix(root)
        .unwrap()
        .components()
        .map(|c| c.as_os_str().to_str().unwrap().to_string())
        .collect();
    let last = m.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap();
    if stem != "mod" && !(m.is_empty() && stem == "lib") {
        m.push(stem.to_string());
    }
    m
}

/// The segments of the path starting at `at` in `text` (`a::b::C` → a, b, C).
fn segments(text: &str, at: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = &text[at..];
    loop {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            return out;
        }
        rest = &rest[name.len()..];
        out.push(name);
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => return out,
        }
    }
}

/// Every import of every module, as (from, to): `to` is the longest known module the
/// path names (`crate::workloads::tpcb::TpcbShape` → workloads::tpcb).
fn imports(modules: &BTreeMap<PathBuf, Module>) -> BTreeSet<(Module, Module)> {
    let known: BTreeSet<&Module> = modules.values().collect();
    let mut out = BTreeSet::new();
    for (file, from) in modules {
        let text = code(&fs::read_to_string(file).unwrap());
        for (i, _) in text.match_indices("crate::") {
            let mut to: Module = Vec::new();
            for s in segments(&text, i + "crate::".len()) {
                let mut next = to.clone();
                next.push(s);
                if !known.contains(&next) {
                    break;
                }
                to = next;
            }
            out.insert((from.clone(), to));
        }
        for (i, _) in text.match_indices("super::") {
            // Only the first `super` of a run: `super::super::x` counts once, from its
            // first segment.
            if text[..i].ends_with("::") {
                continue;
            }
            let mut to: Module = from.clone();
            let mut segs = segments(&text, i).into_iter().peekable();
            while segs.peek().is_some_and(|s| s == "super") {
                segs.next();
                to.pop();
            }
            for s in segs {
                let mut next = to.clone();
                next.push(s);
                if !known.contains(&next) {
                    break;
                }
                to = next;
            }
            out.insert((from.clone(), to));
        }
    }
    out
}

/// For every folder (module with children), the edges between its children: an import
/// from `a::x::…` to `a::y::…` (x ≠ y) is the edge x → y in the graph of folder `a`.
fn graphs() -> BTreeMap<Module, BTreeMap<String, BTreeSet<String>>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let modules: BTreeMap<PathBuf, Module> = files
        .iter()
        .map(|f| (f.clone(), module_of(&root, f)))
        .collect();
    let mut graphs: BTreeMap<Module, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (from, to) in imports(&modules) {
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        // An import of an ancestor or a descendant is not between siblings.
        if common == from.len() || common == to.len() {
            continue;
        }
        graphs
            .entry(from[..common].to_vec())
            .or_default()
            .entry(from[common].clone())
            .or_default()
            .insert(to[common].clone());
    }
    graphs
}

/// A circle reachable from `v`, if any (depth-first search with the path on a stack).
fn circle(
    v: &str,
    edges: &BTreeMap<String, BTreeSet<String>>,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|p| p == v) {
        let mut c = path[at..].to_vec();
        c.push(v.to_string());
        return Some(c);
    }
    if done.contains(v) {
        return None;
    }
    path.push(v.to_string());
    for w in edges.get(v).into_iter().flatten() {
        if let Some(c) = circle(w, edges, path, done) {
            return Some(c);
        }
    }
    path.pop();
    done.insert(v.to_string());
    None
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

#[test]
fn the_bench_modules_import_each_other_without_a_circle_in_any_folder() {
    let graphs = graphs();
    for (folder, edges) in &graphs {
        println!("{}:", name(folder));
        for (m, to) in edges {
            println!(
                "  {m} -> {}",
                to.iter().cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    // The check itself must see the layers it guards, at the top and inside folders.
    let top = &graphs[&Vec::new()];
    assert!(top["experiments"].contains("workloads") && top["compare"].contains("workloads"));
    let workloads = &graphs[&vec!["workloads".to_string()]];
    assert!(workloads["session"].contains("driver") && workloads["tpcb"].contains("driver"));
    assert!(graphs.contains_key(&vec!["compare".to_string()]));
    for (folder, edges) in &graphs {
        let mut done = BTreeSet::new();
        for m in edges.keys() {
            if let Some(c) = circle(m, edges, &mut Vec::new(), &mut done) {
                panic!("import circle in {}: {}", name(folder), c.join(" -> "));
            }
        }
    }
}

#[test]
fn the_check_finds_a_circle_and_resolves_paths() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("c".into());
    edges.entry("c".into()).or_default().insert("a".into());
    let c = circle("a", &edges, &mut Vec::new(), &mut BTreeSet::new());
    assert_eq!(c.unwrap(), ["a", "b", "c", "a"]);
    let stripped =
        code("use crate::x; // crate::y\n#[cfg(test)]\nmod tests {\n use crate::z;\n}\n");
    assert!(stripped.contains("crate::x") && !stripped.contains("crate::y"));
    assert!(!stripped.contains("crate::z"));
    let root = Path::new("/src");
    assert_eq!(
        module_of(root, Path::new("/src/lib.rs")),
        Vec::<String>::new()
    );
    assert_eq!(module_of(root, Path::new("/src/a/mod.rs")), ["a"]);
    assert_eq!(module_of(root, Path::new("/src/a/b.rs")), ["a", "b"]);
    assert_eq!(segments("x crate::a::b::C;", 9), ["a", "b", "C"]);
}
