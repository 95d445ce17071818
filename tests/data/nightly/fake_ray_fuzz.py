#!/usr/bin/env python3
"""A stand-in for workers/ray/ray_fuzz.py (tests/cli_nightly_test.sh sets SPMDCHECK_RAY_DRIVER to
it): it takes the driver's command line as `spmdcheck nightly --ray` calls it, records it in
OUT/ray_args.json, and runs one local `spmdcheck fuzz` into OUT (the layout the real driver
merges its shards into), exiting with its code."""

import argparse
import json
import os
import subprocess
import sys

parser = argparse.ArgumentParser()
for flag in ("--address", "--spmdcheck", "--out", "--partitioner"):
  parser.add_argument(flag, required=True)
for flag in ("--seconds", "--seed", "--workers", "--jobs-per-worker", "--max-devices"):
  parser.add_argument(flag, required=True, type=int)
parser.add_argument("--reduce-seconds", type=int)
parser.add_argument("--inject-bug")
args = parser.parse_args()
os.makedirs(args.out, exist_ok=True)
with open(os.path.join(args.out, "ray_args.json"), "w") as f:
  json.dump(vars(args), f)
command = [args.spmdcheck, "fuzz", "--partitioner", args.partitioner, "--seconds", str(args.seconds),
           "--seed", str(args.seed), "--max-devices", str(args.max_devices), "--out", args.out]
if args.reduce_seconds is not None:
  command += ["--reduce-seconds", str(args.reduce_seconds)]
if args.inject_bug:
  command += ["--inject-bug", args.inject_bug]
sys.exit(subprocess.call(command))
