// The lint judge (check/judges.h): the collective lint on a partitioned program the oracle finds
// correct. A proved cheaper chain makes the record `fails` (wasteful), no proved one `holds`,
// proofs that failed or timed out (unproven replacements) `unknown`.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "check/judges.h"
#include "ir/hlo_printer.h"
#include "lint/lint.h"

namespace spmdcheck::check {
namespace {

// What a finding proposes, without sizes: a reduction shrinks the shapes (and so the bytes) but
// must keep the value to constrain and its better sharding, or the collectives proposed.
std::string ProposalOf(const lint::Finding& f) {
  if (f.cause.has_value()) {
    return absl::StrCat(f.rule, ": constrain ", f.cause->holds, " to ", f.cause->better_sharding);
  }
  return absl::StrCat(f.rule, ": ", f.proposed.flat.collectives, " collective(s), ",
                      f.proposed.flat.collective_permutes, " collective-permute(s) instead of ",
                      f.current.flat.collectives, " (", f.current.flat.collective_permutes, ")");
}

absl::StatusOr<lint::LintReport> LintAgainst(const HloModule& partitioned, const std::string& text,
                                             const HloModule& global, int64_t timeout_ms) {
  lint::LintOptions options;
  options.global = &global;
  // The program the partitioner received: its annotations are the user's constraints.
  options.global_shardings_are_constraints = true;
  options.timeout_ms = timeout_ms;
  return lint::LintModule(partitioned, text, options);
}

std::vector<CheaperChain> ProvedChains(const lint::LintReport& report) {
  std::vector<CheaperChain> found;
  for (const lint::Finding& f : report.findings) {
    if (f.status != lint::FindingStatus::kProved) continue;
    found.push_back(
        {f.rule == "search" ? "intermediate-sharding" : f.rule, f.message, ProposalOf(f)});
  }
  return found;
}

class LintJudge : public Judge {
 public:
  absl::string_view name() const override { return "lint"; }
  bool Applies(const JudgeInputs& inputs) const override { return inputs.options.lint; }
  void Run(const JudgeInputs& inputs, CheckOutcome& outcome) const override {
    const JudgeRecord* oracle = FindJudgeRecord(outcome, "oracle");
    if (outcome.partitioned == nullptr || oracle == nullptr || oracle->verdict != Verdict::kHolds) {
      // A cost is judged on a correct partitioning only.
      JudgeRecord record;
      record.judge = "lint";
      record.ran = false;
      record.detail = "not run: the oracle does not find the partitioning correct";
      outcome.judges.push_back(std::move(record));
      return;
    }
    const std::string text = outcome.partitioned_text.empty() ? PrintModule(*outcome.partitioned)
                                                              : outcome.partitioned_text;
    RunOnPrograms({*outcome.partitioned, text, inputs.judged, inputs.options.proof_timeout_ms},
                  outcome);
  }
  bool JudgesProgramsAlone() const override { return true; }
  void RunOnPrograms(const CorrectPartitioning& partitioning,
                     CheckOutcome& outcome) const override {
    JudgeRecord record;
    record.judge = "lint";
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<lint::LintReport> report =
        LintAgainst(partitioning.partitioned, partitioning.partitioned_text, partitioning.judged,
                    partitioning.proof_timeout_ms);
    record.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!report.ok()) {
      record.detail = absl::StrCat("the lint cannot run: ", report.status().message());
    } else {
      outcome.cheaper_chains = ProvedChains(*report);
      int64_t unproven = 0;
      for (const lint::Finding& f : report->findings) {
        if (f.status == lint::FindingStatus::kUnproven) ++unproven;
      }
      if (!outcome.cheaper_chains.empty()) {
        record.verdict = Verdict::kFails;
        record.detail = absl::StrCat("wasteful: ", outcome.cheaper_chains.front().pattern, ": ",
                                     outcome.cheaper_chains.front().message);
      } else if (unproven > 0) {
        record.detail = absl::StrCat(unproven, " cheaper chain(s) not proved (timeout or refuted)");
      } else {
        record.verdict = Verdict::kHolds;
        record.detail = absl::StrCat(report->chains, " chain(s), none with a proved cheaper one");
      }
    }
    outcome.judges.push_back(std::move(record));
  }
};

}  // namespace

const Judge& LintJudgeInstance() {
  static const LintJudge judge;
  return judge;
}

}  // namespace spmdcheck::check
