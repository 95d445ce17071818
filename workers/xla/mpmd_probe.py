"""Probe: can Shardy's MPMD (pipeline) partitioner that ships in PyPI's jaxlib be driven on
the CPU? See docs/mpmd.md (issue 25, item 5).

    python workers/xla/mpmd_probe.py [--scan-so] [--json FILE] [--verbose]

Prints what it finds, section by section, and always exits 0 (each section reports its own
failure). Sections:

  inventory  the MPMD pieces jaxlib exposes: the `mpmd` MLIR dialect bindings, the
             `jaxlib._sdy_mpmd` partitioner bindings (which import only after an alias,
             see `import_sdy_mpmd`), `jaxlib._pathways`, and whether MPMD passes can be
             named in an MLIR PassManager pipeline (they cannot). --scan-so also lists the
             `mpmd-*` pass names compiled into libjax_common.so (reads 330 MB: a few s).
  partition  a two-stage program (two matmuls in `mpmd.named_computation`s, assigned to
             meshes m1 and m2 of 2 devices each) through `apply_mpmd_partitioning`:
             IMPORT (fragments + transfers), ALL (fragment_calls + per-fragment funcs), then
             `lower_to_ifrt` (IFRT IR: ifrt.Call per fragment, ifrt.CopyArrays per transfer).
  compile    jaxlib's own MPMD executor, `compile_mpmd`, on the CPU client: refused
             ("PjRtCompiler requires an HloProgram"); the only MpmdLoadedExecutable in jaxlib
             is the IFRT-proxy one (a Pathways server).
  execute    what does work: interpret the IFRT IR main function in Python. Each ifrt.Call's
             nested module is compiled with jax's CPU backend with the CompileOptions the MPMD
             pipeline built for it (Shardy partitioner, that mesh's device assignment) and run
             on that mesh's devices; each ifrt.CopyArrays is a jax.device_put to the target
             devices. Checked: every fragment against the same fragment compiled for one
             device, every transfer is the identity, and the result against the
             un-partitioned program on one device.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import traceback
from typing import Any, Dict, List

NUM_DEVICES = 4  # two meshes of two devices

# The program, as a generator would emit it: `stages` of (name, mesh, body) where the body
# computes %r from its arguments %a (activation) and %b (weight). The last line adds an
# unassigned op after the pipeline (MPMD's mesh inference places it).
STAGES = [
    ("stage1", "m1",
     "%r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] :"
     " (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>"),
    ("stage2", "m2",
     "%d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] :"
     " (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>\n"
     "      %r = stablehlo.tanh %d : tensor<4x8xf32>"),
]
ARG_SHARDINGS = ['[{"x"}, {}]', None, '[{}, {"x"}]']  # x, w1, w2 (None: unsharded)
MESHES = [("m1", [("x", 2)]), ("m2", [("x", 2)])]


def program(mpmd: bool) -> str:
  """The MPMD program (`mpmd=True`: stages in named computations, Shardy shardings on the
  arguments) or its one-device reference (plain StableHLO, same arithmetic)."""
  args = []
  for i, spec in enumerate(ARG_SHARDINGS):
    shape = "4x8" if i == 0 else "8x8"
    attr = f" {{sdy.sharding = #sdy.sharding<@mesh, {spec}>}}" if (mpmd and spec) else ""
    args.append(f"%arg{i}: tensor<{shape}xf32>{attr}")
  lines = []
  act = "%arg0"
  for k, (name, _mesh, body) in enumerate(STAGES):
    w = f"%arg{k + 1}"
    if mpmd:
      lines.append(
          f'    %s{k} = mpmd.named_computation<"{name}"> ({act}, {w})'
          f" (%a: tensor<4x8xf32>, %b: tensor<8x8xf32>) {{\n      {body}\n"
          "      mpmd.return %r : tensor<4x8xf32>\n"
          "    } : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>")
    else:
      renamed = body.replace("%a", act).replace("%b", w).replace("%r", f"%s{k}")
      renamed = renamed.replace("%d", f"%d{k}")
      lines.append("    " + renamed.replace("\n      ", "\n    "))
    act = f"%s{k}"
  lines.append(f"    %out = stablehlo.add {act}, %s0 : tensor<4x8xf32>")
  lines.append("    return %out : tensor<4x8xf32>")
  mesh = '  sdy.mesh @mesh = <["x"=2]>\n' if mpmd else ""
  return ("module @pipeline {\n" + mesh + "  func.func public @main(" + ", ".join(args) +
          ") -> tensor<4x8xf32> {\n" + "\n".join(lines) + "\n  }\n}\n")


def import_sdy_mpmd():
  """`jaxlib._sdy_mpmd`. Its init imports `jax.jaxlib._jax` (the module path inside jax's
  own build, where jaxlib is vendored as `jax.jaxlib`), which PyPI's layout lacks:
  a plain import fails with "Encountered an error while initializing the extension"
  caused by ModuleNotFoundError("No module named 'jax.jaxlib'"). Aliasing the names in
  sys.modules is enough."""
  import jaxlib
  import jaxlib._jax
  try:
    from jaxlib import _sdy_mpmd
    return _sdy_mpmd, None
  except ImportError as e:
    first = f"{e} (cause: {e.__cause__!r})"
  sys.modules.setdefault("jax.jaxlib", jaxlib)
  sys.modules.setdefault("jax.jaxlib._jax", jaxlib._jax)
  from jaxlib import _sdy_mpmd
  return _sdy_mpmd, first


def public(obj, private: bool = False) -> List[str]:
  return [n for n in dir(obj) if not n.startswith("__" if private else "_")]


# ---------------------------------------------------------------------------------------


def inventory(report: Dict[str, Any], scan_so: bool) -> None:
  import jax
  import jaxlib
  from jaxlib.mlir.dialects import mpmd as mpmd_dialect
  from jax._src.interpreters import mlir
  from jax._src.lib.mlir import passmanager

  report["jax"], report["jaxlib"] = jax.__version__, jaxlib.__version__
  report["dialect_ops"] = sorted(
      getattr(mpmd_dialect, n).OPERATION_NAME for n in public(mpmd_dialect)
      if hasattr(getattr(mpmd_dialect, n), "OPERATION_NAME") and not n.endswith("Adaptor"))
  report["dialect_extra"] = [n for n in ("register_dialect", "UserOriginAttr")
                             if hasattr(mpmd_dialect, n)]
  M, first_error = import_sdy_mpmd()
  report["sdy_mpmd_plain_import_error"] = first_error
  report["sdy_mpmd_api"] = public(M)
  from jaxlib import _pathways
  report["pathways_api"] = public(_pathways, private=True)
  import jax.experimental as jexp
  report["jax_experimental_mpmd"] = [n for n in public(jexp) if "mpmd" in n.lower()]

  names = ["mpmd-map-named-ops-to-mpmd-ops", "mpmd-introduce-transfers",
           "mpmd-infer-mesh-populate-use-set", "mpmd-lower-to-fragment-calls",
           "mpmd-lower-to-ifrt", "mpmd-pipeline-scheduler", "sdy-propagation-pipeline"]
  parsable = {}
  with mlir.make_ir_context():
    for n in names:
      try:
        passmanager.PassManager.parse(f"builtin.module({n})")
        parsable[n] = True
      except Exception:  # "does not refer to a registered pass or pass pipeline"
        parsable[n] = False
  report["passmanager_parsable"] = parsable

  if scan_so:
    path = os.path.join(os.path.dirname(jaxlib.__file__), "libjax_common.so")
    with open(path, "rb") as f:
      data = f.read()
    # Whole printable strings (as `strings` splits them) that are an mpmd-* name.
    found, name, start = set(), re.compile(rb"mpmd-[a-z0-9-]+"), data.find(b"mpmd-")
    while start >= 0:
      match = name.match(data, start)
      end = match.end()
      if (start == 0 or not 0x20 <= data[start - 1] <= 0x7e) and \
          (end == len(data) or not 0x20 <= data[end] <= 0x7e):
        found.add(match.group(0).decode())
      start = data.find(b"mpmd-", end)
    found = sorted(found)
    report["so_mpmd_pass_names"] = found


def partition(report: Dict[str, Any], state: Dict[str, Any]) -> None:
  from jax._src.interpreters import mlir
  from jax._src.lib.mlir import ir
  M, _ = import_sdy_mpmd()

  def run(module, phases):
    return M.apply_mpmd_partitioning(
        module, func_name="main", named_meshes=MESHES,
        assignment={name: mesh for name, mesh, _ in STAGES},
        input_meshes=[None] * len(ARG_SHARDINGS), output_meshes=[None], donate_argnums=[],
        partitioning_options={}, fragment_merge_rules=[], fragment_schedule_rules=[],
        phases=phases)

  ctx = mlir.make_ir_context()
  state["ctx"] = ctx
  with ctx, ir.Location.unknown():
    source = ir.Module.parse(program(mpmd=True))
    imported = run(M.clone_mlir_module(source), M.PartitioningPhase.IMPORT)
    text = str(imported.mpmd_module)
    report["import_fragments"] = [
        {"mesh": f.mesh_name, "origins": [o.computation_name for o in f.origins],
         "stage_id": f.stage_id} for f in M.get_fragment_info(imported.mpmd_module)]
    report["import_transfers"] = len(re.findall(r"= mpmd\.transfer ", text))
    state["import_text"] = text

    full = run(M.clone_mlir_module(source), M.PartitioningPhase.ALL)
    text = str(full.mpmd_module)
    report["all_fragment_calls"] = re.findall(r"mpmd\.fragment_call<[^>]*>\s*@([\w.]+)", text)
    io = full.module_io_sharding_specs_and_meshes
    report["io_meshes"] = {
        "inputs": [(s.mesh_name, s.tensor_spec) for s in io.input_specs],
        "outputs": [(s.mesh_name, s.tensor_spec) for s in io.output_specs]}
    state["mpmd_text"] = text

    ifrt = M.clone_mlir_module(full.mpmd_module)
    M.lower_to_ifrt(ifrt)
    state["ifrt"] = ifrt
    state["ifrt_text"] = str(ifrt)
    state["compile_options"] = M.get_compile_options(ifrt, {})
    report["ifrt_ops"] = re.findall(r"ifrt\.(Call|CopyArrays)\b", state["ifrt_text"])


def compile_native(report: Dict[str, Any], state: Dict[str, Any]) -> None:
  import jax
  import numpy as np
  from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
  from jax._src.lib.mlir import ir
  M, _ = import_sdy_mpmd()
  devices = jax.devices()
  with state["ctx"], ir.Location.unknown():
    ifrt = M.clone_mlir_module(state["ifrt"])
    out_mesh = Mesh(np.array(devices[2:4]), ("x",))
    try:
      M.compile_mpmd(
          backend=devices[0].client, ifrt_mlir_module=ifrt, devices=devices[:NUM_DEVICES],
          out_avals=[jax.core.ShapedArray((4, 8), np.float32)],
          out_shardings=[NamedSharding(out_mesh, P(None, "x"))],
          xla_compile_options=state["compile_options"], loaded_executable_bindings={})
      report["compile_mpmd"] = "compiled"
    except Exception as e:
      report["compile_mpmd"] = f"{type(e).__name__}: {e}"


def strip_shardings(module, ir) -> None:
  """Makes a fragment module a one-device module: no sdy.mesh, no sdy.sharding."""
  for op in list(module.body.operations):
    if op.operation.name == "sdy.mesh":
      op.operation.erase()
      continue
    if op.operation.name != "func.func":
      continue
    for key in ("arg_attrs", "res_attrs"):
      if key in op.attributes:
        rebuilt = []
        for a in ir.ArrayAttr(op.attributes[key]):
          d = ir.DictAttr(a)
          rebuilt.append(ir.DictAttr.get({d[i].name: d[i].attr for i in range(len(d))
                                          if d[i].name != "sdy.sharding"}))
        op.attributes[key] = ir.ArrayAttr.get(rebuilt)


def execute(report: Dict[str, Any], state: Dict[str, Any]) -> None:
  import jax
  import numpy as np
  import jax.extend.backend
  from jax._src import compiler
  from jax._src import sharding_impls
  from jax._src.lib import _jax as xc_jax  # DeviceList
  from jax._src.lib.mlir import ir

  devices = jax.devices()
  backend = devices[0].client
  by_id = {d.id: d for d in devices}
  rng = np.random.default_rng(0)
  inputs = [rng.standard_normal((4, 8), dtype=np.float32),
            rng.standard_normal((8, 8), dtype=np.float32),
            rng.standard_normal((8, 8), dtype=np.float32)]

  def compile_text(text, devs, options):
    module = ir.Module.parse(text)
    return compiler.backend_compile_and_load(
        backend, module, xc_jax.DeviceList(tuple(devs)), options, [])

  def run(exe, devs, args):
    """Runs `exe` on `devs`; `args` are jax Arrays, resharded to what it expects."""
    placed = []
    for arg, op_sharding in zip(args, exe.get_parameter_shardings()):
      placed.append(jax.device_put(arg, sharding_impls.GSPMDSharding(devs, op_sharding)))
    results = exe.execute_sharded(placed).disassemble_into_single_device_arrays()
    return [(shards, sharding_impls.GSPMDSharding(devs, op_sharding))
            for shards, op_sharding in zip(results, exe.get_output_shardings())]

  def assemble(shards, sharding, shape):
    return jax.make_array_from_single_device_arrays(shape, sharding, shards)

  def one_device_options():
    return jax.extend.backend.get_compile_options(
        num_replicas=1, num_partitions=1,
        device_assignment=np.array(devices[:1], dtype=object).reshape(1, 1))

  with state["ctx"], ir.Location.unknown():
    ifrt = state["ifrt"]
    nested = {}
    main = None
    for op in ifrt.body.operations:
      if op.operation.name == "builtin.module":
        nested[ir.StringAttr(op.operation.attributes["sym_name"]).value] = op
      elif op.operation.name == "func.func" and \
          ir.StringAttr(op.attributes["sym_name"]).value == "main":
        main = op
    block = main.regions[0].blocks[0]
    env = {}
    for i, arg in enumerate(block.arguments):
      env[arg.get_name()] = jax.device_put(inputs[i], devices[0])  # resharded at first use
    fragments, transfers = [], []
    result = None
    for op in block.operations:
      name = op.operation.name
      operands = [env[v.get_name()] for v in op.operation.operands]
      if name == "ifrt.Call":
        callee = str(op.operation.attributes["callee"])  # @p0_stage1.f::@main
        module_name = callee.split("::")[0].lstrip("@")
        ids = [int(x) for x in re.findall(r"\d+", str(op.operation.attributes["devices"]))]
        devs = [by_id[i] for i in ids]
        key = ir.StringAttr(op.operation.attributes["ifrt.compile_options_key"]).value
        options = state["compile_options"][key]
        text = re.sub(r"module @[\w.]+ <sym_visibility = \"private\">", "module @fragment",
                      str(nested[module_name]), count=1)
        exe = compile_text(text, devs, options)
        host_operands = [np.asarray(a) for a in operands]  # the fragment may donate them
        outs = []
        for (shards, sharding), res in zip(run(exe, devs, operands), op.operation.results):
          shape = tuple(ir.RankedTensorType(ir.Type.parse(
              re.search(r"tensor<[^>]*>", str(res.type)).group(0))).shape)
          outs.append(assemble(shards, sharding, shape))
        # The same fragment on one device, from the whole inputs.
        reference = ir.Module.parse(text)
        strip_shardings(reference, ir)
        exe1 = compiler.backend_compile_and_load(
            backend, reference, xc_jax.DeviceList((devices[0],)), one_device_options(), [])
        ref_outs = exe1.execute_sharded(
            [jax.device_put(a, devices[0]) for a in host_operands]
        ).disassemble_into_single_device_arrays()
        err = max(float(np.max(np.abs(np.asarray(o) - np.asarray(r[0]))))
                  for o, r in zip(outs, ref_outs))
        entry = exe.hlo_modules()[0].to_string().split("ENTRY", 1)[-1].split("\n}", 1)[0]
        fragments.append({"fragment": module_name, "mesh": ir.StringAttr(
            op.operation.attributes["ifrt.mesh_name"]).value, "devices": ids,
                          "num_partitions": options.executable_build_options.num_partitions,
                          "per_device_params": re.findall(r"= (\w+\[[\d,]*\])\S* parameter",
                                                          entry),
                          "max_abs_err_vs_one_device": err})
        for res, value in zip(op.operation.results, outs):
          env[res.get_name()] = value
        # the control-output token result, if any, is never read
      elif name == "ifrt.CopyArrays":
        for res, value in zip(op.operation.results, operands):
          if "ifrt.array" not in str(res.type):
            continue
          ids = [int(x) for x in re.findall(r"\[([\d, ]+)\]>$", str(res.type))[0].split(",")]
          devs = [by_id[i] for i in ids]
          target = sharding_impls.GSPMDSharding(devs, value.sharding._to_xla_hlo_sharding(
              value.ndim))
          moved = jax.device_put(value, target)
          transfers.append({"from": sorted(d.id for d in value.sharding.device_set),
                            "to": ids, "shape": list(value.shape),
                            "identity": bool(np.array_equal(np.asarray(moved),
                                                            np.asarray(value)))})
          env[res.get_name()] = moved
      elif name == "func.return":
        result = operands
      else:
        raise RuntimeError(f"unexpected op in IFRT main: {name}")

    # The whole program, un-partitioned, on one device.
    exe = compiler.backend_compile_and_load(
        backend, ir.Module.parse(program(mpmd=False)), xc_jax.DeviceList((devices[0],)),
        one_device_options(), [])
    ref = exe.execute_sharded([jax.device_put(x, devices[0]) for x in inputs]
                              ).disassemble_into_single_device_arrays()[0][0]
    report["fragments"] = fragments
    report["transfers"] = transfers
    report["result_devices"] = sorted(d.id for d in result[0].sharding.device_set)
    report["max_abs_err_vs_one_device"] = float(np.max(np.abs(np.asarray(result[0]) -
                                                               np.asarray(ref))))
    report["numpy_check"] = float(np.max(np.abs(np.asarray(ref) - (
        np.tanh((inputs[0] @ inputs[1]) @ inputs[2]) + inputs[0] @ inputs[1]))))


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--scan-so", action="store_true",
                      help="list mpmd-* pass names found in libjax_common.so")
  parser.add_argument("--json", help="also write the report here")
  parser.add_argument("--verbose", action="store_true",
                      help="print the MPMD (IMPORT, ALL) and IFRT IR modules")
  args = parser.parse_args(argv)

  start = time.time()
  report: Dict[str, Any] = {}
  state: Dict[str, Any] = {}
  try:
    import jax
    jax.config.update("jax_num_cpu_devices", NUM_DEVICES)
    jax.config.update("jax_platforms", "cpu")
  except Exception as e:  # jax missing or its backend already initialised
    report["setup_error"] = repr(e)

  sections = [("inventory", lambda: inventory(report, args.scan_so)),
              ("partition", lambda: partition(report, state)),
              ("compile", lambda: compile_native(report, state)),
              ("execute", lambda: execute(report, state))]
  status = {}
  for name, fn in sections:
    if name in ("compile", "execute") and status.get("partition") != "ok":
      status[name] = "skipped (partition failed)"
      continue
    try:
      fn()
      status[name] = "ok"
    except Exception as e:
      status[name] = f"failed: {type(e).__name__}: {e}"
      report.setdefault("tracebacks", {})[name] = traceback.format_exc()
  report["sections"] = status
  report["seconds"] = round(time.time() - start, 2)

  ok = (status.get("execute") == "ok" and report.get("max_abs_err_vs_one_device", 1) < 1e-4
        and all(f["max_abs_err_vs_one_device"] < 1e-4 for f in report.get("fragments", []))
        and all(t["identity"] for t in report.get("transfers", [])))
  report["verdict"] = (
      "MPMD partitioning runs on CPU (apply_mpmd_partitioning + lower_to_ifrt); jaxlib's "
      "compile_mpmd does not (needs an IFRT-IR-capable client, i.e. Pathways); fragments "
      "executed per mesh by this probe " + ("match the one-device run" if ok else
                                            "did NOT check out"))

  if args.verbose and state:
    for key in ("import_text", "mpmd_text", "ifrt_text"):
      if key in state:
        print(f"===== {key}\n{state[key]}")
  for key, value in report.items():
    if key == "tracebacks":
      continue
    print(f"{key}: {json.dumps(value) if not isinstance(value, str) else value}")
  for name, tb in report.get("tracebacks", {}).items():
    print(f"----- traceback ({name})\n{tb}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(report, f, indent=1, default=str)
  return 0


if __name__ == "__main__":
  sys.exit(main())
