//! What `sluice compare` leaves behind if it is interrupted: data directories and
//! PostgreSQL servers, registered while they exist and removed or killed on Ctrl-C.
//!
//! A signal handler may do almost nothing safely, so it only sets a flag; a watcher
//! thread sees it, kills the registered servers, removes the registered directories and
//! exits with 130 (the shell's code for SIGINT).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};
use std::time::Duration;

static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static PIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();

/// Registers a directory to remove on interrupt.
pub fn register_dir(dir: &Path) {
    DIRS.lock().expect("cleanup").push(dir.to_path_buf());
}

/// Forgets a directory (it was removed normally).
pub fn unregister_dir(dir: &Path) {
    DIRS.lock().expect("cleanup").retain(|d| d != dir);
}

/// Registers a server process to kill on interrupt.
pub fn register_pid(pid: u32) {
    PIDS.lock().expect("cleanup").push(pid);
}

/// Forgets a server process (it was stopped normally).
pub fn unregister_pid(pid: u32) {
    PIDS.lock().expect("cleanup").retain(|&p| p != pid);
}

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs the SIGINT/SIGTERM handler and its watcher thread (once per process).
pub fn install() {
    INSTALL.call_once(|| {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: `on_signal` is an `extern "C"` function that only stores to an
            // atomic, which is async-signal-safe.
            unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
        }
        std::thread::spawn(|| loop {
            if INTERRUPTED.load(Ordering::SeqCst) {
                eprintln!("\ninterrupted: stopping servers and removing data directories");
                for &pid in PIDS.lock().expect("cleanup").iter() {
                    // SAFETY: kill has no memory-safety preconditions.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                }
                std::thread::sleep(Duration::from_millis(300));
                for d in DIRS.lock().expect("cleanup").iter() {
                    let _ = std::fs::remove_dir_all(d);
                }
                std::process::exit(130);
            }
            std::thread::sleep(Duration::from_millis(50));
        });
    });
}
