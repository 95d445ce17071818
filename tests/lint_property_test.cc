// Properties of the lint on generated programs partitioned by the reference partitioner (whose
// output the oracle checks): no chain of it is reported incorrect, and every proved finding
// proposes a cheaper chain.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "fuzz/program_gen.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "lint/lint.h"
#include "partitioner/partitioner.h"

namespace spmdcheck::lint {
namespace {

RC_GTEST_PROP(LintProperty, PartitionerOutputIsNeverIncorrectAndFindingsAreCheaper, ()) {
  fuzz::ProgramGenOptions gen;
  gen.allow_maximal = false;
  const fuzz::GeneratedProgram program = *fuzz::GenProgram(gen);
  RC_PRE(program.module != nullptr);
  absl::StatusOr<partitioner::PartitionResult> partitioned =
      partitioner::PartitionModule(*program.module, partitioner::PartitionOptions{});
  RC_PRE(partitioned.ok());
  const std::string text = PrintModule(*partitioned->module);
  absl::StatusOr<ParsedModule> reparsed = ParseHloModule(text);
  RC_ASSERT(reparsed.ok());
  LintOptions options;
  options.timeout_ms = 5000;
  absl::StatusOr<LintReport> report = LintModule(*reparsed->module, text, options);
  RC_ASSERT(report.ok());
  for (const Finding& f : report->findings) {
    if (f.status == FindingStatus::kIncorrect) {
      RC_FAIL(absl::StrCat("lint calls a chain of the partitioner's output incorrect:\n",
                           FormatText(*report), "\n", program.hlo_text));
    }
    if (f.status == FindingStatus::kProved) {
      RC_ASSERT(f.proposed.flat.Score() < f.current.flat.Score());
    }
  }
}

}  // namespace
}  // namespace spmdcheck::lint
