#!/usr/bin/env bash
# The partitioner under test on the command line: `cmd:` partitioners and their contract, XLA's
# GSPMD and Shardy through the worker, XLA being unavailable, and the XLA findings of
# corpus/xla-findings replayed by their status on the jax under test (known.json's versions).
# Usage: cli_partitioners_test.sh SPMDCHECK_BINARY SOURCE_DIR
# The XLA part needs the project's virtual environment with jax (./scripts/run-tests makes it);
# without it that part is skipped with a message, except under CI=true, where it fails.
set -u
bin="$1"
src="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
pass=0

# expect EXIT_CODE SUBSTRING -- command...
expect() {
  local code="$1" needle="$2"
  shift 3
  local out
  out="$("$@" 2>&1)"
  local got=$?
  if [ "$got" -ne "$code" ] || [[ "$out" != *"$needle"* ]]; then
    echo "FAIL: $* -> exit $got (want $code), output lacks '$needle':"
    echo "$out" | head -30
    failures=$((failures + 1))
  else
    pass=$((pass + 1))
  fi
}

matmul="$src/corpus/hlo/sharded_matmul.hlo"
cmd="$src/tests/data/cmd_partitioner.sh"
expect 0 "verdict: holds" -- "$bin" check "$matmul" --partitioner "cmd:$cmd ok $bin"
expect 0 "--partitioner 'cmd:$cmd ok $bin'" -- "$bin" check "$matmul" --partitioner "cmd:$cmd ok $bin"
expect 1 "xla-rejects-valid-module (our verifier accepts it): refused" -- "$bin" check "$matmul" --partitioner "cmd:$cmd reject $bin"
expect 3 "no handler for dot" -- "$bin" check "$matmul" --partitioner "cmd:$cmd unsupported $bin"
expect 1 "crash: " -- "$bin" check "$matmul" --partitioner "cmd:$cmd crash $bin"
expect 1 "Check failed: oops" -- "$bin" check "$matmul" --partitioner "cmd:$cmd crash $bin"
expect 3 "timeout: " -- "$bin" check "$matmul" --partitioner "cmd:$cmd hang $bin" --timeout 1
expect 1 "wrote no" -- "$bin" check "$matmul" --partitioner "cmd:$cmd empty $bin"
# A campaign's timeout is tried again alone: hanging again is a finding (.hang, a bug claim, exit
# 1), finishing then is load (an unknown, no finding).
expect 1 ".hang (new)" -- "$bin" fuzz --partitioner "cmd:$cmd hang $bin" --timeout 1 --cases 1 --seed 3 --reduce-seconds 0 --known none --out "$tmp/fuzz-hang"
expect 0 "nor within 2 s alone" -- cat "$tmp/fuzz-hang/summary.json"
expect 0 "finished in" -- "$bin" fuzz --partitioner "cmd:$cmd hang-once-$tmp/hang-marker $bin" --timeout 1 --cases 1 --seed 3 --reduce-seconds 0 --known none --out "$tmp/fuzz-hang-once"
expect 2 "unknown partitioner 'gcc'" -- "$bin" check "$matmul" --partitioner gcc
expect 2 "not of xla" -- "$bin" check "$matmul" --partitioner xla --inject-bug dot-padding-unmasked
expect 2 "--timeout takes" -- "$bin" check "$matmul" --partitioner xla --timeout -3
# reduce --until-cmd goes through the process runner: a hanging predicate is killed.
printf '#!/bin/sh\nsleep 60\n' > "$tmp/hang.sh"
chmod +x "$tmp/hang.sh"
expect 2 "is not interesting" -- "$bin" reduce "$matmul" --until-cmd "$tmp/hang.sh" --timeout 1 -o "$tmp/r.hlo"
printf '#!/bin/sh\ngrep -q dot "$1"\n' > "$tmp/has_dot.sh"
chmod +x "$tmp/has_dot.sh"
expect 0 "wrote $tmp/r.hlo" -- "$bin" reduce "$matmul" --until-cmd "$tmp/has_dot.sh" -o "$tmp/r.hlo"

# No XLA here: a clear unknown, exit 3.
expect 3 "unknown: XLA is not available: no python at /nonexistent/venv/bin/python" -- "$bin" check "$matmul" --partitioner xla --xla-venv /nonexistent/venv
expect 3 "XLA is not available" -- "$bin" partition "$matmul" --partitioner shardy --xla-venv /nonexistent/venv

venv="${SPMDCHECK_XLA_VENV:-$src/.venv}"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import jax" 2>/dev/null; then
  expect 0 "xla end to end: holds" -- "$bin" check "$matmul" --partitioner xla
  expect 0 "partitioner: shardy (jax " -- "$bin" check "$matmul" --partitioner shardy
  out="$("$bin" check "$matmul" --partitioner xla,shardy --stats 2>&1)"
  code=$?
  for needle in "== xla" "== shardy" "xla: collectives:" "shardy: collectives:" "reference (ours): collectives:" \
    "reproduce: spmdcheck check $matmul --partitioner shardy --seed 1 --trials 2"; do
    if [ "$code" -ne 0 ] || [[ "$out" != *"$needle"* ]]; then
      echo "FAIL: check --partitioner xla,shardy --stats lacks '$needle' (exit $code):"
      echo "$out" | head -40
      failures=$((failures + 1))
    else
      pass=$((pass + 1))
    fi
  done
  # An executable whose device shards contradict its own output sharding is wrong (not an
  # inconclusive comparison), and a Shardy case of a known finding is matched to it.
  expect 1 "the executable contradicts its output sharding" -- "$bin" check "$src/corpus/xla-findings/pad-interior-window-clamped/wrong_shape_module.hlo" --partitioner xla
  expect 1 "known finding: scatter-padded-indices-in-range" -- "$bin" check "$src/corpus/xla-findings/scatter-padded-indices-in-range/shardy_module.hlo" --partitioner shardy
  expect 0 "_spmd" -- "$bin" partition "$matmul" --partitioner xla
  expect 0 "dumped: $tmp/dump/xla.partitioned.hlo" -- "$bin" check "$matmul" --partitioner xla --dump "$tmp/dump"
  expect 0 "" -- "$bin" parse "$tmp/dump/xla.partitioned.hlo"
  # XLA findings found earlier (corpus/xla-findings), replayed by their status in known.json on
  # the jax under test ("versions", or "versions_by_partitioner" where a finding's partitioners
  # differ): one that "reproduces" must still fail with one of its signatures (a miscompile
  # confirmed by XLA's own execution; a crash or a rejection of a valid module is XLA's by
  # construction); one that is "fixed" must not fail (exit 0, or 3 where XLA cannot judge it).
  # So a fix or a regression in a new jaxlib shows here as a change of the version matrix. The
  # jax under test is the pinned one (workers/xla/requirements.txt) unless SPMDCHECK_XLA_VENV
  # points at another (.venv-jax0.10.2: the matrix's older column).
  pinned="$(sed -n 's/^jax==//p' "$src/workers/xla/requirements.txt")"
  tested="$("$venv/bin/python" -c 'import jax; print(jax.__version__)' 2>/dev/null)"
  if [ "$tested" != "$pinned" ]; then
    echo "note: $venv has jax $tested, jax $pinned is pinned: findings replayed by their status on jax $tested"
  fi
  for finding in "$src"/corpus/xla-findings/*/; do
    # module.hlo, or module.mlir for a program found at jax's level (compiled as jax.jit does).
    module="$finding/module.hlo"
    [ -f "$module" ] || module="$finding/module.mlir"
    [ -f "$module" ] || continue
    name="$(basename "$finding")"
    for p in $(cat "$finding/partitioners"); do
      # "STATUS SIGNATURE..." of this finding and partitioner on jax $tested (known.json).
      read -r status signatures <<<"$(python3 -c 'import json, sys
k = json.load(open(sys.argv[1]))
f = next((f for f in k["findings"] if f["name"] == sys.argv[2]), {})
versions = {**f.get("versions", {}), **f.get("versions_by_partitioner", {}).get(sys.argv[3], {})}
print(versions.get(sys.argv[4], "unrecorded"),
      *[s for s in f.get("signatures", []) if s.startswith(sys.argv[3] + ".")])' \
        "$src/corpus/xla-findings/known.json" "$name" "$p" "$tested")"
      if [ "$status" != reproduces ] && [ "$status" != fixed ]; then
        if [ "$tested" = "$pinned" ]; then
          echo "FAIL: $name ($p) has no status for the pinned jax $pinned in" \
            "corpus/xla-findings/known.json: measure it (corpus/xla-findings/README.md) and record it"
          failures=$((failures + 1))
        else
          echo "note: $name ($p) has no status for jax $tested in known.json: not replayed"
        fi
        continue
      fi
      out="$("$bin" check "$module" --partitioner "$p" 2>&1)"
      got=$?
      ok=0
      if [ "$status" = reproduces ]; then
        for signature in $signatures; do
          # ... and `check` names the known finding (among those sharing the signature).
          if [ "$got" -eq 1 ] && grep -qxF "signature: $signature" <<<"$out" &&
            grep -q "^known findings\?: .*$name (" <<<"$out" &&
            { [[ "$signature" != *.miscompile.* ]] ||
              [[ "$out" == *"verdict: fails (confirmed by XLA's own execution)"* ]]; }; then
            ok=1
          fi
        done
        want="exit 1 with a signature of $signatures naming the known finding $name (a miscompile must be confirmed by XLA's own execution)"
      else
        if [ "$got" -eq 0 ] || [ "$got" -eq 3 ]; then ok=1; fi
        want="exit 0 or 3 (known.json: fixed on jax $tested; if it fails again, record it as reproduces)"
      fi
      if [ "$ok" -eq 1 ]; then
        pass=$((pass + 1))
      else
        echo "FAIL: check $module --partitioner $p on jax $tested (known.json:" \
          "$status) -> exit $got, want $want:"
        echo "$out" | head -30
        failures=$((failures + 1))
      fi
    done
  done
else
  if [ "${CI:-}" = "true" ]; then
    echo "FAIL: no virtual environment with jax at $venv, and CI=true needs XLA"
    failures=$((failures + 1))
  else
    echo "skipped the XLA part: no virtual environment with jax at $venv (./scripts/run-tests makes one)"
  fi
fi
echo "$pass passed, $failures failed"
[ "$failures" -eq 0 ]
