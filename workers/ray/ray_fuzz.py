#!/usr/bin/env python3
"""`spmdcheck fuzz` scaled out over a Ray cluster (docs/ray.md).

One Ray actor per worker (`num_cpus` = jobs per worker) runs
`spmdcheck fuzz --shard i/K --seed N --seconds S ...` into a directory of its own node; case i is
the same program everywhere, so the K shards split one seed's cases without overlap. Each actor
ships its summary.json and finding folders back as a tar (no shared filesystem needed), and the
driver merges them into --out exactly as `spmdcheck fuzz --out DIR` lays it out (docs/fuzz.md):
finding folders deduplicated by signature (counts summed, the earliest case's folder kept),
summaries summed, cases/s over the driver's wall time. The directory is written atomically
(a temporary sibling renamed into place). A shard whose actor dies or overruns its deadline is
killed and listed in the summary (`ray.lost_shards`), never silently dropped.

  ray_fuzz.py --address ADDR|auto|local --spmdcheck BIN --out DIR --seconds S --seed N
              --partitioner P[,P] --workers K [--known FILE] [--max-devices N]
              [--inject-bug NAME] [--jobs-per-worker J] [--shard-timeout T]

Exit codes as `spmdcheck fuzz`: 0 nothing new, 1 new bug claims, 2 bad input or a write error,
3 new differences to investigate, XLA unavailable, or a shard lost or stopped.
"""

import argparse
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time

SCHEMA = "spmdcheck-fuzz-summary/1"
EXIT_HOLDS, EXIT_FAILS, EXIT_BAD_INPUT, EXIT_UNKNOWN = 0, 1, 2, 3

# Summary fields summed over shards (docs/fuzz.md, DIR/summary.json).
_SUMMED = ("cases", "holds", "failures", "unsupported")
_PER_PARTITIONER_SUMMED = ("cases", "holds", "failures", "to_investigate", "unknown", "accepted",
                           "seconds")
_TIMES_SUMMED = ("generate", "partition", "execute", "interpreter", "oracle", "lint", "reduce",
                 "cases", "other")


# ---------------------------------------------------------------------------------------------
# Merging (pure Python, no Ray: tests/test_merge.py)


def _add_counts(into, other):
  for key, value in other.items():
    into[key] = into.get(key, 0) + value


def merge_findings(shard_findings):
  """Deduplicates findings by signature over shards.

  shard_findings: list of (shard_index, [finding dicts from that shard's summary.json]).
  Returns {signature: (merged finding dict, shard index whose folder is kept)}: the entry of the
  earliest case (ties: fewest seconds to find, then lowest shard) with counts summed and the
  fewest seconds to find.
  """
  merged = {}
  for shard, findings in shard_findings:
    for finding in findings:
      signature = finding["signature"]
      key = (finding.get("first_case", 0), finding.get("seconds_to_find", 0.0), shard)
      if signature not in merged:
        merged[signature] = (dict(finding), shard, key, finding.get("count", 0),
                             finding.get("seconds_to_find", 0.0))
        continue
      kept, kept_shard, kept_key, count, seconds = merged[signature]
      count += finding.get("count", 0)
      seconds = min(seconds, finding.get("seconds_to_find", 0.0))
      if key < kept_key:
        kept, kept_shard, kept_key = dict(finding), shard, key
      merged[signature] = (kept, kept_shard, kept_key, count, seconds)
  result = {}
  for signature, (kept, kept_shard, _, count, seconds) in merged.items():
    kept["count"] = count
    kept["seconds_to_find"] = seconds
    result[signature] = (kept, kept_shard)
  return result


def merge_summaries(shards, options, wall_seconds, lost_shards=()):
  """Merges the shards' summary.json dicts into one campaign summary (same schema).

  shards: list of (shard_index, summary dict). options: dict with seed, partitioners,
  max_devices, inject_bug, workers, jobs_per_worker. Findings keep the folder of their kept
  shard (the caller rewrites folder paths). lost_shards: list of {"shard", "reason"} dicts.
  """
  summary = {
      "schema": SCHEMA,
      "seed": options["seed"],
      "partitioners": options["partitioners"],
      "max_devices": options["max_devices"],
      "jobs": options["workers"] * options.get("jobs_per_worker", 1),
      "inject_bug": options.get("inject_bug", ""),
      "elapsed_seconds": wall_seconds,
      "stopped": False,
      "unavailable": "",
      "per_partitioner": {},
      "times": {key: 0.0 for key in _TIMES_SUMMED},
      "pattern_hits": {},
      "findings": [],
      "unsupported_reasons": {},
  }
  for key in _SUMMED:
    summary[key] = 0
  for _, shard in shards:
    if shard.get("schema") != SCHEMA:
      raise ValueError("shard summary has schema %r, expected %r" % (shard.get("schema"), SCHEMA))
    for key in _SUMMED:
      summary[key] += shard.get(key, 0)
    summary["stopped"] = summary["stopped"] or bool(shard.get("stopped", False))
    if shard.get("unavailable") and not summary["unavailable"]:
      summary["unavailable"] = shard["unavailable"]
    for spec, counts in shard.get("per_partitioner", {}).items():
      into = summary["per_partitioner"].setdefault(
          spec, {key: 0 for key in _PER_PARTITIONER_SUMMED})
      for key in _PER_PARTITIONER_SUMMED:
        into[key] += counts.get(key, 0)
    for key in _TIMES_SUMMED:
      summary["times"][key] += shard.get("times", {}).get(key, 0.0)
    _add_counts(summary["pattern_hits"], shard.get("pattern_hits", {}))
    _add_counts(summary["unsupported_reasons"], shard.get("unsupported_reasons", {}))
  for counts in summary["per_partitioner"].values():
    counts["acceptance_rate"] = counts["accepted"] / counts["cases"] if counts["cases"] else 0.0
  times = summary["times"]
  # Ours: every second of the cases that is not the partitioner compiling or running.
  ours = max(0.0, times["cases"] - times["partition"] - times["execute"])
  times["ours_share"] = ours / times["cases"] if times["cases"] > 0 else 0.0
  summary["cases_per_second"] = summary["cases"] / wall_seconds if wall_seconds > 0 else 0.0
  merged = merge_findings([(index, shard.get("findings", [])) for index, shard in shards])
  # The order of a single campaign's summary: by first case.
  summary["findings"] = [f for f, _ in sorted(merged.values(),
                                              key=lambda e: (e[0].get("first_case", 0),
                                                             e[0]["signature"]))]
  if lost_shards:
    summary["stopped"] = True
  return summary, {signature: shard for signature, (_, shard) in merged.items()}


def exit_code(summary, shard_exit_codes=(), lost_shards=()):
  """The exit code `spmdcheck fuzz` would give for this summary (tools/fuzz_command.cc)."""
  if any(code == EXIT_BAD_INPUT for code in shard_exit_codes):
    return EXIT_BAD_INPUT
  findings = summary.get("findings", [])
  if any(f.get("bug_claim") and not f.get("known_as") for f in findings):
    return EXIT_FAILS
  if summary.get("unavailable"):
    return EXIT_UNKNOWN
  for f in findings:
    if not f.get("known_as") and ".wasteful." not in f["signature"]:
      return EXIT_UNKNOWN
  if lost_shards or summary.get("stopped"):
    return EXIT_UNKNOWN
  return EXIT_HOLDS


def _rewrite_text(path, old, new):
  try:
    with open(path, "r", encoding="utf-8") as f:
      text = f.read()
  except (UnicodeDecodeError, OSError):
    return
  if old in text:
    with open(path, "w", encoding="utf-8") as f:
      f.write(text.replace(old, new))


def _safe_members(archive, dest):
  root = os.path.realpath(dest)
  for member in archive.getmembers():
    target = os.path.realpath(os.path.join(dest, member.name))
    if not (target == root or target.startswith(root + os.sep)) or member.issym() or member.islnk():
      raise ValueError("unsafe path in a shard's archive: %s" % member.name)
    yield member


def unpack_shard(tar_bytes, dest):
  """Unpacks one shard's archive (as shipped by the actor) into dest."""
  os.makedirs(dest, exist_ok=True)
  with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:*") as archive:
    archive.extractall(dest, members=list(_safe_members(archive, dest)))


def assemble_campaign(shard_results, out_dir, options, wall_seconds, lost_shards=()):
  """Merges the shards into out_dir (atomically) and returns the merged summary.

  shard_results: list of dicts with "shard" (index), "tar" (bytes of the actor's directory) and
  "out" (the actor-local directory the paths inside name). The finding folders of kept shards are
  copied; paths naming an actor's directory are rewritten to out_dir; other files are unioned.
  """
  out_dir = out_dir.rstrip("/") or "/"
  parent = os.path.dirname(os.path.abspath(out_dir))
  os.makedirs(parent, exist_ok=True)
  staging = tempfile.mkdtemp(prefix=".%s.ray-" % os.path.basename(os.path.abspath(out_dir)),
                             dir=parent)
  try:
    unpacked = tempfile.mkdtemp(prefix="shards-", dir=staging)
    final = os.path.join(staging, "campaign")
    os.makedirs(final)
    shards = []
    shard_dirs = {}
    for result in sorted(shard_results, key=lambda r: r["shard"]):
      shard_dir = os.path.join(unpacked, str(result["shard"]))
      unpack_shard(result["tar"], shard_dir)
      shard_dirs[result["shard"]] = (shard_dir, result["out"])
      summary_path = os.path.join(shard_dir, "summary.json")
      if not os.path.exists(summary_path):
        raise ValueError("shard %d returned no summary.json" % result["shard"])
      with open(summary_path, encoding="utf-8") as f:
        shards.append((result["shard"], json.load(f)))
    summary, kept = merge_summaries(shards, options, wall_seconds, lost_shards)
    folder_of = {}
    for shard, shard_summary in shards:
      for finding in shard_summary.get("findings", []):
        if kept.get(finding["signature"]) == shard:
          folder_of[finding["signature"]] = finding.get("folder", "")
    for finding in summary["findings"]:
      shard = kept[finding["signature"]]
      shard_dir, actor_out = shard_dirs[shard]
      folder = folder_of.get(finding["signature"], "")
      if not folder:
        continue  # A known finding: counted, no folder.
      name = os.path.basename(folder.rstrip("/"))
      source = os.path.join(shard_dir, name)
      if os.path.isdir(source):
        shutil.copytree(source, os.path.join(final, name))
        for root, _, files in os.walk(os.path.join(final, name)):
          for file_name in files:
            _rewrite_text(os.path.join(root, file_name), actor_out, out_dir)
      finding["folder"] = os.path.join(out_dir, name)
    # Other files (none today): the union, the first shard's copy of a name wins.
    finding_names = set()
    for _, shard_summary in shards:
      for finding in shard_summary.get("findings", []):
        if finding.get("folder"):
          finding_names.add(os.path.basename(finding["folder"].rstrip("/")))
    for shard_dir, _ in (shard_dirs[s] for s in sorted(shard_dirs)):
      for name in sorted(os.listdir(shard_dir)):
        if name == "summary.json" or name in finding_names:
          continue
        source, target = os.path.join(shard_dir, name), os.path.join(final, name)
        if os.path.isdir(source):
          shutil.copytree(source, target, dirs_exist_ok=True)
        elif not os.path.exists(target):
          shutil.copy2(source, target)
    summary["ray"] = {
        "workers": options["workers"],
        "jobs_per_worker": options.get("jobs_per_worker", 1),
        "address": options.get("address", ""),
        "connect_seconds": options.get("connect_seconds", 0.0),
        "shards": [r.get("info", {}) for r in sorted(shard_results, key=lambda r: r["shard"])],
        "lost_shards": list(lost_shards),
    }
    with open(os.path.join(final, "summary.json"), "w", encoding="utf-8") as f:
      json.dump(summary, f, indent=2)
      f.write("\n")
    _replace_dir(final, out_dir, staging)
  finally:
    shutil.rmtree(staging, ignore_errors=True)
  return summary


def _replace_dir(new, out_dir, staging):
  """Renames new to out_dir; an existing out_dir is moved into staging (deleted with it)."""
  if os.path.lexists(out_dir):
    try:
      os.rmdir(out_dir)  # Empty: rename over nothing.
    except OSError:
      os.rename(out_dir, os.path.join(staging, "previous"))
  os.rename(new, out_dir)


def format_summary(summary, lost_shards, seed_line):
  lines = [seed_line]
  lines.append("cases: %d (%.1f/s), holds: %d, failures: %d in %d signature(s), unsupported: %d, "
               "elapsed %.1fs" % (summary["cases"], summary["cases_per_second"], summary["holds"],
                                  summary["failures"], len(summary["findings"]),
                                  summary["unsupported"], summary["elapsed_seconds"]))
  for spec, t in sorted(summary["per_partitioner"].items()):
    lines.append("  %s: %d case(s): holds %d, failures %d, to investigate %d, unknown %d; "
                 "accepted %d (%.1f%%)" % (spec, t["cases"], t["holds"], t["failures"],
                                            t["to_investigate"], t["unknown"], t["accepted"],
                                            100.0 * t["acceptance_rate"]))
  for info in summary.get("ray", {}).get("shards", []):
    lines.append("  shard %s on %s: %d case(s) in %.1fs, exit %s" %
                 (info.get("shard"), info.get("node", "?"), info.get("cases", 0),
                  info.get("seconds", 0.0), info.get("exit_code")))
  for lost in lost_shards:
    lines.append("  LOST shard %s: %s" % (lost["shard"], lost["reason"]))
  if summary["unavailable"]:
    lines.append("stopped: " + summary["unavailable"])
  if summary["findings"]:
    lines.append("findings:")
    width = max(len(f["signature"]) for f in summary["findings"])
    for f in summary["findings"]:
      kind = ("bug claim" if f.get("bug_claim") else
              "wasteful (correct)" if ".wasteful." in f["signature"] else "to investigate")
      known = "known: " + f["known_as"] if f.get("known_as") else "new"
      lines.append("  %-*s %6d  %-20s %-24s %s" % (width, f["signature"], f["count"], kind, known,
                                                  f.get("folder") or "-"))
  return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The actor (runs on any node; pickled by value with the driver script)


def _die_with_parent():
  """In the child: SIGKILL when the actor dies (killed by the driver, its node lost)."""
  try:
    import ctypes  # pylint: disable=import-outside-toplevel
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
  except (OSError, AttributeError):
    pass


class ShardRunner:
  """Runs one shard's `spmdcheck fuzz` in a directory of its node and ships the result."""

  def run(self, shard, workers, argv, env, timeout, known_bytes):
    start = time.time()
    node, node_id = socket.gethostname(), ""
    try:
      import ray  # pylint: disable=import-outside-toplevel
      node = ray.util.get_node_ip_address()
      node_id = ray.get_runtime_context().get_node_id()
    except Exception:  # pylint: disable=broad-except
      pass
    work = tempfile.mkdtemp(prefix="spmdcheck-ray-shard%d-" % shard)
    out = os.path.join(work, "out")
    argv = list(argv) + ["--shard", "%d/%d" % (shard, workers), "--out", out]
    if known_bytes is not None:
      known = os.path.join(work, "known.json")
      with open(known, "wb") as f:
        f.write(known_bytes)
      argv += ["--known", known]
    info = {"shard": "%d/%d" % (shard, workers), "node": node, "node_id": node_id,
            "command": " ".join(argv)}
    if not os.path.exists(argv[0]):
      shutil.rmtree(work, ignore_errors=True)
      info.update(exit_code=None, seconds=0.0,
                  error="no spmdcheck binary at %s on node %s (install the same image on every "
                  "node, docs/ray.md)" % (argv[0], node))
      return {"shard": shard, "tar": None, "out": out, "info": info}
    child_env = dict(os.environ)
    child_env.update(env)
    log_path = os.path.join(work, "log.txt")
    timed_out = False
    with open(log_path, "wb") as log:
      proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=child_env,
                              start_new_session=True, preexec_fn=_die_with_parent)
      try:
        code = proc.wait(timeout=timeout)
      except subprocess.TimeoutExpired:
        # SIGTERM: spmdcheck fuzz stops, abandons a reduction and writes the summary so far.
        timed_out = True
        os.killpg(proc.pid, signal.SIGTERM)
        try:
          code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
          os.killpg(proc.pid, signal.SIGKILL)
          code = proc.wait()
    with open(log_path, "rb") as f:
      log_text = f.read().decode("utf-8", "replace")
    info.update(exit_code=code, seconds=time.time() - start, log_tail=log_text[-4000:])
    if timed_out:
      info["error"] = "overran its %.0fs deadline: stopped with SIGTERM" % timeout
    tar_bytes = None
    if os.path.exists(os.path.join(out, "summary.json")):
      with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        shard_summary = json.load(f)
      info["cases"] = shard_summary.get("cases", 0)
      info["cases_per_second"] = shard_summary.get("cases_per_second", 0.0)
      buffer = io.BytesIO()
      with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name in sorted(os.listdir(out)):
          archive.add(os.path.join(out, name), arcname=name)
      tar_bytes = buffer.getvalue()
    elif "error" not in info:
      info["error"] = "spmdcheck fuzz exited %s without a summary.json" % code
    shutil.rmtree(work, ignore_errors=True)
    return {"shard": shard, "tar": tar_bytes, "out": out, "info": info}


# ---------------------------------------------------------------------------------------------
# The driver


def parse_args(argv):
  parser = argparse.ArgumentParser(
      prog="ray_fuzz.py", description="spmdcheck fuzz over a Ray cluster (docs/ray.md)")
  parser.add_argument("--address", default="auto",
                      help="Ray cluster address (HOST:PORT), auto (an existing cluster: "
                      "RAY_ADDRESS or the local head), or local (start one in this process)")
  parser.add_argument("--local", action="store_true", help="same as --address local")
  parser.add_argument("--spmdcheck", required=True,
                      help="the spmdcheck binary (the same path on every node)")
  parser.add_argument("--out", required=True, help="campaign directory (as spmdcheck fuzz --out)")
  parser.add_argument("--seconds", type=int, default=60)
  parser.add_argument("--seed", type=int, default=1)
  parser.add_argument("--partitioner", default="reference")
  parser.add_argument("--workers", type=int, default=2, help="actors (shards)")
  parser.add_argument("--jobs-per-worker", type=int, default=1,
                      help="spmdcheck fuzz --jobs in each actor (and its num_cpus)")
  parser.add_argument("--known", help="known findings file (read here, shipped to the actors)")
  parser.add_argument("--max-devices", type=int, default=8)
  parser.add_argument("--inject-bug")
  parser.add_argument("--reduce-seconds", type=int)
  parser.add_argument("--shard-timeout", type=float,
                      help="seconds after which a shard is stopped (SIGTERM, its summary so far "
                      "kept) and, 60 s later, its actor killed and the shard reported lost "
                      "(default: --seconds + reduce budget + 120)")
  args = parser.parse_args(argv)
  if args.local:
    args.address = "local"
  if args.workers < 1 or args.jobs_per_worker < 1 or args.seconds < 0:
    parser.error("--workers and --jobs-per-worker must be >= 1, --seconds >= 0")
  return args


def _is_xla(partitioners):
  return any(p in partitioners for p in ("xla", "gspmd", "shardy"))


def run(args, out=sys.stdout, err=sys.stderr):
  try:
    import ray  # pylint: disable=import-outside-toplevel
  except ImportError:
    err.write("ray_fuzz: ray is not installed (pip install -r workers/ray/requirements.txt)\n")
    return EXIT_BAD_INPUT
  binary = os.path.abspath(args.spmdcheck)
  known_bytes = None
  if args.known and args.known != "none":
    try:
      with open(args.known, "rb") as f:
        known_bytes = f.read()
    except OSError as e:
      err.write("ray_fuzz: cannot read --known %s: %s\n" % (args.known, e))
      return EXIT_BAD_INPUT
  reduce_seconds = args.reduce_seconds
  if reduce_seconds is None:
    reduce_seconds = 90 if _is_xla(args.partitioner) else 10
  shard_timeout = args.shard_timeout or args.seconds + reduce_seconds + 120
  fuzz_argv = [binary, "fuzz", "--seconds", str(args.seconds), "--seed", str(args.seed),
               "--partitioner", args.partitioner, "--max-devices", str(args.max_devices),
               "--jobs", str(args.jobs_per_worker), "--reduce-seconds", str(reduce_seconds)]
  if args.inject_bug:
    fuzz_argv += ["--inject-bug", args.inject_bug]
  if args.known == "none":
    fuzz_argv += ["--known", "none"]
  # The actors' spmdcheck finds its XLA venv like the driver's (same paths on every node).
  env = {k: v for k, v in os.environ.items() if k.startswith("SPMDCHECK_")}

  seed_line = ("ray_fuzz: spmdcheck fuzz --partitioner %s --seed %d --seconds %d --max-devices %d%s"
               " over %d worker(s) x %d job(s), Ray %s" %
               (args.partitioner, args.seed, args.seconds, args.max_devices,
                " --inject-bug " + args.inject_bug if args.inject_bug else "", args.workers,
                args.jobs_per_worker, args.address))
  out.write(seed_line + "\n")
  out.flush()
  signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM as Ctrl-C.
  # The campaign's wall time includes connecting to (or starting) the cluster.
  start = time.time()
  init = dict(include_dashboard=False, log_to_driver=False, logging_level="WARNING")
  try:
    if args.address == "local":
      ray.init(num_cpus=args.workers * args.jobs_per_worker, **init)
    else:
      ray.init(address=args.address, **init)
  except Exception as e:  # pylint: disable=broad-except  (ConnectionError, ValueError, ...)
    err.write("ray_fuzz: cannot connect to the Ray cluster at %s: %s\n" %
              (args.address, str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__))
    return EXIT_BAD_INPUT
  actors = []
  try:
    cpus = ray.cluster_resources().get("CPU", 0)
    if cpus < args.workers * args.jobs_per_worker:
      err.write("ray_fuzz: warning: the cluster has %g CPU(s) for %d worker(s) x %d job(s): "
                "shards wait for CPUs and may be lost at their deadline\n" %
                (cpus, args.workers, args.jobs_per_worker))
    if __name__ != "__main__":
      # Imported (tests): ship this module's code to the workers as a script's would be.
      ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    runner = ray.remote(num_cpus=args.jobs_per_worker, max_restarts=0)(ShardRunner)
    connect_seconds = time.time() - start
    pending = {}
    for shard in range(args.workers):
      actor = runner.options(scheduling_strategy="SPREAD").remote()
      actors.append(actor)
      ref = actor.run.remote(shard, args.workers, fuzz_argv, env, shard_timeout, known_bytes)
      pending[ref] = shard
    # The actor stops its own overrunning process (SIGTERM, then SIGKILL); this deadline is for
    # actors that die, hang themselves, or never get a CPU.
    submitted = time.time()
    deadline = submitted + shard_timeout + 60
    results, lost, codes = [], [], []
    while pending:
      try:
        ready, _ = ray.wait(list(pending), num_returns=1,
                            timeout=max(0.0, deadline - time.time()))
      except KeyboardInterrupt:
        # Ctrl-C or SIGTERM: the finished shards are merged, the others listed as lost.
        for ref, shard in sorted(pending.items(), key=lambda e: e[1]):
          lost.append({"shard": "%d/%d" % (shard, args.workers),
                       "reason": "interrupted: the driver was stopped"})
        break
      if not ready:
        for ref, shard in sorted(pending.items(), key=lambda e: e[1]):
          lost.append({"shard": "%d/%d" % (shard, args.workers),
                       "reason": "no result within %.0fs: actor killed" % (deadline - submitted)})
          ray.kill(actors[shard])
        break
      ref = ready[0]
      shard = pending.pop(ref)
      try:
        result = ray.get(ref)
      except Exception as e:  # pylint: disable=broad-except  (RayActorError, node lost, ...)
        lost.append({"shard": "%d/%d" % (shard, args.workers),
                     "reason": "actor died: %s" % str(e).strip().splitlines()[0][:300]})
        continue
      codes.append(result["info"].get("exit_code"))
      if result["tar"] is None:
        lost.append({"shard": result["info"]["shard"],
                     "reason": result["info"].get("error", "no result")})
        err.write(result["info"].get("log_tail", "")[-2000:])
        continue
      if result["info"].get("error"):
        err.write("ray_fuzz: shard %s: %s\n" % (result["info"]["shard"], result["info"]["error"]))
      results.append(result)
    wall = time.time() - start
    lost.sort(key=lambda l: int(l["shard"].split("/")[0]))
  finally:
    for actor in actors:
      try:
        ray.kill(actor)
      except Exception:  # pylint: disable=broad-except
        pass
    ray.shutdown()

  options = {"seed": args.seed, "partitioners": args.partitioner,
             "max_devices": args.max_devices, "inject_bug": args.inject_bug or "",
             "workers": args.workers, "jobs_per_worker": args.jobs_per_worker,
             "address": args.address, "connect_seconds": connect_seconds}
  try:
    summary = assemble_campaign(results, args.out, options, wall, lost)
  except (OSError, ValueError) as e:
    err.write("ray_fuzz: cannot write %s: %s\n" % (args.out, e))
    return EXIT_BAD_INPUT
  out.write(format_summary(summary, lost, "ray_fuzz: seed %d, %d of %d shard(s) merged into %s" %
                           (args.seed, len(results), args.workers, args.out)))
  out.write("reproduce: %s\n" % " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]))
  out.write("summary: %s\n" % os.path.join(args.out, "summary.json"))
  return exit_code(summary, codes, lost)


def main(argv=None):
  return run(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
  sys.exit(main())
