#!/usr/bin/env python3
"""A stand-in for workers/xla/spmdcheck_xla_worker.py that misbehaves on purpose, for the C++
client's tests. FAKE_WORKER_MODE picks how it answers a compile:
  ok       - a well-formed answer (a tiny partitioned module)
  garbage  - a line that is not JSON
  wrong-id - an answer to another request
  die      - logs an XLA-style CHECK failure and a long stack trace, and aborts
  hang     - never answers
  no-hello - never says it is ready
  fail-import - says jax cannot be imported
  fallback - answers like XLA after a silent fallback from Shardy to GSPMD
"""
import json
import os
import sys
import time

mode = os.environ.get("FAKE_WORKER_MODE", "ok")
scratch = sys.argv[sys.argv.index("--scratch") + 1] if "--scratch" in sys.argv else "/tmp"
if mode == "no-hello":
  time.sleep(3600)
if mode == "fail-import":
  print(json.dumps({"event": "failed", "message": "cannot import jax: No module named 'jax'"}),
        flush=True)
  sys.exit(3)
print(json.dumps({"event": "ready", "protocol": 1, "jax": "0.0.fake", "jaxlib": "0.0.fake",
                  "devices": 8}), flush=True)
MODULE = """HloModule fake, num_partitions=2

ENTRY e {
  ROOT p = f32[2] parameter(0), sharding={devices=[2]<=[2]}
}
"""
for line in sys.stdin:
  request = json.loads(line)
  if request["method"] == "shutdown":
    print(json.dumps({"id": request["id"], "result": {}}), flush=True)
    break
  if mode == "garbage":
    print("this is not json {", flush=True)
  elif mode == "wrong-id":
    print(json.dumps({"id": request["id"] + 100, "result": {}}), flush=True)
  elif mode == "die":
    with open(os.path.join(scratch, f"request-{request['id']}.log"), "w") as log:
      log.write("F0000 00:00:00 spmd_partitioner.cc:123] Check failed: fake CHECK for tests\n")
      # XLA's stack trace follows, longer than the tail the client keeps of the log.
      for frame in range(200):
        log.write(f"    @     0x{frame:012x}  xla::spmd::SomeFrame{frame}()\n")
    os.abort()
  elif mode == "fallback":
    print(json.dumps({"id": request["id"], "result": {
        "modules": {"partitioned": MODULE, "received": MODULE, "shardy": None},
        "compile_seconds": 0.01}, "log": [
            "W1201 py_client.cc:496] Module has GSPMD attrs or ops, but Shardy is enabled. "
            "Disabling Shardy and falling back to using GSPMD propagation."]}), flush=True)
  elif mode == "hang":
    time.sleep(3600)
  else:
    # Every answer says how long jaxlib worked on it (what the campaign counts as XLA's time).
    print(json.dumps({"id": request["id"], "result": {
        "modules": {"partitioned": MODULE, "received": MODULE},
        "compile_seconds": 0.01}, "log": ["W fake warning"], "xla_seconds": 0.25}), flush=True)
