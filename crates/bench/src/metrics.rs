//! What a run measures of the process: its context switches and CPU time, the cores it has.

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
        }
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            voluntary_ctx: self.voluntary_ctx - earlier.voluntary_ctx,
            involuntary_ctx: self.involuntary_ctx - earlier.involuntary_ctx,
            cpu: self.cpu.saturating_sub(earlier.cpu),
        }
    }
}

/// Logical CPUs available to this process.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
