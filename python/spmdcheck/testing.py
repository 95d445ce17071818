"""Assertions for tests: `assert_partitions_correctly` fails a test when XLA partitions a JAX
function wrongly, with the counterexample in the message; `cpu_mesh` makes a mesh of virtual
CPU devices. The pytest plugin (spmdcheck.pytest_plugin) provides the devices.

    from jax.sharding import PartitionSpec as P
    from spmdcheck import assert_partitions_correctly, cpu_mesh

    def test_my_matmul():
      mesh = cpu_mesh({"data": 2, "model": 4})
      assert_partitions_correctly(lambda x, w: x @ w, x, w, mesh=mesh,
                                  in_shardings=(P("data", None), P(None, "model")),
                                  partitioner="both")

Verdicts: `holds` passes and returns the Report; `fails` raises PartitioningError (an
AssertionError); `unknown` (spmdcheck could not judge: an op its oracle does not model, a
difference only its oracle sees, XLA unavailable...) raises PartitioningError too unless
`allow_unknown` says otherwise: True warns (UnknownVerdictWarning, listed in pytest's warnings
summary) and returns the Report, "skip" skips the test with the reason. An unknown never passes
silently.
"""

from __future__ import annotations

import math
import sys
import unittest
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from ._check import check
from ._lower import mesh_spec
from ._report import PartitionerResult, Report

if TYPE_CHECKING:
  from jax.sharding import Mesh

__all__ = ["assert_partitions_correctly", "cpu_mesh", "PartitioningError",
           "UnknownVerdictWarning"]

AllowUnknown = bool | Literal["skip"]

_NAMES = {"xla": "GSPMD", "gspmd": "GSPMD", "shardy": "Shardy",
          "reference": "spmdcheck's reference partitioner"}


class PartitioningError(AssertionError):
  """The partitioning of a function failed the check (`verdict == "fails"`) or could not be
  judged (`verdict == "unknown"`, without allow_unknown). `report` is spmdcheck.check's Report."""

  def __init__(self, message: str, report: Report, verdict: str):
    super().__init__(message)
    self.report = report
    self.verdict = verdict


class UnknownVerdictWarning(UserWarning):
  """spmdcheck could not judge a partitioning and the caller allowed that (allow_unknown=True);
  the message says why. `-W error::spmdcheck.UnknownVerdictWarning` turns it into an error."""


def cpu_mesh(axes: Mapping[str, int] | Sequence[int], names: Sequence[str] | None = None, *,
             axis_types: Any = None, devices: Sequence[Any] | None = None) -> Mesh:
  """A jax Mesh over the first CPU devices: `cpu_mesh({"data": 2, "model": 4})` or
  `cpu_mesh((2, 4), ("data", "model"))`. `devices` picks other devices (in mesh order)."""
  import jax
  import numpy as np
  from jax.sharding import Mesh
  if isinstance(axes, Mapping):
    if names is not None:
      raise ValueError("names= goes with a sequence of sizes, not with a mapping")
    names, shape = tuple(axes), tuple(int(s) for s in axes.values())
  else:
    if names is None or len(names) != len(axes):
      raise ValueError(f"cpu_mesh({tuple(axes)}) needs one name per axis, got {names!r}")
    shape = tuple(int(s) for s in axes)
  need = math.prod(shape)
  pool = list(devices) if devices is not None else jax.devices("cpu")
  if len(pool) < need:
    raise ValueError(
        f"a mesh {dict(zip(names, shape))} needs {need} devices, jax has {len(pool)} CPU "
        f"device(s): set XLA_FLAGS=--xla_force_host_platform_device_count={need} before jax is "
        f"imported (the spmdcheck pytest plugin does: pytest --spmdcheck-devices {need})")
  grid = np.array(pool[:need], dtype=object).reshape(shape)
  if axis_types is None:
    return Mesh(grid, tuple(names))
  return Mesh(grid, tuple(names), axis_types=axis_types)


def assert_partitions_correctly(
    f: Callable[..., Any], *args: Any, mesh: Mesh | None = None, in_shardings: Any = None,
    out_shardings: Any = None, partitioner: str | Sequence[str] = "shardy",
    allow_unknown: AllowUnknown = False, trials: int = 2, seed: int = 1, execute: bool = True,
    lint: bool = False, timeout: float | None = None, static_argnums: Sequence[int] = (),
    inject_bug: str | None = None, workdir: str | None = None, **kwargs: Any) -> Report:
  """Asserts that XLA partitions `f` correctly on arguments shaped like `args` (arrays,
  jax.ShapeDtypeStructs, or pytrees of them) with the given shardings (PartitionSpecs over
  `mesh`, NamedShardings, None, or pytrees of them, as jax.jit takes them).

  `partitioner`: "shardy" (jax's default partitioner, the default here), "gspmd", "both", or
  "reference" (spmdcheck's own, for `inject_bug`). Returns the Report when every partitioner's
  verdict holds. Raises PartitioningError (an AssertionError) when one fails, with the
  counterexample: which partitioner, whether XLA's own execution confirmed it, the first wrong
  device and element, the first diverging instruction and the command that reproduces it.
  An `unknown` verdict raises too, unless `allow_unknown` is True (warn with
  UnknownVerdictWarning and return the Report) or "skip" (skip the running test with the reason:
  unittest.SkipTest, which pytest and hypothesis treat as a skip). SpmdcheckError (no binary, a
  module the binary refuses) and jax's own errors propagate as they are.

  The other arguments are spmdcheck.check's; `lint` is off by default (the lint is about cost,
  not correctness).
  """
  __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
  if allow_unknown not in (True, False, "skip"):
    raise ValueError(f"allow_unknown is True, False or 'skip', not {allow_unknown!r}")
  report = check(f, *args, mesh=mesh, in_shardings=in_shardings, out_shardings=out_shardings,
                 partitioner=partitioner, trials=trials, seed=seed, lint=lint, execute=execute,
                 timeout=timeout, static_argnums=static_argnums, inject_bug=inject_bug,
                 workdir=workdir, **kwargs)
  if report.holds:
    return report
  context = _context(f, mesh, in_shardings, out_shardings)
  failing = [r for r in report.results if r.verdict == "fails"]
  if failing:
    confirmed = [r for r in failing if _confirmed_by_xla(r)]
    which = _names(failing)
    how = ("confirmed by XLA's own execution" if confirmed else
           "found by spmdcheck's oracle" if all(r.partitioner == "reference" for r in failing)
           else "not confirmed by XLA's execution")
    verb = "partitions" if len(failing) == 1 else "partition"
    _raise(f"{which} {verb} {context.name} wrongly ({how})", context, report, "fails")
  unknown = [r for r in report.results if r.verdict != "holds"]
  which = _names(unknown)
  reasons = "; ".join(f"{_NAMES.get(r.partitioner, r.partitioner)}: "
                      f"{r.message or r.raw.get('status', 'unknown')}" for r in unknown)
  headline = f"could not judge how {which} partitions {context.name} (unknown)"
  if allow_unknown == "skip":
    raise unittest.SkipTest(f"spmdcheck {headline}: {reasons}")
  if allow_unknown:
    warnings.warn(UnknownVerdictWarning(f"spmdcheck {headline}: {reasons} [{context.setting}]"),
                  stacklevel=2)
    return report
  _raise(headline + " — pass allow_unknown=True to accept unknowns with a warning, or "
         "allow_unknown='skip' to skip the test", context, report, "unknown")


class _Context:
  def __init__(self, name: str, setting: str):
    self.name = name
    self.setting = setting


def _context(f: Callable[..., Any], mesh: Any, in_shardings: Any, out_shardings: Any) -> _Context:
  name = getattr(f, "__name__", None) or type(f).__name__
  parts = []
  if mesh is not None:
    parts.append(f"mesh {mesh_spec(mesh)}")
  parts.append(f"in_shardings={_specs(in_shardings)}")
  parts.append(f"out_shardings={_specs(out_shardings)}")
  return _Context(name, ", ".join(parts))


def _specs(shardings: Any) -> str:
  """Shardings as the user wrote them: NamedShardings by their PartitionSpec."""
  if shardings is None:
    return "None"
  jax = sys.modules.get("jax")
  if jax is None:
    return repr(shardings)
  named = jax.sharding.NamedSharding
  spec = jax.sharding.PartitionSpec
  tree = jax.tree_util.tree_map(
      lambda s: s.spec if isinstance(s, named) else s, shardings,
      is_leaf=lambda x: x is None or isinstance(x, (named, spec, jax.sharding.Sharding)))
  return repr(tree)


def _confirmed_by_xla(r: PartitionerResult) -> bool:
  return (r.xla_end_to_end or {}).get("verdict") == "fails" or r.finding == "confirmed by XLA"


def _evidence(r: PartitionerResult) -> str:
  if r.partitioner == "reference":
    return "found by spmdcheck's oracle (XLA does not run the reference partitioner)"
  if _confirmed_by_xla(r):
    return "confirmed by XLA: its sharded executable differs from its single-device run"
  status = r.raw.get("status", "")
  if status in ("crash", "rejected", "timeout"):
    return f"XLA's partitioner: {status}"
  e2e = (r.xla_end_to_end or {}).get("verdict")
  return f"XLA's own execution: {e2e or 'not run'}" + (f"; {r.finding}" if r.finding else "")


def _describe(r: PartitionerResult) -> list[str]:
  name = _NAMES.get(r.partitioner, r.partitioner)
  if r.holds:
    return [f"  {name}: holds"]
  lines = [f"  {name}: {r.verdict}" + (f" — {_evidence(r)}" if r.verdict == "fails" else
                                       f" ({r.finding})" if r.finding else "")]
  if r.message:
    lines.append(f"    {r.message}")
  if r.first_wrong_device is not None:
    e = r.first_wrong_element or {}
    wrong = ", ".join(map(str, r.wrong_devices[:16])) + (", ..." if len(r.wrong_devices) > 16
                                                         else "")
    lines.append(f"    first wrong device: {r.first_wrong_device} at global index "
                 f"{e.get('global_index')} (local {e.get('local_index')}): expected "
                 f"{e.get('expected')}, got {e.get('actual')}; wrong devices: {wrong}")
  if r.first_divergence:
    d = r.first_divergence
    lines.append(f"    first divergence: {d.get('instruction')} should hold {d.get('holds')} "
                 f"under {d.get('sharding')}")
  if r.xla_end_to_end and not _confirmed_by_xla(r):
    e2e = r.xla_end_to_end
    lines.append(f"    XLA's own execution (sharded against one device): {e2e.get('verdict')}"
                 + (f" ({e2e['detail']})" if e2e.get("detail") else ""))
  if r.reproduce:
    lines.append(f"    reproduce: {r.reproduce}")
  return lines


def _names(results: Sequence[PartitionerResult]) -> str:
  names = [_NAMES.get(r.partitioner, r.partitioner) for r in results] or ["no partitioner"]
  return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _raise(headline: str, context: _Context, report: Report, verdict: str) -> NoReturn:
  __tracebackhide__ = True
  lines = [f"spmdcheck: {headline}", f"  {context.setting}"]
  for r in report.results:
    lines += _describe(r)
  lines.append(f"  files: {report.workdir}")
  raise PartitioningError("\n".join(lines), report, verdict)
