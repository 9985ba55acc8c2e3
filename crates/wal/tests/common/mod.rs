//! Helpers shared by the WAL scenario tests.
#![allow(dead_code)]

use sluice_storage::{FileHandle, OpenOptions, SimStorage, Storage, StorageLayer};
use sluice_wal::{segment, GroupCommit, Log, LogOptions, Lsn};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub const DIR: &str = "/db/log";

/// Small segments and buffer so a few hundred records exercise rollover and wrap-around.
pub fn small_options() -> LogOptions {
    LogOptions {
        segment_bytes: 8192,
        buffer_bytes: 4096,
        group_commit: GroupCommit {
            max_delay: Duration::from_micros(200),
            ..GroupCommit::default()
        },
        ..LogOptions::default()
    }
}

pub fn sim(seed: u64) -> (SimStorage, Arc<dyn Storage>) {
    let s = SimStorage::new(seed);
    let a: Arc<dyn Storage> = Arc::new(s.clone());
    (s, a)
}

/// A payload that proves its own identity: thread, sequence number, and bytes derived from
/// them, so a reader can tell an intact record that was really written from anything else.
pub fn payload(thread: u32, seq: u32, max_len: usize) -> Vec<u8> {
    let mut x = (thread as u64) << 32 | seq as u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let len = 8 + (next() as usize % max_len.saturating_sub(8).max(1));
    let mut v = Vec::with_capacity(len);
    v.extend_from_slice(&thread.to_le_bytes());
    v.extend_from_slice(&seq.to_le_bytes());
    while v.len() < len {
        v.push(next() as u8);
    }
    v
}

/// Decodes a payload made by [`payload`], checking every byte.
pub fn check_payload(p: &[u8], max_len: usize) -> Option<(u32, u32)> {
    if p.len() < 8 {
        return None;
    }
    let thread = u32::from_le_bytes(p[..4].try_into().unwrap());
    let seq = u32::from_le_bytes(p[4..8].try_into().unwrap());
    (payload(thread, seq, max_len) == p).then_some((thread, seq))
}

/// All records from the start of the log.
pub fn read_all(log: &Log) -> Vec<(Lsn, Vec<u8>)> {
    log.read_from(log.start_lsn())
        .unwrap()
        .map(|r| {
            let r = r.expect("durable log reads back");
            assert_eq!(
                r.end,
                r.lsn.add(sluice_wal::frame::frame_len(r.payload.len()))
            );
            (r.lsn, r.payload)
        })
        .collect()
}

/// Overwrites bytes of the log stream at `lsn` directly on the disk and syncs them.
pub fn poke(storage: &dyn Storage, dir: &Path, segment_bytes: u64, lsn: Lsn, bytes: &[u8]) {
    let seg = segment::segment_start(lsn, segment_bytes);
    let f = storage
        .open(&dir.join(segment::segment_name(seg)), OpenOptions::EXISTING)
        .unwrap();
    f.write_at(bytes, segment::SEGMENT_HEADER_BYTES + (lsn.0 - seg.0))
        .unwrap();
    f.sync_data().unwrap();
}

/// Polls a future to completion on this thread (the tests need no async runtime).
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct ThreadWaker(std::thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// Asserts that every counted operation on `sim` since `before` (its stats then) was a
/// sync: a read-only open makes what it reads durable, and writes, creates, renames or
/// removes nothing.
pub fn assert_only_syncs(sim: &SimStorage, before: sluice_storage::SimStats, context: &str) {
    let after = sim.stats();
    let syncs = (after.syncs - before.syncs) + (after.dir_syncs - before.dir_syncs);
    assert_eq!(
        after.ops - before.ops,
        syncs,
        "{context}: counted operations other than syncs"
    );
    assert_eq!(after.writes, before.writes, "{context}: a write");
}

/// A simulated disk whose files come out as [`StagedFile`]s: a test stages an interleaving
/// of the log's threads (told apart by name, [`thread_is`]) by implementing
/// `sluice_storage::FileLayer` for `StagedFile<its stage>`, which every file call passes.
pub struct Staged<S> {
    pub sim: SimStorage,
    pub stage: Arc<S>,
}

impl<S> Clone for Staged<S> {
    fn clone(&self) -> Self {
        Staged {
            sim: self.sim.clone(),
            stage: self.stage.clone(),
        }
    }
}

/// A file of a [`Staged`] disk.
pub struct StagedFile<S> {
    pub inner: Box<dyn FileHandle>,
    pub path: PathBuf,
    pub staged: Staged<S>,
}

impl<S: Send + Sync + 'static> StorageLayer for Staged<S>
where
    StagedFile<S>: FileHandle,
{
    fn below(&self) -> &dyn Storage {
        &self.sim
    }
    fn wrap(&self, file: Box<dyn FileHandle>) -> Box<dyn FileHandle> {
        let path = file
            .path()
            .expect("the simulator names its files")
            .to_path_buf();
        Box::new(StagedFile {
            inner: file,
            path,
            staged: self.clone(),
        })
    }
}

/// The calling thread is the log's thread `name` (`sluice-flush`, `sluice-prepare`).
pub fn thread_is(name: &str) -> bool {
    std::thread::current().name() == Some(name)
}

/// `path` names a segment file under its final name (not a `.tmp` or a retired one).
pub fn is_segment(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(segment::parse_segment_name)
        .is_some()
}

/// Registers a wait for a position nobody will reach (only a poisoning answers it; as a
/// registered wait it also makes every flush round due at once) whose callback holds a
/// clone of `log` and drops it: once the test drops its own, the callback holds the last
/// owner, and dropping it closes the log on whatever thread runs the callback. The
/// receiver gets whether the callback was told of an error.
pub fn last_owner_in_a_callback(log: &Arc<Log>) -> std::sync::mpsc::Receiver<bool> {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let owner = log.clone();
    log.on_durable(
        Lsn(1 << 40),
        Box::new(move |r| {
            drop(owner);
            done_tx.send(r.is_err()).unwrap();
        }),
    );
    done_rx
}

/// A simulated disk whose `allocate` leaves junk in the space it adds, where a real file
/// system leaves zeros: random words, and record and padding frames that verify only at
/// other LSNs (as a recycled file's old frames do). The log must never rely on new
/// segment space reading as zeros; over this disk, a log that did would misread its end.
#[derive(Clone)]
pub struct JunkSpace {
    pub sim: SimStorage,
    pub segment_bytes: u64,
    pub seed: u64,
}

/// A file of a [`JunkSpace`] disk.
pub struct JunkFile {
    inner: Box<dyn FileHandle>,
    segment_bytes: u64,
    seed: u64,
}

impl StorageLayer for JunkSpace {
    fn below(&self) -> &dyn Storage {
        &self.sim
    }
    fn wrap(&self, file: Box<dyn FileHandle>) -> Box<dyn FileHandle> {
        Box::new(JunkFile {
            inner: file,
            segment_bytes: self.segment_bytes,
            seed: self.seed,
        })
    }
}

/// The junk [`JunkSpace`] puts at file offsets `[from, to)` (`from` ≥ the header block,
/// both multiples of 8): where a segment's data byte `d` lies, a frame is encoded for LSN
/// `d + segment_bytes / 2` (modulo nothing: no segment start makes that `d`'s LSN), so it
/// verifies nowhere in this log; between frames, random words.
pub fn junk(seed: u64, segment_bytes: u64, from: u64, to: u64) -> Vec<u8> {
    use sluice_wal::frame;
    let mut x = seed ^ from.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::with_capacity((to - from) as usize);
    while (from + out.len() as u64) < to {
        let at = from + out.len() as u64;
        let lsn = Lsn(at - segment::SEGMENT_HEADER_BYTES + segment_bytes / 2);
        let room = to - at;
        match next() % 8 {
            0 | 1 if room >= 64 => {
                let payload: Vec<u8> = (0..next() % 40).map(|_| next() as u8).collect();
                let hint = Lsn(next() % (lsn.0 + 1) / 8 * 8);
                out.extend(frame::record_header(
                    payload.len(),
                    frame::payload_crc(&payload),
                    lsn,
                    hint,
                ));
                out.extend(&payload);
                let len = frame::frame_len(payload.len()) as usize;
                out.resize(out.len() + len - frame::RECORD_HEADER - payload.len(), 0);
            }
            2 if room >= 64 => {
                out.extend(frame::pad_header(64, lsn));
                out.extend((0..56).map(|_| next() as u8));
            }
            _ => out.extend(next().to_le_bytes()),
        }
    }
    out.truncate((to - from) as usize);
    out
}

impl FileHandle for JunkFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        self.inner.read_at(buf, offset)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        self.inner.write_at(buf, offset)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        self.inner.sync_data()
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.inner.set_len(len)
    }
    fn allocate(&self, len: u64) -> std::io::Result<()> {
        let old = self.inner.len()?;
        self.inner.allocate(len)?;
        if len > old {
            let seed = self.seed;
            self.inner
                .write_at(&junk(seed, self.segment_bytes, old, len), old)?;
        }
        Ok(())
    }
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn drop_cache(&self) -> std::io::Result<()> {
        self.inner.drop_cache()
    }
    fn path(&self) -> Option<&Path> {
        self.inner.path()
    }
    fn failpoint(&self, name: &'static str) -> std::io::Result<()> {
        self.inner.failpoint(name)
    }
}
