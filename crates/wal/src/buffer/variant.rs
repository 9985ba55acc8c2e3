//! Which insertion algorithm a log buffer uses.

use std::fmt;
use std::str::FromStr;

/// Which insertion algorithm the log buffer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum InsertVariant {
    /// One mutex around reserve + copy + release (Aether Algorithm 1, the baseline).
    #[default]
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
