#include "check/pass_bisection.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace spmdcheck::check {
namespace {

TEST(PassBisection, ReadsPipelineAndPassFromXlasDumpNames) {
  using Names = std::pair<std::string, std::string>;
  EXPECT_EQ(PipelineAndPass("module_0002.dus.0005.spmd-partitioner.after_spmd-partitioning."
                            "before_control-dep-rewriter.txt"),
            Names("spmd-partitioner", "spmd-partitioning"));
  // A pipeline named after_..., and a module name with a dot.
  EXPECT_EQ(PipelineAndPass("module_0002.my.mod.0019.after_layout_assignment.after_pipeline-"
                            "start.before_pipeline-end.txt"),
            Names("after_layout_assignment", "pipeline-start"));
  // copy-insertion's dumps have no before_ part.
  EXPECT_EQ(PipelineAndPass("module_0002.dus.0022.copy-insertion.after_adding_copies_to_"
                            "resolve_interference.txt"),
            Names("copy-insertion", "adding_copies_to_resolve_interference"));
  EXPECT_EQ(PipelineAndPass("module_0002.dus.cpu_after_optimizations.txt"),
            Names("(end)", "after_optimizations"));
  EXPECT_EQ(PipelineAndPass("notes.txt"), Names("", "notes.txt"));
}

PassStep Step(const std::string& pass, Verdict verdict) {
  // Initialised, not assigned: g++ 12 at -O3 warns (-Wrestrict, a false positive, GCC PR 105329)
  // about assigning a short literal to a fresh std::string member.
  return PassStep{
      .file = absl::StrCat("module_0001.m.0001.p.after_", pass, ".txt"),
      .pipeline = "p",
      .pass = pass,
      .verdict = verdict,
      .detail = verdict == Verdict::kFails ? "device 1 at [3]: expected 0, got 2" : "",
  };
}

TEST(PassBisection, SummaryNamesThePassOrTheRangeTheUnknownDumpsLeave) {
  PassBisection one;
  one.steps = {Step("spmd-partitioning", Verdict::kHolds), Step("algsimp", Verdict::kFails)};
  one.last_right = 0;
  one.first_wrong = 1;
  EXPECT_EQ(one.Summary().rfind("pass algsimp (pipeline p): its output", 0), 0u) << one.Summary();
  PassBisection range;
  range.steps = {Step("spmd-partitioning", Verdict::kHolds), Step("fusion", Verdict::kUnknown),
                 Step("copy-insertion", Verdict::kFails)};
  range.last_right = 0;
  range.first_wrong = 2;
  EXPECT_NE(range.Summary().find("one of the passes fusion, copy-insertion"), std::string::npos)
      << range.Summary();
  PassBisection none;
  none.steps = {Step("spmd-partitioning", Verdict::kHolds), Step("fusion", Verdict::kUnknown)};
  EXPECT_NE(none.Summary().find("no pass dump computes a wrong result (2 dumps, 1 the oracle"),
            std::string::npos)
      << none.Summary();
}

}  // namespace
}  // namespace spmdcheck::check
