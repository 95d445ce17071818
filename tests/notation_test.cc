// PartitionSpec and Shardy notation on hand-checked cases: what jax 0.10.2 lowers
// NamedShardings to (printed by `jax.jit(f).lower(...).as_text()` with Shardy off), the examples
// of openxla/shardy's sharding_representation.md, and the reasons given when there is no form.
#include <gtest/gtest.h>

#include <string>

#include "ir/hlo_parser.h"
#include "ir/partition_spec.h"
#include "ir/sdy_sharding.h"

namespace spmdcheck {
namespace {

HloSharding Parse(const std::string& text) {
  absl::StatusOr<HloSharding> s = ParseSharding(text);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

Mesh MeshOf(const std::string& text) {
  absl::StatusOr<Mesh> mesh = ParseMeshSpec(text);
  EXPECT_TRUE(mesh.ok()) << mesh.status();
  return *mesh;
}

HloSharding FromSpec(const std::string& mesh, const std::string& spec, int64_t rank = -1) {
  absl::StatusOr<PartitionSpec> p = ParsePartitionSpec(spec);
  EXPECT_TRUE(p.ok()) << p.status();
  absl::StatusOr<HloSharding> s = PartitionSpecToSharding(MeshOf(mesh), *p, rank);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

HloSharding FromSdy(const std::string& sharding, const std::string& mesh,
                    std::vector<std::string> manual = {}) {
  absl::StatusOr<SdySharding> s = ParseSdySharding(sharding);
  EXPECT_TRUE(s.ok()) << s.status();
  absl::StatusOr<SdyMesh> m = ParseSdyMesh(mesh);
  EXPECT_TRUE(m.ok()) << m.status();
  absl::StatusOr<HloSharding> h = SdyToHloSharding(*s, *m, manual);
  EXPECT_TRUE(h.ok()) << h.status();
  return *h;
}

// jax 0.10.2, mesh jax.make_mesh((2, 4), ("data", "model")), jax_use_shardy_partitioner=False.
TEST(PartitionSpecTest, MatchesJaxLowering) {
  EXPECT_EQ(FromSpec("data=2,model=4", "P('data', None)"),
            Parse("{devices=[2,1,4]<=[8] last_tile_dim_replicate}"));
  EXPECT_EQ(FromSpec("data=2,model=4", "P(None, 'model')"),
            Parse("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"));
  EXPECT_EQ(FromSpec("data=2,model=4", "P('model', None)"),
            Parse("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"));
  EXPECT_EQ(FromSpec("data=2,model=4", "P('data', 'model')"), Parse("{devices=[2,4]<=[8]}"));
  EXPECT_EQ(FromSpec("data=2,model=4", "P()", 2), Parse("{replicated}"));
}

TEST(PartitionSpecTest, TuplesShortSpecsAndDeviceOrders) {
  // One dim split by both axes, model major: device = 4*data + model at tile 2*model + data.
  EXPECT_EQ(FromSpec("data=2,model=4", "P(('model', 'data'), None)"),
            Parse("{devices=[8,1]0,4,1,5,2,6,3,7}"));
  // Trailing dims are whole.
  EXPECT_EQ(FromSpec("data=2,model=4", "PartitionSpec('data')", 3),
            Parse("{devices=[2,1,1,4]<=[8] last_tile_dim_replicate}"));
  // A mesh whose device order is transposed.
  EXPECT_EQ(FromSpec("data=2,model=4 devices=[2,4]<=[4,2]T(1,0)", "P('data', 'model')"),
            Parse("{devices=[2,4]0,2,4,6,1,3,5,7}"));
}

TEST(PartitionSpecTest, ParsesAndPrints) {
  absl::StatusOr<PartitionSpec> spec =
      ParsePartitionSpec("jax.sharding.PartitionSpec(('a', \"b\"), None, P.UNCONSTRAINED,)");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->ToString(), "P(('a', 'b'), None, P.UNCONSTRAINED)");
  EXPECT_TRUE(spec->HasUnconstrained());
  absl::StatusOr<PartitionSpec> unreduced = ParsePartitionSpec("P('x', unreduced={'y'})");
  ASSERT_TRUE(unreduced.ok()) << unreduced.status();
  EXPECT_EQ(unreduced->ToString(), "P('x', unreduced={'y'})");
  absl::StatusOr<PartitionSpec> bad = ParsePartitionSpec("P('data', Nope)");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "<input>:1:11: error: expected None, 'axis', ('axis', ...) or P.UNCONSTRAINED in a "
            "PartitionSpec");
}

TEST(PartitionSpecTest, SaysWhyThereIsNoSpec) {
  const Mesh mesh = MeshOf("data=2,model=4");
  absl::StatusOr<PartitionSpec> split =
      ShardingToPartitionSpec(mesh, Parse("{devices=[4,2]<=[8]}"));
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("needs the sub-axis \"model\":(1)2"), std::string::npos)
      << split.status();
  absl::StatusOr<PartitionSpec> order =
      ShardingToPartitionSpec(MeshOf("a=2,b=2"), Parse("{devices=[2,2]0,1,3,2}"));
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.status().message().find("is no view of the mesh"), std::string::npos)
      << order.status();
  absl::StatusOr<PartitionSpec> count =
      ShardingToPartitionSpec(mesh, Parse("{devices=[2,2]<=[4]}"));
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("uses 4 devices"), std::string::npos);
  absl::StatusOr<PartitionSpec> manual = ShardingToPartitionSpec(mesh, Parse("{manual}"));
  ASSERT_FALSE(manual.ok());
  EXPECT_NE(manual.status().message().find("shard_map"), std::string::npos);
  absl::StatusOr<PartitionSpec> three =
      ShardingToPartitionSpec(MeshOf("x=6"), Parse("{devices=[3,2]<=[6]}"));
  ASSERT_FALSE(three.ok());  // Axis x of 6 split 3 x 2: sub-axes.
  EXPECT_EQ(ShardingToPartitionSpec(MeshOf("x=6"), Parse("{devices=[6,1]<=[6]}"))->ToString(),
            "P('x', None)");
}

TEST(PartitionSpecTest, MeshSpecErrors) {
  EXPECT_FALSE(ParseMeshSpec("data=0").ok());
  EXPECT_FALSE(ParseMeshSpec("data=2,data=2").ok());
  EXPECT_FALSE(ParseMeshSpec("data=2 devices=[3]<=[3]").ok());
  EXPECT_TRUE(ParseMeshSpec("mesh[data=2,model=4] devices=[2,4]<=[4,2]T(1,0)").ok());
  EXPECT_EQ(MeshOf("<[\"a\"=3, \"b\"=2], device_ids=[0, 2, 4, 1, 3, 5]>").ToString(),
            "mesh[a=3,b=2] devices=[3,2]<=[3,2]T(1,0)");
}

// openxla/shardy docs/sharding_representation.md.
TEST(SdyShardingTest, ShardyDocExamples) {
  // [{"x"}, {"z", "y"}] over x=2,y=4,z=2: dim 1 split by z then y.
  EXPECT_EQ(FromSdy("#sdy.sharding<@mesh_xyz, [{\"x\"}, {\"z\", \"y\"}]>",
                    "<[\"x\"=2, \"y\"=4, \"z\"=2]>"),
            Parse("{devices=[2,8]<=[2,4,2]T(0,2,1)}"));
  // Only the middle sub-axis "y":(2)2 of y=8 shards dim 1; the rest replicates.
  EXPECT_EQ(FromSdy("<@mesh_xyz, [{\"x\"}, {\"y\":(2)2}]>", "<[\"x\"=2, \"y\"=8, \"z\"=2]>"),
            Parse("{devices=[2,2,8]<=[2,2,2,4]T(0,2,1,3) last_tile_dim_replicate}"));
  // mesh_xy is a splitting of mesh_full.
  EXPECT_EQ(FromSdy("<@mesh_full, [{\"devices\":(1)4}, {\"devices\":(4)2}]>", "<[\"devices\"=8]>"),
            FromSdy("<@mesh_xy, [{\"x\"}, {\"y\"}]>", "<[\"x\"=4, \"y\"=2]>"));
  // Open dims, priorities and explicit replication do not move tiles.
  EXPECT_EQ(FromSdy("<@m, [{\"x\"}p1, {?}], replicated={\"y\"}>", "<[\"x\"=2, \"y\"=4, \"z\"=2]>"),
            FromSdy("<@m, [{\"x\"}, {}]>", "<[\"x\"=2, \"y\"=4, \"z\"=2]>"));
}

// jax 0.10.2 with Shardy (the default), exported to HLO by jaxlib's
// mlir_module_to_xla_computation: the HloShardings it wrote next to each sdy.sharding.
TEST(SdyShardingTest, MatchesXlaExport) {
  const std::string mesh = "sdy.mesh @mesh = <[\"data\"=2, \"model\"=4]>";
  EXPECT_EQ(FromSdy("#sdy.sharding<@mesh, [{\"data\"}, {}]>", mesh),
            Parse("{devices=[2,1,4]<=[8] last_tile_dim_replicate}"));
  EXPECT_EQ(FromSdy("#sdy.sharding<@mesh, [{}, {\"model\"}]>", mesh),
            Parse("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"));
  EXPECT_EQ(FromSdy("<@mesh, [{\"model\"}, {}]>", mesh),
            Parse("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"));
  // Inside a shard_map over "model" (jax's GSPMD lowering of the same region).
  EXPECT_EQ(FromSdy("<@mesh, [{}, {\"model\"}]>", mesh, {"model"}),
            Parse("{devices=[1,1,4,2]<=[2,4]T(1,0) last_tile_dims={manual, replicated}}"));
  EXPECT_EQ(FromSdy("<@mesh, [{\"data\"}, {\"model\"}]>", mesh, {"data", "model"}),
            Parse("{manual}"));
  // Escaped quotes, as in HLO frontend attributes.
  EXPECT_EQ(FromSdy(R"(#sdy.sharding<@mesh, [{\"data\"}, {}]>)", mesh),
            Parse("{devices=[2,1,4]<=[8] last_tile_dim_replicate}"));
  EXPECT_EQ(FromSdy("<@maximal_mesh_3, []>", "<[], device_ids=[3]>"), Parse("{maximal device=3}"));
}

TEST(SdyShardingTest, PrintsAndParsesEveryPart) {
  const std::string text =
      "#sdy.sharding<@mesh, [{\"a\", ?}, {\"b\":(2)2}p1, {?}], replicated={\"c\"}, "
      "unreduced={\"d\"}>";
  absl::StatusOr<SdySharding> s = ParseSdySharding(text);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->ToString(), text);
  EXPECT_TRUE(s->HasPropagationHints());
  absl::StatusOr<SdySharding> inline_mesh =
      ParseSdySharding("<mesh<[\"x\"=2, \"y\"=2]>, [{\"x\"}, {}]>");
  ASSERT_TRUE(inline_mesh.ok()) << inline_mesh.status();
  EXPECT_EQ(inline_mesh->ToString(true), "<mesh<[\"x\"=2, \"y\"=2]>, [{\"x\"}, {}]>");
  absl::StatusOr<std::vector<SdySharding>> per_value = ParseSdyShardingPerValue(
      "#sdy.sharding_per_value<[<@mesh, [{\"data\"}, {}]>, <@mesh, [{}, {\"model\"}]>]>");
  ASSERT_TRUE(per_value.ok()) << per_value.status();
  EXPECT_EQ(per_value->size(), 2u);
  absl::StatusOr<std::vector<std::pair<std::string, SdyMesh>>> meshes = ParseSdyMeshes(
      R"({mesh = #sdy.mesh<[\"data\"=2, \"model\"=4]>, maximal_mesh_0 = #sdy.mesh<[], device_ids=[0]>})");
  ASSERT_TRUE(meshes.ok()) << meshes.status();
  ASSERT_EQ(meshes->size(), 2u);
  EXPECT_EQ((*meshes)[0].first, "mesh");
  EXPECT_TRUE((*meshes)[1].second.IsMaximal());
}

TEST(SdyShardingTest, RejectsBadInputWithColumns) {
  absl::StatusOr<SdySharding> missing = ParseSdySharding("#sdy.sharding<@mesh, [{\"a\"}, {}>");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "<input>:1:32: error: expected ']'");
  EXPECT_FALSE(ParseSdySharding("<@mesh, [{\"a\":(1)1}]>").ok());  // size must be > 1
  EXPECT_FALSE(ParseSdyMesh("<[\"a\"=2], device_ids=[0, 0]>").ok());
  const std::string mesh = "<[\"a\"=4, \"b\"=2]>";
  absl::StatusOr<SdyMesh> m = ParseSdyMesh(mesh);
  ASSERT_TRUE(m.ok());
  // Overlapping sub-axes, an unknown axis, an axis used twice.
  EXPECT_FALSE(SdyToHloSharding(*ParseSdySharding("<@m, [{\"a\":(1)2}, {\"a\":(1)4}]>"), *m).ok());
  EXPECT_FALSE(SdyToHloSharding(*ParseSdySharding("<@m, [{\"c\"}]>"), *m).ok());
  EXPECT_FALSE(SdyToHloSharding(*ParseSdySharding("<@m, [{\"a\"}], replicated={\"a\"}>"), *m).ok());
}

TEST(SdyShardingTest, ToSdyUsesSubAxesAndDerivedMeshes) {
  absl::StatusOr<SdyMesh> mesh = ParseSdyMesh("<[\"data\"=2, \"model\"=4]>");
  ASSERT_TRUE(mesh.ok());
  absl::StatusOr<SdySharding> split = HloToSdySharding(Parse("{devices=[4,2]<=[8]}"), *mesh, 2);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->ToString(),
            "#sdy.sharding<@mesh, [{\"data\", \"model\":(1)2}, {\"model\":(2)2}]>");
  // The seed's scrambled sharding over its mesh data=2, pipeline=4, model=8.
  absl::StatusOr<SdyMesh> seed = ParseSdyMesh("<[\"data\"=2, \"pipeline\"=4, \"model\"=8]>");
  absl::StatusOr<SdySharding> scrambled = HloToSdySharding(
      Parse("{devices=[1,2,8,1,4]<=[2,4,8]T(1,0,2) last_tile_dim_replicate}"), *seed, 4);
  ASSERT_TRUE(scrambled.ok()) << scrambled.status();
  EXPECT_EQ(scrambled->ToString(),
            "#sdy.sharding<@mesh, [{}, {\"pipeline\":(1)2}, {\"pipeline\":(2)2, \"data\", "
            "\"model\":(1)2}, {}]>");
  // An explicit order gets a mesh with device_ids.
  const HloSharding explicit_order = Parse("{devices=[2,2]0,1,3,2}");
  const SdyMesh derived = SdyMesh::FromMesh(MeshForSharding(explicit_order, 4));
  EXPECT_EQ(derived.ToString(), "<[\"x0\"=2, \"x1\"=2], device_ids=[0, 1, 3, 2]>");
  EXPECT_FALSE(HloToSdySharding(Parse("{manual}"), *mesh, 2).ok());
  EXPECT_FALSE(HloToSdySharding(Parse("{maximal device=1}"), *mesh, 2).ok());
}

}  // namespace
}  // namespace spmdcheck
