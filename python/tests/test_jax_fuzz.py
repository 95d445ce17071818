"""python -m spmdcheck.fuzz: a short campaign ends within its budget, checks programs with
spmdcheck.check under Shardy and GSPMD, prints its seed and summary; the same seed draws the
same programs; a repro.py written for a program that partitions correctly exits 0; findings
are triaged against corpus/xla-findings/known.json by signature."""

import json
import os
import re
import subprocess
import sys
import time


from spmdcheck import fuzz
from spmdcheck import programs as pg
from spmdcheck.programs import MeshSpec, Op, Program, Spec, Tensor

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(args, timeout):
  env = dict(os.environ)
  env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
  return subprocess.run([sys.executable, "-m", "spmdcheck.fuzz", *args], capture_output=True,
                        text=True, timeout=timeout, env=env)


def test_campaign_within_budget_with_its_seed_and_the_same_programs(tmp_path):
  seconds = 20
  start = time.monotonic()
  proc = _run(["--seconds", str(seconds), "--seed", "1", "--out", str(tmp_path)], timeout=120)
  elapsed = time.monotonic() - start
  assert proc.returncode in (0, 1), proc.stderr[-3000:]
  assert elapsed <= seconds * 1.1 + 3, elapsed  # (+3 s: the interpreter's start)
  assert "seed 1" in proc.stdout
  summary = json.loads((tmp_path / "summary.json").read_text())
  assert summary["seed"] == 1 and summary["cases"] > 0, proc.stdout
  assert summary["elapsed"] <= seconds * 1.1
  for partitioner in ("shardy", "gspmd"):
    counts = summary["verdicts"][partitioner]
    assert sum(counts.values()) == summary["cases"]
  assert not summary["invalid_programs"], summary["invalid_programs"]
  assert "programs/s" in proc.stdout and "findings:" in proc.stdout
  # The same seed draws the same programs: the dry run lists what the campaign checked.
  dry = _run(["--seed", "1", "--dry-run", "3"], timeout=60)
  again = _run(["--seed", "1", "--dry-run", "3"], timeout=60)
  assert dry.returncode == 0 and dry.stdout == again.stdout
  listed = re.findall(r"^program (\d+) ([0-9a-f]{12}) ", dry.stdout, re.MULTILINE)
  assert len(listed) == 3
  for case, (index, fingerprint) in zip(summary["programs"], listed):
    assert case["index"] == int(index) and case["fingerprint"] == fingerprint
  # Another seed, other programs.
  other = _run(["--seed", "2", "--dry-run", "3"], timeout=60)
  assert re.findall(r" ([0-9a-f]{12}) ", other.stdout) != [f for _, f in listed]
  printed = _run(["--seed", "1", "--print-program", "0"], timeout=60)
  assert printed.stdout.strip() == pg.case(1, 0)[0].render().strip()


def _passing_program():
  """x @ w on a 2x4 mesh, then tanh and a sum over rows: partitions correctly."""
  mesh = MeshSpec(("x", "y"), (2, 4), ("auto", "auto"))
  x = Tensor("x0", (8, 16))
  w = Tensor("x1", (16, 8))
  ops = (
      Op("einsum", "v0", ("x0", "x1"), {"subscripts": "ab,bz->az"}, (8, 8)),
      Op("unary", "v1", ("v0",), {"fn": "tanh"}, (8, 8)),
      Op("reduce", "v2", ("v1",), {"fn": "sum", "axes": (0,)}, (8,)),
  )
  return Program(mesh, (x, w), (Spec((("x",), ("y",))), Spec((("y",), ()))), ops, ("v2",),
                 (Spec((("y",),)),), name="handmade")


def test_a_written_repro_of_a_correct_program_exits_0(tmp_path):
  program = _passing_program()
  path = fuzz.write_repro(str(tmp_path / "repro.py"), program, "shardy")
  source = open(path).read()
  assert "_src" not in source and "jax.jit" in source and "NamedSharding" in source
  for mode in ("shardy", "gspmd"):
    proc = subprocess.run([sys.executable, path, mode], capture_output=True, text=True,
                          timeout=180, env={k: v for k, v in os.environ.items()
                                            if k != "XLA_FLAGS"})
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "agrees" in proc.stdout


def test_a_repro_exits_1_when_the_sharded_run_differs(tmp_path):
  # A stand-in for an XLA bug: the "sharded" run adds one (the harness is the same).
  program = _passing_program()
  path = fuzz.write_repro(str(tmp_path / "repro.py"), program, "shardy")
  source = open(path).read().replace(
      "    return [np.asarray(o) for o in out]\n\n\ndef run_reference",
      "    return [np.asarray(o) + 1 for o in out]\n\n\ndef run_reference", 1)
  with open(path, "w") as f:
    f.write(source)
  proc = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=180)
  assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
  assert "differs" in proc.stdout


def test_a_guarded_signature_is_known_as_spmdcheck_check_matches_it_on_the_module():
  # The silent form of noop-op-sharding-overwrites-shard-to-full: its signature is guarded in
  # known.json (it counts only when the module holds the trigger), so the plain table does not
  # know it; `spmdcheck check` evaluates the guard on the module and names the finding.
  module = os.path.join(fuzz.repo_root(), "corpus", "xla-findings",
                        "noop-op-sharding-overwrites-shard-to-full", "miscompile_module.hlo")
  signature, claim, report = fuzz._text_check(["check", module, "--partitioner", "xla"], 300)
  assert signature == "xla.round-trip-changes-meaning.transpose", report
  assert not claim
  known = fuzz.load_known(fuzz.default_known_path())
  assert signature not in known.plain
  outcome = fuzz.Outcome("gspmd", "unknown", signature=signature, check_text=report,
                         check_known=fuzz.known_names_in(report))
  assert outcome.check_known == ("noop-op-sharding-overwrites-shard-to-full",)
  assert known.name_of(outcome) == "noop-op-sharding-overwrites-shard-to-full"
  # With no known findings (--known none), check's naming does not make it known.
  assert fuzz.load_known(None).name_of(outcome) == ""
  # Several names on one line (a signature shared by several findings).
  line = ("known findings: a-b (open, https://x/1; y); c.d (fixed in 0.12, z) "
          "(corpus/xla-findings; one signature, several bugs: compare with their READMEs)\n")
  assert fuzz.known_names_in(line) == ("a-b", "c.d")
  assert fuzz.known_names_in("signature: x\n") == ()


def test_signatures_are_triaged_against_the_known_findings(tmp_path):
  known = fuzz.load_known(fuzz.default_known_path())
  assert known.plain.get("xla.miscompile.slice") == "strided-slice-start-dropped"
  assert known.plain.get("shardy.miscompile.slice") == "strided-slice-start-dropped"
  text = "verdict: fails\nsignature: shardy.miscompile.slice\nreproduce: spmdcheck check m\n"
  assert fuzz._parse_signature(text) == ("shardy.miscompile.slice", True)
  assert fuzz._parse_signature("signature: xla.oracle-only.dot (to investigate: not a bug "
                               "claim)\n") == ("xla.oracle-only.dot", False)
  assert fuzz.sanitized("cmd:a b.crash.x") == "cmd_a_b.crash.x"
  # A reduced program of one strided slice whose first divergence is XLA's all-gather is the
  # HLO campaign's xla.miscompile.slice.
  mesh = MeshSpec(("z",), (3,), ("auto",))
  lone_slice = Program(mesh, (Tensor("x0", (8, 3)),), (Spec(((), ("z",))),),
                       (Op("slice", "v0", ("x0",), {"dim": 1, "start": 2, "stop": 3, "step": 3,
                                                     "size": 3}, (8, 1)),), ("v0",))
  assert "x0[:, 2::3]" in lone_slice.render()
  assert fuzz.single_op_signature(lone_slice, "xla.miscompile.all-gather") == \
      "xla.miscompile.slice"
  assert fuzz.single_op_signature(_passing_program(), "xla.miscompile.dot") == ""


def test_the_reducer_keeps_the_failure_and_shrinks_the_program():
  # "Failing" = the program has a cumulative op (a stand-in for a check's signature).
  program, choices = pg.case("reduce", 3)
  i = 3
  while "cumulative" not in program.kinds() or program.size() < 4:
    i += 1
    program, choices = pg.case("reduce", i)

  def interesting(candidate):
    if "cumulative" in candidate.kinds():
      return fuzz.Outcome("shardy", "fails", signature="shardy.miscompile.reduce-window")
    return None

  result = fuzz.reduce_program(program, choices, pg.GenConfig(), interesting,
                               time.monotonic() + 60)
  assert result.outcome is not None
  assert "cumulative" in result.program.kinds()
  assert result.program.size() <= 2 < program.size(), result.program.render()
  assert pg.replay(result.choices)[0].render().split("def f")[1] == \
      result.program.render().split("def f")[1]
