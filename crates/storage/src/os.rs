//! Placeholder: the real-file backend (being written).
/// Real files.
#[derive(Debug, Default, Clone)]
pub struct OsStorage;
