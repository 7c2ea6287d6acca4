//! A 16 x 16 bit unsigned multiplier with registered operands and a registered product:
//! the product of the operands of cycle `t` comes out in cycle `t + 2`.
//!
//! Why the registers are the multiplier's own: on an ECP5, a MULT18X18D without its
//! registers takes 3.93 ns from its inputs to its product (nextpnr's model, speed grade
//! 6), and the wires from the operand registers and to the product's register made a
//! multiplier the engine's critical path once the banks had their output registers
//! (hdl/SYNTHESIS.md). With `REG_INPUTA_CLK`, `REG_INPUTB_CLK` and `REG_OUTPUT_CLK` on,
//! the block registers both ends itself. The settings used to put those registers
//! beside each multiplier; they are now the block's, so no latency changes.
//!
//! The Verilog carries both forms, as [`crate::bank`]'s does: by default the two
//! registers and a product Yosys (or Verilator) infers; with `FAIRSHARE_ECP5` defined
//! (hdl/synth.sh for ECP5) one MULT18X18D with its input and output registers on. The
//! Verilator test runs the engine in both forms, the primitive under
//! `hdl/verilator/mult18x18d.v`. Owns the multiplier's timing; depends on nothing.

use rust_hdl::prelude::*;

/// A multiplier of two 16-bit operands, the 32-bit product two cycles later.
#[derive(LogicBlock, Default)]
pub struct Multiplier {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// One operand.
    pub a: Signal<In, Bits<16>>,
    /// The other operand.
    pub b: Signal<In, Bits<16>>,
    /// `a * b` of two cycles before.
    pub product: Signal<Out, Bits<32>>,
    _a: u32,
    _b: u32,
}

impl Logic for Multiplier {
    fn update(&mut self) {
        // Once per rising edge (RustHDL's `pos_edge` holds for one update): the product
        // register takes the registered operands' product, then the operands are taken.
        if self.clock.pos_edge() {
            self.product.next = u64::from(self._a * self._b).into();
            self._a = self.a.val().to_u64() as u32;
            self._b = self.b.val().to_u64() as u32;
        }
    }

    fn connect(&mut self) {
        self.product.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper { code: multiplier_verilog(), cores: String::new() })
    }
}

/// The body of the multiplier's Verilog module (its ports are RustHDL's: `clock`, `a`,
/// `b`, `product` (a wire)).
fn multiplier_verilog() -> String {
    let mut pins = vec![".CLK0(clock)".to_string(), ".CE0(1'b1)".into(), ".RST0(1'b0)".into()];
    for k in 1..4 {
        pins.push(format!(".CLK{k}(1'b0)"));
        pins.push(format!(".CE{k}(1'b0)"));
        pins.push(format!(".RST{k}(1'b0)"));
    }
    for pin in ["SIGNEDA", "SIGNEDB", "SOURCEA", "SOURCEB"] {
        pins.push(format!(".{pin}(1'b0)"));
    }
    for bit in 0..18 {
        let (a, b) = if bit < 16 { (format!("a[{bit}]"), format!("b[{bit}]")) } else { ("1'b0".into(), "1'b0".into()) };
        pins.push(format!(".A{bit}({a})"));
        pins.push(format!(".B{bit}({b})"));
        pins.push(format!(".C{bit}(1'b0)"));
    }
    for bit in 0..36 {
        pins.push(format!(".P{bit}(full[{bit}])"));
    }
    format!(
        "`ifdef FAIRSHARE_ECP5
wire [35:0] full;
assign product = full[31:0];
MULT18X18D #(
   .REG_INPUTA_CLK(\"CLK0\"), .REG_INPUTB_CLK(\"CLK0\"),
   .REG_PIPELINE_CLK(\"NONE\"), .REG_OUTPUT_CLK(\"CLK0\")
) dsp (
   {pins}
);
`else
reg [15:0] a_r;
reg [15:0] b_r;
reg [31:0] p_r;
assign product = p_r;
always @(posedge clock) begin
   a_r <= a;
   b_r <= b;
   p_r <= a_r * b_r;
end
`endif
",
        pins = pins.join(",\n   ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Random operands, the edges among them: every product two cycles after its
    /// operands.
    #[test]
    fn a_product_comes_out_two_cycles_after_its_operands() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut m = Multiplier::default();
        m.connect_all();
        let mut in_flight: [Option<u32>; 2] = [None, None];
        let mut compared = 0;
        for cycle in 0..3_000 {
            let edge = [0u32, 1, 0xFFFF];
            let (a, b) = if cycle % 7 == 0 {
                (edge[cycle % 3], edge[(cycle / 3) % 3])
            } else {
                (rng.gen_range(0..1 << 16), rng.gen_range(0..1 << 16))
            };
            m.a.next = u64::from(a).into();
            m.b.next = u64::from(b).into();
            assert!(simulate(&mut m, 100));
            if let Some(want) = in_flight[1] {
                assert_eq!(m.product.val().to_u64(), u64::from(want), "cycle {cycle}");
                compared += 1;
            }
            in_flight[1] = in_flight[0];
            in_flight[0] = Some(a * b);
            m.clock.next = true.into();
            assert!(simulate(&mut m, 100));
            m.clock.next = false.into();
            assert!(simulate(&mut m, 100));
        }
        assert!(compared > 2_900);
    }

    /// The MULT18X18D form: registers on at both ends, on clock 0, unsigned; every
    /// operand bit on its pin and the upper two tied low.
    #[test]
    fn the_ecp5_form_registers_both_ends_in_the_block() {
        let v = multiplier_verilog();
        for pin in [
            ".REG_INPUTA_CLK(\"CLK0\")",
            ".REG_INPUTB_CLK(\"CLK0\")",
            ".REG_OUTPUT_CLK(\"CLK0\")",
            ".REG_PIPELINE_CLK(\"NONE\")",
            ".A15(a[15])",
            ".B15(b[15])",
            ".A16(1'b0)",
            ".SIGNEDA(1'b0)",
            ".P31(full[31])",
        ] {
            assert!(v.contains(pin), "{pin} missing:\n{v}");
        }
        assert!(v.contains("p_r <= a_r * b_r;"));
    }
}
