// Shape ops: broadcast, transpose, reshape, and the ops that act along some dims and pass the
// others through (slice, pad, concatenate, reverse): those run locally once the dims they act on
// are not tiled. Constants and iotas are built whole (no data moves) and sliced by the driver.
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

// Picks the candidate with the least total reshard cost: operands to `operand_sharding(c)`,
// result from `c` to the instruction's sharding.
struct Choice {
  HloSharding result;
  std::vector<HloSharding> operands;
};

std::optional<Choice> Cheapest(const HloInstruction& instruction, PartitionContext& context,
                               const std::vector<Choice>& choices, int64_t* score_out = nullptr) {
  const HloSharding& target = context.ShardingOf(&instruction);
  std::optional<Choice> best;
  int64_t best_score = 0;
  for (const Choice& choice : choices) {
    int64_t score = 0;
    for (size_t i = 0; i < choice.operands.size(); ++i) {
      score += context.ReshardScore(instruction, static_cast<int64_t>(i), choice.operands[i]);
    }
    absl::StatusOr<analysis::CollectiveCost> out =
        ReshardCost(instruction.shape(), choice.result, target, context.num_partitions());
    if (!out.ok()) continue;
    score += out->Score();
    if (!best.has_value() || score < best_score) {
      best = choice;
      best_score = score;
    }
  }
  if (score_out != nullptr) *score_out = best_score;
  return best;
}

// The sharding the driver should compute in when the target is maximal.
HloSharding Computable(const HloSharding& s) {
  return s.IsMaximal() ? HloSharding::Replicate() : s;
}

absl::StatusOr<PartitionedValue> Emit(const HloInstruction& instruction, PartitionContext& context,
                                      const Choice& choice,
                                      const std::function<void(HloInstruction*)>& adjust = {}) {
  std::vector<HloInstruction*> operands;
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    const HloSharding& s = i < static_cast<int64_t>(choice.operands.size())
                               ? choice.operands[i]
                               : HloSharding::Replicate();
    absl::StatusOr<PartitionedValue> v = context.OperandAs(instruction, i, s);
    if (!v.ok()) return v.status();
    operands.push_back(v->local);
  }
  HloInstruction* local = context.CloneLocal(instruction, std::move(operands),
                                             LocalShape(instruction.shape(), choice.result));
  if (adjust) adjust(local);
  return PartitionedValue{local, instruction.shape(), choice.result};
}

// ---- broadcast ----

absl::StatusOr<PartitionedValue> HandleBroadcast(const HloInstruction& instruction,
                                                 PartitionContext& context) {
  const int64_t n = context.num_partitions();
  const Shape& out = instruction.shape();
  const Shape& in = instruction.operand(0)->shape();
  if (!out.IsArray() || !instruction.attrs().dimensions.has_value()) return Decline("malformed");
  const std::vector<int64_t>& map = *instruction.attrs().dimensions;
  std::vector<Choice> choices;
  // From the target: the operand takes the target's tiling of the dims it maps to.
  const HloSharding target = Computable(context.ShardingOf(&instruction));
  if (IsPlannable(target) && ManualSubgroupCount(target) == 1) {
    TileIndex counts = TileCounts(target, out.rank());
    std::vector<int64_t> in_counts;
    for (int64_t d : map) in_counts.push_back(counts[d]);
    absl::StatusOr<HloSharding> operand = BuildSharding(in_counts, 1, n, [&](int64_t device) {
      DevicePlace p = PlaceOf(target, out.rank(), device);
      DevicePlace q;
      for (int64_t d : map) q.data_index.push_back(p.data_index[d]);
      return q;
    });
    if (operand.ok()) choices.push_back({target, {*operand}});
  }
  // From the operand: the result is tiled like the operand on the mapped dims.
  const HloSharding& current = context.ValueOf(instruction.operand(0)).sharding;
  if (IsPlannable(current) && ManualSubgroupCount(current) == 1) {
    std::vector<int64_t> counts(out.rank(), 1);
    TileIndex in_counts = TileCounts(current, in.rank());
    for (size_t i = 0; i < map.size(); ++i) counts[map[i]] = in_counts[i];
    absl::StatusOr<HloSharding> result = BuildSharding(counts, 1, n, [&](int64_t device) {
      DevicePlace p = PlaceOf(current, in.rank(), device);
      DevicePlace q;
      q.data_index.assign(out.rank(), 0);
      for (size_t i = 0; i < map.size(); ++i) q.data_index[map[i]] = p.data_index[i];
      return q;
    });
    if (result.ok()) choices.push_back({*result, {current}});
  }
  std::optional<Choice> best = Cheapest(instruction, context, choices);
  if (!best.has_value()) return Decline("no tiling to broadcast in");
  return Emit(instruction, context, *best);
}

// ---- transpose ----

absl::StatusOr<PartitionedValue> HandleTranspose(const HloInstruction& instruction,
                                                 PartitionContext& context) {
  const int64_t n = context.num_partitions();
  const Shape& out = instruction.shape();
  if (!out.IsArray() || !instruction.attrs().dimensions.has_value()) return Decline("malformed");
  const std::vector<int64_t>& perm = *instruction.attrs().dimensions;
  const int64_t rank = out.rank();
  std::vector<Choice> choices;
  const HloSharding target = Computable(context.ShardingOf(&instruction));
  if (IsPlannable(target) && ManualSubgroupCount(target) == 1) {
    TileIndex counts = TileCounts(target, rank), in_counts(rank, 1);
    for (int64_t j = 0; j < rank; ++j) in_counts[perm[j]] = counts[j];
    absl::StatusOr<HloSharding> operand = BuildSharding(in_counts, 1, n, [&](int64_t device) {
      DevicePlace p = PlaceOf(target, rank, device);
      DevicePlace q;
      q.data_index.assign(rank, 0);
      for (int64_t j = 0; j < rank; ++j) q.data_index[perm[j]] = p.data_index[j];
      return q;
    });
    if (operand.ok()) choices.push_back({target, {*operand}});
  }
  const HloSharding& current = context.ValueOf(instruction.operand(0)).sharding;
  if (std::optional<HloSharding> result = TransposedSharding(current, perm, n)) {
    choices.push_back({*result, {current}});
  }
  std::optional<Choice> best = Cheapest(instruction, context, choices);
  if (!best.has_value()) return Decline("no tiling to transpose in");
  return Emit(instruction, context, *best);
}

// ---- reshape ----

absl::StatusOr<PartitionedValue> HandleReshape(const HloInstruction& instruction,
                                               PartitionContext& context) {
  const int64_t n = context.num_partitions();
  const Shape& out = instruction.shape();
  const Shape& in = instruction.operand(0)->shape();
  if (!out.IsArray() || !in.IsArray()) return Decline("malformed");
  const std::vector<std::optional<int64_t>> out_to_in = ReshapeDimMap(in, out);
  std::vector<Choice> choices;
  auto divisible = [](int64_t size, int64_t count) { return count == 1 || size % count == 0; };
  // A tiling of the output all of whose tiled dims map to input dims (and vice versa).
  auto try_pair = [&](const HloSharding& out_sharding) -> std::optional<Choice> {
    if (!IsPlannable(out_sharding) || ManualSubgroupCount(out_sharding) != 1) return std::nullopt;
    TileIndex counts = TileCounts(out_sharding, out.rank());
    std::vector<int64_t> in_counts(in.rank(), 1);
    for (int64_t j = 0; j < out.rank(); ++j) {
      if (counts[j] == 1) continue;
      if (!out_to_in[j].has_value()) return std::nullopt;
      const int64_t i = *out_to_in[j];
      const bool one_to_one = in.dimensions(i) == out.dimensions(j);
      if (!one_to_one &&
          (!divisible(out.dimensions(j), counts[j]) || !divisible(in.dimensions(i), counts[j]))) {
        return std::nullopt;
      }
      in_counts[i] = counts[j];
    }
    absl::StatusOr<HloSharding> operand = BuildSharding(in_counts, 1, n, [&](int64_t device) {
      DevicePlace p = PlaceOf(out_sharding, out.rank(), device);
      DevicePlace q;
      q.data_index.assign(in.rank(), 0);
      for (int64_t j = 0; j < out.rank(); ++j) {
        if (counts[j] > 1) q.data_index[*out_to_in[j]] = p.data_index[j];
      }
      return q;
    });
    if (!operand.ok()) return std::nullopt;
    // Local shapes must hold the same number of elements.
    if (LocalShape(in, *operand).ElementCount() != LocalShape(out, out_sharding).ElementCount()) {
      return std::nullopt;
    }
    return Choice{out_sharding, {*operand}};
  };
  const HloSharding target = Computable(context.ShardingOf(&instruction));
  if (std::optional<Choice> c = try_pair(target)) choices.push_back(*c);
  // From the operand's tiling.
  const HloSharding& current = context.ValueOf(instruction.operand(0)).sharding;
  if (std::optional<HloSharding> result = ReshapedSharding(in, out, current, n)) {
    if (std::optional<Choice> c = try_pair(*result)) choices.push_back(*c);
  }
  choices.push_back({HloSharding::Replicate(), {HloSharding::Replicate()}});
  std::optional<Choice> best = Cheapest(instruction, context, choices);
  if (!best.has_value()) return Decline("no tiling to reshape in");
  return Emit(instruction, context, *best);
}

// ---- ops acting along some dims (slice, pad, concatenate, reverse) ----

// Dims the op reads across (they must not be tiled for a local run).
std::vector<int64_t> ActingDims(const HloInstruction& instruction) {
  std::vector<int64_t> dims;
  const HloAttributes& attrs = instruction.attrs();
  const Shape& in = instruction.operand(0)->shape();
  switch (instruction.opcode()) {
    case HloOpcode::kSlice:
      if (attrs.slice.has_value()) {
        for (int64_t k = 0; k < in.rank(); ++k) {
          const SliceDim& s = (*attrs.slice)[k];
          if (s.start != 0 || s.limit != in.dimensions(k) || s.stride != 1) dims.push_back(k);
        }
      }
      break;
    case HloOpcode::kPad:
      if (attrs.padding.has_value()) {
        for (int64_t k = 0; k < in.rank(); ++k) {
          const PadDim& p = (*attrs.padding)[k];
          if (p.low != 0 || p.high != 0 || p.interior != 0) dims.push_back(k);
        }
      }
      break;
    case HloOpcode::kConcatenate:
    case HloOpcode::kReverse:
    case HloOpcode::kSort:
      if (attrs.dimensions.has_value()) dims = *attrs.dimensions;
      break;
    case HloOpcode::kDynamicSlice:
      // Dims sliced to less than their size (XLA clamps start indices on the global index, so
      // those dims are kept whole; full-size dims clamp to 0 locally as globally).
      if (attrs.dynamic_slice_sizes.has_value()) {
        for (int64_t k = 0; k < in.rank(); ++k) {
          if ((*attrs.dynamic_slice_sizes)[k] != in.dimensions(k)) dims.push_back(k);
        }
      }
      break;
    case HloOpcode::kDynamicUpdateSlice: {
      const Shape& update = instruction.operand(1)->shape();
      for (int64_t k = 0; k < in.rank(); ++k) {
        if (update.dimensions(k) != in.dimensions(k)) dims.push_back(k);
      }
      break;
    }
    default:
      break;
  }
  return dims;
}

// A stride-1 slice along tiled dims whose every tile can cut its output tile out of its own
// input tile: a local dynamic-slice at per-device offsets (the result keeps the operand's
// tiling). E.g. slicing the first element of a dim tiled with one element per tile.
struct WindowSlice {
  std::vector<std::vector<int64_t>> offsets;  // [dim][device]
  std::vector<int64_t> pad_high;
  int64_t score = 0;
};

std::optional<WindowSlice> PlanWindowSlice(const HloInstruction& instruction,
                                           PartitionContext& context) {
  if (instruction.opcode() != HloOpcode::kSlice || !instruction.attrs().slice.has_value()) {
    return std::nullopt;
  }
  const HloSharding& c = context.ValueOf(instruction.operand(0)).sharding;
  if (!c.IsTiled() || ManualSubgroupCount(c) != 1) return std::nullopt;
  const std::vector<SliceDim>& slice = *instruction.attrs().slice;
  const Shape& in = instruction.operand(0)->shape();
  const Shape& out = instruction.shape();
  const int64_t rank = in.rank();
  const int64_t n = context.num_partitions();
  TileIndex counts = TileCounts(c, rank);
  bool any_tiled_acting = false;
  WindowSlice plan;
  plan.offsets.assign(rank, std::vector<int64_t>(n, 0));
  plan.pad_high.assign(rank, 0);
  const Shape in_local = LocalShape(in, c);
  const Shape out_local = LocalShape(out, c);
  for (int64_t k = 0; k < rank; ++k) {
    const SliceDim& s = slice[k];
    if (s.stride != 1) return std::nullopt;
    const int64_t in_per = in_local.dimensions(k), out_per = out_local.dimensions(k);
    for (int64_t d = 0; d < n; ++d) {
      const int64_t t = PlaceOf(c, rank, d).data_index[k];
      const int64_t out_start = t * out_per;
      const int64_t out_limit = std::min((t + 1) * out_per, out.dimensions(k));
      int64_t offset = 0;
      if (out_start < out_limit) {
        const int64_t held_start = t * in_per;
        const int64_t held_limit = std::min((t + 1) * in_per, in.dimensions(k));
        if (s.start + out_start < held_start || s.start + out_limit > held_limit) {
          return std::nullopt;
        }
        offset = s.start + out_start - held_start;
      }
      plan.offsets[k][d] = offset;
      plan.pad_high[k] = std::max(plan.pad_high[k], offset + out_per - in_per);
    }
    if (counts[k] > 1 && (s.start != 0 || s.limit != in.dimensions(k))) any_tiled_acting = true;
  }
  if (!any_tiled_acting) return std::nullopt;
  absl::StatusOr<analysis::CollectiveCost> move =
      ReshardCost(out, c, context.ShardingOf(&instruction), n);
  if (!move.ok()) return std::nullopt;
  plan.score = move->Score();
  return plan;
}

PartitionedValue EmitWindowSlice(const HloInstruction& instruction, PartitionContext& context,
                                 const WindowSlice& plan) {
  const PartitionedValue& operand = context.ValueOf(instruction.operand(0));
  SpmdBuilder& b = context.builder();
  const Shape& in = instruction.operand(0)->shape();
  HloInstruction* x = b.PadHighWithZero(operand.local, plan.pad_high);
  std::vector<HloInstruction*> starts;
  for (int64_t k = 0; k < in.rank(); ++k) {
    starts.push_back(b.TableLookup(plan.offsets[k], absl::StrCat("slice.offset.dim", k)));
  }
  const Shape out_local = LocalShape(instruction.shape(), operand.sharding);
  HloInstruction* local = b.DynamicSlice(x, starts, out_local.dimensions());
  return PartitionedValue{local, instruction.shape(), operand.sharding};
}

absl::StatusOr<PartitionedValue> HandleActingAlongDims(const HloInstruction& instruction,
                                                       PartitionContext& context) {
  const int64_t n = context.num_partitions();
  const Shape& out = instruction.shape();
  const HloOpcode opcode = instruction.opcode();
  if (!out.IsArray() && opcode != HloOpcode::kSort) return Decline("malformed");
  const std::vector<int64_t> dims = ActingDims(instruction);
  const int64_t rank = instruction.operand(0)->shape().rank();
  // Operands that carry arrays of the result's rank (pad value and start indices are scalars).
  const int64_t arrays = opcode == HloOpcode::kPad || opcode == HloOpcode::kDynamicSlice ? 1
                         : opcode == HloOpcode::kDynamicUpdateSlice                      ? 2
                                                                    : instruction.operand_count();
  std::vector<Choice> choices;
  auto add_base = [&](const HloSharding& s) {
    if (!IsPlannable(s) || ManualSubgroupCount(s) != 1) return;
    absl::StatusOr<HloSharding> base = FoldDims(s, rank, dims, n);
    if (!base.ok()) return;
    const HloSharding result =
        out.IsTuple() ? TupleSharding(out, std::vector<HloSharding>(out.tuple_size(), *base))
                      : *base;
    Choice c{result, std::vector<HloSharding>(arrays, *base)};
    if (opcode == HloOpcode::kPad) c.operands.push_back(HloSharding::Replicate());
    choices.push_back(std::move(c));
  };
  add_base(Computable(context.ShardingOf(&instruction)));
  for (int64_t i = 0; i < arrays; ++i) add_base(context.ValueOf(instruction.operand(i)).sharding);
  int64_t best_score = 0;
  std::optional<Choice> best = Cheapest(instruction, context, choices, &best_score);
  if (std::optional<WindowSlice> window = PlanWindowSlice(instruction, context)) {
    if (!best.has_value() || window->score < best_score) {
      return EmitWindowSlice(instruction, context, *window);
    }
  }
  if (!best.has_value()) return Decline("no tiling to run in");
  // Slice limits and dynamic-slice sizes of untouched dims become the local sizes.
  const HloSharding base = best->operands[0];
  return Emit(instruction, context, *best, [&](HloInstruction* local) {
    const Shape local_in = LocalShape(instruction.operand(0)->shape(), base);
    auto untouched = [&](int64_t k) {
      return std::find(dims.begin(), dims.end(), k) == dims.end();
    };
    if (opcode == HloOpcode::kSlice) {
      std::vector<SliceDim> slice = *instruction.attrs().slice;
      for (int64_t k = 0; k < rank; ++k) {
        if (untouched(k)) slice[k] = {0, local_in.dimensions(k), 1};
      }
      local->mutable_attrs().slice = slice;
    } else if (opcode == HloOpcode::kDynamicSlice) {
      std::vector<int64_t> sizes = *instruction.attrs().dynamic_slice_sizes;
      for (int64_t k = 0; k < rank; ++k) {
        if (untouched(k)) sizes[k] = local_in.dimensions(k);
      }
      local->mutable_attrs().dynamic_slice_sizes = sizes;
    }
  });
}

// ---- constant, iota: the whole value on every device (no data moves), sliced by the driver ----

absl::StatusOr<PartitionedValue> HandleWholeValue(const HloInstruction& instruction,
                                                  PartitionContext& context) {
  if (!instruction.shape().IsArray()) return Decline("tuple constant");
  HloInstruction* local = context.CloneLocal(instruction, {}, instruction.shape());
  return PartitionedValue{local, instruction.shape(), HloSharding::Replicate()};
}

}  // namespace

void RegisterShapeHandlers(HandlerRegistry& registry) {
  registry.Register(HloOpcode::kBroadcast, HandleBroadcast);
  registry.Register(HloOpcode::kTranspose, HandleTranspose);
  registry.Register(HloOpcode::kReshape, HandleReshape);
  registry.Register(HloOpcode::kSlice, HandleActingAlongDims);
  registry.Register(HloOpcode::kPad, HandleActingAlongDims);
  registry.Register(HloOpcode::kConcatenate, HandleActingAlongDims);
  registry.Register(HloOpcode::kReverse, HandleActingAlongDims);
  registry.Register(HloOpcode::kSort, HandleActingAlongDims);
  registry.Register(HloOpcode::kDynamicSlice, HandleActingAlongDims);
  registry.Register(HloOpcode::kDynamicUpdateSlice, HandleActingAlongDims);
  registry.Register(HloOpcode::kConstant, HandleWholeValue);
  registry.Register(HloOpcode::kIota, HandleWholeValue);
}

}  // namespace spmdcheck::partitioner
