#include "oracle/kernel_util.h"

namespace spmdcheck::oracle {

ReducerKind MatchBinaryReducer(const HloComputation& computation) {
  const HloInstruction* root = computation.root();
  if (root == nullptr || root->operand_count() != 2 || !root->shape().IsScalar()) {
    return ReducerKind::kOther;
  }
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter || a == b ||
      computation.parameters().size() != 2) {
    return ReducerKind::kOther;
  }
  switch (root->opcode()) {
    case HloOpcode::kAdd:
      return ReducerKind::kAdd;
    case HloOpcode::kMultiply:
      return ReducerKind::kMultiply;
    case HloOpcode::kMaximum:
      return ReducerKind::kMaximum;
    case HloOpcode::kMinimum:
      return ReducerKind::kMinimum;
    case HloOpcode::kAnd:
      return ReducerKind::kAnd;
    case HloOpcode::kOr:
      return ReducerKind::kOr;
    case HloOpcode::kXor:
      return ReducerKind::kXor;
    default:
      return ReducerKind::kOther;
  }
}

}  // namespace spmdcheck::oracle
