// What the collective lint's intermediate-sharding search (lint/search.h) asks of a partitioner:
// partition a small global module (a chain's meaning with the shardings it tries) and price
// resharding one value. The lint sees only this interface; the reference partitioner and its
// resharding planner implement it (ReferencePlanner), so another planner can stand in.
#ifndef SPMDCHECK_PARTITIONER_PLANNER_H_
#define SPMDCHECK_PARTITIONER_PLANNER_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "analysis/cost_model.h"
#include "ir/hlo_module.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace spmdcheck::partitioner {

class Planner {
 public:
  virtual ~Planner() = default;
  // The per-device program of `global` (every value's sharding annotated) on `num_partitions`
  // devices. Errors as the partitioner gives them.
  virtual absl::StatusOr<std::unique_ptr<HloModule>> Partition(const HloModule& global,
                                                               int64_t num_partitions) const = 0;
  // The cost score (CollectiveCost::Score) of the cheapest resharding of a value of `shape` from
  // `from` to `to`, its collectives weighted by `weights` when not null. An error when there is
  // no plan.
  virtual absl::StatusOr<int64_t> ReshardScore(const Shape& shape, const HloSharding& from,
                                               const HloSharding& to, int64_t num_partitions,
                                               const analysis::DomainWeights* weights) const = 0;
};

// The reference partitioner (PartitionModule) and its resharding planner (PlanReshard).
const Planner& ReferencePlanner();

}  // namespace spmdcheck::partitioner

#endif  // SPMDCHECK_PARTITIONER_PLANNER_H_
