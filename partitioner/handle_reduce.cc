// reduce: either the reduced dims stay tiled (local reduce with padding masked by the init value,
// then all-reduce with the reduce's own computation over the devices that split the reduced
// dims), or the operand is first moved to a tiling of the kept dims only. The cheaper wins.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/sharding_algebra.h"
#include "partitioner/partition_context.h"

namespace spmdcheck::partitioner {
namespace {

absl::StatusOr<PartitionedValue> HandleReduce(const HloInstruction& instruction,
                                              PartitionContext& context) {
  if (instruction.operand_count() != 2 || !instruction.shape().IsArray()) {
    return Decline("variadic reduce");
  }
  if (!instruction.attrs().dimensions.has_value()) return Decline("malformed");
  HloComputation* reducer = instruction.called_computation("to_apply");
  if (reducer == nullptr) return Decline("no to_apply");
  const int64_t n = context.num_partitions();
  const HloInstruction* operand = instruction.operand(0);
  const Shape& in = operand->shape();
  const Shape& out = instruction.shape();
  const std::vector<int64_t>& reduced = *instruction.attrs().dimensions;
  std::vector<int64_t> kept;
  for (int64_t k = 0; k < in.rank(); ++k) {
    if (std::find(reduced.begin(), reduced.end(), k) == reduced.end()) kept.push_back(k);
  }
  const HloSharding target = context.ShardingOf(&instruction).IsMaximal()
                                 ? HloSharding::Replicate()
                                 : context.ShardingOf(&instruction);

  // Plan A: keep the operand's tiling; all-reduce over its tiled reduced dims.
  struct PlanA {
    HloSharding operand;
    HloSharding result;
    std::vector<int64_t> tiled_reduced;
    int64_t score;
  };
  std::optional<PlanA> plan_a;
  const HloSharding& current = context.ValueOf(operand).sharding;
  if (current.IsTiled() && ManualSubgroupCount(current) == 1) {
    TileIndex counts = TileCounts(current, in.rank());
    std::vector<int64_t> tiled_reduced, out_counts;
    for (int64_t k : reduced) {
      if (counts[k] > 1) tiled_reduced.push_back(k);
    }
    for (int64_t k : kept) out_counts.push_back(counts[k]);
    absl::StatusOr<HloSharding> result = BuildSharding(out_counts, 1, n, [&](int64_t d) {
      DevicePlace p = PlaceOf(current, in.rank(), d);
      DevicePlace q;
      for (int64_t k : kept) q.data_index.push_back(p.data_index[k]);
      return q;
    });
    if (result.ok()) {
      int64_t score = 0;
      if (!tiled_reduced.empty()) {
        int64_t group = 1;
        for (int64_t k : tiled_reduced) group *= counts[k];
        score +=
            analysis::kAlphaBytes + 2 * (group - 1) * LocalShape(out, *result).ByteSize() / group;
      }
      absl::StatusOr<analysis::CollectiveCost> move = ReshardCost(out, *result, target, n);
      if (move.ok()) {
        plan_a = PlanA{current, *result, tiled_reduced, score + move->Score()};
      }
    }
  }
  // Plan B: move the operand to the target's tiling of the kept dims (reduced dims untiled).
  std::optional<HloSharding> plan_b;
  int64_t plan_b_score = 0;
  if (IsPlannable(target) && ManualSubgroupCount(target) == 1) {
    TileIndex out_counts = TileCounts(target, out.rank());
    std::vector<int64_t> in_counts(in.rank(), 1);
    for (size_t j = 0; j < kept.size(); ++j) in_counts[kept[j]] = out_counts[j];
    absl::StatusOr<HloSharding> operand_sharding = BuildSharding(in_counts, 1, n, [&](int64_t d) {
      DevicePlace p = PlaceOf(target, out.rank(), d);
      DevicePlace q;
      q.data_index.assign(in.rank(), 0);
      for (size_t j = 0; j < kept.size(); ++j) q.data_index[kept[j]] = p.data_index[j];
      return q;
    });
    if (operand_sharding.ok()) {
      plan_b = *operand_sharding;
      plan_b_score = context.ReshardScore(instruction, 0, *operand_sharding);
    }
  }
  if (!plan_a.has_value() && !plan_b.has_value()) return Decline("no tiling to reduce in");
  absl::StatusOr<PartitionedValue> init =
      context.OperandAs(instruction, 1, HloSharding::Replicate());
  if (!init.ok()) return init.status();
  SpmdBuilder& b = context.builder();
  if (plan_b.has_value() && (!plan_a.has_value() || plan_b_score <= plan_a->score)) {
    absl::StatusOr<PartitionedValue> v = context.OperandAs(instruction, 0, *plan_b);
    if (!v.ok()) return v.status();
    // The result is tiled as the target (plan B leaves the reduced dims untiled).
    HloInstruction* local =
        context.CloneLocal(instruction, {v->local, init->local}, LocalShape(out, target));
    return PartitionedValue{local, out, target};
  }
  PartitionedValue v = context.ValueOf(operand);
  if (!plan_a->tiled_reduced.empty() && !context.Bug("reduce-padding-unmasked")) {
    v = MaskPadding(b, v, 0, init->local);
  }
  HloInstruction* local =
      context.CloneLocal(instruction, {v.local, init->local}, LocalShape(out, plan_a->result));
  if (!plan_a->tiled_reduced.empty()) {
    std::vector<int64_t> tile_dims = plan_a->tiled_reduced;
    if (context.Bug("all-reduce-wrong-axis")) {
      // Injected bug: all-reduce over the kept dims' devices instead of the reduced dims'.
      tile_dims.clear();
      TileIndex counts = TileCounts(current, in.rank());
      for (int64_t k : kept) {
        if (counts[k] > 1) tile_dims.push_back(k);
      }
      if (tile_dims.empty()) tile_dims = plan_a->tiled_reduced;
    }
    local = b.AllReduce(local, current.GroupsAlongDims(tile_dims), context.CloneCalled(reducer));
  }
  return PartitionedValue{local, out, plan_a->result};
}

}  // namespace

void RegisterReduceHandlers(HandlerRegistry& registry) {
  registry.Register(HloOpcode::kReduce, HandleReduce);
}

}  // namespace spmdcheck::partitioner
