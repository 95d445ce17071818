"""Refreshes jaxlib_vectors.json: for each recorded named-mesh ("V3") sharding, the V2 sharding
jaxlib's own conversion gives (what jax calls when it reads a sharding XLA returns). Run with the
project's environment: .venv/bin/python tests/data/named_sharding/make_vectors.py
Entries whose source is "jit" were printed by XLA in a Shardy compile of a jitted function;
their V2 form is the executable's parameter sharding and is re-derived here by the same
conversion (they agree)."""

import json
import os

from jax._src.lib import xla_client as xc
import jax
import jaxlib

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "jaxlib_vectors.json")


def main() -> None:
  with open(PATH) as f:
    data = json.load(f)
  for vector in data["vectors"]:
    sharding = xc.HloSharding.from_string(vector["v3"])
    vector["v3"] = sharding.to_string()
    vector["v2"] = sharding.v3_to_v2_sharding().to_string()
  data["jax"], data["jaxlib"] = jax.__version__, jaxlib.__version__
  with open(PATH, "w") as f:
    json.dump(data, f, indent=1)
    f.write("\n")
  print(f"{len(data['vectors'])} vectors, jaxlib {jaxlib.__version__}")


if __name__ == "__main__":
  main()
