#!/usr/bin/env bash
# Times the oracle's kernels (build/bench/oracle_bench) and numpy on the same machine and prints
# oracle/numpy ratios. Installs python3-numpy when missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SPMDCHECK_BUILD_DIR:-$root/build}"
if ! /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  apt-get install -y -qq python3-numpy >/dev/null
fi
cmake --build "$build" --target oracle_bench >/dev/null
"$build/bench/oracle_bench" --benchmark_format=json --benchmark_min_time=0.5 > /tmp/oracle_bench.json
/usr/bin/python3 - <<'PY'
import json, time, numpy as np
def best(f, reps=7):
    f(); t = []
    for _ in range(reps):
        s = time.perf_counter(); f(); t.append(time.perf_counter() - s)
    return min(t) * 1e3
rng = np.random.default_rng(1)
a = rng.uniform(-1, 1, (512, 512)).astype(np.float32); b = rng.uniform(-1, 1, (512, 512)).astype(np.float32)
c = rng.uniform(-1, 1, (64, 64, 64)).astype(np.float32)
r = rng.uniform(-1, 1, (256, 256, 64)).astype(np.float32)
table = rng.uniform(-1, 1, (32768, 128)).astype(np.float32); rows = rng.integers(0, 32768, 4096)
numpy_ms = {
  "BM_Dot512": best(lambda: a @ b),
  "BM_Transpose64": best(lambda: np.ascontiguousarray(c.transpose(2, 0, 1))),
  "BM_ReduceSum": best(lambda: r.sum(axis=1)),
  "BM_Gather4096Rows": best(lambda: table[rows]),
}
ours = {b["name"]: b["real_time"] for b in json.load(open("/tmp/oracle_bench.json"))["benchmarks"]}
print(f"{'kernel':22} {'spmdcheck ms':>13} {'numpy ms':>10} {'ratio':>8}")
for name, np_ms in numpy_ms.items():
    o = ours.get(name)
    print(f"{name:22} {o:13.3f} {np_ms:10.3f} {o / np_ms:8.2f}x")
PY
