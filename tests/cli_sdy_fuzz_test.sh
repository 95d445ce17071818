#!/usr/bin/env bash
# Shardy fuzzed at jax's level: `spmdcheck fuzz --partitioner shardy --sdy-percent 100` generates
# sdy-level programs (fuzz/sdy_program_gen.h), reads them through jaxlib and compiles them as
# jax.jit does; Shardy must accept at least 95% of them, and every one it does not accept must be
# a named XLA finding or a named unknown; a campaign's reductions stay inside its time budget.
# Usage: cli_sdy_fuzz_test.sh SPMDCHECK_BINARY SOURCE_DIR.
# Skipped (77) without a virtual environment with jax, except under CI=true.
set -u
bin="$1"
src="$2"
venv="${SPMDCHECK_XLA_VENV:-$src/.venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import jax" 2>/dev/null; then
  if [ "${CI:-}" = "true" ]; then
    echo "error: no virtual environment with jax at $venv (CI=true needs it)"
    exit 1
  fi
  echo "skipped: no virtual environment with jax at $venv (./scripts/run-tests makes one)"
  exit 77
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
pass=0
ok() { pass=$((pass + 1)); }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The same seed prints the same program.
a="$("$bin" fuzz --print-sdy-program 11)"
b="$("$bin" fuzz --print-sdy-program 11)"
[ "$a" = "$b" ] && [[ "$a" == *"sdy.mesh @mesh"* ]] && ok || fail "--print-sdy-program is not deterministic"

cases=40
SPMDCHECK_XLA_MATRIX=/nonexistent "$bin" fuzz --partitioner shardy --sdy-percent 100 --cases "$cases" \
  --seed 20261203 --reduce-seconds 0 --no-lint --out "$tmp/out" > "$tmp/log" 2>&1
code=$?
if [ "$code" -eq 2 ]; then
  fail "fuzz exited 2"
  tail -20 "$tmp/log"
fi
python3 - "$tmp/out/summary.json" "$cases" <<'PY' && ok || fail "acceptance (see above)"
import json, sys
s = json.load(open(sys.argv[1]))
t = s["per_partitioner"]["shardy"]
cases = int(sys.argv[2])
print(f"sdy-level programs: {t['sdy_accepted']} of {t['sdy_cases']} accepted by Shardy")
assert t["sdy_cases"] == cases, t
assert t["sdy_accepted"] >= 0.95 * cases, t
# Every program Shardy did not accept is an XLA bug claim (a finding) or a named unknown.
not_accepted = t["sdy_cases"] - t["sdy_accepted"]
assert not_accepted <= t["rejected_by_xla_bug"] + t["unknown"], t
hits = {k: v for k, v in s["pattern_hits"].items() if k.startswith("sdy:")}
for construct in ("sdy:manual", "sdy:constraint", "sdy:open-dim", "sdy:all-reduce"):
  assert hits.get(construct, 0) > 0, (construct, hits)
PY
grep -q "sdy-level programs" "$tmp/log" && ok || fail "the summary does not count sdy-level programs"

# The time budget covers the reductions: with `--seconds 30` and `--reduce-seconds 1000` against
# xla and shardy (seed 1 finds new signatures early), the reductions together get no more than the budget,
# and a finding left unreduced says why. Whether the whole run ends within T + 10% of wall time is
# a performance goal, measured by bench/campaign_budget.sh, not here.
SPMDCHECK_XLA_MATRIX=/nonexistent "$bin" fuzz --partitioner xla,shardy --seconds 30 --seed 1 --jobs 1 \
  --reduce-seconds 1000 --known none --out "$tmp/budget" > "$tmp/budget.log" 2>&1
ls "$tmp/budget"/*/finding.json >/dev/null 2>&1 && ok || fail "the budget run wrote no finding"
python3 - "$tmp/budget" <<'PY' && ok || { fail "a reduction outran the budget (see above)"; tail -20 "$tmp/budget.log"; }
import glob, json, re, sys
total = 0.0  # one job: the reductions run one after another, so together they fit the budget
for path in sorted(glob.glob(sys.argv[1] + "/*/finding.json")):
  reduction = json.load(open(path))["reduction"]
  print(f"{path.split('/')[-2]}: {reduction}")
  seconds = re.search(r"predicate calls, ([0-9.]+)s", reduction)
  if reduction.startswith("reduced:"):
    assert seconds, reduction
    total += float(seconds.group(1))
  else:
    # Unreduced, with the reason (the budget ran out, a hang, an sdy-level program kept as
    # generated ...).
    assert reduction.startswith("not reduced: ") and len(reduction) > len("not reduced: "), reduction
print(f"reductions together: {total:.1f} s of the 30 s budget (limit 33 s)")
assert total <= 33, total  # T + 10%: a step started before the deadline may end after it
PY

echo "cli sdy fuzz test: $pass passed, $failures failed"
[ "$failures" -eq 0 ]
