// Splitting a partitioned module into chains: maximal runs of data movement and collectives
// between values with known shardings, and the module text of one chain on its own.
#ifndef SPMDCHECK_LINT_CHAINS_H_
#define SPMDCHECK_LINT_CHAINS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/hlo_module.h"
#include "ir/holds_comment.h"
#include "ir/sharding.h"

namespace spmdcheck::lint {

// The `// holds=NAME sharding={...}` comments of a dump, by source line.
using LineComments = absl::flat_hash_map<int64_t, HoldsComment>;
LineComments ParseLineComments(absl::string_view source_text);

// One chain: `source` (a parameter or a computing instruction, with a known sharding) flows
// through `members` (data movement and collectives, program order) to `end`.
struct Chain {
  const HloInstruction* source = nullptr;
  const HloInstruction* end = nullptr;
  std::vector<const HloInstruction*> members;  // Data-carrying instructions, `end` last.
  // Every instruction the chain needs besides the source (members and the integer plumbing:
  // partition-id, offset tables, masks), in program order.
  std::vector<const HloInstruction*> closure;
  int64_t collectives = 0;
};

struct ChainSplit {
  std::vector<Chain> chains;
  // Chains whose source (a computing instruction) or end has no sharding: no global meaning, but
  // the rules proved from the collectives' own semantics apply (LintModule).
  std::vector<Chain> unannotated;
  std::vector<std::string> notes;  // Runs that are not chains, and why.
};

// How the entry computation splits into runs of data movement: which values are data (depend on
// a parameter or an opaque value), which integers vary per partition, which instructions are run
// members (data movement whose data operands all come from one source; masked or placed values
// for reductions) and each member's run source.
struct RunStructure {
  std::vector<HloInstruction*> order;  // Post-order.
  absl::flat_hash_map<const HloInstruction*, bool> data;
  absl::flat_hash_map<const HloInstruction*, bool> per_partition;
  absl::flat_hash_map<const HloInstruction*, bool> member;
  absl::flat_hash_map<const HloInstruction*, bool> masked;
  absl::flat_hash_map<const HloInstruction*, const HloInstruction*> source_of;
  absl::flat_hash_map<const HloInstruction*, const HloInstruction*> data_operand;  // The first.
  absl::flat_hash_map<const HloInstruction*, std::vector<const HloInstruction*>> users;
};
RunStructure AnalyzeRuns(const HloComputation& entry);

// Chains of the entry computation that contain at least one collective (those without shardings
// at their ends in `unannotated`).
ChainSplit SplitIntoChains(const HloModule& module);

// The chain from `source` to `end` (which must depend on it): the closure of `end` stopping at
// `source`, members being the instructions that depend on `source`.
Chain ChainBetween(const HloInstruction* source, const HloInstruction* end);

// True for the opcodes a chain may contain.
bool IsDataMovement(HloOpcode opcode);

// Copies every computation of `module` but its entry into `out` (the computations reductions and
// collectives call), recording them in `cloner`.
void CloneCalledComputations(const HloModule& module, HloModule& out, HloCloner& cloner);

// Instructions standing in for some of a chain's (same name; their operands and called
// computations are the linted module's, remapped like the chain's own).
using InstructionOverrides = absl::flat_hash_map<const HloInstruction*, HloInstruction>;

// A module holding just `chain`, copied from `module` (no text round trip): parameter 0 is the
// source (same name, local shape and sharding), then the closure in order with `overrides` in
// place of the instructions they replace, the end as the root; every non-entry computation of
// `module` comes along. An error when an instruction uses a value the chain does not compute.
absl::StatusOr<std::unique_ptr<HloModule>> ChainModule(const HloModule& module, const Chain& chain,
                                                       int64_t num_partitions,
                                                       const InstructionOverrides& overrides = {});

}  // namespace spmdcheck::lint

#endif  // SPMDCHECK_LINT_CHAINS_H_
