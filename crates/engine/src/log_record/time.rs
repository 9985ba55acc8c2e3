//! Commit timestamps: the wall-clock time a commit record carries ([`CommitTime`]), the
//! per-log clock that stamps them ([`CommitClock`]), and the running maximum a reader
//! takes to get a time that never goes back in LSN order ([`EffectiveTimes`]).
//!
//! A time is what makes a point in the log a target by the clock ("restore to 14:05"):
//! each commit record (`Commit`, `Coordinated`) carries the time it was stamped, in
//! microseconds since the Unix epoch. Records written before timestamps carry none
//! ([`CommitTime::UNKNOWN`]).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// When a transaction committed, by the wall clock of the process that wrote its commit
/// record: microseconds since the Unix epoch (UTC). `CommitTime(0)` ([`CommitTime::UNKNOWN`])
/// is "unknown": a commit record written before commit records carried a time.
///
/// Within one log the stamps never decrease in the order they were taken, across
/// restarts and clock steps (the store's commit clock), but two transactions committing at the
/// same moment may append their records in the opposite order of their stamps (a few
/// microseconds apart): a reader that needs a time that never goes back in LSN order takes
/// the running maximum in that order. Displayed as RFC 3339 in UTC with microseconds
/// (`2024-05-01T12:34:56.123456Z`), or `unknown`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct CommitTime(pub u64);

impl CommitTime {
    /// No time: a commit record written before commit records carried one.
    pub const UNKNOWN: CommitTime = CommitTime(0);

    /// The time `micros` microseconds after the Unix epoch.
    pub const fn from_micros(micros: u64) -> CommitTime {
        CommitTime(micros)
    }

    /// Microseconds since the Unix epoch (0: unknown).
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// False for [`CommitTime::UNKNOWN`].
    pub const fn is_known(self) -> bool {
        self.0 != 0
    }

    /// The time as a [`SystemTime`]; `None` if unknown.
    pub fn to_system_time(self) -> Option<SystemTime> {
        self.is_known()
            .then(|| UNIX_EPOCH + Duration::from_micros(self.0))
    }

    /// `t` to the microsecond below (a time at or before the epoch is
    /// [`CommitTime::UNKNOWN`]; one past the year 586,000 saturates).
    pub fn from_system_time(t: SystemTime) -> CommitTime {
        match t.duration_since(UNIX_EPOCH) {
            Ok(d) => CommitTime(u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
            Err(_) => CommitTime::UNKNOWN,
        }
    }

    /// The wall clock now.
    pub fn now() -> CommitTime {
        CommitTime::from_system_time(SystemTime::now())
    }

    /// Parses an RFC 3339 time: `YYYY-MM-DDTHH:MM:SS`, an optional fraction of a second
    /// (up to 9 digits; cut to the microsecond below), then `Z` or an offset `±HH:MM`
    /// (`T` and `Z` in either case; a space for the `T` is accepted). No leap second
    /// (`:60`), and nothing at or before the epoch (that is "unknown"). The error says
    /// what was expected.
    pub fn parse_rfc3339(text: &str) -> Result<CommitTime, String> {
        let bad = |what: &str| {
            format!("{text:?} is not an RFC 3339 time like 2024-05-01T12:34:56.5Z: {what}")
        };
        let b = text.as_bytes();
        let num = |at: usize, len: usize| -> Result<i64, String> {
            let digits = b.get(at..at + len).ok_or_else(|| bad("it is too short"))?;
            if !digits.iter().all(u8::is_ascii_digit) {
                return Err(bad(&format!("expected {len} digits at byte {at}")));
            }
            Ok(digits.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
        };
        let sep = |at: usize, want: &[u8]| -> Result<(), String> {
            match b.get(at) {
                Some(c) if want.contains(c) => Ok(()),
                _ => Err(bad(&format!(
                    "expected {} at byte {at}",
                    want.iter().map(|&c| char::from(c)).collect::<String>()
                ))),
            }
        };
        let year = num(0, 4)?;
        sep(4, b"-")?;
        let month = num(5, 2)?;
        sep(7, b"-")?;
        let day = num(8, 2)?;
        sep(10, b"Tt ")?;
        let hour = num(11, 2)?;
        sep(13, b":")?;
        let minute = num(14, 2)?;
        sep(16, b":")?;
        let second = num(17, 2)?;
        if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
            return Err(bad("no such date"));
        }
        if hour > 23 || minute > 59 || second > 59 {
            return Err(bad("no such time of day"));
        }
        let mut at = 19;
        let mut micros = 0i64;
        if b.get(at) == Some(&b'.') {
            at += 1;
            let start = at;
            while b.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
            let digits = &b[start..at];
            if digits.is_empty() || digits.len() > 9 {
                return Err(bad("a fraction of a second has 1 to 9 digits"));
            }
            for i in 0..6 {
                micros = micros * 10 + digits.get(i).map_or(0, |d| i64::from(d - b'0'));
            }
        }
        let offset = match b.get(at) {
            Some(b'Z' | b'z') if at + 1 == b.len() => 0,
            Some(&s @ (b'+' | b'-')) if at + 6 == b.len() => {
                sep(at + 3, b":")?;
                let (h, m) = (num(at + 1, 2)?, num(at + 4, 2)?);
                if h > 23 || m > 59 {
                    return Err(bad("no such offset"));
                }
                let o = (h * 60 + m) * 60;
                if s == b'+' {
                    o
                } else {
                    -o
                }
            }
            _ => return Err(bad("expected Z or an offset like +02:00 at the end")),
        };
        let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
            - offset;
        let micros = secs
            .checked_mul(1_000_000)
            .and_then(|s| s.checked_add(micros))
            .filter(|&m| m > 0)
            .ok_or_else(|| bad("it is not after the Unix epoch"))?;
        Ok(CommitTime(micros as u64))
    }
}

impl fmt::Display for CommitTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.is_known() {
            return f.write_str("unknown");
        }
        let (secs, micros) = (self.0 / 1_000_000, self.0 % 1_000_000);
        let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z",
            rem / 3600,
            rem / 60 % 60,
            rem % 60
        )
    }
}

impl std::str::FromStr for CommitTime {
    type Err = String;
    /// [`CommitTime::parse_rfc3339`].
    fn from_str(s: &str) -> Result<CommitTime, String> {
        CommitTime::parse_rfc3339(s)
    }
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `z` days after 1970-01-01 (the inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// A log's commit clock (one per store, so per log): hands out commit stamps that never
/// go back, whatever the wall clock does.
///
/// Each stamp is `max(wall clock now, the last stamp)` (one `fetch_max`), so a clock
/// stepped back (NTP, an operator) holds the stamps at the last one until it catches up.
/// At open, recovery's analysis raises it to the highest time it met in the log — the
/// commit records it scanned and the checkpoint's record of the clock — so a restart with
/// the clock set back does not go back either. Stamps are never 0 (that is "unknown").
///
/// *What it does not promise*: the stamp is taken when the record is built, before it
/// is appended, so two transactions committing at once may append their records in the
/// opposite order of their stamps (microseconds apart). A reader that needs a time that
/// never goes back in LSN order takes the running maximum in that order
/// ([`EffectiveTimes`]).
#[derive(Debug, Default)]
pub(crate) struct CommitClock {
    last: AtomicU64,
}

impl CommitClock {
    /// A clock that has stamped nothing yet.
    pub(crate) fn new() -> CommitClock {
        CommitClock::default()
    }

    /// The time for a commit record being built now.
    pub(crate) fn stamp(&self) -> CommitTime {
        self.stamp_at(CommitTime::now())
    }

    /// The stamp when the wall clock says `now`.
    pub(crate) fn stamp_at(&self, now: CommitTime) -> CommitTime {
        let now = now.0.max(1);
        let before = self.last.fetch_max(now, Ordering::Relaxed);
        CommitTime(before.max(now))
    }

    /// Raises the clock to at least `t` (a time read back from the log).
    pub(crate) fn observe(&self, t: CommitTime) {
        self.last.fetch_max(t.0, Ordering::Relaxed);
    }

    /// The highest time stamped or observed so far ([`CommitTime::UNKNOWN`] if none).
    pub(crate) fn last(&self) -> CommitTime {
        CommitTime(self.last.load(Ordering::Relaxed))
    }
}

/// The running maximum of commit times in LSN order: a time for each commit record that
/// never goes back along the log (see [`CommitClock`] for why a record's own stamp may be
/// a few microseconds below an earlier record's). An unknown stamp (an old record) takes
/// the maximum so far, which stays unknown until a known stamp is met.
#[derive(Debug, Clone, Copy, Default)]
#[cfg_attr(not(test), allow(dead_code))] // for point-in-time restore (issue 26)
pub(crate) struct EffectiveTimes {
    max: CommitTime,
}

#[cfg_attr(not(test), allow(dead_code))] // for point-in-time restore (issue 26)
impl EffectiveTimes {
    /// A running maximum starting at `floor` (the effective time of the last commit
    /// before the records about to be read; [`CommitTime::UNKNOWN`] at a log's start).
    pub(crate) fn starting_at(floor: CommitTime) -> EffectiveTimes {
        EffectiveTimes { max: floor }
    }

    /// The effective time of the next commit record in LSN order, whose stamp is `at`.
    pub(crate) fn next(&mut self, at: CommitTime) -> CommitTime {
        self.max = self.max.max(at);
        self.max
    }
}

/// The effective times ([`EffectiveTimes`]) of commit stamps given in LSN order.
#[cfg_attr(not(test), allow(dead_code))] // for point-in-time restore (issue 26)
pub(crate) fn effective_times(
    stamps: impl IntoIterator<Item = CommitTime>,
) -> impl Iterator<Item = CommitTime> {
    let mut running = EffectiveTimes::default();
    stamps.into_iter().map(move |t| running.next(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_print_as_rfc_3339_in_utc() {
        let cases = [
            (1, "1970-01-01T00:00:00.000001Z"),
            (951_782_400_000_000, "2000-02-29T00:00:00.000000Z"),
            (1_700_000_000_123_456, "2023-11-14T22:13:20.123456Z"),
            (4_107_542_399_999_999, "2100-02-28T23:59:59.999999Z"),
            (253_402_300_799_000_000, "9999-12-31T23:59:59.000000Z"),
        ];
        for (micros, text) in cases {
            let t = CommitTime(micros);
            assert_eq!(t.to_string(), text);
            assert_eq!(CommitTime::parse_rfc3339(text), Ok(t), "{text}");
            assert_eq!(CommitTime::from_system_time(t.to_system_time().unwrap()), t);
        }
        assert_eq!(CommitTime::UNKNOWN.to_string(), "unknown");
        assert_eq!(CommitTime::UNKNOWN.to_system_time(), None);
        // Every day of four centuries prints as the date it parses from.
        for day in (0..146_097 * 4).step_by(7) {
            let t = CommitTime((day as u64 * 86_400 + 3_723) * 1_000_000 + 5);
            assert_eq!(CommitTime::parse_rfc3339(&t.to_string()), Ok(t));
        }
        // The last microsecond a u64 holds prints without overflow.
        assert!(CommitTime(u64::MAX).to_string().ends_with('Z'));
    }

    #[test]
    fn parsing_takes_offsets_and_fractions_and_refuses_the_rest() {
        let t = CommitTime::parse_rfc3339("2023-11-14T22:13:20.123456Z").unwrap();
        for same in [
            "2023-11-14T23:13:20.123456+01:00",
            "2023-11-14t17:43:20.1234569-04:30",
            "2023-11-14 22:13:20.123456z",
        ] {
            assert_eq!(CommitTime::parse_rfc3339(same), Ok(t), "{same}");
        }
        assert_eq!(
            CommitTime::parse_rfc3339("2023-11-14T22:13:20.5Z"),
            Ok(CommitTime(1_700_000_000_500_000))
        );
        assert_eq!(
            "2023-11-14T22:13:20Z".parse::<CommitTime>(),
            Ok(CommitTime(1_700_000_000_000_000))
        );
        for bad in [
            "",
            "2023-11-14",
            "2023-11-14T22:13:20",
            "2023-13-14T22:13:20Z",
            "2023-02-29T22:13:20Z",
            "2023-11-14T24:13:20Z",
            "2023-11-14T22:13:60Z",
            "2023-11-14T22:13:20.Z",
            "2023-11-14T22:13:20.1234567890Z",
            "2023-11-14T22:13:20+0100",
            "2023-11-14T22:13:20Zjunk",
            "1970-01-01T00:00:00Z",
            "1969-12-31T23:59:59Z",
            "２023-11-14T22:13:20Z",
        ] {
            let e = CommitTime::parse_rfc3339(bad).unwrap_err();
            assert!(e.contains("RFC 3339"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_clock_never_goes_back_when_the_wall_clock_does() {
        let c = CommitClock::new();
        assert_eq!(c.last(), CommitTime::UNKNOWN);
        assert_eq!(c.stamp_at(CommitTime(100)), CommitTime(100));
        assert_eq!(c.stamp_at(CommitTime(90)), CommitTime(100), "stepped back");
        assert_eq!(c.stamp_at(CommitTime(150)), CommitTime(150));
        // A time met in the log at open holds the clock there.
        c.observe(CommitTime(1_000));
        c.observe(CommitTime(500));
        assert_eq!(c.stamp_at(CommitTime(200)), CommitTime(1_000));
        assert_eq!(c.last(), CommitTime(1_000));
        // A wall clock before the epoch never stamps "unknown".
        assert_eq!(CommitClock::new().stamp_at(CommitTime(0)), CommitTime(1));
        // The real clock: after the last stamp, and never going back across threads.
        let real = CommitClock::new();
        let before = CommitTime::now();
        let stamps: Vec<Vec<CommitTime>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..1000).map(|_| real.stamp()).collect::<Vec<_>>()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for per_thread in &stamps {
            assert!(per_thread.windows(2).all(|w| w[0] <= w[1]));
            assert!(per_thread[0] >= before);
        }
        assert_eq!(real.last(), stamps.iter().flatten().copied().max().unwrap());
    }

    #[test]
    fn effective_times_are_the_running_maximum_in_log_order() {
        let stamps = [0, 0, 10, 9, 12, 0, 11, 20].map(CommitTime);
        let eff: Vec<u64> = effective_times(stamps).map(CommitTime::as_micros).collect();
        assert_eq!(eff, [0, 0, 10, 10, 12, 12, 12, 20]);
        let mut from_floor = EffectiveTimes::starting_at(CommitTime(15));
        assert_eq!(from_floor.next(CommitTime(12)), CommitTime(15));
        assert_eq!(from_floor.next(CommitTime::UNKNOWN), CommitTime(15));
        assert_eq!(from_floor.next(CommitTime(16)), CommitTime(16));
    }
}
