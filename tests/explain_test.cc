// `spmdcheck explain`: mesh recovery (flags, meshes written in modules, inference from shardings
// and groups, sub-axes, reversed orders), the Z3 pipeline proofs on hand-made pairs and
// shardings, the seed case (pipeline, data and tensor over 4 x 2 x 8 of 64 devices),
// corpus/hlo/pipeline_while.hlo (4 stages x 2 data), the correct pipelines of corpus/explain
// (every check proved) and their mutations (each refuted with its counterexample), and the JSON
// and HTML renderings.
#include "explain/explain.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "explain/mesh_recovery.h"
#include "explain/pipeline.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::explain {
namespace {

using test_support::ReadFileOrFail;
using ::testing::HasSubstr;

std::string SourcePath(const std::string& relative) {
  return ::spmdcheck::test_support::SourceDir() + "/" + relative;
}

struct Explained {
  std::unique_ptr<HloModule> module;
  std::unique_ptr<HloModule> global;
  Explanation explanation;
};

Explained ExplainFile(const std::string& path, const ExplainOptions& options = {},
                      const std::string& global_path = "") {
  Explained out;
  const std::string text = ReadFileOrFail(path);
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text, {.path = path});
  if (!parsed.ok()) {
    ADD_FAILURE() << parsed.status();
    return out;
  }
  out.module = std::move(parsed->module);
  ModuleSource input{out.module.get(), text};
  std::optional<ModuleSource> global;
  if (!global_path.empty()) {
    const std::string global_text = ReadFileOrFail(global_path);
    absl::StatusOr<ParsedModule> g = ParseHloModule(global_text, {.path = global_path});
    if (!g.ok()) {
      ADD_FAILURE() << g.status();
      return out;
    }
    out.global = std::move(g->module);
    global = ModuleSource{out.global.get(), global_text};
  }
  absl::StatusOr<Explanation> e = Explain(input, global.has_value() ? &*global : nullptr, options);
  if (!e.ok()) {
    ADD_FAILURE() << e.status();
    return out;
  }
  out.explanation = *std::move(e);
  return out;
}

const AxisExplanation* AxisOfSize(const Explanation& e, int64_t size) {
  const AxisExplanation* found = nullptr;
  for (const AxisExplanation& a : e.axes) {
    if (a.size == size) {
      EXPECT_EQ(found, nullptr) << "two axes of size " << size;
      found = &a;
    }
  }
  return found;
}

const PipelineCheck* FindCheck(const PipelineExplanation& p, const std::string& name,
                               Verdict verdict) {
  for (const PipelineCheck& c : p.checks) {
    if (c.name == name && c.result.verdict == verdict) return &c;
  }
  return nullptr;
}

// ---- Mesh recovery ------------------------------------------------------------------------

TEST(ExplainMeshTest, ParsesTheMeshFlag) {
  absl::StatusOr<NamedMesh> m = ParseMeshFlag("data=2,expert=1,pipeline=4,model=8");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->axes.size(), 3u);  // The size-1 axis is dropped.
  EXPECT_EQ(m->axes[1].name, "pipeline");
  EXPECT_EQ(m->axes[1].size, 4);
  EXPECT_FALSE(ParseMeshFlag("data=0").ok());
  EXPECT_FALSE(ParseMeshFlag("data").ok());
  EXPECT_FALSE(ParseMeshFlag("a=2,a=2").ok());
}

TEST(ExplainMeshTest, ReadsMeshesWrittenInModules) {
  std::optional<NamedMesh> sdy = MeshFromModuleText(
      R"(frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<[\"data\"=2, \"model\"=4]>}})", 8);
  ASSERT_TRUE(sdy.has_value());
  EXPECT_EQ(sdy->axes[1].name, "model");
  std::optional<NamedMesh> xla =
      MeshFromModuleText("replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_1'}", 8);
  ASSERT_TRUE(xla.has_value());
  EXPECT_EQ(xla->axes[0].name, "axis_0");
  // JAX's Mesh in metadata, size-1 axes dropped; the product must be the device count.
  const std::string jax =
      R"x(op_name="...resource_env=ResourceEnv(mesh=Mesh(\'data\': 2, \'expert\': 1, \'pipeline\': 4, \'model\': 8), ())")x";
  std::optional<NamedMesh> j = MeshFromModuleText(jax, 64);
  ASSERT_TRUE(j.has_value());
  ASSERT_EQ(j->axes.size(), 3u);
  EXPECT_EQ(j->axes[2].name, "model");
  EXPECT_FALSE(MeshFromModuleText(jax, 32).has_value());
}

TEST(ExplainMeshTest, InfersAxesFromShardingsAndDescribesSubAxisGroups) {
  absl::StatusOr<HloSharding> s = ParseSharding("{devices=[1,4,2,8,1]<=[2,4,8]T(1,0,2)}");
  ASSERT_TRUE(s.ok());
  MeshObservations obs;
  obs.arrays.push_back({s->tile_assignment(), 5, true});
  std::vector<std::vector<int64_t>> groups;  // {0,1,2,3},{4,5,6,7},...: the low half of model.
  for (int64_t g = 0; g < 16; ++g) groups.push_back({4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3});
  obs.groups.push_back(groups);
  absl::StatusOr<RecoveredMesh> mesh = RecoveredMesh::Recover(64, obs, std::nullopt);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  ASSERT_EQ(mesh->num_axes(), 3);
  EXPECT_EQ(mesh->axes()[0].size, 2);
  EXPECT_EQ(mesh->axes()[0].stride, 32);
  EXPECT_EQ(mesh->axes()[1].size, 4);
  EXPECT_EQ(mesh->axes()[2].size, 8);
  std::optional<std::vector<AxisPart>> parts = mesh->GroupAxes(groups);
  ASSERT_TRUE(parts.has_value());
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ(mesh->PartName((*parts)[0]), "axis2:(2)4");
  std::optional<std::vector<std::vector<AxisPart>>> dims = mesh->DimAxes(s->tile_assignment());
  ASSERT_TRUE(dims.has_value());
  EXPECT_EQ(mesh->PartName((*dims)[1][0]), "axis1");
  EXPECT_EQ(mesh->PartName((*dims)[2][0]), "axis0");
  // A stage order reversed along an axis still splits over that axis.
  absl::StatusOr<HloSharding> reversed = ParseSharding("{devices=[4,2]6,7,4,5,2,3,0,1}");
  ASSERT_TRUE(reversed.ok());
  MeshObservations obs2;
  obs2.arrays.push_back({TileAssignment::Iota({4, 2}), 2, true});
  absl::StatusOr<RecoveredMesh> mesh2 = RecoveredMesh::Recover(8, obs2, std::nullopt);
  ASSERT_TRUE(mesh2.ok());
  std::optional<std::vector<std::vector<AxisPart>>> rdims =
      mesh2->DimAxes(reversed->tile_assignment());
  ASSERT_TRUE(rdims.has_value());
  EXPECT_EQ(mesh2->PartName((*rdims)[0][0]), "axis0");
}

TEST(ExplainMeshTest, RejectsAMeshOfTheWrongSize) {
  absl::StatusOr<NamedMesh> named = ParseMeshFlag("data=2,model=2");
  ASSERT_TRUE(named.ok());
  absl::StatusOr<RecoveredMesh> mesh = RecoveredMesh::Recover(8, {}, *named);
  ASSERT_FALSE(mesh.ok());
  EXPECT_THAT(mesh.status().message(), HasSubstr("has 4 devices but the module has 8"));
}

// ---- Z3 proofs ------------------------------------------------------------------------------

RecoveredMesh StageByData() {  // stage=4 (stride 2) x data=2 (stride 1)
  absl::StatusOr<NamedMesh> named = ParseMeshFlag("stage=4,data=2");
  absl::StatusOr<RecoveredMesh> mesh = RecoveredMesh::Recover(8, {}, *named);
  EXPECT_TRUE(mesh.ok());
  return *mesh;
}

SourceTargetPairs Shift(const RecoveredMesh& mesh, int64_t by, bool wrap) {
  SourceTargetPairs pairs;
  for (int64_t d = 0; d < 8; ++d) {
    int64_t s = mesh.Coordinate(d, 0) + by;
    if (s < 0 || s >= 4) {
      if (!wrap) continue;
      s = (s + 4) % 4;
    }
    pairs.push_back({d, mesh.WithCoordinate(d, 0, s)});
  }
  return pairs;
}

TEST(ExplainProofTest, RotationIsProvedAndWrongRotationsAreRefuted) {
  const RecoveredMesh mesh = StageByData();
  EXPECT_EQ(ProveRotation(mesh, 0, Shift(mesh, 1, true), 1, WrapPolicy::kRequired, 10000).verdict,
            Verdict::kHolds);
  EXPECT_EQ(ProveRotation(mesh, 0, Shift(mesh, 1, false), 1, WrapPolicy::kOptional, 10000).verdict,
            Verdict::kHolds);
  EXPECT_EQ(
      ProveRotation(mesh, 0, Shift(mesh, -1, false), -1, WrapPolicy::kOptional, 10000).verdict,
      Verdict::kHolds);
  // Missing wrap where the schedule reads it.
  smt::ProofResult wrap =
      ProveRotation(mesh, 0, Shift(mesh, 1, false), 1, WrapPolicy::kRequired, 10000);
  ASSERT_EQ(wrap.verdict, Verdict::kFails);
  EXPECT_THAT(wrap.counterexample, HasSubstr("holds the last stage along stage and sends nothing"));
  // Off by one stage.
  smt::ProofResult two =
      ProveRotation(mesh, 0, Shift(mesh, 2, true), 1, WrapPolicy::kOptional, 10000);
  ASSERT_EQ(two.verdict, Verdict::kFails);
  EXPECT_THAT(two.counterexample, HasSubstr("belongs to stage"));
  // Reversed pairs.
  EXPECT_EQ(ProveRotation(mesh, 0, Shift(mesh, -1, true), 1, WrapPolicy::kOptional, 10000).verdict,
            Verdict::kFails);
  // One reversed pair among forward ones (a valid partial permutation): stage 1 of data 1 sends
  // back to stage 0 instead of on to stage 2 (whose receiver now gets nothing).
  SourceTargetPairs one = Shift(mesh, 1, false);
  for (auto& [s, t] : one) {
    if (s == 3) t = 1;
  }
  one.erase(std::remove_if(one.begin(), one.end(), [](const auto& p) { return p.first == 1; }),
            one.end());
  smt::ProofResult reversed = ProveRotation(mesh, 0, one, 1, WrapPolicy::kOptional, 10000);
  ASSERT_EQ(reversed.verdict, Verdict::kFails);
  EXPECT_THAT(reversed.counterexample, HasSubstr("device 1 ("));
}

TEST(ExplainProofTest, LargeMeshesAreCheckedDeviceByDevice) {
  // 4 x 64 = 256 devices: past kMaxZ3TableDevices, the same claim, checked on every device.
  absl::StatusOr<RecoveredMesh> mesh =
      RecoveredMesh::Recover(256, {}, *ParseMeshFlag("stage=4,data=64"));
  ASSERT_TRUE(mesh.ok());
  ASSERT_GT(mesh->num_devices(), kMaxZ3TableDevices);
  SourceTargetPairs good, two, nowrap;
  for (int64_t d = 0; d < 256; ++d) {
    const int64_t s = mesh->Coordinate(d, 0);
    good.push_back({d, mesh->WithCoordinate(d, 0, (s + 1) % 4)});
    two.push_back({d, mesh->WithCoordinate(d, 0, (s + 2) % 4)});
    if (s < 3) nowrap.push_back({d, mesh->WithCoordinate(d, 0, s + 1)});
  }
  EXPECT_EQ(ProveRotation(*mesh, 0, good, 1, WrapPolicy::kRequired, 10000).verdict,
            Verdict::kHolds);
  EXPECT_EQ(ProveRotation(*mesh, 0, nowrap, 1, WrapPolicy::kOptional, 10000).verdict,
            Verdict::kHolds);
  smt::ProofResult off = ProveRotation(*mesh, 0, two, 1, WrapPolicy::kOptional, 10000);
  ASSERT_EQ(off.verdict, Verdict::kFails);
  EXPECT_THAT(off.counterexample, HasSubstr("device 0 (stage=0, data=0) holds stage 0 of stage"));
  smt::ProofResult wrap = ProveRotation(*mesh, 0, nowrap, 1, WrapPolicy::kRequired, 10000);
  ASSERT_EQ(wrap.verdict, Verdict::kFails);
  EXPECT_THAT(wrap.counterexample, HasSubstr("sends nothing"));
  absl::StatusOr<HloSharding> state = ParseSharding("{devices=[4,64,1]<=[256]}");
  std::vector<int64_t> reversed;
  for (int64_t s = 3; s >= 0; --s) {
    for (int64_t d = 0; d < 64; ++d) reversed.push_back(64 * s + d);
  }
  absl::StatusOr<TileAssignment> rt = TileAssignment::Explicit({4, 1, 1, 64}, reversed);
  ASSERT_TRUE(state.ok() && rt.ok());
  const HloSharding weights = HloSharding::PartialTile(*rt);
  smt::ProofResult bad = ProveOwnWeights(*mesh, 0, *state, 0, weights, 0, 10000);
  ASSERT_EQ(bad.verdict, Verdict::kFails);
  EXPECT_THAT(bad.counterexample, HasSubstr("holds the weights of stage 3"));
}

TEST(ExplainProofTest, OwnWeightsIsProvedAndMisplacedWeightsAreRefuted) {
  const RecoveredMesh mesh = StageByData();
  absl::StatusOr<HloSharding> state = ParseSharding("{devices=[4,2,1]<=[8]}");
  absl::StatusOr<HloSharding> weights =
      ParseSharding("{devices=[4,1,1,2]<=[8] last_tile_dim_replicate}");
  absl::StatusOr<HloSharding> reversed =
      ParseSharding("{devices=[4,1,1,2]6,7,4,5,2,3,0,1 last_tile_dim_replicate}");
  ASSERT_TRUE(state.ok() && weights.ok() && reversed.ok());
  EXPECT_EQ(ProveOwnWeights(mesh, 0, *state, 0, *weights, 0, 10000).verdict, Verdict::kHolds);
  smt::ProofResult bad = ProveOwnWeights(mesh, 0, *state, 0, *reversed, 0, 10000);
  ASSERT_EQ(bad.verdict, Verdict::kFails);
  EXPECT_THAT(bad.counterexample, HasSubstr("but holds the weights of stage"));
}

// ---- The seed case and the corpus -----------------------------------------------------------

TEST(ExplainTest, SeedIsPipelineTensorAndDataOver4x8x2Of64Devices) {
  SPMDCHECK_SKIP_WITHOUT_SHARED("cases/seed-scatter/gspmd.hlo");
  Explained x = ExplainFile(test_support::SharedPath("cases/seed-scatter/gspmd.hlo"));
  const Explanation& e = x.explanation;
  EXPECT_EQ(e.num_devices, 64);
  ASSERT_EQ(e.axes.size(), 3u);
  const AxisExplanation* pipeline = AxisOfSize(e, 4);
  const AxisExplanation* model = AxisOfSize(e, 8);
  const AxisExplanation* data = AxisOfSize(e, 2);
  ASSERT_TRUE(pipeline && model && data);
  EXPECT_EQ(pipeline->stride, 8);
  EXPECT_EQ(data->stride, 32);
  EXPECT_EQ(pipeline->roles.at(0), Role::kPipeline);
  EXPECT_EQ(data->roles.at(0), Role::kData);
  EXPECT_EQ(model->roles.at(0), Role::kTensor);
  EXPECT_THAT(e.answer, HasSubstr("intra-op plus 4 pipeline stages over " + pipeline->name));
  EXPECT_EQ(e.verdict(), Verdict::kHolds);
  // The named mesh of the report.
  ExplainOptions named;
  named.mesh = *ParseMeshFlag("data=2,pipeline=4,model=8");
  Explained y = ExplainFile(test_support::SharedPath("cases/seed-scatter/gspmd.hlo"), named,
                            test_support::SharedPath("cases/seed-scatter/pre.hlo"));
  EXPECT_THAT(y.explanation.answer,
              HasSubstr("intra-op plus 4 pipeline stages over pipeline (data parallel over data, "
                        "tensor/model parallel over model)"));
  // Bytes: the all-reduce over model:(2)4 (72 B) plus the all-gather over pipeline,model:(1)2
  // (336 B), two permutes of 48 B.
  EXPECT_EQ(y.explanation.bytes_per_step, 504);
}

TEST(ExplainTest, PipelineWhileIsFourStagesByTwoData) {
  Explained x = ExplainFile(SourcePath("corpus/hlo/pipeline_while.hlo"));
  const Explanation& e = x.explanation;
  ASSERT_EQ(e.axes.size(), 2u);
  const AxisExplanation* stage = AxisOfSize(e, 4);
  const AxisExplanation* data = AxisOfSize(e, 2);
  ASSERT_TRUE(stage && data);
  EXPECT_EQ(stage->roles.at(0), Role::kPipeline);
  EXPECT_EQ(data->roles.at(0), Role::kData);
  ASSERT_EQ(e.pipelines.size(), 1u);
  const PipelineExplanation& p = e.pipelines[0];
  EXPECT_EQ(p.stages, 4);
  EXPECT_EQ(p.trips, 5);
  EXPECT_EQ(p.micro_batches, 5);
  EXPECT_NE(FindCheck(p, "rotation", Verdict::kHolds), nullptr);
  EXPECT_NE(FindCheck(p, "own-weights", Verdict::kHolds), nullptr);
  // 5 trips cannot take 5 micro-batches through 4 stages: micro-batch 0's result is overwritten
  // in slot 0 by micro-batch 4 at the last trip, the others are unfinished.
  const PipelineCheck* order = FindCheck(p, "micro-batch-order", Verdict::kFails);
  ASSERT_NE(order, nullptr);
  EXPECT_THAT(order->result.counterexample,
              HasSubstr("micro-batch 0 passes stages 0,1,2,3 of state{1} but is overwritten at "
                        "trip 4"));
  EXPECT_THAT(e.answer, HasSubstr("intra-op plus 4 pipeline stages over " + stage->name +
                                  " (data parallel over " + data->name + ")"));
}

class CorrectPipelineTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CorrectPipelineTest, EveryCheckIsProved) {
  Explained x = ExplainFile(SourcePath("corpus/explain/" + GetParam()));
  const Explanation& e = x.explanation;
  EXPECT_EQ(e.verdict(), Verdict::kHolds) << FormatText(e);
  ASSERT_EQ(e.pipelines.size(), 1u);
  const PipelineExplanation& p = e.pipelines[0];
  EXPECT_EQ(p.stages, 4);
  EXPECT_FALSE(p.loop.empty());
  EXPECT_EQ(p.micro_batches, 3);
  EXPECT_GE(p.checks.size(), 3u);
  const AxisExplanation* data = AxisOfSize(e, 2);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->roles.at(0), Role::kData);
  EXPECT_THAT(e.answer, HasSubstr("intra-op plus 4 pipeline stages"));
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorrectPipelineTest,
                         ::testing::Values("gpipe.hlo", "gpipe_wrap_read.hlo", "1f1b.hlo",
                                           "gpipe_partitioned.hlo"));

struct Mutation {
  std::string file;
  std::vector<std::string> refuted;  // Checks that must be refuted.
  std::string counterexample;        // A substring of the first refutation.
};

class MutatedPipelineTest : public ::testing::TestWithParam<Mutation> {};

TEST_P(MutatedPipelineTest, IsRefutedWithACounterexample) {
  const Mutation& m = GetParam();
  Explained x = ExplainFile(SourcePath("corpus/explain/" + m.file));
  const Explanation& e = x.explanation;
  EXPECT_EQ(e.verdict(), Verdict::kFails);
  ASSERT_EQ(e.pipelines.size(), 1u);
  const PipelineExplanation& p = e.pipelines[0];
  std::string first;
  for (const std::string& name : m.refuted) {
    const PipelineCheck* c = FindCheck(p, name, Verdict::kFails);
    ASSERT_NE(c, nullptr) << name << " is not refuted:\n" << FormatText(e);
    if (first.empty()) first = c->result.counterexample;
  }
  EXPECT_THAT(first, HasSubstr(m.counterexample));
}

INSTANTIATE_TEST_SUITE_P(
    Corpus, MutatedPipelineTest,
    ::testing::Values(
        Mutation{"mut_off_by_one.hlo",
                 {"rotation", "micro-batch-order"},
                 "holds stage 0 of axis0 and sends to device 4 (axis0=2, axis1=0); stage 0's "
                 "output belongs to stage 1"},
        Mutation{"mut_reversed_pairs.hlo",
                 {"rotation", "micro-batch-order"},
                 "sends to device 6 (axis0=3, axis1=0); stage 0's output belongs to stage 1"},
        Mutation{"mut_reversed_group.hlo", {"rotation"}, "axis1=1"},
        Mutation{"mut_missing_wrap.hlo",
                 {"rotation", "micro-batch-order"},
                 "holds the last stage along axis0 and sends nothing; the schedule reads the "
                 "wrapped slot"},
        Mutation{
            "mut_wrong_weights_partitioned.hlo", {"own-weights"}, "but holds the weights of stage"},
        Mutation{"mut_short_loop.hlo",
                 {"micro-batch-order"},
                 "micro-batch 2 has passed stages 0,1,2 of state{1} when the loop ends after 5 "
                 "trips"},
        Mutation{
            "mut_collect_index.hlo", {"micro-batch-order"}, "collects micro-batch 0 at index 1"},
        Mutation{"mut_inject_slot.hlo",
                 {"micro-batch-order"},
                 "micro-batch 0 reaches stage 1 of state{1} at trip 0"}),
    [](const ::testing::TestParamInfo<Mutation>& info) {
      std::string name = info.param.file.substr(0, info.param.file.find('.'));
      return name;
    });

// ---- Renderings -----------------------------------------------------------------------------

TEST(ExplainReportTest, JsonFollowsTheDocumentedSchema) {
  Explained x = ExplainFile(SourcePath("corpus/explain/mut_missing_wrap.hlo"));
  const nlohmann::json j = nlohmann::json::parse(FormatJson(x.explanation));
  EXPECT_EQ(j["num_devices"], 8);
  EXPECT_EQ(j["partitioned"], false);
  EXPECT_EQ(j["verdict"], "fails");
  ASSERT_EQ(j["axes"].size(), 2u);
  for (const auto& a : j["axes"]) {
    for (const char* key :
         {"name", "size", "stride", "roles", "evidence", "collectives", "bytes_per_step",
          "bytes_exact", "sharded_values", "sharded_value_count"}) {
      EXPECT_TRUE(a.contains(key)) << key;
    }
  }
  EXPECT_EQ(j["axes"][0]["roles"][0], "pipeline");
  ASSERT_EQ(j["pipelines"].size(), 1u);
  const auto& p = j["pipelines"][0];
  EXPECT_EQ(p["stages"], 4);
  EXPECT_EQ(p["trips"], 6);
  bool refuted_rotation = false;
  for (const auto& c : p["checks"]) {
    if (c["name"] == "rotation" && c["verdict"] == "fails") {
      refuted_rotation = true;
      EXPECT_THAT(c["counterexample"].get<std::string>(), HasSubstr("sends nothing"));
    }
  }
  EXPECT_TRUE(refuted_rotation);
  EXPECT_THAT(j["answer"].get<std::string>(), HasSubstr("4 pipeline stages"));
}

TEST(ExplainReportTest, HtmlIsOneSelfContainedPage) {
  Explained x = ExplainFile(SourcePath("corpus/explain/gpipe.hlo"));
  const std::string html = FormatHtml(x.explanation);
  EXPECT_THAT(html, HasSubstr("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr(x.explanation.answer));
  for (const char* external : {"http:", "https:", "<link", "<script", "src=", "@import"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
}

}  // namespace
}  // namespace spmdcheck::explain
