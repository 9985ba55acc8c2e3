//! The page cleaner (the propagation paper's Algorithm 1).
//!
//! A round scans the pool's frames and takes every valid dirty one as a candidate
//! ([`BufferPool::cleaning_candidates`]); [`select`] keeps the candidates the policy
//! wants, in a heap bounded to the configured size, then sorts them by page id and groups
//! adjacent ids into clusters; each cluster is written with one write per contiguous run
//! ([`BufferPool::write_cluster`], which keeps every rule of a page write and advances
//! the CleanLSNs after it).
//!
//! The policies ([`Policy`]):
//! * `Oldest`: the `heap` candidates with the lowest recovery LSN (shortens REDO);
//! * `Coldest`: the `heap` candidates with the lowest heat (the reference count shared
//!   with CLOCK, `Frame::heat`);
//! * `Hottest`: the `heap` candidates with the highest heat;
//! * `None`: every dirty page, in no order of preference (no heap bound);
//! * `Clustered { min_pages }`: every dirty page, but only runs of at least `min_pages`
//!   adjacent page ids are written (a run longer than [`MAX_CLUSTER`] is still written,
//!   split into clusters of at most that many, the last possibly shorter);
//! * `Mixed`: the `heap` oldest candidates; of those, runs of at least [`MIXED_CLUSTER`]
//!   adjacent page ids are written whole, and the oldest eighth of the candidates
//!   (rounded up, so at least one) is written too even where alone, so that REDO
//!   length stays bounded when nothing clusters.
//!
//! Ties are broken by page id, so a selection is deterministic. `heap` 0 means 1 % of
//! the pool, at least 16 ([`heap_size`]).

use super::{Counters, PageCleaner, Policy};
use crate::buffer_pool::{BufferPool, Cleaned};
use crate::error::Result;
use crate::ids::PageId;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

/// The most pages written with one write.
pub(crate) const MAX_CLUSTER: usize = 128;

/// `Mixed`: the smallest run written for being a cluster.
pub(crate) const MIXED_CLUSTER: usize = 8;

/// A dirty frame as the scan saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// The frame's index in the pool.
    pub(crate) frame: usize,
    /// The page it held.
    pub(crate) page: PageId,
    /// Where redo would start for it (`Frame::recovery_lsn`): the oldest-first key.
    pub(crate) rec_lsn: u64,
    /// Its reference count (`Frame::heat`): the coldest- and hottest-first key.
    pub(crate) heat: u32,
}

/// Candidates kept per round: `heap`, or for 0 1 % of a pool of `frames`, at least 16.
pub(crate) fn heap_size(heap: usize, frames: usize) -> usize {
    if heap == 0 {
        (frames / 100).max(16)
    } else {
        heap
    }
}

/// One round: collect dirty frames into a bounded heap ordered by the policy, sort the
/// candidates by page id, group adjacent pages into clusters, write each cluster with one
/// write, and advance their CleanLSNs once written.
pub(crate) fn round(pool: &BufferPool, cfg: PageCleaner, counters: &Counters) -> Result<Cleaned> {
    let candidates = pool.cleaning_candidates();
    let mut done = Cleaned::default();
    for cluster in select(cfg, pool.frame_count(), candidates) {
        let frames: Vec<usize> = cluster.iter().map(|c| c.frame).collect();
        done += pool.write_cluster(&frames, counters)?;
    }
    Ok(done)
}

/// The policy's choice (Algorithm 1, lines 3–10): the clusters to write, each a run of
/// adjacent page ids of at most [`MAX_CLUSTER`] pages, in page-id order. `frames` is the
/// pool's size (for the default heap size).
pub(crate) fn select(
    cfg: PageCleaner,
    frames: usize,
    candidates: Vec<Candidate>,
) -> Vec<Vec<Candidate>> {
    let k = heap_size(cfg.heap, frames);
    let chosen = match cfg.policy {
        Policy::None => candidates,
        Policy::Oldest => best(candidates, k, |c| (c.rec_lsn, c.page)),
        Policy::Coldest => best(candidates, k, |c| (c.heat, c.page)),
        Policy::Hottest => best(candidates, k, |c| (Reverse(c.heat), c.page)),
        Policy::Clustered { min_pages } => {
            return cap(runs(candidates)
                .into_iter()
                .filter(|r| r.len() >= min_pages)
                .collect());
        }
        Policy::Mixed => {
            let oldest = best(candidates, k, |c| (c.rec_lsn, c.page));
            let forced: HashSet<PageId> = oldest
                .iter()
                .take(oldest.len().div_ceil(8))
                .map(|c| c.page)
                .collect();
            let mut out = Vec::new();
            for run in runs(oldest) {
                if run.len() >= MIXED_CLUSTER {
                    out.push(run);
                } else {
                    let alone = run.into_iter().filter(|c| forced.contains(&c.page));
                    out.extend(runs(alone.collect()));
                }
            }
            return cap(out);
        }
    };
    cap(runs(chosen))
}

/// The `k` candidates with the smallest keys, smallest first: a max-heap of the best
/// `k` so far whose top (the worst kept) is dropped when a better one arrives.
fn best<K: Ord>(
    candidates: Vec<Candidate>,
    k: usize,
    key: impl Fn(&Candidate) -> K,
) -> Vec<Candidate> {
    let mut heap: BinaryHeap<(K, usize)> = BinaryHeap::with_capacity(k + 1);
    for (i, c) in candidates.iter().enumerate() {
        heap.push((key(c), i));
        if heap.len() > k {
            heap.pop();
        }
    }
    heap.into_sorted_vec()
        .into_iter()
        .map(|(_, i)| candidates[i])
        .collect()
}

/// The candidates sorted by page id and split where ids are not adjacent.
fn runs(mut candidates: Vec<Candidate>) -> Vec<Vec<Candidate>> {
    candidates.sort_by_key(|c| c.page);
    let mut out: Vec<Vec<Candidate>> = Vec::new();
    for c in candidates {
        match out.last_mut() {
            Some(run) if run.last().is_some_and(|l| l.page.0 + 1 == c.page.0) => run.push(c),
            _ => out.push(vec![c]),
        }
    }
    out
}

/// Runs split into clusters of at most [`MAX_CLUSTER`] pages.
fn cap(runs: Vec<Vec<Candidate>>) -> Vec<Vec<Candidate>> {
    runs.into_iter()
        .flat_map(|r| {
            r.chunks(MAX_CLUSTER)
                .map(<[Candidate]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect()
}
