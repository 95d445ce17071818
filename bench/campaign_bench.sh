#!/usr/bin/env bash
# Reference-campaign throughput of two spmdcheck binaries side by side (issue 13): the same
# `spmdcheck fuzz --cases K --seed S --jobs 1` on each, runs interleaved (A B A B ...) so that
# load from other processes hits both alike. Prints, per binary, the median wall-clock cases/s,
# cases per CPU-second (user+sys, less sensitive to a loaded machine) and, with CALLGRIND=1,
# instructions per case under callgrind (stable whatever the load); then NEW/BASE ratios.
#   bench/campaign_bench.sh BASE_BINARY NEW_BINARY [CASES=2000] [SEED=5] [ROUNDS=3]
# Build the base side by side, e.g.:
#   git archive BASE_COMMIT | tar -x -C /tmp/base && cmake -S /tmp/base -B /tmp/base/build -G Ninja \
#     -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/base/build --target spmdcheck
set -euo pipefail
if [ "$#" -lt 2 ]; then
  sed -n '2,10p' "$0"
  exit 2
fi
base="$1"
new="$2"
cases="${3:-2000}"
seed="${4:-5}"
rounds="${5:-3}"
callgrind_cases="${CALLGRIND_CASES:-200}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "campaign bench: --cases $cases --seed $seed --jobs 1, $rounds rounds, interleaved"
echo "  base: $base"
echo "  new:  $new"

# run NAME BINARY ROUND -> appends "wall cpu" to $tmp/NAME
run() {
  local name="$1" bin="$2" round="$3"
  local out="$tmp/$name.$round"
  /usr/bin/time -f "%e %U %S" -o "$out.time" "$bin" fuzz --cases "$cases" --seed "$seed" \
    --jobs 1 --out "$tmp/fz-$name" >"$out.txt" 2>/dev/null || true
  grep -q "^cases: $cases " "$out.txt" || {
    echo "$name did not finish $cases cases:"
    cat "$out.txt"
    exit 1
  }
  read -r wall user sys <"$out.time"
  echo "$wall $(echo "$user + $sys" | bc)" >>"$tmp/$name"
  # Both binaries must judge the same programs alike.
  grep '^cases:' "$out.txt" | sed 's/ (.*\/s)//; s/, elapsed.*//' >"$tmp/$name.verdict"
}

for ((r = 0; r < rounds; ++r)); do
  run base "$base" "$r"
  run new "$new" "$r"
done
if ! cmp -s "$tmp/base.verdict" "$tmp/new.verdict"; then
  echo "warning: the two binaries disagree on the cases:"
  cat "$tmp/base.verdict" "$tmp/new.verdict"
fi
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
declare -A wall_rate cpu_rate
for name in base new; do
  wall="$(cut -d' ' -f1 "$tmp/$name" | median)"
  cpu="$(cut -d' ' -f2 "$tmp/$name" | median)"
  wall_rate[$name]="$(echo "scale=1; $cases / $wall" | bc)"
  cpu_rate[$name]="$(echo "scale=1; $cases / $cpu" | bc)"
  printf "%-4s  %8s cases/s wall (median %ss)  %8s cases/CPU-s (median %ss)\n" "$name" \
    "${wall_rate[$name]}" "$wall" "${cpu_rate[$name]}" "$cpu"
done
printf "ratio new/base: wall %.2fx, per CPU-second %.2fx\n" \
  "$(echo "scale=4; ${wall_rate[new]} / ${wall_rate[base]}" | bc)" \
  "$(echo "scale=4; ${cpu_rate[new]} / ${cpu_rate[base]}" | bc)"

if [ "${CALLGRIND:-0}" = "1" ]; then
  declare -A instr
  for name in base new; do
    bin="$base"
    [ "$name" = new ] && bin="$new"
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$name" "$bin" fuzz \
      --cases "$callgrind_cases" --seed "$seed" --jobs 1 --out "$tmp/cgfz-$name" \
      >/dev/null 2>"$tmp/cg.$name.log" || true
    total="$(grep -E '^==[0-9]+== Collected' "$tmp/cg.$name.log" | awk '{print $4}')"
    instr[$name]="$((total / callgrind_cases))"
    printf "%-4s  %12d instructions per case (callgrind, %d cases)\n" "$name" "${instr[$name]}" \
      "$callgrind_cases"
  done
  printf "ratio base/new instructions per case: %.2fx\n" \
    "$(echo "scale=4; ${instr[base]} / ${instr[new]}" | bc)"
  echo "profiles: callgrind_annotate --inclusive=yes $tmp/cg.new (kept: rerun with KEEP=1)"
  if [ "${KEEP:-0}" = "1" ]; then
    cp "$tmp/cg.base" "$tmp/cg.new" "${KEEP_DIR:-/tmp}/"
    echo "copied to ${KEEP_DIR:-/tmp}/cg.base and cg.new"
  fi
fi
