#!/bin/sh
# A `cmd:` partitioner for tests, following the contract of docs/partitioners.md:
#   cmd_partitioner.sh MODE SPMDCHECK IN.hlo OUT.hlo --num-partitions N
# MODE ok: spmdcheck's own partitioner; reject: exit 2; unsupported: exit 3; crash: abort;
# hang: sleep; hang-once-MARKER: sleep the first time (creates the file MARKER), then ok;
# empty: exit 0 without output; bug-NAME: spmdcheck's own with injected bug NAME.
mode="$1"
spmdcheck="$2"
shift 2
case "$mode" in
  ok) exec "$spmdcheck" partition "$1" -o "$2" "$3" "$4" ;;
  reject) echo "refused: I do not like this module" >&2; exit 2 ;;
  unsupported) echo "no handler for dot" >&2; exit 3 ;;
  crash) echo "F1201 partitioner.cc:1] Check failed: oops" >&2; kill -ABRT $$ ;;
  hang) sleep 60 ;;
  hang-once-*)
    if [ -e "${mode#hang-once-}" ]; then exec "$spmdcheck" partition "$1" -o "$2" "$3" "$4"; fi
    : > "${mode#hang-once-}"
    sleep 60 ;;
  empty) exit 0 ;;
  bug-*) exec "$spmdcheck" partition "$1" -o "$2" "$3" "$4" --inject-bug "${mode#bug-}" ;;
esac
