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
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/hlo_module.h"
#include "ir/sharding.h"

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

// Where the sharding of a root DescendRoot moved to came from.
enum class RootShardingSource {
  kOwn,         // Its own annotation.
  kPropagated,  // What the partitioner's sharding propagation gave it in the original module.
  kConsumer,    // Derived from the old root's sharding (ConsumerDerivedSharding).
  kNone,        // None: the partitioner chooses (what an unannotated root always got before).
};
const char* RootShardingSourceName(RootShardingSource source);

// The sharding operand `k` of `consumer` gets from the consumer's sharding `s`, when a simple rule
// says so: the element's sharding of a tuple; the same sharding when the operand's dims map one to
// one onto the consumer's at the same positions (elementwise ops, convert, bitcast-convert of the
// same width, dynamic-update-slice's operand 0, slice, dynamic-slice's operand 0, pad, reverse);
// for a concatenate, the same sharding with the concatenated dim untiled (its devices join the
// replication group; unchanged when it is not tiled). Nullopt otherwise (or when the result does
// not fit the operand's shape).
std::optional<HloSharding> ConsumerDerivedSharding(const HloInstruction& consumer, int64_t k,
                                                   const HloSharding& s);

struct DescendOptions {
  int64_t max_steps = 16;
  // The sharding the partitioner's propagation gave each instruction of the module being
  // descended (by name), in the original program's context. Empty: not known.
  absl::flat_hash_map<std::string, HloSharding> propagated;
};

// Moves the entry root down the chain that makes it while `interesting` allows: the root becomes
// one of its operands (a root tuple: one of its elements; parameters and constants are not
// tried), dead code going with it, until no such candidate is interesting, `max_steps` moves
// were made, or `deadline` passed. For a wrong value an output op only carries (a
// concatenate of a wrong scatter), the result ends at the op that makes it. The predicate's
// error stops the walk and is returned.
// A new root keeps the sharding it had in the program's context: its own annotation when it has
// one; else it is tried with the propagated sharding (options.propagated), then the one derived
// from the old root's (ConsumerDerivedSharding), then none, and the step is kept with the first
// of them (distinct ones only) that is interesting. Without that, an operand loses what its
// consumer made the partitioner give it, and the wrong value often goes with it.
struct DescendResult {
  std::unique_ptr<HloModule> module;  // `module` itself (a copy) when nothing moved.
  int64_t steps = 0;
  int64_t candidates_tried = 0;
  // One a step: `concatenate.38 -> dynamic-update-slice.15 (propagated sharding {...})`.
  std::vector<std::string> step_notes;
};
absl::StatusOr<DescendResult> DescendRoot(const HloModule& module,
                                          const InterestingnessFn& interesting,
                                          std::chrono::steady_clock::time_point deadline,
                                          const DescendOptions& options = {});

// The reducer's size measure (smaller is simpler).
int64_t ReductionSize(const HloModule& module);

}  // namespace spmdcheck::fuzz

#endif  // SPMDCHECK_FUZZ_REDUCER_H_
