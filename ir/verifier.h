// Verifier: structural, shape and sharding checks of a module, as XLA's HloVerifier and
// HloSharding::Validate do them, plus replica-group and permutation-pair checks per group mode.
#ifndef SPMDCHECK_IR_VERIFIER_H_
#define SPMDCHECK_IR_VERIFIER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/hlo_module.h"

namespace spmdcheck {

struct VerifierOptions {
  // Check every sharding's device count against the module's partition count (x replicas).
  bool check_sharding_device_count = true;
  // Report every array shape with more than kMaxArrayElements elements (for consumers that
  // materialise every value, such as an interpreter). Off by default: XLA's tests declare much
  // larger arrays as types. Constants are always checked, and a count past int64 always is.
  bool check_array_size_limit = false;
};

// One problem found, located at an instruction (or computation) of the module.
struct VerifierDiagnostic {
  SourceLocation location;
  std::string message;  // Starts with the instruction name, e.g. "add.3: operand 1 ...".
  // A rule XLA's verifier enforces but XLA's own test modules break (e.g. `s32[] partition-id()`):
  // reported, but the module still verifies. Consumers that execute it must refuse such ops.
  bool is_warning = false;
};

// All problems found, warnings included (empty when the module is clean).
std::vector<VerifierDiagnostic> VerifyModuleDiagnostics(const HloModule& module,
                                                        const VerifierOptions& options = {});

// OK when there are no errors (warnings do not count), or InvalidArgument whose message lists
// each error as "PATH:LINE:COL: error: MESSAGE" (PATH from module.source_path()), one per line.
absl::Status VerifyModule(const HloModule& module, const VerifierOptions& options = {});

// "PATH:LINE:COL: error: MESSAGE" or "...: warning: ..." for one diagnostic.
std::string FormatDiagnostic(const HloModule& module, const VerifierDiagnostic& diagnostic);

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_VERIFIER_H_
