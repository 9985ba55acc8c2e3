//! The workload: client threads running random transactions ([`super::body`])
//! against a database, directly or through an agent pool, every transaction recorded
//! with how it ended. Deadlock victims and lock timeouts abort, as they may: the
//! workload does not retry. A load transaction comes first and an audit (a read-only
//! scan of everything) last.

use super::body::{body, names, Ctx, Ending, Work, TABLES};
use super::config::{Config, Via};
use super::record::{End, Form, History, Op, Span, Txn, TxnNo};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sluice::experiment::{AgentOptions, Agents, Outcome};
use sluice::{Database, Error, Lsn, Table, TxnId};
use sluice_storage::SimStorage;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

/// What a run produced: its history, and the errors that were not lock contention
/// (each stopped its client; any is a failure of the run).
#[derive(Debug, Default)]
pub struct Run {
    /// Every transaction begun.
    pub history: History,
    /// Errors other than deadlocks and lock timeouts.
    pub errors: Vec<String>,
}
/// Opens the run's database on a simulated disk (no crash: this is the isolation
/// checker), creates the tables and loads half the keys in a recorded transaction.
fn open(config: &Config) -> Result<(Database, Vec<Table>), Error> {
    let sim = SimStorage::new(config.seed);
    sim.refuse_io_ring(config.ring_refused);
    let db = Database::open_on(Arc::new(sim), "/history", config.options())?;
    let tables = TABLES
        .iter()
        .map(|n| db.create_table(n))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((db, tables))
}

/// Runs `config`'s workload and returns its history.
pub fn run(config: &Config) -> Run {
    let mut out = Run::default();
    let (db, tables) = match open(config) {
        Ok(x) => x,
        Err(e) => {
            out.errors.push(format!("opening the database failed: {e}"));
            return out;
        }
    };
    let mut rng = StdRng::seed_from_u64(config.seed);
    let mut keys = names();
    keys.shuffle(&mut rng);
    keys.truncate(config.keys);
    keys.sort();
    let limits = db.limits();
    let ctx = Arc::new(Ctx {
        tables,
        keys,
        names: names(),
        large_from: limits.max_entry + 1,
        next: AtomicU64::new(0),
    });
    let txns = Mutex::new(Vec::new());
    let errors = Mutex::new(Vec::new());
    // The load: half the keys of each table, committed before the clients start.
    let load = direct_txn(&db, &ctx, &mut rng, |w| {
        let ctx = w.ctx;
        for ti in 0..ctx.tables.len() {
            for key in &ctx.keys {
                if w.rng.gen_bool(0.5) {
                    w.put(ti, key.clone())?;
                }
            }
        }
        Ok(Ending::Commit)
    });
    record(load, &txns, &errors, usize::MAX);
    let seeds: Vec<u64> = (0..config.clients).map(|_| rng.gen()).collect();
    let agents = match config.via {
        Via::Direct => None,
        Via::Agents(n) => Some(AgentRun::start(&db, n)),
    };
    let clients_done = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        if config.compact {
            let (db, errors, done) = (&db, &errors, &clients_done);
            s.spawn(move || {
                while done.load(std::sync::atomic::Ordering::Acquire) < config.clients {
                    match db.compact() {
                        Ok(_) | Err(Error::BufferPoolFull(_)) => {}
                        Err(e) => {
                            errors
                                .lock()
                                .expect("errors")
                                .push(format!("a compaction failed: {e}"));
                            return;
                        }
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            });
        }
        for (client, &seed) in seeds.iter().enumerate() {
            let (db, ctx, txns, errors, agents) = (&db, &ctx, &txns, &errors, agents.as_ref());
            let done = &clients_done;
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed);
                for _ in 0..config.txns_per_client {
                    let t = match agents {
                        None => direct_txn(db, ctx, &mut rng, body),
                        Some(a) => a.txn(ctx, &mut rng),
                    };
                    if !record(t, txns, errors, client) {
                        break;
                    }
                }
                done.fetch_add(1, std::sync::atomic::Ordering::Release);
            });
        }
    });
    if let Some(a) = agents {
        a.agents.shutdown();
    }
    // The audit: a last read-only transaction reads every key after everything else.
    let audit = direct_txn(&db, &ctx, &mut rng, |w| {
        for ti in 0..w.ctx.tables.len() {
            let span = Span {
                from: Bound::Unbounded,
                to: Bound::Unbounded,
                form: Form::Full,
            };
            w.scan(ti, span)?;
        }
        Ok(Ending::Commit)
    });
    record(audit, &txns, &errors, config.clients);
    if let Err(e) = db.verify() {
        errors
            .lock()
            .expect("errors")
            .push(format!("verify failed: {e}"));
    }
    let keys = ctx.keys.clone();
    drop(ctx);
    if let Err(e) = db.close() {
        errors
            .lock()
            .expect("errors")
            .push(format!("close failed: {e}"));
    }
    let mut txns = txns.into_inner().expect("txns");
    txns.sort_by_key(|t: &Txn| t.no);
    out.history = History {
        txns,
        keys,
        tables: TABLES.len() as u8,
    };
    out.errors = errors.into_inner().expect("errors");
    out
}

/// A transaction as it came back: its record, or an error that is not contention.
type Done = Result<Txn, (Txn, String)>;

/// Records a finished transaction; false if its client must stop.
fn record(t: Done, txns: &Mutex<Vec<Txn>>, errors: &Mutex<Vec<String>>, client: usize) -> bool {
    let (mut txn, ok) = match t {
        Ok(t) => (t, true),
        Err((t, e)) => {
            errors
                .lock()
                .expect("errors")
                .push(format!("{}: {e}", t.no));
            (t, false)
        }
    };
    txn.client = client;
    txns.lock().expect("txns").push(txn);
    ok
}

/// The end of a transaction whose body failed: contention aborts it, anything else is
/// an error of the run.
fn failed(no: TxnNo, ops: Vec<Op>, e: Error) -> Done {
    let why = e.to_string();
    if e.is_retryable() {
        Ok(aborted(no, ops, &e))
    } else {
        Err((aborted(no, ops, &e), why))
    }
}

/// The end of a transaction whose commit failed after its commit record was logged:
/// whether it committed is not known, an error of the run.
fn failed_after_logging(no: TxnNo, ops: Vec<Op>, e: Error) -> Done {
    Err((
        aborted(no, ops, &e),
        format!("commit failed after its record was logged: {e}"),
    ))
}

/// The record of a transaction that `e` aborted.
fn aborted(no: TxnNo, ops: Vec<Op>, e: &Error) -> Txn {
    Txn {
        no,
        client: 0,
        ops,
        end: End::Aborted(e.to_string()),
    }
}

type Body = fn(&mut Work) -> Result<Ending, Error>;

/// Runs `f` in a transaction of this thread's own and ends it as `f` says.
fn direct_txn(
    db: &Database,
    ctx: &Ctx,
    rng: &mut StdRng,
    f: impl FnOnce(&mut Work) -> Result<Ending, Error>,
) -> Done {
    let no = ctx.txn_no();
    let mut rng = StdRng::seed_from_u64(rng.gen());
    let mut ops = Vec::new();
    let mut tx = db.begin();
    let ending = match f(&mut Work {
        tx: &mut tx,
        ctx,
        rng: &mut rng,
        no,
        ops: &mut ops,
    }) {
        Ok(e) => e,
        Err(e) => {
            drop(tx);
            return failed(no, ops, e);
        }
    };
    let end = match ending {
        Ending::Commit => {
            let mut observed = None;
            match tx.commit_observed(|lsn| observed = Some(lsn)) {
                Ok(()) => End::Committed {
                    lsn: observed.flatten(),
                },
                Err(e) if observed.is_some() => return failed_after_logging(no, ops, e),
                Err(e) => return failed(no, ops, e),
            }
        }
        Ending::Rollback => match tx.rollback() {
            Ok(()) => End::RolledBack,
            Err(e) => return failed(no, ops, e),
        },
        Ending::Drop => {
            drop(tx);
            End::Dropped
        }
    };
    Ok(Txn {
        no,
        client: 0,
        ops,
        end,
    })
}

/// An agent pool and the commit records its hook saw.
struct AgentRun {
    agents: Agents,
    commits: Arc<Mutex<HashMap<TxnId, Option<Lsn>>>>,
}

impl AgentRun {
    fn start(db: &Database, n: usize) -> AgentRun {
        let commits = Arc::new(Mutex::new(HashMap::new()));
        let seen = commits.clone();
        let agents = Agents::start_with(
            db,
            AgentOptions {
                agents: n,
                on_commit_record: Some(Arc::new(move |id, lsn| {
                    seen.lock().expect("commits").insert(id, lsn);
                })),
                protocol: None,
                time_breakdown: false,
            },
        );
        AgentRun { agents, commits }
    }

    /// Submits one transaction and waits for its result. A body cannot drop its
    /// transaction: a drop becomes a rollback here.
    fn txn(&self, ctx: &Arc<Ctx>, rng: &mut StdRng) -> Done {
        let no = ctx.txn_no();
        let mut body_rng = StdRng::seed_from_u64(rng.gen());
        let state: Arc<Mutex<(Vec<Op>, Option<TxnId>)>> = Arc::default();
        let (ctx2, state2) = (ctx.clone(), state.clone());
        let f: Body = body;
        let r = self
            .agents
            .execute(move |tx| {
                let mut g = state2.lock().expect("agent txn state");
                g.1 = Some(tx.id());
                let mut w = Work {
                    tx,
                    ctx: &ctx2,
                    rng: &mut body_rng,
                    no,
                    ops: &mut g.0,
                };
                Ok(match f(&mut w)? {
                    Ending::Commit => Outcome::Commit(()),
                    Ending::Rollback | Ending::Drop => Outcome::Rollback(()),
                })
            })
            .wait();
        let (ops, id) = std::mem::take(&mut *state.lock().expect("agent txn state"));
        let logged = id.and_then(|id| self.commits.lock().expect("commits").remove(&id));
        let end = match r {
            Ok(f) if f.committed => End::Committed {
                lsn: logged.flatten(),
            },
            Ok(_) => End::RolledBack,
            Err(e) if logged.is_some() => return failed_after_logging(no, ops, e),
            Err(e) => return failed(no, ops, e),
        };
        Ok(Txn {
            no,
            client: 0,
            ops,
            end,
        })
    }
}
