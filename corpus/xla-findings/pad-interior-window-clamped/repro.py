"""Reproduces the finding with nothing but `pip install jax==0.10.2` (also wrong with 0.9.2):
python repro.py [gspmd|shardy] [N]: lax.pad of N elements (default 7) with 2 zeros between."""
import os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
os.environ["JAX_PLATFORMS"] = "cpu"
import jax, jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec as P
mode = sys.argv[1] if len(sys.argv) > 1 else "gspmd"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 7
jax.config.update("jax_use_shardy_partitioner", mode == "shardy")
mesh = jax.make_mesh((2,), ("x",), devices=jax.devices("cpu")[:2],
                     axis_types=(jax.sharding.AxisType.Auto,))
def f(x):
  y = lax.pad(x, 0.0, [(0, 0, 2)])  # x[i] at 3i, zeros between
  return lax.with_sharding_constraint(y, NamedSharding(mesh, P("x")))
x = jnp.arange(1.0, n + 1.0, dtype=jnp.float32)
import numpy as np
expected = np.zeros(3 * n - 2, np.float32); expected[::3] = np.asarray(x)
one = expected.tolist()  # what lax.pad means
print("jax", jax.__version__, mode, "expected (NumPy):", one, flush=True)
sharded = jax.jit(f, out_shardings=NamedSharding(mesh, P()))(x).tolist()
print("sharded:", sharded)
sys.exit(1 if one != sharded else 0)
