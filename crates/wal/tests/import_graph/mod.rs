//! The import graphs of a crate's sources, one per folder, and the circles in them: the
//! resolver behind `wal_modules_import_no_circle.rs` and the engine's
//! `engine_folders_import_no_circle.rs` (which includes this file by path: a test crate
//! cannot use another crate's tests).
//!
//! It reads every source file, resolves each `crate::`, `super::` and `self::` path
//! outside comments and test-only modules to the module it names (following a folder's
//! re-exports in its `mod.rs`, so `super::BufferCore` names `buffer/buffer_core.rs`), and
//! turns it into an edge between two children of the innermost folder holding both ends:
//! `buffer/atomic.rs` using `crate::error` is `buffer -> error` at the crate root, using
//! `super::queue` is `atomic -> queue` in `buffer/`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module's path from the crate root (`[]` is `lib.rs`, `["buffer"]` is
/// `buffer/mod.rs`, `["buffer", "ring"]` is `buffer/ring.rs`).
pub type ModPath = Vec<String>;
/// Per folder (a module path), its children's imports of each other.
pub type Graphs = BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>>;

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

fn module_path(root: &Path, file: &Path) -> ModPath {
    let mut path: ModPath = file
        .strip_prefix(root)
        .unwrap()
        .components()
        .map(|c| c.as_os_str().to_str().unwrap().to_string())
        .collect();
    let last = path.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap();
    if stem != "mod" && stem != "lib" {
        path.push(stem.to_string());
    }
    path
}

/// The text without comments and without `#[cfg(test)] mod … { … }` blocks.
fn code(text: &str) -> String {
    let mut kept = String::new();
    for line in text.lines() {
        kept.push_str(line.split("//").next().unwrap_or(""));
        kept.push('\n');
    }
    let mut out = String::new();
    let mut rest = kept.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let first_line = after.trim_start().split('\n').next().unwrap_or("");
        if !first_line.starts_with("mod ") || !first_line.contains('{') {
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

/// The children a module declares test-only (`#[cfg(test)] mod name;`): their files are
/// tests, not layers.
fn test_only_children(code_text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in code_text.match_indices("#[cfg(test)]") {
        let after = code_text[at + "#[cfg(test)]".len()..].trim_start();
        let after = after.strip_prefix("pub(crate) ").unwrap_or(after);
        if let Some(decl) = after.strip_prefix("mod ") {
            let name = ident(decl.as_bytes(), &mut 0);
            if decl[name.len()..].trim_start().starts_with(';') {
                out.push(name);
            }
        }
    }
    out
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn ident(b: &[u8], i: &mut usize) -> String {
    let start = *i;
    while *i < b.len() && is_ident_byte(b[*i]) {
        *i += 1;
    }
    String::from_utf8(b[start..*i].to_vec()).unwrap()
}

fn skip_ws(b: &[u8], i: &mut usize) {
    while *i < b.len() && b[*i].is_ascii_whitespace() {
        *i += 1;
    }
}

/// The paths of the use tree (or plain path) at `b[*i..]`, each appended to `prefix`:
/// `a::{b, c::d as e}` gives `[a, b]` and `[a, c, "d as e"]`; a path in an expression
/// (`a::f(x)`, `a::T<U>`) ends where its identifiers do.
fn tree(b: &[u8], i: &mut usize, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    skip_ws(b, i);
    if *i < b.len() && b[*i] == b'{' {
        *i += 1;
        loop {
            skip_ws(b, i);
            if *i >= b.len() || b[*i] == b'}' {
                *i += 1;
                return;
            }
            tree(b, i, &mut prefix.clone(), out);
            // Past an `as name`, to the next item.
            while *i < b.len() && b[*i] != b',' && b[*i] != b'}' {
                *i += 1;
            }
            if *i < b.len() && b[*i] == b',' {
                *i += 1;
            }
        }
    }
    let name = ident(b, i);
    if name.is_empty() {
        out.push(prefix.clone()); // `*`, or nothing after `::`
        return;
    }
    prefix.push(name);
    if b[*i..].starts_with(b"::") {
        *i += 2;
        tree(b, i, prefix, out);
        return;
    }
    let mut j = *i;
    skip_ws(b, &mut j);
    if b[j..].starts_with(b"as") && b.get(j + 2).is_some_and(|c| c.is_ascii_whitespace()) {
        j += 2;
        skip_ws(b, &mut j);
        let alias = ident(b, &mut j);
        *i = j;
        let last = prefix.last_mut().unwrap();
        *last = format!("{last} as {alias}");
    }
    out.push(prefix.clone());
}

/// Every path in `text` that starts at `crate`, `super` or `self`, as written (the
/// keyword first).
fn paths(text: &str) -> Vec<Vec<String>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for key in ["crate::", "super::", "self::"] {
        for (at, _) in text.match_indices(key) {
            if at > 0 && is_ident_byte(b[at - 1]) || at > 1 && &b[at - 2..at] == b"::" {
                continue; // `xcrate::`, or `super::super::` counted from its first
            }
            let mut i = at + key.len();
            tree(
                b,
                &mut i,
                &mut vec![key[..key.len() - 2].to_string()],
                &mut out,
            );
        }
    }
    out
}

/// What the module at `from` names with `path` (written from `crate`, `super` or
/// `self`): the deepest module along it, then, if the next name is an item that module's
/// file re-exports from a child, that child.
fn resolve(
    from: &ModPath,
    path: &[String],
    modules: &BTreeSet<ModPath>,
    reexports: &BTreeMap<ModPath, BTreeMap<String, String>>,
) -> ModPath {
    let mut at = from.clone();
    let mut rest = path.iter().peekable();
    while let Some(s) = rest.peek() {
        match s.as_str() {
            "crate" => at.clear(),
            "super" => {
                at.pop();
            }
            "self" => {}
            _ => break,
        }
        rest.next();
    }
    for s in rest {
        let s = s.split(" as ").next().unwrap().to_string();
        let mut child = at.clone();
        child.push(s.clone());
        if modules.contains(&child) {
            at = child;
        } else {
            if let Some(c) = reexports.get(&at).and_then(|r| r.get(&s)) {
                at.push(c.clone());
            }
            break;
        }
    }
    at
}

/// For a folder's own file, each item name it re-exports from a child (`pub use
/// child::{A, B}`, `pub(crate) use child::C as D`): name → child.
fn reexports_of(
    module: &ModPath,
    code_text: &str,
    modules: &BTreeSet<ModPath>,
) -> BTreeMap<String, String> {
    let b = code_text.as_bytes();
    let mut out = BTreeMap::new();
    for (at, _) in code_text.match_indices("use ") {
        if at > 0 && is_ident_byte(b[at - 1]) {
            continue;
        }
        let mut i = at + 4;
        let mut found = Vec::new();
        tree(b, &mut i, &mut Vec::new(), &mut found);
        for p in found {
            let Some(first) = p.iter().find(|s| *s != "self") else {
                continue;
            };
            let mut child = module.clone();
            child.push(first.clone());
            if p.len() >= 2 && modules.contains(&child) {
                let last = p.last().unwrap();
                let name = last.rsplit(" as ").next().unwrap();
                out.insert(name.to_string(), first.clone());
            }
        }
    }
    out
}

/// The import graphs of the crate whose sources are `files` (module path, text).
pub fn graphs(files: &[(ModPath, String)]) -> Graphs {
    let texts: Vec<(ModPath, String)> = files.iter().map(|(m, t)| (m.clone(), code(t))).collect();
    let modules: BTreeSet<ModPath> = texts.iter().map(|(m, _)| m.clone()).collect();
    let mut test_only = BTreeSet::new();
    let mut reexports = BTreeMap::new();
    for (m, t) in &texts {
        for c in test_only_children(t) {
            let mut p = m.clone();
            p.push(c);
            test_only.insert(p);
        }
        reexports.insert(m.clone(), reexports_of(m, t, &modules));
    }
    let mut out: Graphs = BTreeMap::new();
    for (from, t) in &texts {
        if test_only.iter().any(|p| from.starts_with(p)) {
            continue;
        }
        for p in paths(t) {
            let to = resolve(from, &p, &modules, &reexports);
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue; // a module and its own folder (declarations, re-exports)
            }
            out.entry(from[..common].to_vec())
                .or_default()
                .entry(from[common].clone())
                .or_default()
                .insert(to[common].clone());
        }
    }
    out
}

/// The modules reachable from `v` by one or more imports.
fn reachable(v: &str, edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&str> = vec![v];
    while let Some(u) = todo.pop() {
        for w in edges.get(u).into_iter().flatten() {
            if seen.insert(w.clone()) {
                todo.push(w);
            }
        }
    }
    seen
}

/// Every circle, as the set of modules that reach each other (one line per set), with
/// the folder it is in.
pub fn circles(g: &Graphs) -> Vec<String> {
    let mut found = Vec::new();
    for (folder, edges) in g {
        let reach: BTreeMap<&String, BTreeSet<String>> =
            edges.keys().map(|m| (m, reachable(m, edges))).collect();
        let mut reported = BTreeSet::new();
        for (m, r) in &reach {
            if !r.contains(*m) || reported.contains(*m) {
                continue;
            }
            let set: Vec<&String> = reach
                .iter()
                .filter(|(n, rn)| rn.contains(*m) && r.contains(**n))
                .map(|(n, _)| *n)
                .collect();
            reported.extend(set.iter().map(|n| n.to_string()));
            let names: Vec<&str> = set.iter().map(|n| n.as_str()).collect();
            found.push(format!("in /{}: {}", folder.join("/"), names.join(" <-> ")));
        }
    }
    found
}

/// True if, in `folder`, the child `from` imports the child `to`.
pub fn edge(g: &Graphs, folder: &[&str], from: &str, to: &str) -> bool {
    let folder: ModPath = folder.iter().map(|s| s.to_string()).collect();
    g.get(&folder)
        .and_then(|e| e.get(from))
        .is_some_and(|t| t.contains(to))
}

/// A source file for the check's own tests: its path from the crate root (`""` is
/// `lib.rs`, `"a/x"` is `a/x.rs`) and its text.
pub fn file(path: &str, text: &str) -> (ModPath, String) {
    let m = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    (m, text.to_string())
}

/// Every source file under `root` (a crate's `src`), with its module path.
pub fn crate_files(root: &Path) -> Vec<(ModPath, String)> {
    let mut files = Vec::new();
    sources(root, &mut files);
    files
        .iter()
        .map(|f| (module_path(root, f), fs::read_to_string(f).unwrap()))
        .collect()
}

/// Prints each folder's graph (seen with `--nocapture`).
pub fn print(g: &Graphs) {
    for (folder, edges) in g {
        println!("/{}", folder.join("/"));
        for (m, to) in edges {
            let to: Vec<_> = to.iter().cloned().collect();
            println!("  {m} -> {}", to.join(", "));
        }
    }
}
