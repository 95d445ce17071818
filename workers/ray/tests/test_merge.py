"""The driver's merging of shard results (no Ray needed): summaries, findings, folders, exit codes."""

import io
import json
import os
import sys
import tarfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ray_fuzz  # pylint: disable=wrong-import-position

OPTIONS = {"seed": 7, "partitioners": "reference", "max_devices": 8, "inject_bug": "",
           "workers": 2, "jobs_per_worker": 1, "address": "local"}


def finding(signature, count, first_case, seconds, folder="", bug_claim=True, known_as=""):
  return {"signature": signature, "partitioner": "reference", "bug_claim": bug_claim,
          "known_as": known_as, "new": not known_as, "count": count, "first_case": first_case,
          "case_seed": 1000 + first_case, "seconds_to_find": seconds, "folder": folder,
          "message": "from case %d" % first_case}


def shard_summary(cases, holds, failures, findings, unsupported=0, reasons=None, hits=None,
                  stopped=False, unavailable=""):
  return {
      "schema": "spmdcheck-fuzz-summary/1", "seed": 7, "partitioners": "reference",
      "max_devices": 8, "jobs": 1, "inject_bug": "", "cases": cases, "elapsed_seconds": 10.0,
      "cases_per_second": cases / 10.0, "holds": holds, "failures": failures,
      "unsupported": unsupported, "stopped": stopped, "unavailable": unavailable,
      "per_partitioner": {"reference": {"cases": cases, "holds": holds, "failures": failures,
                                        "to_investigate": 0, "unknown": unsupported,
                                        "accepted": cases - unsupported,
                                        "acceptance_rate": 0.5, "seconds": 2.0}},
      "times": {"generate": 1.0, "partition": 2.0, "execute": 0.0, "interpreter": 0.5,
                "oracle": 3.0, "lint": 0.5, "reduce": 1.0, "cases": 8.0, "other": 1.0,
                "ours_share": 0.75},
      "pattern_hits": hits or {}, "findings": findings, "unsupported_reasons": reasons or {},
  }


def test_summaries_are_summed():
  a = shard_summary(100, 90, 10, [], unsupported=2, reasons={"op gather": 2},
                    hits={"dot": 5, "while": 1})
  b = shard_summary(50, 45, 5, [], unsupported=1, reasons={"op gather": 1, "op sort": 3},
                    hits={"dot": 2, "pad": 4})
  summary, _ = ray_fuzz.merge_summaries([(0, a), (1, b)], OPTIONS, wall_seconds=5.0)
  assert summary["schema"] == "spmdcheck-fuzz-summary/1"
  assert summary["seed"] == 7
  assert summary["jobs"] == 2
  assert (summary["cases"], summary["holds"], summary["failures"], summary["unsupported"]) == \
      (150, 135, 15, 3)
  # Over the driver's wall time, not the shards' elapsed time.
  assert summary["cases_per_second"] == pytest.approx(30.0)
  assert summary["elapsed_seconds"] == 5.0
  ref = summary["per_partitioner"]["reference"]
  assert (ref["cases"], ref["holds"], ref["failures"], ref["unknown"], ref["accepted"]) == \
      (150, 135, 15, 3, 147)
  assert ref["seconds"] == pytest.approx(4.0)
  assert ref["acceptance_rate"] == pytest.approx(147 / 150)
  assert summary["times"]["oracle"] == pytest.approx(6.0)
  assert summary["times"]["cases"] == pytest.approx(16.0)
  # Everything but the partitioner's compiles and runs: (cases - partition - execute) / cases
  # = (16 - 4 - 0) / 16.
  assert summary["times"]["ours_share"] == pytest.approx(12.0 / 16.0)
  assert summary["pattern_hits"] == {"dot": 7, "while": 1, "pad": 4}
  assert summary["unsupported_reasons"] == {"op gather": 3, "op sort": 3}
  assert summary["stopped"] is False


def test_findings_deduplicated_by_signature_earliest_case_kept():
  a = shard_summary(10, 7, 3, [finding("wrong-result.dot", 2, 4, 1.5, "/a/wrong-result.dot"),
                               finding("crash.pad", 1, 8, 3.0, "/a/crash.pad")])
  b = shard_summary(10, 8, 2, [finding("wrong-result.dot", 2, 1, 2.5, "/b/wrong-result.dot")])
  summary, kept = ray_fuzz.merge_summaries([(0, a), (1, b)], OPTIONS, wall_seconds=1.0)
  by_signature = {f["signature"]: f for f in summary["findings"]}
  assert set(by_signature) == {"wrong-result.dot", "crash.pad"}
  dot = by_signature["wrong-result.dot"]
  assert dot["count"] == 4
  assert dot["first_case"] == 1  # Shard 1 found it at case 1, before shard 0's case 4.
  assert dot["message"] == "from case 1"
  assert dot["seconds_to_find"] == 1.5  # The fastest of the shards.
  assert kept == {"wrong-result.dot": 1, "crash.pad": 0}
  assert [f["signature"] for f in summary["findings"]] == ["wrong-result.dot", "crash.pad"]


def test_lost_shards_mark_the_campaign_stopped():
  a = shard_summary(10, 10, 0, [])
  lost = [{"shard": "1/2", "reason": "actor died"}]
  summary, _ = ray_fuzz.merge_summaries([(0, a)], OPTIONS, 1.0, lost)
  assert summary["stopped"] is True
  assert ray_fuzz.exit_code(summary, [0], lost) == ray_fuzz.EXIT_UNKNOWN


def test_schema_mismatch_is_an_error():
  bad = shard_summary(1, 1, 0, [])
  bad["schema"] = "something-else/2"
  with pytest.raises(ValueError, match="schema"):
    ray_fuzz.merge_summaries([(0, bad)], OPTIONS, 1.0)


@pytest.mark.parametrize("findings,codes,expected", [
    ([], [0, 0], 0),
    ([finding("wrong-result.dot", 1, 0, 0.1, "/x")], [1, 0], 1),
    ([finding("xla.miscompile.pad", 1, 0, 0.1, known_as="pad-bug")], [0, 0], 0),
    ([finding("xla.oracle-only.add", 1, 0, 0.1, "/x", bug_claim=False)], [3, 0], 3),
    ([finding("xla.wasteful.bytes-vs-shardy", 1, 0, 0.1, "/x", bug_claim=False)], [0, 0], 0),
    ([], [2, 0], 2),
])
def test_exit_codes_as_spmdcheck_fuzz(findings, codes, expected):
  summary, _ = ray_fuzz.merge_summaries([(0, shard_summary(1, 1, 0, findings))], OPTIONS, 1.0)
  assert ray_fuzz.exit_code(summary, codes) == expected


def shard_tar(actor_out, summary, folders):
  """A shard's archive as the actor ships it: summary.json and finding folders."""
  buffer = io.BytesIO()
  with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
    files = {"summary.json": json.dumps(summary)}
    for name, text in folders.items():
      files[name + "/finding.json"] = json.dumps({"reproduce": "spmdcheck check %s/%s/module.hlo"
                                                               % (actor_out, name)})
      files[name + "/module.hlo"] = text
    for name, text in files.items():
      data = text.encode()
      info = tarfile.TarInfo(name)
      info.size = len(data)
      archive.addfile(info, io.BytesIO(data))
  return buffer.getvalue()


def test_assemble_writes_one_folder_per_signature_with_rewritten_paths(tmp_path):
  out_a, out_b = "/tmp/actor-a/out", "/tmp/actor-b/out"
  a = shard_summary(10, 8, 2, [finding("wrong-result.dot", 2, 6, 1.0, out_a + "/wrong-result.dot")])
  b = shard_summary(10, 7, 3, [finding("wrong-result.dot", 1, 3, 2.0, out_b + "/wrong-result.dot"),
                               finding("crash.pad", 2, 5, 2.0, out_b + "/crash.pad")])
  results = [
      {"shard": 0, "out": out_a, "info": {"shard": "0/2"},
       "tar": shard_tar(out_a, a, {"wrong-result.dot": "// shard 0\n"})},
      {"shard": 1, "out": out_b, "info": {"shard": "1/2"},
       "tar": shard_tar(out_b, b, {"wrong-result.dot": "// shard 1\n", "crash.pad": "// pad\n"})},
  ]
  out = str(tmp_path / "campaign")
  os.makedirs(out)
  with open(os.path.join(out, "stale.txt"), "w") as f:
    f.write("from an earlier campaign")
  summary = ray_fuzz.assemble_campaign(results, out, OPTIONS, 2.0)
  assert sorted(os.listdir(out)) == ["crash.pad", "summary.json", "wrong-result.dot"]
  with open(os.path.join(out, "wrong-result.dot", "module.hlo")) as f:
    assert f.read() == "// shard 1\n"  # Case 3 (shard 1) is earlier than case 6 (shard 0).
  with open(os.path.join(out, "wrong-result.dot", "finding.json")) as f:
    assert json.load(f)["reproduce"] == "spmdcheck check %s/wrong-result.dot/module.hlo" % out
  with open(os.path.join(out, "summary.json")) as f:
    on_disk = json.load(f)
  assert on_disk == summary
  assert on_disk["cases"] == 20
  folders = {f["signature"]: (f["folder"], f["count"]) for f in on_disk["findings"]}
  assert folders == {"wrong-result.dot": (out + "/wrong-result.dot", 3),
                     "crash.pad": (out + "/crash.pad", 2)}
  assert on_disk["ray"]["lost_shards"] == []
  # No staging directory left next to it.
  assert os.listdir(str(tmp_path)) == ["campaign"]


def test_assemble_rejects_archive_paths_outside(tmp_path):
  buffer = io.BytesIO()
  with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
    info = tarfile.TarInfo("../escape.txt")
    info.size = 1
    archive.addfile(info, io.BytesIO(b"x"))
  results = [{"shard": 0, "out": "/x", "info": {}, "tar": buffer.getvalue()}]
  with pytest.raises(ValueError, match="unsafe path"):
    ray_fuzz.assemble_campaign(results, str(tmp_path / "c"), OPTIONS, 1.0)
  assert not os.path.exists(str(tmp_path / "escape.txt"))
  assert not os.path.exists(str(tmp_path / "c"))


def test_all_shards_lost_still_writes_a_summary(tmp_path):
  lost = [{"shard": "0/1", "reason": "no result within 100s: actor killed"}]
  out = str(tmp_path / "c")
  summary = ray_fuzz.assemble_campaign([], out, dict(OPTIONS, workers=1), 100.0, lost)
  with open(os.path.join(out, "summary.json")) as f:
    assert json.load(f)["ray"]["lost_shards"] == lost
  assert summary["cases"] == 0 and summary["stopped"] is True
