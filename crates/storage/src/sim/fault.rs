//! Fault injection for the simulated disk (which operation fails, how, for how long), and
//! the errors the simulated disk returns.

use std::error::Error;
use std::fmt;
use std::io;

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
    /// `write_at` and `set_len` (including a truncating open): everything that changes a
    /// file's bytes or length.
    Write,
    /// `sync_data` and `sync_dir`.
    Sync,
    /// Every mutating or syncing operation: the above plus creating, renaming and removing
    /// files (the operations that
    /// [`SimStorage::crash_at_op`](super::SimStorage::crash_at_op) counts).
    Any,
}

/// The error an injected fault returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// EIO (`from_raw_os_error(5)`): the device failed.
    Eio,
    /// ENOSPC (`from_raw_os_error(28)`, kind `StorageFull`): the device is full.
    Enospc,
}

impl FaultKind {
    /// The error an operation hit by this fault returns: the plain OS error, exactly as a
    /// real disk would report it.
    pub fn to_error(self) -> io::Error {
        match self {
            FaultKind::Eio => io::Error::from_raw_os_error(EIO),
            FaultKind::Enospc => io::Error::from_raw_os_error(ENOSPC),
        }
    }
}

/// A planned failure: the `after`-th operation matching `op` (counted from the moment the
/// plan is injected, 1-based) fails with `kind`; if `persistent`, every later matching
/// operation fails too, until
/// [`SimStorage::clear_faults`](super::SimStorage::clear_faults). A failed operation has
/// no effect on the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPlan {
    /// Which operations count and fail.
    pub op: FaultOp,
    /// 1-based: the `after`-th matching operation from now is the first to fail.
    pub after: u64,
    /// The error returned.
    pub kind: FaultKind,
    /// False: only that one operation fails. True: it and every later matching one fail.
    pub persistent: bool,
}

/// An operation the simulated disk counts, for `crash_at_op` and for fault plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OpKind {
    Write,
    SetLen,
    SyncData,
    SyncDir,
    Create,
    Rename,
    Remove,
}

impl OpKind {
    fn matches(self, op: FaultOp) -> bool {
        match op {
            FaultOp::Write => matches!(self, OpKind::Write | OpKind::SetLen),
            FaultOp::Sync => matches!(self, OpKind::SyncData | OpKind::SyncDir),
            FaultOp::Any => true,
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

    /// Called once for every counted operation that is attempted; returns the error it
    /// must fail with, if any. Every matching plan counts the operation, even when an
    /// earlier plan already fails it, so that each plan's `after` means what it says.
    pub(super) fn check(&mut self, op: OpKind) -> Option<io::Error> {
        let mut failure = None;
        for armed in &mut self.armed {
            if !op.matches(armed.plan.op) {
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
        failure.map(FaultKind::to_error)
    }
}

/// The payload of the EIO that a simulated crash produces: it says that the machine
/// crashed, which a bare "Input/output error" would not.
#[derive(Debug)]
struct CrashError {
    crash_number: u64,
    detail: &'static str,
}

impl fmt::Display for CrashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Input/output error (os error {EIO}): the simulated machine crashed \
             (crash #{}); {}",
            self.crash_number, self.detail
        )
    }
}

impl Error for CrashError {}

/// An EIO saying that the simulated machine crashed. Its kind is EIO's kind; it cannot
/// also carry `raw_os_error() == Some(5)` because `std::io::Error` holds either a raw code
/// or a message, never both; [`is_crash_error`] recognises it.
pub(super) fn crash_error(crash_number: u64, detail: &'static str) -> io::Error {
    assert!(crash_number >= 1, "crash numbers are 1-based");
    let kind = io::Error::from_raw_os_error(EIO).kind();
    io::Error::new(
        kind,
        CrashError {
            crash_number,
            detail,
        },
    )
}

/// True if `error` is the EIO of a simulated crash (a stale handle, or the operation at
/// which `crash_at_op` fired).
pub(super) fn is_crash_error(error: &io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|inner| inner.is::<CrashError>())
}
