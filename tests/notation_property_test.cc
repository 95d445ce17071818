// Round trips between HloSharding and the mesh notations (JAX's PartitionSpec, Shardy's
// #sdy.sharding): every round trip keeps the device placement of every tile — each device holds
// the same index range of the array and the same replicas — on random meshes (sizes 1..32,
// transposed device orders), random specs, random Shardy shardings with sub-axes, and the fuzz
// generator's shardings (explicit device lists, partial replication, manual subgroups).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/gen.h"
#include "ir/mesh.h"
#include "ir/partition_spec.h"
#include "ir/sdy_sharding.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace spmdcheck {
namespace {

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// Every device of `n` holds the same index ranges (padding included) and the same replicas
// under both shardings.
void AssertSamePlacement(const HloSharding& a, const HloSharding& b, const Shape& shape,
                         int64_t n) {
  for (int64_t d = 0; d < n; ++d) {
    auto ra = a.RangesForDevice(shape, d);
    auto rb = b.RangesForDevice(shape, d);
    RC_ASSERT(ra.has_value() == rb.has_value());
    if (!ra.has_value()) continue;
    RC_ASSERT(ra->size() == rb->size());
    for (size_t i = 0; i < ra->size(); ++i) {
      RC_ASSERT((*ra)[i].start == (*rb)[i].start);
      RC_ASSERT((*ra)[i].limit == (*rb)[i].limit);
      RC_ASSERT((*ra)[i].padded_size == (*rb)[i].padded_size);
    }
    if (a.IsTiled() && b.IsTiled()) {
      std::vector<int64_t> pa = a.ReplicasOf(d), pb = b.ReplicasOf(d);
      std::sort(pa.begin(), pa.end());
      std::sort(pb.begin(), pb.end());
      RC_ASSERT(pa == pb);
    }
  }
  // On one device replicated and {maximal device=0} place the same (Mesh::ShardingFor says
  // maximal, XLA's NamedSharding lowering replicated).
  if (n > 1) RC_ASSERT(a == b);
}

// A random array shape of `rank` dims of 1..12 elements.
Shape GenArrayShape(int64_t rank) {
  std::vector<int64_t> dims = *rc::gen::container<std::vector<int64_t>>(
      static_cast<size_t>(rank), rc::gen::inRange<int64_t>(1, 13));
  return Shape::Array(PrimitiveType::kF32, dims);
}

// P(...) -> HloSharding -> P(...) -> HloSharding, on random meshes and specs. The first step
// agrees with Mesh::ShardingFor (the NamedSharding lowering of the reference partitioner).
RC_GTEST_PROP(NotationPropertyTest, PartitionSpecRoundTripKeepsPlacement, ()) {
  const Mesh mesh = *fuzz::GenMesh();
  const int64_t rank = *rc::gen::inRange<int64_t>(0, 5);
  const int64_t k = static_cast<int64_t>(mesh.axes().size());
  // Axis a goes to dim target[a] (-1: unused), axes of a dim in `order`.
  const std::vector<int64_t> target = *rc::gen::container<std::vector<int64_t>>(
      static_cast<size_t>(k), rc::gen::inRange<int64_t>(-1, rank));
  const std::vector<int64_t> order = *fuzz::GenPermutation(k);
  PartitionSpec spec;
  spec.dims.resize(static_cast<size_t>(rank));
  std::vector<std::vector<std::string>> dim_axes(static_cast<size_t>(rank));
  for (int64_t a : order) {
    if (target[a] < 0) continue;
    spec.dims[target[a]].axes.push_back(mesh.axes()[a].name);
    dim_axes[target[a]].push_back(mesh.axes()[a].name);
  }
  const Shape shape = GenArrayShape(rank);
  auto parsed = ParsePartitionSpec(spec.ToString());
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == spec);
  auto sharding = PartitionSpecToSharding(mesh, spec, rank);
  RC_ASSERT(sharding.ok());
  auto reference = mesh.ShardingFor(dim_axes);
  RC_ASSERT(reference.ok());
  AssertSamePlacement(*sharding, *reference, shape, mesh.num_devices());
  auto back = ShardingToPartitionSpec(mesh, *sharding, rank);
  RC_ASSERT(back.ok());
  auto again = PartitionSpecToSharding(mesh, *back, rank);
  RC_ASSERT(again.ok());
  AssertSamePlacement(*sharding, *again, shape, mesh.num_devices());
}

// A random Shardy sharding over `mesh`: each axis cut into a random chain of sub-axes, each
// piece on a random dim (or replicated, or unreduced), dims' pieces in random order.
SdySharding GenSdySharding(const Mesh& mesh, int64_t rank) {
  struct Piece {
    SdyAxisRef ref;
    int64_t where;  // dim, -1 replicated (implicit), -2 explicitly replicated, -3 unreduced
  };
  std::vector<Piece> pieces;
  for (const MeshAxis& axis : mesh.axes()) {
    if (axis.size == 1) continue;
    int64_t pre = 1;
    while (pre < axis.size) {
      const int64_t rest = axis.size / pre;
      std::vector<int64_t> sizes;
      for (int64_t d : Divisors(rest)) {
        if (d > 1) sizes.push_back(d);
      }
      const int64_t size = *rc::gen::elementOf(sizes);
      SdyAxisRef ref{axis.name, pre, size};
      if (pre == 1 && size == axis.size) ref = {axis.name, 1, 0};
      pieces.push_back({ref, *rc::gen::inRange<int64_t>(-3, rank)});
      pre *= size;
    }
  }
  const std::vector<int64_t> order = *fuzz::GenPermutation(static_cast<int64_t>(pieces.size()));
  SdySharding sharding;
  sharding.mesh_name = "mesh";
  sharding.dims.resize(static_cast<size_t>(rank));
  for (int64_t i : order) {
    const Piece& piece = pieces[i];
    if (piece.where >= 0) {
      std::vector<SdyAxisRef>& axes = sharding.dims[piece.where].axes;
      // Consecutive sub-axes of one axis next to each other must be one sub-axis (Shardy's rule).
      if (!axes.empty() && axes.back().name == piece.ref.name && axes.back().size != 0 &&
          piece.ref.size != 0 && axes.back().pre_size * axes.back().size == piece.ref.pre_size) {
        continue;
      }
      axes.push_back(piece.ref);
    } else if (piece.where == -2) {
      sharding.replicated.push_back(piece.ref);
    } else if (piece.where == -3) {
      sharding.unreduced.push_back(piece.ref);
    }
  }
  for (SdyDimSharding& dim : sharding.dims) dim.closed = *rc::gen::arbitrary<bool>();
  return sharding;
}

RC_GTEST_PROP(NotationPropertyTest, SdyRoundTripKeepsPlacement, ()) {
  const Mesh mesh = *fuzz::GenMesh();
  const int64_t rank = *rc::gen::inRange<int64_t>(0, 4);
  const SdySharding sdy = GenSdySharding(mesh, rank);
  const SdyMesh sdy_mesh = SdyMesh::FromMesh(mesh);
  RC_TAG(sdy_mesh.device_ids.empty() ? "iota mesh" : "device_ids");
  // Text round trip of the attributes.
  auto parsed = ParseSdySharding(sdy.ToString());
  RC_ASSERT(parsed.ok());
  RC_ASSERT(parsed->dims == sdy.dims);
  RC_ASSERT(parsed->replicated == sdy.replicated);
  RC_ASSERT(parsed->unreduced == sdy.unreduced);
  auto parsed_mesh = ParseSdyMesh(absl::StrCat("sdy.mesh @mesh = ", sdy_mesh.ToString()));
  RC_ASSERT(parsed_mesh.ok());
  RC_ASSERT(parsed_mesh->device_ids == sdy_mesh.device_ids);
  // Meaning round trip.
  auto sharding = SdyToHloSharding(*parsed, *parsed_mesh);
  RC_ASSERT(sharding.ok());
  const Shape shape = GenArrayShape(rank);
  auto back = HloToSdySharding(*sharding, sdy_mesh, rank);
  if (!back.ok()) {
    // Only an unreduced sharding whose unreduced and replicated devices coincide with... nothing
    // else may fail: report the case.
    RC_FAIL(std::string(back.status().message()));
  }
  auto again = SdyToHloSharding(*back, sdy_mesh);
  RC_ASSERT(again.ok());
  AssertSamePlacement(*sharding, *again, shape, mesh.num_devices());
}

// Any non-tuple sharding of the fuzz generator -> a layout over a mesh made for it (or over the
// generator's own mesh) -> back; for non-manual shardings also through Shardy's text.
RC_GTEST_PROP(NotationPropertyTest, GeneratedShardingsRoundTripOverTheirMesh, ()) {
  const fuzz::ShardingCase c = *fuzz::GenShardingCase();
  RC_PRE(!c.sharding.IsTuple() && c.shape.IsArray());
  const HloSharding& s = c.sharding;
  const int64_t n = c.mesh.num_devices();
  RC_TAG(s.IsReplicated()             ? "replicated"
         : s.IsMaximal()              ? "maximal"
         : s.IsManual()               ? "manual"
         : s.HasManualSubgroup()      ? "manual subgroup"
         : s.ReplicateOnLastTileDim() ? "partial"
                                      : "tiled");
  const Mesh derived = MeshForSharding(s, n);
  if (s.IsMaximal()) {
    SdyMesh maximal;
    maximal.device_ids = {s.MaximalDevice()};
    auto sdy = HloToSdySharding(s, maximal, c.shape.rank());
    RC_ASSERT(sdy.ok());
    auto back = SdyToHloSharding(*sdy, maximal);
    RC_ASSERT(back.ok());
    AssertSamePlacement(s, *back, c.shape, n);
    return;
  }
  auto layout = HloShardingToLayout(derived, s, c.shape.rank());
  if ((s.IsManual() || s.kind() == HloSharding::Kind::kUnreduced) && n == 1) {
    RC_ASSERT(!layout.ok());  // No axis to be manual over.
    return;
  }
  RC_ASSERT(layout.ok());
  auto back = LayoutToHloSharding(derived, *layout);
  RC_ASSERT(back.ok());
  AssertSamePlacement(s, *back, c.shape, n);
  if (s.IsManual() || s.HasManualSubgroup()) return;
  const SdyMesh sdy_mesh = SdyMesh::FromMesh(derived);
  auto sdy = HloToSdySharding(s, sdy_mesh, c.shape.rank());
  RC_ASSERT(sdy.ok());
  auto reparsed = ParseSdySharding(sdy->ToString());
  RC_ASSERT(reparsed.ok());
  auto from_sdy = SdyToHloSharding(*reparsed, sdy_mesh);
  RC_ASSERT(from_sdy.ok());
  AssertSamePlacement(s, *from_sdy, c.shape, n);
  // Over the generator's own mesh the inverse either succeeds and is exact, or says why.
  auto own = HloShardingToLayout(c.mesh, s, c.shape.rank());
  if (own.ok()) {
    auto own_back = LayoutToHloSharding(c.mesh, *own);
    RC_ASSERT(own_back.ok());
    AssertSamePlacement(s, *own_back, c.shape, n);
  } else {
    RC_ASSERT(absl::IsInvalidArgument(own.status()));
  }
}

}  // namespace
}  // namespace spmdcheck
