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

// The project's own file loads, and the Shardy miscompile a 10-minute campaign found (seed 105,
// a sharding group with a manual computation's open out sharding) is counted as the known one.
TEST(KnownFindings, TheProjectsKnownFileNamesTheShardingGroupMiscompile) {
  const std::string path = test_support::SourcePath("corpus/xla-findings/known.json");
  absl::StatusOr<std::vector<KnownFinding>> known = LoadKnownFindings(path);
  ASSERT_TRUE(known.ok()) << known.status();
  const std::unique_ptr<HloModule> both = Parse(kGroupAndManual);
  ASSERT_NE(both, nullptr);
  const KnownFinding* k = FindKnown(*known, "shardy.miscompile.custom-call", both.get());
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->name, "shardy-sharding-group-manual-out-sharding");
}

}  // namespace
}  // namespace spmdcheck::fuzz
