// `prove instructions`: the seed case's partitioned module passes; hand-mutated copies with wrong
// groups, wrong pairs, a wrong dimension or a missing annotation do not.
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "smt/instruction_checks.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::smt {
namespace {

constexpr char kSeed[] = "cases/seed-scatter/gspmd.hlo";

// The seed case's partitioned module; tests reading it start with SPMDCHECK_SKIP_WITHOUT_SHARED.
std::string ReadSeed() { return test_support::ReadFileOrFail(test_support::SharedPath(kSeed)); }

std::vector<InstructionCheck> Check(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return {};
  InstructionCheckOptions options;
  options.source_text = text;
  absl::StatusOr<std::vector<InstructionCheck>> checks =
      CheckCollectiveInstructions(*parsed->module, options);
  EXPECT_TRUE(checks.ok()) << checks.status();
  return checks.ok() ? *checks : std::vector<InstructionCheck>{};
}

const InstructionCheck* Find(const std::vector<InstructionCheck>& checks, const std::string& name) {
  for (const InstructionCheck& c : checks) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// Replaces exactly one occurrence.
std::string Mutate(const std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from;
  if (at == std::string::npos) return text;
  std::string out = text;
  out.replace(at, from.size(), to);
  return out;
}

TEST(SmtInstructions, SeedGspmdPasses) {
  SPMDCHECK_SKIP_WITHOUT_SHARED(kSeed);
  const std::string text = ReadSeed();
  ASSERT_FALSE(text.empty());
  std::vector<InstructionCheck> checks = Check(text);
  ASSERT_EQ(checks.size(), 4u);
  for (const InstructionCheck& c : checks) {
    EXPECT_EQ(c.result.verdict, Verdict::kHolds) << c.name << ": " << FormatProofResult(c.result);
  }
  EXPECT_EQ(checks[0].name, "collective-permute.10");
  EXPECT_EQ(checks[1].name, "all-reduce.134");
  EXPECT_EQ(checks[2].name, "collective-permute.11");
  EXPECT_EQ(checks[3].name, "all-gather.142");
  EXPECT_GT(checks[3].line, 0);
}

TEST(SmtInstructions, WrongAllGatherGroupOrderIsRefuted) {
  SPMDCHECK_SKIP_WITHOUT_SHARED(kSeed);
  // Swap two members of the first stride-4 group.
  std::vector<InstructionCheck> checks =
      Check(Mutate(ReadSeed(), "{{0,4,8,12,16,20,24,28}", "{{0,8,4,12,16,20,24,28}"));
  const InstructionCheck* c = Find(checks, "all-gather.142");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->result.verdict, Verdict::kFails);
  EXPECT_THAT(c->result.counterexample, ::testing::HasSubstr("groups: device"));
}

TEST(SmtInstructions, WrongAllReduceGroupsAreRefuted) {
  SPMDCHECK_SKIP_WITHOUT_SHARED(kSeed);
  std::vector<InstructionCheck> checks = Check(Mutate(
      ReadSeed(), "replica_groups={{0,1,2,3},{4,5,6,7},", "replica_groups={{0,1,2,4},{3,5,6,7},"));
  const InstructionCheck* c = Find(checks, "all-reduce.134");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->result.verdict, Verdict::kFails) << FormatProofResult(c->result);
}

TEST(SmtInstructions, AllReduceGroupsInAnotherOrderStillPass) {
  SPMDCHECK_SKIP_WITHOUT_SHARED(kSeed);
  // The order of the members of an all-reduce group does not change a sum.
  std::vector<InstructionCheck> checks = Check(Mutate(
      ReadSeed(), "replica_groups={{0,1,2,3},{4,5,6,7},", "replica_groups={{3,2,1,0},{4,5,6,7},"));
  const InstructionCheck* c = Find(checks, "all-reduce.134");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->result.verdict, Verdict::kHolds) << FormatProofResult(c->result);
}

TEST(SmtInstructions, WrongPermutePairsAreRefuted) {
  SPMDCHECK_SKIP_WITHOUT_SHARED(kSeed);
  // Exchange the targets of two pairs of collective-permute.10.
  std::vector<InstructionCheck> checks = Check(
      Mutate(ReadSeed(), "{1,4},{2,32},{3,36},{4,8},{5,12}", "{1,12},{2,32},{3,36},{4,8},{5,4}"));
  const InstructionCheck* c = Find(checks, "collective-permute.10");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->result.verdict, Verdict::kFails);
  EXPECT_THAT(c->result.counterexample, ::testing::HasSubstr("pairs send from device"));
  // The other collectives are unaffected.
  EXPECT_EQ(Find(checks, "all-gather.142")->result.verdict, Verdict::kHolds);
}

TEST(SmtInstructions, WrongDimensionIsRefuted) {
  SPMDCHECK_SKIP_WITHOUT_SHARED(kSeed);
  // Gather along dim 1 while the shardings change tile dim 2.
  std::string text = Mutate(ReadSeed(), "dimensions={2}, use_global_device_ids=true",
                            "dimensions={1}, use_global_device_ids=true");
  std::vector<InstructionCheck> checks = Check(text);
  const InstructionCheck* c = Find(checks, "all-gather.142");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->result.verdict, Verdict::kFails);
  EXPECT_THAT(c->result.counterexample, ::testing::HasSubstr("dimension"));
}

TEST(SmtInstructions, MissingAnnotationIsUnknown) {
  SPMDCHECK_SKIP_WITHOUT_SHARED(kSeed);
  std::string text = Mutate(ReadSeed(),
                            "// holds=transpose.9599 sharding={devices=[2,1,1,1,32]<=[64] "
                            "last_tile_dim_replicate}",
                            "");
  std::vector<InstructionCheck> checks = Check(text);
  const InstructionCheck* c = Find(checks, "all-gather.142");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->result.verdict, Verdict::kUnknown);
  EXPECT_THAT(c->result.reason, ::testing::HasSubstr("no sharding annotation"));
}

TEST(SmtInstructions, AnnotationComesFromAttributeOrComment) {
  SPMDCHECK_SKIP_WITHOUT_SHARED(kSeed);
  const std::string text = ReadSeed();
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  ASSERT_TRUE(parsed.ok());
  const HloComputation* entry = parsed->module->entry();
  std::optional<HloSharding> a = AnnotatedSharding(*entry->FindInstruction("copy.427"), text);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->ToString(false), "{devices=[1,4,2,8,1]<=[2,4,8]T(1,0,2)}");
  std::optional<HloSharding> b = AnnotatedSharding(*entry->FindInstruction("all-gather.142"), text);
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->ReplicateOnLastTileDim());
  EXPECT_FALSE(AnnotatedSharding(*entry->FindInstruction("copy.426"), text).has_value());
}

// A small module with the other collectives (4 partitions).
constexpr char kMisc[] = R"(HloModule misc, num_partitions=4

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  p = f32[2,8] parameter(0), sharding={devices=[4,1]<=[4]}
  q = f32[8,8] parameter(1), sharding={replicated}
  rs = f32[2,8] reduce-scatter(q), channel_id=2, replica_groups={{0,1,2,3}}, use_global_device_ids=true, dimensions={0}, to_apply=add, sharding={devices=[4,1]<=[4]}
  r = f32[2,8] parameter(2), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  cb = f32[2,8] collective-broadcast(r), channel_id=4, replica_groups={{0,1},{2,3}}, sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  ag = f32[8,8] all-gather(p), channel_id=6, replica_groups={{0,1,2,3}}, use_global_device_ids=true, dimensions={0}, sharding={replicated}
  ag2 = f32[4,8] all-gather(p), channel_id=7, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, dimensions={0}, sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  ROOT t = (f32[2,8], f32[2,8]) tuple(rs, cb)
}
)";

TEST(SmtInstructions, OtherCollectivesPass) {
  std::vector<InstructionCheck> checks = Check(kMisc);
  ASSERT_EQ(checks.size(), 4u);
  for (const InstructionCheck& c : checks) {
    EXPECT_EQ(c.result.verdict, Verdict::kHolds) << c.name << ": " << FormatProofResult(c.result);
  }
}

TEST(SmtInstructions, WrongReduceScatterOrderIsRefuted) {
  std::vector<InstructionCheck> checks =
      Check(Mutate(kMisc,
                   "replica_groups={{0,1,2,3}}, use_global_device_ids=true, dimensions={0}, "
                   "to_apply",
                   "replica_groups={{0,2,1,3}}, use_global_device_ids=true, dimensions={0}, "
                   "to_apply"));
  const InstructionCheck* c = Find(checks, "rs");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->result.verdict, Verdict::kFails);
}

TEST(SmtInstructions, WrongBroadcastSourceIsRefuted) {
  std::vector<InstructionCheck> checks = Check(Mutate(
      kMisc, "replica_groups={{0,1},{2,3}}, sharding", "replica_groups={{0,2},{1,3}}, sharding"));
  const InstructionCheck* c = Find(checks, "cb");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->result.verdict, Verdict::kFails);
  EXPECT_THAT(c->result.counterexample, ::testing::HasSubstr("first member"));
}

TEST(SmtInstructions, PartialAllGatherWithWrongGroupsIsRefuted) {
  std::vector<InstructionCheck> checks =
      Check(Mutate(kMisc, "replica_groups={{0,1},{2,3}}, use_global",
                   "replica_groups={{0,2},{1,3}}, use_global"));
  const InstructionCheck* c = Find(checks, "ag2");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->result.verdict, Verdict::kFails) << FormatProofResult(c->result);
}

}  // namespace
}  // namespace spmdcheck::smt
