//! The changed bytes of an inline value: what an update logs when that is smaller than
//! the whole old and new values.
//!
//! TPC-B's balance update rewrites 8 bytes of a 100-byte row; logging both whole values
//! made its three updates 800 of the ~1,200 log bytes per transaction. A [`Delta`] keeps
//! the common prefix and suffix out of the record: `value = value[..at] ++ old ++ tail
//! bytes` becomes `value[..at] ++ new ++ the same tail bytes`. It carries the bytes it
//! replaces (`old`) as well as the ones it puts (`new`), so that
//! * undo is the same delta reversed (no whole old value needed), and
//! * redo is exact: [`Delta::apply`] refuses a value whose length or replaced bytes are
//!   not what the record says, so a page that disagrees with the log fails loudly, as a
//!   whole-value `Set` of an absent key does.

/// `value[at .. at + old.len()]` was `old` and becomes `new`; `tail` bytes follow it,
/// unchanged (so the value's length was `at + old.len() + tail`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delta {
    /// Unchanged bytes before the change.
    pub at: usize,
    /// The bytes replaced.
    pub old: Vec<u8>,
    /// The bytes put in their place (any length: the value may grow or shrink).
    pub new: Vec<u8>,
    /// Unchanged bytes after the change.
    pub tail: usize,
}

impl Delta {
    /// The smallest delta (longest common prefix, then the longest common suffix of what
    /// is left) that takes `old` to `new`.
    pub fn between(old: &[u8], new: &[u8]) -> Delta {
        let at = old.iter().zip(new).take_while(|(a, b)| a == b).count();
        let (old_rest, new_rest) = (&old[at..], &new[at..]);
        let tail = old_rest
            .iter()
            .rev()
            .zip(new_rest.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let d = Delta {
            at,
            old: old_rest[..old_rest.len() - tail].to_vec(),
            new: new_rest[..new_rest.len() - tail].to_vec(),
            tail,
        };
        debug_assert_eq!(d.apply(old).as_deref(), Ok(new), "{d:?}");
        d
    }

    /// The delta that undoes this one.
    pub fn reversed(&self) -> Delta {
        Delta {
            at: self.at,
            old: self.new.clone(),
            new: self.old.clone(),
            tail: self.tail,
        }
    }

    /// The length of a value this delta applies to.
    pub fn old_len(&self) -> usize {
        self.at + self.old.len() + self.tail
    }

    /// The length of the value it makes.
    pub fn new_len(&self) -> usize {
        self.at + self.new.len() + self.tail
    }

    /// `value` with the change applied. An error (never a panic) if `value` is not a
    /// value this delta was taken from: a different length, or other bytes where
    /// `old` should be.
    pub fn apply(&self, value: &[u8]) -> Result<Vec<u8>, String> {
        if value.len() != self.old_len() {
            return Err(format!(
                "a delta of a {}-byte value applied to {} bytes",
                self.old_len(),
                value.len()
            ));
        }
        let end = self.at + self.old.len();
        if value[self.at..end] != self.old[..] {
            return Err(format!(
                "the value's bytes {}..{end} are not the ones the delta replaces",
                self.at
            ));
        }
        let mut out = Vec::with_capacity(self.new_len());
        out.extend_from_slice(&value[..self.at]);
        out.extend_from_slice(&self.new);
        out.extend_from_slice(&value[end..]);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn only_the_changed_range_is_kept() {
        let old = b"owner:42|balance:00001000|padding".to_vec();
        let new = b"owner:42|balance:00001999|padding".to_vec();
        let d = Delta::between(&old, &new);
        assert_eq!(
            (d.at, &d.old[..], &d.new[..], d.tail),
            (22, &b"000"[..], &b"999"[..], 8)
        );
        assert_eq!(d.apply(&old).unwrap(), new);
        assert_eq!(d.reversed().apply(&new).unwrap(), old);
    }

    #[test]
    fn a_prefix_shared_with_the_suffix_is_not_counted_twice() {
        // "aa" -> "aaa": the prefix takes both bytes; the suffix may not reuse them.
        let d = Delta::between(b"aa", b"aaa");
        assert_eq!(d.old_len(), 2);
        assert_eq!(d.new_len(), 3);
        assert_eq!(d.apply(b"aa").unwrap(), b"aaa");
        assert_eq!(d.reversed().apply(b"aaa").unwrap(), b"aa");
    }

    #[test]
    fn a_value_the_delta_was_not_taken_from_is_refused() {
        let d = Delta::between(b"abcdef", b"abXdef");
        assert!(d.apply(b"abcdefg").is_err(), "length differs");
        assert!(d.apply(b"abYdef").is_err(), "replaced bytes differ");
        assert!(
            d.reversed().apply(b"abcdef").is_err(),
            "undo of an undone value"
        );
    }

    proptest! {
        #[test]
        fn a_delta_takes_old_to_new_and_back(
            old in proptest::collection::vec(0u8..4, 0..40),
            new in proptest::collection::vec(0u8..4, 0..40),
        ) {
            let d = Delta::between(&old, &new);
            prop_assert_eq!(d.apply(&old).unwrap(), new.clone());
            prop_assert_eq!(d.reversed().apply(&new).unwrap(), old.clone());
            prop_assert!(d.old.len() + d.new.len() <= old.len() + new.len());
        }
    }
}
