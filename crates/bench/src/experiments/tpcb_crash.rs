//! TPC-B under the simulated-disk crash sweep (`sluice crash-test sim --workload tpcb`):
//! a small TPC-B database (2 branches, 20 tellers, 1,000 accounts) loaded on a
//! [`sluice_storage::SimStorage`], client threads running TPC-B transactions with the
//! halt armed, and the halts, the halts during recovery and the rechecks of
//! [`sluice_testkit::crash::sweep`].
//!
//! The check after every recovery. Every transaction that reached its commit record is a
//! *candidate*, ordered by that record's LSN; those whose commit returned are
//! *acknowledged*. Commits are strict two-phase (record, durable, release), so the
//! recovered history must be the history rows of a prefix of the candidates that holds
//! every acknowledged one: a missing acknowledged row is a loss, any other gap or a row
//! of a transaction that never wrote its commit record is a violation. Every balance
//! must then equal exactly the sum of the deltas of the transactions whose history rows
//! are there (so no transaction is half applied), TPC-B's own identities must hold
//! ([`crate::workloads::tpcb::check`]: the sums, per branch and per teller, one history row per
//! transaction), every history row must hold its transaction's account and delta, and
//! every table must verify.

use crate::workloads::tpcb::{self, TpcbGenerator, TpcbInput, TpcbShape, TpcbTables};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::{CommitProtocol, Database, Error, Options};
use sluice_testkit::crash::{
    acknowledged, commit_noted, sweep, CrashReport, Outcome, SweepWorkload,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// Client threads.
const CLIENTS: usize = 4;
/// Transactions per client.
const TXNS_PER_CLIENT: usize = 30;
/// The run does about 250–450 mutating disk operations (each commit writes and syncs
/// the log; checkpoints every 32 KiB of log write pages): halts drawn from this range
/// land mostly inside it.
const CRASH_RANGE: u64 = 450;

/// The sweep's TPC-B: 2 branches of 500 accounts, a little skew so that transactions
/// meet on rows.
pub fn shape() -> TpcbShape {
    TpcbShape {
        scale: 2,
        skew: 0.5,
        local_only: false,
        accounts_per_branch: 500,
    }
}

fn options() -> Options {
    let mut o = Options::small();
    o.commit = CommitProtocol::Classic;
    o.pool_pages = 24;
    o.checkpoint_log_bytes = 32 << 10;
    o.log.segment_bytes = 16 << 10;
    o
}

/// What a recovered database shows: every row of the four tables.
type State = BTreeMap<(u8, Vec<u8>), Vec<u8>>;

struct Tpcb {
    tables: Option<TpcbTables>,
    outcomes: Vec<Outcome<TpcbInput>>,
}

/// The history id of the transaction run after the final recovery (apart from the
/// clients' `client << 32 | i`).
const AFTER_ID: u64 = 1 << 62;

fn read_state(db: &Database, t: &TpcbTables) -> Result<State, Error> {
    let mut s = State::new();
    let mut tx = db.begin();
    for (i, table) in [&t.branch, &t.teller, &t.account, &t.history]
        .into_iter()
        .enumerate()
    {
        for r in tx.scan_all(table) {
            let (k, v) = r?;
            s.insert((i as u8, k), v);
        }
    }
    tx.commit()?;
    Ok(s)
}

fn history_id(k: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(k.try_into().ok()?))
}

fn balance(v: &[u8]) -> Option<i64> {
    tpcb::decode_row(v).ok().map(|(_, b)| b)
}

impl Tpcb {
    /// Checks the recovered state against the candidates: the acknowledged transactions
    /// missing, or what is wrong.
    fn judge(&self, db: &Database, state: &State) -> Result<u64, String> {
        let t = TpcbTables::open(db).map_err(|e| format!("opening the tables: {e}"))?;
        let c = tpcb::check(db, &t, None).map_err(|e| format!("the TPC-B check failed: {e}"))?;
        if !c.ok() {
            return Err(format!("TPC-B identities: {}", c.violations.join("; ")));
        }
        let mut cands: Vec<&Outcome<TpcbInput>> = self
            .outcomes
            .iter()
            .filter(|o| o.commit.is_some())
            .collect();
        cands.sort_by_key(|o| o.commit);
        let by_id: HashMap<u64, &Outcome<TpcbInput>> =
            cands.iter().map(|o| (o.work.history_id, *o)).collect();
        let mut present = Vec::new();
        for ((table, k), v) in state.range((3, Vec::new())..) {
            debug_assert_eq!(*table, 3);
            let Some(id) = history_id(k) else {
                return Err(format!("a history key of {} bytes", k.len()));
            };
            let Some(o) = by_id.get(&id) else {
                return Err(format!(
                    "history row {id} of a transaction that never wrote its commit record"
                ));
            };
            if v[..] != tpcb::encode_history(&o.work)[..] {
                return Err(format!(
                    "history row {id} does not hold its transaction's account and delta"
                ));
            }
            present.push(id);
        }
        // The present rows must be those of a prefix of the candidates in commit order.
        let n = present.len();
        let lost = cands
            .iter()
            .filter(|o| o.acked && !present.contains(&o.work.history_id))
            .count() as u64;
        let prefix: std::collections::HashSet<u64> = cands[..n.min(cands.len())]
            .iter()
            .map(|o| o.work.history_id)
            .collect();
        if present.iter().any(|id| !prefix.contains(id)) {
            let gap = cands[..n.min(cands.len())]
                .iter()
                .find(|o| !present.contains(&o.work.history_id))
                .map_or(0, |o| o.work.history_id);
            return Err(format!(
                "the {n} recovered history rows are not a commit-order prefix of the {} candidates (first gap: transaction {gap}); {lost} acknowledged lost",
                cands.len()
            ));
        }
        // Every balance is the sum of the deltas of the transactions that are there.
        let shape = shape();
        let mut want: HashMap<(u8, u32), i64> = HashMap::new();
        for o in &cands[..n] {
            let i = &o.work;
            *want.entry((0, i.branch)).or_default() += i.delta;
            *want.entry((1, i.teller)).or_default() += i.delta;
            *want.entry((2, i.account)).or_default() += i.delta;
        }
        let rows = [
            (0u8, shape.scale),
            (1, shape.scale * tpcb::TELLERS_PER_BRANCH),
            (2, shape.scale * shape.accounts_per_branch),
        ];
        for (table, count) in rows {
            for id in 0..count {
                let got = state
                    .get(&(table, id.to_be_bytes().to_vec()))
                    .and_then(|v| balance(v));
                let w = want.get(&(table, id)).copied().unwrap_or(0);
                if got != Some(w) {
                    let name = ["branch", "teller", "account"][table as usize];
                    return Err(format!(
                        "{name} {id} holds balance {got:?}, the {n} recovered transactions make it {w}"
                    ));
                }
            }
        }
        Ok(lost)
    }
}

impl SweepWorkload for Tpcb {
    type Shown = State;

    fn options(&self) -> Options {
        options()
    }

    fn crash_range(&self) -> u64 {
        CRASH_RANGE
    }

    fn setup(&mut self, db: &Database) -> Result<(), Error> {
        let t = tpcb::load(db, &shape(), |_| {})?;
        // The load is durable before the halt is armed: the halts strike the workload.
        db.checkpoint()?;
        self.tables = Some(t);
        Ok(())
    }

    fn run(&mut self, db: &Database, rng: &mut StdRng) {
        let Some(tables) = self.tables.take() else {
            return;
        };
        let gen = TpcbGenerator::new(shape()).expect("a valid shape");
        let seeds: Vec<u64> = (0..CLIENTS).map(|_| rng.gen()).collect();
        let outcomes = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for (c, &seed) in seeds.iter().enumerate() {
                let (tables, gen, outcomes) = (&tables, &gen, &outcomes);
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(seed);
                    for i in 0..TXNS_PER_CLIENT {
                        let input = gen.next(&mut rng, (c as u64) << 32 | i as u64);
                        let mut tx = db.begin();
                        if tpcb::run(&mut tx, tables, &input).is_err() {
                            // The halt (or a lock timeout) ends this client.
                            let _ = tx.rollback();
                            return;
                        }
                        if commit_noted(tx, input, outcomes).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        self.outcomes = outcomes.into_inner().expect("outcomes");
    }

    fn acknowledged(&self) -> u64 {
        acknowledged(&self.outcomes)
    }

    fn check(&self, db: &Database) -> (u64, Result<State, String>) {
        let state = match TpcbTables::open(db).and_then(|t| read_state(db, &t)) {
            Ok(s) => s,
            Err(e) => return (0, Err(format!("reading a recovered state failed: {e}"))),
        };
        match self.judge(db, &state) {
            Ok(lost) => (lost, Ok(state)),
            Err(p) => (0, Err(p)),
        }
    }

    fn diff(&self, before: &State, after: &State) -> String {
        let keys: Vec<String> = before
            .keys()
            .chain(after.keys())
            .filter(|k| before.get(k) != after.get(k))
            .take(3)
            .map(|(t, k)| {
                let name = ["branch", "teller", "account", "history"][*t as usize];
                format!("{name} {k:02x?}")
            })
            .collect();
        format!("differing rows {keys:?}")
    }

    fn after_recovery(&self, db: &Database) -> Result<(), Error> {
        let t = TpcbTables::open(db)?;
        let gen = TpcbGenerator::new(shape()).map_err(Error::InvalidArgument)?;
        let input = gen.next(&mut StdRng::seed_from_u64(AFTER_ID), AFTER_ID);
        let mut tx = db.begin();
        tpcb::run(&mut tx, &t, &input)?;
        tx.commit()?;
        let c = tpcb::check(db, &t, None)?;
        if !c.ok() {
            return Err(Error::Corruption(format!(
                "TPC-B after new work: {}",
                c.violations.join("; ")
            )));
        }
        Ok(())
    }
}

/// Runs `seeds` seeds of TPC-B under the crash sweep, starting at `first_seed`, calling
/// `progress` with each seed finished.
pub fn crash_test_tpcb(seeds: u64, first_seed: u64, progress: impl FnMut(u64)) -> CrashReport {
    sweep(seeds, first_seed, progress, |_| Tpcb {
        tables: None,
        outcomes: Vec::new(),
    })
}
