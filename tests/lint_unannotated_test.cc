// The lint on modules without a single sharding annotation (issue 26): consecutive permutes,
// an all-gather whose own part is sliced back and an all-reduce followed by a slice are found
// from the collectives' own semantics, proved for whatever each device holds; near misses (a
// slice of another device's part, groups that do not match the offsets) are not. Each proposal
// is also run on simulated devices against the original, independently of the Z3 proof.
// Properties over ring sizes and offsets: tests/lint_unannotated_property_test.cc.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "lint/lint.h"
#include "oracle/engine.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::lint {
namespace {

namespace fs = std::filesystem;
using test_support::ReadFileOrFail;
using ::testing::HasSubstr;

std::string CorpusPath(const std::string& file) {
  return test_support::SourceDir() + "/corpus/lint/unannotated/" + file;
}

struct Linted {
  std::unique_ptr<HloModule> module;
  LintReport report;
};

Linted LintText(const std::string& text) {
  Linted out;
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return out;
  out.module = std::move(parsed->module);
  LintOptions options;
  options.timeout_ms = 10000;
  absl::StatusOr<LintReport> report = LintModule(*out.module, text, options);
  EXPECT_TRUE(report.ok()) << report.status();
  if (report.ok()) out.report = *std::move(report);
  return out;
}

int64_t CountOp(const HloModule& module, HloOpcode op) {
  int64_t n = 0;
  for (const auto& h : module.entry()->instructions()) n += h->opcode() == op ? 1 : 0;
  return n;
}

// Runs a one-parameter module on every device, device d holding the values 1000*d + i (no two
// devices share a value), and returns each device's result.
std::vector<Literal> RunPerDevice(const HloModule& module) {
  const int64_t n = module.num_partitions();
  const HloInstruction* parameter = nullptr;
  for (const auto& h : module.entry()->instructions()) {
    if (h->opcode() == HloOpcode::kParameter) parameter = h.get();
  }
  EXPECT_NE(parameter, nullptr);
  if (parameter == nullptr) return {};
  std::vector<std::vector<Literal>> args(static_cast<size_t>(n));
  for (int64_t d = 0; d < n; ++d) {
    Literal value(parameter->shape());
    for (int64_t i = 0; i < value.element_count(); ++i) {
      value.SetDouble(i, static_cast<double>(1000 * d + i));
    }
    args[static_cast<size_t>(d)].push_back(std::move(value));
  }
  oracle::EngineOptions options;
  options.num_partitions = n;
  oracle::Engine engine(module, options);
  absl::StatusOr<std::vector<Literal>> results = engine.Run(std::move(args));
  EXPECT_TRUE(results.ok()) << results.status();
  return results.ok() ? *std::move(results) : std::vector<Literal>{};
}

// The one proved finding of `file`, its proposed module parsed, and the proposal run against the
// original on simulated devices.
struct Proposal {
  Finding finding;
  std::unique_ptr<HloModule> proposed;
};

Proposal ProvedProposal(const std::string& file, const std::string& rule) {
  Proposal out;
  Linted linted = LintText(ReadFileOrFail(CorpusPath(file)));
  EXPECT_EQ(linted.report.proved(), 1) << file << "\n" << FormatText(linted.report);
  for (const Finding& f : linted.report.findings) {
    if (f.status == FindingStatus::kProved) out.finding = f;
  }
  EXPECT_EQ(out.finding.rule, rule) << file;
  EXPECT_EQ(out.finding.proof, "proved") << file;
  absl::StatusOr<ParsedModule> proposed = ParseHloModule(out.finding.proposed_hlo);
  EXPECT_TRUE(proposed.ok()) << file << ": " << proposed.status() << "\n"
                             << out.finding.proposed_hlo;
  if (proposed.ok()) out.proposed = std::move(proposed->module);
  // The proposal's module must not invent a sharding for the unannotated source.
  EXPECT_THAT(out.finding.proposed_hlo, ::testing::Not(HasSubstr("sharding=")));
  return out;
}

void ExpectSameOnEveryDevice(const HloModule& original, const HloModule& proposed) {
  const std::vector<Literal> a = RunPerDevice(original);
  const std::vector<Literal> b = RunPerDevice(proposed);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t d = 0; d < a.size(); ++d) {
    EXPECT_TRUE(a[d] == b[d]) << "device " << d << ": " << a[d].ToString() << " vs "
                              << b[d].ToString();
  }
}

std::unique_ptr<HloModule> ParseFile(const std::string& file) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(ReadFileOrFail(CorpusPath(file)));
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? std::move(parsed->module) : nullptr;
}

TEST(LintUnannotatedTest, TheCorpusModulesCarryNoShardingAtAll) {
  for (const auto& entry : fs::recursive_directory_iterator(CorpusPath(""))) {
    if (entry.path().extension() != ".hlo") continue;
    EXPECT_THAT(ReadFileOrFail(entry.path().string()), ::testing::Not(HasSubstr("sharding=")))
        << entry.path();
  }
}

TEST(LintUnannotatedTest, TwoPermutesComposeIntoTheShiftByThree) {
  Proposal p = ProvedProposal("01_two_permutes.hlo", "consecutive-permutes");
  ASSERT_NE(p.proposed, nullptr);
  EXPECT_EQ(p.finding.catalog_rule, "cp-cp-compose");
  EXPECT_EQ(p.finding.current.flat.collective_permutes, 2);
  EXPECT_EQ(p.finding.proposed.flat.collective_permutes, 1);
  ASSERT_EQ(CountOp(*p.proposed, HloOpcode::kCollectivePermute), 1);
  for (const auto& h : p.proposed->entry()->instructions()) {
    if (h->opcode() != HloOpcode::kCollectivePermute) continue;
    ASSERT_TRUE(h->attrs().source_target_pairs.has_value());
    std::vector<std::string> pairs;
    for (const auto& [s, t] : *h->attrs().source_target_pairs) pairs.push_back(absl::StrCat(s, t));
    // +1 then +2 around 8 devices: d -> d+3.
    EXPECT_EQ(absl::StrJoin(pairs, " "), "03 14 25 36 47 50 61 72");
  }
  ExpectSameOnEveryDevice(*ParseFile("01_two_permutes.hlo"), *p.proposed);
}

TEST(LintUnannotatedTest, PermutesThatUndoEachOtherAreBothDropped) {
  Proposal p = ProvedProposal("02_permutes_undo.hlo", "consecutive-permutes");
  ASSERT_NE(p.proposed, nullptr);
  EXPECT_EQ(p.finding.proposed.flat.collectives, 0);
  EXPECT_EQ(CountOp(*p.proposed, HloOpcode::kCollectivePermute), 0);
  EXPECT_THAT(p.finding.message, HasSubstr("compose into the identity"));
  ExpectSameOnEveryDevice(*ParseFile("02_permutes_undo.hlo"), *p.proposed);
}

TEST(LintUnannotatedTest, PermutesThatDropADeviceComposeIntoOnePermuteNotACopy) {
  Proposal p = ProvedProposal("07_permutes_drop_a_device.hlo", "consecutive-permutes");
  ASSERT_NE(p.proposed, nullptr);
  // Device 3 ends with zeros: one permute stays, with pairs {0,0},{1,1},{2,2}.
  EXPECT_EQ(CountOp(*p.proposed, HloOpcode::kCollectivePermute), 1);
  const std::vector<Literal> original = RunPerDevice(*ParseFile("07_permutes_drop_a_device.hlo"));
  ASSERT_EQ(original.size(), 4u);
  EXPECT_EQ(original[3].GetDouble(0), 0.0);
  EXPECT_EQ(original[1].GetDouble(0), 1000.0);
  ExpectSameOnEveryDevice(*ParseFile("07_permutes_drop_a_device.hlo"), *p.proposed);
}

TEST(LintUnannotatedTest, AnAllGatherWhoseOwnPartIsSlicedBackIsDropped) {
  for (const std::string file : {"03_ag_own_slice.hlo", "04_ag_own_slice_groups.hlo"}) {
    Proposal p = ProvedProposal(file, "all-gather-then-own-slice");
    ASSERT_NE(p.proposed, nullptr);
    EXPECT_EQ(p.finding.catalog_rule, "ag-ds-own-part");
    EXPECT_EQ(p.finding.current.flat.collectives, 1) << file;
    EXPECT_EQ(p.finding.proposed.flat.collectives, 0) << file;
    EXPECT_EQ(CountOp(*p.proposed, HloOpcode::kAllGather), 0) << file;
    ExpectSameOnEveryDevice(*ParseFile(file), *p.proposed);
  }
}

TEST(LintUnannotatedTest, AnAllReduceFollowedByASliceIsAReduceScatter) {
  Proposal p = ProvedProposal("05_ar_slice.hlo", "all-reduce-then-slice");
  ASSERT_NE(p.proposed, nullptr);
  EXPECT_EQ(p.finding.catalog_rule, "ar-ds-to-rs");
  EXPECT_EQ(CountOp(*p.proposed, HloOpcode::kReduceScatter), 1);
  EXPECT_EQ(CountOp(*p.proposed, HloOpcode::kAllReduce), 0);
  // All-reduce of 256 B over 4: 2*3/4*256 = 384 B; reduce-scatter: 3/4*256 = 192 B.
  EXPECT_EQ(p.finding.current.flat.max_recv_bytes, 384);
  EXPECT_EQ(p.finding.proposed.flat.max_recv_bytes, 192);
  ExpectSameOnEveryDevice(*ParseFile("05_ar_slice.hlo"), *p.proposed);
}

TEST(LintUnannotatedTest, PartialSumsOverStridedGroupsAreAReduceScatterOverThem) {
  Proposal p = ProvedProposal("06_ar_slice_strided_groups.hlo", "all-reduce-then-slice");
  ASSERT_NE(p.proposed, nullptr);
  ASSERT_EQ(CountOp(*p.proposed, HloOpcode::kReduceScatter), 1);
  for (const auto& h : p.proposed->entry()->instructions()) {
    if (h->opcode() != HloOpcode::kReduceScatter) continue;
    ASSERT_TRUE(h->attrs().replica_groups.has_value());
    EXPECT_EQ(h->attrs().replica_groups->groups(),
              (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}}));
    EXPECT_EQ(h->attrs().dimensions, std::vector<int64_t>{1});
  }
}

TEST(LintUnannotatedTest, NearMissesGetNoFinding) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(CorpusPath("near_miss"))) {
    if (entry.path().extension() != ".hlo") continue;
    ++files;
    Linted linted = LintText(ReadFileOrFail(entry.path().string()));
    EXPECT_TRUE(linted.report.findings.empty()) << entry.path() << "\n"
                                                << FormatText(linted.report);
  }
  EXPECT_EQ(files, 4);
}

TEST(LintUnannotatedTest, TheNeighbourSliceReallyIsNotTheDevicesOwnPart) {
  // Not vacuous: on simulated devices the near miss gives device d device d+1's rows.
  const std::vector<Literal> out = RunPerDevice(*ParseFile("near_miss/01_ag_neighbour_slice.hlo"));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].GetDouble(0), 1000.0);
  EXPECT_EQ(out[3].GetDouble(0), 0.0);
}

}  // namespace
}  // namespace spmdcheck::lint
