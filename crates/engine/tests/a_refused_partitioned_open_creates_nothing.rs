//! Postmortem: a partitioned open refused for a bad argument (a number of log managers out
//! of range, a log directory or table for a partition that does not exist) had already
//! written the directory and a `PARTITIONS` manifest — one naming 0 log managers that no
//! later open could read. The manifest was written before the arguments were checked.

use sluice::testing::MANIFEST;
use sluice::{Options, Partitioned, Unassigned, MAX_LOG_MANAGERS};
use sluice_storage::{SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

#[test]
fn a_refused_partitioned_open_creates_nothing() {
    let sim = SimStorage::new(1);
    let dir = Path::new("/db");
    let builder = || {
        Partitioned::builder(dir)
            .options(Options::small())
            .storage(Arc::new(sim.pinned()))
    };
    let refused = [
        ("0 log managers", builder().log_managers(0)),
        (
            "too many log managers",
            builder().log_managers(MAX_LOG_MANAGERS + 1),
        ),
        (
            "a log directory of a partition beyond the last",
            builder().log_managers(2).log_dir(2, "/logs"),
        ),
        (
            "a table assigned beyond the last partition",
            builder().log_managers(2).assign("t", 5),
        ),
        (
            "unassigned tables beyond the last partition",
            builder()
                .log_managers(2)
                .unassigned(Unassigned::Partition(2)),
        ),
    ];
    for (case, b) in refused {
        let err = b.open().expect_err(case).to_string();
        assert!(err.starts_with("invalid argument"), "{case}: {err}");
        assert!(
            !sim.exists(dir).unwrap(),
            "{case}: the refused open ({err}) created {}",
            dir.display()
        );
    }
    // And the directory stays usable: a correct open creates the database.
    let db = builder().log_managers(2).open().unwrap();
    assert!(sim.exists(&dir.join(MANIFEST)).unwrap());
    assert_eq!(db.log_managers(), 2);
    db.close().unwrap();
}
