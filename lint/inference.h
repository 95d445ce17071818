// What each value of a partitioned module holds, inferred: which part of which global value each
// device holds, as a sharding of that global value, from the entry parameters' shardings alone
// (XLA's dumps after SPMD partitioning, `compiled.as_text()` and hand-written repros annotate
// nothing else), so that the lint, the search and `prove instructions` work on unannotated
// modules. Annotations (`sharding=` and `// holds=... sharding=` comments) are claims checked
// against the inference, not its input.
//
// - Data movement (a member of a run, lint/chains.h) is read through the chain model
//   (smt/chain_model.h) from its run's source: its global meaning (the global ops of the run) is
//   lifted symbolically, every device's local origin is evaluated concretely to the global
//   element it holds, and that gives each device's tile; the sharding they form is then proved
//   for every device and element (by enumeration when that is small, else by Z3). Where the
//   local layout is opaque (after an all-to-all, or a reshape that merges sharded dims), the value
//   is re-anchored as the same elements in row-major order under each global shape the devices'
//   origins allow, and the first that proves is taken. With --global, the global program's
//   sharding of the value the instruction holds is tried first.
// - Computing ops are inferred by construction: elementwise ops of equally laid-out operands keep
//   the layout; a dot keeps its operands' batch and free dims; one whose contracting dims are split
//   holds partial sums, which an all-reduce over exactly the contraction groups completes.
// - Anything else (reductions, convolutions, gathers, masked values that are zero on some devices)
//   has no inferred sharding, and chains from or to it stay unexamined.
#ifndef SPMDCHECK_LINT_INFERENCE_H_
#define SPMDCHECK_LINT_INFERENCE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/hlo_module.h"
#include "ir/sharding.h"

namespace spmdcheck::lint {

struct InferenceOptions {
  int64_t num_partitions = 0;         // 0: the module's.
  const HloModule* global = nullptr;  // --global: candidates from the global program.
  int64_t timeout_ms = 10000;         // Per Z3 proof of an inferred sharding.
  // Up to this many (device, local element) positions an inferred sharding is proved by
  // evaluating every one; beyond, by Z3.
  int64_t enumeration_budget = int64_t{1} << 17;
};

struct InferredValue {
  std::string instruction;
  HloSharding sharding;
  std::string rule;   // How it was found, e.g. `data movement from param`, `dot`.
  std::string proof;  // How it was checked, e.g. `enumeration over 512 positions`, `Z3`.
};

enum class ClaimStatus {
  kConfirmed,  // The annotation is proved to describe what the devices hold.
  kDiffers,    // It is not; the inference found (and proved) another sharding.
  kUnchecked,  // Neither the annotation nor an inferred sharding could be proved.
};

// `confirmed`, `differs`, `unchecked`.
absl::string_view ClaimStatusName(ClaimStatus status);

struct ClaimCheck {
  std::string instruction;
  int64_t line = 0;
  HloSharding claimed;
  std::optional<HloSharding> inferred;
  ClaimStatus status = ClaimStatus::kUnchecked;
};

struct Inference {
  // A copy of the module with the inferred sharding set on every instruction that had neither a
  // sharding= attribute nor a comment claim (names and source locations unchanged).
  std::unique_ptr<HloModule> module;
  std::vector<InferredValue> values;  // Program order; only values that had no annotation.
  std::vector<ClaimCheck> claims;     // Program order.
  int64_t data_values = 0;            // Array data values of the entry (parameters excluded).
  int64_t unannotated = 0;            // Of those, how many had no annotation.
};

// Infers the entry computation of `module` (`source_text` is read for comment claims).
absl::StatusOr<Inference> InferHoldings(const HloModule& module, absl::string_view source_text,
                                        const InferenceOptions& options);

}  // namespace spmdcheck::lint

#endif  // SPMDCHECK_LINT_INFERENCE_H_
