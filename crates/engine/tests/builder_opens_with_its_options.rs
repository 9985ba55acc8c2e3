//! `Database::builder`: options set one by one, the log on another directory, the real
//! file system without naming a storage; `options()` reports what is in force after a
//! reopen that asked for something else; a bad option is a one-line error.

use sluice::{CommitProtocol, Database, Error};
use std::time::Duration;

#[test]
fn options_apply_and_the_log_lives_where_it_was_put() {
    let data = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log_dir = logs.path().join("wal");
    let db = Database::builder(data.path())
        .page_size(4096)
        .pool_pages(100)
        .commit(CommitProtocol::Classic)
        .lock_timeout(Duration::from_millis(300))
        .log_dir(&log_dir)
        .log_segment_bytes(1 << 20)
        .log_buffer_bytes(256 << 10)
        .checkpoint_interval(Duration::ZERO)
        .open()
        .unwrap();
    let o = db.options().clone();
    assert_eq!(
        (o.page_size, o.pool_pages, o.commit, o.lock_timeout),
        (
            4096,
            100,
            CommitProtocol::Classic,
            Duration::from_millis(300)
        )
    );
    assert_eq!(
        (o.log.segment_bytes, o.log.buffer_bytes),
        (1 << 20, 256 << 10)
    );
    let t = db.create_table("t").unwrap();
    db.transaction(|tx| tx.put(&t, b"k", b"v").map(drop))
        .unwrap();
    drop(t);
    db.close().unwrap();
    assert!(
        std::fs::read_dir(&log_dir).unwrap().count() > 0,
        "the log is in the directory it was given"
    );
    assert!(
        !data.path().join("log").exists(),
        "and not inside the database directory"
    );

    // Reopened asking for other sizes: the database keeps its own, and says so.
    let db = Database::builder(data.path())
        .page_size(16384)
        .log_segment_bytes(4 << 20)
        .log_dir(&log_dir)
        .open()
        .unwrap();
    assert_eq!(db.options().page_size, 4096);
    assert_eq!(db.options().log.segment_bytes, 1 << 20);
    assert_eq!(db.page_size(), 4096);
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    assert_eq!(tx.get(&t, b"k").unwrap(), Some(b"v".to_vec()));
    tx.commit().unwrap();
}

#[test]
fn a_bad_option_is_refused_with_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    for (builder, what) in [
        (
            Database::builder(dir.path()).page_size(3000),
            "page size 3000",
        ),
        (
            Database::builder(dir.path()).pool_pages(3),
            "pool of 3 pages",
        ),
    ] {
        match builder.open() {
            Err(Error::InvalidArgument(m)) => {
                assert!(m.contains(what) && !m.contains('\n'), "{m}")
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing was created"
    );
}
