"""GSPMD shardings -> Shardy: the common mesh and each dim's axes, checked against the device
order XLA's own HloSharding gives (jaxlib's parser is the reference, not our code)."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jax._src.lib import xla_client as xc
from shardy_import import Unsupported, common_mesh, parse_sharding, tensor_sharding_text


def devices_of(text):
  """Tile index -> device, from XLA's own HloSharding."""
  s = xc.HloSharding.from_string(text)
  return np.array(s.tile_assignment_devices()).reshape(
      list(s.to_proto().tile_assignment_dimensions))


def mesh_devices_along(parsed, mesh, rank):
  """For each tensor dim, the device-id stride pattern the sdy axes denote: device id of tile
  index k along dim d (all other dims 0, replicated digits 0) = sum of digit * stride."""
  out = []
  for dim in parsed.dims[:rank]:
    strides, sizes = [], []
    for name in [n for digit in dim for n in mesh.axes_of(digit)]:
      _, size, stride = next(a for a in mesh.axes if a[0] == name)
      strides.append(stride)
      sizes.append(size)
    ids = []
    for digits in itertools.product(*[range(s) for s in sizes]):
      ids.append(sum(d * st for d, st in zip(digits, strides)))
    out.append(ids)
  return out


@pytest.mark.parametrize("text,rank,expected", [
    ("{devices=[8,1]<=[8]}", 2, '<@mesh, [{"x0"}, {}]>'),
    ("{devices=[2,4]<=[8]}", 2, '<@mesh, [{"x0"}, {"x1"}]>'),
    ("{devices=[4,2]<=[2,4]T(1,0)}", 2, '<@mesh, [{"x1"}, {"x0"}]>'),
    ("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", 2, '<@mesh, [{"x0"}, {}]>'),
    ("{replicated}", 2, '<@mesh, [{}, {}]>'),
    ("{maximal device=3}", 1, '<@maximal_3, []>'),
])
def test_known_shardings(text, rank, expected):
  parsed = parse_sharding(text, xc)[0]
  mesh = common_mesh([parsed], 8)
  assert tensor_sharding_text(parsed, mesh, rank) == expected


def test_seed_sharding_gets_three_axes():
  parsed = parse_sharding("{devices=[4,2,8]<=[2,4,8]T(1,0,2)}", xc)[0]
  mesh = common_mesh([parsed], 64)
  assert mesh.attr_text() == '<["x0"=2, "x1"=4, "x2"=8]>'
  assert tensor_sharding_text(parsed, mesh, 3) == '<@mesh, [{"x1"}, {"x0"}, {"x2"}]>'


def test_transposed_orders_share_a_mesh():
  a = parse_sharding("{devices=[2,3]<=[6]}", xc)[0]
  b = parse_sharding("{devices=[3,2]<=[2,3]T(1,0)}", xc)[0]
  mesh = common_mesh([a, b], 6)
  assert mesh.attr_text() == '<["x0"=2, "x1"=3]>'
  assert tensor_sharding_text(a, mesh, 2) == '<@mesh, [{"x0"}, {"x1"}]>'
  assert tensor_sharding_text(b, mesh, 2) == '<@mesh, [{"x1"}, {"x0"}]>'


def test_no_common_mesh_is_unsupported():
  # Device-id digits of 6 and of 4 over 12 devices nest in neither direction.
  a = parse_sharding("{devices=[2,6]<=[12]}", xc)[0]
  b = parse_sharding("{devices=[3,4]<=[12]}", xc)[0]
  with pytest.raises(Unsupported):
    common_mesh([a, b], 12)


def test_manual_is_unsupported():
  with pytest.raises(Unsupported):
    parse_sharding("{manual}", xc)


@st.composite
def iota_shardings(draw):
  """Random V2 shardings over 2^k devices: reshape dims, a transpose, tile dims."""
  k = draw(st.integers(1, 6))
  n = 2 ** k
  # reshape dims: a composition of k into parts (each a power of two)
  cuts = sorted(draw(st.sets(st.integers(1, k - 1), max_size=k - 1))) if k > 1 else []
  parts = [b - a for a, b in zip([0] + cuts, cuts + [k])]
  reshape = [2 ** p for p in parts]
  perm = draw(st.permutations(list(range(len(reshape)))))
  cuts2 = sorted(draw(st.sets(st.integers(1, k - 1), max_size=min(3, k - 1)))) if k > 1 else []
  tile = [2 ** (b - a) for a, b in zip([0] + cuts2, cuts2 + [k])]
  replicate = draw(st.booleans()) and len(tile) > 1
  text = "{devices=[" + ",".join(map(str, tile)) + "]<=[" + ",".join(map(str, reshape)) + "]"
  if len(reshape) > 1:
    text += "T(" + ",".join(map(str, perm)) + ")"
  if replicate:
    text += " last_tile_dim_replicate"
  text += "}"
  return text, n, len(tile) - (1 if replicate else 0)


@settings(max_examples=300, deadline=None)
@given(iota_shardings())
def test_axes_denote_xlas_device_order(case):
  text, n, rank = case
  parsed = parse_sharding(text, xc)[0]
  mesh = common_mesh([parsed], n)
  assert math.prod(s for _, s, _ in mesh.axes) == n
  devices = devices_of(text)
  along = mesh_devices_along(parsed, mesh, rank)
  for d in range(rank):
    index = [0] * devices.ndim
    xla = []
    for k in range(devices.shape[d]):
      index[d] = k
      xla.append(int(devices[tuple(index)]))
    base = int(devices[tuple([0] * devices.ndim)])
    assert [base + i for i in along[d]] == xla, (text, d)


def test_explicit_orders():
  # A transposed iota written as a list is plain digits.
  parsed = parse_sharding("{devices=[2,2]0,2,1,3}", xc)[0]
  mesh = common_mesh([parsed], 4)
  assert mesh.device_ids is None
  assert tensor_sharding_text(parsed, mesh, 2) == '<@mesh, [{"x1"}, {"x0"}]>'
  # A reversed order: the mesh takes it as its device_ids.
  parsed = parse_sharding("{devices=[2]1,0}", xc)[0]
  mesh = common_mesh([parsed], 2)
  assert mesh.attr_text() == '<["x0"=2], device_ids=[1, 0]>'
  assert tensor_sharding_text(parsed, mesh, 1) == '<@mesh, [{"x0"}]>'
  # Another sharding over the same order is read in positions of it.
  other = parse_sharding("{devices=[1,2]1,0}", xc)[0]
  mesh = common_mesh([parse_sharding("{devices=[2]1,0}", xc)[0], other], 2)
  assert tensor_sharding_text(other, mesh, 2) == '<@mesh, [{}, {"x0"}]>'
