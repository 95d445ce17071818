"""8 virtual CPU devices for jax (set before jax is imported), and the binary."""

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pytest  # noqa: E402

import spmdcheck  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def binary():
  try:
    return spmdcheck.find_binary()
  except spmdcheck.SpmdcheckError as e:
    pytest.skip(str(e))


@pytest.fixture(scope="session")
def mesh():
  import jax
  import numpy as np
  from jax.sharding import Mesh
  return Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
