//! Metrics a service exports: one snapshot ([`Metrics`], from
//! [`Database::metrics`](crate::Database::metrics)) of the counters the engine keeps.
//!
//! Each counter has one home, next to what it counts: the log's flushes, syncs and bytes
//! in the log (`sluice_wal::LogStats`), the pool's misses (page reads) in the pool
//! ([`PoolStats`](crate::PoolStats)), lock waits and deadlocks in the lock manager,
//! checkpoint durations in the checkpoint state. This module keeps what had no home
//! (the commit latency histogram and the pool's hits) and assembles the snapshot.
//!
//! **Cost on the commit path.** Recording takes no lock shared by all threads: the
//! commit latency goes into one of [`STRIPES`] histograms picked per thread (its mutex
//! is contended only by threads that share a stripe), and the pool's hits into a striped
//! counter (one cache line per stripe). A snapshot merges the stripes.

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Stripes of each striped recorder: threads are dealt out over them in turn.
pub(crate) const STRIPES: usize = 16;

/// The largest latency a histogram holds, in microseconds (an hour); longer ones are
/// recorded as this.
const MAX_MICROS: u64 = 3_600_000_000;

/// One snapshot of a database's metrics, a plain value (serialisable with serde, e.g. to
/// JSON for a metrics endpoint). Counters count since the database was opened.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Commit latency: from `commit` (or an agent's commit step) to its acknowledgement,
    /// the wait for the log included. Committed transactions only.
    pub commit_latency: Latency,
    /// Lock requests that had to wait (granted later, or refused).
    pub lock_waits: u64,
    /// Lock requests refused as deadlock victims ([`Error::Deadlock`](crate::Error::Deadlock)).
    pub deadlocks: u64,
    /// Lock requests refused after `lock_timeout` ([`Error::LockTimeout`](crate::Error::LockTimeout)).
    pub lock_timeouts: u64,
    /// Log flushes (write rounds of the log's flush daemon).
    pub log_flushes: u64,
    /// Log syncs (fsyncs of a log segment).
    pub log_syncs: u64,
    /// Log bytes written.
    pub log_bytes: u64,
    /// Page fetches the buffer pool served from memory.
    pub pool_hits: u64,
    /// Page fetches that read the page from the data file.
    pub pool_misses: u64,
    /// Checkpoints completed, and how long they took.
    pub checkpoints: Durations,
    /// Continuous log archiving ([`Options::log_archive`](crate::Options::log_archive)):
    /// how far the archive is; `None` without one (and in a read-only database).
    pub archive: Option<ArchiveMetrics>,
}

/// Where continuous log archiving stands ([`Metrics::archive`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ArchiveMetrics {
    /// The archive directory.
    pub dir: String,
    /// The mirror the archive is shipped to ([`Options::archive_mirror`](crate::Options::archive_mirror)),
    /// as it prints itself; `None` without one.
    pub mirror: Option<String>,
    /// Every log segment below this LSN is archived (its copy and its `MANIFEST` entry
    /// durable, and uploaded to the mirror if there is one); checkpoints free no segment
    /// at or above it.
    pub archived_lsn: u64,
    /// Durable log bytes not archived yet (the durable LSN minus `archived_lsn`): the
    /// archiver copies a segment once the log has moved past it, so this stays below
    /// about a segment while it keeps up, and grows while it is stalled or stopped.
    pub unarchived_bytes: u64,
    /// Segments archived since the database was opened.
    pub segments_archived: u64,
    /// Bytes archived since the database was opened.
    pub bytes_archived: u64,
    /// The error that stopped the archiver, if one did: the database goes on, but no
    /// segment is archived (nor freed) until it is reopened.
    pub error: Option<String>,
}

/// A latency distribution (from an HDR histogram, 2 significant digits), in
/// microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Events recorded.
    pub count: u64,
    /// Their mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p999_us: u64,
    /// The longest.
    pub max_us: u64,
}

/// How long a kind of event took, in all and the last time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Durations {
    /// Events completed.
    pub count: u64,
    /// The last one's duration, in microseconds.
    pub last_us: u64,
    /// The sum of their durations, in microseconds.
    pub total_us: u64,
    /// The longest, in microseconds.
    pub max_us: u64,
}

/// Records [`Durations`] with atomics (for rare events: checkpoints).
#[derive(Debug, Default)]
pub(crate) struct DurationRecorder {
    count: AtomicU64,
    last_us: AtomicU64,
    total_us: AtomicU64,
    max_us: AtomicU64,
}

impl DurationRecorder {
    pub(crate) fn record(&self, d: Duration) {
        let us = micros(d);
        self.last_us.store(us, Ordering::Relaxed);
        self.total_us.fetch_add(us, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Release);
    }

    pub(crate) fn snapshot(&self) -> Durations {
        Durations {
            count: self.count.load(Ordering::Acquire),
            last_us: self.last_us.load(Ordering::Relaxed),
            total_us: self.total_us.load(Ordering::Relaxed),
            max_us: self.max_us.load(Ordering::Relaxed),
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// This thread's stripe: threads are dealt out over the stripes in the order they first
/// record anything.
fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
    }
    STRIPE.with(|s| *s)
}

/// A counter bumped from many threads at once: one cache line per stripe.
#[derive(Debug, Default)]
pub(crate) struct StripedCounter {
    stripes: [CachePadded<AtomicU64>; STRIPES],
}

impl StripedCounter {
    pub(crate) fn add(&self, n: u64) {
        self.stripes[stripe()].fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> u64 {
        self.stripes.iter().map(|s| s.load(Ordering::Relaxed)).sum()
    }
}

/// A latency histogram recorded from many threads: one histogram per stripe, merged on
/// [`LatencyRecorder::snapshot`].
pub(crate) struct LatencyRecorder {
    stripes: Box<[CachePadded<Mutex<Histogram<u64>>>]>,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        LatencyRecorder {
            stripes: (0..STRIPES)
                .map(|_| CachePadded::new(Mutex::new(histogram())))
                .collect(),
        }
    }
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_MICROS, 2).expect("valid histogram bounds")
}

impl LatencyRecorder {
    pub(crate) fn record(&self, d: Duration) {
        let us = micros(d).clamp(1, MAX_MICROS);
        self.stripes[stripe()].lock().saturating_record(us);
    }

    pub(crate) fn snapshot(&self) -> Latency {
        let mut all = histogram();
        for s in self.stripes.iter() {
            all.add(&*s.lock())
                .expect("histograms of the same bounds merge");
        }
        if all.is_empty() {
            return Latency::default();
        }
        Latency {
            count: all.len(),
            mean_us: all.mean(),
            p50_us: all.value_at_quantile(0.5),
            p90_us: all.value_at_quantile(0.9),
            p99_us: all.value_at_quantile(0.99),
            p999_us: all.value_at_quantile(0.999),
            max_us: all.max(),
        }
    }
}

/// What the engine records for [`Metrics`] that has no other home.
#[derive(Default)]
pub(crate) struct Recorder {
    pub(crate) commits: LatencyRecorder,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripes_merge_into_one_snapshot() {
        let r = LatencyRecorder::default();
        assert_eq!(r.snapshot(), Latency::default());
        std::thread::scope(|s| {
            for i in 0..4u64 {
                let r = &r;
                s.spawn(move || r.record(Duration::from_micros(100 * (i + 1))));
            }
        });
        let l = r.snapshot();
        assert_eq!(l.count, 4);
        assert!((395..=405).contains(&l.max_us), "{l:?}");
        let c = StripedCounter::default();
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| c.add(2));
            }
        });
        assert_eq!(c.get(), 6);
    }

    #[test]
    fn durations_keep_count_last_total_and_max() {
        let d = DurationRecorder::default();
        d.record(Duration::from_micros(30));
        d.record(Duration::from_micros(10));
        assert_eq!(
            d.snapshot(),
            Durations {
                count: 2,
                last_us: 10,
                total_us: 40,
                max_us: 30
            }
        );
    }
}
