#!/bin/sh
# The spmdcheck Python package's tests (python/tests, pytest) with the pinned jax on 8 CPU
# devices, against SPMDCHECK_BINARY (the binary just built) and the package's source (PYTHONPATH,
# so that the checkout's own package is tested whatever is installed). The package's pytest
# plugin is loaded explicitly (-p; harmless when its entry point already loaded it).
# Usage: run_python_pytest.sh SPMDCHECK_BINARY SOURCE_DIR [DIR] (DIR under python/: tests, the
# default, or examples). Skipped (77) without a virtual environment with jax, pytest and
# hypothesis, except under CI=true.
bin="$1"
src="$2"
dir="${3:-tests}"
venv="${SPMDCHECK_XLA_VENV:-$src/.venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import jax, pytest, hypothesis" 2>/dev/null; then
  if [ "${CI:-}" = "true" ]; then
    echo "error: no virtual environment with jax, pytest and hypothesis at $venv (CI=true needs it)"
    exit 1
  fi
  echo "skipped: no virtual environment with jax, pytest and hypothesis at $venv (./scripts/run-tests makes one)"
  exit 77
fi
cd "$src/python" && SPMDCHECK_BINARY="$bin" PYTHONPATH="$src/python" \
  XLA_FLAGS="--xla_force_host_platform_device_count=8" \
  exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -p spmdcheck.pytest_plugin "$dir"
