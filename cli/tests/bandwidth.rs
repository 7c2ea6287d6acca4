//! The live service enforcing bandwidth on a real link, end to end, as root: two
//! network namespaces made by this test and joined by a veth pair, iperf3 servers in the
//! receiving one (a port per tenant), `fairshare serve` with `enforce = htb` on the
//! sending side, and the test as the controller that owns the clock (`--clock manual`,
//! one quantum every 200 ms) and declares the tenants' demands through the API (a Unix
//! socket, reachable across namespaces). Link 100 Mbit/s, slice 1 Mbit/s.
//!
//! Checked: the throughput measured on the wire (iperf3's receiver, per half second)
//! follows each window's allocation; the long-run fairness on the wire is higher under
//! Karma than under max-min on the same on/off pattern; with measured demand, tenants
//! that send less than the link get what they send. Traffic flows only between the
//! test's namespaces, every wait is bounded, and the namespaces and processes are
//! removed even when the test fails. Without root or namespaces, the test says so and
//! returns (it is not run here, rather than passed).

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The test's namespaces and processes, removed when dropped (also on panic).
struct Lab {
    a: String,
    b: String,
    children: Vec<Child>,
    dir: tempfile::TempDir,
}

impl Drop for Lab {
    fn drop(&mut self) {
        // SIGTERM first, so that the service removes its HTB tree as it does on exit.
        for c in &mut self.children {
            let _ = Command::new("kill").arg(c.id().to_string()).status();
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

/// Two namespaces joined by a veth pair (10.77.0.1 sends, 10.77.0.2 receives), or why
/// they cannot be made here.
fn lab(tag: &str) -> Result<Lab, String> {
    if !Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n")) {
        return Err("not root".into());
    }
    let (a, b) = (format!("fsa-{tag}-{}", std::process::id()), format!("fsb-{tag}-{}", std::process::id()));
    if !ip(&["netns", "add", &a]) {
        return Err("`ip netns add` failed".into());
    }
    let lab = Lab { a: a.clone(), b: b.clone(), children: Vec::new(), dir: tempfile::tempdir().unwrap() };
    let ok = ip(&["netns", "add", &b])
        && ip(&["-n", &a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", &b])
        && ip(&["-n", &a, "addr", "add", "10.77.0.1/24", "dev", "va"])
        && ip(&["-n", &b, "addr", "add", "10.77.0.2/24", "dev", "vb"])
        && ip(&["-n", &a, "link", "set", "va", "up"])
        && ip(&["-n", &b, "link", "set", "vb", "up"])
        && ip(&["-n", &a, "link", "set", "lo", "up"])
        && ip(&["-n", &b, "link", "set", "lo", "up"]);
    if !ok {
        return Err("the veth pair could not be made".into());
    }
    Ok(lab)
}

/// One measurement at a time: on a 2-core machine, two would disturb each other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

const PORTS: [u16; 3] = [5201, 5202, 5203];
const NAMES: [&str; 3] = ["A", "B", "C"];

fn config(lab: &Lab, policy: &str, demand: &str) -> PathBuf {
    let mut text = format!(
        "[pool]\ncapacity = \"100mbit\"\nslice = \"1mbit\"\nquantum = \"200ms\"\npolicy = \"{policy}\"\nalpha = 0.5\n\
         initial_credits = 1000\n[demand]\nsource = \"{demand}\"\n[enforce]\nkind = \"htb\"\ndev = \"va\"\n"
    );
    for (n, p) in NAMES.iter().zip(PORTS) {
        // UDP only: iperf3's control connection (TCP, same port) stays unshaped.
        text += &format!("[[tenants]]\nname = \"{n}\"\nweight = 1\nmatch = {{ dport = {p}, protocol = \"udp\" }}\n");
    }
    let path = lab.dir.path().join(format!("{policy}-{demand}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Starts the service in the sending namespace; returns its socket.
fn serve(lab: &mut Lab, config: &Path) -> PathBuf {
    let sock = lab.dir.path().join(format!("{}.sock", lab.children.len()));
    let mut child = Command::new("ip")
        .args(["netns", "exec", &lab.a, env!("CARGO_BIN_EXE_fairshare"), "serve", "--clock", "manual"])
        .args(["--config", config.to_str().unwrap(), "--listen", &format!("unix:{}", sock.display())])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    lab.children.push(child);
    assert!(line.contains("listening on unix:"), "the service did not start: {line:?}");
    sock
}

fn http(sock: &Path, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).unwrap();
    let status = r.split(' ').nth(1).unwrap().parse().unwrap();
    (status, r.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string())
}

/// iperf3 servers in the receiving namespace, UDP clients in the sending one for
/// `secs` seconds at `rates` (Mbit/s). Returns the clients and the files their JSON
/// reports go to (a pipe would fill and stall them).
fn traffic(lab: &mut Lab, rates: [u32; 3], secs: u32) -> Vec<(Child, PathBuf)> {
    for p in PORTS {
        let server = Command::new("ip")
            .args(["netns", "exec", &lab.b, "iperf3", "-s", "-1", "-J", "-p", &p.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        lab.children.push(server);
    }
    std::thread::sleep(Duration::from_millis(300));
    PORTS
        .iter()
        .zip(rates)
        .map(|(p, r)| {
            let report = lab.dir.path().join(format!("iperf-{p}-{}.json", lab.children.len()));
            let child = Command::new("ip")
                .args(["netns", "exec", &lab.a, "iperf3", "-c", "10.77.0.2", "-u", "-b", &format!("{r}M")])
                .args(["-p", &p.to_string(), "-t", &secs.to_string(), "-i", "0.5", "-J", "--get-server-output"])
                .stdout(std::fs::File::create(&report).unwrap())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            (child, report)
        })
        .collect()
}

/// The receiver's throughput per interval: (start s, end s, Mbit/s).
fn received(client: (Child, PathBuf), deadline: Instant) -> Vec<(f64, f64, f64)> {
    let [got, _] = throughput(client, deadline);
    got
}

/// Per interval (start s, end s, Mbit/s): what the receiver got, and what the sender sent.
fn throughput((mut client, report): (Child, PathBuf), deadline: Instant) -> [Vec<(f64, f64, f64)>; 2] {
    while client.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = client.kill();
            panic!("iperf3 did not finish in time");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = std::fs::read_to_string(report).unwrap();
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("iperf3 JSON: {e}: {out}"));
    let intervals = |v: &Value| -> Vec<(f64, f64, f64)> {
        v["intervals"]
            .as_array()
            .unwrap_or_else(|| panic!("no intervals: {out}"))
            .iter()
            .map(|i| {
                let s = &i["sum"];
                (s["start"].as_f64().unwrap(), s["end"].as_f64().unwrap(), s["bits_per_second"].as_f64().unwrap() / 1e6)
            })
            .collect()
    };
    [intervals(&v["server_output_json"]), intervals(&v)]
}

/// Mean of the intervals inside [from, to).
fn mean_between(intervals: &[(f64, f64, f64)], from: f64, to: f64) -> f64 {
    let inside: Vec<f64> =
        intervals.iter().filter(|(s, e, _)| *s >= from - 0.05 && *e <= to + 0.05).map(|i| i.2).collect();
    assert!(!inside.is_empty(), "no interval in [{from}, {to}): {intervals:?}");
    inside.iter().sum::<f64>() / inside.len() as f64
}

/// Windows of 10 quanta (2 s): A steady, B and C on and off (Mbit/s demanded).
const PATTERN: [[u64; 3]; 8] =
    [[60, 0, 100], [60, 0, 100], [60, 0, 0], [60, 0, 0], [60, 100, 0], [60, 100, 0], [60, 100, 100], [60, 100, 100]];

/// One run of the pattern under `policy`: per window and tenant, (demand, allocation,
/// measured) in Mbit/s.
fn run(policy: &str) -> Option<Vec<[(f64, f64, f64); 3]>> {
    let mut lab = match lab(policy) {
        Ok(l) => l,
        Err(why) => {
            eprintln!("bandwidth: skipped: cannot make network namespaces here ({why})");
            return None;
        }
    };
    let cfg = config(&lab, policy, "declared");
    let sock = serve(&mut lab, &cfg);
    // A first quantum gives every tenant 10 Mbit/s while the flows start (iperf3's first
    // datagram must get through); then the pattern, 16 s.
    for n in NAMES {
        assert_eq!(http(&sock, "PUT", &format!("/v1/tenants/{n}/demand"), "{\"slices\": 10}").0, 204);
    }
    assert_eq!(http(&sock, "POST", "/v1/quantum", "").0, 200);
    let clients = traffic(&mut lab, [100, 100, 100], 18);
    let clients_start = Instant::now();
    std::thread::sleep(Duration::from_millis(1000));
    let start = Instant::now();
    let offset = start.duration_since(clients_start).as_secs_f64();
    let mut alloc = vec![[0.0f64; 3]; PATTERN.len()];
    // Each quantum's rates (Mbit/s) by the time since the clients started, for the plot.
    let mut timeline: Vec<(f64, [f64; 3])> = Vec::new();
    for (w, demand) in PATTERN.iter().enumerate() {
        for (n, d) in NAMES.iter().zip(demand) {
            let (status, body) =
                http(&sock, "PUT", &format!("/v1/tenants/{n}/demand"), &format!("{{\"bps\": {}}}", d * 1_000_000));
            assert_eq!(status, 204, "{body}");
        }
        for q in 0..10 {
            let due = Duration::from_millis(200 * (w as u64 * 10 + q));
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
            let (status, body) = http(&sock, "POST", "/v1/quantum", "");
            assert_eq!(status, 200, "{body}");
            let v: Value = serde_json::from_str(&body).unwrap();
            let now = clients_start.elapsed().as_secs_f64();
            timeline.push((now, std::array::from_fn(|u| v["tenants"][u]["rate_bps"].as_f64().unwrap() / 1e6)));
            // The allocation of the window's last 8 quanta (the first 2 are skipped on the
            // wire too, while the rates settle).
            if q >= 2 {
                for (u, t) in v["tenants"].as_array().unwrap().iter().enumerate() {
                    alloc[w][u] += t["rate_bps"].as_f64().unwrap() / 1e6 / 8.0;
                }
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let measured: Vec<Vec<(f64, f64, f64)>> = clients.into_iter().map(|c| received(c, deadline)).collect();
    if let Some(dir) = std::env::var_os("FAIRSHARE_BANDWIDTH_PLOT") {
        plot(Path::new(&dir), policy, &timeline, &measured);
    }
    Some(
        (0..PATTERN.len())
            .map(|w| {
                let (from, to) = (offset + w as f64 * 2.0 + 0.5, offset + w as f64 * 2.0 + 2.0);
                std::array::from_fn(|u| (PATTERN[w][u] as f64, alloc[w][u], mean_between(&measured[u], from, to)))
            })
            .collect(),
    )
}

/// Draws the allocation (lines, stepped per quantum) and the throughput on the wire
/// (points, per half second) of each tenant: `DIR/bandwidth_POLICY.svg` and `.png`.
fn plot(dir: &Path, policy: &str, timeline: &[(f64, [f64; 3])], measured: &[Vec<(f64, f64, f64)>]) {
    use fairshare_report::chart::{Chart, LineChart, Marks, Scale, Series};
    let colors = [(31, 119, 180), (214, 39, 40), (44, 160, 44)];
    let mut series = Vec::new();
    for u in 0..3 {
        let mut steps = Vec::new();
        for (i, (t, rates)) in timeline.iter().enumerate() {
            let next = timeline.get(i + 1).map_or(t + 0.2, |n| n.0);
            steps.push((*t, rates[u]));
            steps.push((next, rates[u]));
        }
        series.push(Series {
            name: format!("{} allocation", NAMES[u]),
            points: steps,
            rgb: colors[u],
            marks: Marks::Line,
        });
        let wire = measured[u].iter().map(|(s, e, mbps)| ((s + e) / 2.0, *mbps)).collect();
        series.push(Series {
            name: format!("{} on the wire", NAMES[u]),
            points: wire,
            rgb: colors[u],
            marks: Marks::Points,
        });
    }
    let chart = LineChart {
        title: format!("{policy}: allocation vs throughput on a 100 Mbit/s link (HTB, 200 ms quanta)"),
        x: ("seconds".into(), 0.0..19.0),
        y: ("Mbit/s".into(), 0.0..105.0),
        scale: Scale::Linear,
        series,
    };
    chart.write(dir, &format!("bandwidth_{policy}")).unwrap();
}

/// Worst / best over the tenants of (what they got on the wire) / (what they demanded).
fn wire_fairness(windows: &[[(f64, f64, f64); 3]]) -> f64 {
    let welfare: Vec<f64> = (0..3)
        .map(|u| {
            let got: f64 = windows.iter().map(|w| w[u].2.min(w[u].0)).sum();
            let want: f64 = windows.iter().map(|w| w[u].0).sum();
            got / want
        })
        .collect();
    welfare.iter().cloned().fold(f64::INFINITY, f64::min) / welfare.iter().cloned().fold(0.0, f64::max)
}

#[test]
fn htb_enforces_each_quantum_and_karma_is_fairer_on_the_wire() {
    let _one = one_at_a_time();
    let Some(karma) = run("karma") else { return };
    let maxmin = run("maxmin").unwrap();
    for (policy, windows) in [("karma", &karma), ("maxmin", &maxmin)] {
        for (w, tenants) in windows.iter().enumerate() {
            for (u, (demand, alloc, wire)) in tenants.iter().enumerate() {
                // Within 10% of the allocation, or 2 Mbit/s for small ones (UDP datagrams,
                // HTB's burst, and the floor of 121 kbit/s a tenant without slices keeps).
                assert!(
                    (wire - alloc).abs() <= 0.1 * alloc + 2.0,
                    "{policy}, window {w}, tenant {}: demand {demand}, allocation {alloc:.1}, wire {wire:.1} Mbit/s\n{windows:?}",
                    NAMES[u]
                );
            }
        }
    }
    let (k, m) = (wire_fairness(&karma), wire_fairness(&maxmin));
    eprintln!("bandwidth: fairness on the wire: karma {k:.3}, maxmin {m:.3}");
    assert!(k > m, "karma {k:.3} is not fairer than maxmin {m:.3} on the wire");
}

#[test]
fn measured_demand_follows_what_tenants_send() {
    let _one = one_at_a_time();
    let mut lab = match lab("measured") {
        Ok(l) => l,
        Err(why) => {
            eprintln!("bandwidth: skipped: cannot make network namespaces here ({why})");
            return;
        }
    };
    let cfg = config(&lab, "karma", "measured");
    let sock = serve(&mut lab, &cfg);
    let rates = [20, 40, 10];
    let clients = traffic(&mut lab, rates, 8);
    let start = Instant::now();
    for q in 0..40u64 {
        if let Some(wait) = Duration::from_millis(200 * q).checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        assert_eq!(http(&sock, "POST", "/v1/quantum", "").0, 200);
    }
    let (_, last) = http(&sock, "GET", "/v1/allocations", "");
    let deadline = Instant::now() + Duration::from_secs(15);
    eprintln!("bandwidth: measured demand: {last}");
    for (u, c) in clients.into_iter().enumerate() {
        let [got, sent] = throughput(c, deadline).map(|i| mean_between(&i, 4.0, 8.0));
        let rate = rates[u] as f64;
        eprintln!("bandwidth: tenant {}: rate {rate}, sent {sent:.1}, received {got:.1} Mbit/s", NAMES[u]);
        // Against the rate set, one-sided: while the estimate ramps up a tenant is held
        // back, and iperf3 then sends above its rate until its average since the start
        // catches up (seen: 51 Mbit/s received at 40 set), so receiving more is iperf3's
        // doing; receiving less is the estimate holding the tenant back.
        assert!(got >= 0.9 * rate - 1.0, "tenant {}: rate {rate}, gets {got:.1} Mbit/s", NAMES[u]);
        // Against what the sender sent in the same seconds, two-sided: what it sends
        // above its rate while it catches up must get through too.
        assert!(
            (got - sent).abs() <= 0.1 * sent + 1.0,
            "tenant {}: sent {sent:.1}, gets {got:.1} Mbit/s (rate {rate})",
            NAMES[u]
        );
    }
}

/// The tree belongs to the service: another root qdisc is refused (exit 2, named), a
/// tree left by a dead service is replaced, and the tree goes when the service stops.
#[test]
fn the_htb_tree_is_owned_replaced_when_stale_and_removed_on_exit() {
    let _one = one_at_a_time();
    let mut lab = match lab("owner") {
        Ok(l) => l,
        Err(why) => {
            eprintln!("bandwidth: skipped: cannot make network namespaces here ({why})");
            return;
        }
    };
    let qdisc = |lab: &Lab| {
        let out =
            Command::new("ip").args(["netns", "exec", &lab.a, "tc", "qdisc", "show", "dev", "va"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let tc = |lab: &Lab, args: &[&str]| {
        assert!(Command::new("ip").args(["netns", "exec", &lab.a, "tc"]).args(args).status().unwrap().success());
    };
    let cfg = config(&lab, "karma", "declared");
    // Someone else's qdisc: refused, and left alone.
    tc(&lab, &["qdisc", "add", "dev", "va", "root", "handle", "1:", "pfifo"]);
    let out = Command::new("ip")
        .args(["netns", "exec", &lab.a, env!("CARGO_BIN_EXE_fairshare"), "serve", "--clock", "manual"])
        .args(["--config", cfg.to_str().unwrap(), "--listen"])
        .arg(format!("unix:{}", lab.dir.path().join("refused.sock").display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("enforce.dev: va has a root qdisc of its own") && err.contains("pfifo"), "{err}");
    assert!(qdisc(&lab).contains("qdisc pfifo 1: root"), "{}", qdisc(&lab));
    tc(&lab, &["qdisc", "del", "dev", "va", "root"]);
    // A tree of a service killed with kill -9: replaced by the next one.
    let sock = serve(&mut lab, &cfg);
    assert!(qdisc(&lab).contains("qdisc htb fa17: root"), "{}", qdisc(&lab));
    let mut first = lab.children.pop().unwrap();
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(qdisc(&lab).contains("qdisc htb fa17: root"), "kill -9 leaves the tree");
    let _ = std::fs::remove_file(&sock);
    let sock = serve(&mut lab, &cfg);
    assert_eq!(http(&sock, "POST", "/v1/quantum", "").0, 200);
    // SIGTERM: the tree goes with the service.
    let mut second = lab.children.pop().unwrap();
    assert!(Command::new("kill").arg(second.id().to_string()).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(5);
    while second.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the service did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!qdisc(&lab).contains("fa17"), "the tree is removed on exit: {}", qdisc(&lab));
}
