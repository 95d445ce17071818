// Issue 14 item 7: rewrite rules as text. The built-in catalog is read from its rule files
// (every rule of the C++ catalog it replaced is there, with the same expectation), a user's rule
// file is proved or refuted like the catalog (a counterexample re-checked by evaluation), and
// malformed rules are reported with FILE:LINE:COL.
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "smt/rewrite_catalog.h"
#include "smt/rewrite_rules.h"
#include "smt/rule_language.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::smt {
namespace {

using test_support::ReadFileOrFail;
using ::testing::HasSubstr;

TEST(RuleLanguageTest, TheBuiltinCatalogIsReadFromItsRuleFiles) {
  EXPECT_TRUE(rw::BuiltinRulesStatus().ok()) << rw::BuiltinRulesStatus();
  std::set<std::string> sound, wrong;
  for (const rw::RuleDef& r : rw::RewriteRules()) {
    (r.sound ? sound : wrong).insert(r.name);
    EXPECT_THAT(r.source, HasSubstr("rule " + r.name)) << r.name;
  }
  // The 24 sound rules and 12 wrong variants of the C++ catalog (issue 7), and three new ones.
  for (const std::string name : {"ag-ag-fuse",           "ar-ds-to-rs",
                                 "ar-ds-to-rs-table",    "ar-to-rs-ag",
                                 "cp-cp-compose",        "cp-cp-compose-shifts",
                                 "a2a-inverse",          "a2a-self-inverse",
                                 "masked-ar-to-cbcast",  "cp-ag-relabel",
                                 "reshape-across-ag",    "transpose-across-ag",
                                 "ar-reassociate",       "rs-reassociate",
                                 "cp-cycle-decompose",   "cp-cycle-decompose-backward",
                                 "ar-ar-fold",           "ag-to-ar-dus",
                                 "ag-broadcast-reorder", "cp-identity",
                                 "singleton-groups",     "ar-replicated-to-mul",
                                 "ag-ds-own-part",       "ar-absorbs-in-group-cp",
                                 "ag-partial-groups",    "ag-concat-fuse",
                                 "cp-concat-fuse"}) {
    EXPECT_TRUE(sound.count(name)) << name;
  }
  for (const std::string name :
       {"ag-ag-fuse-wrong-order", "ar-ds-to-rs-wrong-offset-order", "ar-to-rs-ag-mismatched-groups",
        "cp-cp-compose-reversed", "a2a-inverse-wrong-order", "masked-ar-to-cbcast-wrong-source",
        "cp-ag-relabel-by-targets", "reshape-across-ag-minor-dim",
        "ar-reassociate-different-groups", "cp-cycle-decompose-two-cycles-one-select",
        "ar-ar-fold-same-groups", "ar-absorbs-cross-group-cp"}) {
    EXPECT_TRUE(wrong.count(name)) << name;
  }
  EXPECT_EQ(sound.size(), 27u);
  EXPECT_EQ(wrong.size(), 12u);
}

TEST(RuleLanguageTest, AUsersRuleFileIsProvedAndItsWrongVariantRefuted) {
  const std::string path =
      ::spmdcheck::test_support::SourceDir() + "/corpus/rules/permute_after_gather.rules";
  absl::StatusOr<std::vector<rw::RuleDef>> rules = rw::ParseRules(ReadFileOrFail(path), path);
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 2u);
  CatalogOptions options;
  options.max_devices = 8;
  const std::vector<RuleReport> reports = CheckRules(*rules, options);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].name, "drop-permute-after-gather");
  EXPECT_EQ(reports[0].verdict.verdict, Verdict::kHolds) << FormatProofResult(reports[0].verdict);
  EXPECT_TRUE(reports[0].parametric) << reports[0].parametric_note;
  EXPECT_EQ(reports[1].verdict.verdict, Verdict::kFails);
  ASSERT_TRUE(reports[1].counterexample.has_value());
  // Device 0 of a [2,2] mesh receives from the device one step back along b, which holds
  // another a-group's gathered value.
  EXPECT_EQ(reports[1].counterexample->mesh, (std::vector<int64_t>{2, 2}));
  EXPECT_NE(reports[1].counterexample->lhs, reports[1].counterexample->rhs);
}

absl::Status ParseError(const std::string& text) {
  absl::StatusOr<std::vector<rw::RuleDef>> rules = rw::ParseRules(text, "x.rules");
  return rules.ok() ? absl::OkStatus() : rules.status();
}

constexpr char kHeader[] = "rule r\nexpect sound\naxes a\nsizes c=2\n";

TEST(RuleLanguageTest, MistakesAreReportedWithTheirLocation) {
  EXPECT_THAT(ParseError(std::string(kHeader) +
                         "lhs {\n  x = f32[c] parameter(0)\n  ROOT g = f32[a*d] all-gather(x), "
                         "dimensions={0}, replica_groups=axes(a)\n}\nrhs {\n  ROOT x = f32[c] "
                         "parameter(0)\n}\n")
                  .message(),
              HasSubstr("x.rules:7:18: error: unknown name 'd'"));
  EXPECT_THAT(ParseError(std::string(kHeader) +
                         "lhs {\n  ROOT y = f32[c] copy(x)\n}\nrhs {\n  ROOT x = f32[c] "
                         "parameter(0)\n}\n")
                  .message(),
              HasSubstr("x.rules:6:1: error: 'x' is not defined before"));
  EXPECT_THAT(ParseError(std::string(kHeader) +
                         "lhs {\n  x = f32[c] parameter(0)\n  ROOT y = f32[c] sort(x)\n}\nrhs {\n"
                         "  ROOT x = f32[c] parameter(0)\n}\n")
                  .message(),
              HasSubstr("unknown op 'sort'"));
  EXPECT_THAT(ParseError(std::string(kHeader) + "lhs {\n  x = f32[c] parameter(0)\n}\nrhs {\n"
                                                "  ROOT x = f32[c] parameter(0)\n}\n")
                  .message(),
              HasSubstr("lhs needs exactly one ROOT"));
  EXPECT_THAT(
      ParseError(std::string(kHeader) + "lhs {\n  ROOT x = f32[c] parameter(0)\n").message(),
      HasSubstr("not closed"));
  EXPECT_THAT(ParseError("expect sound\n").message(),
              HasSubstr("x.rules:1:1: error: expected `rule NAME`"));
  EXPECT_THAT(ParseError(std::string(kHeader) +
                         "lhs {\n  x = f32[c] parameter(0)\n  ROOT y = f32[c] dynamic-slice(x), "
                         "offsets={pos(a)*c}, oops\n}\nrhs {\n  ROOT x = f32[c] parameter(0)\n}\n")
                  .ok(),
              true);  // A flag attribute the op ignores is accepted.
}

TEST(RuleLanguageTest, ADeclaredShapeThatTheOpDoesNotGiveIsUnknownWithTheLine) {
  absl::StatusOr<std::vector<rw::RuleDef>> rules = rw::ParseRules(
      std::string(kHeader) +
          "lhs {\n  x = f32[c] parameter(0)\n  ROOT g = f32[c] all-gather(x), dimensions={0}, "
          "replica_groups=axes(a)\n}\nrhs {\n  ROOT x = f32[c] parameter(0)\n}\n",
      "x.rules");
  ASSERT_TRUE(rules.ok()) << rules.status();
  CatalogOptions options;
  options.max_devices = 4;
  const std::vector<RuleReport> reports = CheckRules(*rules, options);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].verdict.verdict, Verdict::kUnknown);
  EXPECT_THAT(reports[0].verdict.reason,
              HasSubstr("line 7: g is declared [2] but all-gather gives [4]"));
}

}  // namespace
}  // namespace spmdcheck::smt
