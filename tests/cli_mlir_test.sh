#!/usr/bin/env bash
# StableHLO / MLIR input (what jax's .lower(...).as_text() prints) on the command line: every
# subcommand that reads a module reads tests/data/mlir/*.mlir through jaxlib in the XLA worker;
# without jax the error names what is needed (exit 2). Usage: cli_mlir_test.sh SPMDCHECK_BINARY
# SOURCE_DIR. Skipped (77) without a virtual environment with jax, except under CI=true.
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
export SPMDCHECK_XLA_VENV="$venv"
data="$src/tests/data/mlir"
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
    echo "$out" | head -20
    failures=$((failures + 1))
  else
    pass=$((pass + 1))
  fi
}

expect 0 "ok: module jit_matmul, 1 computations, 3 instructions, num_partitions=8" -- "$bin" parse "$data/matmul.sdy.mlir"
expect 0 "ok: module jit_shard_map_psum" -- "$bin" parse "$data/shard_map.sdy.mlir"
expect 0 "SPMDFullToShardShape" -- "$bin" fmt "$data/shard_map.sdy.mlir"
expect 0 "verdict: holds (global vs partitioned, 8 devices" -- "$bin" check "$data/matmul.sdy.mlir"
expect 0 "verdict: holds (global vs partitioned, 8 devices" -- "$bin" check "$data/matmul.gspmd.mlir"
# shard_map under Shardy, compiled as jax.jit does (the module lowered for Shardy), and under
# GSPMD (the module lowered for GSPMD).
expect 0 "verdict: holds (global vs partitioned, 8 devices" -- "$bin" check "$data/shard_map.sdy.mlir" --partitioner shardy
expect 0 "compiled from jax's StableHLO with jax.jit's compile options" -- "$bin" check "$data/shard_map.sdy.mlir" --partitioner shardy
expect 0 "verdict: holds (global vs partitioned, 8 devices" -- "$bin" check "$data/shard_map.gspmd.mlir" --partitioner xla
expect 0 "sharding={devices=[2,4]<=[8]}" -- "$bin" partition "$data/matmul.sdy.mlir"
"$bin" partition "$data/matmul.sdy.mlir" -o "$tmp/part.hlo" >/dev/null 2>&1
expect 0 "verdict: holds" -- "$bin" equiv "$data/matmul.sdy.mlir" "$tmp/part.hlo"
expect 0 "device 7:" -- "$bin" run "$data/matmul.gspmd.mlir"
# The file, line and column of MLIR's own errors.
printf 'module @m {\n  func.func @main(%%a: tensor<4xf32>) -> tensor<4xf32> {\n    %%0 = stablehlo.bogus %%a : tensor<4xf32>\n    return %%0 : tensor<4xf32>\n  }\n}\n' > "$tmp/bad.mlir"
expect 2 "$tmp/bad.mlir:3:" -- "$bin" check "$tmp/bad.mlir"
# Without jax: exit 2 and what is needed.
expect 2 "reading it needs jax (the pinned jaxlib" -- env SPMDCHECK_XLA_PYTHON=/nonexistent/python "$bin" check "$data/matmul.sdy.mlir"
expect 2 "reading it needs jax" -- env SPMDCHECK_XLA_PYTHON=/nonexistent/python "$bin" parse "$data/matmul.sdy.mlir"

echo "cli mlir test: $pass passed, $failures failed"
[ "$failures" -eq 0 ]
