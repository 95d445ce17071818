#!/usr/bin/env bash
# The campaign's time budget (issue 26 item 1): `spmdcheck fuzz --seconds T` against XLA's
# partitioners must end within T + 10% of wall time, reductions and root-cause descents included.
# Prints the wall time, the budget and their ratio for each seed.
#   bench/campaign_budget.sh [SECONDS] [PARTITIONERS] [SEEDS...]
# Defaults: 30 s, xla,shardy, seeds 1 and 2 (seed 1 finds new signatures early, so reductions
# compete for the budget). Needs the project's .venv with jax (or SPMDCHECK_XLA_VENV).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${SPMDCHECK_BINARY:-$root/build/tools/spmdcheck}"
seconds="${1:-30}"
partitioners="${2:-xla,shardy}"
shift $(($# > 2 ? 2 : $#))
seeds=("${@:-1 2}")
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for seed in ${seeds[@]}; do
  start=$(date +%s%N)
  SPMDCHECK_XLA_MATRIX=/nonexistent "$bin" fuzz --partitioner "$partitioners" --seconds "$seconds" \
    --seed "$seed" --known none --out "$tmp/out-$seed" > "$tmp/log-$seed" 2>&1 || true
  wall_ms=$((($(date +%s%N) - start) / 1000000))
  findings=$(ls "$tmp/out-$seed" | grep -c -v summary.json || true)
  awk -v w="$wall_ms" -v s="$seconds" -v seed="$seed" -v f="$findings" 'BEGIN {
    printf "seed %s: %.1f s wall for --seconds %s = %.3f of the budget (limit 1.100), %d finding folders\n",
      seed, w / 1000, s, w / 1000 / s, f }'
done
