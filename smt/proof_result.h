// ProofResult: the answer of one Z3 proof about device-id algebra — proved, refuted with a
// concrete counterexample, or unknown with the reason (a timeout is never reported as proved).
#ifndef SPMDCHECK_SMT_PROOF_RESULT_H_
#define SPMDCHECK_SMT_PROOF_RESULT_H_

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ir/verdict.h"

namespace spmdcheck::smt {

struct ProofResult {
  Verdict verdict = Verdict::kUnknown;
  std::string counterexample;  // Set when refuted.
  std::string reason;          // Set when unknown.
  // Which procedure decided it (`enumeration`, `Z3`) and, when both ran, their times; empty when
  // not recorded. Printed by the CLI on its own line (`decided by: ...`).
  std::string procedure;

  static ProofResult Proved() { return {Verdict::kHolds, "", "", ""}; }
  static ProofResult Refuted(std::string counterexample) {
    return {Verdict::kFails, std::move(counterexample), "", ""};
  }
  static ProofResult Unknown(std::string reason) {
    return {Verdict::kUnknown, "", std::move(reason), ""};
  }
};

// `proved`, `refuted: <counterexample>` or `unknown: <reason>`.
inline std::string FormatProofResult(const ProofResult& result) {
  switch (result.verdict) {
    case Verdict::kHolds:
      return "proved";
    case Verdict::kFails:
      return absl::StrCat("refuted: ", result.counterexample);
    case Verdict::kUnknown:
      return absl::StrCat("unknown: ", result.reason);
  }
  return absl::StrCat("unknown: ", result.reason);
}

}  // namespace spmdcheck::smt

#endif  // SPMDCHECK_SMT_PROOF_RESULT_H_
