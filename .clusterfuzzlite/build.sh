#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build of the libFuzzer targets (fuzz/targets/, docs/clusterfuzzlite.md).
# Run by `compile` inside .clusterfuzzlite/Dockerfile's image, with OSS-Fuzz's environment:
#   CC CXX CFLAGS CXXFLAGS  the compilers and the sanitizer/coverage flags of this build
#   LIB_FUZZING_ENGINE      what a fuzz target links for its main (-fsanitize=fuzzer)
#   OUT SRC WORK            output, sources ($SRC/spmdcheck), scratch (the CMake build)
# Writes into $OUT, per target T: T, T_seed_corpus.zip (corpus/T and corpus/regressions-T),
# T.dict (fuzz/targets/*.dict) and T.options (fuzz/targets/T.options); $OUT/lib holds the
# shared libraries the targets need that a runner image does not have (RUNPATH $ORIGIN/lib).
# SPMDCHECK_CFLITE_TARGETS (space-separated) builds a subset; tests/clusterfuzzlite_test.sh
# runs this script outside Docker with the same environment.
src="${SPMDCHECK_SRC:-$SRC/spmdcheck}"
build="$WORK/spmdcheck-build"
targets=(${SPMDCHECK_CFLITE_TARGETS:-fuzz_hlo_parser fuzz_sharding_parser fuzz_literal_parser
  fuzz_reshard fuzz_partition})
declare -A dicts=([fuzz_hlo_parser]=hlo.dict [fuzz_sharding_parser]=sharding.dict
  [fuzz_literal_parser]=literal.dict)

# Our dependencies are Debian's packages, built against libstdc++: OSS-Fuzz's base-builder adds
# -stdlib=libc++ to CXXFLAGS, which cannot link with them.
cxxflags="${CXXFLAGS//-stdlib=libc++/}"
# As the project's own fuzz build: no coverage counters in out-of-line std::/absl:: templates.
if [[ "$cxxflags" == *fuzzer-no-link* ]]; then
  cxxflags+=" -fsanitize-coverage-ignorelist=$src/fuzz/coverage_ignorelist.txt"
fi
launcher=()
if command -v ccache >/dev/null 2>&1 && [ -n "${CCACHE_DIR:-}${SPMDCHECK_CFLITE_CCACHE:-}" ]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# Build type "OSSFuzz" has no flags of its own: only $CXXFLAGS (no -DNDEBUG: asserts stay on).
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=OSSFuzz \
  -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_CXX_FLAGS="$cxxflags" \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath,'\$ORIGIN/lib'" \
  -DSPMDCHECK_WERROR=OFF -DSPMDCHECK_LIB_FUZZING_ENGINE="$LIB_FUZZING_ENGINE" \
  "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

mkdir -p "$OUT/lib"
for target in "${targets[@]}"; do
  cp "$build/fuzz/$target" "$OUT/$target"
  inputs=()
  for dir in "$src/corpus/$target" "$src/corpus/regressions-$target"; do
    [ -d "$dir" ] && inputs+=("$dir")
  done
  rm -f "$OUT/${target}_seed_corpus.zip"
  # Flat (-j): OSS-Fuzz unpacks the zip as one corpus directory.
  find "${inputs[@]}" -type f ! -name 'README*' -print0 |
    xargs -0 zip -q -j "$OUT/${target}_seed_corpus.zip"
  cp "$src/fuzz/targets/$target.options" "$OUT/$target.options"
  if [ -n "${dicts[$target]:-}" ]; then
    cp "$src/fuzz/targets/${dicts[$target]}" "$OUT/$target.dict"
  fi
  # Shared libraries outside glibc (absl, z3, mimalloc, libstdc++, ...) go along in $OUT/lib.
  ldd "$OUT/$target" | awk '$3 ~ /^\// {print $3}' |
    grep -v -E '/(libc|libm|libdl|librt|libpthread|libresolv|ld-linux[^/]*)\.so' |
    while read -r lib; do
      [ -e "$OUT/lib/$(basename "$lib")" ] || cp -L "$lib" "$OUT/lib/"
    done
done
