#!/usr/bin/env bash
# The lint over XLA's own partitioned outputs (issue 14): every module of a conformance directory
# is partitioned by XLA's GSPMD (`spmdcheck partition --partitioner xla`, the pinned jaxlib) and
# the result linted as a user would lint a dump (only the parameters carry shardings; the lint
# infers the rest). Writes OUT/<name>.hlo (XLA's partitioned module), OUT/<name>.json (the lint
# report) and OUT/summary.txt; prints one line per module with findings and the totals.
#
#   SPMDCHECK_XLA_VENV=/work/main/.venv bench/xla_lint_sweep.sh [DIR] [OUT]
#
# DIR defaults to ../shared/conformance/xla-spmd-2023, OUT to xla-lint-sweep/. Takes minutes
# (XLA compiles every module): not part of the test suite. Reruns reuse OUT/<name>.hlo.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${SPMDCHECK_BIN:-$root/build/tools/spmdcheck}"
dir="${1:-$root/../shared/conformance/xla-spmd-2023}"
out="${2:-$root/xla-lint-sweep}"
mkdir -p "$out"
for hlo in "$dir"/*.hlo; do
  name="$(basename "$hlo" .hlo)"
  if [ ! -s "$out/$name.hlo" ]; then
    if ! timeout 300 "$bin" partition "$hlo" --partitioner xla -o "$out/$name.hlo" \
        >"$out/$name.partition.log" 2>&1; then
      rm -f "$out/$name.hlo"
      continue
    fi
  fi
  timeout 600 "$bin" lint "$out/$name.hlo" --format json --timeout-ms 20000 >"$out/$name.json" \
    2>"$out/$name.lint.log"
done
python3 - "$out" <<'PY' | tee "$out/summary.txt"
import json, os, sys
out = sys.argv[1]
partitioned = linted = chains = unannotated = inferred = 0
totals = {"proved": 0, "unproven": 0, "incorrect": 0}
for name in sorted(os.listdir(out)):
    if not name.endswith(".json"):
        continue
    try:
        report = json.load(open(os.path.join(out, name)))
    except Exception:
        continue
    linted += 1
    chains += report["chains"]
    unannotated += report["inference"]["unannotated"]
    inferred += len(report["inference"]["holdings"])
    for key in totals:
        totals[key] += report["summary"][key]
    for f in report["findings"]:
        if f["status"] == "unproven":
            continue
        c, p = f["current"], f["proposed"]
        print(f"{name[:-5]}: {f['status']} [{f['rule']}] {c['collectives']} -> {p['collectives']} "
              f"collective(s), {c['max_recv_bytes']} -> {p['max_recv_bytes']} B; {f['proof'][:60]}")
partitioned = sum(1 for n in os.listdir(out) if n.endswith(".hlo"))
print(f"modules partitioned by XLA: {partitioned}, linted: {linted}, chains examined: {chains}, "
      f"values inferred: {inferred} of {unannotated} unannotated")
print(f"findings: {totals['proved']} proved, {totals['unproven']} unproven, "
      f"{totals['incorrect']} incorrect")
PY
