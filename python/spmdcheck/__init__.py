"""spmdcheck for JAX users: check XLA's SPMD partitioning of a jitted function.

    import spmdcheck
    r = spmdcheck.check(f, x, w, mesh=mesh, in_shardings=(P('data', None), P(None, 'model')),
                        out_shardings=P('data', 'model'), partitioner="gspmd")
    assert r.holds, r

In a test, `spmdcheck.assert_partitions_correctly(f, x, w, mesh=..., ...)` raises an
AssertionError with the counterexample instead (spmdcheck.testing; the pytest plugin
spmdcheck.pytest_plugin gives the CPU devices).

The package lowers `f` with jax; the spmdcheck binary (found via SPMDCHECK_BINARY, `spmdcheck`
on PATH, or a source checkout's build/) partitions it with XLA through its worker and judges it
(docs/python.md). Importing the package does not import jax.
"""

from ._binary import SpmdcheckError, find_binary
from ._check import check, lint_module, partitioner_spec, to_partition_spec
from ._lower import lower, mesh_spec
from ._report import Cost, Finding, PartitionerResult, Report
from .testing import (PartitioningError, UnknownVerdictWarning, assert_partitions_correctly,
                      cpu_mesh)

__all__ = [
    "check", "lint_module", "lower", "mesh_spec", "to_partition_spec", "partitioner_spec",
    "find_binary",
    "Report", "PartitionerResult", "Finding", "Cost", "SpmdcheckError",
    "assert_partitions_correctly", "cpu_mesh", "PartitioningError", "UnknownVerdictWarning",
]
