//! The wait-for graph the lock manager's waiters search for deadlocks.

use crate::ids::TxnId;

/// The wait-for graph: for each transaction waiting for a lock, whom it waits for (as
/// of its last look at the queue). A waiter records its edges and searches for a path
/// back to itself each time it starts or resumes waiting; finding one, it is the victim
/// and leaves with [`Error::Deadlock`](crate::Error::Deadlock) at once. Edges can be stale — a blocker that has
/// let go, until the waiter wakes and looks again — which can only make a victim of a
/// transaction that would have waited a little longer, never miss a safety property;
/// a cycle the search does not see is still broken by the lock timeout.
#[derive(Default)]
pub(super) struct WaitsFor {
    edges: hashbrown::HashMap<TxnId, Vec<TxnId>>,
}

impl WaitsFor {
    /// Records `txn`'s blockers; true if that closes a cycle through `txn`.
    pub(super) fn wait(&mut self, txn: TxnId, blockers: &[TxnId]) -> bool {
        let mut stack: Vec<TxnId> = blockers.to_vec();
        let mut seen = hashbrown::HashSet::new();
        while let Some(t) = stack.pop() {
            if t == txn {
                return true;
            }
            if seen.insert(t) {
                if let Some(next) = self.edges.get(&t) {
                    stack.extend_from_slice(next);
                }
            }
        }
        let e = self.edges.entry(txn).or_default();
        e.clear();
        e.extend_from_slice(blockers);
        false
    }

    pub(super) fn done(&mut self, txn: TxnId) {
        self.edges.remove(&txn);
    }
}
