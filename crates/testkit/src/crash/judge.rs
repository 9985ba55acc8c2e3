//! The check of a recovered state: it must be the result of some prefix of the
//! candidate commits, in LSN order, that holds every acknowledged one; and, for a
//! failure, which keys differ between two states.

use super::model::{Outcome, State, Writes};

/// Checks the recovered state against the candidates; returns (lost, problem).
/// `durable`: acknowledged commits must survive (every protocol but `async`, whose lost
/// acknowledgements are counted but are not a violation).
pub(crate) fn judge(
    outcomes: &[Outcome<Writes>],
    got: &State,
    durable: bool,
) -> (u64, Option<String>) {
    let mut cands: Vec<&Outcome<Writes>> = outcomes.iter().filter(|o| o.commit.is_some()).collect();
    cands.sort_by_key(|o| o.commit);
    let acked_prefix = cands.iter().rposition(|o| o.acked).map_or(0, |i| i + 1);
    let must = if durable { acked_prefix } else { 0 };
    let mut state = State::new();
    let apply = |state: &mut State, o: &Outcome<Writes>| {
        for (t, k, v) in &o.work {
            match v {
                Some(v) => state.insert((*t, k.clone()), v.clone()),
                None => state.remove(&(*t, k.clone())),
            };
        }
    };
    for o in &cands[..must] {
        apply(&mut state, o);
    }
    let minimal = state.clone();
    for p in must..=cands.len() {
        if p > must {
            apply(&mut state, cands[p - 1]);
        }
        if &state == got {
            let lost = cands[p.min(acked_prefix)..acked_prefix]
                .iter()
                .filter(|o| o.acked)
                .count() as u64;
            return (lost, None);
        }
    }
    // No prefix matches. Count acknowledged transactions with a write not visible.
    let lost = cands[..must]
        .iter()
        .filter(|o| o.acked)
        .filter(|o| {
            o.work
                .iter()
                .any(|(t, k, _)| minimal.get(&(*t, k.clone())) != got.get(&(*t, k.clone())))
        })
        .count() as u64;
    (
        lost,
        Some(format!(
            "recovered state matches no commit prefix ({} candidates, {must} acknowledged); {}",
            cands.len(),
            state_diff(&minimal, got)
        )),
    )
}

pub(crate) fn diff_message(what: &str, before: &State, after: &State) -> String {
    format!("{what}; {}", state_diff(before, after))
}

/// Up to three keys whose values differ, each with the writer tags of both values
/// (`seed.thread.txn`, or `-` for absent), so a failure names the transactions involved.
pub(crate) fn state_diff(want: &State, got: &State) -> String {
    let tag = |v: Option<&Vec<u8>>| match v {
        None => "-".to_string(),
        Some(v) => {
            let end = v.iter().position(|&b| b == b':').unwrap_or(v.len().min(24));
            format!("{}({} B)", String::from_utf8_lossy(&v[..end]), v.len())
        }
    };
    let keys: std::collections::BTreeSet<_> = want
        .keys()
        .chain(got.keys())
        .filter(|k| want.get(k) != got.get(k))
        .collect();
    let diff: Vec<String> = keys
        .into_iter()
        .take(3)
        .map(|k| {
            format!(
                "{}:{} want {} got {}",
                k.0,
                String::from_utf8_lossy(&k.1),
                tag(want.get(k)),
                tag(got.get(k))
            )
        })
        .collect();
    format!("differing keys {diff:?}")
}
