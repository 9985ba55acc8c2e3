//! Errors of the seam: every one names the file or directory it concerns.
//!
//! A bare "Input/output error (os error 5)" tells a user nothing about which of a
//! database's files failed, so both backends wrap each error they return in a
//! [`PathError`] that carries the path, keeping the original error's `kind()` (ENOSPC
//! stays [`io::ErrorKind::StorageFull`]). `std::io::Error` holds either a raw OS code or a
//! payload, never both, so the wrapping hides `raw_os_error()`; [`raw_os_error`] finds the
//! code again by walking the chain of sources.

use std::error::Error;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// The payload of every error the seam returns: the path (or, for a rename, the two
/// paths) it concerns and the original error as its source.
///
/// Displayed as `PATH: original message` (`FROM -> TO: original message` for a rename).
#[derive(Debug)]
pub struct PathError {
    path: PathBuf,
    target: Option<PathBuf>,
    source: io::Error,
}

impl PathError {
    /// The file or directory the failed operation concerned (for a rename, its source).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// For a rename, the target path; `None` for every other operation.
    pub fn target(&self) -> Option<&Path> {
        self.target.as_deref()
    }
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            None => write!(f, "{}: {}", self.path.display(), self.source),
            Some(target) => write!(
                f,
                "{} -> {}: {}",
                self.path.display(),
                target.display(),
                self.source
            ),
        }
    }
}

impl Error for PathError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.source)
    }
}

/// True if `error` already names a path: the innermost path is the most precise one (the
/// parent directory that is missing, say), so it is never wrapped twice.
fn names_a_path(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|inner| inner.is::<PathError>())
}

/// Wraps `error` so that it names `path`, keeping its kind; an error that already names a
/// path is returned unchanged.
pub(crate) fn with_path(path: &Path, error: io::Error) -> io::Error {
    wrap(path, None, error)
}

/// [`with_path`] for an operation on two paths (a rename).
pub(crate) fn with_paths(from: &Path, to: &Path, error: io::Error) -> io::Error {
    wrap(from, Some(to), error)
}

fn wrap(path: &Path, target: Option<&Path>, error: io::Error) -> io::Error {
    if names_a_path(&error) {
        return error;
    }
    let kind = error.kind();
    io::Error::new(
        kind,
        PathError {
            path: path.to_path_buf(),
            target: target.map(Path::to_path_buf),
            source: error,
        },
    )
}

/// The `io::Error`s along `error`'s chain of causes, outermost first.
///
/// `io::Error::source()` skips its own payload (it returns the payload's source), so the
/// walk steps into a payload with `get_ref()` and uses `source()` only for other errors.
pub(crate) fn io_chain(error: &io::Error) -> impl Iterator<Item = &(dyn Error + 'static)> {
    /// A bound on the walk: a chain is a handful of wrappers, never a cycle, but a bug
    /// elsewhere must not turn into an endless loop here.
    const MAX_DEPTH: usize = 32;
    let first: &(dyn Error + 'static) = error;
    let mut next = Some(first);
    std::iter::from_fn(move || {
        let current = next?;
        next = match current.downcast_ref::<io::Error>() {
            Some(io_error) => io_error
                .get_ref()
                .map(|inner| inner as &(dyn Error + 'static)),
            None => current.source(),
        };
        Some(current)
    })
    .take(MAX_DEPTH)
}

/// The raw OS error number of `error` or of any error it wraps (the seam's path-naming
/// wrapper hides it from [`io::Error::raw_os_error`]).
pub fn raw_os_error(error: &io::Error) -> Option<i32> {
    io_chain(error)
        .filter_map(|e| e.downcast_ref::<io::Error>())
        .find_map(io::Error::raw_os_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_error_keeps_its_kind_and_code_and_names_its_path() {
        let e = with_path(Path::new("/db/log"), io::Error::from_raw_os_error(28));
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(e.raw_os_error(), None, "std hides it behind the payload");
        assert_eq!(raw_os_error(&e), Some(28));
        let text = e.to_string();
        assert!(text.starts_with("/db/log: "), "{text}");
        assert!(text.contains("os error 28"), "{text}");
        assert!(!text.contains('\n'), "{text}");
        let inner = e.get_ref().unwrap().downcast_ref::<PathError>().unwrap();
        assert_eq!(inner.path(), Path::new("/db/log"));
        assert_eq!(inner.target(), None);
    }

    #[test]
    fn the_innermost_path_wins_and_renames_name_both() {
        let inner = with_path(Path::new("/a"), io::Error::from_raw_os_error(2));
        let outer = with_path(Path::new("/a/b"), inner);
        assert!(outer.to_string().starts_with("/a: "), "{outer}");
        let e = with_paths(
            Path::new("x.tmp"),
            Path::new("x"),
            io::Error::from_raw_os_error(5),
        );
        assert!(e.to_string().starts_with("x.tmp -> x: "), "{e}");
        assert_eq!(raw_os_error(&e), Some(5));
    }

    #[test]
    fn raw_os_error_finds_nothing_where_there_is_no_code() {
        let e = with_path(Path::new("f"), io::Error::other("plain"));
        assert_eq!(raw_os_error(&e), None);
        assert_eq!(raw_os_error(&io::Error::from_raw_os_error(13)), Some(13));
    }
}
