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
use crate::buffer_pool::{BufferPool, Candidate, Cleaned};
use crate::error::Result;
use crate::ids::PageId;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

/// The most pages written with one write.
pub(crate) const MAX_CLUSTER: usize = 128;

/// `Mixed`: the smallest run written for being a cluster.
pub(crate) const MIXED_CLUSTER: usize = 8;

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
    let started = std::time::Instant::now();
    let candidates = pool.cleaning_candidates();
    let mut done = Cleaned::default();
    for cluster in select(cfg, pool.frame_count(), candidates) {
        let frames: Vec<usize> = cluster.iter().map(|c| c.frame).collect();
        done += pool.write_cluster(&frames, counters)?;
    }
    if done.pages > 0 {
        counters.busy(started.elapsed());
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

    /// Rounds on a real database: the cleaner thread is stopped so that only the rounds
    /// the tests run write pages (and counts are exact).
    mod on_a_database {
        use super::*;
        use crate::propagation::Strategy;
        use crate::{Database, Options, Table};
        use sluice_storage::{SimStorage, TraceEvent};
        use std::path::Path;
        use std::sync::atomic::Ordering;
        use std::sync::Arc;
        use std::time::{Duration, Instant};

        const PAGE: usize = 1024;

        fn options(policy: Policy) -> Options {
            let mut o = Options::small();
            assert_eq!(o.page_size, PAGE);
            o.checkpoint_log_bytes = 0; // only the checkpoints the tests ask for
            o.checkpoint_interval = Duration::from_secs(3600);
            o.cleaner_interval = Duration::from_secs(3600);
            o.propagation = Strategy::Page(PageCleaner { policy, heap: 0 });
            o
        }

        fn open(sim: &SimStorage, policy: Policy) -> Database {
            let db = Database::open_on(Arc::new(sim.pinned()), "/db", options(policy)).unwrap();
            db.inner.propagation.cleaner.stop();
            db
        }

        fn key(i: usize) -> Vec<u8> {
            format!("key{i:05}").into_bytes()
        }

        /// Puts keys `from..to` with `value`, `per_txn` to a transaction.
        fn put(db: &Database, t: &Table, keys: std::ops::Range<usize>, value: u8) {
            let mut tx = db.begin();
            for i in keys {
                tx.put(t, key(i), [value; 100]).unwrap();
            }
            tx.commit().unwrap();
        }

        fn dirty(db: &Database) -> usize {
            db.inner.store.pool.dirty_summary().0
        }

        fn round_of(db: &Database, policy: Policy) -> Cleaned {
            let cfg = PageCleaner { policy, heap: 0 };
            round(&db.inner.store.pool, cfg, &db.inner.propagation.counters).unwrap()
        }

        fn counted(db: &Database) -> (u64, u64) {
            let c = &db.inner.propagation.counters;
            (
                c.propagated_bytes.load(Ordering::Relaxed),
                c.propagation_writes.load(Ordering::Relaxed),
            )
        }

        /// The writes to the data file since the last call.
        fn data_writes(sim: &SimStorage) -> Vec<(u64, u64)> {
            sim.take_trace()
                .into_iter()
                .filter_map(|e| match e {
                    TraceEvent::Write { path, offset, len } if path == Path::new("/db/data") => {
                        Some((offset, len))
                    }
                    _ => None,
                })
                .collect()
        }

        /// Crashes `sim` under `db` and opens it again with `policy`: the database and
        /// its table "t" after recovery.
        fn crash_and_reopen(
            sim: &SimStorage,
            policy: Policy,
            db: Database,
            t: Table,
        ) -> (Database, Table) {
            sim.crash();
            drop((t, db));
            let db = open(sim, policy);
            let t = db.table("t").unwrap();
            (db, t)
        }

        /// A database with `policy` and a table of `blocks` times `per` keys, `per` keys a
        /// transaction.
        fn filled(
            sim: &SimStorage,
            policy: Policy,
            blocks: usize,
            per: usize,
        ) -> (Database, Table) {
            let db = open(sim, policy);
            let t = db.create_table("t").unwrap();
            for b in 0..blocks {
                put(&db, &t, b * per..(b + 1) * per, 1);
            }
            (db, t)
        }

        /// A table of 100 keys (about a dozen leaves, allocated one after another), all
        /// of them dirty again after a round cleaned the pool.
        fn dirty_table(sim: &SimStorage) -> (Database, Table) {
            let (db, t) = filled(sim, Policy::None, 4, 25);
            round_of(&db, Policy::None);
            assert_eq!(dirty(&db), 0);
            put(&db, &t, 0..100, 2);
            (db, t)
        }

        /// A dirty table (`dirty_table`), the longest cluster a round with no policy would
        /// write now (the last of the longest; at least 3 pages, for the tests to split),
        /// and how many pages all the clusters hold.
        fn longest_dirty_cluster(sim: &SimStorage) -> (Database, Table, Vec<Candidate>, usize) {
            let (db, t) = dirty_table(sim);
            let pool = &db.inner.store.pool;
            let cfg = PageCleaner {
                policy: Policy::None,
                heap: 0,
            };
            let mut clusters = select(cfg, pool.frame_count(), pool.cleaning_candidates());
            let pages = clusters.iter().map(Vec::len).sum();
            let (longest, n) = (clusters.iter().map(Vec::len).enumerate())
                .max_by_key(|&(_, n)| n)
                .unwrap();
            assert!(n >= 3, "longest cluster {n} pages");
            (db, t, clusters.swap_remove(longest), pages)
        }

        #[test]
        fn a_round_cleans_and_counts_what_it_wrote() {
            let sim = SimStorage::new(21);
            let (db, _t) = filled(&sim, Policy::None, 4, 30);
            let before = dirty(&db);
            assert!(before >= 8, "only {before} dirty pages");
            let writes = db.stats().pool.writes;
            let (bytes0, calls0) = counted(&db);
            sim.set_trace(true);
            let done = round_of(&db, Policy::None);
            let trace = data_writes(&sim);
            // `None` takes every dirty page, and nothing else changes them meanwhile.
            assert_eq!(done.pages, before);
            assert_eq!(dirty(&db), 0);
            assert_eq!(db.stats().pool.writes - writes, before as u64);
            let (bytes, calls) = counted(&db);
            assert_eq!(bytes - bytes0, (before * PAGE) as u64);
            assert_eq!(calls - calls0, done.writes as u64);
            // What was counted is what reached the file.
            assert_eq!(trace.len(), done.writes);
            assert_eq!(
                trace.iter().map(|w| w.1).sum::<u64>(),
                (before * PAGE) as u64
            );
            // Adjacent leaves went together.
            assert!(done.writes < done.pages, "{done:?}: nothing clustered");
            // A clean pool: nothing to do.
            assert_eq!(round_of(&db, Policy::None), Cleaned::default());
            db.verify().unwrap();
        }

        #[test]
        fn an_oldest_round_cleans_the_oldest_pages_within_its_heap() {
            let sim = SimStorage::new(22);
            let (db, _t) = filled(&sim, Policy::Oldest, 8, 30);
            let pool = &db.inner.store.pool;
            let mut recs: Vec<u64> = pool
                .cleaning_candidates()
                .iter()
                .map(|c| c.rec_lsn)
                .collect();
            recs.sort_unstable();
            let k = heap_size(0, pool.frame_count());
            assert!(recs.len() > k, "{} dirty pages, heap {k}", recs.len());
            let before = dirty(&db);
            let done = round_of(&db, Policy::Oldest);
            assert_eq!(done.pages, k);
            assert_eq!(dirty(&db), before - k);
            // What is left is the younger pages.
            let (_, oldest) = pool.dirty_summary();
            assert_eq!(oldest, Some(recs[k]));
            db.verify().unwrap();
        }

        #[test]
        fn a_cluster_of_adjacent_dirty_pages_is_one_write() {
            let sim = SimStorage::new(23);
            let (db, _t, cluster, in_clusters) = longest_dirty_cluster(&sim);
            let pool = &db.inner.store.pool;
            let n = cluster.len();
            let frames: Vec<usize> = cluster.iter().map(|c| c.frame).collect();
            let (bytes0, calls0) = counted(&db);
            sim.set_trace(true);
            let done = pool
                .write_cluster(&frames, &db.inner.propagation.counters)
                .unwrap();
            assert_eq!(
                done,
                Cleaned {
                    pages: n,
                    writes: 1
                }
            );
            assert_eq!(
                data_writes(&sim),
                vec![(cluster[0].page.0 * PAGE as u64, (n * PAGE) as u64)]
            );
            assert_eq!(counted(&db), (bytes0 + (n * PAGE) as u64, calls0 + 1));
            // Each page is clean and on disk as in memory, sealed.
            let mut disk = vec![0u8; PAGE];
            for c in &cluster {
                let f = &pool.frames[c.frame];
                assert!(!f.is_dirty());
                pool.read_disk(c.page, &mut disk).unwrap();
                assert!(crate::page::checksum_ok(&disk), "page {}", c.page);
                assert_eq!(
                    crate::page::page_lsn(&disk),
                    f.page_lsn.load(Ordering::SeqCst)
                );
            }
            // Only that cluster was written.
            assert_eq!(dirty(&db), in_clusters - n);
            db.verify().unwrap();
        }

        #[test]
        fn a_busy_frame_splits_the_cluster() {
            // Busy: someone else is writing the second page (its I/O lock), or holds it
            // X-latched (a frame after the first is not waited for).
            for (seed, latched) in [(24, false), (28, true)] {
                let sim = SimStorage::new(seed);
                let (db, _t, cluster, _) = longest_dirty_cluster(&sim);
                let pool = &db.inner.store.pool;
                let n = cluster.len();
                let frames: Vec<usize> = cluster.iter().map(|c| c.frame).collect();
                let second = &pool.frames[frames[1]];
                let (io, latch) = if latched {
                    (None, Some(second.latch.write()))
                } else {
                    (Some(second.io.lock()), None)
                };
                sim.set_trace(true);
                let done = pool
                    .write_cluster(&frames, &db.inner.propagation.counters)
                    .unwrap();
                drop((io, latch));
                let first = cluster[0].page.0 * PAGE as u64;
                let third = cluster[2].page.0 * PAGE as u64;
                assert_eq!(
                    done,
                    Cleaned {
                        pages: n - 1,
                        writes: 2
                    },
                    "latched: {latched}"
                );
                assert_eq!(
                    data_writes(&sim),
                    vec![(first, PAGE as u64), (third, ((n - 2) * PAGE) as u64)]
                );
                assert!(second.is_dirty());
                db.verify().unwrap();
            }
        }

        /// Pages whose last image is at or below the image floor would have nothing to
        /// restart from if their write tore: they leave the cluster and go through
        /// `write_frame`, which logs an image first.
        #[test]
        fn pages_without_an_image_above_the_floor_are_imaged_and_written_alone() {
            let sim = SimStorage::new(25);
            let (db, t) = dirty_table(&sim);
            let pool = &db.inner.store.pool;
            let candidates = pool.cleaning_candidates();
            let n = candidates.len();
            let floor = db.inner.store.log.released_lsn();
            pool.raise_image_floor(floor).unwrap();
            sim.set_trace(true);
            let done = round_of(&db, Policy::None);
            assert_eq!(
                done,
                Cleaned {
                    pages: n,
                    writes: n
                }
            );
            let trace = data_writes(&sim);
            assert_eq!(trace.len(), n);
            assert!(trace.iter().all(|w| w.1 == PAGE as u64));
            assert_eq!(counted(&db).1 as usize, done.writes + 1); // + dirty_table's round
            for c in &candidates {
                let f = &pool.frames[c.frame];
                assert!(
                    f.image_lsn.load(Ordering::SeqCst) > floor.0,
                    "page {}",
                    c.page
                );
                assert!(!f.is_dirty());
            }
            // A crash now: the imaged pages restart from their images.
            let (db, t) = crash_and_reopen(&sim, Policy::None, db, t);
            let mut tx = db.begin();
            for i in 0..100 {
                assert_eq!(
                    tx.get(&t, key(i)).unwrap().as_deref(),
                    Some(&[2u8; 100][..])
                );
            }
            tx.commit().unwrap();
            db.verify().unwrap();
        }

        /// Every policy, rounds between commits, a checkpoint, evictions: after a crash
        /// every committed key is there.
        #[test]
        fn committed_keys_survive_a_crash_after_cleaning() {
            let policies = [
                Policy::Oldest,
                Policy::Coldest,
                Policy::Hottest,
                Policy::None,
                Policy::Clustered { min_pages: 4 },
                Policy::Mixed,
            ];
            for (seed, policy) in policies.into_iter().enumerate() {
                let sim = SimStorage::new(100 + seed as u64);
                let db = open(&sim, policy);
                let t = db.create_table("t").unwrap();
                let mut written = 0;
                let mut expected = [0u8; 600];
                for b in 0..30 {
                    // Some keys twice, so pages get dirty again after being cleaned.
                    let from = if b % 3 == 2 { (b - 2) * 20 } else { b * 20 };
                    put(&db, &t, from..(b + 1) * 20, b as u8);
                    expected[from..(b + 1) * 20].fill(b as u8);
                    if b % 4 == 3 {
                        written += round_of(&db, policy).pages;
                    }
                    if b == 15 {
                        db.checkpoint().unwrap();
                    }
                }
                assert!(written > 0, "{policy:?} wrote nothing");
                assert!(counted(&db).0 > 0);
                db.verify().unwrap();
                let (db, t) = crash_and_reopen(&sim, policy, db, t);
                let mut tx = db.begin();
                for (i, &v) in expected.iter().enumerate() {
                    assert_eq!(
                        tx.get(&t, key(i)).unwrap().as_deref(),
                        Some(&[v; 100][..]),
                        "{policy:?}: key {i}"
                    );
                }
                tx.commit().unwrap();
                db.verify().unwrap();
            }
        }

        /// Eviction pressure wakes the cleaner thread: its period is an hour, yet it
        /// writes once fetches meet dirty victims.
        #[test]
        fn a_dirty_victim_wakes_the_cleaner() {
            let sim = SimStorage::new(26);
            let db =
                Database::open_on(Arc::new(sim.pinned()), "/db", options(Policy::Oldest)).unwrap();
            let t = db.create_table("t").unwrap();
            assert_eq!(counted(&db), (0, 0));
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut i = 0;
            while counted(&db).1 == 0 {
                assert!(Instant::now() < deadline, "the cleaner never ran");
                put(&db, &t, i..i + 20, 3);
                i += 20;
                if db.stats().pool.victim_writes > 0 {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            assert!(db.stats().pool.victim_writes > 0);
            db.verify().unwrap();
        }

        /// Log-space pressure wakes the cleaner: a transaction left open pins the log,
        /// checkpoints cannot truncate it, and once the log kept is past its bound the
        /// committers notify the cleaner (period an hour, no dirty victim: nothing else
        /// would).
        #[test]
        fn log_pressure_wakes_the_cleaner() {
            let sim = SimStorage::new(27);
            let mut o = options(Policy::Oldest);
            o.checkpoint_log_bytes = 16 << 10;
            let db = Database::open_on(Arc::new(sim.pinned()), "/db", o).unwrap();
            let t = db.create_table("t").unwrap();
            let mut pin = db.begin();
            pin.put(&t, b"pinned", b"x").unwrap();
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut i = 0u8;
            while counted(&db).1 == 0 {
                assert!(Instant::now() < deadline, "the cleaner never ran");
                put(&db, &t, 0..10, i);
                i = i.wrapping_add(1);
            }
            assert_eq!(db.stats().pool.victim_writes, 0);
            pin.commit().unwrap();
            db.verify().unwrap();
        }

        /// The cleaner thread running every millisecond beside writers in a pool smaller
        /// than the table (evictions, clusters as large as the pool, latches taken):
        /// nothing stalls, and after a crash every committed key is there.
        #[test]
        fn a_busy_cleaner_beside_writers_loses_nothing() {
            for (seed, policy) in [(31, Policy::None), (32, Policy::Mixed)] {
                let sim = SimStorage::new(seed);
                let mut o = options(policy);
                o.cleaner_interval = Duration::from_millis(1);
                let db = Database::open_on(Arc::new(sim.pinned()), "/db", o).unwrap();
                let t = db.create_table("t").unwrap();
                std::thread::scope(|s| {
                    for w in 0..3 {
                        let (db, t) = (&db, &t);
                        s.spawn(move || {
                            for b in 0..20 {
                                let from = 1000 * w + 10 * b;
                                put(db, t, from..from + 10, w as u8 + 1);
                            }
                        });
                    }
                });
                // On a loaded machine the writers can finish before the cleaner's thread
                // is scheduled: write on (other keys) until it has written, for a while.
                let deadline = std::time::Instant::now() + Duration::from_secs(20);
                let mut extra = 0;
                while counted(&db).1 == 0 && std::time::Instant::now() < deadline {
                    put(&db, &t, 5000 + extra..5000 + extra + 10, 9);
                    extra = (extra + 10) % 500;
                }
                assert!(counted(&db).1 > 0, "{policy:?}: the cleaner never wrote");
                db.verify().unwrap();
                let (db, t) = crash_and_reopen(&sim, policy, db, t);
                let mut tx = db.begin();
                for w in 0..3 {
                    for i in 1000 * w..1000 * w + 200 {
                        assert_eq!(
                            tx.get(&t, key(i)).unwrap().as_deref(),
                            Some(&[w as u8 + 1; 100][..]),
                            "{policy:?}: key {i}"
                        );
                    }
                }
                tx.commit().unwrap();
            }
        }
    }
}
