"""Writes the IFRT fixtures of this folder with the pinned jaxlib: the IFRT programs Shardy's MPMD
partitioner (`jaxlib._sdy_mpmd`: apply_mpmd_partitioning, then lower_to_ifrt) makes of three
generated pipelines (spmdcheck.mpmd.random_mpmd_program), as `spmdcheck explain` reads them.
Usage: PYTHONPATH=python .venv/bin/python corpus/explain/mpmd/make_fixtures.py (from the repository
root; each program is also checked end to end, which takes a minute)."""

import os
import shutil
import tempfile

from spmdcheck import mpmd

HERE = os.path.dirname(os.path.abspath(__file__))
# seed -> file: GPipe over meshes of 4 and 2 devices with forward and backward stages and 2
# microbatches; forward stages only over two meshes of 4 devices with 3 microbatches (1F1B asked
# for; with no backward stage it is a plain forward pipeline); two 2x2 meshes, 2 microbatches.
FIXTURES = {1: "gpipe_fwd_bwd.ifrt.mlir", 60: "forward_3_microbatches.ifrt.mlir",
            27: "mesh2x2.ifrt.mlir"}

for seed, name in FIXTURES.items():
  program = mpmd.random_mpmd_program(seed)
  work = tempfile.mkdtemp(prefix=f"ifrt-{seed}-")
  result = mpmd.check_mpmd(program, workdir=work)
  print(f"seed {seed}: {mpmd.describe(program)}: {result.verdict}")
  shutil.copy(os.path.join(work, "ifrt.mlir"), os.path.join(HERE, name))
  shutil.rmtree(work)
