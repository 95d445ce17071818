// Sort and TopK (sort.cc). RegisterSortOps (op_registry.h) registers kSort and kTopK; the
// custom-call form of TopK (`custom_call_target="TopK"`) is evaluated by EvaluateTopK, which the
// custom-call dispatcher (misc_ops.cc) calls.
#ifndef SPMDCHECK_ORACLE_SORT_H_
#define SPMDCHECK_ORACLE_SORT_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"
#include "oracle/op_registry.h"

namespace spmdcheck::oracle {

// `custom-call(x), custom_call_target="TopK"` with operand [batch..., n] and result
// (values [batch..., k], s32 indices [batch..., k]): the first k elements of a stable sort of each
// row along the last dim. The order is the `to_apply` comparator when present (2 parameters:
// lhs/rhs value; 4 parameters: lhs/rhs value then lhs/rhs s32 index); otherwise largest first in
// XLA's total order (NaN > inf > ... > 0 > -0 > ... > -inf > -NaN), or smallest first when the
// instruction carries `largest=false`. Equal elements keep the lower index first.
absl::StatusOr<Literal> EvaluateTopK(const HloInstruction& instruction,
                                     absl::Span<const Literal* const> operands, const EvalEnv& env);

}  // namespace spmdcheck::oracle

#endif  // SPMDCHECK_ORACLE_SORT_H_
