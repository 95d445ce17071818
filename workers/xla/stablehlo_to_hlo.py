"""StableHLO / MLIR text (what `jax.jit(f).lower(...).as_text()` prints) -> HLO text, through
jaxlib's own converter, for the worker's `to_hlo` request (docs/xla-worker.md).

jaxlib's `mlir_module_to_xla_computation` parses the module (StableHLO with `mhlo.sharding`
strings, or Shardy's `sdy.mesh` / `sdy.sharding`), exports Shardy shardings as HloShardings (it
keeps them, and Shardy's manual computations, in the `xla.sdy.*` round-trip form that spmdcheck's
loader turns into GSPMD's form: ir/sdy_sharding_round_trip.h) and prints HLO. The HLO module has no
partition count of its own: the module's `mhlo.num_partitions` / `mhlo.num_replicas` are written
into the header.
"""

from __future__ import annotations

import re
from typing import Any, Dict

_NUM_PARTITIONS = re.compile(r"mhlo\.num_partitions\s*=\s*(\d+)")
_NUM_REPLICAS = re.compile(r"mhlo\.num_replicas\s*=\s*(\d+)")
_HEADER = re.compile(r"^(HloModule\s+[^\s,]+)")


class ConversionError(Exception):
  """jaxlib refused the module; the message is jaxlib's."""


_RESHARD = re.compile(r"\bsdy\.reshard\b")


def mlir_to_hlo(mlir_text: str, xla_client) -> Dict[str, Any]:
  """Returns {"hlo": HLO text, "num_partitions": N or None, "shardy": bool}."""
  # An explicit reshard is the identity on values, written like a sharding constraint; jaxlib's
  # export to HLO has no case for it (XLA itself compiles the module as written).
  mlir_text = _RESHARD.sub("sdy.sharding_constraint", mlir_text)
  try:
    computation = xla_client._xla.mlir.mlir_module_to_xla_computation(
        mlir_text, use_tuple_args=False, return_tuple=False)
  except Exception as e:  # jaxlib's parser or legalisation: its message says where
    raise ConversionError(str(e)) from None
  hlo = computation.as_hlo_text()
  partitions = _NUM_PARTITIONS.search(mlir_text)
  replicas = _NUM_REPLICAS.search(mlir_text)
  extra = ""
  if partitions and "num_partitions=" not in hlo.split("\n", 1)[0]:
    extra += f", num_partitions={int(partitions.group(1))}"
  if replicas and "replica_count=" not in hlo.split("\n", 1)[0]:
    extra += f", replica_count={int(replicas.group(1))}"
  if extra:
    hlo = _HEADER.sub(lambda m: m.group(1) + extra, hlo, count=1)
  return {
      "hlo": hlo,
      "num_partitions": int(partitions.group(1)) if partitions else None,
      "shardy": "sdy.mesh" in mlir_text or "#sdy.sharding" in mlir_text,
  }


def handle(worker, params: Dict[str, Any], request_error) -> Dict[str, Any]:
  """The worker's `to_hlo` method: params {"mlir": text}. `request_error` is the worker's
  RequestError class (the worker runs as __main__)."""
  text = params.get("mlir")
  if not isinstance(text, str) or not text.strip():
    raise request_error("protocol", "to_hlo needs 'mlir' (the module's text)")
  try:
    return mlir_to_hlo(text, worker.xc)
  except ConversionError as e:
    raise request_error("rejected", f"jaxlib's MLIR -> HLO conversion: {e}") from None
