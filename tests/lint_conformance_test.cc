// No noise: the reference partitioner's output for every module of XLA's SPMD partitioner tests
// (../shared/conformance/xla-spmd-2023) gets no incorrect chain (the partitioner is checked by the
// oracle), and every finding that counts is proved. Since the lint infers what unannotated values
// hold (issue 14), it examines chains of our output it could not before and finds real savings
// in some (e.g. ReshapePartialHaloExchange: three all-gathers where one does); those are proved
// equal by Z3, so they are not noise.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "lint/lint.h"
#include "partitioner/partitioner.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::lint {
namespace {

namespace fs = std::filesystem;
using test_support::ReadFileOrFail;

TEST(LintConformanceTest, OurPartitionerOutputHasNoIncorrectChain) {
  SPMDCHECK_SKIP_WITHOUT_SHARED("conformance/xla-spmd-2023");
  const fs::path dir = test_support::SharedPath("conformance/xla-spmd-2023");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".hlo") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  int64_t linted = 0, chains = 0, not_partitioned = 0, proved = 0;
  for (const fs::path& path : files) {
    ParseOptions options;
    options.path = path.string();
    absl::StatusOr<ParsedModule> global = ParseHloModule(ReadFileOrFail(path), options);
    ASSERT_TRUE(global.ok()) << global.status();
    absl::StatusOr<partitioner::PartitionResult> partitioned =
        partitioner::PartitionModule(*global->module, partitioner::PartitionOptions{});
    if (!partitioned.ok()) {
      ++not_partitioned;
      continue;
    }
    // Lint the printed output, as a user would (instructions then have source lines).
    const std::string text = PrintModule(*partitioned->module);
    absl::StatusOr<ParsedModule> reparsed = ParseHloModule(text);
    ASSERT_TRUE(reparsed.ok()) << path << ": " << reparsed.status();
    absl::StatusOr<LintReport> report = LintModule(*reparsed->module, text, LintOptions{});
    ASSERT_TRUE(report.ok()) << path << ": " << report.status();
    ++linted;
    chains += report->chains;
    EXPECT_EQ(report->incorrect(), 0) << path << "\n" << FormatText(*report);
    for (const Finding& f : report->findings) {
      if (f.status == FindingStatus::kProved) {
        EXPECT_EQ(f.proof, "proved") << path;
      }
    }
    proved += report->proved();
  }
  // Every module partitions, and a fair share of them have chains with collectives to examine.
  EXPECT_EQ(not_partitioned, 0);
  EXPECT_EQ(linted, static_cast<int64_t>(files.size()));
  EXPECT_GT(chains, 100);
  std::cout << absl::StrCat(linted, " modules linted, ", chains, " chains examined, ", proved,
                            " proved findings\n");
}

}  // namespace
}  // namespace spmdcheck::lint
