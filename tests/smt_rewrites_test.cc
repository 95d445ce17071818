// The rewrite catalog: every sound rule is proved on every small mesh, every wrong variant is
// refuted with a counterexample that re-checks by concrete evaluation, and Z3 agrees with brute
// force.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "smt/rewrite_catalog.h"
#include "smt/rewrite_expr.h"

namespace spmdcheck::smt {
namespace {

// A deterministic "random" integer for input k at args (splitmix64).
int64_t ValueOf(int input, const std::vector<int64_t>& args) {
  uint64_t x = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(input + 1);
  for (int64_t a : args) {
    x ^= static_cast<uint64_t>(a) + 0x9e3779b97f4a7c15ull + (x << 6) + (x >> 2);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
  }
  return static_cast<int64_t>(x >> 20);  // Small enough that sums of a few terms do not overflow.
}

const std::vector<RuleReport>& Catalog() {
  static const std::vector<RuleReport>* reports = [] {
    CatalogOptions options;
    options.max_devices = 6;
    options.parametric = false;
    return new std::vector<RuleReport>(CheckRewriteCatalog(options));
  }();
  return *reports;
}

TEST(SmtRewrites, CatalogHasAtLeast15SoundRulesAnd5WrongVariants) {
  int sound = 0, wrong = 0;
  for (const RuleReport& r : Catalog()) (r.expected_sound ? sound : wrong)++;
  EXPECT_GE(sound, 15);
  EXPECT_GE(wrong, 5);
  EXPECT_EQ(Catalog().size(), RewriteRuleNames().size());
}

TEST(SmtRewrites, EverySoundRuleIsProvedOnEveryMeshUpTo6Devices) {
  for (const RuleReport& r : Catalog()) {
    if (!r.expected_sound) continue;
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.verdict.verdict, Verdict::kHolds) << FormatProofResult(r.verdict);
    EXPECT_GT(r.meshes_checked, 0);
    EXPECT_EQ(r.meshes_checked, static_cast<int64_t>(RewriteInstances(r.name, 6).size()));
    EXPECT_FALSE(r.counterexample.has_value());
  }
}

TEST(SmtRewrites, EveryWrongVariantIsRefutedWithACounterexampleThatReChecks) {
  for (const RuleReport& r : Catalog()) {
    if (r.expected_sound) continue;
    SCOPED_TRACE(r.name);
    ASSERT_EQ(r.verdict.verdict, Verdict::kFails) << FormatProofResult(r.verdict);
    ASSERT_TRUE(r.counterexample.has_value());
    const RewriteCounterexample& cx = *r.counterexample;
    absl::StatusOr<std::pair<rw::LinearForm, rw::LinearForm>> sides =
        EvaluateRewriteAt(r.name, cx.mesh, cx.axes, cx.device, cx.index);
    ASSERT_TRUE(sides.ok()) << sides.status();
    // Symbolically different, and different on concrete integers.
    EXPECT_NE(sides->first, sides->second);
    EXPECT_EQ(sides->first.ToString(), cx.lhs);
    EXPECT_EQ(sides->second.ToString(), cx.rhs);
    EXPECT_NE(sides->first.Evaluate(ValueOf), sides->second.Evaluate(ValueOf)) << cx.ToString();
    EXPECT_THAT(r.verdict.counterexample, ::testing::HasSubstr("device"));
  }
}

TEST(SmtRewrites, Z3AgreesWithBruteForceOnSmallMeshes) {
  for (const std::string& name : RewriteRuleNames()) {
    SCOPED_TRACE(name);
    bool any_difference = false;
    for (const auto& [mesh, axes] : RewriteInstances(name, 6)) {
      absl::StatusOr<std::optional<RewriteCounterexample>> brute =
          BruteForceRewrite(name, mesh, axes);
      ASSERT_TRUE(brute.ok()) << brute.status();
      if (brute->has_value()) any_difference = true;
    }
    const RuleReport* report = nullptr;
    for (const RuleReport& r : Catalog()) {
      if (r.name == name) report = &r;
    }
    ASSERT_NE(report, nullptr);
    EXPECT_EQ(any_difference, report->verdict.verdict == Verdict::kFails);
  }
}

TEST(SmtRewrites, SoundRuleSidesAgreeAtAConcretePoint) {
  // ag-ag-fuse on mesh [2,3] with a=1, b=0: device 4 (coords 1,1), index [7,1]: the outer
  // all-gather over b picks member b=1 (block 7 / (3*2) = 1), the inner over a picks a=0.
  absl::StatusOr<std::pair<rw::LinearForm, rw::LinearForm>> sides =
      EvaluateRewriteAt("ag-ag-fuse", {2, 3}, {1, 0}, 4, {7, 1});
  ASSERT_TRUE(sides.ok()) << sides.status();
  EXPECT_EQ(sides->first, sides->second);
  EXPECT_EQ(sides->first.ToString(), "X0(1,0,1,1)");
}

TEST(SmtRewrites, RulesWithoutAReductionLoopAreProvedForEverySize) {
  // Symbolic axis and local sizes on the mesh [u0,a,u1(,b,u2)]: every mesh, every axis choice.
  for (const std::string name :
       {"ag-ag-fuse", "cp-cp-compose-shifts", "a2a-inverse", "a2a-self-inverse",
        "reshape-across-ag", "transpose-across-ag", "cp-cycle-decompose",
        "cp-cycle-decompose-backward", "ag-broadcast-reorder", "ag-ds-own-part"}) {
    SCOPED_TRACE(name);
    CatalogOptions options;
    options.max_devices = 4;
    options.rule = name;
    std::vector<RuleReport> reports = CheckRewriteCatalog(options);
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0].verdict.verdict, Verdict::kHolds) << FormatProofResult(reports[0].verdict);
    EXPECT_TRUE(reports[0].parametric) << reports[0].parametric_note;
  }
}

TEST(SmtRewrites, ReductionRulesAreNotClaimedParametric) {
  CatalogOptions options;
  options.max_devices = 4;
  options.rule = "ar-ar-fold";
  std::vector<RuleReport> reports = CheckRewriteCatalog(options);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].verdict.verdict, Verdict::kHolds);
  EXPECT_FALSE(reports[0].parametric);
  EXPECT_THAT(reports[0].parametric_note, ::testing::HasSubstr("enumerated only"));
}

TEST(SmtRewrites, NoMeshInTheBoundIsUnknownNotProved) {
  CatalogOptions options;
  options.max_devices = 3;  // No mesh with two axes of size >= 2.
  options.rule = "ag-ag-fuse";
  options.parametric = false;
  std::vector<RuleReport> reports = CheckRewriteCatalog(options);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].verdict.verdict, Verdict::kUnknown);
  EXPECT_EQ(reports[0].meshes_checked, 0);
}

TEST(SmtRewrites, UnknownRuleNameGivesNoReport) {
  CatalogOptions options;
  options.rule = "no-such-rule";
  EXPECT_TRUE(CheckRewriteCatalog(options).empty());
}

}  // namespace
}  // namespace spmdcheck::smt
