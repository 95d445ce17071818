"""Reproduces the finding with nothing but `pip install jax==0.10.2` (CPU, 2 host devices):
python repro.py [gspmd|shardy] (default gspmd). Exits 1 while the sharded result differs from
the one-device result (the bug is there), 0 when they agree (fixed)."""
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
os.environ["JAX_PLATFORMS"] = "cpu"
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec as P

mode = sys.argv[1] if len(sys.argv) > 1 else "gspmd"
jax.config.update("jax_use_shardy_partitioner", mode == "shardy")
mesh = jax.make_mesh((2,), ("x",), devices=jax.devices("cpu")[:2])
tiled = NamedSharding(mesh, P("x"))


def f(big, upd):
  return lax.dynamic_update_slice(big, upd, [jnp.int32(192)])  # clamped to 8 - 2 = 6


big = jnp.arange(10, 18, dtype=jnp.float32)
upd = jnp.array([100, 101], jnp.float32)
one_device = jax.jit(f)(big, upd)
sharded = jax.jit(f, in_shardings=(tiled, tiled), out_shardings=tiled)(big, upd)
print("jax", jax.__version__, mode)
print("one device:", one_device.tolist())
print("sharded:   ", sharded.tolist())
wrong = one_device.tolist() != sharded.tolist()
print("MISCOMPILE" if wrong else "agree")
sys.exit(1 if wrong else 0)
