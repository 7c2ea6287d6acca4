//! What the bandwidth tests share: two network namespaces joined by a veth pair, made by
//! the test and removed when dropped (also on panic); iperf3 servers and clients between
//! them; and what the receiver got, per tenant, read by the test itself every 100 ms
//! from the kernel's counters of the receiving namespace's TCP sockets (sock_diag,
//! `tcp_info.bytes_received`, what `ss -tni` shows, without a process per reading):
//! one side, one clock, the same clock as the quanta the test runs.

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The sending side's address (namespace `a`, device `va`) and the receiving side's.
pub const SENDER: &str = "10.77.0.1";
pub const RECEIVER: &str = "10.77.0.2";
/// The bytes a paced TCP client writes at once (iperf3's `-l`; its default, 128 KB, is
/// a whole megabit per stream).
pub const PACED_WRITE: u32 = 16 * 1024;

/// The test's namespaces and processes, removed when dropped (also on panic).
pub struct Lab {
    /// The sending namespace (the service and the iperf3 clients).
    pub a: String,
    /// The receiving namespace (the iperf3 servers).
    pub b: String,
    /// Processes stopped when the lab goes (SIGTERM, then SIGKILL after 3 s).
    pub children: Vec<Child>,
    pub dir: tempfile::TempDir,
}

impl Drop for Lab {
    fn drop(&mut self) {
        // SIGTERM first, so that the service removes its HTB tree as it does on exit.
        for c in &mut self.children {
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
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

impl Lab {
    /// Two namespaces joined by a veth pair, or why they cannot be made here (the
    /// caller says it skipped, and returns: not run here, rather than passed).
    pub fn new(tag: &str) -> Result<Lab, String> {
        if !Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n")) {
            return Err("not root".into());
        }
        crate::common::remove_stale_namespaces();
        let (a, b) = (format!("fsa-{tag}-{}", std::process::id()), format!("fsb-{tag}-{}", std::process::id()));
        if !ip(&["netns", "add", &a]) {
            return Err("`ip netns add` failed".into());
        }
        let lab = Lab { a, b, children: Vec::new(), dir: tempfile::tempdir().unwrap() };
        if !(ip(&["netns", "add", &lab.b]) && lab.veth()) {
            return Err("the veth pair could not be made".into());
        }
        for ns in [&lab.a, &lab.b] {
            assert!(ip(&["-n", ns, "link", "set", "dev", "lo", "up"]));
        }
        Ok(lab)
    }

    /// Makes the veth pair (`va` here, `vb` there), addressed and up.
    pub fn veth(&self) -> bool {
        let (a, b) = (self.a.as_str(), self.b.as_str());
        ip(&["-n", a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", b])
            && ip(&["-n", a, "addr", "add", &format!("{SENDER}/24"), "dev", "va"])
            && ip(&["-n", b, "addr", "add", &format!("{RECEIVER}/24"), "dev", "vb"])
            && ip(&["-n", a, "link", "set", "dev", "va", "up"])
            && ip(&["-n", b, "link", "set", "dev", "vb", "up"])
    }

    /// `ARGS` run in the sending namespace.
    pub fn in_a(&self, args: &[&str]) -> Output {
        Command::new("ip").args(["netns", "exec", &self.a]).args(args).output().unwrap()
    }

    /// What `tc ARGS` prints in the sending namespace.
    pub fn tc(&self, args: &[&str]) -> String {
        String::from_utf8_lossy(&self.in_a(&[&["tc"], args].concat()).stdout).into_owned()
    }

    /// An iperf3 server per port in the receiving namespace (serving one test after
    /// another until the lab goes).
    pub fn servers(&mut self, ports: &[u16]) {
        for p in ports {
            let server = Command::new("ip")
                .args(["netns", "exec", &self.b, "iperf3", "-s", "-p", &p.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            self.children.push(server);
        }
        // Bounded: until each port listens, or 5 s.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let out = Command::new("ip").args(["netns", "exec", &self.b, "ss", "-tlnH"]).output().unwrap();
            let listening = String::from_utf8_lossy(&out.stdout).into_owned();
            if ports.iter().all(|p| listening.contains(&format!(":{p} "))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the iperf3 servers did not listen within 5 s");
    }

    /// TCP clients in the sending namespace, one per port, `flows` connections each, for
    /// `secs` seconds, as fast as they may (or at `mbps` each, paced by iperf3). Their
    /// indices in `children`.
    pub fn tcp_clients(&mut self, ports: &[u16], flows: u32, secs: u32, mbps: Option<&[u32]>) -> Vec<usize> {
        let mut started = Vec::new();
        for (i, p) in ports.iter().enumerate() {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &self.a, "iperf3", "-c", RECEIVER, "-p", &p.to_string()]);
            c.args(["-P", &flows.to_string(), "-t", &secs.to_string()]);
            if let Some(rates) = mbps {
                // -b is per stream; iperf3 paces by whole writes, so small ones
                // (`PACED_WRITE`) keep each stream near its rate at every instant.
                c.args(["-b", &format!("{}K", rates[i] * 1000 / flows)]);
                c.args(["-l", &PACED_WRITE.to_string()]);
            }
            let child = c.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
            started.push(self.children.len());
            self.children.push(child);
        }
        started
    }

    /// Stops the processes at `indices` of `children` (SIGKILL).
    pub fn stop(&mut self, indices: &[usize]) {
        for &i in indices {
            let c = &mut self.children[i];
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One reading of the receiver's counters: when it was asked for and when it was
/// answered (the kernel read them somewhere between), and each tenant's bytes so far.
#[derive(Debug, Clone)]
pub struct Sample {
    pub before: Instant,
    pub after: Instant,
    pub bytes: Vec<u64>,
}

impl Sample {
    /// The time it stands for (the middle of its reading).
    pub fn at(&self) -> Instant {
        self.before + (self.after - self.before) / 2
    }
}

/// Reads the receiver's counters every `every` on a thread of its own, until finished
/// (or for at most `limit`).
pub struct Sampler {
    stop: Arc<Mutex<Option<Instant>>>,
    thread: Option<JoinHandle<Vec<Sample>>>,
}

impl Sampler {
    /// Starts reading the TCP sockets of namespace `ns` on `ports` (each tenant's
    /// destination port: the receiver's local port).
    pub fn start(ns: &str, ports: &[u16], every: Duration, limit: Duration) -> Sampler {
        let stop = Arc::new(Mutex::new(None::<Instant>));
        let (ns, ports, past) = (ns.to_string(), ports.to_vec(), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let diag = diag_socket(&ns);
            let mut buf = vec![0u8; 1 << 16];
            let start = Instant::now();
            // Each socket's last count: a socket that closes keeps what it received.
            let mut seen: HashMap<(u16, [u8; 18]), u64> = HashMap::new();
            let mut samples: Vec<Sample> = Vec::new();
            let mut next = start;
            // Until a reading began after the point the test asked for (or the limit).
            let done = |samples: &[Sample]| {
                let past = *past.lock().unwrap();
                past.is_some_and(|p| samples.last().is_some_and(|s| s.before > p))
            };
            while !done(&samples) && start.elapsed() < limit {
                let before = Instant::now();
                let sockets = tcp_sockets(&diag, &mut buf);
                let after = Instant::now();
                for (port, peer, bytes) in sockets {
                    if ports.contains(&port) {
                        seen.insert((port, peer), bytes);
                    }
                }
                let bytes =
                    ports.iter().map(|p| seen.iter().filter(|((q, _), _)| q == p).map(|(_, b)| b).sum()).collect();
                samples.push(Sample { before, after, bytes });
                next += every;
                if let Some(wait) = next.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
            samples
        });
        Sampler { stop, thread: Some(thread) }
    }

    /// Stops reading once a reading has begun after `past` (the last instant the test
    /// will ask about, so that no rate is read off the end of the samples); what was
    /// read.
    pub fn finish(mut self, past: Instant) -> Received {
        *self.stop.lock().unwrap() = Some(past);
        let samples = self.thread.take().unwrap().join().unwrap();
        assert!(
            samples.last().is_some_and(|s| s.before > past),
            "the sampler's time limit ended it before the test did"
        );
        Received { samples }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        // Stop after the reading under way, if any, and at most one more.
        if let Ok(mut stop) = self.stop.lock() {
            *stop = Some(Instant::now());
        }
    }
}

/// A sock_diag socket in the network namespace `ns`. The calling thread moves into
/// that namespace (that thread only: the sampler's own).
fn diag_socket(ns: &str) -> OwnedFd {
    use rustix::net::{netlink, AddressFamily, SocketType};
    let file = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
    rustix::thread::move_into_link_name_space(file.as_fd(), Some(rustix::thread::LinkNameSpaceType::Network)).unwrap();
    let fd = rustix::net::socket(AddressFamily::NETLINK, SocketType::RAW, Some(netlink::SOCK_DIAG)).unwrap();
    rustix::net::connect(&fd, &netlink::SocketAddrNetlink::new(0, 0)).unwrap();
    rustix::net::sockopt::set_socket_timeout(&fd, rustix::net::sockopt::Timeout::Recv, Some(Duration::from_secs(2)))
        .unwrap();
    fd
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Every TCP socket of the namespace (IPv4 and IPv6): its local port, its peer (port
/// and address) and the bytes it received (`tcp_info`, attribute `INET_DIAG_INFO`).
fn tcp_sockets(fd: &OwnedFd, buf: &mut [u8]) -> Vec<(u16, [u8; 18], u64)> {
    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const NLMSG_ERROR: u16 = 2;
    const NLMSG_DONE: u16 = 3;
    const INET_DIAG_INFO: u16 = 2;
    // Offsets: the message after its header (family, state, timer, retransmits; then
    // the socket's id: ports (big-endian), source and destination addresses (16 bytes
    // each), interface, cookie; then expiry, queues, uid, inode), its attributes after
    // it; in `tcp_info`, the bytes received (linux/tcp.h).
    const MSG: usize = 72;
    const BYTES_RECEIVED: usize = 128;
    let mut out = Vec::new();
    for family in [2u8, 10u8] {
        let mut req = Vec::with_capacity(72);
        req.extend(72u32.to_ne_bytes());
        req.extend(SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        req.extend(0x301u16.to_ne_bytes()); // NLM_F_REQUEST | NLM_F_DUMP
        req.extend([1u32.to_ne_bytes(), 0u32.to_ne_bytes()].concat());
        // inet_diag_req_v2: family, TCP, the INET_DIAG_INFO extension, every state, any socket.
        req.extend([family, 6, 1 << (INET_DIAG_INFO - 1), 0]);
        req.extend(u32::MAX.to_ne_bytes());
        req.extend([0u8; 48]);
        rustix::net::send(fd, &req, rustix::net::SendFlags::empty()).unwrap();
        'dump: loop {
            let (_, n) = rustix::net::recv(fd, &mut *buf, rustix::net::RecvFlags::empty()).unwrap();
            let mut at = 0;
            while at + 16 <= n {
                let len = u32_at(buf, at) as usize;
                if len < 16 || at + len > n {
                    break;
                }
                match u16_at(buf, at + 4) {
                    NLMSG_DONE => break 'dump,
                    NLMSG_ERROR => panic!("sock_diag refused: errno {}", -(u32_at(buf, at + 16) as i32)),
                    _ => {}
                }
                let msg = &buf[at + 16..at + len];
                if msg.len() >= MSG {
                    let port = u16::from_be_bytes([msg[4], msg[5]]);
                    let mut peer = [0u8; 18];
                    peer[..2].copy_from_slice(&msg[6..8]);
                    peer[2..].copy_from_slice(&msg[24..40]);
                    let mut a = MSG;
                    while a + 4 <= msg.len() {
                        let alen = u16_at(msg, a) as usize;
                        if alen < 4 || a + alen > msg.len() {
                            break;
                        }
                        if u16_at(msg, a + 2) == INET_DIAG_INFO && alen >= 4 + BYTES_RECEIVED + 8 {
                            let v = &msg[a + 4 + BYTES_RECEIVED..a + 4 + BYTES_RECEIVED + 8];
                            out.push((port, peer, u64::from_ne_bytes(v.try_into().unwrap())));
                        }
                        a += (alen + 3) & !3;
                    }
                }
                at += (len + 3) & !3;
            }
        }
    }
    out
}

/// What the receiver got, as read.
pub struct Received {
    pub samples: Vec<Sample>,
}

impl Received {
    /// Tenant `u`'s bytes by `t`, interpolated between the samples around it.
    pub fn bytes_at(&self, u: usize, t: Instant) -> f64 {
        let s = &self.samples;
        assert!(s.len() >= 2, "too few samples: {}", s.len());
        let (first, last) = (s[0].at(), s[s.len() - 1].at());
        assert!(
            first <= t && t <= last,
            "asked for the bytes {:?} after the first sample, outside the samples (up to {:?}): none is \
             interpolated off their ends",
            t.saturating_duration_since(first),
            last - first
        );
        let i = s.partition_point(|x| x.at() <= t).clamp(1, s.len() - 1);
        let (p, q) = (&s[i - 1], &s[i]);
        let span = (q.at() - p.at()).as_secs_f64();
        let f = if t <= p.at() { 0.0 } else { ((t - p.at()).as_secs_f64() / span).min(1.0) };
        p.bytes[u] as f64 + f * (q.bytes[u] as f64 - p.bytes[u] as f64)
    }

    /// Tenant `u`'s rate over `[from, to]`, Mbit/s.
    pub fn mbps(&self, u: usize, from: Instant, to: Instant) -> f64 {
        (self.bytes_at(u, to) - self.bytes_at(u, from)) * 8.0 / (to - from).as_secs_f64() / 1e6
    }

    /// The longest a reading took: how far a sample's time may be from when the kernel
    /// counted.
    pub fn spread(&self) -> Duration {
        self.samples.iter().map(|s| s.after - s.before).max().unwrap_or_default()
    }
}

/// Each quantum the test ran: when its answer came (its rates applied by then), and
/// each tenant's rate, Mbit/s.
#[derive(Debug, Clone)]
pub struct Quantum {
    pub at: Instant,
    pub mbps: Vec<f64>,
}

/// The rates in force at `t`: those of the last quantum answered by then.
pub fn in_force(quanta: &[Quantum], t: Instant) -> Option<&Quantum> {
    let i = quanta.partition_point(|q| q.at <= t);
    i.checked_sub(1).map(|i| &quanta[i])
}

/// Tenant `u`'s mean rate over `[from, to]`, each quantum weighted by how long it was
/// in force.
pub fn mean_rate(quanta: &[Quantum], u: usize, from: Instant, to: Instant) -> f64 {
    let mut sum = 0.0;
    for (i, q) in quanta.iter().enumerate() {
        let end = quanta.get(i + 1).map_or(to, |n| n.at).min(to);
        let start = q.at.max(from);
        if end > start {
            sum += q.mbps[u] * (end - start).as_secs_f64();
        }
    }
    sum / (to - from).as_secs_f64()
}

/// The lowest rate of tenant `u` in force at any moment of `[from, to]`.
pub fn lowest_rate(quanta: &[Quantum], u: usize, from: Instant, to: Instant) -> f64 {
    let first = in_force(quanta, from).map_or(0.0, |q| q.mbps[u]);
    quanta.iter().filter(|q| q.at > from && q.at < to).map(|q| q.mbps[u]).fold(first, f64::min)
}

/// Worst / best over the tenants of (what they got) / (what they demanded), over all
/// windows: `got[w][u]` and `demand[w][u]` in the same unit.
pub fn fairness(got: &[Vec<f64>], demand: &[Vec<f64>]) -> f64 {
    let tenants = demand[0].len();
    let welfare: Vec<f64> = (0..tenants)
        .filter(|&u| demand.iter().any(|d| d[u] > 0.0))
        .map(|u| {
            let have: f64 = got.iter().zip(demand).map(|(g, d)| g[u].min(d[u])).sum();
            let want: f64 = demand.iter().map(|d| d[u]).sum();
            have / want
        })
        .collect();
    welfare.iter().copied().fold(f64::INFINITY, f64::min) / welfare.iter().copied().fold(0.0, f64::max)
}

/// The p-th quantile (0..=1) of `v`, by rank.
pub fn quantile(v: &[f64], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}
