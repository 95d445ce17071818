"""spmdcheck.check: lower a JAX function, have XLA (or ours) partition it, judge it with the
spmdcheck binary (oracle and XLA's own executions), lint the partitioned program."""

from __future__ import annotations

import ast
import json
import os
import re
import tempfile
from typing import Any, Optional, Sequence, Union

from . import _binary
from ._lower import lower, mesh_spec
from ._report import Cost, Finding, PartitionerResult, Report

# spmdcheck's --partitioner names for the ones a JAX user knows.
_PARTITIONERS = {"gspmd": "xla", "xla": "xla", "shardy": "shardy", "both": "xla,shardy",
                 "reference": "reference", "ours": "reference"}


def partitioner_spec(partitioner: Union[str, Sequence[str]]) -> str:
  names = [partitioner] if isinstance(partitioner, str) else list(partitioner)
  specs = []
  for name in names:
    if name not in _PARTITIONERS:
      raise ValueError(f"unknown partitioner {name!r}: one of {sorted(_PARTITIONERS)}")
    specs.append(_PARTITIONERS[name])
  return ",".join(specs)


def to_partition_spec(sharding: str, mesh):
  """The jax PartitionSpec over `mesh` that places every tile where the HloSharding text
  `sharding` does, and its text; (None, why) when there is none (spmdcheck sharding to-spec)."""
  from jax.sharding import PartitionSpec
  done = _binary.run(["sharding", "to-spec", sharding, "--mesh", mesh_spec(mesh)])
  text = done.stdout.strip()
  if done.exit_code != 0 or not text.startswith("P(") or "unreduced=" in text:
    return None, text.removeprefix("no PartitionSpec: ")
  entries = ast.literal_eval("[" + text[2:-1] + "]")  # P('a', ('b', 'c'), None)
  return PartitionSpec(*entries), text


def _safe(spec: str) -> str:
  """The file-name form check --dump uses for a partitioner spec."""
  return re.sub(r"[^A-Za-z0-9]", "_", spec)[:40]


_SHARDING = re.compile(r"sharding=(\{.*?\})(?:,\s*[a-z_]+=|\s*$)")


def _entry_lines(text: str):
  """(index, line) of the entry computation's instructions."""
  lines = text.split("\n")
  start = next((i for i, text in enumerate(lines) if text.startswith("ENTRY")), None)
  if start is None:
    return lines, []
  out = []
  for i in range(start + 1, len(lines)):
    if lines[i].startswith("}"):
      break
    out.append(i)
  return lines, out


def _annotate_ends(partitioned: str, received: str) -> str:
  """XLA's partitioned dump drops the shardings of the entry's parameters and result; the lint
  needs them at the chain ends: copy them from the module XLA received (with the shardings XLA
  settled on)."""
  _, rec_entry = _entry_lines(received)
  rec_lines = received.split("\n")
  wanted = {}
  for i in rec_entry:
    line = rec_lines[i]
    m = _SHARDING.search(line)
    if not m:
      continue
    p = re.search(r"parameter\((\d+)\)", line)
    if p:
      wanted[f"parameter({p.group(1)})"] = m.group(1)
    elif line.lstrip().startswith("ROOT "):
      wanted["ROOT"] = m.group(1)
  lines, entry = _entry_lines(partitioned)
  for i in entry:
    line = lines[i]
    if "sharding=" in line:
      continue
    p = re.search(r"parameter\((\d+)\)", line)
    root = "ROOT" if line.lstrip().startswith("ROOT ") else None
    key = f"parameter({p.group(1)})" if p else root
    if key in wanted:
      cut = line.find(", metadata=")
      cut = len(line) if cut < 0 else cut
      lines[i] = f"{line[:cut]}, sharding={wanted[key]}{line[cut:]}"
  return "\n".join(lines)


def _lint(partitioned: str, received: Optional[str], mesh, timeout: Optional[float]):
  if received:
    with open(partitioned) as f, open(received) as g:
      annotated = _annotate_ends(f.read(), g.read())
    partitioned = partitioned.replace(".hlo", ".annotated.hlo")
    with open(partitioned, "w") as out:
      out.write(annotated)
  args = ["lint", partitioned, "--format", "json"]
  if received:
    args += ["--global", received]
  return _findings(_binary.run(args, timeout=timeout), mesh)


def _findings(done, mesh):
  report = json.loads(done.stdout)
  findings = []
  for f in report.get("findings", []):
    cause = f.get("cause") or {}
    finding = Finding(status=f.get("status", ""), rule=f.get("rule", ""),
                      message=f.get("message", ""), instructions=f.get("instructions", []),
                      cost_before=Cost.from_json(f.get("current")),
                      cost_after=Cost.from_json(f.get("proposed")),
                      value=cause.get("holds"), sharding=cause.get("sharding"),
                      better_sharding=cause.get("better_sharding"),
                      proposed_hlo=f.get("proposed_hlo", ""), proof=f.get("proof", ""))
    if finding.better_sharding and mesh is not None:
      finding.hint, finding.hint_text = to_partition_spec(finding.better_sharding, mesh)
      if finding.hint is None:
        finding.hint_text = f"{finding.better_sharding} (no PartitionSpec: {finding.hint_text})"
    findings.append(finding)
  return findings


def check(f, *args, mesh=None, in_shardings=None, out_shardings=None,
          partitioner: Union[str, Sequence[str]] = "shardy", trials: int = 2, seed: int = 1,
          lint: bool = True, execute: bool = True, html: Optional[str] = None,
          workdir: Optional[str] = None, timeout: Optional[float] = None,
          static_argnums: Sequence[int] = (), inject_bug: Optional[str] = None,
          **kwargs: Any) -> Report:
  """Checks XLA's SPMD partitioning of `f` on arguments shaped like `args`.

  `in_shardings` / `out_shardings` are PartitionSpecs over `mesh` (or NamedShardings), as for
  jax.jit. `partitioner`: "shardy" (the default, as jax compiles), "gspmd" (XLA's GSPMD),
  "both", or "reference" (ours). Each XLA partitioner compiles what jax lowers for it (Shardy:
  the sdy dialect; GSPMD: jax_use_shardy_partitioner=False) with jax.jit's compile options.
  Returns a Report (`.holds`, `.first_wrong_device`, `.first_divergence`, `.cost`,
  `.findings`); raises SpmdcheckError with the binary's message when it refuses the module.
  `inject_bug` switches on one of the reference partitioner's injected bugs (to see a failure).
  """
  specs = partitioner_spec(partitioner).split(",")
  workdir = workdir or tempfile.mkdtemp(prefix="spmdcheck-")
  os.makedirs(workdir, exist_ok=True)
  name = re.sub(r"[^A-Za-z0-9_]", "_", getattr(f, "__name__", "f"))
  dump = os.path.join(workdir, "dump")
  # One lowering per mode: GSPMD's for `xla`, Shardy's (jax's default) for the rest.
  groups = [(False, [s for s in specs if s == "xla"]),
            (True, [s for s in specs if s != "xla"])]
  results = []
  first_path = None
  lowering_errors = []
  for shardy, group in groups:
    if not group:
      continue
    try:
      text, devices = lower(f, *args, mesh=mesh, in_shardings=in_shardings,
                            out_shardings=out_shardings, static_argnums=static_argnums,
                            shardy=shardy, **kwargs)
    except Exception as e:  # jax refuses the function in this mode (e.g. unreduced for GSPMD)
      lowering_errors.append(e)
      mode = "Shardy" if shardy else "GSPMD (jax_use_shardy_partitioner=False)"
      for spec in group:
        results.append({"partitioner": spec, "verdict": "unknown", "status": "unsupported",
                        "message": f"jax cannot lower the function for {mode}: "
                                   f"{type(e).__name__}: {e}"})
      continue
    path = os.path.join(workdir, f"{name}.{'sdy' if shardy else 'gspmd'}.mlir")
    with open(path, "w") as out:
      out.write(text)
    first_path = first_path or path
    command = ["check", path, "--partitioner", ",".join(group), "--format", "json", "--trials",
               str(trials), "--seed", str(seed), "--dump", dump, "--num-partitions",
               str(devices)]
    if not execute:
      command.append("--no-execute")
    if inject_bug:
      command += ["--inject-bug", inject_bug]
    if html:
      command += ["--html", html]
    done = _binary.run(command, timeout=timeout)
    try:
      results += json.loads(done.stdout)["results"]
    except (ValueError, KeyError) as e:
      raise _binary.SpmdcheckError(
          f"spmdcheck check printed no JSON ({e}): {done.stderr.strip() or done.stdout[:500]}",
          done.command, done.exit_code) from None
  if lowering_errors and first_path is None:
    raise lowering_errors[0]  # jax lowers it for none of the partitioners: the function's error
  order = {spec: i for i, spec in enumerate(specs)}
  results.sort(key=lambda r: order.get(r.get("partitioner", ""), len(order)))
  report = Report(results=[PartitionerResult.from_json(r) for r in results],
                  hlo_path=first_path or "", workdir=workdir, html_path=html)
  if lint:
    for r in report.results:
      partitioned = os.path.join(dump, f"{_safe(r.partitioner)}.partitioned.hlo")
      received = os.path.join(dump, f"{_safe(r.partitioner)}.received.hlo")
      if os.path.exists(partitioned):
        r.findings = _lint(partitioned, received if os.path.exists(received) else None, mesh,
                           timeout)
  return report


def lint_module(path: str, mesh=None, global_path: Optional[str] = None,
                timeout: Optional[float] = None):
  """Lints a partitioned HLO (or StableHLO) module: its findings, each hint also as a
  PartitionSpec over `mesh` when one exists."""
  args = ["lint", path, "--format", "json"]
  if global_path:
    args += ["--global", global_path]
  return _findings(_binary.run(args, timeout=timeout), mesh)
