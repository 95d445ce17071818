// The program generator's pattern catalogue (names, default weights, the `name=w` flag syntax)
// and DetectPatterns(): which patterns a module contains, read off its instructions.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "fuzz/program_gen.h"
#include "ir/partition_spec.h"

namespace spmdcheck::fuzz {
namespace {

struct PatternInfo {
  const char* name;
  int weight;  // Default weight.
};

// In GenPattern order. The weights add up to about half the default op weights, so about one
// step in three emits a pattern on purpose.
constexpr PatternInfo kPatterns[kNumGenPatterns] = {
    {"ds-out-of-range-start", 2},
    {"dus-out-of-range-start", 3},
    {"index-s64", 2},
    {"index-u32", 2},
    {"uneven-dim", 1},
    {"uneven-dim-over-more-devices", 2},
    {"partial-replication", 2},
    {"transposed-iota-devices", 2},
    {"multi-axis-dim", 2},
    {"reshape-merge-sharded", 2},
    {"reshape-split-sharded", 2},
    {"dot-sharded-contracting", 2},
    {"dot-sharded-batch", 2},
    {"conv-feature-groups", 2},
    {"conv-batch-groups", 2},
    {"conv-sharded-batch", 1},
    {"conv-sharded-feature", 1},
    {"conv-sharded-spatial", 2},
    {"gather-sharded-indexed-dim", 2},
    {"gather-sharded-offset-dim", 1},
    {"gather-sharded-indices", 1},
    {"scatter-sharded-indexed-dim", 2},
    {"scatter-sharded-updates", 1},
    {"scatter-noncommutative", 2},
    {"sort-sharded-dim", 2},
    {"topk-sharded-dim", 2},
    {"reduce-window", 2},
    {"pad-negative", 2},
    {"pad-interior-tiny-shards", 2},
    {"concat-tiny-shards", 2},
    {"while-partition-id-select-reduce", 2},
    {"manual-region", 2},
    {"narrow-float", 1},
    {"integer-overflow", 2},
};

// Tiles of `sharding` along data dim `dim` (1 when not tiled there).
int64_t TilesOn(const std::optional<HloSharding>& sharding, int64_t dim) {
  if (!sharding.has_value() || !sharding->IsTiled() || dim < 0 ||
      dim >= sharding->TiledDataRank()) {
    return 1;
  }
  return sharding->tile_assignment().dim(dim);
}

bool ShardedOn(const HloInstruction* instr, int64_t dim) {
  return instr != nullptr && TilesOn(instr->sharding(), dim) > 1;
}

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Values of a scalar constant, or of a broadcast scalar constant.
std::optional<int64_t> ConstantInt(const HloInstruction* instr) {
  if (instr->opcode() == HloOpcode::kBroadcast && instr->operand_count() == 1) {
    instr = instr->operand(0);
  }
  if (instr->opcode() != HloOpcode::kConstant || !instr->literal().has_value() ||
      !instr->shape().IsArray() || instr->shape().ElementCount() != 1 ||
      !IsIntegralType(instr->shape().element_type())) {
    return std::nullopt;
  }
  return instr->literal()->GetInt64(0);
}

// Sharding leaves of an instruction (tuple shardings flattened).
void Leaves(const HloSharding& s, std::vector<const HloSharding*>* out) {
  if (s.IsTuple()) {
    for (const HloSharding& e : s.tuple_elements()) Leaves(e, out);
  } else {
    out->push_back(&s);
  }
}

// Array shapes of a (tuple) shape, in leaf order.
void ArrayLeaves(const Shape& shape, std::vector<const Shape*>* out) {
  if (shape.IsTuple()) {
    for (int64_t i = 0; i < shape.tuple_size(); ++i) ArrayLeaves(shape.tuple_shapes()[i], out);
  } else {
    out->push_back(&shape);
  }
}

// Whether `s` is mesh.ShardingFor(dim_axes) for some dim_axes listing two axes of size > 1 on
// one dim.
bool IsMultiAxisSharding(const HloSharding& s, const Mesh& mesh) {
  if (!s.IsTiled() || s.HasManualSubgroup()) return false;
  const int64_t rank = s.TiledDataRank();
  const auto& axes = mesh.axes();
  const int64_t k = static_cast<int64_t>(axes.size());
  std::vector<int64_t> big;  // Axes of size > 1.
  for (int64_t a = 0; a < k; ++a) {
    if (axes[a].size > 1) big.push_back(a);
  }
  if (big.size() < 2 || rank < 1) return false;
  bool candidate = false;
  for (int64_t d = 0; d < rank; ++d) {
    for (size_t i = 0; i < big.size(); ++i) {
      for (size_t j = i + 1; j < big.size(); ++j) {
        if (s.tile_assignment().dim(d) % (axes[big[i]].size * axes[big[j]].size) == 0) {
          candidate = true;
        }
      }
    }
  }
  if (!candidate) return false;
  // The mesh axes per dim (the PartitionSpec over the mesh; none when no whole-axis assignment
  // of the mesh gives this sharding): two axes of size > 1 on one dim.
  const absl::StatusOr<PartitionSpec> spec = ShardingToPartitionSpec(mesh, s, rank);
  if (!spec.ok()) return false;
  for (const PartitionSpec::Dim& dim : spec->dims) {
    int64_t sharding_axes = 0;
    for (const std::string& name : dim.axes) {
      const std::optional<int64_t> a = mesh.AxisIndex(name);
      if (a.has_value() && axes[*a].size > 1) ++sharding_axes;
    }
    if (sharding_axes >= 2) return true;
  }
  return false;
}

// Reshape dim groups: pairs (input dims, output dims) whose element counts match, size-1 dims
// left out.
struct DimGroup {
  std::vector<int64_t> in, out;
};
std::vector<DimGroup> ReshapeGroups(const Shape& in, const Shape& out) {
  std::vector<int64_t> a, b;
  for (int64_t i = 0; i < in.rank(); ++i) {
    if (in.dimensions(i) != 1) a.push_back(i);
  }
  for (int64_t i = 0; i < out.rank(); ++i) {
    if (out.dimensions(i) != 1) b.push_back(i);
  }
  std::vector<DimGroup> groups;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    DimGroup g;
    int64_t pa = in.dimensions(a[i]), pb = out.dimensions(b[j]);
    g.in.push_back(a[i++]);
    g.out.push_back(b[j++]);
    while (pa != pb) {
      if (pa < pb && i < a.size()) {
        pa *= in.dimensions(a[i]);
        g.in.push_back(a[i++]);
      } else if (pb < pa && j < b.size()) {
        pb *= out.dimensions(b[j]);
        g.out.push_back(b[j++]);
      } else {
        return groups;
      }
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

bool IsIndexType(PrimitiveType t, PrimitiveType want) { return t == want; }

bool IsNarrowFloat(PrimitiveType t) {
  return t == PrimitiveType::kBF16 || t == PrimitiveType::kF16 || t == PrimitiveType::kF8E5M2 ||
         t == PrimitiveType::kF8E4M3FN;
}

// The combiner returns its second parameter (overwrite), or is a subtract / divide.
bool NonCommutative(const HloComputation* comp) {
  if (comp == nullptr || comp->root() == nullptr) return false;
  const HloInstruction* root = comp->root();
  if (root->opcode() == HloOpcode::kParameter) return true;
  return root->opcode() == HloOpcode::kSubtract || root->opcode() == HloOpcode::kDivide;
}

const HloComputation* Called(const HloInstruction& instr, absl::string_view key) {
  for (const CalledComputations& c : instr.called()) {
    if (c.role == key && !c.computations.empty()) return c.computations.front();
  }
  return nullptr;
}

bool Has(const HloComputation* comp, HloOpcode op) {
  if (comp == nullptr) return false;
  for (const auto& i : comp->instructions()) {
    if (i->opcode() == op) return true;
  }
  return false;
}

void Add(std::vector<GenPattern>* out, GenPattern p) { out->push_back(p); }

void DetectStarts(const HloInstruction& instr, const HloInstruction* sharded_holder,
                  int64_t first_index, const std::vector<int64_t>& sizes, GenPattern pattern,
                  std::vector<GenPattern>* out) {
  const Shape& s = instr.operand(0)->shape();
  for (int64_t d = 0; d < s.rank() && first_index + d < instr.operand_count(); ++d) {
    const HloInstruction* start = instr.operand(first_index + d);
    const PrimitiveType t = start->shape().element_type();
    if (t == PrimitiveType::kS64) Add(out, GenPattern::kIndexS64);
    if (t == PrimitiveType::kU32) Add(out, GenPattern::kIndexU32);
    std::optional<int64_t> v = ConstantInt(start);
    if (!v.has_value() || !ShardedOn(sharded_holder, d)) continue;
    if (IsUnsignedIntegralType(t)) v = static_cast<int64_t>(static_cast<uint32_t>(*v));
    if (*v < 0 || *v > s.dimensions(d) - sizes[d]) Add(out, pattern);
  }
}

// Patterns of the instruction's own sharding: partial replication, permuted devices, several mesh
// axes on one dim, and uneven dims.
void DetectShardingPatterns(const HloInstruction& instr, const Mesh* mesh,
                            std::vector<GenPattern>* out) {
  if (!instr.sharding().has_value()) return;
  std::vector<const HloSharding*> leaves;
  Leaves(*instr.sharding(), &leaves);
  std::vector<const Shape*> shapes;
  ArrayLeaves(instr.shape(), &shapes);
  for (size_t l = 0; l < leaves.size(); ++l) {
    const HloSharding& s = *leaves[l];
    if (!s.IsTiled()) continue;
    if (s.ReplicateOnLastTileDim()) Add(out, GenPattern::kPartialReplication);
    const std::vector<int64_t> devices = s.tile_assignment().Devices();
    if (s.NumTiles() > 1 && !std::is_sorted(devices.begin(), devices.end())) {
      Add(out, GenPattern::kTransposedIotaDevices);
    }
    if (mesh != nullptr && IsMultiAxisSharding(s, *mesh)) Add(out, GenPattern::kMultiAxisDim);
    const Shape* leaf = l < shapes.size() ? shapes[l] : nullptr;
    if (leaf == nullptr || !leaf->IsArray()) continue;
    for (int64_t d = 0; d < std::min<int64_t>(leaf->rank(), s.TiledDataRank()); ++d) {
      const int64_t t = s.tile_assignment().dim(d);
      if (t <= 1) continue;
      if (leaf->dimensions(d) < t) {
        Add(out, GenPattern::kUnevenDimOverMoreDevices);
      } else if (leaf->dimensions(d) % t != 0) {
        Add(out, GenPattern::kUnevenDim);
      }
    }
  }
}

// ---- One detector per op family (DetectOpPatterns dispatches).

void DetectDynamicUpdateSlice(const HloInstruction& instr, std::vector<GenPattern>* out) {
  if (instr.operand_count() < 2) return;
  const HloInstruction* holder = ShardedOn(&instr, 0) ? &instr : instr.operand(0);
  std::vector<int64_t> sizes = instr.operand(1)->shape().dimensions();
  // Sharded on any dim: the result's or the operand's sharding.
  for (int64_t d = 0; d < instr.shape().rank(); ++d) {
    if (ShardedOn(&instr, d)) holder = &instr;
  }
  DetectStarts(instr, holder, 2, sizes, GenPattern::kDusOutOfRangeStart, out);
}

void DetectReshape(const HloInstruction& instr, std::vector<GenPattern>* out) {
  const HloInstruction* a = instr.operand(0);
  for (const DimGroup& g : ReshapeGroups(a->shape(), instr.shape())) {
    bool in_sharded = false, out_sharded = false;
    for (int64_t d : g.in) in_sharded |= ShardedOn(a, d);
    for (int64_t d : g.out) out_sharded |= ShardedOn(&instr, d);
    if (g.in.size() >= 2 && g.out.size() == 1 && (in_sharded || out_sharded)) {
      Add(out, GenPattern::kReshapeMergeSharded);
    }
    if (g.in.size() == 1 && g.out.size() >= 2 && (in_sharded || out_sharded)) {
      Add(out, GenPattern::kReshapeSplitSharded);
    }
  }
}

void DetectDot(const HloInstruction& instr, std::vector<GenPattern>* out) {
  const auto& attrs = instr.attrs();
  if (!attrs.dot_dimension_numbers.has_value()) return;
  const DotDimensionNumbers& dn = *attrs.dot_dimension_numbers;
  for (int side = 0; side < 2; ++side) {
    const HloInstruction* o = instr.operand(side);
    for (int64_t d : side == 0 ? dn.lhs_contracting : dn.rhs_contracting) {
      if (ShardedOn(o, d)) Add(out, GenPattern::kDotShardedContracting);
    }
    for (int64_t d : side == 0 ? dn.lhs_batch : dn.rhs_batch) {
      if (ShardedOn(o, d)) Add(out, GenPattern::kDotShardedBatch);
    }
  }
}

void DetectConvolution(const HloInstruction& instr, std::vector<GenPattern>* out) {
  const auto& attrs = instr.attrs();
  if (attrs.feature_group_count.value_or(1) > 1) Add(out, GenPattern::kConvFeatureGroups);
  if (attrs.batch_group_count.value_or(1) > 1) Add(out, GenPattern::kConvBatchGroups);
  if (!attrs.dim_labels.has_value()) return;
  const ConvolutionDimensionNumbers& dn = *attrs.dim_labels;
  const HloInstruction* lhs = instr.operand(0);
  const HloInstruction* rhs = instr.operand(1);
  if (ShardedOn(lhs, dn.input_batch)) Add(out, GenPattern::kConvShardedBatch);
  if (ShardedOn(lhs, dn.input_feature) || ShardedOn(rhs, dn.kernel_input_feature) ||
      ShardedOn(rhs, dn.kernel_output_feature)) {
    Add(out, GenPattern::kConvShardedFeature);
  }
  for (int64_t d : dn.input_spatial) {
    if (ShardedOn(lhs, d)) Add(out, GenPattern::kConvShardedSpatial);
  }
}

void DetectIndexType(PrimitiveType t, std::vector<GenPattern>* out) {
  if (IsIndexType(t, PrimitiveType::kS64)) Add(out, GenPattern::kIndexS64);
  if (IsIndexType(t, PrimitiveType::kU32)) Add(out, GenPattern::kIndexU32);
}

void DetectGather(const HloInstruction& instr, std::vector<GenPattern>* out) {
  const auto& attrs = instr.attrs();
  if (!attrs.gather_dimension_numbers.has_value() || instr.operand_count() < 2) return;
  const GatherDimensionNumbers& dn = *attrs.gather_dimension_numbers;
  const HloInstruction* a = instr.operand(0);
  const HloInstruction* idx = instr.operand(1);
  DetectIndexType(idx->shape().element_type(), out);
  for (int64_t d = 0; d < a->shape().rank(); ++d) {
    if (!ShardedOn(a, d)) continue;
    Add(out, Contains(dn.start_index_map, d) ? GenPattern::kGatherShardedIndexedDim
                                             : GenPattern::kGatherShardedOffsetDim);
  }
  for (int64_t d = 0; d < idx->shape().rank(); ++d) {
    if (d != dn.index_vector_dim && ShardedOn(idx, d)) {
      Add(out, GenPattern::kGatherShardedIndices);
    }
  }
}

void DetectScatter(const HloInstruction& instr, std::vector<GenPattern>* out) {
  const auto& attrs = instr.attrs();
  if (!attrs.scatter_dimension_numbers.has_value() || instr.operand_count() < 3) return;
  const ScatterDimensionNumbers& dn = *attrs.scatter_dimension_numbers;
  const HloInstruction* a = instr.operand(0);
  DetectIndexType(instr.operand(1)->shape().element_type(), out);
  for (int64_t d = 0; d < a->shape().rank(); ++d) {
    if (ShardedOn(a, d) && Contains(dn.scatter_dims_to_operand_dims, d)) {
      Add(out, GenPattern::kScatterShardedIndexedDim);
    }
  }
  for (int64_t d = 0; d < instr.operand(2)->shape().rank(); ++d) {
    if (ShardedOn(instr.operand(2), d)) Add(out, GenPattern::kScatterShardedUpdates);
  }
  if (NonCommutative(Called(instr, "to_apply"))) {
    Add(out, GenPattern::kScatterNoncommutative);
  }
}

void DetectCustomCall(const HloInstruction& instr, std::vector<GenPattern>* out) {
  const std::string target = instr.attrs().custom_call_target.value_or("");
  if (target == "TopK" && instr.operand_count() == 1 &&
      ShardedOn(instr.operand(0), instr.operand(0)->shape().rank() - 1)) {
    Add(out, GenPattern::kTopKShardedDim);
  }
  if (target == "SPMDFullToShardShape") Add(out, GenPattern::kManualRegion);
}

void DetectReduceWindow(const HloInstruction& instr, std::vector<GenPattern>* out) {
  const auto& attrs = instr.attrs();
  if (!attrs.window.has_value()) return;
  for (int64_t d = 0; d < static_cast<int64_t>(attrs.window->size()); ++d) {
    if ((*attrs.window)[d].size > 1 && ShardedOn(instr.operand(0), d)) {
      Add(out, GenPattern::kReduceWindow);
    }
  }
}

void DetectPad(const HloInstruction& instr, std::vector<GenPattern>* out) {
  const auto& attrs = instr.attrs();
  if (!attrs.padding.has_value()) return;
  const HloInstruction* a = instr.operand(0);
  for (int64_t d = 0; d < static_cast<int64_t>(attrs.padding->size()); ++d) {
    const PadDim& p = (*attrs.padding)[d];
    const int64_t t = std::max(TilesOn(a->sharding(), d), TilesOn(instr.sharding(), d));
    if (t <= 1) continue;
    if (p.low < 0 || p.high < 0) Add(out, GenPattern::kPadNegative);
    const int64_t per_shard = (a->shape().dimensions(d) + t - 1) / t;
    if (p.interior > 0 && per_shard <= 2) Add(out, GenPattern::kPadInteriorTinyShards);
  }
}

void DetectConcatenate(const HloInstruction& instr, std::vector<GenPattern>* out) {
  const auto& attrs = instr.attrs();
  if (!attrs.dimensions.has_value() || attrs.dimensions->empty()) return;
  const int64_t d = attrs.dimensions->front();
  for (const HloInstruction* o : instr.operands()) {
    const int64_t t = std::max(TilesOn(o->sharding(), d), TilesOn(instr.sharding(), d));
    if (t > 1 && (o->shape().dimensions(d) + t - 1) / t <= 2) {
      Add(out, GenPattern::kConcatTinyShards);
      return;
    }
  }
}

void DetectWhile(const HloInstruction& instr, std::vector<GenPattern>* out) {
  const HloComputation* body = Called(instr, "body");
  if (Has(body, HloOpcode::kPartitionId) && Has(body, HloOpcode::kSelect) &&
      (Has(body, HloOpcode::kReduce) || Has(body, HloOpcode::kAllReduce))) {
    Add(out, GenPattern::kWhilePartitionIdSelectReduce);
  }
}

// add / multiply / subtract of s32 or u32 with a constant of magnitude >= 2^30.
void DetectIntegerOverflow(const HloInstruction& instr, std::vector<GenPattern>* out) {
  const Shape& shape = instr.shape();
  const PrimitiveType t = shape.IsArray() ? shape.element_type() : PrimitiveType::kPred;
  if (t != PrimitiveType::kS32 && t != PrimitiveType::kU32) return;
  for (const HloInstruction* o : instr.operands()) {
    std::optional<int64_t> v = ConstantInt(o);
    if (v.has_value() && (*v >= (int64_t{1} << 30) || *v <= -(int64_t{1} << 30))) {
      Add(out, GenPattern::kIntegerOverflow);
    }
  }
}

// The patterns of the op itself, by opcode.
void DetectOpPatterns(const HloInstruction& instr, std::vector<GenPattern>* out) {
  const auto& attrs = instr.attrs();
  switch (instr.opcode()) {
    case HloOpcode::kDynamicSlice:
      if (attrs.dynamic_slice_sizes.has_value()) {
        DetectStarts(instr, instr.operand(0), 1, *attrs.dynamic_slice_sizes,
                     GenPattern::kDsOutOfRangeStart, out);
      }
      return;
    case HloOpcode::kDynamicUpdateSlice:
      return DetectDynamicUpdateSlice(instr, out);
    case HloOpcode::kReshape:
      return DetectReshape(instr, out);
    case HloOpcode::kDot:
      return DetectDot(instr, out);
    case HloOpcode::kConvolution:
      return DetectConvolution(instr, out);
    case HloOpcode::kGather:
      return DetectGather(instr, out);
    case HloOpcode::kScatter:
      return DetectScatter(instr, out);
    case HloOpcode::kSort:
      if (attrs.dimensions.has_value() && attrs.dimensions->size() == 1 &&
          ShardedOn(instr.operand(0), attrs.dimensions->front())) {
        Add(out, GenPattern::kSortShardedDim);
      }
      return;
    case HloOpcode::kCustomCall:
      return DetectCustomCall(instr, out);
    case HloOpcode::kReduceWindow:
      return DetectReduceWindow(instr, out);
    case HloOpcode::kPad:
      return DetectPad(instr, out);
    case HloOpcode::kConcatenate:
      return DetectConcatenate(instr, out);
    case HloOpcode::kWhile:
      return DetectWhile(instr, out);
    case HloOpcode::kAdd:
    case HloOpcode::kMultiply:
    case HloOpcode::kSubtract:
      return DetectIntegerOverflow(instr, out);
    default:
      return;
  }
}

}  // namespace

absl::string_view GenPatternName(GenPattern pattern) {
  return kPatterns[static_cast<int>(pattern)].name;
}

std::optional<GenPattern> GenPatternFromName(absl::string_view name) {
  for (int i = 0; i < kNumGenPatterns; ++i) {
    if (name == kPatterns[i].name) return static_cast<GenPattern>(i);
  }
  return std::nullopt;
}

std::array<int, kNumGenPatterns> ProgramGenOptions::DefaultPatternWeights() {
  std::array<int, kNumGenPatterns> w{};
  for (int i = 0; i < kNumGenPatterns; ++i) w[i] = kPatterns[i].weight;
  return w;
}

std::array<int, kNumGenPatterns> ProgramGenOptions::NoPatternWeights() { return {}; }

absl::Status SetPatternWeights(absl::string_view spec, ProgramGenOptions* options) {
  for (absl::string_view item : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    std::vector<absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    int weight = 0;
    if (kv.size() != 2 || !absl::SimpleAtoi(kv[1], &weight) || weight < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("pattern weight \"", item, "\": expected NAME=W with W >= 0"));
    }
    const absl::string_view name = absl::StripAsciiWhitespace(kv[0]);
    if (name == "all") {
      options->pattern_weights.fill(weight);
      continue;
    }
    std::optional<GenPattern> p = GenPatternFromName(name);
    if (!p.has_value()) {
      std::vector<std::string> names;
      for (const PatternInfo& info : kPatterns) names.push_back(info.name);
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown pattern \"", name, "\"; patterns: all, ", absl::StrJoin(names, ", ")));
    }
    options->pattern_weights[static_cast<int>(*p)] = weight;
  }
  return absl::OkStatus();
}

std::vector<GenPattern> DetectPatterns(const HloInstruction& instr, const Mesh* mesh) {
  std::vector<GenPattern> out;
  DetectShardingPatterns(instr, mesh, &out);
  const Shape& shape = instr.shape();
  if (shape.IsArray() && IsNarrowFloat(shape.element_type())) Add(&out, GenPattern::kNarrowFloat);
  DetectOpPatterns(instr, &out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<GenPattern> DetectPatterns(const HloModule& module, const Mesh* mesh) {
  std::vector<bool> seen(kNumGenPatterns, false);
  for (const auto& comp : module.computations()) {
    for (const auto& instr : comp->instructions()) {
      for (GenPattern p : DetectPatterns(*instr, mesh)) seen[static_cast<int>(p)] = true;
    }
  }
  std::vector<GenPattern> out;
  for (int i = 0; i < kNumGenPatterns; ++i) {
    if (seen[i]) out.push_back(static_cast<GenPattern>(i));
  }
  return out;
}

}  // namespace spmdcheck::fuzz
