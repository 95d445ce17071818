// Properties of the fuzz generators: every generated sharding is valid for its shape and mesh
// and survives a print/parse round trip; shapes and replica groups round-trip and validate.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz/gen.h"
#include "ir/hlo_parser.h"
#include "ir/replica_groups.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace spmdcheck::fuzz {
namespace {

RC_GTEST_PROP(FuzzGenTest, ShapesAreBoundedAndRoundTrip, ()) {
  const Shape shape = *GenShape();
  RC_ASSERT(shape.IsArray());
  RC_ASSERT(shape.rank() <= 5);
  RC_ASSERT(shape.ElementCount() <= kMaxGenElements);
  auto parsed = ParseShape(shape.ToString());
  RC_ASSERT(parsed.ok());
  RC_ASSERT(parsed->Compatible(shape));
}

RC_GTEST_PROP(FuzzGenTest, TupleShapesRoundTrip, ()) {
  const Shape shape = *GenTupleShape();
  RC_ASSERT(shape.IsTuple());
  auto parsed = ParseShape(shape.ToString());
  RC_ASSERT(parsed.ok());
  RC_ASSERT(parsed->Compatible(shape));
}

RC_GTEST_PROP(FuzzGenTest, MeshesAreBounded, ()) {
  const Mesh mesh = *GenMesh();
  RC_ASSERT(!mesh.axes().empty());
  RC_ASSERT(mesh.axes().size() <= 4u);
  RC_ASSERT(mesh.num_devices() >= 1);
  RC_ASSERT(mesh.num_devices() <= kMaxGenDevices);
  RC_ASSERT(mesh.devices().DevicesDistinct());
  RC_ASSERT(mesh.devices().DeviceBound() == mesh.num_devices());
}

RC_GTEST_PROP(FuzzGenTest, ShardingsAreValid, ()) {
  const ShardingCase c = *GenShardingCase();
  const absl::Status status = c.sharding.Validate(c.shape, c.mesh.num_devices());
  RC_ASSERT(status.ok());
  const HloSharding& s = c.sharding;
  RC_TAG(s.IsTuple()                  ? "tuple"
         : s.IsReplicated()           ? "replicated"
         : s.IsMaximal()              ? "maximal"
         : s.IsManual()               ? "manual"
         : s.HasManualSubgroup()      ? "manual subgroup"
         : s.ReplicateOnLastTileDim() ? "partial"
         : s.IsTiled()                ? "tiled"
                                      : "other");
}

RC_GTEST_PROP(FuzzGenTest, ShardingsRoundTripThroughText, ()) {
  const ShardingCase c = *GenShardingCase();
  const std::string text = c.sharding.ToString();
  auto parsed = ParseSharding(text);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == c.sharding);
  RC_ASSERT(parsed->ToString() == text);
}

RC_GTEST_PROP(FuzzGenTest, ReplicaGroupsAreValidAndRoundTrip, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(1, kMaxGenDevices + 1);
  const ReplicaGroups groups = *GenReplicaGroups(n);
  RC_ASSERT(ValidateReplicaGroups(groups, n, /*require_uniform=*/true).ok());
  RC_ASSERT(groups.UniformSize());
  RC_ASSERT(groups.TotalEntries() == n);
  auto parsed = ParseReplicaGroups(groups.ToString());
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == groups);
}

// Covers every form the brief asks for: each kind and subgroup flavour shows up.
TEST(FuzzGenTest, CoversAllForms) {
  const rc::Gen<ShardingCase> gen = GenShardingCase();
  rc::Random random(7);
  bool replicated = false, maximal = false, manual = false, tiled = false, partial = false,
       manual_subgroup = false, manual_replicated = false, tuple = false, explicit_devices = false,
       transposed_iota = false;
  for (int i = 0; i < 5000; ++i) {
    const ShardingCase c = gen(random.split(), i % 101).value();
    const HloSharding& s = c.sharding;
    replicated |= s.IsReplicated();
    maximal |= s.IsMaximal();
    manual |= s.IsManual();
    tuple |= s.IsTuple();
    if (s.IsTiled()) {
      tiled |= s.SubgroupDimCount() == 0;
      partial |= s.ReplicateOnLastTileDim();
      manual_subgroup |= s.subgroup_types() == std::vector<SubgroupType>{SubgroupType::kManual};
      manual_replicated |=
          s.subgroup_types() ==
          std::vector<SubgroupType>{SubgroupType::kManual, SubgroupType::kReplicated};
      explicit_devices |= !s.tile_assignment().is_iota();
      transposed_iota |=
          s.tile_assignment().is_iota() && s.tile_assignment().iota()->reshape_dims().size() > 1;
    }
  }
  EXPECT_TRUE(replicated);
  EXPECT_TRUE(maximal);
  EXPECT_TRUE(manual);
  EXPECT_TRUE(tiled);
  EXPECT_TRUE(partial);
  EXPECT_TRUE(manual_subgroup);
  EXPECT_TRUE(manual_replicated);
  EXPECT_TRUE(tuple);
  EXPECT_TRUE(explicit_devices);
  EXPECT_TRUE(transposed_iota);
}

// Validity rate over many fixed-seed draws: must be 100%.
TEST(FuzzGenTest, ValidityRateIsOneHundredPercent) {
  constexpr int kCases = 100000;
  const rc::Gen<ShardingCase> gen = GenShardingCase();
  rc::Random random(20261129);
  const auto start = std::chrono::steady_clock::now();
  int invalid = 0;
  std::string first_invalid;
  for (int i = 0; i < kCases; ++i) {
    const ShardingCase c = gen(random.split(), i % 101).value();
    const absl::Status status = c.sharding.Validate(c.shape, c.mesh.num_devices());
    if (!status.ok()) {
      if (invalid++ == 0) {
        first_invalid = c.sharding.ToString() + " on " + c.shape.ToString() + " / " +
                        c.mesh.ToString() + ": " + std::string(status.message());
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("validity: %d/%d valid (%.4f%%) in %.2fs\n", kCases - invalid, kCases,
              100.0 * (kCases - invalid) / kCases, seconds);
  EXPECT_EQ(invalid, 0) << first_invalid;
}

}  // namespace
}  // namespace spmdcheck::fuzz
