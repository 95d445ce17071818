// dot: three strategies, priced with the cost model, the cheapest wins.
//  - lhs-driven: keep the lhs tiling; the rhs takes the same tiling of batch and contracting dims;
//    if contracting dims are tiled, padding is zeroed on both sides, the local dot gives partial
//    sums and an all-reduce over the devices that split the contracting dims completes them.
//  - rhs-driven: the same from the rhs.
//  - result-driven: both operands take the result's tiling of their batch and free dims; no
//    collective after the local dot.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "partitioner/partition_context.h"
#include "partitioner/sharding_util.h"

namespace spmdcheck::partitioner {
namespace {

struct DotDims {
  std::vector<int64_t> lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
  std::vector<int64_t> lhs_free, rhs_free;  // In order; output = batch, lhs_free, rhs_free.
};

std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting) {
  std::vector<int64_t> free;
  for (int64_t k = 0; k < rank; ++k) {
    if (std::find(batch.begin(), batch.end(), k) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), k) == contracting.end()) {
      free.push_back(k);
    }
  }
  return free;
}

struct DotPlan {
  HloSharding lhs, rhs, result;
  std::vector<int64_t> contracting_tile_dims;  // Of `driver`, for the all-reduce groups.
  std::optional<HloSharding> driver;
  int64_t score = 0;
};

absl::StatusOr<PartitionedValue> HandleDot(const HloInstruction& instruction,
                                           PartitionContext& context) {
  if (!instruction.attrs().dot_dimension_numbers.has_value() || instruction.operand_count() != 2) {
    return Decline("malformed dot");
  }
  const DotDimensionNumbers& dn = *instruction.attrs().dot_dimension_numbers;
  const int64_t n = context.num_partitions();
  const Shape& lhs_shape = instruction.operand(0)->shape();
  const Shape& rhs_shape = instruction.operand(1)->shape();
  const Shape& out = instruction.shape();
  DotDims d{dn.lhs_batch, dn.rhs_batch, dn.lhs_contracting, dn.rhs_contracting, {}, {}};
  d.lhs_free = FreeDims(lhs_shape.rank(), d.lhs_batch, d.lhs_contracting);
  d.rhs_free = FreeDims(rhs_shape.rank(), d.rhs_batch, d.rhs_contracting);
  const int64_t nb = static_cast<int64_t>(d.lhs_batch.size());
  const int64_t nl = static_cast<int64_t>(d.lhs_free.size());
  const HloSharding target = context.ShardingOf(&instruction).IsMaximal()
                                 ? HloSharding::Replicate()
                                 : context.ShardingOf(&instruction);
  std::vector<DotPlan> plans;

  // Driven by one operand (side 0 = lhs, 1 = rhs).
  for (int side = 0; side < 2; ++side) {
    const HloSharding& s = context.ValueOf(instruction.operand(side)).sharding;
    if (!s.IsTiled() || ManualSubgroupCount(s) != 1) continue;
    const Shape& own = side == 0 ? lhs_shape : rhs_shape;
    const Shape& other = side == 0 ? rhs_shape : lhs_shape;
    const std::vector<int64_t>& own_batch = side == 0 ? d.lhs_batch : d.rhs_batch;
    const std::vector<int64_t>& other_batch = side == 0 ? d.rhs_batch : d.lhs_batch;
    const std::vector<int64_t>& own_contracting = side == 0 ? d.lhs_contracting : d.rhs_contracting;
    const std::vector<int64_t>& other_contracting =
        side == 0 ? d.rhs_contracting : d.lhs_contracting;
    const std::vector<int64_t>& own_free = side == 0 ? d.lhs_free : d.rhs_free;
    std::vector<int64_t> counts = TileCounts(s, own.rank());
    std::vector<int64_t> other_counts(other.rank(), 1);
    for (int64_t i = 0; i < nb; ++i) other_counts[other_batch[i]] = counts[own_batch[i]];
    for (size_t i = 0; i < own_contracting.size(); ++i) {
      other_counts[other_contracting[i]] = counts[own_contracting[i]];
    }
    absl::StatusOr<HloSharding> other_sharding =
        BuildSharding(other_counts, 1, n, [&](int64_t dev) {
          DevicePlace p = PlaceOf(s, own.rank(), dev);
          DevicePlace q;
          q.data_index.assign(other.rank(), 0);
          for (int64_t i = 0; i < nb; ++i)
            q.data_index[other_batch[i]] = p.data_index[own_batch[i]];
          for (size_t i = 0; i < own_contracting.size(); ++i) {
            q.data_index[other_contracting[i]] = p.data_index[own_contracting[i]];
          }
          return q;
        });
    // Result: batch and own free dims tiled as `s`; the other side's free dims untiled.
    std::vector<int64_t> out_counts(out.rank(), 1);
    auto out_index_of_own_free = [&](size_t i) {
      return side == 0 ? nb + static_cast<int64_t>(i) : nb + nl + static_cast<int64_t>(i);
    };
    for (int64_t i = 0; i < nb; ++i) out_counts[i] = counts[own_batch[i]];
    for (size_t i = 0; i < own_free.size(); ++i)
      out_counts[out_index_of_own_free(i)] = counts[own_free[i]];
    absl::StatusOr<HloSharding> result = BuildSharding(out_counts, 1, n, [&](int64_t dev) {
      DevicePlace p = PlaceOf(s, own.rank(), dev);
      DevicePlace q;
      q.data_index.assign(out.rank(), 0);
      for (int64_t i = 0; i < nb; ++i) q.data_index[i] = p.data_index[own_batch[i]];
      for (size_t i = 0; i < own_free.size(); ++i) {
        q.data_index[out_index_of_own_free(i)] = p.data_index[own_free[i]];
      }
      return q;
    });
    if (!other_sharding.ok() || !result.ok()) continue;
    DotPlan plan{
        side == 0 ? s : *other_sharding, side == 0 ? *other_sharding : s, *result, {}, s, 0};
    int64_t group = 1;
    for (int64_t k : own_contracting) {
      if (counts[k] > 1) {
        plan.contracting_tile_dims.push_back(k);
        group *= counts[k];
      }
    }
    plan.score = context.ReshardScore(instruction, 1 - side, *other_sharding);
    if (group > 1) {
      plan.score += kAlphaBytes + 2 * (group - 1) * LocalShape(out, *result).ByteSize() / group;
    }
    absl::StatusOr<CollectiveCost> move = ReshardCost(out, *result, target, n);
    if (!move.ok()) continue;
    plan.score += move->Score();
    plans.push_back(std::move(plan));
  }

  // Driven by the result's tiling.
  if (IsPlannable(target) && ManualSubgroupCount(target) == 1) {
    std::vector<int64_t> counts = TileCounts(target, out.rank());
    std::vector<int64_t> lhs_counts(lhs_shape.rank(), 1), rhs_counts(rhs_shape.rank(), 1);
    for (int64_t i = 0; i < nb; ++i) {
      lhs_counts[d.lhs_batch[i]] = counts[i];
      rhs_counts[d.rhs_batch[i]] = counts[i];
    }
    for (int64_t i = 0; i < nl; ++i) lhs_counts[d.lhs_free[i]] = counts[nb + i];
    for (size_t i = 0; i < d.rhs_free.size(); ++i) rhs_counts[d.rhs_free[i]] = counts[nb + nl + i];
    auto operand_sharding = [&](const Shape& shape, const std::vector<int64_t>& op_counts,
                                const std::vector<int64_t>& batch, const std::vector<int64_t>& free,
                                int64_t free_offset) {
      return BuildSharding(op_counts, 1, n, [&](int64_t dev) {
        DevicePlace p = PlaceOf(target, out.rank(), dev);
        DevicePlace q;
        q.data_index.assign(shape.rank(), 0);
        for (int64_t i = 0; i < nb; ++i) q.data_index[batch[i]] = p.data_index[i];
        for (size_t i = 0; i < free.size(); ++i) {
          q.data_index[free[i]] = p.data_index[free_offset + static_cast<int64_t>(i)];
        }
        return q;
      });
    };
    absl::StatusOr<HloSharding> lhs =
        operand_sharding(lhs_shape, lhs_counts, d.lhs_batch, d.lhs_free, nb);
    absl::StatusOr<HloSharding> rhs =
        operand_sharding(rhs_shape, rhs_counts, d.rhs_batch, d.rhs_free, nb + nl);
    if (lhs.ok() && rhs.ok()) {
      DotPlan plan{*lhs, *rhs, target, {}, std::nullopt, 0};
      plan.score =
          context.ReshardScore(instruction, 0, *lhs) + context.ReshardScore(instruction, 1, *rhs);
      plans.push_back(std::move(plan));
    }
  }
  if (plans.empty()) return Decline("no tiling to multiply in");
  const DotPlan* best = &plans[0];
  for (const DotPlan& p : plans) {
    if (p.score < best->score) best = &p;
  }
  SpmdBuilder& b = context.builder();
  absl::StatusOr<PartitionedValue> lhs = context.OperandAs(instruction, 0, best->lhs);
  if (!lhs.ok()) return lhs.status();
  absl::StatusOr<PartitionedValue> rhs = context.OperandAs(instruction, 1, best->rhs);
  if (!rhs.ok()) return rhs.status();
  PartitionedValue l = *lhs, r = *rhs;
  if (!best->contracting_tile_dims.empty() && !context.Bug("dot-padding-unmasked")) {
    l = MaskPadding(b, l, 0);
    r = MaskPadding(b, r, 0);
  }
  HloInstruction* local =
      context.CloneLocal(instruction, {l.local, r.local}, LocalShape(out, best->result));
  if (!best->contracting_tile_dims.empty()) {
    local = b.AllReduce(local, best->driver->GroupsAlongDims(best->contracting_tile_dims),
                        b.AddReducer(out.element_type()));
  }
  return PartitionedValue{local, out, best->result};
}

}  // namespace

void RegisterDotHandlers(HandlerRegistry& registry) {
  registry.Register(HloOpcode::kDot, HandleDot);
}

}  // namespace spmdcheck::partitioner
