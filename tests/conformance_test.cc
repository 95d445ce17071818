// Real XLA modules (../shared/conformance, ../shared/cases) parse, verify and print
// idempotently; the statements pasted in the seed thread parse as fragments.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck {
namespace {

namespace fs = std::filesystem;
using test_support::ReadFileOrFail;

std::vector<fs::path> HloFiles(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".hlo") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class ConformanceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ConformanceTest, EveryModuleParsesVerifiesAndPrintsIdempotently) {
  SPMDCHECK_SKIP_WITHOUT_SHARED(GetParam());
  const fs::path dir = test_support::SharedPath(GetParam());
  const std::vector<fs::path> files = HloFiles(dir);
  if (files.empty()) GTEST_SKIP() << "no modules in " << dir;
  int parsed_ok = 0, verified_ok = 0, idempotent = 0;
  for (const fs::path& path : files) {
    ParseOptions options;
    options.path = path.string();
    absl::StatusOr<ParsedModule> parsed = ParseHloModule(ReadFileOrFail(path), options);
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
    if (!parsed.ok()) continue;
    ++parsed_ok;
    absl::Status verified = VerifyModule(*parsed->module);
    // One module of XLA's collective tests is not valid HLO (a tuple-returning
    // collective-permute-start written as u32[]; its test never verifies it), and
    // SubgroupIllegalManualAllReduce is a test that XLA's partitioner refuses it (an all-reduce
    // across manual subgroups): they must be rejected, with the reason.
    if (path.filename() == "collective_permute_decomposer.WithCycleNotTransformed.hlo") {
      EXPECT_THAT(std::string(verified.message()),
                  ::testing::HasSubstr("collective-permute-done: operand must be a tuple"));
    } else if (path.filename() == "SubgroupIllegalManualAllReduce.hlo") {
      EXPECT_THAT(std::string(verified.message()),
                  ::testing::HasSubstr("combines devices of different manual subgroups"));
    } else {
      EXPECT_TRUE(verified.ok()) << verified.message();
      if (verified.ok()) ++verified_ok;
    }
    const std::string once = PrintModule(*parsed->module);
    ParseOptions again_options;
    again_options.path = path.string() + " (formatted)";
    absl::StatusOr<ParsedModule> again = ParseHloModule(once, again_options);
    ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << once;
    const std::string twice = PrintModule(*again->module);
    EXPECT_EQ(once, twice) << path;
    if (once == twice) ++idempotent;
  }
  std::cout << GetParam() << ": " << files.size() << " modules, " << parsed_ok << " parsed, "
            << verified_ok << " verified, " << idempotent << " fmt-idempotent\n";
  EXPECT_EQ(parsed_ok, static_cast<int>(files.size()));
}

INSTANTIATE_TEST_SUITE_P(Shared, ConformanceTest,
                         ::testing::Values("conformance/xla-spmd-2023", "conformance/xla-spmd-2022",
                                           "conformance/xla-collectives-2023",
                                           "cases/seed-scatter"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// Takes the pasted statements out of the thread's prose as a user would: every run of lines that
// look like `  name = ...` is one paste. Prose lines become empty lines, so line numbers in
// messages are the thread's.
std::vector<std::string> ExtractPastes(const std::string& thread) {
  std::vector<std::string> pastes;
  std::string current;
  std::string blank_prefix;
  for (absl::string_view line : absl::StrSplit(thread, '\n')) {
    const bool statement = absl::StartsWith(line, "  ") && absl::StrContains(line, " = ");
    if (statement) {
      if (current.empty()) current = blank_prefix;
      absl::StrAppend(&current, line, "\n");
    } else if (!current.empty()) {
      pastes.push_back(current);
      current.clear();
    }
    blank_prefix += "\n";
  }
  if (!current.empty()) pastes.push_back(current);
  return pastes;
}

TEST(SeedFragmentTest, PastedStatementsParseAsFragments) {
  SPMDCHECK_SKIP_WITHOUT_SHARED("seeds");
  const fs::path seeds = test_support::SharedPath("seeds");
  int fragments = 0;
  for (const auto& entry : fs::directory_iterator(seeds)) {
    if (!absl::StartsWith(entry.path().filename().string(), "000_")) continue;
    for (const std::string& paste : ExtractPastes(ReadFileOrFail(entry.path()))) {
      ParseOptions options;
      options.path = entry.path().filename().string();
      options.fragment = true;
      absl::StatusOr<ParsedModule> parsed = ParseHloModule(paste, options);
      ASSERT_TRUE(parsed.ok()) << parsed.status().message();
      ++fragments;
      // Computations the paste calls but does not hold (the while loop's condition and body,
      // the scatter's combiner) stay opaque, each with a warning.
      for (const auto& c : parsed->module->computations()) {
        if (!c->is_opaque()) continue;
        bool warned = false;
        for (const std::string& w : parsed->warnings) {
          warned |= absl::StrContains(w, absl::StrCat("'", c->name(), "' is not in the paste"));
        }
        EXPECT_TRUE(warned) << c->name();
      }
      // Every statement of the paste is kept as an instruction of the same name.
      for (absl::string_view statement : absl::StrSplit(paste, '\n', absl::SkipEmpty())) {
        absl::string_view name = absl::StripLeadingAsciiWhitespace(statement);
        name = name.substr(0, name.find(' '));
        EXPECT_NE(parsed->module->entry()->FindInstruction(name), nullptr) << name;
      }
      const std::string printed = PrintModule(*parsed->module);
      EXPECT_THAT(printed, ::testing::HasSubstr("scatter("));
    }
  }
  EXPECT_EQ(fragments, 3);
}

}  // namespace
}  // namespace spmdcheck
