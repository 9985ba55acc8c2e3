//! Placeholder: the simulated disk (being written).
/// Simulated disk.
#[derive(Clone, Default)]
pub struct SimStorage;
/// Fault kind.
pub enum FaultKind { Eio, Enospc }
/// Fault op.
pub enum FaultOp { Write, Sync, Any }
/// Fault plan.
pub struct FaultPlan;
/// Stats.
pub struct SimStats;
