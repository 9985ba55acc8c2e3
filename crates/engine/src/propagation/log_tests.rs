//! Log-based propagation end to end, on the simulated disk.

use super::log_cleaner;
use super::Strategy;
use crate::{Database, Options, Table};
use sluice_storage::{OpenOptions, SimStorage, Storage};
use sluice_wal::Lsn;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn options() -> Options {
    let mut o = Options::small();
    o.propagation = Strategy::Log;
    o.checkpoint_log_bytes = 0; // only the checkpoints the tests take
    o
}

fn put(db: &Database, t: &Table, key: &str, value: &[u8]) {
    let mut tx = db.begin();
    tx.put(t, key.as_bytes(), value).unwrap();
    tx.commit().unwrap();
}

fn read_file(sim: &SimStorage, path: &str) -> Vec<u8> {
    let f = sim.open(Path::new(path), OpenOptions::EXISTING).unwrap();
    let mut buf = vec![0u8; f.len().unwrap() as usize];
    let mut done = 0;
    while done < buf.len() {
        let n = f.read_at(&mut buf[done..], done as u64).unwrap();
        assert!(n > 0, "short read of {path}");
        done += n;
    }
    buf
}

fn redo_point(db: &Database) -> u64 {
    db.inner.store.redo_point.load(Ordering::SeqCst)
}

/// The checkpoint's page sweep finds nothing to write: the log cleaner wrote every page
/// dirty before the redo point, from the runs, and the restart after a crash starts its
/// redo at that redo point — the LSN propagated to.
#[test]
fn log_propagation_writes_the_pages_and_redo_starts_where_it_ended() {
    let sim = SimStorage::new(21);
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    for i in 0..300 {
        put(&db, &t, &format!("k{i:04}"), &[i as u8; 40]);
    }
    let before = db.backlog();
    assert!(before.dirty_pages > 5, "the workload dirtied pages");
    let pool_writes = db.stats().pool.writes;
    db.checkpoint().unwrap();
    let r = redo_point(&db);
    let after = db.backlog();
    assert!(
        after.propagated_bytes >= before.propagated_bytes + 5 * 1024,
        "the log cleaner wrote the pages: {before:?} -> {after:?}"
    );
    assert_eq!(after.propagated_lsn, r);
    assert_eq!(after.dirty_pages, 0, "{after:?}");
    assert_eq!(
        after.fallback_pages, before.fallback_pages,
        "every page rebuilt from the runs"
    );
    assert_eq!(
        db.stats().pool.writes,
        pool_writes,
        "the checkpoint's sweep had nothing left to write"
    );
    assert!(after.sorted_lsn >= r);
    for i in 300..320 {
        put(&db, &t, &format!("k{i:04}"), b"after the checkpoint");
    }
    sim.crash();
    drop((t, db));

    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let report = db.recovery_report().clone();
    assert_eq!(report.checkpoint, Some(Lsn(r)));
    let from = report
        .redo_from
        .expect("changes after the checkpoint to redo");
    assert!(
        from >= Lsn(r),
        "redo began at {from}, below the propagated LSN {r}"
    );
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..320 {
        assert!(
            tx.get(&t, format!("k{i:04}").as_bytes()).unwrap().is_some(),
            "k{i:04} lost"
        );
    }
    tx.commit().unwrap();
    db.verify().unwrap();
}

/// Media recovery: an old copy of the data file plus the sorted runs rebuild every
/// page, byte for byte as the live data file holds it.
#[test]
fn an_old_copy_plus_the_runs_rebuilds_every_page() {
    let sim = SimStorage::new(22);
    let mut o = options();
    o.keep_runs = true;
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    for i in 0..100 {
        put(&db, &t, &format!("k{i:04}"), &[1; 30]);
    }
    db.checkpoint().unwrap();
    let from = Lsn(redo_point(&db));
    let old = read_file(&sim, "/db/data");
    for round in 0..4u8 {
        for i in 0..150 {
            let k = format!("k{:04}", (i * 7 + round as usize * 13) % 400);
            if i % 5 == 4 {
                let mut tx = db.begin();
                tx.delete(&t, k.as_bytes()).unwrap();
                tx.commit().unwrap();
            } else {
                put(&db, &t, &k, &vec![round; 20 + i % 40]);
            }
        }
        // A rolled-back transaction: its CLRs are in the runs too.
        let mut tx = db.begin();
        tx.put(&t, b"rolled back", b"x").unwrap();
        tx.rollback().unwrap();
        db.checkpoint().unwrap();
    }
    let to = Lsn(redo_point(&db));
    let live = read_file(&sim, "/db/data");
    let store = db.inner.propagation.runs.get().unwrap();
    let page_size = db.page_size();
    // The copy in a file of its own, rebuilt a few pages at a time.
    let copy = sim.open(Path::new("/copy"), OpenOptions::CREATE).unwrap();
    copy.write_at(&old, 0).unwrap();
    let done = log_cleaner::rebuild(
        store,
        &*copy,
        page_size,
        (from, to),
        &|_, _| true,
        3,
        &mut |_, _| {},
    )
    .unwrap();
    assert!(done.pages > 10, "the rounds changed pages: {done:?}");
    assert!(done.chunks > 1 && done.writes >= done.chunks, "{done:?}");
    let rebuilt = read_file(&sim, "/copy");
    assert!(rebuilt.len() >= live.len(), "pages created since the copy");
    let mut differ = Vec::new();
    for (k, page) in live.chunks(page_size).enumerate() {
        let r = &rebuilt[k * page_size..(k + 1) * page_size];
        if r != page {
            differ.push(k);
        }
    }
    assert!(differ.is_empty(), "pages rebuilt differently: {differ:?}");
    assert_ne!(old, live, "the copy was old");
    db.verify().unwrap();
}

/// A run damaged on disk is found by its checksums when the log cleaner reads it, named
/// (run and offset) in the backlog, and rebuilt from the log, which still holds its
/// range: the checkpoint succeeds and nothing is lost.
#[test]
fn a_damaged_run_is_reported_and_rebuilt_from_the_log() {
    let sim = SimStorage::new(23);
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    for i in 0..200 {
        put(&db, &t, &format!("k{i:04}"), &[3; 40]);
    }
    // The sorter's work, done here: a run of everything durable.
    let store = db.inner.propagation.runs.get().unwrap();
    let log = &db.inner.store.log;
    store.catch_up(log, log.durable_lsn()).unwrap();
    let runs: Vec<String> = sim
        .list(&Path::new("/db").join(super::runs::DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("run-") && !n.contains('.'))
        .collect();
    let newest = runs.iter().max().expect("a run was written").clone();
    let path = format!("/db/{}/{newest}", super::runs::DIR);
    let f = sim.open(Path::new(&path), OpenOptions::EXISTING).unwrap();
    let len = f.len().unwrap();
    assert!(len > 1000, "a run of 200 updates is not {len} bytes");
    let at = len / 2;
    let mut b = [0u8; 1];
    f.read_at(&mut b, at).unwrap();
    f.write_at(&[b[0] ^ 0x5A], at).unwrap();
    f.sync_data().unwrap();
    drop(f);

    db.checkpoint().unwrap();
    let bl = db.backlog();
    let note = bl.run_damage.expect("the damage was reported");
    assert!(
        note.contains(&newest) && note.contains("damaged at offset"),
        "{note}"
    );
    assert!(bl.propagated_bytes > 0);
    sim.crash();
    drop((t, db));
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..200 {
        assert!(tx.get(&t, format!("k{i:04}").as_bytes()).unwrap().is_some());
    }
    tx.commit().unwrap();
    db.verify().unwrap();
}

/// A database may change strategy between opens: log, then the default sweep (the log
/// moves on and is truncated past the runs' end), then log again (the runs have a
/// gap below the log's start, and old runs below the propagated LSN) — each restart after
/// a crash keeps every commit, and the pages verify.
#[test]
fn the_strategy_can_change_between_opens() {
    let sim = SimStorage::new(24);
    let mut sweep = options();
    sweep.propagation = Strategy::CheckpointSweep;
    let mut n = 0;
    for (round, o) in [options(), sweep.clone(), options(), sweep, options()]
        .into_iter()
        .enumerate()
    {
        let db = Database::open_on(Arc::new(sim.pinned()), "/db", o).unwrap();
        let t = db.table_or_create("t").unwrap();
        let mut tx = db.begin();
        for i in 0..n {
            assert!(
                tx.get(&t, format!("k{i:04}").as_bytes()).unwrap().is_some(),
                "round {round}: k{i:04} lost"
            );
        }
        tx.commit().unwrap();
        for _ in 0..150 {
            put(&db, &t, &format!("k{n:04}"), &[round as u8; 40]);
            n += 1;
        }
        db.checkpoint().unwrap();
        for _ in 0..20 {
            put(&db, &t, &format!("k{n:04}"), b"after");
            n += 1;
        }
        sim.crash();
        drop((t, db));
    }
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..n {
        assert!(tx.get(&t, format!("k{i:04}").as_bytes()).unwrap().is_some());
    }
    tx.commit().unwrap();
    db.verify().unwrap();
}

/// Postmortem (issue 22, defect 1): an eviction copied a page, let its latch go and waited
/// for the log; meanwhile the page changed and a checkpoint's log cleaner wrote the newer
/// version; the eviction's older copy then landed over it, the frame counted as clean,
/// and the next load read the old value. The page-write protocol now refuses to land an
/// older version of a page over a newer one. This drives that exact interleaving.
#[test]
fn an_eviction_never_lands_an_older_copy_over_the_log_cleaners_newer_page() {
    let sim = SimStorage::new(22);
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    let p = t.id(); // the root, the table's only leaf
    put(&db, &t, "k", b"v1");
    let pool = &db.inner.store.pool;
    let frame = (0..pool.frame_count())
        .find(|&i| pool.pin_frame(i).is_some_and(|r| r.id() == p))
        .expect("the leaf is in the pool");
    assert!(pool.frames[frame].is_dirty());

    // The writer pauses between its copy (v1) and its landing.
    let (paused_tx, paused) = std::sync::mpsc::channel::<()>();
    let (go, go_rx) = std::sync::mpsc::channel::<()>();
    *pool.before_landing.lock() = Some(Box::new(move || {
        paused_tx.send(()).unwrap();
        go_rx.recv().unwrap();
    }));
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let _pin = pool.pin_frame(frame).unwrap();
            pool.write_frame(frame, crate::buffer_pool::Wait::Block)
        });
        paused.recv().unwrap();
        // Meanwhile: a newer version, written by the log cleaner at a checkpoint.
        put(&db, &t, "k", b"v2");
        db.checkpoint().unwrap();
        let mut disk = vec![0u8; db.page_size()];
        pool.read_disk(p, &mut disk).unwrap();
        let cleaned = crate::page::page_lsn(&disk);
        assert_eq!(cleaned, pool.frames[frame].page_lsn.load(Ordering::SeqCst));
        go.send(()).unwrap();
        assert!(writer.join().unwrap().unwrap());
        pool.read_disk(p, &mut disk).unwrap();
        assert_eq!(
            crate::page::page_lsn(&disk),
            cleaned,
            "the older copy landed over the newer version"
        );
    });
    // The frame is clean: out of the pool, the page is read back from the file.
    assert!(pool.evict(p).unwrap());
    let got = db.transaction(|tx| tx.get(&t, b"k")).unwrap();
    assert_eq!(got.as_deref(), Some(&b"v2"[..]));
    drop(t);
    db.close().unwrap();
}
