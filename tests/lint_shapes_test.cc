// Issue 14 item 6: the wasteful shapes partitioners produce that the lint did not see: a chain
// with two sources (a concatenate of all-gathers), a value feeding two ends (priced together,
// and not flagged when one end needs the shared collective), all-reduce -> reduce-scatter through
// a reshape, a masked all-reduce whose kept member is not first (collective-broadcast with the
// groups rotated), and corpus/lint/wasteful/02 at 64 B (an all-gather over part of a tile dim,
// outside the planner's candidates) instead of 192 B.
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "lint/lint.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::lint {
namespace {

using ::testing::HasSubstr;

LintReport LintText(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return {};
  absl::StatusOr<LintReport> report = LintModule(*parsed->module, text, LintOptions{});
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : LintReport{};
}

LintReport LintCorpus(const std::string& file) {
  return LintText(::spmdcheck::test_support::ReadFileOrFail(::spmdcheck::test_support::SourceDir() +
                                                            "/corpus/lint/" + file));
}

const Finding* Only(const LintReport& report) {
  EXPECT_EQ(report.findings.size(), 1u) << FormatText(report);
  return report.findings.size() == 1 ? &report.findings[0] : nullptr;
}

TEST(LintShapesTest, Wasteful02GetsTheSubgroupAllGatherAt64Bytes) {
  const LintReport report = LintCorpus("wasteful/02_masked_allreduce_ds.hlo");
  const Finding* f = Only(report);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, FindingStatus::kProved);
  EXPECT_EQ(f->rule, "subgroup-all-gather");
  EXPECT_EQ(f->current.flat.max_recv_bytes, 448);
  EXPECT_EQ(f->proposed.flat.max_recv_bytes, 64);
  EXPECT_THAT(f->proposed_hlo, HasSubstr("replica_groups=[4,2]<=[2,2,2]T(0,2,1)"));
}

TEST(LintShapesTest, AConcatenateOfTwoGatheredSourcesIsOneAllGather) {
  const LintReport report = LintCorpus("wasteful/11_concatenate_two_sources.hlo");
  const Finding* f = Only(report);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, FindingStatus::kProved) << f->proof;
  EXPECT_EQ(f->rule, "concatenated-collectives");
  EXPECT_EQ(f->current.flat.collectives, 2);
  EXPECT_EQ(f->proposed.flat.collectives, 1);
  EXPECT_EQ(f->proposed.flat.max_recv_bytes, 384);
}

TEST(LintShapesTest, AValueFeedingTwoEndsIsPricedOnce) {
  const LintReport report = LintCorpus("wasteful/12_value_feeds_two_ends.hlo");
  const Finding* f = Only(report);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, FindingStatus::kProved);
  EXPECT_EQ(f->rule, "shared-value");
  // The all-gather is counted once now; both ends are replaced (no collective for `own`, an
  // all-to-all for `cols`).
  EXPECT_EQ(f->current.flat.collectives, 1);
  EXPECT_EQ(f->current.flat.max_recv_bytes, 192);
  EXPECT_EQ(f->proposed.flat.max_recv_bytes, 48);
  EXPECT_THAT(f->proposed_hlo, HasSubstr("// the chain to own"));
  EXPECT_THAT(f->proposed_hlo, HasSubstr("// the chain to cols"));
}

TEST(LintShapesTest, AnEndThatNeedsTheSharedCollectiveKeepsTheOtherFromBeingFlagged) {
  const LintReport report = LintCorpus("good/10_value_feeds_two_ends_needed.hlo");
  EXPECT_EQ(report.proved(), 0) << FormatText(report);
  EXPECT_THAT(report.notes, ::testing::Contains(HasSubstr("share collectives")));
}

TEST(LintShapesTest, AnAllReduceReshapedThenSlicedIsAReduceScatter) {
  const LintReport report = LintCorpus("wasteful/13_allreduce_reshape_ds.hlo");
  const Finding* f = Only(report);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, FindingStatus::kProved);
  EXPECT_EQ(f->rule, "all-reduce-then-slice");
  EXPECT_EQ(f->proposed.flat.max_recv_bytes, 192);
  EXPECT_THAT(f->proposed_hlo, HasSubstr("reduce-scatter(dot.1)"));
}

TEST(LintShapesTest, AMaskedAllReduceKeepingAnotherMemberIsARotatedBroadcast) {
  const LintReport report = LintText(R"(HloModule masked_rotated, num_partitions=4
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  param = f32[1,8] parameter(0), sharding={devices=[4,1]<=[4]}
  pid = u32[] partition-id()
  two = u32[] constant(2)
  keep = pred[] compare(pid, two), direction=EQ
  mask = pred[1,8] broadcast(keep), dimensions={}
  zero = f32[] constant(0)
  zeros = f32[1,8] broadcast(zero), dimensions={}
  masked = f32[1,8] select(mask, param, zeros)
  ar = f32[1,8] all-reduce(masked), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=add
  ROOT r = f32[8] reshape(ar), sharding={replicated}
}
)");
  const Finding* f = Only(report);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, FindingStatus::kProved) << f->proof;
  EXPECT_EQ(f->rule, "masked-all-reduce-broadcast");
  // Device 2 keeps its value: the broadcast's group starts there.
  EXPECT_THAT(f->proposed_hlo,
              HasSubstr("collective-broadcast(param), channel_id=1, replica_groups={{2,3,0,1}}"));
}

}  // namespace
}  // namespace spmdcheck::lint
