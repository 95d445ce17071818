#include "partitioner/planner.h"

#include <utility>

#include "partitioner/partitioner.h"
#include "partitioner/reshard.h"

namespace spmdcheck::partitioner {
namespace {

class Reference : public Planner {
 public:
  absl::StatusOr<std::unique_ptr<HloModule>> Partition(const HloModule& global,
                                                       int64_t num_partitions) const override {
    PartitionOptions options;
    options.num_partitions = num_partitions;
    absl::StatusOr<PartitionResult> result = PartitionModule(global, options);
    if (!result.ok()) return result.status();
    return std::move(result->module);
  }

  absl::StatusOr<int64_t> ReshardScore(const Shape& shape, const HloSharding& from,
                                       const HloSharding& to, int64_t num_partitions,
                                       const analysis::DomainWeights* weights) const override {
    absl::StatusOr<ReshardPlan> plan = PlanReshard(shape, from, to, num_partitions);
    if (!plan.ok()) return plan.status();
    if (weights == nullptr) return plan->cost.Score();
    // The plan's own cost is flat: weighted, its collectives are costed as built.
    absl::StatusOr<std::unique_ptr<HloModule>> module =
        BuildReshardModule(shape, from, *plan, num_partitions);
    if (!module.ok()) return plan->cost.Score();
    return analysis::CostOfModule(**module, num_partitions, weights).total.Score();
  }
};

}  // namespace

const Planner& ReferencePlanner() {
  static const Reference* const planner = new Reference();
  return *planner;
}

}  // namespace spmdcheck::partitioner
