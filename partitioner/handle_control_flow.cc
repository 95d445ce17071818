// tuple, get-tuple-element, while, conditional and call. Loop state keeps its sharding across
// iterations: the body is partitioned with its parameter and root under the while's sharding,
// the condition with its parameter under it; branches and callees take their operands' shardings.
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/sharding_algebra.h"
#include "partitioner/partition_context.h"

namespace spmdcheck::partitioner {
namespace {

absl::StatusOr<PartitionedValue> HandleTuple(const HloInstruction& instruction,
                                             PartitionContext& context) {
  const HloSharding& target = context.ShardingOf(&instruction);
  std::vector<HloInstruction*> elements;
  std::vector<HloSharding> shardings;
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    absl::StatusOr<PartitionedValue> v =
        context.OperandAs(instruction, i, ElementSharding(target, instruction.shape(), i));
    if (!v.ok()) return v.status();
    elements.push_back(v->local);
    shardings.push_back(v->sharding);
  }
  HloInstruction* local = context.builder().Tuple(std::move(elements));
  return PartitionedValue{local, instruction.shape(),
                          TupleSharding(instruction.shape(), shardings)};
}

absl::StatusOr<PartitionedValue> HandleGetTupleElement(const HloInstruction& instruction,
                                                       PartitionContext& context) {
  const PartitionedValue& tuple = context.ValueOf(instruction.operand(0));
  const int64_t index = instruction.attrs().tuple_index.value_or(0);
  HloInstruction* local = context.builder().GetTupleElement(tuple.local, index);
  return PartitionedValue{local, instruction.shape(),
                          ElementSharding(tuple.sharding, tuple.global_shape, index)};
}

absl::StatusOr<PartitionedValue> HandleWhile(const HloInstruction& instruction,
                                             PartitionContext& context) {
  HloComputation* body = instruction.called_computation("body");
  HloComputation* condition = instruction.called_computation("condition");
  if (body == nullptr || condition == nullptr || instruction.operand_count() != 1) {
    return Decline("malformed while");
  }
  const HloSharding state = context.ShardingOf(&instruction);
  absl::StatusOr<PartitionedValue> init = context.OperandAs(instruction, 0, state);
  if (!init.ok()) return init.status();
  absl::StatusOr<HloComputation*> new_body = context.PartitionCalled(body, {state}, state);
  if (!new_body.ok()) return new_body.status();
  absl::StatusOr<HloComputation*> new_condition =
      context.PartitionCalled(condition, {state}, HloSharding::Replicate());
  if (!new_condition.ok()) return new_condition.status();
  HloInstruction* local = context.builder().Add(
      HloOpcode::kWhile, LocalShape(instruction.shape(), state), {init->local}, "while");
  local->mutable_called().push_back({"condition", {*new_condition}, false});
  local->mutable_called().push_back({"body", {*new_body}, false});
  local->mutable_raw_attributes() = instruction.raw_attributes();
  return PartitionedValue{local, instruction.shape(), state};
}

// conditional and call: each called computation is partitioned with its parameters under the
// shardings the operands have now and its root under the instruction's sharding.
absl::StatusOr<PartitionedValue> HandleCalls(const HloInstruction& instruction,
                                             PartitionContext& context) {
  const HloSharding target = context.ShardingOf(&instruction);
  std::vector<HloInstruction*> operands;
  std::vector<HloSharding> operand_shardings;
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    // The branch selector of a conditional is needed whole on every device.
    const bool selector = instruction.opcode() == HloOpcode::kConditional && i == 0;
    absl::StatusOr<PartitionedValue> v =
        selector ? context.OperandAs(instruction, i, HloSharding::Replicate())
                 : absl::StatusOr<PartitionedValue>(context.ValueOf(instruction.operand(i)));
    if (!v.ok()) return v.status();
    operands.push_back(v->local);
    operand_shardings.push_back(v->sharding);
  }
  HloInstruction* local =
      context.builder().Add(instruction.opcode(), LocalShape(instruction.shape(), target),
                            std::move(operands), HloOpcodeString(instruction.opcode()));
  if (instruction.has_attrs()) local->set_shared_attrs(instruction.shared_attrs());
  for (const CalledComputations& called : instruction.called()) {
    CalledComputations copy = called;
    for (size_t c = 0; c < copy.computations.size(); ++c) {
      // Branch b of a conditional reads operand b + 1 (true_computation is branch 0,
      // false_computation branch 1, branch_computations in order); a call reads all its
      // operands.
      std::vector<HloSharding> params;
      if (instruction.opcode() == HloOpcode::kConditional) {
        size_t branch = c;
        if (called.role == "false_computation") {
          branch = 1;
        } else if (called.role == "true_computation") {
          branch = 0;
        } else if (called.role != "branch_computations") {
          return Decline(absl::StrCat("conditional calls a computation as ", called.role));
        }
        const size_t operand_index = branch + 1;
        if (operand_index >= operand_shardings.size()) return Decline("malformed conditional");
        params.push_back(operand_shardings[operand_index]);
      } else {
        params = operand_shardings;
      }
      absl::StatusOr<HloComputation*> partitioned =
          context.PartitionCalled(copy.computations[c], params, target);
      if (!partitioned.ok()) return partitioned.status();
      copy.computations[c] = *partitioned;
    }
    local->mutable_called().push_back(std::move(copy));
  }
  return PartitionedValue{local, instruction.shape(), target};
}

}  // namespace

void RegisterControlFlowHandlers(HandlerRegistry& registry) {
  registry.Register(HloOpcode::kTuple, HandleTuple);
  registry.Register(HloOpcode::kGetTupleElement, HandleGetTupleElement);
  registry.Register(HloOpcode::kWhile, HandleWhile);
  registry.Register(HloOpcode::kConditional, HandleCalls);
  registry.Register(HloOpcode::kCall, HandleCalls);
}

}  // namespace spmdcheck::partitioner
