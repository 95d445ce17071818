// The SMT proofs judge (check/judges.h): Z3 proves every collective of the partitioned program
// consistent with the shardings at its two ends, as `spmdcheck prove instructions` does (values
// without an annotation get the lint's inferred sharding). A refuted collective makes the record
// `fails`; every collective proved, `holds`; a timeout or a collective the proofs cannot encode
// (no annotation, an op they do not model) leaves it `unknown`, never `holds`.
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "check/judges.h"
#include "ir/hlo_printer.h"
#include "lint/inference.h"
#include "smt/instruction_checks.h"

namespace spmdcheck::check {
namespace {

class SmtProofsJudge : public Judge {
 public:
  absl::string_view name() const override { return "smt-proofs"; }
  bool Applies(const JudgeInputs& inputs) const override { return inputs.options.prove; }
  void Run(const JudgeInputs& inputs, CheckOutcome& outcome) const override {
    JudgeRecord record;
    record.judge = "smt-proofs";
    if (outcome.partitioned == nullptr) {
      record.ran = false;
      record.detail = "not run: no partitioned program";
      outcome.judges.push_back(std::move(record));
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    Prove(*outcome.partitioned,
          outcome.partitioned_text.empty() ? PrintModule(*outcome.partitioned)
                                           : outcome.partitioned_text,
          inputs.num_partitions, inputs.options.proof_timeout_ms, record);
    record.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    outcome.judges.push_back(std::move(record));
  }

 private:
  static void Prove(const HloModule& partitioned, const std::string& text, int64_t num_partitions,
                    int64_t timeout_ms, JudgeRecord& record) {
    // Operands and results without an annotation get the inferred sharding (lint/inference.h).
    lint::InferenceOptions inference;
    inference.num_partitions = num_partitions;
    inference.timeout_ms = timeout_ms;
    absl::StatusOr<lint::Inference> inferred = lint::InferHoldings(partitioned, text, inference);
    const HloModule& checked =
        inferred.ok() && inferred->module != nullptr ? *inferred->module : partitioned;
    smt::InstructionCheckOptions options;
    options.num_partitions = num_partitions;
    options.timeout_ms = timeout_ms;
    options.source_text = text;
    absl::StatusOr<std::vector<smt::InstructionCheck>> checks =
        smt::CheckCollectiveInstructions(checked, options);
    if (!checks.ok()) {
      record.detail = absl::StrCat("the proofs cannot run: ", checks.status().message());
      return;
    }
    int64_t proved = 0, unknown = 0;
    const smt::InstructionCheck* refuted = nullptr;
    const smt::InstructionCheck* first_unknown = nullptr;
    for (const smt::InstructionCheck& c : *checks) {
      if (c.result.verdict == Verdict::kHolds) ++proved;
      if (c.result.verdict == Verdict::kFails && refuted == nullptr) refuted = &c;
      if (c.result.verdict == Verdict::kUnknown) {
        ++unknown;
        if (first_unknown == nullptr) first_unknown = &c;
      }
    }
    if (refuted != nullptr) {
      record.verdict = Verdict::kFails;
      record.detail = absl::StrCat(refuted->name, " (", refuted->opcode,
                                   "): ", smt::FormatProofResult(refuted->result));
    } else if (first_unknown != nullptr) {
      record.detail =
          absl::StrCat(unknown, " of ", checks->size(), " collective(s) unknown; ",
                       first_unknown->name, ": ", smt::FormatProofResult(first_unknown->result));
    } else {
      record.verdict = Verdict::kHolds;
      record.detail = absl::StrCat(proved, " collective(s) proved");
    }
  }
};

}  // namespace

const Judge& SmtProofsJudgeInstance() {
  static const SmtProofsJudge judge;
  return judge;
}

}  // namespace spmdcheck::check
