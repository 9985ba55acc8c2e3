//! The WAL's modules form layers, inside every folder too: imports point one way only.
//! Before issue 23, `log`, `flush`, `prepare` and `archive` formed a circle through the
//! log's shared state (the preparer and the archiver took all of it), and `dirs` and
//! `segment` imported each other.
//!
//! This reads every source file, resolves each `crate::`, `super::` and `self::` path
//! outside comments and test-only modules to the module it names (following a folder's
//! re-exports in its `mod.rs`, so `super::BufferCore` names `buffer/buffer_core.rs`), and
//! turns it into an edge between two children of the innermost folder holding both ends:
//! `buffer/atomic.rs` using `crate::error` is `buffer -> error` at the crate root, using
//! `super::queue` is `atomic -> queue` in `buffer/` (the resolver is `import_graph/`,
//! which the engine's folder check shares). It fails naming any circle in any folder. Run
//! with `--nocapture` to see the graphs.

mod import_graph;

use import_graph::{circles, crate_files, edge, file, graphs, print};
use std::path::Path;

#[test]
fn the_wal_modules_import_each_other_without_a_circle_in_any_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graphs(&crate_files(&root));
    print(&g);
    // The check itself must see the layers it guards: the crate root, a folder's own
    // imports, and a folder's imports through its re-exports.
    assert!(edge(&g, &[], "log", "flush") && edge(&g, &[], "buffer", "error"));
    assert!(edge(&g, &["buffer"], "consolidated", "carray"));
    assert!(
        edge(&g, &["buffer"], "atomic", "buffer_core"),
        "via super::BufferCore"
    );
    let found = circles(&g);
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_check_resolves_paths_and_finds_circles_in_folders() {
    let g = graphs(&[
        file("", "mod a; mod b; #[cfg(test)]\nmod t;"),
        file(
            "a",
            "mod x; mod y; pub(crate) use x::{Thing, Other as Renamed};",
        ),
        file("a/x", "use super::y::Y; // crate::b\n"),
        file(
            "a/y",
            "use super::{Thing, super::b::B}; fn f() { crate::a::Renamed::new() }",
        ),
        file(
            "b",
            "use crate::a::x;\n#[cfg(test)]\nmod tests {\n use crate::t;\n}",
        ),
        file("t", "use crate::b;"),
    ]);
    assert!(edge(&g, &["a"], "y", "x") && edge(&g, &["a"], "x", "y"));
    assert!(edge(&g, &[], "a", "b") && edge(&g, &[], "b", "a"));
    assert!(!edge(&g, &[], "t", "b"), "a test-only module is no layer");
    assert!(
        !edge(&g, &[], "b", "t"),
        "a test module's imports do not count"
    );
    let found = circles(&g);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found, ["in /: a <-> b", "in /a: x <-> y"]);
}
