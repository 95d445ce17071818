// The collective lint: the seed case (a proved cheaper chain, its cost and its cause, checked
// again by the oracle against the global program), the reporter's rewrite (refuted), the
// hand-written corpus (every wasteful chain flagged, no good chain flagged), topologies, and chain
// splitting.
#include "lint/lint.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "lint/chains.h"
#include "lint/search.h"
#include "lint/topology.h"
#include "oracle/equivalence.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::lint {
namespace {

using test_support::ReadFileOrFail;
using ::testing::HasSubstr;

std::unique_ptr<HloModule> ParseText(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  if (!parsed.ok()) {
    ADD_FAILURE() << parsed.status();
    return nullptr;
  }
  return std::move(parsed->module);
}

std::string SeedPath(const std::string& file) {
  return test_support::SharedPath("cases/seed-scatter/" + file);
}

struct Linted {
  std::unique_ptr<HloModule> module;
  LintReport report;
};

Linted Lint(const std::string& path, const LintOptions& options = {}) {
  Linted out;
  const std::string text = ReadFileOrFail(path);
  out.module = ParseText(text);
  if (out.module == nullptr) return out;
  absl::StatusOr<LintReport> report = LintModule(*out.module, text, options);
  EXPECT_TRUE(report.ok()) << report.status();
  if (report.ok()) out.report = *std::move(report);
  return out;
}

class SeedLintTest : public ::testing::Test {
 protected:
  void SetUp() override { SPMDCHECK_SKIP_WITHOUT_SHARED("cases/seed-scatter/gspmd.hlo"); }
};

TEST_F(SeedLintTest, GspmdChainHasAProvedCheaperReplacementCausedByReshape1062) {
  Linted linted = Lint(SeedPath("gspmd.hlo"));
  ASSERT_EQ(linted.report.findings.size(), 1u);
  const Finding& f = linted.report.findings[0];
  EXPECT_EQ(f.status, FindingStatus::kProved) << f.proof;
  EXPECT_EQ(f.proof, "proved");
  // GSPMD's chain as the report shows it: 4 collectives, 2 of them permutes; at the shrunk sizes
  // (bf16, 48-byte shards) the busiest device receives 504 bytes.
  EXPECT_EQ(f.current.flat.collectives, 4);
  EXPECT_EQ(f.current.flat.collective_permutes, 2);
  EXPECT_EQ(f.current.flat.max_recv_bytes, 504);
  // At most 2 collectives, no permute, at most 81% of GSPMD's most received bytes: stage 0
  // broadcasts its 48-byte shard to the other 3 stages (a collective-broadcast: 48 B received),
  // then an all-gather over the 8 model devices (7*48 = 336 B): 384 B, the floor (the output
  // slice every device off stage 0 must receive; 128 KiB at the report's sizes).
  EXPECT_LE(f.proposed.flat.collectives, 2);
  EXPECT_EQ(f.proposed.flat.collective_permutes, 0);
  EXPECT_LE(f.proposed.flat.max_recv_bytes * 100, 81 * f.current.flat.max_recv_bytes);
  EXPECT_EQ(f.proposed.flat.max_recv_bytes, 48 + 336);
  ASSERT_TRUE(f.cause.has_value());
  EXPECT_EQ(f.cause->holds, "reshape.1062");
  EXPECT_EQ(f.cause->instruction, "reshape.2138");
  EXPECT_EQ(f.cause->sharding, "{devices=[1,2,8,1,4]<=[2,4,8]T(1,0,2) last_tile_dim_replicate}");
  EXPECT_EQ(f.cause->better_sharding,
            "{devices=[1,2,8,1,4]<=[2,4,8]T(0,2,1) last_tile_dim_replicate}");
  EXPECT_THAT(f.instructions, ::testing::Contains("collective-permute.10"));
  EXPECT_EQ(linted.report.proved(), 1);
}

TEST_F(SeedLintTest, TheProposedChainImplementsThePreProgramUnderTheOracle) {
  Linted linted = Lint(SeedPath("gspmd.hlo"));
  ASSERT_EQ(linted.report.findings.size(), 1u);
  std::unique_ptr<HloModule> proposed = ParseText(linted.report.findings[0].proposed_hlo);
  std::unique_ptr<HloModule> pre = ParseText(ReadFileOrFail(SeedPath("pre.hlo")));
  ASSERT_NE(proposed, nullptr);
  ASSERT_NE(pre, nullptr);
  // Independent of the Z3 proof: run both on 64 simulated devices, each with its own shard.
  absl::StatusOr<oracle::EquivReport> report =
      oracle::CheckEquivalence(*pre, *proposed, oracle::EquivOptions{});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->verdict, Verdict::kHolds);
}

TEST_F(SeedLintTest, WithTheGlobalProgramTheCauseIsStillReshape1062) {
  std::unique_ptr<HloModule> pre = ParseText(ReadFileOrFail(SeedPath("pre.hlo")));
  ASSERT_NE(pre, nullptr);
  LintOptions options;
  options.global = pre.get();
  Linted linted = Lint(SeedPath("gspmd.hlo"), options);
  ASSERT_EQ(linted.report.findings.size(), 1u);
  const Finding& f = linted.report.findings[0];
  EXPECT_EQ(f.status, FindingStatus::kProved);
  EXPECT_THAT(f.global_meaning, HasSubstr("from --global"));
  ASSERT_TRUE(f.cause.has_value());
  EXPECT_EQ(f.cause->holds, "reshape.1062");
  EXPECT_EQ(f.cause->better_sharding,
            "{devices=[1,2,8,1,4]<=[2,4,8]T(0,2,1) last_tile_dim_replicate}");
}

TEST_F(SeedLintTest, TheReportersRewriteIsRefutedNotASaving) {
  std::unique_ptr<HloModule> pre = ParseText(ReadFileOrFail(SeedPath("pre.hlo")));
  ASSERT_NE(pre, nullptr);
  LintOptions options;
  options.global = pre.get();
  Linted linted = Lint(SeedPath("simplified.hlo"), options);
  ASSERT_EQ(linted.report.findings.size(), 1u);
  const Finding& f = linted.report.findings[0];
  EXPECT_EQ(f.status, FindingStatus::kIncorrect);
  EXPECT_EQ(f.rule, "incorrect-chain");
  // Device 8 is pipeline stage 1: the rewrite gives it stage 1's slice.
  EXPECT_THAT(f.proof, HasSubstr("refuted: device 8"));
  EXPECT_EQ(linted.report.proved(), 0);
  EXPECT_EQ(linted.report.incorrect(), 1);
}

TEST_F(SeedLintTest, WithoutTheGlobalProgramTheRewriteIsRefutedByItsOwnReplicas) {
  // The file alone does not say which global value the rewrite computes, but its root claims
  // {devices=[2,1,1,32]<=[64] last_tile_dim_replicate}: devices 0 and 8 hold the same tile, yet
  // device 8 (pipeline stage 1) ends up with stage 1's data.
  Linted linted = Lint(SeedPath("simplified.hlo"));
  ASSERT_EQ(linted.report.findings.size(), 1u);
  const Finding& f = linted.report.findings[0];
  EXPECT_EQ(f.status, FindingStatus::kIncorrect);
  EXPECT_THAT(f.proof, HasSubstr("refuted: devices 0 and 8 hold the same tile of reshape.6041"));
  EXPECT_THAT(f.proof, HasSubstr("device 0 has param[0,0,0,0,0], device 8 has param[0,1,0,0,0]"));
  EXPECT_EQ(linted.report.incorrect(), 1);
}

TEST_F(SeedLintTest, TopologyFiguresWeightCrossNodeBytes) {
  Linted plain = Lint(SeedPath("gspmd.hlo"));
  absl::StatusOr<Topology> topology = ParseTopology("nodes=8", 64);
  ASSERT_TRUE(topology.ok()) << topology.status();
  LintOptions options;
  options.topology = *topology;
  Linted linted = Lint(SeedPath("gspmd.hlo"), options);
  ASSERT_EQ(linted.report.findings.size(), 1u);
  const Finding& f = linted.report.findings[0];
  ASSERT_TRUE(f.current.topology.has_value());
  ASSERT_TRUE(f.proposed.topology.has_value());
  // Flat figures are unchanged; the permutes and the masked all-reduce cross nodes (ids 8 apart),
  // so the weighted figure is larger; the broadcast across stages crosses nodes (48 B at 8x) and
  // the all-gather over ids 8k..8k+7 stays inside a node.
  EXPECT_EQ(f.current.flat.max_recv_bytes, 504);
  EXPECT_GT(f.current.topology->max_recv_bytes, f.current.flat.max_recv_bytes);
  EXPECT_EQ(f.proposed.topology->max_recv_bytes, 48 * 8 + 336);
  EXPECT_LT(f.proposed.topology->Score(), f.current.topology->Score());
}

std::vector<std::string> CorpusFiles(const std::string& folder) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(
           ::spmdcheck::test_support::SourceDir() + "/corpus/lint/" + folder)) {
    if (entry.path().extension() == ".hlo") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(LintCorpusTest, EveryWastefulChainIsFlaggedWithAProof) {
  const std::vector<std::string> files = CorpusFiles("wasteful");
  ASSERT_GE(files.size(), 6u);
  for (const std::string& file : files) {
    Linted linted = Lint(file);
    EXPECT_GE(linted.report.proved(), 1) << file;
    EXPECT_EQ(linted.report.incorrect(), 0) << file;
    for (const Finding& f : linted.report.findings) {
      if (f.status != FindingStatus::kProved) continue;
      EXPECT_LT(f.proposed.flat.Score(), f.current.flat.Score()) << file;
      EXPECT_FALSE(f.proposed_hlo.empty()) << file;
    }
  }
}

TEST(LintCorpusTest, NoGoodChainIsFlagged) {
  const std::vector<std::string> files = CorpusFiles("good");
  ASSERT_GE(files.size(), 6u);
  for (const std::string& file : files) {
    Linted linted = Lint(file);
    EXPECT_EQ(linted.report.proved(), 0) << file;
    EXPECT_EQ(linted.report.incorrect(), 0) << file;
  }
}

TEST(LintCorpusTest, NamedPatternsCiteTheirCatalogRules) {
  const std::string dir = ::spmdcheck::test_support::SourceDir() + "/corpus/lint/wasteful/";
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"01_ag_ds_own_tile.hlo", "ag-ds-own-part"},
      {"03_two_permutes.hlo", "cp-cp-compose"},
      {"09_masked_allreduce_broadcast.hlo", "masked-ar-to-cbcast"},
      {"10_partial_sum_allreduce_ds.hlo", "ar-ds-to-rs"},
      {"04_identity_permute.hlo", "cp-identity"},
      {"05_singleton_groups.hlo", "singleton-groups"},
  };
  for (const auto& [file, rule] : expected) {
    Linted linted = Lint(dir + file);
    ASSERT_EQ(linted.report.findings.size(), 1u) << file;
    EXPECT_EQ(linted.report.findings[0].catalog_rule, rule) << file;
  }
}

TEST(LintChainTest, AMaskedAllReduceMovesDataButAPartialSumStartsAChain) {
  // all-reduce(dot) sums partial results: it is where a chain starts, not part of one; an
  // all-reduce of a partition-id-masked value only moves data.
  const std::string text = R"(HloModule m, num_partitions=2
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[4,2] parameter(0), sharding={devices=[1,2]<=[2]}
  b = f32[2,4] parameter(1), sharding={devices=[2,1]<=[2]}
  dot = f32[4,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  sum = f32[4,4] all-reduce(dot), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=add, sharding={replicated}
  pid = u32[] partition-id()
  zero = u32[] constant(0)
  first = pred[] compare(pid, zero), direction=EQ
  mask = pred[4,4] broadcast(first), dimensions={}
  zero.f = f32[] constant(0)
  zeros = f32[4,4] broadcast(zero.f), dimensions={}
  kept = f32[4,4] select(mask, sum, zeros)
  ROOT again = f32[4,4] all-reduce(kept), channel_id=2, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=add, sharding={replicated}
})";
  std::unique_ptr<HloModule> module = ParseText(text);
  ASSERT_NE(module, nullptr);
  ChainSplit split = SplitIntoChains(*module);
  ASSERT_EQ(split.chains.size(), 1u);
  EXPECT_EQ(split.chains[0].source->name(), "sum");
  EXPECT_EQ(split.chains[0].end->name(), "again");
  EXPECT_EQ(split.chains[0].collectives, 1);
}

TEST(LintTopologyTest, ParsesNodesAndExplicitDomainsAndRejectsBadSpecs) {
  absl::StatusOr<Topology> nodes = ParseTopology("nodes=4,cross=16", 8);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ(nodes->domain_of, (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(nodes->cross_factor, 16);
  absl::StatusOr<Topology> explicit_domains = ParseTopology("{{0,2},{1,3}}", 4);
  ASSERT_TRUE(explicit_domains.ok()) << explicit_domains.status();
  EXPECT_EQ(explicit_domains->domain_of, (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(explicit_domains->cross_factor, 8);
  EXPECT_FALSE(ParseTopology("nodes=3", 8).ok());
  EXPECT_FALSE(ParseTopology("{{0,1},{1,2,3}}", 4).ok());
  EXPECT_FALSE(ParseTopology("{{0,1}}", 4).ok());
  EXPECT_FALSE(ParseTopology("racks", 4).ok());
  EXPECT_FALSE(ParseTopology("nodes=2,cross=0", 4).ok());
}

TEST(LintSearchTest, CandidatesCoverEveryAxisPlacementAndKeepExtras) {
  const Shape shape = Shape::Array(PrimitiveType::kF32, {4, 6});
  absl::StatusOr<HloSharding> extra = ParseSharding("{devices=[2,2]0,2,1,3}");
  ASSERT_TRUE(extra.ok());
  const std::vector<HloSharding> candidates = CandidateShardings(shape, {2, 2}, 4, {*extra});
  // Axes of size 2 on {dim 0, dim 1, replicated}, one axis per dim: 3*3 - 2 (both on one dim)
  // = 7 placements, plus the extra (which is one of them: [2,2] with axis 1 on dim 0).
  EXPECT_EQ(candidates.size(), 7u);
  EXPECT_EQ(candidates[0].ToString(false), extra->ToString(false));
  for (const HloSharding& c : candidates) EXPECT_TRUE(c.Validate(shape, 4).ok()) << c.ToString();
}

}  // namespace
}  // namespace spmdcheck::lint
