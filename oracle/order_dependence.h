// Reductions whose result XLA leaves implementation-defined: a reduction computation that is
// not a known commutative and associative op of its two parameters (an argmax with ties, a
// select, a subtraction), or an init value that is not that op's identity (XLA may apply the
// init value any number of times). Partitioning changes the reduction order, so partitioned and
// global results may legitimately differ there; a difference is then no counterexample.
#ifndef SPMDCHECK_ORACLE_ORDER_DEPENDENCE_H_
#define SPMDCHECK_ORACLE_ORDER_DEPENDENCE_H_

#include <optional>
#include <string>

#include "ir/hlo_module.h"

namespace spmdcheck::oracle {

// The first order-dependent reduction of `module` (reduce, reduce-window, all-reduce,
// reduce-scatter), described ("reduce.13: its reduction computation is not ..."), or nullopt.
std::optional<std::string> FindOrderDependentReduction(const HloModule& module);

}  // namespace spmdcheck::oracle

#endif  // SPMDCHECK_ORACLE_ORDER_DEPENDENCE_H_
