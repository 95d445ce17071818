#!/usr/bin/env python3
"""The same miscompile from plain jax: jnp.take along a dim split over the middle axis of a
2x2x2 mesh, the result split over the outer and middle axes. Exits 1 while the result is
wrong (GSPMD or Shardy), 0 when both are right. Needs only `pip install jax` (tested 0.12.0.1
and 0.10.2, CPU)."""
import os
import subprocess
import sys

CODE = r'''
import os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np, jax, jax.numpy as jnp
from jax.sharding import NamedSharding, Mesh, PartitionSpec as P
jax.config.update("jax_use_shardy_partitioner", sys.argv[1] == "shardy")
mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 2, 2), ("a", "b", "c"))
x = np.arange(8, dtype=np.float32).reshape(2, 4)
idx = np.array([2, 0], dtype=np.int32)
f = jax.jit(lambda x, i: jnp.take(x, i, axis=1, mode="clip"),
            in_shardings=(NamedSharding(mesh, P(None, "b")), NamedSharding(mesh, P())),
            out_shardings=NamedSharding(mesh, P("a", "b")))
got = np.asarray(f(x, idx)); want = x[:, idx]
print(f"jax {jax.__version__} {sys.argv[1]}: got {got.tolist()} want {want.tolist()}")
sys.exit(0 if np.array_equal(got, want) else 1)
'''

wrong = False
for mode in ("gspmd", "shardy"):
  r = subprocess.run([sys.executable, "-c", CODE, mode], capture_output=True, text=True)
  print(r.stdout.strip() or r.stderr.strip().splitlines()[-1])
  if r.returncode == 1:
    wrong = True
  elif r.returncode != 0:
    sys.exit(2)
print("DIFFERENT: the sharded result is wrong" if wrong else "same: both partitioners are right")
sys.exit(1 if wrong else 0)
