// What a per-op handler sees while one computation is partitioned: the partitioned values of its
// operands, the sharding chosen for each global instruction, the builder, and ways to reshard,
// clone called computations or partition them. Handlers live in handle_*.cc, one op family per
// file, and register themselves in the HandlerRegistry.
#ifndef SPMDCHECK_PARTITIONER_PARTITION_CONTEXT_H_
#define SPMDCHECK_PARTITIONER_PARTITION_CONTEXT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/hlo_module.h"
#include "partitioner/partitioner.h"
#include "partitioner/reshard.h"
#include "partitioner/spmd_builder.h"

namespace spmdcheck::partitioner {

class ModulePartitioner;

// A handler declines (the driver then takes the fallback) by returning this error; the message
// is the reason `--stats` counts.
absl::Status Decline(absl::string_view reason);
bool IsDecline(const absl::Status& status);

class PartitionContext {
 public:
  PartitionContext(ModulePartitioner* module, SpmdBuilder* builder,
                   const absl::flat_hash_map<const HloInstruction*, HloSharding>* shardings,
                   absl::flat_hash_map<const HloInstruction*, PartitionedValue>* values)
      : module_(module), builder_(builder), shardings_(shardings), values_(values) {}

  SpmdBuilder& builder() { return *builder_; }
  int64_t num_partitions() const { return builder_->num_partitions(); }
  const PartitionOptions& options() const;
  // True when the named injected bug is switched on.
  bool Bug(absl::string_view name) const { return options().inject_bug == name; }

  // The sharding chosen for a global instruction of this computation.
  const HloSharding& ShardingOf(const HloInstruction* global) const;
  // The current partitioned value of a global operand.
  const PartitionedValue& ValueOf(const HloInstruction* global) const;
  // The operand resharded to `sharding`.
  absl::StatusOr<PartitionedValue> OperandAs(const HloInstruction& instruction, int64_t i,
                                             const HloSharding& sharding);
  // Records that `value` holds `global` too (a handler's result before the driver resharded it to
  // the chosen sharding): users wanting that sharding take it instead of a reshard back.
  void RememberForm(const HloInstruction* global, const PartitionedValue& value);
  // Cost of resharding operand i to `sharding` (zero when it already is).
  int64_t ReshardScore(const HloInstruction& instruction, int64_t i, const HloSharding& sharding);

  // A copy of a global computation in the partitioned module (to_apply, comparators, ...),
  // shardings stripped; the same copy for every caller.
  HloComputation* CloneCalled(const HloComputation* global);
  // A partitioned version of `global` whose parameters hold values under `param_shardings` and
  // whose root is resharded to `root_sharding`.
  absl::StatusOr<HloComputation*> PartitionCalled(const HloComputation* global,
                                                  const std::vector<HloSharding>& param_shardings,
                                                  const HloSharding& root_sharding);

  // A local instruction like `global` (same opcode, attributes, literal, called computations
  // copied) with the given operands and shape.
  HloInstruction* CloneLocal(const HloInstruction& global, std::vector<HloInstruction*> operands,
                             Shape shape);

 private:
  ModulePartitioner* module_;
  SpmdBuilder* builder_;
  const absl::flat_hash_map<const HloInstruction*, HloSharding>* shardings_;
  absl::flat_hash_map<const HloInstruction*, PartitionedValue>* values_;
  // Operands already resharded in this computation, by (operand, target sharding): later users
  // reuse them instead of emitting the same collectives again.
  absl::flat_hash_map<std::pair<const HloInstruction*, std::string>, PartitionedValue> reshards_;
  // Other shardings each value is already held under (RememberForm): a reshard starts from the
  // cheapest of them.
  absl::flat_hash_map<const HloInstruction*, std::vector<PartitionedValue>> forms_;
  // The held form of `operand` cheapest to reshard to `sharding`, and that cost's score.
  std::pair<const PartitionedValue*, int64_t> CheapestForm(const HloInstruction* operand,
                                                           const HloSharding& sharding);
};

// A handler partitions one global instruction and returns its value under any sharding it likes
// (the driver then reshards it to the chosen one). Decline() -> fallback.
using Handler =
    std::function<absl::StatusOr<PartitionedValue>(const HloInstruction&, PartitionContext&)>;

class HandlerRegistry {
 public:
  void Register(HloOpcode opcode, Handler handler) { handlers_[opcode] = std::move(handler); }
  const Handler* Find(HloOpcode opcode) const {
    auto it = handlers_.find(opcode);
    return it == handlers_.end() ? nullptr : &it->second;
  }

 private:
  absl::flat_hash_map<HloOpcode, Handler> handlers_;
};

// Each handler family registers its opcodes (handle_*.cc).
void RegisterElementwiseHandlers(HandlerRegistry& registry);
void RegisterShapeHandlers(HandlerRegistry& registry);
void RegisterReduceHandlers(HandlerRegistry& registry);
void RegisterDotHandlers(HandlerRegistry& registry);
void RegisterControlFlowHandlers(HandlerRegistry& registry);
void RegisterCustomCallHandlers(HandlerRegistry& registry);
void RegisterIndexingHandlers(HandlerRegistry& registry);

// Shardings built from others (shared by handlers).
// Replicated for every leaf of `shape`.
HloSharding ReplicatedLike(const Shape& shape);
// Local (per-device) shape of `shape` under `sharding` (tuple-aware; manual keeps the shape).
Shape LocalShape(const Shape& shape, const HloSharding& sharding);

}  // namespace spmdcheck::partitioner

#endif  // SPMDCHECK_PARTITIONER_PARTITION_CONTEXT_H_
