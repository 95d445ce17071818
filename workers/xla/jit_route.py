"""Compiling a StableHLO module the way `jax.jit` does (jax 0.12), for the worker's `compile`
request with `mlir` (docs/xla-worker.md).

`jax.jit(f).lower(...)` runs no MLIR pass after the text `Lowered.as_text()` prints (the only
Shardy pass jax runs, `sdy-lift-inlined-meshes`, runs inside `lower()`), and `Lowered.compile()`
hands that module to `backend.compile_and_load` with options built by
`pxla.create_compile_options` -> `compiler.get_compile_options`. This module rebuilds the same
options from the text alone: one replica, `mhlo.num_partitions` partitions over devices
0..N-1 (jax uses the mesh's device order; an iota mesh is that order), SPMD partitioning with
Shardy or GSPMD as asked, jax's detailed-logging threshold, and
`allow_spmd_sharding_propagation_to_parameters/_output` true exactly where `@main`'s argument
or result has no sharding (jax: an unspecified in/out sharding), false for effect tokens.
Checked against `lowered.compile()` for matmuls, shard_map, sharding constraints, sharding
groups, explicit-mode reshard and unspecified outputs: the same executable fingerprint.
"""

from __future__ import annotations

import re
from typing import Any, List, Optional, Tuple

_NUM_PARTITIONS = re.compile(r"mhlo\.num_partitions\s*=\s*(\d+)")


class JitRouteError(Exception):
  """The module cannot be compiled as jax would: `kind` is the worker's error kind."""

  def __init__(self, kind: str, message: str):
    super().__init__(message)
    self.kind = kind
    self.message = message


def num_partitions_of(text: str) -> Optional[int]:
  match = _NUM_PARTITIONS.search(text)
  return int(match.group(1)) if match else None


def _main_function(module, ir):
  for op in module.body.operations:
    if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
      return op
  raise JitRouteError("rejected", "the module has no @main function")


def propagation_flags(module, ir) -> Tuple[List[bool], List[bool]]:
  """jax's allow_spmd_sharding_propagation_to_parameters / _to_output for a lowered module:
  true where @main's argument (result) carries no sharding, false for effect tokens."""
  main = _main_function(module, ir)
  function_type = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)

  def attribute_dicts(key: str, count: int):
    if key not in main.attributes:
      return [None] * count
    return [ir.DictAttr(a) for a in ir.ArrayAttr(main.attributes[key])]

  def open_to_propagation(attrs) -> bool:
    if attrs is None:
      return True
    return not any(name in attrs for name in ("sdy.sharding", "mhlo.sharding", "jax.token"))

  arguments = [open_to_propagation(a)
               for a in attribute_dicts("arg_attrs", len(function_type.inputs))]
  results = [open_to_propagation(a)
             for a in attribute_dicts("res_attrs", len(function_type.results))]
  return arguments, results


def uses_shardy(text: str) -> bool:
  return "sdy.mesh" in text or "#sdy.sharding" in text or "sdy.manual_computation" in text


def compile_options(worker, module, num_partitions: int, partitioner: str) -> Any:
  """The CompileOptions `Lowered.compile()` would build for `module` on devices 0..N-1."""
  from jax._src import compiler
  import jax.extend.backend as jax_backend

  np, ir = worker.np, worker.mlir.ir
  devices = worker.devices[:num_partitions]
  options = jax_backend.get_compile_options(
      num_replicas=1, num_partitions=num_partitions,
      device_assignment=np.array(devices, dtype=object).reshape(1, num_partitions),
      env_options_overrides={}, fdo_profile=None,
      detailed_logging=compiler.use_detailed_logging(module), backend=worker.backend)
  options.parameter_is_tupled_arguments = False  # jax tuples arguments only on TPU (> 2000)
  build = options.executable_build_options
  build.use_spmd_partitioning = num_partitions > 1 or partitioner != "none"
  build.use_shardy_partitioner = partitioner == "shardy"
  arguments, results = propagation_flags(module, ir)
  build.allow_spmd_sharding_propagation_to_parameters = arguments
  build.allow_spmd_sharding_propagation_to_output = results
  return options


def parse(worker, text: str):
  """The module as jax's MLIR context reads it (call inside `worker.mlir.make_ir_context()`)."""
  try:
    return worker.mlir.ir.Module.parse(text)
  except Exception as e:  # the text does not parse or verify: its location is in the message
    raise JitRouteError("rejected", f"MLIR parser: {e}") from None


def has_manual_computations(text: str) -> bool:
  return "sdy.manual_computation" in text


def replicate_outside_manual(module, ir) -> int:
  """Turns `module` (a Shardy module, in place) into the reference program for one whose
  manual computations (shard_map) have no one-device meaning: every value outside the manual
  computations replicated (@main's arguments and results, constraints, reshards and sharding
  groups dropped), the manual computations as written. Its N-device run computes each result
  on every device from whole inputs, with XLA's partitioner left only the manual computations.
  Returns the number of changes."""
  meshes = [op for op in module.body.operations if op.operation.name == "sdy.mesh"]
  if not meshes:
    return 0
  mesh_name = ir.StringAttr(meshes[0].operation.attributes["sym_name"]).value
  changes = 0
  dropped = []

  def visit(block):
    nonlocal changes
    for op in block.operations:
      name = op.operation.name
      if name == "sdy.manual_computation":
        continue  # its body is per device: kept as written
      if name in ("sdy.sharding_constraint", "sdy.reshard", "sdy.sharding_group"):
        dropped.append(op)
        continue
      if "sdy.sharding" in op.operation.attributes:
        del op.operation.attributes["sdy.sharding"]
        changes += 1
      for region in op.operation.regions:
        for inner in region.blocks:
          visit(inner)

  for op in module.body.operations:
    if op.operation.name != "func.func":
      continue
    for region in op.operation.regions:
      for block in region.blocks:
        visit(block)
    # Arguments and results replicated (closed, no axes): whole inputs on every device.
    function_type = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
    for key, types in (("arg_attrs", function_type.inputs), ("res_attrs", function_type.results)):
      entries = ([ir.DictAttr(a) for a in ir.ArrayAttr(op.attributes[key])]
                 if key in op.attributes else [None] * len(types))
      rebuilt = []
      for attrs, value_type in zip(entries, types):
        kept = {}
        if attrs is not None:
          for i in range(len(attrs)):
            named = attrs[i]
            if named.name not in ("sdy.sharding", "mhlo.sharding"):
              kept[named.name] = named.attr
        try:  # tokens and other non-tensor values get no sharding
          rank = ir.RankedTensorType(value_type).rank
        except ValueError:
          rank = None
        if rank is not None:
          dims = ", ".join("{}" for _ in range(rank))
          kept["sdy.sharding"] = ir.Attribute.parse(f"#sdy.sharding<@{mesh_name}, [{dims}]>")
        rebuilt.append(ir.DictAttr.get(kept))
        changes += 1
      op.attributes[key] = ir.ArrayAttr.get(rebuilt)
  for op in dropped:
    if op.operation.name == "sdy.sharding_group":
      op.operation.erase()
    else:
      op.result.replace_all_uses_with(op.operation.operands[0])
      op.operation.erase()
    changes += 1
  return changes
