//! A real etcd for tests (Debian's `etcd-server`): one member, or a cluster of three,
//! on free loopback ports in a temporary folder; every member is killed and the folder
//! removed when dropped, also when the test fails. Used by this crate's tests and the
//! command's.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// An etcd of one or more members on loopback.
pub struct Etcd {
    members: Vec<Child>,
    /// The members' client URLs, comma-separated (as `--etcd` takes them).
    pub url: String,
    urls: Vec<String>,
    dir: tempfile::TempDir,
    /// The network namespace it runs in, if not the test's.
    netns: Option<String>,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        for child in &mut self.members {
            // A stopped member (SIGSTOP) is continued first, so that it can die.
            let _ = Command::new("kill").args(["-CONT", &child.id().to_string()]).status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Etcd {
    /// Starts a one-member etcd and waits (at most 20 s) until it is healthy.
    ///
    /// # Panics
    /// If etcd is not installed or does not become healthy: a test cannot go on.
    pub fn start() -> Etcd {
        Etcd::cluster(1)
    }

    /// Starts an etcd of `n` members and waits (at most 20 s) until every member is
    /// healthy (a leader elected among them).
    ///
    /// # Panics
    /// As [`Etcd::start`].
    pub fn cluster(n: usize) -> Etcd {
        let dir = tempfile::tempdir().expect("a temporary folder");
        // Distinct ports: every listener is held until all are chosen (one released
        // before the next is bound can come back again, and two members then fight for
        // it: a CI run saw "bind: address already in use").
        let held: Vec<TcpListener> =
            (0..2 * n).map(|_| TcpListener::bind("127.0.0.1:0").expect("a free loopback port")).collect();
        let chosen: Vec<u16> =
            held.iter().map(|l| l.local_addr().expect("a bound listener's address").port()).collect();
        drop(held);
        let ports: Vec<(u16, u16)> = chosen.chunks(2).map(|p| (p[0], p[1])).collect();
        let peers: Vec<String> =
            ports.iter().enumerate().map(|(i, (_, p))| format!("m{i}=http://127.0.0.1:{p}")).collect();
        let urls: Vec<String> = ports.iter().map(|(c, _)| format!("http://127.0.0.1:{c}")).collect();
        let mut members = Vec::with_capacity(n);
        for (i, (client, peer)) in ports.iter().enumerate() {
            let (url, peer_url) = (format!("http://127.0.0.1:{client}"), format!("http://127.0.0.1:{peer}"));
            let log = std::fs::File::create(dir.path().join(format!("m{i}.log"))).expect("etcd's log file");
            let child = Command::new("etcd")
                .args(["--name", &format!("m{i}"), "--initial-cluster-token", "fairshare-test"])
                .arg("--data-dir")
                .arg(dir.path().join(format!("m{i}")))
                .args(["--listen-client-urls", &url, "--advertise-client-urls", &url])
                .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
                .args(["--initial-cluster", &peers.join(",")])
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("etcd (Debian: etcd-server; ./test.sh installs it)");
            members.push(child);
        }
        let etcd = Etcd { members, url: urls.join(","), urls, dir, netns: None };
        etcd.wait_healthy()
    }

    /// Starts a one-member etcd inside the network namespace `netns` (made by the
    /// test), serving clients on its loopback and on each of `addrs` (addresses of that
    /// namespace other namespaces reach it by), port 2379; waits as [`Etcd::start`].
    /// [`Etcd::url`] is the loopback's (for processes in `netns`).
    ///
    /// # Panics
    /// As [`Etcd::start`].
    pub fn start_in(netns: &str, addrs: &[&str]) -> Etcd {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let url = "http://127.0.0.1:2379".to_string();
        let listen: Vec<String> =
            std::iter::once(url.clone()).chain(addrs.iter().map(|a| format!("http://{a}:2379"))).collect();
        let log = std::fs::File::create(dir.path().join("m0.log")).expect("etcd's log file");
        let child = Command::new("ip")
            .args(["netns", "exec", netns, "etcd", "--name", "m0"])
            .arg("--data-dir")
            .arg(dir.path().join("m0"))
            .args(["--listen-client-urls", &listen.join(","), "--advertise-client-urls", &url])
            .args(["--listen-peer-urls", "http://127.0.0.1:2380"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd (Debian: etcd-server; ./test.sh installs it)");
        let etcd =
            Etcd { members: vec![child], url: url.clone(), urls: vec![url], dir, netns: Some(netns.to_string()) };
        etcd.wait_healthy()
    }

    fn wait_healthy(self) -> Etcd {
        let etcd = self;
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if etcd.healthy() {
                return etcd;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("etcd did not become healthy within 20 s: {}", etcd.log());
    }

    /// Whether every member answers its health check now.
    pub fn healthy(&self) -> bool {
        match &self.netns {
            None => self.urls.iter().all(|u| healthy(u)),
            Some(_) => self.command(&["endpoint", "health"]).output().is_ok_and(|o| o.status.success()),
        }
    }

    /// `etcdctl ARGS` against this etcd, in its namespace.
    fn command(&self, args: &[&str]) -> Command {
        let mut c = match &self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "etcdctl"]);
                c
            }
            None => Command::new("etcdctl"),
        };
        c.env("ETCDCTL_API", "3").args(["--endpoints", &self.url, "--command-timeout", "2s"]).args(args);
        c
    }

    /// What the members logged.
    pub fn log(&self) -> String {
        (0..self.members.len())
            .map(|i| std::fs::read_to_string(self.dir.path().join(format!("m{i}.log"))).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Sends `signal` (`-STOP`, `-CONT`) to every member.
    pub fn signal(&self, signal: &str) {
        for child in &self.members {
            let ok = Command::new("kill").args([signal, &child.id().to_string()]).status().is_ok_and(|s| s.success());
            assert!(ok, "kill {signal} etcd");
        }
    }

    /// `etcdctl ARGS` against this etcd: its stdout.
    ///
    /// # Panics
    /// If etcdctl fails.
    pub fn ctl(&self, args: &[&str]) -> String {
        let out = self.command(args).output().expect("etcdctl (Debian: etcd-client; ./test.sh installs it)");
        assert!(out.status.success(), "etcdctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The value of `key`, or `None`.
    pub fn value(&self, key: &str) -> Option<String> {
        let v = self.ctl(&["get", key, "--print-value-only"]).trim().to_string();
        (!v.is_empty()).then_some(v)
    }
}

/// Whether the member at `url` answers its health check now.
fn healthy(url: &str) -> bool {
    let Ok(mut conn) = std::net::TcpStream::connect(url.trim_start_matches("http://")) else { return false };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let request = "GET /health HTTP/1.1\r\nHost: etcd\r\nConnection: close\r\n\r\n";
    let mut answer = String::new();
    std::io::Write::write_all(&mut conn, request.as_bytes()).is_ok()
        && std::io::Read::read_to_string(&mut conn, &mut answer).is_ok()
        && answer.contains("\"health\":\"true\"")
}
