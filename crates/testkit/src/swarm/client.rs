//! A session's clients: each thread runs its transactions — directly, or submitted to a
//! pool of agents — and the first rule one breaks stops them all. What a transaction
//! does and checks is in `workload`; here is how it runs and how it ended: committed
//! (acknowledged), rolled back as planned, lost a lock conflict, met the halt (then its
//! thread stops, an unknown outcome counted as an attempt), or broke a rule.

use super::config::{Config, OWN};
use super::engine::{Db, Rows, Tbl, Tx};
use super::scratch::{self, TableCounts};
use super::workload::{audit, draw_plan, owned_range, run_plan, Attempt, Body, Plan, ThreadLog};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::experiment::{AgentOptions, Agents, Finished, Outcome};
use sluice::{Durability, Error, Transaction};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

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
    /// What committed transactions did to scratch tables.
    pub(crate) tables: TableCounts,
    /// Compactions that completed (`Config::compact`), and the pages they returned.
    pub(crate) compactions: u64,
    pub(crate) pages_returned: u64,
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
    /// The committed values of the thread's owned keys and scratch tables.
    model: Rows,
    log: ThreadLog,
    table_ops: TableCounts,
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

    /// Handles of the scratch tables `plan` drops or renames, looked up before it
    /// begins (none in a partitioned database, whose plans have no table operations).
    fn handles(&self, plan: &Plan) -> Result<Vec<(String, Tbl)>, Error> {
        let needed = scratch::needed(&plan.tables);
        match self.db.plain() {
            Some(db) => needed
                .into_iter()
                .map(|n| db.table(&n).map(|t| (n, Tbl::Plain(t))))
                .collect(),
            None => Ok(Vec::new()),
        }
    }

    fn write(&mut self, plan: Plan) -> Ended {
        let handles = match self.handles(&plan) {
            Ok(h) => h,
            Err(e) => {
                self.log.rolled_back.extend(plan.marker_writes());
                return self.error(e);
            }
        };
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
                        Ok(match run_plan(tx, &tables, &handles, t, &model, &p)? {
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
                match run_plan(&mut tx, self.tables, &handles, self.t, &self.model, &plan) {
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
                    if OWN.contains(tb) || scratch::owned_by(self.t, *tb, k) {
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
                    is_async: plan.durability == Durability::Async,
                });
                self.table_ops.add(&plan.tables);
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
                    is_async: plan.durability == Durability::Async,
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

/// Compacts `db` again and again, a millisecond apart, until `done`: the compactions that
/// completed, the pages they returned, and the rule a failure broke. A full pool or a
/// lost lock conflict only skips one compaction; an error the halt explains ends the
/// loop quietly (the recoveries judge what it left).
fn compact_until(db: &Db, done: impl Fn() -> bool) -> (u64, u64, Option<String>) {
    let (mut n, mut pages) = (0, 0);
    while !done() {
        match db.compact() {
            Ok(p) => {
                n += 1;
                pages += p;
            }
            Err(Error::BufferPoolFull(_)) => {}
            Err(e) if e.is_retryable() && db.health().is_ok() => {}
            Err(e) if tolerated(&e) || db.health().is_err() => break,
            Err(e) => return (n, pages, Some(format!("a compaction failed: {e}"))),
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    (n, pages, None)
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
                time_breakdown: cfg.agent_clocks,
            },
        )),
        _ => None,
    };
    let max_entry = db.limits().max_entry;
    let run = Mutex::new(SessionRun::default());
    let clients_done = AtomicBool::new(false);
    std::thread::scope(|s| {
        if cfg.compact {
            let (stop, done, run) = (&stop, &clients_done, &run);
            s.spawn(move || {
                let (n, pages, broke) = compact_until(db, || {
                    done.load(Ordering::Acquire) || stop.load(Ordering::Acquire)
                });
                let mut r = run.lock().expect("session run");
                r.compactions += n;
                r.pages_returned += pages;
                if let Some(b) = broke {
                    r.violation.get_or_insert(b);
                }
            });
        }
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
                                || scratch::owned_by(t, *tb, k)
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
                        table_ops: TableCounts::default(),
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
                            let plan = draw_plan(&mut rng, cfg, max_entry, &c.model, t, session, i);
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
                    r.tables.merge(c.table_ops);
                    (t, c.log)
                })
            })
            .collect();
        let mut logs: Vec<(usize, ThreadLog)> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        clients_done.store(true, Ordering::Release);
        logs.sort_by_key(|(t, _)| *t);
        run.lock().expect("session run").threads = logs.into_iter().map(|(_, l)| l).collect();
    });
    if let Some(a) = agents {
        a.shutdown();
    }
    run.into_inner().expect("session run")
}
