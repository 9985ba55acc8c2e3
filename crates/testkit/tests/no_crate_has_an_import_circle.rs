//! Every crate's modules form layers, inside every folder too: imports point one way only
//! (ARCHITECTURE.md, "Layers"). Before issue 9, the engine's `db`, `btree`, `catalog`,
//! `checkpoint`, `checkpointer`, `recovery` and `txn` formed one circle through the shared
//! `Inner`; before issue 23, the WAL's `log`, `flush`, `prepare` and `archive` formed one
//! through the log's shared state, its `dirs` and `segment` imported each other, and the
//! engine's `page/layout` dispatched to `meta` and `node`, which read their fields from
//! it; the engine's `buffer_pool/` `page_ref`, `pool` and `write_protocol` reached each
//! other through the whole pool (now through `pool_core`, below all three), and
//! `propagation/runs/` `format` read through `fuzz`'s in-memory file (now `mem_file`,
//! below both). Each crate had its own check then, or none; the rule now lives in
//! `sluice_testkit::layers` and this runs it over every member of the workspace. Run with
//! `--nocapture` to see the graphs.

use std::path::Path;

use sluice_testkit::layers::{workspace_sources, Layers};

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
}

fn crate_layers(name: &str) -> Layers {
    Layers::of_crate(&workspace().join("crates").join(name).join("src"))
}

#[test]
fn no_crate_of_the_workspace_has_an_import_circle_in_any_folder() {
    let crates = workspace_sources(workspace());
    // The check must see every crate; a new member is found through the manifest.
    for name in [
        "storage", "wal", "plan", "engine", "testkit", "bench", "cli",
    ] {
        let src = workspace().join("crates").join(name).join("src");
        assert!(crates.contains(&src), "{name} is not read: {crates:?}");
    }
    let mut found = Vec::new();
    for src in &crates {
        let name = src.strip_prefix(workspace()).unwrap().display().to_string();
        let layers = Layers::of_crate(src);
        println!("== {name}\n{layers}");
        found.extend(layers.circles().iter().map(|c| format!("{name}: {c}")));
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

/// The check itself must see the engine's layers it guards: the crate root, a folder's
/// files through a group and a plain path, and a test-only file left out.
#[test]
fn the_check_sees_the_engine_layers() {
    let g = crate_layers("engine");
    assert!(g.imports("", "txn", "inner") && g.imports("", "btree", "store"));
    assert!(g.imports("checkpoint", "checkpointer", "fuzzy"));
    assert!(g.imports("propagation", "jobs", "page_cleaner"));
    assert!(g.imports("propagation", "jobs", "runs"));
    assert!(!g.has_importer("propagation", "log_tests"), "test-only");
    assert!(g.imports("page", "validate", "node"));
    assert!(g.imports("buffer_pool", "page_ref", "pool_core"));
    assert!(g.imports("buffer_pool", "write_protocol", "pool_core"));
    assert!(g.imports("propagation/runs", "format", "mem_file"));
}

/// The same for the WAL: the crate root, a folder's own imports, and a folder's imports
/// through its re-exports.
#[test]
fn the_check_sees_the_wal_layers() {
    let g = crate_layers("wal");
    assert!(g.imports("", "log", "flush") && g.imports("", "buffer", "error"));
    assert!(g.imports("buffer", "consolidated", "carray"));
    assert!(
        g.imports("buffer", "atomic", "buffer_core"),
        "via super::BufferCore"
    );
}

/// The same for the bench: the crate root and inside folders.
#[test]
fn the_check_sees_the_bench_layers() {
    let g = crate_layers("bench");
    assert!(g.imports("", "experiments", "workloads") && g.imports("", "compare", "workloads"));
    assert!(
        g.imports("workloads", "session", "driver") && g.imports("workloads", "tpcb", "driver")
    );
    assert!(g.has_importer("compare", "run"));
}

#[test]
fn the_check_resolves_paths_and_finds_planted_circles_in_folders() {
    let g = Layers::of_sources(&[
        ("", "mod a; mod b; #[cfg(test)]\nmod t;"),
        (
            "a",
            "mod x; mod y; pub(crate) use x::{Thing, Other as Renamed};",
        ),
        ("a/x", "use super::y::Y; // crate::b\n"),
        (
            "a/y",
            "use super::{Thing, super::b::B}; fn f() { crate::a::Renamed::new() }",
        ),
        (
            "b",
            "use crate::a::x;\n#[cfg(test)]\nmod tests {\n use crate::t;\n}",
        ),
        ("t", "use crate::b;"),
    ]);
    assert!(g.imports("a", "y", "x") && g.imports("a", "x", "y"));
    assert!(g.imports("", "a", "b") && g.imports("", "b", "a"));
    assert!(!g.imports("", "t", "b"), "a test-only module is no layer");
    assert!(
        !g.imports("", "b", "t"),
        "a test module's imports do not count"
    );
    let found = g.circles();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("in /: a <-> b\n"), "{}", found[0]);
    assert!(found[1].starts_with("in a/: x <-> y\n"), "{}", found[1]);
    // Each circle names the import behind each of its edges.
    assert!(
        found[1].contains("x -> y  (a/x: super::y::Y)"),
        "{}",
        found[1]
    );
    assert!(
        found[1].contains("y -> x  (a/y: crate::a::Renamed::new)"),
        "{}",
        found[1]
    );
}

#[test]
fn the_check_names_a_longer_circle_and_skips_comments_and_test_code() {
    let g = Layers::of_sources(&[
        (
            "",
            "mod a; mod b; mod c; mod d; mod e; pub use e::deep::Item;",
        ),
        ("a", "use crate::b::B; // crate::d\n/// crate::d\n"),
        ("b", "use super::{c::{C, D}, e as f};"),
        (
            "c",
            "fn g() { crate::a::h() }\n#[cfg(test)]\nimpl C {\n fn t() { crate::d::x() }\n}",
        ),
        ("d", "use crate::Item;"),
        ("e", "pub mod deep;"),
        ("e/deep", "pub struct Item;"),
    ]);
    assert!(g.imports("", "b", "c") && g.imports("", "b", "e"));
    assert!(!g.imports("", "a", "d"), "in comments");
    assert!(!g.imports("", "c", "d"), "in test-only code");
    assert!(g.imports("", "d", "e"), "through the root's re-export");
    let found = g.circles();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0],
        "in /: a <-> b <-> c\n    a -> b  (a: crate::b::B)\n    \
         b -> c  (b: super::c::C)\n    c -> a  (c: crate::a::h)"
    );
}
