#!/usr/bin/env bash
# The regions sweep of docs/sim/regions/analysis.md, section 3: the FIFO 2x5
# world (tools/sim/rules/regions/fifo-5v5.json) with its regions rule's
# `maxLatencyMs` and `widenPerSecond` set per run, on each map, 5 minutes at
# 20 arrivals/s, seed 7, x10. Each run is `mm-sim --regions` (the release
# build scripts/sim.sh makes); the table is read from each run's report.md
# "Done criteria" rows, i.e. computed by the report's one definition of
# (R1) and (R2) (tools/sim/src/regional/criteria.rs; docs/simulator.md,
# "Criteria: one definition each"), never recomputed here.
#
#   tools/sim/sweep-regions.sh OUT MAP:MAX:WIDEN ...
#
# MAP is a file of tools/sim/geography without .json (world, neighbours-30,
# ...). Each run takes about 45 s of wall time and both cores of a 2-core
# machine; a run whose report says TOO SLOW is marked in the table.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:?usage: tools/sim/sweep-regions.sh OUT MAP:MAX:WIDEN ...}"
shift
bin="${CARGO_TARGET_DIR:-target}/release/mm-sim"
[ -x "$bin" ] || { echo "build first: cargo build --release -p sim" >&2; exit 1; }
mkdir -p "$out"
echo "| map | maxLatencyMs | widenPerSecond | (R1) ≤ 1.2× | (R2) asia ≤ 0.5× | (R2) oceania ≤ 0.5× | run |"
echo "|---|---:|---:|---|---|---|---|"
for spec in "$@"; do
  IFS=: read -r map max widen <<<"$spec"
  dir="$out/$map-m$max-w$widen"
  mkdir -p "$dir"
  rules="$dir/fifo-5v5.json"
  python3 - "$max" "$widen" >"$rules" <<'EOF'
import json, sys
rs = json.load(open("tools/sim/rules/regions/fifo-5v5.json"))
r = rs["worlds"][0]["regions"]
r["maxLatencyMs"], r["widenPerSecond"] = float(sys.argv[1]), float(sys.argv[2])
print(json.dumps(rs, indent=2))
EOF
  if [ ! -f "$dir/report.md" ]; then
    "$bin" --regions --minutes 5 --speed 10 --seed 7 \
      --geography "tools/sim/geography/$map.json" --rules "$rules" \
      --out "$dir" >"$dir/stdout.txt" 2>"$dir/stderr.txt" || true
  fi
  report="$dir/report.md"
  [ -f "$report" ] || report="$(find "$dir" -name report.md | head -1)"
  cell() { # the criterion's ratio from the report's row; bold: met
    grep -F "| fifo-5v5 regions | ($1)" "$report" | grep -F "$2" | head -1 | python3 -c '
import re, sys
row = sys.stdin.read().split("|")
verdict, detail = row[3].strip(), row[4].strip()
m = re.search(r": ([0-9.]+x|–)", detail)
ratio = (m.group(1) if m else "?").replace("x", "×")
u = re.search(r"\((\d+) vs (\d+) unmatched", detail)
note = f" ({u.group(1)} vs {u.group(2)} unmatched)" if u and u.group(1) != u.group(2) else ""
print((f"**{ratio}**" if "PASS" in verdict else ratio) + note)'
  }
  slow=""
  grep -q "TOO SLOW" "$report" && slow="TOO SLOW"
  echo "| $map | $max | $widen | $(cell R1 latency) | $(cell R2 asia) | $(cell R2 oceania) | ${slow:-kept up} |"
done
