//! Enforcement with Linux HTB: the service owns an HTB tree on one device, a class per
//! tenant whose rate and ceiling are its allocation, and reads the classes' counters to
//! measure demand.
//!
//! The tree: root qdisc `fa17:` (HTB, unclassified traffic passes directly), a class
//! `fa17:1` at the link's capacity, and tenant `i`'s class `fa17:(10+i)` (hexadecimal
//! minor numbers) with `rate = ceil = alloc x slice`. Each tenant's `match` becomes a u32
//! filter (destination port, source address, optionally only TCP or UDP) or an fw filter
//! (mark).
//!
//! A tenant with no slices is held to [`Htb::floor_bps`], not to the least rate HTB
//! takes (8 bit/s): HTB keeps its tokens in time, and one full-size packet (1514 bytes)
//! sent at 8 bit/s leaves the class 25 minutes in debt, whatever rate it gets next: it
//! could not follow the next quantum. At the floor, one such packet costs at most half
//! a quantum (`2 x 1514 x 8 / quantum` bit/s: 121 kbit/s for 200 ms quanta).
//!
//! Changes are applied with `tc -batch -`, one process per quantum: one batch of class
//! changes per quantum, and an exit status per batch, so a failed change is seen at once.
//! A netlink crate would save the process (a few ms per quantum, against quanta of 100 ms
//! and more), but none of the maintained ones builds HTB class options today.
//!
//! Ownership: the file `/run/fairshare/htb-NETNS-DEV.pid` (NETNS: the network
//! namespace's inode number) holds the owner's process id. At start,
//! a tree `fa17:` of a dead owner is replaced; one of a live owner, or any other root
//! qdisc with a handle of its own, is refused. On exit the tree and the file are removed.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::config::{Match, Tenant};

/// Why the HTB tree could not be installed, changed or read.
#[derive(Debug, thiserror::Error)]
pub enum EnforceError {
    /// `tc` could not be run or talked to.
    #[error("{what}: {source}")]
    Tool {
        /// What was being done (`running tc`, `writing to tc`).
        what: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// `tc` refused what it was given; its own message.
    #[error("tc refused {what}: {message}")]
    Refused {
        /// The batch or command.
        what: String,
        /// tc's message (its stderr, warnings left out).
        message: String,
    },
    /// Another live fairshare enforces on the device.
    #[error("enforce.dev: {dev} is enforced by another fairshare (pid {pid})")]
    Taken {
        /// The device.
        dev: String,
        /// The other process.
        pid: u32,
    },
    /// The device has a root qdisc that is not ours.
    #[error("enforce.dev: {dev} has a root qdisc of its own (`{qdisc}`); refusing to replace it")]
    Foreign {
        /// The device.
        dev: String,
        /// That qdisc, as tc shows it.
        qdisc: String,
    },
    /// A tenant's match cannot be made a filter.
    #[error("tenants: `{tenant}`: match: {reason}")]
    Match {
        /// The tenant.
        tenant: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The owner file could not be written.
    #[error("writing {}: {source}", path.display())]
    OwnerFile {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// The least rate HTB accepts (bits per second).
pub const MIN_RATE_BPS: u64 = 8;

/// The largest packet on the link, with its Ethernet header (bytes).
const MTU_BYTES: u64 = 1514;

/// The root qdisc's handle.
const HANDLE: &str = "fa17";

/// Where the owner files go (a systemd unit's `RuntimeDirectory=fairshare`).
const OWNER_DIR: &str = "/run/fairshare";

/// A class's counters since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Bytes sent.
    pub bytes: u64,
    /// Packets dropped.
    pub drops: u64,
    /// Times the class was over its limit.
    pub overlimits: u64,
    /// Bytes queued now.
    pub backlog: u64,
}

/// The HTB tree the service owns on one device.
#[derive(Debug)]
pub struct Htb {
    dev: String,
    owner_file: PathBuf,
    tenants: usize,
    floor_bps: u64,
}

fn tool(what: &'static str) -> impl FnOnce(std::io::Error) -> EnforceError {
    move |source| EnforceError::Tool { what, source }
}

fn tc(batch: &str) -> Result<(), EnforceError> {
    let mut child = Command::new("tc")
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(tool("running tc"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(batch.as_bytes()).map_err(tool("writing to tc"))?;
    }
    let out = child.wait_with_output().map_err(tool("running tc"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let err: Vec<&str> = err.lines().filter(|l| !l.starts_with("Warning")).collect();
        return Err(EnforceError::Refused { what: "the batch".into(), message: err.join("; ") });
    }
    Ok(())
}

fn tc_show(args: &[&str]) -> Result<String, EnforceError> {
    let out = Command::new("tc").args(args).output().map_err(tool("running tc"))?;
    if !out.status.success() {
        return Err(EnforceError::Refused {
            what: format!("tc {}", args.join(" ")),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn class(i: usize) -> String {
    format!("{HANDLE}:{:x}", 0x10 + i)
}

fn filter(dev: &str, i: usize, tenant: &str, m: &Match) -> Result<String, EnforceError> {
    let flow = class(i);
    let prio = i + 1;
    let protocol = match m.protocol.as_deref() {
        Some("tcp") => " match ip protocol 6 0xff",
        Some("udp") => " match ip protocol 17 0xff",
        _ => "",
    };
    Ok(match (m.dport, &m.src, m.fwmark) {
        (Some(port), None, None) => format!(
            "filter add dev {dev} parent {HANDLE}: protocol ip prio {prio} u32{protocol} match ip dport {port} 0xffff flowid {flow}\n"
        ),
        (None, Some(src), None) => {
            let addr: std::net::Ipv4Addr =
                src.parse().map_err(|_| EnforceError::Match { tenant: tenant.into(), reason: "src is not an IPv4 address" })?;
            format!(
                "filter add dev {dev} parent {HANDLE}: protocol ip prio {prio} u32{protocol} match ip src {addr}/32 flowid {flow}\n"
            )
        }
        (None, None, Some(mark)) => {
            format!("filter add dev {dev} parent {HANDLE}: protocol ip prio {prio} handle {mark} fw flowid {flow}\n")
        }
        _ => {
            return Err(EnforceError::Match { tenant: tenant.into(), reason: "give exactly one of dport, src and fwmark" })
        }
    })
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

impl Htb {
    /// The rate a tenant with no slices is held to, for quanta of `quantum`.
    pub fn floor_for(quantum: std::time::Duration) -> u64 {
        let bits = 2 * MTU_BYTES * 8;
        ((bits as f64 / quantum.as_secs_f64().max(1e-6)).ceil() as u64).max(MIN_RATE_BPS)
    }

    /// The rate a tenant with no slices is held to.
    pub fn floor_bps(&self) -> u64 {
        self.floor_bps
    }

    /// Installs the tree on `dev` for `tenants`, every tenant at the floor rate.
    pub fn install(
        dev: &str,
        link_bps: u64,
        tenants: &[Tenant],
        quantum: std::time::Duration,
    ) -> Result<Htb, EnforceError> {
        let floor = Self::floor_for(quantum);
        // Device names are per network namespace: the file names the namespace too.
        let netns = std::fs::read_link("/proc/self/ns/net")
            .map(|l| l.to_string_lossy().trim_start_matches("net:[").trim_end_matches(']').to_string())
            .unwrap_or_default();
        let owner_file = PathBuf::from(format!("{OWNER_DIR}/htb-{netns}-{dev}.pid"));
        let qdiscs = tc_show(&["qdisc", "show", "dev", dev])?;
        let root = qdiscs.lines().find(|l| l.contains(" root ")).unwrap_or("");
        let handle = root.split_whitespace().nth(2).unwrap_or("0:");
        if handle == format!("{HANDLE}:") {
            let owner = std::fs::read_to_string(&owner_file).ok().and_then(|s| s.trim().parse::<u32>().ok());
            if let Some(pid) = owner.filter(|&p| alive(p) && p != std::process::id()) {
                return Err(EnforceError::Taken { dev: dev.into(), pid });
            }
        } else if handle != "0:" {
            return Err(EnforceError::Foreign { dev: dev.into(), qdisc: root.trim().into() });
        }
        let mut batch = format!(
            "qdisc replace dev {dev} root handle {HANDLE}: htb default 0\n\
             class replace dev {dev} parent {HANDLE}: classid {HANDLE}:1 htb rate {link_bps}bit ceil {link_bps}bit quantum 1514\n"
        );
        for (i, t) in tenants.iter().enumerate() {
            let m = t.selector.as_ref().ok_or_else(|| EnforceError::Match {
                tenant: t.name.clone(),
                reason: "missing; enforce = htb needs one per tenant",
            })?;
            batch += &format!(
                "class replace dev {dev} parent {HANDLE}:1 classid {} htb rate {floor}bit ceil {floor}bit quantum 1514\n",
                class(i)
            );
            batch += &filter(dev, i, &t.name, m)?;
        }
        // A stale tree (of a dead owner) goes first, with its filters.
        if handle == format!("{HANDLE}:") {
            tc(&format!("qdisc del dev {dev} root\n"))?;
        }
        tc(&batch)?;
        std::fs::create_dir_all(OWNER_DIR)
            .and_then(|()| std::fs::write(&owner_file, std::process::id().to_string()))
            .map_err(|source| EnforceError::OwnerFile { path: owner_file.clone(), source })?;
        Ok(Htb { dev: dev.to_string(), owner_file, tenants: tenants.len(), floor_bps: floor })
    }

    /// Sets every tenant's rate and ceiling, in one batch.
    pub fn apply(&self, rates_bps: &[u64]) -> Result<(), EnforceError> {
        let mut batch = String::new();
        for (i, &r) in rates_bps.iter().enumerate().take(self.tenants) {
            let r = r.max(self.floor_bps);
            batch += &format!(
                "class change dev {} parent {HANDLE}:1 classid {} htb rate {r}bit ceil {r}bit quantum 1514\n",
                self.dev,
                class(i)
            );
        }
        tc(&batch)
    }

    /// Every tenant's counters, in tenant order.
    pub fn counters(&self) -> Result<Vec<Counters>, EnforceError> {
        let text = tc_show(&["-s", "class", "show", "dev", &self.dev])?;
        let mut out = vec![Counters::default(); self.tenants];
        let mut current: Option<usize> = None;
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if words.first() == Some(&"class") {
                current = (0..self.tenants).find(|&i| words.get(2) == Some(&class(i).as_str()));
                continue;
            }
            let Some(i) = current else { continue };
            let number = |w: &str| w.trim_matches(|c: char| !c.is_ascii_digit()).parse::<u64>().unwrap_or(0);
            if words.first() == Some(&"Sent") {
                out[i].bytes = words.get(1).map_or(0, |w| number(w));
                out[i].drops =
                    words.iter().position(|w| *w == "(dropped").and_then(|p| words.get(p + 1)).map_or(0, |w| number(w));
                out[i].overlimits = words
                    .iter()
                    .position(|w| *w == "overlimits")
                    .and_then(|p| words.get(p + 1))
                    .map_or(0, |w| number(w));
            } else if words.first() == Some(&"backlog") {
                out[i].backlog = words.get(1).map_or(0, |w| number(w));
            }
        }
        Ok(out)
    }
}

impl Drop for Htb {
    /// The tree and the owner file go with the service.
    fn drop(&mut self) {
        let _ = tc(&format!("qdisc del dev {} root\n", self.dev));
        let _ = std::fs::remove_file(&self.owner_file);
    }
}

/// The measured-demand estimator's parameters (docs/serve.md#measured-demand).
#[derive(Debug, Clone, Copy)]
pub struct Estimator {
    /// Growth of a tenant that was held back (backlogged, over its limit or dropping).
    pub growth: f64,
    /// Headroom over what a tenant that was not held back sent.
    pub headroom: f64,
    /// Slices added to every estimate, so that a tenant that sent nothing can start.
    pub floor_slices: u64,
}

impl Default for Estimator {
    fn default() -> Self {
        Estimator { growth: 1.5, headroom: 1.1, floor_slices: 1 }
    }
}

impl Estimator {
    /// A tenant's demand for the next quantum from its counters over the last one
    /// (`before`, `after`), what it was allocated, the quantum's length and the slice's
    /// rate; at most `cap` slices. A tenant was held back if it dropped packets, used
    /// nine tenths of its allocation or more, or (with no allocation) queued anything:
    /// it asks for `growth` times its allocation; otherwise for what it sent times
    /// `headroom`. `floor_slices` is added, so that a silent tenant can start again.
    pub fn demand(&self, before: Counters, after: Counters, alloc: u64, secs: f64, slice_bps: u64, cap: u64) -> u64 {
        let sent_bits = after.bytes.saturating_sub(before.bytes) as f64 * 8.0;
        let sent_slices = sent_bits / secs.max(1e-6) / slice_bps.max(1) as f64;
        let held_back = after.drops > before.drops
            || (alloc > 0 && sent_slices >= 0.9 * alloc as f64)
            || (alloc == 0 && (after.backlog > 0 || after.overlimits > before.overlimits));
        let want = if held_back {
            (alloc.max(1) as f64 * self.growth).ceil().max(sent_slices.ceil())
        } else {
            (sent_slices * self.headroom).ceil()
        };
        (want as u64).saturating_add(self.floor_slices).min(cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimator_grows_held_back_tenants_and_follows_the_others() {
        let e = Estimator::default();
        let c = |bytes, overlimits, backlog| Counters { bytes, drops: 0, overlimits, backlog };
        // 1 Mbit/s slices, 0.2 s quanta: 10 slices' worth is 250,000 bytes.
        assert_eq!(e.demand(c(0, 0, 0), c(250_000, 5, 0), 10, 0.2, 1_000_000, 100), 16, "used all of it");
        let dropped = Counters { drops: 3, ..c(125_000, 0, 0) };
        assert_eq!(e.demand(c(0, 0, 0), dropped, 10, 0.2, 1_000_000, 100), 16, "dropped packets");
        assert_eq!(e.demand(c(0, 0, 0), c(125_000, 7, 1500), 10, 0.2, 1_000_000, 100), 7, "half used: sent x 1.1 + 1");
        assert_eq!(e.demand(c(0, 0, 0), c(0, 0, 0), 10, 0.2, 1_000_000, 100), 1, "silent");
        assert_eq!(e.demand(c(0, 0, 0), c(0, 0, 1500), 0, 0.2, 1_000_000, 100), 3, "queued with nothing allocated");
        assert_eq!(e.demand(c(0, 0, 0), c(2_500_000, 9, 0), 90, 0.2, 1_000_000, 100), 100, "capped at the link");
    }
}
