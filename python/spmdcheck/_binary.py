"""Finding and running the spmdcheck binary: the engine behind this package."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Sequence

# Exit codes of every subcommand (docs: 0 holds, 1 fails, 2 bad input, 3 unknown).
HOLDS, FAILS, BAD_INPUT, UNKNOWN = 0, 1, 2, 3


class SpmdcheckError(RuntimeError):
  """The binary refused the input or could not run; the message is the binary's."""

  def __init__(self, message: str, command: Optional[Sequence[str]] = None,
               exit_code: Optional[int] = None):
    super().__init__(message)
    self.command = list(command) if command else []
    self.exit_code = exit_code


def find_binary() -> str:
  """SPMDCHECK_BINARY, else build/tools/spmdcheck of the repository this package sits in (an
  editable install), else `spmdcheck` on PATH."""
  env = os.environ.get("SPMDCHECK_BINARY")
  if env:
    if not os.access(env, os.X_OK):
      raise SpmdcheckError(f"SPMDCHECK_BINARY={env} is not an executable file")
    return env
  here = os.path.dirname(os.path.abspath(__file__))
  for root in (os.path.dirname(os.path.dirname(here)), os.getcwd()):
    candidate = os.path.join(root, "build", "tools", "spmdcheck")
    if os.access(candidate, os.X_OK):
      return candidate
  on_path = shutil.which("spmdcheck")
  if on_path:
    return on_path
  raise SpmdcheckError(
      "the spmdcheck binary was not found: build it (./scripts/run-tests in the repository "
      "builds build/tools/spmdcheck) and set SPMDCHECK_BINARY to its path")


@dataclasses.dataclass
class Completed:
  command: List[str]
  exit_code: int
  stdout: str
  stderr: str


def run(args: Sequence[str], timeout: Optional[float] = None,
        env: Optional[Dict[str, str]] = None) -> Completed:
  """Runs `spmdcheck ARGS`. Exit code 2 (bad input) and crashes raise SpmdcheckError with the
  binary's message; 0, 1 and 3 are answers."""
  command = [find_binary(), *args]
  full_env = dict(os.environ)
  # The XLA worker needs a python with jax: this one has it (it imported jax to lower).
  if "SPMDCHECK_XLA_PYTHON" not in full_env and "SPMDCHECK_XLA_VENV" not in full_env:
    full_env["SPMDCHECK_XLA_PYTHON"] = sys.executable
  full_env.update(env or {})
  try:
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=full_env)
  except subprocess.TimeoutExpired:
    raise SpmdcheckError(f"spmdcheck did not finish in {timeout} s", command) from None
  done = Completed(command, proc.returncode, proc.stdout, proc.stderr)
  if proc.returncode not in (HOLDS, FAILS, UNKNOWN):
    message = (proc.stderr.strip() or proc.stdout.strip() or
               f"spmdcheck exited with {proc.returncode}")
    raise SpmdcheckError(message, command, proc.returncode)
  return done
