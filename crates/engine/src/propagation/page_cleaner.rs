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

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(page: u64, rec_lsn: u64, heat: u32) -> Candidate {
        Candidate {
            frame: page as usize + 1000,
            page: PageId(page),
            rec_lsn,
            heat,
        }
    }

    fn cfg(policy: Policy, heap: usize) -> PageCleaner {
        PageCleaner { policy, heap }
    }

    /// The page ids of each cluster.
    fn ids(clusters: &[Vec<Candidate>]) -> Vec<Vec<u64>> {
        clusters
            .iter()
            .map(|c| c.iter().map(|c| c.page.0).collect())
            .collect()
    }

    #[test]
    fn oldest_keeps_the_lowest_recovery_lsns_in_page_order() {
        let c = vec![
            cand(10, 500, 0),
            cand(3, 100, 9),
            cand(4, 900, 0),
            cand(7, 50, 0),
            cand(11, 200, 0),
            cand(20, 300, 0),
        ];
        let out = select(cfg(Policy::Oldest, 3), 100, c);
        // The three oldest are 7 (50), 3 (100), 11 (200); written in page order, each
        // alone (none adjacent to another chosen one).
        assert_eq!(ids(&out), vec![vec![3], vec![7], vec![11]]);
        // Frames travel with their pages.
        assert_eq!(out[0][0].frame, 1003);
    }

    #[test]
    fn coldest_and_hottest_order_by_heat() {
        let c: Vec<_> = [(1, 5), (2, 0), (3, 9), (5, 1), (6, 7), (8, 3)]
            .into_iter()
            .map(|(p, h)| cand(p, 100 - p, h))
            .collect();
        let cold = select(cfg(Policy::Coldest, 3), 100, c.clone());
        assert_eq!(ids(&cold), vec![vec![2], vec![5], vec![8]]);
        let hot = select(cfg(Policy::Hottest, 3), 100, c.clone());
        assert_eq!(ids(&hot), vec![vec![1], vec![3], vec![6]]);
        let hottest = select(cfg(Policy::Hottest, 2), 100, c);
        assert_eq!(ids(&hottest), vec![vec![3], vec![6]]);
    }

    #[test]
    fn ties_are_broken_by_page_id() {
        let c: Vec<_> = (0..10).rev().map(|p| cand(2 * p, 7, 1)).collect();
        for policy in [Policy::Oldest, Policy::Coldest, Policy::Hottest] {
            let out = select(cfg(policy, 3), 100, c.clone());
            assert_eq!(ids(&out), vec![vec![0], vec![2], vec![4]], "{policy:?}");
        }
    }

    #[test]
    fn the_heap_is_bounded() {
        // Every other page, so each is its own cluster.
        let c: Vec<_> = (0..1000).map(|p| cand(2 * p, 5000 - p, 0)).collect();
        let count = |out: &[Vec<Candidate>]| out.iter().map(Vec::len).sum::<usize>();
        // Given size.
        assert_eq!(count(&select(cfg(Policy::Oldest, 40), 64, c.clone())), 40);
        // Default: 1 % of the pool, at least 16.
        assert_eq!(heap_size(0, 64), 16);
        assert_eq!(heap_size(0, 5000), 50);
        assert_eq!(heap_size(7, 5000), 7);
        assert_eq!(count(&select(cfg(Policy::Oldest, 0), 64, c.clone())), 16);
        assert_eq!(count(&select(cfg(Policy::Coldest, 0), 5000, c.clone())), 50);
        // The oldest are the highest page ids here: 999 down to 950 (pages 1998..).
        let out = select(cfg(Policy::Oldest, 0), 5000, c.clone());
        assert_eq!(out[0][0].page, PageId(1900));
        assert_eq!(out[49][0].page, PageId(1998));
        // `None` takes every dirty page.
        assert_eq!(count(&select(cfg(Policy::None, 0), 64, c.clone())), 1000);
        assert_eq!(count(&select(cfg(Policy::None, 5), 64, c)), 1000);
    }

    #[test]
    fn adjacent_pages_form_clusters_capped_in_size() {
        let mut c: Vec<_> = (100..400).map(|p| cand(p, p, 0)).collect();
        c.extend([cand(5, 1, 0), cand(7, 1, 0), cand(8, 1, 0), cand(9, 1, 0)]);
        c.reverse(); // the scan's order does not matter
        let out = select(cfg(Policy::None, 0), 64, c);
        let lens: Vec<usize> = out.iter().map(Vec::len).collect();
        assert_eq!(
            lens,
            vec![1, 3, MAX_CLUSTER, MAX_CLUSTER, 300 - 2 * MAX_CLUSTER]
        );
        assert_eq!(ids(&out)[..2], [vec![5], vec![7, 8, 9]]);
        for cl in &out {
            assert!(cl.windows(2).all(|w| w[0].page.0 + 1 == w[1].page.0));
        }
        assert_eq!(out[2][0].page, PageId(100));
        assert_eq!(out[4].last().unwrap().page, PageId(399));
    }

    #[test]
    fn clustered_drops_runs_shorter_than_its_minimum() {
        let mut c = Vec::new();
        c.extend((10..13).map(|p| cand(p, 1, 0))); // 3: dropped
        c.extend((20..24).map(|p| cand(p, 1, 0))); // 4: kept
        c.push(cand(30, 0, 0)); // alone, even the oldest: dropped
        c.extend((40..40 + MAX_CLUSTER as u64 + 2).map(|p| cand(p, 1, 0))); // split, kept
        let out = select(cfg(Policy::Clustered { min_pages: 4 }, 0), 64, c);
        let lens: Vec<usize> = out.iter().map(Vec::len).collect();
        assert_eq!(lens, vec![4, MAX_CLUSTER, 2]);
        assert_eq!(out[0][0].page, PageId(20));
        assert_eq!(out[1][0].page, PageId(40));
        // Every dirty page is a candidate: no heap bound cut the long run.
        let one = select(
            cfg(Policy::Clustered { min_pages: 1 }, 0),
            64,
            (0..500).map(|p| cand(p, 0, 0)).collect(),
        );
        assert_eq!(one.iter().map(Vec::len).sum::<usize>(), 500);
    }

    #[test]
    fn mixed_writes_clusters_and_the_oldest_eighth_alone() {
        // 16 candidates (the default heap for a small pool): a run of 8 young pages,
        // one of 3, and 5 scattered ones; the oldest eighth (2) are 50 and 60.
        let mut c: Vec<_> = (100..108).map(|p| cand(p, 1000 + p, 0)).collect();
        c.extend((200..203).map(|p| cand(p, 900 + p, 0)));
        c.extend([
            cand(50, 1, 0),
            cand(60, 2, 0),
            cand(70, 3, 0),
            cand(80, 4, 0),
            cand(90, 5, 0),
        ]);
        assert_eq!(c.len(), 16);
        let out = select(cfg(Policy::Mixed, 0), 64, c.clone());
        assert_eq!(
            ids(&out),
            vec![vec![50], vec![60], (100..108).collect::<Vec<_>>()]
        );
        // The forced pages keep their neighbours when those are forced too.
        let mut d: Vec<_> = (0..16).map(|p| cand(3 * p, 100 + p, 0)).collect();
        d[5] = cand(1, 0, 0); // adjacent to page 0, and among the oldest 2
        let out = select(cfg(Policy::Mixed, 0), 64, d);
        assert_eq!(ids(&out), vec![vec![0, 1]]);
        // Candidates are chosen oldest first within the heap: with a heap of 8, the run
        // of young pages is not a candidate and only page 50 (8 / 8) is written.
        let out = select(cfg(Policy::Mixed, 8), 64, c);
        assert_eq!(ids(&out), vec![vec![50]]);
    }
}
