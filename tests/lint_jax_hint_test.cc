// Issue 14 item 5: hints in JAX's notation. The PartitionSpec is checked by building what JAX's
// NamedSharding lowers to by hand (XLA's documented device order: a mesh's devices transposed so
// that each dim's axes come first, in order, then the unused axes as the replication dim).
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "lint/jax_hint.h"
#include "lint/lint.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::lint {
namespace {

using ::testing::HasSubstr;

HloSharding S(const std::string& text) { return *ParseSharding(text); }

TEST(JaxHintTest, PartitionSpecsOfNamedShardings) {
  const Mesh mesh = *ParseMeshFlag("data=2,model=4");
  // Dim 0 by data, dim 2 by model: devices in mesh order.
  EXPECT_EQ(PartitionSpecFor(S("{devices=[2,1,4]<=[8]}"), 3, mesh), "P('data', None, 'model')");
  // Dim 0 by model, dim 1 by data: the mesh transposed.
  EXPECT_EQ(PartitionSpecFor(S("{devices=[4,2]<=[2,4]T(1,0)}"), 2, mesh), "P('model', 'data')");
  // Model alone, data replicated.
  EXPECT_EQ(PartitionSpecFor(S("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"), 2, mesh),
            "P(None, 'model')");
  // Both axes on one dim, model major.
  EXPECT_EQ(PartitionSpecFor(S("{devices=[8,1]<=[2,4]T(1,0)}"), 2, mesh),
            "P(('model', 'data'), None)");
  EXPECT_EQ(PartitionSpecFor(S("{replicated}"), 2, mesh), "P(None, None)");
  // A split of 2 that is half of `model`: no whole axis gives it.
  EXPECT_EQ(
      PartitionSpecFor(S("{devices=[2,1,4]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}"), 2, mesh),
      std::nullopt);
}

TEST(JaxHintTest, TheMeshFlagAndTheModulesMesh) {
  EXPECT_FALSE(ParseMeshFlag("data=2,model").ok());
  EXPECT_FALSE(ParseMeshFlag("data=0").ok());
  const std::optional<Mesh> xla = MeshFromModuleText(
      "  ag = f32[8] all-gather(p), replica_groups=mesh['x'=2,'y'=4] {'y'}, dimensions={0}", 8);
  ASSERT_TRUE(xla.has_value());
  EXPECT_EQ(xla->ToString(), "mesh[x=2,y=4]");
  const std::optional<Mesh> shardy = MeshFromModuleText(
      R"(HloModule m, frontend_attributes={xla.sdy.meshes="{mesh = #sdy.mesh<[\"data\"=2, \"model\"=2]>}"})",
      4);
  ASSERT_TRUE(shardy.has_value());
  EXPECT_EQ(shardy->ToString(), "mesh[data=2,model=2]");
  EXPECT_FALSE(MeshFromModuleText("mesh['x'=2]", 4).has_value());  // Another device count.
}

TEST(JaxHintTest, TheSeedsHintNamesTheConstraint) {
  SPMDCHECK_SKIP_WITHOUT_SHARED("cases/seed-scatter/gspmd.hlo");
  const std::string text =
      test_support::ReadFileOrFail(test_support::SharedPath("cases/seed-scatter/gspmd.hlo"));
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  ASSERT_TRUE(parsed.ok());
  LintOptions options;
  options.mesh = *ParseMeshFlag("data=2,pipeline=4,model=8");  // pre.hlo's mesh.
  absl::StatusOr<LintReport> report = LintModule(*parsed->module, text, options);
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->findings.size(), 1u);
  ASSERT_TRUE(report->findings[0].cause.has_value());
  EXPECT_EQ(report->findings[0].cause->jax,
            "jax.lax.with_sharding_constraint(reshape.1062, NamedSharding(mesh, P(None, 'data', "
            "'model', None)))");
  EXPECT_THAT(FormatText(*report), HasSubstr("  in JAX: jax.lax.with_sharding_constraint("));
}

}  // namespace
}  // namespace spmdcheck::lint
