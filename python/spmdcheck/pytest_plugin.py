"""The spmdcheck pytest plugin: virtual CPU devices for jax, and fixtures and a marker for tests
that check XLA's partitioning with the spmdcheck binary.

Installed with the package (entry point `pytest11`, name `spmdcheck.pytest_plugin`, so that
`-p spmdcheck.pytest_plugin` and `pytest_plugins = ["spmdcheck.pytest_plugin"]` are harmless
when it is already loaded; `-p no:spmdcheck.pytest_plugin` disables it).

- `--spmdcheck-devices N` (ini `spmdcheck_devices`; default: the count XLA_FLAGS already asks
  for, else 8): before any conftest is imported, sets
  XLA_FLAGS=--xla_force_host_platform_device_count=N and JAX_PLATFORMS=cpu (when unset), so
  that jax has N CPU devices. 0 leaves the environment alone. When jax was imported before (by
  another plugin), its configuration is set instead if its backend is not running yet; if it
  is, with fewer devices, the plugin warns (PytestConfigWarning) and the fixtures fail.
- fixtures: `spmdcheck_binary` (the binary's path), `spmdcheck_devices` (the N CPU devices),
  `spmdcheck_mesh` (a factory: `spmdcheck_mesh({"data": 2, "model": 4})` or
  `spmdcheck_mesh((2, 4), ("data", "model"))`, a Mesh over those devices; session-scoped, so
  hypothesis tests may use it). Each skips the test when the binary is not found.
- marker `@pytest.mark.spmdcheck` (or `spmdcheck(devices=K)`): the test runs the binary;
  skipped with find_binary's message when there is none, and when the session has fewer than K
  CPU devices.

This module does not import jax at import time (it must run before jax is imported).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from ._binary import SpmdcheckError, find_binary

DEFAULT_DEVICES = 8
_COUNT_FLAG = "--xla_force_host_platform_device_count"
_COUNT = re.compile(re.escape(_COUNT_FLAG) + r"=(\d+)")

# The device count the session settled on (None: the plugin left the environment alone).
_devices_key = pytest.StashKey[int | None]()
_why_key = pytest.StashKey[str]()
_problem_key = pytest.StashKey[str]()

MeshFactory = Callable[..., Any]


def pytest_addoption(parser: pytest.Parser) -> None:
  group = parser.getgroup("spmdcheck", "spmdcheck: checking XLA's SPMD partitioning")
  group.addoption(
      "--spmdcheck-devices", type=int, default=None, metavar="N", dest="spmdcheck_devices",
      help="jax gets N virtual CPU devices: XLA_FLAGS=--xla_force_host_platform_device_count=N "
           "and JAX_PLATFORMS=cpu (if unset), set before conftests import jax (default: the "
           "spmdcheck_devices ini value, else the count XLA_FLAGS asks for, else 8; 0: leave "
           "the environment alone)")
  parser.addini("spmdcheck_devices", "the number of virtual CPU devices for jax "
                "(--spmdcheck-devices)", default="")


def _wanted(config: pytest.Config, namespace: Any) -> tuple[int, str]:
  """N and where it comes from: the option, the ini value, XLA_FLAGS, or the default."""
  option = getattr(namespace, "spmdcheck_devices", None)
  if option is not None:
    return int(option), "--spmdcheck-devices"
  ini = str(config.getini("spmdcheck_devices") or "").strip()
  if ini:
    try:
      return int(ini), "the spmdcheck_devices ini value"
    except ValueError:
      raise pytest.UsageError(f"spmdcheck_devices = {ini!r} is not a number") from None
  m = _COUNT.search(os.environ.get("XLA_FLAGS", ""))
  if m:
    return int(m.group(1)), "XLA_FLAGS"
  return DEFAULT_DEVICES, "spmdcheck's default"


def _set_flags(n: int) -> None:
  flags = os.environ.get("XLA_FLAGS", "")
  if _COUNT.search(flags):
    flags = _COUNT.sub(f"{_COUNT_FLAG}={n}", flags)
  else:
    flags = f"{flags} {_COUNT_FLAG}={n}".strip()
  os.environ["XLA_FLAGS"] = flags


def _configure_imported_jax(n: int) -> str | None:
  """jax is already imported: set its own configuration if its backend is not running yet;
  else the reason why the session cannot have n devices (None when it has enough)."""
  jax = sys.modules["jax"]
  from jax._src import xla_bridge
  if not xla_bridge.backends_are_initialized():
    jax.config.update("jax_num_cpu_devices", n)
    if not os.environ.get("JAX_PLATFORMS") and not jax.config.jax_platforms:
      jax.config.update("jax_platforms", "cpu")
    return None
  try:
    have = len(jax.devices("cpu"))
  except RuntimeError as e:
    return f"jax has no CPU backend ({e})"
  if have >= n:
    return None
  return (f"jax was imported and started before the spmdcheck plugin could configure it (by "
          f"another plugin, or PYTHONSTARTUP), with {have} CPU device(s) instead of {n}: "
          f"tests that need {n} devices fail. Set XLA_FLAGS={_COUNT_FLAG}={n} in the "
          "environment before running pytest")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
  """Before conftests (which usually import jax) are imported: the environment for N CPU
  devices."""
  n, why = _wanted(early_config, early_config.known_args_namespace)
  if n < 0:
    raise pytest.UsageError(f"--spmdcheck-devices must be >= 0, not {n}")
  early_config.stash[_why_key] = why
  if n == 0:
    early_config.stash[_devices_key] = None
    return
  early_config.stash[_devices_key] = n
  _set_flags(n)
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  if "jax" in sys.modules:
    problem = _configure_imported_jax(n)
    if problem:
      early_config.stash[_problem_key] = problem
      early_config.issue_config_time_warning(pytest.PytestConfigWarning(problem), stacklevel=2)


def pytest_configure(config: pytest.Config) -> None:
  config.addinivalue_line(
      "markers", "spmdcheck(devices=None): the test runs the spmdcheck binary; skipped when it "
      "is not found, or when the session has fewer than `devices` CPU devices")
  if _devices_key not in config.stash:  # loaded late (pytest_plugins in a conftest)
    n, why = _wanted(config, config.option)
    config.stash[_devices_key] = n or None
    config.stash[_why_key] = why


def pytest_report_header(config: pytest.Config) -> str:
  n = config.stash.get(_devices_key, None)
  devices = (f"{n} CPU devices for jax ({config.stash.get(_why_key, '')})" if n else
             "the environment left alone (--spmdcheck-devices 0)")
  try:
    binary = find_binary()
  except SpmdcheckError:
    binary = "not found (its tests are skipped)"
  problem = config.stash.get(_problem_key, "")
  return f"spmdcheck: {devices}{', but ' + problem if problem else ''}; binary: {binary}"


def _binary_or_skip() -> str:
  try:
    return find_binary()
  except SpmdcheckError as e:
    pytest.skip(f"spmdcheck: {e}")


def _cpu_devices() -> list[Any]:
  import jax
  return list(jax.devices("cpu"))


def pytest_runtest_setup(item: pytest.Item) -> None:
  marker = item.get_closest_marker("spmdcheck")
  if marker is None:
    return
  _binary_or_skip()
  needed = marker.kwargs.get("devices", marker.args[0] if marker.args else None)
  if needed is not None:
    have = len(_cpu_devices())
    if have < int(needed):
      pytest.skip(f"spmdcheck: the test needs {needed} CPU devices, jax has {have} "
                  f"(pytest --spmdcheck-devices {needed})")


@pytest.fixture(scope="session")
def spmdcheck_binary() -> str:
  """The spmdcheck binary's path; skips the test when it is not found (the reason is
  find_binary's: where it looked)."""
  return _binary_or_skip()


@pytest.fixture(scope="session")
def spmdcheck_devices(pytestconfig: pytest.Config, spmdcheck_binary: str) -> list[Any]:
  """The session's N CPU devices (--spmdcheck-devices); all CPU devices when the plugin left
  the environment alone. Fails when jax started with fewer (it was imported too early)."""
  n = pytestconfig.stash.get(_devices_key, None)
  devices = _cpu_devices()
  if n is None:
    return devices
  if len(devices) < n:
    pytest.fail(f"spmdcheck: jax has {len(devices)} CPU device(s), the session asked for {n} "
                f"({pytestconfig.stash.get(_why_key, '')}): jax was started before the "
                f"plugin set XLA_FLAGS; set XLA_FLAGS={_COUNT_FLAG}={n} in the environment",
                pytrace=False)
  return devices[:n]


@pytest.fixture(scope="session")
def spmdcheck_mesh(spmdcheck_devices: list[Any]) -> MeshFactory:
  """A factory of meshes over the session's CPU devices:
  `spmdcheck_mesh({"data": 2, "model": 4})`, `spmdcheck_mesh((2, 4), ("data", "model"))`,
  `axis_types=` as jax.sharding.Mesh takes it."""
  from .testing import cpu_mesh

  def make(axes: Mapping[str, int] | Sequence[int], names: Sequence[str] | None = None, *,
           axis_types: Any = None) -> Any:
    return cpu_mesh(axes, names, axis_types=axis_types, devices=spmdcheck_devices)

  return make
