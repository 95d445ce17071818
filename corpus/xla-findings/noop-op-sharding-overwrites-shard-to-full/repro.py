#!/usr/bin/env python3
"""XLA: a no-op op (identity transpose, same-shape reshape, same-type convert) that carries a
sharding and reads an SPMDShardToFullShape is dropped when XLA converts StableHLO to HLO, and its
sharding is written onto the ShardToFull, which changes how the manual shards are put together.

Needs only `pip install jax==VERSION` (tested: 0.12.0.1 and 0.10.2, CPU, 4 host devices).
Three checks, each compiled the way spmdcheck and jax.jit do (StableHLO + compile_and_load):
  gspmd-reject:     module.hlo under GSPMD: XLA fails with
                    RET_CHECK failure (.../spmd/custom_call_handler.cc:...) ShapeUtil::Compatible(
                    copy->shape(), MakePartitionedShape(hlo->shape(), hlo->sharding()))
  gspmd-miscompile: miscompile_module.hlo (same tiling, devices reversed): compiles and returns the
                    blocks of x in reversed order instead of x
  shardy-reject:    shardy_module.mlir under Shardy (jax 0.12.0.1 fails; 0.10.2 compiles)
Exit status: 1 if any check shows the bug, 0 if all compile and compute x, 2 otherwise.
"""
import os
import sys

N = 4
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           f" --xla_force_host_platform_device_count={N}").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.extend  # noqa: E402,F401
from jax._src import xla_bridge  # noqa: E402
from jax._src.lib import xla_client as xc  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

REJECT_HLO = r'''HloModule generated, num_partitions=4

ENTRY main (p: f32[8]) -> f32[8] {
  p = f32[8] parameter(0), sharding={devices=[4]<=[4]}
  to-shard = f32[2] custom-call(p), custom_call_target="SPMDFullToShardShape", sharding={manual}
  to-full = f32[8] custom-call(to-shard), custom_call_target="SPMDShardToFullShape", sharding={devices=[4]<=[4]}
  ROOT t = f32[8] transpose(to-full), dimensions={0}, sharding={replicated}
}
'''
MISCOMPILE_HLO = REJECT_HLO.replace("sharding={replicated}", "sharding={devices=[4]3,2,1,0}")
SHARDY_MLIR = r'''
module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["a"=4]>
  func.func public @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}]>}) -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}]>] out_shardings=[<@mesh, [{"a"}]>] manual_axes={"a"} (%x: tensor<2xf32>) {
      sdy.return %x : tensor<2xf32>
    } : (tensor<8xf32>) -> tensor<8xf32>
    %1 = stablehlo.transpose %0, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}]>]>} : (tensor<8xf32>) -> tensor<8xf32>
    return %1 : tensor<8xf32>
  }
}
'''
SIGN = "MakePartitionedShape(hlo->shape(), hlo->sharding())"

backend = xla_bridge.get_backend("cpu")
devices = backend.local_devices()[:N]


def to_stablehlo(hlo_text):
  module = xc.hlo.hlo_module_from_text(hlo_text)
  return jax.extend.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())


def compile_sharded(code, shardy):
  options = xc.CompileOptions()
  options.num_replicas = 1
  options.num_partitions = N
  build = options.executable_build_options
  build.use_spmd_partitioning = True
  build.use_shardy_partitioner = shardy
  options.device_assignment = xc.DeviceAssignment.create(np.arange(N).reshape(1, N))
  return backend.compile_and_load(code, xc.DeviceList(tuple(devices)), options)


def compiles(name, code, shardy):
  """True if it compiles, False on the RET_CHECK, None on any other error."""
  try:
    compile_sharded(code, shardy)
    print(f"{name}: compiles")
    return True
  except Exception as e:  # noqa: BLE001
    first = str(e).splitlines()[0]
    print(f"{name}: {first}")
    return False if SIGN in str(e) else None


def run_global(executable, x):
  """Runs on x split over the 4 devices; returns the global result XLA's output sharding says."""
  arr = jax.device_put(x, NamedSharding(Mesh(np.array(devices), ("a",)), P("a")))
  out = executable.execute_sharded([arr]).disassemble_into_single_device_arrays()[0]
  sharding = xc.HloSharding.from_proto(executable.get_output_shardings()[0])
  if sharding.is_replicated():
    return np.asarray(out[0])
  order = list(sharding.tile_assignment_devices())
  blocks = [np.asarray(out[d]) for d in order]   # block k is held by device order[k]
  return np.concatenate(blocks)


def main():
  print(f"jax {jax.__version__}, {N} CPU devices")
  if len(devices) < N:
    print(f"needs {N} CPU devices")
    return 2
  results = []
  results.append(compiles("gspmd-reject", to_stablehlo(REJECT_HLO), False))
  x = np.arange(8, dtype=np.float32)
  try:
    got = run_global(compile_sharded(to_stablehlo(MISCOMPILE_HLO), False), x)
    ok = np.array_equal(got, x)
    print(f"gspmd-miscompile: expected {x.tolist()}, got {got.tolist()}"
          f"{'' if ok else '  <- WRONG'}")
    results.append(ok)
  except Exception as e:  # noqa: BLE001
    print(f"gspmd-miscompile: {str(e).splitlines()[0]}")
    results.append(None)
  results.append(compiles("shardy-reject", SHARDY_MLIR, True))
  if any(r is False for r in results):
    print("BUG: the no-op op's sharding replaced the ShardToFull's")
    return 1
  if any(r is None for r in results):
    return 2
  print("fixed: every check compiles and computes x")
  return 0


if __name__ == "__main__":
  sys.exit(main())
