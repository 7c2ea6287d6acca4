// A model of the ECP5 MULT18X18D multiplier as hdl/src/multiplier.rs uses it, for
// simulation only (synthesis maps the real primitive): unsigned 18 x 18 bit products,
// input and output registers on clock 0 or off per REG_INPUTA_CLK, REG_INPUTB_CLK and
// REG_OUTPUT_CLK, no pipeline register, CE0 and RST0 on the registers. Written from
// Lattice's description of the primitive (ECP5 sysDSP usage guide); a real part cannot
// be checked here. A configuration this model does not cover stops the simulation.
/* verilator lint_off UNUSEDSIGNAL */
module MULT18X18D(
  input A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0,
  input B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0,
  input C17, C16, C15, C14, C13, C12, C11, C10, C9, C8, C7, C6, C5, C4, C3, C2, C1, C0,
  input CLK0, CLK1, CLK2, CLK3, CE0, CE1, CE2, CE3, RST0, RST1, RST2, RST3,
  input SIGNEDA, SIGNEDB, SOURCEA, SOURCEB,
  output P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0
);
  parameter REG_INPUTA_CLK = "NONE";
  parameter REG_INPUTB_CLK = "NONE";
  parameter REG_PIPELINE_CLK = "NONE";
  parameter REG_OUTPUT_CLK = "NONE";

  initial begin
    if (REG_INPUTA_CLK != "NONE" && REG_INPUTA_CLK != "CLK0") $fatal(1, "MULT18X18D model: REG_INPUTA_CLK on CLK0 or NONE only");
    if (REG_INPUTB_CLK != "NONE" && REG_INPUTB_CLK != "CLK0") $fatal(1, "MULT18X18D model: REG_INPUTB_CLK on CLK0 or NONE only");
    if (REG_OUTPUT_CLK != "NONE" && REG_OUTPUT_CLK != "CLK0") $fatal(1, "MULT18X18D model: REG_OUTPUT_CLK on CLK0 or NONE only");
    if (REG_PIPELINE_CLK != "NONE") $fatal(1, "MULT18X18D model: no pipeline register");
  end

  wire [17:0] a_in = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
  wire [17:0] b_in = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};
  reg [17:0] a_reg;
  reg [17:0] b_reg;
  reg [35:0] p_reg;
  wire [17:0] a = REG_INPUTA_CLK == "CLK0" ? a_reg : a_in;
  wire [17:0] b = REG_INPUTB_CLK == "CLK0" ? b_reg : b_in;
  wire [35:0] product = {18'b0, a} * {18'b0, b};
  assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0} = REG_OUTPUT_CLK == "CLK0" ? p_reg : product;

  always @(posedge CLK0) begin
    if (SIGNEDA || SIGNEDB || SOURCEA || SOURCEB) $fatal(1, "MULT18X18D model: unsigned products of A and B only");
    if (RST0) begin
      a_reg <= 18'b0;
      b_reg <= 18'b0;
      p_reg <= 36'b0;
    end else if (CE0) begin
      a_reg <= a_in;
      b_reg <= b_in;
      p_reg <= product;
    end
  end
endmodule
/* verilator lint_on UNUSEDSIGNAL */
