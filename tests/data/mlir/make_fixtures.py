"""Writes the MLIR fixtures of this folder with the pinned jax: what
`jax.jit(f).lower(...).as_text()` prints for three small programs on a 2x4 mesh, with Shardy (the
default: sdy.mesh / sdy.sharding / sdy.manual_computation) and without (mhlo.sharding).
Usage: .venv/bin/python tests/data/mlir/make_fixtures.py (from the repository root)."""

import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))


def matmul(x, w):
  return x @ w


def shard_map_psum(x, w):
  """A shard_map over `model` only: the body constrains its product to P('data', None)."""

  def body(a, b):
    y = jax.lax.with_sharding_constraint(a @ b, P("data", None))
    return jax.lax.psum(y, "model")

  return jax.shard_map(body, mesh=mesh, in_specs=(P(None, "model"), P("model", None)),
                       out_specs=P(None, None), axis_names={"model"})(x, w)


x = jax.ShapeDtypeStruct((8, 16), jnp.float32, sharding=NamedSharding(mesh, P("data", "model")))
w = jax.ShapeDtypeStruct((16, 8), jnp.float32, sharding=NamedSharding(mesh, P("model", None)))
for shardy in (True, False):
  jax.config.update("jax_use_shardy_partitioner", shardy)
  suffix = "sdy" if shardy else "gspmd"
  for name, f in (("matmul", matmul), ("shard_map", shard_map_psum)):
    text = jax.jit(f).lower(x, w).as_text()
    with open(os.path.join(HERE, f"{name}.{suffix}.mlir"), "w") as out:
      out.write(text)

# The same modules as HLO text, as jaxlib's converter prints them (the Shardy ones in Shardy's
# round-trip form with xla.sdy.* attributes): tests/sdy_round_trip_test.cc reads them without jax.
from jax._src.lib import xla_client  # noqa: E402

for name in ("matmul", "shard_map"):
  for suffix in ("sdy", "gspmd"):
    with open(os.path.join(HERE, f"{name}.{suffix}.mlir")) as f:
      text = f.read()
    hlo = xla_client._xla.mlir.mlir_module_to_xla_computation(
        text, use_tuple_args=False, return_tuple=False).as_hlo_text()
    with open(os.path.join(HERE, f"{name}.{suffix}.hlo"), "w") as out:
      out.write(hlo)
