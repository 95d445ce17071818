#!/usr/bin/env python3
"""spmdcheck's XLA worker: compiles HLO text with XLA's SPMD partitioners (GSPMD, Shardy) on N
virtual CPU devices and runs the executables, over a line-based JSON protocol on stdin/stdout.

One long-lived process per job: jax is imported once; the C++ client (target/xla_worker.cc)
restarts the process after a crash (an XLA CHECK failure aborts it), a timeout or every K
requests. The protocol is documented in docs/xla-worker.md; in short:

  worker -> client, once:  {"event": "ready", "protocol": 1, "jax": V, "jaxlib": V, ...}
  client -> worker:        {"id": 7, "method": "compile", "params": {...}}
  worker -> client:        {"id": 7, "result": {...}}  or  {"id": 7, "error": {"kind": K, ...}}

Error kinds: "rejected" (XLA refused the module: its message), "unsupported" (the worker cannot
hand the module over faithfully, e.g. a sharding Shardy cannot express), "protocol" (a malformed
request), "internal" (a bug in the worker: its traceback).

Only protocol lines reach the real stdout: fd 1 is pointed at stderr at start-up, so a stray
print of jax's or XLA's can never corrupt the stream. During each request fd 2 goes to
SCRATCH/request-<id>.log, so XLA's warnings are returned with the answer and, should XLA abort
the process, the client reads the tail of that file.
"""

from __future__ import annotations

import argparse
import base64
import glob
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jit_route  # noqa: E402  (next to this file)

PROTOCOL_VERSION = 1

# HLO primitive type names <-> numpy dtypes (names of ml_dtypes for the narrow types).
_DTYPES = {
    "pred": "bool", "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "f16": "float16",
    "f32": "float32", "f64": "float64", "c64": "complex64", "c128": "complex128",
    "bf16": "bfloat16", "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2",
    "f8e4m3fnuz": "float8_e4m3fnuz", "f8e5m2fnuz": "float8_e5m2fnuz",
    "f8e4m3b11fnuz": "float8_e4m3b11fnuz", "s4": "int4", "u4": "uint4",
}


class RequestError(Exception):

  def __init__(self, kind: str, message: str):
    super().__init__(message)
    self.kind = kind
    self.message = message


class Worker:

  def __init__(self, num_devices: int, scratch: str):
    self.num_devices = num_devices
    self.scratch = scratch
    self.handles: Dict[int, Any] = {}
    self.next_handle = 1
    # Seconds of the current request spent inside jaxlib compiling or executing (what a bare
    # jax loop would spend too); the rest of a request is the protocol's cost.
    self.xla_seconds = 0.0
    t0 = time.monotonic()
    import jax  # noqa: imported here, after XLA_FLAGS is set
    import jax.extend  # noqa: F401  (jax.extend.mlir)
    import jaxlib
    import ml_dtypes
    import numpy as np
    from jax._src import array as jax_array
    from jax._src import core as jax_core
    from jax._src import xla_bridge
    from jax._src.interpreters import mlir
    from jax._src.lib import xla_client
    from jax._src.sharding_impls import GSPMDSharding
    # 64-bit arrays stay 64-bit: without this, device_put turns s64/u64/f64 inputs into 32-bit
    # buffers and XLA refuses them (RuntimeProgramInputMismatch).
    jax.config.update("jax_enable_x64", True)
    self.jax, self.np, self.ml_dtypes = jax, np, ml_dtypes
    self.mlir, self.xc, self.xla_bridge = mlir, xla_client, xla_bridge
    self.jax_array, self.jax_core, self.GSPMDSharding = jax_array, jax_core, GSPMDSharding
    self.backend = xla_bridge.get_backend("cpu")
    self.devices = self.backend.local_devices()
    self.import_seconds = time.monotonic() - t0
    self.versions = {"jax": jax.__version__, "jaxlib": jaxlib.__version__}

  # --- encoding -----------------------------------------------------------------------------

  def dtype(self, name: str):
    numpy_name = _DTYPES.get(name)
    if numpy_name is None:
      raise RequestError("unsupported", f"element type {name} cannot be passed to XLA")
    if hasattr(self.np, numpy_name) and numpy_name not in ("bfloat16",):
      return self.np.dtype(numpy_name)
    return self.np.dtype(getattr(self.ml_dtypes, numpy_name))

  def dtype_name(self, dtype) -> str:
    for name, numpy_name in _DTYPES.items():
      if self.np.dtype(dtype).name == numpy_name:
        return name
    raise RequestError("unsupported", f"XLA returned an array of numpy type {dtype}")

  def decode(self, value: Dict[str, Any]):
    try:
      dtype = self.dtype(value["dtype"])
      shape = tuple(int(d) for d in value["shape"])
      data = base64.b64decode(value["data"], validate=True)
    except (KeyError, TypeError, ValueError) as e:
      raise RequestError("protocol", f"malformed array: {e}") from None
    count = 1
    for d in shape:
      count *= d
    if len(data) != count * dtype.itemsize:
      raise RequestError(
          "protocol", f"array {value['dtype']}{list(shape)} needs {count * dtype.itemsize} "
          f"bytes, got {len(data)}")
    return self.np.frombuffer(data, dtype=dtype).reshape(shape).copy()

  def encode(self, array) -> Dict[str, Any]:
    # Not ascontiguousarray: it turns a 0-d array into a 1-d one.
    array = self.np.array(array, order="C", copy=True)
    return {
        "dtype": self.dtype_name(array.dtype),
        "shape": list(array.shape),
        "data": base64.b64encode(array.tobytes()).decode("ascii"),
    }

  # --- compile ------------------------------------------------------------------------------

  def to_stablehlo(self, hlo_text: str):
    try:
      module = self.xc.hlo.hlo_module_from_text(hlo_text)
    except Exception as e:
      raise RequestError("rejected", f"XLA's HLO parser: {e}") from None
    try:
      return self.jax.extend.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
    except Exception as e:
      # UNIMPLEMENTED: the route through StableHLO cannot carry the module (tiled layouts...).
      kind = "unsupported" if "UNIMPLEMENTED" in str(e) else "rejected"
      raise RequestError(kind, f"HLO -> StableHLO: {e}") from None

  def compile(self, params: Dict[str, Any]) -> Dict[str, Any]:
    hlo = params.get("hlo")
    mlir_text = params.get("mlir")
    num_partitions = params.get("num_partitions")
    partitioner = params.get("partitioner", "gspmd")
    if mlir_text is not None and hlo is not None:
      raise RequestError("protocol", "compile takes 'hlo' or 'mlir', not both")
    if mlir_text is not None and not isinstance(num_partitions, int):
      num_partitions = jit_route.num_partitions_of(mlir_text) if isinstance(mlir_text, str) else None
    if (not isinstance(hlo, str) and not isinstance(mlir_text, str)) or \
        not isinstance(num_partitions, int) or num_partitions < 1:
      raise RequestError("protocol", "compile needs 'hlo' or 'mlir' (text) and 'num_partitions' >= 1")
    if partitioner not in ("gspmd", "shardy", "none"):
      raise RequestError("protocol", f"unknown partitioner {partitioner!r}")
    if partitioner == "none" and num_partitions != 1:
      raise RequestError("protocol", "partitioner 'none' compiles for one device")
    if num_partitions > len(self.devices):
      raise RequestError(
          "protocol", f"{num_partitions} partitions but the worker has {len(self.devices)} "
          "devices (restart it with --devices)")
    result: Dict[str, Any] = {"partitioner": partitioner}
    if mlir_text is not None:
      # The route jax.jit takes: the text as lowered, jax's compile options (jit_route.py).
      result["route"] = "jit"
      with self.mlir.make_ir_context():
        try:
          mlir_module = jit_route.parse(self, mlir_text)
          if params.get("replicate_outside_manual", False):
            # The reference run of a module with manual computations (no one-device meaning).
            result["replicated_outside_manual"] = jit_route.replicate_outside_manual(
                mlir_module, self.mlir.ir)
          options = jit_route.compile_options(self, mlir_module, num_partitions, partitioner)
        except jit_route.JitRouteError as e:
          raise RequestError(e.kind, e.message) from None
        if partitioner == "shardy" and not jit_route.uses_shardy(mlir_text):
          raise RequestError("unsupported", "a Shardy compile of a module lowered for GSPMD "
                             "(mhlo.sharding, no sdy.mesh): jax lowers for Shardy itself")
        if partitioner == "gspmd" and jit_route.uses_shardy(mlir_text):
          raise RequestError("unsupported", "a GSPMD compile of a module lowered for Shardy "
                             "(sdy.mesh): lower it with jax_use_shardy_partitioner=False")
        mlir_module = self.mlir.module_to_bytecode(mlir_module)
      build = options.executable_build_options
      fast_default = False
    else:
      result["route"] = "hlo"
      bytecode = self.to_stablehlo(hlo)
      with self.mlir.make_ir_context():
        try:
          module = self.mlir.ir.Module.parse(bytecode)
        except Exception as e:  # StableHLO's verifier refuses what XLA's HLO parser let through
          raise RequestError("rejected", f"StableHLO verifier: {e}") from None
        if partitioner == "shardy" and params.get("import_shardings", True):
          from shardy_import import Unsupported, import_shardings
          try:
            result["shardy_import"] = import_shardings(module, self.mlir.ir, num_partitions,
                                                        self.xc)
          except Unsupported as e:
            raise RequestError("unsupported", f"Shardy import: {e}") from None
        # Bytecode keeps the locations, so XLA's metadata names the HLO instructions.
        mlir_module = self.mlir.module_to_bytecode(module)
        if params.get("return_mlir", False):
          # What XLA compiles, as text (for repros that need nothing but jaxlib).
          result["mlir"] = module.operation.get_asm(enable_debug_info=False)
      options = self.xc.CompileOptions()
      options.num_replicas = 1
      options.num_partitions = num_partitions
      build = options.executable_build_options
      build.use_spmd_partitioning = partitioner != "none"
      build.use_shardy_partitioner = partitioner == "shardy"
      options.device_assignment = self.xc.DeviceAssignment.create(
          self.np.arange(num_partitions).reshape(1, num_partitions))
      fast_default = True
    debug = build.debug_options
    if params.get("fast", fast_default):
      debug.xla_backend_optimization_level = 0
      debug.xla_llvm_disable_expensive_passes = True
    dump_dir = None
    if params.get("dumps", True):
      dump_dir = tempfile.mkdtemp(prefix="dump-", dir=self.scratch)
      debug.xla_dump_to = dump_dir
      # Every pass's output for translation validation (which pass broke it), else the few
      # modules a check reads.
      debug.xla_dump_hlo_pass_re = (".*" if params.get("dump_passes", False) else
                                    "spmd-partitioning|shardy-xla")
      debug.xla_dump_hlo_as_text = True
    devices = self.xc.DeviceList(tuple(self.devices[:num_partitions]))
    t0 = time.monotonic()
    try:
      executable = self.backend.compile_and_load(mlir_module, devices, options)
    except Exception as e:
      self.xla_seconds += time.monotonic() - t0
      if dump_dir:
        shutil.rmtree(dump_dir, ignore_errors=True)
      message = str(e)
      # A custom-call target the CPU backend has no implementation for is not a rejection of a
      # valid module: this backend cannot run it.
      # The CPU backend's code emitter refusing an op it does not implement (TopK of bf16:
      # "TopK expects F32 data type") is a limit of this backend, not a rejection either.
      cpu_limit = "service/cpu/thunk_emitter.cc" in message and "RET_CHECK" in message
      # XLA's import of jax modules has no case for the sdy.reshard op (jax lowers
      # jax.sharding.reshard to sdy.sharding_constraint): a limit of that route, by design.
      no_reshard = "'sdy.reshard' op" in message
      kind = ("unsupported"
              if "No registered implementation for" in message or cpu_limit or no_reshard
              else "rejected")
      raise RequestError(kind, f"XLA compile: {message}") from None
    result["compile_seconds"] = time.monotonic() - t0
    self.xla_seconds += result["compile_seconds"]
    if dump_dir:
      result["modules"] = self.read_dumps(dump_dir)
      result["dump_files"] = sorted(
          f for f in os.listdir(dump_dir) if f.endswith(".txt"))
      if params.get("dump_passes", False):
        result["pass_dumps"] = self.read_pass_dumps(dump_dir)
      shutil.rmtree(dump_dir, ignore_errors=True)
    if params.get("final_module", False):
      # Printing the optimised module costs a few milliseconds a compile: only when asked (the
      # dumps have it as modules.optimized).
      result["final_module"] = executable.hlo_modules()[0].to_string()
    try:
      result["parameter_shardings"] = [
          str(self.xc.HloSharding.from_proto(p)) for p in executable.get_parameter_shardings()
      ] if partitioner != "none" else None
      result["output_shardings"] = [
          str(self.xc.HloSharding.from_proto(p)) for p in executable.get_output_shardings()
      ] if partitioner != "none" else None
    except Exception as e:
      result["shardings_error"] = str(e)
    handle = self.next_handle
    self.next_handle += 1
    self.handles[handle] = executable
    result["handle"] = handle
    return result

  @staticmethod
  def read_dumps(dump_dir: str) -> Dict[str, Optional[str]]:

    def one(pattern: str) -> Optional[str]:
      files = sorted(glob.glob(os.path.join(dump_dir, pattern)))
      if not files:
        return None
      with open(files[-1]) as f:
        return f.read()

    return {
        "received": one("*.before_optimizations.txt"),
        "propagated": one("*.before_spmd-partitioning.txt"),
        "shardy": one("*after_shardy-xla*.txt"),
        "partitioned": one("*after_spmd-partitioning*.txt"),
        "optimized": one("*after_optimizations.txt"),
    }

  @staticmethod
  def read_pass_dumps(dump_dir: str) -> List[Dict[str, str]]:
    """The modules after each pass that changed it, in pass order, from the module right after
    spmd-partitioning to the optimised module: [{"file", "text"}]."""
    numbered = []
    for name in os.listdir(dump_dir):
      parts = name.split(".")
      # module_0002.NAME.0005.PIPELINE.after_PASS.before_NEXT.txt (NAME may hold dots)
      if not name.endswith(".txt") or ".after_" not in name:
        continue
      sequence = next((p for p in parts[1:] if len(p) == 4 and p.isdigit()), None)
      if sequence is not None:
        numbered.append((int(sequence), name))
    numbered.sort()
    start = next((i for i, (_, n) in enumerate(numbered) if "after_spmd-partitioning" in n), None)
    if start is None:
      return []
    names = [n for _, n in numbered[start:]]
    names += sorted(n for n in os.listdir(dump_dir) if n.endswith("after_optimizations.txt"))
    dumps = []
    for name in names:
      with open(os.path.join(dump_dir, name)) as f:
        dumps.append({"file": name, "text": f.read()})
    return dumps

  # --- execute ------------------------------------------------------------------------------

  def execute(self, params: Dict[str, Any]) -> Dict[str, Any]:
    executable = self.handles.get(params.get("handle"))
    if executable is None:
      raise RequestError("protocol", f"no executable with handle {params.get('handle')!r}")
    arguments = params.get("arguments")
    devices = executable.local_devices()
    if not isinstance(arguments, list):
      raise RequestError("protocol", "execute needs 'arguments': per parameter, per device")
    try:
      shardings = executable.get_parameter_shardings()
    except Exception:
      shardings = None
    expected = len(executable.get_parameter_layouts())
    if len(arguments) != expected or (shardings is not None and len(shardings) != expected):
      raise RequestError(
          "unsupported", f"the executable takes {expected} parameters, {len(arguments)} were "
          "given (tuple-typed parameters are flattened by XLA)")
    arrays = []
    for index, per_device in enumerate(arguments):
      if not isinstance(per_device, list) or len(per_device) != len(devices):
        raise RequestError(
            "protocol", f"parameter {index}: one array per device ({len(devices)}) expected")
      shards = [self.decode(v) for v in per_device]
      global_shape = tuple(int(d) for d in params.get("global_shapes", [None] * len(arguments))[
          index] or shards[0].shape)
      if shardings is not None:
        sharding = self.GSPMDSharding(devices, self.xc.HloSharding.from_proto(shardings[index]))
      else:
        sharding = self.GSPMDSharding(devices, self.xc.HloSharding.replicate())
      buffers = [self.jax.device_put(s, d) for s, d in zip(shards, devices)]
      aval = self.jax_core.ShapedArray(global_shape, shards[0].dtype)
      # Per-device buffers as given (uneven shards keep their padding): no checks.
      arrays.append(
          self.jax_array.ArrayImpl(aval, sharding, buffers, committed=True, _skip_checks=True))
    t0 = time.monotonic()
    try:
      results = executable.execute_sharded(arrays)
      outputs = results.disassemble_into_single_device_arrays()
      host = [[self.np.asarray(a) for a in per_device] for per_device in outputs]
    except Exception as e:
      self.xla_seconds += time.monotonic() - t0
      raise RequestError("rejected", f"XLA execute: {e}") from None
    execute_seconds = time.monotonic() - t0
    self.xla_seconds += execute_seconds
    values = [[self.encode(a) for a in per_device] for per_device in host]
    return {"outputs": values, "execute_seconds": execute_seconds}

  def release(self, params: Dict[str, Any]) -> Dict[str, Any]:
    return {"released": self.handles.pop(params.get("handle"), None) is not None}

  def stablehlo(self, params: Dict[str, Any]) -> Dict[str, Any]:
    """The StableHLO module XLA would compile for `hlo` (Shardy: with the module's shardings
    imported as sdy shardings), as text: what standalone repros compile."""
    hlo = params.get("hlo")
    num_partitions = params.get("num_partitions")
    partitioner = params.get("partitioner", "gspmd")
    if not isinstance(hlo, str) or not isinstance(num_partitions, int) or num_partitions < 1:
      raise RequestError("protocol", "stablehlo needs 'hlo' (text) and 'num_partitions' >= 1")
    if partitioner not in ("gspmd", "shardy"):
      raise RequestError("protocol", f"unknown partitioner {partitioner!r}")
    bytecode = self.to_stablehlo(hlo)
    result: Dict[str, Any] = {"partitioner": partitioner}
    with self.mlir.make_ir_context():
      try:
        module = self.mlir.ir.Module.parse(bytecode)
      except Exception as e:
        raise RequestError("rejected", f"StableHLO verifier: {e}") from None
      if partitioner == "shardy":
        from shardy_import import Unsupported, import_shardings
        try:
          result["shardy_import"] = import_shardings(module, self.mlir.ir, num_partitions,
                                                      self.xc)
        except Unsupported as e:
          raise RequestError("unsupported", f"Shardy import: {e}") from None
      result["mlir"] = module.operation.get_asm(enable_debug_info=False)
    return result

  def info(self, _params: Dict[str, Any]) -> Dict[str, Any]:
    return dict(self.versions, devices=len(self.devices), handles=len(self.handles))


def _log_lines(path: str) -> List[str]:
  try:
    with open(path, errors="replace") as f:
      return [line.rstrip("\n") for line in f if line.strip()]
  except OSError:
    return []


def serve(args) -> int:
  # Keep the real stdout for the protocol only; everything else printed goes to stderr.
  protocol_fd = os.dup(1)
  os.dup2(2, 1)
  sys.stdout = sys.stderr
  out = os.fdopen(protocol_fd, "w", buffering=1)

  def send(message: Dict[str, Any]) -> None:
    out.write(json.dumps(message, separators=(",", ":")) + "\n")
    out.flush()

  flags = os.environ.get("XLA_FLAGS", "")
  # Dumps print large constants in full: the modules spmdcheck judges need their values (the
  # flag has no DebugOptions attribute in jaxlib 0.10.2's Python binding).
  os.environ["XLA_FLAGS"] = (flags + f" --xla_force_host_platform_device_count={args.devices}"
                             " --xla_dump_large_constants=true").strip()
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  os.makedirs(args.scratch, exist_ok=True)
  try:
    worker = Worker(args.devices, args.scratch)
  except Exception as e:
    send({"event": "failed", "message": f"cannot import jax: {e}"})
    return 3
  send(dict(event="ready", protocol=PROTOCOL_VERSION, devices=len(worker.devices),
            import_seconds=worker.import_seconds, python=sys.version.split()[0],
            **worker.versions))
  import stablehlo_to_hlo  # noqa: E402 (workers/xla is on sys.path)
  methods = {
      "compile": worker.compile,
      "execute": worker.execute,
      "release": worker.release,
      "stablehlo": worker.stablehlo,
      "info": worker.info,
      "to_hlo": lambda params: stablehlo_to_hlo.handle(worker, params, RequestError),
  }
  saved_stderr = os.dup(2)
  for line in sys.stdin:
    if not line.strip():
      continue
    try:
      request = json.loads(line)
      if not isinstance(request, dict):
        raise ValueError("a request is a JSON object")
    except ValueError as e:
      send({"id": None, "error": {"kind": "protocol", "message": f"bad request: {e}"}})
      continue
    request_id = request.get("id")
    method = request.get("method")
    if method == "shutdown":
      send({"id": request_id, "result": {}})
      return 0
    handler = methods.get(method)
    if handler is None:
      send({"id": request_id,
            "error": {"kind": "protocol", "message": f"unknown method {method!r}"}})
      continue
    log_path = os.path.join(args.scratch, f"request-{request_id}.log")
    sys.stderr.flush()
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    worker.xla_seconds = 0.0
    try:
      result = handler(request.get("params") or {})
      response = {"id": request_id, "result": result}
    except RequestError as e:
      response = {"id": request_id, "error": {"kind": e.kind, "message": e.message}}
    except Exception as e:  # a bug of ours: say so, with the traceback
      response = {"id": request_id, "error": {
          "kind": "internal", "message": f"{type(e).__name__}: {e}",
          "traceback": traceback.format_exc()}}
    sys.stderr.flush()
    os.dup2(saved_stderr, 2)
    response["log"] = _log_lines(log_path)
    response["xla_seconds"] = worker.xla_seconds
    os.unlink(log_path)
    send(response)
  return 0


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--devices", type=int, default=8,
                      help="virtual CPU devices (the largest partition count served)")
  parser.add_argument("--scratch", default=None,
                      help="directory for per-request logs and dumps (default: a temp dir)")
  args = parser.parse_args(argv)
  if args.devices < 1:
    parser.error("--devices must be >= 1")
  own_scratch = args.scratch is None
  if own_scratch:
    args.scratch = tempfile.mkdtemp(prefix="spmdcheck-xla-")
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  try:
    return serve(args)
  finally:
    if own_scratch:
      shutil.rmtree(args.scratch, ignore_errors=True)


if __name__ == "__main__":
  sys.exit(main())
