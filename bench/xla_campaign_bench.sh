#!/usr/bin/env bash
# The XLA campaign's throughput and where its time goes (issue "Fuzzing XLA's partitioners"):
# runs `spmdcheck fuzz --partitioner P` for T seconds with 1 job and with J jobs, and prints
# cases/s per job, the acceptance rate per partitioner, and the share of a case spent in the
# partitioners (XLA's compiles), XLA's executions, ours (generator, oracle, interpreter) and
# reductions. Aim: ours at most 15% of the checking time (reductions left out).
#   bench/xla_campaign_bench.sh [SECONDS] [PARTITIONERS] [JOBS]
# Defaults: 60 s, xla,shardy, nproc jobs. Needs the project's .venv with jax (or
# SPMDCHECK_XLA_VENV). Numbers depend on load: run on an idle machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${SPMDCHECK_BINARY:-$root/build/tools/spmdcheck}"
seconds="${1:-60}"
partitioners="${2:-xla,shardy}"
jobs="${3:-$(nproc)}"
seed="${SPMDCHECK_BENCH_SEED:-1}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for j in 1 "$jobs"; do
  # Reductions are left out (--reduce-seconds 0): they are per finding, not per case.
  "$bin" fuzz --partitioner "$partitioners" --seconds "$seconds" --seed "$seed" --jobs "$j" \
    --reduce-seconds 0 --no-bisect --known none --out "$tmp/out-$j" > "$tmp/log-$j" 2>&1 || true
  python3 - "$tmp/out-$j/summary.json" "$j" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
jobs = int(sys.argv[2])
t = s["times"]
checking = t["cases"]
share = lambda x: 100.0 * x / checking if checking else 0.0
print(f"== {s['partitioners']}, {jobs} job(s), seed {s['seed']}: {s['cases']} cases in "
      f"{s['elapsed_seconds']:.0f} s = {s['cases_per_second']:.2f} cases/s "
      f"({s['cases_per_second'] / jobs:.2f} per job)")
for spec, p in sorted(s["per_partitioner"].items()):
  print(f"   {spec}: accepted {100 * p['acceptance_rate']:.1f}% of {p['cases']}, "
        f"holds {p['holds']}, failures {p['failures']}, to investigate {p['to_investigate']}, "
        f"unknown {p['unknown']}")
print(f"   time per case: partitioners {share(t['partition']):.0f}%, XLA's executions "
      f"{share(t['execute']):.0f}%, ours {share(t['generate'] + t['interpreter'] + t['oracle']):.1f}% "
      f"(generator {share(t['generate']):.1f}%, oracle {share(t['oracle']):.1f}%, "
      f"interpreter {share(t['interpreter']):.1f}%), other {share(t['other']):.0f}% (worker round "
      f"trips, printing modules, parsing XLA's dumps); aim: ours <= 15%")
PY
done
