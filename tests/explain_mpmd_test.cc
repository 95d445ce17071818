// explain for MPMD programs in IFRT IR: the reader (explain/ifrt_program.h) and the explanation
// (explain/mpmd_explanation.h), on IFRT programs Shardy's MPMD partitioner made
// (corpus/explain/mpmd, written by its make_fixtures.py) and on hand-broken copies of them.
#include <string>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "explain/ifrt_program.h"
#include "explain/mpmd_explanation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::explain {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  return test_support::ReadFileOrFail(test_support::SourcePath("corpus/explain/mpmd/" + name));
}

MpmdExplanation ExplainText(const std::string& text) {
  absl::StatusOr<IfrtProgram> program = ParseIfrtProgram(text, "p.mlir");
  EXPECT_TRUE(program.ok()) << program.status();
  absl::StatusOr<MpmdExplanation> explanation = ExplainMpmd(*program);
  EXPECT_TRUE(explanation.ok()) << explanation.status();
  return *explanation;
}

const MpmdCheck& CheckNamed(const MpmdExplanation& e, const std::string& name) {
  for (const MpmdCheck& c : e.checks) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no check " << name;
  return e.checks.front();
}

std::vector<std::string> Labels(const MpmdMeshUse& mesh) {
  std::vector<std::string> labels;
  for (const MpmdScheduledCall& call : mesh.schedule) labels.push_back(call.label);
  return labels;
}

// Seed 1 of spmdcheck.mpmd: stages s0 -> m0 (4 devices), s1 -> m1 (2 devices), s2 -> m0, with
// their transposes (backward stages), 2 microbatches, GPipe. The order of m0's calls is the
// order of the ifrt.Call lines with `on devices [0, 1, 2, 3]` in the file.
TEST(ExplainMpmd, GpipeForwardBackwardPipeline) {
  const MpmdExplanation e = ExplainText(Fixture("gpipe_fwd_bwd.ifrt.mlir"));
  EXPECT_EQ(e.verdict(), Verdict::kHolds);
  EXPECT_EQ(e.module_name, "mpmd_1");
  EXPECT_EQ(e.num_devices, 6);
  ASSERT_EQ(e.meshes.size(), 2u);
  EXPECT_EQ(e.meshes[0].name, "m0");
  EXPECT_THAT(e.meshes[0].devices, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(e.meshes[1].name, "m1");
  EXPECT_THAT(e.meshes[1].devices, ElementsAre(4, 5));
  EXPECT_THAT(Labels(e.meshes[0]),
              ElementsAre("s0 F0", "s2 F0", "s0 F1", "s2 F1", "s2 B0", "s0 B0", "s2 B1", "s0 B1"));
  EXPECT_THAT(Labels(e.meshes[1]), ElementsAre("s1 F0", "s1 F1", "s1 B0", "s1 B1"));
  EXPECT_EQ(e.stages, 3);
  EXPECT_EQ(e.microbatches, 2);
  EXPECT_THAT(e.schedule, HasSubstr("GPipe"));
  EXPECT_EQ(e.fragments.size(), 6u);
  EXPECT_EQ(e.transfers.size(), 10u);  // Ten arrays in the eight ifrt.Reshard ops.
  // m0's x axis splits p0_s0's first argument along dim 1 (`[{}, {"x"}]` in the file).
  ASSERT_EQ(e.meshes[0].axes.size(), 1u);
  EXPECT_THAT(e.meshes[0].axes[0].splits, testing::Contains("p0_s0_fwd_calls0to1 arg0 dim 1"));
  EXPECT_THAT(e.answer, HasSubstr("inter-op: 3 stages over 2 meshes"));
  EXPECT_THAT(e.answer, HasSubstr("m0 over x, m1 replicated"));
}

// Seed 60: forward stages s0 -> m0, s1 -> m1, s2 and s3 merged into one fragment on m0 (named
// `s2...`), 3 microbatches; each fragment called three times.
TEST(ExplainMpmd, ForwardPipelineWithMergedStages) {
  const MpmdExplanation e = ExplainText(Fixture("forward_3_microbatches.ifrt.mlir"));
  EXPECT_EQ(e.verdict(), Verdict::kHolds);
  EXPECT_EQ(e.microbatches, 3);
  EXPECT_EQ(e.stages, 3);
  EXPECT_THAT(e.schedule, HasSubstr("forward only"));
  for (const MpmdFragmentUse& f : e.fragments) EXPECT_EQ(f.calls, 3) << f.name;
  EXPECT_THAT(Labels(e.meshes[1]), ElementsAre("s1 F0", "s1 F1", "s1 F2"));
  // Each transfer is one 4x8 f32 array; to m1 it is split in 4 (32 B on each of 4 devices), back
  // to m0 replicated (128 B on each of 4 devices).
  ASSERT_EQ(e.transfers.size(), 6u);
  EXPECT_EQ(e.transfers[0].bytes, 128);
  EXPECT_EQ(e.transfers[1].bytes, 512);
  EXPECT_EQ(e.transfer_bytes, 3 * (128 + 512));
}

// Seed 27: two 2x2 meshes; the fragments state no mesh, so the program's `sdy.mesh @mesh` names
// the axes, none of which splits anything.
TEST(ExplainMpmd, MeshAxesFromTheProgramsOwnMesh) {
  const MpmdExplanation e = ExplainText(Fixture("mesh2x2.ifrt.mlir"));
  EXPECT_EQ(e.verdict(), Verdict::kHolds);
  ASSERT_EQ(e.meshes.size(), 2u);
  ASSERT_EQ(e.meshes[0].axes.size(), 2u);
  EXPECT_EQ(e.meshes[0].axes[0].axis, "x");
  EXPECT_TRUE(e.meshes[0].axes[0].splits.empty());
  EXPECT_THAT(e.answer, HasSubstr("m0 replicated, m1 replicated"));
}

// An operand moved to the wrong devices: the call of p1 on [4, 5] gets an array typed as on
// [0, 1, 2, 3]. Placement and value typing both refute it, at the call's line.
TEST(ExplainMpmd, OperandOnAnotherMeshIsRefuted) {
  std::string text = Fixture("gpipe_fwd_bwd.ifrt.mlir");
  const std::string call =
      "ifrt.Call @p1_s1_fwd_calls0to1.mpmd_1::@main(%outputs_0#2, %outputs_0#1, %arg1) on "
      "devices [4, 5]";
  const size_t at = text.find(call);
  ASSERT_NE(at, std::string::npos);
  const size_t types = text.find("(!ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>", at);
  text.replace(types, 43, "(!ifrt.array<tensor<6x8xf32>, #sp1, [0, 1]>");
  const MpmdExplanation e = ExplainText(text);
  EXPECT_EQ(e.verdict(), Verdict::kFails);
  EXPECT_EQ(CheckNamed(e, "placement").verdict, Verdict::kFails);
  EXPECT_THAT(CheckNamed(e, "placement").detail,
              HasSubstr("p.mlir:11:37: operand 0 (%outputs_0#2) of the call of "
                        "p1_s1_fwd_calls0to1.mpmd_1 lives on [0,1], the call runs on [4,5]"));
  EXPECT_EQ(CheckNamed(e, "values").verdict, Verdict::kFails);
}

// A transfer left out: the value is used before it is defined.
TEST(ExplainMpmd, MissingTransferIsRefuted) {
  std::string text = Fixture("forward_3_microbatches.ifrt.mlir");
  const size_t line = text.find("%outputs_0, %control_output_1 = ifrt.CopyArrays");
  ASSERT_NE(line, std::string::npos);
  text.erase(line, text.find('\n', line) - line);
  const MpmdExplanation e = ExplainText(text);
  EXPECT_EQ(CheckNamed(e, "values").verdict, Verdict::kFails);
  EXPECT_THAT(CheckNamed(e, "values").detail, HasSubstr("%outputs_0 is used before it is defined"));
}

// A fragment compiled for another layout than its argument has: p1_s1's second argument is
// stated split over x along dim 0; the array arrives replicated.
TEST(ExplainMpmd, FragmentCompiledForAnotherLayoutIsRefuted) {
  std::string text = Fixture("forward_3_microbatches.ifrt.mlir");
  const size_t module = text.find("module @p0_s0_calls0to2.mpmd_60");
  ASSERT_NE(module, std::string::npos);
  const size_t sharding = text.find("#sdy.sharding<@mesh, [{}, {\"x\"}]>", module);
  ASSERT_NE(sharding, std::string::npos);
  text.replace(sharding, 33, "#sdy.sharding<@mesh, [{\"x\"}, {}]>");
  const MpmdExplanation e = ExplainText(text);
  EXPECT_EQ(CheckNamed(e, "fragments").verdict, Verdict::kFails);
  EXPECT_THAT(CheckNamed(e, "fragments").detail, HasSubstr("is compiled split 4x1"));
}

// An op this reader does not model makes the verdict unknown, never holds.
TEST(ExplainMpmd, UnmodelledOpIsUnknown) {
  std::string text = Fixture("forward_3_microbatches.ifrt.mlir");
  const size_t ret = text.find("    return %outputs_6#0");
  text.insert(ret, "    %r, %c = ifrt.RemapArrays(%arg0) : (x) -> y\n");
  const MpmdExplanation e = ExplainText(text);
  EXPECT_EQ(e.verdict(), Verdict::kUnknown);
  EXPECT_THAT(CheckNamed(e, "coverage").detail, HasSubstr("p.mlir:22:14: ifrt.RemapArrays"));
}

TEST(IfrtProgram, MalformedTextHasFileLineColumn) {
  std::string text = Fixture("forward_3_microbatches.ifrt.mlir");
  text = absl::StrReplaceAll(text, {{"#sp1 = #ifrt.sharding_param<4x1 to [0] on 4>",
                                     "#sp1 = #ifrt.sharding_param<3x1 to [0] on 4>"}});
  absl::StatusOr<IfrtProgram> program = ParseIfrtProgram(text, "bad.mlir");
  ASSERT_FALSE(program.ok());
  EXPECT_THAT(program.status().message(),
              HasSubstr("bad.mlir:2:8: sharding_param #ifrt.sharding_param<3x1 to [0] on 4> "
                        "splits into 3 parts over 4 devices"));

  absl::StatusOr<IfrtProgram> truncated =
      ParseIfrtProgram(Fixture("gpipe_fwd_bwd.ifrt.mlir").substr(0, 2000), "cut.mlir");
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(truncated.status().message(), HasSubstr("cut.mlir:"));

  absl::StatusOr<IfrtProgram> empty = ParseIfrtProgram("module @m {\n}\n", "e.mlir");
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("e.mlir:1:1: no func.func @main"));
}

TEST(IfrtProgram, HugeTensorIsRefusedNotAllocated) {
  absl::StatusOr<Shape> shape = ParseMlirTensorType("tensor<1000000x1000000x1000000xf32>");
  ASSERT_FALSE(shape.ok());
  EXPECT_THAT(shape.status().message(), HasSubstr("more than 2^40 elements"));
}

TEST(IfrtProgram, FragmentNames) {
  MpmdFragmentName a = ParseMpmdFragmentName("p3_s2_bwd_calls0to1.mpmd_1", "mpmd_1");
  EXPECT_EQ(a.stage, "s2");
  EXPECT_EQ(a.direction, "backward");
  EXPECT_EQ(a.first_call, 0);
  MpmdFragmentName b = ParseMpmdFragmentName("p2_s2..._calls3to5.mpmd_60", "mpmd_60");
  EXPECT_EQ(b.stage, "s2...");
  EXPECT_EQ(b.direction, "");
  EXPECT_EQ(b.first_call, 3);
  MpmdFragmentName c = ParseMpmdFragmentName("p0_encoder.prog", "prog");
  EXPECT_EQ(c.stage, "encoder");
}

TEST(IfrtProgram, LooksLikeIfrtProgram) {
  EXPECT_TRUE(LooksLikeIfrtProgram(Fixture("mesh2x2.ifrt.mlir")));
  EXPECT_FALSE(LooksLikeIfrtProgram("module @m {\n  func.func @main(%a: tensor<2xf32>)\n}\n"));
}

}  // namespace
}  // namespace spmdcheck::explain
