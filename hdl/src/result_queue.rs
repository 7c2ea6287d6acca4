//! A lane's results out: reads FINAL's result banks a row behind FINAL's writes and
//! queues the rows for the result stream, so that results leave at a row per cycle
//! while FINAL is still writing, and the stream's back-pressure stops only this block.
//!
//! The queue counts the rows FINAL has written that it has not yet decided to read
//! (`avail`: up on FINAL's write strobe, registered a cycle late beside the decision,
//! since the strobe comes from the lane's pipeline and the placer may put the queue far
//! from it; down on each decision) and holds at most [`DEPTH`] rows, counting those
//! decided and not yet taken. A row decided in cycle `t` is read in `t + 1` (the banks'
//! read address moves on a registered enable), is latched by the bank at the end of it,
//! comes out of the bank's output register in `t + 3` and is written into its entry (on
//! a registered one-hot enable) at the end of it, and can be taken from `t + 4`: four
//! rows are on their way when the stream takes one per cycle, so five entries never make
//! the reads wait.
//!
//! FINAL writes the quantum's rows once each, in order, so the rows waiting are the
//! rows to read and nothing else has to stop the reads at the last row. The decision
//! to read is one LUT of two flip-flops (a written row waits, DEPTH rows are held), so
//! the loop from the decision back into the registers it moves is two LUTs long: the
//! rows held and the rows in the entries are thermometer codes (bit `k`: more than
//! `k`), whose flags are the comparisons, and whether a row waits is a flag kept beside
//! the count of waiting rows. Each code is a [`Thermometer`], whose flip-flops are reset
//! by `restart` alone: a take reaches them through their data inputs, not their reset
//! inputs (3e244f2's seed 1 path). `ready` takes
//! the head (the read pointer, the entries' code), reaches the decision only through
//! the rows held and no bank address at all (`valid`, `alloc` and `credit` are
//! flip-flops through a five-way multiplexer). The rows held move on a take of their
//! own, decided from a copy of the entries' code kept beside them: the entries sit
//! with the banks' outputs and the decision with the banks' read address, which the
//! placer may put far apart. A result held while `ready` is low does
//! not change. `restart` is registered on the way in and acts a cycle later (it drives
//! every register here, and comes from the sequencer across the die).
//!
//! Every lane runs its own copy (they are all in step), so that nothing the reads
//! depend on crosses the die. The entry a row takes is counted when the row leaves the
//! banks (rows arrive in the order decided), beside the entries, so the decision drives
//! no entry pointer. The engine's sequencer learns that the last row was taken from lane
//! 0's `last_taken`, registered twice ([`LAST_TAKEN_DELAY`]) and decided from a count of
//! the rows taken (not from the head, whose multiplexer spans the entries). Owns the
//! order of the results; depends on nothing.

use rust_hdl::prelude::*;

/// Rows a queue holds (decided and not yet taken).
pub const DEPTH: usize = 5;
// The thermometer codes' top flag is bit 4 below (`hdl_gen` takes literal bit indices).
const _: () = assert!(DEPTH == 5, "the thermometer codes' top bit is written as 4");

/// Cycles from FINAL's write of a row (the end of the cycle that writes it) to the
/// first cycle the row can be taken, when the queue is not full: counted in the rows
/// waiting, decided, read, latched by the bank, out of its output register, in its
/// entry.
pub const LATENCY: usize = 6;

/// Cycles from the cycle the quantum's last row is taken to the cycle `last_taken` is
/// high: a flip-flop beside the queue's count of rows taken, and one more on the way
/// to the sequencer (so that the lane's queue and the sequencer need not sit together).
pub const LAST_TAKEN_DELAY: usize = 2;

/// One lane's queue of result rows; `A` address bits of the result banks.
#[derive(LogicBlock)]
pub struct ResultQueue<const A: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Empty the queue and read from row 0 again (between quanta), a cycle later: a
    /// write in the cycle of `restart` is not counted, one in the cycle after it is.
    pub restart: Signal<In, Bit>,
    /// FINAL writes a row at the end of this cycle (the lane's write strobe): after
    /// `restart`, rows 0 to `last_row`, in order, once each, and no other.
    pub write: Signal<In, Bit>,
    /// The quantum's last row (held for the quantum).
    pub last_row: Signal<In, Bits<A>>,
    /// The result banks' allocation at `row`, two cycles after it.
    pub alloc_in: Signal<In, Bits<32>>,
    /// The result banks' balance at `row`, two cycles after it.
    pub credit_in: Signal<In, Bits<32>>,
    /// The result stream takes the head (when `valid`).
    pub ready: Signal<In, Bit>,
    /// The result banks' row to read.
    pub row: Signal<Out, Bits<A>>,
    /// A row is at the head.
    pub valid: Signal<Out, Bit>,
    /// The head's allocation.
    pub alloc: Signal<Out, Bits<32>>,
    /// The head's balance.
    pub credit: Signal<Out, Bits<32>>,
    /// The last row was taken [`LAST_TAKEN_DELAY`] cycles before (a flip-flop).
    pub last_taken: Signal<Out, Bit>,
    /// `restart` a cycle late, beside the registers it clears.
    restart_r: DFF<Bit>,
    /// `write` a cycle late, beside the decision.
    write_r: DFF<Bit>,
    /// Rows written and not yet decided on (at most 2^A - 1: the queue decides a written
    /// row at once unless DEPTH rows are held), and whether there are any.
    avail: DFF<Bits<A>>,
    waiting: DFF<Bit>,
    /// The row the banks read.
    next_row: DFF<Bits<A>>,
    /// A row decided on in the last cycle is read now (the read address's enable), and
    /// along the way to its entry.
    reading: DFF<Bit>,
    leaving: DFF<Bit>,
    /// The row out of the banks' output registers, with its entry's enable.
    arriving: DFF<Bit>,
    /// Each entry's enable, one copy for the allocations and one for the balances (they
    /// sit beside the two result banks, which may be far apart).
    enable: [DFF<Bit>; DEPTH],
    enable_c: [DFF<Bit>; DEPTH],
    /// Rows decided on and not yet taken, a thermometer code (bit `k`: more than `k`).
    held: Thermometer<DEPTH>,
    /// The entry the next arriving row will take (rows arrive in the order decided).
    fill_at: DFF<Bits<3>>,
    /// Rows in the entries, a thermometer code: bit 0 says the head is valid.
    filled: Thermometer<DEPTH>,
    /// The same code again, beside the rows held: the take that moves them is decided
    /// from it, not from `filled` (placed with the entries, which may be far from the
    /// decision: c918f96's critical path crossed that wire, 4.82 of its 8.86 ns).
    filled_h: Thermometer<DEPTH>,
    read_at: DFF<Bits<3>>,
    /// Rows taken in this quantum: the head is the last row when they number `last_row`.
    taken_rows: DFF<Bits<A>>,
    taken_last: DFF<Bit>,
    taken_last_r: DFF<Bit>,
    alloc_q: [DFF<Bits<32>>; DEPTH],
    credit_q: [DFF<Bits<32>>; DEPTH],
    slot: [Constant<Bits<3>>; DEPTH],
    last_slot: Constant<Bits<3>>,
    fetch: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    take_h: Signal<Local, Bit>,
}

impl<const A: usize> Default for ResultQueue<A> {
    fn default() -> Self {
        ResultQueue {
            clock: Default::default(),
            restart: Default::default(),
            write: Default::default(),
            last_row: Default::default(),
            alloc_in: Default::default(),
            credit_in: Default::default(),
            ready: Default::default(),
            row: Default::default(),
            valid: Default::default(),
            alloc: Default::default(),
            credit: Default::default(),
            last_taken: Default::default(),
            restart_r: Default::default(),
            write_r: Default::default(),
            avail: Default::default(),
            waiting: Default::default(),
            next_row: Default::default(),
            reading: Default::default(),
            leaving: Default::default(),
            arriving: Default::default(),
            enable: array_init::array_init(|_| Default::default()),
            enable_c: array_init::array_init(|_| Default::default()),
            held: Default::default(),
            fill_at: Default::default(),
            filled: Default::default(),
            filled_h: Default::default(),
            read_at: Default::default(),
            taken_rows: Default::default(),
            taken_last: Default::default(),
            taken_last_r: Default::default(),
            alloc_q: array_init::array_init(|_| Default::default()),
            credit_q: array_init::array_init(|_| Default::default()),
            slot: array_init::array_init(|k| Constant::new(Bits::<3>::from(k as u64))),
            last_slot: Constant::new(Bits::<3>::from(DEPTH as u64 - 1)),
            fetch: Default::default(),
            take: Default::default(),
            take_h: Default::default(),
        }
    }
}

impl<const A: usize> Logic for ResultQueue<A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            restart_r,
            write_r,
            avail,
            waiting,
            next_row,
            reading,
            leaving,
            arriving,
            fill_at,
            read_at,
            taken_rows,
            taken_last,
            taken_last_r
        );
        for k in 0..DEPTH {
            self.alloc_q[k].clock.next = self.clock.val();
            self.credit_q[k].clock.next = self.clock.val();
            self.enable[k].clock.next = self.clock.val();
            self.enable_c[k].clock.next = self.clock.val();
            self.alloc_q[k].d.next = self.alloc_q[k].q.val();
            self.credit_q[k].d.next = self.credit_q[k].q.val();
        }
        self.restart_r.d.next = self.restart.val();
        self.write_r.d.next = self.write.val();
        // Decide to read a written row while fewer than DEPTH rows are held: one LUT.
        self.fetch.next = self.waiting.q.val() & !self.held.code.val().get_bit(4);
        self.take.next = self.ready.val() & self.filled.code.val().get_bit(0);
        self.take_h.next = self.ready.val() & self.filled_h.code.val().get_bit(0);
        // The rows waiting: a write counts a cycle late, a decision at once.
        if self.write_r.q.val() & !self.fetch.val() {
            self.avail.d.next = self.avail.q.val() + 1;
            self.waiting.d.next = true;
        }
        if !self.write_r.q.val() & self.fetch.val() {
            self.avail.d.next = self.avail.q.val() - 1;
            self.waiting.d.next = self.avail.q.val() != 1;
        }
        self.held.clock.next = self.clock.val();
        self.held.up.next = self.fetch.val();
        self.held.down.next = self.take_h.val();
        self.held.clear.next = self.restart_r.q.val();
        // The row decided on is read in the next cycle: the banks read `next_row` at the
        // end of every cycle, and it moves on a registered enable.
        self.reading.d.next = self.fetch.val();
        self.row.next = self.next_row.q.val();
        if self.reading.q.val() {
            self.next_row.d.next = self.next_row.q.val() + 1;
        }
        // Latched by the bank, then out of its output register with its entry's enable.
        self.leaving.d.next = self.reading.q.val();
        self.arriving.d.next = self.leaving.q.val();
        // The k-th row decided is the k-th to leave the banks: its entry is counted here,
        // beside the entries, and not from the decision.
        if self.leaving.q.val() {
            self.fill_at.d.next = self.fill_at.q.val() + 1;
            if self.fill_at.q.val() == self.last_slot.val() {
                self.fill_at.d.next = 0.into();
            }
        }
        for k in 0..DEPTH {
            self.enable[k].d.next = self.leaving.q.val() & (self.fill_at.q.val() == self.slot[k].val());
            self.enable_c[k].d.next = self.leaving.q.val() & (self.fill_at.q.val() == self.slot[k].val());
            if self.enable[k].q.val() {
                self.alloc_q[k].d.next = self.alloc_in.val();
            }
            if self.enable_c[k].q.val() {
                self.credit_q[k].d.next = self.credit_in.val();
            }
        }
        // The entries filled, and the head taken.
        self.filled.clock.next = self.clock.val();
        self.filled.up.next = self.arriving.q.val();
        self.filled.down.next = self.take.val();
        self.filled.clear.next = self.restart_r.q.val();
        self.filled_h.clock.next = self.clock.val();
        self.filled_h.up.next = self.arriving.q.val();
        self.filled_h.down.next = self.take_h.val();
        self.filled_h.clear.next = self.restart_r.q.val();
        if self.take.val() {
            self.taken_rows.d.next = self.taken_rows.q.val() + 1;
            self.read_at.d.next = self.read_at.q.val() + 1;
            if self.read_at.q.val() == self.last_slot.val() {
                self.read_at.d.next = 0.into();
            }
        }
        if self.restart_r.q.val() {
            self.avail.d.next = 0.into();
            self.waiting.d.next = false;
            self.next_row.d.next = 0.into();
            self.reading.d.next = false;
            self.leaving.d.next = false;
            self.arriving.d.next = false;
            self.fill_at.d.next = 0.into();
            self.read_at.d.next = 0.into();
            self.taken_rows.d.next = 0.into();
            for k in 0..DEPTH {
                self.enable[k].d.next = false;
                self.enable_c[k].d.next = false;
            }
        }
        // The head.
        self.valid.next = self.filled.code.val().get_bit(0);
        self.alloc.next = self.alloc_q[0].q.val();
        self.credit.next = self.credit_q[0].q.val();
        for k in 1..DEPTH {
            if self.read_at.q.val() == self.slot[k].val() {
                self.alloc.next = self.alloc_q[k].q.val();
                self.credit.next = self.credit_q[k].q.val();
            }
        }
        // The last row is taken: counted, not read from the head (whose multiplexer spans
        // the entries).
        self.taken_last.d.next = self.take.val() & (self.taken_rows.q.val() == self.last_row.val());
        self.taken_last_r.d.next = self.taken_last.q.val();
        self.last_taken.next = self.taken_last_r.q.val();
    }
}

/// A count from 0 to `N` as a thermometer code (bit `k`: more than `k`), moved up or
/// down by one in a cycle (both at once: unchanged) and cleared to 0 by `clear`. The
/// next code is written as data (each bit from its neighbours, chosen by masks), not
/// as a choice of assignments: from the choice, Yosys took the bit a shift down
/// empties for a synchronous reset and drove the flip-flops' reset inputs (LSR) from
/// `down` through three LUTs (3e244f2's seed 1 critical path, 8.17 ns); here only
/// `clear` resets, and `down` reaches each bit through its data input.
#[derive(LogicBlock)]
pub struct Thermometer<const N: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Count one more (never past `N`).
    pub up: Signal<In, Bit>,
    /// Count one fewer (never below 0).
    pub down: Signal<In, Bit>,
    /// Back to 0 (over `up` and `down`).
    pub clear: Signal<In, Bit>,
    /// The count, a flip-flop per bit.
    pub code: Signal<Out, Bits<N>>,
    state: DFF<Bits<N>>,
    up_mask: Signal<Local, Bits<N>>,
    down_mask: Signal<Local, Bits<N>>,
    hold_mask: Signal<Local, Bits<N>>,
    ones: Constant<Bits<N>>,
}

impl<const N: usize> Default for Thermometer<N> {
    fn default() -> Self {
        Thermometer {
            clock: Default::default(),
            up: Default::default(),
            down: Default::default(),
            clear: Default::default(),
            code: Default::default(),
            state: Default::default(),
            up_mask: Default::default(),
            down_mask: Default::default(),
            hold_mask: Default::default(),
            ones: Constant::new(Bits::<N>::mask()),
        }
    }
}

impl<const N: usize> Logic for Thermometer<N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state);
        self.up_mask.next = 0.into();
        self.down_mask.next = 0.into();
        self.hold_mask.next = self.ones.val();
        if self.up.val() & !self.down.val() {
            self.up_mask.next = self.ones.val();
            self.hold_mask.next = 0.into();
        }
        if !self.up.val() & self.down.val() {
            self.down_mask.next = self.ones.val();
            self.hold_mask.next = 0.into();
        }
        self.state.d.next = ((self.state.q.val() << 1).replace_bit(0, true) & self.up_mask.val())
            | ((self.state.q.val() >> 1) & self.down_mask.val())
            | (self.state.q.val() & self.hold_mask.val());
        if self.clear.val() {
            self.state.d.next = 0.into();
        }
        self.code.next = self.state.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const A: usize = 4;

    /// The thermometer against a count: random steps up, down, both, neither and
    /// clears, never past 0 or `DEPTH`; the code is `count` ones from bit 0 in every
    /// cycle.
    #[test]
    fn thermometer_follows_a_count() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut t = Thermometer::<DEPTH>::default();
        t.connect_all();
        let mut count = 0usize;
        let mut seen = [false; DEPTH + 1];
        for cycle in 0..5_000 {
            let clear = rng.gen_bool(0.02);
            let up = count < DEPTH && rng.gen_bool(0.5);
            let down = count > 0 && rng.gen_bool(0.5);
            t.clear.next = clear;
            t.up.next = up;
            t.down.next = down;
            assert!(simulate(&mut t, 1_000));
            clock_cycle(&mut t, |t| &mut t.clock);
            count = if clear { 0 } else { count + usize::from(up) - usize::from(down) };
            seen[count] = true;
            assert_eq!(t.code.val().to_u64(), (1u64 << count) - 1, "cycle {cycle}: count {count}");
        }
        assert!(seen.iter().all(|&s| s), "every count from 0 to DEPTH reached: {seen:?}");
    }

    /// One clock cycle of a block whose clock `clock` picks: a rising edge, then falling.
    fn clock_cycle<L: Block>(b: &mut L, clock: impl Fn(&mut L) -> &mut Signal<In, Clock>) {
        clock(b).next = true.into();
        assert!(simulate(b, 1_000));
        clock(b).next = false.into();
        assert!(simulate(b, 1_000));
    }

    fn tick(q: &mut ResultQueue<A>) {
        clock_cycle(q, |q| &mut q.clock);
    }

    /// The queue against a bank written a row at a time as FINAL writes it (with random
    /// gaps), the stream taking at random: every quantum's rows come out once, in order,
    /// with the words written (a read of a row not yet written returns a poisoned word,
    /// so reading ahead of FINAL fails), a head held still (and valid) while `ready` is
    /// low, `last_taken` [`LAST_TAKEN_DELAY`] cycles after the last row is taken and never else, a
    /// restart with a write strobe in its cycle or not (not
    /// counted), as the engine gives them, and a write in the cycle after it (counted);
    /// with FINAL writing a row per cycle and the stream always ready, a row leaves in
    /// every cycle after the first.
    #[test]
    fn gives_every_written_row_once_in_order_and_a_row_per_cycle_when_the_stream_is_ready() {
        let mut rng = ChaCha8Rng::seed_from_u64(41);
        let mut q = ResultQueue::<A>::default();
        q.connect_all();
        let mut full_speed = 0;
        for quantum in 0..400 {
            let rows = rng.gen_range(1..=1usize << A);
            // Every tenth quantum: FINAL without gaps and a stream always ready.
            let steady = quantum % 10 == 0;
            let words: Vec<(u64, u64)> =
                (0..rows).map(|_| (rng.gen::<u32>().into(), rng.gen::<u32>().into())).collect();
            // The engine restarts the queues in every idle cycle; a write strobe in the
            // restart's cycle belongs to no quantum (the engine has none there: the test
            // gives one at random, and it must not count).
            q.restart.next = true;
            q.write.next = rng.gen_bool(0.5);
            q.ready.next = false;
            tick(&mut q);
            q.restart.next = false;
            q.last_row.next = ((rows - 1) as u64).into();
            let (mut written, mut got) = (0usize, Vec::new());
            let mut held: Option<(u64, u64)> = None;
            let mut out_cycles = Vec::new();
            // The bank: what the queue reads in one cycle it sees two cycles later.
            let mut bank_out = [(0u64, 0u64); 2];
            for cycle in 0..10_000 {
                if got.len() == rows {
                    break;
                }
                let ready = steady || rng.gen_bool(0.6);
                q.ready.next = ready;
                // FINAL writes a row at the end of this cycle (from cycle 0, the one right
                // after the restart's).
                let writes = written < rows && (steady || rng.gen_bool(0.7));
                q.write.next = writes;
                q.alloc_in.next = bank_out[1].0.into();
                q.credit_in.next = bank_out[1].1.into();
                assert!(simulate(&mut q, 1_000));
                assert!(!q.last_taken.val(), "quantum {quantum}, cycle {cycle}: last_taken before the last row");
                assert!(q.valid.val() || held.is_none(), "quantum {quantum}, cycle {cycle}: a head not taken vanished");
                if q.valid.val() {
                    let head = (q.alloc.val().to_u64(), q.credit.val().to_u64());
                    if let Some(h) = held.take() {
                        assert_eq!(h, head, "quantum {quantum}, cycle {cycle}: the head changed while not taken");
                    }
                    if ready {
                        got.push(head);
                        out_cycles.push(cycle);
                    } else {
                        held = Some(head);
                    }
                }
                let read = q.row.val().to_u64() as usize;
                bank_out[1] = bank_out[0];
                bank_out[0] = match words.get(read) {
                    Some(&w) if read < written => w,
                    _ => (0xdead_beef, 0xdead_beef),
                };
                if writes {
                    written += 1;
                }
                tick(&mut q);
            }
            assert_eq!(got, words, "quantum {quantum}: {rows} rows");
            if steady {
                // Row 0 is written at the end of cycle 0 and can be taken LATENCY cycles
                // later; then one a cycle.
                assert_eq!(out_cycles, (LATENCY..LATENCY + rows).collect::<Vec<_>>(), "quantum {quantum}");
                full_speed += 1;
            }
            // LAST_TAKEN_DELAY cycles after the last row was taken, `last_taken` says so,
            // once, and not before; nothing more comes out.
            q.ready.next = true;
            for _ in 1..LAST_TAKEN_DELAY {
                assert!(!q.last_taken.val(), "quantum {quantum}: last_taken early");
                tick(&mut q);
                assert!(!q.valid.val(), "quantum {quantum}: a row after the last");
            }
            assert!(q.last_taken.val(), "quantum {quantum}: last_taken {LAST_TAKEN_DELAY} cycles after the last row");
            for _ in 0..4 {
                tick(&mut q);
                assert!(!q.valid.val(), "quantum {quantum}: a row after the last");
                assert!(!q.last_taken.val(), "quantum {quantum}: last_taken twice");
            }
        }
        assert_eq!(full_speed, 40);
    }
}
