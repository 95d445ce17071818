"""spmdcheck.assert_partitions_correctly: passes on programs XLA partitions correctly (pytrees of
arguments and of PartitionSpecs / NamedShardings / None), raises an AssertionError that names
the partitioner, whether XLA's execution confirmed it and the counterexample on a known-wrong
one (an XLA miscompile from corpus/xla-findings, an injected bug of the reference partitioner),
and never lets an `unknown` pass silently. Also: cpu_mesh, find_binary's order, and that
importing the package does not import jax (the pytest plugin relies on it)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import unittest
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec as P

import spmdcheck
from spmdcheck import _binary


def f32(*shape: int) -> jax.ShapeDtypeStruct:
  return jax.ShapeDtypeStruct(shape, jnp.float32)


def layer(params: dict[str, Any], x: jax.Array) -> jax.Array:
  return jnp.tanh(x @ params["w"] + params["b"])


def test_holds_on_a_pytree_of_params_with_mixed_sharding_kinds() -> None:
  mesh = spmdcheck.cpu_mesh({"data": 2, "model": 4})
  params = {"w": f32(16, 32), "b": f32(32)}
  # A dict of PartitionSpecs, a NamedSharding and None (replicated, jax decides) in one tree.
  in_shardings = ({"w": P(None, "model"), "b": NamedSharding(mesh, P("model"))}, P("data", None))
  report = spmdcheck.assert_partitions_correctly(
      layer, params, f32(8, 16), mesh=mesh, in_shardings=in_shardings,
      out_shardings=P("data", "model"), partitioner="both")
  assert report.holds and {r.partitioner for r in report.results} == {"xla", "shardy"}
  assert all(r.xla_end_to_end and r.xla_end_to_end["verdict"] == "holds"
             for r in report.results)


def test_holds_with_out_shardings_none_and_gradients() -> None:
  mesh = spmdcheck.cpu_mesh((8,), ("data",))

  def loss(params: dict[str, Any], x: jax.Array) -> jax.Array:
    return jnp.mean(layer(params, x) ** 2)

  report = spmdcheck.assert_partitions_correctly(
      jax.grad(loss), {"w": f32(16, 8), "b": f32(8)}, f32(16, 16), mesh=mesh,
      in_shardings=({"w": None, "b": None}, P("data", None)))
  assert report.holds


def strided_slice(x: jax.Array) -> jax.Array:
  # corpus/xla-findings/strided-slice-start-dropped: element [0, 1] (start 1, stride 3); with
  # the columns sharded over 2 devices XLA's partitioner drops the start.
  return lax.slice(x, (0, 1), (1, 2), (1, 3))


def test_an_xla_miscompile_raises_with_the_counterexample_confirmed_by_xla() -> None:
  mesh = spmdcheck.cpu_mesh((2,), ("x",))
  with pytest.raises(AssertionError) as raised:
    spmdcheck.assert_partitions_correctly(strided_slice, f32(1, 2), mesh=mesh,
                                          in_shardings=P(None, "x"), partitioner="both")
  error = raised.value
  assert isinstance(error, spmdcheck.PartitioningError) and error.verdict == "fails"
  assert error.report.verdict == "fails"
  text = str(error)
  first = text.splitlines()[0]
  assert "strided_slice" in first and "confirmed by XLA's own execution" in first, text
  assert "GSPMD and Shardy partition strided_slice wrongly" in first, text
  assert "mesh x=2, in_shardings=P(None, 'x'), out_shardings=None" in text, text
  assert "GSPMD: fails — confirmed by XLA: its sharded executable differs" in text, text
  assert "first wrong device: 0 at global index [0, 0]" in text, text
  assert "reproduce: spmdcheck check " in text and "--partitioner shardy" in text, text


def test_an_injected_bug_of_the_reference_partitioner_raises() -> None:
  mesh = spmdcheck.cpu_mesh({"data": 2, "model": 4})
  x, w = jax.ShapeDtypeStruct((8, 16), jnp.int32), jax.ShapeDtypeStruct((16, 8), jnp.int32)
  with pytest.raises(spmdcheck.PartitioningError) as raised:
    spmdcheck.assert_partitions_correctly(
        lambda a, b: a @ b, x, w, mesh=mesh, in_shardings=(P("data", "model"), P("model", None)),
        out_shardings=P(), partitioner="reference", inject_bug="all-gather-group-order")
  text = str(raised.value)
  assert "spmdcheck's reference partitioner partitions <lambda> wrongly (found by spmdcheck's " \
         "oracle)" in text, text
  assert "first wrong device:" in text and "first divergence:" in text, text
  assert "--inject-bug all-gather-group-order" in text, text


def nested(a: jax.Array) -> jax.Array:
  # A shard_map inside a shard_map: the oracle cannot give the inner manual region a global
  # view, so the verdict is unknown (XLA's own execution holds).
  mesh = spmdcheck.cpu_mesh({"x": 2, "y": 4})

  def body_x(u: jax.Array) -> jax.Array:
    def body_y(v: jax.Array) -> jax.Array:
      return lax.psum(v * 2.0, "y")
    return jax.shard_map(body_y, in_specs=P(None, "y"), out_specs=P(None, None),
                         axis_names={"y"})(jnp.exp(u))

  return jax.shard_map(body_x, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None),
                       axis_names={"x"})(a)


def test_unknown_fails_by_default_warns_when_allowed_and_can_skip() -> None:
  mesh = spmdcheck.cpu_mesh({"x": 2, "y": 4})
  kwargs: dict[str, Any] = {"mesh": mesh, "in_shardings": P("x", "y"), "workdir": None}
  with pytest.raises(spmdcheck.PartitioningError) as raised:
    spmdcheck.assert_partitions_correctly(nested, f32(16, 32), **kwargs)
  text = str(raised.value)
  assert raised.value.verdict == "unknown"
  assert "could not judge how Shardy partitions nested (unknown)" in text, text
  assert "allow_unknown=True" in text and "manual subgroups have no global view" in text, text
  assert "XLA's own execution (sharded against one device): holds" in text, text

  with pytest.warns(spmdcheck.UnknownVerdictWarning, match="manual subgroups"):
    report = spmdcheck.assert_partitions_correctly(nested, f32(16, 32), allow_unknown=True,
                                                   **kwargs)
  assert report.verdict == "unknown"

  # "skip": unittest.SkipTest, which pytest reports as a skip (and hypothesis passes on).
  with pytest.raises(unittest.SkipTest, match="could not judge"):
    spmdcheck.assert_partitions_correctly(nested, f32(16, 32), allow_unknown="skip", **kwargs)


def test_allow_unknown_takes_only_its_three_values() -> None:
  with pytest.raises(ValueError, match="allow_unknown"):
    spmdcheck.assert_partitions_correctly(lambda x: x, f32(2), allow_unknown="yes")  # type: ignore[arg-type]


def test_cpu_mesh() -> None:
  mesh = spmdcheck.cpu_mesh({"a": 2, "b": 2})
  assert mesh.axis_names == ("a", "b") and [d.id for d in mesh.devices.flat] == [0, 1, 2, 3]
  assert spmdcheck.cpu_mesh((4, 2), ("p", "q")).shape == {"p": 4, "q": 2}
  with pytest.raises(ValueError, match="--spmdcheck-devices 16"):
    spmdcheck.cpu_mesh({"a": 4, "b": 4})
  with pytest.raises(ValueError, match="one name per axis"):
    spmdcheck.cpu_mesh((2, 4))


def _fake_binary(directory: Path) -> str:
  directory.mkdir()
  path = directory / "spmdcheck"
  path.write_text("#!/bin/sh\nexit 0\n")
  path.chmod(path.stat().st_mode | stat.S_IXUSR)
  return str(path)


def test_find_binary_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
  on_path = _fake_binary(tmp_path / "bin")
  monkeypatch.delenv("SPMDCHECK_BINARY", raising=False)
  monkeypatch.setenv("PATH", str(tmp_path / "bin"))
  assert spmdcheck.find_binary() == on_path  # PATH before a checkout's build/
  explicit = _fake_binary(tmp_path / "explicit")
  monkeypatch.setenv("SPMDCHECK_BINARY", explicit)
  assert spmdcheck.find_binary() == explicit  # SPMDCHECK_BINARY first
  monkeypatch.setenv("SPMDCHECK_BINARY", str(tmp_path / "nothing"))
  with pytest.raises(spmdcheck.SpmdcheckError, match="is not an executable file"):
    spmdcheck.find_binary()
  # Installed (not a checkout), nothing on PATH: the message says where it looked and what to do.
  monkeypatch.delenv("SPMDCHECK_BINARY")
  monkeypatch.setenv("PATH", str(tmp_path / "empty"))
  monkeypatch.setattr(_binary, "_checkout_root", lambda: None)
  with pytest.raises(spmdcheck.SpmdcheckError) as raised:
    spmdcheck.find_binary()
  message = str(raised.value)
  assert "$SPMDCHECK_BINARY (unset)" in message and "`spmdcheck` on PATH (none)" in message
  assert "cmake --install build --prefix P" in message and "build/tools" not in message


def test_find_binary_in_a_checkout_names_its_build_dir(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
  monkeypatch.delenv("SPMDCHECK_BINARY", raising=False)
  monkeypatch.setenv("PATH", str(tmp_path))
  monkeypatch.setenv("SPMDCHECK_BUILD_DIR", str(tmp_path / "no-build"))
  monkeypatch.setattr(_binary, "_checkout_root", lambda: str(tmp_path / "repo"))
  with pytest.raises(spmdcheck.SpmdcheckError) as raised:
    spmdcheck.find_binary()
  message = str(raised.value)
  assert f"{tmp_path}/no-build/tools/spmdcheck (this package is a source checkout" in message
  assert f"{tmp_path}/repo/build/tools/spmdcheck" in message


def test_importing_the_package_and_its_plugin_does_not_import_jax() -> None:
  # The pytest plugin sets XLA_FLAGS before jax is imported: importing spmdcheck (which the
  # plugin module does) must not import jax.
  code = ("import sys, spmdcheck, spmdcheck.pytest_plugin, spmdcheck.testing; "
          "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.')))")
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [str(Path(spmdcheck.__file__).parent.parent), os.environ.get("PYTHONPATH", "")]))
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "[]", out.stdout

