#include "oracle/global_run.h"

#include <utility>

#include "ir/hlo_opcode.h"

namespace spmdcheck::oracle {

bool HasManualRegions(const HloModule& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (instruction->opcode() == HloOpcode::kCustomCall &&
          instruction->attrs().custom_call_target.value_or("") == "SPMDFullToShardShape") {
        return true;
      }
    }
  }
  return false;
}

std::vector<const Literal*> LiteralLeaves(const Literal& literal) {
  if (!literal.shape().IsTuple()) return {&literal};
  std::vector<const Literal*> out;
  for (const Literal& element : literal.tuple_elements()) {
    std::vector<const Literal*> inner = LiteralLeaves(element);
    out.insert(out.end(), inner.begin(), inner.end());
  }
  return out;
}

absl::StatusOr<std::vector<Literal>> RunGlobalProgram(const HloModule& global,
                                                      const std::vector<Literal>& inputs,
                                                      EngineOptions options) {
  if (!HasManualRegions(global)) options.num_partitions = 1;
  options.replica_count = 1;
  const int64_t devices = options.num_partitions;
  Engine engine(global, options);
  absl::StatusOr<std::vector<Literal>> results =
      engine.Run(std::vector<std::vector<Literal>>(static_cast<size_t>(devices), inputs));
  if (!results.ok()) return results.status();
  std::vector<Literal> leaves;
  for (const Literal* leaf : LiteralLeaves((*results)[0])) leaves.push_back(*leaf);
  return leaves;
}

}  // namespace spmdcheck::oracle
