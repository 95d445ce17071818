#!/usr/bin/env bash
# `spmdcheck nightly` end to end (docs/nightly.md): two short nights on one state directory
# (the canary, the reference campaign with a drill bug, libFuzzer when build-fuzz/ exists, else
# reported unknown), report.json and JUnit checked, new vs known across the nights; then a night
# killed with SIGKILL once it has written a finding and resumed with --resume, which must lose
# no finding. Usage: cli_nightly_test.sh SPMDCHECK_BINARY SOURCE_DIR
set -u
bin="$1"
src="$2"
tmp="$(mktemp -d)"
bg=""
cleanup() {
  [ -n "$bg" ] && kill -9 "$bg" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
py() { python3 - "$@"; }

lfdir="${SPMDCHECK_FUZZ_BUILD_DIR:-$src/build-fuzz}/fuzz"
if [ -x "$lfdir/fuzz_sharding_parser" ]; then have_lf=1; else have_lf=0; fi
echo "libFuzzer binaries: $lfdir ($([ $have_lf = 1 ] && echo built || echo 'not built: must be reported unknown'))"

# --- Night 1: the drill bug is new.
state="$tmp/state"
"$bin" nightly --seconds 12 --targets reference,libfuzzer --libfuzzer-dir "$lfdir" \
  --libfuzzer-targets fuzz_sharding_parser --inject-bug dot-padding-unmasked --night n1 \
  --out "$state" >"$tmp/n1.out" 2>&1
code=$?
cat "$tmp/n1.out"
[ "$code" -eq 1 ] || fail "night 1: exit $code, expected 1 (a new bug claim)"
grep -q "^night n1 in $state: seed [0-9]*, 12s, drill" "$tmp/n1.out" || fail "night 1: no seed line"
py "$state" "$have_lf" <<'EOF' || fail "night 1: report.json"
import json, sys
state, have_lf = sys.argv[1], sys.argv[2] == "1"
r = json.load(open(state + "/report.json"))
assert r["schema"] == "spmdcheck-nightly-report/1", r["schema"]
assert r["night"]["id"] == "n1" and r["night"]["status"] == "complete", r["night"]
assert r["night"]["canary"]["found"] is True, r["night"]["canary"]
assert r["exit_code"] == 1
t = {x["name"]: x for x in r["targets"]}
assert set(t) == {"canary", "reference", "libfuzzer.fuzz_sharding_parser"}, t.keys()
assert t["reference"]["status"] == "done" and t["reference"]["cases"] > 0, t["reference"]
assert t["reference"]["cases_per_second"] > 0
lf = t["libfuzzer.fuzz_sharding_parser"]
if have_lf:
    assert lf["status"] == "done" and lf["execs"] > 0 and lf["coverage"] > 0, lf
else:
    assert lf["status"] == "unknown" and lf["reason"].startswith("not built"), lf
f = {x["signature"]: x for x in r["findings"]}
assert "wrong-result.all-reduce" in f, f.keys()
d = f["wrong-result.all-reduce"]
assert d["status"] == "new" and d["first_night"] == "n1" and d["seen_tonight"], d
assert d["folder"] == "findings/wrong-result.all-reduce", d
import os
assert os.path.isfile(os.path.join(state, d["folder"], "finding.json"))
assert os.path.isfile(os.path.join(state, d["folder"], "module.hlo"))
assert len(r["trends"]) == 1
EOF
py "$state/junit.xml" <<'EOF' || fail "night 1: junit.xml"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites"
cases = {c.get("name"): c for c in root.iter("testcase")}
assert "wrong-result.all-reduce" in cases, cases.keys()
assert cases["wrong-result.all-reduce"].find("failure") is not None, "a new finding must fail"
assert cases["canary"].find("failure") is None
failures = sum(1 for c in root.iter("testcase") if c.find("failure") is not None)
assert int(root.get("failures")) == failures, (root.get("failures"), failures)
EOF

# --- Night 2, the same drill: what night 1 found and night 2 sees again is known (the drill's
# bug also shows in other signatures, found or not depending on the cases a night reaches).
cp "$state/findings.json" "$tmp/findings-n1.json"
"$bin" nightly --seconds 8 --targets reference --inject-bug dot-padding-unmasked --night n2 \
  --out "$state" >"$tmp/n2.out" 2>&1
code=$?
cat "$tmp/n2.out"
py "$state" "$tmp/findings-n1.json" "$code" <<'EOF2' || fail "night 2: new vs known"
import json, sys
state, before, code = sys.argv[1], sys.argv[2], int(sys.argv[3])
n1 = {f["signature"] for f in json.load(open(before))["findings"]}
r = json.load(open(state + "/report.json"))
assert r["night"]["id"] == "n2"
f = {x["signature"]: x for x in r["findings"]}
d = f["wrong-result.all-reduce"]
assert d["status"] == "known" and d["first_night"] == "n1" and d["last_night"] == "n2", d
assert d["nights_seen"] == 2, d
for s, x in f.items():
    if x["seen_tonight"]:
        assert x["status"] == ("known" if s in n1 else "new"), (s, x)
        assert x["last_night"] == "n2", x
    else:
        assert s in n1 and x["status"] == "known" and x["last_night"] == "n1", (s, x)
new_claims = [s for s, x in f.items() if x["status"] == "new" and x["bug_claim"]]
assert r["summary"]["new"] == len([x for x in f.values() if x["status"] == "new"])
assert code == (1 if new_claims else 0), (code, new_claims)
assert [t["night"] for t in r["trends"]] == ["n1", "n2"]
assert all("reference" in t["cases_per_second"] for t in r["trends"]), r["trends"]
db = json.load(open(state + "/findings.json"))
assert [x["signature"] for x in db["findings"]].count("wrong-result.all-reduce") == 1
EOF2
py "$state/junit.xml" "$state/report.json" <<'EOF2' || fail "night 2: junit.xml (new fail, known pass)"
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
status = {x["signature"]: x["status"] for x in json.load(open(sys.argv[2]))["findings"]}
cases = {c.get("name"): c for c in root.iter("testcase") if "findings" in c.get("classname")}
assert set(cases) == set(status), (set(cases), set(status))
for s, c in cases.items():
    assert (c.find("failure") is not None) == (status[s] == "new"), s
assert cases["wrong-result.all-reduce"].find("failure") is None
assert int(root.get("failures")) == sum(1 for v in status.values() if v == "new")
EOF2
grep -q '<table id="findings">' "$state/report.html" || fail "report.html: no findings table"
grep -q '| `wrong-result.all-reduce` | known |' "$state/report.md" || fail "report.md: not known"

# --- libFuzzer's crash pipeline, with a stand-in binary (tests/data/nightly/fake_libfuzzer.sh):
# the crash input is replayed, its stack makes the signature, it is kept and minimized; the same
# crash the next night is the same finding, known.
fdir="$tmp/fake-fuzz"
mkdir -p "$fdir"
ln -s "$src/tests/data/nightly/fake_libfuzzer.sh" "$fdir/fuzz_reshard"
fstate="$tmp/lf"
for n in f1 f2; do
  "$bin" nightly --seconds 4 --targets libfuzzer --libfuzzer-dir "$fdir" \
    --libfuzzer-targets fuzz_reshard --night $n --out "$fstate" >"$tmp/$n.out" 2>&1
  echo "$?" >"$tmp/$n.code"
  cat "$tmp/$n.out"
done
[ "$(cat "$tmp/f1.code")" -eq 1 ] || fail "libFuzzer night 1: exit $(cat "$tmp/f1.code"), expected 1"
[ "$(cat "$tmp/f2.code")" -eq 0 ] || fail "libFuzzer night 2: exit $(cat "$tmp/f2.code"), expected 0"
py "$fstate" <<'EOF2' || fail "libFuzzer crash pipeline"
import json, os, re, sys
state = sys.argv[1]
r = json.load(open(state + "/report.json"))
assert r["night"]["id"] == "f2" and "canary" not in r["night"], r["night"]
t = r["targets"][0]
assert t["name"] == "libfuzzer.fuzz_reshard" and t["status"] == "done", t
assert t["coverage"] == 42 and t["features"] == 84 and t["execs"] == 2000, t
assert t["corpus_files"] >= 2 and t["execs_per_second"] > 0, t
assert "-fork=1" in t["command"] and "-ignore_crashes=1" in t["command"], t["command"]
[f] = r["findings"]
assert re.fullmatch(r"libfuzzer\.fuzz_reshard\.heap-buffer-overflow\.[0-9a-f]{8}", f["signature"]), f
assert f["status"] == "known" and f["first_night"] == "f1" and f["nights_seen"] == 2, f
folder = os.path.join(state, f["folder"])
assert open(folder + "/input").read() == "boom"
assert open(folder + "/input.min").read() == "b"
assert "heap-buffer-overflow" in open(folder + "/log.txt").read()
info = json.load(open(folder + "/finding.json"))
assert info["frames"][0].startswith("spmdcheck::PlanReshard"), info
assert info["reproduce"].endswith("/input"), info
assert [x["coverage"] for x in r["trends"]] == [{"fuzz_reshard": 42}, {"fuzz_reshard": 42}]
EOF2

# --- kill -9 while libFuzzer runs, after it wrote a crash input: the run dies with the nightly,
# the resume analyzes that input (the resumed run finds no crash) and merges both attempts.
lkstate="$tmp/lf-killed"
FAKE_LIBFUZZER_SLEEP=60 "$bin" nightly --seconds 30 --targets libfuzzer --libfuzzer-dir "$fdir" \
  --libfuzzer-targets fuzz_reshard --night lk --out "$lkstate" >"$tmp/lk.out" 2>&1 &
bg=$!
attempt1="$lkstate/nights/lk/libfuzzer.fuzz_reshard/attempt-1"
for _ in $(seq 300); do
  ls "$attempt1"/artifacts/crash-* >/dev/null 2>&1 && break
  sleep 0.1
done
sleep 0.5
kill -9 "$bg"
wait "$bg" 2>/dev/null
bg=""
# The libFuzzer run dies with the nightly that started it (target/process.cc: PR_SET_PDEATHSIG),
# even killed with -9; the resume would stop one that survived some other way.
for _ in $(seq 50); do pgrep -f "$attempt1" >/dev/null || break; sleep 0.1; done
if pgrep -f "$attempt1" >/dev/null; then fail "libFuzzer: the run outlived the killed nightly"; fi
FAKE_LIBFUZZER_NO_CRASH=1 "$bin" nightly --resume --libfuzzer-dir "$fdir" --out "$lkstate" \
  >"$tmp/lkr.out" 2>&1
code=$?
cat "$tmp/lk.out" "$tmp/lkr.out"
[ "$code" -eq 1 ] || fail "libFuzzer resume: exit $code, expected 1 (the crash of the killed run)"
if pgrep -f "$attempt1" >/dev/null; then fail "libFuzzer resume: the killed run's process lives"; fi
py "$lkstate" <<'EOF2' || fail "libFuzzer resume: the crash of the killed run was lost"
import json, sys
state = sys.argv[1]
[f] = json.load(open(state + "/findings.json"))["findings"]
assert f["signature"].startswith("libfuzzer.fuzz_reshard.heap-buffer-overflow."), f
assert f["first_night"] == "lk" and f["counts_by_night"] == {"lk": 1}, f
t = json.load(open(state + "/report.json"))["targets"][0]
assert t["attempts"] == 2 and t["status"] == "done", t
EOF2

# --- The Ray hook: --ray runs the campaigns through the driver's command line and reads its
# output folder as a local campaign's (a stand-in driver; the canary stays local).
SPMDCHECK_RAY_DRIVER="$src/tests/data/nightly/fake_ray_fuzz.py" SPMDCHECK_XLA_PYTHON=python3 \
  "$bin" nightly --seconds 6 --targets reference --ray test-cluster --ray-workers 3 --night r1 \
  --out "$tmp/ray" >"$tmp/r1.out" 2>&1
code=$?
cat "$tmp/r1.out"
[ "$code" -eq 0 ] || fail "ray night: exit $code, expected 0"
py "$tmp/ray" <<'EOF2' || fail "ray hook"
import json, sys
state = sys.argv[1]
r = json.load(open(state + "/report.json"))
t = {x["name"]: x for x in r["targets"]}
ref = t["reference"]
assert ref["status"] == "done" and ref["cases"] > 0, ref
assert "fake_ray_fuzz.py --address test-cluster" in ref["command"], ref["command"]
assert "fake_ray_fuzz" not in t["canary"]["command"] and " fuzz " in t["canary"]["command"]
a = json.load(open(state + "/nights/r1/reference/attempt-1/ray_args.json"))
assert a["workers"] == 3 and a["partitioner"] == "reference" and a["seed"] == r["night"]["seed"], a
assert a["max_devices"] == 8 and a["jobs_per_worker"] == 1 and a["reduce_seconds"] >= 1, a
assert a["out"] == state + "/nights/r1/reference/attempt-1", a
EOF2
SPMDCHECK_RAY_DRIVER="$tmp/absent.py" "$bin" nightly --seconds 30 --targets reference \
  --ray test-cluster --night r2 --out "$tmp/ray" >"$tmp/r2.out" 2>&1
code=$?
[ "$code" -eq 3 ] || fail "ray night without the driver: exit $code, expected 3 (unknown)"
grep -q "reference: unknown (the Ray driver $tmp/absent.py is not there)" "$tmp/r2.out" ||
  fail "ray night without the driver: not reported unknown"

# --- Bad input.
"$bin" nightly --out "$tmp/x" >/dev/null 2>&1
[ $? -eq 2 ] || fail "no time budget: expected exit 2"
"$bin" nightly --hours 1 --out "$tmp/x" --targets bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown target: expected exit 2"
"$bin" nightly --seconds 5 --targets reference --night n1 --out "$state" >/dev/null 2>&1
[ $? -eq 2 ] || fail "an existing night id: expected exit 2"

# --- kill -9 mid-night, then --resume: no finding lost.
kstate="$tmp/killed"
"$bin" nightly --seconds 16 --targets reference --inject-bug dot-padding-unmasked --night k1 \
  --canary-seconds 3 --reduce-seconds 2 --out "$kstate" >"$tmp/k1.out" 2>&1 &
bg=$!
# Wait until the reference campaign has written a finding (or give up after 60 s).
for _ in $(seq 600); do
  ls "$kstate"/nights/k1/reference/attempt-1/*/finding.json >/dev/null 2>&1 && break
  sleep 0.1
done
sleep 1
before="$(cd "$kstate/nights/k1/reference/attempt-1" 2>/dev/null &&
  for f in */finding.json; do python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["signature"])' "$f"; done | sort)"
kill -9 "$bg"
wait "$bg" 2>/dev/null
bg=""
cat "$tmp/k1.out"
[ -n "$before" ] || fail "kill test: no finding was written before the kill"
echo "findings on disk at the kill: $before"
python3 -c 'import json,sys; n=json.load(open(sys.argv[1])); assert n["status"]=="running", n["status"]' \
  "$kstate/nights/k1/night.json" || fail "kill test: the night record is not resumable"
start=$(date +%s.%N)
"$bin" nightly --resume --reduce-seconds 2 --out "$kstate" >"$tmp/k1r.out" 2>&1
code=$?
end=$(date +%s.%N)
cat "$tmp/k1r.out"
echo "resume took $(python3 -c "print(round($end - $start, 1))")s"
[ "$code" -eq 1 ] || fail "resume: exit $code, expected 1 (the new finding)"
grep -q "^resuming night k1" "$tmp/k1r.out" || fail "resume: did not resume k1"
py "$kstate" "$before" <<'EOF' || fail "resume: a finding was lost"
import json, os, sys
state, before = sys.argv[1], sys.argv[2].split()
db = {f["signature"]: f for f in json.load(open(state + "/findings.json"))["findings"]}
for s in before:
    assert s in db, (s, list(db))
    assert db[s]["first_night"] == "k1" and "k1" in db[s]["counts_by_night"], db[s]
    assert os.path.isfile(os.path.join(state, db[s]["folder"], "finding.json")), db[s]
r = json.load(open(state + "/report.json"))
assert r["night"]["id"] == "k1" and r["night"]["status"] == "complete", r["night"]
ref = {t["name"]: t for t in r["targets"]}["reference"]
assert ref["attempts"] == 2 and ref["status"] == "done", ref
assert r["night"]["spent_seconds"] <= 16 * 1.2 + 10, r["night"]
state_nights = json.load(open(state + "/state.json"))["nights"]
assert state_nights == ["k1"], state_nights
EOF
# The campaign the killed run left behind was stopped by the resume.
if pgrep -f "$kstate/nights/k1/reference/attempt-1" >/dev/null; then
  fail "resume: the killed run's campaign is still running"
fi

if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "cli_nightly_test: all passed"
