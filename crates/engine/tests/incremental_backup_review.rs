//! Review of incremental backups (outside reviewer): single-threaded, deterministic
//! attacks on `backup_incremental_to` and the restore of a chain. Each test compares
//! what the restored chain shows with what the database showed when the newest backup
//! was taken, and runs `verify`.

use sluice::{Database, Error, Lsn, Options, Replay, Restore, RestoreTarget, Strategy};
use sluice_storage::{SimStorage, Storage};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

type Snap = BTreeMap<(String, Vec<u8>), Vec<u8>>;

fn strategies() -> Vec<Strategy> {
    vec![
        Strategy::CheckpointSweep,
        "page-oldest".parse().unwrap(),
        "log".parse().unwrap(),
    ]
}

fn opts(s: &Strategy) -> Options {
    let mut o = Options::small();
    o.propagation = *s;
    o.checkpoint_log_bytes = 32 << 10;
    o.log_archive = Some("/archive".into());
    o
}

fn ro(o: &Options) -> Options {
    Options {
        read_only: true,
        log_archive: None,
        ..o.clone()
    }
}

fn put_many(db: &Database, table: &str, keys: std::ops::Range<u64>, tag: &str, len: usize) {
    let t = db.table_or_create(table).unwrap();
    let ks: Vec<u64> = keys.collect();
    for chunk in ks.chunks(100) {
        let mut tx = db.begin();
        for k in chunk {
            let mut v = format!("{tag}-{k}").into_bytes();
            v.resize(len.max(v.len()), b'.');
            tx.put(&t, format!("k{k:05}").as_bytes(), &v).unwrap();
        }
        tx.commit().unwrap();
    }
}

fn del_many(db: &Database, table: &str, keys: std::ops::Range<u64>) {
    let t = db.table(table).unwrap();
    let ks: Vec<u64> = keys.collect();
    for chunk in ks.chunks(100) {
        let mut tx = db.begin();
        for k in chunk {
            tx.delete(&t, format!("k{k:05}").as_bytes()).unwrap();
        }
        tx.commit().unwrap();
    }
}

fn snap(db: &Database, tables: &[&str]) -> Snap {
    let mut s = Snap::new();
    for name in tables {
        let Ok(t) = db.table(name) else { continue };
        let mut tx = db.begin();
        for r in tx.scan_all(&t) {
            let (k, v) = r.unwrap();
            s.insert((name.to_string(), k), v);
        }
        tx.commit().unwrap();
    }
    s
}

fn restore(
    st: &Arc<dyn Storage>,
    chain: &[&str],
    archive: Option<&str>,
    target: RestoreTarget,
    dest: &str,
    replay: Replay,
) -> sluice::Result<sluice::RestoreReport> {
    let (newest, ancestors) = chain.split_last().unwrap();
    Database::restore(
        st.clone(),
        &Restore {
            backup: PathBuf::from(newest),
            ancestors: ancestors.iter().map(PathBuf::from).collect(),
            archive: archive.map(PathBuf::from),
            target,
            dest: PathBuf::from(dest),
            replay,
        },
        &mut |_| {},
    )
}

fn shows(st: &Arc<dyn Storage>, dest: &str, o: &Options, tables: &[&str]) -> Snap {
    let db = Database::builder(dest)
        .options(ro(o))
        .storage(st.clone())
        .open()
        .unwrap();
    db.verify().unwrap();
    let s = snap(&db, tables);
    db.close().unwrap();
    s
}

/// Restores `chain` to its end both ways of replaying and checks it shows `want`.
fn check_chain(
    st: &Arc<dyn Storage>,
    chain: &[&str],
    o: &Options,
    tables: &[&str],
    want: &Snap,
    what: &str,
) {
    for (i, replay) in [Replay::SortedRuns, Replay::LogOrder]
        .into_iter()
        .enumerate()
    {
        let dest = format!("/restored-{}-{i}", chain.len());
        restore(st, chain, None, RestoreTarget::End, &dest, replay).unwrap();
        let got = shows(st, &dest, o, tables);
        assert!(
            got == *want,
            "{what} ({replay:?}): the restored chain {chain:?} shows {} entries, the database showed {}; first difference: {:?}",
            got.len(),
            want.len(),
            got.iter().zip(want.iter()).find(|(a, b)| a != b)
        );
    }
}

/// Passes. Compaction between the parent and the incremental backup: a table is emptied, the
/// data file is cut, then grows again with new pages (some reusing page ids the parent
/// had with other contents), while another table changes. The chain restores exactly.
#[test]
fn compaction_between_parent_and_incremental_then_regrowth() {
    for (i, s) in strategies().into_iter().enumerate() {
        let st: Arc<dyn Storage> = Arc::new(SimStorage::new(100 + i as u64));
        let o = opts(&s);
        let db = Database::open_on(st.clone(), "/db", o.clone()).unwrap();
        let tables = ["a", "big", "c"];
        put_many(&db, "a", 0..600, "a0", 60);
        put_many(&db, "big", 0..1500, "big0", 100);
        db.checkpoint().unwrap();
        db.backup_to("/full").unwrap();
        del_many(&db, "big", 0..1500);
        let r = db.compact().unwrap();
        assert!(
            r.bytes_returned > 0,
            "{s}: compaction returned nothing: {r:?}"
        );
        // Grows again: a new table first (takes the pages cut off), then more.
        put_many(&db, "c", 0..900, "c1", 90);
        put_many(&db, "a", 0..300, "a1", 60);
        put_many(&db, "big", 0..400, "big1", 100);
        let want = snap(&db, &tables);
        let inc = db.backup_incremental_to("/inc1", "/full").unwrap();
        // Then shrink again and take a second incremental.
        del_many(&db, "c", 0..900);
        let r2 = db.compact().unwrap();
        put_many(&db, "a", 300..600, "a2", 60);
        let want2 = snap(&db, &tables);
        let inc2 = db.backup_incremental_to("/inc2", "/inc1").unwrap();
        db.close().unwrap();
        println!(
            "{s}: compact {r:?} / {r2:?}; inc1 {} pages of {} bytes, inc2 {} of {}",
            inc.pages_copied, inc.data_bytes, inc2.pages_copied, inc2.data_bytes
        );
        check_chain(
            &st,
            &["/full", "/inc1"],
            &o,
            &tables,
            &want,
            &format!("{s}: compaction"),
        );
        check_chain(
            &st,
            &["/full", "/inc1", "/inc2"],
            &o,
            &tables,
            &want2,
            &format!("{s}: compaction twice"),
        );
    }
}

/// Passes. A table dropped and created again under the same name between the parent and the
/// incremental backup (its pages freed, then reused by the new table). Passes if the
/// chain shows the new table's contents only.
#[test]
fn a_table_dropped_and_recreated_between_parent_and_incremental() {
    for (i, s) in strategies().into_iter().enumerate() {
        let st: Arc<dyn Storage> = Arc::new(SimStorage::new(200 + i as u64));
        let o = opts(&s);
        let db = Database::open_on(st.clone(), "/db", o.clone()).unwrap();
        let tables = ["x", "y"];
        put_many(&db, "x", 0..1200, "x0", 80);
        put_many(&db, "y", 0..300, "y0", 80);
        db.checkpoint().unwrap();
        db.backup_to("/full").unwrap();
        db.drop_table("x").unwrap();
        put_many(&db, "y", 300..900, "y1", 80);
        put_many(&db, "x", 500..700, "x1", 80);
        let want = snap(&db, &tables);
        db.backup_incremental_to("/inc1", "/full").unwrap();
        db.close().unwrap();
        check_chain(
            &st,
            &["/full", "/inc1"],
            &o,
            &tables,
            &want,
            &format!("{s}: drop/recreate"),
        );
    }
}

/// Passes. Three incrementals, the middle one taken right after a checkpoint with no change
/// since the first (it copies next to nothing), the third after more changes.
#[test]
fn a_chain_whose_middle_link_has_no_changes() {
    for (i, s) in strategies().into_iter().enumerate() {
        let st: Arc<dyn Storage> = Arc::new(SimStorage::new(300 + i as u64));
        let o = opts(&s);
        let db = Database::open_on(st.clone(), "/db", o.clone()).unwrap();
        let tables = ["t"];
        put_many(&db, "t", 0..1500, "t0", 80);
        db.backup_to("/full").unwrap();
        put_many(&db, "t", 0..100, "t1", 80);
        db.backup_incremental_to("/inc1", "/full").unwrap();
        db.checkpoint().unwrap();
        let mid = db.backup_incremental_to("/inc2", "/inc1").unwrap();
        put_many(&db, "t", 700..800, "t2", 80);
        let want = snap(&db, &tables);
        db.backup_incremental_to("/inc3", "/inc2").unwrap();
        db.close().unwrap();
        println!("{s}: middle copied {} pages", mid.pages_copied);
        check_chain(
            &st,
            &["/full", "/inc1", "/inc2", "/inc3"],
            &o,
            &tables,
            &want,
            &format!("{s}: empty middle"),
        );
    }
}

/// Passes. Large values (overflow pages) written, overwritten and deleted between the backups.
#[test]
fn large_values_between_parent_and_incremental() {
    for (i, s) in strategies().into_iter().enumerate() {
        let st: Arc<dyn Storage> = Arc::new(SimStorage::new(400 + i as u64));
        let o = opts(&s);
        let db = Database::open_on(st.clone(), "/db", o.clone()).unwrap();
        let tables = ["blob"];
        put_many(&db, "blob", 0..40, "b0", 20_000);
        db.backup_to("/full").unwrap();
        put_many(&db, "blob", 10..20, "b1", 30_000);
        del_many(&db, "blob", 20..30);
        put_many(&db, "blob", 40..50, "b1", 5_000);
        db.backup_incremental_to("/inc1", "/full").unwrap();
        put_many(&db, "blob", 20..25, "b2", 50_000);
        let want = snap(&db, &tables);
        db.backup_incremental_to("/inc2", "/inc1").unwrap();
        db.close().unwrap();
        check_chain(
            &st,
            &["/full", "/inc1", "/inc2"],
            &o,
            &tables,
            &want,
            &format!("{s}: blobs"),
        );
    }
}

/// Passes (the fork rewrote every page). A database restored from an older full backup, then changed past where the other
/// history went: an incremental backup of it against a newer backup of the *original*
/// history (same database id, LSNs that overlap) must be refused, or else restore right.
#[test]
fn an_incremental_of_a_restored_database_against_a_backup_of_the_other_history() {
    let s = Strategy::CheckpointSweep;
    let st: Arc<dyn Storage> = Arc::new(SimStorage::new(500));
    let mut o = opts(&s);
    let db = Database::open_on(st.clone(), "/db", o.clone()).unwrap();
    put_many(&db, "t", 0..1500, "t0", 80);
    db.backup_to("/old").unwrap();
    put_many(&db, "t", 0..1500, "orig", 80);
    db.backup_to("/new").unwrap();
    db.close().unwrap();
    restore(
        &st,
        &["/old"],
        None,
        RestoreTarget::End,
        "/r",
        Replay::SortedRuns,
    )
    .unwrap();
    o.log_archive = None;
    let r = Database::open_on(st.clone(), "/r", o.clone()).unwrap();
    for round in 0..3 {
        put_many(&r, "t", 0..1500, &format!("fork{round}"), 80);
    }
    r.checkpoint().unwrap();
    let want = snap(&r, &["t"]);
    let res = r.backup_incremental_to("/rinc", "/new");
    r.close().unwrap();
    match res {
        Err(Error::InvalidArgument(m)) => println!("refused: {m}"),
        Err(e) => panic!("refused with an unexpected error: {e}"),
        Ok(l) => {
            println!("accepted: {} pages copied", l.pages_copied);
            check_chain(&st, &["/new", "/rinc"], &o, &["t"], &want, "forked history");
        }
    }
}

/// Passes (refused: target before the backup's end). A chain restored with `RestoreTarget::Lsn` between the parent's end and the
/// incremental's end (with the archive): refused, or exactly the commits at or below it.
#[test]
fn a_chain_restored_to_an_lsn_between_parent_and_incremental() {
    for (i, s) in strategies().into_iter().enumerate() {
        let st: Arc<dyn Storage> = Arc::new(SimStorage::new(600 + i as u64));
        let o = opts(&s);
        let db = Database::open_on(st.clone(), "/db", o.clone()).unwrap();
        put_many(&db, "t", 0..1500, "t0", 80);
        let full = db.backup_to("/full").unwrap();
        put_many(&db, "t", 0..500, "t1", 80);
        let mid_lsn = db.log().durable_lsn();
        let want_mid = snap(&db, &["t"]);
        put_many(&db, "t", 500..1000, "t2", 80);
        let inc = db.backup_incremental_to("/inc1", "/full").unwrap();
        db.close().unwrap();
        assert!(full.end_lsn < mid_lsn && mid_lsn < inc.end_lsn);
        for (j, replay) in [Replay::SortedRuns, Replay::LogOrder]
            .into_iter()
            .enumerate()
        {
            let dest = format!("/rl{j}");
            match restore(
                &st,
                &["/full", "/inc1"],
                Some("/archive"),
                RestoreTarget::Lsn(mid_lsn),
                &dest,
                replay,
            ) {
                Err(e) => println!("{s} {replay:?}: refused: {e}"),
                Ok(rep) => {
                    let got = shows(&st, &dest, &o, &["t"]);
                    assert!(
                        got == want_mid,
                        "{s} {replay:?}: restored to LSN {mid_lsn} (report end {}) between the parent's end {} and the incremental's end {}: shows a state other than the one at that LSN",
                        rep.end_lsn, full.end_lsn, inc.end_lsn
                    );
                }
            }
        }
    }
}

/// Passes (verify names the page). The parent's data file damaged after the incremental was taken, in a page the
/// incremental did not copy: the restore of the chain, or the restored database's
/// `verify`, must say so.
#[test]
fn a_parent_damaged_after_the_incremental_is_detected() {
    let s = Strategy::CheckpointSweep;
    let st: Arc<dyn Storage> = Arc::new(SimStorage::new(700));
    let o = opts(&s);
    let db = Database::open_on(st.clone(), "/db", o.clone()).unwrap();
    put_many(&db, "t", 0..1500, "t0", 80);
    let full = db.backup_to("/full").unwrap();
    put_many(&db, "t", 1400..1500, "t1", 80);
    let inc = db.backup_incremental_to("/inc1", "/full").unwrap();
    db.close().unwrap();
    assert!(inc.pages_copied < full.pages_copied);
    // Damage a byte in the middle of page 5 of the parent (an early leaf: not copied).
    let ps = u64::from(full.page_size);
    let f = st
        .open(
            &PathBuf::from("/full/data"),
            sluice_storage::OpenOptions::EXISTING,
        )
        .unwrap();
    let mut b = [0u8; 1];
    let at = 5 * ps + ps / 2;
    f.read_exact_at(&mut b, at).unwrap();
    b[0] ^= 0xff;
    f.write_at(&b, at).unwrap();
    f.sync_data().unwrap();
    drop(f);
    let detected = match restore(
        &st,
        &["/full", "/inc1"],
        None,
        RestoreTarget::End,
        "/rd",
        Replay::SortedRuns,
    ) {
        Err(e) => {
            println!("restore refused: {e}");
            true
        }
        Ok(_) => match Database::builder("/rd")
            .options(ro(&o))
            .storage(st.clone())
            .open()
        {
            Err(e) => {
                println!("open refused: {e}");
                true
            }
            Ok(db) => {
                let v = db.verify();
                println!("verify: {v:?}");
                v.is_err()
            }
        },
    };
    assert!(detected, "a damaged page of the parent went undetected");
}

#[allow(dead_code)]
fn _lsn(_: Lsn) {}

/// Failed at review (accepted, and the chain restored corrupt); fixed: a restore gives
/// the new database an id of its own, so the other history's backup is refused as of
/// another database. As above, but the fork changes only a few pages early (LSNs below the other
/// history's backup's redo point), then writes elsewhere until its log is past that
/// backup. If the incremental against the other history's backup is accepted, pages
/// the fork changed below that backup's `redo_from` are not copied and the chain shows
/// the other history's values: must be refused (or restore exactly the fork).
#[test]
fn an_incremental_of_a_fork_with_few_early_changes_against_the_other_history() {
    let s = Strategy::CheckpointSweep;
    let st: Arc<dyn Storage> = Arc::new(SimStorage::new(501));
    let mut o = opts(&s);
    let db = Database::open_on(st.clone(), "/db", o.clone()).unwrap();
    put_many(&db, "t", 0..1500, "t0", 80);
    db.backup_to("/old").unwrap();
    put_many(&db, "t", 0..1500, "orig", 80);
    let new = db.backup_to("/new").unwrap();
    db.close().unwrap();
    restore(
        &st,
        &["/old"],
        None,
        RestoreTarget::End,
        "/r",
        Replay::SortedRuns,
    )
    .unwrap();
    o.log_archive = None;
    let r = Database::open_on(st.clone(), "/r", o.clone()).unwrap();
    put_many(&r, "t", 0..50, "fork", 80);
    r.checkpoint().unwrap();
    let mut round = 0;
    while r.log().durable_lsn() <= new.end_lsn {
        put_many(&r, "pad", 0..200, &format!("pad{round}"), 80);
        round += 1;
    }
    r.checkpoint().unwrap();
    let want = snap(&r, &["t", "pad"]);
    let res = r.backup_incremental_to("/rinc", "/new");
    r.close().unwrap();
    match res {
        Err(Error::InvalidArgument(m)) => println!("refused: {m}"),
        Err(e) => panic!("refused with an unexpected error: {e}"),
        Ok(l) => {
            println!("accepted: {} pages copied", l.pages_copied);
            check_chain(
                &st,
                &["/new", "/rinc"],
                &o,
                &["t", "pad"],
                &want,
                "forked history, few early changes",
            );
        }
    }
}
