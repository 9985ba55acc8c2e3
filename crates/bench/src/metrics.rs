//! What a run measures of the process: latency percentiles, context switches and CPU
//! time, the cores it has. [`Latency`] and [`CpuCost`] are the fields every result
//! reports the same way, flattened into its JSON object.

use std::time::Duration;

/// A snapshot of this process's resource usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Voluntary context switches (a thread blocked).
    pub voluntary_ctx: u64,
    /// Involuntary context switches (a thread was preempted).
    pub involuntary_ctx: u64,
    /// User plus system CPU time.
    pub cpu: Duration,
    /// Of that, system (kernel) time: the cost of blocking, waking and I/O calls.
    pub system: Duration,
}

impl Usage {
    /// This process's usage so far (all threads), from `getrusage(RUSAGE_SELF)`.
    pub fn now() -> Usage {
        // SAFETY: `rusage` is plain old data, so a zeroed value is valid, and getrusage
        // only writes into the struct we pass.
        let ru = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut ru);
            ru
        };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        Usage {
            voluntary_ctx: ru.ru_nvcsw as u64,
            involuntary_ctx: ru.ru_nivcsw as u64,
            cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
            system: tv(ru.ru_stime),
        }
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            voluntary_ctx: self.voluntary_ctx - earlier.voluntary_ctx,
            involuntary_ctx: self.involuntary_ctx - earlier.involuntary_ctx,
            cpu: self.cpu.saturating_sub(earlier.cpu),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

/// Logical CPUs available to this process.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Latency percentiles of a run, in µs: the fields every result reports the same way
/// (flattened into its JSON object and CSV row as `p50_us` and `p99_us`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Latency {
    /// Median, µs.
    pub p50_us: u64,
    /// 99th percentile, µs.
    pub p99_us: u64,
}

impl Latency {
    /// The median and 99th percentile of `h` (zero when it is empty).
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Latency {
        Latency {
            p50_us: h.value_at_quantile(0.5),
            p99_us: h.value_at_quantile(0.99),
        }
    }
}

/// What the process spent per transaction in a measured window: context switches (a
/// protocol that blocks shows in the voluntary ones) and CPU (flattened into a result's
/// JSON object like [`Latency`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct CpuCost {
    /// Voluntary + involuntary context switches of the process per transaction.
    pub ctx_switches_per_txn: f64,
    /// Of those, voluntary (a thread blocked: the protocol's own cost).
    pub voluntary_ctx_per_txn: f64,
    /// Of those, involuntary (a thread was preempted — on a shared machine, partly by
    /// other processes).
    pub involuntary_ctx_per_txn: f64,
    /// CPU time used ÷ (wall time × cores).
    pub cpu_util: f64,
    /// Of that, system time ÷ (wall time × cores): what the kernel spent (blocking and
    /// waking threads, I/O calls).
    pub sys_cpu_util: f64,
}

impl CpuCost {
    /// The cost of `txns` transactions (at least one is counted) that took `used` over
    /// `seconds` of wall time.
    pub fn of(used: &Usage, txns: u64, seconds: f64) -> CpuCost {
        let per_txn = |n: u64| n as f64 / txns.max(1) as f64;
        CpuCost {
            ctx_switches_per_txn: per_txn(used.voluntary_ctx + used.involuntary_ctx),
            voluntary_ctx_per_txn: per_txn(used.voluntary_ctx),
            involuntary_ctx_per_txn: per_txn(used.involuntary_ctx),
            cpu_util: used.cpu.as_secs_f64() / (seconds * cores() as f64),
            sys_cpu_util: used.system.as_secs_f64() / (seconds * cores() as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Row {
        tps: u8,
        #[serde(flatten)]
        latency: Latency,
        seconds: u8,
    }

    #[test]
    fn a_flattened_latency_keeps_the_json_field_names_and_their_place() {
        let r = Row {
            tps: 1,
            latency: Latency {
                p50_us: 2,
                p99_us: 3,
            },
            seconds: 4,
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"tps":1,"p50_us":2,"p99_us":3,"seconds":4}"#
        );
    }
}
