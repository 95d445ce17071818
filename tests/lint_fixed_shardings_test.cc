// Shardings a proposal must keep (issue 26): the user's constraints (a custom-call Sharding in the
// global program, jax's sharding_constraint in a dump's metadata, every annotation of a program
// before propagation) are fixed like parameters and the result; a proposal that changes one is
// no finding, and the search still looks for one that keeps them.
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "lint/lint.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::lint {
namespace {

using test_support::ReadFileOrFail;
using ::testing::Contains;
using ::testing::HasSubstr;

std::unique_ptr<HloModule> Parse(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? std::move(parsed->module) : nullptr;
}

LintReport LintText(const std::string& text, const LintOptions& options = {}) {
  std::unique_ptr<HloModule> module = Parse(text);
  if (module == nullptr) return {};
  absl::StatusOr<LintReport> report = LintModule(*module, text, options);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : LintReport{};
}

std::string AgOwnSlice() {
  return ReadFileOrFail(test_support::SourceDir() + "/corpus/lint/unannotated/03_ag_own_slice.hlo");
}

TEST(LintFixedShardingsTest, AnAllGatherTheUserAskedForIsKept) {
  // Control: the all-gather whose own part is sliced back is a finding.
  EXPECT_EQ(LintText(AgOwnSlice()).proved(), 1);
  // The same all-gather as jax prints what partitioning made of with_sharding_constraint: the
  // user asked for the replicated value, so dropping it is no finding.
  const std::string constrained = absl::StrReplaceAll(
      AgOwnSlice(), {{"use_global_device_ids=true\n",
                      "use_global_device_ids=true, metadata={op_name=\"jit(f)/jit(main)/"
                      "sharding_constraint\"}\n"}});
  ASSERT_NE(constrained, AgOwnSlice());
  const LintReport report = LintText(constrained);
  EXPECT_TRUE(report.findings.empty()) << FormatText(report);
  EXPECT_THAT(report.notes,
              Contains(HasSubstr("would change all-gather.1, whose sharding is fixed")));
}

class SeedFixedTest : public ::testing::Test {
 protected:
  void SetUp() override { SPMDCHECK_SKIP_WITHOUT_SHARED("cases/seed-scatter/gspmd.hlo"); }
  static std::string Seed(const std::string& file) {
    return ReadFileOrFail(test_support::SharedPath("cases/seed-scatter/" + file));
  }
};

// pre.hlo with reshape.1062 produced by a custom-call Sharding (with_sharding_constraint), as the
// user's program says it.
std::string WithConstraintOnReshape1062(const std::string& pre) {
  std::istringstream lines(pre);
  std::string out, line;
  while (std::getline(lines, line)) {
    const std::string head = "  reshape.1062 = ";
    const size_t shard = line.find(", sharding=");
    if (line.rfind(head, 0) == 0 && shard != std::string::npos) {
      const std::string shape = line.substr(head.size(), line.find(' ', head.size()) - head.size());
      absl::StrAppend(&out, "  reshape.1062.0 = ", shape, " reshape(slice.56)\n", head, shape,
                      " custom-call(reshape.1062.0), custom_call_target=\"Sharding\"",
                      line.substr(shard), "\n");
      continue;
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

TEST_F(SeedFixedTest, AConstraintOnTheCauseLeavesNoHintToChangeIt) {
  const std::string gspmd = Seed("gspmd.hlo");
  const std::string pre_text = WithConstraintOnReshape1062(Seed("pre.hlo"));
  ASSERT_THAT(pre_text, HasSubstr("custom_call_target=\"Sharding\""));
  std::unique_ptr<HloModule> pre = Parse(pre_text);
  ASSERT_NE(pre, nullptr);
  LintOptions options;
  options.global = pre.get();
  const LintReport report = LintText(gspmd, options);
  for (const Finding& f : report.findings) {
    EXPECT_NE(f.rule, "intermediate-sharding") << FormatText(report);
    EXPECT_FALSE(f.cause.has_value()) << FormatText(report);
    EXPECT_LT(f.proposed.flat.Score(), f.current.flat.Score());
  }
  // Without the constraint the cause is reshape.1062 (tests/lint_test.cc), so it is the
  // constraint that removed the hint.
  std::unique_ptr<HloModule> plain = Parse(Seed("pre.hlo"));
  options.global = plain.get();
  const LintReport unconstrained = LintText(gspmd, options);
  ASSERT_EQ(unconstrained.findings.size(), 1u);
  ASSERT_TRUE(unconstrained.findings[0].cause.has_value());
  EXPECT_EQ(unconstrained.findings[0].cause->holds, "reshape.1062");
}

TEST_F(SeedFixedTest, WhenEveryAnnotationIsTheUsersNoShardingIsChanged) {
  std::unique_ptr<HloModule> pre = Parse(Seed("pre.hlo"));
  ASSERT_NE(pre, nullptr);
  LintOptions options;
  options.global = pre.get();
  options.global_shardings_are_constraints = true;
  const LintReport report = LintText(Seed("gspmd.hlo"), options);
  for (const Finding& f : report.findings) {
    EXPECT_FALSE(f.cause.has_value()) << FormatText(report);
  }
  EXPECT_EQ(report.incorrect(), 0);
}

}  // namespace
}  // namespace spmdcheck::lint
