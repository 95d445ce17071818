"""ray_fuzz.py on a real two-node Ray cluster on this machine (a head and a second node process).

SPMDCHECK_BIN names the spmdcheck binary (tests/run_ray_pytest.sh passes it). Skipped when ray
is not installed. The cluster is shut down whatever happens (module fixture's finally).
"""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (workers/ray/requirements.txt)")
from ray.cluster_utils import Cluster  # pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(os.path.dirname(HERE), "ray_fuzz.py")
BIN = os.environ.get("SPMDCHECK_BIN", "")


@pytest.fixture(scope="module")
def cluster():
  if not BIN or not os.path.exists(BIN):
    pytest.skip("SPMDCHECK_BIN does not name the spmdcheck binary")
  # Two node processes (two raylets) with one CPU each: the two actors land on different nodes.
  # Ray maps 127.0.0.1 to this machine's own address; both nodes run here.
  nodes = Cluster(initialize_head=True,
                  head_node_args={"num_cpus": 1, "include_dashboard": False})
  try:
    nodes.add_node(num_cpus=1)
    nodes.wait_for_nodes(timeout=60)
    yield nodes.address
  finally:
    nodes.shutdown()


def run_driver(address, out, *flags, timeout=120):
  argv = [sys.executable, DRIVER, "--address", address, "--out", str(out), *flags]
  proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
  print(proc.stdout)
  print(proc.stderr[-3000:], file=sys.stderr)
  return proc


def read_summary(out):
  with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
    return json.load(f)


def test_reference_with_injected_bug_over_two_nodes(cluster, tmp_path):
  out = tmp_path / "campaign"
  proc = run_driver(cluster, out, "--spmdcheck", BIN, "--seconds", "4", "--seed", "5",
                    "--partitioner", "reference", "--workers", "2", "--inject-bug",
                    "dot-padding-unmasked")
  assert proc.returncode == 1, "a new bug claim exits 1 as spmdcheck fuzz does"
  assert "seed 5" in proc.stdout
  summary = read_summary(out)
  assert summary["schema"] == "spmdcheck-fuzz-summary/1"
  assert summary["seed"] == 5 and summary["inject_bug"] == "dot-padding-unmasked"
  shards = summary["ray"]["shards"]
  assert [s["shard"] for s in shards] == ["0/2", "1/2"]
  assert len({s["node_id"] for s in shards}) == 2, "one actor per node"
  assert summary["ray"]["lost_shards"] == []
  assert all(s["cases"] > 0 for s in shards)
  assert summary["cases"] == sum(s["cases"] for s in shards)
  assert summary["per_partitioner"]["reference"]["cases"] == summary["cases"]
  assert summary["holds"] + summary["failures"] + summary["unsupported"] <= summary["cases"]
  signatures = [f["signature"] for f in summary["findings"]]
  assert len(signatures) == len(set(signatures)) >= 1
  assert summary["failures"] == sum(f["count"] for f in summary["findings"])
  for f in summary["findings"]:
    folder = f["folder"]
    assert folder == os.path.join(str(out), f["signature"])
    with open(os.path.join(folder, "finding.json"), encoding="utf-8") as fj:
      record = json.load(fj)
    assert record["signature"] == f["signature"]
    assert str(out) in record["reproduce"] and "spmdcheck-ray-shard" not in record["reproduce"]
    assert os.path.exists(os.path.join(folder, "module.hlo"))
  # Case i is the same program in every shard: a plain campaign over the first cases finds the
  # earliest failing case the shards found.
  first = min(f["first_case"] for f in summary["findings"])
  plain = tmp_path / "plain"
  subprocess.run([BIN, "fuzz", "--seed", "5", "--cases", str(first + 1), "--inject-bug",
                  "dot-padding-unmasked", "--reduce-seconds", "0", "--out", str(plain)],
                 capture_output=True, timeout=120, check=False)
  plain_findings = read_summary(plain)["findings"]
  assert min(f["first_case"] for f in plain_findings) == first
  assert os.listdir(str(tmp_path)) == ["campaign", "plain"] or \
      sorted(os.listdir(str(tmp_path))) == ["campaign", "plain"]


FAKE = """#!/bin/sh
# A spmdcheck that hangs on shard 0 and kills its actor on shard 1.
case "$*" in
  *"--shard 0/2"*) exec sleep 613 ;;
  *"--shard 1/2"*) kill -9 $PPID; exec sleep 613 ;;
esac
exit 2
"""


def test_hung_and_dead_shards_are_reported_lost(cluster, tmp_path):
  fake = tmp_path / "fake-spmdcheck"
  fake.write_text(FAKE)
  fake.chmod(0o755)
  out = tmp_path / "campaign"
  proc = run_driver(cluster, out, "--spmdcheck", str(fake), "--seconds", "1", "--workers", "2",
                    "--shard-timeout", "3")
  assert proc.returncode == 3, "lost shards: exit 3 (stopped before the limit)"
  summary = read_summary(out)
  lost = {l["shard"]: l["reason"] for l in summary["ray"]["lost_shards"]}
  assert set(lost) == {"0/2", "1/2"}
  assert "deadline" in lost["0/2"]
  assert "actor died" in lost["1/2"]
  assert summary["stopped"] is True and summary["cases"] == 0
  assert "LOST shard 0/2" in proc.stdout and "LOST shard 1/2" in proc.stdout
  # Neither shard's process outlives it: the hung one was stopped, the dead actor's child died
  # with it (PR_SET_PDEATHSIG).
  deadline = time.time() + 10
  while subprocess.run(["pgrep", "-fx", "sleep 613"], capture_output=True,
                       check=False).returncode == 0:
    assert time.time() < deadline, "a shard's process outlived its actor"
    time.sleep(0.5)


def _jax_available():
  venv = os.environ.get("SPMDCHECK_XLA_VENV", "")
  python = os.path.join(venv, "bin", "python") if venv else sys.executable
  return subprocess.run([python, "-c", "import jax"], capture_output=True,
                        check=False).returncode == 0


def test_xla_partitioner_over_two_nodes(cluster, tmp_path):
  if not _jax_available():
    pytest.skip("jax is not installed in SPMDCHECK_XLA_VENV")
  out = tmp_path / "campaign"
  proc = run_driver(cluster, out, "--spmdcheck", BIN, "--seconds", "8", "--seed", "3",
                    "--partitioner", "xla", "--workers", "2", "--max-devices", "4",
                    "--reduce-seconds", "5")
  assert proc.returncode in (0, 1, 3), proc.stderr[-2000:]
  summary = read_summary(out)
  assert summary["unavailable"] == ""
  assert summary["ray"]["lost_shards"] == []
  shards = summary["ray"]["shards"]
  assert all(s["cases"] > 0 for s in shards), "each actor ran its own XLA worker"
  assert summary["per_partitioner"]["xla"]["cases"] == summary["cases"] > 0
