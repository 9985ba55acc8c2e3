//! TPC-B on PostgreSQL through pgbench, on a throwaway cluster.
//!
//! The cluster is made with `initdb` in a temporary directory, listens only on a Unix
//! socket in that directory (`listen_addresses=''`), runs with `fsync=on` and
//! `synchronous_commit=on`, and is stopped and removed when the [`Cluster`] is dropped
//! (and by [`crate::compare::cleanup`] on Ctrl-C). `initdb` refuses to run as root, so as root the
//! server runs as the unprivileged user `nobody` (through `setpriv`), owning only its
//! directory. The postmaster is started with a parent-death signal, so it dies with us
//! even when we are killed.
//!
//! Two variants run at the same scale and clients:
//! * pgbench's built-in `tpcb-like`, `-M prepared`: about seven round trips per
//!   transaction (BEGIN, three updates, a select, an insert, END). Its teller and
//!   branch are drawn independently, so only the global sums and the row count are
//!   checked, not the per-branch identities.
//! * one round trip: a plpgsql function runs the whole transaction on the server, with
//!   sluice's input definition (teller fixes the branch, 15 % remote accounts, deltas in
//!   ±999,999) written as a pgbench script; the full check applies. sluice is embedded,
//!   so this is the fairer comparison.

use crate::compare::cleanup;
use crate::metrics::Latency;
use crate::workloads::tpcb::{Consistency, Tally};
use hdrhistogram::Histogram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The variants, as the `variant` column names them.
pub const VARIANTS: [&str; 2] = ["pgbench tpcb-like", "1 round trip"];

/// The database each variant runs in (separate, so each has its own history).
fn database(variant: usize) -> &'static str {
    ["postgres", "onetrip"][variant]
}

const FUNCTION: &str = "CREATE FUNCTION sluice_tpcb(p_aid int, p_tid int, p_bid int, p_delta int)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE bal int;
BEGIN
  UPDATE pgbench_accounts SET abalance = abalance + p_delta WHERE aid = p_aid RETURNING abalance INTO bal;
  INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (p_tid, p_bid, p_aid, p_delta, CURRENT_TIMESTAMP);
  UPDATE pgbench_tellers SET tbalance = tbalance + p_delta WHERE tid = p_tid;
  UPDATE pgbench_branches SET bbalance = bbalance + p_delta WHERE bid = p_bid;
  RETURN bal;
END $$";

/// sluice's TPC-B input definition (docs/BENCHMARKS.md) in pgbench's script language,
/// with pgbench's 1-based ids.
const SCRIPT: &str = "\\set tid random(1, 10 * :scale)
\\set bid (:tid - 1) / 10 + 1
\\set ob random(1, greatest(:scale - 1, 1))
\\set ob CASE WHEN :ob >= :bid THEN :ob + 1 ELSE :ob END
\\set ab CASE WHEN :scale > 1 AND random(1, 100) <= 15 THEN :ob ELSE :bid END
\\set aid (:ab - 1) * 100000 + random(1, 100000)
\\set delta random(-999999, 999999)
SELECT sluice_tpcb(:aid, :tid, :bid, :delta);
";

/// The directory holding `initdb`, `postgres`, `pgbench` and `psql`: `$SLUICE_PG_BIN`,
/// else the newest `/usr/lib/postgresql/*/bin`, else the directory of `initdb` on
/// `PATH`.
pub fn find_bin() -> Result<PathBuf, String> {
    let complete = |d: &Path| {
        ["initdb", "postgres", "pgbench", "psql"]
            .iter()
            .all(|b| d.join(b).is_file())
    };
    if let Some(d) = std::env::var_os("SLUICE_PG_BIN") {
        let d = PathBuf::from(d);
        return if complete(&d) {
            Ok(d)
        } else {
            Err(format!(
                "SLUICE_PG_BIN={} lacks initdb, postgres, pgbench or psql",
                d.display()
            ))
        };
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| complete(d))
        .collect();
    versions.sort();
    if let Some((_, d)) = versions.pop() {
        return Ok(d);
    }
    for d in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        if complete(&d) {
            return Ok(d);
        }
    }
    Err("no PostgreSQL server found (initdb, postgres, pgbench and psql in /usr/lib/postgresql/*/bin or on PATH; or set SLUICE_PG_BIN)".into())
}

/// The user the server runs as when we are root: `nobody`, with its uid and gid.
fn server_user() -> Option<(String, u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let name = c"nobody";
    // SAFETY: `name` is a NUL-terminated string; getpwnam returns null or a pointer to a
    // static record that we read at once, before any other call could overwrite it.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return None;
    }
    // SAFETY: `pw` is non-null and points to a valid passwd record (see above).
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    Some(("nobody".into(), uid, gid))
}

/// A running throwaway cluster.
pub struct Cluster {
    root: PathBuf,
    bin: PathBuf,
    server: Option<Child>,
    user: Option<(String, u32, u32)>,
    scale: u32,
}

fn tail(text: &[u8]) -> String {
    let s = String::from_utf8_lossy(text);
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(2)..].join(" / ")
}

impl Cluster {
    /// How the server is run, in words (for the table and the README).
    pub fn how(&self) -> String {
        match &self.user {
            Some((name, _, _)) => format!("server as user {name} (initdb refuses root)"),
            None => "server as the current user".into(),
        }
    }

    /// A command run as the server's user (directly when we are not root), with a
    /// parent-death signal when `server` so that the postmaster dies with us.
    fn command(&self, program: &str, server: bool) -> Command {
        let exe = self.bin.join(program);
        let mut c = Command::new("setpriv");
        if let Some((_, uid, gid)) = &self.user {
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={gid}"))
                .arg("--clear-groups");
        }
        if server {
            c.arg("--pdeathsig=KILL");
        }
        c.arg("--").arg(exe);
        c
    }

    /// A client program (psql, pgbench) connecting to the cluster's socket.
    fn client(&self, program: &str, db: &str) -> Command {
        let mut c = Command::new(self.bin.join(program));
        c.arg("-h")
            .arg(&self.root)
            .arg("-p")
            .arg("5432")
            .arg("-U")
            .arg("postgres")
            .env("PGDATABASE", db)
            .env_remove("PGPASSWORD")
            .stdin(Stdio::null());
        c
    }

    /// Makes a cluster in a new directory under `parent`, starts it for up to `clients`
    /// connections and loads pgbench's tables at `scale` (and a copy for the
    /// one-round-trip variant). Call it from a thread that lives as long as the
    /// cluster: the server's parent-death signal follows the thread that started it.
    pub fn start(parent: &Path, clients: usize, scale: u32) -> Result<Cluster, String> {
        let bin = find_bin()?;
        if Command::new("setpriv").arg("--version").output().is_err() {
            return Err("setpriv (util-linux) is needed to run the server".into());
        }
        let root = tempfile::Builder::new()
            .prefix("pg-")
            .tempdir_in(parent)
            .map_err(|e| format!("{}: {e}", parent.display()))?
            .keep();
        cleanup::register_dir(&root);
        let mut c = Cluster {
            root,
            bin,
            server: None,
            user: server_user(),
            scale,
        };
        // The socket path must fit sockaddr_un (107 bytes).
        let socket = c.root.join(".s.PGSQL.5432");
        if socket.as_os_str().len() > 100 {
            return Err(format!(
                "the socket path {} is too long for a Unix socket; run from a shorter directory",
                socket.display()
            ));
        }
        if let Some((name, uid, gid)) = &c.user {
            std::os::unix::fs::chown(&c.root, Some(*uid), Some(*gid))
                .map_err(|e| format!("chown {} to {name}: {e}", c.root.display()))?;
        }
        let data = c.root.join("data");
        let out = c
            .command("initdb", false)
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C"])
            .output()
            .map_err(|e| format!("initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "initdb failed: {}{}",
                tail(&out.stderr),
                if c.user.is_some() {
                    " (as user nobody: every directory above the current one must be searchable by others)"
                } else {
                    ""
                }
            ));
        }
        let log = std::fs::File::create(c.root.join("server.log"))
            .map_err(|e| format!("server log: {e}"))?;
        let settings = [
            "listen_addresses=".to_string(),
            format!("unix_socket_directories={}", c.root.display()),
            "fsync=on".into(),
            "synchronous_commit=on".into(),
            "full_page_writes=on".into(),
            format!("max_connections={}", clients + 10),
            "shared_buffers=256MB".into(),
            // Like sluice's benchmark setup: no checkpoint in the middle of a short run.
            "max_wal_size=8GB".into(),
            "checkpoint_timeout=1h".into(),
        ];
        let mut cmd = c.command("postgres", true);
        cmd.arg("-D").arg(&data);
        for s in &settings {
            cmd.arg("-c").arg(s);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("postgres: {e}"))?;
        cleanup::register_pid(child.id());
        c.server = Some(child);
        c.wait_ready()?;
        let out = c
            .client("pgbench", "postgres")
            .args(["-i", "-q", "-s", &scale.to_string()])
            .output()
            .map_err(|e| format!("pgbench -i: {e}"))?;
        if !out.status.success() {
            return Err(format!("pgbench -i failed: {}", tail(&out.stderr)));
        }
        c.psql("postgres", "CHECKPOINT")?;
        c.psql(
            "postgres",
            "CREATE DATABASE onetrip TEMPLATE postgres STRATEGY FILE_COPY",
        )?;
        c.psql("onetrip", FUNCTION)?;
        std::fs::write(c.root.join("onetrip.sql"), SCRIPT).map_err(|e| e.to_string())?;
        Ok(c)
    }

    fn server_exited(&mut self) -> Option<String> {
        let s = self.server.as_mut()?;
        match s.try_wait() {
            Ok(Some(status)) => {
                let log = std::fs::read(self.root.join("server.log")).unwrap_or_default();
                Some(format!("the server exited ({status}): {}", tail(&log)))
            }
            _ => None,
        }
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let t0 = Instant::now();
        loop {
            if let Some(e) = self.server_exited() {
                return Err(e);
            }
            if self.psql("postgres", "SELECT 1").is_ok() {
                return Ok(());
            }
            if t0.elapsed() > Duration::from_secs(60) {
                return Err("the server did not accept connections within 60 s".into());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Runs SQL with psql; returns its unaligned, tuples-only output.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let out = self
            .client("psql", db)
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-F",
                ",",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
            ])
            .arg(sql)
            .output()
            .map_err(|e| format!("psql: {e}"))?;
        if !out.status.success() {
            return Err(format!("psql: {}", tail(&out.stderr)));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs `variant` (an index into [`VARIANTS`]) with pgbench for `seconds` (whole
    /// seconds, at least 1). With `measure`, per-transaction latencies are logged and
    /// read back. The caller counts what each run processed for [`Cluster::check`].
    pub fn pgbench(
        &self,
        variant: usize,
        clients: usize,
        threads: usize,
        seconds: u64,
        measure: bool,
    ) -> Result<PgRun, String> {
        let mut c = self.client("pgbench", database(variant));
        c.args(["-n", "-M", "prepared"])
            .arg(format!("-c{clients}"))
            .arg(format!("-j{threads}"))
            .arg(format!("-T{}", seconds.max(1)));
        match variant {
            0 => c.args(["-b", "tpcb-like"]),
            _ => c
                .arg("-f")
                .arg(self.root.join("onetrip.sql"))
                .arg("-D")
                .arg(format!("scale={}", self.scale)),
        };
        let logs = self.root.join(format!("log-{}", std::process::id()));
        if measure {
            let _ = std::fs::remove_dir_all(&logs);
            std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
            c.arg("-l")
                .arg(format!("--log-prefix={}", logs.join("tx").display()));
        }
        let out = c.output().map_err(|e| format!("pgbench: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            return Err(format!(
                "pgbench failed: {} {}",
                tail(&out.stderr),
                tail(&out.stdout)
            ));
        }
        let field = |prefix: &str| -> Option<String> {
            text.lines()
                .find_map(|l| l.trim().strip_prefix(prefix).map(|r| r.trim().to_string()))
        };
        let processed: u64 = field("number of transactions actually processed:")
            .and_then(|s| s.split('/').next()?.trim().parse().ok())
            .ok_or_else(|| {
                format!(
                    "pgbench printed no transaction count: {}",
                    tail(&out.stdout)
                )
            })?;
        let tps: f64 = field("tps =")
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .ok_or_else(|| "pgbench printed no tps".to_string())?;
        let mut latency = Latency::default();
        if measure {
            let mut h = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).expect("valid bounds");
            for e in std::fs::read_dir(&logs)
                .map_err(|e| e.to_string())?
                .flatten()
            {
                let text = std::fs::read_to_string(e.path()).map_err(|e| e.to_string())?;
                for l in text.lines() {
                    // client_id transaction_no time_us script_no epoch epoch_us
                    if let Some(us) = l.split_whitespace().nth(2).and_then(|v| v.parse().ok()) {
                        h.record(u64::max(us, 1)).ok();
                    }
                }
            }
            let _ = std::fs::remove_dir_all(&logs);
            latency = Latency::of(&h);
        }
        Ok(PgRun {
            tps,
            committed: processed,
            seconds: seconds.max(1) as f64,
            latency,
        })
    }

    /// The TPC-B check of `variant`'s database: the global sums, and the history's row
    /// count when `expected_rows` gives it (the transactions processed in that
    /// database's runs, warm-ups included), always; the per-branch and per-teller
    /// identities for the one-round-trip variant (the built-in script draws teller and
    /// branch independently).
    pub fn check(&self, variant: usize, expected_rows: Option<u64>) -> Result<Consistency, String> {
        let db = database(variant);
        let mut tally = Tally::new();
        let num = |s: &str| -> Result<i64, String> {
            s.trim()
                .parse()
                .map_err(|_| format!("psql returned '{s}' for a number"))
        };
        for l in self
            .psql(db, "SELECT bbalance FROM pgbench_branches ORDER BY bid")?
            .lines()
        {
            tally.branch(num(l)?);
        }
        for l in self
            .psql(
                db,
                "SELECT bid - 1, tbalance FROM pgbench_tellers ORDER BY tid",
            )?
            .lines()
        {
            let (b, bal) = l.split_once(',').ok_or("psql: two columns expected")?;
            tally.teller(num(b)? as u32, num(bal)?);
        }
        tally.account(num(&self.psql(
            db,
            "SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts",
        )?)?);
        for l in self
            .psql(
                db,
                "SELECT tid - 1, bid - 1, sum(delta), count(*) FROM pgbench_history GROUP BY tid, bid",
            )?
            .lines()
        {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() != 4 {
                return Err(format!("psql: four columns expected, got '{l}'"));
            }
            tally.history_group(num(f[0])? as u32, num(f[1])? as u32, num(f[2])?, num(f[3])? as u64);
        }
        Ok(if variant == 0 {
            tally.finish_sums(expected_rows)
        } else {
            tally.finish(expected_rows)
        })
    }

    /// Whether a commit is durable under the server's settings, and those settings.
    pub fn durability(&self) -> Result<(bool, String), String> {
        let show = |name: &str| -> Result<String, String> {
            Ok(self
                .psql("postgres", &format!("SHOW {name}"))?
                .trim()
                .to_string())
        };
        let (fsync, sync_commit, method) = (
            show("fsync")?,
            show("synchronous_commit")?,
            show("wal_sync_method")?,
        );
        Ok((
            fsync == "on" && sync_commit == "on",
            format!(
                "fsync={fsync}, synchronous_commit={sync_commit}, wal_sync_method={method}; {}",
                self.how()
            ),
        ))
    }
}

/// What one pgbench run measured.
#[derive(Debug, Clone, Copy)]
pub struct PgRun {
    /// pgbench's tps (without initial connection time).
    pub tps: f64,
    /// Transactions processed.
    pub committed: u64,
    /// Seconds run.
    pub seconds: f64,
    /// Latency from pgbench's per-transaction log (zero unless measured).
    pub latency: Latency,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut s) = self.server.take() {
            // SIGINT is PostgreSQL's fast shutdown; SIGKILL if it takes too long.
            // SAFETY: kill has no memory-safety preconditions; the pid is our child's,
            // not yet reaped, so it cannot have been reused.
            unsafe { libc::kill(s.id() as libc::pid_t, libc::SIGINT) };
            let t0 = Instant::now();
            while !matches!(s.try_wait(), Ok(Some(_))) {
                if t0.elapsed() > Duration::from_secs(15) {
                    let _ = s.kill();
                    let _ = s.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            cleanup::unregister_pid(s.id());
        }
        let _ = std::fs::remove_dir_all(&self.root);
        cleanup::unregister_dir(&self.root);
    }
}
