#!/usr/bin/env bash
# `spmdcheck repro --jax`: the generated repro.py, run with the pinned jax, exits 1 on a wrong
# partitioning and 0 on a right one: XLA's own (GSPMD, Shardy) on a known XLA finding and on a
# correct module, and another partitioner's program (the `cmd:` partitioner wrapping our
# reference partitioner, with and without an injected bug) run by XLA.
# Usage: cli_repro_test.sh SPMDCHECK_BINARY SOURCE_DIR
# Needs the project's virtual environment with jax; without it the test is skipped with a
# message, except under CI=true, where it fails.
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
    echo "$out" | tail -30
    failures=$((failures + 1))
  else
    pass=$((pass + 1))
  fi
}

matmul="$src/corpus/hlo/sharded_matmul.hlo"
uneven="$src/corpus/hlo/reduce_uneven.hlo"
cmd="$src/tests/data/cmd_partitioner.sh"
expect 2 "give the script's kind: --jax" -- "$bin" repro "$matmul" -o "$tmp/r.py"
expect 2 "usage: spmdcheck repro" -- "$bin" repro "$matmul" --jax
expect 2 "no such file" -- "$bin" repro "$tmp/missing.hlo" --jax -o "$tmp/r.py"
expect 3 "XLA is not available" -- "$bin" repro "$matmul" --jax -o "$tmp/r.py" --partitioner shardy --xla-venv /nonexistent/venv

venv="${SPMDCHECK_XLA_VENV:-$src/.venv}"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import jax" 2>/dev/null; then
  py="$venv/bin/python"
  pinned="$(sed -n 's/^jax==//p' "$src/workers/xla/requirements.txt")"
  finding="$src/corpus/xla-findings/strided-slice-start-dropped/module.hlo"
  for p in xla shardy; do
    expect 0 "wrote $tmp/$p.py ($( [ $p = xla ] && echo gspmd || echo shardy), 2 devices, jax $pinned)" -- \
      "$bin" repro "$finding" --jax -o "$tmp/$p.py" --partitioner "$p"
    expect 1 "DIFFERENT: the sharded run differs from the one-device run on device(s) [0, 1]" -- "$py" "$tmp/$p.py"
    expect 0 "wrote $tmp/ok-$p.py" -- "$bin" repro "$matmul" --jax -o "$tmp/ok-$p.py" --partitioner "$p"
    expect 0 "same: the sharded run agrees" -- "$py" "$tmp/ok-$p.py"
  done
  # Another partitioner's program, run by XLA: right, then with an injected bug that reads the
  # padding of uneven input shards (poisoned by the script, as by our oracle).
  expect 0 "(partitioned, 4 devices" -- "$bin" repro "$uneven" --jax -o "$tmp/ok-cmd.py" --partitioner "cmd:$cmd ok $bin"
  expect 0 "same: the sharded run agrees" -- "$py" "$tmp/ok-cmd.py"
  expect 0 "(partitioned, 4 devices" -- "$bin" repro "$uneven" --jax -o "$tmp/bug-cmd.py" --partitioner "cmd:$cmd bug-reduce-padding-unmasked $bin"
  expect 1 "DIFFERENT" -- "$py" "$tmp/bug-cmd.py"
  expect 3 "gave rejected" -- "$bin" repro "$uneven" --jax -o "$tmp/r.py" --partitioner "cmd:$cmd reject $bin"
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
