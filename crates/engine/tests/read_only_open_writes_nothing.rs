//! A read-only database changes nothing on disk: through a storage that refuses and
//! records every call that could (opens for writing, writes, length changes, directory
//! creation, renames, removals, exclusive locks), opening a cleanly closed and a crashed
//! database, reading, verifying, being refused writes and a checkpoint, living past the
//! checkpoint triggers and closing make no such call. The only calls beyond reads are
//! syncs and cache drops, which change no byte: the open makes what it reads durable
//! first (and does make them). A missing directory, one that is not a database and an
//! interrupted creation are errors, and nothing is created for them either.

use crate::read_only;

use read_only::*;
use sluice::{Database, Error, Options};
use sluice_storage::{OpenOptions, SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Read-only, with checkpoint triggers that would fire at once if anything honoured them.
fn eager_options() -> Options {
    Options {
        checkpoint_log_bytes: 1,
        checkpoint_interval: Duration::from_millis(1),
        ..read_only_options()
    }
}

fn open(storage: Arc<dyn Storage>, dir: &str) -> sluice::Result<Database> {
    Database::builder(dir)
        .options(eager_options())
        .storage(storage)
        .open()
}

fn use_it(db: &Database, expected: &Contents) {
    assert_eq!(&contents(db), expected);
    db.verify().unwrap();
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    assert!(matches!(tx.put(&t, b"k", b"v"), Err(Error::ReadOnly)));
    drop(tx);
    assert!(matches!(db.checkpoint(), Err(Error::ReadOnly)));
    std::thread::sleep(Duration::from_millis(50)); // a checkpointer would have run
}

#[test]
fn read_only_open_writes_nothing() {
    // Cleanly closed.
    let sim = SimStorage::new(3);
    let expected = closed_cleanly(Arc::new(sim.clone()));
    let guard = NoChanges::new(Arc::new(sim.clone()));
    let db = open(guard.clone(), DIR).unwrap();
    use_it(&db, &expected);
    db.close().unwrap();
    assert_eq!(guard.refused(), Vec::<String>::new());
    assert_settled(&guard);

    // Crashed with a loser: recovery runs, in memory only. Dropped rather than closed.
    let sim = SimStorage::new(4);
    let expected = crashed_with_a_loser(&sim);
    let guard = NoChanges::new(Arc::new(sim.clone()));
    let db = open(guard.clone(), DIR).unwrap();
    assert_eq!(db.recovery_report().losers, 1);
    use_it(&db, &expected);
    drop(db);
    assert_eq!(guard.refused(), Vec::<String>::new());
    assert_settled(&guard);
}

/// The open synced, through read-only handles, the database directory, the control
/// file, the data file and the log's segments, and dropped their caches.
fn assert_settled(guard: &NoChanges) {
    let settled = guard.settled();
    for expected in [
        format!("sync_dir {DIR}"),
        format!("sync {DIR}/CONTROL"),
        format!("sync {DIR}/data"),
        format!("drop_cache {DIR}/data"),
        format!("sync_dir {DIR}/log"),
    ] {
        assert!(settled.contains(&expected), "{expected} in {settled:?}");
    }
    assert!(
        settled
            .iter()
            .any(|s| s.starts_with(&format!("sync {DIR}/log/")) && s.ends_with(".wal")),
        "a segment synced: {settled:?}"
    );
}

#[test]
fn what_is_not_a_database_is_refused_and_nothing_is_created() {
    let sim = SimStorage::new(5);
    let guard = NoChanges::new(Arc::new(sim.clone()));
    let message = |r: sluice::Result<Database>| r.expect_err("refused").to_string();

    let m = message(open(guard.clone(), "/missing"));
    assert!(
        m.contains("/missing") && m.contains("does not exist"),
        "{m}"
    );
    assert!(!sim.exists(Path::new("/missing")).unwrap());

    sim.create_dir_all(Path::new("/empty")).unwrap();
    let m = message(open(guard.clone(), "/empty"));
    assert!(
        m.contains("not a sluice database") && m.contains("CONTROL"),
        "{m}"
    );
    assert_eq!(sim.list(Path::new("/empty")).unwrap(), Vec::<String>::new());

    sim.create_dir_all(Path::new("/other")).unwrap();
    sim.open(Path::new("/other/notes.txt"), OpenOptions::CREATE)
        .unwrap();
    let m = message(open(guard.clone(), "/other"));
    assert!(
        m.contains("not a sluice database") && m.contains("notes.txt"),
        "{m}"
    );

    assert_eq!(guard.refused(), Vec::<String>::new());
}

/// A creation killed at each of its operations in turn: read-only, the directory is
/// either not a database yet, a database whose creation was interrupted before its first
/// checkpoint (refused: only a read-write open can finish it), or a complete, empty one.
#[test]
fn an_interrupted_creation_is_refused_or_opened_never_written() {
    let mut interrupted = 0;
    for n in 1..400 {
        let sim = SimStorage::new(n);
        sim.kill_at_op(n);
        if Database::open_on(Arc::new(sim.clone()), "/new", options()).is_ok() {
            break; // the creation finished before operation n
        }
        let guard = NoChanges::new(Arc::new(sim.clone()));
        match open(guard.clone(), "/new") {
            Ok(db) => {
                assert_eq!(db.table_names().unwrap(), Vec::<String>::new());
            }
            Err(e) => {
                let m = e.to_string();
                if m.contains("interrupted") {
                    assert!(m.contains("read-write"), "{m}");
                    interrupted += 1;
                } else {
                    assert!(
                        m.contains("does not exist") || m.contains("not a sluice database"),
                        "op {n}: {m}"
                    );
                }
            }
        }
        assert_eq!(guard.refused(), Vec::<String>::new(), "op {n}");
    }
    assert!(interrupted > 0, "no kill left CONTROL without a checkpoint");
}
