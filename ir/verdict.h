// Verdict: the three-valued answer every checker gives (the oracle's equivalence check, the SMT
// prover, the lint), with the exit code DESIGN.md assigns to each.
#ifndef SPMDCHECK_IR_VERDICT_H_
#define SPMDCHECK_IR_VERDICT_H_

#include "absl/strings/string_view.h"

namespace spmdcheck {

enum class Verdict {
  kHolds,    // Checked and true (for every case the checker covers; it says which).
  kFails,    // A concrete counterexample was found and printed.
  kUnknown,  // A limit was reached or something is unsupported; never reported as holds.
};

inline absl::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kHolds:
      return "holds";
    case Verdict::kFails:
      return "fails";
    case Verdict::kUnknown:
      return "unknown";
  }
  return "unknown";
}

// 0 holds, 1 fails, 3 unknown (2 is bad input, decided before any verdict).
inline int VerdictExitCode(Verdict verdict) {
  switch (verdict) {
    case Verdict::kHolds:
      return 0;
    case Verdict::kFails:
      return 1;
    case Verdict::kUnknown:
      return 3;
  }
  return 3;
}

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_VERDICT_H_
