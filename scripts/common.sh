# Shared by scripts/run-main and scripts/run-tests: installs missing Debian packages and builds
# spmdcheck incrementally in build/ (override with SPMDCHECK_BUILD_DIR).
set -euo pipefail

SPMDCHECK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SPMDCHECK_BUILD_DIR="${SPMDCHECK_BUILD_DIR:-$SPMDCHECK_ROOT/build}"
SPMDCHECK_PACKAGES=(cmake ninja-build g++ pkg-config librapidcheck-dev libz3-dev libabsl-dev
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev python3 python3-jsonschema
  python3-venv ccache nlohmann-json3-dev libcli11-dev clang-format clang-tidy libmimalloc-dev
  chromium chromium-driver)

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
  # Warnings are errors under CI=true (configured again if an earlier build said otherwise).
  local werror=OFF
  [ "${CI:-}" = "true" ] && werror=ON
  if [ ! -f "$SPMDCHECK_BUILD_DIR/build.ninja" ] ||
    ! grep -q "^SPMDCHECK_WERROR:BOOL=$werror\$" "$SPMDCHECK_BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
    cmake -S "$SPMDCHECK_ROOT" -B "$SPMDCHECK_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSPMDCHECK_WERROR="$werror" $launcher >/dev/null
  fi
  if [ "$#" -gt 0 ]; then
    cmake --build "$SPMDCHECK_BUILD_DIR" -j "$(nproc)" --target "$@"
  else
    cmake --build "$SPMDCHECK_BUILD_DIR" -j "$(nproc)"
  fi
}

# A Python >= 3.12 for the project's environment (jax/jaxlib 0.11 and later need it): $SPMDCHECK_PYTHON,
# else python3.13 / python3.12 / python3 on PATH, else the newest 3.12+ that pyenv has installed.
# Prints its path; returns 1 (with the reason on stderr) when there is none.
spmdcheck_find_python() {
  local candidates=()
  [ -n "${SPMDCHECK_PYTHON:-}" ] && candidates+=("$SPMDCHECK_PYTHON")
  local name
  for name in python3.14 python3.13 python3.12 python3; do
    command -v "$name" >/dev/null 2>&1 && candidates+=("$(command -v "$name")")
  done
  local pyenv_root="${PYENV_ROOT:-}"
  if [ -z "$pyenv_root" ] && command -v pyenv >/dev/null 2>&1; then
    pyenv_root="$(pyenv root 2>/dev/null || true)"
  fi
  [ -z "$pyenv_root" ] && [ -d "$HOME/.pyenv" ] && pyenv_root="$HOME/.pyenv"
  if [ -n "$pyenv_root" ] && [ -d "$pyenv_root/versions" ]; then
    local dir
    while IFS= read -r dir; do
      [ -x "$dir/bin/python" ] && candidates+=("$dir/bin/python")
    done < <(ls -d "$pyenv_root"/versions/3.* 2>/dev/null | sort -t. -k2,2nr -k3,3nr)
  fi
  local python
  for python in "${candidates[@]}"; do
    if "$python" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 12) else 1)' \
      2>/dev/null; then
      echo "$python"
      return 0
    fi
  done
  echo "no Python >= 3.12 found (jax 0.12 needs one): tried ${candidates[*]:-nothing}; install" \
    "one (e.g. pyenv install 3.12) or point SPMDCHECK_PYTHON at it" >&2
  return 1
}

# Makes (or refreshes) one virtual environment: $1 the venv directory, $2 the Python to make it
# with (an existing venv whose Python is older than $3, e.g. 3.12, is made anew), then the
# requirement files; `-e DIR` installs DIR editable without dependencies. A stamp holds what was
# installed, so an unchanged environment costs nothing.
spmdcheck_make_venv() {
  local venv="$1" python="$2" minimum="$3"
  shift 3
  local requirements=() editable=()
  while [ "$#" -gt 0 ]; do
    if [ "$1" = "-e" ]; then
      editable+=("$2")
      shift 2
    else
      requirements+=("$1")
      shift
    fi
  done
  local stamp="$venv/.spmdcheck-requirements"
  local wanted
  wanted="$(cat "${requirements[@]}"
    for dir in "${editable[@]}"; do cat "$dir/pyproject.toml"; echo "package: $dir"; done)"
  if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
    return 0
  fi
  if [ -x "$venv/bin/python" ] && ! "$venv/bin/python" -c "import sys; sys.exit(0 if sys.version_info >= tuple(int(x) for x in '$minimum'.split('.')) else 1)"; then
    echo "$venv has Python $("$venv/bin/python" -c 'import platform; print(platform.python_version())'), older than $minimum: making it anew"
    rm -rf "$venv"
  fi
  echo "setting up the Python environment in $venv (${requirements[*]##*/})"
  local args=()
  for r in "${requirements[@]}"; do args+=(-r "$r"); done
  { [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"; } &&
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "${args[@]}" &&
    for dir in "${editable[@]}"; do
      "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e "$dir" || return 1
    done &&
    printf '%s\n' "$wanted" > "$stamp"
}

# The project's Python environments. The jaxlib under test: a virtual environment (default .venv
# in the checkout; SPMDCHECK_XLA_VENV points at another) with Python >= 3.12 and the pinned
# jax/jaxlib of workers/xla/requirements.txt (the newest on PyPI), the pinned selenium of
# tests/requirements-browser.txt (the browser test), the pinned ray of workers/ray/requirements.txt
# (the Ray driver and its tests) and the spmdcheck Python package (python/, installed editable).
# The version matrix: one more environment per workers/xla/requirements-jax*.txt (.venv-jaxV,
# e.g. .venv-jax0.10.2), with only that jax, where findings are tried too
# (SPMDCHECK_SKIP_MATRIX=1 skips them). Under CI=true a failed install is an error; elsewhere
# everything but the XLA partitioners still works and `--partitioner xla` answers
# "unknown: XLA is not available".
spmdcheck_python_env() {
  local venv="${SPMDCHECK_XLA_VENV:-$SPMDCHECK_ROOT/.venv}"
  local failed=""
  local python=""
  python="$(spmdcheck_find_python)" || failed="no Python >= 3.12"
  if [ -z "$failed" ]; then
    spmdcheck_make_venv "$venv" "$python" 3.12 "$SPMDCHECK_ROOT/workers/xla/requirements.txt" \
      "$SPMDCHECK_ROOT/tests/requirements-browser.txt" "$SPMDCHECK_ROOT/workers/ray/requirements.txt" \
      "$SPMDCHECK_ROOT/python/requirements-dev.txt" -e "$SPMDCHECK_ROOT/python" || failed="installing jax into $venv failed"
  fi
  if [ -z "$failed" ] && [ "${SPMDCHECK_SKIP_MATRIX:-}" != "1" ]; then
    local matrix version
    for matrix in "$SPMDCHECK_ROOT"/workers/xla/requirements-jax*.txt; do
      [ -f "$matrix" ] || continue
      version="$(basename "$matrix" .txt)"
      version="${version#requirements-jax}"
      spmdcheck_make_venv "$SPMDCHECK_ROOT/.venv-jax$version" "$python" 3.10 "$matrix" ||
        failed="installing jax $version into .venv-jax$version failed"
    done
  fi
  [ -z "$failed" ] && return 0
  if [ "${CI:-}" = "true" ]; then
    echo "error: $failed (CI=true needs XLA)" >&2
    return 1
  fi
  echo "warning: $failed: the XLA partitioners will be unavailable" >&2
  return 0
}
