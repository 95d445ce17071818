// custom-calls that carry sharding meaning: `Sharding` (a constraint: reshard to it),
// `SPMDFullToShardShape` (enter a manual region: the local piece becomes the manual value) and
// `SPMDShardToFullShape` (leave it: the manual value is the local piece of the result). Other
// custom-calls take the fallback.
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/sharding_algebra.h"
#include "partitioner/partition_context.h"

namespace spmdcheck::partitioner {
namespace {

absl::StatusOr<PartitionedValue> HandleCustomCall(const HloInstruction& instruction,
                                                  PartitionContext& context) {
  const std::string target_name = instruction.attrs().custom_call_target.value_or("");
  SpmdBuilder& b = context.builder();
  if (target_name == "Sharding" && instruction.operand_count() == 1) {
    const HloSharding& target = context.ShardingOf(&instruction);
    if (target.IsManual()) {
      const PartitionedValue& v = context.ValueOf(instruction.operand(0));
      return PartitionedValue{b.Copy(v.local), instruction.shape(), v.sharding};
    }
    return context.OperandAs(instruction, 0, target);
  }
  if (target_name == "SPMDFullToShardShape" && instruction.operand_count() == 1) {
    const HloInstruction* operand = instruction.operand(0);
    // The operand's own sharding says how the full value is cut into manual pieces.
    absl::StatusOr<PartitionedValue> v =
        context.OperandAs(instruction, 0, context.ShardingOf(operand));
    if (!v.ok()) return v.status();
    if (v->local->shape().dimensions() != instruction.shape().dimensions()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SPMDFullToShardShape result ", instruction.shape().ToString(false),
          " is not the shard shape ", v->local->shape().ToString(false), " of its operand"));
    }
    HloInstruction* local = b.Copy(v->local);
    return PartitionedValue{local, instruction.shape(), HloSharding::Manual()};
  }
  if (target_name == "SPMDShardToFullShape" && instruction.operand_count() == 1) {
    const HloSharding& target = context.ShardingOf(&instruction);
    const PartitionedValue& v = context.ValueOf(instruction.operand(0));
    const Shape local_shape = LocalShape(instruction.shape(), target);
    if (v.local->shape().dimensions() != local_shape.dimensions()) {
      return absl::InvalidArgumentError(
          absl::StrCat("SPMDShardToFullShape operand ", v.local->shape().ToString(false),
                       " is not the shard shape ", local_shape.ToString(false), " of the result"));
    }
    return PartitionedValue{b.Copy(v.local), instruction.shape(), target};
  }
  return Decline(absl::StrCat("custom-call target '", target_name, "'"));
}

}  // namespace

void RegisterCustomCallHandlers(HandlerRegistry& registry) {
  registry.Register(HloOpcode::kCustomCall, HandleCustomCall);
}

}  // namespace spmdcheck::partitioner
