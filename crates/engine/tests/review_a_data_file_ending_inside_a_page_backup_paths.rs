//! Outside review of the fix for the swarm's seed 7154897 (a backup copies the last page
//! a data file ends inside): the paths the fix's own tests leave out.
//!
//! * a read-only database backed up as it is on disk (no checkpoint rewrites anything),
//!   its last page valid (zeros lost) or torn (nonzero sectors lost, repaired from the
//!   page's image in the log);
//! * an incremental backup whose parent lacks the page (a backup taken before the fix,
//!   made here by cutting a full backup's copy and label to the last whole page), and
//!   one whose parent holds it, the page unchanged or changed since;
//! * a data file ending inside a page the meta page does not count, its bytes garbage.
//!
//! Each restore is checked under both replays, and each backup opened read-only.

use sluice::{Database, Options, Replay, Restore, RestoreTarget};
use sluice_storage::{failpoint, FailAction, OpenOptions, SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const PAGE: u64 = 4096;

fn options() -> Options {
    let mut o = Options::small();
    o.page_size = PAGE as usize;
    o.checkpoint_log_bytes = 0;
    o.checkpoint_interval = Duration::ZERO;
    o
}

fn open(sim: &SimStorage, dir: &str) -> Database {
    Database::open_on(Arc::new(sim.pinned()), dir, options()).unwrap()
}

fn open_read_only(sim: &SimStorage, dir: &str) -> sluice::Result<Database> {
    Database::builder(dir)
        .options(Options {
            read_only: true,
            ..options()
        })
        .storage(Arc::new(sim.pinned()))
        .open()
}

fn file_len(sim: &SimStorage, path: &str) -> u64 {
    sim.open(Path::new(path), OpenOptions::READ_ONLY)
        .unwrap()
        .len()
        .unwrap()
}

fn read_at(sim: &SimStorage, path: &str, at: u64, n: usize) -> Vec<u8> {
    let f = sim.open(Path::new(path), OpenOptions::READ_ONLY).unwrap();
    let mut b = vec![0u8; n];
    f.read_exact_at(&mut b, at).unwrap();
    b
}

type Rows = Vec<(Vec<u8>, Vec<u8>)>;

fn contents(db: &Database) -> Vec<(String, Rows)> {
    let mut out = Vec::new();
    for name in db.table_names().unwrap() {
        let t = db.table(&name).unwrap();
        let mut tx = db.begin();
        let rows = tx.scan(&t, ..).collect::<sluice::Result<Vec<_>>>().unwrap();
        tx.commit().unwrap();
        out.push((name, rows));
    }
    out
}

/// The new last page: an empty table's root (zeros past its header: valid when only
/// its first sectors reach the disk) or a table's root full of rows (its lost sectors
/// held rows: torn).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Last {
    EmptyRoot,
    FullRoot,
}

/// The database after a power loss that left its data file ending inside the new page
/// (not reopened: the caller opens it as it needs). `before` runs before the new page is
/// allocated. Returns the disk and the new page's id.
fn ending_inside_a_page(last: Last, before: &dyn Fn(&Database)) -> (SimStorage, u64) {
    for seed in 0..400u64 {
        for nth in 1..=6 {
            let sim = SimStorage::new(seed);
            let db = open(&sim, "/db");
            let t = db.create_table("t").unwrap();
            let mut tx = db.begin();
            for i in 0..200u32 {
                tx.put(&t, format!("k{i:05}"), [7u8; 40]).unwrap();
            }
            tx.commit().unwrap();
            db.checkpoint().unwrap();
            before(&db);
            db.checkpoint().unwrap();
            let len = file_len(&sim, "/db/data");
            assert_eq!(len % PAGE, 0);
            let new_page = len / PAGE;
            let n = db.create_table("new").unwrap();
            if last == Last::FullRoot {
                let mut tx = db.begin();
                for i in 0..50u32 {
                    tx.put(&n, format!("r{i:05}"), [0xA5u8; 48]).unwrap();
                }
                tx.commit().unwrap();
            }
            sim.set_failpoint(failpoint::PAGE_WRITTEN, nth, FailAction::Kill);
            let _ = db.checkpoint();
            drop(db);
            sim.clear_failpoints();
            if sim.killed_count() == 0 {
                continue;
            }
            sim.crash();
            let len = file_len(&sim, "/db/data");
            if len <= new_page * PAGE || len >= (new_page + 1) * PAGE {
                continue;
            }
            return (sim, new_page);
        }
    }
    panic!("no seed left the data file ending inside the new page");
}

fn restore(sim: &SimStorage, backup: &str, ancestors: &[&str], dest: &str, replay: Replay) {
    Database::restore(
        Arc::new(sim.pinned()),
        &Restore {
            backup: backup.into(),
            ancestors: ancestors.iter().map(|a| a.into()).collect(),
            archive: None,
            target: RestoreTarget::End,
            dest: dest.into(),
            replay,
        },
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("restore of {backup} ({replay:?}) into {dest}: {e}"));
}

/// Restores `backup` (with its chain) under both replays; each restored database
/// verifies and shows `shown`.
fn restores_to(
    sim: &SimStorage,
    backup: &str,
    ancestors: &[&str],
    shown: &[(String, Rows)],
    tag: &str,
) {
    for (n, replay) in [Replay::SortedRuns, Replay::LogOrder]
        .into_iter()
        .enumerate()
    {
        let dest = format!("/restored-{tag}-{n}");
        restore(sim, backup, ancestors, &dest, replay);
        let r = open(sim, &dest);
        r.verify().unwrap_or_else(|e| {
            panic!("{tag} {replay:?}: the restored database does not verify: {e}")
        });
        assert_eq!(contents(&r), shown, "{tag} {replay:?}");
        // It goes on: a new table (the next page allocated) and rows.
        let x = r.create_table("after").unwrap();
        let mut tx = r.begin();
        tx.put(&x, b"k", b"v").unwrap();
        tx.commit().unwrap();
        r.verify()
            .unwrap_or_else(|e| panic!("{tag} {replay:?}: after a write: {e}"));
        r.close().unwrap();
    }
}

/// A read-only database is backed up as it is on disk: the last page the file ends
/// inside (valid: an empty root) is copied whole, and the backup verifies and restores.
#[test]
fn a_read_only_backup_copies_a_valid_last_page_the_file_ends_inside() {
    let (sim, page) = ending_inside_a_page(Last::EmptyRoot, &|_| {});
    let len = file_len(&sim, "/db/data");
    let db = open_read_only(&sim, "/db").unwrap();
    let shown = contents(&db);
    db.verify().unwrap();
    let label = db.backup_to("/bk").unwrap();
    assert_eq!(label.data_bytes, (page + 1) * PAGE);
    drop(db);
    assert_eq!(
        file_len(&sim, "/db/data"),
        len,
        "the read-only backup wrote nothing"
    );
    let b = open_read_only(&sim, "/bk").unwrap();
    b.verify()
        .unwrap_or_else(|e| panic!("the read-only database's backup does not verify: {e}"));
    assert_eq!(contents(&b), shown);
    drop(b);
    restores_to(&sim, "/bk", &[], &shown, "ro-valid");
}

/// The same with a torn last page (its lost sectors held rows): the copy holds the torn
/// page, and the backup's recovery restores it from its image in the log.
#[test]
fn a_backup_of_a_torn_last_page_the_file_ends_inside_restores_it_from_its_image() {
    let (sim, page) = ending_inside_a_page(Last::FullRoot, &|_| {});
    let len = file_len(&sim, "/db/data");
    eprintln!("data file {len} bytes, ends inside page {page}");
    // Read-only: nothing rewrites the page before the copy.
    let db = open_read_only(&sim, "/db").unwrap();
    let shown = contents(&db);
    db.verify().unwrap();
    let label = db.backup_to("/bk-ro").unwrap();
    assert_eq!(label.data_bytes, (page + 1) * PAGE);
    drop(db);
    let b = open_read_only(&sim, "/bk-ro").unwrap();
    b.verify()
        .unwrap_or_else(|e| panic!("the backup (read-only source) does not verify: {e}"));
    assert_eq!(contents(&b), shown);
    drop(b);
    restores_to(&sim, "/bk-ro", &[], &shown, "ro-torn");
    // Read-write: recovery repairs it, the backup's checkpoint writes it.
    let db = open(&sim, "/db");
    assert_eq!(contents(&db), shown);
    let label = db.backup_to("/bk-rw").unwrap();
    assert_eq!(label.data_bytes, (page + 1) * PAGE);
    db.close().unwrap();
    let b = open_read_only(&sim, "/bk-rw").unwrap();
    b.verify().unwrap();
    assert_eq!(contents(&b), shown);
    drop(b);
    restores_to(&sim, "/bk-rw", &[], &shown, "rw-torn");
}

/// Cuts a full backup's data file and label to the last whole page, as a backup taken
/// before the fix was.
fn cut_as_before_the_fix(sim: &SimStorage, dir: &str, page: u64) {
    let data = format!("{dir}/data");
    let f = sim.open(Path::new(&data), OpenOptions::EXISTING).unwrap();
    f.set_len(page * PAGE).unwrap();
    f.sync_data().unwrap();
    let label_path = format!("{dir}/BACKUP");
    let text = String::from_utf8(read_at(
        sim,
        &label_path,
        0,
        file_len(sim, &label_path) as usize,
    ))
    .unwrap();
    let old = format!("data_bytes {}\n", (page + 1) * PAGE);
    assert!(text.contains(&old), "{text}");
    let body_end = text.rfind("crc32c ").unwrap();
    let body = text[..body_end].replace(&old, &format!("data_bytes {}\n", page * PAGE));
    let crc = crc32c::crc32c(body.as_bytes());
    let new = format!("{body}crc32c {crc:08x}\n");
    let f = sim
        .open(Path::new(&label_path), OpenOptions::EXISTING)
        .unwrap();
    f.set_len(0).unwrap();
    f.write_at(new.as_bytes(), 0).unwrap();
    f.sync_data().unwrap();
}

/// An incremental backup whose parent lacks the page (taken before the fix): the page
/// lies past the parent's data file, so it is copied, and the chain restores.
#[test]
fn an_incremental_backup_on_a_parent_cut_before_the_fix_copies_the_page() {
    let (sim, page) = ending_inside_a_page(Last::EmptyRoot, &|_| {});
    let db = open(&sim, "/db");
    let shown = contents(&db);
    db.backup_to("/full").unwrap();
    cut_as_before_the_fix(&sim, "/full", page);
    // The cut parent is as the swarm's backup was: it fails verify.
    {
        let p = open_read_only(&sim, "/full").unwrap();
        assert!(
            p.verify().is_err(),
            "the cut parent verifies: the cut did not reproduce a pre-fix backup"
        );
    }
    let mut tx = db.begin();
    let t = db.table("t").unwrap();
    tx.put(&t, b"zz-after", b"1").unwrap();
    tx.commit().unwrap();
    let shown_after = contents(&db);
    let label = db.backup_incremental_to("/incr", "/full").unwrap();
    assert_eq!(label.data_bytes, (page + 1) * PAGE);
    db.close().unwrap();
    assert_ne!(shown, shown_after);
    restores_to(&sim, "/incr", &["/full"], &shown_after, "incr-cut-parent");
}

/// An incremental backup whose parent holds the page: unchanged, it is not copied and
/// the chain restores it from the parent; changed, it is copied.
#[test]
fn an_incremental_backup_on_a_parent_holding_the_page_restores_it_changed_or_not() {
    let (sim, page) = ending_inside_a_page(Last::EmptyRoot, &|_| {});
    let db = open(&sim, "/db");
    db.backup_to("/full").unwrap();
    // Unchanged.
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"zz-1", b"1").unwrap();
    tx.commit().unwrap();
    let shown1 = contents(&db);
    db.backup_incremental_to("/incr1", "/full").unwrap();
    // Changed: the empty table gets a row (its root, the page, is rewritten).
    let n = db.table("new").unwrap();
    let mut tx = db.begin();
    tx.put(&n, b"first", b"row").unwrap();
    tx.commit().unwrap();
    let shown2 = contents(&db);
    let label = db.backup_incremental_to("/incr2", "/incr1").unwrap();
    assert!(label.data_bytes >= (page + 1) * PAGE);
    db.close().unwrap();
    restores_to(&sim, "/incr1", &["/full"], &shown1, "incr-unchanged");
    restores_to(
        &sim,
        "/incr2",
        &["/full", "/incr1"],
        &shown2,
        "incr-changed",
    );
}

/// A data file ending inside a page the meta page does not count, garbage in the part
/// there: the backup copies that page (rounded up), and the backup, its restore and the
/// pages allocated after are sound.
#[test]
fn a_garbage_page_past_the_meta_pages_count_is_harmless_in_a_backup() {
    let sim = SimStorage::new(1);
    let db = open(&sim, "/db");
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..200u32 {
        tx.put(&t, format!("k{i:05}"), [7u8; 40]).unwrap();
    }
    tx.commit().unwrap();
    db.close().unwrap();
    let len = file_len(&sim, "/db/data");
    assert_eq!(len % PAGE, 0);
    {
        let f = sim
            .open(Path::new("/db/data"), OpenOptions::EXISTING)
            .unwrap();
        f.write_at(&[0xABu8; 1536], len).unwrap();
        f.sync_data().unwrap();
    }
    let db = open(&sim, "/db");
    let shown = contents(&db);
    let report = db.verify().unwrap();
    assert_eq!(report.pages, len / PAGE);
    let label = db.backup_to("/bk").unwrap();
    assert_eq!(label.data_bytes, len + PAGE);
    let b = open_read_only(&sim, "/bk").unwrap();
    b.verify().unwrap();
    assert_eq!(contents(&b), shown);
    drop(b);
    // An incremental one on it, after the next allocation took the page.
    let x = db.create_table("x").unwrap();
    let mut tx = db.begin();
    tx.put(&x, b"a", b"b").unwrap();
    tx.commit().unwrap();
    let shown2 = contents(&db);
    db.verify().unwrap();
    db.backup_incremental_to("/incr", "/bk").unwrap();
    db.close().unwrap();
    restores_to(&sim, "/bk", &[], &shown, "garbage-full");
    restores_to(&sim, "/incr", &["/bk"], &shown2, "garbage-incr");
}
