"""The seed program of the XLA report (shared/cases/seed-scatter) as a JAX function with the
seed's shardings, on 64 CPU devices, checked against XLA's GSPMD."""
import os
import sys

# The checkout's package, whether or not it is installed (python/examples/ -> python/).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=64")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

import spmdcheck  # noqa: E402

# Mesh data=2, pipeline=4, model=8; device id = 32*data + 8*pipeline + model.
mesh = Mesh(np.array(jax.devices()[:64]).reshape(2, 4, 8), ("data", "pipeline", "model"))


def seed(x):
  stage0 = x[:, 0:1]                  # the slice of pipeline stage 0
  y = stage0.reshape(3, 2, 16, 4)     # reshape.1062
  y = jnp.transpose(y, (1, 0, 2, 3))  # transpose.9599
  return y.reshape(6, 16, 4)          # reshape.9600


x = jax.ShapeDtypeStruct((3, 4, 2, 16, 4), jnp.bfloat16)
r = spmdcheck.check(seed, x, mesh=mesh, in_shardings=P(None, "pipeline", "data", "model", None),
                    out_shardings=P("data", None, None), partitioner="gspmd")
assert r.holds, r
print(r.verdict, r.cost)
for finding in r.findings:
  print(finding.status, finding.rule, finding.cost_before.max_recv_bytes, "->",
        finding.cost_after.max_recv_bytes, "bytes received per device")
