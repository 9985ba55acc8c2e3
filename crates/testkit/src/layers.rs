//! The one home of the layer rule: inside a crate, in every folder (the crate root
//! included), the modules import each other one way only, never in a circle
//! (ARCHITECTURE.md, "Layers"). The test `no_crate_has_an_import_circle` runs this over
//! every crate of the workspace.
//!
//! [`Layers::of_crate`] reads every source file under a crate's `src/`, resolves each
//! `crate::`, `super::` and `self::` path outside comments and test-only code to the
//! module it names (following a folder's re-exports, so `super::BufferCore` in
//! `buffer/atomic.rs` names `buffer/buffer_core.rs`), and turns it into an edge between
//! two children of the innermost folder holding both ends: `buffer/atomic.rs` using
//! `crate::error` is `buffer -> error` at the crate root, using `super::queue` is
//! `atomic -> queue` in `buffer/`. [`Layers::circles`] names every circle, with the import
//! behind each of its edges.
//!
//! It reads text, not the compiler's view: a path in a string, a glob import
//! (`use super::*`) or a name bound by `use … as` and used later is not followed, and
//! `src/bin/` targets are read as a folder of the crate. Test-only code is skipped: a
//! `#[cfg(test)] mod name;` child's files, and `#[cfg(test)]` `mod`, `impl` and `fn`
//! blocks whose `{` is on their first line.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

/// A module's path from the crate root (`[]` is `lib.rs` or `main.rs`, `["buffer"]` is
/// `buffer/mod.rs` or `buffer.rs`, `["buffer", "ring"]` is `buffer/ring.rs`).
type ModPath = Vec<String>;
/// The children of one folder: each child's imports of its siblings, each with the first
/// import that made it (`"buffer/atomic: super::BufferCore"`).
type Edges = BTreeMap<String, BTreeMap<String, String>>;

/// The import graphs of one crate, one per folder.
pub struct Layers {
    folders: BTreeMap<ModPath, Edges>,
}

impl Layers {
    /// The graphs of the crate whose sources lie under `src` (its `lib.rs` or `main.rs`
    /// and every `.rs` file below).
    ///
    /// # Panics
    /// If a file under `src` cannot be read.
    pub fn of_crate(src: &Path) -> Layers {
        let mut files = Vec::new();
        sources(src, &mut files);
        let files: Vec<(ModPath, String)> = files
            .iter()
            .map(|f| (module_path(src, f), fs::read_to_string(f).unwrap()))
            .collect();
        Layers::of_modules(&files)
    }

    /// The graphs of a crate given as (module path, source text) pairs, the path written
    /// with `/` (`""` for the crate root, `"buffer"`, `"buffer/ring"`).
    pub fn of_sources(files: &[(&str, &str)]) -> Layers {
        let files: Vec<(ModPath, String)> = files
            .iter()
            .map(|(p, t)| (split(p), t.to_string()))
            .collect();
        Layers::of_modules(&files)
    }

    fn of_modules(files: &[(ModPath, String)]) -> Layers {
        let texts: Vec<(ModPath, String)> =
            files.iter().map(|(m, t)| (m.clone(), code(t))).collect();
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
        let mut folders: BTreeMap<ModPath, Edges> = BTreeMap::new();
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
                let file = if from.is_empty() {
                    "lib".to_string()
                } else {
                    from.join("/")
                };
                folders
                    .entry(from[..common].to_vec())
                    .or_default()
                    .entry(from[common].clone())
                    .or_default()
                    .entry(to[common].clone())
                    .or_insert_with(|| format!("{file}: {}", p.join("::")));
            }
        }
        Layers { folders }
    }

    /// Whether in `folder` (`""` for the crate root, `"buffer"`, `"a/b"`) the child
    /// `from` imports its sibling `to`.
    pub fn imports(&self, folder: &str, from: &str, to: &str) -> bool {
        self.folders
            .get(&split(folder))
            .and_then(|e| e.get(from))
            .is_some_and(|t| t.contains_key(to))
    }

    /// Whether `folder` holds a child that imports a sibling.
    pub fn has_importer(&self, folder: &str, child: &str) -> bool {
        self.folders
            .get(&split(folder))
            .is_some_and(|e| e.contains_key(child))
    }

    /// Every circle, one per set of children that reach each other: the folder, the set,
    /// and each edge inside the set with the first import behind it.
    pub fn circles(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (folder, edges) in &self.folders {
            let reach: BTreeMap<&String, BTreeSet<&String>> =
                edges.keys().map(|m| (m, reachable(m, edges))).collect();
            let mut reported = BTreeSet::new();
            for (m, r) in &reach {
                if !r.contains(m) || reported.contains(m) {
                    continue;
                }
                let set: BTreeSet<&String> = reach
                    .iter()
                    .filter(|(n, rn)| rn.contains(m) && r.contains(*n))
                    .map(|(n, _)| *n)
                    .collect();
                reported.extend(set.iter().copied());
                let names: Vec<&str> = set.iter().map(|n| n.as_str()).collect();
                let mut text = format!("in {}/: {}", folder.join("/"), names.join(" <-> "));
                for a in &set {
                    for (b, import) in &edges[*a] {
                        if set.contains(b) {
                            text.push_str(&format!("\n    {a} -> {b}  ({import})"));
                        }
                    }
                }
                found.push(text);
            }
        }
        found
    }
}

/// Every folder's edges, one line per importing child.
impl fmt::Display for Layers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (folder, edges) in &self.folders {
            writeln!(f, "{}/", folder.join("/"))?;
            for (m, to) in edges {
                let to: Vec<&str> = to.keys().map(|s| s.as_str()).collect();
                writeln!(f, "  {m} -> {}", to.join(", "))?;
            }
        }
        Ok(())
    }
}

/// The `src` folders of the workspace whose root is `root`, one per entry of its
/// `Cargo.toml`'s `members` (an entry ending in `/*` stands for every folder under it
/// that has a `Cargo.toml`).
///
/// # Panics
/// If the manifest cannot be read or has no `members` list.
pub fn workspace_sources(root: &Path) -> Vec<PathBuf> {
    let manifest = fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let at = manifest
        .find("members")
        .expect("a [workspace] members list");
    let list = &manifest[at..];
    let list = &list[list.find('[').unwrap() + 1..list.find(']').unwrap()];
    let mut out = Vec::new();
    for member in list.split(',').map(|m| m.trim().trim_matches('"')) {
        if member.is_empty() {
            continue;
        }
        if let Some(parent) = member.strip_suffix("/*") {
            let mut dirs: Vec<PathBuf> = fs::read_dir(root.join(parent))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.join("Cargo.toml").exists())
                .collect();
            dirs.sort();
            out.extend(dirs.into_iter().map(|d| d.join("src")));
        } else {
            out.push(root.join(member).join("src"));
        }
    }
    out
}

fn split(path: &str) -> ModPath {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

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
    let crate_root = path.is_empty() && (stem == "lib" || stem == "main");
    if stem != "mod" && !crate_root {
        path.push(stem.to_string());
    }
    path
}

/// The text without comments and without test-only blocks (`#[cfg(test)]` before a
/// `mod`, `impl` or `fn` whose first line opens its body).
fn code(text: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut kept = String::new();
    for line in text.lines() {
        kept.push_str(line.split("//").next().unwrap_or(""));
        kept.push('\n');
    }
    let mut out = String::new();
    let mut rest = kept.as_str();
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let after = &rest[at + MARK.len()..];
        let first_line = after.trim_start().split('\n').next().unwrap_or("");
        let item = without_visibility(first_line);
        let block = ["mod ", "impl ", "impl<", "fn "]
            .iter()
            .any(|k| item.starts_with(k));
        if !block || !first_line.contains('{') {
            out.push_str(MARK);
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

/// `item` without a leading `pub`, `pub(crate)`, `pub(super)` or `pub(in …)`.
fn without_visibility(item: &str) -> &str {
    let Some(rest) = item.strip_prefix("pub") else {
        return item;
    };
    let rest = match rest.strip_prefix('(') {
        Some(r) => r.split_once(')').map_or(r, |(_, r)| r),
        None => rest,
    };
    rest.trim_start()
}

/// The children a module declares test-only (`#[cfg(test)] mod name;`): their files are
/// tests, not layers.
fn test_only_children(code_text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in code_text.match_indices("#[cfg(test)]") {
        let after = without_visibility(code_text[at + "#[cfg(test)]".len()..].trim_start());
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

/// For each module, each item name its file re-exports from a module below it: name →
/// (that module's path from the re-exporting one, the item's name there).
type Reexports = BTreeMap<ModPath, BTreeMap<String, (ModPath, String)>>;

/// What the module at `from` names with `path` (written from `crate`, `super` or
/// `self`): the deepest module along it, then, while the next name is an item that
/// module's file re-exports from a child, that child.
fn resolve(
    from: &ModPath,
    path: &[String],
    modules: &BTreeSet<ModPath>,
    reexports: &Reexports,
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
        let mut s = s.split(" as ").next().unwrap().to_string();
        let mut child = at.clone();
        child.push(s.clone());
        if modules.contains(&child) {
            at = child;
            continue;
        }
        while let Some((below, name)) = reexports.get(&at).and_then(|r| r.get(&s)) {
            at.extend(below.iter().cloned());
            s = name.clone();
        }
        break;
    }
    at
}

/// For a module's own file, each item name it re-exports from a module below it (`pub
/// use child::{A, B}`, `pub(crate) use child::sub::C as D`): name → (the module's path
/// from this one, the name there).
fn reexports_of(
    module: &ModPath,
    code_text: &str,
    modules: &BTreeSet<ModPath>,
) -> BTreeMap<String, (ModPath, String)> {
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
            let Some((last, p)) = p.split_last() else {
                continue;
            };
            let mut below = ModPath::new();
            for s in p.iter().filter(|s| *s != "self") {
                let mut child = module.clone();
                child.extend(below.iter().cloned());
                child.push(s.clone());
                if !modules.contains(&child) {
                    break;
                }
                below.push(s.clone());
            }
            if !below.is_empty() {
                let original = last.split(" as ").next().unwrap();
                let name = last.rsplit(" as ").next().unwrap();
                out.insert(name.to_string(), (below, original.to_string()));
            }
        }
    }
    out
}

/// The children reachable from `v` by one or more imports.
fn reachable<'a>(v: &'a String, edges: &'a Edges) -> BTreeSet<&'a String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![v];
    while let Some(u) = todo.pop() {
        for w in edges.get(u).into_iter().flat_map(|t| t.keys()) {
            if seen.insert(w) {
                todo.push(w);
            }
        }
    }
    seen
}
