// Shape inference: the result shape XLA derives for an instruction from its operands'
// shapes, its attributes and its called computations. Used by the parser for instructions
// written without a shape and by the verifier to check written shapes.
#ifndef SPMDCHECK_IR_SHAPE_INFERENCE_H_
#define SPMDCHECK_IR_SHAPE_INFERENCE_H_

#include "absl/status/statusor.h"
#include "ir/hlo_module.h"
#include "ir/shape.h"

namespace spmdcheck {

// What the shape of `instruction` must be (layouts not inferred). Returns:
// - the inferred shape when the opcode's shape follows from operands and attributes;
// - absl::UnimplementedError when the opcode's shape cannot be inferred (parameter, constant,
//   custom-call, reshape, collectives whose participant count is unknown, ...): callers then
//   keep the written shape;
// - absl::InvalidArgumentError naming the problem when operands/attributes are inconsistent
//   (wrong operand count, rank mismatch, dimension out of range, element type mismatch, ...).
// `num_partitions`/`replica_count` are the module's counts (used for collectives).
absl::StatusOr<Shape> InferShape(const HloInstruction& instruction, int64_t num_partitions,
                                 int64_t replica_count);

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_SHAPE_INFERENCE_H_
