// Reducer: shrinks an HLO module while an interestingness predicate keeps
// holding, in the style of llvm-reduce: a generic driver plus one small delta
// pass per kind of thing to remove.
//
// Passes (run in rounds until a round changes nothing): remove root tuple
// elements, replace an instruction by an operand of the same shape, replace an
// instruction by a new parameter, shrink parameter dimensions to 1 or half
// (shapes re-derived downstream), remove / replicate shardings and untile
// sharded dims, shrink the mesh (num_partitions, every sharding rewritten),
// zero constants. Dead instructions, unused entry parameters and unused
// computations are dropped after every change. A candidate is shown to the
// predicate only when it verifies (ir/verifier.h) and is strictly smaller than
// the current module by a size measure that counts instructions, operands,
// elements, sharding complexity, constant values and devices, so the reduction
// terminates. Deterministic for a deterministic predicate.
#ifndef SPMDCHECK_FUZZ_REDUCER_H_
#define SPMDCHECK_FUZZ_REDUCER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/hlo_module.h"

namespace spmdcheck::fuzz {

// True when the module still shows what is being reduced. An error stops the
// reduction.
using InterestingnessFn = std::function<absl::StatusOr<bool>(const HloModule&)>;

struct ReduceOptions {
  int64_t max_predicate_calls = 20000;
  double max_seconds = 0;  // 0: no limit.
  // Progress lines (one per accepted change), when set.
  std::function<void(absl::string_view)> log;
};

struct ReducePassStats {
  std::string name;
  int64_t attempts = 0;  // Candidates shown to the predicate.
  int64_t accepted = 0;
};

struct ReduceReport {
  int64_t instructions_before = 0;  // All computations.
  int64_t instructions_after = 0;
  int64_t entry_instructions_before = 0;
  int64_t entry_instructions_after = 0;
  int64_t devices_before = 0;  // num_partitions * replica_count.
  int64_t devices_after = 0;
  int64_t predicate_calls = 0;
  int64_t rejected_by_verifier = 0;  // Candidates that did not verify (never shown).
  double seconds = 0;
  bool stopped_by_limit = false;  // max_predicate_calls or max_seconds reached.
  std::vector<ReducePassStats> passes;
  std::string ToString() const;  // One line: `23 -> 4 instructions, 8 -> 2 devices, ...`.
};

struct ReduceResult {
  std::unique_ptr<HloModule> module;  // Verifies and is interesting.
  std::string hlo_text;               // PrintModule(*module).
  ReduceReport report;
};

// InvalidArgument when `module` does not verify; FailedPrecondition when it is
// not interesting; the predicate's own error when it fails.
absl::StatusOr<ReduceResult> ReduceModule(const HloModule& module,
                                          const InterestingnessFn& interesting,
                                          const ReduceOptions& options = {});

// A deep copy (same names, order, attributes and shardings).
std::unique_ptr<HloModule> CloneModule(const HloModule& module);

// Moves the entry root down the chain that makes it while `interesting` allows: the root becomes
// one of its operands (a root tuple: one of its elements; parameters and constants are not
// tried), dead code going with it, until no such candidate is interesting, `max_steps` moves
// were made, or `deadline` passed. For a wrong value an output op only carries (a
// concatenate of a wrong scatter), the result ends at the op that makes it. The predicate's
// error stops the walk and is returned.
struct DescendResult {
  std::unique_ptr<HloModule> module;  // `module` itself (a copy) when nothing moved.
  int64_t steps = 0;
  int64_t candidates_tried = 0;
};
absl::StatusOr<DescendResult> DescendRoot(const HloModule& module,
                                          const InterestingnessFn& interesting,
                                          std::chrono::steady_clock::time_point deadline,
                                          int64_t max_steps = 16);

// The reducer's size measure (smaller is simpler).
int64_t ReductionSize(const HloModule& module);

}  // namespace spmdcheck::fuzz

#endif  // SPMDCHECK_FUZZ_REDUCER_H_
