"""Shared fixtures: one worker process for the whole session (importing jax takes seconds)."""

import json
import os
import subprocess
import sys

import pytest

WORKER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "spmdcheck_xla_worker.py")
sys.path.insert(0, os.path.dirname(WORKER))


class WorkerProcess:

  def __init__(self, devices=8):
    self.proc = subprocess.Popen([sys.executable, WORKER, "--devices", str(devices)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    self.hello = json.loads(self.proc.stdout.readline())
    self.next_id = 1

  def call(self, method, params=None):
    request_id = self.next_id
    self.next_id += 1
    self.proc.stdin.write(json.dumps({"id": request_id, "method": method,
                                      "params": params or {}}) + "\n")
    self.proc.stdin.flush()
    response = json.loads(self.proc.stdout.readline())
    assert response["id"] == request_id
    return response

  def send_raw(self, line):
    self.proc.stdin.write(line + "\n")
    self.proc.stdin.flush()
    return json.loads(self.proc.stdout.readline())

  def close(self):
    try:
      self.call("shutdown")
    finally:
      self.proc.wait(timeout=30)


@pytest.fixture(scope="session")
def worker():
  w = WorkerProcess()
  yield w
  w.close()
