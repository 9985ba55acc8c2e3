//! Which insertion algorithm a log buffer uses.

use std::fmt;
use std::str::FromStr;

/// Which insertion algorithm the log buffer uses.
///
/// The default ([`InsertVariant::for_this_machine`]) follows a rule of thumb from what was
/// measured, not a fixed choice: see [`InsertVariant::for_cores`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InsertVariant {
    /// One mutex around reserve + copy + release (Aether Algorithm 1, the baseline).
    Mutex,
    /// C: threads that find the lock busy combine their requests in a consolidation array;
    /// one leader reserves for the group; groups run one after another (Algorithms 2, 5).
    Consolidated,
    /// D: the lock covers only reservation; copies run in parallel; releases happen in LSN
    /// order (Algorithm 3).
    Decoupled,
    /// CD: consolidation for reservation, decoupled fill and in-order release (§5.3).
    Hybrid,
    /// CDME: hybrid, but a thread whose predecessor is still copying hands its release to
    /// that predecessor and returns at once (Algorithm 4, appendix A.3).
    Delegated,
    /// Beyond the paper: reservation by one fetch-add on the reserved position, release
    /// through the delegation queue, so no inserting thread ever waits for another.
    Atomic,
}

impl InsertVariant {
    /// Up to this many hardware threads the log buffer is never the bottleneck, and the
    /// mutex is the default (see [`InsertVariant::for_cores`]).
    pub const UNCONTENDED_CORES: usize = 4;

    /// The default for a machine with `cores` hardware threads. The rule:
    ///
    /// * **Up to [`InsertVariant::UNCONTENDED_CORES`]: [`InsertVariant::Mutex`].** Measured on a 2-core
    ///   machine (`sluice bench log-insert --threads 2|64 --record-size 120`), every variant
    ///   inserts 6–13 million records a second and their order changes from run to run,
    ///   while TPC-B at 70k tps asks for about 0.4 million: the buffer is idle over 95 % of
    ///   the time whatever its algorithm. The mutex then wins on what is left: the
    ///   shortest path per insert and no parked release turns to wake.
    /// * **Above: [`InsertVariant::Delegated`]** (Aether's CDME, the paper's final design):
    ///   with many cores inserting at once the mutex's critical path (reserve, copy,
    ///   release) serialises them, consolidation takes the reservation off it, decoupling
    ///   the copy, and delegation the in-order release, which also keeps a large record
    ///   from stalling the small ones behind it (Aether §5 and appendix A). This side of
    ///   the rule comes from the paper's machines, not from ours; run `sluice bench
    ///   log-insert` with each variant (or `sluice bench tpcb --log-buffer V`) to check it
    ///   on yours, and set [`crate::LogOptions::variant`] to override it.
    pub fn for_cores(cores: usize) -> InsertVariant {
        if cores <= Self::UNCONTENDED_CORES {
            InsertVariant::Mutex
        } else {
            InsertVariant::Delegated
        }
    }

    /// [`InsertVariant::for_cores`] of this machine's available parallelism (1 if it
    /// cannot be read): the default of [`crate::LogOptions`] and of the benchmarks.
    pub fn for_this_machine() -> InsertVariant {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        InsertVariant::for_cores(cores)
    }

    /// Every variant, in the order benchmarks list them.
    pub const ALL: &'static [InsertVariant] = &[
        InsertVariant::Mutex,
        InsertVariant::Consolidated,
        InsertVariant::Decoupled,
        InsertVariant::Hybrid,
        InsertVariant::Delegated,
        InsertVariant::Atomic,
    ];

    /// The variant's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            InsertVariant::Mutex => "mutex",
            InsertVariant::Consolidated => "consolidated",
            InsertVariant::Decoupled => "decoupled",
            InsertVariant::Hybrid => "hybrid",
            InsertVariant::Delegated => "delegated",
            InsertVariant::Atomic => "atomic",
        }
    }

    /// True for the variants that use the consolidation array (and so `slots`).
    pub fn consolidates(self) -> bool {
        matches!(
            self,
            InsertVariant::Consolidated | InsertVariant::Hybrid | InsertVariant::Delegated
        )
    }
}

impl Default for InsertVariant {
    /// [`InsertVariant::for_this_machine`].
    fn default() -> Self {
        InsertVariant::for_this_machine()
    }
}

impl fmt::Display for InsertVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for InsertVariant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        InsertVariant::ALL
            .iter()
            .copied()
            .find(|v| v.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = InsertVariant::ALL.iter().map(|v| v.name()).collect();
                format!(
                    "unknown log-buffer variant '{s}' (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::InsertVariant;

    #[test]
    fn the_default_is_the_mutex_up_to_four_cores_and_delegated_above() {
        for cores in 0..=InsertVariant::UNCONTENDED_CORES {
            assert_eq!(
                InsertVariant::for_cores(cores),
                InsertVariant::Mutex,
                "{cores}"
            );
        }
        for cores in [5, 8, 16, 64, 1024] {
            assert_eq!(
                InsertVariant::for_cores(cores),
                InsertVariant::Delegated,
                "{cores}"
            );
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(InsertVariant::default(), InsertVariant::for_cores(cores));
        assert_eq!(
            crate::LogOptions::default().variant,
            InsertVariant::for_cores(cores)
        );
        assert_eq!(
            crate::BufferOptions::default().variant,
            InsertVariant::for_cores(cores)
        );
    }
}
