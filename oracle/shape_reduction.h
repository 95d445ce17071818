// Shape reduction: a consistent shrink of every dimension of a global (sharded) HLO module, so
// that modules declaring arrays of 10^8..10^11 elements can be partitioned and checked by the
// CPU oracle. Every dimension is scaled down together with every dimension tied to it by an op;
// sharded dims keep their remainder modulo their tile counts (even stays even, uneven stays
// uneven); slice/pad/window/dynamic-slice/gather attributes are rewritten to stay valid and every
// rewritten instruction's shape is re-checked with shape inference.
#ifndef SPMDCHECK_ORACLE_SHAPE_REDUCTION_H_
#define SPMDCHECK_ORACLE_SHAPE_REDUCTION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ir/hlo_module.h"

namespace spmdcheck::oracle {

struct ShrinkOptions {
  // Every array (each leaf of a tuple) of the result has at most this many elements.
  int64_t max_elements_per_array = int64_t{1} << 16;
  // The arrays of all instructions of the result together have at most this many elements.
  int64_t max_total_elements = int64_t{1} << 22;
  // Partition count used for shape inference; 0: the module's.
  int64_t num_partitions = 0;
};

struct ShrinkResult {
  std::unique_ptr<HloModule> module;
  // False when nothing exceeded the budget (module is then a plain copy).
  bool shrunk = false;
  // What changed, e.g. "dims shrunk: f32[8192,4096] -> f32[16,8] (param.1), ...; 12 of 40
  // arrays changed". Empty when nothing changed.
  std::string description;
};

// A copy of `global` whose arrays fit `options`, with the same instructions, shardings and
// structure. Errors: Unimplemented ("shape reduction: REASON: details") when the module cannot be
// shrunk consistently within the budget (an op whose dims cannot be related, a constant that
// cannot be resized, ...); InvalidArgument when `global` itself does not verify. Never returns a
// module that silently means something else.
absl::StatusOr<ShrinkResult> ShrinkModuleShapes(const HloModule& global,
                                                const ShrinkOptions& options = {});

}  // namespace spmdcheck::oracle

#endif  // SPMDCHECK_ORACLE_SHAPE_REDUCTION_H_
