#!/usr/bin/env bash
# Synthesizes the engine with Yosys (generic gates and iCE40) and tries place and route
# with nextpnr-ice40 (HX8K), then writes hdl/SYNTHESIS.md. Needs yosys, nextpnr-ice40
# and fpga-icestorm (apt-get install yosys nextpnr-ice40 fpga-icestorm).
set -euo pipefail
cd "$(dirname "$0")/.."
report=hdl/SYNTHESIS.md
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release -q -p fairshare-cli
fairshare=target/release/fairshare

# count NAME LOG: the number a Yosys `stat` prints for cell type NAME (0 if absent).
count() { awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }' "$2"; }

# ice40_row LANES USERS WHAT LOG: a table row of the iCE40 cells in a Yosys `stat` log.
ice40_row() {
  local ffs=0
  for ff in SB_DFF SB_DFFE SB_DFFSR SB_DFFSS SB_DFFESR SB_DFFESS SB_DFFR SB_DFFS SB_DFFER SB_DFFES; do
    ffs=$((ffs + $(count "$ff" "$4")))
  done
  echo "| $1 | $2 | $3 | $(count SB_LUT4 "$4") | $(count SB_CARRY "$4") | $ffs | $(count SB_RAM40_4K "$4") x 4 kbit |"
}

{
  echo "# Synthesis of the engine"
  echo
  echo "Written by \`hdl/synth.sh\` on $(date -u +%F) with $(yosys -V | head -n 1) and"
  echo "$(nextpnr-ice40 --version 2>&1 | head -n 1). Each row is one engine shape exported by"
  echo "\`fairshare hdl verilog --users N --lanes P\` (module \`top\`, 32-bit data path)."
  echo
  echo "| lanes P | users (capacity) | flow | LUT4 / gates | carry | flip-flops | block RAM |"
  echo "|---:|---:|---|---:|---:|---:|---:|"
} > "$work/report.md"

for shape in "1 64" "4 256"; do
  read -r lanes users <<< "$shape"
  "$fairshare" hdl verilog --users "$users" --lanes "$lanes" --top engine --out "$work/e$lanes.v" 2> /dev/null
  yosys -p "read_verilog $work/e$lanes.v; synth_ice40 -top top -json $work/e$lanes.json; stat" > "$work/ice40_$lanes.log"
  ice40_row "$lanes" "$users" "iCE40 (synth_ice40)" "$work/ice40_$lanes.log" >> "$work/report.md"
  yosys -p "read_verilog $work/e$lanes.v; synth -flatten -top top; stat" > "$work/generic_$lanes.log"
  cells=$(awk '/Number of cells:/ { v = $4 } END { print v + 0 }' "$work/generic_$lanes.log")
  gffs=$(awk '$1 ~ /^\$_DFF/ || $1 ~ /^\$_SDFF/ || $1 ~ /^\$_DFFE/ || $1 ~ /^\$_SDFFE/ { s += $2 } END { print s + 0 }' "$work/generic_$lanes.log")
  bits=$(awk '/Number of memory bits:/ { v = $5 } END { print v + 0 }' "$work/generic_$lanes.log")
  echo "| $lanes | $users | generic (synth -flatten; RAM mapped to flip-flops) | $cells gates | | $gffs | $bits bits |" >> "$work/report.md"
done

# The device top level (engine + AXI4-Lite registers + AXI-Stream), 4 lanes.
"$fairshare" hdl verilog --users 256 --lanes 4 --top device --out "$work/d4.v" 2> /dev/null
yosys -p "read_verilog $work/d4.v; synth_ice40 -top top; stat" > "$work/ice40_d4.log"
ice40_row 4 256 "iCE40, device top level (engine + AXI4-Lite + AXI-Stream)" "$work/ice40_d4.log" >> "$work/report.md"

{
  echo
  echo "## Place and route (iCE40 HX8K, ct256)"
  echo
  echo "The engine's own ports (308 bits for 1 lane) exceed every iCE40 package, so place and route"
  echo "uses \`hdl/pnr/engine_io.v\`: every input bit comes from a flip-flop of a shift register, all"
  echo "outputs fold by XOR into one registered pin, and nothing of the engine can be optimized away."
  echo "Synthesis for this run uses \`synth_ice40 -abc9\`, which packs tighter than the default flow above."
  echo
  yosys -q -p "read_verilog $work/e1.v $work/e1_shell.v hdl/pnr/engine_io.v; synth_ice40 -abc9 -top pnr_top -json $work/pnr.json" > "$work/pnr_synth.log" 2>&1
  if nextpnr-ice40 --hx8k --package ct256 --json "$work/pnr.json" --freq 12 --seed 1 > "$work/pnr.log" 2>&1; then
    lcs=$(grep -m1 "ICESTORM_LC:" "$work/pnr.log" | sed 's/^Info:[[:space:]]*//')
    ram=$(grep -m1 "ICESTORM_RAM:" "$work/pnr.log" | sed 's/^Info:[[:space:]]*//')
    fmax=$(grep "Max frequency for clock" "$work/pnr.log" | tail -n 1 | sed 's/^Info: //')
    echo "1 lane, 64 users (engine plus harness): placed and routed. $lcs; $ram."
    echo
    echo "**$fmax** (nextpnr's timing analysis after routing, seed 1)."
  else
    echo "1 lane, 64 users: **does not place or route**:"
    echo
    grep -E "ICESTORM_LC:|ICESTORM_RAM:|SB_IO:|ERROR" "$work/pnr.log" | sed 's/^Info:[[:space:]]*/    /'
  fi
} >> "$work/report.md"
mv "$work/report.md" "$report"
echo "wrote $report"
