#!/usr/bin/env bash
# The XLA campaign against its limit (issue 26, item 2): the same generated modules through a
# bare jax loop (bench/bare_jax_loop.py: HLO -> StableHLO, XLA's sharded and one-device
# compiles, one execution each, nothing else) and through `spmdcheck fuzz --partitioner xla`
# (1 job, GSPMD), in alternating rounds so that load drifts hit both alike. Prints per round the
# cases/s of each, their ratio (aim: campaign >= 0.85 of the bare loop), and where the
# campaign's time went: XLA compiling and executing (timed inside jaxlib by the worker) and ours
# (every other second of the cases: generator, oracle, interpreter, round trips, dumps; the lint
# runs on a thread of its own beside the cases and is printed apart).
# A first campaign run writes the modules (--save-modules) and its findings; the measured runs
# know those findings (counted, not handed over again: that is per finding, not per case).
# Wall times move with the machine's load: the ratio of CPU seconds (user + system, the
# processes and their children) is printed too and is the one to trust on a busy machine.
#   bench/xla_vs_jax_bench.sh [CASES] [SEED] [ROUNDS]
# Defaults: 60 cases, seed 7, 2 rounds. Needs the project's .venv with jax (or SPMDCHECK_XLA_VENV).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${SPMDCHECK_BINARY:-$root/build/tools/spmdcheck}"
venv="${SPMDCHECK_XLA_VENV:-$root/.venv}"
cases="${1:-60}"
seed="${2:-7}"
rounds="${3:-2}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# measure CPU_FILE COMMAND...: runs it and writes the CPU seconds (user + system) of it and its
# children, the load-proof measure (wall time moves with whatever else the machine runs).
measure() {
  local cpu_file="$1"
  shift
  python3 -c '
import resource, subprocess, sys
with open(sys.argv[2], "w") as out:
  code = subprocess.call(sys.argv[3:], stdout=out, stderr=subprocess.STDOUT)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(str(usage.ru_utime + usage.ru_stime))
sys.exit(code)' "$cpu_file" "$cpu_file.log" "$@" || true
}
campaign() {  # campaign OUT_DIR [extra flags]
  local out="$1"
  shift
  measure "$out.cpu" "$bin" fuzz --partitioner xla --cases "$cases" --seed "$seed" --jobs 1 \
    --sdy-percent 0 --reduce-seconds 0 --no-bisect --xla-venv "$venv" --out "$out" "$@"
  [ -f "$out/summary.json" ] || { echo "the campaign wrote no summary:"; tail -5 "$out.cpu.log"; exit 2; }
}
echo "== $cases modules of seed $seed, $rounds round(s); jax: $("$venv/bin/python" -c 'import jax; print(jax.__version__)')"
campaign "$tmp/save" --save-modules "$tmp/modules"
# The findings of the first run are known to the measured runs (counted, not handed over
# again), so that their time is the cases' time, as the bare loop's is.
python3 - "$root/corpus/xla-findings/known.json" "$tmp/save/summary.json" "$tmp/known.json" <<'PY'
import json, sys
known = json.load(open(sys.argv[1]))
seen = sorted({f["signature"] for f in json.load(open(sys.argv[2]))["findings"]})
known["findings"].append({"name": "seen-by-the-first-run", "signatures": seen})
json.dump(known, open(sys.argv[3], "w"))
PY
for round in $(seq 1 "$rounds"); do
  measure "$tmp/bare-$round.cpu" "$venv/bin/python" "$root/bench/bare_jax_loop.py" "$tmp/modules"
  campaign "$tmp/campaign-$round" --known "$tmp/known.json"
  python3 - "$tmp/bare-$round.cpu.log" "$tmp/campaign-$round/summary.json" "$round" \
    "$tmp/bare-$round.cpu" "$tmp/campaign-$round.cpu" <<'PY'
import json, sys
bare = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
s = json.load(open(sys.argv[2]))
bare_cpu = float(open(sys.argv[4]).read())
campaign_cpu = float(open(sys.argv[5]).read())
t = s["times"]
cases = s["cases"]
bare_rate = bare["modules"] / bare["seconds"]
rate = cases / t["cases"] if t["cases"] > 0 else 0.0
wall_rate = cases / s["elapsed_seconds"] if s["elapsed_seconds"] > 0 else 0.0
share = lambda x: 100.0 * x / t["cases"] if t["cases"] else 0.0
ours = t["cases"] - t["partition"] - t["execute"]
print(f"round {sys.argv[3]}: bare jax loop {bare_rate:.2f} cases/s ({bare['seconds']:.1f} s: "
      f"XLA compiling {bare['compile_seconds']:.1f} s, executing {bare['execute_seconds']:.1f} s; "
      f"{bare['compiled']} compiled, {bare['rejected']} rejected, {bare['crashed']} crashed)")
print(f"  campaign {rate:.2f} cases/s over its cases' {t['cases']:.1f} s "
      f"({wall_rate:.2f} over its whole {s['elapsed_seconds']:.1f} s)")
print(f"  ratio campaign/bare: {rate / bare_rate:.3f} over the cases' wall time (aim >= 0.85); "
      f"whole wall {wall_rate / bare_rate:.3f}; per CPU-second {bare_cpu / campaign_cpu:.3f} "
      f"(bare {bare_cpu:.1f} s, campaign {campaign_cpu:.1f} s: the measure load does not "
      f"move)")
print(f"  campaign's case time: XLA compiling {share(t['partition']):.0f}%, XLA executing and the "
      f"one-device compile {share(t['execute']):.0f}%, ours {share(ours):.0f}% (generator "
      f"{share(t['generate']):.1f}%, oracle {share(t['oracle']):.1f}%, interpreter "
      f"{share(t['interpreter']):.1f}%, round-trip judge {share(t.get('round_trip_judge', 0)):.1f}%, "
      f"round trips, worker starts and dumps "
      f"{share(t['other']):.1f}%); the lint {t['lint']:.1f} s on its own thread, beside the cases")
PY
done
