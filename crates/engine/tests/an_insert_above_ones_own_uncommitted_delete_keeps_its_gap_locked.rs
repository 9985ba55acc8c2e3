//! Postmortem: after deleting `b` and inserting `c` above it, another transaction could
//! insert between them and commit, and a scan then skipped `b` while its delete was
//! uncommitted (a dirty read; the rollback brought `b` back). Why: the insert split the
//! gap holding the delete, and the half below `c` carried none of the deleter's gap D.
//!
//! Both where the split gap is named by a key and where it is the table's end, under
//! every commit protocol. One thread: each other transaction either goes through (the
//! defect) or waits out its lock timeout.

use sluice::{CommitProtocol, Database, Error, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;
use std::time::Duration;

/// Keys before; the one the deleter deletes; the one it inserts above it; the other
/// transaction's insert between the two (a scan up to it must not skip the deleted key).
struct Form {
    before: &'static [&'static str],
    deleted: &'static str,
    inserted: &'static str,
    between: &'static str,
}

const FORMS: &[Form] = &[
    // The split gap is named by d.
    Form {
        before: &["a", "b", "d"],
        deleted: "b",
        inserted: "c",
        between: "b5",
    },
    // The deleted key was the last: the split gap is the table's end.
    Form {
        before: &["a", "y"],
        deleted: "y",
        inserted: "z",
        between: "y5",
    },
];

/// Runs one form; the dirty read it let through, if any.
fn run(protocol: CommitProtocol, f: &Form, seed: u64) -> Option<String> {
    let mut o = Options::small();
    o.commit = protocol;
    o.lock_timeout = Duration::from_millis(150);
    let db = Database::open_on(Arc::new(SimStorage::new(seed)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for k in f.before {
        tx.put(&t, k.as_bytes(), b"v").unwrap();
    }
    tx.commit().unwrap();

    let mut deleter = db.begin();
    assert!(deleter.delete(&t, f.deleted.as_bytes()).unwrap().is_some());
    deleter.put(&t, f.inserted.as_bytes(), b"v").unwrap();

    // Another transaction inserts between the deleted key and the inserted one.
    let mut other = db.begin();
    let r = other.put(&t, f.between.as_bytes(), b"v");
    let committed = r.is_ok() && other.commit().is_ok();
    // A scan up to that key must not report the deleted key gone.
    let mut scanner = db.begin();
    let seen: Result<Vec<String>, Error> = scanner
        .scan(&t, "a"..f.between)
        .map(|e| e.map(|(k, _)| String::from_utf8(k).unwrap()))
        .collect();
    drop(scanner);
    deleter.rollback().unwrap();
    let what = format!(
        "{protocol}, delete {} then insert {}",
        f.deleted, f.inserted
    );
    if committed
        || seen
            .as_ref()
            .is_ok_and(|s| !s.iter().any(|k| k == f.deleted))
    {
        return Some(format!(
            "{what}: insert of {} committed: {committed}; scan saw {seen:?} while the delete of {} was uncommitted",
            f.between, f.deleted
        ));
    }
    assert!(
        matches!(r, Err(Error::LockTimeout { .. })),
        "{what}: the insert must wait for the deleter, got {r:?}"
    );
    let mut tx = db.begin();
    assert!(
        tx.get(&t, f.deleted.as_bytes()).unwrap().is_some(),
        "{what}"
    );
    tx.commit().unwrap();
    None
}

#[test]
fn an_insert_between_an_uncommitted_delete_and_its_deleters_insert_waits() {
    let mut seed = 0;
    let mut dirty = Vec::new();
    for protocol in CommitProtocol::ALL {
        for f in FORMS {
            assert!(f.deleted < f.between && f.between < f.inserted);
            seed += 1;
            dirty.extend(run(protocol, f, seed));
        }
    }
    assert!(
        dirty.is_empty(),
        "{} of {} runs read dirty:\n{}",
        dirty.len(),
        CommitProtocol::ALL.len() * FORMS.len(),
        dirty.join("\n")
    );
}
