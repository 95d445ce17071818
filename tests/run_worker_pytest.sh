#!/bin/sh
# The XLA worker's pytest suite (workers/xla/tests) in the project's virtual environment.
# Usage: run_worker_pytest.sh SOURCE_DIR. Without a virtual environment that imports jax this
# is skipped (exit 77), except under CI=true, where XLA must be there.
src="$1"
venv="${SPMDCHECK_XLA_VENV:-$src/.venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import jax, pytest" 2>/dev/null; then
  if [ "${CI:-}" = "true" ]; then
    echo "error: no virtual environment with jax and pytest at $venv (CI=true needs XLA)"
    exit 1
  fi
  echo "skipped: no virtual environment with jax and pytest at $venv (./scripts/run-tests makes one)"
  exit 77
fi
cd "$src/workers/xla" && exec "$venv/bin/python" -m pytest -q -p no:cacheprovider tests
