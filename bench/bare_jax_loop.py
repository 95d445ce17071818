"""The limit for an XLA campaign's speed: a bare jax loop over the same modules.

For each HLO module file (the campaign's `--save-modules` output) it does what a campaign case
cannot do without, and nothing else: the HLO text to StableHLO (the only way in for HLO text),
XLA's SPMD-partitioned compile (GSPMD) and its one-device compile, with the options the
spmdcheck worker uses, then one execution of each on random inputs, results fetched to the host.
An XLA CHECK failure kills the process: as the campaign restarts its worker, the loop restarts
its child process (jax imported again) at the next module and counts a crash. It prints one
JSON line: modules, seconds (wall, every jax import included, as the campaign's worker starts
are), cases_per_second, compiled, rejected, crashed and executed counts, and the seconds inside
compile and execute.
  bare_jax_loop.py DIR [--devices N]
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time


def shard_shape(shape, sharding):
  """A device's local shape under an HloSharding (ceil division: uneven shards are padded)."""
  if sharding.is_replicated() or sharding.is_maximal() or sharding.is_manual():
    return tuple(shape)
  tiles = list(sharding.tile_assignment_dimensions())[:len(shape)]
  return tuple(-(-d // t) for d, t in zip(shape, tiles))


def case_files(directory):
  return sorted(glob.glob(os.path.join(directory, "case-*.hlo")),
                key=lambda f: int(re.search(r"case-(\d+)", f).group(1)))


def child(files, devices_wanted) -> None:
  """Runs the modules in order; after each prints `done` and the counts so far (a JSON line)."""
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                             f" --xla_force_host_platform_device_count={devices_wanted}").strip()
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  import jax
  import jax.extend  # noqa: F401
  import numpy as np
  from jax._src import array as jax_array
  from jax._src import core as jax_core
  from jax._src import xla_bridge
  from jax._src.interpreters import mlir
  from jax._src.lib import xla_client as xc
  from jax._src.sharding_impls import GSPMDSharding
  jax.config.update("jax_enable_x64", True)
  backend = xla_bridge.get_backend("cpu")
  devices = backend.local_devices()
  rng = np.random.default_rng(1)
  counts = {"compiled": 0, "rejected": 0, "executed": 0, "execute_failed": 0}
  inside = {"compile": 0.0, "execute": 0.0}

  def compile_one(bytecode, n, spmd):
    options = xc.CompileOptions()
    options.num_replicas = 1
    options.num_partitions = n
    build = options.executable_build_options
    build.use_spmd_partitioning = spmd
    build.use_shardy_partitioner = False
    options.device_assignment = xc.DeviceAssignment.create(np.arange(n).reshape(1, n))
    build.debug_options.xla_backend_optimization_level = 0
    build.debug_options.xla_llvm_disable_expensive_passes = True
    t0 = time.monotonic()
    try:
      return backend.compile_and_load(bytecode, xc.DeviceList(tuple(devices[:n])), options)
    finally:
      inside["compile"] += time.monotonic() - t0

  def run(executable, shapes, n):
    used = executable.local_devices()
    try:
      shardings = executable.get_parameter_shardings()
    except Exception:
      shardings = None
    arrays = []
    for index, shape in enumerate(shapes):
      dims = tuple(shape.dimensions())
      sharding = (xc.HloSharding.from_proto(shardings[index]) if shardings is not None
                  else xc.HloSharding.replicate())
      local = shard_shape(dims, sharding)
      value = rng.integers(-3, 4, size=local).astype(shape.numpy_dtype())
      buffers = [jax.device_put(value, d) for d in used]
      aval = jax_core.ShapedArray(dims, value.dtype)
      arrays.append(jax_array.ArrayImpl(aval, GSPMDSharding(used, sharding), buffers,
                                        committed=True, _skip_checks=True))
    t0 = time.monotonic()
    try:
      outputs = executable.execute_sharded(arrays).disassemble_into_single_device_arrays()
      return [[np.asarray(a) for a in per_device] for per_device in outputs]
    finally:
      inside["execute"] += time.monotonic() - t0

  for path in files:
    with open(path) as f:
      text = f.read()
    match = re.search(r"num_partitions=(\d+)", text.split("\n", 1)[0])
    n = int(match.group(1)) if match else 1
    try:
      module = xc.hlo.hlo_module_from_text(text)
      bytecode = jax.extend.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
      with mlir.make_ir_context():
        bytecode = mlir.module_to_bytecode(mlir.ir.Module.parse(bytecode))
      shapes = xc.XlaComputation(
          module.as_serialized_hlo_module_proto()).program_shape().parameter_shapes()
      sharded = compile_one(bytecode, n, True)
      single = compile_one(bytecode, 1, False)
    except Exception:
      counts["rejected"] += 1
      sharded = None
    if sharded is not None:
      counts["compiled"] += 1
      try:
        run(single, shapes, 1)
        run(sharded, shapes, n)
        counts["executed"] += 1
      except Exception:
        counts["execute_failed"] += 1
    print(json.dumps({"done": path, **counts, "compile_seconds": inside["compile"],
                      "execute_seconds": inside["execute"]}), flush=True)


def main() -> int:
  parser = argparse.ArgumentParser()
  parser.add_argument("dir")
  parser.add_argument("--devices", type=int, default=8)
  parser.add_argument("--child-from", type=int, default=None, help=argparse.SUPPRESS)
  args = parser.parse_args()
  files = case_files(args.dir)
  if args.child_from is not None:
    child(files[args.child_from:], args.devices)
    return 0
  if not files:
    print(f"bare_jax_loop: no case-*.hlo in {args.dir}", file=sys.stderr)
    return 2
  start = time.monotonic()
  totals = {"compiled": 0, "rejected": 0, "crashed": 0, "executed": 0, "execute_failed": 0,
            "compile_seconds": 0.0, "execute_seconds": 0.0}
  next_index = 0
  while next_index < len(files):
    process = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), args.dir, "--devices", str(args.devices),
         "--child-from", str(next_index)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    last = None
    for line in process.stdout:
      if line.startswith("{"):
        last = json.loads(line)
        next_index += 1
    process.wait()
    if last is not None:
      for key in totals:
        totals[key] += last.get(key, 0)
    if process.returncode != 0:  # an XLA CHECK failure: that module crashed, go on after it
      totals["crashed"] += 1
      next_index += 1
  seconds = time.monotonic() - start
  print(json.dumps({"modules": len(files), "seconds": seconds,
                    "cases_per_second": len(files) / seconds, **totals}))
  return 0


if __name__ == "__main__":
  sys.exit(main())
