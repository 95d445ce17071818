#!/usr/bin/env bash
# .clusterfuzzlite/build.sh run as OSS-Fuzz runs it (its environment, a temporary $OUT), then
# every built target on its seed corpus with its .options and .dict (docs/clusterfuzzlite.md);
# the project.yaml and workflow files must parse as YAML.
# Usage: clusterfuzzlite_test.sh SOURCE_DIR [WORK_DIR]. WORK_DIR keeps the CMake build between
# runs (default: a temporary one); objects are shared through ccache. Skipped (exit 77) without
# clang, zip or unzip, except under CI=true.
# SPMDCHECK_CFLITE_TEST_TARGETS: the targets to build and run (default: the three parsers, which
# need only ir/, to keep a cold build short; scripts/fuzz-smoke builds all five with clang and
# the same sanitizers). "all" builds the five, as ClusterFuzzLite does.
set -euo pipefail
src="$(cd "$1" && pwd)"
for tool in clang clang++ zip unzip; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    if [ "${CI:-}" = "true" ]; then
      echo "error: $tool is missing (CI=true)"
      exit 1
    fi
    echo "skipped: $tool is missing"
    exit 77
  fi
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

# YAML: with PyYAML when some Python has it, else the files must at least exist and have no tabs.
yaml_python=""
for python in "${SPMDCHECK_XLA_VENV:-$src/.venv}/bin/python" python3; do
  if "$python" -c "import yaml" 2>/dev/null; then
    yaml_python="$python"
    break
  fi
done
yaml_files=("$src/.clusterfuzzlite/project.yaml" "$src/.github/workflows/cflite_pr.yml"
  "$src/.github/workflows/cflite_batch.yml")
for f in "${yaml_files[@]}"; do
  [ -s "$f" ] || fail "$f is missing or empty"
  if grep -q $'\t' "$f"; then fail "$f has a tab"; fi
done
if [ -n "$yaml_python" ]; then
  "$yaml_python" - "${yaml_files[@]}" <<'EOF' || fail "YAML"
import sys, yaml
project = yaml.safe_load(open(sys.argv[1]))
assert project["language"] == "c++", project
pr, batch = (yaml.safe_load(open(p)) for p in sys.argv[2:])
def steps(workflow):
  return [s for job in workflow["jobs"].values() for s in job["steps"]]
run = [s["with"] for s in steps(pr) if "run_fuzzers" in s.get("uses", "")]
assert run and run[0]["mode"] == "code-change" and int(run[0]["fuzz-seconds"]) == 600, run
modes = {s["with"]["mode"] for s in steps(batch) if "run_fuzzers" in s.get("uses", "")}
assert {"batch", "prune"} <= modes, modes
# PyYAML reads the key `on` as True.
assert "schedule" in batch.get("on", batch.get(True)), batch
print("yaml: project.yaml, cflite_pr.yml, cflite_batch.yml parse")
EOF
else
  echo "yaml: no PyYAML here, checked only that the files exist without tabs"
fi

# The environment OSS-Fuzz's `compile` sets for SANITIZER=address (+ undefined), libFuzzer.
flags="-O1 -fno-omit-frame-pointer -gline-tables-only -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION"
flags+=" -fsanitize=address -fsanitize-address-use-after-scope -fsanitize=undefined"
flags+=" -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link"
# The checkout stays where it is (SPMDCHECK_SRC; in the image it is $SRC/spmdcheck): the kept
# CMake build and ccache see the same paths every run.
mkdir -p "$tmp/src" "$tmp/out"
source "$src/scripts/common.sh"
spmdcheck_ccache_env >/dev/null
all_targets=(fuzz_hlo_parser fuzz_sharding_parser fuzz_literal_parser fuzz_reshard fuzz_partition)
case "${SPMDCHECK_CFLITE_TEST_TARGETS:-}" in
  all) targets=("${all_targets[@]}") ;;
  "") targets=(fuzz_hlo_parser fuzz_sharding_parser fuzz_literal_parser) ;;
  *) read -r -a targets <<<"$SPMDCHECK_CFLITE_TEST_TARGETS" ;;
esac
for target in "${all_targets[@]}"; do
  [ -f "$src/fuzz/targets/$target.options" ] || fail "no fuzz/targets/$target.options"
done
start=$SECONDS
env CC=clang CXX=clang++ CFLAGS="$flags" CXXFLAGS="$flags -stdlib=libc++" \
  LIB_FUZZING_ENGINE=-fsanitize=fuzzer SANITIZER=address FUZZING_ENGINE=libfuzzer \
  ARCHITECTURE=x86_64 FUZZING_LANGUAGE=c++ SRC="$tmp/src" OUT="$tmp/out" \
  WORK="${2:-$tmp/work}" SPMDCHECK_SRC="$src" SPMDCHECK_CFLITE_CCACHE=1 \
  SPMDCHECK_CFLITE_TARGETS="${targets[*]}" \
  bash -eu "$src/.clusterfuzzlite/build.sh" >"$tmp/build.log" 2>&1 ||
  { tail -40 "$tmp/build.log"; fail "build.sh failed"; }
echo "build.sh: built ${targets[*]} in $((SECONDS - start))s into a temporary \$OUT"

export ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1"
for target in "${targets[@]}"; do
  bin="$tmp/out/$target"
  [ -x "$bin" ] || fail "$target was not built"
  dynamic="$(readelf -d "$bin")"
  [[ "$dynamic" == *'RUNPATH'*'$ORIGIN/lib'* ]] || fail "$target has no RUNPATH \$ORIGIN/lib"
  # What OSS-Fuzz's runner has is $OUT: every library outside glibc must load from $OUT/lib.
  outside=$(env -u LD_LIBRARY_PATH ldd "$bin" | awk '$3 ~ /^\// {print $3}' |
    grep -v -E "^$tmp/out/lib/|/(libc|libm|libdl|librt|libpthread|libresolv|ld-linux[^/]*)\.so" ||
    true)
  [ -z "$outside" ] || fail "$target loads from outside \$OUT: $outside"
  [ -f "$tmp/out/$target.options" ] || fail "no $target.options"
  zip="$tmp/out/${target}_seed_corpus.zip"
  [ -f "$zip" ] || fail "no ${target}_seed_corpus.zip"
  seed_dirs=()
  for dir in "$src/corpus/$target" "$src/corpus/regressions-$target"; do
    [ -d "$dir" ] && seed_dirs+=("$dir")
  done
  want=$(find "${seed_dirs[@]}" -type f ! -name 'README*' | wc -l)
  mkdir -p "$tmp/corpus/$target"
  unzip -q "$zip" -d "$tmp/corpus/$target"
  have=$(find "$tmp/corpus/$target" -type f | wc -l)
  [ "$have" -eq "$want" ] || fail "$target: the seed corpus has $have files, the checkout $want"
  # The .options as OSS-Fuzz's run_fuzzer reads them: [libfuzzer] key = value -> -key=value.
  mapfile -t opts < <(python3 - "$tmp/out/$target.options" <<'EOF'
import configparser, sys
parser = configparser.ConfigParser()
parser.read(sys.argv[1])
for key, value in parser["libfuzzer"].items():
  print("-%s=%s" % (key, value))
EOF
  )
  [ "${#opts[@]}" -gt 0 ] || fail "$target.options has no [libfuzzer] options"
  dict=()
  [ -f "$tmp/out/$target.dict" ] && dict=(-dict="$tmp/out/$target.dict")
  log="$tmp/$target.log"
  # Every seed once, then 2 seconds of fuzzing (the dictionary is only read when fuzzing).
  "$bin" "${opts[@]}" "${dict[@]}" -runs=0 "$tmp/corpus/$target" >"$log" 2>&1 ||
    { tail -30 "$log"; fail "$target on its seed corpus"; }
  grep -q "seed corpus: files: $want " "$log" || { tail -20 "$log"; fail "$target: seeds not read"; }
  mkdir -p "$tmp/new/$target"
  "$bin" "${opts[@]}" "${dict[@]}" -seed=1 -max_total_time=2 "$tmp/new/$target" \
    "$tmp/corpus/$target" >>"$log" 2>&1 || { tail -30 "$log"; fail "$target fuzzing 2s"; }
  entries=""
  if [ "${#dict[@]}" -gt 0 ]; then
    entries=$(grep -m1 -o 'Dictionary: [0-9]* entries' "$log" || true)
    want_entries=$(grep -c -E '^[a-z_0-9]+=' "$tmp/out/$target.dict")
    [ "$entries" = "Dictionary: $want_entries entries" ] ||
      fail "$target: '$entries', the file has $want_entries"
  fi
  echo "ok   $target: $want seeds, ${opts[*]}${entries:+, $entries}, $(env -u LD_LIBRARY_PATH \
    ldd "$bin" | grep -c "$tmp/out/lib/") libraries from \$OUT/lib"
done
echo "clusterfuzzlite: ok"
