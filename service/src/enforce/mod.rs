//! Enforcement with Linux HTB, over rtnetlink: the service owns an HTB tree on one
//! device, a class per tenant whose rate and ceiling are its allocation, a byte FIFO
//! under each sized to its rate, and u32 filters that classify a packet in constant time
//! however many tenants there are. It reads the classes' counters to measure demand.
//!
//! The tree: root qdisc `fa17:` (HTB; unclassified traffic passes directly), the link's
//! class `fa17:1` at the pool's capacity, and a class `fa17:M` per tenant (`M` from
//! `0x10`, kept for the tenant's life) with its leaf `M:` (bfifo). The filters, all at
//! one priority: the root table links destination-port tenants to a 256-way table on
//! the port's high byte, each bucket of which links to a 256-way table on its low byte,
//! whose bucket holds the tenant's exact match (port, and protocol if given); source
//! addresses the same on their last two bytes; firewall marks are matched one by one
//! in the root table (u32 cannot hash on them; this kernel has no `fw` classifier).
//!
//! **What HTB charges, and TCP.** HTB charges a class for each packet as the stack
//! hands it over, and with GSO that is up to 64 KB: a class held at a low rate goes
//! seconds into token debt on one such packet, which a later raise of its rate does not
//! pay back (HTB keeps its tokens in time), and a TCP tenant then receives nothing for
//! seconds after its allocation grew. The enforcer caps the device's GSO size at
//! `max_packet` (2 full frames by default) while it runs, and restores it on exit;
//! the floor a tenant without slices is held to passes 8 such packets per quantum
//! (`8 x max_packet x 8 / quantum` bit/s: its senders find a raise within a quantum
//! or two, and a packet's debt is an eighth of a quantum), each class's bucket holds a packet
//! and a millisecond, and each leaf queue holds 50 to 100 ms at its rate (TCP's round
//! trip, and so how fast it follows a raise, grows with the queue) and 16 largest
//! packets at least (flows held at the floor then lose nothing to the queue's size,
//! and are not in retransmission timeouts when their rate rises). docs/bandwidth.md
//! has the measurements behind these numbers.
//!
//! **Ownership.** The file `/run/fairshare/htb-NETNS-DEV.json` holds the owner's
//! process id, the device's GSO sizes before the cap, and each tenant's class and
//! filter. A tree of a dead owner is taken over in place (no moment unshaped): its
//! classes keep the rates they have until the first quantum sets them, filters are
//! replaced where they are, the objects of tenants gone are deleted. A tree of a
//! live owner, or any other root qdisc, is refused. On exit the tree goes, the GSO
//! sizes are restored and the file is removed; a start that fails removes what it
//! installed and leaves a tree it took over.
//!
//! **Faults.** A change the kernel refuses is reported with the kernel's own message;
//! a lost tree or device is seen at the next quantum (a rate change refused, a class
//! missing from the counters, or the root checked when nothing changed), and the tree
//! is reinstalled (in place, replace semantics) as soon as the device is back
//! ([`Htb::repair`]).

pub mod estimate;
pub mod netlink;
pub mod tc;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::{Match, Tenant};
pub use estimate::Estimator;
use netlink::{Msg, Refused, Rtnl};
pub use tc::Counters;
use tc::{Key, Shape};

/// The kernel's error numbers the enforcer tells apart.
mod libc_errno {
    pub const ENOENT: i32 = 2;
    pub const ENODEV: i32 = 19;
    pub const EINVAL: i32 = 22;
}

/// Where the owner files go (a systemd unit's `RuntimeDirectory=fairshare`).
const OWNER_DIR: &str = "/run/fairshare";

/// The largest packet HTB is charged for, by default: two full Ethernet frames.
pub const DEFAULT_MAX_PACKET: u32 = 2 * 1514;

/// How long a leaf queue is at its class's rate: at least `QUEUE_MIN` (shorter and
/// TCP loses more than it must), at most twice that (longer and its round trip, and so
/// how fast it follows a raise, grows); set to the middle when the rate leaves that
/// band, so a rate that swings by a third costs no change of queue.
const QUEUE_MIN: Duration = Duration::from_millis(50);

/// The largest packets per quantum a tenant with no slices still gets through (its
/// floor: HTB has no rate of zero). The senders of a tenant held there tune themselves
/// to it (BBR's bandwidth estimate, the pacing and small-queue limits Cubic takes from
/// its round trip), and find a raise as fast as their packets come back: measured on
/// the TCP pattern, with 2 packets a raise from the floor was reached after 1.4-2.4
/// quanta (median 2.1), with 8 after 1.5-1.9. One packet costs an eighth of a quantum
/// of HTB's token debt, which a raise does not pay back.
const FLOOR_PACKETS: u64 = 8;

/// The fewest largest packets a leaf queue holds, whatever its rate: the smallest
/// windows of the flows of a tenant held at the floor (4 packets for BBR, per flow)
/// then fit, they lose nothing to the queue's size, and they do not fall into
/// retransmission timeouts (200 ms at least, doubling), which would keep them silent
/// for quanta after their rate is raised. Measured on the TCP pattern: with 2 packets,
/// a raise from the floor was reached after 2-2.5 quanta; with 8, 2; with 16, 1-1.5.
const QUEUE_PACKETS: u64 = 16;

/// The root table's nodes: the link to destination ports, to source addresses, then
/// the firewall marks (one node each, from `MARK_NODE`).
const PORT_LINK: u32 = 1;
const SOURCE_LINK: u32 = 2;
const MARK_NODE: u32 = 0x10;

/// The first-level tables (one per kind of match) and the base of the second level.
const PORT_TABLE: u32 = 1;
const SOURCE_TABLE: u32 = 2;
const PORT_LEAVES: u32 = 0x100;
const SOURCE_LEAVES: u32 = 0x200;

/// Why the HTB tree could not be installed, changed or read.
#[derive(Debug, thiserror::Error)]
pub enum EnforceError {
    /// The route socket failed.
    #[error("{what}: {source}")]
    Socket {
        /// What was being done.
        what: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The kernel refused changes; the first, with its message, and how many.
    #[error("the kernel refused {count} of {total} changes; the first: {first}")]
    Refused {
        /// The first refusal.
        first: Refused,
        /// How many were refused.
        count: usize,
        /// How many were sent.
        total: usize,
    },
    /// No such device.
    #[error("enforce.dev: no device {dev} in this network namespace")]
    NoDevice {
        /// The device.
        dev: String,
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
        /// That qdisc's kind and handle.
        qdisc: String,
    },
    /// A tenant's match cannot be made a filter, or the tree is full.
    #[error("tenants: `{tenant}`: {reason}")]
    Tenant {
        /// The tenant.
        tenant: String,
        /// What is wrong.
        reason: String,
    },
    /// The tree is no longer the device's root.
    #[error("enforce.dev: the HTB tree on {dev} is gone: {what}; it is reinstalled at the next quantum")]
    Lost {
        /// The device.
        dev: String,
        /// What is there instead.
        what: String,
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

fn socket(what: &'static str) -> impl FnOnce(std::io::Error) -> EnforceError {
    move |source| EnforceError::Socket { what, source }
}

/// A tenant's place in the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Slot {
    /// Its class's minor (and its leaf qdisc's major).
    minor: u32,
    /// Its filter node's handle.
    node: u32,
}

/// What the owner file keeps.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Owned {
    pid: u32,
    /// The device's GSO sizes before the cap (general, IPv4), if the cap changed them.
    gso: Option<(u32, Option<u32>)>,
    tenants: BTreeMap<String, Slot>,
}

/// Where the tenants of the pool's order are in the tree.
struct Placement {
    /// Each tenant's class minor, in the pool's order (none: not in the tree).
    minors: Vec<Option<u32>>,
    /// Each class's tenant, by the class's handle.
    by_class: HashMap<u32, usize>,
}

/// How the tree came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installed {
    /// Made by this process.
    Fresh,
    /// Taken over from a dead owner, in place.
    TakenOver,
}

/// The HTB tree the service owns on one device.
pub struct Htb {
    dev: String,
    ifindex: u32,
    rtnl: Rtnl,
    owner_file: PathBuf,
    owned: Owned,
    /// The tenants in the pool's order.
    order: Vec<String>,
    link_bps: u64,
    max_packet: u32,
    floor_bps: u64,
    /// The rate last applied to each class (by minor).
    applied: HashMap<u32, u64>,
    /// The limit last applied to each leaf queue (by minor).
    limits: HashMap<u32, u32>,
    /// Where each tenant of the pool's order is (made again after membership changes).
    placement: Option<Placement>,
    /// The minors and filter nodes in use (those of `owned.tenants`).
    minors: std::collections::BTreeSet<u32>,
    nodes: std::collections::HashSet<u32>,
    /// Which filter tables exist (or were asked for).
    tables: std::collections::HashSet<u32>,
    /// Tables to make before the next batch ([`Htb::make_tables`]).
    new_tables: Vec<u32>,
    installed: Installed,
    /// A fault was seen: the tree is to be checked and reinstalled.
    broken: bool,
}

/// The kernel's answers to a batch, as one result.
fn all_ok(results: Vec<Result<(), Refused>>) -> Result<(), EnforceError> {
    let total = results.len();
    let mut refused = results.into_iter().filter_map(Result::err);
    match refused.next() {
        None => Ok(()),
        Some(first) => Err(EnforceError::Refused { first, count: 1 + refused.count(), total }),
    }
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// What classifies a tenant: its filter's place and keys.
struct Classify {
    /// The second-level table and bucket (ports, sources), or none (marks).
    leaf: Option<(u32, u32)>,
    keys: Vec<Key>,
    mark: Option<u32>,
}

fn classify(t: &Tenant) -> Result<Classify, EnforceError> {
    let bad = |reason: &str| EnforceError::Tenant { tenant: t.name.clone(), reason: reason.to_string() };
    let m: &Match = t.selector.as_ref().ok_or_else(|| bad("match: missing; enforce = htb needs one per tenant"))?;
    let mut keys = Vec::new();
    match m.protocol.as_deref() {
        Some("tcp") => keys.push(Key { mask: 0x00ff_0000, value: 6 << 16, off: 8 }),
        Some("udp") => keys.push(Key { mask: 0x00ff_0000, value: 17 << 16, off: 8 }),
        _ => {}
    }
    Ok(match (m.dport, &m.src, m.fwmark) {
        (Some(port), None, None) => {
            let port = u32::from(port);
            keys.push(Key { mask: 0x0000_ffff, value: port, off: 20 });
            Classify { leaf: Some((PORT_LEAVES + (port >> 8), port & 0xff)), keys, mark: None }
        }
        (None, Some(src), None) => {
            let addr: std::net::Ipv4Addr = src.parse().map_err(|_| bad("match.src: not an IPv4 address"))?;
            let a = u32::from(addr);
            keys.push(Key { mask: u32::MAX, value: a, off: 12 });
            Classify { leaf: Some((SOURCE_LEAVES + ((a >> 8) & 0xff), a & 0xff)), keys, mark: None }
        }
        (None, None, Some(mark)) => Classify { leaf: None, keys, mark: Some(mark) },
        _ => return Err(bad("match: give exactly one of dport, src and fwmark")),
    })
}

impl Htb {
    /// The rate a tenant with no slices is held to, for quanta of `quantum` and packets
    /// of at most `max_packet` bytes: [`FLOOR_PACKETS`] such packets per quantum.
    pub fn floor_for(quantum: Duration, max_packet: u32) -> u64 {
        let bits = FLOOR_PACKETS * u64::from(max_packet) * 8;
        ((bits as f64 / quantum.as_secs_f64().max(1e-6)).ceil() as u64).max(8)
    }

    /// The rate a tenant with no slices is held to.
    pub fn floor_bps(&self) -> u64 {
        self.floor_bps
    }

    /// The device.
    pub fn dev(&self) -> &str {
        &self.dev
    }

    /// How the tree came to be.
    pub fn installed(&self) -> Installed {
        self.installed
    }

    /// The class shape of a rate.
    fn shape(&self, bps: u64) -> Shape {
        let bps = bps.max(self.floor_bps);
        Shape { bps, burst: u64::from(self.max_packet) + bps / 8 / 1000, quantum: self.max_packet }
    }

    /// The bytes a leaf queue holds in `time` at `bps` ([`QUEUE_PACKETS`] at least).
    fn queue_bytes(&self, bps: u64, time: Duration) -> u32 {
        let at_rate = (bps.max(self.floor_bps) as f64 / 8.0 * time.as_secs_f64()) as u64;
        u32::try_from(at_rate.max(QUEUE_PACKETS * u64::from(self.max_packet))).unwrap_or(u32::MAX)
    }

    /// A leaf queue's limit at `bps`, given the one it has: kept while it holds between
    /// one and two `QUEUE_MIN`s at the rate, else one and a half.
    fn queue_limit(&self, bps: u64, current: Option<u32>) -> u32 {
        let (low, high) = (self.queue_bytes(bps, QUEUE_MIN), self.queue_bytes(bps, 2 * QUEUE_MIN));
        match current {
            Some(c) if (low..=high).contains(&c) => c,
            _ => self.queue_bytes(bps, QUEUE_MIN * 3 / 2),
        }
    }

    /// Makes the placement of the pool's order again if membership changed.
    fn place(&mut self) {
        if self.placement.is_none() {
            let tenants = &self.owned.tenants;
            let minors: Vec<Option<u32>> = self.order.iter().map(|n| tenants.get(n).map(|s| s.minor)).collect();
            let by_class = minors.iter().enumerate().filter_map(|(i, m)| m.map(|m| (tc::class(m), i))).collect();
            self.placement = Some(Placement { minors, by_class });
        }
    }

    /// Records a tenant's slot.
    fn record(&mut self, name: &str, slot: Slot) {
        self.placement = None;
        self.minors.insert(slot.minor);
        self.nodes.insert(slot.node);
        self.owned.tenants.insert(name.to_string(), slot);
    }

    /// Forgets a tenant's slot (and what was applied to it).
    fn forget(&mut self, name: &str) -> Option<Slot> {
        let slot = self.owned.tenants.remove(name)?;
        self.placement = None;
        self.minors.remove(&slot.minor);
        self.nodes.remove(&slot.node);
        self.applied.remove(&slot.minor);
        self.limits.remove(&slot.minor);
        Some(slot)
    }

    /// Installs the tree on `dev` for `tenants` (every tenant at the floor), or takes
    /// over the tree a dead owner left there, in place.
    pub fn install(
        dev: &str,
        link_bps: u64,
        tenants: &[Tenant],
        quantum: Duration,
        max_packet: u32,
    ) -> Result<Htb, EnforceError> {
        let mut rtnl = Rtnl::open().map_err(socket("opening a route socket"))?;
        let link = match rtnl.get(tc::get_link(dev), "reading the device").map_err(socket("reading the device"))? {
            Ok(body) => tc::parse_link(&body),
            Err(_) => return Err(EnforceError::NoDevice { dev: dev.to_string() }),
        };
        // Device names are per network namespace: the file names the namespace too.
        let netns = std::fs::read_link("/proc/self/ns/net")
            .map(|l| l.to_string_lossy().trim_start_matches("net:[").trim_end_matches(']').to_string())
            .unwrap_or_default();
        let owner_file = PathBuf::from(format!("{OWNER_DIR}/htb-{netns}-{dev}.json"));
        let root = Self::root_of(&mut rtnl, link.ifindex, dev)?;
        let previous: Option<Owned> =
            std::fs::read(&owner_file).ok().and_then(|b| serde_json::from_slice::<Owned>(&b).ok());
        let ours = root.as_ref().is_some_and(|(kind, handle)| kind == "htb" && *handle == tc::MAJOR << 16);
        let mut owned = Owned { pid: std::process::id(), gso: None, tenants: BTreeMap::new() };
        let installed = match (&root, ours, &previous) {
            (None, _, _) => Installed::Fresh,
            (Some(_), true, Some(prev)) => {
                if prev.pid != std::process::id() && alive(prev.pid) {
                    return Err(EnforceError::Taken { dev: dev.to_string(), pid: prev.pid });
                }
                owned.gso = prev.gso;
                owned.tenants = prev.tenants.clone();
                Installed::TakenOver
            }
            // Our handle but nothing says whose or what is where: made anew.
            (Some(_), true, None) => Installed::Fresh,
            (Some((kind, handle)), false, _) => {
                return Err(EnforceError::Foreign {
                    dev: dev.to_string(),
                    qdisc: format!("{kind} {:x}:", handle >> 16),
                })
            }
        };
        let floor_bps = Self::floor_for(quantum, max_packet);
        let mut htb = Htb {
            dev: dev.to_string(),
            ifindex: link.ifindex,
            rtnl,
            owner_file,
            owned,
            order: tenants.iter().map(|t| t.name.clone()).collect(),
            link_bps,
            max_packet,
            floor_bps,
            applied: HashMap::new(),
            limits: HashMap::new(),
            placement: None,
            minors: Default::default(),
            nodes: Default::default(),
            tables: Default::default(),
            new_tables: Vec::new(),
            installed,
            broken: false,
        };
        for slot in htb.owned.tenants.values() {
            htb.minors.insert(slot.minor);
            htb.nodes.insert(slot.node);
        }
        let built = htb.build(tenants, installed == Installed::Fresh && root.is_some());
        let built = built.and_then(|()| htb.cap_gso(link));
        let built = built.and_then(|()| htb.save());
        if let Err(e) = built {
            // A failed start removes what it installed, and leaves a tree it took over.
            if installed == Installed::Fresh {
                htb.remove();
            } else {
                std::mem::forget(htb);
            }
            return Err(e);
        }
        Ok(htb)
    }

    /// The device's root qdisc, kind and handle (none: the device's default, handle 0).
    fn root_of(rtnl: &mut Rtnl, ifindex: u32, dev: &str) -> Result<Option<(String, u32)>, EnforceError> {
        let answer = rtnl.get_acked(tc::get_root(ifindex), "reading the root qdisc");
        match answer.map_err(socket("reading the root qdisc"))? {
            Ok(None) => Ok(None),
            Ok(Some(body)) => {
                let o = tc::parse_object(&body);
                Ok((o.handle != 0).then_some((o.kind, o.handle)))
            }
            Err(refused) if refused.errno == libc_errno::ENOENT => Ok(None),
            Err(refused) if refused.errno == libc_errno::ENODEV => Err(EnforceError::NoDevice { dev: dev.to_string() }),
            Err(first) => Err(EnforceError::Refused { first, count: 1, total: 1 }),
        }
    }

    /// Checks that the tree is still the device's root (one request): a lost tree or
    /// device is an error, and the tree is then to be repaired.
    pub fn check(&mut self) -> Result<(), EnforceError> {
        let root = Self::root_of(&mut self.rtnl, self.ifindex, &self.dev);
        let lost = |what: String| EnforceError::Lost { dev: self.dev.clone(), what };
        let result = match root {
            Ok(Some((kind, handle))) if kind == "htb" && handle == tc::MAJOR << 16 => return Ok(()),
            Ok(Some((kind, handle))) => Err(lost(format!("the root qdisc is now `{kind} {:x}:`", handle >> 16))),
            Ok(None) => Err(lost("the root qdisc was removed".into())),
            Err(e) => Err(e),
        };
        self.broken = true;
        result
    }

    /// Builds (or rebuilds in place) the whole tree for `tenants` at the floor; a stale
    /// tree of ours with no record is removed first.
    fn build(&mut self, tenants: &[Tenant], stale: bool) -> Result<(), EnforceError> {
        let ix = self.ifindex;
        if stale {
            let _ = self.rtnl.transact(vec![(tc::delete_root(ix), "removing a stale tree".into())]);
        }
        // Tenants of the record that are gone: their objects go (those already gone
        // with them are no error).
        let wanted: std::collections::HashSet<&str> = tenants.iter().map(|t| t.name.as_str()).collect();
        let gone: Vec<String> = self.owned.tenants.keys().filter(|n| !wanted.contains(n.as_str())).cloned().collect();
        let mut deletes: Vec<(Msg, String)> = Vec::new();
        for name in gone {
            if let Some(slot) = self.forget(&name) {
                deletes.extend(self.delete_slot(&name, &slot));
            }
        }
        if !deletes.is_empty() {
            let _ = self.rtnl.transact(deletes);
        }
        let mut batch: Vec<(Msg, String)> = Vec::new();
        if self.installed == Installed::Fresh {
            batch.push((tc::root_qdisc(ix), format!("the HTB root on {}", self.dev)));
        }
        let link = Shape {
            bps: self.link_bps,
            burst: u64::from(self.max_packet) + self.link_bps / 8 / 1000,
            quantum: self.max_packet,
        };
        batch.push((tc::class_msg(ix, tc::LINK_CLASS, tc::MAJOR << 16, link), "the link's class".into()));
        all_ok(self.rtnl.transact(batch).map_err(socket("installing the tree"))?)?;
        self.new_tables.extend([PORT_TABLE, SOURCE_TABLE]);
        self.tables.extend([PORT_TABLE, SOURCE_TABLE]);
        self.make_tables()?;
        let port_link = tc::link(ix, tc::node(tc::ROOT_TABLE, 0, PORT_LINK), PORT_TABLE, 0x0000_ff00, 20);
        let source_link = tc::link(ix, tc::node(tc::ROOT_TABLE, 0, SOURCE_LINK), SOURCE_TABLE, 0x0000_ff00, 12);
        let links = vec![
            (port_link, "the link to the ports' table".to_string()),
            (source_link, "the link to the sources' table".to_string()),
        ];
        all_ok(self.rtnl.transact(links).map_err(socket("installing the tree"))?)?;
        // A tree taken over keeps the classes it has, at the rates they have, until the
        // first quantum sets them: no moment at the floor, none unshaped.
        let kept = if self.installed == Installed::TakenOver { self.class_handles()? } else { Default::default() };
        let mut batch = Vec::new();
        for t in tenants {
            batch.extend(self.tenant_objects(t, &kept)?);
        }
        self.make_tables()?;
        all_ok(self.rtnl.transact(batch).map_err(socket("installing the tenants"))?)?;
        self.check_marks(tenants)
    }

    /// Firewall marks are matched by u32's mark, which a kernel without
    /// `CONFIG_CLS_U32_MARK` accepts and ignores (the filter would then take every
    /// packet): the filters are read back, and a missing mark is an error.
    fn check_marks(&mut self, tenants: &[Tenant]) -> Result<(), EnforceError> {
        let marked: Vec<(&String, u32)> = tenants
            .iter()
            .filter(|t| t.selector.as_ref().is_some_and(|m| m.fwmark.is_some()))
            .filter_map(|t| self.owned.tenants.get(&t.name).map(|s| (&t.name, s.node)))
            .collect();
        let Some(&(first, _)) = marked.first() else { return Ok(()) };
        let filters = self
            .rtnl
            .dump(tc::get_filters(self.ifindex), "reading the filters")
            .map_err(socket("reading the filters"))?
            .map_err(|first| EnforceError::Refused { first, count: 1, total: 1 })?;
        if marked.iter().all(|(_, node)| filters.iter().any(|b| tc::has_mark(b, *node))) {
            return Ok(());
        }
        Err(EnforceError::Tenant {
            tenant: first.clone(),
            reason: "match.fwmark: this kernel cannot classify by firewall mark (it has neither the fw classifier \
                     nor u32 marks, CONFIG_CLS_U32_MARK); select the tenant by dport or src"
                .into(),
        })
    }

    /// A free minor for a new tenant: after the highest in use, else the first gap.
    fn free_minor(&self, tenant: &str) -> Result<u32, EnforceError> {
        let next = self.minors.last().map_or(tc::FIRST_MINOR, |m| m + 1);
        let free = if next <= tc::LAST_MINOR {
            Some(next)
        } else {
            (tc::FIRST_MINOR..=tc::LAST_MINOR).find(|m| !self.minors.contains(m))
        };
        free.ok_or_else(|| EnforceError::Tenant {
            tenant: tenant.to_string(),
            reason: format!("the tree holds at most {} tenants", tc::LAST_MINOR - tc::FIRST_MINOR + 1),
        })
    }

    /// The handles of the classes under our root.
    fn class_handles(&mut self) -> Result<std::collections::HashSet<u32>, EnforceError> {
        let mut handles = std::collections::HashSet::new();
        let ifindex = self.ifindex;
        self.rtnl
            .dump_each(tc::get_classes(ifindex), "reading the classes", |body| {
                if netlink::u32_at(body, 4) == ifindex {
                    handles.insert(netlink::u32_at(body, 8));
                }
            })
            .map_err(socket("reading the classes"))?
            .map_err(|first| EnforceError::Refused { first, count: 1, total: 1 })?;
        Ok(handles)
    }

    /// The messages that make (or replace in place) `t`'s class, leaf queue, tables and
    /// filter, at the floor; its slot recorded. A class in `kept` (of a tree taken over)
    /// stays as it is, with its queue, and its rate is sent at the next [`Htb::apply`].
    fn tenant_objects(
        &mut self,
        t: &Tenant,
        kept: &std::collections::HashSet<u32>,
    ) -> Result<Vec<(Msg, String)>, EnforceError> {
        let ix = self.ifindex;
        let c = classify(t)?;
        let slot = match self.owned.tenants.get(&t.name) {
            Some(s) => s.clone(),
            None => {
                let minor = self.free_minor(&t.name)?;
                let node = self.free_node(&c, &t.name)?;
                Slot { minor, node }
            }
        };
        let mut batch = Vec::new();
        if kept.contains(&tc::class(slot.minor)) {
            self.applied.remove(&slot.minor);
            self.limits.remove(&slot.minor);
        } else {
            let shape = self.shape(self.floor_bps);
            batch.push((
                tc::class_msg(ix, tc::class(slot.minor), tc::LINK_CLASS, shape),
                format!("the class of `{}`", t.name),
            ));
            let limit = self.queue_limit(self.floor_bps, None);
            batch.push((tc::leaf_qdisc(ix, slot.minor, limit), format!("the queue of `{}`", t.name)));
            self.applied.insert(slot.minor, self.floor_bps);
            self.limits.insert(slot.minor, limit);
        }
        if let Some((table, bucket)) = c.leaf {
            if self.tables.insert(table) {
                let first = if table >= SOURCE_LEAVES { SOURCE_TABLE } else { PORT_TABLE };
                let (hoff, high) =
                    if first == SOURCE_TABLE { (12, table - SOURCE_LEAVES) } else { (20, table - PORT_LEAVES) };
                self.new_tables.push(table);
                let to_leaves = tc::link(ix, tc::node(first, high, 1), table, 0x0000_00ff, hoff);
                batch.push((to_leaves, format!("a link to `{}`'s filter", t.name)));
            }
            let _ = bucket;
        }
        batch.push((
            tc::leaf_filter(ix, slot.node, &c.keys, c.mark, tc::class(slot.minor)),
            format!("the filter of `{}`", t.name),
        ));
        self.record(&t.name, slot);
        Ok(batch)
    }

    /// Makes the tables asked for. A table that exists already (a tree taken over or
    /// repaired in place) is refused by u32 ("Key node id cannot be zero"): that is
    /// fine; any other refusal is an error.
    fn make_tables(&mut self) -> Result<(), EnforceError> {
        let ix = self.ifindex;
        let batch: Vec<(Msg, String)> =
            self.new_tables.drain(..).map(|id| (tc::table(ix, id), format!("the filter table {id:x}:"))).collect();
        if batch.is_empty() {
            return Ok(());
        }
        let results = self.rtnl.transact(batch).map_err(socket("making the filter tables"))?;
        all_ok(
            results
                .into_iter()
                .map(|r| r.or_else(|e| if e.errno == libc_errno::EINVAL { Ok(()) } else { Err(e) }))
                .collect(),
        )
    }

    /// A free node for a filter of `c` (in its bucket, or among the root's marks).
    fn free_node(&self, c: &Classify, tenant: &str) -> Result<u32, EnforceError> {
        let (table, bucket, first) = match c.leaf {
            Some((table, bucket)) => (table, bucket, 1),
            None => (tc::ROOT_TABLE, 0, MARK_NODE),
        };
        (first..0xfff).map(|n| tc::node(table, bucket, n)).find(|h| !self.nodes.contains(h)).ok_or_else(|| {
            EnforceError::Tenant { tenant: tenant.to_string(), reason: "no free filter node in its bucket".into() }
        })
    }

    /// The messages that remove a tenant's filter, leaf queue and class.
    fn delete_slot(&self, name: &str, slot: &Slot) -> Vec<(Msg, String)> {
        vec![
            (tc::delete_filter(self.ifindex, slot.node), format!("removing the filter of `{name}`")),
            (tc::delete_class(self.ifindex, slot.minor), format!("removing the class of `{name}`")),
        ]
    }

    /// Caps the device's GSO size at `max_packet` (remembering what it was, once).
    fn cap_gso(&mut self, link: tc::Link) -> Result<(), EnforceError> {
        let over = link.gso > self.max_packet || link.gso_ipv4.is_some_and(|g| g > self.max_packet);
        if !over {
            return Ok(());
        }
        if self.owned.gso.is_none() {
            self.owned.gso = Some((link.gso, link.gso_ipv4));
        }
        let cap = self.max_packet;
        let msg = tc::set_gso(self.ifindex, cap.min(link.gso), link.gso_ipv4.map(|g| cap.min(g)));
        all_ok(
            self.rtnl
                .transact(vec![(msg, format!("capping the GSO size of {} at {cap}", self.dev))])
                .map_err(socket("setting GSO"))?,
        )
    }

    /// Writes the owner file (temporary file, rename).
    fn save(&self) -> Result<(), EnforceError> {
        let bytes = serde_json::to_vec(&self.owned).unwrap_or_default();
        let tmp = self.owner_file.with_extension("tmp");
        std::fs::create_dir_all(OWNER_DIR)
            .and_then(|()| std::fs::write(&tmp, bytes))
            .and_then(|()| std::fs::rename(&tmp, &self.owner_file))
            .map_err(|source| EnforceError::OwnerFile { path: self.owner_file.clone(), source })
    }

    /// Sets every tenant's rate and ceiling (and its queue) where it changed, in one
    /// batch; `rates_bps` in the pool's order. When nothing changed, the tree is checked
    /// instead ([`Htb::check`]): a lost tree is seen at the next quantum either way.
    pub fn apply(&mut self, rates_bps: &[u64]) -> Result<(), EnforceError> {
        let mut batch = Vec::new();
        let mut changed = Vec::new();
        self.place();
        let minors = self.placement.as_ref().map(|p| &p.minors[..]).unwrap_or_default();
        for ((name, &r), minor) in self.order.iter().zip(rates_bps).zip(minors) {
            let Some(minor) = *minor else { continue };
            let bps = r.max(self.floor_bps);
            if self.applied.get(&minor) == Some(&bps) {
                continue;
            }
            let current = self.limits.get(&minor).copied();
            let limit = self.queue_limit(bps, current);
            batch.push((
                tc::class_msg(self.ifindex, tc::class(minor), tc::LINK_CLASS, self.shape(bps)),
                format!("the rate of `{name}`"),
            ));
            if current != Some(limit) {
                batch.push((tc::leaf_qdisc(self.ifindex, minor, limit), format!("the queue of `{name}`")));
            }
            changed.push((minor, bps, limit));
        }
        if batch.is_empty() {
            return self.check();
        }
        let result = self.rtnl.transact(batch).map_err(socket("changing the rates")).and_then(all_ok);
        match &result {
            Ok(()) => {
                for (minor, bps, limit) in changed {
                    self.applied.insert(minor, bps);
                    self.limits.insert(minor, limit);
                }
            }
            Err(_) => {
                // Whatever reached the kernel is not known: everything is sent again.
                self.applied.clear();
                self.limits.clear();
                self.broken = true;
            }
        }
        result
    }

    /// Every tenant's counters, in the pool's order (one dump, read where received).
    pub fn counters(&mut self) -> Result<Vec<Counters>, EnforceError> {
        self.place();
        let ifindex = self.ifindex;
        let Some(Placement { by_class: index, .. }) = &self.placement else { return Ok(Vec::new()) };
        let mut out = vec![Counters::default(); self.order.len()];
        let mut found = 0;
        let dumped = self
            .rtnl
            .dump_each(tc::get_classes(ifindex), "reading the classes", |body| {
                if netlink::u32_at(body, 4) != ifindex {
                    return;
                }
                if let Some(&i) = index.get(&netlink::u32_at(body, 8)) {
                    out[i] = tc::parse_counters(body);
                    found += 1;
                }
            })
            .map_err(socket("reading the classes"))
            .and_then(|r| r.map_err(|first| EnforceError::Refused { first, count: 1, total: 1 }));
        if let Err(e) = dumped {
            self.broken = true;
            return Err(e);
        }
        let wanted = index.len();
        if found < wanted {
            self.broken = true;
            return Err(EnforceError::Lost {
                dev: self.dev.clone(),
                what: format!("{} of {wanted} tenants' classes are missing", wanted - found),
            });
        }
        Ok(out)
    }

    /// Adds a tenant (class, queue, filter) at the floor, last in the pool's order.
    pub fn join(&mut self, t: &Tenant) -> Result<(), EnforceError> {
        let batch = self.tenant_objects(t, &Default::default())?;
        let result = self
            .make_tables()
            .and_then(|()| self.rtnl.transact(batch).map_err(socket("adding a tenant")).and_then(all_ok));
        if let Err(e) = result {
            if let Some(slot) = self.forget(&t.name) {
                let _ = self.rtnl.transact(self.delete_slot(&t.name, &slot));
            }
            return Err(e);
        }
        self.order.push(t.name.clone());
        self.placement = None;
        self.save()
    }

    /// Removes a tenant's class, queue and filter.
    pub fn leave(&mut self, name: &str) -> Result<(), EnforceError> {
        self.order.retain(|n| n != name);
        self.placement = None;
        let Some(slot) = self.forget(name) else { return Ok(()) };
        let result =
            self.rtnl.transact(self.delete_slot(name, &slot)).map_err(socket("removing a tenant")).and_then(all_ok);
        self.save()?;
        result
    }

    /// Whether a fault was seen since the tree was last whole.
    pub fn broken(&self) -> bool {
        self.broken
    }

    /// After a fault: if the device is there (again), the tree is rebuilt in place for
    /// `tenants` and every rate is sent again at the next [`Htb::apply`]. `Ok(false)`
    /// while the device is missing.
    pub fn repair(&mut self, tenants: &[Tenant]) -> Result<bool, EnforceError> {
        let link =
            match self.rtnl.get(tc::get_link(&self.dev), "reading the device").map_err(socket("reading the device"))? {
                Ok(body) => tc::parse_link(&body),
                Err(_) => return Ok(false),
            };
        let moved = link.ifindex != self.ifindex;
        self.ifindex = link.ifindex;
        let root = Self::root_of(&mut self.rtnl, self.ifindex, &self.dev)?;
        match &root {
            Some((kind, handle)) if kind == "htb" && *handle == tc::MAJOR << 16 => {
                self.installed = Installed::TakenOver
            }
            Some((kind, handle)) => {
                return Err(EnforceError::Foreign {
                    dev: self.dev.clone(),
                    qdisc: format!("{kind} {:x}:", handle >> 16),
                })
            }
            None => self.installed = Installed::Fresh,
        }
        if moved || root.is_none() {
            // A new device, or a lost tree: nothing of ours is there.
            self.tables.clear();
        }
        self.applied.clear();
        self.limits.clear();
        self.build(tenants, false)?;
        self.cap_gso(link)?;
        self.save()?;
        self.broken = false;
        Ok(true)
    }

    /// Removes the tree, restores the GSO sizes, removes the owner file.
    fn remove(&mut self) {
        let mut batch = vec![(tc::delete_root(self.ifindex), "removing the tree".to_string())];
        if let Some((gso, ipv4)) = self.owned.gso {
            batch.push((tc::set_gso(self.ifindex, gso, ipv4), "restoring the GSO size".to_string()));
        }
        let _ = self.rtnl.transact(batch);
        let _ = std::fs::remove_file(&self.owner_file);
    }
}

impl Drop for Htb {
    /// The tree, the GSO cap and the owner file go with the service.
    fn drop(&mut self) {
        self.remove();
    }
}
