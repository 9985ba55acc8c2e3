//! The page cleaner (the propagation paper's Algorithm 1).
//!
//! TO BE WRITTEN (helper B).

use super::{Counters, PageCleaner};
use crate::buffer_pool::BufferPool;
use crate::error::Result;

/// One round: collect dirty frames into a bounded heap ordered by the policy, sort the
/// candidates by page id, group adjacent pages into clusters, write each cluster with one
/// write, and advance their CleanLSNs once written.
pub(crate) fn round(pool: &BufferPool, cfg: PageCleaner, counters: &Counters) -> Result<()> {
    let _ = (pool, cfg, counters);
    Ok(())
}
