//! Read-only open on the real file system (`OsStorage`, real `flock`s): a database held
//! by a writer is refused (`Error::Locked`) and a closed one is shared by readers that
//! keep a writer out; a copy of a live database's files — what a crashed process leaves,
//! log past the last checkpoint and a loser in it — opens read-only from files and
//! directories nobody may write, shows the committed state, and is left byte for byte
//! as it was.

use sluice::{Database, Error};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

/// Every file under `dir` (relative path → bytes).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                files.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    files
}

/// Copies the database files under `from` to `to` (the LOCK files left out, as a backup
/// tool that copies only data might).
fn copy_without_locks(from: &Path, to: &Path) {
    for (rel, bytes) in snapshot(from) {
        if rel.ends_with("LOCK") {
            continue;
        }
        let dest = to.join(&rel);
        fs::create_dir_all(dest.parent().unwrap()).unwrap();
        fs::write(dest, bytes).unwrap();
    }
}

/// Sets the permissions of everything under `dir` (and `dir`): files `file`, dirs `dir_mode`.
fn chmod_all(dir: &Path, file: u32, dir_mode: u32) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            chmod_all(&p, file, dir_mode);
        } else {
            fs::set_permissions(&p, fs::Permissions::from_mode(file)).unwrap();
        }
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(dir_mode)).unwrap();
}

#[test]
fn read_only_open_on_real_files() {
    let tmp = tempfile::tempdir().unwrap();
    let live = tmp.path().join("live");
    let copy = tmp.path().join("copy");

    let db = Database::builder(&live)
        .checkpoint_log_bytes(0)
        .checkpoint_interval(Duration::ZERO)
        .open()
        .unwrap();
    let t = db.table_or_create("t").unwrap();
    db.transaction(|tx| {
        for i in 0..100u32 {
            tx.put(&t, i.to_be_bytes(), b"before the checkpoint")?;
        }
        Ok::<_, sluice::Error>(())
    })
    .unwrap();
    db.checkpoint().unwrap();
    let mut loser = db.begin();
    for i in 0..100u32 {
        loser.put(&t, i.to_be_bytes(), b"loser").unwrap();
    }
    db.transaction(|tx| tx.put(&t, b"after", b"committed"))
        .unwrap(); // durable, and the loser's records before it

    // The writer holds the directory.
    let err = Database::open_read_only(&live).expect_err("held by the writer");
    assert!(matches!(err, Error::Locked(_)), "{err:?}");

    // A copy of the live files is a crashed database: log past the checkpoint, a loser.
    copy_without_locks(&live, &copy);
    drop(loser);
    db.close().unwrap();
    chmod_all(&copy, 0o444, 0o555);
    let before = snapshot(&copy);
    {
        let ro = Database::open_read_only(&copy).unwrap();
        assert!(ro.options().read_only);
        assert_eq!(ro.recovery_report().losers, 1);
        let t = ro.table("t").unwrap();
        let mut tx = ro.begin();
        for i in 0..100u32 {
            let v = tx.get(&t, i.to_be_bytes()).unwrap();
            assert_eq!(v.as_deref(), Some(&b"before the checkpoint"[..]));
        }
        assert_eq!(
            tx.get(&t, b"after").unwrap().as_deref(),
            Some(&b"committed"[..])
        );
        assert!(matches!(tx.put(&t, b"x", b"y"), Err(Error::ReadOnly)));
        drop(tx);
        ro.verify().unwrap();
        ro.close().unwrap();
    }
    assert_eq!(snapshot(&copy), before, "the copy was changed");
    assert!(!copy.join("LOCK").exists());
    chmod_all(&copy, 0o644, 0o755);

    // The closed original: readers share it and keep a writer out.
    let a = Database::open_read_only(&live).unwrap();
    let b = Database::builder(&live).read_only(true).open().unwrap();
    let err = Database::open(&live).expect_err("held by readers");
    assert!(matches!(err, Error::Locked(_)), "{err:?}");
    assert_eq!(a.table_names().unwrap(), vec!["t".to_string()]);
    drop((a, b));
    Database::open(&live).unwrap().close().unwrap();

    // Nothing there: an error, and nothing created.
    let missing = tmp.path().join("missing");
    assert!(Database::open_read_only(&missing).is_err());
    assert!(!missing.exists());
}
