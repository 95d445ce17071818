#!/usr/bin/env python3
"""XLA reads a constant u32 dynamic-slice start index as signed (one CPU device, no sharding).

`jax.lax.dynamic_slice(x, (start,), (4,))` on x of 7 elements with start = 4294967295 (u32):
the start clamps to [0, 3], so the slice is x[3:7] -- which XLA computes when the start is passed
at run time, and gets wrong (x[0:4], as if the start were -1) when the start is a constant.
Exits 1 while the two disagree, 0 once they agree. Needs nothing but `pip install jax`.
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np

x = jnp.array([-1, 0, -3, 2, -1, -1, -3], jnp.int32)
start = 4294967295  # u32 max
runtime = jax.jit(lambda v, i: jax.lax.dynamic_slice(v, (i,), (4,)))(x, jnp.uint32(start))
constant = jax.jit(lambda v: jax.lax.dynamic_slice(v, (np.uint32(start),), (4,)))(x)
print(f"jax {jax.__version__}")
print(f"start passed at run time: {np.asarray(runtime)} (x[3:7] = {np.asarray(x[3:7])})")
print(f"start as a constant:      {np.asarray(constant)}")
if not np.array_equal(np.asarray(runtime), np.asarray(constant)):
  print("differ: the constant start was read as signed (-1 clamps to 0)")
  sys.exit(1)
print("same")
