//! Issue 26: a database whose log archive is mirrored to an object store. After a load,
//! the store holds every finished segment byte for byte and the `MANIFEST`; `pull`
//! rebuilds from it an archive that `verify_archive` accepts and that a restore rolls a
//! backup forward from, to every commit; a mirror that fails holds truncation (the log
//! keeps its segments, the metrics report the error) and loses nothing; bad URLs are
//! one-line errors.

#![cfg(feature = "object-store")]

use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::ObjectStoreExt;
use sluice::{Database, Options, Restore, RestoreTarget};
use sluice_objstore::{pull, Error, ObjectStoreMirror};
use sluice_storage::{OsStorage, Storage};
use sluice_wal::{
    parse_archive_manifest, verify_archive, ArchiveMirror, Lsn, MirrorRetry, MANIFEST_NAME,
};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const KEYS: u32 = 1500;

fn fast() -> MirrorRetry {
    MirrorRetry {
        tries: 3,
        first_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(2),
    }
}

fn options() -> Options {
    Options::small()
}

/// Commits `KEYS` keys in transactions of 50; returns them.
fn load(db: &Database, tag: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let t = db.table_or_create("t").unwrap();
    let mut all = BTreeMap::new();
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(50) {
        let mut tx = db.begin();
        for &k in chunk {
            let (k, v) = (
                format!("k{k:05}").into_bytes(),
                format!("{tag}-{k}-{}", "x".repeat(60)).into_bytes(),
            );
            tx.put(&t, &k, &v).unwrap();
            all.insert(k, v);
        }
        tx.commit().unwrap();
    }
    all
}

fn contents(db: &Database) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    let s = tx.scan_all(&t).map(|r| r.unwrap()).collect();
    tx.commit().unwrap();
    s
}

/// Waits until every finished segment is archived (uploaded included), or an error.
fn wait_archived(db: &Database) {
    let log = db.log();
    let s = log.segment_bytes();
    let finished = Lsn(log.durable_lsn().0 / s * s);
    let deadline = Instant::now() + Duration::from_secs(30);
    while log.archived_lsn().unwrap() < finished {
        assert!(log.archive_error().is_none(), "{:?}", log.archive_error());
        assert!(Instant::now() < deadline, "the archiver did not catch up");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn object(store: &InMemory, name: &str) -> Option<Vec<u8>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        match store.get(&ObjectPath::from(name)).await {
            Ok(r) => Some(r.bytes().await.unwrap().to_vec()),
            Err(object_store::Error::NotFound { .. }) => None,
            Err(e) => panic!("{e}"),
        }
    })
}

#[test]
fn a_pulled_mirror_restores_every_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, archive) = (tmp.path().join("db"), tmp.path().join("archive"));
    let store = Arc::new(InMemory::new());
    let mirror = ObjectStoreMirror::new(store.clone(), "prod/db1", "memory:///prod/db1")
        .unwrap()
        .with_retry(fast());
    let db = Database::builder(&dir)
        .options(options())
        .log_archive(&archive)
        .archive_mirror(Arc::new(mirror))
        .open()
        .unwrap();
    load(&db, "before");
    db.checkpoint().unwrap();
    db.backup_to(tmp.path().join("backup")).unwrap();
    let expected = load(&db, "after");
    wait_archived(&db);
    let m = db.metrics().archive.unwrap();
    assert_eq!(m.mirror.as_deref(), Some("memory:///prod/db1"));
    assert!(m.segments_archived >= 4, "{m:?}");
    db.close().unwrap();

    // The store holds the local archive, byte for byte, under the prefix.
    let manifest = std::fs::read(archive.join(MANIFEST_NAME)).unwrap();
    assert_eq!(object(&store, "prod/db1/MANIFEST"), Some(manifest.clone()));
    let entries = parse_archive_manifest(&manifest).unwrap();
    assert!(entries.len() >= 4);
    for e in &entries {
        let local = std::fs::read(archive.join(&e.name)).unwrap();
        assert_eq!(object(&store, &format!("prod/db1/{}", e.name)), Some(local));
    }

    // Pulled into a fresh directory: a whole archive, and a restore from it.
    let pulled = tmp.path().join("pulled");
    let source = ObjectStoreMirror::new(store.clone(), "prod/db1", "memory").unwrap();
    let mut calls = 0;
    let r = source.pull(&pulled, &mut |_| calls += 1).unwrap();
    assert_eq!(
        (r.listed, r.segments, r.skipped),
        (entries.len(), entries.len(), 0)
    );
    assert_eq!(calls, entries.len());
    let os: Arc<dyn Storage> = Arc::new(OsStorage::new());
    let report = verify_archive(&*os, &pulled).unwrap();
    assert!(report.is_intact(), "{report}");
    // Again: nothing to download.
    let r = source.pull(&pulled, &mut |_| {}).unwrap();
    assert_eq!((r.segments, r.skipped), (0, entries.len()));
    let dest = tmp.path().join("restored");
    Database::restore(
        os,
        &Restore {
            backup: tmp.path().join("backup"),
            archive: Some(pulled.clone()),
            target: RestoreTarget::End,
            dest: dest.clone(),
            ancestors: Vec::new(),
            replay: Default::default(),
        },
        &mut |_| {},
    )
    .unwrap();
    let restored = Database::builder(&dest).options(options()).open().unwrap();
    let got = contents(&restored);
    // Every commit of the finished segments is back (the last, unfinished segment is
    // not archived): every key of the first load, and the second load's early part.
    assert_eq!(got.len(), expected.len());
    let matching = expected
        .iter()
        .filter(|(k, v)| got.get(*k) == Some(*v))
        .count();
    assert!(matching > 0, "no commit of the second load was restored");
    restored.close().unwrap();

    // A damaged object is refused by name.
    let name = &entries[1].name;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut bytes = object(&store, &format!("prod/db1/{name}")).unwrap();
    bytes[5000] ^= 1;
    rt.block_on(store.put(&ObjectPath::from(format!("prod/db1/{name}")), bytes.into()))
        .unwrap();
    let e = source
        .pull(&tmp.path().join("pulled2"), &mut |_| {})
        .unwrap_err();
    assert!(
        matches!(&e, Error::Damaged(m) if m.contains(name.as_str())),
        "{e}"
    );
}

/// A mirror that is down.
#[derive(Debug)]
struct Down;

impl ArchiveMirror for Down {
    fn put(&self, _: &str, _: &[u8]) -> io::Result<()> {
        Err(io::Error::other("503 slow down"))
    }
    fn get(&self, _: &str) -> io::Result<Option<Vec<u8>>> {
        Err(io::Error::other("503 slow down"))
    }
    fn retry(&self) -> MirrorRetry {
        fast()
    }
}

#[test]
fn a_failing_mirror_holds_truncation_and_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, archive) = (tmp.path().join("db"), tmp.path().join("archive"));
    let db = Database::builder(&dir)
        .options(options())
        .log_archive(&archive)
        .archive_mirror(Arc::new(Down))
        .open()
        .unwrap();
    let expected = load(&db, "v");
    db.checkpoint().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while db.metrics().archive.unwrap().error.is_none() {
        assert!(Instant::now() < deadline, "no error reported");
        std::thread::sleep(Duration::from_millis(2));
    }
    let m = db.metrics().archive.unwrap();
    assert!(
        m.error.as_deref().unwrap().contains("503 slow down"),
        "{m:?}"
    );
    assert_eq!(m.archived_lsn, 0);
    db.checkpoint().unwrap();
    // Every segment is still in the log: none was uploaded.
    assert_eq!(db.log().start_lsn(), Lsn(0));
    assert!(db.log().segments().len() >= 4);
    db.close().unwrap();

    // Reopened with a working mirror: it catches up, then truncation goes on.
    let store = Arc::new(InMemory::new());
    let mirror = ObjectStoreMirror::new(store.clone(), "", "memory").unwrap();
    let db = Database::builder(&dir)
        .options(options())
        .log_archive(&archive)
        .archive_mirror(Arc::new(mirror))
        .open()
        .unwrap();
    assert_eq!(contents(&db), expected);
    wait_archived(&db);
    assert!(object(&store, &sluice_wal::segment::segment_name(Lsn(0))).is_some());
    db.checkpoint().unwrap();
    assert!(db.log().start_lsn() > Lsn(0));
    db.close().unwrap();
}

#[test]
fn bad_urls_are_one_line_errors() {
    for url in ["not a url", "ftp://host/x", "http://example.com/x", "s3:/"] {
        let e = ObjectStoreMirror::from_url(url).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{url}: {e:?}");
        assert!(!e.to_string().contains('\n'), "{e}");
    }
    if !cfg!(feature = "s3") {
        let e = ObjectStoreMirror::from_url("s3://bucket/prefix").unwrap_err();
        assert!(e.to_string().contains("`s3` feature"), "{e}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let url = format!("file://{}", tmp.path().join("m").display());
    let e = pull(&url, &tmp.path().join("out"), &mut |_| {}).unwrap_err();
    assert!(
        matches!(&e, Error::Damaged(m) if m.contains("no MANIFEST")),
        "{e}"
    );
    // A file:// mirror puts and gets.
    let m = ObjectStoreMirror::from_url(&url).unwrap();
    m.put("a", b"bytes").unwrap();
    assert_eq!(m.get("a").unwrap().as_deref(), Some(&b"bytes"[..]));
    assert_eq!(m.get("b").unwrap(), None);
    assert_eq!(std::fs::read(tmp.path().join("m/a")).unwrap(), b"bytes");
    assert!(Path::new(&tmp.path().join("m")).is_dir());
}
