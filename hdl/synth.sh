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
  ffs=0
  for ff in SB_DFF SB_DFFE SB_DFFSR SB_DFFSS SB_DFFESR SB_DFFESS SB_DFFR SB_DFFS SB_DFFER SB_DFFES; do
    ffs=$((ffs + $(count "$ff" "$work/ice40_$lanes.log")))
  done
  echo "| $lanes | $users | iCE40 (synth_ice40) | $(count SB_LUT4 "$work/ice40_$lanes.log") | $(count SB_CARRY "$work/ice40_$lanes.log") | $ffs | $(count SB_RAM40_4K "$work/ice40_$lanes.log") x 4 kbit |" >> "$work/report.md"
  yosys -p "read_verilog $work/e$lanes.v; synth -flatten -top top; stat" > "$work/generic_$lanes.log"
  cells=$(awk '/Number of cells:/ { v = $4 } END { print v + 0 }' "$work/generic_$lanes.log")
  gffs=$(awk '$1 ~ /^\$_DFF/ || $1 ~ /^\$_SDFF/ || $1 ~ /^\$_DFFE/ || $1 ~ /^\$_SDFFE/ { s += $2 } END { print s + 0 }' "$work/generic_$lanes.log")
  bits=$(awk '/Number of memory bits:/ { v = $5 } END { print v + 0 }' "$work/generic_$lanes.log")
  echo "| $lanes | $users | generic (synth -flatten; RAM mapped to flip-flops) | $cells gates | | $gffs | $bits bits |" >> "$work/report.md"
done

{
  echo
  echo "## Place and route (iCE40 HX8K, ct256)"
  echo
  if nextpnr-ice40 --hx8k --package ct256 --json "$work/e1.json" --freq 12 > "$work/pnr.log" 2>&1; then
    echo "1 lane, 64 users: $(grep -m1 'Max frequency for clock' "$work/pnr.log" | sed 's/^Info: //')."
  else
    echo "1 lane, 64 users: **does not place**. nextpnr's packing reports"
    echo
    grep -E "ICESTORM_LC:|ICESTORM_RAM:|SB_IO:" "$work/pnr.log" | sed 's/^Info:[[:space:]]*/    /'
    echo
    echo "The logic fits. The I/O does not: the block's own ports (per-lane 32-bit demand, result"
    echo "and credit buses) need more pins than the package has. A real design reaches the block through"
    echo "a narrow bus (AXI4-Lite and streams inside the FPGA), which is not built yet, so there"
    echo "is no achieved clock to report."
  fi
} >> "$work/report.md"
mv "$work/report.md" "$report"
echo "wrote $report"
