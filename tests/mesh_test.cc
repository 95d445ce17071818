// Mesh::ShardingFor on small meshes: axis-to-dim mappings, unused axes as replication, custom
// device orders and errors. Expected device lists are derived by hand from the mesh's device
// array (mesh[x=2,y=4] holds device 4x + y at mesh index (x, y)).
#include "ir/mesh.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/hlo_parser.h"
#include "ir/sharding.h"

namespace spmdcheck {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Mesh MustMesh(std::vector<MeshAxis> axes, std::optional<TileAssignment> devices = std::nullopt) {
  absl::StatusOr<Mesh> mesh = Mesh::Create(std::move(axes), std::move(devices));
  EXPECT_TRUE(mesh.ok()) << mesh.status();
  return mesh.ok() ? *mesh : *Mesh::Create({});
}

HloSharding MustSharding(const Mesh& mesh, const std::vector<std::vector<std::string>>& dim_axes) {
  absl::StatusOr<HloSharding> s = mesh.ShardingFor(dim_axes);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : HloSharding();
}

TEST(Mesh, Basics) {
  Mesh mesh = MustMesh({{"x", 2}, {"y", 4}});
  EXPECT_EQ(mesh.num_devices(), 8);
  EXPECT_EQ(mesh.AxisIndex("y"), std::optional<int64_t>(1));
  EXPECT_FALSE(mesh.AxisIndex("z").has_value());
  EXPECT_EQ(mesh.ToString(), "mesh[x=2,y=4]");
  EXPECT_THAT(mesh.devices().Devices(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
}

// fuzz_sharding_parser (UBSan, 30-minute run) found `mesh[e=5,o=99999999995]{e}`: the device
// array of a mesh over 2^31 devices was built from an unchecked product and aborted.
TEST(Mesh, MoreThan2To31DevicesIsAnError) {
  absl::StatusOr<Mesh> huge = Mesh::Create({{"e", 5}, {"o", 99999999995}});
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(std::string(huge.status().message()), HasSubstr("more than 2^31 devices"));
  EXPECT_FALSE(Mesh::Create({{"a", int64_t{1} << 40}, {"b", int64_t{1} << 40}}).ok());
  EXPECT_FALSE(ParseReplicaGroups("mesh[e=5,o=99999999995]{e}").ok());
  EXPECT_TRUE(Mesh::Create({{"a", 1 << 15}, {"b", 1 << 15}}).ok());
  // CI's fuzz smoke: mesh[e=5,o=99999995]{e} listed 500M device ids (4 GB) for its groups;
  // they are an iota (transposed symbolically, never listed).
  absl::StatusOr<ReplicaGroups> listed = ParseReplicaGroups("mesh[e=5,o=99999995]{e}");
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->ToString(), "[99999995,5]<=[5,99999995]T(1,0)");
}

TEST(MeshShardingFor, AxesInMeshOrder) {
  Mesh mesh = MustMesh({{"x", 2}, {"y", 4}});
  HloSharding s = MustSharding(mesh, {{"x"}, {"y"}});
  EXPECT_EQ(s.ToString(), "{devices=[2,4]<=[8]}");
}

TEST(MeshShardingFor, AxesSwapped) {
  // Tile (i, j) with i = y, j = x holds device 4j + i: 0,4,1,5,2,6,3,7.
  Mesh mesh = MustMesh({{"x", 2}, {"y", 4}});
  HloSharding s = MustSharding(mesh, {{"y"}, {"x"}});
  EXPECT_THAT(s.tile_assignment().Devices(), ElementsAre(0, 4, 1, 5, 2, 6, 3, 7));
  EXPECT_EQ(s.ToString(), "{devices=[4,2]<=[2,4]T(1,0)}");
  EXPECT_EQ(s, *ParseSharding("{devices=[4,2]0,4,1,5,2,6,3,7}"));
}

TEST(MeshShardingFor, SeveralAxesOnOneDim) {
  Mesh mesh = MustMesh({{"x", 2}, {"y", 4}});
  // Major to minor: (x, y) -> 4x + y; (y, x) -> tile t = 2y + x holds 4x + y.
  EXPECT_EQ(MustSharding(mesh, {{"x", "y"}}).ToString(), "{devices=[8]<=[8]}");
  HloSharding yx = MustSharding(mesh, {{"y", "x"}});
  EXPECT_THAT(yx.tile_assignment().Devices(), ElementsAre(0, 4, 1, 5, 2, 6, 3, 7));
  EXPECT_EQ(yx.ToString(), "{devices=[8]<=[2,4]T(1,0)}");
}

TEST(MeshShardingFor, UnusedAxesReplicate) {
  Mesh mesh = MustMesh({{"x", 2}, {"y", 4}});
  // Dim 0 over y, replicated over x: tile i held by {i, i + 4}.
  HloSharding y_only = MustSharding(mesh, {{"y"}});
  EXPECT_TRUE(y_only.ReplicateOnLastTileDim());
  EXPECT_THAT(y_only.tile_assignment().Devices(), ElementsAre(0, 4, 1, 5, 2, 6, 3, 7));
  EXPECT_EQ(y_only.ToString(), "{devices=[4,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
  // Dim 0 over x, replicated over y: tile i held by {4i, ..., 4i + 3}.
  EXPECT_EQ(MustSharding(mesh, {{"x"}}).ToString(), "{devices=[2,4]<=[8] last_tile_dim_replicate}");
  // An unsplit dim.
  HloSharding second = MustSharding(mesh, {{}, {"x"}});
  EXPECT_THAT(second.tile_assignment().dims(), ElementsAre(1, 2, 4));
  EXPECT_EQ(second.ToString(), "{devices=[1,2,4]<=[8] last_tile_dim_replicate}");
  // No axis used at all: fully replicated.
  EXPECT_TRUE(MustSharding(mesh, {{}, {}}).IsReplicated());
  EXPECT_TRUE(MustSharding(mesh, {}).IsReplicated());
}

TEST(MeshShardingFor, ThreeAxes) {
  // mesh[a=2,b=2,c=2]: device 4a + 2b + c. Dim 0 over (c, a), b replicated: tile t = 2c + a,
  // group {4a + c, 4a + 2 + c}: rows (0,2), (4,6), (1,3), (5,7).
  Mesh mesh = MustMesh({{"a", 2}, {"b", 2}, {"c", 2}});
  HloSharding s = MustSharding(mesh, {{"c", "a"}});
  EXPECT_THAT(s.tile_assignment().Devices(), ElementsAre(0, 2, 4, 6, 1, 3, 5, 7));
  EXPECT_EQ(s.ToString(), "{devices=[4,2]<=[4,2]T(1,0) last_tile_dim_replicate}");
  // Dims (b), (a, c) -> tile (b, 2a + c) holds 4a + 2b + c: 0,1,4,5,2,3,6,7.
  HloSharding t = MustSharding(mesh, {{"b"}, {"a", "c"}});
  EXPECT_THAT(t.tile_assignment().Devices(), ElementsAre(0, 1, 4, 5, 2, 3, 6, 7));
  EXPECT_EQ(t, *ParseSharding("{devices=[2,4]<=[2,2,2]T(1,0,2)}"));
}

TEST(MeshShardingFor, CustomDeviceOrder) {
  // Device array [2,2] 0,2,1,3 (the transposed iota): mesh index (a, b) holds 2b + a.
  absl::StatusOr<TileAssignment> devices = TileAssignment::Explicit({2, 2}, {0, 2, 1, 3});
  ASSERT_TRUE(devices.ok());
  Mesh mesh = MustMesh({{"a", 2}, {"b", 2}}, *devices);
  EXPECT_EQ(mesh.ToString(), "mesh[a=2,b=2] devices=[2,2]<=[2,2]T(1,0)");
  HloSharding ab = MustSharding(mesh, {{"a"}, {"b"}});
  EXPECT_THAT(ab.tile_assignment().Devices(), ElementsAre(0, 2, 1, 3));
  HloSharding ba = MustSharding(mesh, {{"b"}, {"a"}});
  EXPECT_THAT(ba.tile_assignment().Devices(), ElementsAre(0, 1, 2, 3));
  // Dim 0 over b, a replicated: tile b held by {2b, 2b + 1}.
  HloSharding b_only = MustSharding(mesh, {{"b"}});
  EXPECT_THAT(b_only.tile_assignment().Devices(), ElementsAre(0, 1, 2, 3));
  EXPECT_TRUE(b_only.ReplicateOnLastTileDim());
}

TEST(MeshShardingFor, Errors) {
  Mesh mesh = MustMesh({{"x", 2}, {"y", 4}});
  absl::StatusOr<HloSharding> unknown = mesh.ShardingFor({{"z"}});
  EXPECT_FALSE(unknown.ok());
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("'z'"));
  absl::StatusOr<HloSharding> twice = mesh.ShardingFor({{"x"}, {"x"}});
  EXPECT_FALSE(twice.ok());
  EXPECT_THAT(std::string(twice.status().message()), HasSubstr("'x'"));
  EXPECT_FALSE(mesh.ShardingFor({{"y", "y"}}).ok());
}

TEST(MeshCreate, Errors) {
  EXPECT_FALSE(Mesh::Create({{"x", 0}}).ok());
  EXPECT_FALSE(Mesh::Create({{"x", 2}, {"x", 2}}).ok());
  EXPECT_FALSE(Mesh::Create({{"x", 2}, {"y", 2}}, TileAssignment::Iota({4})).ok());
}

TEST(MeshShardingFor, ShardingsValidateOnTheMesh) {
  Mesh mesh = MustMesh({{"x", 2}, {"y", 4}});
  for (const auto& dim_axes : std::vector<std::vector<std::vector<std::string>>>{
           {{"x"}, {"y"}}, {{"y"}, {"x"}}, {{"y"}, {}}, {{}, {"x", "y"}}}) {
    HloSharding s = MustSharding(mesh, dim_axes);
    Shape shape = Shape::Array(PrimitiveType::kF32, std::vector<int64_t>(dim_axes.size(), 8));
    EXPECT_TRUE(s.Validate(shape, 8).ok()) << s.ToString();
  }
}

}  // namespace
}  // namespace spmdcheck
