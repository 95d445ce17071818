// `prove instructions`: every collective of a partitioned module is consistent with the sharding
// annotated on its operand and on its result. The annotation of an instruction is its `sharding=`
// attribute or, as in XLA dumps after partitioning and in our case files, a
// `// holds=NAME sharding={...}` comment on its line. Groups are resolved to partition ids per
// spec §3.2 (replica_count 1). Per collective:
// - collective-permute: ProvePairs(operand sharding, result sharding, pairs).
// - all-gather dims={g}: the shardings differ exactly in data tile dim g, whose T_in tiles the
//   result merges into T_out = T_in / n (T_out = 1: a full gather); the result dim is n times the
//   operand's; the groups are ProveGroups(operand, {g}) (for a partial gather: along the minor
//   factor n of tile dim g); every device's result tile is its operand tile with index g divided
//   by n (Z3 over the two tile assignments). The order of the groups in the list may differ, the
//   member order may not.
// - reduce-scatter dims={s}: the same with operand and result swapped.
// - all-reduce: the data dims C whose split the result drops entirely; the groups are the
//   operand's groups along C, as sets (the order of a sum does not matter over the integers);
//   placement as for all-gather. The operand's non-owner shards must be zero, which the
//   annotations do not show (prove chain sees the mask).
// - all-to-all dims={d}: one data dim s loses a factor n of its split, one dim t gains it, d = t;
//   the groups are ProveGroups(operand, {s}) and equal the result's groups along {t}.
// - collective-broadcast: every device's result tile is the operand tile of its group's first
//   member.
// Collectives whose operand or result has no annotation are `unknown` with that reason.
#ifndef SPMDCHECK_SMT_INSTRUCTION_CHECKS_H_
#define SPMDCHECK_SMT_INSTRUCTION_CHECKS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/hlo_module.h"
#include "ir/sharding.h"
#include "smt/device_algebra.h"
#include "smt/proof_result.h"

namespace spmdcheck::smt {

struct InstructionCheckOptions {
  int64_t num_partitions = 0;  // 0: the module's num_partitions.
  int64_t timeout_ms = kDefaultTimeoutMs;
  Procedure procedure = Procedure::kAuto;  // For the group, pair and placement facts.
  // The module's source text, for `// ... sharding={...}` comments (optional).
  std::string source_text;
};

struct InstructionCheck {
  std::string name;
  std::string opcode;
  int64_t line = 0;
  ProofResult result;
  std::string detail;  // What was checked (groups, dims), for a proved line.
};

// One entry per collective of the entry computation (and of every other
// computation), in program order. Errors only for modules without an entry
// computation.
absl::StatusOr<std::vector<InstructionCheck>> CheckCollectiveInstructions(
    const HloModule& module, const InstructionCheckOptions& options);

// The annotation of `instruction`: its sharding= attribute, else a
// `sharding={...}` in a `//` comment on its source lines (up to the next
// instruction's line).
std::optional<HloSharding> AnnotatedSharding(const HloInstruction& instruction,
                                             absl::string_view source_text);

// Every device's data tile under `to` equals its data tile under `from`, except along the data
// dims in `dropped`, where `to` keeps T_to of the T_from tiles: index_to = index_from / (T_from /
// T_to) (0 when `to` does not split the dim). Devices of `to` must hold a tile under `from`.
ProofResult ProvePlacement(const HloSharding& from, const HloSharding& to,
                           const std::vector<int64_t>& dropped, const FactOptions& options);
ProofResult ProvePlacement(const HloSharding& from, const HloSharding& to,
                           const std::vector<int64_t>& dropped, int64_t timeout_ms);

}  // namespace spmdcheck::smt

#endif  // SPMDCHECK_SMT_INSTRUCTION_CHECKS_H_
