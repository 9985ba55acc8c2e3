//! Until issue 23 log-based propagation kept its sorted runs in `archive/` of the
//! database directory; they are in `runs/` now (the WAL's segment archiver keeps the word
//! "archive"). A database made before still opens: a read-write open moves `archive/` to
//! `runs/` (a rename, then a sync of the database directory) and keeps every commit and
//! every run; a read-only open reads it as it is and changes nothing. A power loss or a
//! kill at any operation of the read-write open leaves the runs under exactly one of the
//! two names, and the next open finishes the move. Both names at once are refused.
//!
//! The old layout is made by hand: a database made now, closed, its `runs/` renamed back
//! to `archive/` through the storage, durably.

mod read_only;

use sluice::{Database, Error, Options, Strategy};
use sluice_storage::{SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

const KEYS: usize = 120;

/// Log-based propagation that keeps its runs (so the old directory holds some to move),
/// no background checkpoints.
fn options() -> Options {
    let mut o = read_only::options();
    o.propagation = Strategy::Log;
    o.keep_runs = true;
    o
}

fn key(i: usize) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// The names in `dir` (none if it does not exist).
fn names(sim: &SimStorage, dir: &str) -> Vec<String> {
    let dir = Path::new(dir);
    if sim.exists(dir).unwrap() {
        sim.list(dir).unwrap()
    } else {
        Vec::new()
    }
}

/// The runs (complete ones, by name) in `dir`.
fn runs_in(sim: &SimStorage, dir: &str) -> Vec<String> {
    names(sim, dir)
        .into_iter()
        .filter(|n| n.starts_with("run-") && !n.contains('.'))
        .collect()
}

/// Which of the two names the database directory holds.
fn run_dirs(sim: &SimStorage) -> Vec<String> {
    names(sim, "/db")
        .into_iter()
        .filter(|n| n == "runs" || n == "archive")
        .collect()
}

/// A database whose sorted runs are in `archive/`, as one made before issue 23, and the
/// names of its runs.
fn old_layout(seed: u64) -> (SimStorage, Vec<String>) {
    let sim = SimStorage::new(seed);
    let db = Database::open(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    for i in 0..KEYS {
        let mut tx = db.begin();
        tx.put(&t, &key(i), &[i as u8; 40]).unwrap();
        tx.commit().unwrap();
        if i == KEYS / 2 {
            db.checkpoint().unwrap();
        }
    }
    db.close().unwrap();
    let runs = runs_in(&sim, "/db/runs");
    assert!(!runs.is_empty(), "the checkpoints sorted the log into runs");
    sim.rename(Path::new("/db/runs"), Path::new("/db/archive"))
        .unwrap();
    sim.sync_dir(Path::new("/db")).unwrap();
    assert_eq!(run_dirs(&sim), ["archive"]);
    (sim, runs)
}

/// Every key is there with its value, and the pages verify.
fn check(db: &Database, context: &str) {
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..KEYS {
        let v = tx.get(&t, &key(i)).unwrap();
        assert_eq!(v.as_deref(), Some(&[i as u8; 40][..]), "{context}: key {i}");
    }
    tx.commit().unwrap();
    db.verify().unwrap();
}

/// After a read-write open: only `runs/`, holding every run the old directory held.
fn assert_moved(sim: &SimStorage, old_runs: &[String], context: &str) {
    assert_eq!(run_dirs(sim), ["runs"], "{context}");
    let runs = runs_in(sim, "/db/runs");
    for r in old_runs {
        assert!(runs.contains(r), "{context}: run {r} lost: {runs:?}");
    }
}

#[test]
fn a_read_write_open_moves_the_runs_and_keeps_every_commit() {
    let (sim, old_runs) = old_layout(1);
    let db = Database::open(Arc::new(sim.pinned()), "/db", options()).unwrap();
    assert_moved(&sim, &old_runs, "open");
    check(&db, "open");
    let bl = db.backlog();
    let end = old_runs.iter().max().unwrap();
    let end = u64::from_str_radix(&end[end.len() - 16..], 16).unwrap();
    assert!(
        bl.sorted_lsn >= end,
        "the store found the moved runs: {bl:?}"
    );
    // The move is durable: a power loss now keeps it.
    sim.crash();
    drop(db);
    assert_moved(&sim, &old_runs, "after a power loss");
    let db = Database::open(Arc::new(sim.pinned()), "/db", options()).unwrap();
    check(&db, "reopen");
    db.close().unwrap();
    assert_moved(&sim, &old_runs, "closed");
}

#[test]
fn a_read_only_open_reads_the_old_layout_and_changes_nothing() {
    let (sim, old_runs) = old_layout(2);
    let before = sim.stats();
    let o = Options {
        read_only: true,
        ..options()
    };
    let db = Database::open(Arc::new(sim.pinned()), "/db", o).unwrap();
    check(&db, "read-only");
    db.close().unwrap();
    read_only::assert_only_syncs(&sim, before, "read-only open of the old layout");
    assert_eq!(run_dirs(&sim), ["archive"]);
    assert_eq!(runs_in(&sim, "/db/archive"), old_runs);
}

/// A power loss (or a kill) at each operation of a read-write open of the old layout,
/// the rename and the directory sync after it included: the runs are under one name,
/// never both or neither, and the next open moves them if need be and loses nothing.
#[test]
fn a_halt_at_every_operation_of_the_move_leaves_one_name_and_every_commit() {
    for kill in [false, true] {
        let mut outcomes = [0usize; 2]; // halts that left "archive", "runs"
        for n in 1.. {
            assert!(n < 5_000, "the open never ended");
            let (sim, old_runs) = old_layout(100 + n);
            if kill {
                sim.kill_at_op(n);
            } else {
                sim.crash_at_op(n);
            }
            let opened = Database::open(Arc::new(sim.pinned()), "/db", options());
            let halted = sim.crashed_count() + sim.killed_count() > 0;
            if !halted {
                // Past the open's last operation: the sweep is over.
                sim.disarm_crash();
                let db = opened.unwrap();
                check(&db, "no halt");
                db.close().unwrap();
                assert_moved(&sim, &old_runs, "no halt");
                break;
            }
            drop(opened);
            let context = format!("{} at op {n}", if kill { "kill" } else { "power loss" });
            match run_dirs(&sim).as_slice() {
                [one] => outcomes[usize::from(one == "runs")] += 1,
                other => panic!("{context}: {other:?}"),
            }
            let db = Database::open(Arc::new(sim.pinned()), "/db", options())
                .unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
            assert_moved(&sim, &old_runs, &context);
            check(&db, &context);
            db.close().unwrap();
        }
        // Halts before the rename and after it, each kind.
        assert!(
            outcomes[0] > 0 && outcomes[1] > 0,
            "kill {kill}: {outcomes:?}"
        );
    }
}

/// Both names at once come from no crash (see `propagation/runs/legacy.rs`), only from
/// outside hands; which runs are the database's is then unknown, and the read-write open
/// says so rather than guess.
#[test]
fn both_names_at_once_are_refused_naming_both() {
    let (sim, old_runs) = old_layout(3);
    sim.create_dir_all(Path::new("/db/runs")).unwrap();
    let e = Database::open(Arc::new(sim.pinned()), "/db", options()).unwrap_err();
    let Error::Corruption(m) = &e else {
        panic!("{e}");
    };
    assert!(
        m.contains("/db") && m.contains("`runs`") && m.contains("`archive`"),
        "{m}"
    );
    assert_eq!(runs_in(&sim, "/db/archive"), old_runs, "nothing moved");
}
