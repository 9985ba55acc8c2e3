//! The crash sweep's workload submitted to an agent pool ([`CrashMode::Agents`]): logical
//! clients, each submitting its next transaction from the completion of the last.
//!
//! [`CrashMode::Agents`]: super::CrashMode::Agents

use super::model::{
    draw_shape, key, make_value, Outcome, ValueShape, Writes, KEYS, THREADS, TXNS_PER_THREAD,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::experiment::{AgentOptions, Agents, Finished, Outcome as TxnOutcome, Submitter};
use sluice::{CommitProtocol, Database, Error, Table, TxnId};
use sluice_wal::Lsn;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};

/// Candidates and acknowledgements collected from an agent-pool run.
#[derive(Default)]
struct AgentLog {
    writes: HashMap<TxnId, Writes>,
    commits: HashMap<TxnId, Option<Lsn>>,
    acked: HashSet<TxnId>,
    clients_done: usize,
}

struct Client {
    tables: Vec<Table>,
    rng: Mutex<StdRng>,
    tag: String,
    log: Arc<(Mutex<AgentLog>, Condvar)>,
}

/// One client's `i`-th transaction: the same shape as [`run_txn`](super::run_txn), submitted to agents;
/// the completion submits the next one.
fn client_step(sub: Submitter, c: Arc<Client>, i: usize) {
    if i == TXNS_PER_THREAD {
        let (l, cv) = &*c.log;
        l.lock().expect("agent log").clients_done += 1;
        cv.notify_all();
        return;
    }
    let (picks, deletes, shapes, rollback) = {
        let mut rng = c.rng.lock().expect("client rng");
        let n = rng.gen_range(1..=4);
        let mut picks: Vec<(usize, u32)> = (0..n)
            .map(|_| (rng.gen_range(0..c.tables.len()), rng.gen_range(0..KEYS)))
            .collect();
        picks.sort_unstable();
        picks.dedup();
        let deletes: Vec<bool> = picks.iter().map(|_| rng.gen_bool(0.25)).collect();
        let shapes: Vec<ValueShape> = picks.iter().map(|_| draw_shape(&mut rng, false)).collect();
        (picks, deletes, shapes, rng.gen_bool(0.15))
    };
    let body_c = c.clone();
    let tag = format!("{}.{i}", c.tag);
    let body = move |tx: &mut sluice::Transaction| {
        let mut writes = Vec::new();
        for (j, &(t, k)) in picks.iter().enumerate() {
            let kb = key(k);
            if deletes[j] {
                tx.delete(&body_c.tables[t], &kb)?;
                writes.push((t, kb, None));
            } else {
                let v = make_value(&tag, k, shapes[j]);
                tx.put(&body_c.tables[t], &kb, &v)?;
                writes.push((t, kb, Some(v)));
            }
        }
        if rollback {
            return Ok(TxnOutcome::Rollback(tx.id()));
        }
        body_c
            .log
            .0
            .lock()
            .expect("agent log")
            .writes
            .insert(tx.id(), writes);
        Ok(TxnOutcome::Commit(tx.id()))
    };
    let next = sub.clone();
    let done = move |r: Result<Finished<TxnId>, Error>| match r {
        Ok(f) => {
            if f.committed {
                c.log.0.lock().expect("agent log").acked.insert(f.value);
            }
            client_step(next, c, i + 1);
        }
        Err(_) => {
            // The crash (or a lock timeout) ends this client.
            let (l, cv) = &*c.log;
            l.lock().expect("agent log").clients_done += 1;
            cv.notify_all();
        }
    };
    sub.submit(body, done);
}

pub(super) fn run_agents(
    db: &Database,
    tables: &[Table],
    protocol: CommitProtocol,
    seeds: &[u64],
    seed: u64,
) -> Vec<Outcome<Writes>> {
    let log = Arc::new((Mutex::new(AgentLog::default()), Condvar::new()));
    let hook_log = log.clone();
    let agents = Agents::start_with(
        db,
        AgentOptions {
            agents: if protocol.pipelined() { 2 } else { THREADS },
            protocol: None,
            on_commit_record: Some(Arc::new(move |id, lsn| {
                hook_log
                    .0
                    .lock()
                    .expect("agent log")
                    .commits
                    .insert(id, lsn);
            })),
            time_breakdown: false,
        },
    );
    for (t, &ts) in seeds.iter().enumerate() {
        let c = Arc::new(Client {
            tables: tables.to_vec(),
            rng: Mutex::new(StdRng::seed_from_u64(ts)),
            tag: format!("{seed}.{t}"),
            log: log.clone(),
        });
        client_step(agents.submitter(), c, 0);
    }
    {
        let (l, cv) = &*log;
        let mut g = l.lock().expect("agent log");
        while g.clients_done < seeds.len() {
            g = cv.wait(g).expect("agent log");
        }
    }
    agents.shutdown();
    let mut g = log.0.lock().expect("agent log");
    let commits = std::mem::take(&mut g.commits);
    commits
        .into_iter()
        .map(|(id, commit)| Outcome {
            work: g.writes.remove(&id).unwrap_or_default(),
            commit,
            acked: g.acked.contains(&id),
        })
        .collect()
}
