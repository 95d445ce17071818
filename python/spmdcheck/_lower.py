"""Lowering a JAX function to the HLO module spmdcheck reads, and meshes as spmdcheck writes
them."""

from __future__ import annotations

import contextlib
from typing import Any, Sequence, Tuple


def mesh_spec(mesh) -> str:
  """`data=2,model=4`, plus ` devices=[2,4]0,2,...` when the mesh's device order is not
  0..N-1 (spmdcheck's --mesh)."""
  names = list(mesh.axis_names)
  sizes = [int(mesh.shape[n]) for n in names]
  text = ",".join(f"{n}={s}" for n, s in zip(names, sizes))
  ids = [int(d.id) for d in mesh.devices.flat]
  if ids != list(range(len(ids))):
    text += f" devices=[{','.join(map(str, sizes))}]{','.join(map(str, ids))}"
  return text


def _named(mesh: Any, spec: Any) -> Any:
  """PartitionSpecs, NamedShardings and None, or any pytree of them (a dict of a params tree's
  specs, tuples per argument), as jax.jit wants them: each PartitionSpec over `mesh`."""
  import jax
  from jax.sharding import NamedSharding, PartitionSpec

  def one(leaf: Any) -> Any:
    if leaf is None or isinstance(leaf, jax.sharding.Sharding):
      return leaf
    if isinstance(leaf, PartitionSpec):
      if mesh is None:
        raise ValueError("a PartitionSpec needs mesh=")
      return NamedSharding(mesh, leaf)
    raise TypeError(f"expected a PartitionSpec, a Sharding or None, not {leaf!r}")

  if spec is None:
    return None
  leaf_types = (PartitionSpec, jax.sharding.Sharding)
  return jax.tree_util.tree_map(one, spec,
                                is_leaf=lambda x: x is None or isinstance(x, leaf_types))


def _abstract(value):
  """The shape and dtype of `value`, and its sharding when that is part of its type (a
  NamedSharding over a mesh with Explicit axes: jax's explicit mode types values by it)."""
  import jax
  if not (hasattr(value, "shape") and hasattr(value, "dtype")):
    return value  # Python scalars and pytrees of them: jax decides.
  sharding = getattr(value, "sharding", None)
  explicit = (isinstance(sharding, jax.sharding.NamedSharding) and
              any(t == jax.sharding.AxisType.Explicit
                  for t in getattr(sharding.mesh, "axis_types", ())))
  return jax.ShapeDtypeStruct(value.shape, value.dtype, sharding=sharding if explicit else None)


def lower(f, *args, mesh=None, in_shardings=None, out_shardings=None, static_argnums=(),
          shardy: bool = True, **kwargs) -> Tuple[str, int]:
  """Lowers `f` on the shapes of `args` with the given shardings, as jax.jit does for Shardy
  (`shardy=True`, jax's default) or for GSPMD; returns (the StableHLO text
  `jax.jit(f).lower(...).as_text(debug_info=True)` prints, number of devices). spmdcheck
  compiles that text the way jax.jit does (the same module, the same compile options)."""
  import jax
  from jax._src import config
  jitted = jax.jit(f, in_shardings=_named(mesh, in_shardings),
                   out_shardings=_named(mesh, out_shardings), static_argnums=static_argnums)
  abstract = [a if i in _as_tuple(static_argnums) else jax.tree_util.tree_map(_abstract, a)
              for i, a in enumerate(args)]
  explicit = mesh is not None and any(
      t == jax.sharding.AxisType.Explicit for t in getattr(mesh, "axis_types", ()))
  with config.use_shardy_partitioner(shardy), (
      jax.set_mesh(mesh) if explicit else contextlib.nullcontext()):
    # An Explicit mesh is entered, as jax.sharding.reshard and PartitionSpecs in explicit mode
    # need (a mesh the caller already entered stays).
    lowered = jitted.lower(*abstract, **kwargs)
    text = lowered.as_text(debug_info=True)
  devices = int(mesh.devices.size) if mesh is not None else _devices_of(in_shardings)
  return text, devices


def _as_tuple(x) -> Sequence[int]:
  return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _devices_of(shardings: Any) -> int:
  import jax
  for leaf in jax.tree_util.tree_leaves(shardings):
    if isinstance(leaf, jax.sharding.Sharding):
      return len(leaf.device_set)
  return 1
