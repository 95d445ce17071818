#!/usr/bin/env bash
# Ray's overhead (docs/ray.md): cases/s of the same campaign (seed, seconds, partitioner) run as
#   plain `spmdcheck fuzz --jobs 1` and `--jobs 2` (one process),
#   plain shards: two `spmdcheck fuzz --shard i/2` processes side by side (what Ray runs, without
#   Ray), and
#   workers/ray/ray_fuzz.py --address local with 1 and 2 workers (one spmdcheck per actor),
# then ratios. Ray's rate is over the driver's whole wall time (ray.init, actor start, result
# shipping and merging included); the rate of the shards' own campaigns is printed too.
# Every spmdcheck runs in a session of its own (setsid), as the actors' do: with the kernel's
# autogroup scheduling a session is one scheduling group, so on a machine loaded by others
# one process with two threads would get half the CPU of two processes in two sessions.
#   bench/ray_bench.sh SPMDCHECK [SECONDS=20] [SEED=1] [PARTITIONER=reference]
# Environment: SPMDCHECK_XLA_VENV (the Python with ray, and jax for xla; default .venv).
set -euo pipefail
if [ "$#" -lt 1 ]; then
  sed -n '2,8p' "$0"
  exit 2
fi
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
seconds="${2:-20}"
seed="${3:-1}"
partitioner="${4:-reference}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${SPMDCHECK_XLA_VENV:-$root/.venv}"
python="$venv/bin/python"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$python" -c "import ray" 2>/dev/null || {
  echo "ray is not installed in $venv (pip install -r workers/ray/requirements.txt)"
  exit 2
}
echo "ray bench: --partitioner $partitioner --seed $seed --seconds $seconds, $(nproc) CPU(s)," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"

# rate FILE -> "cases wall cases/s shard-cases/s" from a summary.json
rate() {
  "$python" - "$1" "$2" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
wall = float(sys.argv[2])
shards = s.get("ray", {}).get("shards", [])
inner = sum(x.get("cases_per_second", 0.0) for x in shards) if shards else s["cases_per_second"]
print("%d %.2f %.2f %.2f" % (s["cases"], wall, s["cases"] / wall, inner))
EOF
}

run() {
  local name="$1"
  shift
  local start end
  start=$(date +%s.%N)
  if [ "$1" = shards2 ]; then
    shift
    setsid "$@" --shard 0/2 --out "$tmp/$name.0" >"$tmp/$name.log.0" 2>&1 &
    setsid "$@" --shard 1/2 --out "$tmp/$name.1" >"$tmp/$name.log.1" 2>&1 &
    wait
    "$python" - "$tmp/$name" "$tmp/$name.0/summary.json" "$tmp/$name.1/summary.json" <<'EOF'
import json, os, sys
a, b = (json.load(open(p)) for p in sys.argv[2:])
os.makedirs(sys.argv[1], exist_ok=True)
json.dump({"cases": a["cases"] + b["cases"],
           "cases_per_second": a["cases_per_second"] + b["cases_per_second"]},
          open(os.path.join(sys.argv[1], "summary.json"), "w"))
EOF
  else
    setsid "$@" >"$tmp/$name.log" 2>&1 || true
  fi
  end=$(date +%s.%N)
  [ -f "$tmp/$name/summary.json" ] || {
    echo "$name: no summary"
    tail -20 "$tmp/$name.log"
    exit 1
  }
  read -r cases wall cps inner < <(rate "$tmp/$name/summary.json" "$(echo "$end - $start" | bc)")
  printf '  %-18s %7d cases in %6.1fs wall: %8.1f cases/s (campaigns themselves: %.1f/s)\n' \
    "$name" "$cases" "$wall" "$cps" "$inner"
  echo "$cps" >"$tmp/$name.rate"
  echo "$inner" >"$tmp/$name.inner"
  echo "$wall" >"$tmp/$name.wall"
}

common=(--seed "$seed" --seconds "$seconds" --partitioner "$partitioner")
run plain-jobs1 "$bin" fuzz "${common[@]}" --jobs 1 --out "$tmp/plain-jobs1"
run plain-jobs2 "$bin" fuzz "${common[@]}" --jobs 2 --out "$tmp/plain-jobs2"
run plain-shards2 shards2 "$bin" fuzz "${common[@]}" --jobs 1
run ray-workers1 "$python" "$root/workers/ray/ray_fuzz.py" --address local --spmdcheck "$bin" \
  "${common[@]}" --workers 1 --out "$tmp/ray-workers1"
run ray-workers2 "$python" "$root/workers/ray/ray_fuzz.py" --address local --spmdcheck "$bin" \
  "${common[@]}" --workers 2 --out "$tmp/ray-workers2"
ratio() { printf '%.3f' "$(echo "scale=4; $(cat "$tmp/$1.$3") / $(cat "$tmp/$2.$3")" | bc)"; }
echo "ratios (cases/s over the whole wall time; in brackets the shards' own campaigns):"
for pair in "ray-workers1 plain-jobs1" "ray-workers2 plain-shards2" "ray-workers2 plain-jobs2" \
  "ray-workers2 ray-workers1" "plain-jobs2 plain-jobs1" "plain-shards2 plain-jobs1"; do
  read -r a b <<<"$pair"
  printf '  %-13s / %-13s %s (%s)\n' "$a" "$b" "$(ratio "$a" "$b" rate)" "$(ratio "$a" "$b" inner)"
done
# Ray's fixed cost: the driver's wall time beyond the plain campaign's (start the interpreter,
# import ray, start or join the cluster, start the actors, ship and merge, shut down).
printf '  Ray fixed cost, 1 worker: %.1fs, 2 workers: %.1fs\n' \
  "$(echo "$(cat "$tmp/ray-workers1.wall") - $(cat "$tmp/plain-jobs1.wall")" | bc)" \
  "$(echo "$(cat "$tmp/ray-workers2.wall") - $(cat "$tmp/plain-shards2.wall")" | bc)"
