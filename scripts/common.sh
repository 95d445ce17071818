# Shared by scripts/run-main and scripts/run-tests: installs missing Debian packages and builds
# spmdcheck incrementally in build/ (override with SPMDCHECK_BUILD_DIR).
set -euo pipefail

SPMDCHECK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SPMDCHECK_BUILD_DIR="${SPMDCHECK_BUILD_DIR:-$SPMDCHECK_ROOT/build}"
SPMDCHECK_PACKAGES=(cmake ninja-build g++ pkg-config librapidcheck-dev libz3-dev libabsl-dev
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev python3 python3-jsonschema
  python3-venv ccache nlohmann-json3-dev clang-format libmimalloc-dev chromium chromium-driver)

spmdcheck_install_packages() {
  local missing=()
  for pkg in "${SPMDCHECK_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing missing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# ccache keeps compiled objects across builds and checkouts: paths under the checkout's parent
# are hashed relative to it, so two clones side by side (or CI on a machine that built before)
# share one cache.
spmdcheck_ccache_env() {
  if command -v ccache >/dev/null 2>&1; then
    export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$SPMDCHECK_ROOT")}"
    export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
    export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
    echo "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  fi
}

spmdcheck_build() {
  local launcher
  launcher="$(spmdcheck_ccache_env)"
  spmdcheck_ccache_env >/dev/null
  if [ ! -f "$SPMDCHECK_BUILD_DIR/build.ninja" ]; then
    cmake -S "$SPMDCHECK_ROOT" -B "$SPMDCHECK_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      $launcher >/dev/null
  fi
  if [ "$#" -gt 0 ]; then
    cmake --build "$SPMDCHECK_BUILD_DIR" -j "$(nproc)" --target "$@"
  else
    cmake --build "$SPMDCHECK_BUILD_DIR" -j "$(nproc)"
  fi
}

# The project's Python environment: a virtual environment (default .venv in the checkout;
# SPMDCHECK_XLA_VENV points at another) with the pinned jax/jaxlib of
# workers/xla/requirements.txt, the pinned selenium of tests/requirements-browser.txt (the
# browser test), the pinned ray of workers/ray/requirements.txt (the Ray driver and its tests;
# a ~80 MB wheel) and the spmdcheck Python package (python/, installed editable), installed when
# missing or when any of them changed (the stamp holds what was installed). Under CI=true a
# failed install is an error; elsewhere everything but the XLA partitioners still works and
# `--partitioner xla` answers "unknown: XLA is not available".
spmdcheck_python_env() {
  local venv="${SPMDCHECK_XLA_VENV:-$SPMDCHECK_ROOT/.venv}"
  local requirements="$SPMDCHECK_ROOT/workers/xla/requirements.txt"
  local browser="$SPMDCHECK_ROOT/tests/requirements-browser.txt"
  local ray="$SPMDCHECK_ROOT/workers/ray/requirements.txt"
  local package="$SPMDCHECK_ROOT/python"
  local stamp="$venv/.spmdcheck-requirements"
  local wanted
  wanted="$(cat "$requirements" "$browser" "$ray" "$package/pyproject.toml"
    echo "package: $package")"
  if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
    return 0
  fi
  echo "setting up the Python environment in $venv (pinned jax, see $requirements; python/)"
  if { [ -x "$venv/bin/python" ] || python3 -m venv "$venv"; } &&
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" \
      -r "$browser" -r "$ray" &&
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e "$package"; then
    printf '%s\n' "$wanted" > "$stamp"
    return 0
  fi
  if [ "${CI:-}" = "true" ]; then
    echo "error: installing jax into $venv failed (CI=true needs XLA)" >&2
    return 1
  fi
  echo "warning: installing jax into $venv failed: the XLA partitioners will be unavailable" >&2
  return 0
}
