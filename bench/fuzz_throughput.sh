#!/usr/bin/env bash
# Fuzzing throughput (issue 5): cases per second of `spmdcheck fuzz` on one core for the default
# size distribution, and exec/s of each libFuzzer target when a clang fuzz build exists.
#   bench/fuzz_throughput.sh [BUILD_DIR] [FUZZ_BUILD_DIR]
# Defaults: build/ (g++) and build-fuzz/ (clang, -DSPMDCHECK_FUZZ=ON). Numbers depend on load;
# run on an idle machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
fuzz_build="${2:-$root/build-fuzz}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "== spmdcheck fuzz, 1 job, 30 s"
"$build/tools/spmdcheck" fuzz --seconds 30 --seed 1 --jobs 1 --out "$tmp/out" 2>/dev/null | grep '^cases:'
if [ -d "$fuzz_build/fuzz" ]; then
  for target in fuzz_hlo_parser fuzz_sharding_parser fuzz_literal_parser fuzz_partition fuzz_reshard; do
    bin="$fuzz_build/fuzz/$target"
    [ -x "$bin" ] || continue
    mkdir -p "$tmp/$target"
    cp -r "$root/corpus/$target/." "$tmp/$target/" 2>/dev/null || true
    # Wall-clock exec/s depends on the load; executions per CPU-second (user + sys of the
    # fuzzer process) much less.
    # The target's own libFuzzer flags (max_len, ...) from fuzz/targets/NAME.options, as the
    # fuzz smoke and ClusterFuzzLite run it.
    mapfile -t flags < <(sed -n 's/^\([a-z_]*\) *= *\(.*\)$/-\1=\2/p' "$root/fuzz/targets/$target.options" 2>/dev/null)
    status=0
    /usr/bin/time -f "%U %S" -o "$tmp/$target.time" "$bin" -max_total_time="${SECONDS_PER_TARGET:-20}" \
      "${flags[@]}" -print_final_stats=1 -seed=1 "$tmp/$target" > "$tmp/$target.log" 2>&1 || status=$?
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/$target.log")"
    wall="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$tmp/$target.log")"
    # time(1) puts "Command exited with non-zero status N" before its numbers then.
    cpu="$(tail -n 1 "$tmp/$target.time" | awk '{print $1 + $2}')"
    echo "== $target (${flags[*]}): $runs runs, $wall exec/s wall, $(awk -v r="$runs" -v c="$cpu" 'BEGIN {printf "%.0f", r / c}') exec per CPU-second$([ "$status" = 0 ] || echo ", exit $status: $(grep -m1 -E '^==[0-9]+==ERROR|^SUMMARY' "$tmp/$target.log")")"
  done
else
  echo "(no clang fuzz build at $fuzz_build: cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DSPMDCHECK_FUZZ=ON)"
fi
