"""spmdcheck.check on JAX functions (jax 0.10.2, 8 CPU devices): a sharded matmul, a scan with a
collective in its loop, a shard_map region, an injected partitioner bug; reports in text and
HTML; errors carry the binary's message."""

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import PartitionSpec as P

import spmdcheck


def matmul(x, w):
  return x @ w


def test_sharded_matmul_holds_under_gspmd(mesh):
  x = jnp.ones((8, 16), jnp.float32)
  w = jnp.ones((16, 8), jnp.float32)
  r = spmdcheck.check(matmul, x, w, mesh=mesh, in_shardings=(P("data", None), P(None, "model")),
                      out_shardings=P("data", "model"), partitioner="gspmd")
  assert r.holds, r
  assert [res.partitioner for res in r.results] == ["xla"]
  assert r.results[0].xla_end_to_end["verdict"] == "holds"
  # Rows split by data, columns by model, output tiled the same way: nothing moves.
  assert r.cost == spmdcheck.Cost(0, 0, 0, 0)
  assert r.first_wrong_device is None and r.first_divergence is None
  assert "GSPMD (xla): holds" in str(r)
  assert "<b>holds</b>" in r._repr_html_()


def test_contracting_dim_sharded_needs_a_reduction_both_partitioners(mesh):
  x = jax.ShapeDtypeStruct((8, 16), jnp.float32)
  w = jax.ShapeDtypeStruct((16, 8), jnp.float32)
  r = spmdcheck.check(matmul, x, w, mesh=mesh, in_shardings=(P(None, "model"), P("model", None)),
                      out_shardings=P("data", None), partitioner="both")
  assert r.holds, r
  assert sorted(r.cost) == ["shardy", "xla"]
  for cost in r.cost.values():
    assert cost.collectives >= 1  # partial sums over `model` must be combined
  assert r["shardy"].holds and r["GSPMD (xla)"].holds


def test_scan_with_a_collective(mesh):

  def scan_matmul(x, ws):

    def step(carry, w):
      carry = carry @ w  # contracts the model-sharded dim: a collective in the loop body
      return carry, jnp.sum(carry)

    return jax.lax.scan(step, x, ws)

  x = jax.ShapeDtypeStruct((8, 16), jnp.float32)
  ws = jax.ShapeDtypeStruct((3, 16, 16), jnp.float32)
  r = spmdcheck.check(scan_matmul, x, ws, mesh=mesh,
                      in_shardings=(P("data", "model"), P(None, "model", None)),
                      out_shardings=(P("data", None), P()), partitioner="gspmd")
  assert r.holds, r
  assert r.cost.collectives >= 1, r
  mlir = open(r.hlo_path).read()  # what jax lowered, compiled by XLA as jax.jit does
  assert "stablehlo.while" in mlir


def test_shard_map_region(mesh):

  def region(x, w):

    def body(a, b):
      return jax.lax.psum(a @ b, "model")

    return jax.shard_map(body, mesh=mesh, in_specs=(P("data", "model"), P("model", None)),
                         out_specs=P("data", None))(x, w)

  x = jax.ShapeDtypeStruct((8, 16), jnp.float32)
  w = jax.ShapeDtypeStruct((16, 8), jnp.float32)
  r = spmdcheck.check(region, x, w, mesh=mesh, in_shardings=(P("data", "model"), P("model", None)),
                      partitioner="gspmd", lint=False)
  # The oracle runs the manual region on 8 devices and agrees with the global program.
  assert r.holds, r
  assert r.results[0].raw["oracle"]["verdict"] == "holds"
  # Under Shardy (jax's default) the same shard_map, lowered to sdy.manual_computation and
  # compiled as jax.jit compiles it: the oracle judges XLA's program.
  shardy = spmdcheck.check(region, x, w, mesh=mesh,
                           in_shardings=(P("data", "model"), P("model", None)), lint=False)
  assert shardy.results[0].partitioner == "shardy"
  assert "sdy.manual_computation" in open(shardy.hlo_path).read()
  assert shardy.results[0].raw["oracle"]["verdict"] == "holds", shardy


def test_an_injected_bug_is_found_with_its_first_wrong_device(mesh):
  x = jax.ShapeDtypeStruct((8, 16), jnp.int32)
  w = jax.ShapeDtypeStruct((16, 8), jnp.int32)
  r = spmdcheck.check(matmul, x, w, mesh=mesh, in_shardings=(P("data", "model"), P("model", None)),
                      out_shardings=P(None, None), partitioner="reference",
                      inject_bug="all-gather-group-order", lint=False)
  assert r.verdict == "fails", r
  assert r.first_wrong_device is not None and r.first_wrong_device in r.results[0].wrong_devices
  assert "first wrong device" in str(r)
  assert "first wrong device <b>" in r._repr_html_()


def test_failures_raise_with_the_binarys_message(mesh, monkeypatch):
  with pytest.raises(spmdcheck.SpmdcheckError, match="error"):
    spmdcheck.to_partition_spec("{devices=[2,2]0,1,2}", mesh)  # malformed: exit 2
  monkeypatch.setenv("SPMDCHECK_BINARY", "/nonexistent/spmdcheck")
  with pytest.raises(spmdcheck.SpmdcheckError, match="SPMDCHECK_BINARY"):
    spmdcheck.check(matmul, jnp.ones((8, 16)), jnp.ones((16, 8)), mesh=mesh)


def test_unknown_partitioner_is_refused():
  with pytest.raises(ValueError, match="unknown partitioner"):
    spmdcheck.partitioner_spec("tpu-magic")
  assert spmdcheck.partitioner_spec(["gspmd", "reference"]) == "xla,reference"


def test_partition_specs_both_ways(mesh):
  spec, text = spmdcheck.to_partition_spec("{devices=[8,1]<=[2,4]T(1,0)}", mesh)
  assert spec == P(("model", "data"), None) and text == "P(('model', 'data'), None)"
  none, why = spmdcheck.to_partition_spec("{devices=[4,2]<=[8]}", mesh)
  assert none is None and "sub-axis" in why
  assert spmdcheck.mesh_spec(mesh) == "data=2,model=4"
