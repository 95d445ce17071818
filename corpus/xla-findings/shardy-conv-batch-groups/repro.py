"""Compiles module.shardy.mlir (StableHLO with Shardy shardings) with XLA's Shardy partitioner
for 8 CPU devices and once for one device, runs both on the same integer inputs, and compares.
Needs nothing but `pip install jax==0.10.2`."""
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"
import numpy as np
import jax
from jax._src import xla_bridge
from jax._src.lib import xla_client as xc
from jax._src.sharding_impls import GSPMDSharding

here = os.path.dirname(os.path.abspath(__file__))
text = open(os.path.join(here, "module.shardy.mlir")).read()
backend = xla_bridge.get_backend("cpu")
devices = backend.local_devices()


def compile_for(n, spmd):
  options = xc.CompileOptions()
  options.num_partitions = n
  build = options.executable_build_options
  build.use_spmd_partitioning = spmd
  build.use_shardy_partitioner = spmd
  options.device_assignment = xc.DeviceAssignment.create(np.arange(n).reshape(1, n))
  return backend.compile_and_load(text, xc.DeviceList(tuple(devices[:n])), options)


rng = np.random.default_rng(0)  # small integers: every sum exact
lhs = rng.integers(-3, 4, (2, 9, 16)).astype(np.float32)
rhs = rng.integers(-3, 4, (2, 9, 16)).astype(np.float32)

single = compile_for(1, False)
args = [jax.device_put(a, devices[0]) for a in (lhs, rhs)]
expected = np.asarray(single.execute_sharded([jax.make_array_from_single_device_arrays(
    a.shape, GSPMDSharding((devices[0],), xc.HloSharding.replicate()), [a]) for a in args]
).disassemble_into_single_device_arrays()[0][0])

sharded = compile_for(8, True)
out_sharding = xc.HloSharding.from_proto(sharded.get_output_shardings()[0])
replicated = GSPMDSharding(tuple(devices[:8]), xc.HloSharding.replicate())
inputs = [jax.make_array_from_single_device_arrays(a.shape, replicated,
                                                   [jax.device_put(a, d) for d in devices[:8]])
          for a in (lhs, rhs)]
shards = sharded.execute_sharded(inputs).disassemble_into_single_device_arrays()[0]
# Assemble the global result the way jax does, from XLA's own output sharding.
result = np.asarray(jax.make_array_from_single_device_arrays(
    expected.shape, GSPMDSharding(tuple(devices[:8]), out_sharding), shards))
print("jax", jax.__version__, "output sharding", out_sharding)
print("max |sharded - one device| =", float(np.max(np.abs(result - expected))))
sys.exit(1 if not np.array_equal(result, expected) else 0)
