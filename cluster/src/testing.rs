//! A real etcd for tests: one member (Debian's `etcd-server`) on free loopback ports in
//! a temporary folder, killed and its folder removed when dropped, also when the test
//! fails. Used by this crate's tests and the command's.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A one-member etcd on loopback.
pub struct Etcd {
    child: Child,
    /// Its client URL.
    pub url: String,
    dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        // A stopped etcd (SIGSTOP) is continued first, so that it can die.
        let _ = Command::new("kill").args(["-CONT", &self.child.id().to_string()]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free loopback port (bound, then released for the process that takes it).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(0)
}

impl Etcd {
    /// Starts etcd and waits (at most 20 s) until it answers its health check.
    ///
    /// # Panics
    /// If etcd is not installed or does not become healthy: a test cannot go on.
    pub fn start() -> Etcd {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let (client, peer) = (free_port(), free_port());
        let url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let data = dir.path().join("data");
        let log = std::fs::File::create(dir.path().join("etcd.log")).expect("etcd's log file");
        let child = Command::new("etcd")
            .arg("--name")
            .arg("t")
            .arg("--data-dir")
            .arg(&data)
            .args(["--listen-client-urls", &url, "--advertise-client-urls", &url])
            .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("t={peer_url}")])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd (Debian: etcd-server; ./test.sh installs it)");
        let etcd = Etcd { child, url, dir };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if etcd.healthy() {
                return etcd;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("etcd did not become healthy within 20 s: {}", etcd.log());
    }

    /// Whether etcd answers its health check now.
    pub fn healthy(&self) -> bool {
        let Ok(mut conn) = std::net::TcpStream::connect(self.url.trim_start_matches("http://")) else { return false };
        let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
        let request = "GET /health HTTP/1.1\r\nHost: etcd\r\nConnection: close\r\n\r\n";
        let mut answer = String::new();
        std::io::Write::write_all(&mut conn, request.as_bytes()).is_ok()
            && std::io::Read::read_to_string(&mut conn, &mut answer).is_ok()
            && answer.contains("\"health\":\"true\"")
    }

    /// What etcd logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
    }

    /// Sends `signal` (`-STOP`, `-CONT`) to etcd.
    pub fn signal(&self, signal: &str) {
        let ok = Command::new("kill").args([signal, &self.child.id().to_string()]).status().is_ok_and(|s| s.success());
        assert!(ok, "kill {signal} etcd");
    }

    /// `etcdctl ARGS` against this etcd: its stdout.
    ///
    /// # Panics
    /// If etcdctl fails.
    pub fn ctl(&self, args: &[&str]) -> String {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", &self.url])
            .args(args)
            .output()
            .expect("etcdctl (Debian: etcd-client; ./test.sh installs it)");
        assert!(out.status.success(), "etcdctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The value of `key`, or `None`.
    pub fn value(&self, key: &str) -> Option<String> {
        let v = self.ctl(&["get", key, "--print-value-only"]).trim().to_string();
        (!v.is_empty()).then_some(v)
    }
}
