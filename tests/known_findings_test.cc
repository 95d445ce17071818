// Known XLA findings (corpus/xla-findings/known.json): plain and guarded signatures.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz/findings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "tests/shared_dir.h"

namespace spmdcheck::fuzz {
namespace {

using ::testing::HasSubstr;

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("spmdcheck_known_" + name + "_" +
       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".json");
  std::ofstream(path) << text;
  return path.string();
}

constexpr char kKnown[] = R"({"findings": [
  {"name": "plain-dus", "signatures": ["shardy.miscompile.dynamic-update-slice"]},
  {"name": "group-and-manual",
   "signatures": ["shardy.xla-rejects-valid.custom_call_handler"],
   "guarded_signatures": [
     {"signature": "shardy.miscompile.custom-call",
      "module_has": ["custom-call:xla.sdy.ShardingGroup", "custom-call:SPMDShardToFullShape"]}]}
]})";

std::unique_ptr<HloModule> Parse(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? std::move(parsed->module) : nullptr;
}

// A Shardy export's shape: a sharding group and a manual computation's result.
constexpr char kGroupAndManual[] = R"(HloModule m, num_partitions=2
ENTRY e {
  p = f32[4] parameter(0), sharding={devices=[2]<=[2]}
  g = () custom-call(p), custom_call_target="xla.sdy.ShardingGroup", custom_call_has_side_effect=true
  s = f32[2] custom-call(p), custom_call_target="SPMDFullToShardShape", sharding={manual}
  ROOT f = f32[4] custom-call(s), custom_call_target="SPMDShardToFullShape", sharding={devices=[2]<=[2]}
})";

// The same without the sharding group.
constexpr char kManualOnly[] = R"(HloModule m, num_partitions=2
ENTRY e {
  p = f32[4] parameter(0), sharding={devices=[2]<=[2]}
  s = f32[2] custom-call(p), custom_call_target="SPMDFullToShardShape", sharding={manual}
  ROOT f = f32[4] custom-call(s), custom_call_target="SPMDShardToFullShape", sharding={devices=[2]<=[2]}
})";

TEST(KnownFindings, APlainSignatureMatchesWithOrWithoutTheModule) {
  absl::StatusOr<std::vector<KnownFinding>> known = LoadKnownFindings(WriteTemp("plain", kKnown));
  ASSERT_TRUE(known.ok()) << known.status();
  const KnownFinding* k = FindKnown(*known, "shardy.miscompile.dynamic-update-slice");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->name, "plain-dus");
  EXPECT_EQ(FindKnown(*known, "xla.miscompile.dynamic-update-slice"), nullptr);
}

TEST(KnownFindings, AGuardedSignatureMatchesOnlyWhenTheModuleHoldsEveryListedOp) {
  absl::StatusOr<std::vector<KnownFinding>> known = LoadKnownFindings(WriteTemp("guarded", kKnown));
  ASSERT_TRUE(known.ok()) << known.status();
  const std::unique_ptr<HloModule> both = Parse(kGroupAndManual);
  const std::unique_ptr<HloModule> manual_only = Parse(kManualOnly);
  ASSERT_NE(both, nullptr);
  ASSERT_NE(manual_only, nullptr);
  const std::string signature = "shardy.miscompile.custom-call";
  const KnownFinding* k = FindKnown(*known, signature, both.get());
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->name, "group-and-manual");
  EXPECT_EQ(FindKnown(*known, signature, manual_only.get()), nullptr);
  EXPECT_EQ(FindKnown(*known, signature), nullptr);  // No module: no guard holds.
  EXPECT_EQ(FindKnown(*known, "xla.miscompile.custom-call", both.get()), nullptr);
}

TEST(KnownFindings, AGuardWithoutOpsIsRejected) {
  absl::StatusOr<std::vector<KnownFinding>> known = LoadKnownFindings(WriteTemp("bad", R"({
    "findings": [{"name": "x", "signatures": [],
                  "guarded_signatures": [{"signature": "a.b.c", "module_has": []}]}]})"));
  ASSERT_FALSE(known.ok());
  EXPECT_THAT(known.status().message(), HasSubstr("non-empty \"module_has\""));
}

constexpr char kU32Start[] = R"({"findings": [
  {"name": "u32-start", "signatures": [],
   "guarded_signatures": [{"signature": "xla.oracle-disagrees.*",
                           "module_has": ["trigger:unsigned-slice-start-over-int32-max"]}]}]})";

std::string SliceModule(const std::string& start_type, const std::string& start) {
  return "HloModule m, num_partitions=2\nENTRY e {\n  p = f32[5] parameter(0)\n  c = " +
         start_type + "[] constant(" + start +
         ")\n  d = f32[2] dynamic-slice(p, c), dynamic_slice_sizes={2}\n"
         "  ROOT t = (f32[2]) tuple(d)\n}\n";
}

TEST(KnownFindings, ATriggerNamesAPropertyOfOneInstructionAndAWildcardAnyOp) {
  absl::StatusOr<std::vector<KnownFinding>> known = LoadKnownFindings(WriteTemp("u32", kU32Start));
  ASSERT_TRUE(known.ok()) << known.status();
  const std::unique_ptr<HloModule> over = Parse(SliceModule("u32", "4294967294"));
  const std::unique_ptr<HloModule> at_max = Parse(SliceModule("u32", "2147483647"));
  const std::unique_ptr<HloModule> signed_start = Parse(SliceModule("s64", "4294967294"));
  ASSERT_NE(over, nullptr);
  ASSERT_NE(at_max, nullptr);
  ASSERT_NE(signed_start, nullptr);
  for (const std::string op : {"tuple", "dynamic-slice", "maximum"}) {
    const KnownFinding* k = FindKnown(*known, "xla.oracle-disagrees." + op, over.get());
    ASSERT_NE(k, nullptr) << op;
    EXPECT_EQ(k->name, "u32-start");
  }
  EXPECT_EQ(FindKnown(*known, "xla.oracle-disagrees.tuple", at_max.get()), nullptr);
  EXPECT_EQ(FindKnown(*known, "xla.oracle-disagrees.tuple", signed_start.get()), nullptr);
  EXPECT_EQ(FindKnown(*known, "shardy.oracle-disagrees.tuple", over.get()), nullptr);
  EXPECT_EQ(FindKnown(*known, "xla.miscompile.tuple", over.get()), nullptr);
}

std::string AfterShardToFull(const std::string& op) {
  return "HloModule m, num_partitions=2\nENTRY e {\n"
         "  p = f32[4] parameter(0), sharding={devices=[2]<=[2]}\n"
         "  s = f32[2] custom-call(p), custom_call_target=\"SPMDFullToShardShape\", "
         "sharding={manual}\n"
         "  f = f32[4] custom-call(s), custom_call_target=\"SPMDShardToFullShape\", "
         "sharding={devices=[2]<=[2]}\n"
         "  ROOT t = f32[4] " +
         op + "\n}\n";
}

TEST(KnownFindings, TheNoOpTriggerWantsAShardedNoOpReadingAShardToFull) {
  absl::StatusOr<std::vector<KnownFinding>> known = LoadKnownFindings(WriteTemp("noop", R"({
    "findings": [{"name": "noop", "signatures": [],
                  "guarded_signatures": [{"signature": "xla.round-trip-changes-meaning.*",
                    "module_has": ["trigger:sharded-no-op-after-shard-to-full"]}]}]})"));
  ASSERT_TRUE(known.ok()) << known.status();
  const std::string signature = "xla.round-trip-changes-meaning.transpose";
  for (const std::string op :
       {"transpose(f), dimensions={0}, sharding={devices=[2]1,0}",
        "reshape(f), sharding={replicated}", "convert(f), sharding={replicated}"}) {
    const std::unique_ptr<HloModule> m = Parse(AfterShardToFull(op));
    ASSERT_NE(m, nullptr) << op;
    EXPECT_NE(FindKnown(*known, signature, m.get()), nullptr) << op;
  }
  // Not a no-op; a no-op without a sharding of its own.
  for (const std::string op :
       {"negate(f), sharding={replicated}", "transpose(f), dimensions={0}"}) {
    const std::unique_ptr<HloModule> m = Parse(AfterShardToFull(op));
    ASSERT_NE(m, nullptr) << op;
    EXPECT_EQ(FindKnown(*known, signature, m.get()), nullptr) << op;
  }
}

TEST(KnownFindings, AnUnknownTriggerIsRejected) {
  absl::StatusOr<std::vector<KnownFinding>> known = LoadKnownFindings(WriteTemp("trigger", R"({
    "findings": [{"name": "x", "signatures": [],
                  "guarded_signatures": [{"signature": "a.b.c", "module_has": ["trigger:nope"]}]}]})"));
  ASSERT_FALSE(known.ok());
  EXPECT_THAT(known.status().message(), HasSubstr("unknown trigger 'nope'"));
}

// The project's own file loads, and what 10-minute campaigns found is counted as known: the Shardy
// miscompile of seed 105 (a sharding group with a manual computation's open out sharding) and the
// oracle disagreements of seeds 103-106 (a constant u32 slice start above INT32_MAX).
TEST(KnownFindings, TheProjectsKnownFileNamesTheShardingGroupMiscompile) {
  const std::string path = test_support::SourcePath("corpus/xla-findings/known.json");
  absl::StatusOr<std::vector<KnownFinding>> known = LoadKnownFindings(path);
  ASSERT_TRUE(known.ok()) << known.status();
  const std::unique_ptr<HloModule> both = Parse(kGroupAndManual);
  ASSERT_NE(both, nullptr);
  const KnownFinding* k = FindKnown(*known, "shardy.miscompile.custom-call", both.get());
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->name, "shardy-sharding-group-manual-out-sharding");
  const std::unique_ptr<HloModule> u32_start = Parse(SliceModule("u32", "4294967295"));
  ASSERT_NE(u32_start, nullptr);
  k = FindKnown(*known, "shardy.oracle-disagrees.maximum", u32_start.get());
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->name, "constant-u32-slice-start-read-signed");
}

}  // namespace
}  // namespace spmdcheck::fuzz
