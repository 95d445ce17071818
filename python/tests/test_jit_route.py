"""spmdcheck compiles a jax function as jax.jit does: for the same function, the program XLA's
partitioner writes (the module after spmd-partitioning) has the same collectives, with the same
replica groups and shapes, as the one `jax.jit(f, ...).lower(...).compile()` gets, under Shardy
(jax's default) and under GSPMD."""

import glob
import os
import re
import tempfile

import jax
import jax.numpy as jnp
import pytest
from jax._src import config
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P

import spmdcheck

_COLLECTIVE = re.compile(
    r"= (\S+) (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)"
    r"(?:-start)?\(.*?(?:replica_groups=(\S+(?: \{[^}]*\})?)|source_target_pairs=(\{[^ ]*\}))")


def collectives(text):
  """(opcode, shape, groups or pairs) of every collective, in program order."""
  out = []
  for line in text.splitlines():
    m = _COLLECTIVE.search(line)
    if m:
      out.append((m.group(2), m.group(1).split("{")[0], m.group(3) or m.group(4)))
  return out


def jax_partitioned(f, args, in_shardings, out_shardings, shardy):
  """The module after spmd-partitioning when jax.jit compiles `f` itself."""
  dump = tempfile.mkdtemp(prefix="jax-dump-")
  with config.use_shardy_partitioner(shardy):
    jitted = jax.jit(f, in_shardings=in_shardings, out_shardings=out_shardings)
    jitted.lower(*args).compile({"xla_dump_to": dump,
                                 "xla_dump_hlo_pass_re": "spmd-partitioning",
                                 "xla_dump_hlo_as_text": True})
  files = glob.glob(os.path.join(dump, "*after_spmd-partitioning*.txt"))
  assert len(files) == 1, files
  with open(files[0]) as f:
    return f.read()


def cases(mesh):
  auto = Mesh(mesh.devices, mesh.axis_names, axis_types=(AxisType.Auto,) * 2)
  x = jax.ShapeDtypeStruct((8, 16), jnp.float32)
  w = jax.ShapeDtypeStruct((16, 8), jnp.float32)

  def matmul(a, b):
    return jnp.tanh(a @ b)

  def constrained(a, b):
    y = jax.lax.with_sharding_constraint(a @ b, NamedSharding(auto, P(None, "model")))
    return y * 2

  def region(a, b):
    def body(u, v):
      return jax.lax.psum(u @ v, "model")
    return jax.shard_map(body, mesh=auto, in_specs=(P("data", "model"), P("model", None)),
                         out_specs=P("data", None))(a, b)

  def partial_region(a, b):
    def body(u, v):
      return jax.lax.psum(u @ v, "model")
    return jax.shard_map(body, mesh=auto, in_specs=(P(None, "model"), P("model", None)),
                         out_specs=P(None, None), axis_names={"model"})(a, b)

  two = (NamedSharding(auto, P("data", "model")), NamedSharding(auto, P("model", None)))
  return {
      "matmul": (matmul, (x, w), two, NamedSharding(auto, P("data", None))),
      "constraint": (constrained, (x, w), two, None),
      "shard_map": (region, (x, w), two, None),
      "partial_shard_map": (partial_region, (x, w), two, None),
      "unspecified_out": (matmul, (x, w), two, None),
  }


@pytest.mark.parametrize("shardy", [True, False], ids=["shardy", "gspmd"])
@pytest.mark.parametrize("name", ["matmul", "constraint", "shard_map", "partial_shard_map",
                                  "unspecified_out"])
def test_same_collectives_as_jax_jit(mesh, name, shardy):
  f, args, in_shardings, out_shardings = cases(mesh)[name]
  expected = jax_partitioned(f, args, in_shardings, out_shardings, shardy)
  workdir = tempfile.mkdtemp(prefix="spmdcheck-route-")
  r = spmdcheck.check(f, *args, in_shardings=in_shardings, out_shardings=out_shardings,
                      partitioner="shardy" if shardy else "gspmd", lint=False, workdir=workdir)
  result = r.results[0]
  assert any("jax.jit's compile options" in n for n in result.raw["partitioner_notes"])
  spec = "shardy" if shardy else "xla"
  with open(os.path.join(workdir, "dump", f"{spec}.partitioned.hlo")) as f:
    ours = f.read()
  assert collectives(ours) == collectives(expected)
  assert result.verdict in ("holds", "unknown"), r
  assert result.raw["oracle"]["verdict"] == "holds", r
