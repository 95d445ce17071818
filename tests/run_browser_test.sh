#!/bin/sh
# The pictures and report pages in headless Chromium (tests/browser_pages_test.py, pytest with
# the pinned selenium of tests/requirements-browser.txt in the project's virtual environment).
# Usage: run_browser_test.sh SPMDCHECK_BINARY SOURCE_DIR [TEST_FILE] (default
# browser_pages_test.py; browser_nightly_test.py checks the nightly report). Skipped (exit 77)
# with a message when chromium, chromium-driver or selenium is missing, except under CI=true,
# where it fails.
bin="$1"
src="$2"
test_file="${3:-browser_pages_test.py}"
venv="${SPMDCHECK_XLA_VENV:-$src/.venv}"
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v chromedriver >/dev/null 2>&1 || missing="$missing chromium-driver"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import selenium, pytest" 2>/dev/null; then
  missing="$missing selenium(in $venv)"
fi
if [ -n "$missing" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "error: the browser test needs:$missing (scripts/common.sh installs them; CI=true needs them)"
    exit 1
  fi
  echo "skipped: the browser test needs:$missing (./scripts/run-tests installs them)"
  exit 77
fi
SPMDCHECK_BINARY="$bin" SPMDCHECK_SOURCE_DIR="$src" exec "$venv/bin/python" -m pytest -q \
  -p no:cacheprovider "$src/tests/$test_file"
