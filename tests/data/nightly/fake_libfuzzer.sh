#!/bin/sh
# A stand-in for a libFuzzer binary (tests/cli_nightly_test.sh links it as fuzz_reshard): it
# answers the four ways `spmdcheck nightly` runs one — fuzzing (-fork: status lines, a new
# corpus input, one crash artifact), -merge=1, -runs=0 over a corpus (coverage) and
# -minimize_crash — and, run on one input, crashes with an AddressSanitizer-style stack, so that
# the crash pipeline (replay, signature, kept folder, new vs known) runs without the clang build.
# FAKE_LIBFUZZER_SLEEP=N: fuzzing lasts N more seconds; FAKE_LIBFUZZER_NO_CRASH=1: no crash.
mode=run
prefix=""
exact=""
dirs=""
for arg in "$@"; do
  case "$arg" in
    -fork=*) mode=fuzz ;;
    -merge=1) mode=merge ;;
    -runs=0) mode=coverage ;;
    -minimize_crash=1) mode=minimize ;;
    -artifact_prefix=*) prefix="${arg#-artifact_prefix=}" ;;
    -exact_artifact_path=*) exact="${arg#-exact_artifact_path=}" ;;
    -*) ;;
    *) dirs="$dirs $arg" ;;
  esac
done
set -- $dirs
case "$mode" in
  fuzz)
    echo "INFO: -fork=1: fuzzing in separate process(s)"
    echo "#1000: cov: 40 ft: 80 corp: 3 exec/s 500 oom/timeout/crash: 0/0/1 time: 1s job: 1 dft_time: 0"
    echo "unit-$$" >"$1/unit-$$"
    [ -z "${FAKE_LIBFUZZER_NO_CRASH:-}" ] && printf 'boom' >"${prefix}crash-0123456789abcdef"
    # A long run (a kill lands in the middle of it).
    [ -n "${FAKE_LIBFUZZER_SLEEP:-}" ] && sleep "$FAKE_LIBFUZZER_SLEEP"
    echo "#2000: cov: 41 ft: 82 corp: 4 exec/s 1000 oom/timeout/crash: 0/0/1 time: 2s job: 2 dft_time: 0"
    echo "INFO: exiting: 0 time: 2s"
    ;;
  merge)
    first="$1"
    shift
    n=0
    for d in "$@"; do
      for f in "$d"/*; do
        [ -f "$f" ] || continue
        [ -e "$first/$(basename "$f")" ] && continue
        cp "$f" "$first/" && n=$((n + 1))
      done
    done
    echo "MERGE-OUTER: $n new files with 1 new features added; 1 new coverage edges"
    ;;
  coverage)
    n=$(ls "$1" | wc -l)
    printf '#%d\tINITED cov: 42 ft: 84 corp: %d/10b exec/s: 0 rss: 1Mb\n' "$n" "$n"
    printf '#%d\tDONE   cov: 42 ft: 84 corp: %d/10b lim: 4 exec/s: 0 rss: 1Mb\n' "$n" "$n"
    ;;
  minimize)
    printf 'b' >"$exact"
    ;;
  run)
    cat <<'END'
==7==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000011 at pc 0x1 bp 0x2
READ of size 1 at 0x602000000011 thread T0
    #0 0x55d0c1 in spmdcheck::PlanReshard(spmdcheck::Shape const&) /src/partitioner/reshard.cc:12:3
    #1 0x55d0c2 in LLVMFuzzerTestOneInput /src/fuzz/targets/fuzz_reshard.cc:20:3
    #2 0x55d0c3 in fuzzer::Fuzzer::ExecuteCallback(unsigned char const*, unsigned long) (/b/fuzz+0x1)
SUMMARY: AddressSanitizer: heap-buffer-overflow /src/partitioner/reshard.cc:12:3 in spmdcheck::PlanReshard
END
    exit 1
    ;;
esac
exit 0
