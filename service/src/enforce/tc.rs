//! The traffic-control objects the enforcer makes, as rtnetlink messages: the HTB root
//! and its classes, each tenant's leaf queue (bfifo), the u32 filters that classify in
//! constant time (two levels of 256-way hash tables on a destination port's bytes or a
//! source address's last two bytes, then one exact match), the link's GSO size, and the
//! readers of what the kernel reports (a device, its root qdisc, the classes' counters).
//!
//! Offsets assume IPv4 headers without options (20 bytes), as `tc`'s own `match ip
//! dport` does.

use super::netlink::{attributes, flag, kind, u32_at, u64_at, Attributes, Msg};

/// `TC_H_ROOT`.
pub const ROOT: u32 = 0xFFFF_FFFF;
/// The root qdisc's major handle.
pub const MAJOR: u32 = 0xfa17;
/// The link's class (`fa17:1`).
pub const LINK_CLASS: u32 = (MAJOR << 16) | 1;
/// The first tenant class's minor.
pub const FIRST_MINOR: u32 = 0x10;
/// The last minor a tenant class may have (its leaf qdisc's major is the same number,
/// and must not be the root's).
pub const LAST_MINOR: u32 = MAJOR - 1;

const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
const TCA_STATS2: u16 = 7;
const TCA_STATS_BASIC: u16 = 1;
const TCA_STATS_QUEUE: u16 = 3;
const TCA_HTB_PARMS: u16 = 1;
const TCA_HTB_INIT: u16 = 2;
const TCA_HTB_RATE64: u16 = 6;
const TCA_HTB_CEIL64: u16 = 7;
const TCA_U32_CLASSID: u16 = 1;
const TCA_U32_HASH: u16 = 2;
const TCA_U32_LINK: u16 = 3;
const TCA_U32_DIVISOR: u16 = 4;
const TCA_U32_SEL: u16 = 5;
const TCA_U32_MARK: u16 = 10;
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFLA_GSO_MAX_SIZE: u16 = 41;
const IFLA_GSO_IPV4_MAX_SIZE: u16 = 63;
const TC_LINKLAYER_ETHERNET: u8 = 1;
const TC_U32_TERMINAL: u8 = 1;
const ETH_P_IP: u16 = 0x0800;
/// Every filter of the tree sits at this priority (one u32 instance, one root table).
const FILTER_PRIO: u32 = 1;

/// A class's handle from its minor.
pub fn class(minor: u32) -> u32 {
    (MAJOR << 16) | minor
}

/// The handle of a tenant's leaf qdisc.
pub fn leaf(minor: u32) -> u32 {
    minor << 16
}

/// One HTB class's parameters: rate and ceiling (bits per second), the burst (bytes a
/// full bucket holds), and the quantum (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Rate and ceiling.
    pub bps: u64,
    /// Bucket depth, bytes.
    pub burst: u64,
    /// DRR quantum, bytes.
    pub quantum: u32,
}

/// HTB's `tc_htb_opt` for `shape`, rate and ceiling equal.
fn htb_opt(shape: Shape) -> Vec<u8> {
    let bytes_per_sec = (shape.bps / 8).max(1);
    let rate32 = u32::try_from(bytes_per_sec).unwrap_or(u32::MAX);
    // The bucket's depth in psched ticks (64 ns): the time the burst takes at the rate.
    let ticks = u32::try_from((u128::from(shape.burst) * 1_000_000_000 / u128::from(bytes_per_sec)) >> 6)
        .unwrap_or(u32::MAX)
        .max(1);
    let mut v = Vec::with_capacity(44);
    for _ in 0..2 {
        // tc_ratespec: cell_log, linklayer, overhead, cell_align, mpu, rate.
        v.extend_from_slice(&[0, TC_LINKLAYER_ETHERNET]);
        v.extend_from_slice(&0u16.to_ne_bytes());
        v.extend_from_slice(&0i16.to_ne_bytes());
        v.extend_from_slice(&0u16.to_ne_bytes());
        v.extend_from_slice(&rate32.to_ne_bytes());
    }
    for x in [ticks, ticks, shape.quantum, 0, 0] {
        v.extend_from_slice(&x.to_ne_bytes());
    }
    v
}

fn with_htb_options(msg: Msg, shape: Shape) -> Msg {
    let bytes_per_sec = (shape.bps / 8).max(1);
    let mut m = msg.string(TCA_KIND, "htb").nest(TCA_OPTIONS).attr(TCA_HTB_PARMS, &htb_opt(shape));
    if bytes_per_sec > u64::from(u32::MAX) {
        m = m.attr(TCA_HTB_RATE64, &bytes_per_sec.to_ne_bytes()).attr(TCA_HTB_CEIL64, &bytes_per_sec.to_ne_bytes());
    }
    m.end()
}

/// The root HTB qdisc (unclassified traffic passes directly).
pub fn root_qdisc(ifindex: u32) -> Msg {
    // tc_htb_glob: version 3, rate2quantum 10, default class 0 (direct), debug, direct.
    let mut glob = Vec::new();
    for x in [3u32, 10, 0, 0, 0] {
        glob.extend_from_slice(&x.to_ne_bytes());
    }
    Msg::new(kind::NEW_QDISC, flag::CREATE | flag::REPLACE)
        .tcmsg(ifindex, MAJOR << 16, ROOT, 0)
        .string(TCA_KIND, "htb")
        .nest(TCA_OPTIONS)
        .attr(TCA_HTB_INIT, &glob)
        .end()
}

/// Deletes the root qdisc (and everything under it).
pub fn delete_root(ifindex: u32) -> Msg {
    Msg::new(kind::DEL_QDISC, 0).tcmsg(ifindex, MAJOR << 16, ROOT, 0)
}

/// A class under `parent` (made, or changed where it exists).
pub fn class_msg(ifindex: u32, handle: u32, parent: u32, shape: Shape) -> Msg {
    with_htb_options(Msg::new(kind::NEW_CLASS, flag::CREATE | flag::REPLACE).tcmsg(ifindex, handle, parent, 0), shape)
}

/// Deletes a class.
pub fn delete_class(ifindex: u32, minor: u32) -> Msg {
    Msg::new(kind::DEL_CLASS, 0).tcmsg(ifindex, class(minor), LINK_CLASS, 0)
}

/// A tenant's leaf queue: a byte FIFO of `limit` bytes (made, or changed).
pub fn leaf_qdisc(ifindex: u32, minor: u32, limit: u32) -> Msg {
    Msg::new(kind::NEW_QDISC, flag::CREATE | flag::REPLACE)
        .tcmsg(ifindex, leaf(minor), class(minor), 0)
        .string(TCA_KIND, "bfifo")
        .attr(TCA_OPTIONS, &limit.to_ne_bytes())
}

/// One 32-bit key of a u32 selector: `(word at off) & mask == value` (network order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// Mask, host order.
    pub mask: u32,
    /// Value, host order.
    pub value: u32,
    /// Offset in the IP header, bytes.
    pub off: i32,
}

/// A u32 selector: its keys, the hash of the next table (`hmask` on the word at
/// `hoff`), and whether a match ends the search.
fn selector(keys: &[Key], terminal: bool, hmask: u32, hoff: u16) -> Vec<u8> {
    let mut v = vec![if terminal { TC_U32_TERMINAL } else { 0 }, 0, u8::try_from(keys.len()).unwrap_or(u8::MAX), 0];
    // offmask, off, offoff, hoff, hmask (network order).
    v.extend_from_slice(&0u16.to_ne_bytes());
    v.extend_from_slice(&0u16.to_ne_bytes());
    v.extend_from_slice(&0u16.to_ne_bytes());
    v.extend_from_slice(&hoff.to_ne_bytes());
    v.extend_from_slice(&hmask.to_be_bytes());
    for k in keys {
        v.extend_from_slice(&k.mask.to_be_bytes());
        v.extend_from_slice(&(k.value & k.mask).to_be_bytes());
        v.extend_from_slice(&k.off.to_ne_bytes());
        v.extend_from_slice(&0i32.to_ne_bytes());
    }
    v
}

fn filter(kind_: u16, flags: u16, ifindex: u32, handle: u32) -> Msg {
    let info = (FILTER_PRIO << 16) | u32::from(ETH_P_IP.to_be());
    Msg::new(kind_, flags).tcmsg(ifindex, handle, MAJOR << 16, info)
}

/// A u32 node handle: table, bucket, node.
pub fn node(table: u32, bucket: u32, n: u32) -> u32 {
    (table << 20) | (bucket << 12) | n
}

/// The root table of the tree's u32 filters.
pub const ROOT_TABLE: u32 = 0x800;

/// A hash table of 256 buckets.
pub fn table(ifindex: u32, id: u32) -> Msg {
    filter(kind::NEW_FILTER, flag::CREATE | flag::REPLACE, ifindex, id << 20)
        .string(TCA_KIND, "u32")
        .nest(TCA_OPTIONS)
        .u32(TCA_U32_DIVISOR, 256)
        .end()
}

/// A node at `handle` that sends every packet on to table `to`, in the bucket of the
/// byte `hmask` picks out of the word at `hoff`.
pub fn link(ifindex: u32, handle: u32, to: u32, hmask: u32, hoff: u16) -> Msg {
    let sel = selector(&[Key { mask: 0, value: 0, off: 0 }], false, hmask, hoff);
    filter(kind::NEW_FILTER, flag::CREATE | flag::REPLACE, ifindex, handle)
        .string(TCA_KIND, "u32")
        .nest(TCA_OPTIONS)
        .u32(TCA_U32_HASH, handle & 0xFFFF_F000)
        .u32(TCA_U32_LINK, to << 20)
        .attr(TCA_U32_SEL, &sel)
        .end()
}

/// A node at `handle` that sends a packet matching `keys` (and, if given, the firewall
/// mark) to the class `classid`.
pub fn leaf_filter(ifindex: u32, handle: u32, keys: &[Key], mark: Option<u32>, classid: u32) -> Msg {
    let keys: Vec<Key> = if keys.is_empty() { vec![Key { mask: 0, value: 0, off: 0 }] } else { keys.to_vec() };
    let mut m = filter(kind::NEW_FILTER, flag::CREATE | flag::REPLACE, ifindex, handle)
        .string(TCA_KIND, "u32")
        .nest(TCA_OPTIONS)
        .u32(TCA_U32_HASH, handle & 0xFFFF_F000)
        .u32(TCA_U32_CLASSID, classid)
        .attr(TCA_U32_SEL, &selector(&keys, true, 0, 0));
    if let Some(mark) = mark {
        // tc_u32_mark: value, mask, success counter.
        let mut v = mark.to_ne_bytes().to_vec();
        v.extend_from_slice(&u32::MAX.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        m = m.attr(TCA_U32_MARK, &v);
    }
    m.end()
}

/// Deletes the u32 node at `handle`.
pub fn delete_filter(ifindex: u32, handle: u32) -> Msg {
    filter(kind::DEL_FILTER, 0, ifindex, handle).string(TCA_KIND, "u32")
}

/// Asks for the u32 filters of the tree.
pub fn get_filters(ifindex: u32) -> Msg {
    let info = (FILTER_PRIO << 16) | u32::from(ETH_P_IP.to_be());
    Msg::new(kind::GET_FILTER, 0).tcmsg(ifindex, 0, MAJOR << 16, info)
}

/// Whether a filter message's body is the node at `handle` and carries a mark match
/// (a kernel without `CONFIG_CLS_U32_MARK` accepts the attribute and drops it).
pub fn has_mark(body: &[u8], handle: u32) -> bool {
    u32_at(body, 8) == handle
        && attributes(body.get(20..).unwrap_or_default())
            .iter()
            .filter(|(t, _)| *t == TCA_OPTIONS)
            .any(|(_, v)| attributes(v).iter().any(|(t, _)| *t == TCA_U32_MARK))
}

/// Asks for the link named `name`.
pub fn get_link(name: &str) -> Msg {
    Msg::new(kind::GET_LINK, 0).ifinfomsg(0).string(IFLA_IFNAME, name)
}

/// Sets a link's GSO sizes (both the general and the IPv4 one).
pub fn set_gso(ifindex: u32, size: u32, ipv4: Option<u32>) -> Msg {
    let m = Msg::new(kind::NEW_LINK, 0).ifinfomsg(ifindex).u32(IFLA_GSO_MAX_SIZE, size);
    match ipv4 {
        Some(v4) => m.u32(IFLA_GSO_IPV4_MAX_SIZE, v4),
        None => m,
    }
}

/// What a link message says of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// Its index.
    pub ifindex: u32,
    /// Its MTU.
    pub mtu: u32,
    /// Its GSO size, and the IPv4 one where the kernel has it.
    pub gso: u32,
    /// The IPv4 GSO size.
    pub gso_ipv4: Option<u32>,
}

/// Reads a link message's body.
pub fn parse_link(body: &[u8]) -> Link {
    let ifindex = u32_at(body, 4);
    let attrs = attributes(body.get(16..).unwrap_or_default());
    let get = |t: u16| attrs.iter().find(|(ty, _)| *ty == t).map(|(_, v)| u32_at(v, 0));
    Link {
        ifindex,
        mtu: get(IFLA_MTU).unwrap_or(1500),
        gso: get(IFLA_GSO_MAX_SIZE).unwrap_or(65536),
        gso_ipv4: get(IFLA_GSO_IPV4_MAX_SIZE),
    }
}

/// Asks for a device's root qdisc (one answer).
pub fn get_root(ifindex: u32) -> Msg {
    Msg::new(kind::GET_QDISC, 0).tcmsg(ifindex, 0, ROOT, 0)
}

/// Asks for every qdisc (of every device: the caller keeps its own).
pub fn get_qdiscs(ifindex: u32) -> Msg {
    Msg::new(kind::GET_QDISC, 0).tcmsg(ifindex, 0, 0, 0)
}

/// Asks for the classes of our HTB root on a device, with their counters (the parent
/// names the qdisc: the kernel then skips the leaf queues, which have no classes).
pub fn get_classes(ifindex: u32) -> Msg {
    Msg::new(kind::GET_CLASS, 0).tcmsg(ifindex, 0, MAJOR << 16, 0)
}

/// A qdisc or class message: the device, handle, parent and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// The device.
    pub ifindex: u32,
    /// Its handle.
    pub handle: u32,
    /// Its parent.
    pub parent: u32,
    /// `htb`, `bfifo`, ...
    pub kind: String,
}

/// Reads a traffic-control message's body.
pub fn parse_object(body: &[u8]) -> Object {
    let attrs = attributes(body.get(20..).unwrap_or_default());
    let kind_ = attrs
        .iter()
        .find(|(t, _)| *t == TCA_KIND)
        .map(|(_, v)| String::from_utf8_lossy(v).trim_end_matches('\0').to_string())
        .unwrap_or_default();
    Object { ifindex: u32_at(body, 4), handle: u32_at(body, 8), parent: u32_at(body, 12), kind: kind_ }
}

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

/// The counters of a class message's body (`TCA_STATS2`).
pub fn parse_counters(body: &[u8]) -> Counters {
    let mut c = Counters::default();
    for (t, v) in Attributes::of(body.get(20..).unwrap_or_default()) {
        if t != TCA_STATS2 {
            continue;
        }
        for (s, w) in Attributes::of(v) {
            match s {
                TCA_STATS_BASIC => c.bytes = u64_at(w, 0),
                TCA_STATS_QUEUE => {
                    c.backlog = u64::from(u32_at(w, 4));
                    c.drops = u64::from(u32_at(w, 8));
                    c.overlimits = u64::from(u32_at(w, 16));
                }
                _ => {}
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn htb_options_carry_the_rate_the_burst_in_ticks_and_the_quantum() {
        let v = htb_opt(Shape { bps: 8_000_000, burst: 3_000, quantum: 3_028 });
        assert_eq!(v.len(), 44);
        // rate and ceil: Ethernet link layer, 1,000,000 bytes per second.
        for at in [0, 12] {
            assert_eq!(v[at + 1], TC_LINKLAYER_ETHERNET);
            assert_eq!(u32_at(&v, at + 8), 1_000_000);
        }
        // 3,000 bytes at 1 MB/s: 3 ms = 46,875 ticks of 64 ns.
        assert_eq!((u32_at(&v, 24), u32_at(&v, 28), u32_at(&v, 32)), (46_875, 46_875, 3_028));
    }

    #[test]
    fn selectors_and_handles_are_laid_out_as_u32_reads_them() {
        let sel = selector(&[Key { mask: 0xffff, value: 5201, off: 20 }], true, 0x0000_ff00, 20);
        assert_eq!(sel.len(), 16 + 16);
        assert_eq!((sel[0], sel[2]), (TC_U32_TERMINAL, 1));
        assert_eq!(u16::from_ne_bytes([sel[10], sel[11]]), 20);
        assert_eq!(&sel[12..16], &0x0000_ff00u32.to_be_bytes());
        assert_eq!(&sel[16..20], &0xffffu32.to_be_bytes());
        assert_eq!(&sel[20..24], &5201u32.to_be_bytes());
        assert_eq!(node(0x800, 0, 1), 0x8000_0001);
        assert_eq!(node(0x114, 0x51, 2), 0x1145_1002);
        assert_eq!(class(0x10), 0xfa17_0010);
    }

    #[test]
    fn counters_come_from_the_second_statistics() {
        let mut basic = 123_456_789u64.to_ne_bytes().to_vec();
        basic.extend_from_slice(&[0; 8]);
        let mut queue = Vec::new();
        for x in [1u32, 3_000, 7, 0, 11] {
            queue.extend_from_slice(&x.to_ne_bytes());
        }
        let body = Msg::new(0, 0)
            .tcmsg(2, class(0x10), LINK_CLASS, 0)
            .string(TCA_KIND, "htb")
            .nest(TCA_STATS2)
            .attr(TCA_STATS_BASIC, &basic)
            .attr(TCA_STATS_QUEUE, &queue)
            .end();
        let bytes = body_of(body);
        assert_eq!(parse_counters(&bytes), Counters { bytes: 123_456_789, drops: 7, overlimits: 11, backlog: 3_000 });
        assert_eq!(
            parse_object(&bytes),
            Object { ifindex: 2, handle: class(0x10), parent: LINK_CLASS, kind: "htb".into() }
        );
    }

    /// A built message's body (what the kernel's answer carries after the header).
    fn body_of(m: Msg) -> Vec<u8> {
        super::super::netlink::finish_for_tests(m)[16..].to_vec()
    }
}
