//! The engine's modules form layers: imports point down only (ARCHITECTURE.md, "Layers").
//! Before issue 9, `db`, `btree`, `catalog`, `checkpoint`, `checkpointer`, `recovery` and
//! `txn` formed one circle through the shared `Inner`. This reads every source file,
//! maps each `crate::module` path outside `#[cfg(test)]` modules and comments to an edge
//! between top-level modules, and fails naming any circle. Run with `--nocapture` to see
//! the graph.
//!
//! Inside each folder the files form layers too (`checkpoint/`: the triggers over the
//! protocol; `propagation/`: the jobs over the cleaners and the run store): a second check
//! maps each `super::name` and `crate::<folder>::name` path in a folder's file to an edge
//! between that file and its sibling `name`, and fails naming any circle in any folder.
//! (A file in a subfolder naming its parent's siblings, `super::super::name`, is not
//! followed; the WAL's check, `crates/wal/tests/wal_modules_import_no_circle.rs`, is the
//! complete one.)

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

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let module_of = |p: &Path| {
        let first = p.strip_prefix(&root).unwrap().components().next().unwrap();
        let s = first.as_os_str().to_str().unwrap();
        s.strip_suffix(".rs").unwrap_or(s).to_string()
    };
    let modules: BTreeSet<String> = files.iter().map(|p| module_of(p)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let from = module_of(f);
        if from == "lib" {
            continue;
        }
        let text = code(&fs::read_to_string(f).unwrap());
        for (i, _) in text.match_indices("crate::") {
            let to: String = text[i + 7..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if to != from && modules.contains(&to) {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    edges
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

#[test]
fn the_engine_modules_import_each_other_without_a_circle() {
    let edges = graph();
    for (m, to) in &edges {
        println!(
            "{m} -> {}",
            to.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    // The check itself must see the layers it guards.
    assert!(edges["txn"].contains("inner") && edges["btree"].contains("store"));
    let mut done = BTreeSet::new();
    for m in edges.keys() {
        if let Some(c) = circle(m, &edges, &mut Vec::new(), &mut done) {
            panic!("import circle: {}", c.join(" -> "));
        }
    }
}

/// The names a path list starting at `text` names: `a` for `a::…`, `a, b` for
/// `{a, b::c, self}`.
fn first_names(text: &str) -> Vec<String> {
    let ident = |t: &str| -> String {
        t.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = text.strip_prefix('{') else {
        return vec![ident(text)];
    };
    let mut depth = 0;
    let end = group
        .char_indices()
        .find(|&(_, c)| {
            depth += match c {
                '{' => 1,
                '}' => -1,
                _ => 0,
            };
            depth < 0
        })
        .map_or(group.len(), |(i, _)| i);
    let mut out = Vec::new();
    let mut depth = 0;
    let mut item_start = 0;
    for (i, c) in group[..end].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(ident(&group[item_start..i]));
                item_start = i + 1;
            }
            _ => {}
        }
    }
    out.push(ident(&group[item_start..end]));
    out
}

/// For every folder under `src/` (its path from `src`), its files' imports of their
/// siblings (files and subfolders), without the folder's `mod.rs` and its test-only
/// children.
fn folder_graphs() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut out = BTreeMap::new();
    for mod_rs in files.iter().filter(|f| f.ends_with("mod.rs")) {
        let dir = mod_rs.parent().unwrap();
        let folder = dir
            .strip_prefix(&root)
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let mod_text = fs::read_to_string(mod_rs).unwrap();
        let test_only: BTreeSet<String> = mod_text
            .split("#[cfg(test)]")
            .skip(1)
            .filter_map(|after| {
                let decl = after.trim_start().strip_prefix("mod ")?;
                let name = decl.split(';').next()?;
                (!name.contains('{')).then(|| name.trim().to_string())
            })
            .collect();
        let siblings: BTreeSet<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| p.file_stem().unwrap().to_str().unwrap().to_string())
            .filter(|n| n != "mod" && !test_only.contains(n))
            .collect();
        let own_path = format!("crate::{}::", folder.replace('/', "::"));
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for f in files.iter().filter(|f| f.parent() == Some(dir)) {
            let from = f.file_stem().unwrap().to_str().unwrap().to_string();
            if !siblings.contains(&from) {
                continue;
            }
            let text = code(&fs::read_to_string(f).unwrap());
            for key in ["super::", own_path.as_str()] {
                for (i, _) in text.match_indices(key) {
                    for to in first_names(&text[i + key.len()..]) {
                        if to != from && siblings.contains(&to) {
                            edges.entry(from.clone()).or_default().insert(to);
                        }
                    }
                }
            }
        }
        out.insert(folder, edges);
    }
    out
}

#[test]
fn the_files_of_every_engine_folder_import_each_other_without_a_circle() {
    let graphs = folder_graphs();
    for (folder, edges) in &graphs {
        for (m, to) in edges {
            let to: Vec<_> = to.iter().cloned().collect();
            println!("{folder}/: {m} -> {}", to.join(", "));
        }
    }
    // The check itself must see the layers it guards, through a group and a plain path.
    assert!(graphs["checkpoint"]["checkpointer"].contains("fuzzy"));
    assert!(graphs["propagation"]["jobs"].contains("page_cleaner"));
    assert!(graphs["propagation"]["jobs"].contains("runs"));
    assert!(
        graphs.contains_key("propagation/runs"),
        "subfolders are checked too"
    );
    assert!(
        !graphs["propagation"].contains_key("log_tests"),
        "test-only"
    );
    // Known, and left to the page layer's owner: `page/layout.rs` builds nodes and reads
    // the meta page, which read their layout from it.
    let known = ["page"];
    for (folder, edges) in graphs.iter().filter(|(f, _)| !known.contains(&f.as_str())) {
        let mut done = BTreeSet::new();
        for m in edges.keys() {
            if let Some(c) = circle(m, edges, &mut Vec::new(), &mut done) {
                panic!("import circle in {folder}/: {}", c.join(" -> "));
            }
        }
    }
}

#[test]
fn the_check_finds_a_circle() {
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
    assert_eq!(first_names("a::b;"), ["a"]);
    assert_eq!(first_names("{a, b::{c, d}, e as f};"), ["a", "b", "e"]);
}
