"""The spmdcheck pytest plugin, in fresh pytest processes (pytester; jax reads its device count
once per process): --spmdcheck-devices N and the spmdcheck_devices ini value give jax N CPU
devices before a conftest imports jax, the fixtures give them and meshes over them, the marker
skips; without the binary every spmdcheck test skips with the reason. `-p
spmdcheck.pytest_plugin` loads it whether or not the package's entry point already did."""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["pytester"]

CONFTEST = """
import jax  # a conftest that imports jax at once, as many do
"""

TESTS = """
import os
import jax
import pytest
from jax.sharding import PartitionSpec as P

def test_devices(spmdcheck_devices):
  assert len(spmdcheck_devices) == {n}
  assert all(d.platform == "cpu" for d in spmdcheck_devices)
  assert "--xla_force_host_platform_device_count={n}" in os.environ["XLA_FLAGS"]
  assert os.environ["JAX_PLATFORMS"] == "cpu"

def test_mesh(spmdcheck_mesh):
  mesh = spmdcheck_mesh({{"a": 2, "b": {n} // 2}})
  assert mesh.shape == {{"a": 2, "b": {n} // 2}}
  assert spmdcheck_mesh(({n},), ("all",)).devices.size == {n}
  with pytest.raises(ValueError, match="needs {twice} devices"):
    spmdcheck_mesh(({twice},), ("too_many",))

@pytest.mark.spmdcheck(devices={twice})
def test_needs_more_devices():
  raise AssertionError("must be skipped")

@pytest.mark.spmdcheck
def test_marked():
  pass
"""


def _plugin_args() -> list[str]:
  return ["-p", "spmdcheck.pytest_plugin", "-p", "no:cacheprovider"]


def test_option_gives_n_devices_to_the_fixtures(pytester: pytest.Pytester) -> None:
  pytester.makeconftest(CONFTEST)
  pytester.makepyfile(test_inner=TESTS.format(n=4, twice=8))
  # XLA_FLAGS of this session (8 devices) is inherited: the option replaces its count.
  result = pytester.runpytest_subprocess(*_plugin_args(), "--spmdcheck-devices", "4", "-rs",
                                         timeout=300)
  result.assert_outcomes(passed=3, skipped=1)
  result.stdout.fnmatch_lines([
      "spmdcheck: 4 CPU devices for jax (--spmdcheck-devices); binary: *spmdcheck*",
      "*the test needs 8 CPU devices, jax has 4 (pytest --spmdcheck-devices 8)*"])


def test_ini_value_and_a_missing_binary(pytester: pytest.Pytester,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
  pytester.makeconftest(CONFTEST)
  pytester.makeini("[pytest]\nspmdcheck_devices = 2\n")
  pytester.makepyfile(test_inner=TESTS.format(n=2, twice=4) + """
def test_flags_set_without_the_binary():
  assert len(jax.devices("cpu")) == 2
""")
  monkeypatch.setenv("SPMDCHECK_BINARY", os.path.join(str(pytester.path), "no-such-binary"))
  result = pytester.runpytest_subprocess(*_plugin_args(), "-rs", timeout=300)
  # Every test that needs the binary (fixtures, marker) skips with find_binary's reason.
  result.assert_outcomes(passed=1, skipped=4)
  result.stdout.fnmatch_lines([
      "spmdcheck: 2 CPU devices for jax (the spmdcheck_devices ini value); binary: not found*",
      "SKIPPED*spmdcheck: SPMDCHECK_BINARY=*no-such-binary is not an executable file*"])


def test_zero_leaves_the_environment_alone(pytester: pytest.Pytester,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
  monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=3")
  monkeypatch.delenv("JAX_PLATFORMS", raising=False)
  pytester.makepyfile(test_inner="""
import os
def test_env():
  assert os.environ["XLA_FLAGS"] == "--xla_force_host_platform_device_count=3"
  assert "JAX_PLATFORMS" not in os.environ
""")
  result = pytester.runpytest_subprocess(*_plugin_args(), "--spmdcheck-devices", "0",
                                         timeout=120)
  result.assert_outcomes(passed=1)
  result.stdout.fnmatch_lines(["spmdcheck: the environment left alone*"])


def test_jax_started_too_early_is_reported(pytester: pytest.Pytester) -> None:
  # Another plugin starts jax's backend before ours runs: a warning at configuration time, and
  # the fixture fails saying why (a test never silently gets fewer devices).
  pytester.makepyfile(early_jax_plugin="""
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import jax
jax.devices()
""")
  pytester.makepyfile(test_inner="""
def test_devices(spmdcheck_devices):
  pass
""")
  result = pytester.runpytest_subprocess("-p", "early_jax_plugin", *_plugin_args(),
                                         "--spmdcheck-devices", "4", timeout=120)
  result.assert_outcomes(errors=1)
  result.stdout.fnmatch_lines([
      "spmdcheck: 4 CPU devices for jax (--spmdcheck-devices), but jax was imported and "
      "started before the spmdcheck plugin*",
      "*spmdcheck: jax has 2 CPU device(s), the session asked for 4*",
      "*PytestConfigWarning: jax was imported and started before the spmdcheck plugin*"
      "with 2 CPU device(s) instead of 4*"])
