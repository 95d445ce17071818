#!/usr/bin/env python3
"""XLA's GSPMD partitioning of module generated over 8 devices, against one device

Written by spmdcheck (spmdcheck repro module.hlo --jax --partitioner xla -o repro.py).
Needs nothing but `pip install jax==0.12.0.1`; run `python repro.py`.
Compiles the global module for one CPU device and, sharded over 8 CPU devices with
XLA's GSPMD partitioner, runs both on the inputs below, prints both results
and exits 1 when they differ (0 when they agree, 2 when it cannot run). A crash of XLA's
compiler ends the process with XLA's message.
"""
N = 8
MODE = "gspmd"
PINNED_JAX = "0.12.0.1"
PADDING = "zeros"
FOUND = "see `spmdcheck check module.hlo --seed 1 --partitioner xla`"
GLOBAL_HLO = r'''HloModule generated, num_partitions=8

ENTRY main (p: f32[2,4]) -> f32[2,2] {
  p = f32[2,4] parameter(0), sharding={devices=[1,2,4]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}
  i = s32[2,1] constant({{2}, {0}})
  ROOT g = f32[2,2] gather(p, i), offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={2,1}, sharding={devices=[2,2,2]<=[8] last_tile_dim_replicate}
}
'''
SHARDED_TEXT = r''''''
PARAMETER_SHARDINGS = []
OUTPUT_SHARDINGS = []
# input 0: f32[2,4] {{-3, 1, -2, -1}, {-1, 0, -2, -1}}
INPUTS = [{"data":"AABAwAAAgD8AAADAAACAvwAAgL8AAAAAAAAAwAAAgL8=","dtype":"f32","shape":[2,4]}]

# The body of every repro.py that `spmdcheck repro` writes (embedded in the binary at build
# time). The lines spmdcheck writes above it define: N (devices), MODE ("gspmd", "shardy" or
# "partitioned"), PINNED_JAX, GLOBAL_HLO (the global module, HLO text), SHARDED_TEXT (shardy:
# the StableHLO module with Shardy shardings that XLA compiles; partitioned: the per-device
# program another partitioner wrote; gspmd: empty), PARAMETER_SHARDINGS and OUTPUT_SHARDINGS
# (partitioned: the shardings it was judged with; else empty: XLA's own are used), INPUTS
# (the global inputs that showed the difference), PADDING ("zeros" or "poison": what fills the
# padding of uneven input shards) and FOUND (what spmdcheck saw).
import base64
import json
import os
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           f" --xla_force_host_platform_device_count={N}").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402  (after XLA_FLAGS)
import jax  # noqa: E402
import jax.extend  # noqa: E402,F401
import ml_dtypes  # noqa: E402
from jax._src import array as jax_array  # noqa: E402
from jax._src import core as jax_core  # noqa: E402
from jax._src import xla_bridge  # noqa: E402
from jax._src.lib import xla_client as xc  # noqa: E402
from jax._src.sharding_impls import GSPMDSharding  # noqa: E402

# 64-bit inputs stay 64-bit (jax would pass s64/u64/f64 arrays as 32-bit buffers).
jax.config.update("jax_enable_x64", True)

DTYPES = {
    "pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "c64": np.complex64,
    "c128": np.complex128, "bf16": ml_dtypes.bfloat16, "f8e4m3fn": ml_dtypes.float8_e4m3fn,
    "f8e5m2": ml_dtypes.float8_e5m2, "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4,
}


def decode(value):
  """An array as spmdcheck wrote it: element type, shape, row-major little-endian bytes."""
  dtype = np.dtype(DTYPES[value["dtype"]])
  data = base64.b64decode(value["data"])
  return np.frombuffer(data, dtype=dtype).reshape(value["shape"]).copy()


def to_stablehlo(hlo_text):
  module = xc.hlo.hlo_module_from_text(hlo_text)
  return jax.extend.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())


backend = xla_bridge.get_backend("cpu")
devices = backend.local_devices()[:N]


def compile_module(computation, num_partitions, spmd, shardy):
  options = xc.CompileOptions()
  options.num_replicas = 1
  options.num_partitions = num_partitions
  build = options.executable_build_options
  build.use_spmd_partitioning = spmd
  build.use_shardy_partitioner = shardy
  options.device_assignment = xc.DeviceAssignment.create(
      np.arange(num_partitions).reshape(1, num_partitions))
  # As spmdcheck compiled it: the passes up to and after the partitioner all run; only LLVM's
  # code generation is cheaper.
  build.debug_options.xla_backend_optimization_level = 0
  build.debug_options.xla_llvm_disable_expensive_passes = True
  return backend.compile_and_load(computation, xc.DeviceList(tuple(devices[:num_partitions])),
                                  options)


def sharding_from_text(text):
  return xc.HloSharding.from_string(text)


def leaves(sharding, count):
  if sharding.tuple_elements():
    return list(sharding.tuple_elements())
  return [sharding] * count


def tiles(sharding, shape):
  """Per device: (the slices of the global array it holds, its local shape, whether its value
  counts). Uneven dimensions are padded to ceil(size / tiles), as XLA pads them."""
  if sharding.is_manual():
    raise SystemExit("repro: manual shardings are not supported by this script")
  if sharding.is_replicated():
    return [(tuple(slice(0, s) for s in shape), tuple(shape), True) for _ in range(N)]
  if sharding.is_maximal():
    owner = sharding.tile_assignment_devices()[0]
    return [(tuple(slice(0, s) for s in shape), tuple(shape), d == owner) for d in range(N)]
  dims = list(sharding.tile_assignment_dimensions())
  order = list(sharding.tile_assignment_devices())
  rank = len(shape)
  per_tile = [-(-shape[k] // dims[k]) for k in range(rank)]
  result = [None] * N
  for position, device in enumerate(order):
    index = np.unravel_index(position, dims)[:rank]
    starts = [int(index[k]) * per_tile[k] for k in range(rank)]
    limits = [min(starts[k] + per_tile[k], shape[k]) for k in range(rank)]
    result[device] = (tuple(slice(starts[k], max(starts[k], limits[k])) for k in range(rank)),
                      tuple(per_tile), True)
  return result


def padding_value(dtype):
  """What fills the padding of uneven input shards: zeros for XLA's own partitionings (what
  jax passes), or, for another partitioner's program, spmdcheck's poison (NaN, true, 0x5A...),
  since a partitioned program must not depend on padding."""
  if PADDING == "zeros":
    return np.zeros((), dtype)
  if dtype.kind in "fc":
    return np.array(np.nan, dtype)
  if dtype == np.bool_:
    return np.array(True)
  return np.array(0x5A5A5A5A5A5A5A5A, np.uint64).astype(dtype)


def shards(array, sharding):
  out = []
  for region, local_shape, _ in tiles(sharding, array.shape):
    local = np.full(local_shape, padding_value(array.dtype), array.dtype)
    part = array[region]
    local[tuple(slice(0, s) for s in part.shape)] = part
    out.append(local)
  return out


def run(executable, per_parameter, shardings, global_shapes):
  """Runs with per_parameter[i][d] on device d; returns outputs[leaf][device] as numpy."""
  count = len(per_parameter[0]) if per_parameter else len(executable.local_devices())
  local_devices = executable.local_devices()[:count]
  arrays = []
  for values, sharding, shape in zip(per_parameter, shardings, global_shapes):
    buffers = [jax.device_put(v, d) for v, d in zip(values, local_devices)]
    aval = jax_core.ShapedArray(tuple(shape), values[0].dtype)
    arrays.append(jax_array.ArrayImpl(aval, GSPMDSharding(tuple(local_devices), sharding),
                                      buffers, committed=True, _skip_checks=True))
  results = executable.execute_sharded(arrays).disassemble_into_single_device_arrays()
  return [[np.asarray(a) for a in per_device] for per_device in results]


def same(expected, actual):
  if expected.shape != actual.shape:
    return False
  if np.issubdtype(expected.dtype, np.integer) or expected.dtype == np.bool_:
    return np.array_equal(expected, actual)
  e = np.asarray(expected, np.float64 if not np.iscomplexobj(expected) else np.complex128)
  a = np.asarray(actual, e.dtype)
  eps = float(np.finfo(expected.dtype).eps) if expected.dtype.kind in "fc" else 2.0**-23
  return bool(np.all((e == a) | (np.isnan(e) & np.isnan(a)) |
                     (np.abs(e - a) <= 64 * eps * (1 + np.abs(e)))))


def main():
  print(f"jax {jax.__version__} (repro written for jax {PINNED_JAX}), {N} CPU devices, "
        f"mode {MODE}")
  if jax.__version__ != PINNED_JAX:
    print(f"note: this is not jax {PINNED_JAX}: the bug may be fixed, or XLA may choose other "
          "shardings")
  if len(jax.devices("cpu")) < N:
    print(f"repro: needs {N} CPU devices, jax has {len(jax.devices('cpu'))}")
    return 2
  inputs = [decode(v) for v in INPUTS]
  global_shapes = [a.shape for a in inputs]
  print("compiling the global module for one device")
  single = compile_module(to_stablehlo(GLOBAL_HLO), 1, False, False)
  one_device = [per_device[0] for per_device in run(
      single, [[a] for a in inputs], [xc.HloSharding.replicate()] * len(inputs), global_shapes)]
  if MODE in ("gspmd", "shardy"):
    print(f"compiling it with XLA's {'Shardy' if MODE == 'shardy' else 'GSPMD'} partitioner for "
          f"{N} devices")
    text = SHARDED_TEXT if MODE == "shardy" else to_stablehlo(GLOBAL_HLO)
    sharded = compile_module(text, N, True, MODE == "shardy")
    parameter_shardings = [xc.HloSharding.from_proto(p)
                           for p in sharded.get_parameter_shardings()]
    output_shardings = [xc.HloSharding.from_proto(p) for p in sharded.get_output_shardings()]
  else:
    print(f"compiling the per-device program for {N} devices (all manual: XLA partitions nothing)")
    # Every value manual: XLA partitions nothing (see AsManualProgram in check/repro_script.cc).
    sharded = compile_module(to_stablehlo(SHARDED_TEXT), N, True, False)
    parameter_shardings = [sharding_from_text(s) for s in PARAMETER_SHARDINGS]
    output_shardings = []
    for s in OUTPUT_SHARDINGS:
      output_shardings.extend(leaves(sharding_from_text(s), 1))
  if len(output_shardings) == 1 and len(one_device) > 1:
    output_shardings = leaves(output_shardings[0], len(one_device))
  print("input shardings:", ", ".join(str(s) for s in parameter_shardings) or "none")
  print("output shardings:", ", ".join(str(s) for s in output_shardings))
  per_parameter = [shards(a, s) for a, s in zip(inputs, parameter_shardings)]
  outputs = run(sharded, per_parameter, parameter_shardings, global_shapes)
  wrong = []
  for leaf, (expected, per_device, sharding) in enumerate(
      zip(one_device, outputs, output_shardings)):
    print(f"output {leaf}, one device:\n{expected}")
    for device, (region, _, counts) in enumerate(tiles(sharding, expected.shape)):
      if not counts:
        continue
      held = expected[region]
      got = per_device[device][tuple(slice(0, s) for s in held.shape)]
      if not same(held, got):
        if not wrong:
          where = ", ".join(f"{r.start}:{r.stop}" for r in region)
          print(f"output {leaf}, device {device} holds [{where}]:\n  one device: "
                f"{held.tolist()}\n  sharded:    {got.tolist()}")
        wrong.append(device)
  if wrong:
    print(f"DIFFERENT: the sharded run differs from the one-device run on device(s) "
          f"{sorted(set(wrong))}")
    print(f"spmdcheck found: {FOUND}")
    return 1
  print("same: the sharded run agrees with the one-device run on every device")
  return 0


if __name__ == "__main__":
  sys.exit(main())
