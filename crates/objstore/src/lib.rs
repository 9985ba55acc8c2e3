//! `sluice-objstore`: ships sluice's log archive to object storage, and pulls it back.
//!
//! The log archive is a local directory the archiver writes through the storage seam
//! (so the crash simulator covers it); `ObjectStoreMirror` is a
//! [`sluice_wal::ArchiveMirror`] that the archiver ships each archived segment to — the
//! segment's copy, then the whole `MANIFEST`, and the `ARCHIVE_OF` marker — through the
//! `object_store` crate, under a prefix, with the same names as in the local archive.
//! A segment counts as archived (and the log may free it) only once its upload is done.
//!
//! Destinations are URLs: `file:///abs/path` always (a directory, written with `fsync`);
//! `s3://bucket/prefix`, `gs://bucket/prefix` and `az://container/prefix` with this
//! crate's `s3`, `gcp` and `azure` features, which turn on `object_store`'s stores (their
//! credentials come from the environment, or from `ObjectStoreMirror::from_url_opts`).
//! HTTP, TLS and signing are `object_store`'s; this crate only blocks on its calls on a
//! small current-thread `tokio` runtime of its own.
//!
//! A restore reads a local archive directory: `pull` downloads a mirror's marker,
//! segments and `MANIFEST` into one, checking each segment's length and CRC32C against
//! the `MANIFEST` first, so `sluice_wal::verify_archive` and `Database::restore` read it
//! as they read the archive it mirrors.
//!
//! All of it is behind the `object-store` feature (the cloud features imply it): without
//! it the crate is empty.

#![warn(missing_docs)]
#![cfg(feature = "object-store")]

use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, ObjectStoreScheme, PutPayload};
use sluice_wal::dirs::ARCHIVE_MARKER_NAME;
use sluice_wal::{
    parse_archive_manifest, parse_archive_manifest_whole, ArchiveMirror, MirrorRetry, MANIFEST_NAME,
};
use std::fmt;
use std::fs;
use std::future::Future;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A URL this crate cannot use: malformed, a scheme it does not know, a store whose
    /// feature is off, or a destination directory that is not what it must be.
    #[error("{0}")]
    InvalidArgument(String),
    /// The object store failed (the network, the credentials, a missing bucket).
    #[error("{0}")]
    Store(String),
    /// What the mirror holds is not a whole archive: no `MANIFEST`, an object it lists
    /// is missing, or one does not match its entry.
    #[error("{0}")]
    Damaged(String),
    /// Writing the local archive directory failed.
    #[error("{0}")]
    Io(String),
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An [`ArchiveMirror`] over an [`ObjectStore`]: each object is put whole
/// (`ObjectStore::put`, atomic) under `prefix`.
pub struct ObjectStoreMirror {
    store: Arc<dyn ObjectStore>,
    prefix: ObjectPath,
    /// What it prints as (the URL without credentials), in errors and metrics.
    name: String,
    runtime: tokio::runtime::Runtime,
    retry: MirrorRetry,
}

impl fmt::Debug for ObjectStoreMirror {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl ObjectStoreMirror {
    /// A mirror putting objects under `prefix` (`/`-separated; empty: the store's root)
    /// in `store`, named `name` in errors and metrics.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        name: impl Into<String>,
    ) -> Result<ObjectStoreMirror> {
        let prefix = ObjectPath::parse(prefix)
            .map_err(|e| Error::InvalidArgument(format!("object store prefix {prefix:?}: {e}")))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Io(format!("cannot start the object store's runtime: {e}")))?;
        Ok(ObjectStoreMirror {
            store,
            prefix,
            name: name.into(),
            runtime,
            retry: MirrorRetry::default(),
        })
    }

    /// The mirror a URL names: `file:///abs/dir`, or with the matching feature
    /// `s3://bucket/prefix`, `gs://bucket/prefix`, `az://container/prefix` (see the crate
    /// docs). A URL that does not parse, or names a store this build lacks, is
    /// [`Error::InvalidArgument`] with a one-line message.
    pub fn from_url(url: &str) -> Result<ObjectStoreMirror> {
        ObjectStoreMirror::from_url_opts(url, std::iter::empty::<(&str, &str)>())
    }

    /// [`ObjectStoreMirror::from_url`] with options for the store (`object_store`'s
    /// configuration keys, e.g. `aws_region`, `aws_access_key_id`).
    pub fn from_url_opts<I, K, V>(url: &str, options: I) -> Result<ObjectStoreMirror>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: Into<String>,
    {
        let bad = |why: String| Error::InvalidArgument(format!("archive URL {url:?}: {why}"));
        let mut parsed = url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
        let (scheme, prefix) = ObjectStoreScheme::parse(&parsed).map_err(|e| {
            bad(format!(
                "{e} (expected file:///dir, s3://bucket/prefix, gs://bucket/prefix or \
                 az://container/prefix)"
            ))
        })?;
        let store: Arc<dyn ObjectStore> = match scheme {
            // `parse_url` would make a local store that does not sync: the archiver counts
            // a put as durable.
            ObjectStoreScheme::Local => Arc::new(LocalFileSystem::new().with_fsync(true)),
            ObjectStoreScheme::AmazonS3 if !cfg!(feature = "s3") => {
                return Err(bad("S3 needs sluice-objstore's `s3` feature".into()))
            }
            ObjectStoreScheme::GoogleCloudStorage if !cfg!(feature = "gcp") => {
                return Err(bad("GCS needs sluice-objstore's `gcp` feature".into()))
            }
            ObjectStoreScheme::MicrosoftAzure if !cfg!(feature = "azure") => {
                return Err(bad("Azure needs sluice-objstore's `azure` feature".into()))
            }
            ObjectStoreScheme::AmazonS3
            | ObjectStoreScheme::GoogleCloudStorage
            | ObjectStoreScheme::MicrosoftAzure => {
                let (store, _) = object_store::parse_url_opts(&parsed, options)
                    .map_err(|e| bad(one_line(&e)))?;
                Arc::from(store)
            }
            _ => {
                return Err(bad(
                    "not an archive destination (file://, s3://, gs:// or az://)".into(),
                ))
            }
        };
        let _ = parsed.set_password(None);
        parsed.set_query(None);
        ObjectStoreMirror::new(store, prefix.as_ref(), parsed.to_string())
    }

    /// Tries and backoff for the archiver's calls (default [`MirrorRetry::default`]).
    pub fn with_retry(mut self, retry: MirrorRetry) -> ObjectStoreMirror {
        self.retry = retry;
        self
    }

    fn path(&self, name: &str) -> ObjectPath {
        self.prefix.clone().join(name)
    }

    /// Runs `f` to completion on the mirror's runtime — from another thread if the
    /// caller is itself on a `tokio` runtime, where blocking on one would panic.
    fn block<F>(&self, f: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|s| {
                s.spawn(|| self.runtime.block_on(f))
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))
            })
        } else {
            self.runtime.block_on(f)
        }
    }

    /// Downloads the mirror into the local archive directory `dir` (created if needed)
    /// — see [`pull`].
    pub fn pull(&self, dir: &Path, progress: &mut dyn FnMut(PullProgress)) -> Result<PullReport> {
        let what = &self.name;
        let store_err = |doing: String, e: io::Error| Error::Store(format!("{doing}: {e}"));
        let manifest = self
            .get(MANIFEST_NAME)
            .map_err(|e| store_err(format!("reading {what}/{MANIFEST_NAME}"), e))?
            .ok_or_else(|| {
                Error::Damaged(format!(
                    "{what} holds no log archive: it has no {MANIFEST_NAME}"
                ))
            })?;
        // Replaced whole by each put: an entry that does not read is damage.
        let entries = parse_archive_manifest_whole(&manifest)
            .map_err(|e| Error::Damaged(format!("{what}/{MANIFEST_NAME}: {e}")))?;
        let marker = self
            .get(ARCHIVE_MARKER_NAME)
            .map_err(|e| store_err(format!("reading {what}/{ARCHIVE_MARKER_NAME}"), e))?
            .ok_or_else(|| {
                Error::Damaged(format!(
                    "{what} has a {MANIFEST_NAME} but no {ARCHIVE_MARKER_NAME} marker naming \
                     the log it archives"
                ))
            })?;
        let io = |doing: &str, p: &Path, e: io::Error| {
            Error::Io(format!("{doing} {}: {e}", p.display()))
        };
        fs::create_dir_all(dir).map_err(|e| io("creating", dir, e))?;
        let local_marker = dir.join(ARCHIVE_MARKER_NAME);
        match fs::read(&local_marker) {
            Ok(b) if b != marker => {
                return Err(Error::InvalidArgument(format!(
                    "{} is the archive of another log than {what}'s",
                    dir.display()
                )))
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                write_atomically(dir, ARCHIVE_MARKER_NAME, &marker)
                    .map_err(|e| io("writing", &local_marker, e))?
            }
            Err(e) => return Err(io("reading", &local_marker, e)),
        }
        // What the directory lists already: a pull never unlists a copy. A directory
        // ahead of the mirror (the mirror is behind its archive) keeps its manifest; one
        // that lists copies the mirror lacks while lacking some the mirror lists would
        // need the two merged: refused.
        let key = |e: &sluice_wal::ArchivedSegment| (e.first, e.len, e.crc32c);
        let local_manifest = dir.join(MANIFEST_NAME);
        let listed_here: std::collections::BTreeSet<_> = match fs::read(&local_manifest) {
            Ok(b) => parse_archive_manifest(&b)
                .map_err(|e| Error::Damaged(format!("{}: {e}", local_manifest.display())))?
                .iter()
                .map(key)
                .collect(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Default::default(),
            Err(e) => return Err(io("reading", &local_manifest, e)),
        };
        let listed_there: std::collections::BTreeSet<_> = entries.iter().map(key).collect();
        let keep_local = listed_there.is_subset(&listed_here);
        if !keep_local && !listed_here.is_subset(&listed_there) {
            return Err(Error::InvalidArgument(format!(
                "{} lists archived segments {what} does not, and {what} lists some it does                  not: pull into an empty directory",
                dir.display()
            )));
        }
        let total: u64 = entries.iter().map(|e| e.len).sum();
        let mut report = PullReport::default();
        for (i, e) in entries.iter().enumerate() {
            let target = dir.join(&e.name);
            let have = fs::read(&target).ok();
            if have
                .as_ref()
                .is_some_and(|b| b.len() as u64 == e.len && crc32c::crc32c(b) == e.crc32c)
            {
                report.skipped += 1;
            } else {
                let bytes = self
                    .get(&e.name)
                    .map_err(|err| store_err(format!("reading {what}/{}", e.name), err))?
                    .ok_or_else(|| {
                        Error::Damaged(format!(
                            "{what}/{MANIFEST_NAME} lists {} (LSNs {}..{}) but the store has no \
                             such object",
                            e.name, e.first, e.end
                        ))
                    })?;
                let crc = crc32c::crc32c(&bytes);
                if bytes.len() as u64 != e.len || crc != e.crc32c {
                    return Err(Error::Damaged(format!(
                        "{what}/{} (LSNs {}..{}) is {} bytes with CRC32C {crc:08x}, its \
                         {MANIFEST_NAME} entry says {} bytes with {:08x}",
                        e.name,
                        e.first,
                        e.end,
                        bytes.len(),
                        e.len,
                        e.crc32c
                    )));
                }
                write_atomically(dir, &e.name, &bytes)
                    .map_err(|err| io("writing", &target, err))?;
                report.segments += 1;
                report.bytes += e.len;
            }
            progress(PullProgress {
                segments_done: i + 1,
                segments: entries.len(),
                bytes_done: entries[..=i].iter().map(|e| e.len).sum(),
                bytes: total,
            });
        }
        // The manifest last: it lists only segments the directory already holds (kept
        // when it lists everything the mirror's does and more).
        if !keep_local {
            write_atomically(dir, MANIFEST_NAME, &manifest)
                .map_err(|e| io("writing", &dir.join(MANIFEST_NAME), e))?;
        }
        report.listed = entries.len();
        Ok(report)
    }
}

impl ArchiveMirror for ObjectStoreMirror {
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self.path(name);
        let payload = PutPayload::from(bytes.to_vec());
        self.block(self.store.put(&path, payload))
            .map(|_| ())
            .map_err(io::Error::from)
    }

    fn get(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        let path = self.path(name);
        let got = self.block(async {
            match self.store.get(&path).await {
                Ok(r) => r.bytes().await.map(Some),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        });
        got.map(|b| b.map(|b| b.to_vec())).map_err(io::Error::from)
    }

    fn retry(&self) -> MirrorRetry {
        self.retry
    }
}

/// Where a [`pull`] stands, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullProgress {
    /// Segments checked or downloaded so far.
    pub segments_done: usize,
    /// Segments the mirror's `MANIFEST` lists.
    pub segments: usize,
    /// Their bytes so far.
    pub bytes_done: u64,
    /// Their bytes in all.
    pub bytes: u64,
}

/// What a [`pull`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PullReport {
    /// Segments the mirror's `MANIFEST` lists.
    pub listed: usize,
    /// Segments downloaded.
    pub segments: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Segments the directory already held, whole (same length and CRC32C).
    pub skipped: usize,
}

/// Downloads the archive mirrored at `url` ([`ObjectStoreMirror::from_url`]) into the
/// local archive directory `dir` (created if needed; one already holding another log's
/// archive is refused): the `ARCHIVE_OF` marker, every segment its `MANIFEST` lists —
/// each checked against its entry's length and CRC32C before it is written (a temporary
/// name, `fsync`, rename), and skipped if `dir` already holds it whole — and the
/// `MANIFEST` last. `dir` is then an archive that `sluice_wal::verify_archive` checks
/// and a restore (`Database::restore`) rolls a backup forward from.
pub fn pull(url: &str, dir: &Path, progress: &mut dyn FnMut(PullProgress)) -> Result<PullReport> {
    ObjectStoreMirror::from_url(url)?.pull(dir, progress)
}

/// Writes `bytes` as `dir/name`: a temporary file, synced, renamed, the directory
/// synced.
fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    fs::rename(&tmp, dir.join(name))?;
    fs::File::open(dir)?.sync_all()
}

/// An error's message on one line.
fn one_line(e: &dyn std::error::Error) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
