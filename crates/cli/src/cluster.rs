//! `sluice cluster …`: a replicated sluice cluster (sluice-raft) of processes on
//! 127.0.0.1.
//!
//! * `cluster certs --dir D`: a throwaway CA and certificates (`ca.pem`, `nodeN.pem`/
//!   `.key`, `client.pem`/`.key`) for tests and local clusters.
//! * `cluster start --nodes N --dir D`: N node processes (`cluster node`, hidden), each
//!   with its own directory `D/nodeI`, on free loopback ports; node 1 makes the cluster.
//!   Started again on the same directory, the cluster restarts on its own data and
//!   addresses.
//!   Prints each node's address and role, then stays in the foreground, printing role
//!   changes, until Ctrl-C stops them all. `D/cluster.json` says where they are.
//! * `cluster status --dir D`: asks each node of `D/cluster.json` what it is.
//!
//! Mutual TLS unless `--insecure` is given (plain TCP, for loopback experiments): the
//! certificates are `D/certs/*`, made on the first start if absent.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sluice_raft::{Client, NodeConfig, NodeId, Security, Tls};

use crate::Failure;

/// `sluice cluster …`
#[derive(clap::Subcommand, Debug)]
pub enum ClusterCommand {
    /// Makes a throwaway CA and certificates for N nodes and a client (tests and local
    /// clusters only).
    Certs(CertsArgs),
    /// Starts N node processes on 127.0.0.1 and makes them a cluster; Ctrl-C stops them.
    Start(StartArgs),
    /// Prints each node's role, term, leader and log position.
    Status(StatusArgs),
    /// Runs one node in the foreground (what `cluster start` launches).
    #[command(hide = true)]
    Node(NodeArgs),
}

#[derive(clap::Args, Debug)]
pub struct CertsArgs {
    /// Where to write ca.pem, nodeI.pem/.key and client.pem/.key.
    #[arg(long)]
    dir: PathBuf,
    /// How many node certificates.
    #[arg(long, default_value_t = 3)]
    nodes: u64,
}

#[derive(clap::Args, Debug)]
pub struct StartArgs {
    /// How many nodes (1 to 9).
    #[arg(long, default_value_t = 3)]
    nodes: u64,
    /// The cluster's directory: nodeI/ per node, certs/, cluster.json.
    #[arg(long)]
    dir: PathBuf,
    /// Plain TCP without authentication (loopback experiments only).
    #[arg(long)]
    insecure: bool,
}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// The cluster's directory (as given to `cluster start`).
    #[arg(long)]
    dir: PathBuf,
}

#[derive(clap::Args, Debug)]
pub struct NodeArgs {
    #[arg(long)]
    id: NodeId,
    #[arg(long)]
    dir: PathBuf,
    #[arg(long)]
    listen: String,
    /// The certificates directory (ca.pem, nodeI.pem, nodeI.key).
    #[arg(long)]
    certs: Option<PathBuf>,
    #[arg(long)]
    insecure: bool,
    /// Make a new cluster of these members: `1=ADDR,2=ADDR,…`.
    #[arg(long)]
    init: Option<String>,
    /// Ends this process when its parent ends.
    #[arg(long)]
    die_with_parent: bool,
    /// Runtime threads (1 runs the node on one thread).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: u16,
    /// Build a snapshot once the Raft log has grown by this many bytes and by the last
    /// snapshot's size (default: 16 MiB).
    #[arg(long, value_parser = clap::value_parser!(u64).range(4096..))]
    snapshot_log_bytes: Option<u64>,
    /// Entries the Raft log keeps behind a snapshot before it purges them (openraft's
    /// `max_in_snapshot_log_to_keep`; default 1,000). Fewer make a lagging node install
    /// a snapshot sooner instead of catching up from the log.
    #[arg(long)]
    snapshot_keep_entries: Option<u64>,
}

/// Where a cluster's nodes are (`cluster.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClusterFile {
    /// Node id → address.
    pub nodes: BTreeMap<NodeId, String>,
    /// Plain TCP (no certificates).
    pub insecure: bool,
}

impl ClusterFile {
    fn read(dir: &Path) -> Result<ClusterFile, Failure> {
        let path = dir.join("cluster.json");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Failure::Usage(format!(
                "{}: {e} (start a cluster there with 'sluice cluster start --dir {}')",
                path.display(),
                dir.display()
            ))
        })?;
        serde_json::from_str(&text)
            .map_err(|e| Failure::Usage(format!("{}: not a cluster file: {e}", path.display())))
    }
}

/// The security a process of the cluster in `dir` uses as `name` (`nodeI`, `client`).
pub fn security(certs: Option<&Path>, insecure: bool, name: &str) -> Result<Security, Failure> {
    match (certs, insecure) {
        (_, true) => Ok(Security::Insecure),
        (Some(c), false) => {
            let tls = Tls::from_files(
                &c.join("ca.pem"),
                &c.join(format!("{name}.pem")),
                &c.join(format!("{name}.key")),
            )
            .map_err(|e| Failure::Usage(format!("certificates in {}: {e}", c.display())))?;
            Ok(Security::Tls(tls))
        }
        (None, false) => Err(Failure::Usage(
            "a node needs --certs DIR (mutual TLS) or, for loopback experiments, --insecure".into(),
        )),
    }
}

pub fn run(c: ClusterCommand) -> Result<(), Failure> {
    match c {
        ClusterCommand::Certs(a) => certs(a),
        ClusterCommand::Start(a) => start(a),
        ClusterCommand::Status(a) => status(a),
        ClusterCommand::Node(a) => node(a),
    }
}

fn cert_names(nodes: u64) -> Vec<String> {
    let mut names: Vec<String> = (1..=nodes).map(|i| format!("node{i}")).collect();
    names.push("client".into());
    names
}

fn certs(a: CertsArgs) -> Result<(), Failure> {
    if !(1..=99).contains(&a.nodes) {
        return Err(Failure::Usage(format!(
            "--nodes {}: must be 1 to 99",
            a.nodes
        )));
    }
    let names = cert_names(a.nodes);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let files = sluice_raft::make_certs(&a.dir, &refs)
        .map_err(|e| Failure::Usage(format!("--dir {}: {e}", a.dir.display())))?;
    println!("CA certificate: {}", files.ca.display());
    for (name, cert, key) in files.identities {
        println!("{name}: {} {}", cert.display(), key.display());
    }
    println!("(a throwaway CA for tests and local clusters: its key was not kept)");
    Ok(())
}

/// Free loopback ports, found by binding port 0.
pub fn free_addrs(n: usize) -> Result<Vec<String>, Failure> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()?;
    Ok(listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.to_string()))
        .collect::<Result<_, _>>()?)
}

/// Node processes of one cluster, started by this process and killed when it ends.
pub struct Procs {
    pub dir: PathBuf,
    pub file: ClusterFile,
    certs: Option<PathBuf>,
    pub children: BTreeMap<NodeId, Child>,
    /// Arguments added to every node's command line (e.g. `--threads 1`).
    pub node_args: Vec<String>,
    /// Lines the nodes print after their first (tagged with their id).
    pub lines: mpsc::Receiver<(NodeId, String)>,
    tx: mpsc::Sender<(NodeId, String)>,
}

/// The node arguments for `threads` runtime threads (`cluster node --threads`); none
/// where it is `None`, so that the node keeps its own default.
pub fn thread_args(threads: Option<u16>) -> Vec<String> {
    threads
        .map(|t| vec!["--threads".into(), t.to_string()])
        .unwrap_or_default()
}

impl Procs {
    /// Makes a cluster of `n` nodes in `dir` (certificates made if missing).
    pub fn launch(dir: &Path, n: u64, insecure: bool) -> Result<Procs, Failure> {
        Procs::launch_with(dir, n, insecure, Vec::new())
    }

    /// [`Procs::launch`], with `node_args` added to every node's command line.
    pub fn launch_with(
        dir: &Path,
        n: u64,
        insecure: bool,
        node_args: Vec<String>,
    ) -> Result<Procs, Failure> {
        if !(1..=9).contains(&n) {
            return Err(Failure::Usage(format!("--nodes {n}: must be 1 to 9")));
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Usage(format!("--dir {}: {e}", dir.display())))?;
        let certs = if insecure {
            None
        } else {
            let c = dir.join("certs");
            if !c.join("ca.pem").exists() {
                let names = cert_names(n);
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                sluice_raft::make_certs(&c, &refs)?;
            }
            Some(c)
        };
        // A directory that holds a cluster restarts it on the same addresses (its
        // membership names them); a new one gets free ports.
        let fresh = !dir.join("cluster.json").exists();
        let file = if !fresh {
            let file = ClusterFile::read(dir)?;
            if file.nodes.len() as u64 != n || file.insecure != insecure {
                return Err(Failure::Usage(format!(
                    "--dir {} holds a cluster of {} node(s){}: start it with --nodes {}{}, or use another --dir",
                    dir.display(),
                    file.nodes.len(),
                    if file.insecure { " on plain TCP" } else { " with mutual TLS" },
                    file.nodes.len(),
                    if file.insecure { " --insecure" } else { "" },
                )));
            }
            file
        } else {
            let addrs = free_addrs(n as usize)?;
            let file = ClusterFile {
                nodes: (1..=n).zip(addrs).collect(),
                insecure,
            };
            std::fs::write(
                dir.join("cluster.json"),
                serde_json::to_string_pretty(&file)?,
            )?;
            file
        };
        sluice_bench::compare::cleanup::install();
        let (tx, lines) = mpsc::channel();
        let mut p = Procs {
            dir: dir.to_path_buf(),
            file,
            certs,
            children: BTreeMap::new(),
            node_args,
            lines,
            tx,
        };
        let init: String = p
            .file
            .nodes
            .iter()
            .map(|(id, a)| format!("{id}={a}"))
            .collect::<Vec<_>>()
            .join(",");
        for id in 1..=n {
            p.spawn(id, (fresh && id == 1).then_some(init.as_str()))?;
        }
        Ok(p)
    }

    /// Starts (or restarts) node `id` on its directory and address; returns once it
    /// listens.
    pub fn spawn(&mut self, id: NodeId, init: Option<&str>) -> Result<(), Failure> {
        let exe = std::env::current_exe()?;
        let mut cmd = Command::new(exe);
        cmd.args([
            "cluster",
            "node",
            "--die-with-parent",
            "--id",
            &id.to_string(),
            "--listen",
            &self.file.nodes[&id],
        ])
        .arg("--dir")
        .arg(self.dir.join(format!("node{id}")));
        match &self.certs {
            Some(c) => {
                cmd.arg("--certs").arg(c);
            }
            None => {
                cmd.arg("--insecure");
            }
        }
        if let Some(i) = init {
            cmd.args(["--init", i]);
        }
        cmd.args(&self.node_args);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        sluice_bench::compare::cleanup::register_pid(child.id());
        let out = child.stdout.take().expect("piped");
        let (ready_tx, ready) = mpsc::channel();
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            let mut first = true;
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if first {
                    let _ = ready_tx.send(line.clone());
                    first = false;
                }
                let _ = tx.send((id, line));
            }
        });
        match ready.recv_timeout(Duration::from_secs(30)) {
            Ok(_) => {
                self.children.insert(id, child);
                Ok(())
            }
            Err(_) => {
                let _ = child.kill();
                let st = child.wait()?;
                Err(Failure::Runtime(format!(
                    "node {id} did not start within 30 s ({st})"
                )))
            }
        }
    }

    /// SIGKILLs node `id`.
    pub fn kill(&mut self, id: NodeId) -> Result<(), Failure> {
        if let Some(mut c) = self.children.remove(&id) {
            sluice_bench::compare::cleanup::unregister_pid(c.id());
            c.kill()?;
            c.wait()?;
        }
        Ok(())
    }

    /// A client of the cluster.
    pub fn client(&self) -> Result<Client, Failure> {
        let s = security(self.certs.as_deref(), self.file.insecure, "client")?;
        Ok(Client::new(self.file.nodes.values().cloned().collect(), s))
    }

    /// The current leader, once one is known to a majority (up to `patience`).
    pub fn wait_leader(
        &self,
        rt: &tokio::runtime::Runtime,
        client: &Client,
        patience: Duration,
    ) -> Option<NodeId> {
        let t0 = Instant::now();
        while t0.elapsed() < patience {
            let mut seen = BTreeMap::new();
            for addr in self.file.nodes.values() {
                if let Ok(s) = rt.block_on(client.status_at(addr)) {
                    if s.role == "Leader" {
                        *seen.entry(s.id).or_insert(0usize) += 1;
                    }
                }
            }
            if let Some((&id, _)) = seen.iter().next() {
                return Some(id);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Stops every node (SIGKILL: their data is crash-safe).
    pub fn stop(&mut self) {
        let ids: Vec<NodeId> = self.children.keys().copied().collect();
        for id in ids {
            let _ = self.kill(id);
        }
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        self.stop();
    }
}

pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

fn start(a: StartArgs) -> Result<(), Failure> {
    let rt = runtime()?;
    let procs = Procs::launch(&a.dir, a.nodes, a.insecure)?;
    let client = procs.client()?;
    if procs
        .wait_leader(&rt, &client, Duration::from_secs(30))
        .is_none()
    {
        return Err(Failure::Runtime("no leader was elected within 30 s".into()));
    }
    println!(
        "cluster of {} node(s) in {} ({})",
        a.nodes,
        a.dir.display(),
        if a.insecure {
            "plain TCP, no authentication"
        } else {
            "mutual TLS"
        }
    );
    print_status(&rt, &client, &procs.file)?;
    println!("Ctrl-C stops every node. 'sluice cluster status --dir {}' shows them from another terminal.", a.dir.display());
    for (id, line) in procs.lines.iter() {
        println!("[node {id}] {line}");
    }
    Ok(())
}

fn print_status(
    rt: &tokio::runtime::Runtime,
    client: &Client,
    file: &ClusterFile,
) -> Result<(), Failure> {
    println!(
        "{:>4}  {:<21}  {:<9}  {:>5}  {:>6}  {:>9}  {:>9}  {:>9}",
        "node", "address", "role", "term", "leader", "last log", "applied", "snapshot"
    );
    let index = |i: Option<u64>| i.map_or("-".into(), |l| l.to_string());
    for (id, addr) in &file.nodes {
        match rt.block_on(client.status_at(addr)) {
            Ok(s) => println!(
                "{:>4}  {:<21}  {:<9}  {:>5}  {:>6}  {:>9}  {:>9}  {:>9}",
                id,
                addr,
                s.role,
                s.term,
                index(s.leader),
                index(s.last_log_index),
                index(s.applied_index),
                index(s.snapshot_index)
            ),
            Err(e) => println!("{id:>4}  {addr:<21}  unreachable: {e}"),
        }
    }
    Ok(())
}

fn status(a: StatusArgs) -> Result<(), Failure> {
    let file = ClusterFile::read(&a.dir)?;
    let certs = a.dir.join("certs");
    let s = security(
        (!file.insecure).then_some(certs.as_path()),
        file.insecure,
        "client",
    )?;
    let client = Client::new(file.nodes.values().cloned().collect(), s);
    let rt = runtime()?;
    print_status(&rt, &client, &file)
}

fn node(a: NodeArgs) -> Result<(), Failure> {
    if a.die_with_parent {
        // SAFETY: prctl with PR_SET_PDEATHSIG has no memory-safety preconditions.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    }
    let listen = a
        .listen
        .parse()
        .map_err(|e| Failure::Usage(format!("--listen {}: {e}", a.listen)))?;
    let security = security(a.certs.as_deref(), a.insecure, &format!("node{}", a.id))?;
    let init: Option<BTreeMap<NodeId, String>> = match &a.init {
        None => None,
        Some(s) => Some(
            s.split(',')
                .map(|kv| {
                    let (k, v) = kv
                        .split_once('=')
                        .ok_or_else(|| Failure::Usage(format!("--init {s}: expected ID=ADDR,…")))?;
                    let id = k
                        .parse::<NodeId>()
                        .map_err(|e| Failure::Usage(format!("--init {s}: {k}: {e}")))?;
                    Ok((id, v.to_string()))
                })
                .collect::<Result<_, Failure>>()?,
        ),
    };
    // One thread by default: on 2 cores it measured faster than two
    // (`sluice compare replicated --clients 64`, 2026-11-28: 2.69× etcd's throughput
    // against 2.12×). Two were the default while a node's state-machine work ran on its
    // runtime thread and could hold heartbeats off (one `crash-test cluster` run went
    // 24 s without an acknowledged write); that work now runs on tokio's blocking pool.
    let rt = if a.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(usize::from(a.threads))
            .enable_all()
            .build()?
    };
    rt.block_on(async move {
        let mut config = NodeConfig::new(a.id, &a.dir, listen, security);
        if let Some(bytes) = a.snapshot_log_bytes {
            config.snapshot_log_bytes = Some(bytes);
        }
        if let Some(keep) = a.snapshot_keep_entries {
            config.raft.max_in_snapshot_log_to_keep = keep;
        }
        let node = sluice_raft::Node::start(config).await?;
        println!("node {} listening on {}", a.id, node.addr());
        if let Some(members) = init {
            // A node that already belongs to a cluster keeps it.
            if let Err(e) = node.initialize(members).await {
                println!("node {} is not initialized again: {e}", a.id);
            }
        }
        use openraft::async_runtime::watch::WatchReceiver;
        let mut metrics = node.raft().metrics();
        let mut last = String::new();
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        loop {
            let s = node.status();
            if s.role != last {
                println!("node {} is {} (term {})", a.id, s.role, s.term);
                last = s.role;
            }
            tokio::select! {
                r = metrics.changed() => if r.is_err() { break },
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
            }
        }
        let fatal = node.raft().metrics().borrow_watched().running_state.clone();
        node.shutdown().await?;
        if let Err(f) = fatal {
            return Err(Failure::Runtime(format!("node {} stopped: {f}", a.id)));
        }
        Ok::<(), Failure>(())
    })
}
