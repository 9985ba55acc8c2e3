//! The log-based cleaner (the propagation paper's Algorithm 2).
//!
//! TO BE WRITTEN.
