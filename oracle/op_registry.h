// The interpreter's op handlers: one registration function per op family (one file each), a
// table from opcode to handler, and the environment a handler sees.
#ifndef SPMDCHECK_ORACLE_OP_REGISTRY_H_
#define SPMDCHECK_ORACLE_OP_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"

namespace spmdcheck::oracle {

// Runs a computation that may not communicate (a reducer, comparator, map or scatter combiner)
// on one device with the given arguments.
using CallFn = std::function<absl::StatusOr<Literal>(const HloComputation& computation,
                                                     absl::Span<const Literal* const> args)>;

// What a (non-collective) handler may know about where it runs.
struct EvalEnv {
  int64_t replica_id = 0;
  int64_t partition_id = 0;
  int64_t num_partitions = 1;
  int64_t replica_count = 1;
  // Seed for rng / rng-bit-generator, mixed with the instruction and the device by the handler.
  uint64_t seed = 0;
  CallFn call;
};

// Computes one instruction's value on one device from its operands' values on that device.
// Unsupported forms return absl::UnimplementedError naming the op; inconsistent input returns
// absl::InvalidArgumentError naming the instruction.
using OpHandler = absl::StatusOr<Literal> (*)(const HloInstruction& instruction,
                                              absl::Span<const Literal* const> operands,
                                              const EvalEnv& env);

// A collective: computes every participating device's result at once. `operands[i]` are the
// operand values of device `devices[i]` (a flattened id replica * P + partition); the result
// holds one literal per entry of `devices`, in the same order.
struct CollectiveArgs {
  const HloInstruction* instruction = nullptr;
  absl::Span<const int64_t> devices;
  const std::vector<std::vector<const Literal*>>* operands = nullptr;
  int64_t num_partitions = 1;
  int64_t replica_count = 1;
  CallFn call;
};
using CollectiveHandler = absl::StatusOr<std::vector<Literal>> (*)(const CollectiveArgs& args);

class OpRegistry {
 public:
  void Register(HloOpcode opcode, OpHandler handler) { handlers_[opcode] = handler; }
  void RegisterCollective(HloOpcode opcode, CollectiveHandler handler) {
    collectives_[opcode] = handler;
  }
  OpHandler Find(HloOpcode opcode) const {
    auto it = handlers_.find(opcode);
    return it == handlers_.end() ? nullptr : it->second;
  }
  CollectiveHandler FindCollective(HloOpcode opcode) const {
    auto it = collectives_.find(opcode);
    return it == collectives_.end() ? nullptr : it->second;
  }

  // Every family registered (built once).
  static const OpRegistry& Default();

 private:
  absl::flat_hash_map<HloOpcode, OpHandler> handlers_;
  absl::flat_hash_map<HloOpcode, CollectiveHandler> collectives_;
};

// One registration function per op family file.
void RegisterElementwiseOps(OpRegistry& registry);  // elementwise.cc
void RegisterShapeOps(OpRegistry& registry);        // shape_ops.cc
void RegisterReductionOps(OpRegistry& registry);    // reduction.cc
void RegisterContractionOps(OpRegistry& registry);  // contraction.cc (dot, convolution)
void RegisterIndexingOps(OpRegistry& registry);     // indexing.cc (gather, scatter)
void RegisterSortOps(OpRegistry& registry);         // sort.cc (sort, TopK)
void RegisterMiscOps(OpRegistry& registry);         // misc_ops.cc (ids, rng, custom-calls, ...)
void RegisterCollectiveOps(OpRegistry& registry);   // collectives.cc

// custom-call SPMDShardToFullShape needs every device's shard, so the engine runs it as a
// collective through this entry point (misc_ops.cc).
absl::StatusOr<std::vector<Literal>> EvaluateShardToFull(const CollectiveArgs& args);

}  // namespace spmdcheck::oracle

#endif  // SPMDCHECK_ORACLE_OP_REGISTRY_H_
