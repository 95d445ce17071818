"""spmdcheck.mpmd: Shardy's MPMD pipeline partitioner (jaxlib._sdy_mpmd) under test. A fixed
two-stage pipeline holds with the expected structure; injected corruptions of a fragment's
output and of a transfer fail with a concrete counterexample; a program the partitioner refuses
is unknown with its diagnostic; a jaxlib abort is a crash, not a dead test process; generated
programs and the campaign are deterministic per seed. Each check runs jaxlib in a worker
process (8 CPU devices)."""

import json
import os
import subprocess
import sys

import pytest

from spmdcheck import mpmd
from spmdcheck.mpmd import Arg, Glue, Mesh, MpmdProgram, Op, Stage


def two_stages() -> MpmdProgram:
  """x @ w1 on m1 (x split by rows over m1's 2 devices), then (x @ w2) + x on m2
  (w2 split by columns): two fragments, one transfer of the activation."""
  return MpmdProgram(
      name="two_stages",
      meshes=[Mesh("m1", [("x", 2)]), Mesh("m2", [("x", 2)])],
      args=[Arg("a", [["x"], []]), Arg("w"), Arg("w", [[], ["x"]])],
      body=[Stage("s1", ["arg0", "arg1"], [Op("matmul", ["a0", "a1"])], ["v0"]),
            Stage("s2", ["s1.0", "arg2"], [Op("matmul", ["a0", "a1"]), Op("add", ["v0", "a0"])],
                  ["v1"])],
      outputs=["s2.0"], output_meshes=[], assignment={"s1": "m1", "s2": "m2"})


def test_two_stage_pipeline_holds_with_the_expected_structure(tmp_path):
  program = two_stages()
  r = mpmd.check_mpmd(program, seed=3, workdir=str(tmp_path))
  assert r.verdict == "holds", str(r)
  assert r.holds and r.counterexample is None
  structure = r.judges["structure"]["details"]
  assert structure["fragment_calls"] == 2 and structure["transfers"] == 1
  assert structure["ifrt_calls"] == 2 and structure["ifrt_copies"] == 1
  assert structure["fragments"] == [{"mesh": "m1", "origins": ["s1"]},
                                    {"mesh": "m2", "origins": ["s2"]}]
  devices = structure["mesh_devices"]
  assert len(devices["m1"]) == 2 and len(devices["m2"]) == 2
  assert not set(devices["m1"]) & set(devices["m2"])
  fragments = r.judges["fragments"]["details"]["fragments"]
  assert [(f["mesh"], f["devices"]) for f in fragments] == [("m1", devices["m1"]),
                                                           ("m2", devices["m2"])]
  transfer, = r.judges["transfers"]["details"]["transfers"]
  assert (transfer["from"], transfer["to"]) == (devices["m1"], devices["m2"])
  assert r.judges["end_to_end"]["details"] == {"outputs": 1, "exact": True}
  # Each fragment's Shardy module also went through the spmdcheck binary.
  oracle = r.judges["oracle"]
  assert oracle["verdict"] == "holds", oracle
  assert [f["num_partitions"] for f in oracle["fragments"]] == [2, 2]
  assert all(os.path.exists(f["file"]) for f in oracle["fragments"])
  for name in ("program.mlir", "reference.mlir", "mpmd.mlir", "ifrt.mlir", "check.json"):
    assert (tmp_path / name).exists(), name
  assert "two_stages: holds" in str(r)


def test_a_perturbed_fragment_output_fails_with_a_counterexample(tmp_path):
  r = mpmd.check_mpmd(two_stages(), seed=3, workdir=str(tmp_path), oracle=False,
                      inject="fragment-output")
  assert r.verdict == "fails", str(r)
  c = r.counterexample
  assert c["judge"] == "fragments" and c["fragment"].startswith("p0_s1")
  assert c["index"] == [0, 0] and c["got"] == c["expected"] + 1
  assert c["devices"]  # the device(s) holding the wrong element, on m1
  assert set(c["devices"]) <= set(r.judges["structure"]["details"]["mesh_devices"]["m1"])
  # The wrong value flows on: the pipeline's result differs from the one-device run.
  assert r.judges["end_to_end"]["verdict"] == "fails"
  assert r.judges["transfers"]["verdict"] == "holds"
  assert r.signature == "fails.fragments+end_to_end"


def test_a_transfer_that_changes_its_value_fails(tmp_path):
  r = mpmd.check_mpmd(two_stages(), seed=3, workdir=str(tmp_path), oracle=False,
                      inject="transfer-swap")
  assert r.verdict == "fails", str(r)
  c = r.counterexample
  assert c["judge"] == "transfers" and c["op"] == "ifrt.CopyArrays"
  assert c["got"] != c["expected"] and c["index"]
  assert r.judges["fragments"]["verdict"] == "holds"
  assert r.judges["end_to_end"]["verdict"] == "fails"


def test_a_program_the_partitioner_refuses_is_unknown(tmp_path):
  """An op outside the named computations between stages on two meshes: without
  mpmd_infer_transfers the partitioner asks for an explicit transfer."""
  program = two_stages()
  program.body.insert(1, Glue("g0", "neg", ["s1.0"]))
  program.stages[1].inputs = ["g0", "arg2"]
  r = mpmd.check_mpmd(program, workdir=str(tmp_path))
  assert r.verdict == "unknown" and r.status == "rejected", str(r)
  assert "Mesh assignment is not possible" in r.reason
  assert r.signature.startswith("rejected.mesh_assignment_is_not_possible")
  # With the option the partitioner inserts the transfer itself, and the result holds.
  program.options = {"mpmd_infer_transfers": True}
  r = mpmd.check_mpmd(program, workdir=str(tmp_path / "infer"), oracle=False)
  assert r.verdict == "holds", str(r)


def test_unknown_schedules_are_refused_before_jaxlib_and_an_abort_is_a_crash(tmp_path):
  program = two_stages()
  program.schedule = "NotASchedule"
  with pytest.raises(ValueError, match="unknown pipeline schedule"):
    mpmd.check_mpmd(program)
  # Past the check, jaxlib aborts the process (SDY_LOG(FATAL)): the worker dies, the caller
  # lives and sees a crash.
  status, reason, raw = mpmd._run_worker(
      {"program": program.to_json(), "seed": 0, "unchecked": True}, str(tmp_path), 120)
  assert status == "crash" and not raw
  assert "Invalid pipeline schedule" in reason, reason


def test_microbatches_backward_stages_and_a_schedule_hold(tmp_path):
  """Two microbatches through forward and backward stages under 1F1B: the schedule interleaves
  them, the result is still the unpartitioned program's."""
  program = two_stages()
  program.args[0].per_microbatch = True
  program.body += [
      Stage("s2", ["s2.0", "s1.0"], [Op("mul", ["a0", "a1"])], ["v0"], transpose=1),
      Stage("s1", ["s2_t1.0", "arg1"], [Op("matmul_t", ["a0", "a1"])], ["v0"], transpose=1)]
  program.outputs = ["s1_t1.0"]
  program.microbatches = 2
  program.schedule = "1F1B"
  r = mpmd.check_mpmd(program, seed=5, workdir=str(tmp_path), oracle=False)
  assert r.verdict == "holds", str(r)
  details = r.judges["structure"]["details"]
  assert details["import_fragments"] == 8  # 4 stages x 2 microbatches
  assert r.judges["end_to_end"]["details"]["outputs"] == 2
  # `spmdcheck explain` reads the IFRT program: wiring holds, each fragment on its stage's mesh,
  # one call per microbatch, forward and backward interleaved on the meshes (1F1B).
  explained = r.judges["explain"]
  assert explained["verdict"] == "holds", explained
  assert explained["answer"].startswith("inter-op: 2 stages over 2 meshes"), explained
  assert "2 microbatches" in explained["answer"] and "1F1B-like" in explained["answer"]


def test_explain_judge_compares_the_ifrt_program_with_the_program(tmp_path):
  """The explain judge on the IFRT program the partitioner made for generated program 1
  (corpus/explain/mpmd/gpipe_fwd_bwd.ifrt.mlir): it holds for that program, and fails when
  the program says a stage belongs to another mesh than the one its fragment runs on."""
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  ifrt = os.path.join(root, "corpus", "explain", "mpmd", "gpipe_fwd_bwd.ifrt.mlir")
  program = mpmd.random_mpmd_program(1)
  judged = mpmd._explain(program, ifrt, timeout=60)
  assert judged is not None and judged["verdict"] == "holds", judged
  assert judged["checks"] == {"values": "holds", "placement": "holds", "transfers": "holds",
                              "fragments": "holds"}
  program.assignment["s1"] = "m0"
  judged = mpmd._explain(program, ifrt, timeout=60)
  assert judged["verdict"] == "fails"
  assert "p1_s1_fwd_calls0to1.mpmd_1 (stage s1) runs on m1, the stage is assigned to m0" in \
      judged["reason"]
  assert mpmd._explain(program, str(tmp_path / "none.mlir"), timeout=60) is None


def test_generated_programs_are_deterministic_and_valid():
  for seed in range(40):
    p = mpmd.random_mpmd_program(seed)
    assert p.to_json() == mpmd.random_mpmd_program(seed).to_json()
    assert MpmdProgram.from_json(json.loads(json.dumps(p.to_json()))).to_json() == p.to_json()
    assert 2 <= len(p.meshes) <= 4 and p.devices() <= 8
    assert all(1 <= m.size <= 4 for m in p.meshes)
    assert len({p.mesh_of(s.name) for s in p.stages}) >= 2
    assert p.schedule is None or p.schedule in mpmd.SCHEDULES
    assert mpmd.render(p) == mpmd.render(mpmd.random_mpmd_program(seed))
  assert mpmd.random_mpmd_program(1).to_json() != mpmd.random_mpmd_program(2).to_json()


def test_repro_runs_standalone(tmp_path):
  r = mpmd.check_mpmd(two_stages(), seed=3, workdir=str(tmp_path), oracle=False)
  mpmd.write_repro(r, str(tmp_path / "repro.py"))
  text = (tmp_path / "repro.py").read_text()
  assert "jaxlib._sdy_mpmd" in text and "import spmdcheck" not in text
  env = mpmd._worker_env()
  env.pop("PYTHONPATH")
  done = subprocess.run([sys.executable, str(tmp_path / "repro.py")], capture_output=True,
                        text=True, env=env, cwd=str(tmp_path), timeout=300)
  assert done.returncode == 0, done.stdout + done.stderr[-2000:]
  assert "agrees" in done.stdout


def test_campaign_is_deterministic(tmp_path, capsys):
  out = tmp_path / "out"
  summary = mpmd.run_campaign(20, seed=11, out=str(out), oracle=False)
  assert summary["programs"] >= 3
  assert summary["holds"] + summary["fails"] + summary["unknown"] == summary["programs"]
  assert json.loads((out / "summary.json").read_text())["programs"] == summary["programs"]
  printed = capsys.readouterr().out
  for i, entry in enumerate(summary["checked"]):
    seed = mpmd.campaign_program_seed(11, i)
    assert entry["seed"] == seed
    assert f"[{i}] seed {seed}: {mpmd.describe(mpmd.random_mpmd_program(seed))}" in printed
  for finding in summary["findings"]:
    assert (out / finding["name"] / "repro.py").exists()
  # The same seed checks the same first programs, with the same verdicts.
  again = mpmd.run_campaign(600, seed=11, out=str(tmp_path / "again"), programs=2,
                            oracle=False)
  assert [(e["seed"], e["signature"]) for e in again["checked"]] == \
      [(e["seed"], e["signature"]) for e in summary["checked"][:2]]


def test_reduction_keeps_the_property_and_shrinks():
  """reduce_program on a pure predicate (no jaxlib): every step stays a valid program."""
  program = next(p for p in map(mpmd.random_mpmd_program, range(100))
                 if len(p.stages) >= 4 and sum(len(s.ops) for s in p.stages) >= 8)
  steps = []

  def keep(candidate):
    candidate.validate()
    steps.append(candidate)
    return any(op.kind in ("matmul", "matmul_t") for s in candidate.stages for op in s.ops)

  assert keep(program)
  small = mpmd.reduce_program(program, keep, seconds=60)
  assert keep(small)
  assert len(small.stages) == 1 and len(small.stages[0].ops) == 1
  assert small.stages[0].ops[0].kind in ("matmul", "matmul_t")
  assert mpmd.render(small)  # renders
  assert len(steps) > 3
