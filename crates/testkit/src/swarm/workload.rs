//! The work of one session, and the oracle that watches it while it runs.
//!
//! Each client thread owns keys (`o{t}.NNN`) in both owned tables and keeps an exact
//! model of them: every read of an owned key — a `get`, the old value a `put` or
//! `delete` returns, a scan of the thread's whole range — must match the model with the
//! transaction's own uncommitted writes applied. A writing transaction may also transfer
//! an amount between two accounts (shared by all threads), and always inserts a marker
//! row (`m{t}.{session}.{i}`) into one to three marker tables, all or none of which a
//! recovered database must hold. Read-only audits scan every account in one transaction
//! and must see the loaded total. The first broken rule stops the session.
//!
//! Locks are taken in one global order — accounts in (table, key) order by transfers and
//! audits alike, owned keys and markers by their owner alone, each thread's keys fenced
//! off from the next thread's by a key loaded at creation (`o{t}~`, `m{t}~`) so that no
//! gap is shared — so clients never deadlock and lock timeouts are rare.

use super::config::{Config, ACCT, INITIAL_BALANCE, MARK, MAX_THREADS, OWN};
use super::engine::{Db, Ops, Rows, Tbl, Tx};
use crate::crash::{make_value, ValueShape};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::{AgentOptions, Agents, Error, Finished, Outcome, Transaction};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A write of a transaction: (table index, key, new value or `None` for a delete).
pub(crate) type Write = (usize, Vec<u8>, Option<Vec<u8>>);

/// An account: (table index, key).
type Account = (usize, Vec<u8>);

/// A key owned by thread `t`.
pub(crate) fn owned_key(t: usize, k: u32) -> Vec<u8> {
    format!("o{t}.{k:03}").into_bytes()
}

/// The range of thread `t`'s owned keys: `[o{t}., o{t}/)`.
pub(crate) fn owned_range(t: usize) -> (Vec<u8>, Vec<u8>) {
    (format!("o{t}.").into_bytes(), format!("o{t}/").into_bytes())
}

/// The marker of thread `t`'s `i`-th transaction of session `s`.
pub(crate) fn marker_key(t: usize, s: usize, i: usize) -> Vec<u8> {
    format!("m{t}.{s}.{i:04}").into_bytes()
}

/// An account's key.
pub(crate) fn account_key(a: u32) -> Vec<u8> {
    format!("a{a:02}").into_bytes()
}

/// The rows loaded at creation: the accounts, and for every possible thread a fence after
/// its owned keys in each owned table and after its markers in each marker table.
pub(crate) fn initial_rows(cfg: &Config) -> Rows {
    let mut rows = Rows::new();
    for &t in &ACCT {
        for a in 0..cfg.accounts {
            rows.insert((t, account_key(a)), INITIAL_BALANCE.to_le_bytes().to_vec());
        }
    }
    for th in 0..MAX_THREADS {
        for &t in &OWN {
            rows.insert((t, format!("o{th}~").into_bytes()), b"fence".to_vec());
        }
        for &t in &MARK {
            rows.insert((t, format!("m{th}~").into_bytes()), b"fence".to_vec());
        }
    }
    rows
}

/// The sum every audit must see.
pub(crate) fn total(cfg: &Config) -> i64 {
    INITIAL_BALANCE * i64::from(cfg.accounts) * ACCT.len() as i64
}

/// A transaction whose commit was attempted.
#[derive(Debug, Clone)]
pub(crate) struct Attempt {
    /// Its number in its thread's session (its marker's).
    pub(crate) index: usize,
    /// Its writes to owned keys and its markers, in order (transfers are not modelled:
    /// the sums check them).
    pub(crate) writes: Vec<Write>,
    /// The commit returned (`false`: it failed, and the transaction may or may not
    /// have committed).
    pub(crate) acked: bool,
}

/// What one thread did in a session.
#[derive(Debug, Clone, Default)]
pub(crate) struct ThreadLog {
    /// Transactions whose commit was attempted, in order; at most the last is unacked.
    pub(crate) attempts: Vec<Attempt>,
    /// Markers of transactions that rolled back: never to be seen.
    pub(crate) rolled_back: Vec<Write>,
}

/// What a session's work did.
#[derive(Debug, Default)]
pub(crate) struct SessionRun {
    pub(crate) threads: Vec<ThreadLog>,
    /// The first rule the work broke.
    pub(crate) violation: Option<String>,
    /// Audits that saw the total.
    pub(crate) audits: u64,
    /// Transactions refused for lack of pool frames (tolerated, counted).
    pub(crate) pool_full: u64,
    /// Transactions rolled back as deadlock victims or after a lock timeout.
    pub(crate) retryable: u64,
}

/// Whether an error may happen in a run the halt is allowed to break: a lost lock
/// conflict, the disk (directly or by poisoning), a closed database or pool, or a pool
/// too small for the concurrency. Anything else (corruption, a refused argument, a
/// panic) is a broken rule.
fn tolerated(e: &Error) -> bool {
    match e {
        Error::TransactionFailed { cause, .. } => tolerated(cause),
        Error::BufferPoolFull(_) | Error::Closed(_) => true,
        e => e.is_retryable() || e.is_io(),
    }
}

/// What a writing transaction does, drawn before it runs (so an agent's body is a
/// plain function of it).
#[derive(Debug, Clone)]
struct Plan {
    index: usize,
    ops: Vec<OwnedOp>,
    /// (from, to, amount), `from < to`.
    transfer: Option<(Account, Account, i64)>,
    markers: Vec<usize>,
    marker: Vec<u8>,
    /// Roll back at the end: `Some(true)` by dropping the transaction.
    rollback: Option<bool>,
}

#[derive(Debug, Clone)]
enum OwnedOp {
    Get(usize, Vec<u8>),
    Put(usize, Vec<u8>, Vec<u8>),
    Delete(usize, Vec<u8>),
    /// A scan of the thread's whole range of an owned table.
    Scan(usize),
}

/// A transaction's result as the body sees it: its writes, or the rule it broke.
type Body = Result<Vec<Write>, String>;

/// Runs a writing transaction's operations on `tx`, checking every read of an owned key
/// against `model` with the transaction's own writes applied.
fn run_plan(
    tx: &mut impl Ops,
    tables: &[Tbl],
    t: usize,
    model: &Rows,
    plan: &Plan,
) -> Result<Body, Error> {
    let mut view = model.clone();
    let mut writes = Vec::new();
    let expect = |what: &str, key: &[u8], want: Option<&Vec<u8>>, got: Option<&Vec<u8>>| {
        if want == got {
            return Ok(());
        }
        Err(format!(
            "thread {t}'s transaction {}: {what} of its own key {} returned {} but its model holds {}",
            plan.index,
            String::from_utf8_lossy(key),
            show(got),
            show(want)
        ))
    };
    for op in &plan.ops {
        let r = match op {
            OwnedOp::Get(tb, k) => {
                let got = tx.get(&tables[*tb], k)?;
                expect("a get", k, view.get(&(*tb, k.clone())), got.as_ref())
            }
            OwnedOp::Put(tb, k, v) => {
                let old = tx.put(&tables[*tb], k, v)?;
                let r = expect("a put", k, view.get(&(*tb, k.clone())), old.as_ref());
                view.insert((*tb, k.clone()), v.clone());
                writes.push((*tb, k.clone(), Some(v.clone())));
                r
            }
            OwnedOp::Delete(tb, k) => {
                let old = tx.delete(&tables[*tb], k)?;
                let r = expect("a delete", k, view.get(&(*tb, k.clone())), old.as_ref());
                view.remove(&(*tb, k.clone()));
                writes.push((*tb, k.clone(), None));
                r
            }
            OwnedOp::Scan(tb) => {
                let (from, to) = owned_range(t);
                let got = tx.scan(&tables[*tb], Some((from.clone(), to.clone())))?;
                let want: Vec<(Vec<u8>, Vec<u8>)> = view
                    .range((*tb, from)..(*tb, to))
                    .map(|((_, k), v)| (k.clone(), v.clone()))
                    .collect();
                if got == want {
                    Ok(())
                } else {
                    Err(format!(
                        "thread {t}'s transaction {}: a scan of its own keys returned {} rows but its model holds {}; {}",
                        plan.index,
                        got.len(),
                        want.len(),
                        first_difference(&want, &got)
                    ))
                }
            }
        };
        if let Err(broke) = r {
            return Ok(Err(broke));
        }
    }
    if let Some((from, to, amount)) = &plan.transfer {
        // Both accounts locked for update in (table, key) order: the global order.
        let a = balance(tx.get_for_update(&tables[from.0], &from.1)?);
        let b = balance(tx.get_for_update(&tables[to.0], &to.1)?);
        let (Some(a), Some(b)) = (a, b) else {
            return Ok(Err(format!(
                "thread {t}'s transaction {}: an account is missing or not 8 bytes",
                plan.index
            )));
        };
        tx.put(&tables[from.0], &from.1, &(a - amount).to_le_bytes())?;
        tx.put(&tables[to.0], &to.1, &(b + amount).to_le_bytes())?;
    }
    for &m in &plan.markers {
        let old = tx.put(&tables[m], &plan.marker, &plan.marker)?;
        if old.is_some() {
            return Ok(Err(format!(
                "thread {t}'s transaction {}: its new marker {} already existed",
                plan.index,
                String::from_utf8_lossy(&plan.marker)
            )));
        }
        writes.push((m, plan.marker.clone(), Some(plan.marker.clone())));
    }
    Ok(Ok(writes))
}

fn balance(v: Option<Vec<u8>>) -> Option<i64> {
    Some(i64::from_le_bytes(v?.try_into().ok()?))
}

fn show(v: Option<&Vec<u8>>) -> String {
    match v {
        None => "nothing".into(),
        Some(v) => {
            let end = v.iter().position(|&b| b == b':').unwrap_or(v.len().min(24));
            format!("{}({} B)", String::from_utf8_lossy(&v[..end]), v.len())
        }
    }
}

fn first_difference(want: &[(Vec<u8>, Vec<u8>)], got: &[(Vec<u8>, Vec<u8>)]) -> String {
    let i = want
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .unwrap_or(want.len().min(got.len()));
    let key = |r: Option<&(Vec<u8>, Vec<u8>)>| {
        r.map_or("the end".to_string(), |(k, v)| {
            format!("{}={}", String::from_utf8_lossy(k), show(Some(v)))
        })
    };
    format!(
        "first difference at row {i}: model {} got {}",
        key(want.get(i)),
        key(got.get(i))
    )
}

/// An audit: every account in one read-only transaction, whose sum must be the total;
/// with `own_scan`, also a scan of the thread's range of that owned table, which must
/// match its model.
fn audit(
    tx: &mut impl Ops,
    tables: &[Tbl],
    cfg: &Config,
    t: usize,
    model: &Rows,
    own_scan: Option<usize>,
) -> Result<Result<(), String>, Error> {
    let mut sum = 0i64;
    let mut n = 0;
    for &tb in &ACCT {
        for (k, v) in tx.scan(&tables[tb], None)? {
            let Some(b) = balance(Some(v)) else {
                return Ok(Err(format!(
                    "an audit read account {} of other than 8 bytes",
                    String::from_utf8_lossy(&k)
                )));
            };
            sum += b;
            n += 1;
        }
    }
    let (want_sum, want_n) = (total(cfg), cfg.accounts as usize * ACCT.len());
    if sum != want_sum || n != want_n {
        return Ok(Err(format!(
            "thread {t}'s audit saw {n} accounts summing to {sum}, not {want_n} summing to {want_sum}"
        )));
    }
    if let Some(tb) = own_scan {
        let (from, to) = owned_range(t);
        let got = tx.scan(&tables[tb], Some((from.clone(), to.clone())))?;
        let want: Vec<(Vec<u8>, Vec<u8>)> = model
            .range((tb, from)..(tb, to))
            .map(|((_, k), v)| (k.clone(), v.clone()))
            .collect();
        if got != want {
            return Ok(Err(format!(
                "thread {t}'s audit: a scan of its own keys disagrees with its model; {}",
                first_difference(&want, &got)
            )));
        }
    }
    Ok(Ok(()))
}

/// Draws thread `t`'s `index`-th writing transaction.
fn draw_plan(
    rng: &mut StdRng,
    cfg: &Config,
    max_entry: usize,
    t: usize,
    session: usize,
    index: usize,
) -> Plan {
    let mut ops = Vec::new();
    for op in 0..rng.gen_range(1..=5) {
        let tb = OWN[rng.gen_range(0..OWN.len())];
        let k = rng.gen_range(0..cfg.owned_keys);
        let key = owned_key(t, k);
        ops.push(match rng.gen_range(0..10) {
            0..=1 => OwnedOp::Get(tb, key),
            2 => OwnedOp::Delete(tb, key),
            3 => OwnedOp::Scan(tb),
            _ => {
                let shape = if rng.gen_bool(cfg.large.share) {
                    ValueShape::Large(
                        rng.gen_range(max_entry + 1..=max_entry * cfg.large.max_entries),
                    )
                } else {
                    let pad = if cfg.wide_values { max_entry / 2 } else { 60 };
                    ValueShape::Short(rng.gen_range(0..pad))
                };
                let tag = format!("{}.{session}.{t}.{index}.{op}", cfg.seed);
                OwnedOp::Put(tb, key, make_value(&tag, k, shape))
            }
        });
    }
    let transfer = rng.gen_bool(0.5).then(|| {
        let mut a = (
            ACCT[rng.gen_range(0..ACCT.len())],
            rng.gen_range(0..cfg.accounts),
        );
        let mut b = (
            ACCT[rng.gen_range(0..ACCT.len())],
            rng.gen_range(0..cfg.accounts),
        );
        if a == b {
            b.1 = (b.1 + 1) % cfg.accounts;
        }
        let amount = rng.gen_range(1..=30);
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        ((a.0, account_key(a.1)), (b.0, account_key(b.1)), amount)
    });
    let mut markers: Vec<usize> = MARK.iter().copied().filter(|_| rng.gen_bool(0.5)).collect();
    if markers.is_empty() {
        markers.push(MARK[rng.gen_range(0..MARK.len())]);
    }
    let rollback = rng.gen_bool(0.15).then(|| rng.gen_bool(0.5));
    Plan {
        index,
        ops,
        transfer,
        markers,
        marker: marker_key(t, session, index),
        rollback,
    }
}

impl Plan {
    /// The writes the plan makes to owned keys and markers, in order.
    fn writes(&self) -> Vec<Write> {
        let mut w: Vec<Write> = self
            .ops
            .iter()
            .filter_map(|op| match op {
                OwnedOp::Put(tb, k, v) => Some((*tb, k.clone(), Some(v.clone()))),
                OwnedOp::Delete(tb, k) => Some((*tb, k.clone(), None)),
                OwnedOp::Get(..) | OwnedOp::Scan(_) => None,
            })
            .collect();
        w.extend(
            self.markers
                .iter()
                .map(|&m| (m, self.marker.clone(), Some(self.marker.clone()))),
        );
        w
    }

    fn marker_writes(&self) -> Vec<Write> {
        self.markers
            .iter()
            .map(|&m| (m, self.marker.clone(), Some(self.marker.clone())))
            .collect()
    }
}

/// How one transaction of a client ended.
enum Ended {
    /// Committed (acknowledged), rolled back as planned, or an audit that passed.
    Done,
    /// Lost a lock conflict, or found the pool full: rolled back; go on.
    Retry { pool_full: bool },
    /// The database failed (the halt): this client stops.
    Stop,
    /// A rule broke.
    Broke(String),
}

/// A client: one thread's transactions, run directly or through the agents.
struct Client<'a> {
    t: usize,
    cfg: &'a Config,
    db: &'a Db,
    tables: &'a [Tbl],
    agents: Option<&'a Agents>,
    /// The committed values of the thread's owned keys.
    model: Rows,
    log: ThreadLog,
}

impl Client<'_> {
    fn error(&self, e: Error) -> Ended {
        if !tolerated(&e) {
            return Ended::Broke(format!("thread {}: unexpected error: {e}", self.t));
        }
        let pool_full = |e: &Error| matches!(e, Error::BufferPoolFull(_));
        if e.is_retryable() {
            Ended::Retry { pool_full: false }
        } else if pool_full(&e)
            || matches!(&e, Error::TransactionFailed { cause, .. } if pool_full(cause))
        {
            Ended::Retry { pool_full: true }
        } else {
            Ended::Stop
        }
    }

    /// An audit; `retrying`: of an ordinary database without agents, through
    /// `Database::transaction` (which retries lost lock conflicts itself).
    fn audit(&mut self, own_scan: Option<usize>, retrying: bool) -> Ended {
        let (t, cfg) = (self.t, self.cfg);
        let r = match (self.agents, self.db.plain()) {
            (None, Some(db)) if retrying => {
                let (tables, model) = (self.tables, &self.model);
                db.transaction(|tx| audit(tx, tables, cfg, t, model, own_scan))
            }
            _ => self.audit_once(own_scan),
        };
        match r {
            Ok(Ok(())) => Ended::Done,
            Ok(Err(b)) => Ended::Broke(b),
            Err(e) => self.error(e),
        }
    }

    fn audit_once(&mut self, own_scan: Option<usize>) -> Result<Result<(), String>, Error> {
        let (t, cfg) = (self.t, self.cfg);
        match self.agents {
            Some(agents) => {
                let (tables, cfg, model) = (self.tables.to_vec(), cfg.clone(), self.model.clone());
                agents
                    .execute(move |tx: &mut Transaction| {
                        Ok(match audit(tx, &tables, &cfg, t, &model, own_scan)? {
                            Ok(()) => Outcome::Commit(Ok(())),
                            Err(b) => Outcome::Rollback(Err(b)),
                        })
                    })
                    .wait()
                    .map(|f| f.value)
            }
            None => {
                let mut tx = self.db.begin();
                match audit(&mut tx, self.tables, cfg, t, &self.model, own_scan) {
                    Ok(Ok(())) => tx.commit().map(Ok),
                    // The reads were delivered: a violation whatever follows, but say
                    // whether the database still took work and the audit could commit.
                    Ok(Err(b)) => {
                        let commit = match tx.commit() {
                            Ok(()) => "committed".to_string(),
                            Err(e) => format!("did not commit: {e}"),
                        };
                        Ok(Err(format!("{b} (the audit then {commit})")))
                    }
                    Err(e) => {
                        let _ = tx.rollback();
                        Err(e)
                    }
                }
            }
        }
    }

    fn write(&mut self, plan: Plan) -> Ended {
        // Whether the transaction reached its commit: then a failure leaves its outcome
        // unknown, and it is an attempt (the oracle accepts it either way, as the last
        // of the thread's prefix).
        let decided = Arc::new(AtomicBool::new(false));
        let r: Result<Finished<Body>, Error> = match self.agents {
            Some(agents) => {
                let (tables, model, p, d) = (
                    self.tables.to_vec(),
                    self.model.clone(),
                    plan.clone(),
                    decided.clone(),
                );
                let t = self.t;
                agents
                    .execute(move |tx: &mut Transaction| {
                        Ok(match run_plan(tx, &tables, t, &model, &p)? {
                            Err(b) => Outcome::Rollback(Err(b)),
                            Ok(w) if p.rollback.is_some() => Outcome::Rollback(Ok(w)),
                            Ok(w) => {
                                d.store(true, Ordering::Release);
                                Outcome::Commit(Ok(w))
                            }
                        })
                    })
                    .wait()
            }
            None => {
                let mut tx = self.db.begin();
                match run_plan(&mut tx, self.tables, self.t, &self.model, &plan) {
                    Err(e) => {
                        let _ = tx.rollback();
                        Err(e)
                    }
                    Ok(Err(b)) => {
                        let _ = tx.rollback();
                        Ok(Finished {
                            value: Err(b),
                            committed: false,
                        })
                    }
                    Ok(Ok(w)) => match plan.rollback {
                        // Dropped without commit or rollback: it rolls back.
                        Some(true) => {
                            drop(tx);
                            Ok(Finished {
                                value: Ok(w),
                                committed: false,
                            })
                        }
                        Some(false) => tx.rollback().map(|()| Finished {
                            value: Ok(w),
                            committed: false,
                        }),
                        None => {
                            decided.store(true, Ordering::Release);
                            commit(tx).map(|()| Finished {
                                value: Ok(w),
                                committed: true,
                            })
                        }
                    },
                }
            }
        };
        let decided = decided.load(Ordering::Acquire);
        match r {
            Ok(Finished { value: Err(b), .. }) => {
                self.log.rolled_back.extend(plan.marker_writes());
                Ended::Broke(b)
            }
            Ok(Finished {
                value: Ok(writes),
                committed: true,
            }) => {
                for (tb, k, v) in &writes {
                    if OWN.contains(tb) {
                        match v {
                            Some(v) => self.model.insert((*tb, k.clone()), v.clone()),
                            None => self.model.remove(&(*tb, k.clone())),
                        };
                    }
                }
                self.log.attempts.push(Attempt {
                    index: plan.index,
                    writes,
                    acked: true,
                });
                Ended::Done
            }
            Ok(Finished {
                committed: false, ..
            }) => {
                self.log.rolled_back.extend(plan.marker_writes());
                Ended::Done
            }
            Err(e) if decided => {
                self.log.attempts.push(Attempt {
                    index: plan.index,
                    writes: plan.writes(),
                    acked: false,
                });
                match self.error(e) {
                    Ended::Broke(b) => Ended::Broke(b),
                    // The outcome is unknown: nothing more from this thread, so that
                    // the attempt stays the last of its prefix.
                    _ => Ended::Stop,
                }
            }
            Err(e) => {
                self.log.rolled_back.extend(plan.marker_writes());
                self.error(e)
            }
        }
    }
}

fn commit(tx: Tx) -> Result<(), Error> {
    tx.commit()
}

/// Runs session `session`'s work on `db`: `cfg.threads` clients of `cfg.txns`
/// transactions each, starting from the `settled` state, with the online checks of the
/// module docs. Returns when every client has stopped.
pub(crate) fn run_session(
    db: &Db,
    tables: &[Tbl],
    cfg: &Config,
    session: usize,
    settled: &Rows,
    rng: &mut StdRng,
) -> SessionRun {
    let seeds: Vec<u64> = (0..cfg.threads).map(|_| rng.gen()).collect();
    let stop = AtomicBool::new(false);
    let agents = match (cfg.agents(), db.plain()) {
        (Some(n), Some(d)) => Some(Agents::start_with(
            d,
            AgentOptions {
                agents: n,
                on_commit_record: None,
                protocol: None,
            },
        )),
        _ => None,
    };
    let max_entry = db.limits().max_entry;
    let run = Mutex::new(SessionRun::default());
    std::thread::scope(|s| {
        let handles: Vec<_> = seeds
            .iter()
            .enumerate()
            .map(|(t, &ts)| {
                let (stop, run, agents) = (&stop, &run, agents.as_ref());
                s.spawn(move || {
                    let (from, to) = owned_range(t);
                    let model = settled
                        .iter()
                        .filter(|((tb, k), _)| {
                            OWN.contains(tb) && k.as_slice() >= &from[..] && k.as_slice() < &to[..]
                        })
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    let mut c = Client {
                        t,
                        cfg,
                        db,
                        tables,
                        agents,
                        model,
                        log: ThreadLog::default(),
                    };
                    let mut rng = StdRng::seed_from_u64(ts);
                    let (mut audits, mut pool_full, mut retryable) = (0, 0, 0);
                    for i in 0..cfg.txns {
                        if stop.load(Ordering::Acquire) {
                            break;
                        }
                        let ended = if rng.gen_bool(0.2) {
                            let own_scan =
                                rng.gen_bool(0.5).then(|| OWN[rng.gen_range(0..OWN.len())]);
                            let e = c.audit(own_scan, rng.gen_bool(0.5));
                            audits += matches!(e, Ended::Done) as u64;
                            e
                        } else {
                            let plan = draw_plan(&mut rng, cfg, max_entry, t, session, i);
                            c.write(plan)
                        };
                        match ended {
                            Ended::Done => {}
                            Ended::Retry { pool_full: full } => {
                                pool_full += full as u64;
                                retryable += !full as u64;
                            }
                            Ended::Stop => break,
                            Ended::Broke(b) => {
                                stop.store(true, Ordering::Release);
                                let b = match db.health() {
                                    Ok(()) => b,
                                    Err(e) => format!("{b} [the database had failed: {e}]"),
                                };
                                run.lock().expect("session run").violation.get_or_insert(b);
                                break;
                            }
                        }
                    }
                    let mut r = run.lock().expect("session run");
                    r.audits += audits;
                    r.pool_full += pool_full;
                    r.retryable += retryable;
                    (t, c.log)
                })
            })
            .collect();
        let mut logs: Vec<(usize, ThreadLog)> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        logs.sort_by_key(|(t, _)| *t);
        run.lock().expect("session run").threads = logs.into_iter().map(|(_, l)| l).collect();
    });
    if let Some(a) = agents {
        a.shutdown();
    }
    run.into_inner().expect("session run")
}
