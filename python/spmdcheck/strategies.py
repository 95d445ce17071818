"""Hypothesis strategies for JAX sharding: meshes, PartitionSpecs, NamedShardings, and whole
programs (`spmdcheck.programs`) with their mesh and in/out specs.

    from hypothesis import given
    from spmdcheck import strategies as sst

    @given(sst.programs(max_ops=4))
    def test_partitioning(program):
      built = spmdcheck.programs.build(program)
      ...

Every strategy draws its choices as integers whose smallest value is the simplest option, so
hypothesis shrinks towards few ops, the first op kinds (unary, binary, reduce, ...), small
meshes and replicated specs. Needs hypothesis (`pip install hypothesis`).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

try:
  from hypothesis import strategies as st
except ImportError as e:  # pragma: no cover - depends on the environment
  raise ImportError(
      "spmdcheck.strategies needs hypothesis (a test-time dependency of spmdcheck): "
      "pip install hypothesis") from e

from . import programs as _programs
from .programs import KINDS, GenConfig, MeshSpec, Program, Spec

__all__ = ["HypothesisChooser", "mesh_specs", "meshes", "partition_specs", "named_shardings",
           "specs", "programs"]


class HypothesisChooser:
  """The programs module's choices, drawn by hypothesis (`integer(lo, hi)` shrinks to lo)."""

  def __init__(self, draw: Callable[[Any], Any]) -> None:
    self._draw = draw

  def integer(self, lo: int, hi: int) -> int:
    return int(self._draw(st.integers(lo, hi)))

  def span(self, fn: Callable[[], Any]) -> Any:
    """Runs `fn` with its choices in a span of their own (one op: hypothesis deletes it
    whole)."""

    @st.composite
    def inner(draw: Callable[[Any], Any]) -> Any:
      outer = self._draw
      self._draw = draw
      try:
        return fn()
      finally:
        self._draw = outer

    return self._draw(inner())


def _type_names(axis_types: Sequence[Any]) -> tuple:
  """"auto"/"explicit" for AxisType values or their names."""
  out = []
  for t in axis_types:
    name = getattr(t, "name", t)
    name = str(name).lower()
    if name not in ("auto", "explicit"):
      raise ValueError(f"axis types are Auto or Explicit, not {t!r}")
    out.append(name)
  if not out:
    raise ValueError("axis_types is empty")
  return tuple(out)


@st.composite
def mesh_specs(draw: Callable[[Any], Any], max_devices: int = 8,
               axis_types: Sequence[Any] = ("auto", "explicit"), max_axes: int = 3,
               mixed: bool = False, permute_devices: bool = False) -> MeshSpec:
  """A mesh as data (`spmdcheck.programs.MeshSpec`): 1..max_axes axes named x, y, z, sizes
  whose product is at most `max_devices`, axis types drawn from `axis_types` (one for all axes,
  or per axis when `mixed`), optionally a permuted device order."""
  return _programs.draw_mesh(HypothesisChooser(draw), max_devices, _type_names(axis_types),
                             max_axes, permute_devices, mixed)


@st.composite
def meshes(draw: Callable[[Any], Any], max_devices: int = 8,
           axis_types: Sequence[Any] = ("auto", "explicit"), max_axes: int = 3,
           mixed: bool = False, permute_devices: bool = False) -> Any:
  """A `jax.sharding.Mesh` over the first devices of `jax.devices()` (see `mesh_specs`);
  `max_devices` is capped at the number of devices jax has."""
  import jax
  limit = min(max_devices, len(jax.devices()))
  spec = draw(mesh_specs(limit, axis_types, max_axes, mixed, permute_devices))
  return spec.to_jax()


def _mesh_spec(mesh: Union[MeshSpec, Any]) -> MeshSpec:
  return mesh if isinstance(mesh, MeshSpec) else MeshSpec.from_jax(mesh)


@st.composite
def specs(draw: Callable[[Any], Any], shape: Sequence[int], mesh: Union[MeshSpec, Any],
          unreduced: bool = False, axes: Optional[Sequence[str]] = None) -> Spec:
  """`partition_specs` as `spmdcheck.programs.Spec` (data)."""
  m = _mesh_spec(mesh)
  return _programs.draw_spec(HypothesisChooser(draw), tuple(shape), m, axes, unreduced)


def partition_specs(shape: Sequence[int], mesh: Union[MeshSpec, Any], unreduced: bool = False,
                    axes: Optional[Sequence[str]] = None) -> Any:
  """A `PartitionSpec` valid for `shape` on `mesh` (a jax Mesh or a MeshSpec): each dim None,
  one axis or several; each mesh axis (of `axes`, default all) at most once; a dim's axes'
  sizes divide it (jax's device_put, shard_map and explicit sharding types require it).
  `unreduced=True`: Explicit axes no dim uses may be unreduced (jax allows unreduced axes only
  on Explicit axes, and only Shardy lowers them)."""
  return specs(shape, mesh, unreduced, axes).map(lambda s: s.to_jax())


def named_shardings(shape: Sequence[int], mesh: Any, unreduced: bool = False) -> Any:
  """A `NamedSharding(mesh, spec)` with `spec` from `partition_specs` (`mesh`: a jax Mesh)."""
  from jax.sharding import NamedSharding
  return partition_specs(shape, mesh, unreduced).map(lambda p: NamedSharding(mesh, p))


@st.composite
def programs(draw: Callable[[Any], Any], max_ops: int = 6, min_ops: int = 1,
             kinds: Sequence[str] = KINDS, max_devices: int = 8,
             axis_types: Sequence[Any] = ("auto", "explicit"),
             config: Optional[GenConfig] = None) -> Program:
  """A random JAX program (`spmdcheck.programs.Program`) with its mesh, in specs and out specs:
  the op count is drawn first, then the mesh, then the ops (simplest kinds first). `config`
  overrides the other arguments."""
  if config is None:
    config = GenConfig(max_ops=max_ops, min_ops=min_ops, kinds=tuple(kinds),
                       max_devices=max_devices, axis_types=_type_names(axis_types))
  return _programs.generate(HypothesisChooser(draw), config, name="hypothesis")
