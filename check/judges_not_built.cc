// The lint and SMT-proof judges of a build without them (SPMDCHECK_PROOF_JUDGES=OFF: the
// libFuzzer builds, which compile only what their targets need and leave out lint/ and smt/).
// Asked for anyway (CheckOptions::lint, prove), they record unknown and say why: never holds.
#include "absl/strings/string_view.h"
#include "check/judges.h"

namespace spmdcheck::check {
namespace {

class NotBuiltJudge : public Judge {
 public:
  NotBuiltJudge(absl::string_view name, bool CheckOptions::*asked, bool programs_alone)
      : name_(name), asked_(asked), programs_alone_(programs_alone) {}
  absl::string_view name() const override { return name_; }
  bool Applies(const JudgeInputs& inputs) const override { return inputs.options.*asked_; }
  void Run(const JudgeInputs& /*inputs*/, CheckOutcome& outcome) const override { Record(outcome); }
  bool JudgesProgramsAlone() const override { return programs_alone_; }
  void RunOnPrograms(const CorrectPartitioning& /*partitioning*/,
                     CheckOutcome& outcome) const override {
    Record(outcome);
  }

 private:
  void Record(CheckOutcome& outcome) const {
    outcome.judges.push_back(JudgeRecord{
        std::string(name_), Verdict::kUnknown,
        "not in this build (SPMDCHECK_PROOF_JUDGES=OFF: the lint and Z3 are left out)", 0, false});
  }

  absl::string_view name_;
  bool CheckOptions::*asked_;
  bool programs_alone_;
};

}  // namespace

const Judge& LintJudgeInstance() {
  static const NotBuiltJudge judge("lint", &CheckOptions::lint, /*programs_alone=*/true);
  return judge;
}

const Judge& SmtProofsJudgeInstance() {
  static const NotBuiltJudge judge("smt-proofs", &CheckOptions::prove, /*programs_alone=*/false);
  return judge;
}

}  // namespace spmdcheck::check
