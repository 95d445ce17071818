// The oracle judge (check/judges.h): our N-device interpreter runs the partitioned program
// against the global one, with the partitioner's claims (which instruction holds which global
// value) for the localisation of the first divergence.
#include <chrono>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "check/judges.h"
#include "check/metadata_claims.h"
#include "oracle/equivalence.h"

namespace spmdcheck::check {
namespace {

class OracleJudge : public Judge {
 public:
  absl::string_view name() const override { return "oracle"; }
  bool Applies(const JudgeInputs&) const override { return true; }
  void Run(const JudgeInputs& in, CheckOutcome& outcome) const override {
    oracle::EquivOptions equiv;
    equiv.first_is_global = true;
    equiv.num_partitions = in.num_partitions;
    equiv.trials = in.options.trials;
    equiv.seed = in.options.seed;
    equiv.max_elements_per_array = in.options.max_elements_per_array;
    if (in.options.oracle_seconds > 0) {
      equiv.deadline = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(in.options.oracle_seconds));
    }
    if (in.judged_is_received) {
      equiv.claims =
          ClaimsFromMetadata(in.oracle_global, in.output.propagated.get(), in.oracle_partitioned);
    }
    for (const auto& [name, held] : in.output.claims) {
      equiv.claims.emplace(name, oracle::EquivOptions::HeldValue{held.first, held.second});
    }
    for (const auto& [computation, claims] : in.output.called_claims) {
      for (const auto& [name, held] : claims) {
        equiv.called_claims[computation].emplace(
            name, oracle::EquivOptions::HeldValue{held.first, held.second});
      }
    }
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<oracle::EquivReport> report =
        oracle::CheckEquivalence(in.oracle_global, in.oracle_partitioned, equiv);
    outcome.oracle_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    JudgeRecord record{"oracle", Verdict::kUnknown, "", outcome.oracle_seconds, true};
    if (!report.ok()) {
      record.detail = absl::StrCat("oracle: ", report.status().message());
      record.ran = false;
    } else {
      outcome.oracle_ran = true;
      outcome.report = *std::move(report);
      record.verdict = outcome.report.verdict;
      if (record.verdict == Verdict::kFails) {
        record.detail = absl::StrCat("device ", outcome.report.device, " differs at [",
                                     absl::StrJoin(outcome.report.mismatch.global_index, ","),
                                     "]: expected ", outcome.report.mismatch.expected, ", got ",
                                     outcome.report.mismatch.actual);
      } else if (record.verdict == Verdict::kUnknown) {
        record.detail = outcome.report.unknown_reason;
      }
    }
    outcome.judges.push_back(std::move(record));
  }
};

}  // namespace

const Judge& OracleJudgeInstance() {
  static const OracleJudge judge;
  return judge;
}

}  // namespace spmdcheck::check
