"""XLA's named-mesh shardings (HloSharding V3), property-tested against jaxlib's own conversion:
for random meshes (axis sizes, device orders) and random V3 shardings (several axes per dim,
sub-axes, open dims, replicated/unreduced/manual axes), `spmdcheck prove same V3 V2` proves the
sharding spmdcheck reads equal to the V2 sharding `xla_client.HloSharding.from_string(v3)
.v3_to_v2_sharding()` gives, device for device; and `spmdcheck fmt`-style printing gives XLA's
text back (`sharding canon`)."""

import os

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import spmdcheck

xc = pytest.importorskip("jax._src.lib").xla_client
if not hasattr(xc.HloSharding, "v3_to_v2_sharding"):
  pytest.skip("this jaxlib has no named-mesh shardings (jaxlib < 0.11)", allow_module_level=True)


@st.composite
def named_shardings(draw):
  """(V3 text) of a valid sharding: XLA aborts on invalid ones instead of refusing them, so
  only valid ones are drawn (no overlap, sorted replicated axes, no mergeable neighbours)."""
  n_axes = draw(st.integers(1, 4))
  sizes = []
  for _ in range(n_axes):
    room = 64 // max(1, _product(sizes))
    sizes.append(draw(st.sampled_from([s for s in (1, 2, 3, 4, 8) if s <= room] or [1])))
  names = draw(st.permutations(["x", "y", "z", "w"]))[:n_axes]
  total = _product(sizes)
  # One device: jaxlib's own conversion prints V2 text it cannot read back ({devices=[]<=[1]}).
  assume(total > 1)
  mesh = "mesh[" + ",".join(f"'{n}'={s}" for n, s in zip(names, sizes)) + "]"
  if total > 1 and draw(st.booleans()):
    order = draw(st.permutations(list(range(total))))
    if list(order) != list(range(total)):  # XLA aborts on the identity order
      mesh += ", device_ids=(" + ",".join(map(str, order)) + ")"
  rank = draw(st.integers(0, 3))
  dims = [[] for _ in range(rank)]
  lists = {"replicated": [], "unreduced": [], "manual": []}
  for i, (name, size) in enumerate(zip(names, sizes)):
    pieces = [(f"'{name}'", (i, 1))]
    if size == 4 and draw(st.booleans()):
      pieces = [(f"'{name}':(1)2", (i, 1)), (f"'{name}':(2)2", (i, 2))]
    used = set()
    for text, key in pieces:
      where = draw(st.sampled_from(["dim", "dim", "none", "replicated", "unreduced", "manual"]))
      target = None
      if where == "dim" and rank > 0:
        target = ("dim", draw(st.integers(0, rank - 1)))
      elif where in lists:
        target = (where, None)
      if target is None or target in used:  # two parts of an axis never share a list
        continue
      used.add(target)
      if target[0] == "dim":
        dims[target[1]].append(text)
      else:
        lists[target[0]].append((key, text))
  parts = []
  for axes in dims:
    open_dim = draw(st.booleans()) and draw(st.booleans())
    parts.append("{" + ", ".join(axes + (["?"] if open_dim else [])) + "}")
  text = f"{{{mesh}, [{', '.join(parts)}]"
  for kind in ("replicated", "unreduced", "manual"):
    if lists[kind]:
      entries = sorted(lists[kind]) if kind == "replicated" else lists[kind]
      text += f", {kind}={{" + ", ".join(t for _, t in entries) + "}"
  return text + "}"


def _product(values):
  p = 1
  for v in values:
    p *= v
  return p


# derandomize: the same examples on every run (a red CI is never a coin toss); longer runs:
# SPMDCHECK_HYPOTHESIS_EXAMPLES=5000 with a random seed (hypothesis prints the failing example).
@settings(max_examples=int(os.environ.get("SPMDCHECK_HYPOTHESIS_EXAMPLES", "150")),
          derandomize="SPMDCHECK_HYPOTHESIS_EXAMPLES" not in os.environ, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(named_shardings())
def test_spmdcheck_reads_v3_as_jaxlib_converts_it(v3):
  sharding = xc.HloSharding.from_string(v3)
  v2 = sharding.v3_to_v2_sharding().to_string()
  done = spmdcheck._binary.run(["prove", "same", v3, v2])
  assert done.exit_code == 0 and done.stdout.startswith("proved"), (v3, v2, done.stdout)
  # What XLA prints back, spmdcheck prints back.
  printed = spmdcheck._binary.run(["sharding", "canon", sharding.to_string()]).stdout.strip()
  assert printed == sharding.to_string(), (v3, printed)
