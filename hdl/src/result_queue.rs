//! A lane's results out: reads FINAL's result banks a row behind FINAL's writes and
//! queues the rows for the result stream, so that results leave at a row per cycle
//! while FINAL is still writing, and the stream's back-pressure stops only this block.
//!
//! The queue decides to read row `r` once FINAL has written it (`r` below its own copy
//! of `written`, the lane's write counter, registered a cycle late beside the decision:
//! the counter also addresses the lane's banks, and the placer may put the queue far
//! from it) and holds at most [`DEPTH`] rows, counting those decided
//! and not yet taken. A row decided in cycle `t` is read in `t + 1` (the banks' read
//! address moves on a registered enable), is latched by the bank at the end of it, comes
//! out of the bank's output register in `t + 3` and is written into its entry (on a
//! registered one-hot enable) at the end of it, and can be taken from `t + 4`: four rows are on their way
//! when the stream takes one per cycle, so five entries never make the reads wait.
//! The banks' read address and the entries move on enables that are flip-flops; the
//! decision to read is logic on flip-flops only (the next row against the copy of
//! `written`, the rows held against DEPTH); `ready` takes the head (the read pointer, the counts),
//! reaches the decision only through the flip-flop `held` and no bank address at all
//! (`valid`, `alloc` and `credit` are flip-flops through a five-way multiplexer). A result held while `ready` is low does not change.
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

/// Cycles from FINAL's write of a row (the end of the cycle that writes it) to the
/// first cycle the row can be taken, when the queue is not full: counted in the copy of
/// `written`, decided, read, latched by the bank, out of its output register, in its
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
    /// Empty the queue and read from row 0 again (between quanta).
    pub restart: Signal<In, Bit>,
    /// FINAL writes results: rows below `written` can be read.
    pub on: Signal<In, Bit>,
    /// Rows FINAL has written (the lane's write counter).
    pub written: Signal<In, Bits<A>>,
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
    /// `written` a cycle late, beside the decision.
    written_r: DFF<Bits<A>>,
    /// The next row to decide on, and the row the banks read.
    ask_row: DFF<Bits<A>>,
    next_row: DFF<Bits<A>>,
    /// Every row of the quantum has been decided on.
    read_all: DFF<Bit>,
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
    /// Rows decided on and not yet taken.
    held: DFF<Bits<3>>,
    /// The entry the next arriving row will take (rows arrive in the order decided).
    fill_at: DFF<Bits<3>>,
    /// Rows in the entries.
    count: DFF<Bits<3>>,
    nonempty: DFF<Bit>,
    read_at: DFF<Bits<3>>,
    /// Rows taken in this quantum: the head is the last row when they number `last_row`.
    taken_rows: DFF<Bits<A>>,
    taken_last: DFF<Bit>,
    taken_last_r: DFF<Bit>,
    alloc_q: [DFF<Bits<32>>; DEPTH],
    credit_q: [DFF<Bits<32>>; DEPTH],
    slot: [Constant<Bits<3>>; DEPTH],
    last_slot: Constant<Bits<3>>,
    full: Constant<Bits<3>>,
    fetch: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    count_next: Signal<Local, Bits<3>>,
}

impl<const A: usize> Default for ResultQueue<A> {
    fn default() -> Self {
        ResultQueue {
            clock: Default::default(),
            restart: Default::default(),
            on: Default::default(),
            written: Default::default(),
            last_row: Default::default(),
            alloc_in: Default::default(),
            credit_in: Default::default(),
            ready: Default::default(),
            row: Default::default(),
            valid: Default::default(),
            alloc: Default::default(),
            credit: Default::default(),
            last_taken: Default::default(),
            written_r: Default::default(),
            ask_row: Default::default(),
            next_row: Default::default(),
            read_all: Default::default(),
            reading: Default::default(),
            leaving: Default::default(),
            arriving: Default::default(),
            enable: array_init::array_init(|_| Default::default()),
            enable_c: array_init::array_init(|_| Default::default()),
            held: Default::default(),
            fill_at: Default::default(),
            count: Default::default(),
            nonempty: Default::default(),
            read_at: Default::default(),
            taken_rows: Default::default(),
            taken_last: Default::default(),
            taken_last_r: Default::default(),
            alloc_q: array_init::array_init(|_| Default::default()),
            credit_q: array_init::array_init(|_| Default::default()),
            slot: array_init::array_init(|k| Constant::new(Bits::<3>::from(k as u64))),
            last_slot: Constant::new(Bits::<3>::from(DEPTH as u64 - 1)),
            full: Constant::new(Bits::<3>::from(DEPTH as u64)),
            fetch: Default::default(),
            take: Default::default(),
            count_next: Default::default(),
        }
    }
}

impl<const A: usize> Logic for ResultQueue<A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            written_r,
            ask_row,
            next_row,
            read_all,
            reading,
            leaving,
            arriving,
            held,
            fill_at,
            count,
            nonempty,
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
        // Decide to read a row FINAL has written (by the copy, a cycle late) while fewer
        // than DEPTH rows are held.
        self.written_r.d.next = self.written.val();
        self.fetch.next = self.on.val()
            & !self.read_all.q.val()
            & (self.ask_row.q.val() != self.written_r.q.val())
            & (self.held.q.val() != self.full.val());
        self.take.next = self.ready.val() & self.nonempty.q.val();
        if self.fetch.val() {
            self.ask_row.d.next = self.ask_row.q.val() + 1;
            if self.ask_row.q.val() == self.last_row.val() {
                self.read_all.d.next = true;
            }
        }
        if self.fetch.val() & !self.take.val() {
            self.held.d.next = self.held.q.val() + 1;
        }
        if !self.fetch.val() & self.take.val() {
            self.held.d.next = self.held.q.val() - 1;
        }
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
        // The entries' count, and the head taken.
        self.count_next.next = self.count.q.val();
        if self.arriving.q.val() & !self.take.val() {
            self.count_next.next = self.count.q.val() + 1;
        }
        if !self.arriving.q.val() & self.take.val() {
            self.count_next.next = self.count.q.val() - 1;
        }
        self.count.d.next = self.count_next.val();
        self.nonempty.d.next = self.count_next.val() != 0;
        if self.take.val() {
            self.taken_rows.d.next = self.taken_rows.q.val() + 1;
            self.read_at.d.next = self.read_at.q.val() + 1;
            if self.read_at.q.val() == self.last_slot.val() {
                self.read_at.d.next = 0.into();
            }
        }
        if self.restart.val() {
            self.written_r.d.next = 0.into();
            self.ask_row.d.next = 0.into();
            self.next_row.d.next = 0.into();
            self.read_all.d.next = false;
            self.reading.d.next = false;
            self.leaving.d.next = false;
            self.arriving.d.next = false;
            self.held.d.next = 0.into();
            self.fill_at.d.next = 0.into();
            self.count.d.next = 0.into();
            self.nonempty.d.next = false;
            self.read_at.d.next = 0.into();
            self.taken_rows.d.next = 0.into();
            for k in 0..DEPTH {
                self.enable[k].d.next = false;
                self.enable_c[k].d.next = false;
            }
        }
        // The head.
        self.valid.next = self.nonempty.q.val();
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const A: usize = 4;

    fn tick(q: &mut ResultQueue<A>) {
        q.clock.next = true.into();
        assert!(simulate(q, 1_000));
        q.clock.next = false.into();
        assert!(simulate(q, 1_000));
    }

    /// The queue against a bank written a row at a time as FINAL writes it (with random
    /// gaps), the stream taking at random: every quantum's rows come out once, in order,
    /// with the words written (a read of a row not yet written returns a poisoned word,
    /// so reading ahead of FINAL fails), a head held still (and valid) while `ready` is
    /// low, `last_taken` [`LAST_TAKEN_DELAY`] cycles after the last row is taken and never else, a
    /// restart with `on` high or low and the write counter at any value, as the engine
    /// gives them;
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
            // The engine restarts the queues in every idle cycle, with the lanes still in
            // FINAL's phase (`on`) from the last quantum; the lane's write counter is
            // zeroed at the end of the restart's cycle, so the queue sees in it whatever
            // the counter held.
            q.restart.next = true;
            q.on.next = rng.gen_bool(0.5);
            q.written.next = rng.gen_range(0..1u64 << A).into();
            q.ready.next = false;
            tick(&mut q);
            q.restart.next = false;
            q.last_row.next = ((rows - 1) as u64).into();
            q.on.next = true;
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
                q.written.next = ((written % (1 << A)) as u64).into();
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
                // FINAL writes a row at the end of this cycle.
                if written < rows && (steady || rng.gen_bool(0.7)) {
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
