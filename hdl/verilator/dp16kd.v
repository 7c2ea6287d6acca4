// A model of the ECP5 DP16KD block RAM as hdl/src/bank.rs uses it, for Verilator only
// (synthesis maps the real primitive): the 36-bit form with one write port (A) and one
// read port (B), output registers per REGMODE, byte enables on ADA0..3, the row on
// ADx5..13, chip selects against CSDECODE; the output register of both halves of the
// word follows port B's OCEB and RSTB (the bank ties OCEA = OCEB = 1, RSTA = RSTB = 0). Written from Lattice's description of the
// primitive (ECP5 memory usage guide); a real part cannot be checked here.
//
// Undefined behaviour is made visible, not hidden: a read of the row that port A writes
// (any byte of it) in the same cycle returns the complement of the stored word (the engine must never
// depend on one), and a configuration this model does not cover stops the simulation.
/* verilator lint_off UNUSEDSIGNAL */
module DP16KD(
  input DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0,
  input ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0,
  input CEA, OCEA, CLKA, WEA, RSTA,
  input CSA2, CSA1, CSA0,
  output DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0,
  input DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0,
  input ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0,
  input CEB, OCEB, CLKB, WEB, RSTB,
  input CSB2, CSB1, CSB0,
  output DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0
);
  parameter DATA_WIDTH_A = 18;
  parameter DATA_WIDTH_B = 18;
  parameter REGMODE_A = "NOREG";
  parameter REGMODE_B = "NOREG";
  parameter WRITEMODE_A = "NORMAL";
  parameter WRITEMODE_B = "NORMAL";
  parameter RESETMODE = "SYNC";
  parameter ASYNC_RESET_RELEASE = "SYNC";
  parameter CSDECODE_A = "0b000";
  parameter CSDECODE_B = "0b000";
  parameter GSR = "ENABLED";

  initial begin
    if (DATA_WIDTH_A != 36 || DATA_WIDTH_B != 36) $fatal(1, "DP16KD model: only the 36-bit form is modelled");
    if (REGMODE_A != REGMODE_B) $fatal(1, "DP16KD model: the 36-bit read needs one REGMODE on both ports");
    if (CSDECODE_A != "0b000" || CSDECODE_B != "0b000") $fatal(1, "DP16KD model: only CSDECODE 0b000");
  end

  wire [8:0] write_row = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5};
  wire [3:0] byte_enable = {ADA3, ADA2, ADA1, ADA0};
  wire [8:0] read_row = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5};
  wire [35:0] word_in = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0, DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
  wire write_on = CEA && WEA && {CSA2, CSA1, CSA0} == 3'b000;
  wire read_on = CEB && {CSB2, CSB1, CSB0} == 3'b000;

  reg [35:0] mem [0:511];
  reg [35:0] latched;
  reg [35:0] out_reg;
  wire [35:0] word_out = REGMODE_B == "OUTREG" ? out_reg : latched;
  assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0, DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} = word_out;

  always @(posedge CLKB) begin
    if (read_on) latched <= write_on && |byte_enable && write_row == read_row ? ~mem[read_row] : mem[read_row];
    if (RSTB) out_reg <= 36'b0;
    else if (OCEB) out_reg <= latched;
  end
  integer i;
  always @(posedge CLKA) begin
    if (write_on) begin
      for (i = 0; i < 4; i = i + 1) begin
        if (byte_enable[i]) mem[write_row][9 * i +: 9] <= word_in[9 * i +: 9];
      end
    end
  end
endmodule
/* verilator lint_on UNUSEDSIGNAL */
