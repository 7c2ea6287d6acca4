//! The device top level through its buses: quanta, credits and faults driven the way a
//! shell drives them (handshakes with random stalls), against the software. The
//! decoder against the register map is tested beside the block (`src/axi_top.rs`).

#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{random_pool, random_quantum, software};
use fairshare_abi as abi;
use fairshare_hdl::axi_top::{RESP_OKAY, RESP_SLVERR};
use fairshare_hdl::bus_testbench::BusTestbench;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const OKAY: u8 = RESP_OKAY as u8;
const SLVERR: u8 = RESP_SLVERR as u8;

/// Random quanta through the bus and the streams (stalls everywhere), credits carried
/// on the device and in software.
fn quanta_through_the_bus<const P: usize, const A: usize>(seed: u64, sequences: usize) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut quanta = 0;
    for s in 0..sequences {
        let mut d = BusTestbench::<P, A>::new(if s % 3 == 0 { 0 } else { seed * 7919 + s as u64 });
        let (n, f, g, start) = random_pool(&mut rng, P << A);
        let mut credits = vec![start; n];
        d.write_credits(&credits, 0x100).unwrap();
        let irqs = d.irqs();
        for q in 0..5u32 {
            let (mode, demand) = random_quantum(&mut rng, n, f);
            let (alloc, after) = software(mode, f, g, &credits, &demand);
            let seq = 1000 * s as u32 + q + 1;
            let got = d.quantum(seq, mode as u32, f, g, &demand);
            let ctx = format!("seq {seq} mode {mode} n {n} f {f} g {g} credits {credits:?} demand {demand:?}");
            assert_eq!(abi::STATUS_ERROR.get(got.status), 0, "{ctx}");
            assert_eq!(abi::STATUS_FRAMING.get(got.status), 0, "{ctx}");
            assert_eq!(got.alloc, alloc, "alloc, {ctx}");
            assert_eq!(got.credits, after, "credits, {ctx}");
            assert_eq!(got.seq_done, seq, "{ctx}");
            // LOAD and FINAL take a cycle per row at least.
            assert!(got.cycles as usize >= 2 * n.div_ceil(P), "{ctx}: {} cycles", got.cycles);
            credits = after;
            quanta += 1;
        }
        assert_eq!(d.irqs() - irqs, 5, "one interrupt per quantum");
        assert_eq!(d.read(abi::QUANTA.offset), 5);
        assert_eq!(d.read_credits(n, 0x200).unwrap(), credits, "checkpoint after sequence {s}");
    }
    quanta
}

#[test]
fn quanta_through_the_bus_match_the_software() {
    let q = quanta_through_the_bus::<4, 2>(21, 24) + quanta_through_the_bus::<2, 5>(22, 6);
    assert_eq!(q, 150);
}

#[test]
fn credit_access_is_refused_while_a_quantum_runs() {
    let mut d = BusTestbench::<4, 2>::new(5);
    d.write_credits(&[3, 1, 4, 1, 5], 1).unwrap();
    d.start_stalled(7, 5, 2, 1);
    let status = d.read(abi::STATUS.offset);
    assert_eq!(abi::STATUS_BUSY.get(status), 1);
    assert_eq!(d.write_strb(abi::CREDIT_CMD.offset, 0x0500, 0xF), SLVERR);
    assert_eq!(d.read_resp(abi::credit_data(0)).1, SLVERR);
    assert_eq!(d.write_strb(abi::credit_data(0), 99, 0xF), SLVERR);
    assert_eq!(d.read(abi::CREDIT_ACK.offset), abi::CREDIT_CMD_TAG.set(1, 2), "refused command not acknowledged");
    // A second doorbell while busy is ignored and flagged.
    d.write(abi::DOORBELL.offset, 8);
    assert_eq!(abi::STATUS_REJECTED.get(d.read(abi::STATUS.offset)), 1);
    let demand = [0, 3, 0, 2, 1];
    let status = d.finish(&demand);
    assert_eq!(abi::STATUS_ERROR.get(status), 0);
    assert_eq!(d.read(abi::SEQ_DONE.offset), 7, "the rejected doorbell did not replace the sequence number");
    let (_, after) = software(0, 2, 1, &[3, 1, 4, 1, 5], &demand);
    assert_eq!(d.read_credits(5, 9).unwrap(), after);
}

/// A credit read command that reaches the device in any cycle around a quantum's end
/// is refused or gives the row's balances after the quantum, never words the credit
/// banks read while the engine held them (their read takes two cycles).
#[test]
fn a_credit_read_at_the_end_of_a_quantum_is_refused_or_right() {
    let before = [3, 1, 4, 1, 5, 9];
    let demand = [0, 3, 0, 2, 1, 7];
    let (_, after) = software(0, 2, 1, &before, &demand);
    let run = |at: Option<usize>| {
        let mut d = BusTestbench::<4, 2>::new(0);
        d.write_credits(&before, 1).unwrap();
        // Row 1 (users 4 and 5) is read: the engine's last row.
        d.write(abi::CREDIT_ROW.offset, 1);
        d.write(abi::CONTROL.offset, abi::CONTROL_IRQ.set(0, 1));
        d.write(abi::N_USERS.offset, 6);
        d.write(abi::FAIR_SHARE.offset, 2);
        d.write(abi::GUARANTEED.offset, 1);
        d.write(abi::DOORBELL.offset, 3);
        let (resp, irq_at) = d.finish_with_a_credit_read(&demand, at, 0x40);
        let words = (resp == Some(OKAY)).then(|| [d.read(abi::credit_data(0)), d.read(abi::credit_data(1))]);
        (resp, words, irq_at)
    };
    // The interrupt's cycle, then commands offered from 6 cycles before it to 6 after.
    let (_, _, irq_at) = run(None);
    let mut answers = Vec::new();
    for at in irq_at - 6..irq_at + 6 {
        let (resp, words, _) = run(Some(at));
        let resp = resp.expect("a command was offered");
        match words {
            Some(w) => {
                assert_eq!(w, [after[4], after[5]], "a credit read offered at cycle {at} (interrupt at {irq_at})")
            }
            None => assert_eq!(resp, SLVERR, "at {at}"),
        }
        answers.push(resp);
    }
    // The sweep crosses the end: refused first, then answered, never the other way.
    assert_eq!(answers.first(), Some(&SLVERR), "{answers:?}");
    assert_eq!(answers.last(), Some(&OKAY), "{answers:?}");
    assert!(answers.windows(2).all(|w| w[0] == SLVERR || w[1] == OKAY), "{answers:?}");
}

#[test]
fn wrong_stream_framing_is_flagged() {
    let mut d = BusTestbench::<4, 2>::new(3);
    let demand = [1u32; 10]; // three rows
    let early = d.quantum_framed(1, 0, 2, 1, &demand, Some(1));
    assert_eq!(abi::STATUS_FRAMING.get(early.status), 1, "tlast on row 1 of 3");
    let fine = d.quantum(2, 0, 2, 1, &demand);
    assert_eq!(abi::STATUS_FRAMING.get(fine.status), 0, "cleared by the next doorbell");
    let missing = d.quantum_framed(3, 0, 2, 1, &demand, Some(7));
    assert_eq!(abi::STATUS_FRAMING.get(missing.status), 1, "no tlast on the last row");
}

#[test]
fn configuration_errors_reach_the_status_register() {
    let mut d = BusTestbench::<4, 2>::new(0);
    let bad = d.quantum(1, 0, 2, 3, &[1, 1, 1]);
    assert_eq!(abi::STATUS_ERROR.get(bad.status), abi::status::GUARANTEED);
    assert!(bad.alloc.is_empty(), "no results for a refused quantum");
    assert_eq!(bad.seq_done, 1, "a refused quantum still completes its sequence number");
    // Refused quanta in a row each complete their own sequence number.
    let bad = d.quantum(2, 3, 2, 1, &[1, 1, 1]);
    assert_eq!(abi::STATUS_ERROR.get(bad.status), abi::status::MODE);
    assert_eq!(bad.seq_done, 2, "the second refused quantum completes its sequence number");
    let bad = d.quantum(3, 0, 2, 1, &[1; 17]);
    assert_eq!(abi::STATUS_ERROR.get(bad.status), abi::status::USERS);
    assert_eq!(bad.seq_done, 3, "the third refused quantum completes its sequence number");
    assert_eq!(d.read(abi::QUANTA.offset), 0, "refused quanta are not counted");
    let good = d.quantum(4, 0, 2, 1, &[1, 1, 1]);
    assert_eq!(abi::STATUS_ERROR.get(good.status), 0);
    assert_eq!(d.read(abi::QUANTA.offset), 1);
}

#[test]
fn credit_rows_beyond_the_banks_are_refused() {
    let mut d = BusTestbench::<4, 2>::new(0);
    d.write(abi::CREDIT_ROW.offset, 4); // rows 0 ..= 3 exist
    assert_eq!(d.write_strb(abi::CREDIT_CMD.offset, 0x100, 0xF), SLVERR);
    d.write(abi::CREDIT_ROW.offset, 3);
    assert_eq!(d.write_strb(abi::CREDIT_CMD.offset, 0x100, 0xF), OKAY);
}

/// A credit row written and read back by the very next command, at the closest spacing
/// the write channel allows (no stalls): the read command must take the words just
/// written, which reach the banks from the write command's flip-flop a cycle later.
#[test]
fn a_credit_row_reads_back_right_after_its_write_command() {
    let mut d = BusTestbench::<4, 2>::new(0);
    for row in 0..4u32 {
        d.write(abi::CREDIT_ROW.offset, row);
        for lane in 0..4 {
            assert_eq!(d.write_strb(abi::credit_data(lane), 1_000 * row + lane as u32 + 1, 0xF), OKAY);
        }
        // The write command, and the read command right behind it: the port's words
        // become the row as the banks give it (the row's old words, zero, if the write
        // had not landed).
        let write = abi::CREDIT_CMD_WRITE.set(0, 1);
        assert_eq!(d.write_pair((abi::CREDIT_CMD.offset, write), (abi::CREDIT_CMD.offset, 0)), [OKAY, OKAY]);
        for lane in 0..4 {
            assert_eq!(d.read(abi::credit_data(lane)), 1_000 * row + lane as u32 + 1, "row {row}, lane {lane}");
        }
    }
}
