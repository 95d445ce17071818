// gather and scatter.
//  gather: operand pass-through (the operand stays tiled on dims that are neither indexed nor
//    collapsed and are sliced whole; the result's matching offset dims carry that tiling),
//    both pass-through and index-parallel on different device axes, or index-parallel (the indices
//    are tiled like the result's batch dims; the operand whole on every device). XLA clamps start
//    indices on the global operand, and both plans keep the indexed dims whole, so clamping is
//    unchanged.
//  scatter: operand pass-through (operand, updates and result tiled alike on dims that are
//    neither indexed nor inserted and are updated whole; indices whole on every device).
// Anything else takes the fallback.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/sharding_algebra.h"
#include "partitioner/partition_context.h"

namespace spmdcheck::partitioner {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

struct IndexingPlan {
  std::vector<HloSharding> operands;
  HloSharding result;
  int64_t score = 0;
};

int64_t Score(const HloInstruction& instruction, PartitionContext& context,
              const IndexingPlan& plan, const HloSharding& target) {
  int64_t score = 0;
  for (size_t i = 0; i < plan.operands.size(); ++i) {
    score += context.ReshardScore(instruction, static_cast<int64_t>(i), plan.operands[i]);
  }
  absl::StatusOr<analysis::CollectiveCost> move =
      ReshardCost(instruction.shape(), plan.result, target, context.num_partitions());
  return move.ok() ? score + move->Score() : int64_t{1} << 60;
}

// Trivially sliced operand dims: the operand stays tiled on indexed dims that are sliced to one
// element. Each device clamps every start index on the global operand (as XLA does), shifts it
// into its own tile, gathers, zeroes the rows whose element another device holds, and an
// all-reduce over the devices of those dims puts the rows together. Returns nullopt (the caller
// tries other strategies) when there is no such dim.
std::optional<absl::StatusOr<PartitionedValue>> GatherTrivialSlicedDims(
    const HloInstruction& instruction, PartitionContext& context) {
  const HloAttributes& attrs = instruction.attrs();
  const GatherDimensionNumbers& g = *attrs.gather_dimension_numbers;
  const std::vector<int64_t>& sizes = *attrs.gather_slice_sizes;
  const int64_t n = context.num_partitions();
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& indices = instruction.operand(1)->shape();
  const Shape& out = instruction.shape();
  const HloSharding& current = context.ValueOf(instruction.operand(0)).sharding;
  if (!current.IsTiled() || ManualSubgroupCount(current) != 1) return std::nullopt;
  if (!IsIntegralType(indices.element_type())) return std::nullopt;
  TileIndex counts = TileCounts(current, operand.rank());
  std::vector<int64_t> trivial, fold;
  for (int64_t k = 0; k < operand.rank(); ++k) {
    const bool indexed = Contains(g.start_index_map, k);
    if (counts[k] > 1 && indexed && sizes[k] == 1) {
      trivial.push_back(k);
    } else if (indexed || Contains(g.collapsed_slice_dims, k) ||
               sizes[k] != operand.dimensions(k)) {
      fold.push_back(k);
    }
  }
  if (trivial.empty()) return std::nullopt;
  const int64_t index_vector_size =
      g.index_vector_dim == indices.rank() ? 1 : indices.dimensions(g.index_vector_dim);
  if (index_vector_size <= 0 ||
      index_vector_size != static_cast<int64_t>(g.start_index_map.size())) {
    return std::nullopt;
  }
  absl::StatusOr<HloSharding> base = FoldDims(current, operand.rank(), fold, n);
  if (!base.ok()) return std::nullopt;
  // The result: offset dims tiled like the operand's pass-through dims; the trivially sliced
  // dims' devices hold the same rows after the all-reduce.
  std::vector<int64_t> operand_of_offset;
  for (int64_t k = 0; k < operand.rank(); ++k) {
    if (!Contains(g.collapsed_slice_dims, k)) operand_of_offset.push_back(k);
  }
  TileIndex base_counts = TileCounts(*base, operand.rank());
  std::vector<int64_t> out_counts(out.rank(), 1);
  for (size_t i = 0; i < operand_of_offset.size(); ++i) {
    const int64_t k = operand_of_offset[i];
    if (!Contains(trivial, k)) out_counts[g.offset_dims[i]] = base_counts[k];
  }
  absl::StatusOr<HloSharding> result = BuildSharding(out_counts, 1, n, [&](int64_t d) {
    DevicePlace p = PlaceOf(*base, operand.rank(), d);
    DevicePlace q;
    q.data_index.assign(out.rank(), 0);
    for (size_t i = 0; i < operand_of_offset.size(); ++i) {
      const int64_t k = operand_of_offset[i];
      if (!Contains(trivial, k)) q.data_index[g.offset_dims[i]] = p.data_index[k];
    }
    return q;
  });
  if (!result.ok()) return std::nullopt;
  absl::StatusOr<PartitionedValue> x = context.OperandAs(instruction, 0, *base);
  if (!x.ok()) return x.status();
  absl::StatusOr<PartitionedValue> idx =
      context.OperandAs(instruction, 1, HloSharding::Replicate());
  if (!idx.ok()) return idx.status();
  SpmdBuilder& b = context.builder();
  const int64_t ivd = g.index_vector_dim;
  const bool implicit_vector = ivd == indices.rank();
  // The batch shape of the indices (the index vector dim dropped).
  std::vector<int64_t> batch_dims;
  for (int64_t k = 0; k < indices.rank(); ++k) {
    if (k != ivd) batch_dims.push_back(indices.dimensions(k));
  }
  const Shape s64_batch = Shape::Array(PrimitiveType::kS64, batch_dims);
  // One component of the index vector as an s64 array of the batch shape, and back.
  auto component = [&](HloInstruction* all, int64_t j) {
    HloInstruction* c = all;
    if (!implicit_vector) {
      std::vector<SliceDim> slice;
      for (int64_t k = 0; k < indices.rank(); ++k) {
        slice.push_back(k == ivd ? SliceDim{j, j + 1, 1} : SliceDim{0, indices.dimensions(k), 1});
      }
      c = b.Slice(all, slice);
    }
    return b.Reshape(b.Convert(c, PrimitiveType::kS64), batch_dims);
  };
  const Shape local_operand = LocalShape(operand, *base);
  std::vector<HloInstruction*> components;
  const int64_t vector_size = implicit_vector ? 1 : indices.dimensions(ivd);
  HloInstruction* in_shard = nullptr;
  for (int64_t j = 0; j < vector_size; ++j) {
    HloInstruction* c = component(idx->local, j);
    const int64_t k = g.start_index_map[j];
    if (Contains(trivial, k)) {
      std::vector<int64_t> offsets(n);
      for (int64_t d = 0; d < n; ++d) offsets[d] = RegionOf(*base, operand, d).padded_start[k];
      HloInstruction* offset =
          b.Broadcast(b.Convert(b.TableLookup(offsets, absl::StrCat("gather.offset.dim", k)),
                                PrimitiveType::kS64),
                      s64_batch, {});
      auto splat = [&](int64_t v) {
        return b.Broadcast(b.ConstantScalar(PrimitiveType::kS64, static_cast<double>(v)), s64_batch,
                           {});
      };
      // XLA's clamp on the global operand, then into this tile.
      HloInstruction* clamped =
          b.Binary(HloOpcode::kMaximum,
                   b.Binary(HloOpcode::kMinimum, c, splat(operand.dimensions(k) - 1)), splat(0));
      HloInstruction* local = b.Binary(HloOpcode::kSubtract, clamped, offset);
      HloInstruction* inside =
          b.Binary(HloOpcode::kAnd, b.Compare(local, splat(0), ComparisonDirection::kGe),
                   b.Compare(local, splat(local_operand.dimensions(k)), ComparisonDirection::kLt));
      in_shard = in_shard == nullptr ? inside : b.Binary(HloOpcode::kAnd, in_shard, inside);
      c = b.Binary(HloOpcode::kMaximum,
                   b.Binary(HloOpcode::kMinimum, local, splat(local_operand.dimensions(k) - 1)),
                   splat(0));
    }
    components.push_back(c);
  }
  // Reassemble the index vector in the indices' element type and layout.
  std::vector<int64_t> with_vector = indices.dimensions();
  if (implicit_vector) with_vector.push_back(1);
  const int64_t vector_dim = implicit_vector ? indices.rank() : ivd;
  std::vector<HloInstruction*> parts;
  for (HloInstruction* c : components) {
    std::vector<int64_t> one = with_vector;
    one[vector_dim] = 1;
    parts.push_back(b.Reshape(b.Convert(c, indices.element_type()), one));
  }
  HloInstruction* new_indices = parts.size() == 1 ? parts[0] : b.Concatenate(parts, vector_dim);
  new_indices = b.Reshape(new_indices, indices.dimensions());
  HloInstruction* gathered =
      context.CloneLocal(instruction, {x->local, new_indices}, LocalShape(out, *result));
  std::vector<int64_t> local_sizes = sizes;
  for (int64_t k = 0; k < operand.rank(); ++k) {
    if (sizes[k] == operand.dimensions(k)) local_sizes[k] = local_operand.dimensions(k);
  }
  gathered->mutable_attrs().gather_slice_sizes = local_sizes;
  // Zero the rows another device holds: the mask over the batch dims, broadcast to the result.
  std::vector<int64_t> batch_out;
  for (int64_t j = 0; j < out.rank(); ++j) {
    if (!Contains(g.offset_dims, j)) batch_out.push_back(j);
  }
  const Shape& local_out = gathered->shape();
  HloInstruction* mask =
      b.Broadcast(in_shard, Shape::Array(PrimitiveType::kPred, local_out.dimensions()), batch_out);
  HloInstruction* masked = b.Select(mask, gathered, b.AddIdentity(local_out));
  HloInstruction* summed =
      b.AllReduce(masked, base->GroupsAlongDims(trivial), b.AddReducer(out.element_type()));
  return absl::StatusOr<PartitionedValue>(PartitionedValue{summed, out, *result});
}

absl::StatusOr<PartitionedValue> HandleGather(const HloInstruction& instruction,
                                              PartitionContext& context) {
  const HloAttributes& attrs = instruction.attrs();
  if (!attrs.gather_dimension_numbers.has_value() || !attrs.gather_slice_sizes.has_value() ||
      instruction.operand_count() != 2 || !instruction.shape().IsArray()) {
    return Decline("malformed gather");
  }
  const GatherDimensionNumbers& g = *attrs.gather_dimension_numbers;
  if (!g.operand_batching_dims.empty()) return Decline("gather with batching dims");
  const int64_t n = context.num_partitions();
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& indices = instruction.operand(1)->shape();
  const Shape& out = instruction.shape();
  const std::vector<int64_t>& sizes = *attrs.gather_slice_sizes;
  // Output dims: offset dims (operand dims not collapsed, in order) and batch dims (indices dims
  // but the index vector dim, in order).
  std::vector<int64_t> operand_of_offset;  // For each offset dim (in order), its operand dim.
  for (int64_t k = 0; k < operand.rank(); ++k) {
    if (!Contains(g.collapsed_slice_dims, k)) operand_of_offset.push_back(k);
  }
  if (operand_of_offset.size() != g.offset_dims.size()) return Decline("malformed gather");
  std::vector<int64_t> batch_out, batch_indices;
  for (int64_t j = 0; j < out.rank(); ++j) {
    if (!Contains(g.offset_dims, j)) batch_out.push_back(j);
  }
  for (int64_t k = 0; k < indices.rank(); ++k) {
    if (k != g.index_vector_dim) batch_indices.push_back(k);
  }
  if (batch_out.size() != batch_indices.size()) return Decline("malformed gather");
  const HloSharding target = context.ShardingOf(&instruction).IsMaximal()
                                 ? HloSharding::Replicate()
                                 : context.ShardingOf(&instruction);
  std::vector<IndexingPlan> plans;
  // Operand pass-through.
  const HloSharding& current = context.ValueOf(instruction.operand(0)).sharding;
  std::optional<HloSharding> passthrough_base;
  if (current.IsTiled() && ManualSubgroupCount(current) == 1) {
    std::vector<int64_t> fold;
    for (int64_t k = 0; k < operand.rank(); ++k) {
      const bool passthrough = !Contains(g.collapsed_slice_dims, k) &&
                               !Contains(g.start_index_map, k) && sizes[k] == operand.dimensions(k);
      if (!passthrough) fold.push_back(k);
    }
    absl::StatusOr<HloSharding> base = FoldDims(current, operand.rank(), fold, n);
    if (base.ok() && base->IsTiled()) {
      TileIndex counts = TileCounts(*base, operand.rank());
      std::vector<int64_t> out_counts(out.rank(), 1);
      for (size_t i = 0; i < operand_of_offset.size(); ++i) {
        out_counts[g.offset_dims[i]] = counts[operand_of_offset[i]];
      }
      absl::StatusOr<HloSharding> result = BuildSharding(out_counts, 1, n, [&](int64_t d) {
        DevicePlace p = PlaceOf(*base, operand.rank(), d);
        DevicePlace q;
        q.data_index.assign(out.rank(), 0);
        for (size_t i = 0; i < operand_of_offset.size(); ++i) {
          q.data_index[g.offset_dims[i]] = p.data_index[operand_of_offset[i]];
        }
        return q;
      });
      if (result.ok()) {
        IndexingPlan plan{{*base, HloSharding::Replicate()}, *result, 0};
        plan.score = Score(instruction, context, plan, target);
        plans.push_back(plan);
        passthrough_base = *base;
      }
    }
  }
  // Both at once: the operand passes through on its whole-sliced dims and the indices keep their
  // tiling of the batch dims, when the two tilings use different devices' axes (every result
  // tile then has its share of devices).
  const HloSharding& current_indices = context.ValueOf(instruction.operand(1)).sharding;
  if (passthrough_base.has_value() && current_indices.IsTiled() &&
      ManualSubgroupCount(current_indices) == 1) {
    std::vector<int64_t> vector_dim;
    if (g.index_vector_dim < indices.rank()) vector_dim.push_back(g.index_vector_dim);
    absl::StatusOr<HloSharding> index_sharding =
        FoldDims(current_indices, indices.rank(), vector_dim, n);
    if (index_sharding.ok() && index_sharding->IsTiled()) {
      const TileIndex base_counts = TileCounts(*passthrough_base, operand.rank());
      const TileIndex index_counts = TileCounts(*index_sharding, indices.rank());
      std::vector<int64_t> out_counts(out.rank(), 1);
      for (size_t i = 0; i < operand_of_offset.size(); ++i) {
        out_counts[g.offset_dims[i]] = base_counts[operand_of_offset[i]];
      }
      for (size_t i = 0; i < batch_out.size(); ++i) {
        out_counts[batch_out[i]] = index_counts[batch_indices[i]];
      }
      absl::StatusOr<HloSharding> result = BuildSharding(out_counts, 1, n, [&](int64_t d) {
        DevicePlace p = PlaceOf(*passthrough_base, operand.rank(), d);
        DevicePlace r = PlaceOf(*index_sharding, indices.rank(), d);
        DevicePlace q;
        q.data_index.assign(out.rank(), 0);
        for (size_t i = 0; i < operand_of_offset.size(); ++i) {
          q.data_index[g.offset_dims[i]] = p.data_index[operand_of_offset[i]];
        }
        for (size_t i = 0; i < batch_out.size(); ++i) {
          q.data_index[batch_out[i]] = r.data_index[batch_indices[i]];
        }
        return q;
      });
      if (result.ok()) {
        IndexingPlan plan{{*passthrough_base, *index_sharding}, *result, 0};
        plan.score = Score(instruction, context, plan, target);
        plans.push_back(plan);
      }
    }
  }
  // Index-parallel, from the target's tiling of the batch dims.
  if (IsPlannable(target) && ManualSubgroupCount(target) == 1) {
    absl::StatusOr<HloSharding> t = FoldDims(target, out.rank(), g.offset_dims, n);
    if (t.ok()) {
      TileIndex counts = TileCounts(*t, out.rank());
      std::vector<int64_t> index_counts(indices.rank(), 1);
      for (size_t i = 0; i < batch_out.size(); ++i)
        index_counts[batch_indices[i]] = counts[batch_out[i]];
      absl::StatusOr<HloSharding> index_sharding =
          BuildSharding(index_counts, 1, n, [&](int64_t d) {
            DevicePlace p = PlaceOf(*t, out.rank(), d);
            DevicePlace q;
            q.data_index.assign(indices.rank(), 0);
            for (size_t i = 0; i < batch_out.size(); ++i) {
              q.data_index[batch_indices[i]] = p.data_index[batch_out[i]];
            }
            return q;
          });
      if (index_sharding.ok()) {
        IndexingPlan plan{{HloSharding::Replicate(), *index_sharding}, *t, 0};
        plan.score = Score(instruction, context, plan, target);
        plans.push_back(plan);
      }
    }
  }
  const IndexingPlan* best = plans.empty() ? nullptr : &plans[0];
  for (const IndexingPlan& p : plans) {
    if (p.score < best->score) best = &p;
  }
  // The trivially-sliced strategy moves only result rows (an all-reduce); take it when the
  // other plans would move operand data.
  const int64_t operand_bytes =
      LocalShape(operand, context.ValueOf(instruction.operand(0)).sharding).ByteSize();
  if (best == nullptr || best->score > operand_bytes) {
    if (std::optional<absl::StatusOr<PartitionedValue>> trivial =
            GatherTrivialSlicedDims(instruction, context)) {
      return *trivial;
    }
  }
  if (best == nullptr) return Decline("no tiling to gather in");
  std::vector<HloInstruction*> operands;
  for (int64_t i = 0; i < 2; ++i) {
    absl::StatusOr<PartitionedValue> v = context.OperandAs(instruction, i, best->operands[i]);
    if (!v.ok()) return v.status();
    operands.push_back(v->local);
  }
  const Shape local_operand = LocalShape(operand, best->operands[0]);
  HloInstruction* local =
      context.CloneLocal(instruction, std::move(operands), LocalShape(out, best->result));
  std::vector<int64_t> local_sizes = sizes;
  for (int64_t k = 0; k < operand.rank(); ++k) {
    if (sizes[k] == operand.dimensions(k)) local_sizes[k] = local_operand.dimensions(k);
  }
  local->mutable_attrs().gather_slice_sizes = local_sizes;
  return PartitionedValue{local, out, best->result};
}

// True when `computation` is add(parameter 0, parameter 1) (either order).
bool IsAddOfParameters(const HloComputation* computation) {
  if (computation == nullptr || computation->root() == nullptr) return false;
  const HloInstruction* root = computation->root();
  if (root->opcode() != HloOpcode::kAdd || root->operand_count() != 2) return false;
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  return a->opcode() == HloOpcode::kParameter && b->opcode() == HloOpcode::kParameter &&
         a->parameter_number() + b->parameter_number() == 1;
}

// Index-parallel scatter with an add combiner: updates and indices stay tiled along the scatter
// (batch) dims; each device scatters its updates into zeros (padding rows masked to zero, so
// they add nothing), an all-reduce sums the devices' contributions, and the operand is added.
// Only when the updates are tiled on batch dims (otherwise nothing is saved over the fallback).
std::optional<absl::StatusOr<PartitionedValue>> ScatterIndexParallel(
    const HloInstruction& instruction, PartitionContext& context) {
  const ScatterDimensionNumbers& s = *instruction.attrs().scatter_dimension_numbers;
  if (!IsAddOfParameters(instruction.called_computation("to_apply"))) return std::nullopt;
  const Shape& out = instruction.shape();
  if (out.element_type() == PrimitiveType::kPred) return std::nullopt;
  const int64_t n = context.num_partitions();
  const Shape& indices = instruction.operand(1)->shape();
  const Shape& updates = instruction.operand(2)->shape();
  const HloSharding& current = context.ValueOf(instruction.operand(2)).sharding;
  if (!current.IsTiled() || ManualSubgroupCount(current) != 1) return std::nullopt;
  absl::StatusOr<HloSharding> update_sharding =
      FoldDims(current, updates.rank(), s.update_window_dims, n);
  if (!update_sharding.ok() || !update_sharding->IsTiled()) return std::nullopt;
  std::vector<int64_t> update_batch, index_batch;
  for (int64_t k = 0; k < updates.rank(); ++k) {
    if (!Contains(s.update_window_dims, k)) update_batch.push_back(k);
  }
  for (int64_t k = 0; k < indices.rank(); ++k) {
    if (k != s.index_vector_dim) index_batch.push_back(k);
  }
  if (update_batch.size() != index_batch.size()) return std::nullopt;
  TileIndex counts = TileCounts(*update_sharding, updates.rank());
  std::vector<int64_t> index_counts(indices.rank(), 1);
  for (size_t i = 0; i < update_batch.size(); ++i)
    index_counts[index_batch[i]] = counts[update_batch[i]];
  absl::StatusOr<HloSharding> index_sharding = BuildSharding(index_counts, 1, n, [&](int64_t d) {
    DevicePlace p = PlaceOf(*update_sharding, updates.rank(), d);
    DevicePlace q;
    q.data_index.assign(indices.rank(), 0);
    for (size_t i = 0; i < update_batch.size(); ++i) {
      q.data_index[index_batch[i]] = p.data_index[update_batch[i]];
    }
    return q;
  });
  if (!index_sharding.ok()) return std::nullopt;
  std::vector<int64_t> tiled_batch;
  for (int64_t k : update_batch) {
    if (counts[k] > 1) tiled_batch.push_back(k);
  }
  if (tiled_batch.empty()) return std::nullopt;
  absl::StatusOr<PartitionedValue> operand =
      context.OperandAs(instruction, 0, HloSharding::Replicate());
  if (!operand.ok()) return operand.status();
  absl::StatusOr<PartitionedValue> idx = context.OperandAs(instruction, 1, *index_sharding);
  if (!idx.ok()) return idx.status();
  absl::StatusOr<PartitionedValue> upd = context.OperandAs(instruction, 2, *update_sharding);
  if (!upd.ok()) return upd.status();
  SpmdBuilder& b = context.builder();
  PartitionedValue masked_updates = MaskPadding(b, *upd, 0);
  HloInstruction* zeros = b.AddIdentity(out);
  HloInstruction* partial =
      context.CloneLocal(instruction, {zeros, idx->local, masked_updates.local}, out);
  HloInstruction* summed = b.AllReduce(partial, update_sharding->GroupsAlongDims(tiled_batch),
                                       b.AddReducer(out.element_type()));
  HloInstruction* result = b.Binary(HloOpcode::kAdd, operand->local, summed);
  return absl::StatusOr<PartitionedValue>(PartitionedValue{result, out, HloSharding::Replicate()});
}

absl::StatusOr<PartitionedValue> HandleScatter(const HloInstruction& instruction,
                                               PartitionContext& context) {
  const HloAttributes& attrs = instruction.attrs();
  if (!attrs.scatter_dimension_numbers.has_value() || instruction.operand_count() != 3 ||
      !instruction.shape().IsArray()) {
    return Decline("variadic or malformed scatter");
  }
  const ScatterDimensionNumbers& s = *attrs.scatter_dimension_numbers;
  if (!s.input_batching_dims.empty()) return Decline("scatter with batching dims");
  const int64_t n = context.num_partitions();
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& updates = instruction.operand(2)->shape();
  std::vector<int64_t> operand_of_window;  // For each update window dim (in order).
  for (int64_t k = 0; k < operand.rank(); ++k) {
    if (!Contains(s.inserted_window_dims, k)) operand_of_window.push_back(k);
  }
  if (operand_of_window.size() != s.update_window_dims.size()) return Decline("malformed scatter");
  const HloSharding& current = context.ValueOf(instruction.operand(0)).sharding;
  const HloSharding target = context.ShardingOf(&instruction).IsMaximal()
                                 ? HloSharding::Replicate()
                                 : context.ShardingOf(&instruction);
  std::vector<IndexingPlan> plans;
  for (const HloSharding* from : {&current, &target}) {
    if (!from->IsTiled() || ManualSubgroupCount(*from) != 1) continue;
    std::vector<int64_t> fold;
    for (int64_t k = 0; k < operand.rank(); ++k) {
      bool passthrough =
          !Contains(s.inserted_window_dims, k) && !Contains(s.scatter_dims_to_operand_dims, k);
      if (passthrough) {
        const size_t w = std::find(operand_of_window.begin(), operand_of_window.end(), k) -
                         operand_of_window.begin();
        passthrough = updates.dimensions(s.update_window_dims[w]) == operand.dimensions(k);
      }
      if (!passthrough) fold.push_back(k);
    }
    absl::StatusOr<HloSharding> base = FoldDims(*from, operand.rank(), fold, n);
    if (!base.ok() || !base->IsTiled()) continue;
    TileIndex counts = TileCounts(*base, operand.rank());
    std::vector<int64_t> update_counts(updates.rank(), 1);
    for (size_t w = 0; w < operand_of_window.size(); ++w) {
      update_counts[s.update_window_dims[w]] = counts[operand_of_window[w]];
    }
    absl::StatusOr<HloSharding> update_sharding =
        BuildSharding(update_counts, 1, n, [&](int64_t d) {
          DevicePlace p = PlaceOf(*base, operand.rank(), d);
          DevicePlace q;
          q.data_index.assign(updates.rank(), 0);
          for (size_t w = 0; w < operand_of_window.size(); ++w) {
            q.data_index[s.update_window_dims[w]] = p.data_index[operand_of_window[w]];
          }
          return q;
        });
    if (!update_sharding.ok()) continue;
    IndexingPlan plan{{*base, HloSharding::Replicate(), *update_sharding}, *base, 0};
    plan.score = Score(instruction, context, plan, target);
    plans.push_back(plan);
  }
  if (plans.empty()) {
    if (std::optional<absl::StatusOr<PartitionedValue>> parallel =
            ScatterIndexParallel(instruction, context)) {
      return *parallel;
    }
    return Decline("no pass-through tiling to scatter in");
  }
  const IndexingPlan* best = &plans[0];
  for (const IndexingPlan& p : plans) {
    if (p.score < best->score) best = &p;
  }
  std::vector<HloInstruction*> operands;
  for (int64_t i = 0; i < 3; ++i) {
    absl::StatusOr<PartitionedValue> v = context.OperandAs(instruction, i, best->operands[i]);
    if (!v.ok()) return v.status();
    operands.push_back(v->local);
  }
  HloInstruction* local = context.CloneLocal(instruction, std::move(operands),
                                             LocalShape(instruction.shape(), best->result));
  return PartitionedValue{local, instruction.shape(), best->result};
}

}  // namespace

void RegisterIndexingHandlers(HandlerRegistry& registry) {
  registry.Register(HloOpcode::kGather, HandleGather);
  registry.Register(HloOpcode::kScatter, HandleScatter);
}

}  // namespace spmdcheck::partitioner
