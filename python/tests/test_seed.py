"""The seed program (/work/shared/cases/seed-scatter) written as a JAX function with the seed's
shardings, checked against XLA's GSPMD on 64 devices (a subprocess: this session has 8), and the
lint's hint on GSPMD's program as a PartitionSpec."""

import json
import os
import re
import subprocess
import sys

import pytest

import spmdcheck

SEED = os.environ.get("SPMDCHECK_SEED_DIR") or os.path.join(
    os.environ.get("SPMDCHECK_SHARED_DIR") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared"), "cases",
    "seed-scatter")

SCRIPT = r'''
import json, os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=64"
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, PartitionSpec as P
import spmdcheck

# Mesh data=2, pipeline=4, model=8; device id = 32*data + 8*pipeline + model.
mesh = Mesh(np.array(jax.devices()).reshape(2, 4, 8), ("data", "pipeline", "model"))

def seed(x):
  stage0 = x[:, 0:1]                      # slice.56: pipeline stage 0
  y = stage0.reshape(3, 2, 16, 4)         # reshape.1062
  y = jnp.transpose(y, (1, 0, 2, 3))      # transpose.9599
  return y.reshape(6, 16, 4)              # reshape.9600

x = jax.ShapeDtypeStruct((3, 4, 2, 16, 4), jnp.bfloat16)
r = spmdcheck.check(seed, x, mesh=mesh, in_shardings=P(None, "pipeline", "data", "model", None),
                    out_shardings=P("data", None, None), partitioner="gspmd")
# The module as HLO (the binary reads jax's StableHLO through jaxlib).
hlo = spmdcheck._binary.run(["fmt", r.hlo_path]).stdout
print(json.dumps({"holds": r.holds, "text": str(r), "hlo": hlo,
                  "cost": r.cost.__dict__, "findings": [f.status for f in r.findings]}))
'''


def shardings(hlo):
  """The parameter's and the result's shardings of a module's entry."""
  param = re.search(r"parameter\(0\), sharding=(\{[^}]*\})", hlo).group(1)
  root = re.search(r"ROOT [^\n]*sharding=(\{[^}]*\})", hlo).group(1)
  return param, root


@pytest.fixture(scope="module")
def seed_case():
  if not os.path.isdir(SEED):
    pytest.skip(f"the seed case is absent ({SEED})")
  return SEED


def test_seed_program_as_a_jax_function(seed_case):
  env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=64")
  proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                        timeout=900, env=env)
  assert proc.returncode == 0, proc.stderr[-3000:]
  out = json.loads(proc.stdout.strip().splitlines()[-1])
  assert out["holds"], out["text"]
  # The JAX function carries the seed's shardings: those of pre.hlo's parameter and result.
  with open(os.path.join(seed_case, "pre.hlo")) as f:
    pre = f.read()
  assert shardings(out["hlo"]) == shardings(pre)
  # GSPMD does what the report shows: 4 collectives, 2 of them collective-permutes, 504 bytes
  # received and sent per device (the seed's README, and check --compare on gspmd.hlo).
  assert out["cost"] == {"collectives": 4, "collective_permutes": 2, "max_recv_bytes": 504,
                         "max_send_bytes": 504}
  assert "proved" in out["findings"], out["text"]


def test_lint_hint_on_gspmds_seed_program_is_a_partition_spec(seed_case):
  import numpy as np
  from jax.sharding import PartitionSpec as P

  class Mesh64:  # spmdcheck only reads the axis names, sizes and device ids of a mesh
    axis_names = ("data", "pipeline", "model")
    shape = {"data": 2, "pipeline": 4, "model": 8}
    devices = np.array([type("D", (), {"id": i})() for i in range(64)]).reshape(2, 4, 8)

  findings = spmdcheck.lint_module(os.path.join(seed_case, "gspmd.hlo"), mesh=Mesh64())
  hinted = [f for f in findings if f.better_sharding]
  assert hinted, findings
  # seed README: reshape.1062 should be {devices=[1,2,8,1,4]<=[2,4,8]T(0,2,1) ...}: data splits
  # dim 1, model dim 2, pipeline replicates.
  assert hinted[0].value == "reshape.1062"
  assert hinted[0].hint == P(None, "data", "model", None)
  assert "constrain reshape.1062 to P(None, 'data', 'model', None)" in str(hinted[0])
