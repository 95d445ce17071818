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


def _checkout_root() -> Optional[str]:
  """The repository this package sits in when it is used from a source checkout (an editable
  install, or PYTHONPATH=python/): python/spmdcheck/ -> the root, recognised by its
  CMakeLists.txt and workers/xla/. None for an installed package (site-packages)."""
  here = os.path.dirname(os.path.abspath(__file__))
  root = os.path.dirname(os.path.dirname(here))
  if (os.path.isfile(os.path.join(root, "CMakeLists.txt")) and
      os.path.isdir(os.path.join(root, "workers", "xla"))):
    return root
  return None


def find_binary() -> str:
  """The spmdcheck binary: $SPMDCHECK_BINARY, else `spmdcheck` on PATH, else (only when this
  package is used from a source checkout) the checkout's build/tools/spmdcheck
  ($SPMDCHECK_BUILD_DIR/tools/spmdcheck when that is set). Raises SpmdcheckError naming every
  place it looked."""
  env = os.environ.get("SPMDCHECK_BINARY")
  if env:
    if not (os.path.isfile(env) and os.access(env, os.X_OK)):
      raise SpmdcheckError(f"SPMDCHECK_BINARY={env} is not an executable file")
    return env
  on_path = shutil.which("spmdcheck")
  if on_path:
    return on_path
  looked = ["$SPMDCHECK_BINARY (unset)", "`spmdcheck` on PATH (none)"]
  root = _checkout_root()
  if root is not None:
    builds = [os.path.join(root, "build")]
    if os.environ.get("SPMDCHECK_BUILD_DIR"):
      builds.insert(0, os.environ["SPMDCHECK_BUILD_DIR"])
    for build in builds:
      candidate = os.path.join(build, "tools", "spmdcheck")
      if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return candidate
      looked.append(f"{candidate} (this package is a source checkout; not built there)")
    hint = (f"build it in {root} (./scripts/run-tests or ./scripts/run-main builds "
            "build/tools/spmdcheck)")
  else:
    hint = ("build it from the spmdcheck repository and install it (`cmake --install build "
            "--prefix P` puts it in P/bin)")
  raise SpmdcheckError(
      f"the spmdcheck binary was not found: looked at {', '.join(looked)}. {hint}, then put it "
      "on PATH or set SPMDCHECK_BINARY to its path")


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
