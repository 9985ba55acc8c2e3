//! A simulated file handle and a simulated lock guard: each belongs to the incarnation
//! that made it and goes stale at the next power loss or process kill.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::MutexGuard;

use super::disk::InodeId;
use super::fault::{is_halt_error, OpKind};
use super::inode::Inode;
use super::record::TraceEvent;
use super::state::{Held, Shared, State};
use crate::error::with_path;
use crate::{FileHandle, LockGuard};

/// A held simulated lock; dropping it releases the lock unless a halt already did.
pub(super) struct SimLock {
    pub(super) shared: Arc<Shared>,
    pub(super) path: PathBuf,
    pub(super) token: u64,
}

impl LockGuard for SimLock {}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut state = self.shared.state.lock();
        // After a halt released it, someone else may hold the path: leave theirs alone.
        let emptied = match state.locks.get_mut(&self.path) {
            Some(Held::Exclusive(t)) => *t == self.token,
            Some(Held::Shared(tokens)) => {
                tokens.retain(|&t| t != self.token);
                tokens.is_empty()
            }
            None => false,
        };
        if emptied {
            state.locks.remove(&self.path);
        }
    }
}

/// An open simulated file. It names its inode, not its path, so it keeps working after
/// the file is renamed or removed, as on POSIX; after a power loss or process kill it is
/// stale.
pub(super) struct SimHandle {
    pub(super) shared: Arc<Shared>,
    pub(super) inode: InodeId,
    /// The incarnation that opened it: the handle is live while that one is.
    pub(super) incarnation: u64,
    /// The path it was opened with, for errors, the trace and path-scoped faults.
    pub(super) path: PathBuf,
    /// Opened with [`OpenOptions::read_only`](crate::OpenOptions::read_only): writes and length changes fail (syncs and
    /// cache drops work, as on Linux).
    pub(super) read_only: bool,
    /// A scratch file ([`Storage::scratch`](crate::Storage::scratch)): in no directory,
    /// so nothing it does changes what a crash leaves. Its calls pass injected faults but
    /// are not counted operations (no crash lands on them) and not in the stats.
    pub(super) scratch: bool,
}

impl SimHandle {
    /// The state, if this handle is still live, or the EIO that a stale handle returns.
    fn live(&self) -> io::Result<MutexGuard<'_, State>> {
        let state = self.shared.state.lock();
        if state.incarnation != self.incarnation {
            return Err(state.stale(self.incarnation, "this handle was opened before it"));
        }
        Ok(state)
    }

    fn read(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut state = self.live()?;
        state.stats.reads += 1;
        state.fault(OpKind::Read, &[&self.path])?;
        Ok(state.disk.inode(self.inode).read(buf, offset))
    }

    /// The error for a change through a read-only handle (checked before anything is
    /// counted, as the kernel refuses it before it reaches the disk).
    fn writable(&self) -> io::Result<()> {
        if self.read_only {
            return Err(crate::read_only_error());
        }
        Ok(())
    }

    /// The gate of a change: a counted operation, or for a scratch file the fault check
    /// alone.
    fn begin(&self, state: &mut State, op: OpKind) -> io::Result<()> {
        if self.scratch {
            state.fault(op, &[&self.path])
        } else {
            state.begin(op, &[&self.path])
        }
    }

    fn write(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut state = self.live()?;
        self.writable()?;
        Inode::check_size(offset.checked_add(buf.len() as u64))?;
        self.begin(&mut state, OpKind::Write)?;
        if self.scratch {
            state.disk.inode_mut(self.inode).write(offset, buf);
            return Ok(());
        }
        state.disk.inode_mut(self.inode).write(offset, buf);
        state.stats.writes += 1;
        state.stats.bytes_written += buf.len() as u64;
        state.record(|| TraceEvent::Write {
            path: self.path.clone(),
            offset,
            len: buf.len() as u64,
        });
        Ok(())
    }

    /// A sync through a read-only handle is allowed and does exactly what one through a
    /// writable handle does (Linux syncs an `O_RDONLY` descriptor): it changes no byte,
    /// it makes the file's pending writes — a killed process's included — durable.
    fn sync(&self) -> io::Result<()> {
        let mut state = self.live()?;
        if let Err(e) = self.begin(&mut state, OpKind::SyncData) {
            // An injected failure has Linux's semantics (the type's docs). A halt that
            // fired here left the disk to the power loss or the next incarnation.
            if !is_halt_error(&e) {
                state.disk.inode_mut(self.inode).fail_sync();
            }
            return Err(e);
        }
        state.disk.inode_mut(self.inode).sync();
        if self.scratch {
            return Ok(());
        }
        state.stats.syncs += 1;
        state.record(|| TraceEvent::SyncData(self.path.clone()));
        Ok(())
    }

    fn resize(&self, len: u64) -> io::Result<()> {
        let mut state = self.live()?;
        self.writable()?;
        Inode::check_size(Some(len))?;
        self.begin(&mut state, OpKind::SetLen)?;
        state.disk.inode_mut(self.inode).set_len(len);
        if self.scratch {
            return Ok(());
        }
        state.record(|| TraceEvent::SetLen {
            path: self.path.clone(),
            len,
        });
        Ok(())
    }
}

impl SimHandle {
    /// `allocate`: a length change (the fault plan's `Write` class, where ENOSPC lands),
    /// counted and traced only when the file grows.
    fn grow(&self, len: u64) -> io::Result<()> {
        let mut state = self.live()?;
        self.writable()?;
        Inode::check_size(Some(len))?;
        self.begin(&mut state, OpKind::SetLen)?;
        let inode = state.disk.inode_mut(self.inode);
        let grows = (inode.volatile.len() as u64) < len;
        inode.allocate(len);
        if grows && !self.scratch {
            state.record(|| TraceEvent::Allocate {
                path: self.path.clone(),
                len,
            });
        }
        Ok(())
    }
}

impl FileHandle for SimHandle {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.read(buf, offset).map_err(|e| with_path(&self.path, e))
    }

    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.write(buf, offset)
            .map_err(|e| with_path(&self.path, e))
    }

    fn sync_data(&self) -> io::Result<()> {
        self.sync().map_err(|e| with_path(&self.path, e))
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.resize(len).map_err(|e| with_path(&self.path, e))
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        self.grow(len).map_err(|e| with_path(&self.path, e))
    }

    fn len(&self) -> io::Result<u64> {
        let state = self.live().map_err(|e| with_path(&self.path, e))?;
        Ok(state.disk.inode(self.inode).volatile.len() as u64)
    }

    fn drop_cache(&self) -> io::Result<()> {
        let mut state = self.live().map_err(|e| with_path(&self.path, e))?;
        state.disk.inode_mut(self.inode).drop_cache();
        Ok(())
    }

    fn failpoint(&self, name: &'static str) -> io::Result<()> {
        if !self.shared.failpoints_registered() {
            return Ok(());
        }
        let reached = self.live().and_then(|mut state| state.failpoint(name));
        self.shared.reached.notify_all();
        reached.map_err(|e| with_path(&self.path, e))
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        let mut state = self.shared.state.lock();
        if state.incarnation != self.incarnation {
            return; // The halt already forgot every handle of that incarnation.
        }
        let inode = state.disk.inode_mut(self.inode);
        assert!(inode.open_handles > 0);
        inode.open_handles -= 1;
        if inode.open_handles == 0 {
            // An unlinked file dies with its last handle.
            state.disk.free_unreferenced();
        }
    }
}
