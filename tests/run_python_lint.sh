#!/bin/sh
# Lint and type checks of the spmdcheck Python package: `ruff check python` (the package, its
# tests and examples; config: python/pyproject.toml [tool.ruff], lint only) and `mypy` on
# python/spmdcheck ([tool.mypy]), with the pinned ruff and mypy of python/requirements-dev.txt.
# Usage: run_python_lint.sh SOURCE_DIR. Skipped (77) without a virtual environment that has
# them, except under CI=true.
src="$1"
venv="${SPMDCHECK_XLA_VENV:-$src/.venv}"
if [ ! -x "$venv/bin/ruff" ] || ! "$venv/bin/python" -c "import mypy, jax" 2>/dev/null; then
  if [ "${CI:-}" = "true" ]; then
    echo "error: no ruff, mypy and jax in $venv (CI=true needs them; python/requirements-dev.txt)"
    exit 1
  fi
  echo "skipped: no ruff, mypy and jax in $venv (./scripts/run-tests installs python/requirements-dev.txt)"
  exit 77
fi
status=0
echo "ruff check python"
(cd "$src" && "$venv/bin/ruff" check --no-cache python) || status=1
echo "mypy (python/pyproject.toml: spmdcheck)"
# The cache goes to a temporary directory: nothing is written into the checkout.
cache="$(mktemp -d)"
(cd "$src/python" && "$venv/bin/python" -m mypy --cache-dir "$cache") || status=1
rm -rf "$cache"
exit $status
