#!/usr/bin/env bash
# End-to-end checks of the spmdcheck CLI: exit codes and the key lines of each subcommand's
# output, and the examples of the docs. Usage: cli_test.sh SPMDCHECK_BINARY SOURCE_DIR (the shared
# reference material: $SPMDCHECK_SHARED_DIR, else SOURCE_DIR/../shared; its checks skip without it)
set -u
bin="$1"
src="$2"
shared="${SPMDCHECK_SHARED_DIR:-$src/../shared}"
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

# Command lines (CLI11, tools/cli.h): every subcommand's --help exits 0 with its usage and flags;
# unknown flags, malformed numbers and missing arguments are bad input (2) with the error line.
m="$src/corpus/hlo/sharded_matmul.hlo"
for c in parse fmt run equiv partition check reshard reduce fuzz nightly repro lint explain report \
  "prove rewrites" "prove instructions" "prove rule" "prove sharding" "prove same" "prove groups" \
  "prove pairs" "prove chain" "prove equiv-chain" "sharding expand" "sharding canon" \
  "sharding show" "sharding groups" "sharding from-spec" "sharding to-spec" "sharding from-sdy" \
  "sharding to-sdy"; do
  # shellcheck disable=SC2086
  expect 0 "usage: spmdcheck $c" -- "$bin" $c --help
done
expect 0 "--no-metadata" -- "$bin" fmt --help
expect 0 "--partitioner SPEC" -- "$bin" check --help
expect 0 "--procedure auto|enumerate|z3|both" -- "$bin" prove sharding -h
expect 0 "--until-cmd CMD" -- "$bin" reduce --help
expect 0 "--svg FILE" -- "$bin" sharding show --help
expect 0 "--seed S" -- "$bin" run "$m" --seed abc --help
expect 2 "spmdcheck run: error: unknown flag --frobnicate" -- "$bin" run "$m" --frobnicate
expect 2 "spmdcheck prove rule: error: unknown flag --frob" -- "$bin" prove rule "$m" --frob=1
expect 2 "spmdcheck fmt: error: unexpected argument 'extra.hlo'" -- "$bin" fmt "$m" extra.hlo
expect 2 "spmdcheck fmt: error: FILE is required" -- "$bin" fmt
expect 2 "usage: spmdcheck fmt FILE" -- "$bin" fmt
expect 2 "spmdcheck fmt: error: -o" -- "$bin" fmt "$m" -o
expect 2 "spmdcheck reshard: error: --to is required" -- "$bin" reshard --shape 'f32[8]' --from '{replicated}' --num-partitions 2
expect 2 "spmdcheck run: error: --seed: expects an integer in [0, 2^64), not 'abc'" -- "$bin" run "$m" --seed abc
expect 2 "spmdcheck run: error: --seed: expects an integer in [0, 2^64), not '-1'" -- "$bin" run "$m" --seed -1
expect 2 "spmdcheck equiv: error: --trials: expects an integer, not '2x'" -- "$bin" equiv "$m" "$m" --trials 2x
expect 2 "spmdcheck fuzz: error: --cases: expects an integer, not '0x10'" -- "$bin" fuzz --cases 0x10
expect 2 "spmdcheck sharding groups: error: --dims: expects an integer, not 'x'" -- "$bin" sharding groups '{devices=[2,2]<=[4]}' --dims 1,x
expect 2 "spmdcheck nightly: error: --hours: expects a number, not 'soon'" -- "$bin" nightly --hours soon --out "$tmp/night"
# --flag=value is --flag value; decimal only (010 is ten, not octal eight).
expect 0 "f32[3] {" -- "$bin" run "$src/corpus/hlo/reduce_uneven.hlo" --num-partitions=1
expect 0 "seed 10" -- "$bin" run "$src/corpus/hlo/reduce_uneven.hlo" --num-partitions=1 --seed=010
expect 0 "[2,2]<=[4]" -- "$bin" sharding groups '{devices=[2,2]<=[4]}' --dims=1
expect 0 "--seed 3 --trials 1" -- "$bin" check "$m" --seed=3 --trials=1 --partitioner=reference
# report: a folder that is not a finding is bad input (docs/report.md runs the real examples).
expect 2 "has no finding.json" -- "$bin" report "$tmp"
expect 0 "ok: module sharded_matmul" -- "$bin" parse "$src/corpus/hlo/sharded_matmul.hlo"
expect 0 "parsed 5 files: 5 ok, 0 failed" -- "$bin" parse "$src/corpus/hlo"
printf 'HloModule m\nENTRY e {\n  p = f32[8 parameter(0)\n}\n' > "$tmp/bad.hlo"
expect 2 "bad.hlo:3:13: error: expected ']' to close the dimensions" -- "$bin" parse "$tmp/bad.hlo"
expect 2 "no such file" -- "$bin" parse "$tmp/missing.hlo"
expect 2 "unknown command" -- "$bin" frobnicate
expect 0 "sharding={devices=[4,1]<=[4]}" -- "$bin" fmt "$src/corpus/hlo/reduce_uneven.hlo"
"$bin" fmt "$src/corpus/hlo/while_loop.hlo" > "$tmp/once.hlo"
"$bin" fmt "$tmp/once.hlo" > "$tmp/twice.hlo"
if cmp -s "$tmp/once.hlo" "$tmp/twice.hlo"; then pass=$((pass + 1)); else
  echo "FAIL: fmt is not idempotent on while_loop.hlo"; failures=$((failures + 1)); fi
expect 0 "{devices=[2,2]0,2,1,3}" -- "$bin" sharding expand '{devices=[2,2]<=[2,2]T(1,0)}'
expect 0 "{devices=[2,2]<=[2,2]T(1,0)}" -- "$bin" sharding canon '{devices=[2,2]0,2,1,3}'
expect 0 "device 3:" -- "$bin" sharding show '{devices=[2,2]<=[4]}' --shape 'f32[16,8]'
expect 0 "[2,2]<=[4]" -- "$bin" sharding groups '{devices=[2,2]<=[4]}' --dims 1
expect 2 "error" -- "$bin" sharding canon '{devices=[2,2]0,1,2}'
expect 0 "device 7: f32[8,8]" -- "$bin" run "$src/corpus/hlo/partitioned_collectives.hlo" --seed 3
expect 0 "f32[3] {" -- "$bin" run "$src/corpus/hlo/reduce_uneven.hlo" --num-partitions 1
printf 'HloModule m\nENTRY e {\n  c = c64[4] parameter(0)\n  ROOT f = c64[4] fft(c), fft_type=FFT, fft_length={4}\n}\n' > "$tmp/fft.hlo"
expect 3 "fft is not supported" -- "$bin" run "$tmp/fft.hlo"
expect 3 "over the budget" -- "$bin" run "$src/corpus/hlo/sharded_matmul.hlo" --max-elements 100
expect 0 "proved" -- "$bin" prove sharding '{devices=[4,2,8]<=[2,4,8]T(1,0,2)}' --num-partitions 64
expect 1 "refuted: tiles [0,1] and [1,0] are both on device 1" -- "$bin" prove sharding '{devices=[2,2]0,1,1,3}'
expect 0 "proved" -- "$bin" prove same '{devices=[2,2]0,2,1,3}' '{devices=[2,2]<=[2,2]T(1,0)}'
expect 1 "refuted" -- "$bin" prove same '{devices=[2,2]0,2,1,3}' '{devices=[2,2]<=[4]}'
expect 0 "proved" -- "$bin" prove groups --sharding '{devices=[2,2,2]<=[8]}' --dims 1 --groups '{{0,2},{1,3},{4,6},{5,7}}'
expect 1 "refuted" -- "$bin" prove groups --sharding '{devices=[2,2,2]<=[8]}' --dims 1 --groups '{{0,1},{2,3},{4,5},{6,7}}'
expect 2 "error" -- "$bin" prove sharding '{devices=[2,2]0,1'
expect 0 "plan: all-to-all(dim 0 -> dim 1)" -- "$bin" reshard --shape 'f32[8,12]' --from '{devices=[4,1]<=[4]}' --to '{devices=[1,4]<=[4]}' --num-partitions 4
expect 0 "plan: collective-permute" -- "$bin" reshard --shape 'f32[8,6]' --from '{devices=[4,1]<=[4]}' --to '{devices=[4,1]3,2,1,0}' --num-partitions 4
expect 2 "error" -- "$bin" reshard --shape 'f32[8]' --from '{devices=[4,1]<=[4]}' --to '{replicated}' --num-partitions 4
expect 0 "sharding={devices=[2,4]<=[8]}" -- "$bin" partition "$src/corpus/hlo/sharded_matmul.hlo"
expect 0 "verdict: holds" -- "$bin" check "$src/corpus/hlo/sharded_matmul.hlo"
expect 2 "bad.hlo:3:13" -- "$bin" check "$tmp/bad.hlo"
expect 0 "all-reduce-wrong-axis" -- "$bin" fuzz --list-bugs
expect 0 "failures: 0" -- "$bin" fuzz --cases 30 --seed 7 --out "$tmp/fuzz-clean"
expect 1 "wrong-result" -- "$bin" fuzz --cases 60 --seed 3 --inject-bug dot-padding-unmasked --out "$tmp/fuzz-bug"
expect 2 "unknown injected bug" -- "$bin" fuzz --cases 1 --inject-bug no-such-bug
# Versioned JSON outputs (issue 27): check, lint and fuzz's summary.json against their schemas
# (tests/data/*-schema.json); a failing check's result carries its counterexample.
finding_dir="$(ls -d "$tmp/fuzz-bug"/*/ | head -1)"
"$bin" check "$finding_dir/module.hlo" --inject-bug dot-padding-unmasked --format json > "$tmp/check-fails.json"
expect 0 "" -- python3 "$src/tests/validate_json_schema.py" "$src/tests/data/check-schema.json" "$tmp/check-fails.json"
expect 0 "fails" -- python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; assert r["first_wrong_element"] is not None; print(r["verdict"])' "$tmp/check-fails.json"
"$bin" check "$src/corpus/hlo/sharded_matmul.hlo" --format json > "$tmp/check-holds.json"
expect 0 "" -- python3 "$src/tests/validate_json_schema.py" "$src/tests/data/check-schema.json" "$tmp/check-holds.json"
# The judges a flag switches on: a line each, and their entries in the JSON.
expect 0 "lint: holds: 0 chain(s)" -- "$bin" check "$src/corpus/hlo/pipeline_while.hlo" --lint --prove
expect 0 "smt-proofs: unknown: 1 of 3 collective(s) unknown" -- "$bin" check "$src/corpus/hlo/pipeline_while.hlo" --lint --prove
"$bin" check "$src/corpus/hlo/pipeline_while.hlo" --lint --prove --format json > "$tmp/check-judges.json"
expect 0 "" -- python3 "$src/tests/validate_json_schema.py" "$src/tests/data/check-schema.json" "$tmp/check-judges.json"
expect 0 '"smt-proofs"' -- cat "$tmp/check-judges.json"
expect 0 "" -- python3 "$src/tests/validate_json_schema.py" "$src/tests/data/fuzz-summary-schema.json" "$tmp/fuzz-bug/summary.json"
expect 0 "" -- python3 "$src/tests/validate_json_schema.py" "$src/tests/data/fuzz-summary-schema.json" "$tmp/fuzz-clean/summary.json"
expect 2 "unknown pattern" -- "$bin" fuzz --cases 1 --pattern-weights no-such-pattern=1
expect 0 "patterns hit: dus-out-of-range-start" -- "$bin" fuzz --cases 20 --seed 3 \
  --pattern-weights all=0,dus-out-of-range-start=40 --out "$tmp/fuzz-patterns"
# Ctrl-C stops a campaign at once with its summary (exit 3: stopped, nothing found).
"$bin" fuzz --seconds 600 --seed 7 --out "$tmp/fuzz-int" > "$tmp/fuzz-int.txt" 2>&1 &
fuzz_pid=$!
sleep 2
kill -INT "$fuzz_pid"
wait "$fuzz_pid"
code=$?
if [ "$code" -eq 3 ] && grep -q "stopped before the campaign's limit" "$tmp/fuzz-int.txt" &&
  grep -q "^cases: [1-9]" "$tmp/fuzz-int.txt"; then pass=$((pass + 1)); else
  echo "FAIL: fuzz after SIGINT -> exit $code (want 3) with a summary:"; head -5 "$tmp/fuzz-int.txt"
  failures=$((failures + 1)); fi
# A repro that cannot be written is an error (here the repro path is a full disk).
mkdir -p "$tmp/fuzz-full"
mkdir -p "$tmp/fuzz-full/wrong-result.all-reduce"
ln -s /dev/full "$tmp/fuzz-full/wrong-result.all-reduce/module.hlo"
expect 2 "cannot write the repro" -- "$bin" fuzz --cases 60 --seed 3 --inject-bug dot-padding-unmasked --out "$tmp/fuzz-full"
expect 0 "verdict: holds" -- "$bin" check "$src/corpus/hlo/pipeline_while.hlo"
expect 0 "proved" -- "$bin" prove rewrites --rule ag-ag-fuse --max-devices 8
expect 1 "proved [consecutive-permutes]" -- "$bin" lint "$src/corpus/lint/wasteful/03_two_permutes.hlo"
expect 0 "0 proved finding(s)" -- "$bin" lint "$src/corpus/lint/good/02_a2a_dim0_to_dim1.hlo"
expect 1 '"status": "proved"' -- "$bin" lint "$src/corpus/lint/wasteful/01_ag_ds_own_tile.hlo" --format json
expect 1 '"version": "2.1.0"' -- "$bin" lint "$src/corpus/lint/wasteful/01_ag_ds_own_tile.hlo" --format sarif
"$bin" lint "$src/corpus/lint/wasteful/03_two_permutes.hlo" --format sarif > "$tmp/lint.sarif"
expect 0 "" -- python3 "$src/tests/validate_json_schema.py" "$src/tests/data/sarif-schema-2.1.0.json" "$tmp/lint.sarif"
"$bin" lint "$src/corpus/lint/wasteful/03_two_permutes.hlo" --format json > "$tmp/lint.json"
expect 0 "" -- python3 "$src/tests/validate_json_schema.py" "$src/tests/data/lint-schema.json" "$tmp/lint.json"
expect 0 "consecutive-permutes" -- python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); f=d["findings"][0]; assert f["status"]=="proved" and f["proposed"]["collectives"]==1, f; print(f["rule"])' "$tmp/lint.json"
expect 2 "--format must be" -- "$bin" lint "$src/corpus/lint/good/02_a2a_dim0_to_dim1.hlo" --format xml
expect 2 "--topology" -- "$bin" lint "$src/corpus/lint/good/02_a2a_dim0_to_dim1.hlo" --topology nodes=3
expect 2 "bad.hlo:3:13" -- "$bin" lint "$tmp/bad.hlo"
# explain: pipelines proved (0), mutated pipelines and pipeline_while's short loop refuted (1).
expect 0 "intra-op plus 4 pipeline stages over axis0 (data parallel over axis1)" -- "$bin" explain "$src/corpus/explain/gpipe_partitioned.hlo"
expect 1 "check micro-batch-order: refuted: micro-batch 0 passes stages 0,1,2,3" -- "$bin" explain "$src/corpus/hlo/pipeline_while.hlo"
expect 1 "check rotation: refuted: device 0" -- "$bin" explain "$src/corpus/explain/mut_off_by_one.hlo"
expect 1 "check own-weights: refuted" -- "$bin" explain "$src/corpus/explain/mut_wrong_weights_partitioned.hlo"
expect 0 "<!DOCTYPE html>" -- "$bin" explain "$src/corpus/explain/1f1b.hlo" --format html
"$bin" explain "$src/corpus/explain/mut_missing_wrap.hlo" --format json > "$tmp/explain.json"
expect 0 "" -- python3 "$src/tests/validate_json_schema.py" "$src/tests/data/explain-schema.json" "$tmp/explain.json"
expect 2 "--format must be text, json or html" -- "$bin" explain "$src/corpus/explain/gpipe.hlo" --format xml
expect 2 "has 4 devices but the module has 8" -- "$bin" explain "$src/corpus/explain/gpipe.hlo" --mesh a=2,b=2
expect 2 "--mesh expects NAME=SIZE" -- "$bin" explain "$src/corpus/explain/gpipe.hlo" --mesh a
expect 2 "bad.hlo:3:13" -- "$bin" explain "$tmp/bad.hlo"
expect 2 "no such file" -- "$bin" explain "$tmp/missing.hlo"
# explain on MPMD programs in IFRT IR: explained (0), a broken wiring refuted (1), an op it does
# not model unknown (3), bad text and SPMD-only flags refused (2), JSON valid against its schema.
expect 0 "answer: inter-op: 3 stages over 2 meshes" -- "$bin" explain "$src/corpus/explain/mpmd/gpipe_fwd_bwd.ifrt.mlir"
sed 's/on devices \[4, 5\]/on devices [0, 1]/' "$src/corpus/explain/mpmd/gpipe_fwd_bwd.ifrt.mlir" > "$tmp/moved.ifrt.mlir"
expect 1 "placement: fails: $tmp/moved.ifrt.mlir:11:37" -- "$bin" explain "$tmp/moved.ifrt.mlir"
sed 's/^    return %outputs_6#0/    %r, %c = ifrt.RemapArrays(%arg0) : (x) -> y\n&/' "$src/corpus/explain/mpmd/forward_3_microbatches.ifrt.mlir" > "$tmp/remap.ifrt.mlir"
expect 3 "coverage: unknown: 1 op(s) of @main this reader does not model" -- "$bin" explain "$tmp/remap.ifrt.mlir"
sed 's/#sp1 = #ifrt.sharding_param<4x1 to \[0\] on 4>/#sp1 = #ifrt.sharding_param<3x1 to [0] on 4>/' "$src/corpus/explain/mpmd/forward_3_microbatches.ifrt.mlir" > "$tmp/badsp.ifrt.mlir"
expect 2 "badsp.ifrt.mlir:2:8: sharding_param" -- "$bin" explain "$tmp/badsp.ifrt.mlir"
expect 2 "--global, --mesh and html are for SPMD modules" -- "$bin" explain "$src/corpus/explain/mpmd/mesh2x2.ifrt.mlir" --format html
"$bin" explain "$src/corpus/explain/mpmd/gpipe_fwd_bwd.ifrt.mlir" --format json > "$tmp/explain-mpmd.json"
expect 0 "" -- python3 "$src/tests/validate_json_schema.py" "$src/tests/data/explain-mpmd-schema.json" "$tmp/explain-mpmd.json"
# Issue 14: procedures, rule files, inference, JAX hints.
expect 0 "decided by: enumeration over 4 groups of 2" -- "$bin" prove groups --sharding '{devices=[2,2,2]<=[8]}' --dims 1 --groups '{{0,2},{1,3},{4,6},{5,7}}'
expect 2 "--procedure must be" -- "$bin" prove sharding '{devices=[2]<=[2]}' --procedure fast
expect 0 "1/1 sound rules proved, 1/1 wrong variants refuted" -- "$bin" prove rule "$src/corpus/rules/permute_after_gather.rules" --max-devices 8
expect 2 "bad.rules:8:18: error: unknown name 'd'" -- "$bin" prove rule "$src/corpus/rules/bad.rules"
expect 2 "unknown rule 'nope'; rules: drop-permute-after-gather" -- "$bin" prove rule "$src/corpus/rules/permute_after_gather.rules" --rule nope
expect 0 "rule ag-ag-fuse" -- "$bin" prove rewrites --show ag-ag-fuse
sed -E '/parameter\(/!s/, sharding=\{[^}]*\}//' "$src/corpus/lint/wasteful/03_two_permutes.hlo" > "$tmp/bare.hlo"
expect 1 "proved [consecutive-permutes]" -- "$bin" lint "$tmp/bare.hlo"
expect 0 "collective-permute.2: {devices=[8,1]3,4,5,6,7,0,1,2}" -- "$bin" lint "$tmp/bare.hlo" --holdings
expect 1 "1 chain(s) examined, 1 proved finding(s)" -- "$bin" lint "$tmp/bare.hlo" --no-infer
# Issue 26: modules without a single sharding annotation, proved from the collectives' semantics.
u="$src/corpus/lint/unannotated"
expect 1 "proved [consecutive-permutes]" -- "$bin" lint "$u/01_two_permutes.hlo"
expect 1 "compose into the identity: neither is needed" -- "$bin" lint "$u/02_permutes_undo.hlo"
expect 1 "proved [all-gather-then-own-slice]" -- "$bin" lint "$u/03_ag_own_slice.hlo"
expect 1 "proved [all-gather-then-own-slice]" -- "$bin" lint "$u/04_ag_own_slice_groups.hlo"
expect 1 "proved [all-reduce-then-slice]" -- "$bin" lint "$u/05_ar_slice.hlo"
expect 1 "proved [all-reduce-then-slice]" -- "$bin" lint "$u/06_ar_slice_strided_groups.hlo"
expect 1 "compose into one permute" -- "$bin" lint "$u/07_permutes_drop_a_device.hlo"
expect 2 "--user-shardings needs --global" -- "$bin" lint "$u/03_ag_own_slice.hlo" --user-shardings
sed 's|use_global_device_ids=true$|use_global_device_ids=true, metadata={op_name="jit(f)/sharding_constraint"}|' "$u/03_ag_own_slice.hlo" > "$tmp/constrained.hlo"
expect 0 "would change all-gather.1, whose sharding is fixed" -- "$bin" lint "$tmp/constrained.hlo"
for f in "$u"/near_miss/*.hlo; do
  expect 0 "0 proved finding(s), 0 unproven" -- "$bin" lint "$f"
done
expect 2 "--mesh" -- "$bin" lint "$tmp/bare.hlo" --mesh data=3
if [ -d "$shared/cases/seed-scatter" ]; then
  expect 0 "intra-op plus 4 pipeline stages over pipeline (data parallel over data, tensor/model parallel over model)" -- "$bin" explain "$shared/cases/seed-scatter/gspmd.hlo" --mesh data=2,pipeline=4,model=8 --global "$shared/cases/seed-scatter/pre.hlo"
  "$bin" explain "$shared/cases/seed-scatter/gspmd.hlo" --format json > "$tmp/seed-explain.json"
  expect 0 "" -- python3 "$src/tests/validate_json_schema.py" "$src/tests/data/explain-schema.json" "$tmp/seed-explain.json"
  expect 0 "proved" -- "$bin" prove chain "$shared/cases/seed-scatter/gspmd.hlo"
  expect 1 "refuted" -- "$bin" prove equiv-chain "$shared/cases/seed-scatter/simplified.hlo" "$shared/cases/seed-scatter/gspmd.hlo"
  expect 0 "4 proved" -- "$bin" prove instructions "$shared/cases/seed-scatter/gspmd.hlo"
  sed 's/{8,16},{9,17}/{8,24},{9,17}/; s/{40,24}/{40,16}/' "$shared/cases/seed-scatter/gspmd.hlo" > "$tmp/permute.hlo"
  expect 3 "is a guess" -- "$bin" prove chain "$tmp/permute.hlo"
  expect 1 "the global program gives param[0,0,0,8,0]" -- "$bin" prove chain "$tmp/permute.hlo" --global "$shared/cases/seed-scatter/pre.hlo"
  expect 1 "1 refuted" -- "$bin" prove instructions "$tmp/permute.hlo" --global "$shared/cases/seed-scatter/pre.hlo"
  expect 1 "P(None, 'data', 'model', None)" -- "$bin" lint "$shared/cases/seed-scatter/gspmd.hlo" --mesh data=2,pipeline=4,model=8
  expect 0 "0 proved finding(s)" -- "$bin" lint "$shared/cases/seed-scatter/gspmd.hlo" --global "$shared/cases/seed-scatter/pre.hlo" --user-shardings
  expect 0 "max bytes received per device: 480" -- "$bin" check "$shared/cases/seed-scatter/pre.hlo" --stats
  expect 0 "verdict: holds" -- "$bin" equiv "$shared/cases/seed-scatter/pre.hlo" "$shared/cases/seed-scatter/gspmd.hlo"
  expect 1 "wrong on 48 of 64 devices" -- "$bin" equiv "$shared/cases/seed-scatter/pre.hlo" "$shared/cases/seed-scatter/simplified.hlo"
  expect 1 "T(0,2,1) last_tile_dim_replicate}" -- "$bin" lint "$shared/cases/seed-scatter/gspmd.hlo"
  expect 1 "with topology" -- "$bin" lint "$shared/cases/seed-scatter/gspmd.hlo" --topology nodes=8
  expect 1 "incorrect [incorrect-chain]" -- "$bin" lint "$shared/cases/seed-scatter/simplified.hlo" --global "$shared/cases/seed-scatter/pre.hlo"
  expect 1 "devices 0 and 8 hold the same tile of reshape.6041" -- "$bin" lint "$shared/cases/seed-scatter/simplified.hlo"
  "$bin" lint "$shared/cases/seed-scatter/gspmd.hlo" --format sarif > "$tmp/seed.sarif"
  expect 0 "" -- python3 "$src/tests/validate_json_schema.py" "$src/tests/data/sarif-schema-2.1.0.json" "$tmp/seed.sarif"
  expect 0 "UNSOUND" -- "$bin" equiv "$shared/cases/seed-scatter/pre.hlo" "$shared/cases/seed-scatter/simplified.hlo" --same-input-everywhere
fi
# The ```console examples of README.md and docs/*.md, run and compared with their documented
# output (tests/check_doc_examples.py; those on ../shared are skipped without it).
if python3 "$src/tests/check_doc_examples.py" "$bin" "$src" "$shared" > "$tmp/docs.out" 2>&1; then
  pass=$((pass + 1))
else
  echo "FAIL: the documented examples differ from what spmdcheck prints:"
  cat "$tmp/docs.out"
  failures=$((failures + 1))
fi
echo "$pass passed, $failures failed"
[ "$failures" -eq 0 ]
