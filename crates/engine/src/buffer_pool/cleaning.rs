//! Cluster writes for the page cleaner (`propagation::page_cleaner`): several adjacent
//! dirty pages go to the data file with one write, under every rule of
//! [`BufferPool::write_frame`].
//!
//! The rules, as `write_frame` keeps them for one page:
//! * a frame's writes are serialised by its `io` lock, so an older image never lands
//!   after a newer one; here it is only tried: a frame someone else is writing is left
//!   out, which splits the cluster around it;
//! * the page is copied under an S latch, and only if it is dirty and valid;
//! * write-ahead: the log is durable up to the copy's PageLSN before the write (here the
//!   highest PageLSN of the cluster, one wait for all);
//! * torn pages: under the write gate held shared, a page is written only if its last full
//!   image is above the image floor. A page failing that is left out of the cluster and
//!   written alone by `write_frame`, which logs its image first;
//! * CleanLSN advances (fetch_max) to the PageLSN copied, once the write is synced (the
//!   issue's rule: each cleaner write is durable before its pages count as clean).
//!
//! Frames are pinned while they are worked on, so they are not evicted meanwhile. No
//! latch is waited for while the write gate is held, nor while another frame of the
//! cluster is pinned (a latch holder may be waiting for a frame to be unpinned): a later
//! frame whose latch is taken is left out, which splits the cluster.

use super::frame::STATE_READY;
use super::{BufferPool, PageRef, Wait};
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
    image: u64,
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
            let image = page::image_lsn(&copy);
            assert!(
                image < lsn,
                "page {id}: image LSN {image} not below PageLSN {lsn}"
            );
            copied.push(Copied {
                frame: i,
                id,
                copy,
                lsn,
                image,
                _io: io,
                _pin: pin,
            });
        }
        let Some(max) = copied.iter().map(|c| c.lsn).max() else {
            return Ok(done);
        };

        // The write-ahead rule, once for the cluster.
        let durable = self.log.wait_durable(Lsn(max)).map_err(Error::from)?;
        assert!(
            durable.0 >= max,
            "write-ahead rule: a cluster up to {max} but log durable only to {durable}"
        );
        for c in &mut copied {
            page::seal(&mut c.copy);
            debug_assert_eq!(page::validate(&c.copy, c.id).map(|_| ()), Ok(()));
        }
        copied.sort_by_key(|c| c.id);

        // The torn-page rule and the writes, under the gate (nothing in here waits for a
        // latch).
        let mut written: Vec<Copied<'_>> = Vec::new();
        let unimaged = {
            let _gate = self.write_gate.read();
            let floor = self.image_floor.load(Ordering::SeqCst);
            let (ok, unimaged): (Vec<_>, Vec<_>) =
                copied.into_iter().partition(|c| c.image > floor);
            let mut run: Vec<Copied<'_>> = Vec::new();
            for c in ok {
                if run.last().is_some_and(|l| l.id.0 + 1 != c.id.0) {
                    done += self.write_run(&run, counters)?;
                    written.append(&mut run);
                }
                run.push(c);
            }
            if !run.is_empty() {
                done += self.write_run(&run, counters)?;
                written.append(&mut run);
            }
            unimaged
        };
        // Durable before CleanLSN moves (outside the gate: a checkpoint waiting for it
        // would hold up every other page write meanwhile). The I/O locks and pins go
        // with `written`, after.
        if !written.is_empty() {
            let t = std::time::Instant::now();
            self.file.sync().map_err(|e| self.fail(e))?;
            counters.writing(t.elapsed());
            for c in &written {
                self.frames[c.frame].written(c.lsn);
            }
        }
        drop(written);

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

    /// Writes a run of sealed copies of adjacent pages with one write (their CleanLSNs
    /// move once it is synced). Called under the write gate.
    fn write_run(&self, run: &[Copied<'_>], counters: &Counters) -> Result<Cleaned> {
        debug_assert!(run.windows(2).all(|w| w[0].id.0 + 1 == w[1].id.0));
        let joined;
        let bytes: &[u8] = if run.len() == 1 {
            &run[0].copy
        } else {
            joined = concat(run);
            &joined
        };
        let t = std::time::Instant::now();
        self.file
            .write_pages(run[0].id, bytes)
            .map_err(|e| self.fail(e))?;
        counters.writing(t.elapsed());
        self.writes.fetch_add(run.len() as u64, Ordering::Relaxed);
        counters.wrote(bytes.len());
        Ok(Cleaned {
            pages: run.len(),
            writes: 1,
        })
    }
}

/// The concatenation of a run's copies.
fn concat(run: &[Copied<'_>]) -> Vec<u8> {
    let mut v = Vec::with_capacity(run.iter().map(|c| c.copy.len()).sum());
    for c in run {
        v.extend_from_slice(&c.copy);
    }
    v
}
