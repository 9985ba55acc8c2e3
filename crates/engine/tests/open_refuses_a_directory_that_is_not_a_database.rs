//! A directory without a control file is a sluice database only if it is empty or holds
//! nothing but the leftovers of an interrupted creation (`LOCK`, `CONTROL.tmp`). Anything
//! else is refused with one line naming what is there, before a single file is created
//! or changed in it.

use sluice::{Database, Error, Options};
use sluice_storage::{OpenOptions, OsStorage, SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fn write_file(s: &dyn Storage, path: &str, bytes: &[u8]) {
    let f = s.open(Path::new(path), OpenOptions::CREATE).unwrap();
    f.write_at(bytes, 0).unwrap();
    f.sync_data().unwrap();
}

fn read_file(s: &dyn Storage, path: &str) -> Vec<u8> {
    let f = s.open(Path::new(path), OpenOptions::EXISTING).unwrap();
    let mut b = vec![0u8; f.len().unwrap() as usize];
    f.read_exact_at(&mut b, 0).unwrap();
    b
}

fn assert_refused(e: Error, names: &[&str]) {
    let msg = e.to_string();
    assert!(matches!(e, Error::InvalidArgument(_)), "{msg}");
    assert!(msg.contains("is not a sluice database"), "{msg}");
    for n in names {
        assert!(msg.contains(&format!("`{n}`")), "{msg} does not name {n}");
    }
    assert!(!msg.contains('\n'), "one line: {msg}");
}

#[test]
fn a_directory_of_other_files_is_refused_and_left_untouched() {
    let sim = SimStorage::new(51);
    sim.create_dir_all(Path::new("/db")).unwrap();
    write_file(&sim, "/db/notes.txt", b"my notes");
    write_file(&sim, "/db/data", b"precious");
    let e = Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap_err();
    assert_refused(e, &["data", "notes.txt"]);
    assert_eq!(sim.list(Path::new("/db")).unwrap(), ["data", "notes.txt"]);
    assert_eq!(read_file(&sim, "/db/data"), b"precious");
}

#[test]
fn leftovers_of_an_interrupted_creation_are_not_foreign() {
    let sim = SimStorage::new(52);
    sim.create_dir_all(Path::new("/db")).unwrap();
    write_file(&sim, "/db/LOCK", b"");
    write_file(&sim, "/db/CONTROL.tmp", b"half a control file");
    let db = Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap();
    assert!(db.recovery_report().created);
    db.close().unwrap();
    let db = Database::open_on(Arc::new(sim), "/db", Options::small()).unwrap();
    assert!(!db.recovery_report().created);
}

#[test]
fn a_real_directory_with_a_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("report.pdf"), b"%PDF").unwrap();
    let e =
        Database::open_on(Arc::new(OsStorage::new()), tmp.path(), Options::small()).unwrap_err();
    assert_refused(e, &["report.pdf"]);
    let mut names: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["report.pdf"],
        "open created files in a foreign directory"
    );
}

#[test]
fn a_new_database_does_not_adopt_another_databases_log() {
    // The log may live outside the database directory; a log there without our CONTROL
    // belongs to someone else (creation writes CONTROL before the log).
    let sim = SimStorage::new(53);
    let a = Database::open_with_log(
        Arc::new(sim.clone()),
        "/a",
        Arc::new(sim.clone()),
        "/shared-log",
        Options::small(),
    )
    .unwrap();
    let t = a.create_table("t").unwrap();
    let mut tx = a.begin();
    tx.put(&t, b"k", b"of database a").unwrap();
    tx.commit().unwrap();
    a.close().unwrap();
    let e = Database::open_with_log(
        Arc::new(sim.clone()),
        "/b",
        Arc::new(sim.clone()),
        "/shared-log",
        Options::small(),
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::InvalidArgument(_)), "{msg}");
    assert!(
        msg.contains("/shared-log") && msg.contains("already holds a log"),
        "{msg}"
    );
    assert!(!sim.exists(Path::new("/b/CONTROL")).unwrap());
}
