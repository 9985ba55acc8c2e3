//! The crash sweep (being written).

/// What a crash sweep found.
pub struct CrashReport;
