//! The wait-for graph the lock manager's waiters search for deadlocks, and the choice of
//! a cycle's victim.

use crate::ids::TxnId;

/// One waiting transaction: whom it waits for, its seniority and its shard.
struct Waiter {
    blockers: Vec<TxnId>,
    seniority: u32,
    shard: usize,
}

/// What a request that records its blockers must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// No cycle through it: wait.
    Wait,
    /// It closed a cycle and is its victim: leave with a deadlock.
    Victim,
    /// It closed a cycle whose victim is `victim`, another waiter, now doomed: the
    /// requester wakes waiters of `shard` (where the victim waits) and goes on waiting.
    Doomed { victim: TxnId, shard: usize },
}

/// The wait-for graph: for each transaction waiting for a lock, whom it waits for (as
/// of its last look at the queue). A waiter records its edges and searches for a path
/// back to itself each time it starts or resumes waiting; finding one, a victim is
/// chosen among the waiters on the cycle: the one of least *seniority* (how many
/// attempts at the same work it has lost before: [`crate::Database::transaction`] carries
/// it from one attempt to the next), the requester itself when it is among the least.
/// So transactions of equal seniority behave as before (the request that closes a cycle
/// fails at once with [`Error::Deadlock`](crate::Error::Deadlock)), and a transaction
/// that lost before is not the one that loses again to a newcomer: two readers that
/// both upgrade one key to X (get, then put) always deadlock, and without this the same
/// retried transaction could lose every round. Another victim is *doomed*: it leaves its
/// wait with a deadlock as soon as it wakes. Edges can be stale — a blocker that has let
/// go, until the waiter wakes and looks again — which can only make a victim of a
/// transaction that would have waited a little longer, never miss a safety property; a
/// cycle the search does not see is still broken by the lock timeout.
#[derive(Default)]
pub(super) struct WaitsFor {
    edges: hashbrown::HashMap<TxnId, Waiter>,
    doomed: hashbrown::HashSet<TxnId>,
}

impl WaitsFor {
    /// Records that `txn` (of `seniority`, waiting on `shard`) waits for `blockers`, and
    /// decides what it must do.
    pub(super) fn wait(
        &mut self,
        txn: TxnId,
        seniority: u32,
        shard: usize,
        blockers: &[TxnId],
    ) -> Verdict {
        let verdict = match self.cycle(txn, blockers) {
            None => Verdict::Wait,
            Some(members) => {
                let weakest = members
                    .iter()
                    .filter_map(|t| self.edges.get(t).map(|w| (w.seniority, *t, w.shard)))
                    .min_by_key(|m| m.0);
                match weakest {
                    Some((s, victim, shard)) if s < seniority => {
                        self.doomed.insert(victim);
                        Verdict::Doomed { victim, shard }
                    }
                    _ => return Verdict::Victim,
                }
            }
        };
        let w = self.edges.entry(txn).or_insert_with(|| Waiter {
            blockers: Vec::new(),
            seniority,
            shard,
        });
        w.blockers.clear();
        w.blockers.extend_from_slice(blockers);
        verdict
    }

    /// The waiters on a path from `blockers` back to `txn`, if there is one.
    fn cycle(&self, txn: TxnId, blockers: &[TxnId]) -> Option<Vec<TxnId>> {
        // Depth-first, remembering how each transaction was first reached.
        let mut parent: hashbrown::HashMap<TxnId, Option<TxnId>> = hashbrown::HashMap::new();
        let mut stack: Vec<(TxnId, Option<TxnId>)> = blockers.iter().map(|b| (*b, None)).collect();
        while let Some((t, from)) = stack.pop() {
            if t == txn {
                let mut members = Vec::new();
                let mut at = from;
                while let Some(m) = at {
                    members.push(m);
                    at = parent[&m];
                }
                return Some(members);
            }
            if parent.contains_key(&t) {
                continue;
            }
            parent.insert(t, from);
            if let Some(w) = self.edges.get(&t) {
                stack.extend(w.blockers.iter().map(|b| (*b, Some(t))));
            }
        }
        None
    }

    /// True if another waiter chose `txn` as its cycle's victim.
    pub(super) fn is_doomed(&self, txn: TxnId) -> bool {
        self.doomed.contains(&txn)
    }

    /// `txn` no longer waits (granted, or leaving); true if it had been doomed.
    pub(super) fn done(&mut self, txn: TxnId) -> bool {
        self.edges.remove(&txn);
        self.doomed.remove(&txn)
    }
}
