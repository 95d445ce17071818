"""GSPMD shardings (`mhlo.sharding` strings) -> Shardy (`sdy.mesh`, `sdy.sharding`).

XLA falls back to GSPMD, silently but for a log line, when a module handed to a Shardy compile
still carries GSPMD attributes, and the pass that would import them
(`xla-sdy-stablehlo-import-pipeline`) is not registered in jaxlib's Python pass registry
(checked in jaxlib 0.10.2). So the worker imports shardings itself:

* every tiled sharding of the module is read as an iota device array (reshape dims R and a
  transpose); each of its tile dims is a run of "digits" of the device id: (stride, size) pairs;
* the module gets one mesh whose axes are the common refinement of all those digits (possible
  when the digit boundaries of all shardings form a divisibility chain, e.g. always when the
  device count is a power of two); axes are named x0 (major) .. xK (minor);
* each sharding becomes, per tensor dim, the list of mesh axes of its digits, major first;
  replicated (last_tile_dim_replicate) digits are simply not named; `{maximal device=D}`
  becomes a mesh `maximal_D` with no axes and device_ids=[D];
* `custom_call @Sharding` becomes `sdy.sharding_constraint`;
* explicit device orders (V1 lists) are read as digits too when they are a transposed iota; when
  they are not, the mesh takes the first such order as its `device_ids` and every sharding must
  be a transposed iota of positions in that order.

What is not importable raises `Unsupported`, with the reason: device orders no mesh expresses,
manual shardings and manual regions, shardings whose digits admit no common mesh.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Dict, List, Optional, Sequence, Tuple


class Unsupported(Exception):
  """The module cannot be given to Shardy faithfully; the message says why."""


Digit = Tuple[int, int]  # (stride in the device id, size)


@dataclasses.dataclass
class ParsedSharding:
  """One non-tuple HloSharding, reduced to what the mesh construction needs."""
  kind: str  # "replicated", "maximal", "tiled"
  device: int = 0  # for maximal
  num_devices: int = 1
  # For tiled: per tensor dim, its digits (major first). Replicated tile dims are dropped.
  # None when the device order is no iota (then `devices` is used against the mesh's order).
  dims: Optional[List[List[Digit]]] = dataclasses.field(default_factory=list)
  tile_dims: List[int] = dataclasses.field(default_factory=list)
  devices: List[int] = dataclasses.field(default_factory=list)  # Row-major over tile_dims.
  rank: int = 0


def _op_sharding_type(proto) -> str:
  return str(proto.type).rsplit(".", 1)[-1]


def _split_digits(reshape_dims: Sequence[int], perm: Sequence[int],
                  tile_dims: Sequence[int]) -> List[List[Digit]]:
  """Digits of each tile dim of iota(reshape_dims).transpose(perm).reshape(tile_dims)."""
  strides = [math.prod(reshape_dims[i + 1:]) for i in range(len(reshape_dims))]
  factors = [[reshape_dims[p], strides[p]] for p in perm if reshape_dims[p] > 1]
  out: List[List[Digit]] = []
  k = 0
  for need in tile_dims:
    digits: List[Digit] = []
    while need > 1:
      if k >= len(factors):
        raise Unsupported("tile assignment dims do not match its iota")
      size, stride = factors[k]
      if need % size == 0:
        digits.append((stride, size))
        need //= size
        k += 1
      elif size % need == 0:
        # The major part of this factor: `need` values, each `size // need` minor ones apart.
        digits.append((stride * (size // need), need))
        factors[k][0] = size // need
        need = 1
      else:
        raise Unsupported(
            f"tile dim of size {need} cuts a device-id factor of size {size}")
    out.append(digits)
  return out


def detect_digits(dims: Sequence[int], values: Sequence[int]) -> Optional[List[List[Digit]]]:
  """Digits (value stride, size) of each dim, major first, when `values` (row-major over dims,
  a permutation of 0..N-1) is a transposed iota; None otherwise."""
  n = len(values)
  if n == 0 or values[0] != 0:
    return None
  position_strides = [math.prod(dims[k + 1:]) for k in range(len(dims))]
  out: List[List[Digit]] = []
  for k, size in enumerate(dims):
    digits: List[Digit] = []
    covered = 1
    while covered < size:
      base = position_strides[k] * covered
      step = values[base]
      if step <= 0:
        return None
      run = 1
      for r in range(size // covered, 1, -1):
        if (size // covered) % r == 0 and all(values[j * base] == j * step for j in range(r)):
          run = r
          break
      if run == 1:
        return None
      digits.append((step, run))
      covered *= run
    out.append(list(reversed(digits)))
  # Every position must be what the digits say.
  for linear in range(n):
    expected = 0
    for k, size in enumerate(dims):
      index = (linear // position_strides[k]) % size
      for stride, digit_size in reversed(out[k]):  # minor first
        expected += (index % digit_size) * stride
        index //= digit_size
    if values[linear] != expected:
      return None
  return out


def parse_sharding(text: str, xc) -> List[ParsedSharding]:
  """The sharding string as a list (one entry per tuple element; one for non-tuples)."""
  try:
    proto = xc.HloSharding.from_string(text).to_proto()
  except Exception as e:  # XLA's parser reports malformed text as a generic error.
    raise Unsupported(f"unreadable sharding {text!r}: {e}") from None
  return _flatten_proto(proto, text, xc)


def _flatten_proto(proto, text: str, xc) -> List[ParsedSharding]:
  kind = _op_sharding_type(proto)
  if kind == "TUPLE":
    out: List[ParsedSharding] = []
    for element in proto.tuple_shardings:
      out.extend(_flatten_proto(element, text, xc))
    return out
  if kind == "REPLICATED":
    return [ParsedSharding("replicated")]
  if kind == "MAXIMAL":
    return [ParsedSharding("maximal", device=int(proto.tile_assignment_devices[0]))]
  if kind == "MANUAL":
    raise Unsupported("manual shardings (shard_map regions) are not imported into Shardy")
  if kind != "OTHER":
    raise Unsupported(f"sharding kind {kind} in {text!r} is not imported into Shardy")
  tile_dims = list(proto.tile_assignment_dimensions)
  last_types = [str(t).rsplit(".", 1)[-1] for t in proto.last_tile_dims]
  if any(t != "REPLICATED" for t in last_types):
    raise Unsupported(f"subgroup types {last_types} in {text!r} are not imported into Shardy")
  trailing = len(last_types) + (1 if proto.replicate_on_last_tile_dim else 0)
  rank = len(tile_dims) - trailing
  devices = [int(d) for d in xc.HloSharding.from_proto(proto).tile_assignment_devices()]
  if proto.iota_reshape_dims:
    reshape_dims = list(proto.iota_reshape_dims)
    perm = list(proto.iota_transpose_perm) or list(range(len(reshape_dims)))
    digits = _split_digits(reshape_dims, perm, tile_dims)
  else:
    digits = detect_digits(tile_dims, devices)
  return [
      ParsedSharding("tiled", num_devices=math.prod(tile_dims),
                     dims=digits[:rank] if digits is not None else None, tile_dims=tile_dims,
                     devices=devices, rank=rank)
  ]


@dataclasses.dataclass
class Mesh:
  """Axes major first: (name, size, stride); `device_ids` when the order is no plain iota."""
  axes: List[Tuple[str, int, int]]
  device_ids: Optional[List[int]] = None

  def attr_text(self) -> str:
    text = "<[" + ", ".join(f'"{n}"={s}' for n, s, _ in self.axes) + "]"
    if self.device_ids is not None:
      text += ", device_ids=[" + ", ".join(map(str, self.device_ids)) + "]"
    return text + ">"

  def axes_of(self, digit: Digit) -> List[str]:
    stride, size = digit
    names = [n for n, s, st in self.axes if stride <= st < stride * size]
    if math.prod(s for n, s, st in self.axes if stride <= st < stride * size) != size:
      raise Unsupported("internal: digit not covered by the mesh")
    return names


def common_mesh(shardings: Sequence[ParsedSharding], num_devices: int) -> Mesh:
  tiled = [s for s in shardings if s.kind == "tiled"]
  device_ids = None
  if any(s.dims is None for s in tiled):
    # No iota: the mesh's device order is the first such sharding's, and every sharding must be
    # a transposed iota of positions in that order.
    order = next(s for s in tiled if s.dims is None).devices
    if sorted(order) != list(range(num_devices)):
      raise Unsupported("a device order that does not cover every device once")
    position = {d: i for i, d in enumerate(order)}
    for s in tiled:
      digits = detect_digits(s.tile_dims, [position[d] for d in s.devices])
      if digits is None:
        raise Unsupported(
            f"device orders {order} and {s.devices} are not both transposed iotas of one mesh")
      s.dims = digits[:s.rank]
    device_ids = order
  bounds = {1, num_devices}
  for s in shardings:
    if s.kind != "tiled":
      continue
    if s.num_devices != num_devices:
      raise Unsupported(
          f"a sharding over {s.num_devices} devices in a module of {num_devices} partitions")
    for dim in s.dims:
      for stride, size in dim:
        bounds.update((stride, stride * size))
  ordered = sorted(bounds)
  for a, b in zip(ordered, ordered[1:]):
    if b % a:
      raise Unsupported(
          f"the shardings' device-id digits (boundaries {ordered}) admit no common mesh")
  axes = [(b // a, a) for a, b in zip(ordered, ordered[1:])]
  axes.reverse()  # major first
  return Mesh([(f"x{i}", size, stride) for i, (size, stride) in enumerate(axes)], device_ids)


def tensor_sharding_text(s: ParsedSharding, mesh: Mesh, rank: int) -> str:
  """`<@mesh, [{"x0"}, {}]>` (the body of #sdy.sharding)."""
  if s.kind == "maximal":
    return f"<@maximal_{s.device}, []>"
  if s.kind == "replicated":
    dims = [[] for _ in range(rank)]
  else:
    if len(s.dims) != rank:
      raise Unsupported(f"a sharding of rank {len(s.dims)} on a tensor of rank {rank}")
    dims = [[name for digit in dim for name in mesh.axes_of(digit)] for dim in s.dims]
  body = ", ".join("{" + ", ".join(f'"{n}"' for n in d) + "}" for d in dims)
  return f"<@mesh, [{body}]>"


def import_shardings(module, ir, num_devices: int, xc) -> Dict[str, int]:
  """Rewrites `module` (an ir.Module in its context) in place; returns counts of what changed."""
  sharded_sites = []  # (kind, op, index/None, text)

  def walk(op):
    for region in op.regions:
      for block in region.blocks:
        for inner in block.operations:
          visit(inner)
          walk(inner)

  def visit(op):
    name = op.operation.name
    if name == "func.func":
      for attr_name in ("arg_attrs", "res_attrs"):
        if attr_name in op.operation.attributes:
          for i, d in enumerate(op.operation.attributes[attr_name]):
            d = ir.DictAttr(d)
            if "mhlo.sharding" in d:
              sharded_sites.append((attr_name, op, i, ir.StringAttr(d["mhlo.sharding"]).value))
      return
    if name == "stablehlo.custom_call":
      target = ir.StringAttr(op.operation.attributes["call_target_name"]).value
      if target in ("SPMDFullToShardShape", "SPMDShardToFullShape"):
        raise Unsupported(f"manual region ({target}) is not imported into Shardy")
    if "mhlo.sharding" in op.operation.attributes:
      sharded_sites.append(
          ("op", op, None, ir.StringAttr(op.operation.attributes["mhlo.sharding"]).value))

  walk(module.operation)
  parsed = {text: parse_sharding(text, xc) for _, _, _, text in sharded_sites}
  every = [s for ss in parsed.values() for s in ss]
  mesh = common_mesh(every, num_devices)
  maximal = sorted({s.device for s in every if s.kind == "maximal"})

  def rank_of(type_) -> int:
    try:
      return ir.RankedTensorType(type_).rank
    except ValueError:
      raise Unsupported(f"a sharded value of type {type_} (tokens, tuples) is not imported into "
                        "Shardy") from None

  counts = {"func_attrs": 0, "ops": 0, "constraints": 0}
  funcs: Dict[int, list] = {}
  for kind, op, i, text in sharded_sites:
    if kind == "op":
      values = parsed[text]
      results = list(op.operation.results)
      if len(values) == 1 and len(results) != 1:
        values = values * len(results)
      if len(values) != len(results):
        raise Unsupported(
            f"{op.operation.name} has {len(results)} results and sharding {text!r}")
      bodies = [tensor_sharding_text(v, mesh, rank_of(r.type)) for v, r in zip(values, results)]
      is_constraint = (op.operation.name == "stablehlo.custom_call" and ir.StringAttr(
          op.operation.attributes["call_target_name"]).value == "Sharding")
      if is_constraint:
        from jaxlib.mlir.dialects import sdy
        with ir.InsertionPoint(op), op.location:
          attr = ir.Attribute.parse(f"#sdy.sharding{bodies[0]}")
          new = sdy.ShardingConstraintOp(op.operation.operands[0], attr)
        op.operation.results[0].replace_all_uses_with(new.result)
        op.operation.erase()
        counts["constraints"] += 1
        continue
      del op.operation.attributes["mhlo.sharding"]
      op.operation.attributes["sdy.sharding"] = ir.Attribute.parse(
          "#sdy.sharding_per_value<[" + ", ".join(bodies) + "]>")
      counts["ops"] += 1
    else:
      funcs.setdefault(id(op), [op, {}])[1][(kind, i)] = text
  for op, edits in funcs.values():
    func_type = ir.FunctionType(ir.TypeAttr(op.operation.attributes["function_type"]).value)
    for attr_name, types in (("arg_attrs", func_type.inputs), ("res_attrs", func_type.results)):
      if attr_name not in op.operation.attributes:
        continue
      new_dicts = []
      for i, d in enumerate(op.operation.attributes[attr_name]):
        d = ir.DictAttr(d)
        entries = {na.name: na.attr for na in d if na.name != "mhlo.sharding"}
        if (attr_name, i) in edits:
          values = parsed[edits[(attr_name, i)]]
          if len(values) != 1:
            raise Unsupported("tuple-typed function arguments are not imported into Shardy")
          entries["sdy.sharding"] = ir.Attribute.parse(
              "#sdy.sharding" + tensor_sharding_text(values[0], mesh, rank_of(types[i])))
          counts["func_attrs"] += 1
        new_dicts.append(ir.DictAttr.get(entries))
      op.operation.attributes[attr_name] = ir.ArrayAttr.get(new_dicts)
  from jaxlib.mlir.dialects import sdy
  with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
    sdy.MeshOp("mesh", ir.Attribute.parse("#sdy.mesh" + mesh.attr_text()))
    for device in maximal:
      sdy.MeshOp(f"maximal_{device}", ir.Attribute.parse(f"#sdy.mesh<[], device_ids=[{device}]>"))
  counts["mesh"] = mesh.attr_text()
  return counts
