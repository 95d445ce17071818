// Elementwise ops (unary, binary, ternary incl. select and clamp, compare, convert, map, ...):
// every array operand is resharded to one sharding of the result's dims and the op runs on the
// local pieces. The sharding is the result's, or an operand's when moving the result once is
// cheaper than moving every operand.
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/sharding_algebra.h"
#include "partitioner/partition_context.h"

namespace spmdcheck::partitioner {
namespace {

absl::StatusOr<PartitionedValue> HandleElementwise(const HloInstruction& instruction,
                                                   PartitionContext& context) {
  const Shape& shape = instruction.shape();
  if (!shape.IsArray()) return Decline("non-array elementwise result");
  for (const HloInstruction* operand : instruction.operands()) {
    if (!operand->shape().IsArray()) return Decline("non-array operand");
    if (operand->shape().rank() != 0 && operand->shape().dimensions() != shape.dimensions()) {
      return Decline("operand dims differ from the result's");
    }
  }
  const HloSharding& target = context.ShardingOf(&instruction);
  if (!IsPlannable(target) && !target.IsMaximal()) return Decline("unsupported result sharding");
  // Candidate shardings for the computation: the target and each array operand's.
  std::vector<HloSharding> candidates = {target.IsMaximal() ? HloSharding::Replicate() : target};
  for (const HloInstruction* operand : instruction.operands()) {
    const HloSharding& s = context.ValueOf(operand).sharding;
    if (operand->shape().rank() == shape.rank() && IsPlannable(s)) candidates.push_back(s);
  }
  std::optional<HloSharding> best;
  int64_t best_score = 0;
  for (const HloSharding& candidate : candidates) {
    int64_t score = 0;
    for (int64_t i = 0; i < instruction.operand_count(); ++i) {
      const bool scalar = instruction.operand(i)->shape().rank() == 0 && shape.rank() != 0;
      score += context.ReshardScore(instruction, i, scalar ? HloSharding::Replicate() : candidate);
    }
    absl::StatusOr<analysis::CollectiveCost> out =
        ReshardCost(shape, candidate, target, context.num_partitions());
    if (!out.ok()) continue;
    score += out->Score();
    if (!best.has_value() || score < best_score) {
      best = candidate;
      best_score = score;
    }
  }
  if (!best.has_value()) return Decline("no sharding to compute in");
  std::vector<HloInstruction*> operands;
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    const bool scalar = instruction.operand(i)->shape().rank() == 0 && shape.rank() != 0;
    absl::StatusOr<PartitionedValue> v =
        context.OperandAs(instruction, i, scalar ? HloSharding::Replicate() : *best);
    if (!v.ok()) return v.status();
    operands.push_back(v->local);
  }
  HloInstruction* local =
      context.CloneLocal(instruction, std::move(operands), LocalShape(shape, *best));
  return PartitionedValue{local, shape, *best};
}

}  // namespace

void RegisterElementwiseHandlers(HandlerRegistry& registry) {
  for (int op = 0; op <= static_cast<int>(HloOpcode::kXor); ++op) {
    const HloOpcode opcode = static_cast<HloOpcode>(op);
    if (ElementwiseArity(opcode) > 0) registry.Register(opcode, HandleElementwise);
  }
  for (HloOpcode opcode :
       {HloOpcode::kCompare, HloOpcode::kConvert, HloOpcode::kIsFinite, HloOpcode::kReducePrecision,
        HloOpcode::kMap, HloOpcode::kBitcastConvert, HloOpcode::kStochasticConvert}) {
    registry.Register(opcode, HandleElementwise);
  }
}

}  // namespace spmdcheck::partitioner
