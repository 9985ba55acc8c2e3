//! A storage wrapper whose syncs can be held: for tests that need "the log is not yet
//! durable" to last exactly as long as they say.

use crate::layer::{FileLayer, FileOp, StorageLayer};
use crate::{FileHandle, Storage};
use parking_lot::{Condvar, Mutex};
use std::io;
use std::sync::Arc;

#[derive(Default)]
struct GateState {
    closed: bool,
    /// `sync_data` calls currently held at the gate.
    held: usize,
}

#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

/// Wraps a storage; while the gate is closed, every `sync_data` waits at it (before
/// syncing). Everything else passes straight through.
#[derive(Clone)]
pub struct GatedStorage {
    inner: Arc<dyn Storage>,
    gate: Arc<Gate>,
}

impl GatedStorage {
    /// A gate, open, in front of `inner`.
    pub fn new(inner: Arc<dyn Storage>) -> GatedStorage {
        GatedStorage {
            inner,
            gate: Arc::new(Gate::default()),
        }
    }

    /// From now on, syncs wait.
    pub fn close(&self) {
        self.gate.state.lock().closed = true;
    }

    /// Lets held and future syncs through.
    pub fn open(&self) {
        self.gate.state.lock().closed = false;
        self.gate.cv.notify_all();
    }

    /// Blocks until at least `n` syncs are waiting at the closed gate.
    pub fn wait_held(&self, n: usize) {
        let mut g = self.gate.state.lock();
        while g.held < n {
            self.gate.cv.wait(&mut g);
        }
    }
}

struct GatedFile {
    inner: Box<dyn FileHandle>,
    gate: Arc<Gate>,
}

impl FileLayer for GatedFile {
    fn below(&self) -> &dyn FileHandle {
        &*self.inner
    }
    fn around<T>(&self, op: FileOp, call: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        if op == FileOp::Sync {
            let mut g = self.gate.state.lock();
            if g.closed {
                g.held += 1;
                self.gate.cv.notify_all();
                while g.closed {
                    self.gate.cv.wait(&mut g);
                }
                g.held -= 1;
            }
        }
        call()
    }
}

impl StorageLayer for GatedStorage {
    fn below(&self) -> &dyn Storage {
        &*self.inner
    }
    fn wrap(&self, inner: Box<dyn FileHandle>) -> Box<dyn FileHandle> {
        Box::new(GatedFile {
            inner,
            gate: self.gate.clone(),
        })
    }
}
