//! A power loss or a process kill at any step of a backup leaves the source database with
//! every acknowledged commit, leaves an earlier complete backup as it was, and leaves the
//! interrupted backup either complete (then it shows exactly the commits below its end)
//! or refused by name by every open and by a restore — never a directory that opens as
//! something else.

use crate::backup_load::*;
use sluice::{CommitProtocol, Database, Error, Options, Restore, RestoreTarget, Strategy};
use sluice_storage::{SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fn read_only() -> Options {
    Options {
        read_only: true,
        ..options(CommitProtocol::default(), Strategy::CheckpointSweep)
    }
}

fn open_ro(storage: &Arc<dyn Storage>, dir: &Path) -> sluice::Result<Database> {
    Database::builder(dir)
        .options(read_only())
        .storage(storage.clone())
        .open()
}

/// An interrupted backup is refused saying what it is: incomplete (the marker is there),
/// or not a backup or database at all (the halt came before the marker was durable).
fn refused_by_name(e: &Error) -> bool {
    let m = e.to_string();
    [
        "incomplete backup",
        "not a sluice database",
        "is not a backup",
        "does not exist",
    ]
    .iter()
    .any(|p| m.contains(p))
}

#[test]
fn at_every_step() {
    let o = options(CommitProtocol::default(), Strategy::CheckpointSweep);
    let (mut complete, mut refused, mut steps) = (0, 0, 0);
    for kill in [false, true] {
        for n in 1.. {
            let sim = SimStorage::new(n);
            let storage: Arc<dyn Storage> = Arc::new(sim.clone());
            let db = Database::open_on(storage.clone(), "/db", o.clone()).unwrap();
            let rec = Recorded::default();
            preload(&db, &rec);
            let first = db.backup_to("/first").unwrap();
            let t = db.table(TABLE).unwrap();
            let mut tx = db.begin();
            tx.put(&t, b"after", b"the first backup").unwrap();
            let mut end = None;
            tx.commit_observed(|e| end = e).unwrap();
            rec.commits.lock().push(Commit {
                end: end.unwrap(),
                writes: vec![(b"after".to_vec(), Some(b"the first backup".to_vec()))],
            });
            if kill {
                sim.kill_at_op(n);
            } else {
                sim.crash_at_op(n);
            }
            let outcome = db.backup_to("/second");
            drop(db);
            if outcome.is_ok() {
                // The backup finished before the n-th operation: every step was tried.
                sim.disarm_crash();
                break;
            }
            steps += 1;
            if kill {
                // What the killed process left in the page cache may still be lost.
                sim.crash();
            }
            // The source database keeps every acknowledged commit.
            let db = Database::open_on(storage.clone(), "/db", o.clone()).unwrap();
            assert_eq!(
                state(&db),
                rec.state_at(end.unwrap()),
                "step {n}: the source lost a commit"
            );
            db.close().unwrap();
            // The first backup is as it was.
            let ro = open_ro(&storage, Path::new("/first")).unwrap();
            assert_eq!(
                state(&ro),
                rec.state_at(first.end_lsn),
                "step {n}: the first backup changed"
            );
            drop(ro);
            // The second is complete, or refused by name.
            match open_ro(&storage, Path::new("/second")) {
                Ok(ro) => {
                    assert_eq!(state(&ro), rec.state_at(end.unwrap()), "step {n}");
                    complete += 1;
                }
                Err(e) if refused_by_name(&e) => {
                    let r = Database::restore(
                        storage.clone(),
                        &Restore {
                            backup: "/second".into(),
                            ancestors: Vec::new(),
                            archive: None,
                            target: RestoreTarget::End,
                            dest: "/restored".into(),
                            replay: Default::default(),
                        },
                        &mut |_| {},
                    );
                    let e = r.expect_err("a restore from an interrupted backup");
                    assert!(refused_by_name(&e), "step {n}: {e}");
                    refused += 1;
                }
                Err(e) => panic!("step {n}: an interrupted backup opened with {e}"),
            }
        }
    }
    println!("{steps} interrupted backups: {complete} complete, {refused} refused");
    assert!(
        steps > 20 && refused > 10,
        "the halts must land inside the backup"
    );
}
