#!/usr/bin/env bash
# The notation and picture verbs of `spmdcheck sharding` (from-spec, to-spec, from-sdy, to-sdy,
# show --svg/--html) end to end: exit codes and key output. Usage: cli_notation_test.sh
# SPMDCHECK_BINARY SOURCE_DIR
set -u
bin="$1"
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

m=data=2,model=4
expect 0 "{devices=[2,1,4]<=[8] last_tile_dim_replicate}" -- "$bin" sharding from-spec "P('data', None)" --mesh $m --shape 'f32[8,16]'
expect 0 "unspecified_dims=[1]" -- "$bin" sharding from-spec "P('data', P.UNCONSTRAINED)" --mesh $m
expect 2 "<input>:1:11: error" -- "$bin" sharding from-spec "P('data', Nope)" --mesh $m
expect 2 "no mesh axis 'pipe'" -- "$bin" sharding from-spec "P('pipe')" --mesh $m
expect 2 "needs --mesh" -- "$bin" sharding from-spec "P('data')"
expect 2 "has 3 entries, the array only 2 dims" -- "$bin" sharding from-spec "P('data', None, None)" --mesh $m --shape 'f32[8,8]'
expect 2 "--mesh" -- "$bin" sharding from-spec "P('data')" --mesh 'data=2,,model=4'
expect 0 "P('data', 'model')" -- "$bin" sharding to-spec '{devices=[2,4]<=[8]}' --mesh $m
expect 0 "P(None, 'data')" -- "$bin" sharding to-spec '{devices=[1,2,4]<=[8] last_tile_dim_replicate}' --mesh $m --shape 'f32[3,5]'
expect 1 "no PartitionSpec: the device order of {devices=[2,2]0,1,3,2} is no view of the mesh" -- "$bin" sharding to-spec '{devices=[2,2]0,1,3,2}' --mesh a=2,b=2
expect 1 "shard_map" -- "$bin" sharding to-spec '{manual}' --mesh $m
expect 2 "a tuple sharding" -- "$bin" sharding to-spec '{{replicated}, {replicated}}' --mesh $m
expect 0 "{devices=[4,2]<=[8]}" -- "$bin" sharding from-sdy '<@mesh, [{"x":(1)4}, {"x":(4)2}]>' --mesh x=8
expect 2 "give that mesh with --mesh" -- "$bin" sharding from-sdy '<@mesh, [{"x"}]>'
expect 2 "<input>:1:" -- "$bin" sharding from-sdy '<@mesh, [{"x"]>' --mesh x=8
expect 2 "the sharding has 1 dims" -- "$bin" sharding from-sdy '<@mesh, [{"x"}]>' --mesh x=8 --shape 'f32[8,8]'
expect 0 '#sdy.sharding<@mesh, [{"x1"}, {"x0"}, {"x2"}]>' -- "$bin" sharding to-sdy '{devices=[4,2,8]<=[2,4,8]T(1,0,2)}'
expect 1 "no Shardy sharding" -- "$bin" sharding to-sdy '{devices=[2,1,2]<=[4] last_tile_dims={manual}}'
expect 0 "usage: spmdcheck sharding from-spec" -- "$bin" sharding from-spec --help

# Pictures and report pages (their content is checked in headless Chromium: browser_pages_test).
expect 0 "tile grid [2,2]" -- "$bin" sharding show '{devices=[2,2]<=[4]}' --shape 'f32[4,4]' --svg "$tmp/s.svg" --html "$tmp/s.html"
if grep -q 'data-devices="3"' "$tmp/s.svg" && grep -q '<!DOCTYPE html>' "$tmp/s.html"; then pass=$((pass + 1)); else
  echo "FAIL: show --svg/--html wrote no tile of device 3 or no page"; failures=$((failures + 1)); fi
expect 2 "cannot write" -- "$bin" sharding show '{devices=[2,2]<=[4]}' --shape 'f32[4,4]' --svg "$tmp/no/such/dir.svg"
expect 2 "--mesh" -- "$bin" sharding show '{devices=[2,2]<=[4]}' --shape 'f32[4,4]' --svg "$tmp/m.svg" --mesh 'a=0'
expect 2 "over the picture's limit" -- "$bin" sharding show '{devices=[8192]<=[8192]}' --shape 'f32[8192]' --svg "$tmp/big.svg"
expect 0 '"verdict": "holds"' -- "$bin" check "$2/corpus/hlo/reduce_uneven.hlo" --format json
expect 2 "--format must be text or json" -- "$bin" check "$2/corpus/hlo/reduce_uneven.hlo" --format xml
expect 2 "take one FILE" -- "$bin" check "$2/corpus/hlo" --format json
expect 0 "reproduce:" -- "$bin" check "$2/corpus/hlo/reduce_uneven.hlo" --html "$tmp/check.html"
if grep -q 'data-opcode="all-reduce"' "$tmp/check.html"; then pass=$((pass + 1)); else
  echo "FAIL: check --html drew no all-reduce"; failures=$((failures + 1)); fi
expect 1 "proved" -- "$bin" lint "$2/corpus/lint/wasteful/03_two_permutes.hlo" --html "$tmp/lint.html"
if grep -q 'class="finding" data-status="proved"' "$tmp/lint.html"; then pass=$((pass + 1)); else
  echo "FAIL: lint --html has no proved finding"; failures=$((failures + 1)); fi

echo "cli notation test: $pass passed, $failures failed"
[ "$failures" -eq 0 ]
