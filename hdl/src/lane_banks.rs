//! A lane's memory: the five RAM banks of its users (row `r` holds user `r * P + lane`),
//! read at the lane's row counter and written at its write counter, the credit bank
//! shared with the host's credit port while the engine is not busy, and the two result
//! banks (FINAL's allocation and balance of each row), written at the write counter and
//! read at a row of their own, so that the results go out while FINAL still reads the
//! other banks.
//!
//! The six 32-bit banks are [`Bank`]s: block RAMs whose word comes out two cycles after
//! its address (a registered read, then the block's own output register). The kind
//! bank (3 bits: the FPGA's distributed RAM at 128 rows, a block RAM without its output
//! register at 512) is read in one cycle; the lane registers it. No bank has read-first logic: a row read in the cycle the other
//! port writes it is undefined on an FPGA (hdl/synth.sh maps the banks so), and the
//! lane never reads such a row where it matters.

use crate::bank::Bank;
use rust_hdl::prelude::*;

/// RAM banks per lane: start, run, kind, base allocation, credits and the two result
/// banks.
pub const BANKS: usize = 7;

/// The banks of one lane; `A` address bits (2^A users).
#[derive(LogicBlock, Default)]
pub struct LaneBanks<const A: usize> {
    /// Clock of every bank.
    pub clock: Signal<In, Clock>,
    /// The engine is busy: the lane owns the credit bank (else the credit port does).
    pub busy: Signal<In, Bit>,
    /// The row read (its words two cycles later, its kind one cycle later).
    pub row: Signal<In, Bits<A>>,
    /// The row written.
    pub write_row: Signal<In, Bits<A>>,
    /// Write the run (`start`, `run`, `kind`) of the row.
    pub write_run: Signal<In, Bit>,
    /// Write the row's allocation before the searches (LOAD).
    pub write_base: Signal<In, Bit>,
    /// Write the row's results (`result_alloc_in`, `result_credit_in`; FINAL).
    pub write_result: Signal<In, Bit>,
    /// Write the row's balance (while busy).
    pub write_credit: Signal<In, Bit>,
    /// The run's first key.
    pub start_in: Signal<In, Bits<32>>,
    /// The run's length.
    pub run_in: Signal<In, Bits<32>>,
    /// The user's kind (bit 2: it exists).
    pub kind_in: Signal<In, Bits<3>>,
    /// The allocation before the searches.
    pub base_in: Signal<In, Bits<32>>,
    /// FINAL's allocation of the row written.
    pub result_alloc_in: Signal<In, Bits<32>>,
    /// FINAL's balance of the row written.
    pub result_credit_in: Signal<In, Bits<32>>,
    /// The row of the result banks read (its words two cycles later).
    pub result_row: Signal<In, Bits<A>>,
    /// The balance.
    pub credit_in: Signal<In, Bits<32>>,
    /// Credit port: the row read and written while not busy.
    pub port_row: Signal<In, Bits<A>>,
    /// Credit port: write `port_credit`.
    pub port_write: Signal<In, Bit>,
    /// Credit port: the balance written.
    pub port_credit: Signal<In, Bits<32>>,
    /// The banks at the row read two cycles before.
    pub start: Signal<Out, Bits<32>>,
    /// See `start`.
    pub run: Signal<Out, Bits<32>>,
    /// The kind bank at the row read in the cycle before.
    pub kind: Signal<Out, Bits<3>>,
    /// See `start`.
    pub base: Signal<Out, Bits<32>>,
    /// See `start` (at `port_row` while not busy, two cycles before).
    pub credit: Signal<Out, Bits<32>>,
    /// The result banks at `result_row` of two cycles before.
    pub result_alloc: Signal<Out, Bits<32>>,
    /// See `result_alloc`.
    pub result_credit: Signal<Out, Bits<32>>,
    credit_ram: Bank<A>,
    start_ram: Bank<A>,
    run_ram: Bank<A>,
    base_ram: Bank<A>,
    kind_ram: RAM<Bits<3>, A>,
    result_alloc_ram: Bank<A>,
    result_credit_ram: Bank<A>,
}

impl<const A: usize> Logic for LaneBanks<A> {
    #[hdl_gen]
    fn update(&mut self) {
        self.credit_ram.clock.next = self.clock.val();
        self.start_ram.clock.next = self.clock.val();
        self.run_ram.clock.next = self.clock.val();
        self.base_ram.clock.next = self.clock.val();
        self.kind_ram.read_clock.next = self.clock.val();
        self.kind_ram.write_clock.next = self.clock.val();
        self.result_alloc_ram.clock.next = self.clock.val();
        self.result_credit_ram.clock.next = self.clock.val();
        self.credit_ram.read_address.next = self.row.val();
        if !self.busy.val() {
            self.credit_ram.read_address.next = self.port_row.val();
        }
        self.start_ram.read_address.next = self.row.val();
        self.run_ram.read_address.next = self.row.val();
        self.base_ram.read_address.next = self.row.val();
        self.kind_ram.read_address.next = self.row.val();
        self.start.next = self.start_ram.read_data.val();
        self.run.next = self.run_ram.read_data.val();
        self.kind.next = self.kind_ram.read_data.val();
        self.base.next = self.base_ram.read_data.val();
        self.credit.next = self.credit_ram.read_data.val();
        self.result_alloc_ram.read_address.next = self.result_row.val();
        self.result_credit_ram.read_address.next = self.result_row.val();
        self.result_alloc.next = self.result_alloc_ram.read_data.val();
        self.result_credit.next = self.result_credit_ram.read_data.val();
        self.result_alloc_ram.write_address.next = self.write_row.val();
        self.result_credit_ram.write_address.next = self.write_row.val();
        self.result_alloc_ram.write_data.next = self.result_alloc_in.val();
        self.result_credit_ram.write_data.next = self.result_credit_in.val();
        self.result_alloc_ram.write_enable.next = self.write_result.val();
        self.result_credit_ram.write_enable.next = self.write_result.val();
        self.start_ram.write_address.next = self.write_row.val();
        self.run_ram.write_address.next = self.write_row.val();
        self.base_ram.write_address.next = self.write_row.val();
        self.kind_ram.write_address.next = self.write_row.val();
        self.start_ram.write_data.next = self.start_in.val();
        self.run_ram.write_data.next = self.run_in.val();
        self.kind_ram.write_data.next = self.kind_in.val();
        self.base_ram.write_data.next = self.base_in.val();
        self.start_ram.write_enable.next = self.write_run.val();
        self.run_ram.write_enable.next = self.write_run.val();
        self.kind_ram.write_enable.next = self.write_run.val();
        self.base_ram.write_enable.next = self.write_base.val();
        self.credit_ram.write_address.next = self.write_row.val();
        self.credit_ram.write_data.next = self.credit_in.val();
        self.credit_ram.write_enable.next = self.write_credit.val();
        if !self.busy.val() {
            self.credit_ram.write_address.next = self.port_row.val();
            self.credit_ram.write_data.next = self.port_credit.val();
            self.credit_ram.write_enable.next = self.port_write.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The banks against seven arrays: random reads and writes at random rows (the
    /// result banks read at a row of their own), busy or not (the credit bank then
    /// follows the port); the kind one cycle after its row, every other word two cycles
    /// after; a 32-bit bank's write lands at the end of the cycle after the one that
    /// gives it, the kind bank's at the end of that cycle; a row read in the cycle a
    /// write lands on it is not compared (undefined on an FPGA).
    #[test]
    fn reads_what_was_written_and_gives_the_credit_bank_to_the_port_while_idle() {
        const A: usize = 3;
        let mut rng = ChaCha8Rng::seed_from_u64(23);
        let mut b = LaneBanks::<A>::default();
        b.connect_all();
        // start, run, kind, base, credit, result allocation, result balance
        let mut mem = [[0u64; 1 << A]; 7];
        // Words expected from the reads of the last cycles ([0]: the last, [1]: the one
        // before), each None where the read is not compared: the kind, then start, run,
        // base, credit, then the two result words.
        type Reads = (Option<u64>, Option<[u64; 4]>, Option<[u64; 2]>);
        let mut in_flight: [Reads; 2] = [(None, None, None), (None, None, None)];
        let (mut compared, mut kinds, mut port, mut results) = (0, 0, 0, 0);
        // Writes to the 32-bit banks given in the last cycle: (bank, row, word).
        let mut landing: Vec<(usize, usize, u64)> = Vec::new();
        for cycle in 0..5_000 {
            let busy = rng.gen_bool(0.5);
            let (row, write_row, port_row, result_row) = (
                rng.gen_range(0..1 << A),
                rng.gen_range(0..1 << A),
                rng.gen_range(0..1 << A),
                rng.gen_range(0..1 << A),
            );
            let words: [u64; 7] = [
                rng.gen::<u32>().into(),
                rng.gen::<u32>().into(),
                rng.gen_range(0..8),
                rng.gen::<u32>().into(),
                rng.gen::<u32>().into(),
                rng.gen::<u32>().into(),
                rng.gen::<u32>().into(),
            ];
            let (run, base, credit, port_write, result) =
                (rng.gen_bool(0.3), rng.gen_bool(0.3), rng.gen_bool(0.3), rng.gen_bool(0.3), rng.gen_bool(0.3));
            let port_credit: u64 = rng.gen::<u32>().into();
            b.busy.next = busy;
            b.row.next = (row as u64).into();
            b.write_row.next = (write_row as u64).into();
            b.port_row.next = (port_row as u64).into();
            b.result_row.next = (result_row as u64).into();
            b.write_result.next = result;
            b.result_alloc_in.next = words[5].into();
            b.result_credit_in.next = words[6].into();
            b.write_run.next = run;
            b.write_base.next = base;
            b.write_credit.next = credit;
            b.port_write.next = port_write;
            b.port_credit.next = port_credit.into();
            b.start_in.next = words[0].into();
            b.run_in.next = words[1].into();
            b.kind_in.next = words[2].into();
            b.base_in.next = words[3].into();
            b.credit_in.next = words[4].into();
            assert!(simulate(&mut b, 100));
            if let Some(kind) = in_flight[0].0 {
                assert_eq!(b.kind.val().to_u64(), kind, "cycle {cycle}: kind");
                kinds += 1;
            }
            if let Some(want) = in_flight[1].1 {
                let got =
                    [b.start.val().to_u64(), b.run.val().to_u64(), b.base.val().to_u64(), b.credit.val().to_u64()];
                assert_eq!(got, want, "cycle {cycle}: start, run, base, credit");
                compared += 1;
            }
            if let Some(want) = in_flight[1].2 {
                let got = [b.result_alloc.val().to_u64(), b.result_credit.val().to_u64()];
                assert_eq!(got, want, "cycle {cycle}: results");
                results += 1;
            }
            let credit_row = if busy { row } else { port_row };
            b.clock.next = true.into();
            assert!(simulate(&mut b, 100));
            b.clock.next = false.into();
            assert!(simulate(&mut b, 100));
            let (credit_write_row, credit_written) = if busy { (write_row, credit) } else { (port_row, port_write) };
            // The words read at this edge: a row that a write lands on at this edge (the
            // kind bank's write of this cycle, a 32-bit bank's of the cycle before) is
            // not compared.
            let lands = |bank: usize, r: usize| landing.iter().any(|&(b, row, _)| b == bank && row == r);
            let clash = lands(0, row) || lands(3, row) || lands(4, credit_row);
            in_flight[1] = in_flight[0];
            in_flight[0] = (
                (!(run && write_row == row)).then_some(mem[2][row]),
                (!clash).then_some([mem[0][row], mem[1][row], mem[3][row], mem[4][credit_row]]),
                (!lands(5, result_row)).then_some([mem[5][result_row], mem[6][result_row]]),
            );
            for &(bank, r, word) in &landing {
                mem[bank][r] = word;
            }
            landing.clear();
            if run {
                mem[2][write_row] = words[2];
            }
            // The 32-bit banks register the write and land it at the next edge.
            if result {
                landing.push((5, write_row, words[5]));
                landing.push((6, write_row, words[6]));
            }
            if run {
                landing.push((0, write_row, words[0]));
                landing.push((1, write_row, words[1]));
            }
            if base {
                landing.push((3, write_row, words[3]));
            }
            if credit_written {
                landing.push((4, credit_write_row, if busy { words[4] } else { port_credit }));
                port += usize::from(!busy);
            }
        }
        assert!(
            compared > 2_000 && kinds > 4_000 && port > 500 && results > 4_000,
            "{compared} reads compared, {kinds} kinds, {port} port writes, {results} result reads"
        );
    }
}
