"""Reproduces the finding with nothing but `pip install jax==0.10.2`: python repro.py [gspmd|shardy]."""
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
os.environ["JAX_PLATFORMS"] = "cpu"
import sys
import jax, jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec as P
mode = sys.argv[1] if len(sys.argv) > 1 else "gspmd"
jax.config.update("jax_use_shardy_partitioner", mode == "shardy")
mesh = jax.make_mesh((2,), ("x",), devices=jax.devices("cpu")[:2])
cols = NamedSharding(mesh, P(None, "x"))
def f(x):
  return lax.slice(x, (0, 1), (1, 2), (1, 3))  # element [0, 1]: start 1, stride 3
x = jnp.array([[10.0, 11.0]], jnp.float32)
one = jax.jit(f)(x).tolist()
sharded = jax.jit(f, in_shardings=(cols,))(x).tolist()
print("jax", jax.__version__, mode, "one device:", one, "sharded:", sharded)
sys.exit(1 if one != sharded else 0)
