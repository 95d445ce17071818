// dot and convolution: three strategies, priced with the cost model, the cheapest wins.
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
#include "ir/sharding_algebra.h"
#include "partitioner/partition_context.h"

namespace spmdcheck::partitioner {
namespace {

// Roles of the dims of a contraction (dot, or a convolution whose spatial dims stay untiled):
// batch dims appear in both operands and the result; free dims in one operand and the result;
// contracting dims in both operands only; local dims (convolution spatial dims) must not be
// tiled anywhere.
struct ContractionRoles {
  std::vector<int64_t> lhs_batch, rhs_batch, out_batch;
  std::vector<int64_t> lhs_free, out_lhs_free;
  std::vector<int64_t> rhs_free, out_rhs_free;
  std::vector<int64_t> lhs_contracting, rhs_contracting;
  std::vector<int64_t> lhs_local, rhs_local, out_local;
};

std::vector<int64_t> Remaining(int64_t rank,
                               std::initializer_list<const std::vector<int64_t>*> used) {
  std::vector<int64_t> rest;
  for (int64_t k = 0; k < rank; ++k) {
    bool taken = false;
    for (const std::vector<int64_t>* u : used) {
      taken = taken || std::find(u->begin(), u->end(), k) != u->end();
    }
    if (!taken) rest.push_back(k);
  }
  return rest;
}

struct ContractionPlan {
  HloSharding lhs, rhs, result;
  std::vector<int64_t> contracting_tile_dims;  // Of `driver`, for the all-reduce groups.
  std::optional<HloSharding> driver;
  int64_t score = 0;
};

absl::StatusOr<PartitionedValue> PartitionContraction(const HloInstruction& instruction,
                                                      PartitionContext& context,
                                                      const ContractionRoles& r) {
  const int64_t n = context.num_partitions();
  const Shape& lhs_shape = instruction.operand(0)->shape();
  const Shape& rhs_shape = instruction.operand(1)->shape();
  const Shape& out = instruction.shape();
  const HloSharding target = context.ShardingOf(&instruction).IsMaximal()
                                 ? HloSharding::Replicate()
                                 : context.ShardingOf(&instruction);
  std::vector<ContractionPlan> plans;

  // Driven by one operand (side 0 = lhs, 1 = rhs), its local dims untiled first.
  for (int side = 0; side < 2; ++side) {
    const HloSharding& current = context.ValueOf(instruction.operand(side)).sharding;
    if (!current.IsTiled() || ManualSubgroupCount(current) != 1) continue;
    const Shape& own = side == 0 ? lhs_shape : rhs_shape;
    const Shape& other = side == 0 ? rhs_shape : lhs_shape;
    absl::StatusOr<HloSharding> folded =
        FoldDims(current, own.rank(), side == 0 ? r.lhs_local : r.rhs_local, n);
    if (!folded.ok()) continue;
    const HloSharding s = *folded;
    const std::vector<int64_t>& own_batch = side == 0 ? r.lhs_batch : r.rhs_batch;
    const std::vector<int64_t>& other_batch = side == 0 ? r.rhs_batch : r.lhs_batch;
    const std::vector<int64_t>& own_contracting = side == 0 ? r.lhs_contracting : r.rhs_contracting;
    const std::vector<int64_t>& other_contracting =
        side == 0 ? r.rhs_contracting : r.lhs_contracting;
    const std::vector<int64_t>& own_free = side == 0 ? r.lhs_free : r.rhs_free;
    const std::vector<int64_t>& out_own_free = side == 0 ? r.out_lhs_free : r.out_rhs_free;
    TileIndex counts = TileCounts(s, own.rank());
    std::vector<int64_t> other_counts(other.rank(), 1);
    for (size_t i = 0; i < own_batch.size(); ++i)
      other_counts[other_batch[i]] = counts[own_batch[i]];
    for (size_t i = 0; i < own_contracting.size(); ++i) {
      other_counts[other_contracting[i]] = counts[own_contracting[i]];
    }
    absl::StatusOr<HloSharding> other_sharding =
        BuildSharding(other_counts, 1, n, [&](int64_t dev) {
          DevicePlace p = PlaceOf(s, own.rank(), dev);
          DevicePlace q;
          q.data_index.assign(other.rank(), 0);
          for (size_t i = 0; i < own_batch.size(); ++i) {
            q.data_index[other_batch[i]] = p.data_index[own_batch[i]];
          }
          for (size_t i = 0; i < own_contracting.size(); ++i) {
            q.data_index[other_contracting[i]] = p.data_index[own_contracting[i]];
          }
          return q;
        });
    std::vector<int64_t> out_counts(out.rank(), 1);
    for (size_t i = 0; i < own_batch.size(); ++i) out_counts[r.out_batch[i]] = counts[own_batch[i]];
    for (size_t i = 0; i < own_free.size(); ++i) out_counts[out_own_free[i]] = counts[own_free[i]];
    absl::StatusOr<HloSharding> result = BuildSharding(out_counts, 1, n, [&](int64_t dev) {
      DevicePlace p = PlaceOf(s, own.rank(), dev);
      DevicePlace q;
      q.data_index.assign(out.rank(), 0);
      for (size_t i = 0; i < own_batch.size(); ++i) {
        q.data_index[r.out_batch[i]] = p.data_index[own_batch[i]];
      }
      for (size_t i = 0; i < own_free.size(); ++i) {
        q.data_index[out_own_free[i]] = p.data_index[own_free[i]];
      }
      return q;
    });
    if (!other_sharding.ok() || !result.ok()) continue;
    ContractionPlan plan{
        side == 0 ? s : *other_sharding, side == 0 ? *other_sharding : s, *result, {}, s, 0};
    int64_t group = 1;
    for (int64_t k : own_contracting) {
      if (counts[k] > 1) {
        plan.contracting_tile_dims.push_back(k);
        group *= counts[k];
      }
    }
    plan.score = context.ReshardScore(instruction, side, s) +
                 context.ReshardScore(instruction, 1 - side, *other_sharding);
    if (group > 1) {
      plan.score +=
          analysis::kAlphaBytes + 2 * (group - 1) * LocalShape(out, *result).ByteSize() / group;
    }
    absl::StatusOr<analysis::CollectiveCost> move = ReshardCost(out, *result, target, n);
    if (!move.ok()) continue;
    plan.score += move->Score();
    plans.push_back(std::move(plan));
  }

  // Driven by the result's tiling (its local dims untiled first).
  if (IsPlannable(target) && ManualSubgroupCount(target) == 1) {
    absl::StatusOr<HloSharding> folded = FoldDims(target, out.rank(), r.out_local, n);
    if (folded.ok()) {
      const HloSharding t = *folded;
      TileIndex counts = TileCounts(t, out.rank());
      auto operand_sharding = [&](const Shape& shape, const std::vector<int64_t>& batch,
                                  const std::vector<int64_t>& free,
                                  const std::vector<int64_t>& out_free) {
        std::vector<int64_t> op_counts(shape.rank(), 1);
        for (size_t i = 0; i < batch.size(); ++i) op_counts[batch[i]] = counts[r.out_batch[i]];
        for (size_t i = 0; i < free.size(); ++i) op_counts[free[i]] = counts[out_free[i]];
        return BuildSharding(op_counts, 1, n, [&](int64_t dev) {
          DevicePlace p = PlaceOf(t, out.rank(), dev);
          DevicePlace q;
          q.data_index.assign(shape.rank(), 0);
          for (size_t i = 0; i < batch.size(); ++i)
            q.data_index[batch[i]] = p.data_index[r.out_batch[i]];
          for (size_t i = 0; i < free.size(); ++i)
            q.data_index[free[i]] = p.data_index[out_free[i]];
          return q;
        });
      };
      absl::StatusOr<HloSharding> lhs =
          operand_sharding(lhs_shape, r.lhs_batch, r.lhs_free, r.out_lhs_free);
      absl::StatusOr<HloSharding> rhs =
          operand_sharding(rhs_shape, r.rhs_batch, r.rhs_free, r.out_rhs_free);
      absl::StatusOr<analysis::CollectiveCost> move = ReshardCost(out, t, target, n);
      if (lhs.ok() && rhs.ok() && move.ok()) {
        ContractionPlan plan{*lhs, *rhs, t, {}, std::nullopt, 0};
        plan.score = context.ReshardScore(instruction, 0, *lhs) +
                     context.ReshardScore(instruction, 1, *rhs) + move->Score();
        plans.push_back(std::move(plan));
      }
    }
  }
  if (plans.empty()) return Decline("no tiling to contract in");
  const ContractionPlan* best = &plans[0];
  for (const ContractionPlan& p : plans) {
    if (p.score < best->score) best = &p;
  }
  SpmdBuilder& b = context.builder();
  absl::StatusOr<PartitionedValue> lhs = context.OperandAs(instruction, 0, best->lhs);
  if (!lhs.ok()) return lhs.status();
  absl::StatusOr<PartitionedValue> rhs = context.OperandAs(instruction, 1, best->rhs);
  if (!rhs.ok()) return rhs.status();
  PartitionedValue l = *lhs, rv = *rhs;
  if (!best->contracting_tile_dims.empty() && !context.Bug("dot-padding-unmasked")) {
    l = MaskPadding(b, l, 0);
    rv = MaskPadding(b, rv, 0);
  }
  HloInstruction* local =
      context.CloneLocal(instruction, {l.local, rv.local}, LocalShape(out, best->result));
  if (!best->contracting_tile_dims.empty()) {
    local = b.AllReduce(local, best->driver->GroupsAlongDims(best->contracting_tile_dims),
                        b.AddReducer(out.element_type()));
  }
  return PartitionedValue{local, out, best->result};
}

absl::StatusOr<PartitionedValue> HandleDot(const HloInstruction& instruction,
                                           PartitionContext& context) {
  if (!instruction.attrs().dot_dimension_numbers.has_value() || instruction.operand_count() != 2) {
    return Decline("malformed dot");
  }
  const DotDimensionNumbers& dn = *instruction.attrs().dot_dimension_numbers;
  ContractionRoles r;
  r.lhs_batch = dn.lhs_batch;
  r.rhs_batch = dn.rhs_batch;
  r.lhs_contracting = dn.lhs_contracting;
  r.rhs_contracting = dn.rhs_contracting;
  r.lhs_free =
      Remaining(instruction.operand(0)->shape().rank(), {&r.lhs_batch, &r.lhs_contracting});
  r.rhs_free =
      Remaining(instruction.operand(1)->shape().rank(), {&r.rhs_batch, &r.rhs_contracting});
  int64_t next = 0;
  for (size_t i = 0; i < r.lhs_batch.size(); ++i) r.out_batch.push_back(next++);
  for (size_t i = 0; i < r.lhs_free.size(); ++i) r.out_lhs_free.push_back(next++);
  for (size_t i = 0; i < r.rhs_free.size(); ++i) r.out_rhs_free.push_back(next++);
  return PartitionContraction(instruction, context, r);
}

// Convolution without feature or batch groups: batch and feature dims partition like a dot's
// free and contracting dims; spatial dims stay untiled (no halo exchange yet).
absl::StatusOr<PartitionedValue> HandleConvolution(const HloInstruction& instruction,
                                                   PartitionContext& context) {
  const HloAttributes& attrs = instruction.attrs();
  if (!attrs.dim_labels.has_value() || instruction.operand_count() != 2) {
    return Decline("malformed convolution");
  }
  if (attrs.feature_group_count.value_or(1) != 1 || attrs.batch_group_count.value_or(1) != 1) {
    return Decline("grouped convolution");
  }
  const ConvolutionDimensionNumbers& d = *attrs.dim_labels;
  ContractionRoles r;
  r.lhs_free = {d.input_batch};
  r.out_lhs_free = {d.output_batch};
  r.rhs_free = {d.kernel_output_feature};
  r.out_rhs_free = {d.output_feature};
  r.lhs_contracting = {d.input_feature};
  r.rhs_contracting = {d.kernel_input_feature};
  r.lhs_local = d.input_spatial;
  r.rhs_local = d.kernel_spatial;
  r.out_local = d.output_spatial;
  return PartitionContraction(instruction, context, r);
}

}  // namespace

void RegisterDotHandlers(HandlerRegistry& registry) {
  registry.Register(HloOpcode::kDot, HandleDot);
  registry.Register(HloOpcode::kConvolution, HandleConvolution);
}

}  // namespace spmdcheck::partitioner
