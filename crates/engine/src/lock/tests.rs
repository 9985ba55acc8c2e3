//! The lock manager's unit tests: the conflict table, FIFO order, deadlocks, early
//! release, end stripes, gap inheritance and the cost of pruning.

use super::manager::PRUNE_AT;
use super::name::END_STRIPES;
use super::*;
use crate::ids::{PageId, TxnId};
use parking_lot::Mutex;
use sluice_wal::Lsn;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

fn k(s: &str) -> LockKey {
    LockKey::key(PageId(2), s.as_bytes())
}

#[test]
fn shared_locks_share_and_exclusive_excludes() {
    let lm = LockManager::new(Duration::from_millis(30));
    assert_eq!(
        lm.lock(TxnId(1), &k("a"), LockMode::RECORD_S, &mut None)
            .unwrap(),
        Granted::New
    );
    assert_eq!(
        lm.lock(TxnId(2), &k("a"), LockMode::RECORD_S, &mut None)
            .unwrap(),
        Granted::New
    );
    assert!(matches!(
        lm.lock(TxnId(3), &k("a"), LockMode::RECORD_X, &mut None),
        Err(Refused::Timeout { .. })
    ));
    assert_eq!(
        lm.lock(TxnId(1), &k("a"), LockMode::RECORD_S, &mut None)
            .unwrap(),
        Granted::AlreadyHeld
    );
    lm.unlock_all(TxnId(1), [&k("a")]);
    lm.unlock_all(TxnId(2), [&k("a")]);
    assert_eq!(
        lm.lock(TxnId(3), &k("a"), LockMode::RECORD_X, &mut None)
            .unwrap(),
        Granted::New
    );
    assert!(lm
        .try_lock(TxnId(4), &k("a"), LockMode::RECORD_S, &mut None)
        .is_none());
    lm.unlock_all(TxnId(3), [&k("a")]);
    assert!(lm.is_empty(), "lock table leaked entries");
}

#[test]
fn waiter_is_granted_when_the_holder_releases() {
    let lm = Arc::new(LockManager::new(Duration::from_secs(5)));
    lm.lock(TxnId(1), &k("x"), LockMode::RECORD_X, &mut None)
        .unwrap();
    let lm2 = lm.clone();
    let h = std::thread::spawn(move || {
        let g = lm2
            .lock(TxnId(2), &k("x"), LockMode::RECORD_X, &mut None)
            .unwrap();
        lm2.unlock_all(TxnId(2), [&k("x")]);
        g
    });
    std::thread::sleep(Duration::from_millis(20));
    lm.unlock_all(TxnId(1), [&k("x")]);
    assert_eq!(h.join().unwrap(), Granted::New);
    assert!(lm.is_empty());
}

#[test]
fn upgrade_deadlock_times_out_one_victim() {
    let lm = Arc::new(LockManager::new(Duration::from_millis(50)));
    lm.lock(TxnId(1), &k("u"), LockMode::RECORD_S, &mut None)
        .unwrap();
    lm.lock(TxnId(2), &k("u"), LockMode::RECORD_S, &mut None)
        .unwrap();
    let lm2 = lm.clone();
    let h = std::thread::spawn(move || lm2.lock(TxnId(2), &k("u"), LockMode::RECORD_X, &mut None));
    let r1 = lm.lock(TxnId(1), &k("u"), LockMode::RECORD_X, &mut None);
    let r2 = h.join().unwrap();
    assert!(
        r1.is_err() || r2.is_err(),
        "an upgrade deadlock must time out"
    );
}

#[test]
fn fifo_order_is_kept_for_exclusive_waiters() {
    let lm = Arc::new(LockManager::new(Duration::from_secs(5)));
    lm.lock(TxnId(1), &k("f"), LockMode::RECORD_X, &mut None)
        .unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut hs = Vec::new();
    for t in 2..5u64 {
        let (lm, order) = (lm.clone(), order.clone());
        hs.push(std::thread::spawn(move || {
            lm.lock(TxnId(t), &k("f"), LockMode::RECORD_X, &mut None)
                .unwrap();
            order.lock().push(t);
            lm.unlock_all(TxnId(t), [&k("f")]);
        }));
        // Let each queue before the next arrives.
        std::thread::sleep(Duration::from_millis(30));
    }
    lm.unlock_all(TxnId(1), [&k("f")]);
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*order.lock(), vec![2, 3, 4]);
}

#[test]
fn early_release_leaves_a_dependency_for_the_next_holder() {
    let lm = LockManager::new(Duration::from_millis(30));
    let (x, y) = (k("x"), k("y"));
    lm.lock(TxnId(1), &x, LockMode::RECORD_X, &mut None)
        .unwrap();
    lm.lock(TxnId(1), &y, LockMode::RECORD_S, &mut None)
        .unwrap();
    // Commit record ends at 100, durable is 50: released early.
    lm.release(TxnId(1), [&x, &y], Some(Lsn(100)), Lsn(50));
    assert!(lm.is_empty(), "no lock is held any more");
    let mut dep = None;
    lm.lock(TxnId(2), &x, LockMode::RECORD_S, &mut dep).unwrap();
    assert_eq!(dep, Some(Lsn(100)), "reader of x depends on txn 1's commit");
    let mut dep = None;
    lm.lock(TxnId(3), &y, LockMode::RECORD_X, &mut dep).unwrap();
    assert_eq!(dep, None, "a shared lock released early exposes no data");
    // Once durable, a release leaves nothing behind.
    lm.release(TxnId(3), [&y], Some(Lsn(200)), Lsn(300));
    let mut dep = None;
    lm.lock(TxnId(4), &y, LockMode::RECORD_S, &mut dep).unwrap();
    assert_eq!(dep, None);
    // The largest early commit wins.
    lm.release(TxnId(2), [&x], None, Lsn(50));
    lm.lock(TxnId(5), &x, LockMode::RECORD_X, &mut None)
        .unwrap();
    lm.release(TxnId(5), [&x], Some(Lsn(90)), Lsn(50));
    let mut dep = None;
    lm.try_lock(TxnId(6), &x, LockMode::RECORD_S, &mut dep)
        .unwrap();
    assert_eq!(dep, Some(Lsn(100)));
}

const RS: LockMode = LockMode::RECORD_S;
const RX: LockMode = LockMode::RECORD_X;
const GS: LockMode = LockMode::GAP_S;
const GI: LockMode = LockMode::GAP_I;
const GD: LockMode = LockMode::GAP_D;

#[test]
fn the_conflict_table_is_the_documented_one_and_symmetric() {
    let parts = [RS, RX, GS, GI, GD];
    let conflicting = [(RS, RX), (RX, RX), (GS, GI), (GS, GD), (GI, GD), (GD, GD)];
    for a in parts {
        for b in parts {
            let expected = conflicting.contains(&(a, b)) || conflicting.contains(&(b, a));
            assert_eq!(a.conflicts_with(b), expected, "{a:?} vs {b:?}");
            assert_eq!(a.conflicts_with(b), b.conflicts_with(a), "{a:?} vs {b:?}");
        }
    }
    // Combined modes conflict if any part does.
    assert!(LockMode::SCANNED.conflicts_with(GI));
    assert!(!LockMode::SCANNED.conflicts_with(RS.with(GS)));
    // Coverage: X covers S, gap D covers gap S and I; nothing else is implied.
    assert!(RX.covers(RS) && GD.covers(GS) && GD.covers(GI));
    assert!(!RS.covers(RX) && !GS.covers(GI) && !GI.covers(GS) && !RX.covers(GS));
    assert!(RX.with(GD).covers(LockMode::SCANNED));
}

#[test]
fn inserts_at_the_end_share_and_scanners_and_deleters_exclude_them() {
    let lm = LockManager::new(Duration::from_millis(30));
    let end = LockKey {
        table: PageId(2),
        name: LockName::End(0),
    };
    // Concurrent appends never serialise.
    for t in 1..=3 {
        assert_eq!(
            lm.try_lock(TxnId(t), &end, GI, &mut None),
            Some(Granted::New)
        );
    }
    assert!(lm.try_lock(TxnId(9), &end, GS, &mut None).is_none());
    assert!(lm.try_lock(TxnId(9), &end, GD, &mut None).is_none());
    assert!(matches!(
        lm.lock(TxnId(9), &end, GS, &mut None),
        Err(Refused::Timeout { .. })
    ));
    for t in 1..=3 {
        lm.unlock_all(TxnId(t), [&end]);
    }
    // A scanner's gap lock shares with readers and record locks, not with writers.
    assert_eq!(
        lm.try_lock(TxnId(4), &end, GS, &mut None),
        Some(Granted::New)
    );
    assert_eq!(
        lm.try_lock(TxnId(5), &end, GS, &mut None),
        Some(Granted::New)
    );
    let k = k("k");
    assert_eq!(
        lm.try_lock(TxnId(4), &k, LockMode::SCANNED, &mut None),
        Some(Granted::New)
    );
    assert_eq!(lm.try_lock(TxnId(6), &k, GI, &mut None), None);
    assert_eq!(lm.try_lock(TxnId(6), &k, RS, &mut None), Some(Granted::New));
    lm.unlock_all(TxnId(4), [&end, &k]);
    lm.unlock_all(TxnId(5), [&end]);
    lm.unlock_all(TxnId(6), [&k]);
    assert!(lm.is_empty());
}

#[test]
fn an_append_on_any_stripe_of_the_end_meets_a_scanner_of_the_end() {
    let lm = LockManager::new(Duration::from_millis(30));
    let end = |s| LockKey {
        table: PageId(2),
        name: LockName::End(s),
    };
    let scanner = TxnId(1000);
    let all: Vec<LockKey> = LockName::end_stripes(scanner, GS).map(end).collect();
    assert_eq!(all.len(), END_STRIPES as usize);
    for k in &all {
        assert!(lm.try_lock(scanner, k, GS, &mut None).is_some());
    }
    let appenders: Vec<(TxnId, LockKey)> = (1..=40)
        .map(|t| {
            let stripes = LockName::end_stripes(TxnId(t), GI);
            assert_eq!(stripes.len(), 1, "an append takes one stripe");
            (TxnId(t), end(stripes.start))
        })
        .collect();
    for (t, k) in &appenders {
        assert!(
            lm.try_lock(*t, k, GI, &mut None).is_none(),
            "{t} passed the scanner"
        );
    }
    lm.unlock_all(scanner, &all);
    for (t, k) in &appenders {
        assert!(
            lm.try_lock(*t, k, GI, &mut None).is_some(),
            "appends share the end"
        );
    }
    // A delete of the last key (gap D on the end) meets them all as well.
    let deleter = TxnId(2000);
    let first = LockName::end_stripes(deleter, GD).map(end).next().unwrap();
    assert!(lm.try_lock(deleter, &first, GD, &mut None).is_none());
    for (t, k) in &appenders {
        lm.unlock_all(*t, [k]);
    }
    assert!(lm.is_empty());
}

#[test]
fn an_instant_check_meets_a_holder_but_holds_nothing() {
    let lm = LockManager::new(Duration::from_millis(30));
    let n = k("n");
    // An uncommitted insert of n holds record X: a delete below n must wait for it.
    lm.try_lock(TxnId(1), &n, RX, &mut None).unwrap();
    assert!(lm
        .try_lock_checked(TxnId(2), &n, GD, RS, &mut None)
        .is_none());
    lm.unlock_all(TxnId(1), [&n]);
    assert_eq!(
        lm.try_lock_checked(TxnId(2), &n, GD, RS, &mut None),
        Some((Granted::New, GD)),
        "the check part is not held"
    );
    // Only gap D was taken: an updater of n is not kept waiting by the delete.
    assert_eq!(lm.try_lock(TxnId(3), &n, RX, &mut None), Some(Granted::New));
    lm.unlock_all(TxnId(2), [&n]);
    lm.unlock_all(TxnId(3), [&n]);
    assert!(lm.is_empty());
}

#[test]
fn an_insert_learns_the_gap_parts_it_holds_on_its_next_key_and_inherits_s_and_d() {
    let lm = LockManager::new(Duration::from_millis(30));
    let n = k("n");
    // A scanner that locked n, then inserts below it: gap I on n reports its scan.
    lm.try_lock(TxnId(1), &n, LockMode::SCANNED, &mut None)
        .unwrap();
    let (g, holds) = lm
        .try_lock_checked(TxnId(1), &n, GI, LockMode::NONE, &mut None)
        .unwrap();
    assert_eq!((g, holds), (Granted::Upgraded, LockMode::SCANNED.with(GI)));
    assert_eq!(
        holds.inherited_by_insert(),
        GS,
        "record S and gap I stay on n"
    );
    let (g, holds) = lm
        .try_lock_checked(TxnId(1), &n, GI, LockMode::NONE, &mut None)
        .unwrap();
    assert_eq!(g, Granted::AlreadyHeld);
    assert_eq!(holds.inherited_by_insert(), GS);
    // A deleter below n carries gap D over; a plain inserter carries nothing.
    assert_eq!(RX.with(GI).with(GD).inherited_by_insert(), GD);
    assert_eq!(RX.with(GI).inherited_by_insert(), LockMode::NONE);
    // What is inherited keeps others' inserts and scans out of the lower half.
    assert!(GS.conflicts_with(GI) && GD.conflicts_with(GI) && GD.conflicts_with(GS));
    lm.unlock_all(TxnId(1), [&n]);
    assert!(lm.is_empty());
}

#[test]
fn a_holder_adds_parts_to_its_lock_ahead_of_the_queue() {
    let lm = Arc::new(LockManager::new(Duration::from_secs(5)));
    let n = k("n");
    assert_eq!(lm.lock(TxnId(1), &n, RX, &mut None).unwrap(), Granted::New);
    // Txn 2 queues for the record.
    let lm2 = lm.clone();
    let n2 = n.clone();
    let waiter = std::thread::spawn(move || {
        let g = lm2.lock(TxnId(2), &n2, RS, &mut None).unwrap();
        lm2.unlock_all(TxnId(2), [&n2]);
        g
    });
    while lm
        .shards
        .iter()
        .all(|s| s.map.lock().values().all(|e| e.waiting.is_empty()))
    {
        std::thread::yield_now();
    }
    // The holder's request for the gap part is not stuck behind the waiter.
    assert_eq!(
        lm.lock(TxnId(1), &n, GD, &mut None).unwrap(),
        Granted::Upgraded
    );
    assert_eq!(
        lm.try_lock(TxnId(1), &n, GS, &mut None),
        Some(Granted::AlreadyHeld),
        "gap D covers gap S"
    );
    lm.unlock_all(TxnId(1), [&n]);
    assert_eq!(waiter.join().unwrap(), Granted::New);
    assert!(lm.is_empty());
}

#[test]
fn early_released_gap_parts_leave_a_dependency_but_a_scanners_do_not() {
    let lm = LockManager::new(Duration::from_millis(30));
    let (a, b, c) = (k("a"), k("b"), k("c"));
    lm.lock(TxnId(1), &a, GI, &mut None).unwrap();
    lm.lock(TxnId(1), &b, GD, &mut None).unwrap();
    lm.lock(TxnId(1), &c, LockMode::SCANNED, &mut None).unwrap();
    lm.release(TxnId(1), [&a, &b, &c], Some(Lsn(100)), Lsn(50));
    for name in [&a, &b] {
        let mut dep = None;
        lm.lock(TxnId(2), name, GS, &mut dep).unwrap();
        assert_eq!(
            dep,
            Some(Lsn(100)),
            "a scanner over {name:?} depends on txn 1"
        );
    }
    let mut dep = None;
    lm.lock(TxnId(2), &c, RX, &mut dep).unwrap();
    assert_eq!(dep, None, "a scan released early exposes nothing");
}

/// A request compatible with what was released early would have been granted beside
/// the holder without seeing what it protected, so it depends on nothing; only a
/// conflicting one does. (A reader's table lock after the table's writers released
/// their gap I on the same stripe once made every read-only TATP transaction wait for
/// an unrelated commit to be durable.)
#[test]
fn only_a_conflicting_request_depends_on_an_early_release() {
    let lm = LockManager::new(Duration::from_millis(30));
    let t = k("t");
    lm.lock(TxnId(1), &t, GI, &mut None).unwrap();
    lm.release(TxnId(1), [&t], Some(Lsn(100)), Lsn(50));
    for (txn, mode) in [(2, RS), (3, GI)] {
        let mut dep = None;
        lm.lock(TxnId(txn), &t, mode, &mut dep).unwrap();
        assert_eq!(dep, None, "{mode:?} is compatible with gap I");
    }
    lm.release(TxnId(2), [&t], None, Lsn(50));
    lm.release(TxnId(3), [&t], None, Lsn(50));
    let mut dep = None;
    lm.lock(TxnId(4), &t, RX, &mut dep).unwrap();
    assert_eq!(dep, None, "record X is compatible with gap I");
    lm.release(TxnId(4), [&t], Some(Lsn(120)), Lsn(50));
    let mut dep = None;
    lm.lock(TxnId(5), &t, GS, &mut dep).unwrap();
    assert_eq!(
        dep,
        Some(Lsn(120)),
        "gap S conflicts with the gap I released at 100; the largest early commit is the bound"
    );
    let mut dep = None;
    lm.lock(TxnId(6), &t, RS, &mut dep).unwrap();
    assert_eq!(
        dep,
        Some(Lsn(120)),
        "record S conflicts with the record X released at 120"
    );
    lm.release(TxnId(6), [&t], None, Lsn(50));
    // Notes that are durable are forgotten when a new one is made: record X released at
    // 400 when 300 is durable leaves only record X (txn 5 keeps the entry alive).
    lm.lock(TxnId(8), &t, RX, &mut None).unwrap();
    lm.release(TxnId(8), [&t], Some(Lsn(400)), Lsn(300));
    let mut dep = None;
    lm.lock(TxnId(9), &t, GS, &mut dep).unwrap();
    assert_eq!(dep, None, "the gap I released at 100 is durable at 300");
}

/// A stopped lock manager ends every wait at once and refuses new ones, instead of
/// letting them wait out the timeout for locks that will never be released.
#[test]
fn stop_ends_every_wait_and_refuses_new_ones() {
    let lm = std::sync::Arc::new(LockManager::new(Duration::from_secs(600)));
    let k = LockKey::key(PageId(2), b"k");
    lm.lock(TxnId(1), &k, LockMode::RECORD_X, &mut None)
        .unwrap();
    let waiter = {
        let (lm, k) = (lm.clone(), k.clone());
        std::thread::spawn(move || lm.lock(TxnId(2), &k, LockMode::RECORD_S, &mut None))
    };
    // Whether the waiter is queued yet or not, it must end with Stopped.
    std::thread::sleep(Duration::from_millis(50));
    lm.stop();
    assert_eq!(waiter.join().unwrap(), Err(Refused::Stopped));
    let other = LockKey::key(PageId(2), b"other");
    assert_eq!(
        lm.lock(TxnId(3), &k, LockMode::RECORD_S, &mut None),
        Err(Refused::Stopped)
    );
    // A free lock is still granted without a wait (the holder of `k` keeps it).
    assert!(lm
        .lock(TxnId(3), &other, LockMode::RECORD_S, &mut None)
        .is_ok());
}

/// Regression: releasing a scan's many shared locks took minutes. Each release in a
/// shard above `PRUNE_AT` swept the whole shard for idle entries, but the scan's other
/// locks are still granted, so every sweep found nothing and the release was O(n²)
/// (a TPC-B consistency check over ~1 M rows stalled a sweep for 10+ minutes; fixed
/// by the doubling threshold, this pins it and the threshold's return afterwards).
#[test]
fn releasing_many_locks_is_not_quadratic() {
    let lm = LockManager::new(Duration::from_millis(30));
    let keys: Vec<LockKey> = (0..400_000u32)
        .map(|i| LockKey::key(PageId(2), &i.to_be_bytes()))
        .collect();
    for key in &keys {
        lm.lock(TxnId(1), key, LockMode::RECORD_S, &mut None)
            .unwrap();
    }
    lm.release(TxnId(1), &keys, None, Lsn::ZERO);
    // Linear: each entry is looked at by a prune a bounded number of times (the
    // threshold doubles with what survives). Quadratic looked at every surviving
    // entry on every release: ~n²/2 over the shards, 6 s at opt-level 1. Counted, not
    // timed, so a loaded machine cannot fail it.
    let visits: usize = lm
        .shards
        .iter()
        .map(|s| s.pruned_visits.load(Ordering::Relaxed))
        .sum();
    assert!(
        visits <= 4 * keys.len(),
        "prunes looked at {visits} entries to release {} locks",
        keys.len()
    );
    assert!(lm.is_empty());
    // Once the shards are small again, idle entries are pruned as early as before.
    assert!(lm
        .shards
        .iter()
        .all(|s| s.prune_at.load(Ordering::Relaxed) == PRUNE_AT));
}

/// Waits until some request is queued.
fn until_someone_waits(lm: &LockManager) {
    while lm
        .shards
        .iter()
        .all(|s| s.map.lock().values().all(|e| e.waiting.is_empty()))
    {
        std::thread::yield_now();
    }
}

/// Two readers of one key both upgrade to X (get, then put): a deadlock every time. The
/// one that closes the cycle used to be its victim whatever it had lost before, so a
/// retried transaction could lose every round; now the waiter of least seniority is,
/// and the senior one (which lost an attempt before) gets its X lock.
#[test]
fn in_an_upgrade_deadlock_the_senior_transaction_wins() {
    let lm = Arc::new(LockManager::new(Duration::from_secs(20)));
    let u = k("u");
    lm.lock(TxnId(1), &u, RS, &mut None).unwrap();
    lm.lock(TxnId(2), &u, RS, &mut None).unwrap();
    let (lm2, u2) = (lm.clone(), u.clone());
    let fresh = std::thread::spawn(move || {
        let r = lm2.lock_as(TxnId(2), 0, &u2, RX, &mut None);
        // A victim rolls back: its locks go.
        lm2.unlock_all(TxnId(2), [&u2]);
        r
    });
    until_someone_waits(&lm);
    let senior = lm.lock_as(TxnId(1), 1, &u, RX, &mut None);
    assert_eq!(
        senior,
        Ok(Granted::Upgraded),
        "the senior upgrade is granted"
    );
    assert!(
        matches!(fresh.join().unwrap(), Err(Refused::Deadlock { .. })),
        "the fresh one is the victim"
    );
    lm.unlock_all(TxnId(1), [&u]);
    assert!(lm.is_empty());
}

/// The victim chosen may wait on another name (another shard): it is woken there and
/// leaves with a deadlock; between equals the requester is still the victim.
#[test]
fn a_doomed_waiter_on_another_name_leaves_and_equals_keep_the_old_rule() {
    let lm = Arc::new(LockManager::new(Duration::from_secs(20)));
    let (a, b) = (k("a"), k("b"));
    lm.lock(TxnId(1), &a, RX, &mut None).unwrap();
    lm.lock(TxnId(2), &b, RX, &mut None).unwrap();
    let (lm2, a2, b2) = (lm.clone(), a.clone(), b.clone());
    let fresh = std::thread::spawn(move || {
        let r = lm2.lock_as(TxnId(2), 0, &a2, RX, &mut None);
        lm2.unlock_all(TxnId(2), [&b2]);
        r
    });
    until_someone_waits(&lm);
    assert_eq!(lm.lock_as(TxnId(1), 3, &b, RX, &mut None), Ok(Granted::New));
    assert!(matches!(
        fresh.join().unwrap(),
        Err(Refused::Deadlock { .. })
    ));
    lm.unlock_all(TxnId(1), [&a, &b]);
    assert!(lm.is_empty());

    // Equal seniority: the request that closes the cycle loses, at once.
    lm.lock(TxnId(3), &a, RX, &mut None).unwrap();
    lm.lock(TxnId(4), &b, RX, &mut None).unwrap();
    let (lm2, a2) = (lm.clone(), a.clone());
    let first = std::thread::spawn(move || lm2.lock_as(TxnId(4), 2, &a2, RX, &mut None));
    until_someone_waits(&lm);
    assert!(matches!(
        lm.lock_as(TxnId(3), 2, &b, RX, &mut None),
        Err(Refused::Deadlock { .. })
    ));
    lm.unlock_all(TxnId(3), [&a]);
    assert_eq!(first.join().unwrap(), Ok(Granted::New));
    lm.unlock_all(TxnId(4), [&a, &b]);
    assert!(lm.is_empty());
}

/// The table lock's fast path (`fast.rs`): weak locks stay out of the lock table until a
/// strong request moves them in (with what their early releases left), a moved lock is
/// released in the lock table, and the fast path comes back when the strong one ends.
#[test]
fn a_strong_table_request_moves_the_fast_path_locks_into_the_lock_table() {
    let lm = LockManager::new(Duration::from_millis(30));
    let fast = FastTable::default();
    let table = PageId(7);
    let w = LockMode::GAP_I;
    let r = LockMode::RECORD_S;
    // Three holders on two stripes; one of them commits early at LSN 500.
    assert!(fast.try_weak(TxnId(1), 1, w, true, &mut None, || Lsn(100)));
    assert!(fast.try_weak(TxnId(17), 1, r, true, &mut None, || Lsn(100)));
    assert!(fast.try_weak(TxnId(2), 2, w, true, &mut None, || Lsn(100)));
    assert!(fast.try_weak(TxnId(3), 3, w, true, &mut None, || Lsn(100)));
    // More parts for a holder still recorded; none for one that is not.
    assert!(fast.try_weak(TxnId(17), 1, w, false, &mut None, || Lsn(100)));
    assert!(!fast.try_weak(TxnId(4), 4, w, false, &mut None, || Lsn(100)));
    assert!(fast.release(TxnId(3), 3, Some(Lsn(500)), Lsn(100)));
    assert_eq!(fast.recorded(), 3);
    assert!(lm.is_empty(), "nothing in the lock table yet");
    fast.begin_strong(&lm, table, Lsn(100));
    assert_eq!(fast.recorded(), 0);
    assert_eq!(lm.len(), 2, "stripes 1 and 2 now held in the lock table");
    // New weak requests go to the lock table now.
    assert!(!fast.try_weak(TxnId(5), 5, r, true, &mut None, || Lsn(100)));
    let stripe = |s: u16| LockKey {
        table,
        name: LockName::Table(s),
    };
    let count = TableLock::Count.mode();
    // The count waits for the moved writers (stripe 1, 2) and times out.
    assert!(matches!(
        lm.lock(TxnId(9), &stripe(1), count, &mut None),
        Err(Refused::Timeout { .. })
    ));
    // Stripe 3: nobody holds it, but the early release there is inherited.
    let mut dep = None;
    lm.lock(TxnId(9), &stripe(3), count, &mut dep).unwrap();
    assert_eq!(dep, Some(Lsn(500)));
    // The moved locks are released in the lock table: the fast path says so.
    assert!(!fast.release(TxnId(1), 1, None, Lsn(100)));
    lm.unlock_all(TxnId(1), [&stripe(1)]);
    assert!(!fast.release(TxnId(17), 1, None, Lsn(100)));
    lm.unlock_all(TxnId(17), [&stripe(1)]);
    lm.lock(TxnId(9), &stripe(1), count, &mut None).unwrap();
    lm.unlock_all(TxnId(9), [&stripe(1), &stripe(3)]);
    assert!(!fast.release(TxnId(2), 2, None, Lsn(100)));
    lm.unlock_all(TxnId(2), [&stripe(2)]);
    // A count (no exposing part) released early leaves nothing on the table.
    fast.end_strong(count, Some(Lsn(700)));
    let mut dep = None;
    assert!(fast.try_weak(TxnId(5), 5, r, true, &mut dep, || Lsn(600)));
    assert_eq!(dep, None);
    assert!(fast.release(TxnId(5), 5, None, Lsn(600)));
    assert!(lm.is_empty());
    // A drop (or a create) released early does: every weak request depends on it until
    // it is durable.
    fast.begin_strong(&lm, table, Lsn(600));
    fast.end_strong(TableLock::Drop.mode(), Some(Lsn(800)));
    let mut dep = Some(Lsn(650));
    assert!(fast.try_weak(TxnId(6), 6, r, true, &mut dep, || Lsn(600)));
    assert_eq!(dep, Some(Lsn(800)));
    let mut dep = None;
    assert!(fast.try_weak(TxnId(7), 7, w, true, &mut dep, || Lsn(900)));
    assert_eq!(dep, None, "durable by now");
}
