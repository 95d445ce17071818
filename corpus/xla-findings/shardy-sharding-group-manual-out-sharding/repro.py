"""XLA/Shardy: a sharding group tying a manual_computation (shard_map) result to a value
sharded over one of its manual axes makes Shardy write that manual axis into the
manual_computation's out_shardings (IR its own verifier rejects), and XLA's SPMD partitioner
then dies with
  INTERNAL: RET_CHECK failure (xla/service/spmd/custom_call_handler.cc:...)
  ShapeUtil::Compatible( copy->shape(), MakePartitionedShape(hlo->shape(), hlo->sharding()))

Needs only `pip install jax==VERSION` (tested: 0.12.0.1 and 0.10.2, CPU).
Two checks, each in a subprocess with 4 host CPU devices:
  mlir: compiles the embedded StableHLO+sdy module exactly the way jax.jit does
        (jax.extend.backend.get_compile_options + use_shardy_partitioner + compile_and_load);
  jax:  the same thing as a plain jax program: jax.jit(in_shardings=P(None, 'model')) of a
        partially-manual jax.shard_map (axis_names={'model'}, Auto mesh axes) whose result is
        tied to the argument by shard_alike (jax.experimental.shard_alike on jax <= 0.10; on
        jax 0.12, where it was removed, a 10-line jax.extend primitive lowering to
        sdy.sharding_group, which is all shard_alike did).
If a check compiles, it runs and is compared with a single-device run.
Exit status: 1 if either check hits the RET_CHECK, 0 if both compile and match, 2 otherwise.
"""
import os
import subprocess
import sys

N = 4

MLIR = r'''
module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=2, "model"=2]>
  func.func public @main(%arg0: tensor<2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}]>}) -> tensor<2xf32> {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{?}]>] out_shardings=[<@mesh, [{?}]>] manual_axes={"model"} (%a: tensor<2xf32>) {
      sdy.return %a : tensor<2xf32>
    } : (tensor<2xf32>) -> tensor<2xf32>
    sdy.sharding_group %0 group_id=0 : tensor<2xf32>
    sdy.sharding_group %arg0 group_id=0 : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
'''

RET_CHECK = "MakePartitionedShape(hlo->shape(), hlo->sharding())"


def child_mlir():
  import numpy as np
  import jax
  import jax.extend.backend as jb
  from jax._src.interpreters import mlir
  from jax._src.lib import xla_client as xc
  from jax._src.sharding_impls import GSPMDSharding
  print(f"[mlir] jax {jax.__version__}")
  backend = jb.get_backend("cpu")
  devices = backend.devices()[:N]
  with mlir.make_ir_context():
    module = mlir.ir.Module.parse(MLIR)
    options = jb.get_compile_options(
        num_replicas=1, num_partitions=N,
        device_assignment=np.array(devices, dtype=object).reshape(1, N),
        env_options_overrides={}, fdo_profile=None, detailed_logging=False, backend=backend)
    build = options.executable_build_options
    build.use_spmd_partitioning = True
    build.use_shardy_partitioner = True
    # as jax.jit: the argument has a sharding, the result is unspecified
    build.allow_spmd_sharding_propagation_to_parameters = [False]
    build.allow_spmd_sharding_propagation_to_output = [True]
    try:
      exe = backend.compile_and_load(module, xc.DeviceList(tuple(devices)), options)
    except Exception as e:
      return report("mlir", e)
  print("[mlir] compiled")
  x = np.array([1.5, -2.0], np.float32)
  in_sh = GSPMDSharding(devices, xc.HloSharding.from_proto(exe.get_parameter_shardings()[0]))
  out_sh = GSPMDSharding(devices, xc.HloSharding.from_proto(exe.get_output_shardings()[0]))
  res = exe.execute_sharded([jax.device_put(x, in_sh)]).disassemble_into_single_device_arrays()
  got = np.asarray(jax.make_array_from_single_device_arrays(x.shape, out_sh, res[0]))
  want = np.asarray(jax.jit(lambda v: v)(jax.device_put(x, devices[0])))  # the program is identity
  return compare("mlir", got, want)


def child_jax():
  import itertools
  import numpy as np
  import jax
  import jax.numpy as jnp
  from jax.sharding import NamedSharding, PartitionSpec as P, AxisType
  print(f"[jax] jax {jax.__version__}")
  try:
    from jax.experimental.shard_alike import shard_alike
    print("[jax] shard_alike: jax.experimental.shard_alike")
  except ImportError:  # jax >= 0.11: shard_alike removed; same lowering via jax.extend
    from jax.extend.core import Primitive
    from jax.extend.mlir.dialects import sdy
    from jax.interpreters import mlir
    ids = itertools.count()
    shard_alike_p = Primitive("shard_alike")
    shard_alike_p.multiple_results = True
    shard_alike_p.def_abstract_eval(lambda x, y: (x, y))

    def lowering(ctx, x, y):
      gid = next(ids)
      sdy.sharding_group(x, gid)
      sdy.sharding_group(y, gid)
      return x, y
    mlir.register_lowering(shard_alike_p, lowering)

    def shard_alike(x, y):
      return tuple(shard_alike_p.bind(x, y))
    print("[jax] shard_alike: jax.extend primitive lowering to sdy.sharding_group")

  mesh = jax.make_mesh((2, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)

  def f(x):
    y = jax.shard_map(jnp.abs, mesh=mesh, in_specs=P(), out_specs=P(), axis_names={"model"})(x)
    y, _ = shard_alike(y, x)
    return y

  jf = jax.jit(f, in_shardings=NamedSharding(mesh, P(None, "model")))
  x = np.arange(-8, 8, dtype=np.float32).reshape(4, 4)
  try:
    compiled = jf.lower(jax.ShapeDtypeStruct(x.shape, x.dtype)).compile()
  except Exception as e:
    return report("jax", e)
  print("[jax] compiled")
  got = np.asarray(compiled(jax.device_put(x, NamedSharding(mesh, P(None, "model")))))
  want = np.asarray(jax.jit(jnp.abs)(jax.device_put(x, jax.devices()[0])))
  return compare("jax", got, want)


def report(tag, e):
  first = str(e).splitlines()[0]
  print(f"[{tag}] XLA compile failed: {first}")
  return 1 if RET_CHECK in str(e) else 2


def compare(tag, got, want):
  import numpy as np
  ok = got.shape == want.shape and np.allclose(got, want)
  print(f"[{tag}] {'matches' if ok else 'DIFFERS from'} the single-device run"
        + ("" if ok else f": got {got}, want {want}"))
  return 0 if ok else 2


def main():
  if len(sys.argv) == 3 and sys.argv[1] == "--child":
    sys.exit({"mlir": child_mlir, "jax": child_jax}[sys.argv[2]]())
  env = dict(os.environ, JAX_PLATFORMS="cpu",
             XLA_FLAGS=f"--xla_force_host_platform_device_count={N} "
                       + os.environ.get("XLA_FLAGS", ""))
  codes = {}
  for which in ("mlir", "jax"):
    p = subprocess.run([sys.executable, __file__, "--child", which], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    sys.stdout.write(p.stdout)
    codes[which] = p.returncode
  print(f"exit codes: {codes}")
  if 1 in codes.values():
    print("BUG REPRODUCED: XLA RET_CHECK in custom_call_handler.cc (SPMDShardToFullShape)")
    sys.exit(1)
  sys.exit(0 if set(codes.values()) == {0} else 2)


if __name__ == "__main__":
  main()
