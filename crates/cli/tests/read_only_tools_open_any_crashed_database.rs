//! After a crash whose redo is far larger than the default pool (4096 pages), the
//! read-only tools — `stats`, `tables`, `get`, `scan`, `verify --read-only` — open the
//! database, show every committed value, exit 0, and leave every byte of the directory
//! as it was (issue 24, item 1: they failed "the buffer pool of 4096 pages is too small
//! for this read-only database", exit 2). And a database that cannot be opened for a
//! reason other than the arguments exits 1, not 2: a creation interrupted before its
//! first checkpoint, whose message names the command that finishes it.

use crate::common;

use common::run;
use sluice_storage::{OpenOptions, SimStorage, Storage};
use sluice_testkit::dir_snapshot::dir_snapshot;
use std::path::Path;
use std::time::Duration;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn value(i: u32) -> Vec<u8> {
    format!("{i:0>1000}").into_bytes()
}

#[test]
fn the_read_only_tools_open_a_crash_whose_redo_outgrows_the_pool() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = sluice::Database::builder(&dir)
        .checkpoint_log_bytes(0)
        .checkpoint_interval(Duration::ZERO)
        .open()
        .unwrap();
    let t = db.table_or_create("t").unwrap();
    db.checkpoint().unwrap();
    // ~20 MB of rows past the checkpoint: about 5,000 leaf pages for redo, more than
    // the tools' pool of 4,096.
    const N: u32 = 20_000;
    for chunk in 0..20 {
        db.transaction(|tx| {
            for i in chunk * 1000..(chunk + 1) * 1000 {
                tx.put(&t, format!("k{i:05}"), value(i))?;
            }
            Ok::<_, sluice::Error>(())
        })
        .unwrap();
    }
    drop(t);
    db.close_as_crashed().unwrap();
    let files = dir_snapshot(&dir);

    let (code, out, err) = run(&["stats", s(&dir)]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(&format!("({N} entries)")), "{out}");
    let (code, out, err) = run(&["tables", s(&dir)]);
    assert_eq!((code, out.as_str()), (Some(0), "t\n"), "{err}");
    let (code, out, err) = run(&["get", s(&dir), "t", "k19999"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim_end().as_bytes(), value(19999));
    let (code, out, err) = run(&["scan", s(&dir), "t"]);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), N as usize);
    for (i, l) in lines.iter().enumerate() {
        let want = format!("k{i:05}\t{}", String::from_utf8(value(i as u32)).unwrap());
        assert!(*l == want, "line {i} of the scan is not the committed row");
    }
    let (code, out, err) = run(&["verify", s(&dir), "--read-only", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["entries"], N);
    assert!(
        dir_snapshot(&dir) == files,
        "a read-only tool changed, added or removed a file of the database directory"
    );
}

/// Copies what the simulated disk durably holds under `from` to the real `to`.
fn copy_durable(sim: &SimStorage, from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for name in sim.list(from).unwrap() {
        let path = from.join(&name);
        if sim.open(&path, OpenOptions::READ_ONLY).is_err() {
            copy_durable(sim, &path, &to.join(&name)); // a directory
        } else if let Some(bytes) = sim.read_durable(&path) {
            std::fs::write(to.join(&name), bytes).unwrap();
        }
    }
}

#[test]
fn a_creation_interrupted_before_its_first_checkpoint_exits_1_naming_the_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    // The first power loss during creation that leaves a CONTROL without a checkpoint.
    let mut found = false;
    for n in 1..500 {
        let sim = SimStorage::new(n);
        sim.crash_at_op(n);
        let storage: std::sync::Arc<dyn Storage> = std::sync::Arc::new(sim.clone());
        let created = sluice::Database::builder("/db")
            .options(sluice::Options::small())
            .storage(storage.clone())
            .open();
        assert!(created.is_err(), "creation finished before op {n}");
        drop(created);
        sim.disarm_crash();
        let ro = sluice::Database::builder("/db")
            .storage(storage)
            .read_only(true)
            .open();
        if ro.is_err_and(|e| e.to_string().contains("before its first checkpoint")) {
            copy_durable(&sim, Path::new("/db"), &dir);
            found = true;
            break;
        }
    }
    assert!(
        found,
        "no crash point left a creation without its checkpoint"
    );
    for args in [
        vec!["stats", s(&dir)],
        vec!["tables", s(&dir)],
        vec!["scan", s(&dir), "t"],
        vec!["verify", s(&dir), "--read-only"],
    ] {
        let (code, _, err) = run(&args);
        assert_eq!(code, Some(1), "{args:?}: the arguments were right: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
        assert!(
            err.contains(&format!("sluice verify {}", dir.display())),
            "{args:?}: the message names no command: {err}"
        );
    }
    // The command it names finishes the creation.
    let (code, _, err) = run(&["verify", s(&dir)]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = run(&["tables", s(&dir)]);
    assert_eq!((code, out.as_str()), (Some(0), ""), "{err}");
}
