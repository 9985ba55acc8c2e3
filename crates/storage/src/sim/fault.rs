//! Fault injection for the simulated disk (which operation fails, where, how, for how
//! long; what an armed failure point does), and the errors with which a halted
//! incarnation (power loss or process kill) answers.

use std::error::Error;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::disk::normalize;
use crate::error::io_chain;

/// The raw OS error numbers the simulated disk reports, so that callers see exactly what
/// a real Linux disk would give them.
const EIO: i32 = 5;
const ENOSPC: i32 = 28;

/// At most this many fault plans are armed at once: a test needs a handful, and a longer
/// list means a test is leaking plans (forgot `clear_faults`).
const MAX_ARMED_FAULTS: usize = 64;

/// Which operations a [`FaultPlan`] matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultOp {
    /// `read_at`. Reads are never counted by
    /// [`SimStorage::crash_at_op`](super::SimStorage::crash_at_op); only plans count them.
    Read,
    /// `write_at`, `set_len` (including a truncating open) and `allocate`: everything that
    /// changes a file's bytes or length.
    Write,
    /// `sync_data` and `sync_dir` (also the directory syncs inside `create_dir_all`). An
    /// injected `sync_data` failure has Linux's semantics: see
    /// [`SimStorage`](super::SimStorage).
    Sync,
    /// Every counted operation: the above except reads, plus creating files and
    /// directories, renaming and removing (the operations that
    /// [`SimStorage::crash_at_op`](super::SimStorage::crash_at_op) counts).
    Any,
}

/// The error an injected fault returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// EIO (`raw_os_error` 5): the device failed.
    Eio,
    /// ENOSPC (`raw_os_error` 28, kind `StorageFull`): the device is full.
    Enospc,
}

impl FaultKind {
    /// The plain OS error of this fault, as a real disk reports it (the simulated disk
    /// returns it wrapped so that it names the path; see [`crate::raw_os_error`]).
    pub fn to_error(self) -> io::Error {
        match self {
            FaultKind::Eio => io::Error::from_raw_os_error(EIO),
            FaultKind::Enospc => io::Error::from_raw_os_error(ENOSPC),
        }
    }
}

/// What an armed failure point ([`crate::failpoint`]) does when it is reached the chosen
/// time ([`crate::SimStorage::set_failpoint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailAction {
    /// Nothing: the point only counts how often it is reached
    /// ([`crate::SimStorage::failpoint_hits`]).
    Count,
    /// The call returns this error (as an injected fault would), once.
    Error(FaultKind),
    /// The machine loses power there ([`crate::SimStorage::crash`]); the call returns the
    /// power loss's EIO.
    PowerLoss,
    /// The process is killed there ([`crate::SimStorage::kill_process`]); the call returns
    /// the kill's EIO.
    Kill,
}

/// A planned failure: the `after`-th operation matching `op` (counted from the moment the
/// plan is injected, 1-based) fails with `kind`; if [`persistent`](FaultPlan::persistent),
/// every later matching operation fails too, until
/// [`SimStorage::clear_faults`](super::SimStorage::clear_faults). Scoped with
/// [`on`](FaultPlan::on), the plan sees only operations on one path. A failed operation
/// has no effect on the disk, except a failed `sync_data` (see
/// [`SimStorage`](super::SimStorage): Linux drops the file's unsynced writes from
/// write-back).
///
/// ```
/// use sluice_storage::{FaultKind, FaultOp, FaultPlan};
/// // From the second sync of anything in /db/log on, every one fails with EIO.
/// let plan = FaultPlan::new(FaultOp::Sync, 2, FaultKind::Eio)
///     .persistent()
///     .on("/db/log");
/// assert!(plan.is_persistent());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultPlan {
    op: FaultOp,
    after: u64,
    kind: FaultKind,
    persistent: bool,
    path: Option<PathBuf>,
}

impl FaultPlan {
    /// Fails the `after`-th (1-based) operation matching `op` from injection on, once,
    /// with `kind`, whatever path it concerns. Panics if `after` is 0 (a test bug).
    pub fn new(op: FaultOp, after: u64, kind: FaultKind) -> FaultPlan {
        assert!(after >= 1, "FaultPlan::after is 1-based, got 0");
        FaultPlan {
            op,
            after,
            kind,
            persistent: false,
            path: None,
        }
    }

    /// The plan fails the `after`-th matching operation and every later one.
    pub fn persistent(self) -> FaultPlan {
        FaultPlan {
            persistent: true,
            ..self
        }
    }

    /// The plan sees only operations that concern `path`: a file's reads, writes, length
    /// changes and syncs (through a handle opened with that path), and the creation,
    /// renaming or removal of the entry `path` names; for a directory, its `sync_dir` and
    /// the creation, renaming or removal of entries directly in it. Operations on other
    /// paths neither fail nor count.
    pub fn on(self, path: impl AsRef<Path>) -> FaultPlan {
        FaultPlan {
            path: Some(normalize(path.as_ref())),
            ..self
        }
    }

    /// Which operations the plan matches.
    pub fn op(&self) -> FaultOp {
        self.op
    }

    /// The 1-based number of the first matching operation that fails.
    pub fn after(&self) -> u64 {
        self.after
    }

    /// The error returned.
    pub fn kind(&self) -> FaultKind {
        self.kind
    }

    /// True if every matching operation from the `after`-th on fails.
    pub fn is_persistent(&self) -> bool {
        self.persistent
    }

    /// The path the plan is limited to, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}

/// An operation the simulated disk checks against fault plans. All but `Read` are also
/// counted for `crash_at_op`/`kill_at_op`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OpKind {
    Read,
    Write,
    SetLen,
    SyncData,
    SyncDir,
    /// Creating a file or a directory entry.
    Create,
    Rename,
    Remove,
}

impl OpKind {
    fn matches(self, op: FaultOp) -> bool {
        match op {
            FaultOp::Read => self == OpKind::Read,
            FaultOp::Write => matches!(self, OpKind::Write | OpKind::SetLen),
            FaultOp::Sync => matches!(self, OpKind::SyncData | OpKind::SyncDir),
            FaultOp::Any => self != OpKind::Read,
        }
    }
}

/// One injected plan and how many matching operations it has seen.
#[derive(Debug)]
struct ArmedFault {
    plan: FaultPlan,
    seen: u64,
}

/// The armed fault plans, in injection order.
#[derive(Debug, Default)]
pub(super) struct Faults {
    armed: Vec<ArmedFault>,
}

impl Faults {
    pub(super) fn inject(&mut self, plan: FaultPlan) {
        assert!(plan.after >= 1, "FaultPlan::after is 1-based, got 0");
        assert!(
            self.armed.len() < MAX_ARMED_FAULTS,
            "more than {MAX_ARMED_FAULTS} fault plans armed; call clear_faults between cases"
        );
        self.armed.push(ArmedFault { plan, seen: 0 });
    }

    pub(super) fn clear(&mut self) {
        self.armed.clear();
    }

    /// Called once for every operation that is attempted, with the paths it concerns
    /// (normalised); returns the fault it must fail with, if any. Every matching plan
    /// counts the operation, even when an earlier plan already fails it, so that each
    /// plan's `after` means what it says.
    pub(super) fn check(&mut self, op: OpKind, paths: &[&Path]) -> Option<FaultKind> {
        let mut failure = None;
        for armed in &mut self.armed {
            if !op.matches(armed.plan.op) {
                continue;
            }
            let on_path = armed
                .plan
                .path
                .as_deref()
                .is_none_or(|scope| paths.contains(&scope));
            if !on_path {
                continue;
            }
            armed.seen += 1;
            let fires = armed.seen == armed.plan.after
                || (armed.plan.persistent && armed.seen > armed.plan.after);
            if fires && failure.is_none() {
                failure = Some(armed.plan.kind);
            }
        }
        // A transient plan that has fired is spent; dropping it keeps the list short.
        self.armed
            .retain(|armed| armed.plan.persistent || armed.seen < armed.plan.after);
        failure
    }
}

/// How an incarnation of the simulated system ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Halt {
    /// The machine lost power: unsynced state meets its fate.
    PowerLoss,
    /// The process died (SIGKILL) but the machine and its page cache lived on.
    ProcessKill,
}

/// The payload of the EIO with which a halted incarnation answers: it says that the
/// machine crashed or the process was killed, which a bare "Input/output error" would not.
#[derive(Debug)]
struct HaltError {
    halt: Halt,
    /// 1-based: the n-th power loss, or the n-th process kill.
    number: u64,
    detail: &'static str,
}

impl fmt::Display for HaltError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.halt {
            Halt::PowerLoss => "the simulated machine crashed (power loss",
            Halt::ProcessKill => "the simulated process was killed (kill",
        };
        write!(
            f,
            "Input/output error (os error {EIO}): {what} #{}); {}",
            self.number, self.detail
        )
    }
}

impl Error for HaltError {}

/// An EIO saying that the simulated machine crashed or its process was killed. Its kind
/// is EIO's kind; it cannot also carry `raw_os_error() == Some(5)` because
/// `std::io::Error` holds either a raw code or a payload, never both; [`is_halt_error`]
/// recognises it.
pub(super) fn halt_error(halt: Halt, number: u64, detail: &'static str) -> io::Error {
    assert!(number >= 1, "power losses and kills are numbered from 1");
    let kind = io::Error::from_raw_os_error(EIO).kind();
    io::Error::new(
        kind,
        HaltError {
            halt,
            number,
            detail,
        },
    )
}

/// True if `error`, or an error it wraps, is the EIO of a simulated power loss or process
/// kill (a stale handle or view, or the operation at which an armed halt fired).
pub(super) fn is_halt_error(error: &io::Error) -> bool {
    io_chain(error).any(|e| e.is::<HaltError>())
}
