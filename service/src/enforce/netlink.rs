//! A small rtnetlink client for traffic control: messages built by hand (the kernel's
//! fixed structures and attributes, `linux/rtnetlink.h`, `linux/pkt_sched.h`,
//! `linux/pkt_cls.h`), sent in batches with one acknowledgement each, and dumps read
//! back. The socket is `netlink-sys`'s; the formats are the kernel's ABI, stable, and
//! small enough that a typed library would add more than it saves (none of the
//! maintained ones builds HTB's options).
//!
//! Errors carry the kernel's own message when it gives one (extended acks), and which
//! message of a batch failed.

use std::io;

use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

/// Message types.
pub mod kind {
    /// `RTM_NEWLINK` (a link's attributes set).
    pub const NEW_LINK: u16 = 16;
    /// `RTM_GETLINK`.
    pub const GET_LINK: u16 = 18;
    /// `RTM_NEWQDISC`.
    pub const NEW_QDISC: u16 = 36;
    /// `RTM_DELQDISC`.
    pub const DEL_QDISC: u16 = 37;
    /// `RTM_GETQDISC`.
    pub const GET_QDISC: u16 = 38;
    /// `RTM_NEWTCLASS`.
    pub const NEW_CLASS: u16 = 40;
    /// `RTM_DELTCLASS`.
    pub const DEL_CLASS: u16 = 41;
    /// `RTM_GETTCLASS`.
    pub const GET_CLASS: u16 = 42;
    /// `RTM_NEWTFILTER`.
    pub const NEW_FILTER: u16 = 44;
    /// `RTM_DELTFILTER`.
    pub const DEL_FILTER: u16 = 45;
    /// `RTM_GETTFILTER`.
    pub const GET_FILTER: u16 = 46;
}

/// Message flags.
pub mod flag {
    /// `NLM_F_REQUEST`.
    pub const REQUEST: u16 = 0x1;
    /// `NLM_F_MULTI`.
    pub const MULTI: u16 = 0x2;
    /// `NLM_F_ACK`.
    pub const ACK: u16 = 0x4;
    /// `NLM_F_ECHO` (a `GET` of one qdisc is answered to the asker only with it).
    pub const ECHO: u16 = 0x8;
    /// `NLM_F_DUMP`.
    pub const DUMP: u16 = 0x300;
    /// `NLM_F_REPLACE`.
    pub const REPLACE: u16 = 0x100;
    /// `NLM_F_EXCL`.
    pub const EXCL: u16 = 0x200;
    /// `NLM_F_CREATE`.
    pub const CREATE: u16 = 0x400;
    /// `NLM_F_ACK_TLVS` (on an error message: extended ack attributes follow).
    pub const ACK_TLVS: u16 = 0x200;
    /// `NLM_F_CAPPED` (on an error message: only the request's header follows).
    pub const CAPPED: u16 = 0x100;
}

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSGERR_ATTR_MSG: u16 = 1;
const HEADER: usize = 16;

/// Sends at most this many bytes, and this many messages, in one datagram: below the
/// socket's send buffer, and few enough that every acknowledgement fits its receive
/// buffer (an ack is small, but the kernel counts each as a whole buffer; one that
/// does not fit is dropped, and its answer lost).
const CHUNK: usize = 64 << 10;
const CHUNK_MESSAGES: usize = 256;

/// How long the kernel may take to answer.
const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A message being built: the header, a fixed structure, attributes (nested ones
/// closed with [`Msg::end`]).
#[derive(Debug, Clone)]
pub struct Msg {
    buf: Vec<u8>,
    nests: Vec<usize>,
}

impl Msg {
    /// A message of type `ty` with `flags` (`REQUEST` is added).
    pub fn new(ty: u16, flags: u16) -> Msg {
        let mut buf = vec![0u8; HEADER];
        buf[4..6].copy_from_slice(&ty.to_ne_bytes());
        buf[6..8].copy_from_slice(&(flags | flag::REQUEST).to_ne_bytes());
        Msg { buf, nests: Vec::new() }
    }

    /// The `tcmsg` of a traffic-control message: `AF_UNSPEC`, the device, the object's
    /// handle, its parent, and `info` (a filter's priority and protocol).
    pub fn tcmsg(mut self, ifindex: u32, handle: u32, parent: u32, info: u32) -> Msg {
        self.buf.extend_from_slice(&[0, 0, 0, 0]);
        self.buf.extend_from_slice(&ifindex.to_ne_bytes());
        self.buf.extend_from_slice(&handle.to_ne_bytes());
        self.buf.extend_from_slice(&parent.to_ne_bytes());
        self.buf.extend_from_slice(&info.to_ne_bytes());
        self
    }

    /// The `ifinfomsg` of a link message.
    pub fn ifinfomsg(mut self, ifindex: u32) -> Msg {
        self.buf.extend_from_slice(&[0, 0, 0, 0]);
        self.buf.extend_from_slice(&ifindex.to_ne_bytes());
        self.buf.extend_from_slice(&[0; 8]);
        self
    }

    fn pad(&mut self) {
        while !self.buf.len().is_multiple_of(4) {
            self.buf.push(0);
        }
    }

    /// An attribute of type `ty` with `value`.
    pub fn attr(mut self, ty: u16, value: &[u8]) -> Msg {
        let len = u16::try_from(4 + value.len()).unwrap_or(u16::MAX);
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&ty.to_ne_bytes());
        self.buf.extend_from_slice(value);
        self.pad();
        self
    }

    /// A `u32` attribute.
    pub fn u32(self, ty: u16, value: u32) -> Msg {
        self.attr(ty, &value.to_ne_bytes())
    }

    /// A string attribute (NUL-terminated).
    pub fn string(self, ty: u16, value: &str) -> Msg {
        let mut v = value.as_bytes().to_vec();
        v.push(0);
        self.attr(ty, &v)
    }

    /// Opens a nested attribute of type `ty`.
    pub fn nest(mut self, ty: u16) -> Msg {
        self.nests.push(self.buf.len());
        self.buf.extend_from_slice(&[0, 0]);
        self.buf.extend_from_slice(&ty.to_ne_bytes());
        self
    }

    /// Closes the innermost nested attribute.
    pub fn end(mut self) -> Msg {
        if let Some(at) = self.nests.pop() {
            let len = u16::try_from(self.buf.len() - at).unwrap_or(u16::MAX);
            self.buf[at..at + 2].copy_from_slice(&len.to_ne_bytes());
        }
        self
    }

    /// The message's bytes with its length and sequence number set.
    fn finish(mut self, seq: u32) -> Vec<u8> {
        let len = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        self.buf[0..4].copy_from_slice(&len.to_ne_bytes());
        self.buf[8..12].copy_from_slice(&seq.to_ne_bytes());
        self.buf
    }
}

/// Why a message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {}{}", io::Error::from_raw_os_error(*errno), message.as_ref().map(|m| format!(" ({m})")).unwrap_or_default())]
pub struct Refused {
    /// What the message did, as the caller named it.
    pub what: String,
    /// The error number the kernel answered.
    pub errno: i32,
    /// The kernel's own message, if it gave one.
    pub message: Option<String>,
}

/// The socket.
pub struct Rtnl {
    socket: Socket,
    seq: u32,
    buf: Vec<u8>,
}

/// The attributes of a message body: `(type, value)` in order, up to the first short
/// or broken one.
pub fn attributes(body: &[u8]) -> Vec<(u16, &[u8])> {
    Attributes { body, at: 0 }.collect()
}

/// The attributes of a message body, one at a time (see [`attributes`]).
pub struct Attributes<'a> {
    body: &'a [u8],
    at: usize,
}

impl<'a> Attributes<'a> {
    /// Over `body`.
    pub fn of(body: &'a [u8]) -> Self {
        Attributes { body, at: 0 }
    }
}

impl<'a> Iterator for Attributes<'a> {
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let (body, at) = (self.body, self.at);
        if at + 4 > body.len() {
            return None;
        }
        let len = u16::from_ne_bytes([body[at], body[at + 1]]) as usize;
        let ty = u16::from_ne_bytes([body[at + 2], body[at + 3]]) & 0x3fff;
        if len < 4 || at + len > body.len() {
            self.at = body.len();
            return None;
        }
        self.at = at + ((len + 3) & !3);
        Some((ty, &body[at + 4..at + len]))
    }
}

/// An answer's body, or the kernel's refusal if it is an error message (an errno of 0
/// is an acknowledgement: its body is given).
fn answer<'a>(ty: u16, body: &'a [u8], what: &str) -> Result<&'a [u8], Refused> {
    if ty == NLMSG_ERROR {
        let errno = -(u32_at(body, 0) as i32);
        if errno != 0 {
            return Err(Refused { what: what.to_string(), errno, message: None });
        }
    }
    Ok(body)
}

/// A `u32` at `at` of `bytes` (0 if short).
pub fn u32_at(bytes: &[u8], at: usize) -> u32 {
    bytes.get(at..at + 4).map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

/// A `u64` at `at` of `bytes` (0 if short).
pub fn u64_at(bytes: &[u8], at: usize) -> u64 {
    bytes.get(at..at + 8).map_or(0, |b| u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
}

impl Rtnl {
    /// A route socket in this process's network namespace, with extended acks.
    pub fn open() -> io::Result<Rtnl> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        // Errors carry the kernel's message; acks do not repeat the request.
        let _ = socket.set_ext_ack(true);
        let _ = socket.set_cap_ack(true);
        // Room for a whole chunk's acks and a dump's datagrams.
        if rustix::net::sockopt::set_socket_recv_buffer_size_force(&socket, 4 << 20).is_err() {
            let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&socket, 4 << 20);
        }
        Ok(Rtnl { socket, seq: 0, buf: vec![0; 1 << 20] })
    }

    /// Sends `batch` (each message acknowledged) and returns, in order, each message's
    /// outcome, named by `what`. Large batches go in datagrams of at most 96 KiB, each
    /// answered before the next is sent.
    pub fn transact(&mut self, batch: Vec<(Msg, String)>) -> io::Result<Vec<Result<(), Refused>>> {
        let mut results: Vec<Result<(), Refused>> = Vec::with_capacity(batch.len());
        let mut pending: Vec<String> = Vec::new();
        let mut datagram: Vec<u8> = Vec::new();
        let first = self.seq.wrapping_add(1);
        for (msg, what) in batch {
            self.seq = self.seq.wrapping_add(1);
            let bytes = flagged(msg, flag::ACK | flag::ECHO).finish(self.seq);
            if !datagram.is_empty() && (datagram.len() + bytes.len() > CHUNK || pending.len() >= CHUNK_MESSAGES) {
                self.exchange(&datagram, &mut pending, first, &mut results)?;
                datagram.clear();
            }
            datagram.extend_from_slice(&bytes);
            pending.push(what);
        }
        if !datagram.is_empty() {
            self.exchange(&datagram, &mut pending, first, &mut results)?;
        }
        Ok(results)
    }

    /// Sends one datagram of `pending.len()` messages and reads an ack for each.
    fn exchange(
        &mut self,
        datagram: &[u8],
        pending: &mut Vec<String>,
        first: u32,
        results: &mut Vec<Result<(), Refused>>,
    ) -> io::Result<()> {
        self.socket.send(datagram, 0)?;
        let base = results.len();
        let mut answered = vec![None; pending.len()];
        let mut left = pending.len();
        while left > 0 {
            let n = self.recv()?;
            let mut at = 0;
            while at + HEADER <= n {
                let len = u32_at(&self.buf, at) as usize;
                if len < HEADER || at + len > n {
                    break;
                }
                let ty = u16::from_ne_bytes([self.buf[at + 4], self.buf[at + 5]]);
                let flags = u16::from_ne_bytes([self.buf[at + 6], self.buf[at + 7]]);
                let seq = u32_at(&self.buf, at + 8);
                if ty == NLMSG_ERROR {
                    let k = seq.wrapping_sub(first) as usize;
                    if let Some(slot) = k.checked_sub(base).and_then(|k| answered.get_mut(k)) {
                        if slot.is_none() {
                            left -= 1;
                        }
                        let errno = -(u32_at(&self.buf, at + HEADER) as i32);
                        // The original request: its header (a capped ack, or any success),
                        // or the whole request; then the TLVs.
                        let inner = if flags & flag::CAPPED != 0 || errno == 0 {
                            HEADER
                        } else {
                            (u32_at(&self.buf, at + HEADER + 4) as usize + 3) & !3
                        };
                        let tlvs = self.buf.get(at + HEADER + 4 + inner..at + len).unwrap_or_default();
                        let message = (flags & flag::ACK_TLVS != 0)
                            .then(|| {
                                attributes(tlvs)
                                    .into_iter()
                                    .find(|(t, _)| *t == NLMSGERR_ATTR_MSG)
                                    .map(|(_, v)| String::from_utf8_lossy(v).trim_end_matches('\0').to_string())
                            })
                            .flatten();
                        *slot = Some((errno, message));
                    }
                }
                at += (len + 3) & !3;
            }
        }
        for (what, answer) in pending.drain(..).zip(answered) {
            results.push(match answer {
                Some((0, _)) | None => Ok(()),
                Some((errno, message)) => Err(Refused { what, errno, message }),
            });
        }
        Ok(())
    }

    /// One datagram from the kernel, within [`ANSWER_TIMEOUT`]. A lost answer (the
    /// receive buffer overran) is an error, never a wait for ever.
    fn recv(&mut self) -> io::Result<usize> {
        let mut fds = [rustix::event::PollFd::new(&self.socket, rustix::event::PollFlags::IN)];
        let timeout = rustix::event::Timespec::try_from(ANSWER_TIMEOUT)
            .unwrap_or(rustix::event::Timespec { tv_sec: 5, tv_nsec: 0 });
        if rustix::event::poll(&mut fds, Some(&timeout))? == 0 {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "the kernel did not answer within 5 s"));
        }
        let mut slice = &mut self.buf[..];
        self.socket.recv(&mut slice, 0)
    }

    /// One request answered by one message (a `GET` of one object): its body, or why not.
    pub fn get(&mut self, request: Msg, what: &str) -> io::Result<Result<Vec<u8>, Refused>> {
        let seq = self.send(request)?;
        self.answers(seq, |ty, body| Some(answer(ty, body, what).map(<[u8]>::to_vec)))
    }

    /// One request, echoed and acknowledged: the answer's body if the kernel sent one
    /// (a `GET` of a device's root qdisc is sent to the asker only when echo is asked
    /// for, and not at all for a built-in default), or why not. Reads up to the
    /// acknowledgement, so that nothing of it is left for the next request.
    pub fn get_acked(&mut self, request: Msg, what: &str) -> io::Result<Result<Option<Vec<u8>>, Refused>> {
        let seq = self.send(flagged(request, flag::ACK | flag::ECHO))?;
        let mut body = None;
        self.answers(seq, |ty, b| match answer(ty, b, what) {
            // The acknowledgement (an error message of errno 0) ends it.
            Ok(_) if ty == NLMSG_ERROR => Some(Ok(body.take())),
            Ok(b) => {
                body = Some(b.to_vec());
                None
            }
            Err(refused) => Some(Err(refused)),
        })
    }

    /// Sends `request` with the next sequence number; that number.
    fn send(&mut self, request: Msg) -> io::Result<u32> {
        self.seq = self.seq.wrapping_add(1);
        self.socket.send(&request.finish(self.seq), 0)?;
        Ok(self.seq)
    }

    /// Hands each message answering `seq` (its type and body) to `on` until `on`
    /// returns a result.
    fn answers<R>(&mut self, seq: u32, mut on: impl FnMut(u16, &[u8]) -> Option<R>) -> io::Result<R> {
        loop {
            let n = self.recv()?;
            let mut at = 0;
            while at + HEADER <= n {
                let len = u32_at(&self.buf, at) as usize;
                if len < HEADER || at + len > n {
                    break;
                }
                let ty = u16::from_ne_bytes([self.buf[at + 4], self.buf[at + 5]]);
                if u32_at(&self.buf, at + 8) == seq {
                    if let Some(r) = on(ty, &self.buf[at + HEADER..at + len]) {
                        return Ok(r);
                    }
                }
                at += (len + 3) & !3;
            }
        }
    }

    /// A dump: the bodies (after the header) of every answer to `request`.
    pub fn dump(&mut self, request: Msg, what: &str) -> io::Result<Result<Vec<Vec<u8>>, Refused>> {
        let mut out = Vec::new();
        Ok(self.dump_each(request, what, |body| out.push(body.to_vec()))?.map(|()| out))
    }

    /// A dump, each answer's body handed to `each` where it was received.
    pub fn dump_each(
        &mut self,
        request: Msg,
        what: &str,
        mut each: impl FnMut(&[u8]),
    ) -> io::Result<Result<(), Refused>> {
        let seq = self.send(flagged(request, flag::DUMP))?;
        self.answers(seq, |ty, body| match (ty, answer(ty, body, what)) {
            (NLMSG_DONE, _) => Some(Ok(())),
            (_, Err(refused)) => Some(Err(refused)),
            // An acknowledgement within a dump says nothing.
            (NLMSG_ERROR, Ok(_)) => None,
            (_, Ok(body)) => {
                each(body);
                None
            }
        })
    }
}

/// `msg` with `extra` flags set in its header.
fn flagged(mut msg: Msg, extra: u16) -> Msg {
    let f = u16::from_ne_bytes([msg.buf[6], msg.buf[7]]) | extra;
    msg.buf[6..8].copy_from_slice(&f.to_ne_bytes());
    msg
}

/// A built message's bytes (sequence 0), for the tests of the message builders.
#[cfg(test)]
pub fn finish_for_tests(m: Msg) -> Vec<u8> {
    m.finish(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_laid_out_as_the_kernel_reads_them() {
        let m = Msg::new(kind::NEW_CLASS, flag::CREATE)
            .tcmsg(7, 0xfa17_0010, 0xfa17_0001, 0)
            .string(1, "htb")
            .nest(2)
            .u32(1, 0xdead_beef)
            .end()
            .finish(42);
        assert_eq!(u32_at(&m, 0) as usize, m.len());
        assert_eq!(u16::from_ne_bytes([m[4], m[5]]), kind::NEW_CLASS);
        assert_eq!(u16::from_ne_bytes([m[6], m[7]]), flag::CREATE | flag::REQUEST);
        assert_eq!(u32_at(&m, 8), 42);
        // tcmsg: family and padding, ifindex, handle, parent, info.
        assert_eq!(&m[16..20], &[0, 0, 0, 0]);
        assert_eq!((u32_at(&m, 20), u32_at(&m, 24), u32_at(&m, 28), u32_at(&m, 32)), (7, 0xfa17_0010, 0xfa17_0001, 0));
        let attrs = attributes(&m[36..]);
        assert_eq!(attrs[0], (1, &b"htb\0"[..]));
        assert_eq!(attrs[1].0, 2);
        assert_eq!(attributes(attrs[1].1), [(1, &0xdead_beefu32.to_ne_bytes()[..])]);
        // "htb\0" is 8 bytes with its header; the nest is 4 + 8.
        assert_eq!(m.len(), 36 + 8 + 12);
    }

    #[test]
    fn attributes_stop_at_a_short_or_broken_one() {
        let m = Msg::new(0, 0).u32(3, 9).finish(1);
        let mut body = m[16..].to_vec();
        body.extend_from_slice(&[200, 0, 1, 0]);
        assert_eq!(attributes(&body), [(3, &9u32.to_ne_bytes()[..])]);
        assert!(attributes(&[1, 0]).is_empty());
    }
}
