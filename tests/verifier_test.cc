// Verifier: structural, shape, sharding and collective-group checks. Each bad module below
// breaks exactly one rule, worked out by hand from the XLA semantics (spec §1.3, §3.2-3.4).
#include "ir/verifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_module.h"
#include "ir/hlo_parser.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::unique_ptr<HloModule> Parse(absl::string_view text) {
  ParseOptions options;
  options.path = "test.hlo";
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text, options);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return std::make_unique<HloModule>("unparsed");
  return std::move(parsed->module);
}

std::vector<std::string> Messages(const HloModule& module, const VerifierOptions& options = {}) {
  std::vector<std::string> messages;
  for (const VerifierDiagnostic& diagnostic : VerifyModuleDiagnostics(module, options)) {
    messages.push_back(diagnostic.message);
  }
  return messages;
}

// The single diagnostic of `text`, which must have exactly one.
std::string OnlyMessage(absl::string_view text, const VerifierOptions& options = {}) {
  std::unique_ptr<HloModule> module = Parse(text);
  std::vector<std::string> messages = Messages(*module, options);
  EXPECT_EQ(messages.size(), 1u) << absl::StrJoin(messages, "\n");
  return messages.empty() ? "" : messages[0];
}

// ---- Valid modules ------------------------------------------------------------------------------

TEST(VerifierTest, ValidModuleHasNoDiagnostics) {
  std::unique_ptr<HloModule> module = Parse(R"(
HloModule m, num_partitions=4

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT sum = f32[] add(a, b)
}

ENTRY main {
  p0 = f32[8,16] parameter(0), sharding={devices=[4,1]<=[4]}
  p1 = f32[16,4] parameter(1), sharding={replicated}
  dot = f32[8,4] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  init = f32[] constant(0)
  reduce = f32[8] reduce(dot, init), dimensions={1}, to_apply=add
  ar = f32[8] all-reduce(reduce), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=add
  ag = f32[32] all-gather(ar), channel_id=2, replica_groups={{0,1,2,3}}, use_global_device_ids=true, dimensions={0}
  pid = u32[] partition-id()
  ROOT t = (f32[32], u32[]) tuple(ag, pid)
}
)");
  EXPECT_THAT(Messages(*module), IsEmpty());
  EXPECT_TRUE(VerifyModule(*module).ok());
}

// ---- Shapes -------------------------------------------------------------------------------------

TEST(VerifierTest, WrittenShapeMustMatchInference) {
  EXPECT_EQ(OnlyMessage(R"(
HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  ROOT n = f32[4] negate(a)
}
)"),
            "n: shape f32[4] does not match the inferred shape f32[8]");
}

TEST(VerifierTest, TupleArrayMismatchSaysWhichIsWhich) {
  EXPECT_EQ(OnlyMessage(R"(
HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  ROOT t = f32[8] tuple(a)
}
)"),
            "t: shape f32[8] is not a tuple but the inferred shape (f32[8]) is a tuple");
}

TEST(VerifierTest, InferenceErrorsAreReportedWithTheInstructionName) {
  EXPECT_EQ(OnlyMessage(R"(
HloModule m
ENTRY main {
  a = f32[8,100] parameter(0)
  b = f32[64,16] parameter(1)
  ROOT d = f32[8,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)"),
            "d: dot: lhs contracting dim 1 has size 100 but rhs contracting dim 0 has size 64");
  // When the name starts with the opcode, the opcode is not repeated.
  EXPECT_EQ(OnlyMessage(R"(
HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  b = f32[9] parameter(1)
  ROOT add.3 = f32[8] add(a, b)
}
)"),
            "add.3: operands must have the same dimensions, got f32[8] and f32[9]");
}

TEST(VerifierTest, ReplicaAndPartitionIdMustBeU32Scalars) {
  EXPECT_EQ(OnlyMessage(R"(
HloModule m
ENTRY main {
  ROOT r = s32[] replica-id()
}
)"),
            "r: shape s32[] does not match the inferred shape u32[]; XLA's verifier rejects "
            "this, running it is unsupported");
}

TEST(VerifierTest, WrongOperandCount) {
  HloModule module("m");
  HloComputation* entry = module.AddComputation(std::make_unique<HloComputation>("main"));
  module.set_entry(entry);
  auto param = std::make_unique<HloInstruction>(HloOpcode::kParameter, "p",
                                                Shape::Array(PrimitiveType::kF32, {4}));
  param->set_parameter_number(0);
  HloInstruction* p = entry->AddInstruction(std::move(param));
  auto negate = std::make_unique<HloInstruction>(HloOpcode::kNegate, "n",
                                                 Shape::Array(PrimitiveType::kF32, {4}));
  negate->AppendOperand(p);
  negate->AppendOperand(p);
  entry->set_root(entry->AddInstruction(std::move(negate)));
  EXPECT_THAT(Messages(module), ElementsAre("n: negate: expects 1 operand but has 2"));
}

TEST(VerifierTest, OpsWithWrittenShapesGetXlaChecks) {
  EXPECT_EQ(OnlyMessage(R"(
HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  ROOT c = s32[4] convert(a)
}
)"),
            "c: shape s32[4] must be an array with the dims of the operand f32[8]");
  EXPECT_EQ(OnlyMessage(R"(
HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  ROOT r = f32[3,3] reshape(a)
}
)"),
            "r: shape f32[3,3] has 9 elements but the operand f32[8] has 8");
  EXPECT_EQ(OnlyMessage(R"(
HloModule m
ENTRY main {
  ROOT i = s32[4,5] iota(), iota_dimension=2
}
)"),
            "i: iota_dimension 2 is out of range for s32[4,5]");
}

TEST(VerifierTest, BitcastConvertChangesTheMinorDimWithTheWidth) {
  std::unique_ptr<HloModule> ok = Parse(R"(
HloModule m
ENTRY main {
  a = f32[4] parameter(0)
  narrow = s8[4,4] bitcast-convert(a)
  same = s32[4] bitcast-convert(a)
  ROOT wide = f32[4] bitcast-convert(narrow)
}
)");
  EXPECT_THAT(Messages(*ok), IsEmpty());
  EXPECT_EQ(OnlyMessage(R"(
HloModule m
ENTRY main {
  a = f32[4] parameter(0)
  ROOT b = s8[4] bitcast-convert(a)
}
)"),
            "b: shape s8[4] must have dims {4,4} to bitcast-convert f32[4]");
}

TEST(VerifierTest, BroadcastMustMapOperandDimsOntoEqualResultDims) {
  EXPECT_EQ(OnlyMessage(R"(
HloModule m
ENTRY main {
  a = f32[3] parameter(0)
  ROOT b = f32[3,2] broadcast(a), dimensions={1}
}
)"),
            "b: broadcast: operand dim 0 has size 3 but result dim 1 has size 2");
}

TEST(VerifierTest, ArraySizeLimitIsOptionalExceptForConstants) {
  const char* text = R"(
HloModule m
ENTRY main {
  ROOT a = f32[65536,65536] parameter(0)
}
)";
  std::unique_ptr<HloModule> module = Parse(text);
  EXPECT_THAT(Messages(*module), IsEmpty());
  VerifierOptions options;
  options.check_array_size_limit = true;
  EXPECT_THAT(Messages(*module, options),
              ElementsAre("a: shape f32[65536,65536] has 4294967296 elements, more than the "
                          "limit of 2147483648"));
}

// ---- Structure ----------------------------------------------------------------------------------

class StructureTest : public ::testing::Test {
 protected:
  StructureTest() : module_("m") {
    entry_ = module_.AddComputation(std::make_unique<HloComputation>("main"));
    module_.set_entry(entry_);
  }
  HloInstruction* Param(int64_t number, HloComputation* computation = nullptr) {
    auto param = std::make_unique<HloInstruction>(HloOpcode::kParameter, absl::StrCat("p", next_++),
                                                  Shape::Array(PrimitiveType::kF32, {4}));
    param->set_parameter_number(number);
    return (computation ? computation : entry_)->AddInstruction(std::move(param));
  }
  HloInstruction* Negate(HloInstruction* operand, HloComputation* computation = nullptr) {
    auto negate = std::make_unique<HloInstruction>(HloOpcode::kNegate, absl::StrCat("n", next_++),
                                                   Shape::Array(PrimitiveType::kF32, {4}));
    negate->AppendOperand(operand);
    return (computation ? computation : entry_)->AddInstruction(std::move(negate));
  }
  HloModule module_;
  HloComputation* entry_;
  int next_ = 0;
};

TEST_F(StructureTest, ComputationWithoutRoot) {
  Param(0);
  EXPECT_THAT(Messages(module_), ElementsAre("main: computation has no root instruction"));
}

TEST_F(StructureTest, ParameterNumbersMustBeDenseAndUnique) {
  Param(0);
  HloInstruction* two = Param(2);
  entry_->set_root(two);
  EXPECT_THAT(Messages(module_),
              ElementsAre("p1: parameter number 2 leaves a gap: the computation has 2 "
                          "parameters and parameter(1) is missing"));
  HloInstruction* again = Param(0);
  (void)again;
  std::vector<std::string> messages = Messages(module_);
  EXPECT_THAT(messages, ::testing::Contains("p2: parameter number 0 is already used by p0"));
}

TEST_F(StructureTest, CycleIsReported) {
  HloInstruction* p = Param(0);
  HloInstruction* a = Negate(p);
  HloInstruction* b = Negate(a);
  a->ReplaceOperand(0, b);
  entry_->set_root(b);
  EXPECT_THAT(Messages(module_),
              ElementsAre("main: the instructions contain a cycle (an instruction depends on "
                          "itself through its operands)"));
}

TEST_F(StructureTest, OperandFromAnotherComputation) {
  HloComputation* other = module_.AddComputation(std::make_unique<HloComputation>("other"));
  HloInstruction* foreign = Param(0, other);
  other->set_root(foreign);
  entry_->set_root(Negate(foreign));
  EXPECT_THAT(Messages(module_), ElementsAre("n1: operand 0 (p0) is in a different computation "
                                             "(other)"));
}

TEST_F(StructureTest, CalledComputationsMustExistButMayBeOpaque) {
  HloInstruction* p = Param(0);
  HloComputation* opaque = module_.AddComputation(std::make_unique<HloComputation>("opaque"));
  opaque->set_opaque(true);
  auto call = std::make_unique<HloInstruction>(HloOpcode::kCall, "call",
                                               Shape::Array(PrimitiveType::kF32, {4}));
  call->AppendOperand(p);
  call->mutable_called().push_back({"to_apply", {opaque}, false});
  HloInstruction* call_ptr = entry_->AddInstruction(std::move(call));
  entry_->set_root(call_ptr);
  EXPECT_THAT(Messages(module_), IsEmpty());
  // A computation that is not part of the module.
  HloComputation stray("stray");
  call_ptr->mutable_called()[0].computations[0] = &stray;
  EXPECT_THAT(Messages(module_),
              ElementsAre("call: to_apply refers to computation stray which is not in the "
                          "module"));
  call_ptr->mutable_called()[0].computations[0] = nullptr;
  EXPECT_THAT(Messages(module_), ::testing::Contains("call: to_apply refers to a missing "
                                                     "computation"));
}

TEST_F(StructureTest, MissingOperandIsReportedWithoutCrashing) {
  HloInstruction* n = Negate(Param(0));
  n->ReplaceOperand(0, nullptr);
  entry_->set_root(n);
  EXPECT_THAT(Messages(module_), ElementsAre("n1: operand 0 is missing"));
}

TEST(VerifierTest, WhileBodyMustPreserveTheLoopState) {
  EXPECT_EQ(OnlyMessage(R"(
HloModule m
cond {
  s = (s32[], f32[4]) parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  s = (s32[], f32[4]) parameter(0)
  ROOT i = s32[] get-tuple-element(s), index=0
}
ENTRY main {
  init = (s32[], f32[4]) parameter(0)
  ROOT w = (s32[], f32[4]) while(init), condition=cond, body=body
}
)"),
            "w: while: body computation body returns s32[] but the loop state is (s32[], "
            "f32[4])");
}

// ---- Shardings ----------------------------------------------------------------------------------

TEST(VerifierTest, ShardingDeviceCountFollowsNumPartitions) {
  const char* text = R"(
HloModule m, num_partitions=4
ENTRY main {
  ROOT a = f32[8] parameter(0), sharding={devices=[2]0,1}
}
)";
  std::unique_ptr<HloModule> module = Parse(text);
  EXPECT_THAT(Messages(*module),
              ElementsAre("a: invalid sharding {devices=[2]0,1}: sharding {devices=[2]0,1} "
                          "assigns 2 devices but the module has 4"));
  VerifierOptions options;
  options.check_sharding_device_count = false;
  EXPECT_THAT(Messages(*module, options), IsEmpty());
  // Without a partition count the device count is not checked.
  ParseOptions no_comment;
  no_comment.honor_num_devices_comment = false;
  absl::StatusOr<ParsedModule> unknown = ParseHloModule(R"(
HloModule m
ENTRY main {
  ROOT a = f32[8] parameter(0), sharding={devices=[2]0,1}
}
)",
                                                        no_comment);
  ASSERT_TRUE(unknown.ok()) << unknown.status().message();
  EXPECT_THAT(Messages(*unknown->module), IsEmpty());
}

TEST(VerifierTest, ShardingRankMustMatchTheShape) {
  EXPECT_THAT(OnlyMessage(R"(
HloModule m
ENTRY main {
  ROOT a = f32[8,2] parameter(0), sharding={devices=[2]0,1}
}
)"),
              HasSubstr("a: invalid sharding {devices=[2]0,1}: sharding {devices=[2]0,1} has "
                        "data rank 1 but the shape f32[8,2] has rank 2"));
}

TEST(VerifierTest, ShardingsOnTokensAreNotValidated) {
  std::unique_ptr<HloModule> module = Parse(R"(
HloModule m, num_partitions=2
ENTRY main {
  data = f32[4] parameter(0)
  token.0 = token[] after-all()
  ROOT outfeed = token[] outfeed(data, token.0), outfeed_shape=f32[4], sharding={devices=[2]0,1}
}
)");
  EXPECT_THAT(Messages(*module), IsEmpty());
}

// ---- Collectives --------------------------------------------------------------------------------

std::string AllReduce(absl::string_view header, absl::string_view attributes,
                      absl::string_view op = "all-reduce") {
  return absl::StrCat("HloModule m", header, R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  p = f32[8] parameter(0)
  ROOT ar = f32[8] )",
                      op, "(p), to_apply=add", attributes.empty() ? "" : ", ", attributes, "\n}\n");
}

TEST(VerifierTest, ReplicaGroupsMustBeDisjointAndCoverAllIds) {
  EXPECT_THAT(OnlyMessage(AllReduce("", "replica_groups={{0,1},{1,2}}")),
              HasSubstr("ar: invalid replica_groups {{0,1},{1,2}} in cross-replica mode: id 1 "
                        "appears in more than one replica group"));
  EXPECT_THAT(OnlyMessage(AllReduce("", "replica_groups={{0,2}}")), HasSubstr("id 1 is missing"));
}

// Under {devices=[2,2]0,2,1,3 last_tile_dims={manual}} (dim 0 tiled, dim 1 manual) the manual
// subgroups, devices differing only in their manual index, are {0,2} and {1,3} (worked out from
// the device array [[0,2],[1,3]]); an all-reduce there may only combine devices of one.
TEST(VerifierTest, ManualSubgroupAllReduceStaysWithinOneSubgroup) {
  const std::string sharding = "sharding={devices=[2,2]0,2,1,3 last_tile_dims={manual}}";
  auto text = [&](absl::string_view groups) {
    return AllReduce(", num_partitions=4",
                     absl::StrCat("channel_id=1, use_global_device_ids=true, replica_groups=",
                                  groups, ", ", sharding));
  };
  auto module = [&](absl::string_view groups) { return Parse(text(groups)); };
  EXPECT_THAT(Messages(*module("{{2,0},{1,3}}")), IsEmpty());
  EXPECT_THAT(OnlyMessage(text("{{1,0},{2,3}}")),
              HasSubstr("ar: all-reduce in a manual subgroup region combines devices of different "
                        "manual subgroups: replica group {1,0}"));
  // The whole device set in one group crosses subgroups too; one device per group never does.
  EXPECT_THAT(Messages(*module("{{0,1,2,3}}")), Not(IsEmpty()));
  EXPECT_THAT(Messages(*module("{{0},{1},{2},{3}}")), IsEmpty());
}

// SPMDFullToShardShape's result is the operand's tile: s32[8] over 4 devices gives s32[2] shards;
// a replicated operand enters whole (s32[8]). The reducer once dropped the `Sharding` call
// before it, leaving a replicated s32[2] "sharded" to s32[1], on which XLA aborts.
TEST(VerifierTest, FullToShardResultIsTheOperandsTile) {
  auto text = [](absl::string_view operand_sharding, absl::string_view result) {
    return absl::StrCat(
        R"(HloModule m, num_partitions=4
ENTRY main {
  p = s32[8] parameter(0), sharding=)",
        operand_sharding, R"(
  ROOT s = )",
        result,
        R"( custom-call(p), custom_call_target="SPMDFullToShardShape", sharding={manual}
}
)");
  };
  EXPECT_THAT(Messages(*Parse(text("{devices=[4]<=[4]}", "s32[2]"))), IsEmpty());
  EXPECT_THAT(Messages(*Parse(text("{replicated}", "s32[8]"))), IsEmpty());
  EXPECT_THAT(OnlyMessage(text("{replicated}", "s32[2]")),
              HasSubstr("s: SPMDFullToShardShape of s32[8] under {replicated} gives shards of "
                        "s32[8], not s32[2]"));
  EXPECT_THAT(OnlyMessage(text("{devices=[4]<=[4]}", "s32[4]")),
              HasSubstr("gives shards of s32[2], not s32[4]"));
}

// SPMDShardToFullShape's operand is each device's shard: it must be manual. The reducer once
// dropped the operand's `sharding={manual}` (campaign seed 103, case 191), and XLA's RET_CHECK
// on that module was taken for the same bug as another RET_CHECK of its file.
TEST(VerifierTest, ShardToFullOperandMustBeManual) {
  auto text = [](absl::string_view operand_sharding) {
    return absl::StrCat(R"(HloModule m, num_partitions=2
ENTRY main {
  p = s32[4] parameter(0))",
                        operand_sharding, R"(
  ROOT f = s32[8] custom-call(p), custom_call_target="SPMDShardToFullShape", sharding={devices=[2]<=[2]}
}
)");
  };
  EXPECT_THAT(Messages(*Parse(text(", sharding={manual}"))), IsEmpty());
  EXPECT_THAT(OnlyMessage(text("")),
              HasSubstr("f: SPMDShardToFullShape of p, which is not manual (no sharding)"));
  EXPECT_THAT(OnlyMessage(text(", sharding={replicated}")),
              HasSubstr("which is not manual ({replicated})"));
  // The operand is the result's tile: s32[4] of s32[8] over 2 devices; an unannotated result is
  // replicated (the second reduction step of the same case dropped the result's sharding).
  const std::string unannotated = absl::StrCat(R"(HloModule m, num_partitions=2
ENTRY main {
  p = s32[4] parameter(0), sharding={manual}
  ROOT f = s32[8] custom-call(p), custom_call_target="SPMDShardToFullShape"
}
)");
  EXPECT_THAT(OnlyMessage(unannotated),
              HasSubstr("f: SPMDShardToFullShape to s32[8] under {replicated} takes shards of "
                        "s32[8], not s32[4]"));
  EXPECT_THAT(Messages(*Parse(R"(HloModule m, num_partitions=4
ENTRY main {
  p = s32[4,3] parameter(0), sharding={manual}
  ROOT f = s32[8,3] custom-call(p), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
}
)")),
              IsEmpty());
}

TEST(VerifierTest, OnlyAllReduceMayHaveGroupsOfDifferentSizes) {
  std::unique_ptr<HloModule> all_reduce = Parse(AllReduce("", "replica_groups={{0,1},{2}}"));
  EXPECT_THAT(Messages(*all_reduce), IsEmpty());
  EXPECT_THAT(OnlyMessage(R"(
HloModule m
ENTRY main {
  p = f32[8] parameter(0)
  ROOT ag = f32[16] all-gather(p), replica_groups={{0,1},{2}}, dimensions={0}
}
)"),
              HasSubstr("replica groups must have equal sizes"));
}

TEST(VerifierTest, GroupModeRules) {
  EXPECT_EQ(OnlyMessage(AllReduce("", "replica_groups={{0,1}}, use_global_device_ids=true")),
            "ar: use_global_device_ids=true requires a channel_id");
  EXPECT_THAT(OnlyMessage(AllReduce("",
                                    "channel_id=1, replica_groups={}, "
                                    "use_global_device_ids=true")),
              HasSubstr("replica_groups must be given in flattened-id mode"));
  // Flattened ids range over replicas x partitions = 2 x 2.
  EXPECT_THAT(OnlyMessage(AllReduce(", replica_count=2, num_partitions=2",
                                    "channel_id=1, replica_groups={{0,1}}, "
                                    "use_global_device_ids=true")),
              HasSubstr("in flattened-id mode: replica groups cover 2 ids but the op has 4 "
                        "participants"));
  std::unique_ptr<HloModule> flat =
      Parse(AllReduce(", replica_count=2, num_partitions=2",
                      "channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true"));
  EXPECT_THAT(Messages(*flat), IsEmpty());
}

TEST(VerifierTest, ParticipantCountsAreCheckedOnlyWhenTheHeaderGivesThem) {
  EXPECT_THAT(OnlyMessage(AllReduce(", replica_count=4", "replica_groups={{0,1}}")),
              HasSubstr("in cross-replica mode: replica groups cover 2 ids but the op has 4 "
                        "participants"));
  std::unique_ptr<HloModule> unknown = Parse(AllReduce("", "replica_groups={{0,1}}"));
  EXPECT_THAT(Messages(*unknown), IsEmpty());
  // A count of 1 skips the check, as XLA treats it as "not configured".
  std::unique_ptr<HloModule> one = Parse(AllReduce(", replica_count=1", "replica_groups={{0,1}}"));
  EXPECT_THAT(Messages(*one), IsEmpty());
  // With a channel and no global ids the ids are replica ids (cross-replica-and-partition).
  std::unique_ptr<HloModule> crp =
      Parse(AllReduce(", num_partitions=8", "channel_id=1, replica_groups={{0}}"));
  EXPECT_THAT(Messages(*crp), IsEmpty());
}

TEST(VerifierTest, AllGatherResultUsesTheParticipantCount) {
  // Two replicas: f32[4] gathers to f32[8], not f32[16].
  EXPECT_EQ(OnlyMessage(R"(
HloModule m, replica_count=2
ENTRY main {
  p = f32[4] parameter(0)
  ROOT ag = f32[16] all-gather(p), replica_groups={}, dimensions={0}
}
)"),
            "ag: shape f32[16] does not match the inferred shape f32[8]");
  // Cross-replica-and-partition: group of 2 replicas x 4 partitions = 8 participants.
  std::unique_ptr<HloModule> crp = Parse(R"(
HloModule m, replica_count=2, num_partitions=4
ENTRY main {
  p = f32[4] parameter(0)
  ROOT ag = f32[32] all-gather(p), channel_id=1, replica_groups={{0,1}}, dimensions={0}
}
)");
  EXPECT_THAT(Messages(*crp), IsEmpty());
}

TEST(VerifierTest, UnknownParticipantCountTakesTheRatioFromTheResult) {
  // No counts in the header: any whole multiple is accepted, as XLA does with unset counts.
  std::unique_ptr<HloModule> multiple = Parse(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  ROOT ag = f32[12] all-gather(p), replica_groups={}, dimensions={0}
}
)");
  EXPECT_THAT(Messages(*multiple), IsEmpty());
  // 10 / 4 rounds up to 3 shards, which gathers 12 elements, not 10.
  EXPECT_EQ(OnlyMessage(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  ROOT ag = f32[10] all-gather(p), replica_groups={}, dimensions={0}
}
)"),
            "ag: shape f32[10] does not match the inferred shape f32[12] (participant count "
            "unknown; shard count 3 taken from the result)");
  EXPECT_THAT(OnlyMessage(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  p = f32[10] parameter(0)
  ROOT rs = f32[4] reduce-scatter(p), replica_groups={}, dimensions={0}, to_apply=add
}
)"),
              HasSubstr("rs: operand 0 dim 0 of size 10 is not divisible by the shard count 3"));
}

TEST(VerifierTest, CollectivePermutePairs) {
  EXPECT_THAT(OnlyMessage(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  ROOT cp = f32[4] collective-permute(p), source_target_pairs={{0,1},{0,2}}
}
)"),
              HasSubstr("cp: invalid source_target_pairs {{0,1},{0,2}}: source 0 appears more "
                        "than once"));
  // With a channel the ids are partition ids, limited by num_partitions.
  EXPECT_THAT(OnlyMessage(R"(
HloModule m, num_partitions=2
ENTRY main {
  p = f32[4] parameter(0)
  ROOT cp = f32[4] collective-permute(p), channel_id=1, source_target_pairs={{0,1},{1,2}}
}
)"),
              HasSubstr("id 2 in source_target_pairs is out of range [0, 2)"));
  // Without a channel they are replica ids: replica_count=1 leaves them unchecked.
  std::unique_ptr<HloModule> replicas = Parse(R"(
HloModule m, num_partitions=2
ENTRY main {
  p = f32[4] parameter(0)
  ROOT cp = f32[4] collective-permute(p), source_target_pairs={{0,1},{1,2}}
}
)");
  EXPECT_THAT(Messages(*replicas), IsEmpty());
}

TEST(VerifierTest, AsyncCollectivePairs) {
  std::unique_ptr<HloModule> module = Parse(R"(
HloModule m
ENTRY main {
  p = u32[2] parameter(0)
  start = (u32[2], u32[2]) collective-permute-start(p), source_target_pairs={{0,1},{1,0}}
  done = u32[2] collective-permute-done(start)
  q = u32[1,2] parameter(1)
  ags = (u32[1,2], u32[2,2]) all-gather-start(q), replica_groups={{0,1}}, dimensions={0}
  agd = u32[2,2] all-gather-done(ags)
  ROOT t = (u32[2], u32[2,2]) tuple(done, agd)
}
)");
  EXPECT_THAT(Messages(*module), IsEmpty());
}

// ---- Robustness ---------------------------------------------------------------------------------

// A module touching many opcodes; the property below breaks it at random.
constexpr char kManyOps[] = R"(
HloModule m, replica_count=2, num_partitions=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
cond {
  s = (s32[], f32[8]) parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  ROOT s = (s32[], f32[8]) parameter(0)
}
ENTRY main {
  p = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  q = f32[4,6] parameter(1)
  idx = s32[3,1] parameter(2)
  dot = f32[8,6] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[6,8] transpose(dot), dimensions={1,0}
  sl = f32[3,8] slice(t), slice={[0:6:2], [0:8]}
  g = f32[3,4] gather(p, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  z = f32[] constant(0)
  pad = f32[10,4] pad(p, z), padding=1_1x0_0
  red = f32[10] reduce(pad, z), dimensions={1}, to_apply=add
  bc = f32[10,3] broadcast(red), dimensions={0}
  cc = f32[10,7] concatenate(bc, g2), dimensions={1}
  g2 = f32[10,4] dynamic-slice(pad, i0, i0), dynamic_slice_sizes={10,4}
  i0 = s32[] constant(0)
  ar = f32[10,7] all-reduce(cc), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true, to_apply=add
  ag = f32[40,7] all-gather(ar), channel_id=2, replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true, dimensions={0}
  rs = f32[10,7] reduce-scatter(ag), channel_id=3, replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true, dimensions={0}, to_apply=add
  cp = f32[10,7] collective-permute(rs), channel_id=4, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  a2a = f32[10,8] all-to-all(f32[10,8] pad2), channel_id=5, replica_groups={{0,1,2,3}}, dimensions={1}
  pad2 = f32[10,8] pad(cp, z), padding=0_0x0_1
  init = (s32[], f32[8]) tuple(i0, sl2)
  sl2 = f32[8] slice(red), slice={[0:8]}
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  ROOT out = (f32[10,8], (s32[], f32[8])) tuple(a2a, w)
}
)";

RC_GTEST_PROP(VerifierRobustnessTest, RandomlyBrokenModulesNeverCrash, ()) {
  std::unique_ptr<HloModule> module = Parse(kManyOps);
  RC_ASSERT(Messages(*module).empty());
  HloComputation* entry = module->entry();
  const auto& instructions = entry->instructions();
  const int mutations = *rc::gen::inRange(1, 4);
  for (int m = 0; m < mutations; ++m) {
    HloInstruction* target = instructions[*rc::gen::inRange<size_t>(0, instructions.size())].get();
    HloAttributes& attrs = target->mutable_attrs();
    const auto value = rc::gen::inRange<int64_t>(-3, 12);
    const auto list = rc::gen::container<std::vector<int64_t>>(rc::gen::inRange<int64_t>(-2, 9));
    switch (*rc::gen::inRange(0, 12)) {
      case 0:
        if (target->operand_count() > 0) {
          target->ReplaceOperand(
              *rc::gen::inRange<int64_t>(0, target->operand_count()),
              instructions[*rc::gen::inRange<size_t>(0, instructions.size())].get());
        }
        break;
      case 1:
        target->AppendOperand(
            instructions[*rc::gen::inRange<size_t>(0, instructions.size())].get());
        break;
      case 2:
        attrs.dimensions = *list;
        break;
      case 3: {
        std::vector<int64_t> dims = *list;
        for (int64_t& d : dims) d = std::abs(d);
        target->set_shape(Shape::Array(PrimitiveType::kF32, dims));
        break;
      }
      case 4:
        attrs.replica_groups = ReplicaGroups(std::vector<std::vector<int64_t>>{*list, *list});
        break;
      case 5:
        attrs.channel_id = *value;
        attrs.use_global_device_ids = *rc::gen::arbitrary<bool>();
        break;
      case 6:
        attrs.slice = std::vector<SliceDim>{{*value, *value, *value}};
        attrs.padding = std::vector<PadDim>{{*value, *value, *value}, {*value, *value, *value}};
        break;
      case 7:
        attrs.dot_dimension_numbers = DotDimensionNumbers{*list, *list, *list, *list};
        attrs.dynamic_slice_sizes = *list;
        break;
      case 8:
        target->set_parameter_number(*value);
        attrs.tuple_index = *value;
        break;
      case 9:
        attrs.source_target_pairs = SourceTargetPairs{{*value, *value}, {*value, *value}};
        break;
      case 10:
        target->set_shape(Shape());
        break;
      default:
        if (*rc::gen::arbitrary<bool>()) {
          entry->set_root(nullptr);
        } else {
          target->mutable_called().clear();
        }
        break;
    }
  }
  // Any outcome is fine as long as the verifier returns.
  (void)VerifyModuleDiagnostics(*module);
}

// ---- Formatting ---------------------------------------------------------------------------------

TEST(VerifierTest, VerifyModuleFormatsPathLineAndColumn) {
  std::unique_ptr<HloModule> module = Parse(R"(HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  ROOT n = f32[4] negate(a)
})");
  absl::Status status = VerifyModule(*module);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "test.hlo:4:3: error: n: shape f32[4] does not match the inferred shape f32[8]");
}

TEST(VerifierTest, VerifyModuleListsEveryDiagnosticOnItsOwnLine) {
  std::unique_ptr<HloModule> module = Parse(R"(HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  n = f32[4] negate(a)
  m = f32[2] negate(a)
  ROOT r = s32[] replica-id()
})");
  absl::Status status = VerifyModule(*module);
  EXPECT_EQ(status.message(),
            "test.hlo:4:3: error: n: shape f32[4] does not match the inferred shape f32[8]\n"
            "test.hlo:5:3: error: m: shape f32[2] does not match the inferred shape f32[8]");
}

TEST(VerifierTest, NonU32IdOpsAreWarningsNotErrors) {
  std::unique_ptr<HloModule> module = Parse(R"(HloModule m
ENTRY main {
  ROOT r = s32[] partition-id()
})");
  EXPECT_TRUE(VerifyModule(*module).ok());
  std::vector<VerifierDiagnostic> diagnostics = VerifyModuleDiagnostics(*module);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_TRUE(diagnostics[0].is_warning);
  EXPECT_EQ(FormatDiagnostic(*module, diagnostics[0]),
            "test.hlo:3:3: warning: r: shape s32[] does not match the inferred shape u32[]; "
            "XLA's verifier rejects this, running it is unsupported");
}

// ---- Conformance corpus -------------------------------------------------------------------------

// Corpus modules that break a rule XLA's verifier enforces on id ops (their tests do not verify
// them): reported as warnings, and the modules still verify.
const std::set<std::string>& ModulesWithWarnings() {
  static const auto* const kModules = new std::set<std::string>{
      // `s32[] partition-id()`: partition-id must be u32[] (hlo_verifier.cc HandlePartitionId).
      "xla-spmd-2022/ManualPartitionId.hlo",
      "xla-spmd-2023/ManualPartitionId.hlo",
      // `(u32[], u32[]) replica-id()`.
      "xla-collectives-2023/collective_permute_decomposer.WithCycleNotTransformed.hlo",
  };
  return *kModules;
}

// Corpus modules that are not valid HLO at all (their XLA test only checks that a pass leaves
// them alone, on an unverified module): `u32[] collective-permute-start(...)` where the op
// returns a tuple, and a `-done` whose operand is not one.
// Modules of XLA's tests that XLA itself rejects (their tests expect the error), with the reason
// our verifier must give.
const std::map<std::string, std::string>& InvalidModules() {
  static const auto* const kModules = new std::map<std::string, std::string>{
      {"xla-collectives-2023/collective_permute_decomposer.WithCycleNotTransformed.hlo",
       "start: shape u32[] is not a tuple but the inferred shape "
       "((u32[], u32[]), (u32[], u32[]), u32[], u32[]) is a tuple"},
      {"xla-spmd-2022/SubgroupIllegalManualAllReduce.hlo",
       "combines devices of different manual subgroups: replica group {1,0}"},
      {"xla-spmd-2023/SubgroupIllegalManualAllReduce.hlo",
       "combines devices of different manual subgroups: replica group {1,0}"},
  };
  return *kModules;
}

TEST(VerifierConformanceTest, CorpusModulesVerify) {
  namespace fs = std::filesystem;
  SPMDCHECK_SKIP_WITHOUT_SHARED("conformance");
  const fs::path root = test_support::SharedPath("conformance");
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.path().extension() == ".hlo") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  int verified = 0;
  int rejected = 0;
  for (const fs::path& path : files) {
    ParseOptions options;
    options.path = path.string();
    absl::StatusOr<ParsedModule> parsed =
        ParseHloModule(test_support::ReadFileOrFail(path), options);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    const std::string key = fs::relative(path, root).generic_string();
    absl::Status status = VerifyModule(*parsed->module);
    if (auto invalid = InvalidModules().find(key); invalid != InvalidModules().end()) {
      EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr(invalid->second)) << key;
    } else {
      EXPECT_TRUE(status.ok()) << status.message();
      if (status.ok()) ++verified;
    }
    int warnings = 0;
    for (const VerifierDiagnostic& d : VerifyModuleDiagnostics(*parsed->module)) {
      warnings += d.is_warning ? 1 : 0;
    }
    if (ModulesWithWarnings().contains(key)) {
      EXPECT_GT(warnings, 0) << key << " was expected to carry a warning";
      ++rejected;
    } else {
      EXPECT_EQ(warnings, 0) << key;
    }
  }
  EXPECT_EQ(rejected, static_cast<int>(ModulesWithWarnings().size()));
  EXPECT_GT(verified, 500);
}

}  // namespace
}  // namespace spmdcheck
