//! The fuzz entry point of the log record decoder (forwarded by `crate::fuzzing` to the
//! fuzz target; called by the property tests).

use crate::log_record::{commit_of, Change, PageOp, Record};

/// A log record payload (`Record::decode`, the transaction records of both formats, and
/// the delta of an update). A record that decodes has deltas that apply to exactly the
/// values they describe; `commit_of` agrees with the decoder about every payload.
pub(crate) fn record(data: &[u8]) {
    let decoded = Record::decode(data);
    let commit = match &decoded {
        Ok(Record::Commit { txn, at, .. } | Record::Coordinated { txn, at, .. }) => {
            Some((*txn, *at))
        }
        _ => None,
    };
    assert_eq!(commit_of(data), commit, "commit_of disagrees with decode");
    let Ok(r) = decoded else {
        return;
    };
    let delta = match &r {
        Record::Update {
            change: Change::Patch { delta },
            ..
        } => Some(delta),
        Record::Clr {
            op: PageOp::Patch { delta, .. },
            ..
        } => Some(delta),
        _ => None,
    };
    if let Some(d) = delta {
        // Applied to arbitrary bytes: an error or a value, never a panic.
        let _ = d.apply(data);
        // Applied to a value it describes (sized by fields the decoder bounded).
        let mut value = vec![0u8; d.at];
        value.extend_from_slice(&d.old);
        value.resize(d.old_len(), 0);
        let new = d
            .apply(&value)
            .expect("a delta applies to the value it describes");
        assert_eq!(new.len(), d.new_len());
        assert_eq!(d.reversed().apply(&new), Ok(value));
    }
}
