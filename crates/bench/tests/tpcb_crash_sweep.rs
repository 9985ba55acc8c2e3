//! TPC-B itself under crashes: a small TPC-B database over the simulated disk, clients
//! submitting to agents under each durable commit protocol, and the machine halted at a
//! seeded random point — a power loss; a process kill, a reopen in the same boot (from the
//! page cache) and then a power loss; or a failed fsync (EIO or ENOSPC) and then a kill.
//! After every recovery TPC-B's consistency must hold: every balance identity, every
//! acknowledged transaction's history row present, no more history rows than transactions
//! that wrote a commit record — and what a recovery showed must survive the next halt.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sluice::experiment::{AgentOptions, Agents, Outcome};
use sluice::{CommitProtocol, Database, Error, Options};
use sluice_bench::workloads::tpcb::{self, TpcbGenerator, TpcbShape, TpcbTables};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage};
use sluice_testkit::fence::FencedStorage;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

const SEEDS: u64 = 400;
const CLIENTS: usize = 4;
const TXNS_PER_CLIENT: usize = 30;

fn options(p: CommitProtocol) -> Options {
    let mut o = Options::small();
    o.commit = p;
    o.pool_pages = 24;
    o.checkpoint_log_bytes = 32 << 10;
    o.log.segment_bytes = 16 << 10;
    o
}

fn shape() -> TpcbShape {
    TpcbShape {
        scale: 2,
        skew: 0.8,
        local_only: false,
        accounts_per_branch: 40,
    }
}

#[derive(Default)]
struct Tally {
    acked: HashSet<u64>,
    done: usize,
}

struct Client {
    sub: sluice::experiment::Submitter,
    tables: TpcbTables,
    gen: Arc<TpcbGenerator>,
    rng: Mutex<SmallRng>,
    id: u64,
    tally: Arc<(Mutex<Tally>, Condvar)>,
}

fn next(c: Arc<Client>, i: usize) {
    let finish = |c: &Client| {
        c.tally.0.lock().unwrap().done += 1;
        c.tally.1.notify_all();
    };
    if i == TXNS_PER_CLIENT {
        return finish(&c);
    }
    let hid = c.id << 32 | i as u64;
    let input = c.gen.next(&mut *c.rng.lock().unwrap(), hid);
    let tables = c.tables.clone();
    let c2 = c.clone();
    c.sub.submit(
        move |tx| {
            tpcb::run(tx, &tables, &input)?;
            Ok(Outcome::Commit(hid))
        },
        move |r: Result<sluice::experiment::Finished<u64>, Error>| match r {
            Ok(f) => {
                c2.tally.0.lock().unwrap().acked.insert(f.value);
                next(c2, i + 1);
            }
            Err(_) => finish(&c2),
        },
    );
}

fn history_ids(db: &Database, t: &TpcbTables) -> HashSet<u64> {
    let mut tx = db.begin();
    let ids = tx
        .scan_all(&t.history)
        .map(|r| u64::from_be_bytes(r.unwrap().0.try_into().unwrap()))
        .collect();
    tx.commit().unwrap();
    ids
}

/// One seed; returns (acknowledged, commit records, crashed mid-run).
fn run_seed(seed: u64, p: CommitProtocol) -> (u64, u64, bool) {
    let sim = SimStorage::new(seed);
    let mut rng = SmallRng::seed_from_u64(seed);
    let db = Database::open_on(FencedStorage::for_incarnation(&sim), "/db", options(p)).unwrap();
    let tables = tpcb::load(&db, &shape(), |_| {}).unwrap();
    db.checkpoint().unwrap();
    let commits = Arc::new(AtomicU64::new(0));
    let c2 = commits.clone();
    let agents = Agents::start_with(
        &db,
        AgentOptions {
            agents: if p.pipelined() { 2 } else { CLIENTS },
            protocol: None,
            on_commit_record: Some(Arc::new(move |_, _| {
                c2.fetch_add(1, Ordering::SeqCst);
            })),
            time_breakdown: false,
        },
    );
    let gen = Arc::new(TpcbGenerator::new(shape()).unwrap());
    let tally = Arc::new((Mutex::new(Tally::default()), Condvar::new()));
    // Three halts, in turn: power loss, kill (then power loss), failed fsync (then kill).
    let halt = seed % 3;
    match halt {
        0 => sim.crash_at_op(rng.gen_range(1..=400)),
        1 => sim.kill_at_op(rng.gen_range(1..=400)),
        _ => {
            let kind = if rng.gen_bool(0.5) {
                FaultKind::Eio
            } else {
                FaultKind::Enospc
            };
            sim.inject(FaultPlan::new(FaultOp::Sync, rng.gen_range(1..=30), kind));
        }
    }
    let incarnation = sim.incarnation();
    for id in 0..CLIENTS as u64 {
        let c = Arc::new(Client {
            sub: agents.submitter(),
            tables: tables.clone(),
            gen: gen.clone(),
            rng: Mutex::new(SmallRng::seed_from_u64(seed * 100 + id)),
            id,
            tally: tally.clone(),
        });
        next(c, 0);
    }
    {
        let mut t = tally.0.lock().unwrap();
        while t.done < CLIENTS {
            t = tally.1.wait(t).unwrap();
        }
    }
    agents.shutdown();
    sim.clear_faults();
    sim.disarm_crash();
    let mid_run = sim.incarnation() > incarnation;
    if !mid_run {
        if halt == 0 {
            sim.crash();
        } else {
            sim.kill_process();
        }
    }
    let killed = sim.killed_count() > 0;
    drop(db);
    let acked = std::mem::take(&mut tally.0.lock().unwrap().acked);
    let commit_records = commits.load(Ordering::SeqCst);

    // After a kill the database is reopened in the same boot, from the page cache, and
    // what it shows must survive the power loss that follows.
    let shown = if killed {
        let ids = check_recovered(&sim, seed, p, &acked, commit_records);
        sim.crash();
        Some(ids)
    } else {
        None
    };
    let ids = check_recovered(&sim, seed, p, &acked, commit_records);
    if let Some(shown) = shown {
        assert_eq!(
            ids.len(),
            shown.len(),
            "seed {seed} {p}: history rows shown after the kill were lost by a power loss"
        );
        assert!(
            ids == shown,
            "seed {seed} {p}: the history changed across the power loss"
        );
    }
    (acked.len() as u64, commit_records, mid_run)
}

/// Recovers, checks TPC-B's consistency and the acknowledged history, and returns the
/// history ids the recovered database shows.
fn check_recovered(
    sim: &SimStorage,
    seed: u64,
    p: CommitProtocol,
    acked: &HashSet<u64>,
    commit_records: u64,
) -> HashSet<u64> {
    let db = Database::open_on(FencedStorage::for_incarnation(sim), "/db", options(p))
        .unwrap_or_else(|e| panic!("seed {seed} {p}: recovery failed: {e}"));
    let tables = TpcbTables::open(&db).unwrap();
    let c = tpcb::check(&db, &tables, None).unwrap();
    assert!(c.ok(), "seed {seed} {p}: {:?}", c.violations);
    let ids = history_ids(&db, &tables);
    let lost: Vec<_> = acked.iter().filter(|h| !ids.contains(h)).collect();
    assert!(
        lost.is_empty(),
        "seed {seed} {p}: acknowledged transactions lost: {lost:?}"
    );
    assert!(
        c.history_rows >= acked.len() as u64 && c.history_rows <= commit_records,
        "seed {seed} {p}: {} history rows, {} acknowledged, {commit_records} commit records",
        c.history_rows,
        acked.len()
    );
    db.verify().unwrap();
    db.close().unwrap();
    ids
}

#[test]
fn tpcb_stays_consistent_through_crashes_under_every_durable_protocol() {
    let protocols = [
        CommitProtocol::Classic,
        CommitProtocol::Elr,
        CommitProtocol::Pipelined,
        CommitProtocol::ElrPipelined,
    ];
    let (mut acked, mut records, mut mid) = (0, 0, 0);
    for seed in 0..SEEDS {
        let p = protocols[seed as usize % protocols.len()];
        let (a, r, m) = run_seed(seed, p);
        acked += a;
        records += r;
        mid += m as u64;
    }
    println!(
        "TPC-B crash sweep: {SEEDS} seeds over 4 protocols and 3 halts (power loss, kill then power loss, failed fsync then kill), {mid} halts mid-run, {acked} acknowledged, {records} commit records, 0 lost, 0 inconsistent"
    );
    assert!(acked > SEEDS * 10, "too little work to mean anything");
    assert!(mid > SEEDS / 3, "halts must hit running work");
}
