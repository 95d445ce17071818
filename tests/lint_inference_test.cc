// Issue 14 item 1: what each value of a partitioned module holds, inferred from the parameters'
// shardings. The lint corpus with every sharding= but the parameters' stripped (the ROOT's too,
// as XLA's dumps after SPMD partitioning have it): every wasteful file is still flagged with a
// proof, no good file is; without the inference almost nothing is examined. Inferred shardings
// of single values (re-anchoring after an all-to-all, a dot's partial sums completed by an
// all-reduce), annotations checked as claims (a wrong one is reported), and the annotated seed
// unchanged.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "lint/inference.h"
#include "lint/lint.h"
#include "lint/search.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::lint {
namespace {

namespace fs = std::filesystem;
using test_support::ReadFileOrFail;
using ::testing::HasSubstr;

// `text` with the `, sharding={...}` of every instruction but the parameters removed.
std::string StripShardings(const std::string& text) {
  std::string out;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find(", sharding={");
    if (at != std::string::npos && line.find("parameter(") == std::string::npos) {
      size_t end = at + std::string(", sharding=").size();
      int depth = 0;
      for (; end < line.size(); ++end) {
        if (line[end] == '{') ++depth;
        if (line[end] == '}' && --depth == 0) break;
      }
      line.erase(at, end + 1 - at);
    }
    out += line + "\n";
  }
  return out;
}

struct Linted {
  std::unique_ptr<HloModule> module;
  LintReport report;
};

Linted Lint(const std::string& text, bool infer = true) {
  Linted out;
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return out;
  out.module = std::move(parsed->module);
  LintOptions options;
  options.infer = infer;
  absl::StatusOr<LintReport> report = LintModule(*out.module, text, options);
  EXPECT_TRUE(report.ok()) << report.status();
  if (report.ok()) out.report = *std::move(report);
  return out;
}

std::vector<fs::path> CorpusFiles(const std::string& kind) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(fs::path(::spmdcheck::test_support::SourceDir()) /
                                                  "corpus/lint" / kind)) {
    if (entry.path().extension() == ".hlo") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(StripShardingsTest, KeepsOnlyTheParameters) {
  const std::string stripped = StripShardings(
      "  p = f32[8] parameter(0), sharding={devices=[4]<=[4]}\n"
      "  ROOT c = f32[8] copy(p), sharding={{devices=[4]<=[4]}}, metadata={op_name=\"x\"}\n");
  EXPECT_EQ(stripped,
            "  p = f32[8] parameter(0), sharding={devices=[4]<=[4]}\n"
            "  ROOT c = f32[8] copy(p), metadata={op_name=\"x\"}\n");
}

TEST(LintStrippedCorpusTest, EveryWastefulChainIsStillFlaggedWithAProof) {
  int flagged = 0, without_inference = 0;
  const std::vector<fs::path> files = CorpusFiles("wasteful");
  for (const fs::path& path : files) {
    const std::string text = StripShardings(ReadFileOrFail(path.string()));
    {
      absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
      ASSERT_TRUE(parsed.ok());
      ASSERT_FALSE(parsed->module->entry()->root()->sharding().has_value()) << path;
    }
    Linted linted = Lint(text);
    EXPECT_EQ(linted.report.incorrect(), 0) << path << "\n" << FormatText(linted.report);
    EXPECT_GE(linted.report.proved(), 1) << path << "\n" << FormatText(linted.report);
    flagged += linted.report.proved() >= 1 ? 1 : 0;
    without_inference += Lint(text, /*infer=*/false).report.proved() >= 1 ? 1 : 0;
  }
  EXPECT_EQ(flagged, static_cast<int>(files.size()));
  EXPECT_GE(files.size(), 13u);
  // Without the inference only the patterns that need no sharding at all are found: the
  // all-gather whose own part is sliced back (01), the two permutes (03), the identity permute
  // (04), the singleton groups (05), the repeated all-gather (08), the masked all-reduce that
  // broadcasts (09), the partial-sum all-reduces (10, 13) and the concatenated all-gathers (11).
  // The others need the value's sharding (a retiling, a device order, a value two ends share).
  EXPECT_EQ(without_inference, 9);
}

TEST(LintStrippedCorpusTest, NoGoodChainIsFlagged) {
  for (const fs::path& path : CorpusFiles("good")) {
    Linted linted = Lint(StripShardings(ReadFileOrFail(path.string())));
    EXPECT_EQ(linted.report.proved(), 0) << path << "\n" << FormatText(linted.report);
    EXPECT_EQ(linted.report.incorrect(), 0) << path << "\n" << FormatText(linted.report);
  }
}

TEST(LintStrippedCorpusTest, TheRootShardingIsInferredAsTheFileAnnotatesIt) {
  // Every corpus file annotates its ROOT; the inference must find the same layout.
  for (const std::string kind : {"wasteful", "good", "cheaper"}) {
    for (const fs::path& path : CorpusFiles(kind)) {
      const std::string original = ReadFileOrFail(path.string());
      absl::StatusOr<ParsedModule> annotated = ParseHloModule(original);
      ASSERT_TRUE(annotated.ok());
      const HloInstruction* root = annotated->module->entry()->root();
      if (!root->sharding().has_value()) continue;
      const std::string text = StripShardings(original);
      absl::StatusOr<ParsedModule> stripped = ParseHloModule(text);
      ASSERT_TRUE(stripped.ok());
      absl::StatusOr<Inference> inference = InferHoldings(*stripped->module, text, {});
      ASSERT_TRUE(inference.ok());
      const HloInstruction* inferred = inference->module->entry()->root();
      if (!inferred->sharding().has_value()) {
        // A reduce-scatter of partial sums, a collective-broadcast and a concatenate of two
        // sources are not inferred.
        EXPECT_THAT(path.filename().string(),
                    ::testing::AnyOf(HasSubstr("09_dot_reduce_scatter"),
                                     HasSubstr("09_collective_broadcast"),
                                     HasSubstr("11_concatenate_two_sources")))
            << path;
        continue;
      }
      EXPECT_TRUE(SameLayout(*inferred->sharding(), *root->sharding(), root->shape().rank(),
                             annotated->module->num_partitions()))
          << path << ": inferred " << inferred->sharding()->ToString(false) << ", annotated "
          << root->sharding()->ToString(false);
    }
  }
}

constexpr char kAllToAll[] = R"(HloModule a2a, num_partitions=4
ENTRY main {
  param = f32[2,8] parameter(0), sharding={devices=[4,1]<=[4]}
  reshape.1 = f32[2,4,2] reshape(param)
  transpose.1 = f32[4,2,2] transpose(reshape.1), dimensions={1,0,2}
  all-to-all.1 = f32[4,2,2] all-to-all(transpose.1), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}
  ROOT reshape.2 = f32[8,2] reshape(all-to-all.1)
}
)";

TEST(InferHoldingsTest, AnAllToAllReshardIsReanchoredAndProved) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(kAllToAll);
  ASSERT_TRUE(parsed.ok());
  absl::StatusOr<Inference> inference = InferHoldings(*parsed->module, kAllToAll, {});
  ASSERT_TRUE(inference.ok());
  const HloInstruction* root = inference->module->entry()->root();
  ASSERT_TRUE(root->sharding().has_value());
  EXPECT_EQ(root->sharding()->ToString(false), "{devices=[1,4]<=[4]}");
  const InferredValue& last = inference->values.back();
  EXPECT_EQ(last.instruction, "reshape.2");
  EXPECT_THAT(last.rule, HasSubstr("re-anchored"));
  EXPECT_THAT(last.proof, HasSubstr("enumeration over 64 positions"));
}

TEST(InferHoldingsTest, ADotsPartialSumsAreCompletedByTheAllReduceOverTheContraction) {
  constexpr char kText[] = R"(HloModule partial, num_partitions=4
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  lhs = f32[8,2] parameter(0), sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}
  rhs = f32[2,8] parameter(1), sharding={devices=[2,2]<=[4]}
  dot.1 = f32[8,8] dot(lhs, rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ok = f32[8,8] all-reduce(dot.1), channel_id=1, replica_groups={{0,2},{1,3}}, use_global_device_ids=true, to_apply=add
  wrong = f32[8,8] all-reduce(dot.1), channel_id=2, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add
  ROOT t = (f32[8,8], f32[8,8]) tuple(ok, wrong)
}
)";
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(kText);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<Inference> inference = InferHoldings(*parsed->module, kText, {});
  ASSERT_TRUE(inference.ok());
  const HloComputation& entry = *inference->module->entry();
  // The contraction is split along lhs dim 1 = rhs dim 0 (devices {0,2} vs {1,3}... by the
  // rhs's dim 0 tile: devices 0,1 hold contraction tile 0, devices 2,3 tile 1); the result's
  // columns are split by the rhs's dim 1 (devices 0,2 vs 1,3).
  ASSERT_TRUE(entry.FindInstruction("ok")->sharding().has_value());
  EXPECT_EQ(entry.FindInstruction("ok")->sharding()->ToString(false),
            "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}");
  EXPECT_FALSE(entry.FindInstruction("wrong")->sharding().has_value());
  EXPECT_FALSE(entry.FindInstruction("dot.1")->sharding().has_value());
}

TEST(InferHoldingsTest, AWrongAnnotationIsAClaimThatDiffers) {
  // The permute shifts tiles by one device; the annotation claims they stayed put.
  constexpr char kText[] = R"(HloModule claim, num_partitions=4
ENTRY main {
  param = f32[2,4] parameter(0), sharding={devices=[4,1]<=[4]}
  cp = f32[2,4] collective-permute(param), channel_id=1, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}, sharding={devices=[4,1]<=[4]}
  ROOT copy = f32[2,4] copy(cp)
}
)";
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(kText);
  ASSERT_TRUE(parsed.ok());
  absl::StatusOr<Inference> inference = InferHoldings(*parsed->module, kText, {});
  ASSERT_TRUE(inference.ok());
  ASSERT_EQ(inference->claims.size(), 1u);
  const ClaimCheck& claim = inference->claims[0];
  EXPECT_EQ(claim.instruction, "cp");
  EXPECT_EQ(claim.status, ClaimStatus::kDiffers);
  ASSERT_TRUE(claim.inferred.has_value());
  EXPECT_EQ(claim.inferred->ToString(false), "{devices=[4,1]1,2,3,0}");
  // The lint says so, and the chain ending at the wrong claim is incorrect.
  absl::StatusOr<LintReport> report = LintModule(*parsed->module, kText, LintOptions{});
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(report->notes, ::testing::Contains(HasSubstr("claim: cp (line 4) is annotated")));
}

TEST(InferHoldingsTest, TheIssuesPatternsAreFoundAsWithAnnotations) {
  // An all-gather then a dynamic-slice of the device's own rows, two consecutive permutes, an
  // all-gather to replicated then a slice where one all-to-all does: with the annotations and
  // without them, the same chains and the same proved findings.
  for (const std::string file :
       {"wasteful/01_ag_ds_own_tile.hlo", "wasteful/03_two_permutes.hlo",
        "wasteful/06_ag_ds_retile.hlo", "wasteful/07_ag_ds_device_order.hlo"}) {
    const std::string text =
        ReadFileOrFail(::spmdcheck::test_support::SourceDir() + "/corpus/lint/" + file);
    Linted annotated = Lint(text);
    Linted stripped = Lint(StripShardings(text));
    EXPECT_EQ(annotated.report.chains, stripped.report.chains) << file;
    ASSERT_EQ(annotated.report.findings.size(), stripped.report.findings.size()) << file;
    for (size_t i = 0; i < annotated.report.findings.size(); ++i) {
      EXPECT_EQ(annotated.report.findings[i].rule, stripped.report.findings[i].rule) << file;
      EXPECT_EQ(annotated.report.findings[i].proposed.flat.max_recv_bytes,
                stripped.report.findings[i].proposed.flat.max_recv_bytes)
          << file;
    }
  }
}

TEST(InferHoldingsTest, TheAnnotatedSeedStillProposes384AgainstGspmds504) {
  SPMDCHECK_SKIP_WITHOUT_SHARED("cases/seed-scatter/gspmd.hlo");
  const std::string text = ReadFileOrFail(test_support::SharedPath("cases/seed-scatter/gspmd.hlo"));
  Linted linted = Lint(text);
  ASSERT_EQ(linted.report.findings.size(), 1u) << FormatText(linted.report);
  const Finding& f = linted.report.findings[0];
  EXPECT_EQ(f.status, FindingStatus::kProved);
  EXPECT_EQ(f.current.flat.max_recv_bytes, 504);
  EXPECT_EQ(f.proposed.flat.max_recv_bytes, 384);
  ASSERT_TRUE(f.cause.has_value());
  EXPECT_EQ(f.cause->holds, "reshape.1062");
  // Its annotations are claims, and the inference confirms them (the masked select.93 holds
  // zeros on three of four devices: no sharding describes it, so it stays unchecked).
  int confirmed = 0;
  for (const ClaimCheck& c : linted.report.claims) {
    if (c.instruction == "select.93") {
      EXPECT_EQ(c.status, ClaimStatus::kUnchecked);
    } else {
      EXPECT_EQ(c.status, ClaimStatus::kConfirmed) << c.instruction;
      ++confirmed;
    }
  }
  EXPECT_EQ(confirmed, 9);
}

TEST(InferHoldingsTest, TheSeedWithoutAnyAnnotationGivesTheSameFinding) {
  SPMDCHECK_SKIP_WITHOUT_SHARED("cases/seed-scatter/gspmd.hlo");
  // No sharding= but the parameter's and no `// holds=` comment, as XLA prints it.
  std::string text =
      StripShardings(ReadFileOrFail(test_support::SharedPath("cases/seed-scatter/gspmd.hlo")));
  std::string bare;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t comment = line.find("  //");
    if (comment != std::string::npos && comment > 0) line.erase(comment);
    bare += line + "\n";
  }
  Linted linted = Lint(bare);
  ASSERT_EQ(linted.report.findings.size(), 1u) << FormatText(linted.report);
  const Finding& f = linted.report.findings[0];
  EXPECT_EQ(f.status, FindingStatus::kProved);
  EXPECT_EQ(f.current.flat.max_recv_bytes, 504);
  EXPECT_EQ(f.proposed.flat.max_recv_bytes, 384);
  ASSERT_TRUE(f.cause.has_value());
  EXPECT_EQ(f.cause->instruction, "reshape.2138");
  EXPECT_EQ(f.cause->sharding, "{devices=[1,2,8,1,4]<=[2,4,8]T(1,0,2) last_tile_dim_replicate}");
  // Every annotation the seed's dump had is inferred back, except the masked select (zeros on
  // three of four devices) and the reshape right after the all-gather (an opaque intermediate).
  EXPECT_EQ(linted.report.holdings.size(), 9u);
}

}  // namespace
}  // namespace spmdcheck::lint
