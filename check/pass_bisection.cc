#include "check/pass_bisection.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"
#include "oracle/equivalence.h"

namespace spmdcheck::check {

using target::PartitionerUnderTest;
using target::PassDump;
using target::PassDumping;

std::pair<std::string, std::string> PipelineAndPass(const std::string& file) {
  if (absl::EndsWith(file, "after_optimizations.txt")) return {"(end)", "after_optimizations"};
  // module_0002.NAME.0012.PIPELINE.after_PASS.before_NEXT.txt: the pipeline is the token after
  // the 4-digit sequence number (pipelines may be named after_..., names may hold dots).
  for (size_t at = file.find('.'); at != std::string::npos; at = file.find('.', at + 1)) {
    if (at + 6 > file.size() || file[at + 5] != '.' ||
        !std::all_of(file.begin() + static_cast<std::ptrdiff_t>(at) + 1,
                     file.begin() + static_cast<std::ptrdiff_t>(at) + 5,
                     [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    const size_t pipeline_start = at + 6;
    const size_t pipeline_end = file.find('.', pipeline_start);
    if (pipeline_end == std::string::npos) break;
    std::string pipeline = file.substr(pipeline_start, pipeline_end - pipeline_start);
    std::string rest = file.substr(pipeline_end + 1);
    if (absl::EndsWith(rest, ".txt")) rest.resize(rest.size() - 4);
    if (absl::StartsWith(rest, "after_")) rest = rest.substr(6);
    const size_t before = rest.find(".before_");
    if (before != std::string::npos) rest.resize(before);
    return {pipeline, rest};
  }
  return {"", file};
}

std::string PassBisection::Summary() const {
  if (first_wrong < 0) {
    int64_t unknown = 0;
    for (const PassStep& s : steps) unknown += s.verdict == Verdict::kUnknown ? 1 : 0;
    return absl::StrCat("no pass dump computes a wrong result (", steps.size(), " dumps, ", unknown,
                        " the oracle could not run): the difference is in code "
                        "generation or the runtime");
  }
  const PassStep& bad = steps[static_cast<size_t>(first_wrong)];
  std::string where = absl::StrCat("pass ", bad.pass, " (pipeline ", bad.pipeline, ")");
  if (last_right + 1 < first_wrong) {
    std::vector<std::string> between;
    for (int64_t k = last_right + 1; k <= first_wrong; ++k) {
      between.push_back(steps[static_cast<size_t>(k)].pass);
    }
    where = absl::StrCat("one of the passes ", absl::StrJoin(between, ", "),
                         " (the oracle could not run the dumps between)");
  }
  return absl::StrCat(
      where, ": its output ", bad.file, " differs from the global program (", bad.detail, ")",
      last_right >= 0 ? absl::StrCat(" while ", steps[static_cast<size_t>(last_right)].file,
                                     " before it computes it")
                      : "");
}

std::string PassBisection::ToString() const {
  std::string out;
  for (size_t k = 0; k < steps.size(); ++k) {
    const PassStep& s = steps[k];
    absl::StrAppend(&out, static_cast<int64_t>(k) == first_wrong ? "* " : "  ",
                    VerdictName(s.verdict), " ", s.pipeline, "/", s.pass,
                    s.detail.empty() ? "" : ": " + s.detail, "\n");
  }
  absl::StrAppend(&out, Summary(), "\n");
  return out;
}

absl::StatusOr<PassBisection> BisectPasses(const HloModule& global,
                                           PartitionerUnderTest& partitioner,
                                           const CheckOptions& options) {
  PassDumping* dumping = partitioner.pass_dumping();
  if (dumping == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(partitioner.spec(), " does not dump its passes"));
  }
  dumping->set_dump_passes(true);
  CheckOptions check = options;
  check.execute = false;
  absl::StatusOr<CheckOutcome> outcome = CheckPartitioning(global, partitioner, check);
  dumping->set_dump_passes(false);
  if (!outcome.ok()) return outcome.status();
  if (outcome->partitioned == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("XLA produced no partitioned module: ", outcome->message));
  }
  if (outcome->pass_dumps.empty()) {
    return absl::FailedPreconditionError("XLA wrote no pass dumps");
  }
  const HloModule& judged = outcome->judged_global != nullptr ? *outcome->judged_global : global;
  PassBisection bisection;
  for (const PassDump& dump : outcome->pass_dumps) {
    PassStep step;
    step.file = dump.file;
    std::tie(step.pipeline, step.pass) = PipelineAndPass(dump.file);
    absl::StatusOr<ParsedModule> parsed = ParseHloModule(dump.text, {.path = dump.file});
    if (!parsed.ok()) {
      step.detail = absl::StrCat("spmdcheck cannot read it: ", parsed.status().message());
    } else if (std::vector<VerifierDiagnostic> d = VerifyModuleDiagnostics(*parsed->module);
               std::any_of(d.begin(), d.end(),
                           [](const VerifierDiagnostic& x) { return !x.is_warning; })) {
      step.detail = "spmdcheck's verifier rejects it";
    } else {
      oracle::EquivOptions equiv;
      equiv.num_partitions = global.num_partitions();
      equiv.trials = options.trials;
      equiv.seed = options.seed;
      equiv.max_elements_per_array = options.max_elements_per_array;
      absl::StatusOr<oracle::EquivReport> report =
          oracle::CheckEquivalence(judged, *parsed->module, equiv);
      if (!report.ok()) {
        step.detail = std::string(report.status().message());
      } else {
        step.verdict = report->verdict;
        if (report->verdict == Verdict::kFails) {
          step.detail = absl::StrCat(
              "device ", report->device, " at [", absl::StrJoin(report->mismatch.global_index, ","),
              "]: expected ", report->mismatch.expected, ", got ", report->mismatch.actual);
        } else if (report->verdict == Verdict::kUnknown) {
          step.detail = report->unknown_reason;
        }
      }
    }
    if (step.detail.size() > 200) step.detail = step.detail.substr(0, 200) + "...";
    bisection.steps.push_back(std::move(step));
  }
  for (size_t k = 0; k < bisection.steps.size(); ++k) {
    if (bisection.steps[k].verdict == Verdict::kHolds) {
      bisection.last_right = static_cast<int64_t>(k);
    } else if (bisection.steps[k].verdict == Verdict::kFails) {
      bisection.first_wrong = static_cast<int64_t>(k);
      break;
    }
  }
  if (bisection.first_wrong < 0) bisection.last_right = -1;
  return bisection;
}

}  // namespace spmdcheck::check
