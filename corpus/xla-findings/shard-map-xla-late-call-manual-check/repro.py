#!/usr/bin/env python3
"""XLA's GSPMD aborts on a call with frontend_attributes={inlineable="xla_late"} inside a
partially manual region (a shard_map over some mesh axes).

jaxlib 0.12's CPU compiler splits every call marked inlineable="xla_late" into its own
HloModule (HloModuleSplitter -> _xla_multi_module_call) and runs the SPMD partitioner on it
alone. The callee's parameters carry no sharding there, so an instruction of the body with a
manual-subgroup sharding meets a (replicated) parameter operand and
SpmdPartitioningVisitor::Preprocess -> hlo_sharding_util::GetManualSubgroupSharding aborts:
  hlo_sharding_util.cc:2714] Check failed: sharding.IsManualSubgroup()
(jax 0.10.2 inlines the call and compiles the module.)

Needs nothing but `pip install jax==0.12.0.1` (or any jax to compare); run
  python repro.py        compile MODULE below (HLO -> StableHLO -> GSPMD compile, 4 CPU devices)
  python repro.py jax    the same from a plain jax program: a shard_map over one axis of a
                         2x4 mesh calling jax.jit(..., inline=jax.Inline.XLA_LATE), GSPMD
The compile runs in a subprocess. Exit 1 while XLA aborts, 0 when it compiles (and runs),
2 when it cannot run or fails otherwise.
"""
import os
import subprocess
import sys

MODULE = r'''HloModule xla_late_manual_subgroup, num_partitions=4

body (a: f32[2]) -> f32[2] {
  a = f32[2] parameter(0)
  ROOT n = f32[2] negate(a), sharding={devices=[1,2,2]<=[4] last_tile_dims={manual, replicated}}
}

ENTRY main (p: f32[4]) -> f32[4] {
  p = f32[4] parameter(0), sharding={devices=[2,2]<=[4] last_tile_dim_replicate}
  l = f32[2] custom-call(p), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,2,2]<=[4] last_tile_dims={manual, replicated}}
  c = f32[2] call(l), to_apply=body, frontend_attributes={inlineable="xla_late"}, sharding={devices=[1,2,2]<=[4] last_tile_dims={manual, replicated}}
  ROOT r = f32[4] custom-call(c), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,2]<=[4] last_tile_dim_replicate}
}
'''


def child_hlo():
  import numpy as np
  import jax
  import jax.extend
  from jax._src import xla_bridge
  from jax._src.lib import xla_client as xc
  n = 4
  module = xc.hlo.hlo_module_from_text(MODULE)  # XLA's HLO parser
  mlir = jax.extend.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
  backend = xla_bridge.get_backend("cpu")
  options = xc.CompileOptions()
  options.num_replicas = 1
  options.num_partitions = n
  build = options.executable_build_options
  build.use_spmd_partitioning = True
  build.use_shardy_partitioner = False  # GSPMD
  options.device_assignment = xc.DeviceAssignment.create(np.arange(n).reshape(1, n))
  backend.compile_and_load(mlir, xc.DeviceList(tuple(backend.local_devices()[:n])), options)
  print("compiled")


def child_jax():
  import jax
  import jax.numpy as jnp
  from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
  jax.config.update("jax_use_shardy_partitioner", False)  # GSPMD
  if not hasattr(jax, "Inline"):
    print(f"jax {jax.__version__} has no jax.Inline: nothing to test")
    sys.exit(3)
  mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2)

  def f(x):
    def body(a):
      return jax.jit(lambda a: -a, inline=jax.Inline.XLA_LATE)(a)
    return jax.shard_map(body, mesh=mesh, in_specs=P(None, "model"),
                         out_specs=P(None, "model"), axis_names={"model"})(x)

  x = jnp.arange(8 * 16, dtype=jnp.float32).reshape(8, 16)
  out = jax.jit(f, in_shardings=NamedSharding(mesh, P(None, "model")))(x)
  assert (out == -x).all()
  print("compiled and ran: result correct")


def main():
  mode = sys.argv[1] if len(sys.argv) > 1 else "hlo"
  if mode not in ("hlo", "jax"):
    print(__doc__)
    return 2
  if os.environ.get("_REPRO_CHILD"):
    child_hlo() if mode == "hlo" else child_jax()
    return 0
  import jax
  print(f"jax {jax.__version__}, mode {mode}, GSPMD, CPU")
  env = dict(os.environ, _REPRO_CHILD="1", JAX_PLATFORMS="cpu")
  env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
  p = subprocess.run([sys.executable, __file__, mode], env=env, capture_output=True, text=True)
  lines = (p.stdout + p.stderr).splitlines()
  check = [l for l in lines if "Check failed" in l]
  if p.returncode < 0 or check:
    print(f"XLA ABORTED (signal {-p.returncode}):", check[0] if check else lines[-1:] or "")
    return 1
  if p.returncode == 0:
    out = p.stdout.strip().splitlines()
    print("OK:", out[-1] if out else "")
    return 0
  print(f"could not run (exit {p.returncode}):", "\n".join(lines[-5:]))
  return 2


if __name__ == "__main__":
  sys.exit(main())
