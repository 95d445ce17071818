#!/usr/bin/env bash
# The Python package installs on its own: a fresh virtual environment (Python >= 3.12: the base
# interpreter of the project's .venv, else scripts/common.sh's spmdcheck_find_python), `pip
# install` of a copy of python/ (with its [test] extra; versions constrained by
# workers/xla/requirements.txt, so the pinned jax), then, outside the checkout, with nothing
# pointing into it (no PYTHONPATH, no SPMDCHECK_BINARY): the package comes from site-packages
# with py.typed, finds `spmdcheck` on PATH, and `spmdcheck.check` of a tiny matmul holds under
# Shardy and GSPMD; pytest loads the plugin from the entry point (--spmdcheck-devices 4, the
# fixtures, assert_partitions_correctly).
# The binary on PATH is `cmake --install BUILD_DIR --prefix TMP`'s TMP/bin/spmdcheck when that
# installs one with its XLA worker (TMP/share/spmdcheck/workers/xla); until it does, the build's
# binary is put on PATH instead, the package is tested with it, and the test ends skipped (77)
# saying so. pip's cache makes later runs quick (the first downloads jax and jaxlib).
# Usage: run_python_install_test.sh SPMDCHECK_BINARY BUILD_DIR SOURCE_DIR. Skipped (77) without
# a Python >= 3.12 or without network access to PyPI, except under CI=true.
set -u
bin="$1"
build="$2"
src="$3"
venv="${SPMDCHECK_XLA_VENV:-$src/.venv}"

skip() {
  if [ "${CI:-}" = "true" ]; then
    echo "error: $1 (CI=true needs it)"
    exit 1
  fi
  echo "skipped: $1"
  exit 77
}

python=""
if [ -x "$venv/bin/python" ]; then
  python="$("$venv/bin/python" -c 'import sys; print(sys._base_executable)' 2>/dev/null)"
fi
if [ -z "$python" ] || ! "$python" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
  python="$(source "$src/scripts/common.sh" && spmdcheck_find_python)" || skip "no Python >= 3.12"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

# The binary: installed by CMake if it can be, else the build's.
cmake --install "$build" --prefix "$work/prefix" >/dev/null || { echo "error: cmake --install failed"; exit 1; }
if [ -x "$work/prefix/bin/spmdcheck" ] &&
  [ -f "$work/prefix/share/spmdcheck/workers/xla/spmdcheck_xla_worker.py" ]; then
  bindir="$work/prefix/bin"
  partial=""
else
  mkdir "$work/bin"
  ln -s "$bin" "$work/bin/spmdcheck"
  bindir="$work/bin"
  partial="cmake --install gives no bin/spmdcheck with its XLA worker under share/spmdcheck/workers/xla yet: the package was tested with the build's binary on PATH instead"
fi
echo "binary on PATH: $bindir/spmdcheck"

# A copy of python/ (without build artefacts): pip builds in the source tree it is given.
mkdir "$work/src"
(cd "$src/python" && tar --exclude='*.egg-info' --exclude=build --exclude=dist \
  --exclude=__pycache__ --exclude=.mypy_cache --exclude=.ruff_cache -cf - .) | tar -C "$work/src" -xf -
echo "python: $python ($("$python" -c 'import platform; print(platform.python_version())'))"
"$python" -m venv "$work/venv" || skip "$python cannot make a virtual environment"
t0=$(date +%s)
if ! "$work/venv/bin/python" -m pip install -q --disable-pip-version-check \
  -c "$src/workers/xla/requirements.txt" "$work/src[test]"; then
  if ! "$work/venv/bin/python" -m pip download -q --no-deps -d "$work/probe" pip >/dev/null 2>&1; then
    skip "PyPI is not reachable (pip install ./python needs jax)"
  fi
  echo "error: pip install ./python failed"
  exit 1
fi
echo "pip install ./python[test]: $(( $(date +%s) - t0 )) s"

mkdir "$work/run"
cat > "$work/run/check_installed.py" <<'PY'
import os
import sys
import sysconfig

import spmdcheck

bindir = sys.argv[1]
here = os.path.dirname(spmdcheck.__file__)
assert here.startswith(sysconfig.get_paths()["purelib"]), f"not from site-packages: {here}"
assert os.path.isfile(os.path.join(here, "py.typed")), "py.typed is not installed"
assert "jax" not in sys.modules, "importing spmdcheck imported jax"
assert spmdcheck.find_binary() == os.path.join(bindir, "spmdcheck"), spmdcheck.find_binary()

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

mesh = spmdcheck.cpu_mesh({"data": 2, "model": 2})
r = spmdcheck.check(lambda x, w: x @ w, jax.ShapeDtypeStruct((8, 16), jnp.float32),
                    jax.ShapeDtypeStruct((16, 8), jnp.float32), mesh=mesh,
                    in_shardings=(P("data", None), P(None, "model")),
                    out_shardings=P("data", "model"), partitioner="both",
                    workdir=os.path.join(os.getcwd(), "work"))
print(r)
assert r.holds, r
assert all(res.xla_end_to_end and res.xla_end_to_end["verdict"] == "holds" for res in r.results)
print("installed package: ok")
PY
cat > "$work/run/test_installed_plugin.py" <<'PY'
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

import spmdcheck


def test_plugin_from_the_entry_point(spmdcheck_devices, spmdcheck_mesh):
  assert len(spmdcheck_devices) == 4
  mesh = spmdcheck_mesh({"x": 4})
  spmdcheck.assert_partitions_correctly(lambda a: a * 2, jax.ShapeDtypeStruct((8,), jnp.float32),
                                        mesh=mesh, in_shardings=P("x"))
PY

status=0
clean_env=(env -u PYTHONPATH -u SPMDCHECK_BINARY -u SPMDCHECK_XLA_PYTHON -u SPMDCHECK_XLA_VENV -u SPMDCHECK_DATA_DIR
  -u SPMDCHECK_BUILD_DIR -u XLA_FLAGS -u JAX_PLATFORMS PATH="$bindir:$PATH")
cd "$work/run" || exit 1
"${clean_env[@]}" XLA_FLAGS="--xla_force_host_platform_device_count=4" JAX_PLATFORMS=cpu \
  "$work/venv/bin/python" check_installed.py "$bindir" || status=1
"${clean_env[@]}" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
  --spmdcheck-devices 4 test_installed_plugin.py || status=1
# The installed binary runs its own XLA worker (PREFIX/share/spmdcheck/workers/xla), not the
# checkout's: seen in the worker's execve when strace is there.
if [ -z "$partial" ] && command -v strace >/dev/null 2>&1 && [ -f work/_lambda_.sdy.mlir ]; then
  "${clean_env[@]}" SPMDCHECK_XLA_PYTHON="$work/venv/bin/python" strace -f -e trace=execve \
    -s 300 -o "$work/trace" spmdcheck check work/_lambda_.sdy.mlir --partitioner shardy >/dev/null
  if grep -q "$work/prefix/share/spmdcheck/workers/xla/spmdcheck_xla_worker.py" "$work/trace"; then
    echo "the installed binary runs its installed XLA worker"
  else
    echo "error: the installed binary does not run $work/prefix/share/spmdcheck/workers/xla/spmdcheck_xla_worker.py:"
    grep -o 'spmdcheck_xla_worker.py' "$work/trace" | head -3
    grep 'xla_worker' "$work/trace" | head -3
    status=1
  fi
fi
# Nothing the package installed names the checkout.
if grep -rl --include='*.py' --include='*.txt' --include='*.pth' "$src" \
  "$work/venv/lib"/python3*/site-packages/spmdcheck* 2>/dev/null; then
  echo "error: the installed package points into the checkout $src"
  status=1
fi
echo "install test: $(( $(date +%s) - start )) s"
[ "$status" -ne 0 ] && exit "$status"
if [ -n "$partial" ]; then
  echo "skipped (package part passed): $partial"
  exit 77
fi
exit 0
