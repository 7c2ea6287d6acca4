//! One pool across hosts, end to end, as root: three hosts as network namespaces, each
//! with a `fairshare agent` shaping its veth toward a sink namespace; etcd (Debian's) and
//! two controller replicas in the sink (the controllers' API on Unix sockets, reachable
//! across namespaces); tenants A-D sending UDP (iperf3) from two or three hosts each.
//! The pool is a budget (100 Mbit/s in 1 Mbit/s slices, 200 ms quanta, demands measured
//! by the agents): no link is shared.
//!
//! What the sink receives is counted by the test itself, per host and tenant, from a
//! packet socket in the sink read on the test's clock, and compared with the leader's
//! allocations (read every 10 ms on the same clock). Traffic flows only between the
//! test's namespaces, every wait is bounded, and the namespaces and processes go even
//! when the test fails. Without root or namespaces, the test says so and returns (not
//! run here, rather than passed).

#![allow(clippy::unwrap_used)]

mod common;
mod wire;

use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{spawn_in, Addr, Running};
use fairshare_cluster::testing::Etcd;
use serde_json::Value;
use wire::fairness;

const TENANTS: [&str; 4] = ["A", "B", "C", "D"];
const QUANTUM: Duration = Duration::from_millis(200);
const HOSTS: usize = 3;

/// The test's namespaces and processes, removed when dropped (also on panic).
struct Hosts {
    sink: String,
    hosts: Vec<String>,
    children: Vec<Child>,
    dir: tempfile::TempDir,
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // SIGTERM first, so that the agents remove their trees as they do on exit.
        for c in &mut self.children {
            let _ = Command::new("kill").args(["-CONT", &c.id().to_string()]).stderr(Stdio::null()).status();
            let _ = Command::new("kill").arg(c.id().to_string()).stderr(Stdio::null()).status();
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        for c in &mut self.children {
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in self.hosts.iter().chain([&self.sink]) {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Host `i`'s address (on its veth `vd`) and the sink's toward it (on `d{i}`).
fn host_addr(i: usize) -> String {
    format!("10.78.{}.1", i + 1)
}
fn sink_addr(i: usize) -> String {
    format!("10.78.{}.2", i + 1)
}
/// The sink's address toward host `i` that phase `p`'s iperf3 servers listen on: a
/// server serves one client at a time, and a phase's clients may still be finishing
/// when the next phase's start.
fn phase_addr(i: usize, p: usize) -> String {
    format!("10.78.{}.{}", i + 1, 10 + p)
}

impl Hosts {
    fn new() -> Result<Hosts, String> {
        if !common::root() {
            return Err("not root".into());
        }
        common::remove_stale_namespaces();
        let pid = std::process::id();
        let sink = format!("fsk-{pid}");
        if !ip(&["netns", "add", &sink]) {
            return Err("`ip netns add` failed".into());
        }
        let mut lab = Hosts { sink, hosts: Vec::new(), children: Vec::new(), dir: tempfile::tempdir().unwrap() };
        assert!(ip(&["-n", &lab.sink, "link", "set", "dev", "lo", "up"]));
        for i in 0..HOSTS {
            let h = format!("fsh{}-{pid}", i + 1);
            assert!(ip(&["netns", "add", &h]), "netns {h}");
            lab.hosts.push(h.clone());
            let d = format!("d{}", i + 1);
            let made = ip(&["-n", &h, "link", "add", "vd", "type", "veth", "peer", "name", &d, "netns", &lab.sink])
                && ip(&["-n", &h, "addr", "add", &format!("{}/24", host_addr(i)), "dev", "vd"])
                && ip(&["-n", &lab.sink, "addr", "add", &format!("{}/24", sink_addr(i)), "dev", &d])
                && (0..PHASES.len())
                    .all(|p| ip(&["-n", &lab.sink, "addr", "add", &format!("{}/24", phase_addr(i, p)), "dev", &d]))
                && ip(&["-n", &h, "link", "set", "dev", "vd", "up"])
                && ip(&["-n", &h, "link", "set", "dev", "lo", "up"])
                && ip(&["-n", &lab.sink, "link", "set", "dev", &d, "up"]);
            if !made {
                return Err("the veth pairs could not be made".into());
            }
        }
        Ok(lab)
    }

    /// The pool's file: 100 Mbit/s in 1 Mbit/s slices, 200 ms quanta, Karma (alpha 0.5),
    /// demands from the agents, each tenant matched on its UDP destination port.
    fn config(&self) -> PathBuf {
        let mut text = String::from(
            "[pool]\ncapacity = \"100mbit\"\nslice = \"1mbit\"\nquantum = \"200ms\"\npolicy = \"karma\"\nalpha = 0.5\n\
             [demand]\nsource = \"agents\"\n[enforce]\nkind = \"none\"\n[controller]\nlease_ttl = \"3s\"\n\
             [agents]\nstale_after = \"4s\"\nfallback_after = \"7s\"\n",
        );
        for (i, t) in TENANTS.iter().enumerate() {
            text += &format!("[[tenants]]\nname = \"{t}\"\nmatch = {{ dport = {}, protocol = \"udp\" }}\n", 5201 + i);
        }
        common::write(self.dir.path(), "pool.toml", &text)
    }

    /// A controller replica in the sink, its API on a Unix socket.
    fn controller(&self, etcd: &Etcd, name: &str) -> Running {
        let sock = self.dir.path().join(format!("{name}.sock"));
        let log = self.dir.path().join(format!("{name}.log"));
        let config = self.config();
        let listen = format!("unix:{}", sock.display());
        let args = ["controller", "--config", config.to_str().unwrap(), "--etcd", &etcd.url, "--pool", "p"];
        let all: Vec<&str> = args.iter().copied().chain(["--listen", &listen, "--clock", "wall"]).collect();
        let (child, line) = spawn_in(Some(&self.sink), &all, Some(&log));
        assert!(line.contains("listening on unix:"), "controller {name}: {line:?} {}", read(&log));
        Running { child, addr: Addr::Unix(sock), token: None }
    }

    /// Host `i`'s agent; its status address (in the host's namespace).
    fn agent(&mut self, i: usize) -> (usize, String) {
        let log = self.dir.path().join(format!("agent{i}.log"));
        let etcd = format!("http://{}:2379", sink_addr(i));
        let host = format!("h{}", i + 1);
        let args = ["agent", "--etcd", &etcd, "--pool", "p", "--host", &host, "--dev", "vd", "--listen", "127.0.0.1:0"];
        let (child, line) = spawn_in(Some(&self.hosts[i]), &args, Some(&log));
        let addr = line.trim().strip_prefix("fairshare agent: listening on ").unwrap_or_else(|| {
            panic!("agent {i} did not start: {line:?} {}", read(&log));
        });
        self.children.push(child);
        (self.children.len() - 1, addr.to_string())
    }

    /// An iperf3 server in the sink for each host, phase and port, bound to the
    /// phase's address toward the host.
    fn servers(&mut self) {
        for i in 0..HOSTS {
            for phase in 0..PHASES.len() {
                for p in 5201..5205 {
                    let server = Command::new("ip")
                        .args(["netns", "exec", &self.sink, "iperf3", "-s", "-B", &phase_addr(i, phase)])
                        .args(["-p", &p.to_string()])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap();
                    self.children.push(server);
                }
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let out = Command::new("ip").args(["netns", "exec", &self.sink, "ss", "-tlnH"]).output().unwrap();
            if String::from_utf8_lossy(&out.stdout).matches(":520").count() >= HOSTS * PHASES.len() * 4 {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the iperf3 servers did not listen within 5 s");
    }

    /// A UDP sender from host `i` for tenant `t` at `mbps` for `secs`, in `phase`.
    fn send(&mut self, phase: usize, i: usize, t: usize, mbps: u32, secs: u32) {
        let child = Command::new("ip")
            .args(["netns", "exec", &self.hosts[i], "iperf3", "-u", "-c", &phase_addr(i, phase)])
            .args(["-p", &(5201 + t).to_string()])
            .args(["-b", &format!("{mbps}M"), "-l", "1400", "-t", &secs.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.children.push(child);
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// `GET path` from inside the namespace `ns` (a thread of its own moves there): status
/// and body, or `None` if nothing answered.
fn get_in(ns: &str, addr: &str, path: &str) -> Option<(u16, String)> {
    let (ns, addr, path) = (ns.to_string(), addr.to_string(), path.to_string());
    std::thread::spawn(move || {
        let file = std::fs::File::open(format!("/run/netns/{ns}")).ok()?;
        rustix::thread::move_into_link_name_space(file.as_fd(), Some(rustix::thread::LinkNameSpaceType::Network))
            .ok()?;
        let conn = std::net::TcpStream::connect_timeout(&addr.parse().ok()?, Duration::from_secs(1)).ok()?;
        conn.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        get_over(conn, &path)
    })
    .join()
    .ok()
    .flatten()
}

/// `GET path` on a Unix socket: status and body, or `None` if nothing answered.
fn get_unix(sock: &Path, path: &str) -> Option<(u16, String)> {
    let conn = std::os::unix::net::UnixStream::connect(sock).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    get_over(conn, path)
}

/// `GET path` over a connection (closed after): status and body.
fn get_over(mut conn: impl std::io::Read + std::io::Write, path: &str) -> Option<(u16, String)> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: fairshare\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    conn.read_to_string(&mut answer).ok()?;
    let status = answer.split(' ').nth(1)?.parse().ok()?;
    Some((status, answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()))
}

/// An agent's `/v1/status`.
fn agent_status(ns: &str, addr: &str) -> Value {
    let (code, body) = get_in(ns, addr, "/v1/status").expect("the agent answers");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// Each tenant's slices applied by the agent, by name.
fn applied(status: &Value) -> BTreeMap<String, u64> {
    status["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), t["slices"].as_u64().unwrap()))
        .collect()
}

/// Bytes the sink received per host and tenant, counted from a packet socket in the
/// sink every 100 ms: (time, bytes[host][tenant]).
struct Counter {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<Count>>>,
}

/// One reading: when, and the bytes so far per host and tenant.
type Count = (Instant, [[u64; 4]; HOSTS]);

impl Counter {
    fn start(ns: &str, limit: Duration) -> Counter {
        let stop = Arc::new(AtomicBool::new(false));
        let (ns, flag) = (ns.to_string(), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            use rustix::net::{AddressFamily, RecvFlags, SocketType};
            let file = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
            rustix::thread::move_into_link_name_space(file.as_fd(), Some(rustix::thread::LinkNameSpaceType::Network))
                .unwrap();
            let fd = rustix::net::socket(AddressFamily::PACKET, SocketType::DGRAM, Some(rustix::net::eth::IP)).unwrap();
            let timeout = rustix::net::sockopt::Timeout::Recv;
            rustix::net::sockopt::set_socket_timeout(&fd, timeout, Some(Duration::from_millis(20))).unwrap();
            // Room for seconds of packets: a reader held off its core (a busy machine)
            // catches up instead of losing what the kernel queued meanwhile.
            rustix::net::sockopt::set_socket_recv_buffer_size_force(&fd, 64 << 20).unwrap();
            let mut bytes = [[0u64; 4]; HOSTS];
            let mut samples = Vec::new();
            let start = Instant::now();
            let mut next = start;
            let mut buf = [0u8; 64];
            while !flag.load(Ordering::Relaxed) && start.elapsed() < limit {
                if let Ok((n, _)) = rustix::net::recv(&fd, &mut buf, RecvFlags::TRUNC) {
                    let ihl = usize::from(buf[0] & 0x0f) * 4;
                    // UDP from a host (10.78.H.1) to one of the tenants' ports.
                    if n >= ihl + 4 && buf[9] == 17 && buf[12..14] == [10, 78] && buf[15] == 1 {
                        let host = usize::from(buf[14]).wrapping_sub(1);
                        let port = u16::from_be_bytes([buf[ihl + 2], buf[ihl + 3]]);
                        if host < HOSTS && (5201..5205).contains(&port) {
                            bytes[host][usize::from(port - 5201)] += u64::from(u16::from_be_bytes([buf[2], buf[3]]));
                        }
                    }
                }
                if Instant::now() >= next {
                    samples.push((Instant::now(), bytes));
                    next += Duration::from_millis(100);
                }
            }
            samples
        });
        Counter { stop, thread: Some(thread) }
    }

    fn finish(mut self) -> Vec<Count> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The leader's quanta as seen: (when, quantum, demand, allocation per tenant).
type Seen = Vec<(Instant, u64, [u64; 4], [u64; 4])>;

/// Reads `/v1/allocations` of whichever replica answers with a newer quantum, every
/// 10 ms, until stopped.
fn watch_quanta(replicas: Vec<PathBuf>, stop: Arc<AtomicBool>, limit: Duration) -> std::thread::JoinHandle<Seen> {
    std::thread::spawn(move || {
        let mut seen: Seen = Vec::new();
        let start = Instant::now();
        while !stop.load(Ordering::Relaxed) && start.elapsed() < limit {
            for sock in &replicas {
                // A replica killed on the way answers nothing: the other is asked.
                let Some((200, body)) = get_unix(sock, "/v1/allocations") else { continue };
                let Ok(v) = serde_json::from_str::<Value>(&body) else { continue };
                let q = v["quantum"].as_u64().unwrap_or(0);
                if seen.last().is_some_and(|s| s.1 >= q) {
                    continue;
                }
                let mut demand = [0; 4];
                let mut alloc = [0; 4];
                for (u, t) in v["tenants"].as_array().unwrap().iter().enumerate().take(4) {
                    demand[u] = t["demand_slices"].as_u64().unwrap();
                    alloc[u] = t["alloc_slices"].as_u64().unwrap();
                }
                seen.push((Instant::now(), q, demand, alloc));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        seen
    })
}

/// Which replica leads now (the one whose status says so), waited for at most `limit`.
fn leader(replicas: &[&Running], limit: Duration) -> usize {
    let start = Instant::now();
    while start.elapsed() < limit {
        for (i, r) in replicas.iter().enumerate() {
            if r.request("GET", "/v1/status", &[], "").json()["leader"] == true {
                return i;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no replica led within {limit:?}");
}

/// The offered rates, Mbit/s, per phase, tenant and host (0: none from that host).
const PHASES: [[[u32; HOSTS]; 4]; 2] = [
    // A from h1, h2; B from h2, h3; C from all three; D from h3, h1.
    [[30, 30, 0], [0, 8, 8], [10, 10, 10], [20, 0, 30]],
    [[5, 5, 0], [0, 30, 30], [20, 20, 20], [5, 0, 10]],
];
const PHASE_SECS: u32 = 12;
/// Windows this long after a phase starts are not compared: the agents' estimate of
/// a held-back tenant grows 1.5x a quantum, so from the floor to the whole pool
/// (100 slices) it takes log(100)/log(1.5) = 11.4 quanta, 2.3 s, plus the commit and
/// fan-out of the quanta on the way.
const SETTLE: Duration = Duration::from_secs(3);

#[test]
fn agents_enforce_each_hosts_part_fail_static_and_the_pool_is_fair_on_the_wire() {
    let mut lab = match Hosts::new() {
        Ok(l) => l,
        Err(why) => {
            eprintln!("agents: skipped: cannot make network namespaces here ({why})");
            return;
        }
    };
    let addrs: Vec<String> = (0..HOSTS).map(sink_addr).collect();
    let etcd = Etcd::start_in(&lab.sink, &addrs.iter().map(String::as_str).collect::<Vec<_>>());
    let c1 = lab.controller(&etcd, "c1");
    let c2 = lab.controller(&etcd, "c2");
    let mut replicas = [Some(c1), Some(c2)];
    let lead = leader(&[replicas[0].as_ref().unwrap(), replicas[1].as_ref().unwrap()], Duration::from_secs(10));
    let agents: Vec<(usize, String)> = (0..HOSTS).map(|i| lab.agent(i)).collect();
    lab.servers();
    // Every agent applies quanta.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(0..HOSTS).all(|i| agent_status(&lab.hosts[i], &agents[i].1)["mode"] == "fresh") {
        assert!(Instant::now() < deadline, "the agents did not apply quanta within 10 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    for (i, (_, addr)) in agents.iter().enumerate() {
        let (code, text) = get_in(&lab.hosts[i], addr, "/metrics").unwrap();
        assert_eq!(code, 200);
        common::promtool(&text).unwrap_or_else(|e| panic!("promtool on agent {i}'s metrics: {e}\n{text}"));
        assert!(text.contains("fairshare_agent_tenant_bytes_total{tenant=\"A\"}"), "{text}");
    }

    let total = Duration::from_secs(u64::from(PHASE_SECS) * 2 + 2);
    let counter = Counter::start(&lab.sink, total + Duration::from_secs(5));
    let stop = Arc::new(AtomicBool::new(false));
    let socks: Vec<PathBuf> = replicas
        .iter()
        .map(|r| match &r.as_ref().unwrap().addr {
            Addr::Unix(p) => p.clone(),
            Addr::Tcp(_) => unreachable!(),
        })
        .collect();
    let quanta = watch_quanta(socks, Arc::clone(&stop), total + Duration::from_secs(10));
    let mut phase_start = Vec::new();
    let mut failover = None;
    // The last quantum published to the agents when the leader died, and when it died.
    let mut at_kill: Option<(u64, Instant)> = None;
    for (p, rates) in PHASES.iter().enumerate() {
        phase_start.push(Instant::now());
        for (t, by_host) in rates.iter().enumerate() {
            for (i, &mbps) in by_host.iter().enumerate() {
                if mbps > 0 {
                    lab.send(p, i, t, mbps, PHASE_SECS);
                }
            }
        }
        if p == 1 {
            // Mid-phase, the leader dies (kill -9): the agents hold the last allocation.
            std::thread::sleep(SETTLE + Duration::from_secs(1));
            let mut dead = replicas[lead].take().unwrap();
            let killed = Instant::now();
            dead.child.kill().unwrap();
            let _ = dead.child.wait();
            // What each host may hold now: its part of the last quantum published.
            let last: Vec<Value> = (0..HOSTS)
                .map(|h| serde_json::from_str(&etcd.value(&format!("/fairshare/p/alloc/h{}", h + 1)).unwrap()).unwrap())
                .collect();
            let q_before = last[0]["quantum"].as_u64().unwrap();
            let standby = replicas[1 - lead].as_ref().unwrap();
            // Every 100 ms until the standby leads and a newer quantum reaches the agents.
            loop {
                assert!(killed.elapsed() < Duration::from_secs(12), "the standby did not resume within 12 s");
                let mut resumed = false;
                let mut held: BTreeMap<String, u64> = BTreeMap::new();
                for i in 0..HOSTS {
                    let st = agent_status(&lab.hosts[i], &agents[i].1);
                    if st["quantum"].as_u64().unwrap() > q_before {
                        resumed = true;
                        continue;
                    }
                    for (name, slices) in applied(&st) {
                        let part = last[i]["tenants"].get(&name).map_or(0, |p| p[0].as_u64().unwrap());
                        assert!(slices <= part, "host {i} holds {name} at {slices} slices, above its last part {part}");
                        *held.entry(name).or_default() += slices;
                    }
                }
                // Summed over the hosts, no tenant above its last allocation.
                for (name, sum) in held {
                    let total =
                        last.iter().filter_map(|l| l["tenants"].get(&name)).map(|p| p[1].as_u64().unwrap()).max();
                    assert!(sum <= total.unwrap_or(0), "{name} holds {sum} slices over the hosts, above {total:?}");
                }
                if resumed && standby.request("GET", "/v1/status", &[], "").json()["leader"] == true {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            failover = Some(killed.elapsed());
            let published = last.iter().filter_map(|l| l["quantum"].as_u64()).min().unwrap_or(q_before);
            at_kill = Some((published, killed));
            eprintln!("agents: quanta resumed {:?} after kill -9 of the leader", killed.elapsed());
            std::thread::sleep(Duration::from_secs(u64::from(PHASE_SECS)).saturating_sub(phase_start[1].elapsed()));
        } else {
            std::thread::sleep(Duration::from_secs(u64::from(PHASE_SECS)));
        }
    }
    let end = Instant::now();
    let samples = counter.finish();
    stop.store(true, Ordering::Relaxed);
    let seen = quanta.join().unwrap();
    let (Some(failover), Some((published, killed))) = (failover, at_kill) else { panic!("no failover") };

    // Karma's fairness on the wire against `fairshare replay` on the same summed
    // demands: both judged by what the tenants offer (the welfare of each is what it
    // got, up to what it offered, over what it offered), so that the estimate's headroom
    // counts for neither.
    let first = seen.iter().position(|s| s.2.iter().any(|&d| d > 0)).unwrap();
    let contiguous = seen[first..].windows(2).all(|w| w[1].1 == w[0].1 + 1);
    let trace = lab.dir.path().join("summed.csv");
    let mut text = String::from("quantum,user,demand\n");
    for s in &seen[first..] {
        for (t, d) in TENANTS.iter().zip(s.2) {
            text += &format!("{},{t},{d}\n", s.1);
        }
    }
    std::fs::write(&trace, text).unwrap();
    let out = common::fairshare(&[
        "replay",
        trace.to_str().unwrap(),
        "--fair-share",
        "25",
        "--alpha",
        "0.5",
        "--initial-credits",
        "1073741824",
        "--dense",
    ]);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let replayed: BTreeMap<(u64, String), u64> = common::text(&out.stdout)
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            ((f[0].parse().unwrap(), f[1].to_string()), f[3].parse().unwrap())
        })
        .collect();
    // The leader's allocations are replay's (every quantum was seen: read every 10 ms,
    // 200 ms apart; the failover skips none, it runs none).
    let mut replayed_seen: Seen = seen.clone();
    for s in &mut replayed_seen[first..] {
        for (t, name) in TENANTS.iter().enumerate() {
            s.3[t] = replayed[&(s.1, name.to_string())];
        }
    }
    assert!(contiguous, "a quantum was not seen: {:?}", seen.iter().map(|s| s.1).collect::<Vec<_>>());
    assert_eq!(replayed_seen, seen, "the leader's allocations are not replay's");
    // Per tenant and 1 s window: the sum over hosts received against the allocation in
    // force (the last quantum seen), after each phase settled; where the allocation is
    // above what the tenant offers (the agents' estimate keeps headroom over what a
    // tenant sends, and grows a held-back tenant's by half), against what it offers.
    let bytes_at = |t: Instant, tenant: usize| -> f64 {
        let i = samples.partition_point(|s| s.0 <= t).clamp(1, samples.len() - 1);
        (0..HOSTS).map(|h| samples[i - 1].1[h][tenant] as f64).sum()
    };
    // A quantum's allocation is in force from when it was seen, a decrease at once and
    // an increase a quarter quantum later (its `effective_at`), as the agents apply them.
    let in_force_from = |seen: &Seen, k: usize, tenant: usize| -> Instant {
        let raised = k > 0 && seen[k].3[tenant] > seen[k - 1].3[tenant];
        seen[k].0 + if raised { QUANTUM / 4 } else { Duration::ZERO }
    };
    let alloc_mean = |seen: &Seen, from: Instant, to: Instant, tenant: usize| -> f64 {
        let mut sum = 0.0;
        for k in 0..seen.len() {
            let next = if k + 1 < seen.len() { in_force_from(seen, k + 1, tenant) } else { to }.min(to);
            let start = in_force_from(seen, k, tenant).max(from);
            if next > start {
                sum += seen[k].3[tenant] as f64 * (next - start).as_secs_f64();
            }
        }
        sum / (to - from).as_secs_f64()
    };
    // The watcher also reads the standby, which shows each commit as soon as it is in
    // etcd, before the leader publishes it to the agents: a quantum the killed leader
    // committed after its last publication was seen here but never reached an agent,
    // which hold the last published one (fail-static) until the new leader's first (in
    // CI once, the leader died just after the commit that moved B from 31.7 to 17 Mbit/s
    // and C from 26.7 to 42: the agents rightly kept 31.7 and 26.7 for 3 s, against an
    // expectation of 17 and 42). Such a quantum is newer than what etcd held for the
    // agents at the kill and was seen in the first half of the failover: the new leader
    // leads only once the old one's lease (TTL 3 s) has run out, 2.7-3.4 s after the kill.
    let never_published = |s: &&(Instant, u64, [u64; 4], [u64; 4])| s.1 > published && s.0 < killed + failover / 2;
    let in_force: Seen = seen.iter().filter(|s| !never_published(s)).cloned().collect();
    let replayed_in_force: Seen = replayed_seen.iter().filter(|s| !never_published(s)).cloned().collect();
    let (mut ok, mut all) = (0, 0);
    let (mut got_w, mut replay_w, mut demand_w) = (Vec::new(), Vec::new(), Vec::new());
    let mut report = String::new();
    for (p, &start) in phase_start.iter().enumerate() {
        let phase_end = phase_start.get(p + 1).copied().unwrap_or(end);
        let mut w = start + SETTLE;
        while w + Duration::from_secs(1) <= phase_end {
            let to = w + Duration::from_secs(1);
            let (mut g, mut a, mut r, mut d) = ([0.0; 4], [0.0; 4], [0.0; 4], [0.0; 4]);
            for t in 0..4 {
                g[t] = (bytes_at(to, t) - bytes_at(w, t)) * 8.0 / 1e6;
                a[t] = alloc_mean(&in_force, w, to, t);
                r[t] = alloc_mean(&replayed_in_force, w, to, t);
                // What the tenant offers on the wire (IP bytes: 1,428 per 1,400 of payload).
                d[t] = f64::from(PHASES[p][t].iter().sum::<u32>()) * 1428.0 / 1400.0;
                let expected = a[t].min(d[t]);
                let near = (g[t] - expected).abs() <= 0.1 * expected + 2.0;
                all += 1;
                ok += usize::from(near);
                if !near {
                    report += &format!(
                        "phase {p} window at {:?}: {} received {:.1}, allocated {:.1}, offered {:.1}\n",
                        w - start,
                        TENANTS[t],
                        g[t],
                        a[t],
                        d[t]
                    );
                }
            }
            got_w.push(g.to_vec());
            replay_w.push(r.to_vec());
            demand_w.push(d.to_vec());
            w = to;
        }
    }
    eprintln!("agents: {ok} of {all} tenant-windows within 10% + 2 Mbit/s of the allocation\n{report}");
    assert!(ok as f64 >= 0.95 * all as f64, "{ok} of {all} within 10% + 2 Mbit/s:\n{report}");

    let on_wire = fairness(&got_w, &demand_w);
    let allocated = fairness(&replay_w, &demand_w);
    eprintln!("agents: fairness on the wire {on_wire:.3}, of the allocations (replay's) {allocated:.3}; quanta seen contiguous: {contiguous}");
    assert!((on_wire - allocated).abs() <= 0.03, "fairness on the wire {on_wire:.3} vs {allocated:.3}");

    // Kill an agent: its demand leaves the sums within the TTL; restarted, it applies
    // the current allocation within a quantum or two.
    let victim = 2;
    let dead = agents[victim].0;
    let killed = Instant::now();
    lab.children[dead].kill().unwrap();
    let _ = lab.children[dead].wait();
    while etcd.value("/fairshare/p/demand/h3").is_some() {
        assert!(killed.elapsed() < Duration::from_secs(5), "h3's demand still there after 5 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let gone = killed.elapsed();
    eprintln!("agents: a killed agent's demand left after {gone:?}");
    assert!(gone <= Duration::from_secs(4), "the TTL is 3 s");
    let (_, addr) = lab.agent(victim);
    let restarted = Instant::now();
    let at_start = replicas[1 - lead].as_ref().unwrap().json("GET", "/v1/allocations", "")["quantum"].as_u64().unwrap();
    loop {
        let st = agent_status(&lab.hosts[victim], &addr);
        if st["quantum"].as_u64().unwrap() > at_start {
            break;
        }
        assert!(restarted.elapsed() < Duration::from_secs(3), "the restarted agent applied nothing new within 3 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("agents: a restarted agent applied a new quantum {:?} after it was ready", restarted.elapsed());
    assert!(restarted.elapsed() <= 2 * QUANTUM + Duration::from_millis(200));

    // etcd stopped: every agent keeps its allocation (stale after 4 s), then holds each
    // tenant to its guaranteed share split as its last allocation was (after 7 s).
    // What each agent holds and its last allocation are read once etcd is stopped and
    // a raise in flight has had its time (nothing new can come after).
    let addrs: Vec<String> = (0..HOSTS).map(|i| if i == victim { addr.clone() } else { agents[i].1.clone() }).collect();
    etcd.signal("-STOP");
    let stopped = Instant::now();
    std::thread::sleep(QUANTUM);
    let before: Vec<Value> = (0..HOSTS).map(|i| agent_status(&lab.hosts[i], &addrs[i])).collect();
    let kept: Vec<BTreeMap<String, u64>> = before.iter().map(applied).collect();
    std::thread::sleep(Duration::from_millis(4500));
    for i in 0..HOSTS {
        let st = agent_status(&lab.hosts[i], &addrs[i]);
        assert_eq!(st["mode"], "stale", "host {i} after 4.5 s: {st}");
        assert_eq!(applied(&st), kept[i], "host {i} kept its allocation");
        let (code, _) = get_in(&lab.hosts[i], &addrs[i], "/healthz").unwrap();
        assert_eq!(code, 503);
    }
    std::thread::sleep(Duration::from_millis(7500).saturating_sub(stopped.elapsed()));
    for i in 0..HOSTS {
        let st = agent_status(&lab.hosts[i], &addrs[i]);
        assert_eq!(st["mode"], "fallback", "host {i} after 7.5 s: {st}");
        let (_, metrics) = get_in(&lab.hosts[i], &addrs[i], "/metrics").unwrap();
        assert!(metrics.contains("fairshare_agent_fallback 1"), "{metrics}");
        // Guaranteed: alpha x fair share = 12 slices, split as the last allocation.
        for (name, slices) in applied(&st) {
            let want = match before[i]["last"].get(&name) {
                Some(pair) => 12 * pair[0].as_u64().unwrap() / pair[1].as_u64().unwrap().max(1),
                None => 0,
            };
            assert_eq!(slices, want, "host {i}, {name}: {st}");
        }
    }
    // etcd back: every agent makes its watch again from a read and takes quanta again.
    etcd.signal("-CONT");
    let back = Instant::now();
    for i in 0..HOSTS {
        loop {
            let st = agent_status(&lab.hosts[i], &addrs[i]);
            if st["mode"] == "fresh" {
                assert!(st["watch_restarts"].as_u64().unwrap() >= 1, "{st}");
                break;
            }
            assert!(back.elapsed() < Duration::from_secs(20), "host {i} not fresh 20 s after etcd came back: {st}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    eprintln!("agents: every agent took quanta again {:?} after etcd came back", back.elapsed());
    drop(replicas);
}
