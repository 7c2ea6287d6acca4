//! What the CLI's integration tests share: spawning `fairshare`, and a minimal
//! HTTP/1.1 client over TCP or a Unix socket (no client crate is needed for a few
//! requests, and a raw client can also send what a real one would not).

#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_fairshare")
}

/// `fairshare ARGS`, run to its end.
pub fn fairshare(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().unwrap()
}

/// Bytes as text (lossy).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes `content` to `dir/name`; returns the path.
pub fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

/// A running `fairshare device-sim`, killed when dropped.
pub struct DeviceSim(pub Child);

impl Drop for DeviceSim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `fairshare device-sim --shm SHM EXTRA...` and waits for its `ready`.
pub fn device_sim(shm: &Path, extra: &[&str]) -> DeviceSim {
    let mut args = vec!["device-sim", "--shm", shm.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (child, line) = spawn_until_first_line(&args, None);
    assert_eq!(line.trim(), "ready", "device-sim did not start");
    DeviceSim(child)
}

/// Where a server listens.
#[derive(Debug, Clone)]
pub enum Addr {
    /// `host:port`.
    Tcp(String),
    /// A Unix socket.
    Unix(PathBuf),
}

/// A running `fairshare` process, killed (SIGKILL) when dropped.
pub struct Running {
    pub child: Child,
    pub addr: Addr,
    /// A token sent with every request (`Authorization: Bearer`), if set.
    pub token: Option<String>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `fairshare ARGS`, with its first line on stdout (it says the command is ready);
/// stderr is kept in `stderr` if given, else dropped.
pub fn spawn_until_first_line(args: &[&str], stderr: Option<&Path>) -> (Child, String) {
    spawn_in(None, args, stderr)
}

/// As [`spawn_until_first_line`], inside the network namespace `netns` if given.
pub fn spawn_in(netns: Option<&str>, args: &[&str], stderr: Option<&Path>) -> (Child, String) {
    let err = match stderr {
        Some(p) => Stdio::from(std::fs::File::create(p).unwrap()),
        None => Stdio::null(),
    };
    let mut command = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, bin()]);
            c
        }
        None => Command::new(bin()),
    };
    let mut child = command.args(args).stdout(Stdio::piped()).stderr(err).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (child, line)
}

/// `fairshare serve --config CONFIG --listen 127.0.0.1:0 EXTRA...`, once it listens.
pub fn serve(config: &Path, extra: &[&str]) -> Running {
    serve_logged(config, extra, None)
}

/// As [`serve`], its stderr kept in `log`.
pub fn serve_logged(config: &Path, extra: &[&str], log: Option<&Path>) -> Running {
    serve_in(None, config, extra, log)
}

/// As [`serve_logged`], inside the network namespace `netns` if given.
pub fn serve_in(netns: Option<&str>, config: &Path, extra: &[&str], log: Option<&Path>) -> Running {
    let mut args = vec!["serve", "--config", config.to_str().unwrap()];
    if !extra.contains(&"--listen") {
        args.extend(["--listen", "127.0.0.1:0"]);
    }
    args.extend_from_slice(extra);
    let (child, line) = spawn_in(netns, &args, log);
    if line.is_empty() {
        let said = log.map(|l| std::fs::read_to_string(l).unwrap_or_default()).unwrap_or_default();
        panic!("fairshare serve did not start: {said}");
    }
    let addr = if let Some(path) = line.trim().strip_prefix("fairshare serve: listening on unix:") {
        Addr::Unix(PathBuf::from(path))
    } else {
        let addr = line.trim().rsplit("http://").next().unwrap().to_string();
        assert!(addr.contains(':'), "no address in {line:?}");
        Addr::Tcp(addr)
    };
    Running { child, addr, token: None }
}

/// An HTTP response.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    /// The header lines, as sent.
    pub head: String,
    pub body: String,
}

impl Reply {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }

    /// A header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

/// Anything a request can go over.
pub trait Conn: Read + Write {}
impl<T: Read + Write> Conn for T {}

/// A connection to `addr`.
pub fn connect(addr: &Addr) -> Box<dyn Conn> {
    match addr {
        Addr::Tcp(a) => {
            let s = std::net::TcpStream::connect(a).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
            Box::new(s)
        }
        Addr::Unix(p) => {
            let s = std::os::unix::net::UnixStream::connect(p).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
            Box::new(s)
        }
    }
}

/// Sends one request on `conn` and reads the whole response (the connection is closed).
pub fn exchange(conn: &mut dyn Conn, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (n, v) in headers {
        req += &format!("{n}: {v}\r\n");
    }
    req += "\r\n";
    req += body;
    conn.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw).unwrap();
    parse(&String::from_utf8_lossy(&raw))
}

/// A response's status, head and body.
pub fn parse(response: &str) -> Reply {
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{response:?}"));
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((response, ""));
    Reply { status, head: head.to_string(), body: body.to_string() }
}

impl Running {
    /// One request with these headers (and the token, if set).
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let mut all: Vec<(&str, &str)> = headers.to_vec();
        if let Some(a) = &auth {
            if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("authorization")) {
                all.push(("Authorization", a));
            }
        }
        all.push(("Content-Type", "application/json"));
        exchange(&mut *connect(&self.addr), method, path, &all, body)
    }

    /// One request: status and body.
    pub fn http(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let r = self.request(method, path, &[], body);
        (r.status, r.body)
    }

    /// One request that must succeed; its JSON.
    pub fn json(&self, method: &str, path: &str, body: &str) -> Value {
        let r = self.request(method, path, &[], body);
        assert!((200..300).contains(&r.status), "{method} {path}: {} {}", r.status, r.body);
        r.json()
    }

    /// Sends SIGTERM and waits (at most `limit`) for the exit; the time it took, or `None`.
    pub fn terminate(&mut self, limit: Duration) -> Option<Duration> {
        let start = Instant::now();
        Command::new("kill").arg(self.child.id().to_string()).status().unwrap();
        while start.elapsed() < limit {
            if self.child.try_wait().unwrap().is_some() {
                return Some(start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

/// The example pool of the README (`examples/serve.toml`).
pub fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/serve.toml")
}

/// Writes `text` to `dir/name` with `mode`; returns the path.
pub fn write_file(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

/// Whether this process runs as root.
pub fn root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// Removes the network namespaces the tests name for their process (`fsa-TAG-PID`,
/// `fsb-TAG-PID`, `fsk-PID`, `fshN-PID`) whose process is gone. Each test's lab removes
/// its own when dropped, also on panic, but not when the process is killed (a CI
/// timeout, kill -9): the next lab cleans up after it. Namespaces of live processes
/// and any other names are left alone.
pub fn remove_stale_namespaces() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else { return };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else { continue };
        if !["fsa-", "fsb-", "fsk-", "fsh"].iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let owner = name.rsplit('-').next().and_then(|pid| pid.parse::<u32>().ok());
        if owner.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = Command::new("ip").args(["netns", "del", name]).stderr(Stdio::null()).status();
        }
    }
}

/// The Karma paper's worked example (Figure 2): demands per quantum of A, B, C.
pub const FIGURE2: [[u64; 3]; 5] = [[3, 2, 1], [3, 0, 0], [0, 3, 0], [2, 2, 4], [2, 3, 5]];

/// Figure 2's demands, each quantum's put on `demands` and run on `quanta` (the same
/// service, or two replicas); each quantum's answer.
pub fn run_figure2(demands: &Running, quanta: &Running) -> Vec<Value> {
    (0..FIGURE2.len()).map(|q| figure2_quantum(demands, quanta, q)).collect()
}

/// Figure 2's quantum `q` (from 0): its demands put on `demands`, run on `quanta`.
pub fn figure2_quantum(demands: &Running, quanta: &Running, q: usize) -> Value {
    for (name, slices) in ["A", "B", "C"].iter().zip(FIGURE2[q]) {
        let (status, body) =
            demands.http("PUT", &format!("/v1/tenants/{name}/demand"), &format!("{{\"slices\": {slices}}}"));
        assert_eq!(status, 204, "{body}");
    }
    quanta.json("POST", "/v1/quantum", "")
}

/// Each answer's rows as `fairshare replay --dense` prints them: (quantum, tenant,
/// allocation, credits).
pub fn rows(answers: &[Value]) -> Vec<(u64, String, u64, String)> {
    let mut got = Vec::new();
    for r in answers {
        for t in r["tenants"].as_array().unwrap() {
            got.push((
                r["quantum"].as_u64().unwrap(),
                t["name"].as_str().unwrap().to_string(),
                t["alloc_slices"].as_u64().unwrap(),
                t["credits"].as_str().unwrap().to_string(),
            ));
        }
    }
    got
}

/// The allocations and credits of `fairshare replay` on Figure 2's demands.
pub fn replay_rows() -> Vec<(u64, String, u64, String)> {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    let mut text = String::from("quantum,user,demand\n");
    for (q, d) in FIGURE2.iter().enumerate() {
        for (name, slices) in ["A", "B", "C"].iter().zip(d) {
            text += &format!("{},{name},{slices}\n", q + 1);
        }
    }
    std::fs::write(&trace, text).unwrap();
    let out = Command::new(bin())
        .args(["replay", trace.to_str().unwrap(), "--fair-share", "2", "--alpha", "0.5", "--initial-credits", "6"])
        .args(["--dense"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[1].to_string(), f[3].parse().unwrap(), f[4].to_string())
        })
        .collect()
}

/// `promtool check metrics` on `text` (Debian's `prometheus` package; test.sh installs it).
pub fn promtool(text: &str) -> Result<(), String> {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("promtool: {e}; install Debian's `prometheus` package (./test.sh does)"));
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() && said.trim().is_empty() {
        Ok(())
    } else {
        Err(said)
    }
}
