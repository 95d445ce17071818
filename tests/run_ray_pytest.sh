#!/bin/sh
# The Ray scale-out driver's pytest suite (workers/ray/tests): merging, and a real two-node local
# Ray cluster running ray_fuzz.py. Usage: run_ray_pytest.sh SPMDCHECK SOURCE_DIR. Without a
# virtual environment that imports ray this is skipped (exit 77), except under CI=true.
bin="$1"
src="$2"
venv="${SPMDCHECK_XLA_VENV:-$src/.venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import ray, pytest" 2>/dev/null; then
  if [ "${CI:-}" = "true" ]; then
    echo "error: no virtual environment with ray and pytest at $venv (CI=true runs the Ray tests)"
    exit 1
  fi
  echo "skipped: no virtual environment with ray and pytest at $venv (./scripts/run-tests makes one)"
  exit 77
fi
export SPMDCHECK_BIN="$bin"
# No usage-stats reporting from the test clusters.
export RAY_USAGE_STATS_ENABLED=0
cd "$src/workers/ray" && exec "$venv/bin/python" -m pytest -q -p no:cacheprovider tests
