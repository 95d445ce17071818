// Role inference: per mesh axis, the evidence for each kind of parallelism.
//
// From dots (the pre-partitioning program's when given, else the module's own, with the
// shardings annotated on their operands; the weight operand is the one that reaches an entry
// parameter through data movement only, the rhs when both do):
//  - a split batch dim: stacked weights (expert or stage), or data/heads for activation dots;
//  - split contracting dims: tensor (row-parallel) with a weight, data (weight gradient) when an
//    activation dot contracts dim 0 of both operands;
//  - a split output-feature dim of the weight only: tensor (column-parallel);
//  - the activation's first free dim split: data, or FSDP/ZeRO when the weight is split over the
//    same axis (it must be gathered); a later free dim split: sequence/context.
// From collectives over a whole axis: all-to-all (expert, weak: GSPMD also reshards with it),
// all-gather of a parameter (FSDP), reduce-scatter (ZeRO), all-reduce of a dot's partial sums
// (tensor, or data for a weight gradient). From pipeline detection: pipeline (strongest), rings
// (tensor, weak). Axes with no such evidence fall back on the shapes they split: dim 0 (data) or
// other dims (tensor), weak.
#ifndef SPMDCHECK_EXPLAIN_ROLES_H_
#define SPMDCHECK_EXPLAIN_ROLES_H_

#include <vector>

#include "explain/explain.h"
#include "explain/pipeline.h"
#include "explain/program_facts.h"

namespace spmdcheck::explain {

// Evidence per axis (index = axis).
std::vector<std::vector<Evidence>> InferRoles(const ProgramFacts& facts,
                                              const PipelineDetection& detection);

// Roles in order of their evidence (strongest first), keeping the roles within one strength of the
// strongest (at least medium), or the strongest alone.
std::vector<Role> RankRoles(const std::vector<Evidence>& evidence);

}  // namespace spmdcheck::explain

#endif  // SPMDCHECK_EXPLAIN_ROLES_H_
