#include "oracle/order_dependence.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace spmdcheck::oracle {
namespace {

// The binary op a reduction computation applies to its two parameters, when it is one XLA
// treats as commutative and associative (floats: exactly so on the oracle's integer inputs).
std::optional<HloOpcode> CommutativeOp(const HloComputation& computation) {
  const HloInstruction* root = computation.root();
  if (root == nullptr || root->operand_count() != 2) return std::nullopt;
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter ||
      a->parameter_number() == b->parameter_number()) {
    return std::nullopt;
  }
  switch (root->opcode()) {
    case HloOpcode::kAdd:
    case HloOpcode::kMultiply:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kXor:
      return root->opcode();
    default:
      return std::nullopt;
  }
}

// Whether `init` is a constant equal to the identity of `op` (every element, for arrays).
bool IsIdentity(const HloInstruction& init, HloOpcode op) {
  const HloInstruction* value = &init;
  while (value->opcode() == HloOpcode::kBroadcast || value->opcode() == HloOpcode::kConvert ||
         value->opcode() == HloOpcode::kCopy || value->opcode() == HloOpcode::kReshape) {
    if (value->operand_count() != 1) return false;
    value = value->operand(0);
  }
  if (value->opcode() != HloOpcode::kConstant || !value->literal().has_value()) return false;
  const Literal& literal = *value->literal();
  if (literal.elided() || !literal.shape().IsArray()) return false;
  const PrimitiveType type = literal.shape().element_type();
  const bool floating = IsFloatingType(type);
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    bool ok = false;
    if (floating) {
      const double x = literal.GetDouble(i);
      switch (op) {
        case HloOpcode::kAdd:
          ok = x == 0;
          break;
        case HloOpcode::kMultiply:
          ok = x == 1;
          break;
        case HloOpcode::kMaximum:
          ok = std::isinf(x) && x < 0;
          break;
        case HloOpcode::kMinimum:
          ok = std::isinf(x) && x > 0;
          break;
        default:
          ok = false;
      }
    } else if (type == PrimitiveType::kPred) {
      const bool x = literal.GetUint64(i) != 0;
      const bool identity_is_true =
          op == HloOpcode::kAnd || op == HloOpcode::kMultiply || op == HloOpcode::kMinimum;
      ok = x == identity_is_true;
    } else {
      const bool is_signed = IsSignedIntegralType(type);
      const int bits = BitWidth(type);
      const uint64_t u = literal.GetUint64(i);
      const int64_t s = literal.GetInt64(i);
      const uint64_t all = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      switch (op) {
        case HloOpcode::kAdd:
        case HloOpcode::kOr:
        case HloOpcode::kXor:
          ok = u == 0;
          break;
        case HloOpcode::kMultiply:
          ok = u == 1;
          break;
        case HloOpcode::kAnd:
          ok = (u & all) == all;
          break;
        case HloOpcode::kMaximum:
          ok = is_signed ? s == -(int64_t{1} << (bits - 1)) : u == 0;
          break;
        case HloOpcode::kMinimum:
          ok = is_signed ? s == static_cast<int64_t>((uint64_t{1} << (bits - 1)) - 1)
                         : (u & all) == all;
          break;
        default:
          ok = false;
      }
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> FindOrderDependentReduction(const HloModule& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      const HloOpcode opcode = instruction->opcode();
      const bool has_init = opcode == HloOpcode::kReduce || opcode == HloOpcode::kReduceWindow;
      if (!has_init && opcode != HloOpcode::kAllReduce && opcode != HloOpcode::kReduceScatter) {
        continue;
      }
      const HloComputation* reducer = instruction->called_computation("to_apply");
      if (reducer == nullptr) continue;
      std::optional<HloOpcode> op = CommutativeOp(*reducer);
      if (!op.has_value()) {
        return absl::StrCat(instruction->name(), ": its reduction computation ", reducer->name(),
                            " is not a commutative, associative op of its parameters");
      }
      if (has_init) {
        // Operands: the inputs, then as many init values.
        const int64_t inputs = instruction->operand_count() / 2;
        for (int64_t k = inputs; k < instruction->operand_count(); ++k) {
          if (!IsIdentity(*instruction->operand(k), *op)) {
            return absl::StrCat(instruction->name(), ": its init value ",
                                instruction->operand(k)->name(), " is not the identity of ",
                                HloOpcodeString(*op));
          }
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace spmdcheck::oracle
