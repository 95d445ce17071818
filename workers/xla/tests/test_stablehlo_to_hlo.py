"""The worker's `to_hlo` request: StableHLO / MLIR text (jax 0.10.2's lowerings with and without
Shardy, tests/data/mlir) to HLO text through jaxlib, with the partition count in the header."""

import os

import pytest

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "data",
                    "mlir")


def read(name):
  with open(os.path.join(DATA, name)) as f:
    return f.read()


@pytest.mark.parametrize("name", ["matmul.sdy.mlir", "matmul.gspmd.mlir"])
def test_converts_with_partition_count(worker, name):
  answer = worker.call("to_hlo", {"mlir": read(name)})
  assert "result" in answer, answer
  hlo = answer["result"]["hlo"]
  header = hlo.split("\n", 1)[0]
  assert header.startswith("HloModule jit_matmul")
  assert "num_partitions=8" in header and "replica_count=1" in header
  assert answer["result"]["num_partitions"] == 8
  assert answer["result"]["shardy"] == name.endswith(".sdy.mlir")
  # P('data', 'model') on the first parameter, as jaxlib exports it either way.
  assert "parameter(0), sharding={devices=[2,4]<=[8]}" in hlo


def test_shardy_manual_computation_keeps_the_round_trip_form(worker):
  hlo = worker.call("to_hlo", {"mlir": read("shard_map.sdy.mlir")})["result"]["hlo"]
  assert 'custom_call_target="xla.sdy.GlobalToLocalShape"' in hlo
  assert "xla.sdy.meshes" in hlo.split("\n", 1)[0]


def test_bad_mlir_is_rejected_with_a_location(worker):
  text = "module @m {\n  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n" \
         "    %0 = stablehlo.bogus %a : tensor<4xf32>\n    return %0 : tensor<4xf32>\n  }\n}\n"
  answer = worker.call("to_hlo", {"mlir": text})
  assert answer["error"]["kind"] == "rejected"
  assert "-:3:" in answer["error"]["message"]


def test_missing_text_is_a_protocol_error(worker):
  answer = worker.call("to_hlo", {})
  assert answer["error"]["kind"] == "protocol"
