// The resharding planner: moves a value from one sharding to another over the same devices with
// the cheapest sequence of steps under the cost model (analysis/cost_model.h). Steps are
// all-gathers over tiled dims, all-to-alls moving a split between dims, dynamic-slices (no data
// moved) and collective-permutes (same tile grid, other devices). Candidate plans of up to two
// data-moving steps followed by a finishing dynamic-slice and/or permute are priced; the naive plan
// (all-gather everything, then dynamic-slice) is always a candidate, so the chosen plan is
// never worse than it.
#ifndef SPMDCHECK_PARTITIONER_RESHARD_H_
#define SPMDCHECK_PARTITIONER_RESHARD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/cost_model.h"
#include "ir/hlo_module.h"
#include "ir/shape.h"
#include "ir/sharding.h"
#include "partitioner/spmd_builder.h"

namespace spmdcheck::partitioner {

// A value of the global program as the partitioned program holds it: `local` is every device's
// piece of the global value of `global_shape` under `sharding`.
struct PartitionedValue {
  HloInstruction* local = nullptr;
  Shape global_shape;
  HloSharding sharding;
};

enum class ReshardStepKind {
  kAllGather,          // dims: tiled dims gathered (in descending order)
  kAllToAll,           // dims: {source dim, target dim}
  kDynamicSlice,       // to `result`; no data moved
  kCollectivePermute,  // same tile grid, devices moved
  kBroadcastMaximal,   // {maximal device=D} -> replicated (masked all-reduce)
  kAllReduceGather,    // dims: {k}; a dim with at most one element per tile gathered by a
                       // masked, offset all-reduce (cheaper than all-gather when tiles > size)
  kRelabel,            // same local data, another sharding (e.g. replicated -> maximal)
};

struct ReshardStep {
  ReshardStepKind kind;
  std::vector<int64_t> dims;
  HloSharding result;
  analysis::CollectiveCost cost;
};

struct ReshardPlan {
  std::vector<ReshardStep> steps;
  analysis::CollectiveCost cost;
  // `all-gather(dims=1) -> dynamic-slice`, or `nothing` for the empty plan.
  std::string Describe() const;
};

// Cheapest plan from `from` to `to` for an array of `shape` over `num_devices` partitions.
// Errors: shardings that do not fit the shape, manual/unreduced shardings other than
// manual -> the same manual.
absl::StatusOr<ReshardPlan> PlanReshard(const Shape& shape, const HloSharding& from,
                                        const HloSharding& to, int64_t num_devices);
// All-gather to replicated, then dynamic-slice (the baseline every plan is compared with).
absl::StatusOr<ReshardPlan> NaiveReshardPlan(const Shape& shape, const HloSharding& from,
                                             const HloSharding& to, int64_t num_devices);
// PlanReshard's search without pruning and without the memo: every candidate is costed. The
// pruned search must find the same plan (costs only add up along a plan); tests compare them.
absl::StatusOr<ReshardPlan> ExhaustiveReshardPlan(const Shape& shape, const HloSharding& from,
                                                  const HloSharding& to, int64_t num_devices);

// Emits `plan` (from value.sharding) and returns the value under the plan's final sharding.
absl::StatusOr<PartitionedValue> ApplyReshardPlan(SpmdBuilder& builder,
                                                  const PartitionedValue& value,
                                                  const ReshardPlan& plan);

// Plans and emits; tuple values are resharded leaf by leaf. A no-op returns `value` itself.
absl::StatusOr<PartitionedValue> Reshard(SpmdBuilder& builder, const PartitionedValue& value,
                                         const HloSharding& to);

// Cost of Reshard(value, to) without emitting anything (tuple-aware).
absl::StatusOr<analysis::CollectiveCost> ReshardCost(const Shape& shape, const HloSharding& from,
                                                     const HloSharding& to, int64_t num_devices);

// A partitioned module that runs `plan`: parameter 0 is the local piece of an array of `shape`
// under `from` (annotated), the root the local piece under the plan's final sharding.
absl::StatusOr<std::unique_ptr<HloModule>> BuildReshardModule(const Shape& shape,
                                                              const HloSharding& from,
                                                              const ReshardPlan& plan,
                                                              int64_t num_devices);

// Zeroes (or sets to `fill`) every padding element of an unevenly tiled local value, so that a
// reduction over it sees only real elements.
PartitionedValue MaskPadding(SpmdBuilder& builder, const PartitionedValue& value, double fill,
                             HloInstruction* fill_value = nullptr);

}  // namespace spmdcheck::partitioner

#endif  // SPMDCHECK_PARTITIONER_RESHARD_H_
