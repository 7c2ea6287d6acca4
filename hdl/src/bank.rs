//! One 32-bit RAM bank of a lane with its output register: the word at the address of
//! cycle `t` comes out in cycle `t + 2` (a registered read, then the block RAM's own
//! output register); a write given in cycle `t` is registered beside the block and
//! lands at the end of `t + 1` ([`WRITE_LATENCY`]). A word read in the cycle a write
//! lands on the same address is undefined, as on the FPGA (no read-first logic).
//!
//! Why the write is registered here: the block RAMs sit in fixed rows of the die, and
//! the write enable, decided in the lane's logic, once went to one of them over a 5.5 ns
//! wire (the engine's critical path at 8ea4eee: hdl/SYNTHESIS.md). From registers of its
//! own the block's write pins are a wire from a flip-flop the placer puts beside it.
//!
//! Why the output register is the RAM's own: on an ECP5, a DP16KD block RAM drives its
//! outputs 5.6 ns after the clock without it (nextpnr's model, speed grade 6), and with
//! the routing to the next flip-flop every bank read was the engine's critical path
//! (hdl/SYNTHESIS.md); with `REGMODE = OUTREG` the block registers its outputs itself
//! and the path leaves the RAM from a register. The lane used to put a flip-flop after
//! every bank; that flip-flop is now the block's, so the engine's cycle counts do not
//! change.
//!
//! The Verilog carries both forms: by default a memory Yosys (or Verilator) infers,
//! with the two registers after it; with `FAIRSHARE_ECP5` defined (hdl/synth.sh
//! for ECP5) one DP16KD in its 36-bit, one-write-port one-read-port form with
//! `REGMODE = OUTREG`, for banks of up to [`EBR_ROWS`] rows (larger banks keep the
//! inferred form). The Verilator test runs the engine in both forms, the DP16KD under
//! `hdl/verilator/dp16kd.v`, a model of the primitive as this block uses it. Owns the
//! bank's timing; depends on nothing.

use rust_hdl::prelude::*;

/// Cycles from a row's address to its word: the registered read, then the output
/// register.
pub const READ_LATENCY: usize = 2;

/// Cycles from a write given to the end of the cycle in which it lands: given in `t`,
/// registered at the end of `t`, written at the end of `t + 1`.
pub const WRITE_LATENCY: usize = 2;

/// Rows of a DP16KD in its 36-bit form (18 kbit / 36): the deepest bank that maps to
/// one block RAM with its output register.
pub const EBR_ROWS: usize = 512;

/// A bank of `2^A` words of 32 bits, read two cycles after its address.
#[derive(LogicBlock, Default)]
pub struct Bank<const A: usize> {
    /// Clock of both ports.
    pub clock: Signal<In, Clock>,
    /// The row read (its word in `read_data` two cycles later).
    pub read_address: Signal<In, Bits<A>>,
    /// The word at `read_address` of two cycles before.
    pub read_data: Signal<Out, Bits<32>>,
    /// The row written.
    pub write_address: Signal<In, Bits<A>>,
    /// The word written.
    pub write_data: Signal<In, Bits<32>>,
    /// Write `write_data` at `write_address` (registered, landing at the end of the
    /// next cycle).
    pub write_enable: Signal<In, Bit>,
    _words: Vec<u32>,
    _latched: u32,
    /// The write registered at the last edge: (enable, row, word).
    _pending: (bool, usize, u32),
}

impl<const A: usize> Logic for Bank<A> {
    fn update(&mut self) {
        // Once per rising edge (RustHDL's `pos_edge` holds for one update): the output
        // register takes the word read at the last edge, the read latches the word at
        // the address now, then the write registered at the last edge lands (a read of
        // the row it lands on is the old word here; the FPGA's is undefined, and the
        // Verilator test poisons it) and the write given now is registered.
        if self.clock.pos_edge() {
            if self._words.len() != 1 << A {
                self._words = vec![0; 1 << A];
            }
            self.read_data.next = u64::from(self._latched).into();
            self._latched = self._words[self.read_address.val().index()];
            let (enable, row, word) = self._pending;
            if enable {
                self._words[row] = word;
            }
            self._pending =
                (self.write_enable.val(), self.write_address.val().index(), self.write_data.val().to_u64() as u32);
        }
    }

    fn connect(&mut self) {
        self.read_data.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper { code: bank_verilog(A), cores: String::new() })
    }
}

/// The body of a bank's Verilog module (its ports are RustHDL's: `clock`,
/// `read_address`, `read_data` (a wire), `write_address`, `write_data`,
/// `write_enable`), `a` address bits.
fn bank_verilog(a: usize) -> String {
    let rows = 1usize << a;
    // The write, registered beside the block in both forms; no write pending at power-up
    // (the design has no reset: its flip-flops start from their initial values).
    let write_registers = format!(
        "reg [{top}:0] write_row_r = 0;
reg [31:0] write_word_r = 0;
reg write_r = 1'b0;
always @(posedge clock) begin
   write_row_r <= write_address;
   write_word_r <= write_data;
   write_r <= write_enable;
end
",
        top = a - 1
    );
    let inferred = format!(
        "reg [31:0] mem [0:{last}];
reg [31:0] latched;
reg [31:0] out_reg;
assign read_data = out_reg;
always @(posedge clock) begin
   latched <= mem[read_address];
   out_reg <= latched;
end
always @(posedge clock) begin
   if (write_r) begin
      mem[write_row_r] <= write_word_r;
   end
end
",
        last = rows - 1
    );
    if rows > EBR_ROWS {
        return format!("{write_registers}{inferred}");
    }
    // The 36-bit form: the write port is A (the write enable on all four byte enables
    // ADA0..3, the row on ADA5..13, the port itself always enabled), the read port is B
    // (the row on ADB5..13); the word is DIA/DOA (bits 0..17) and DIB/DOB (bits 18..35).
    // REGMODE is set on both ports, as the block's 36-bit read drives both halves; both
    // ports' clock enables stay on, so that no output register can depend on a write.
    let mut pins = vec![
        ".CLKA(clock)".to_string(),
        ".WEA(1'b1)".into(),
        ".CEA(1'b1)".into(),
        ".OCEA(1'b1)".into(),
        ".RSTA(1'b0)".into(),
        ".CLKB(clock)".into(),
        ".WEB(1'b0)".into(),
        ".CEB(1'b1)".into(),
        ".OCEB(1'b1)".into(),
        ".RSTB(1'b0)".into(),
    ];
    for cs in 0..3 {
        pins.push(format!(".CSA{cs}(1'b0)"));
        pins.push(format!(".CSB{cs}(1'b0)"));
    }
    for bit in 0..4 {
        pins.push(format!(".ADA{bit}(write_r)"));
    }
    pins.push(".ADA4(1'b0)".into());
    for bit in 0..5 {
        pins.push(format!(".ADB{bit}(1'b0)"));
    }
    for bit in 5..14 {
        let row_bit = bit - 5;
        let (wa, ra) = if row_bit < a {
            (format!("write_row_r[{row_bit}]"), format!("read_address[{row_bit}]"))
        } else {
            ("1'b0".to_string(), "1'b0".to_string())
        };
        pins.push(format!(".ADA{bit}({wa})"));
        pins.push(format!(".ADB{bit}({ra})"));
    }
    for bit in 0..18 {
        pins.push(format!(".DIA{bit}(word_in[{bit}])"));
        pins.push(format!(".DIB{bit}(word_in[{}])", bit + 18));
        pins.push(format!(".DOA{bit}(word_out[{bit}])"));
        pins.push(format!(".DOB{bit}(word_out[{}])", bit + 18));
    }
    format!(
        "{write_registers}`ifdef FAIRSHARE_ECP5
wire [35:0] word_in = {{4'b0, write_word_r}};
wire [35:0] word_out;
assign read_data = word_out[31:0];
DP16KD #(
   .DATA_WIDTH_A(36), .DATA_WIDTH_B(36),
   .REGMODE_A(\"OUTREG\"), .REGMODE_B(\"OUTREG\"),
   .WRITEMODE_A(\"NORMAL\"), .WRITEMODE_B(\"NORMAL\"),
   .RESETMODE(\"SYNC\"), .ASYNC_RESET_RELEASE(\"SYNC\"),
   .CSDECODE_A(\"0b000\"), .CSDECODE_B(\"0b000\"),
   .GSR(\"AUTO\")
) ebr (
   {pins}
);
`else
{inferred}`endif
",
        pins = pins.join(",\n   ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Random reads and writes against an array: every word read comes out two cycles
    /// after its address, and each write lands at the end of the cycle after the one
    /// that gives it (a read of the row a write lands on in the same cycle is not
    /// compared: undefined on the FPGA).
    #[test]
    fn a_word_comes_out_two_cycles_after_its_address() {
        const A: usize = 3;
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut b = Bank::<A>::default();
        b.connect_all();
        let mut mem = [0u32; 1 << A];
        // The reads of the last two cycles (None: not compared).
        let mut in_flight: [Option<(usize, u32)>; 2] = [None, None];
        let mut compared = 0;
        // The write given in the last cycle, landing at the next edge.
        let mut landing: Option<(usize, u32)> = None;
        for cycle in 0..4_000 {
            let (read, write, word, enable) =
                (rng.gen_range(0..1 << A), rng.gen_range(0..1 << A), rng.gen::<u32>(), rng.gen_bool(0.4));
            b.read_address.next = (read as u64).into();
            b.write_address.next = (write as u64).into();
            b.write_data.next = u64::from(word).into();
            b.write_enable.next = enable;
            assert!(simulate(&mut b, 100));
            if let Some((row, want)) = in_flight[1] {
                assert_eq!(b.read_data.val().to_u64() as u32, want, "cycle {cycle}: row {row}");
                compared += 1;
            }
            in_flight[1] = in_flight[0];
            in_flight[0] = (landing.map(|(row, _)| row) != Some(read)).then_some((read, mem[read]));
            b.clock.next = true.into();
            assert!(simulate(&mut b, 100));
            b.clock.next = false.into();
            assert!(simulate(&mut b, 100));
            if let Some((row, w)) = landing {
                mem[row] = w;
            }
            landing = enable.then_some((write, word));
        }
        assert!(compared > 3_000, "{compared} reads compared");
    }

    /// Both forms of the Verilog: the DP16KD form (36-bit, output registers on) for a
    /// bank that fits one block RAM, with every row bit on its address pins; only the
    /// inferred form for a bank that does not.
    #[test]
    fn a_bank_that_fits_one_block_ram_has_the_dp16kd_form() {
        let v = bank_verilog(7);
        assert!(v.contains("write_r <= write_enable;") && v.contains("`ifdef FAIRSHARE_ECP5"), "{v}");
        // No write lands at power-up.
        assert!(v.contains("reg write_r = 1'b0;"), "{v}");
        for pin in [
            ".REGMODE_A(\"OUTREG\")",
            ".REGMODE_B(\"OUTREG\")",
            ".CEA(1'b1)",
            ".ADA3(write_r)",
            ".ADA11(write_row_r[6])",
            ".ADB11(read_address[6])",
            ".ADB12(1'b0)",
            ".DOB13(word_out[31])",
        ] {
            assert!(v.contains(pin), "{pin} missing:\n{v}");
        }
        assert!(v.contains("latched <= mem[read_address];"));
        let deep = bank_verilog(10);
        assert!(
            !deep.contains("DP16KD")
                && deep.contains("latched <= mem[read_address];")
                && deep.contains("mem[write_row_r] <= write_word_r;"),
            "{deep}"
        );
    }
}
