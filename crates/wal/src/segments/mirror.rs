//! The archive's mirror: a second place — an object store, in practice — that the
//! archiver ships the local archive to ([`ArchiveMirror`]). The trait is the whole seam:
//! this crate knows nothing of object stores, HTTP or async runtimes (`sluice-objstore`
//! implements it over the `object_store` crate).
//!
//! What the archiver puts, by name (the same names the local archive uses):
//!
//! * the `ARCHIVE_OF` marker, once per open, before any segment;
//! * each segment's copy, once its local copy and `MANIFEST` entry are durable;
//! * then the whole `MANIFEST` (an object store has no append): the mirror's manifest
//!   therefore never lists a segment whose object is not already there.
//!
//! A segment counts as archived (`archived` moves past it, and truncation may free it)
//! only once both the local copy and the upload are done.

use std::fmt::Debug;
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// A destination the archiver ships each archived segment (and the archive's `MANIFEST`
/// and `ARCHIVE_OF` marker) to, after the local copy is durable; see
/// [`crate::Log::open_mirrored`].
///
/// Both calls block; the archiver calls them from its own thread, one at a time.
pub trait ArchiveMirror: Send + Sync + Debug {
    /// Stores `bytes` as the object `name`, whole and atomically, replacing an object of
    /// that name if there is one, and returns once the mirror holds it durably. Putting
    /// the same bytes twice must be harmless: after a crash or a failed upload the
    /// archiver puts again what it cannot show was stored.
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()>;

    /// The object `name`, or `None` if the mirror holds none. The archiver reads the
    /// mirror's `MANIFEST` with it at open, to find what is still to upload.
    fn get(&self, name: &str) -> io::Result<Option<Vec<u8>>>;

    /// How often and how patiently a failed call is tried again before the archiver
    /// stops with the error.
    fn retry(&self) -> MirrorRetry {
        MirrorRetry::default()
    }
}

/// How the archiver retries a failed mirror call: up to `tries` calls in all, sleeping
/// `first_backoff` after the first failure, doubling each time up to `max_backoff`.
/// After the last failure the archiver stops (as after a local I/O error) and
/// [`crate::Log::archive_error`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MirrorRetry {
    /// Calls in all (at least 1).
    pub tries: u32,
    /// The sleep after the first failure.
    pub first_backoff: Duration,
    /// The longest sleep between two tries.
    pub max_backoff: Duration,
}

impl Default for MirrorRetry {
    /// 8 tries over about 11 s (0.1 s, doubling, at most 5 s between two): a brief
    /// outage is ridden out, a long one stops the archiver until the next open.
    fn default() -> Self {
        MirrorRetry {
            tries: 8,
            first_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
        }
    }
}

impl MirrorRetry {
    /// The sleep after failed try `n` (1-based).
    pub(crate) fn backoff(&self, n: u32) -> Duration {
        let doubled = self
            .first_backoff
            .saturating_mul(1u32 << n.saturating_sub(1).min(20));
        doubled.min(self.max_backoff)
    }
}

/// An [`ArchiveMirror`] shared by reference, for option structs that compare and print:
/// two are equal when they are the same mirror (the same allocation).
#[derive(Clone)]
pub struct SharedMirror(pub Arc<dyn ArchiveMirror>);

impl SharedMirror {
    /// Wraps `mirror`.
    pub fn new(mirror: Arc<dyn ArchiveMirror>) -> SharedMirror {
        SharedMirror(mirror)
    }
}

impl Debug for SharedMirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for SharedMirror {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.0), Arc::as_ptr(&other.0))
    }
}

impl Eq for SharedMirror {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let r = MirrorRetry {
            tries: 5,
            first_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
        };
        let got: Vec<u128> = (1..=5).map(|n| r.backoff(n).as_millis()).collect();
        assert_eq!(got, vec![10, 20, 40, 50, 50]);
        assert_eq!(r.backoff(1000), Duration::from_millis(50));
    }
}
