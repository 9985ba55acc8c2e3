//! Cluster writes for the page cleaner (`propagation::page_cleaner`): several adjacent
//! dirty pages go to the data file with one write, through the page-write protocol
//! (`write_protocol`), which keeps every rule a page write must.
//!
//! What is particular to clusters:
//! * a frame's writes are serialised by its `io` lock; here it is only tried: a frame
//!   someone else is writing is left out, which splits the cluster around it;
//! * the page is copied under an S latch, and only if it is dirty and valid;
//! * write-ahead: one wait for the log, up to the highest PageLSN of the cluster;
//! * a page the protocol refuses for want of a full image above the floor is written
//!   alone by `write_frame` afterwards, which logs its image first;
//! * CleanLSN advances (fetch_max) to the PageLSN copied only once the data file is
//!   synced (each cleaner write is durable before its pages count as clean).
//!
//! Frames are pinned while they are worked on, so they are not evicted meanwhile. No
//! latch is waited for while a landing is held, nor while another frame of the cluster
//! is pinned (a latch holder may be waiting for a frame to be unpinned): a later frame
//! whose latch is taken is left out, which splits the cluster.

use super::frame::STATE_READY;
use super::{BufferPool, Landed, PageRef, Wait};
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::page;
use crate::strategy::Counters;
use parking_lot::MutexGuard;
use sluice_wal::Lsn;
use std::sync::atomic::Ordering;

/// A dirty frame as the scan saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// The frame's index in the pool.
    pub(crate) frame: usize,
    /// The page it held.
    pub(crate) page: PageId,
    /// Where redo would start for it (`Frame::recovery_lsn`): the oldest-first key.
    pub(crate) rec_lsn: u64,
    /// Its reference count (`Frame::heat`): the coldest- and hottest-first key.
    pub(crate) heat: u32,
}

/// What [`BufferPool::write_cluster`] (or a round of the cleaner) wrote.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cleaned {
    /// Pages written.
    pub(crate) pages: usize,
    /// Write calls made (a contiguous run is one; a page that needed an image is one).
    pub(crate) writes: usize,
}

impl std::ops::AddAssign for Cleaned {
    fn add_assign(&mut self, o: Cleaned) {
        self.pages += o.pages;
        self.writes += o.writes;
    }
}

/// A page copied for a cluster write; its frame stays pinned and its I/O lock held until
/// this is dropped.
struct Copied<'a> {
    frame: usize,
    id: PageId,
    copy: Vec<u8>,
    lsn: u64,
    /// Held for its drop: the frame's I/O lock.
    _io: MutexGuard<'a, ()>,
    /// Held for its drop: the pin.
    _pin: PageRef<'a>,
}

impl BufferPool {
    /// The page cleaner's scan (Algorithm 1, lines 5–9): every frame holding a valid,
    /// dirty, loaded page, with what the policies order by. No latch and no table lock:
    /// a snapshot that may be a moment old; [`BufferPool::write_cluster`] checks again.
    pub(crate) fn cleaning_candidates(&self) -> Vec<Candidate> {
        self.frames
            .iter()
            .enumerate()
            .filter_map(|(frame, f)| {
                let page = f.page_id();
                if !page.is_some()
                    || f.state.load(Ordering::Acquire) != STATE_READY
                    || !f.valid.load(Ordering::Acquire)
                    || !f.is_dirty()
                {
                    return None;
                }
                Some(Candidate {
                    frame,
                    page,
                    rec_lsn: f.recovery_lsn()?,
                    heat: f.heat.load(Ordering::Relaxed),
                })
            })
            .collect()
    }

    /// Writes the dirty pages of `frames` (meant to hold adjacent page ids), each
    /// contiguous run of page ids with one write (see the module's rules). A frame that
    /// is free, busy (another writer holds its I/O lock), clean or invalid is skipped;
    /// a page whose image is at or below the image floor is written alone by
    /// [`BufferPool::write_frame`], which logs its image first. Each write is counted in
    /// `counters` and in the pool's `writes` (pages). Writes nothing while the redo pass
    /// runs (it has its own rules, `set_redo`; the cleaner is not started before it ends).
    pub(crate) fn write_cluster(&self, frames: &[usize], counters: &Counters) -> Result<Cleaned> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        self.check()?;
        if let Some(e) = self.log.poisoned() {
            // A page may hold a change whose record never reached the log.
            return Err(Error::Poisoned(format!("log: {e}")));
        }
        let mut done = Cleaned::default();
        if self.redo.load(Ordering::Acquire) {
            return Ok(done);
        }

        // Pin, lock for I/O, copy. A latch is waited for only while nothing else is held:
        // a latch holder may be waiting for a frame to be unpinned (a fetch with every
        // frame pinned), and a cluster can pin as many frames as the pool has. Later
        // frames whose latch is taken are left out, which splits the cluster.
        let mut copied: Vec<Copied<'_>> = Vec::with_capacity(frames.len());
        for &i in frames {
            let Some(pin) = self.pin_frame(i) else {
                continue;
            };
            let f = &self.frames[i];
            let Some(io) = f.io.try_lock() else {
                continue;
            };
            let (copy, lsn) = {
                let g = if copied.is_empty() {
                    f.latch.read()
                } else {
                    match f.latch.try_read() {
                        Some(g) => g,
                        None => continue,
                    }
                };
                if !f.valid.load(Ordering::Acquire) || !f.is_dirty() {
                    continue;
                }
                (g.to_vec(), f.page_lsn.load(Ordering::SeqCst))
            };
            let id = pin.id();
            assert_eq!(page::page_lsn(&copy), lsn);
            copied.push(Copied {
                frame: i,
                id,
                copy,
                lsn,
                _io: io,
                _pin: pin,
            });
        }
        let Some(max) = copied.iter().map(|c| c.lsn).max() else {
            return Ok(done);
        };

        // The write-ahead rule, once for the cluster (the landings assert it).
        self.log.wait_durable(Lsn(max)).map_err(Error::from)?;
        for c in &mut copied {
            page::seal(&mut c.copy);
        }
        copied.sort_by_key(|c| c.id);

        // Through the protocol, one landing per run of adjacent page ids (nothing in a
        // landing waits for a latch).
        let page_size = copied[0].copy.len();
        let mut landed: Vec<Copied<'_>> = Vec::new();
        let mut unimaged: Vec<Copied<'_>> = Vec::new();
        let mut rest = copied.into_iter().peekable();
        let mut scratch = Vec::new();
        while let Some(c) = rest.next() {
            let mut run = vec![c];
            while let Some(n) = rest.next_if(|n| n.id.0 == run[run.len() - 1].id.0 + 1) {
                run.push(n);
            }
            scratch.resize(run.len() * page_size, 0);
            let t = std::time::Instant::now();
            let mut landing = self.landing(run[0].id, &mut scratch)?;
            let pages: Vec<(PageId, &[u8])> = run.iter().map(|c| (c.id, &c.copy[..])).collect();
            let verdicts = landing.write(&pages)?;
            let (calls, bytes) = landing.written();
            drop(landing);
            counters.writing(t.elapsed());
            counters.wrote_in(bytes, calls);
            let pages = verdicts.iter().filter(|v| **v == Landed::Written).count();
            self.writes.fetch_add(pages as u64, Ordering::Relaxed);
            done += Cleaned {
                pages,
                writes: calls,
            };
            for (c, v) in run.into_iter().zip(verdicts) {
                match v {
                    Landed::Written | Landed::Superseded(_) => landed.push(c),
                    Landed::NeedsImage => unimaged.push(c),
                }
            }
        }
        // Durable before CleanLSN moves. The I/O locks and pins go with `landed`, after.
        if !landed.is_empty() {
            let t = std::time::Instant::now();
            self.file.sync().map_err(|e| self.fail(e))?;
            counters.writing(t.elapsed());
            for c in &landed {
                self.frames[c.frame].written(c.lsn);
            }
        }
        drop(landed);

        // Pages with no image above the floor: `write_frame` logs one (under the X latch,
        // outside the gate) and writes them, one at a time, holding nothing else (it waits
        // for latches): their I/O locks and pins are let go first, and each is pinned
        // again if it still holds the same page.
        let unimaged: Vec<(usize, PageId, usize)> = unimaged
            .into_iter()
            .map(|c| (c.frame, c.id, c.copy.len()))
            .collect();
        for (frame, id, bytes) in unimaged {
            let Some(pin) = self.pin_frame(frame) else {
                continue;
            };
            if pin.id() != id {
                continue;
            }
            let f = &self.frames[frame];
            let was_dirty = f.is_dirty();
            let written = self.write_frame(frame, Wait::Block)?;
            assert!(written, "a blocking write always completes");
            if was_dirty && !f.is_dirty() {
                counters.wrote(bytes);
                done += Cleaned {
                    pages: 1,
                    writes: 1,
                };
            }
            drop(pin);
        }
        Ok(done)
    }
}
