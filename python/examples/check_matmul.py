"""A sharded matmul checked against XLA's GSPMD and Shardy (README's first example)."""
import os
import sys

# The checkout's package, whether or not it is installed (python/examples/ -> python/).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

import spmdcheck  # noqa: E402

mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
x, w = jnp.ones((8, 16)), jnp.ones((16, 8))

r = spmdcheck.check(lambda x, w: x @ w, x, w, mesh=mesh,
                    in_shardings=(P("data", None), P(None, "model")),
                    out_shardings=P("data", "model"), partitioner="both")
assert r.holds, r
print(r.verdict, {name: str(cost) for name, cost in r.cost.items()})
