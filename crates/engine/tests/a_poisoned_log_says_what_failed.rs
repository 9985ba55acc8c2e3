//! Issue 9 ("errors keep their detail"). A failed log write or sync poisons the database;
//! every later call must still say what failed — "No space left on device" is something
//! an operator can act on, a bare "poisoned" is not — and keep the I/O error's kind.

use sluice::{Database, Error, Options};
use sluice_storage::{raw_os_error, FaultKind, FaultOp, FaultPlan, SimStorage};
use sluice_wal::WalError;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// Opens a database, commits once, then fails the log's `op` with `kind` and returns the
/// error of the commit that meets the fault, that of the operation after it, and the
/// log's own record of its poisoning.
fn poison_the_log(op: FaultOp, kind: FaultKind) -> (Error, Error, WalError) {
    let sim = SimStorage::new(17);
    let db = Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"before", b"1").unwrap();
    tx.commit().unwrap();
    let segment =
        Path::new("/db/log").join(sluice_wal::segment::segment_name(db.log().segments()[0]));
    sim.inject(FaultPlan::new(op, 1, kind).persistent().on(segment));
    let mut tx = db.begin();
    tx.put(&t, b"doomed", b"2").unwrap();
    let at_commit = tx.commit().unwrap_err();
    let mut tx = db.begin();
    let later = tx.put(&t, b"later", b"3").unwrap_err();
    drop(tx);
    let poison = db.log().poisoned().expect("the log is poisoned");
    (at_commit, later, poison)
}

fn expect(op: FaultOp, kind: FaultKind, words: &str) {
    let (at_commit, later, poison) = poison_the_log(op, kind);
    // The log keeps the I/O error itself: its kind and its OS error number.
    let WalError::Poisoned(cause) = &poison else {
        panic!("{op:?}/{kind:?}: the log's poison is {poison:?}");
    };
    assert_eq!(
        cause.kind(),
        kind.to_error().kind(),
        "{op:?}/{kind:?}: {cause}"
    );
    assert_eq!(
        raw_os_error(cause),
        kind.to_error().raw_os_error(),
        "{op:?}/{kind:?}: {cause}"
    );
    assert_eq!(poison.io_kind(), Some(kind.to_error().kind()));
    if kind == FaultKind::Enospc {
        assert_eq!(cause.kind(), io::ErrorKind::StorageFull);
    }
    assert!(at_commit.is_io(), "{op:?}/{kind:?}: {at_commit}");
    assert!(
        at_commit.to_string().contains(words),
        "{op:?}/{kind:?}: the failed commit's error lacks {words:?}: {at_commit}"
    );
    assert!(
        matches!(later, Error::Poisoned(_)),
        "{op:?}/{kind:?}: {later}"
    );
    assert!(
        later.to_string().contains(words),
        "{op:?}/{kind:?}: the poisoned database's error lacks {words:?}: {later}"
    );
}

#[test]
fn enospc_on_a_log_sync_is_named_by_every_later_error() {
    expect(FaultOp::Sync, FaultKind::Enospc, "No space left on device");
}

#[test]
fn eio_on_a_log_sync_is_named_by_every_later_error() {
    expect(FaultOp::Sync, FaultKind::Eio, "Input/output error");
}

#[test]
fn enospc_on_a_log_write_is_named_by_every_later_error() {
    expect(FaultOp::Write, FaultKind::Enospc, "No space left on device");
}

#[test]
fn eio_on_a_log_write_is_named_by_every_later_error() {
    expect(FaultOp::Write, FaultKind::Eio, "Input/output error");
}
