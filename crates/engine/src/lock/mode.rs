//! The parts of a lock (record S/X, gap S/I/D) and which of them conflict.

/// A set of lock parts (see the `lock` module docs for what conflicts with what).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct LockMode(u8);

impl LockMode {
    /// Reading the key (a point read, or a scanned key).
    pub(crate) const RECORD_S: LockMode = LockMode(1);
    /// Writing the key, or reading it for update.
    pub(crate) const RECORD_X: LockMode = LockMode(2);
    /// A scanner relies on the gap before the name staying as it is.
    pub(crate) const GAP_S: LockMode = LockMode(4);
    /// An insert into the gap before the name (or of the name itself).
    pub(crate) const GAP_I: LockMode = LockMode(8);
    /// A delete in the gap before the name (or of the name itself).
    pub(crate) const GAP_D: LockMode = LockMode(16);
    /// A scanned key: the key and the gap before it.
    pub(crate) const SCANNED: LockMode = LockMode(1 | 4);
    /// Nothing (conflicts with nothing).
    pub(crate) const NONE: LockMode = LockMode(0);
    const ALL: u8 = 31;
    /// Parts whose early release exposes data that is not yet durable: whoever locks the
    /// name next depends on the releasing commit.
    const EXPOSING: u8 = 2 | 8 | 16;

    /// Both sets of parts.
    pub(crate) const fn with(self, other: LockMode) -> LockMode {
        LockMode(self.0 | other.0)
    }

    /// The parts of *other* transactions that conflict with these.
    const fn conflict_mask(self) -> u8 {
        const RS: u8 = 1;
        const RX: u8 = 2;
        const GS: u8 = 4;
        const GI: u8 = 8;
        const GD: u8 = 16;
        let b = self.0;
        let mut m = 0;
        if b & RS != 0 {
            m |= RX;
        }
        if b & RX != 0 {
            m |= RS | RX;
        }
        if b & GS != 0 {
            m |= GI | GD;
        }
        if b & GI != 0 {
            m |= GS | GD;
        }
        if b & GD != 0 {
            m |= GS | GI | GD;
        }
        m
    }

    /// True if another transaction's `other` conflicts with these parts.
    pub(crate) const fn conflicts_with(self, other: LockMode) -> bool {
        self.conflict_mask() & other.0 != 0
    }

    /// True if holding `self` already gives everything `req` would: every part of
    /// another transaction that conflicts with `req` conflicts with `self` too (record X
    /// covers record S; gap D covers gap S and gap I).
    pub(crate) const fn covers(self, req: LockMode) -> bool {
        req.conflict_mask() & !self.conflict_mask() == 0
    }

    /// The parts of a lock on `next(k)` that an insert of `k`, splitting the gap below
    /// `next(k)`, carries over to `k` (`lock` module docs, gap inheritance): the gap parts that
    /// keep others out of the gap — S (a scan relies on it) and D (an uncommitted delete
    /// lives in it). Not the record parts, which are about `next(k)` itself, and not
    /// gap I: the inserter's other keys in the gap are protected by their record X.
    pub(crate) const fn inherited_by_insert(self) -> LockMode {
        LockMode(self.0 & (Self::GAP_S.0 | Self::GAP_D.0))
    }

    /// The parts whose early release exposes data not yet durable (record X, gap I,
    /// gap D): what a later conflicting holder depends on.
    pub(super) const fn exposing(self) -> LockMode {
        LockMode(self.0 & Self::EXPOSING)
    }
}

impl std::fmt::Debug for LockMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = ["rS", "rX", "gS", "gI", "gD"];
        let parts: Vec<&str> = (0..5)
            .filter(|i| self.0 & (1 << i) != 0)
            .map(|i| names[i])
            .collect();
        write!(f, "{}", parts.join("+"))
    }
}

const _: () = assert!(LockMode::ALL == 31 && LockMode::SCANNED.0 == 5);
