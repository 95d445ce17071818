"""Random JAX programs as data: a mesh, inputs with PartitionSpecs, a list of ops (each a name,
operand references and static parameters, some with a body: scan, fori_loop, grad/vjp,
shard_map), outputs with optional out specs.

A `Program` renders itself to the source text of a Python module that uses only public jax API
(`render`), and `build` execs exactly that text, so a repro is exactly what ran. Programs are
generated from a stream of integer choices (`generate(chooser)`): a seeded `RandomChooser` (the
campaign), hypothesis draws (`spmdcheck.strategies`), or a `ReplayChooser` over recorded
choices (the campaign's reducer). Every choice's smallest value is the simplest option (one op,
the first op kinds, replicated specs, small shapes), so shrinking the choices shrinks the
program.

Programs are valid by construction: shapes divide where jax requires it (PartitionSpecs,
shard_map in_specs and out_specs, all_to_all's split dim), shard_map outputs name every axis
they vary over (check_vma), and on meshes with Explicit axes every operand is resharded to the
sharding jax's typing rules want before the op that needs it (the generator tracks each value's
sharding type). Input values are small integers in float32 (seeded numpy), so sums, dots and
convolutions are exact in any order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import linecache
import math
import random
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple

# ---------------------------------------------------------------------------------------------
# Choices.


class Chooser(Protocol):
  """A stream of integer choices; `integer(lo, hi)` is inclusive and `lo` is the simplest."""

  def integer(self, lo: int, hi: int) -> int:
    ...


def boolean(ch: Chooser) -> bool:
  return ch.integer(0, 1) == 1


def choice(ch: Chooser, options: Sequence[Any]) -> Any:
  return options[ch.integer(0, len(options) - 1)]


class RandomChooser:
  """Seeded choices (any str/int seed, reproducible across runs and machines); records each
  choice as its offset from `lo` (what ReplayChooser replays), and where each op's choices
  start (`marks`)."""

  def __init__(self, seed: Any) -> None:
    self._rng = random.Random(str(seed))
    self.record: List[int] = []
    self.marks: List[int] = []

  def integer(self, lo: int, hi: int) -> int:
    value = self._rng.randint(lo, hi)
    self.record.append(value - lo)
    return value

  def mark(self) -> None:
    self.marks.append(len(self.record))


class ReplayChooser:
  """Replays recorded offsets (clamped to each range); past their end every choice is the
  simplest. Records what it returned, so a replay can be replayed again."""

  def __init__(self, offsets: Sequence[int]) -> None:
    self._offsets = list(offsets)
    self.record: List[int] = []
    self.marks: List[int] = []

  def integer(self, lo: int, hi: int) -> int:
    i = len(self.record)
    offset = self._offsets[i] if i < len(self._offsets) else 0
    offset = max(0, min(offset, hi - lo))
    self.record.append(offset)
    return lo + offset

  def mark(self) -> None:
    self.marks.append(len(self.record))


# ---------------------------------------------------------------------------------------------
# The data.

Dims = Tuple[Tuple[str, ...], ...]


@dataclasses.dataclass(frozen=True)
class Spec:
  """A PartitionSpec: the mesh axes of each dim (empty: None), and unreduced axes."""
  dims: Dims
  unreduced: Tuple[str, ...] = ()

  @staticmethod
  def replicated(rank: int) -> "Spec":
    return Spec(tuple(() for _ in range(rank)))

  def axes(self) -> List[str]:
    return [a for d in self.dims for a in d]

  def render(self) -> str:
    parts = []
    for d in self.dims:
      if not d:
        parts.append("None")
      elif len(d) == 1:
        parts.append(json.dumps(d[0]))
      else:
        parts.append("(" + ", ".join(json.dumps(a) for a in d) + ")")
    if self.unreduced:
      parts.append("unreduced={" + ", ".join(json.dumps(a) for a in self.unreduced) + "}")
    return "P(" + ", ".join(parts) + ")"

  def to_jax(self) -> Any:
    from jax.sharding import PartitionSpec
    entries = [None if not d else (d[0] if len(d) == 1 else tuple(d)) for d in self.dims]
    if self.unreduced:
      return PartitionSpec(*entries, unreduced=set(self.unreduced))
    return PartitionSpec(*entries)

  def to_json(self) -> Dict[str, Any]:
    out: Dict[str, Any] = {"dims": [list(d) for d in self.dims]}
    if self.unreduced:
      out["unreduced"] = list(self.unreduced)
    return out

  @staticmethod
  def from_json(j: Mapping[str, Any]) -> "Spec":
    return Spec(tuple(tuple(d) for d in j["dims"]), tuple(j.get("unreduced", ())))


@dataclasses.dataclass(frozen=True)
class MeshSpec:
  """A mesh as data: axis names and sizes, "auto"/"explicit" per axis, and the device order
  (None: jax.devices() in order)."""
  names: Tuple[str, ...]
  sizes: Tuple[int, ...]
  types: Tuple[str, ...]
  device_order: Optional[Tuple[int, ...]] = None

  @property
  def devices(self) -> int:
    return math.prod(self.sizes)

  def size(self, axis: str) -> int:
    return self.sizes[self.names.index(axis)]

  @property
  def explicit(self) -> bool:
    return any(t == "explicit" for t in self.types)

  def render(self) -> str:
    n = self.devices
    if self.device_order is None:
      devices = f"np.array(jax.devices()[:{n}])"
    else:
      devices = f"np.array(jax.devices())[[{', '.join(map(str, self.device_order))}]]"
    types = ", ".join("AxisType.Explicit" if t == "explicit" else "AxisType.Auto"
                      for t in self.types)
    names = ", ".join(json.dumps(a) for a in self.names)
    sizes = ", ".join(map(str, self.sizes))
    comma = "," if len(self.names) == 1 else ""
    return (f"Mesh({devices}.reshape({sizes}{comma}), ({names}{comma}), "
            f"axis_types=({types}{comma}))")

  def to_jax(self) -> Any:
    import jax
    import numpy as np
    from jax.sharding import AxisType, Mesh
    all_devices = jax.devices()
    order = self.device_order or tuple(range(self.devices))
    devices = np.array([all_devices[i] for i in order]).reshape(self.sizes)
    types = tuple(AxisType.Explicit if t == "explicit" else AxisType.Auto for t in self.types)
    return Mesh(devices, self.names, axis_types=types)

  @staticmethod
  def from_jax(mesh: Any) -> "MeshSpec":
    from jax.sharding import AxisType
    names = tuple(mesh.axis_names)
    sizes = tuple(int(mesh.shape[n]) for n in names)
    types = tuple("explicit" if t == AxisType.Explicit else "auto"
                  for t in getattr(mesh, "axis_types", (AxisType.Auto,) * len(names)))
    ids = tuple(int(d.id) for d in mesh.devices.flat)
    return MeshSpec(names, sizes, types, None if ids == tuple(range(len(ids))) else ids)

  def to_json(self) -> Dict[str, Any]:
    return {"names": list(self.names), "sizes": list(self.sizes), "types": list(self.types),
            "device_order": None if self.device_order is None else list(self.device_order)}

  @staticmethod
  def from_json(j: Mapping[str, Any]) -> "MeshSpec":
    order = j.get("device_order")
    return MeshSpec(tuple(j["names"]), tuple(j["sizes"]), tuple(j["types"]),
                    None if order is None else tuple(order))


@dataclasses.dataclass(frozen=True)
class Tensor:
  """An input (of the program or of a body): its name, shape and dtype. `bound` > 0 marks an
  index array (int32) into a dim of that size (its values are drawn around [0, bound))."""
  name: str
  shape: Tuple[int, ...]
  dtype: str = "float32"
  bound: int = 0

  def to_json(self) -> Dict[str, Any]:
    return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype,
            "bound": self.bound}

  @staticmethod
  def from_json(j: Mapping[str, Any]) -> "Tensor":
    return Tensor(j["name"], tuple(j["shape"]), j.get("dtype", "float32"), j.get("bound", 0))


@dataclasses.dataclass(frozen=True)
class Body:
  """The function an op applies (scan step, loop body, loss, shard_map body): its parameters,
  ops over them and its results."""
  params: Tuple[Tensor, ...]
  ops: Tuple["Op", ...]
  results: Tuple[str, ...]

  def to_json(self) -> Dict[str, Any]:
    return {"params": [p.to_json() for p in self.params], "ops": [o.to_json() for o in self.ops],
            "results": list(self.results)}

  @staticmethod
  def from_json(j: Mapping[str, Any]) -> "Body":
    return Body(tuple(Tensor.from_json(p) for p in j["params"]),
                tuple(Op.from_json(o) for o in j["ops"]), tuple(j["results"]))


@dataclasses.dataclass(frozen=True)
class Op:
  """One op: `out = kind(*operands, **params)`; `shape`/`dtype` of its result."""
  kind: str
  out: str
  operands: Tuple[str, ...]
  params: Mapping[str, Any]
  shape: Tuple[int, ...]
  dtype: str = "float32"
  body: Optional[Body] = None

  def to_json(self) -> Dict[str, Any]:
    j: Dict[str, Any] = {"kind": self.kind, "out": self.out, "operands": list(self.operands),
                         "params": _params_to_json(self.params), "shape": list(self.shape),
                         "dtype": self.dtype}
    if self.body is not None:
      j["body"] = self.body.to_json()
    return j

  @staticmethod
  def from_json(j: Mapping[str, Any]) -> "Op":
    return Op(j["kind"], j["out"], tuple(j["operands"]), _params_from_json(j["params"]),
              tuple(j["shape"]), j.get("dtype", "float32"),
              Body.from_json(j["body"]) if j.get("body") else None)

  def size(self) -> int:
    """1, plus the ops of its body."""
    return 1 + (len(self.body.ops) if self.body is not None else 0)


def _params_to_json(params: Mapping[str, Any]) -> Dict[str, Any]:
  out: Dict[str, Any] = {}
  for k, v in params.items():
    if isinstance(v, Spec):
      out[k] = {"spec": v.to_json()}
    elif isinstance(v, (list, tuple)) and v and all(isinstance(s, Spec) for s in v):
      out[k] = {"specs": [s.to_json() for s in v]}
    else:
      out[k] = v
  return out


def _params_from_json(params: Mapping[str, Any]) -> Dict[str, Any]:
  out: Dict[str, Any] = {}
  for k, v in params.items():
    if isinstance(v, dict) and set(v) == {"spec"}:
      out[k] = Spec.from_json(v["spec"])
    elif isinstance(v, dict) and set(v) == {"specs"}:
      out[k] = tuple(Spec.from_json(s) for s in v["specs"])
    elif isinstance(v, list):
      out[k] = _tuples(v)
    else:
      out[k] = v
  return out


def _tuples(v: Any) -> Any:
  return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


@dataclasses.dataclass(frozen=True)
class Program:
  """A JAX program with its mesh and shardings. `in_specs` has one Spec per input;
  `out_specs` is None (jax chooses) or one Spec-or-None per output."""
  mesh: MeshSpec
  inputs: Tuple[Tensor, ...]
  in_specs: Tuple[Spec, ...]
  ops: Tuple[Op, ...]
  outputs: Tuple[str, ...]
  out_specs: Optional[Tuple[Optional[Spec], ...]] = None
  value_seed: int = 0
  name: str = "program"
  index_slack: int = 1  # index values range over [-slack, bound + slack)

  # --- views ---

  def size(self) -> int:
    """The number of ops, body ops included."""
    return sum(op.size() for op in self.ops)

  def kinds(self) -> List[str]:
    out = []
    for op in self.ops:
      out.append(op.kind)
      if op.body is not None:
        out += [b.kind for b in op.body.ops]
    return out

  @property
  def uses_mesh(self) -> bool:
    """Whether the function itself refers to the mesh (explicit axes, shard_map, reshard or a
    sharding constraint): then it has no one-device meaning."""
    return self.mesh.explicit or any(op.kind in ("shard_map", "reshard") for op in self.ops)

  def fingerprint(self) -> str:
    return hashlib.sha256(self.render().encode()).hexdigest()[:12]

  # --- JSON ---

  def to_json(self) -> Dict[str, Any]:
    return {"format": "spmdcheck.programs/1", "name": self.name, "mesh": self.mesh.to_json(),
            "inputs": [t.to_json() for t in self.inputs],
            "in_specs": [s.to_json() for s in self.in_specs],
            "ops": [o.to_json() for o in self.ops], "outputs": list(self.outputs),
            "out_specs": None if self.out_specs is None else
            [None if s is None else s.to_json() for s in self.out_specs],
            "value_seed": self.value_seed, "index_slack": self.index_slack}

  @staticmethod
  def from_json(j: Mapping[str, Any]) -> "Program":
    out_specs = j.get("out_specs")
    return Program(
        mesh=MeshSpec.from_json(j["mesh"]),
        inputs=tuple(Tensor.from_json(t) for t in j["inputs"]),
        in_specs=tuple(Spec.from_json(s) for s in j["in_specs"]),
        ops=tuple(Op.from_json(o) for o in j["ops"]), outputs=tuple(j["outputs"]),
        out_specs=None if out_specs is None else
        tuple(None if s is None else Spec.from_json(s) for s in out_specs),
        value_seed=int(j.get("value_seed", 0)), name=j.get("name", "program"),
        index_slack=int(j.get("index_slack", 1)))

  # --- rendering ---

  def render(self) -> str:
    """The source of a module defining MESH, IN_SPECS, OUT_SPECS, `f`, `inputs(seed)` and
    `input_structs()`; public jax API only."""
    return render(self)


# ---------------------------------------------------------------------------------------------
# Rendering.

UNARY = {
    "negative": "jnp.negative({})",
    "abs": "jnp.abs({})",
    "tanh": "jnp.tanh({})",
    "sin": "jnp.sin({})",
    "floor": "jnp.floor({})",
    "sign": "jnp.sign({})",
    "cos": "jnp.cos({})",
    "sigmoid": "jax.nn.sigmoid({})",
    "square": "jnp.square({})",
}
BINARY = ("add", "multiply", "subtract", "maximum", "minimum")
REDUCE = ("sum", "max", "min")

_HEADER = '''"""{doc}"""
import contextlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P
'''


def _index_expr(rank: int, dim: int, index: str) -> str:
  return "[" + ", ".join([":"] * dim + [index]) + "]"


def _const(value: float) -> str:
  return repr(float(value))


def _render_ops(ops: Sequence[Op], indent: str) -> List[str]:
  lines: List[str] = []
  for op in ops:
    lines += _render_op(op, indent)
  return lines


def _render_body_def(op: Op, name: str, indent: str, first: Sequence[str] = ()) -> List[str]:
  assert op.body is not None
  params = list(first) + [p.name for p in op.body.params]
  lines = [f"{indent}def {name}({', '.join(params)}):"]
  lines += _render_ops(op.body.ops, indent + "  ")
  results = list(op.body.results)
  if op.kind == "grad":
    lines.append(f"{indent}  return jnp.sum({results[0]})")
  elif len(results) == 1:
    lines.append(f"{indent}  return {results[0]}")
  else:
    lines.append(f"{indent}  return {', '.join(results)}")
  return lines


def _render_op(op: Op, indent: str) -> List[str]:
  p = op.params
  o = op.out
  a = op.operands[0] if op.operands else ""
  k = op.kind
  if k == "unary":
    return [f"{indent}{o} = {UNARY[p['fn']].format(a)}"]
  if k == "binary":
    other = op.operands[1] if len(op.operands) > 1 else _const(p["const"])
    return [f"{indent}{o} = jnp.{p['fn']}({a}, {other})"]
  if k == "reduce":
    axes = tuple(p["axes"])
    return [f"{indent}{o} = jnp.{p['fn']}({a}, axis={axes!r})"]
  if k == "transpose":
    return [f"{indent}{o} = jnp.transpose({a}, {tuple(p['perm'])!r})"]
  if k == "reshape":
    return [f"{indent}{o} = jnp.reshape({a}, {tuple(p['shape'])!r})"]
  if k == "slice":
    start, stop, step = p["start"], p["stop"], p["step"]
    text = f"{start or ''}:{stop if stop != p['size'] else ''}" + (f":{step}" if step != 1 else "")
    return [f"{indent}{o} = {a}{_index_expr(len(op.shape), p['dim'], text)}"]
  if k == "dynamic_slice":
    return [f"{indent}{o} = jax.lax.dynamic_slice_in_dim({a}, {op.operands[1]}, {p['length']}, "
            f"axis={p['dim']})"]
  if k == "dynamic_update_slice":
    return [f"{indent}{o} = jax.lax.dynamic_update_slice_in_dim({a}, {op.operands[1]}, "
            f"{op.operands[2]}, axis={p['dim']})"]
  if k == "einsum":
    b = op.operands[1]
    out_sharding = p.get("out_sharding")
    if out_sharding is None:
      return [f"{indent}{o} = jnp.einsum({p['subscripts']!r}, {a}, {b})"]
    lines = [f"{indent}{o} = jnp.einsum({p['subscripts']!r}, {a}, {b}, "
             f"out_sharding={out_sharding.render()})"]
    if out_sharding.unreduced:
      # Unreduced partial sums: only a reshard may consume them (it reduces them).
      lines.append(f"{indent}{o} = jax.sharding.reshard({o}, "
                   f"{Spec(out_sharding.dims).render()})")
    return lines
  if k == "cumulative":
    if p["fn"] == "cumsum":
      return [f"{indent}{o} = jnp.cumsum({a}, axis={p['axis']})"]
    return [f"{indent}{o} = jax.lax.{p['fn']}({a}, axis={p['axis']}, reverse={p['reverse']})"]
  if k == "sort":
    if p["fn"] == "sort":
      return [f"{indent}{o} = jnp.sort({a}, axis={p['axis']})"]
    if p["fn"] == "argsort":
      return [f"{indent}{o} = jnp.argsort({a}, axis={p['axis']}, stable=True)"
              f".astype(jnp.float32)"]
    return [f"{indent}{o} = jax.lax.top_k({a}, {p['k']})[0]"]
  if k == "gather":
    index = op.operands[1] if len(op.operands) > 1 else \
        f"jnp.array({list(p['indices'])!r}, jnp.int32)"
    mode = p.get("mode")
    args = "" if mode is None else (f"mode={mode!r}" + (", fill_value=0.0" if mode == "fill"
                                                         else ""))
    return [f"{indent}{o} = {a}.at{_index_expr(len(op.shape), p['dim'], index)}.get({args})"]
  if k == "scatter":
    rest = list(op.operands[1:])
    update = rest.pop(0) if p["has_update"] else _const(p["const"])
    index = rest.pop(0) if p["has_index"] else f"jnp.array({list(p['indices'])!r}, jnp.int32)"
    kwargs = []
    if p.get("mode"):
      kwargs.append(f"mode={p['mode']!r}")
    if p.get("unique"):
      kwargs.append("unique_indices=True")
    extra = "".join(", " + kw for kw in kwargs)
    return [f"{indent}{o} = {a}.at{_index_expr(len(op.shape), p['dim'], index)}"
            f".{p['op']}({update}{extra})"]
  if k == "conv":
    return [f"{indent}{o} = jax.lax.conv_general_dilated({a}, {op.operands[1]}, "
            f"window_strides={tuple(p['strides'])!r}, "
            f"padding={tuple(tuple(x) for x in p['padding'])!r}, "
            f"lhs_dilation={tuple(p['lhs_dilation'])!r}, "
            f"rhs_dilation={tuple(p['rhs_dilation'])!r}, "
            f"dimension_numbers={tuple(p['dimension_numbers'])!r}, "
            f"feature_group_count={p['feature_group_count']}, "
            f"batch_group_count={p['batch_group_count']})"]
  if k == "scan":
    name = f"step_{o}"
    lines = _render_body_def(op, name, indent)
    target = f"{o}, _" if p["output"] == "carry" else f"_, {o}"
    lines.append(f"{indent}{target} = jax.lax.scan({name}, {a}, {op.operands[1]}, "
                 f"reverse={p['reverse']})")
    return lines
  if k == "fori_loop":
    name = f"loop_{o}"
    lines = _render_body_def(op, name, indent, first=("i",))
    lines.append(f"{indent}{o} = jax.lax.fori_loop(0, {p['trips']}, {name}, {a})")
    return lines
  if k == "grad":
    name = f"loss_{o}"
    lines = _render_body_def(op, name, indent)
    lines.append(f"{indent}{o} = jax.grad({name})({', '.join(op.operands)})")
    return lines
  if k == "vjp":
    name = f"fn_{o}"
    lines = _render_body_def(op, name, indent)
    lines.append(f"{indent}{o} = jax.vjp({name}, {a})[1]({op.operands[1]})[0]")
    return lines
  if k == "shard_map":
    name = f"body_{o}"
    lines = _render_body_def(op, name, indent)
    in_specs = ", ".join(s.render() for s in p["in_specs"])
    in_specs = f"({in_specs},)" if len(p["in_specs"]) == 1 else f"({in_specs})"
    axis_names = ""
    if p.get("axis_names"):
      axis_names = ", axis_names={" + ", ".join(json.dumps(x) for x in p["axis_names"]) + "}"
    lines.append(f"{indent}{o} = jax.shard_map({name}, mesh=MESH, in_specs={in_specs}, "
                 f"out_specs={p['out_spec'].render()}{axis_names}, "
                 f"check_vma={p['check_vma']})({', '.join(op.operands)})")
    return lines
  if k == "reshard":
    spec = p["spec"]
    if p["api"] == "reshard":
      return [f"{indent}{o} = jax.sharding.reshard({a}, {spec.render()})"]
    return [f"{indent}{o} = jax.lax.with_sharding_constraint({a}, NamedSharding(MESH, "
            f"{spec.render()}))"]
  # Body-only ops (shard_map, fori_loop).
  if k == "psum":
    return [f"{indent}{o} = jax.lax.psum({a}, {tuple(p['axes'])!r})"]
  if k == "all_gather":
    return [f"{indent}{o} = jax.lax.all_gather({a}, {p['axis']!r}, axis={p['dim']}, tiled=True)"]
  if k == "ppermute":
    return [f"{indent}{o} = jax.lax.ppermute({a}, {p['axis']!r}, "
            f"perm={[tuple(x) for x in p['perm']]!r})"]
  if k == "all_to_all":
    return [f"{indent}{o} = jax.lax.all_to_all({a}, {p['axis']!r}, {p['split']}, {p['concat']}, "
            f"tiled=True)"]
  if k == "axis_index":
    return [f"{indent}{o} = jnp.add({a}, jax.lax.axis_index({p['axis']!r}).astype(jnp.float32))"]
  if k == "loop_index":
    return [f"{indent}{o} = jnp.add({a}, i.astype(jnp.float32))"]
  raise ValueError(f"unknown op kind {k!r}")


def render(program: Program) -> str:
  """The module's source: public jax API only."""
  doc = (f"{program.name}: a JAX program generated by spmdcheck.programs "
         f"({program.size()} ops: {', '.join(program.kinds())}).")
  lines = [_HEADER.format(doc=doc)]
  lines.append(f"MESH = {program.mesh.render()}")
  lines.append(f"EXPLICIT = {program.mesh.explicit}  # jax.set_mesh(MESH) while tracing f")
  lines.append(f"USES_MESH = {program.uses_mesh}  # f refers to MESH: no one-device meaning")
  specs = ", ".join(s.render() for s in program.in_specs)
  lines.append(f"IN_SPECS = ({specs}{',' if len(program.in_specs) == 1 else ''})")
  if program.out_specs is None:
    lines.append("OUT_SPECS = None")
  else:
    outs = ", ".join("None" if s is None else s.render() for s in program.out_specs)
    lines.append(f"OUT_SPECS = ({outs}{',' if len(program.out_specs) == 1 else ''})")
  shapes = ", ".join(f"({t.shape!r}, {t.dtype!r}, {t.bound})" for t in program.inputs)
  lines.append(f"INPUTS = ({shapes}{',' if len(program.inputs) == 1 else ''})"
               "  # (shape, dtype, index bound)")
  lines.append(f"VALUE_SEED = {program.value_seed}")
  lines.append(f"INDEX_SLACK = {program.index_slack}  # index values in [-slack, bound + slack)")
  lines.append("")
  lines.append("")
  lines.append(f"def f({', '.join(t.name for t in program.inputs)}):")
  if program.mesh.explicit:
    # The arguments' sharding types, whatever the caller's placement (the reference run passes
    # replicated arrays).
    for t, s in zip(program.inputs, program.in_specs):
      lines.append(f"  {t.name} = jax.sharding.reshard({t.name}, {s.render()})")
  lines += _render_ops(program.ops, "  ")
  comma = "," if len(program.outputs) == 1 else ""
  lines.append(f"  return ({', '.join(program.outputs)}{comma})")
  lines.append("")
  lines.append("")
  lines.append(_INPUTS_FUNCTIONS)
  return "\n".join(lines)


_INPUTS_FUNCTIONS = '''def inputs(seed=VALUE_SEED):
  """The arguments: small integers in float32 (sums exact in any order); index arrays in
  [-INDEX_SLACK, bound + INDEX_SLACK) (out of range ones are clipped, filled or dropped)."""
  rng = np.random.default_rng(seed)
  out = []
  for shape, dtype, bound in INPUTS:
    if bound:
      out.append(rng.integers(-INDEX_SLACK, bound + INDEX_SLACK, size=shape).astype(dtype))
    else:
      out.append(rng.integers(-4, 5, size=shape).astype(dtype))
  return tuple(out)


def input_structs():
  """The arguments' shapes and dtypes (with their sharding types on an explicit mesh)."""
  return tuple(
      jax.ShapeDtypeStruct(shape, dtype,
                           sharding=NamedSharding(MESH, spec) if EXPLICIT else None)
      for (shape, dtype, _), spec in zip(INPUTS, IN_SPECS))


def mesh_context():
  return jax.set_mesh(MESH) if EXPLICIT else contextlib.nullcontext()


def in_shardings():
  return tuple(NamedSharding(MESH, spec) for spec in IN_SPECS)


def out_shardings():
  if OUT_SPECS is None:
    return None
  return tuple(None if spec is None else NamedSharding(MESH, spec) for spec in OUT_SPECS)


def run_sharded(args):
  """f under jax.jit with IN_SPECS/OUT_SPECS, arguments placed by IN_SPECS."""
  with mesh_context():
    placed = [jax.device_put(x, s) for x, s in zip(args, in_shardings())]
    out = jax.jit(f, in_shardings=in_shardings(), out_shardings=out_shardings())(*placed)
    return [np.asarray(o) for o in out]


def run_reference(args):
  """f without shardings: on one device, or (when f refers to MESH) with every argument and
  result replicated over MESH."""
  with mesh_context():
    if USES_MESH:
      replicated = NamedSharding(MESH, P())
      shardings = tuple(replicated for _ in args)
      out = jax.jit(f, in_shardings=shardings, out_shardings=replicated)(*args)
    else:
      one = jax.devices()[0]
      out = jax.jit(f)(*[jax.device_put(x, one) for x in args])
    return [np.asarray(o) for o in out]


def differences(sharded, reference):
  """Where the sharded results differ from the reference (floats: within 1e-4 of the
  reference's magnitude; transcendental functions may differ in their last bits)."""
  found = []
  for k, (s, r) in enumerate(zip(sharded, reference)):
    if s.shape != r.shape or s.dtype != r.dtype:
      found.append(f"output {k}: {s.dtype}{list(s.shape)} != {r.dtype}{list(r.shape)}")
      continue
    if np.issubdtype(r.dtype, np.floating):
      finite = np.abs(r[np.isfinite(r)])
      scale = max(1.0, float(finite.max())) if finite.size else 1.0
      bad = ~np.isclose(s, r, rtol=1e-4, atol=1e-4 * scale, equal_nan=True)
    else:
      bad = s != r
    if bad.any():
      at = tuple(int(i) for i in np.argwhere(bad)[0])
      found.append(f"output {k} at {list(at)}: sharded {s[at]!r}, reference {r[at]!r} "
                   f"({int(bad.sum())} of {bad.size} elements differ)")
  return found'''


# ---------------------------------------------------------------------------------------------
# Building.


@dataclasses.dataclass
class Built:
  """The module a Program's source defines, and the source."""
  program: Program
  source: str
  namespace: Dict[str, Any]

  @property
  def f(self) -> Callable[..., Any]:
    return self.namespace["f"]

  @property
  def mesh(self) -> Any:
    return self.namespace["MESH"]

  @property
  def in_specs(self) -> Tuple[Any, ...]:
    return tuple(self.namespace["IN_SPECS"])

  @property
  def out_specs(self) -> Optional[Tuple[Any, ...]]:
    out = self.namespace["OUT_SPECS"]
    return None if out is None else tuple(out)

  def inputs(self, seed: Optional[int] = None) -> Tuple[Any, ...]:
    fn = self.namespace["inputs"]
    return tuple(fn() if seed is None else fn(seed))

  def input_structs(self) -> Tuple[Any, ...]:
    return tuple(self.namespace["input_structs"]())

  def run_sharded(self, args: Sequence[Any]) -> List[Any]:
    return list(self.namespace["run_sharded"](args))

  def run_reference(self, args: Sequence[Any]) -> List[Any]:
    return list(self.namespace["run_reference"](args))

  def differences(self, sharded: Sequence[Any], reference: Sequence[Any]) -> List[str]:
    return list(self.namespace["differences"](sharded, reference))


def build(program: Program, filename: Optional[str] = None) -> Built:
  """Execs the program's source (exactly what `render` returns) and returns its namespace."""
  source = render(program)
  filename = filename or f"<spmdcheck program {program.name} {program.fingerprint()}>"
  # Tracebacks and jax's source locations show the generated lines.
  linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
  namespace: Dict[str, Any] = {"__name__": f"spmdcheck_program_{program.fingerprint()}"}
  exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (our own generated source)
  return Built(program, source, namespace)


# ---------------------------------------------------------------------------------------------
# Generation.

KINDS: Tuple[str, ...] = (
    "unary", "binary", "reduce", "transpose", "reshape", "slice", "einsum", "cumulative",
    "sort", "gather", "scatter", "dynamic_slice", "conv", "scan", "fori_loop", "grad",
    "shard_map", "reshard")
# Dim sizes, the most useful first (divisible by every mesh axis of a small mesh).
DIM_SIZES: Tuple[int, ...] = (8, 4, 2, 16, 1, 6, 3, 12, 5)
AXIS_NAMES: Tuple[str, ...] = ("x", "y", "z")
AXIS_SIZES: Tuple[int, ...] = (2, 4, 1, 8, 3)


@dataclasses.dataclass(frozen=True)
class GenConfig:
  """What `generate` may draw. `axis_types`: per mesh, all axes "auto" or all "explicit" (the
  first is the simplest); `kinds`: the op kinds, simplest first."""
  max_ops: int = 6
  min_ops: int = 1
  kinds: Tuple[str, ...] = KINDS
  max_devices: int = 8
  max_axes: int = 3
  axis_types: Tuple[str, ...] = ("auto", "explicit")
  max_rank: int = 3
  max_elements: int = 4096
  permute_devices: bool = True
  # Stay clear of XLA bugs this generator finds (for tests that compare results): mesh axes of
  # size 1 (a partially manual shard_map over one breaks XLA's partitioner), convolutions with
  # feature or batch groups (XLA keeps the group count when it splits the output features) or
  # with operands sharded off their batch dim (a feature dim and a kernel dim split over one
  # axis give wrong sums), strided slices, clamped or out-of-range indices.
  avoid_xla_bugs: bool = False


@dataclasses.dataclass
class _Val:
  shape: Tuple[int, ...]
  dtype: str
  spec: Spec  # the sharding type on an explicit mesh (replicated elsewhere)


def draw_mesh(ch: Chooser, max_devices: int = 8, axis_types: Sequence[str] = ("auto",),
              max_axes: int = 3, permute_devices: bool = True,
              mixed: bool = False, axis_sizes: Sequence[int] = AXIS_SIZES,
              min_devices: int = 1) -> MeshSpec:
  """A mesh of at most `max_devices` devices: 1..max_axes axes named x, y, z with sizes 2, 4, 1,
  8, 3 (first: simplest); one axis type for all axes (or per axis when `mixed`), drawn from
  `axis_types`; sometimes a permuted device order. A mesh of fewer than `min_devices` devices
  gets a first axis of size 2 (if `max_devices` allows)."""
  n_axes = ch.integer(1, max(1, min(max_axes, len(AXIS_NAMES))))
  sizes: List[int] = []
  for _ in range(n_axes):
    room = max_devices // max(1, math.prod(sizes))
    options = [s for s in axis_sizes if s <= room]
    if not options or (options == [1] and sizes):
      break  # no room left: fewer axes (size-1 axes only where drawn)
    sizes.append(choice(ch, options))
  sizes = sizes or [1]
  if math.prod(sizes) < min_devices and 2 * math.prod(sizes[1:]) <= max_devices:
    sizes[0] = 2
  n_axes = len(sizes)
  if mixed:
    types = tuple(choice(ch, list(axis_types)) for _ in range(n_axes))
  else:
    types = (choice(ch, list(axis_types)),) * n_axes
  n = math.prod(sizes)
  order: Optional[Tuple[int, ...]] = None
  if permute_devices and n > 1 and ch.integer(0, 3) == 3:
    perm = list(range(n))
    for i in range(n - 1):  # Fisher-Yates: all offsets 0 is the identity
      j = i + ch.integer(0, n - 1 - i)
      perm[i], perm[j] = perm[j], perm[i]
    if perm != list(range(n)):
      order = tuple(perm)
  return MeshSpec(AXIS_NAMES[:n_axes], tuple(sizes), types, order)


def draw_spec(ch: Chooser, shape: Sequence[int], mesh: MeshSpec,
              axes: Optional[Sequence[str]] = None, unreduced: bool = False) -> Spec:
  """A PartitionSpec valid for `shape` on `mesh`: each of `axes` (default: all) on at most one
  dim, a dim's axes' sizes dividing it; several axes per dim in either order; `unreduced`:
  Explicit axes left over may be unreduced."""
  axes = list(mesh.names if axes is None else axes)
  dims: List[List[str]] = [[] for _ in shape]
  for axis in axes:
    t = ch.integer(0, len(shape))
    if t == 0:
      continue
    d = t - 1
    factor = math.prod(mesh.size(a) for a in dims[d]) * mesh.size(axis)
    if shape[d] % factor == 0:
      dims[d].append(axis)
  for axes_of_dim in dims:
    if len(axes_of_dim) > 1 and boolean(ch):
      axes_of_dim.reverse()
  extra: List[str] = []
  if unreduced:
    used = {a for d in dims for a in d}
    for axis in axes:
      if axis not in used and mesh.types[mesh.names.index(axis)] == "explicit" and boolean(ch):
        extra.append(axis)
  return Spec(tuple(tuple(d) for d in dims), tuple(extra))


def _divisors(n: int) -> List[int]:
  return [d for d in range(2, n) if n % d == 0]


class _Gen:
  """One program's generation: the state the op builders share."""

  def __init__(self, ch: Chooser, config: GenConfig) -> None:
    self.ch = ch
    self.cfg = config
    self.mesh = MeshSpec(("x",), (1,), ("auto",))
    self.inputs: List[Tensor] = []
    self.in_specs: List[Spec] = []
    self.ops: List[Op] = []
    self.vals: Dict[str, _Val] = {}
    self.data: List[str] = []  # float values, in creation order (operand candidates)
    self.n_ops = 0

  # --- helpers ---

  def i(self, lo: int, hi: int) -> int:
    return self.ch.integer(lo, hi)

  def pick(self, options: Sequence[Any]) -> Any:
    return choice(self.ch, options)

  @property
  def explicit(self) -> bool:
    return self.mesh.explicit

  def fresh(self) -> str:
    return f"v{len(self.ops)}"

  def shape_ok(self, shape: Sequence[int]) -> bool:
    return (len(shape) <= max(4, self.cfg.max_rank) and
            math.prod(shape) <= self.cfg.max_elements and all(s >= 1 for s in shape))

  def draw_shape(self, rank: Optional[int] = None) -> Tuple[int, ...]:
    if rank is None:
      rank = self.pick([r for r in (2, 1, 3, 4) if r <= self.cfg.max_rank] or [1])
    return tuple(self.pick(DIM_SIZES) for _ in range(rank))

  def new_input(self, shape: Sequence[int], dtype: str = "float32", bound: int = 0,
                spec: Optional[Spec] = None, force: bool = False) -> str:
    """A new argument. On an explicit mesh its spec is `spec` when given (the type the op
    wants), index arrays are replicated there."""
    name = f"x{len(self.inputs)}"
    shape = tuple(shape)
    # Drawn even when it is overridden: the same choices on Auto and Explicit meshes (so that
    # shrinking an Explicit mesh to an Auto one changes nothing else).
    s = draw_spec(self.ch, shape, self.mesh)
    if bound and self.explicit:
      s = Spec.replicated(len(shape))
    elif spec is not None and (self.explicit or force):
      s = spec
    self.inputs.append(Tensor(name, shape, dtype, bound))
    self.in_specs.append(s)
    self.vals[name] = _Val(shape, dtype, s if self.explicit else Spec.replicated(len(shape)))
    if dtype == "float32" and not bound:
      self.data.append(name)
    return name

  def add(self, kind: str, operands: Sequence[str], params: Mapping[str, Any],
          shape: Sequence[int], spec: Optional[Spec] = None, body: Optional[Body] = None,
          dtype: str = "float32") -> str:
    name = self.fresh()
    shape = tuple(shape)
    self.ops.append(Op(kind, name, tuple(operands), dict(params), shape, dtype, body))
    self.vals[name] = _Val(shape, dtype, spec if spec is not None and self.explicit
                           else Spec.replicated(len(shape)))
    self.data.append(name)
    return name

  def spec(self, name: str) -> Spec:
    return self.vals[name].spec

  def shape(self, name: str) -> Tuple[int, ...]:
    return self.vals[name].shape

  def conform(self, name: str, want: Spec) -> str:
    """On an explicit mesh: `name` resharded to `want` unless it has that type already."""
    if not self.explicit or self.spec(name) == want:
      return name
    out = self.add("reshard", [name], {"api": "reshard", "spec": want}, self.shape(name), want)
    self.data.remove(out)  # a canonicalising reshard is not an operand candidate of its own
    self.data.append(out)
    return out

  def unshard_dims(self, name: str, dims: Sequence[int]) -> str:
    s = self.spec(name)
    want = Spec(tuple(() if d in dims else s.dims[d] for d in range(len(s.dims))))
    return self.conform(name, want)

  def operand(self) -> str:
    """A float value, recent ones first."""
    k = self.i(0, min(3, len(self.data) - 1))
    return self.data[-1 - k]

  def same_shape(self, shape: Sequence[int], exclude: Sequence[str] = ()) -> List[str]:
    return [v for v in self.data if self.vals[v].shape == tuple(shape) and v not in exclude]

  def value_of_shape(self, shape: Sequence[int], want: Optional[Spec] = None,
                     exclude: Sequence[str] = ()) -> str:
    """A new input of `shape` (first option) or an existing value of that shape; on an explicit
    mesh with the type `want`."""
    candidates = self.same_shape(shape, exclude)
    k = self.i(0, len(candidates))
    if k == 0:
      return self.new_input(shape, spec=want)
    name = candidates[-k]
    return self.conform(name, want) if want is not None else name

  # --- the program ---

  def generate(self) -> Program:
    self.n_ops = self.i(self.cfg.min_ops, max(self.cfg.min_ops, self.cfg.max_ops))
    sizes = [s for s in AXIS_SIZES if s != 1] if self.cfg.avoid_xla_bugs else AXIS_SIZES
    self.mesh = draw_mesh(self.ch, self.cfg.max_devices, self.cfg.axis_types,
                          self.cfg.max_axes, self.cfg.permute_devices, axis_sizes=sizes,
                          min_devices=2)  # one device: XLA does not partition
    self.new_input(self.draw_shape())
    builders: Dict[str, Callable[[], Optional[str]]] = {
        k: getattr(self, "op_" + k) for k in KINDS}
    kinds = [k for k in self.cfg.kinds if k in builders]
    # Each op slot's choices in a span of their own (hypothesis deletes and reorders spans);
    # kind 0 leaves the slot empty, so hypothesis shrinks a program by zeroing slots.
    kinds = ["skip"] + kinds
    for _ in range(self.n_ops):
      mark = getattr(self.ch, "mark", None)
      if mark is not None:
        mark()
      span = getattr(self.ch, "span", None)
      if span is not None:
        span(lambda: self.one_op(kinds, builders))
      else:
        self.one_op(kinds, builders)
    if not self.ops:
      self.op_unary()
    used = {o for op in self.ops for o in op.operands}
    outputs = tuple(op.out for op in self.ops if op.out not in used) or (self.ops[-1].out,)
    out_specs: Optional[Tuple[Optional[Spec], ...]] = None
    if boolean(self.ch):
      out_specs = tuple(None if boolean(self.ch) else draw_spec(self.ch, self.shape(o), self.mesh)
                        for o in outputs)
    # Inputs nothing reads (a builder that gave up after drawing them) are dropped.
    read = used | set(outputs)
    keep = [k for k, t in enumerate(self.inputs) if t.name in read]
    return Program(self.mesh, tuple(self.inputs[k] for k in keep),
                   tuple(self.in_specs[k] for k in keep), tuple(self.ops), outputs, out_specs,
                   index_slack=0 if self.cfg.avoid_xla_bugs else 1)

  def one_op(self, kinds: Sequence[str], builders: Mapping[str, Callable[[], Optional[str]]]
             ) -> None:
    kind = self.pick(kinds)
    if kind == "skip":
      return
    start = len(self.ops)
    made = builders[kind]()
    if made is None:
      # Not applicable here: drop what the builder added and apply a unary op instead.
      for op in self.ops[start:]:
        self.vals.pop(op.out, None)
        if op.out in self.data:
          self.data.remove(op.out)
      del self.ops[start:]
      self.op_unary()

  # --- op builders (each returns the new value, or None when it does not apply) ---

  def op_unary(self) -> Optional[str]:
    a = self.operand()
    fn = self.pick(list(UNARY))
    return self.add("unary", [a], {"fn": fn}, self.shape(a), self.spec(a))

  def op_binary(self) -> Optional[str]:
    a = self.operand()
    fn = self.pick(BINARY)
    shape = self.shape(a)
    candidates = self.same_shape(shape)
    k = self.i(0, len(candidates) + 1)
    if k == 0:
      return self.add("binary", [a], {"fn": fn, "const": float(self.pick((2, -1, 3, 0.5)))},
                      shape, self.spec(a))
    b = self.new_input(shape, spec=self.spec(a)) if k == len(candidates) + 1 else \
        candidates[-k]
    b = self.conform(b, self.spec(a))
    return self.add("binary", [a, b], {"fn": fn}, shape, self.spec(a))

  def op_reduce(self) -> Optional[str]:
    a = self.operand()
    shape = self.shape(a)
    if not shape:
      return None
    fn = self.pick(REDUCE)
    d = self.i(0, len(shape))  # len(shape): every dim
    axes = list(range(len(shape))) if d == len(shape) else [d]
    s = self.spec(a)
    out = tuple(x for k, x in enumerate(shape) if k not in axes)
    spec = Spec(tuple(x for k, x in enumerate(s.dims) if k not in axes))
    return self.add("reduce", [a], {"fn": fn, "axes": axes}, out, spec)

  def op_transpose(self) -> Optional[str]:
    a = self.operand()
    r = len(self.shape(a))
    if r < 2:
      return None
    perm = list(reversed(range(r)))
    for k in range(r - 1):
      j = k + self.i(0, r - 1 - k)
      perm[k], perm[j] = perm[j], perm[k]
    s = self.spec(a)
    return self.add("transpose", [a], {"perm": perm}, tuple(self.shape(a)[p] for p in perm),
                    Spec(tuple(s.dims[p] for p in perm)))

  def op_reshape(self) -> Optional[str]:
    a = self.operand()
    shape = list(self.shape(a))
    r = len(shape)
    how = self.i(0, 2)
    if how == 1 and r >= 2:  # merge two neighbours
      k = self.i(0, r - 2)
      dims = [k, k + 1]
      new = shape[:k] + [shape[k] * shape[k + 1]] + shape[k + 2:]
      spec_dims = list(self.spec(a).dims[:k]) + [()] + list(self.spec(a).dims[k + 2:])
    elif how == 2 and r >= 1 and any(_divisors(x) for x in shape):
      splittable = [k for k in range(r) if _divisors(shape[k])]
      k = self.pick(splittable)
      p = self.pick(_divisors(shape[k]))
      dims = [k]
      new = shape[:k] + [p, shape[k] // p] + shape[k + 1:]
      spec_dims = list(self.spec(a).dims[:k]) + [(), ()] + list(self.spec(a).dims[k + 1:])
    else:  # flatten
      dims = list(range(r))
      new = [math.prod(shape)]
      spec_dims = [()]
    if not self.shape_ok(new):
      return None
    a = self.unshard_dims(a, dims)
    return self.add("reshape", [a], {"shape": new}, new, Spec(tuple(spec_dims)))

  def op_slice(self) -> Optional[str]:
    a = self.operand()
    shape = self.shape(a)
    if not shape:
      return None
    d = self.i(0, len(shape) - 1)
    size = shape[d]
    start = self.i(0, size - 1)
    step = 1 if self.cfg.avoid_xla_bugs else self.pick((1, 2, 3))
    stop = size - self.i(0, size - 1 - start)
    length = len(range(start, stop, step))
    a = self.unshard_dims(a, [d])
    out = shape[:d] + (length,) + shape[d + 1:]
    return self.add("slice", [a], {"dim": d, "start": start, "stop": stop, "step": step,
                                   "size": size}, out, self.spec(a))

  def op_dynamic_slice(self) -> Optional[str]:
    a = self.operand()
    shape = self.shape(a)
    if not shape:
      return None
    d = self.i(0, len(shape) - 1)
    size = shape[d]
    a = self.unshard_dims(a, [d])
    update = boolean(self.ch)  # dynamic_update_slice
    length = 1 + self.i(0, size - 1)
    # Starts past size - length are clamped (avoid_xla_bugs: none are).
    bound = size - length + 1 if self.cfg.avoid_xla_bugs else size
    start = self.new_input((), "int32", bound=bound)
    if update:
      ushape = shape[:d] + (length,) + shape[d + 1:]
      u = self.value_of_shape(ushape, want=self.spec(a), exclude=[a])
      return self.add("dynamic_update_slice", [a, u, start], {"dim": d}, shape, self.spec(a))
    out = shape[:d] + (length,) + shape[d + 1:]
    return self.add("dynamic_slice", [a, start], {"dim": d, "length": length}, out, self.spec(a))

  def op_einsum(self) -> Optional[str]:
    a = self.operand()
    shape = self.shape(a)
    r = len(shape)
    if r == 0:
      return None
    k = r - 1 - self.i(0, r - 1)  # the contracted dim (first option: the last)
    batch: Optional[int] = None
    if r >= 2 and boolean(self.ch):
      others = [x for x in range(r) if x != k]
      batch = self.pick(others)
    free = self.pick((8, 4, 2, 16, 0))  # 0: no free dim of b's own
    letters = "abcdefgh"
    a_sub = letters[:r]
    b_dims = ([batch] if batch is not None else []) + [k]
    b_sub = "".join(letters[x] for x in b_dims) + ("z" if free else "")
    out_sub = "".join(letters[x] for x in range(r) if x != k) + ("z" if free else "")
    b_shape = tuple(shape[x] for x in b_dims) + ((free,) if free else ())
    out_shape = tuple(shape[x] for x in range(r) if x != k) + ((free,) if free else ())
    if not self.shape_ok(out_shape):
      return None
    s = self.spec(a)
    # On an explicit mesh: b's batch and contracted dims as a's; its own dim keeps axes a does
    # not use; the output sharding is given (contracted axes make it ambiguous otherwise).
    out_spec = Spec.replicated(len(out_shape))
    # b's own dim: on an explicit mesh sharded by none or one axis a does not use (dividing it).
    free_axes = [x for x in self.mesh.names if x not in s.axes() and free and
                 free % self.mesh.size(x) == 0]
    k_free = self.i(0, len(free_axes))
    free_spec: Tuple[str, ...] = (free_axes[k_free - 1],) if k_free else ()
    b_want: Optional[Spec] = None
    if self.explicit:
      # b's batch and contracted dims as a's (jax wants equal batch shardings).
      b_want = Spec(tuple([s.dims[x] for x in b_dims] + ([free_spec] if free else [])))
    b = self.value_of_shape(b_shape, want=b_want)
    params: Dict[str, Any] = {"subscripts": f"{a_sub},{b_sub}->{out_sub}"}
    if self.explicit:
      # The output sharding is given: contracted sharded axes make it ambiguous otherwise.
      out_spec = Spec(tuple([s.dims[x] for x in range(r) if x != k] +
                            ([free_spec] if free else [])))
      contracted = tuple(s.dims[k])
      if contracted and self.i(0, 3) == 3:
        params["out_sharding"] = Spec(out_spec.dims, contracted)  # unreduced, then reshard
      else:
        params["out_sharding"] = out_spec
    return self.add("einsum", [a, b], params, out_shape, out_spec)

  def op_cumulative(self) -> Optional[str]:
    a = self.operand()
    shape = self.shape(a)
    if not shape:
      return None
    fn = self.pick(("cumsum", "cummax", "cummin"))
    axis = self.i(0, len(shape) - 1)
    reverse = fn != "cumsum" and boolean(self.ch)
    a = self.unshard_dims(a, [axis])
    return self.add("cumulative", [a], {"fn": fn, "axis": axis, "reverse": reverse}, shape,
                    self.spec(a))

  def op_sort(self) -> Optional[str]:
    a = self.operand()
    shape = self.shape(a)
    if not shape:
      return None
    fn = self.pick(("sort", "top_k", "argsort"))
    if fn == "top_k":
      axis = len(shape) - 1
      k = 1 + self.i(0, shape[axis] - 1)
      a = self.unshard_dims(a, [axis])
      return self.add("sort", [a], {"fn": fn, "k": k}, shape[:-1] + (k,), self.spec(a))
    axis = self.i(0, len(shape) - 1)
    a = self.unshard_dims(a, [axis])
    return self.add("sort", [a], {"fn": fn, "axis": axis}, shape, self.spec(a))

  def _indices(self, size: int, count: int, unique: bool) -> List[int]:
    if unique:
      perm = list(range(size))
      for k in range(min(count, size)):
        j = k + self.i(0, size - 1 - k)
        perm[k], perm[j] = perm[j], perm[k]
      return perm[:min(count, size)]
    return [self.i(0, size - 1) for _ in range(count)]

  def op_gather(self) -> Optional[str]:
    a = self.operand()
    shape = self.shape(a)
    if not shape:
      return None
    d = self.i(0, len(shape) - 1)
    count = 1 + self.i(0, 3)
    a = self.unshard_dims(a, [d])
    out = shape[:d] + (count,) + shape[d + 1:]
    s = self.spec(a)
    spec = Spec(s.dims[:d] + ((),) + s.dims[d + 1:])
    if not boolean(self.ch):
      return self.add("gather", [a], {"dim": d, "indices": self._indices(shape[d], count, False),
                                      "mode": None}, out, spec)
    index = self.new_input((count,), "int32", bound=shape[d])
    mode = self.pick(("clip", "fill"))
    return self.add("gather", [a, index], {"dim": d, "mode": mode}, out, spec)

  def op_scatter(self) -> Optional[str]:
    a = self.operand()
    shape = self.shape(a)
    if not shape:
      return None
    d = self.i(0, len(shape) - 1)
    op = self.pick(("add", "set"))
    count = 1 + self.i(0, min(3, shape[d] - 1))
    a = self.unshard_dims(a, [d])
    s = self.spec(a)
    operands = [a]
    params: Dict[str, Any] = {"dim": d, "op": op, "has_update": False, "has_index": False}
    if boolean(self.ch):
      ushape = shape[:d] + (count,) + shape[d + 1:]
      u = self.value_of_shape(ushape, want=s, exclude=[a])
      operands.append(u)
      params["has_update"] = True
    else:
      params["const"] = float(self.pick((1, -2, 3)))
    # `set` with repeated indices has no defined winner: only distinct constant indices.
    if op == "add" and boolean(self.ch):
      operands.append(self.new_input((count,), "int32", bound=shape[d]))
      params["has_index"] = True
      params["mode"] = "drop"
    else:
      params["indices"] = self._indices(shape[d], count, unique=(op == "set"))
      params["unique"] = op == "set" and boolean(self.ch)
    return self.add("scatter", operands, params, shape, s)

  def op_conv(self) -> Optional[str]:
    spatial = 1 + self.i(0, 1)
    rank = spatial + 2
    a = self.data[-1]
    use_last = (len(self.shape(a)) == rank and not boolean(self.ch) and
                not self.cfg.avoid_xla_bugs)
    if use_last:
      lhs = a
      n, c = self.shape(a)[:2]
      sizes = list(self.shape(a)[2:])
    else:
      n = self.pick((2, 4, 1, 8))
      c = self.pick((2, 1, 4, 3))
      sizes = [self.pick((8, 4, 6, 5, 3)) for _ in range(spatial)]
      lhs = ""
    group = self.i(0, 2)  # 0 none, 1 feature groups, 2 batch groups
    if self.cfg.avoid_xla_bugs:
      group = 0  # XLA mispartitions feature and batch groups (see GenConfig)
    o = self.pick((2, 4, 1, 3))
    fg = bg = 1
    if group == 1 and c > 1:
      fg = self.pick([g for g in range(2, c + 1) if c % g == 0])
      o = o * fg
    elif group == 2 and n > 1:
      bg = self.pick([g for g in range(2, n + 1) if n % g == 0])
      o = o * bg
    kernel = [self.pick((2, 1, 3)) for _ in range(spatial)]
    strides = [self.pick((1, 2)) for _ in range(spatial)]
    lhs_dil = [1 + self.i(0, 1) if self.i(0, 2) == 2 else 1 for _ in range(spatial)]
    rhs_dil = [1 + self.i(0, 1) if self.i(0, 2) == 2 else 1 for _ in range(spatial)]
    padding = [[self.i(0, 2), self.i(0, 2)] for _ in range(spatial)]
    out_sizes = []
    for k in range(spatial):
      w = (sizes[k] - 1) * lhs_dil[k] + 1 + padding[k][0] + padding[k][1]
      kk = (kernel[k] - 1) * rhs_dil[k] + 1
      if w < kk:
        padding[k][1] += kk - w
        w = kk
      out_sizes.append((w - kk) // strides[k] + 1)
    out_shape = (n // bg, o) + tuple(out_sizes)
    lhs_shape = (n, c) + tuple(sizes)
    if not (self.shape_ok(out_shape) and self.shape_ok(lhs_shape)):
      return None
    spec_batch: Tuple[str, ...] = ()
    if lhs:
      spec_batch = self.spec(lhs).dims[0] if bg == 1 else ()
      lhs = self.conform(lhs, Spec((spec_batch,) + ((),) * (rank - 1)))
    else:
      lhs = self.new_input(lhs_shape)
      if self.cfg.avoid_xla_bugs:  # sharded on its batch dim only
        s = self.in_specs[-1]
        self.in_specs[-1] = Spec((s.dims[0],) + ((),) * (rank - 1))
        self.vals[lhs].spec = self.in_specs[-1] if self.explicit else Spec.replicated(rank)
      spec_batch = self.spec(lhs).dims[0] if bg == 1 else ()
      lhs = self.conform(lhs, Spec((spec_batch,) + ((),) * (rank - 1)))
    rhs = self.new_input((o, c // fg) + tuple(kernel), spec=Spec.replicated(rank),
                         force=self.cfg.avoid_xla_bugs)
    rhs = self.conform(rhs, Spec.replicated(rank))
    letters = "HWD"[:spatial]
    params = {"strides": strides, "padding": padding, "lhs_dilation": lhs_dil,
              "rhs_dilation": rhs_dil,
              "dimension_numbers": ["NC" + letters, "OI" + letters, "NC" + letters],
              "feature_group_count": fg, "batch_group_count": bg}
    return self.add("conv", [lhs, rhs], params, out_shape,
                    Spec((spec_batch,) + ((),) * (rank - 1)))

  # --- bodies ---

  def _body(self, params: Sequence[Tensor], n_ops: int, extra: Sequence[str] = (),
            manual: Optional["_Manual"] = None,
            first: int = 0) -> Tuple[List[Op], List[str], Dict[str, Any]]:
    """Ops over body parameters: unary and binary ops (same shapes), and `extra` kinds
    (collectives in a shard_map body, the loop index in a fori_loop body). Returns the ops, the
    body's values in order, and per value its shape (and vma in a shard_map body)."""
    shapes: Dict[str, Tuple[int, ...]] = {p.name: p.shape for p in params}
    vma: Dict[str, frozenset] = {}
    if manual is not None:
      vma = dict(manual.vma)
    order = [p.name for p in params]
    ops: List[Op] = []
    kinds = ["unary", "binary"] + list(extra)
    for j in range(first, first + n_ops):
      name = f"b{j}"
      a = order[-1 - self.i(0, min(2, len(order) - 1))]
      kind = self.pick(kinds)
      shape = shapes[a]
      v = vma.get(a, frozenset())
      params_: Dict[str, Any] = {}
      operands = [a]
      if kind == "unary":
        params_ = {"fn": self.pick(list(UNARY))}
      elif kind == "binary":
        params_ = {"fn": self.pick(BINARY)}
        partners = [x for x in order if shapes[x] == shape]
        k = self.i(0, len(partners))
        if k == 0:
          params_["const"] = float(self.pick((2, -1, 3, 0.5)))
        else:
          b = partners[-k]
          operands.append(b)
          v = v | vma.get(b, frozenset())
      elif kind == "loop_index":
        pass
      elif manual is not None:
        axis = self.pick(manual.axes)
        n = self.mesh.size(axis)
        if kind == "psum":
          # Over axes the value varies over, or over axes it does not: jax refuses a mix.
          same = [x for x in manual.axes if x != axis and (x in v) == (axis in v)]
          axes = [axis] + [x for x in same if self.i(0, 2) == 2]
          params_ = {"axes": sorted(axes, key=manual.axes.index)}
          v = v - set(axes)
        elif kind == "all_gather":
          if not shape:
            kind, params_ = "unary", {"fn": "negative"}
          else:
            dim = self.i(0, len(shape) - 1)
            new = shape[:dim] + (shape[dim] * n,) + shape[dim + 1:]
            if math.prod(new) * manual.replication > self.cfg.max_elements:
              kind, params_ = "unary", {"fn": "negative"}
            else:
              params_ = {"axis": axis, "dim": dim}
              shape = new
              v = v | {axis}
        elif kind == "ppermute":
          shift = 1 + self.i(0, max(0, n - 2))
          params_ = {"axis": axis, "perm": [[s, (s + shift) % n] for s in range(n)]}
          v = v | {axis}
        elif kind == "all_to_all":
          splits = [d for d in range(len(shape)) if shape[d] % n == 0]
          if len(shape) < 1 or not splits:
            kind, params_ = "unary", {"fn": "negative"}
          else:
            split = self.pick(splits)
            concat = self.i(0, len(shape) - 1)
            sizes = list(shape)
            sizes[split] //= n
            sizes[concat] *= n
            params_ = {"axis": axis, "split": split, "concat": concat}
            shape = tuple(sizes)
            v = v | {axis}
        elif kind == "axis_index":
          params_ = {"axis": axis}
          v = v | {axis}
      ops.append(Op(kind, name, tuple(operands), params_, shape))
      shapes[name] = shape
      if manual is not None:
        vma[name] = frozenset(v)
      order.append(name)
    return ops, order, {"shapes": shapes, "vma": vma}

  def op_scan(self) -> Optional[str]:
    c = self.operand()
    shape = self.shape(c)
    length = self.pick((3, 2, 4))
    xs_shape = (length,) + shape
    if not self.shape_ok(xs_shape):
      return None
    matmul = len(shape) >= 1 and boolean(self.ch)
    if matmul:
      # carry @ x: a contraction in the loop body (a collective per step when it is sharded).
      m = shape[-1]
      xs_shape = (length, m, m)
      if self.explicit:
        c = self.unshard_dims(c, [len(shape) - 1])
      xs = self.value_of_shape(xs_shape, want=Spec.replicated(3), exclude=[c])
    else:
      xs = self.value_of_shape(xs_shape, want=Spec((((),) + self.spec(c).dims)), exclude=[c])
    x_shape = xs_shape[1:]
    params = [Tensor("a0", shape), Tensor("a1", x_shape)]
    n_body = 1 + self.i(0, 2)
    if matmul:
      first = Op("einsum", "b0", ("a0", "a1"), {"subscripts": "...i,ij->...j"}, shape)
      more, order, info = self._body([params[1], Tensor("b0", shape)], n_body - 1, first=1)
      ops = [first] + more
      order = ["a0"] + order
      info["shapes"]["a0"] = shape
    else:
      ops, order, info = self._body(params, n_body)
    same = [x for x in order if info["shapes"][x] == shape]
    carry = same[-1]
    y = same[-1 - self.i(0, len(same) - 1)]
    body = Body(tuple(params), tuple(ops), (carry, y))
    output = self.pick(("carry", "ys"))
    out_shape = shape if output == "carry" else (length,) + shape
    spec = self.spec(c) if output == "carry" else Spec(((),) + self.spec(c).dims)
    return self.add("scan", [c, xs], {"output": output, "reverse": boolean(self.ch)}, out_shape,
                    spec, body)

  def op_fori_loop(self) -> Optional[str]:
    c = self.operand()
    shape = self.shape(c)
    trips = self.pick((3, 2, 5))
    ops, order, info = self._body([Tensor("a0", shape)], 1 + self.i(0, 2), extra=["loop_index"])
    body = Body((Tensor("a0", shape),), tuple(ops), (order[-1],))
    return self.add("fori_loop", [c], {"trips": trips}, shape, self.spec(c), body)

  def op_grad(self) -> Optional[str]:
    p = self.operand()
    shape = self.shape(p)
    vjp = boolean(self.ch)
    other = self.value_of_shape(shape, want=self.spec(p), exclude=[p])
    if vjp:
      ops, order, _ = self._body([Tensor("a0", shape)], 1 + self.i(0, 2))
      body = Body((Tensor("a0", shape),), tuple(ops), (order[-1],))
      return self.add("vjp", [p, other], {}, shape, self.spec(p), body)
    params = [Tensor("a0", shape), Tensor("a1", shape)]
    ops, order, _ = self._body(params, 1 + self.i(0, 2))
    body = Body(tuple(params), tuple(ops), (order[-1],))
    return self.add("grad", [p, other], {}, shape, self.spec(p), body)

  def op_shard_map(self) -> Optional[str]:
    mesh = self.mesh
    axes = list(mesh.names)
    partial: List[str] = []
    if not self.explicit and len(axes) > 1 and self.i(0, 2) == 2:
      partial = [a for a in axes if boolean(self.ch)] or [axes[-1]]
      axes = partial
    n_in = 1 + self.i(0, 1)
    operands: List[str] = []
    in_specs: List[Spec] = []
    params: List[Tensor] = []
    vma: Dict[str, frozenset] = {}
    for k in range(n_in):
      v = self.operand() if k == 0 else self.value_of_shape(self.shape(operands[0]))
      spec = draw_spec(self.ch, self.shape(v), mesh, axes)
      v = self.conform(v, spec) if self.explicit else v
      operands.append(v)
      in_specs.append(spec)
      local = tuple(x // math.prod(mesh.size(a) for a in d)
                    for x, d in zip(self.shape(v), spec.dims))
      params.append(Tensor(f"a{k}", local))
      vma[f"a{k}"] = frozenset(spec.axes())
    replication = math.prod(mesh.size(a) for a in axes)
    manual = _Manual(axes, vma, replication)
    ops, order, info = self._body(params, 1 + self.i(0, 2),
                                  extra=["psum", "all_gather", "ppermute", "all_to_all",
                                         "axis_index"], manual=manual)
    result = order[-1]
    local = info["shapes"][result]
    varying = info["vma"].get(result, frozenset())
    # out_specs: every axis the result varies over (check_vma), others sometimes.
    dims: List[List[str]] = [[] for _ in local]
    for axis in axes:
      must = axis in varying
      if not must and not boolean(self.ch):
        continue
      if not local:
        if must:
          return None
        continue
      dims[self.i(0, len(local) - 1)].append(axis)
    out_spec = Spec(tuple(tuple(d) for d in dims))
    out_shape = tuple(x * math.prod(mesh.size(a) for a in d) for x, d in zip(local, dims))
    if not self.shape_ok(out_shape):
      return None
    body = Body(tuple(params), tuple(ops), (result,))
    p: Dict[str, Any] = {"in_specs": tuple(in_specs), "out_spec": out_spec,
                         "check_vma": self.i(0, 3) != 3}
    if partial:
      p["axis_names"] = partial
    return self.add("shard_map", operands, p, out_shape, out_spec, body)

  def op_reshard(self) -> Optional[str]:
    a = self.operand()
    spec = draw_spec(self.ch, self.shape(a), self.mesh)
    api = "reshard" if self.explicit else "constraint"
    return self.add("reshard", [a], {"api": api, "spec": spec}, self.shape(a), spec)


@dataclasses.dataclass
class _Manual:
  axes: List[str]
  vma: Dict[str, frozenset]
  replication: int


def generate(ch: Chooser, config: Optional[GenConfig] = None, name: str = "program",
             value_seed: int = 0) -> Program:
  """A program drawn from `ch`'s choices."""
  program = _Gen(ch, config or GenConfig()).generate()
  return dataclasses.replace(program, name=name, value_seed=value_seed)


def case(seed: Any, index: int, config: Optional[GenConfig] = None) -> Tuple[Program, List[int]]:
  """The campaign's program number `index` for `seed`, and the choices it was drawn from."""
  ch = RandomChooser(f"{seed}/{index}")
  program = generate(ch, config, name=f"s{seed}_p{index}", value_seed=index)
  return program, ch.record


def replay(offsets: Sequence[int], config: Optional[GenConfig] = None, name: str = "program",
           value_seed: int = 0) -> Tuple[Program, List[int]]:
  """The program recorded choices give (clamped; missing ones simplest), and the choices it
  used."""
  ch = ReplayChooser(offsets)
  return generate(ch, config, name=name, value_seed=value_seed), ch.record
