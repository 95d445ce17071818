"""A JAX-level fuzz campaign: `python -m spmdcheck.fuzz --seconds T --seed S --out DIR`.

Draws random JAX programs (`spmdcheck.programs`: a mesh, inputs with PartitionSpecs, ops from
elementwise to scan/grad/shard_map/reshard) and checks each with `spmdcheck.check` under XLA's
partitioners (Shardy and GSPMD by default): the oracle and XLA's own executions judge them. A
failure gets a signature as the HLO campaign names it (`spmdcheck check`'s `signature:` line,
e.g. `shardy.miscompile.convolution`); one that matches corpus/xla-findings/known.json is
counted as known (a guarded signature as `spmdcheck check` matches it on the module). A new
one is reduced on the JAX program (its recorded choices, replayed with ops deleted and choices
simplified, while the signature stays) and written to DIR/<signature>/:
repro.py (public jax API only: exits 1 while the sharded run differs from the reference or XLA
fails, 0 when they agree), program.json, module.mlir (what jax lowered), check.txt (spmdcheck's
report) and finding.json. The run ends within T + 10% wall time, reductions included; the same
seed draws the same programs (`--dry-run N` lists them, `--print-program I` prints one).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from . import programs as pg

PARTITIONERS = ("shardy", "gspmd")
# spmdcheck's --partitioner spec (and signature prefix) of each name.
_SPEC = {"shardy": "shardy", "gspmd": "xla", "xla": "xla"}
_NAME = {"shardy": "shardy", "xla": "gspmd", "gspmd": "gspmd"}
# Outcomes of `spmdcheck check` that have a signature (the rest are plain unknowns).
_SIGNED_STATUS = ("fails", "crash", "rejected", "timeout")
_SIGNED_FINDING = ("oracle-only", "oracle-disagrees", "reads-input-padding",
                   "round-trip-changes-meaning")


def _ensure_devices(n: int = 8) -> None:
  """Virtual CPU devices for jax (before jax is imported)."""
  flags = os.environ.get("XLA_FLAGS", "")
  if "xla_force_host_platform_device_count" not in flags:
    os.environ["XLA_FLAGS"] = (flags + f" --xla_force_host_platform_device_count={n}").strip()
  os.environ.setdefault("JAX_PLATFORMS", "cpu")


def repo_root() -> str:
  return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_known_path() -> str:
  return os.path.join(repo_root(), "corpus", "xla-findings", "known.json")


@dataclasses.dataclass
class KnownFindings:
  """corpus/xla-findings/known.json as the JAX-level campaign triages with it.

  `plain`: signature -> the known finding's name. `names`: every finding's name. A guarded
  signature (`guarded_signatures`: the signature counts only when the module holds an op or a
  trigger it names) is matched by `spmdcheck check`, which has the module: its report's
  `known finding: NAME` line is taken when NAME is in this file (so `--known none` or another
  file still decides what counts as known).
  """
  plain: Dict[str, str] = dataclasses.field(default_factory=dict)
  names: Set[str] = dataclasses.field(default_factory=set)

  def __bool__(self) -> bool:
    return bool(self.names)

  def name_of(self, outcome: "Outcome") -> str:
    """The known finding `outcome` is, else ""."""
    if outcome.signature in self.plain:
      return self.plain[outcome.signature]
    for name in outcome.check_known:
      if name in self.names:
        return name
    return ""


def load_known(path: Optional[str]) -> KnownFindings:
  """The known findings of `path` (corpus/xla-findings/known.json); empty for None or a missing
  file."""
  known = KnownFindings()
  if not path or not os.path.exists(path):
    return known
  with open(path) as f:
    data = json.load(f)
  for finding in data.get("findings", []):
    name = finding.get("name", "?")
    known.names.add(name)
    for signature in finding.get("signatures", []):
      known.plain.setdefault(signature, name)
  return known


def known_names_in(report: str) -> Tuple[str, ...]:
  """The names on `spmdcheck check`'s `known finding(s): NAME (status, upstream); ...` line."""
  m = re.search(r"^known findings?: (.*)$", report, re.MULTILINE)
  if not m:
    return ()
  return tuple(re.findall(r"(?:^|; )([A-Za-z0-9_.\-]+) \(", m.group(1)))


def sanitized(text: str) -> str:
  """A signature as a folder name (as the HLO campaign writes it)."""
  return re.sub(r"[^A-Za-z0-9.\-]", "_", text)


# ---------------------------------------------------------------------------------------------
# Checking.


@dataclasses.dataclass
class Outcome:
  """One partitioner's check of one program."""
  partitioner: str  # shardy | gspmd
  verdict: str      # holds | fails | unknown
  status: str = ""
  finding: str = ""
  message: str = ""
  confirmed: bool = False   # XLA's own execution showed the failure
  signature: str = ""
  claim: bool = False       # a bug claim (not: to investigate)
  check_text: str = ""      # spmdcheck check's text report (failures)
  module: str = ""          # the lowered module's path
  reproduce: str = ""
  check_known: Tuple[str, ...] = ()  # the known findings check's report names (guards applied)


def _parse_signature(text: str) -> Tuple[str, bool]:
  m = re.search(r"^signature: (\S+)(.*)$", text, re.MULTILINE)
  if not m:
    return "", False
  return m.group(1), "not a bug claim" not in m.group(2)


def _text_check(args: Sequence[str], timeout: float) -> Tuple[str, bool, str]:
  """Runs `spmdcheck check ...` (text report): (signature, claim, report)."""
  from . import _binary
  done = _binary.run(list(args), timeout=timeout)
  signature, claim = _parse_signature(done.stdout)
  return signature, claim, done.stdout + (("\n" + done.stderr) if done.stderr.strip() else "")


def _binary_trouble(e: Exception, name: str, spec: str) -> Outcome:
  """The outcome when the spmdcheck binary did not answer: a timeout; `unavailable` when it
  cannot be run at all (missing, not executable, being rebuilt: the campaign waits and tries
  the program again); else an error of spmdcheck's (exit 2: it refused the module)."""
  text = str(e)
  if "did not finish" in text:
    return Outcome(name, "unknown", "timeout", "", text, signature=f"{spec}.timeout")
  exit_code = getattr(e, "exit_code", None)
  if (isinstance(e, OSError) or "not an executable" in text or "was not found" in text or
      exit_code in (126, 127)):
    return Outcome(name, "unknown", "unavailable", "", f"the spmdcheck binary: {text}")
  return Outcome(name, "unknown", "error", "", f"spmdcheck refused the module: {text}")


def check_program(program: pg.Program, partitioner: str, workdir: str, timeout: float,
                  built: Optional[pg.Built] = None) -> Outcome:
  """`spmdcheck.check` of `program` under one partitioner; for a failure also its signature
  (spmdcheck check's text report of the same module, seed and trials)."""
  import spmdcheck
  from . import _binary
  built = built or pg.build(program)
  spec = _SPEC[partitioner]
  name = _NAME[partitioner]
  os.makedirs(workdir, exist_ok=True)
  start = time.monotonic()
  try:
    report = spmdcheck.check(built.f, *built.input_structs(), mesh=built.mesh,
                             in_shardings=built.in_specs, out_shardings=built.out_specs,
                             partitioner=spec, lint=False, workdir=workdir, timeout=timeout)
  except (_binary.SpmdcheckError, OSError) as e:
    return _binary_trouble(e, name, spec)
  except Exception as e:  # jax refused to lower the program for this partitioner
    return Outcome(name, "unknown", "lowering", "",
                   f"jax cannot lower it: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
  r = report.results[0]
  raw = r.raw
  out = Outcome(name, r.verdict, raw.get("status", ""), raw.get("finding") or "", r.message,
                confirmed=(r.xla_end_to_end or {}).get("verdict") == "fails",
                module=report.hlo_path or "", reproduce=r.reproduce)
  if out.status in _SIGNED_STATUS or out.finding in _SIGNED_FINDING:
    if out.status == "timeout":
      out.signature, out.claim = f"{spec}.timeout", False
    elif r.reproduce:
      left = max(5.0, timeout - (time.monotonic() - start))
      try:
        out.signature, out.claim, out.check_text = _text_check(shlex.split(r.reproduce)[1:], left)
        out.check_known = known_names_in(out.check_text)
      except _binary.SpmdcheckError as e:
        out.check_text = f"spmdcheck check failed: {e}"
  return out


def check_program_text(program: pg.Program, partitioner: str, workdir: str,
                       timeout: float) -> Outcome:
  """The same check as `check_program` in one binary run: the module jax lowers for the
  partitioner (`spmdcheck.lower`), `spmdcheck check` with check's seed and trials, its text
  report (verdict and signature). The reducer's check."""
  import spmdcheck
  from . import _binary
  name = _NAME[partitioner]
  spec = _SPEC[partitioner]
  try:
    built = pg.build(program)
    text, devices = spmdcheck.lower(built.f, *built.input_structs(), mesh=built.mesh,
                                    in_shardings=built.in_specs,
                                    out_shardings=built.out_specs, shardy=(name == "shardy"))
  except Exception as e:
    return Outcome(name, "unknown", "lowering", "", f"jax cannot lower it: {e}")
  os.makedirs(workdir, exist_ok=True)
  path = os.path.join(workdir, f"f.{'sdy' if name == 'shardy' else 'gspmd'}.mlir")
  with open(path, "w") as f:
    f.write(text)
  args = ["check", path, "--partitioner", spec, "--seed", "1", "--trials", "2",
          "--num-partitions", str(devices)]
  try:
    signature, claim, report = _text_check(args, timeout)
  except (_binary.SpmdcheckError, OSError) as e:
    return _binary_trouble(e, name, spec)
  m = re.search(r"^verdict: (\w+)", report, re.MULTILINE)
  reason = re.search(r"^(?:reason|finding): (.*)$", report, re.MULTILINE)
  return Outcome(name, m.group(1) if m else "unknown", "", "",
                 reason.group(1) if reason else "", confirmed="confirmed by XLA" in report,
                 signature=signature, claim=claim, check_text=report, module=path,
                 reproduce="spmdcheck " + " ".join(shlex.quote(a) for a in args),
                 check_known=known_names_in(report))


# ---------------------------------------------------------------------------------------------
# Reduction: replay the program's recorded choices with ops deleted and choices simplified,
# keeping the candidates that fail with the same signature.


class _OutOfTime(Exception):
  pass


@dataclasses.dataclass
class Reduction:
  program: pg.Program
  choices: List[int]
  outcome: Optional[Outcome]  # the check of `program` (None: nothing smaller failed)
  candidates: int = 0
  seconds: float = 0.0


def reduce_program(program: pg.Program, choices: Sequence[int], config: pg.GenConfig,
                   interesting: Callable[[pg.Program], Optional[Outcome]],
                   deadline: float,
                   stop: Optional[Callable[[Outcome], bool]] = None) -> Reduction:
  """Greedy reduction on the choice sequence: delete each op's choices (last op first), then
  set each op's and the mesh's choices to their simplest, then single choices; each candidate
  that is smaller (fewer ops, or as many and simpler choices) and still `interesting` is kept.
  Stops at `deadline` (time.monotonic()), or after a kept candidate whose outcome `stop`s."""
  start = time.monotonic()
  best = Reduction(program, list(choices), None)
  seen = {program.fingerprint()}

  def attempt(offsets: List[int]) -> bool:
    if time.monotonic() >= deadline:
      raise _OutOfTime()
    candidate, used = pg.replay(offsets, config, name=program.name,
                                value_seed=program.value_seed)
    fingerprint = candidate.fingerprint()
    if fingerprint in seen:
      return False
    seen.add(fingerprint)
    if (candidate.size(), sum(used)) >= (best.program.size(), sum(best.choices)):
      return False
    best.candidates += 1
    outcome = interesting(candidate)
    if outcome is None:
      return False
    best.program, best.choices, best.outcome = candidate, list(used), outcome
    if stop is not None and stop(outcome):
      raise _OutOfTime()
    return True

  def marks() -> List[int]:
    ch = pg.ReplayChooser(best.choices)
    pg.generate(ch, config)
    return ch.marks + [len(best.choices)]

  try:
    progress = True
    while progress:
      progress = False
      # 1. Delete op slots (the op count is the first choice).
      bounds = marks()
      for j in reversed(range(len(bounds) - 1)):
        bounds = marks()
        if j >= len(bounds) - 1 or best.choices[0] == 0:
          continue
        offsets = best.choices[:bounds[j]] + best.choices[bounds[j + 1]:]
        offsets[0] -= 1
        if attempt(offsets):
          progress = True
      # 2. Simplify whole op slots (keep the kind), then the mesh and first input.
      bounds = marks()
      chunks = [(bounds[j] + 1, bounds[j + 1]) for j in range(len(bounds) - 1)]
      chunks.append((1, bounds[0]))
      for lo, hi in chunks:
        if hi > lo and any(best.choices[lo:hi]):
          offsets = list(best.choices)
          offsets[lo:hi] = [0] * (hi - lo)
          if attempt(offsets):
            progress = True
      # 3. Single choices, from the start.
      for k in range(1, len(best.choices)):
        if k < len(best.choices) and best.choices[k] > 0:
          offsets = list(best.choices)
          offsets[k] = 0
          if attempt(offsets):
            progress = True
  except _OutOfTime:
    pass
  best.seconds = time.monotonic() - start
  return best


# The HLO opcode a single jax op of each kind lowers to (for `single_op_signature`).
_OPCODE = {"slice": "slice", "dynamic_slice": "dynamic-slice",
           "dynamic_update_slice": "dynamic-update-slice", "conv": "convolution",
           "einsum": "dot", "gather": "gather", "scatter": "scatter", "sort": "sort",
           "cumulative": "reduce-window", "reduce": "reduce", "transpose": "transpose",
           "reshape": "reshape"}


def single_op_signature(program: pg.Program, signature: str) -> str:
  """When a reduced program is one op (besides reshards): `signature` with the op the HLO
  campaign would name (`xla.miscompile.all-gather` of a lone strided slice ->
  `xla.miscompile.slice`); else ""."""
  kinds = [op.kind for op in program.ops if op.kind != "reshard"]
  if len(kinds) != 1 or kinds[0] not in _OPCODE or signature.count(".") < 2:
    return ""
  prefix = ".".join(signature.split(".")[:2])
  return f"{prefix}.{_OPCODE[kinds[0]]}"


# ---------------------------------------------------------------------------------------------
# Repro scripts.

_REPRO_HEAD = '''"""{title}

Public jax API only. Usage: python repro.py [shardy|gspmd]  (default: {partitioner})
Runs `f` under jax.jit with IN_SPECS/OUT_SPECS on MESH (the sharded run) and without shardings
(the reference: one device, or replicated over MESH when f refers to it), on a few seeded
inputs. Exit 0: they agree; 1: they differ, or XLA failed or crashed on the sharded program;
2: the reference itself failed (nothing to compare with).
{note}"""
import os
import subprocess
import sys

if __name__ == "__main__" and not os.environ.get("SPMDCHECK_REPRO_CHILD"):
  # The work runs in a child process: an XLA crash (an abort) is then reported as exit 1.
  child = subprocess.run([sys.executable, os.path.abspath(__file__), *sys.argv[1:]],
                         env=dict(os.environ, SPMDCHECK_REPRO_CHILD="1"))
  if child.returncode in (0, 1, 2):
    sys.exit(child.returncode)
  how = f"signal {{-child.returncode}}" if child.returncode < 0 else f"exit {{child.returncode}}"
  print(f"XLA crashed ({{how}})")
  sys.exit(1)

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                             " --xla_force_host_platform_device_count={devices}").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# --- the program, as spmdcheck.programs rendered it ---
'''

_REPRO_MAIN = '''

# --- the check ---

def main(mode):
  jax.config.update("jax_use_shardy_partitioner", mode == "shardy")
  print("jax", jax.__version__, "partitioner", mode)
  for seed in (VALUE_SEED, VALUE_SEED + 1, VALUE_SEED + 2):
    args = inputs(seed)
    try:
      reference = run_reference(args)
    except Exception as e:
      print(f"the reference run failed: {type(e).__name__}: {str(e).splitlines()[0][:500]}")
      return 2
    try:
      sharded = run_sharded(args)
    except Exception as e:
      print(f"XLA failed on the sharded program: {type(e).__name__}: "
            f"{str(e).splitlines()[0][:500]}")
      return 1
    found = differences(sharded, reference)
    if found:
      print(f"inputs(seed={seed}): the sharded run differs from the reference:")
      for line in found:
        print("  " + line)
      return 1
  print("the sharded run agrees with the reference")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else {partitioner!r}))
'''


def repro_source(program: pg.Program, partitioner: str = "shardy", title: str = "",
                 note: str = "") -> str:
  """A self-contained repro.py for `program` (public jax API only)."""
  title = title or f"{program.name}: sharded vs un-sharded run of a generated JAX program."
  # Inside the docstring: no backslashes, no closing quotes.
  title, note = (t.replace("\\", "/").replace('"""', "'''") for t in (title, note))
  head = _REPRO_HEAD.format(title=title, partitioner=partitioner,
                            note=(note.rstrip() + "\n") if note else "",
                            devices=max(8, program.mesh.devices))
  return head + program.render() + _REPRO_MAIN.replace("{partitioner!r}", repr(partitioner))


def write_repro(path: str, program: pg.Program, partitioner: str = "shardy", title: str = "",
                note: str = "") -> str:
  with open(path, "w") as f:
    f.write(repro_source(program, partitioner, title, note))
  return path


def run_repro(path: str, partitioner: str, timeout: float) -> Optional[int]:
  """repro.py's exit code (None: it did not finish in `timeout`)."""
  env = dict(os.environ)
  env.pop("SPMDCHECK_REPRO_CHILD", None)
  try:
    proc = subprocess.run([sys.executable, path, partitioner], capture_output=True, text=True,
                          timeout=timeout, env=env)
  except subprocess.TimeoutExpired:
    return None
  return proc.returncode


# ---------------------------------------------------------------------------------------------
# The campaign.


@dataclasses.dataclass
class FindingRecord:
  signature: str
  partitioner: str
  claim: bool
  known_as: str
  first_case: int
  count: int = 1
  confirmed_by_xla: bool = False
  message: str = ""
  folder: str = ""
  ops_before: int = 0
  ops_after: int = 0
  reduce_candidates: int = 0
  reduce_seconds: float = 0.0
  repro_exit: Optional[int] = None
  reduced_to: str = ""  # the known signature its reduction reached

  def to_json(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)


@dataclasses.dataclass
class CaseRecord:
  index: int
  fingerprint: str
  ops: int
  kinds: List[str]
  seconds: float
  outcomes: Dict[str, str]
  signatures: Dict[str, str]
  messages: Dict[str, str]

  def to_json(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)


def _config(args: argparse.Namespace) -> pg.GenConfig:
  kinds = tuple(k for k in args.kinds.split(",") if k) if args.kinds else pg.KINDS
  unknown = [k for k in kinds if k not in pg.KINDS]
  if unknown:
    raise SystemExit(f"spmdcheck.fuzz: unknown op kinds {unknown}: {', '.join(pg.KINDS)}")
  return pg.GenConfig(max_ops=args.max_ops, kinds=kinds, max_devices=args.max_devices)


def _describe(program: pg.Program) -> str:
  mesh = ",".join(f"{n}={s}" for n, s in zip(program.mesh.names, program.mesh.sizes))
  kind = "explicit" if program.mesh.explicit else "auto"
  return f"{program.size()} ops [{' '.join(program.kinds())}] on {mesh} ({kind})"


def dry_run(seed: Any, count: int, config: pg.GenConfig, out: Any = sys.stdout) -> List[str]:
  lines = []
  for i in range(count):
    program, _ = pg.case(seed, i, config)
    line = f"program {i} {program.fingerprint()} {_describe(program)}"
    lines.append(line)
    print(line, file=out)
  return lines


def _partitioners(text: str) -> List[str]:
  names = []
  for name in text.split(","):
    name = name.strip()
    if not name:
      continue
    if name not in _SPEC:
      raise SystemExit(f"spmdcheck.fuzz: unknown partitioner {name!r} (shardy, gspmd)")
    names.append(_NAME[name])
  return names or list(PARTITIONERS)


def _write_finding(folder: str, record: FindingRecord, program: pg.Program, original: pg.Program,
                   choices: Sequence[int], outcome: Outcome, seed: Any) -> None:
  os.makedirs(folder, exist_ok=True)
  with open(os.path.join(folder, "program.json"), "w") as f:
    json.dump(program.to_json(), f, indent=1)
  with open(os.path.join(folder, "program.original.json"), "w") as f:
    json.dump(original.to_json(), f, indent=1)
  if outcome.module and os.path.exists(outcome.module):
    shutil.copyfile(outcome.module, os.path.join(folder, "module.mlir"))
  with open(os.path.join(folder, "check.txt"), "w") as f:
    f.write(outcome.check_text or outcome.message)
  title = (f"spmdcheck.fuzz finding {record.signature} (seed {seed}, program "
           f"{record.first_case}, reduced to {record.ops_after} ops).")
  note = f"spmdcheck said: {outcome.message.strip()[:400]}"
  write_repro(os.path.join(folder, "repro.py"), program, record.partitioner, title, note)
  meta = record.to_json()
  meta.update({"seed": seed, "choices": list(choices), "program_fingerprint":
               program.fingerprint(), "reproduce": f"python -m spmdcheck.fuzz --seed {seed} "
               f"--print-program {record.first_case}"})
  with open(os.path.join(folder, "finding.json"), "w") as f:
    json.dump(meta, f, indent=1)


def run_campaign(args: argparse.Namespace, start: float) -> int:
  config = _config(args)
  partitioners = _partitioners(args.partitioner)
  seed = args.seed
  budget = float(args.seconds)
  soft_end = start + budget
  hard_end = start + budget * 1.1
  out_dir = os.path.abspath(args.out)
  os.makedirs(out_dir, exist_ok=True)
  work_root = tempfile.mkdtemp(prefix=".work-", dir=out_dir)
  known_path = None if args.known == "none" else (args.known or default_known_path())
  known = load_known(known_path)
  print(f"spmdcheck.fuzz: seed {seed}, partitioners {','.join(partitioners)}, {budget:g} s, "
        f"out {out_dir}", flush=True)
  if known:
    print(f"known findings: {known_path} ({len(known.names)} findings, {len(known.plain)} plain "
          f"signatures; guarded ones as spmdcheck check matches them)", flush=True)

  _ensure_devices(max(8, config.max_devices))
  import jax  # noqa: F401 (after the device count is set)

  tallies: Dict[str, Dict[str, int]] = {p: {"holds": 0, "fails": 0, "unknown": 0}
                                         for p in partitioners}
  unknown_reasons: Dict[str, int] = {}
  findings: Dict[Tuple[str, str], FindingRecord] = {}
  cases: List[CaseRecord] = []
  invalid: List[Dict[str, Any]] = []
  durations: List[float] = []
  waited = 0
  reduce_seconds = args.reduce_seconds if args.reduce_seconds is not None else \
      min(90.0, budget / 4)
  index = args.first_program
  while True:
    now = time.monotonic()
    estimate = max(durations[-5:]) if durations else 8.0
    if now + estimate > soft_end or (args.programs and len(cases) >= args.programs):
      break
    program, choices = pg.case(seed, index, config)
    case_start = now
    workdir = os.path.join(work_root, f"p{index}")
    try:
      built = pg.build(program)
    except Exception as e:  # a generator bug: the program's own source fails
      invalid.append({"index": index, "error": f"{type(e).__name__}: {e}"})
      print(f"program {index}: INVALID (its source fails: {type(e).__name__}: {e})", flush=True)
      index += 1
      continue
    outcomes: List[Outcome] = []
    for p in partitioners:
      timeout = max(5.0, hard_end - time.monotonic() - 1.0)
      outcomes.append(check_program(program, p, os.path.join(workdir, p), timeout, built))
    if any(o.status == "unavailable" for o in outcomes):
      # The binary cannot be run (e.g. it is being rebuilt): wait, then the same program again.
      waited += 1
      message = next(o.message for o in outcomes if o.status == "unavailable")
      print(f"program {index}: {message[:200]}; waiting", flush=True)
      shutil.rmtree(workdir, ignore_errors=True)
      time.sleep(3.0)
      continue
    if all(o.status == "lowering" for o in outcomes):
      invalid.append({"index": index, "error": outcomes[0].message})
    duration = time.monotonic() - case_start
    durations.append(duration)
    record = CaseRecord(index, program.fingerprint(), program.size(), program.kinds(), duration,
                        {o.partitioner: o.verdict for o in outcomes},
                        {o.partitioner: o.signature for o in outcomes if o.signature},
                        {o.partitioner: o.message[:300] for o in outcomes
                         if o.verdict != "holds"})
    cases.append(record)
    words = []
    for o in outcomes:
      tallies[o.partitioner][o.verdict] = tallies[o.partitioner].get(o.verdict, 0) + 1
      if o.verdict == "unknown":
        reason = re.split(r"[:(\n]", o.message or o.status, maxsplit=1)[0][:70].strip()
        key = f"{o.partitioner}: {reason}"
        unknown_reasons[key] = unknown_reasons.get(key, 0) + 1
      text = f"{o.partitioner} {o.verdict}"
      if o.signature:
        text += f" ({o.signature}"
        name = known.name_of(o)
        text += f", known: {name})" if name else ", new)"
      words.append(text)
    print(f"program {index} {record.fingerprint} {_describe(program)}: {', '.join(words)} "
          f"[{duration:.1f} s]", flush=True)
    # Findings.
    for o in outcomes:
      if not o.signature:
        continue
      # One record per signature and known finding: a guarded signature is known in one
      # module and new in another.
      finding_key = (o.signature, known.name_of(o))
      if finding_key in findings:
        findings[finding_key].count += 1
        continue
      f = FindingRecord(o.signature, o.partitioner, o.claim, finding_key[1], index,
                        confirmed_by_xla=o.confirmed, message=o.message[:500],
                        ops_before=program.size(), ops_after=program.size())
      findings[finding_key] = f
      if f.known_as or o.status == "timeout":
        continue
      # New: reduce (while the signature stays), write the folder, run its repro. A smaller
      # candidate that fails with a known signature of the same kind (xla.miscompile.*) ends
      # the reduction: the finding is taken for that known one (the first diverging op of a
      # jax program is often a loop's or a collective's, downstream of the known bug's op).
      # The reduction may use the budget's 10% slack, less the time repro.py needs.
      deadline = min(time.monotonic() + reduce_seconds, hard_end - 25.0)
      kind = ".".join(o.signature.split(".")[:2]) + "."

      def interesting(candidate: pg.Program, p: str = o.partitioner,
                      wanted: str = o.signature, kind: str = kind) -> Optional[Outcome]:
        left = max(5.0, hard_end - time.monotonic() - 1.0)
        try:
          got = check_program_text(candidate, p, os.path.join(work_root, "reduce",
                                                              candidate.fingerprint()), left)
        except Exception:
          return None
        if got.signature == wanted or (known.name_of(got) and
                                       got.signature.startswith(kind) and got.claim):
          return got
        return None

      reduction = reduce_program(program, choices, config, interesting, deadline,
                                 stop=lambda got: bool(known.name_of(got)))
      final = reduction.outcome or o
      f.ops_after = reduction.program.size()
      f.reduce_candidates = reduction.candidates
      f.reduce_seconds = round(reduction.seconds, 1)
      if final.signature != o.signature:
        as_known, as_known_name = final.signature, known.name_of(final)
      else:
        as_known = single_op_signature(reduction.program, final.signature)
        as_known_name = known.plain.get(as_known, "")
      if as_known_name:
        f.known_as = as_known_name
        f.reduced_to = as_known
        final = dataclasses.replace(final, signature=as_known)
        print(f"  finding {o.signature}: reduced {f.ops_before} -> {f.ops_after} ops, it is "
              f"{final.signature} (known: {f.known_as})", flush=True)
        continue
      f.folder = os.path.join(out_dir, sanitized(o.signature))
      _write_finding(f.folder, f, reduction.program, program, reduction.choices, final, seed)
      left = hard_end - time.monotonic() - 1.0
      if left > 15:
        f.repro_exit = run_repro(os.path.join(f.folder, "repro.py"), o.partitioner,
                                 min(120.0, left))
        _write_finding(f.folder, f, reduction.program, program, reduction.choices, final, seed)
      print(f"  new finding {o.signature}: reduced {f.ops_before} -> {f.ops_after} ops "
            f"({f.reduce_candidates} candidates, {f.reduce_seconds:.0f} s), "
            f"repro.py exit {f.repro_exit}: {f.folder}", flush=True)
    shutil.rmtree(workdir, ignore_errors=True)
    index += 1
  shutil.rmtree(work_root, ignore_errors=True)
  elapsed = time.monotonic() - start
  summary = {
      "seed": seed, "seconds": budget, "elapsed": round(elapsed, 1), "cases": len(cases),
      "cases_per_second": round(len(cases) / elapsed, 3) if elapsed > 0 else 0.0,
      "partitioners": partitioners, "verdicts": tallies, "unknown_reasons": unknown_reasons,
      "findings": [f.to_json() for f in findings.values()],
      "new_findings": sum(1 for f in findings.values() if not f.known_as),
      "known_findings": sum(1 for f in findings.values() if f.known_as),
      "invalid_programs": invalid, "known": known_path, "binary_unavailable_waits": waited,
      "programs": [c.to_json() for c in cases],
      "reproduce": f"python -m spmdcheck.fuzz --seed {seed} --seconds {budget:g} "
                   f"--partitioner {','.join(partitioners)}"}
  with open(os.path.join(out_dir, "summary.json"), "w") as out:
    json.dump(summary, out, indent=1)
  print(_summary_text(summary), flush=True)
  return 1 if any(f.claim and not f.known_as for f in findings.values()) else 0


def _summary_text(s: Dict[str, Any]) -> str:
  lines = [f"== spmdcheck.fuzz summary: seed {s['seed']}, {s['cases']} programs in "
           f"{s['elapsed']:.1f} s ({s['cases_per_second']:.2f} programs/s)"]
  for p in s["partitioners"]:
    t = s["verdicts"][p]
    lines.append(f"  {p}: holds {t.get('holds', 0)}, fails {t.get('fails', 0)}, "
                 f"unknown {t.get('unknown', 0)}")
  for reason, n in sorted(s["unknown_reasons"].items(), key=lambda kv: -kv[1]):
    lines.append(f"    unknown x{n}: {reason}")
  lines.append(f"  findings: {s['new_findings']} new, {s['known_findings']} known")
  for f in s["findings"]:
    status = f"known: {f['known_as']}" if f["known_as"] else "new"
    if f["reduced_to"]:
      status += f", reduces to {f['reduced_to']}"
    claim = "" if f["claim"] else " (to investigate: not a bug claim)"
    confirmed = ", confirmed by XLA's own execution" if f["confirmed_by_xla"] else ""
    line = (f"    {f['signature']} [{status}]{claim} x{f['count']}, first in program "
            f"{f['first_case']}{confirmed}")
    if f["folder"]:
      line += (f"; reduced {f['ops_before']} -> {f['ops_after']} ops, repro.py exit "
               f"{f['repro_exit']}: {f['folder']}")
      if f["repro_exit"] == 0:
        # The jax-level reference (replicated over the mesh where the program uses it) agrees
        # with the sharded run: the failure may be spmdcheck's reference run's, not XLA's.
        line += " (NOT shown by repro.py: investigate before reporting)"
    lines.append(line)
  if s["invalid_programs"]:
    lines.append(f"  invalid programs (generator bugs): {len(s['invalid_programs'])}")
  lines.append(f"reproduce: {s['reproduce']}")
  return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
  start = time.monotonic()
  parser = argparse.ArgumentParser(
      prog="python -m spmdcheck.fuzz",
      description="Fuzz XLA's SPMD partitioners with random JAX programs (docs/jax-fuzz.md).")
  parser.add_argument("--seconds", type=float, default=60.0,
                      help="wall-time budget; the run ends within 110%% of it")
  parser.add_argument("--seed", type=int, default=None, help="default: a random seed (printed)")
  parser.add_argument("--out", default="jax-fuzz-out", help="findings and summary.json go here")
  parser.add_argument("--partitioner", default="shardy,gspmd",
                      help="comma-separated: shardy, gspmd (default both)")
  parser.add_argument("--max-ops", type=int, default=6)
  parser.add_argument("--max-devices", type=int, default=8)
  parser.add_argument("--kinds", default="", help=f"op kinds (default all: {','.join(pg.KINDS)})")
  parser.add_argument("--programs", type=int, default=0, help="stop after this many programs")
  parser.add_argument("--first-program", type=int, default=0)
  parser.add_argument("--reduce-seconds", type=float, default=None,
                      help="per new finding (default min(90, seconds/4))")
  parser.add_argument("--known", default=None,
                      help="known findings (default corpus/xla-findings/known.json; none)")
  parser.add_argument("--dry-run", type=int, default=0, metavar="N",
                      help="only list the first N programs of the seed")
  parser.add_argument("--print-program", type=int, default=None, metavar="I",
                      help="print program I of the seed (its source) and exit")
  parser.add_argument("--repro", type=int, default=None, metavar="I",
                      help="print a repro.py for program I of the seed and exit")
  args = parser.parse_args(argv)
  if args.seed is None:
    args.seed = random.SystemRandom().randrange(1, 10**6)
  config = _config(args)
  if args.print_program is not None:
    program, _ = pg.case(args.seed, args.print_program, config)
    print(program.render())
    return 0
  if args.repro is not None:
    program, _ = pg.case(args.seed, args.repro, config)
    print(repro_source(program, _partitioners(args.partitioner)[0]))
    return 0
  if args.dry_run:
    print(f"spmdcheck.fuzz: seed {args.seed} (dry run: {args.dry_run} programs)")
    dry_run(args.seed, args.dry_run, config)
    return 0
  return run_campaign(args, start)


if __name__ == "__main__":
  sys.exit(main())
