//! [`DeviceModel`]: one emulated device (latency, bandwidth) in front of another storage,
//! so that a slow disk, or several independent disks, can be studied on one real disk or
//! on the simulated one.
//!
//! The device is a single queue: each write occupies it for `write_latency` plus its
//! length over the bandwidth, each `sync_data` or `sync_dir` for `sync_latency`, starting
//! when the device is free (or now, if it already is). The caller performs the inner
//! operation at once and then sleeps until its completion time; the queue's lock is only
//! held to reserve the time, never while sleeping, so other callers can queue behind.
//! By default reads, length queries and metadata operations pass straight through: the
//! model is about what bounds a write-ahead log, which is write and sync cost. With
//! [`DeviceProfile::read_bandwidth_bytes_per_sec`] set, each read also occupies the queue
//! for its length over that bandwidth — so a reader of the same device (an archiver
//! copying the segment the log just finished, Tandem §4) delays the writer, as a disk
//! head shared between them does.

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::layer::{FileLayer, FileOp, StorageLayer};
use crate::{FileHandle, Storage};

/// The longest latency [`DeviceProfile::parse_latency`] accepts: anything longer is
/// surely a typo (a missing unit suffix scaled up), and would make a run hang.
const MAX_LATENCY: Duration = Duration::from_secs(3600);

/// The costs of one emulated device. The default is [`DeviceProfile::none`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceProfile {
    /// Fixed time each `write_at` occupies the device.
    pub write_latency: Duration,
    /// Time each `sync_data` or `sync_dir` occupies the device.
    pub sync_latency: Duration,
    /// If set, each write also occupies the device for `len / bandwidth` seconds.
    /// Must not be zero.
    pub bandwidth_bytes_per_sec: Option<u64>,
    /// If set, each `read_at` occupies the device for `len / bandwidth` seconds, in the
    /// same queue as writes and syncs; if not, reads are free (the default). Must not be
    /// zero.
    pub read_bandwidth_bytes_per_sec: Option<u64>,
}

impl DeviceProfile {
    /// No added cost at all: the inner storage's own speed.
    pub const fn none() -> DeviceProfile {
        DeviceProfile {
            write_latency: Duration::ZERO,
            sync_latency: Duration::ZERO,
            bandwidth_bytes_per_sec: None,
            read_bandwidth_bytes_per_sec: None,
        }
    }

    /// Only a sync latency (the cost that dominates a commit): writes are free.
    pub const fn sync_latency(latency: Duration) -> DeviceProfile {
        DeviceProfile {
            sync_latency: latency,
            ..DeviceProfile::none()
        }
    }

    /// Parses a latency such as `0`, `250ns`, `100us`, `1ms`, `1.5ms` or `2s`: a
    /// non-negative number followed by `ns`, `us`, `ms` or `s` (only `0` may omit the
    /// unit), at most one hour. The error is one line, fit to show a user.
    pub fn parse_latency(text: &str) -> Result<Duration, String> {
        let fail = |why: &str| {
            Err(format!(
                "invalid latency {text:?}: {why}; expected a number and a unit \
                 (ns, us, ms or s), like \"100us\" or \"10ms\""
            ))
        };
        let trimmed = text.trim();
        if trimmed == "0" {
            return Ok(Duration::ZERO);
        }
        let split = trimmed
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(trimmed.len());
        let (number, unit) = trimmed.split_at(split);
        if number.is_empty() {
            return fail("it must start with a non-negative number");
        }
        let nanos_per_unit = match unit {
            "ns" => 1.0,
            "us" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "" => return fail("the unit is missing"),
            _ => return fail("unknown unit"),
        };
        let Ok(value) = number.parse::<f64>() else {
            return fail("the number is malformed");
        };
        let nanos = value * nanos_per_unit;
        if nanos.is_nan() || nanos > MAX_LATENCY.as_nanos() as f64 {
            return fail("it is longer than the limit of one hour");
        }
        Ok(Duration::from_nanos(nanos.round() as u64))
    }

    /// How long a write of `len` bytes occupies the device.
    fn write_cost(&self, len: usize) -> Duration {
        self.write_latency
            .saturating_add(transfer_time(len, self.bandwidth_bytes_per_sec))
    }

    /// How long a read of `len` bytes occupies the device (nothing without a read
    /// bandwidth).
    fn read_cost(&self, len: usize) -> Duration {
        transfer_time(len, self.read_bandwidth_bytes_per_sec)
    }

    /// Panics on a zero bandwidth: it would never complete.
    fn check(&self) {
        assert_ne!(
            self.bandwidth_bytes_per_sec,
            Some(0),
            "a zero bandwidth never completes a write"
        );
        assert_ne!(
            self.read_bandwidth_bytes_per_sec,
            Some(0),
            "a zero read bandwidth never completes a read"
        );
    }
}

/// `len` bytes over `bandwidth` (none: free).
fn transfer_time(len: usize, bandwidth: Option<u64>) -> Duration {
    match bandwidth {
        None => Duration::ZERO,
        Some(bandwidth) => {
            assert!(bandwidth > 0, "a zero bandwidth never completes");
            let nanos = len as u128 * 1_000_000_000 / u128::from(bandwidth);
            Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
        }
    }
}

/// The shared state of one device: its costs and when its queue drains.
struct Device {
    /// Changeable while running ([`DeviceModel::set_profile`]), so an experiment can sweep
    /// latencies over one database.
    profile: Mutex<DeviceProfile>,
    /// When the last reserved operation completes; the next one starts no earlier.
    busy_until: Mutex<Instant>,
}

impl Device {
    /// Reserves `cost` of device time behind whatever is queued and returns when this
    /// operation completes, or None if it costs nothing (then the queue is not touched,
    /// so a zero profile adds no lock traffic).
    fn reserve(&self, cost: Duration) -> Option<Instant> {
        if cost.is_zero() {
            return None;
        }
        let mut busy_until = self.busy_until.lock();
        let start = Instant::now().max(*busy_until);
        let done = start + cost;
        assert!(done > *busy_until, "the queue only moves forward");
        *busy_until = done;
        Some(done)
    }

    /// Runs `op` against the inner storage, then waits until the device would have
    /// finished it.
    fn run<T>(&self, cost: Duration, op: impl FnOnce() -> T) -> T {
        let done = self.reserve(cost);
        let result = op();
        if let Some(done) = done {
            let now = Instant::now();
            if done > now {
                thread::sleep(done - now);
            }
        }
        result
    }
}

/// A storage that behaves like `inner` on one device with the given profile. Clones and
/// every handle opened through it share that one device (one queue).
#[derive(Clone)]
pub struct DeviceModel<S> {
    inner: S,
    device: Arc<Device>,
}

impl<S: fmt::Debug> fmt::Debug for DeviceModel<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceModel")
            .field("inner", &self.inner)
            .field("profile", &*self.device.profile.lock())
            .finish()
    }
}

impl<S: Storage> DeviceModel<S> {
    /// Puts `inner` behind a device with `profile`. Panics if a bandwidth is zero.
    pub fn new(inner: S, profile: DeviceProfile) -> DeviceModel<S> {
        profile.check();
        let device = Device {
            profile: Mutex::new(profile),
            busy_until: Mutex::new(Instant::now()),
        };
        DeviceModel {
            inner,
            device: Arc::new(device),
        }
    }

    /// The wrapped storage.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The device's profile.
    pub fn profile(&self) -> DeviceProfile {
        *self.device.profile.lock()
    }

    /// Changes the device's costs from the next operation on (for every clone and
    /// handle). Panics if a bandwidth is zero.
    pub fn set_profile(&self, profile: DeviceProfile) {
        profile.check();
        *self.device.profile.lock() = profile;
    }
}

/// A file on the emulated device.
struct DeviceFile {
    inner: Box<dyn FileHandle>,
    device: Arc<Device>,
}

impl FileLayer for DeviceFile {
    fn below(&self) -> &dyn FileHandle {
        &*self.inner
    }
    // Dropping the page cache and changing a length are not device work: they cost
    // nothing on the queue.
    fn around<T>(&self, op: FileOp, call: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        let cost = {
            let profile = self.device.profile.lock();
            match op {
                FileOp::Read(n) => profile.read_cost(n),
                FileOp::Write(n) => profile.write_cost(n),
                FileOp::Sync => profile.sync_latency,
            }
        };
        self.device.run(cost, call)
    }
}

impl<S: Storage> StorageLayer for DeviceModel<S> {
    fn below(&self) -> &dyn Storage {
        &self.inner
    }
    fn wrap(&self, inner: Box<dyn FileHandle>) -> Box<dyn FileHandle> {
        Box::new(DeviceFile {
            inner,
            device: Arc::clone(&self.device),
        })
    }
    fn sync_dir_through(&self, dir: &Path) -> io::Result<()> {
        let cost = self.device.profile.lock().sync_latency;
        self.device.run(cost, || self.inner.sync_dir(dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OpenOptions, SimStorage};
    use std::path::PathBuf;
    use std::sync::Barrier;

    const MS: Duration = Duration::from_millis(1);

    fn file_on(device: &DeviceModel<SimStorage>) -> Box<dyn FileHandle> {
        device
            .open(&PathBuf::from("f"), OpenOptions::CREATE)
            .unwrap()
    }

    #[test]
    fn parse_latency_accepts_numbers_with_units() {
        let cases = [
            ("0", Duration::ZERO),
            ("0ms", Duration::ZERO),
            ("250ns", Duration::from_nanos(250)),
            ("100us", Duration::from_micros(100)),
            ("1ms", MS),
            ("10ms", 10 * MS),
            ("1.5ms", Duration::from_micros(1500)),
            (" 2s ", Duration::from_secs(2)),
            ("3600s", Duration::from_secs(3600)),
        ];
        for (text, expected) in cases {
            assert_eq!(DeviceProfile::parse_latency(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn parse_latency_rejects_everything_else_with_one_line() {
        for text in [
            "", "ms", "10", "-1ms", "1.2.3ms", "10min", "1e3ms", "10 ms", "3601s", "1µs",
        ] {
            let err = DeviceProfile::parse_latency(text).unwrap_err();
            assert!(!err.contains('\n'), "{err}");
            assert!(err.contains(&format!("{text:?}")), "{err}");
            assert!(err.contains("10ms"), "the error shows an example: {err}");
        }
    }

    #[test]
    fn write_cost_adds_latency_and_transfer_time() {
        let profile = DeviceProfile {
            write_latency: MS,
            sync_latency: Duration::ZERO,
            bandwidth_bytes_per_sec: Some(1 << 20),
            read_bandwidth_bytes_per_sec: None,
        };
        assert_eq!(profile.write_cost(1 << 20), Duration::from_secs(1) + MS);
        assert_eq!(profile.write_cost(0), MS);
        assert_eq!(DeviceProfile::none().write_cost(1 << 30), Duration::ZERO);
        assert_eq!(DeviceProfile::default(), DeviceProfile::none());
    }

    #[test]
    fn a_sync_takes_at_least_its_latency() {
        let device = DeviceModel::new(SimStorage::new(1), DeviceProfile::sync_latency(2 * MS));
        let file = file_on(&device);
        file.write_at(b"abc", 0).unwrap();
        let start = Instant::now();
        file.sync_data().unwrap();
        assert!(start.elapsed() >= 2 * MS, "{:?}", start.elapsed());
        let start = Instant::now();
        device.sync_dir(&PathBuf::from(".")).unwrap();
        assert!(start.elapsed() >= 2 * MS, "{:?}", start.elapsed());
        // It really synced: the inner disk has the data durably.
        assert_eq!(
            device.inner().read_durable(&PathBuf::from("f")).unwrap(),
            b"abc"
        );
    }

    #[test]
    fn syncs_from_two_threads_queue_behind_each_other() {
        let latency = 5 * MS;
        let device = DeviceModel::new(SimStorage::new(2), DeviceProfile::sync_latency(latency));
        let file = file_on(&device);
        let barrier = Barrier::new(2);
        let start = Instant::now();
        thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    barrier.wait();
                    file.sync_data().unwrap();
                });
            }
        });
        assert!(start.elapsed() >= 2 * latency, "{:?}", start.elapsed());
    }

    #[test]
    fn the_queue_reserves_back_to_back_and_clones_share_it() {
        // Reserving does not sleep, so long costs keep this test fast and immune to
        // scheduling delays.
        let cost = Duration::from_secs(10);
        let device = DeviceModel::new(SimStorage::new(3), DeviceProfile::sync_latency(cost));
        let clone = device.clone();
        let first = device.device.reserve(cost).unwrap();
        let second = clone.device.reserve(cost).unwrap();
        assert!(
            second >= first + cost,
            "the clone queues behind the original"
        );
        assert_eq!(device.device.reserve(Duration::ZERO), None);
        // A separate model is a separate device with its own, idle queue.
        let other = DeviceModel::new(SimStorage::new(3), DeviceProfile::sync_latency(cost));
        assert!(other.device.reserve(cost).unwrap() < second);
    }

    #[test]
    fn reads_are_free_unless_a_read_bandwidth_is_set_and_then_share_the_queue() {
        let profile = DeviceProfile {
            bandwidth_bytes_per_sec: Some(1 << 20),
            ..DeviceProfile::none()
        };
        assert_eq!(profile.read_cost(1 << 20), Duration::ZERO, "the default");
        let reading = DeviceProfile {
            read_bandwidth_bytes_per_sec: Some(1 << 20),
            ..profile
        };
        assert_eq!(reading.read_cost(1 << 20), Duration::from_secs(1));
        // A read occupies the device's queue like a write.
        let device = DeviceModel::new(SimStorage::new(5), reading);
        let file = file_on(&device);
        file.write_at(&[1u8; 1024], 0).unwrap();
        let start = Instant::now();
        let mut back = [0u8; 16 << 10];
        let n = file.read_at(&mut back, 0).unwrap();
        assert_eq!(n, 1024);
        // 16 KiB at 1 MiB/s is 15.6 ms (the cost is of the request, like a disk's).
        assert!(
            start.elapsed() >= Duration::from_micros(15_600),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn a_bandwidth_cap_slows_a_large_write() {
        let profile = DeviceProfile {
            bandwidth_bytes_per_sec: Some(8 << 20),
            ..DeviceProfile::none()
        };
        let device = DeviceModel::new(SimStorage::new(4), profile);
        let file = file_on(&device);
        let data = vec![7u8; 256 << 10];
        let start = Instant::now();
        file.write_at(&data, 0).unwrap();
        // 256 KiB at 8 MiB/s is 31.25 ms.
        assert!(
            start.elapsed() >= Duration::from_micros(31_250),
            "{:?}",
            start.elapsed()
        );
        let mut back = vec![0u8; data.len()];
        file.read_exact_at(&mut back, 0).unwrap();
        assert_eq!(back, data, "reads pass through");
    }
}
