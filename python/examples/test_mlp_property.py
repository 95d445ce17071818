"""A user's MLP, property-tested with spmdcheck: for many meshes (1D and 2D, different axis names
and sizes up to 8 devices, shuffled device orders) and ways to shard it (data parallel, tensor
parallel, FSDP-like, data + tensor parallel, anything), XLA partitions its training step
correctly: every device computes its shard of what one device computes.

Copy this file next to your model's tests and replace the model. It needs `pip install
spmdcheck hypothesis pytest` and the spmdcheck binary on PATH (or SPMDCHECK_BINARY); the
package's pytest plugin gives jax 8 CPU devices (`--spmdcheck-devices N` for another count) and
the `spmdcheck_mesh` / `spmdcheck_devices` fixtures, and skips these tests when the binary is
missing. The examples are derandomized (the same ones on every run, as CI wants);
SPMDCHECK_HYPOTHESIS_EXAMPLES=200 runs 200 random ones instead.

The strategies (meshes, sharding schemes) are written here; they only use hypothesis.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from hypothesis import HealthCheck, example, given, settings, strategies as st
from jax.sharding import PartitionSpec as P

import spmdcheck

# ---------------------------------------------------------------------------------------------
# The model: a 3-layer MLP, params as a pytree, a loss and a training step with jax.grad.

SIZES = (16, 32, 32, 8)  # input, hidden, hidden, output
BATCH = 16
LEARNING_RATE = 0.1

Params = dict[str, list[dict[str, Any]]]


def param_shapes() -> Params:
  """The params' shapes: spmdcheck only needs shapes and dtypes (it draws its own inputs)."""
  return {"layers": [{"w": jax.ShapeDtypeStruct((a, b), jnp.float32),
                      "b": jax.ShapeDtypeStruct((b,), jnp.float32)}
                     for a, b in zip(SIZES, SIZES[1:])]}


def batch_shapes() -> tuple[jax.ShapeDtypeStruct, jax.ShapeDtypeStruct]:
  return (jax.ShapeDtypeStruct((BATCH, SIZES[0]), jnp.float32),
          jax.ShapeDtypeStruct((BATCH, SIZES[-1]), jnp.float32))


def mlp(params: Params, x: jax.Array) -> jax.Array:
  *hidden, last = params["layers"]
  for layer in hidden:
    x = jax.nn.relu(x @ layer["w"] + layer["b"])
  return x @ last["w"] + last["b"]


def loss(params: Params, batch: tuple[jax.Array, jax.Array]) -> jax.Array:
  x, y = batch
  return jnp.mean((mlp(params, x) - y) ** 2)


def train_step(params: Params,
               batch: tuple[jax.Array, jax.Array]) -> tuple[Params, jax.Array]:
  value, grads = jax.value_and_grad(loss)(params, batch)
  new_params = jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)
  return new_params, value


# ---------------------------------------------------------------------------------------------
# Strategies: a mesh (axis names and sizes, device order) and a way to shard params and batch.

AXIS_NAMES = ("data", "model", "fsdp", "x", "y", "replica")


@dataclasses.dataclass(frozen=True)
class Case:
  """One drawn setting; pure data, so that hypothesis prints and shrinks it."""
  axes: tuple[tuple[str, int], ...]        # the mesh: (name, size) per axis
  device_order: tuple[int, ...] | None     # a permutation of the mesh's devices, or in order
  scheme: str                              # data, tensor, fsdp, data+tensor, any
  layer_specs: tuple[tuple[P, P], ...]     # (w, b) per layer
  batch_spec: P                            # x and y: split over their batch dim
  pin_outputs: bool                        # out_shardings = in_shardings (else XLA chooses)
  partitioner: str                         # shardy (jax's default) or gspmd


@st.composite
def meshes(draw: st.DrawFn) -> tuple[tuple[str, int], ...]:
  """1 or 2 axes of distinct names, sizes 1, 2, 4 or 8, 2 to 8 devices in all."""
  shape = draw(st.sampled_from([(2,), (4,), (8,), (2, 2), (2, 4), (4, 2), (1, 8), (4, 1)]))
  names = draw(st.permutations(AXIS_NAMES))[:len(shape)]
  return tuple(zip(names, shape))


Axis = str | tuple[str, ...] | None
SCHEMES = ("data", "tensor", "fsdp", "data+tensor", "any")


def scheme_specs(scheme: str, names: list[str]) -> tuple[tuple[P, P], ...]:
  """(w, b) specs per layer of the fixed schemes."""
  n_layers = len(SIZES) - 1
  every: Axis = names[0] if len(names) == 1 else tuple(names)
  if scheme == "data":                       # params replicated
    return tuple((P(), P()) for _ in range(n_layers))
  if scheme == "fsdp":                       # params split by rows over every axis
    return tuple((P(every, None), P(every)) for _ in range(n_layers))
  assert scheme in ("tensor", "data+tensor"), scheme
  model = names[-1]                          # Megatron: column-, then row-parallel layers
  return tuple((P(None, model), P(model)) if i % 2 == 0 else (P(model, None), P())
               for i in range(n_layers))


def batch_axis(scheme: str, names: list[str]) -> Axis:
  """The batch dim's axes for the fixed schemes (tensor parallel: replicated batch)."""
  if scheme in ("data", "fsdp"):
    return names[0] if len(names) == 1 else tuple(names)
  return names[0] if scheme == "data+tensor" else None


@st.composite
def any_specs(draw: st.DrawFn, names: list[str]) -> tuple[tuple[P, P], ...]:
  """Each dim of each param on no axis or any axis (an axis at most once per spec)."""
  specs = []
  for _ in range(len(SIZES) - 1):
    w0 = draw(st.sampled_from([None, *names]))
    w1 = draw(st.sampled_from([None, *(a for a in names if a != w0)]))
    specs.append((P(w0, w1), P(draw(st.sampled_from([None, *names])))))
  return tuple(specs)


@st.composite
def cases(draw: st.DrawFn) -> Case:
  axes = draw(meshes())
  names = [name for name, _ in axes]
  devices = 1
  for _, size in axes:
    devices *= size
  order = draw(st.none() | st.permutations(range(devices)).map(tuple))
  scheme = draw(st.sampled_from([s for s in SCHEMES if s != "data+tensor" or len(names) == 2]))
  if scheme == "any":
    layer_specs = draw(any_specs(names))
    batch: Axis = draw(st.sampled_from([None, *names]))
  else:
    layer_specs, batch = scheme_specs(scheme, names), batch_axis(scheme, names)
  return Case(axes=axes, device_order=order, scheme=scheme, layer_specs=layer_specs,
              batch_spec=P(batch, None), pin_outputs=draw(st.booleans()),
              partitioner=draw(st.sampled_from(["shardy", "gspmd"])))


def param_specs(case: Case) -> Params:
  return {"layers": [{"w": w, "b": b} for w, b in case.layer_specs]}


# ---------------------------------------------------------------------------------------------
# The property.

EXAMPLES = int(os.environ.get("SPMDCHECK_HYPOTHESIS_EXAMPLES", "16"))
RANDOM = "SPMDCHECK_HYPOTHESIS_EXAMPLES" in os.environ


def data_and_tensor_parallel(partitioner: str) -> Case:
  """Always checked, whatever hypothesis draws: the usual 2D setting."""
  names = ["data", "model"]
  return Case(axes=(("data", 2), ("model", 4)), device_order=None, scheme="data+tensor",
              layer_specs=scheme_specs("data+tensor", names),
              batch_spec=P(batch_axis("data+tensor", names), None), pin_outputs=True,
              partitioner=partitioner)


@settings(max_examples=EXAMPLES, derandomize=not RANDOM, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow], print_blob=RANDOM)
@given(case=cases())
@example(case=data_and_tensor_parallel("shardy"))
@example(case=data_and_tensor_parallel("gspmd"))
def test_train_step_partitions_correctly(case: Case, spmdcheck_mesh: Callable[..., Any],
                                         spmdcheck_devices: list[Any]) -> None:
  axes = dict(case.axes)
  if case.device_order is None:
    mesh = spmdcheck_mesh(axes)
  else:
    mesh = spmdcheck.cpu_mesh(axes, devices=[spmdcheck_devices[i] for i in case.device_order])
  in_shardings = (param_specs(case), (case.batch_spec, case.batch_spec))
  out_shardings = (param_specs(case), P()) if case.pin_outputs else None
  spmdcheck.assert_partitions_correctly(
      train_step, param_shapes(), batch_shapes(), mesh=mesh, in_shardings=in_shardings,
      out_shardings=out_shardings, partitioner=case.partitioner)
