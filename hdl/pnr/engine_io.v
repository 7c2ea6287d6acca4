// Place-and-route harness for a 1-lane engine (engine_shell with P = 1, A = 6, as
// written by `fairshare hdl verilog --top engine --users 64 --lanes 1`). The engine's
// 308 port bits do not fit any iCE40 package, and a real design reaches the block over
// a narrow bus anyway. Here every input bit comes from a flip-flop of one shift register
// (wide inputs read overlapping windows of it, so each bit still has its own source)
// and all output bits are folded by XOR into one registered pin, so none of the
// engine's logic can be optimized away and nextpnr times its internal paths. Used only
// by hdl/synth.sh.
module pnr_top(input wire clk, input wire sin, output reg sout = 0);
  reg [79:0] sr = 0;
  always @(posedge clk) sr <= {sr[78:0], sin};
  wire in_ready, out_valid, busy, done;
  wire [31:0] out_alloc, out_credit, credit_rdata, cycles;
  wire [3:0] error;
  engine_shell core(
    .clock(clk), .start(sr[0]), .mode(sr[2:1]), .n_users(sr[34:3]),
    .fair(sr[42:11]), .guaranteed(sr[50:19]), .in_valid(sr[51]),
    .in_ready(in_ready), .in_data(sr[79:48]), .out_valid(out_valid),
    .out_ready(sr[52]), .out_alloc(out_alloc), .out_credit(out_credit),
    .credit_row(sr[58:53]), .credit_write(sr[59]), .credit_wdata(sr[75:44]),
    .credit_rdata(credit_rdata), .busy(busy), .done(done), .error(error), .cycles(cycles));
  always @(posedge clk)
    sout <= ^{in_ready, out_valid, out_alloc, out_credit, credit_rdata, busy, done, error, cycles};
endmodule
