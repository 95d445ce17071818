#include "partitioner/spmd_builder.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/tile_assignment.h"

namespace spmdcheck::partitioner {
namespace {

Shape WithDims(const Shape& like, const std::vector<int64_t>& dims) {
  return Shape::Array(like.element_type(), dims);
}

}  // namespace

std::string ModuleBuildState::UniqueComputationName(absl::string_view base) {
  std::string name(base);
  for (int64_t i = 1; computation_names.contains(name); ++i) name = absl::StrCat(base, ".", i);
  computation_names.insert(name);
  return name;
}

SpmdBuilder::SpmdBuilder(ModuleBuildState* state, HloComputation* computation,
                         absl::flat_hash_set<std::string> reserved)
    : state_(state), computation_(computation), reserved_(std::move(reserved)) {
  for (const auto& instruction : computation->instructions()) taken_.insert(instruction->name());
}

std::string SpmdBuilder::UniqueName(absl::string_view base, bool use_reserved) {
  std::string root(base);
  if (use_reserved && !taken_.contains(root)) {
    reserved_.erase(root);
    taken_.insert(root);
    return root;
  }
  int64_t& counter = name_counters_[root];
  while (true) {
    std::string name = absl::StrCat(root, ".", counter++);
    if (!taken_.contains(name) && !reserved_.contains(name)) {
      taken_.insert(name);
      return name;
    }
  }
}

HloInstruction* SpmdBuilder::Add(HloOpcode opcode, Shape shape,
                                 std::vector<HloInstruction*> operands, absl::string_view name,
                                 bool use_reserved) {
  auto instruction =
      std::make_unique<HloInstruction>(opcode, UniqueName(name, use_reserved), std::move(shape));
  instruction->set_operands(std::move(operands));
  return computation_->AddInstruction(std::move(instruction));
}

bool SpmdBuilder::TryRename(HloInstruction* instruction, const std::string& name) {
  if (instruction->name() == name) return true;
  if (taken_.contains(name)) return false;
  taken_.erase(instruction->name());
  taken_.insert(name);
  reserved_.erase(name);
  instruction->set_name(name);
  return true;
}

HloInstruction* SpmdBuilder::PartitionId() {
  if (partition_id_ == nullptr) {
    partition_id_ =
        Add(HloOpcode::kPartitionId, Shape::Scalar(PrimitiveType::kU32), {}, "partition-id");
  }
  return partition_id_;
}

HloInstruction* SpmdBuilder::ConstantLiteral(Literal literal, absl::string_view name) {
  HloInstruction* c = Add(HloOpcode::kConstant, literal.shape(), {}, name);
  c->set_literal(std::move(literal));
  return c;
}

HloInstruction* SpmdBuilder::ConstantScalar(PrimitiveType type, double value) {
  Literal literal(Shape::Scalar(type));
  if (IsFloatingType(type)) {
    literal.SetDouble(0, value);
  } else if (IsComplexType(type)) {
    literal.SetComplex(0, {value, 0});
  } else {
    literal.SetInt64(0, static_cast<int64_t>(value));
  }
  return ConstantLiteral(std::move(literal));
}

HloInstruction* SpmdBuilder::TableLookup(const std::vector<int64_t>& per_partition,
                                         absl::string_view name) {
  const bool uniform = std::all_of(per_partition.begin(), per_partition.end(),
                                   [&](int64_t v) { return v == per_partition[0]; });
  if (uniform) return ConstantS32(per_partition.empty() ? 0 : per_partition[0]);
  auto it = table_cache_.find(per_partition);
  if (it != table_cache_.end()) return it->second;
  const int64_t n = static_cast<int64_t>(per_partition.size());
  Literal table(Shape::Array(PrimitiveType::kS32, {n}));
  for (int64_t i = 0; i < n; ++i) table.SetInt64(i, per_partition[i]);
  HloInstruction* constant = ConstantLiteral(std::move(table), absl::StrCat(name, ".table"));
  HloInstruction* pid = PartitionId();
  HloInstruction* slice = Add(HloOpcode::kDynamicSlice, Shape::Array(PrimitiveType::kS32, {1}),
                              {constant, pid}, absl::StrCat(name, ".entry"));
  slice->mutable_attrs().dynamic_slice_sizes = std::vector<int64_t>{1};
  HloInstruction* scalar = Reshape(slice, {});
  table_cache_[per_partition] = scalar;
  return scalar;
}

HloInstruction* SpmdBuilder::Reshape(HloInstruction* x, absl::Span<const int64_t> dims) {
  if (x->shape().dimensions() == std::vector<int64_t>(dims.begin(), dims.end())) return x;
  return Add(HloOpcode::kReshape, WithDims(x->shape(), {dims.begin(), dims.end()}), {x}, "reshape");
}

HloInstruction* SpmdBuilder::Copy(HloInstruction* x) {
  return Add(HloOpcode::kCopy, x->shape(), {x}, "copy");
}

HloInstruction* SpmdBuilder::Slice(HloInstruction* x, const std::vector<SliceDim>& slice) {
  std::vector<int64_t> dims;
  for (const SliceDim& s : slice) dims.push_back((s.limit - s.start + s.stride - 1) / s.stride);
  HloInstruction* out = Add(HloOpcode::kSlice, WithDims(x->shape(), dims), {x}, "slice");
  out->mutable_attrs().slice = slice;
  return out;
}

HloInstruction* SpmdBuilder::SliceToSize(HloInstruction* x, absl::Span<const int64_t> limits) {
  if (x->shape().dimensions() == std::vector<int64_t>(limits.begin(), limits.end())) return x;
  std::vector<SliceDim> slice;
  for (int64_t limit : limits) slice.push_back({0, limit, 1});
  return Slice(x, slice);
}

HloInstruction* SpmdBuilder::PadHigh(HloInstruction* x, absl::Span<const int64_t> high,
                                     HloInstruction* pad_value) {
  std::vector<PadDim> padding;
  bool any = false;
  for (int64_t h : high) {
    padding.push_back({0, h, 0});
    any = any || h != 0;
  }
  if (!any) return x;
  return Pad(x, padding, pad_value);
}

HloInstruction* SpmdBuilder::PadHighWithZero(HloInstruction* x, absl::Span<const int64_t> high) {
  for (int64_t h : high) {
    if (h != 0) return PadHigh(x, high, ConstantScalar(x->shape().element_type(), 0));
  }
  return x;
}

HloInstruction* SpmdBuilder::Pad(HloInstruction* x, const std::vector<PadDim>& padding,
                                 HloInstruction* pad_value) {
  std::vector<int64_t> dims;
  for (size_t k = 0; k < padding.size(); ++k) {
    const int64_t size = x->shape().dimensions(k);
    dims.push_back(padding[k].low + padding[k].high + size +
                   std::max<int64_t>(size - 1, 0) * padding[k].interior);
  }
  HloInstruction* out = Add(HloOpcode::kPad, WithDims(x->shape(), dims), {x, pad_value}, "pad");
  out->mutable_attrs().padding = padding;
  return out;
}

HloInstruction* SpmdBuilder::DynamicSlice(HloInstruction* x,
                                          absl::Span<HloInstruction* const> starts,
                                          absl::Span<const int64_t> sizes) {
  std::vector<HloInstruction*> operands = {x};
  operands.insert(operands.end(), starts.begin(), starts.end());
  HloInstruction* out =
      Add(HloOpcode::kDynamicSlice, WithDims(x->shape(), {sizes.begin(), sizes.end()}),
          std::move(operands), "dynamic-slice");
  out->mutable_attrs().dynamic_slice_sizes = std::vector<int64_t>(sizes.begin(), sizes.end());
  return out;
}

HloInstruction* SpmdBuilder::DynamicUpdateSlice(HloInstruction* x, HloInstruction* update,
                                                absl::Span<HloInstruction* const> starts) {
  std::vector<HloInstruction*> operands = {x, update};
  operands.insert(operands.end(), starts.begin(), starts.end());
  return Add(HloOpcode::kDynamicUpdateSlice, x->shape(), std::move(operands),
             "dynamic-update-slice");
}

HloInstruction* SpmdBuilder::Transpose(HloInstruction* x, absl::Span<const int64_t> perm) {
  bool identity = true;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < perm.size(); ++i) {
    identity = identity && perm[i] == static_cast<int64_t>(i);
    dims.push_back(x->shape().dimensions(perm[i]));
  }
  if (identity) return x;
  HloInstruction* out = Add(HloOpcode::kTranspose, WithDims(x->shape(), dims), {x}, "transpose");
  out->mutable_attrs().dimensions = std::vector<int64_t>(perm.begin(), perm.end());
  return out;
}

HloInstruction* SpmdBuilder::Broadcast(HloInstruction* x, const Shape& shape,
                                       absl::Span<const int64_t> dims) {
  HloInstruction* out =
      Add(HloOpcode::kBroadcast, WithDims(x->shape(), shape.dimensions()), {x}, "broadcast");
  out->mutable_attrs().dimensions = std::vector<int64_t>(dims.begin(), dims.end());
  return out;
}

HloInstruction* SpmdBuilder::Iota(const Shape& shape, int64_t dim) {
  HloInstruction* out = Add(HloOpcode::kIota, shape, {}, "iota");
  out->mutable_attrs().iota_dimension = dim;
  return out;
}

HloInstruction* SpmdBuilder::Compare(HloInstruction* a, HloInstruction* b,
                                     ComparisonDirection direction) {
  HloInstruction* out =
      Add(HloOpcode::kCompare, Shape::Array(PrimitiveType::kPred, a->shape().dimensions()), {a, b},
          "compare");
  out->mutable_attrs().direction = direction;
  return out;
}

HloInstruction* SpmdBuilder::Binary(HloOpcode opcode, HloInstruction* a, HloInstruction* b) {
  return Add(opcode, WithDims(a->shape(), a->shape().dimensions()), {a, b},
             HloOpcodeString(opcode));
}

HloInstruction* SpmdBuilder::Convert(HloInstruction* x, PrimitiveType type) {
  if (x->shape().element_type() == type) return x;
  return Add(HloOpcode::kConvert, Shape::Array(type, x->shape().dimensions()), {x}, "convert");
}

HloInstruction* SpmdBuilder::Select(HloInstruction* pred, HloInstruction* on_true,
                                    HloInstruction* on_false) {
  return Add(HloOpcode::kSelect, WithDims(on_true->shape(), on_true->shape().dimensions()),
             {pred, on_true, on_false}, "select");
}

HloInstruction* SpmdBuilder::Concatenate(std::vector<HloInstruction*> parts, int64_t dim) {
  std::vector<int64_t> dims = parts[0]->shape().dimensions();
  dims[dim] = 0;
  for (HloInstruction* p : parts) dims[dim] += p->shape().dimensions(dim);
  // The shape is computed before `parts` is moved into the instruction.
  Shape shape = WithDims(parts[0]->shape(), dims);
  HloInstruction* out =
      Add(HloOpcode::kConcatenate, std::move(shape), std::move(parts), "concatenate");
  out->mutable_attrs().dimensions = std::vector<int64_t>{dim};
  return out;
}

HloInstruction* SpmdBuilder::Tuple(std::vector<HloInstruction*> elements) {
  std::vector<Shape> shapes;
  for (HloInstruction* e : elements) shapes.push_back(e->shape());
  return Add(HloOpcode::kTuple, Shape::Tuple(std::move(shapes)), std::move(elements), "tuple");
}

HloInstruction* SpmdBuilder::GetTupleElement(HloInstruction* tuple, int64_t index) {
  HloInstruction* out = Add(HloOpcode::kGetTupleElement, tuple->shape().tuple_shapes()[index],
                            {tuple}, "get-tuple-element");
  out->mutable_attrs().tuple_index = index;
  return out;
}

HloInstruction* SpmdBuilder::Filled(const Shape& shape, double value) {
  HloInstruction* scalar = ConstantScalar(shape.element_type(), value);
  if (shape.rank() == 0) return scalar;
  return Broadcast(scalar, shape, {});
}

ReplicaGroups SpmdBuilder::GlobalGroups(const std::vector<std::vector<int64_t>>& partition_groups,
                                        bool flatten_replicas) const {
  std::vector<std::vector<int64_t>> groups;
  const int64_t p = state_->num_partitions;
  const int64_t replicas = flatten_replicas ? state_->replica_count : 1;
  for (int64_t r = 0; r < replicas; ++r) {
    for (const std::vector<int64_t>& group : partition_groups) {
      std::vector<int64_t> global;
      for (int64_t d : group) global.push_back(r * p + d);
      groups.push_back(std::move(global));
    }
  }
  if (!groups.empty()) {
    const int64_t size = static_cast<int64_t>(groups[0].size());
    bool uniform = true;
    std::vector<int64_t> flat;
    for (const auto& g : groups) {
      uniform = uniform && static_cast<int64_t>(g.size()) == size;
      flat.insert(flat.end(), g.begin(), g.end());
    }
    if (uniform) {
      std::optional<IotaTileAssignment> iota =
          DetectIota({static_cast<int64_t>(groups.size()), size}, flat);
      if (iota.has_value()) return ReplicaGroups(*iota);
    }
  }
  return ReplicaGroups(std::move(groups));
}

HloInstruction* SpmdBuilder::Collective(HloOpcode opcode, Shape shape, HloInstruction* x,
                                        const std::vector<std::vector<int64_t>>& groups) {
  HloInstruction* out = Add(opcode, std::move(shape), {x}, HloOpcodeString(opcode));
  HloAttributes& attrs = out->mutable_attrs();
  attrs.channel_id = state_->next_channel_id++;
  // all-to-all and collective-broadcast with a channel id group partition ids (cross-partition
  // mode; they have no use_global_device_ids); the others use global device ids.
  const bool global_ids =
      opcode != HloOpcode::kAllToAll && opcode != HloOpcode::kCollectiveBroadcast;
  attrs.replica_groups = GlobalGroups(groups, global_ids);
  if (global_ids) attrs.use_global_device_ids = true;
  return out;
}

HloInstruction* SpmdBuilder::AllGather(HloInstruction* x, int64_t dim,
                                       const std::vector<std::vector<int64_t>>& groups) {
  std::vector<int64_t> dims = x->shape().dimensions();
  dims[dim] *= static_cast<int64_t>(groups[0].size());
  HloInstruction* out = Collective(HloOpcode::kAllGather, WithDims(x->shape(), dims), x, groups);
  out->mutable_attrs().dimensions = std::vector<int64_t>{dim};
  return out;
}

HloInstruction* SpmdBuilder::AllReduce(HloInstruction* x,
                                       const std::vector<std::vector<int64_t>>& groups,
                                       HloComputation* reducer) {
  HloInstruction* out =
      Collective(HloOpcode::kAllReduce, WithDims(x->shape(), x->shape().dimensions()), x, groups);
  out->mutable_called().push_back({"to_apply", {reducer}, false});
  return out;
}

HloInstruction* SpmdBuilder::ReduceScatter(HloInstruction* x, int64_t dim,
                                           const std::vector<std::vector<int64_t>>& groups,
                                           HloComputation* reducer) {
  std::vector<int64_t> dims = x->shape().dimensions();
  dims[dim] /= static_cast<int64_t>(groups[0].size());
  HloInstruction* out =
      Collective(HloOpcode::kReduceScatter, WithDims(x->shape(), dims), x, groups);
  out->mutable_attrs().dimensions = std::vector<int64_t>{dim};
  out->mutable_called().push_back({"to_apply", {reducer}, false});
  return out;
}

HloInstruction* SpmdBuilder::CollectiveBroadcast(HloInstruction* x,
                                                 const std::vector<std::vector<int64_t>>& groups) {
  return Collective(HloOpcode::kCollectiveBroadcast, WithDims(x->shape(), x->shape().dimensions()),
                    x, groups);
}

HloInstruction* SpmdBuilder::AllToAll(HloInstruction* x, int64_t dim,
                                      const std::vector<std::vector<int64_t>>& groups) {
  HloInstruction* out =
      Collective(HloOpcode::kAllToAll, WithDims(x->shape(), x->shape().dimensions()), x, groups);
  out->mutable_attrs().dimensions = std::vector<int64_t>{dim};
  return out;
}

HloInstruction* SpmdBuilder::CollectivePermute(HloInstruction* x, const SourceTargetPairs& pairs) {
  HloInstruction* out =
      Add(HloOpcode::kCollectivePermute, WithDims(x->shape(), x->shape().dimensions()), {x},
          "collective-permute");
  out->mutable_attrs().channel_id = state_->next_channel_id++;
  out->mutable_attrs().source_target_pairs = pairs;
  return out;
}

HloComputation* SpmdBuilder::AddReducer(PrimitiveType type) {
  const HloOpcode opcode = type == PrimitiveType::kPred ? HloOpcode::kOr : HloOpcode::kAdd;
  const std::string key = absl::StrCat(HloOpcodeString(opcode), ".", PrimitiveTypeName(type));
  auto it = state_->reducers.find(key);
  if (it != state_->reducers.end()) return it->second;
  auto computation =
      std::make_unique<HloComputation>(state_->UniqueComputationName(absl::StrCat("spmd.", key)));
  const Shape scalar = Shape::Scalar(type);
  auto a = std::make_unique<HloInstruction>(HloOpcode::kParameter, "x", scalar);
  a->set_parameter_number(0);
  auto b = std::make_unique<HloInstruction>(HloOpcode::kParameter, "y", scalar);
  b->set_parameter_number(1);
  HloInstruction* pa = computation->AddInstruction(std::move(a));
  HloInstruction* pb = computation->AddInstruction(std::move(b));
  auto sum = std::make_unique<HloInstruction>(opcode, std::string(HloOpcodeString(opcode)), scalar);
  sum->set_operands({pa, pb});
  computation->set_root(computation->AddInstruction(std::move(sum)));
  HloComputation* added = state_->module->AddComputation(std::move(computation));
  state_->reducers[key] = added;
  return added;
}

}  // namespace spmdcheck::partitioner
