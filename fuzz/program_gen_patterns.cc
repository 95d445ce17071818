// The pattern steps of the program generator (fuzz/program_gen.h GenPattern) and the op families
// they brought: convolution, sort, TopK, reduce-window, manual regions.
#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "fuzz/program_builder.h"

namespace spmdcheck::fuzz::program_gen_internal {

// ---- Sharding helpers for pattern steps ---------------------------------------------------------

std::vector<int64_t> Builder::BigAxes() const {
  std::vector<int64_t> out;
  for (int64_t a = 0; a < static_cast<int64_t>(mesh_.axes().size()); ++a) {
    if (mesh_.axes()[a].size > 1) out.push_back(a);
  }
  return out;
}

std::optional<HloSharding> Builder::DimSharding(int64_t rank, int64_t dim, Choices& ch, bool two) {
  std::vector<int64_t> big = BigAxes();
  if (big.empty() || dim < 0 || dim >= rank) return std::nullopt;
  std::vector<std::vector<std::string>> dim_axes(rank);
  const size_t first = static_cast<size_t>(ch.Below(big.size()));
  dim_axes[dim].push_back(mesh_.axes()[big[first]].name);
  if (two && big.size() >= 2) {
    size_t second = static_cast<size_t>(ch.Below(big.size() - 1));
    if (second >= first) ++second;
    dim_axes[dim].push_back(mesh_.axes()[big[second]].name);
  }
  absl::StatusOr<HloSharding> s = mesh_.ShardingFor(dim_axes);
  if (!s.ok()) return std::nullopt;
  return *std::move(s);
}

HloInstruction* Builder::WithSharding(HloInstruction* a, HloSharding sharding) {
  auto c = Make(HloOpcode::kCopy, "copy", a->shape(), {a});
  c->set_sharding(std::move(sharding));
  HloInstruction* out = Emit(entry_, std::move(c));
  if (out != nullptr) pool_.push_back(out);
  return out;
}

HloInstruction* Builder::ShardDim(HloInstruction* a, int64_t dim, Choices& ch) {
  if (a == nullptr) return nullptr;
  std::optional<HloSharding> s = DimSharding(a->shape().rank(), dim, ch, ch.Below(4) == 3);
  if (!s.has_value()) return nullptr;
  return WithSharding(a, *std::move(s));
}

HloInstruction* Builder::TinyShards(Choices& ch, int64_t* dim) {
  HloInstruction* a = Pick(ch);
  if (a->shape().rank() == 0) return nullptr;
  const int64_t k = ch.Below(a->shape().rank());
  std::optional<HloSharding> s = DimSharding(a->shape().rank(), k, ch, ch.Below(4) == 3);
  if (!s.has_value()) return nullptr;
  const int64_t t = s->tile_assignment().dim(k);
  *dim = k;
  if ((a->shape().dimensions(k) + t - 1) / t <= 2) return WithSharding(a, *std::move(s));
  std::vector<int64_t> dims = a->shape().dimensions();
  dims[k] = ch.Range(1, 2 * t);
  HloInstruction* p = Parameter(Shape::Array(a->shape().element_type(), dims), ch);
  if (p != nullptr) p->set_sharding(*std::move(s));
  return p;
}

bool Builder::FollowUp(HloInstruction* value, Choices& ch) {
  static constexpr GenOp kOps[] = {GenOp::kReduce,  GenOp::kPad,          GenOp::kSlice,
                                   GenOp::kBinary,  GenOp::kConcatenate,  GenOp::kReverse,
                                   GenOp::kDot,     GenOp::kDynamicSlice, GenOp::kTranspose,
                                   GenOp::kReshape, GenOp::kGather,       GenOp::kReduceWindow};
  forced_pick_ = value;
  const GenOp op = kOps[ch.Below(std::size(kOps))];
  const Checkpoint cp = Save();
  if (!Step(op, ch)) Restore(cp);
  forced_pick_ = nullptr;
  return true;
}

// ---- New op families
// ------------------------------------------------------------------------------

HloComputation* Builder::Comparator(PrimitiveType type, int64_t operands, ComparisonDirection dir) {
  auto comp = std::make_unique<HloComputation>(absl::StrCat("cmp.", next_comp_id_++));
  std::vector<HloInstruction*> params;
  for (int64_t i = 0; i < 2 * operands; ++i) {
    const PrimitiveType t = i < 2 ? type : PrimitiveType::kS32;
    auto p = Make(HloOpcode::kParameter, "p", Shape::Scalar(t));
    p->set_parameter_number(i);
    params.push_back(comp->AddInstruction(std::move(p)));
  }
  auto cmp = Make(HloOpcode::kCompare, "compare", Shape::Scalar(PrimitiveType::kPred),
                  {params[0], params[1]});
  cmp->mutable_attrs().direction = dir;
  if (IsFloatingType(type)) cmp->mutable_attrs().comparison_type = "TOTALORDER";
  comp->set_root(comp->AddInstruction(std::move(cmp)));
  HloComputation* out = comp.get();
  pending_.push_back(std::move(comp));
  return out;
}

HloComputation* Builder::Overwrite(PrimitiveType type) {
  auto comp = std::make_unique<HloComputation>(absl::StrCat("overwrite.", next_comp_id_++));
  for (int64_t i = 0; i < 2; ++i) {
    auto p = Make(HloOpcode::kParameter, i == 0 ? "old" : "new", Shape::Scalar(type));
    p->set_parameter_number(i);
    HloInstruction* pi = comp->AddInstruction(std::move(p));
    if (i == 1) comp->set_root(pi);
  }
  HloComputation* out = comp.get();
  pending_.push_back(std::move(comp));
  return out;
}

bool Builder::Convolution(Choices& ch, Force force) {
  // Layout b0f / b01f, kernel 0io / 01io, output b0f / b01f.
  const int64_t spatial = 1 + ch.Below(2);
  const int64_t rank = spatial + 2;
  HloInstruction* lhs = Pick(ch);
  PrimitiveType t = lhs->shape().element_type();
  if (t != PrimitiveType::kF32 && t != PrimitiveType::kBF16) t = PrimitiveType::kF32;
  std::vector<int64_t> in;
  if (lhs->shape().rank() == rank && lhs->shape().element_type() == t) {
    in = lhs->shape().dimensions();
  } else {
    in.push_back(1 + ch.Below(4));
    for (int64_t i = 0; i < spatial; ++i) in.push_back(1 + ch.Below(options_.max_dim));
    in.push_back(1 + ch.Below(6));
    lhs = nullptr;
  }
  const int64_t b = in[0], f_in = in[rank - 1];
  auto divisor_above_one = [&](int64_t n) -> int64_t {
    std::vector<int64_t> ds;
    for (int64_t d = 2; d <= n; ++d) {
      if (n % d == 0) ds.push_back(d);
    }
    return ds.empty() ? 1 : ds[ch.Below(ds.size())];
  };
  int64_t fg = 1, bg = 1;
  if (force == Force::kFeatureGroups || (force == Force::kNone && ch.Below(4) == 3)) {
    fg = divisor_above_one(f_in);
  } else if (force == Force::kBatchGroups || (force == Force::kNone && ch.Below(6) == 5)) {
    bg = divisor_above_one(b);
  }
  if ((force == Force::kFeatureGroups && fg == 1) || (force == Force::kBatchGroups && bg == 1)) {
    return false;
  }
  if (lhs == nullptr) lhs = Parameter(Shape::Array(t, in), ch);
  if (lhs == nullptr) return false;
  const int64_t f_out = std::max(fg, bg) * (1 + ch.Below(3));
  std::vector<WindowDim> window;
  std::vector<int64_t> kernel, out_dims = {b / bg};
  for (int64_t i = 0; i < spatial; ++i) {
    WindowDim w;
    w.size = 1 + ch.Below(3);
    w.stride = 1 + (ch.Below(3) == 2 ? 1 : 0);
    w.pad_low = ch.Below(2);
    w.pad_high = ch.Below(2);
    if (ch.Below(6) == 5) w.lhs_dilation = 2;
    if (ch.Below(6) == 5) w.rhs_dilation = 2;
    const int64_t in_eff = (in[1 + i] - 1) * w.lhs_dilation + 1 + w.pad_low + w.pad_high;
    const int64_t k_eff = (w.size - 1) * w.rhs_dilation + 1;
    if (in_eff < k_eff) return false;
    out_dims.push_back((in_eff - k_eff) / w.stride + 1);
    kernel.push_back(w.size);
    window.push_back(w);
  }
  out_dims.push_back(f_out);
  kernel.push_back(f_in / fg);
  kernel.push_back(f_out);
  ConvolutionDimensionNumbers dn;
  dn.input_batch = 0;
  dn.input_feature = rank - 1;
  dn.output_batch = 0;
  dn.output_feature = rank - 1;
  for (int64_t i = 0; i < spatial; ++i) {
    dn.input_spatial.push_back(1 + i);
    dn.output_spatial.push_back(1 + i);
    dn.kernel_spatial.push_back(i);
  }
  dn.kernel_input_feature = spatial;
  dn.kernel_output_feature = spatial + 1;
  const Shape kernel_shape = Shape::Array(t, kernel);
  if (kernel_shape.ElementCount() > options_.max_elements) return false;
  HloInstruction* rhs = ValueOfShape(kernel_shape, nullptr, ch);
  if (rhs == nullptr) return false;
  switch (force) {
    case Force::kBatch:
      lhs = ShardDim(lhs, 0, ch);
      break;
    case Force::kFeature:
      if (ch.Below(2) == 0) {
        lhs = ShardDim(lhs, rank - 1, ch);
      } else {
        rhs = ShardDim(rhs, ch.Below(2) == 0 ? spatial : spatial + 1, ch);
      }
      break;
    case Force::kSpatial:
      lhs = ShardDim(lhs, 1 + ch.Below(spatial), ch);
      break;
    default:
      break;
  }
  if (lhs == nullptr || rhs == nullptr) return false;
  auto out = Make(HloOpcode::kConvolution, "convolution", Shape::Array(t, out_dims), {lhs, rhs});
  out->mutable_attrs().window = window;
  out->mutable_attrs().dim_labels = dn;
  if (fg > 1) out->mutable_attrs().feature_group_count = fg;
  if (bg > 1) out->mutable_attrs().batch_group_count = bg;
  return EmitEntry(std::move(out), ch) != nullptr;
}

bool Builder::Sort(Choices& ch, bool shard_sort_dim) {
  HloInstruction* a = Pick(ch);
  const Shape s = a->shape();
  if (s.rank() == 0 || !IsNumeric(s.element_type())) return false;
  const int64_t dim = ch.Below(s.rank());
  if (shard_sort_dim) a = ShardDim(a, dim, ch);
  if (a == nullptr) return false;
  const bool with_values = ch.Below(2) == 0;
  const ComparisonDirection dir =
      ch.Below(2) == 0 ? ComparisonDirection::kLt : ComparisonDirection::kGt;
  HloComputation* cmp = Comparator(s.element_type(), with_values ? 2 : 1, dir);
  std::vector<HloInstruction*> operands = {a};
  Shape shape = s;
  if (with_values) {
    auto iota = Make(HloOpcode::kIota, "iota", Shape::Array(PrimitiveType::kS32, s.dimensions()));
    iota->mutable_attrs().iota_dimension = dim;
    HloInstruction* ip = EmitEntry(std::move(iota), ch, /*add_to_pool=*/false);
    if (ip == nullptr) return false;
    operands.push_back(ip);
    shape = Shape::Tuple({s, ip->shape()});
  }
  auto out = Make(HloOpcode::kSort, "sort", shape, operands);
  out->mutable_attrs().dimensions = std::vector<int64_t>{dim};
  out->mutable_attrs().is_stable = true;
  out->mutable_called().push_back(CalledComputations{"to_apply", {cmp}, false});
  HloInstruction* sorted = EmitEntry(std::move(out), ch);
  if (sorted == nullptr) return false;
  if (!with_values) return true;
  for (int64_t i = 0; i < 2; ++i) {
    auto g =
        Make(HloOpcode::kGetTupleElement, "get-tuple-element", shape.tuple_shapes()[i], {sorted});
    g->mutable_attrs().tuple_index = i;
    if (EmitEntry(std::move(g), ch) == nullptr) return false;
  }
  return true;
}

bool Builder::TopK(Choices& ch, bool shard_last_dim) {
  HloInstruction* a = Pick(ch);
  if (a->shape().rank() < 1 || a->shape().rank() > 2) return false;
  if (a->shape().element_type() != PrimitiveType::kF32) {
    // XLA's CPU TopK takes f32 only.
    Shape f = a->shape();
    f.set_element_type(PrimitiveType::kF32);
    a = EmitEntry(Make(HloOpcode::kConvert, "convert", f, {a}), ch);
    if (a == nullptr) return false;
  }
  const Shape s = a->shape();
  const int64_t last = s.rank() - 1;
  if (shard_last_dim) a = ShardDim(a, last, ch);
  if (a == nullptr) return false;
  const int64_t k = ch.Range(1, s.dimensions(last));
  std::vector<int64_t> dims = s.dimensions();
  dims[last] = k;
  const Shape shape = Shape::Tuple(
      {Shape::Array(PrimitiveType::kF32, dims), Shape::Array(PrimitiveType::kS32, dims)});
  HloComputation* cmp = Comparator(PrimitiveType::kF32, 1, ComparisonDirection::kGt);
  auto out = Make(HloOpcode::kCustomCall, "topk", shape, {a});
  out->mutable_attrs().custom_call_target = "TopK";
  out->mutable_called().push_back(CalledComputations{"to_apply", {cmp}, false});
  HloInstruction* top = EmitEntry(std::move(out), ch);
  if (top == nullptr) return false;
  for (int64_t i = 0; i < 2; ++i) {
    auto g = Make(HloOpcode::kGetTupleElement, "get-tuple-element", shape.tuple_shapes()[i], {top});
    g->mutable_attrs().tuple_index = i;
    if (EmitEntry(std::move(g), ch) == nullptr) return false;
  }
  return true;
}

bool Builder::ReduceWindow(Choices& ch, bool shard_window_dim) {
  HloInstruction* a = Pick(ch);
  const Shape s = a->shape();
  if (s.rank() == 0 || !IsNumeric(s.element_type())) return false;
  const int64_t forced = shard_window_dim ? ch.Below(s.rank()) : -1;
  if (forced >= 0 && s.dimensions(forced) < 2) return false;
  std::vector<WindowDim> window;
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < s.rank(); ++i) {
    const int64_t d = s.dimensions(i);
    WindowDim w;
    w.size = i == forced ? ch.Range(2, std::min<int64_t>(3, d)) : 1 + ch.Below(3);
    w.stride = 1 + (ch.Below(3) == 2 ? 1 : 0);
    w.pad_low = ch.Below(4) == 3 ? 1 : 0;
    w.pad_high = ch.Below(4) == 3 ? 1 : 0;
    const int64_t padded = d + w.pad_low + w.pad_high;
    if (padded < w.size) w.size = padded;
    dims.push_back((padded - w.size) / w.stride + 1);
    window.push_back(w);
  }
  if (forced >= 0) a = ShardDim(a, forced, ch);
  if (a == nullptr) return false;
  const PrimitiveType t = s.element_type();
  const bool is_max = ch.Below(2) == 1;
  HloInstruction* init = ScalarConstant(t, is_max ? Lowest(t) : 0, ch);
  if (init == nullptr) return false;
  HloComputation* fn = ScalarComputation(is_max ? HloOpcode::kMaximum : HloOpcode::kAdd, t);
  auto out = Make(HloOpcode::kReduceWindow, "reduce-window", Shape::Array(t, dims), {a, init});
  out->mutable_attrs().window = window;
  out->mutable_called().push_back(CalledComputations{"to_apply", {fn}, false});
  return EmitEntry(std::move(out), ch) != nullptr;
}

// ---- Pattern steps ------------------------------------------------------------------------------

bool Builder::UnevenDim(Choices& ch, bool over_more_devices) {
  std::vector<int64_t> dims = RandomDims(ch, 1);
  const int64_t k = ch.Below(dims.size());
  std::optional<HloSharding> s = DimSharding(dims.size(), k, ch, ch.Below(3) == 2);
  if (!s.has_value()) return false;
  const int64_t t = s->tile_assignment().dim(k);
  if (over_more_devices) {
    dims[k] = ch.Range(1, t - 1);
  } else {
    dims[k] = t * ch.Range(1, 2) + ch.Range(1, t - 1);
    if (dims[k] % t == 0) return false;
  }
  if (Product(dims) > options_.max_elements) return false;
  HloInstruction* p = Parameter(Shape::Array(RandomType(ch), dims), ch);
  if (p == nullptr) return false;
  p->set_sharding(*std::move(s));
  return FollowUp(p, ch);
}

bool Builder::PartialReplication(Choices& ch) {
  HloInstruction* a = Pick(ch);
  const int64_t rank = a->shape().rank();
  if (rank == 0) return false;
  const int64_t k = ch.Below(rank);
  std::vector<int64_t> big = BigAxes();
  if (big.size() >= 2) {
    std::vector<std::vector<std::string>> dim_axes(rank);
    dim_axes[k].push_back(mesh_.axes()[big[ch.Below(big.size())]].name);
    absl::StatusOr<HloSharding> s = mesh_.ShardingFor(dim_axes);
    if (!s.ok()) return false;
    return WithSharding(a, *std::move(s)) != nullptr;
  }
  if (one_mesh_) return false;  // A divisor split is no mesh axis.
  // One axis (or none): split the devices into tiles x replicas by a divisor.
  const int64_t n = mesh_.num_devices();
  std::vector<int64_t> divisors;
  for (int64_t d = 2; d < n; ++d) {
    if (n % d == 0) divisors.push_back(d);
  }
  if (divisors.empty()) return false;
  const int64_t t = divisors[ch.Below(divisors.size())];
  std::vector<int64_t> tile(rank + 1, 1);
  tile[k] = t;
  tile[rank] = n / t;
  return WithSharding(a, HloSharding::PartialTile(TileAssignment::Iota(tile))) != nullptr;
}

bool Builder::TransposedIota(Choices& ch) {
  HloInstruction* a = Pick(ch);
  const int64_t rank = a->shape().rank();
  if (rank == 0) return false;
  if (one_mesh_) {
    // Two mesh axes on one dim, minor first: a transposed iota the mesh expresses.
    const std::vector<int64_t> big = BigAxes();
    if (big.size() < 2) return false;
    const size_t major = static_cast<size_t>(ch.Below(big.size() - 1));
    std::vector<std::vector<std::string>> dim_axes(rank);
    dim_axes[ch.Below(rank)] = {mesh_.axes()[big[major + 1]].name, mesh_.axes()[big[major]].name};
    absl::StatusOr<HloSharding> s = mesh_.ShardingFor(dim_axes);
    if (!s.ok()) return false;
    return WithSharding(a, *std::move(s)) != nullptr;
  }
  const int64_t n = mesh_.num_devices();
  std::vector<int64_t> divisors;
  for (int64_t d = 2; d < n; ++d) {
    if (n % d == 0) divisors.push_back(d);
  }
  if (divisors.empty()) return false;
  const int64_t major = divisors[ch.Below(divisors.size())];
  // Tiles: all devices on one dim, or split over two dims, or with a replica group.
  std::vector<int64_t> tile(rank, 1);
  const int64_t k = ch.Below(rank);
  const int64_t form = ch.Below(3);
  bool partial = false;
  if (form == 0 || rank == 1) {
    tile[k] = n;
  } else if (form == 1) {
    tile[k] = major;
    tile[(k + 1) % rank] = n / major;
  } else {
    tile[k] = major;
    tile.push_back(n / major);
    partial = true;
  }
  absl::StatusOr<TileAssignment> ta = TileAssignment::Iota(
      tile, std::vector<int64_t>{major, n / major}, std::vector<int64_t>{1, 0});
  if (!ta.ok()) return false;
  HloSharding s = partial ? HloSharding::PartialTile(*ta) : HloSharding::Tile(*ta);
  return WithSharding(a, std::move(s)) != nullptr;
}

bool Builder::MultiAxisDim(Choices& ch) {
  HloInstruction* a = Pick(ch);
  const int64_t rank = a->shape().rank();
  if (rank == 0 || BigAxes().size() < 2) return false;
  std::optional<HloSharding> s = DimSharding(rank, ch.Below(rank), ch, /*two=*/true);
  if (!s.has_value()) return false;
  HloInstruction* c = WithSharding(a, *std::move(s));
  return c != nullptr && FollowUp(c, ch);
}

bool Builder::ReshapeSharded(Choices& ch, bool merge) {
  HloInstruction* a = Pick(ch);
  std::vector<int64_t> dims = a->shape().dimensions();
  const int64_t r = static_cast<int64_t>(dims.size());
  std::vector<int64_t> candidates;
  if (merge) {
    for (int64_t i = 0; i + 1 < r; ++i) {
      if (dims[i] > 1 && dims[i + 1] > 1) candidates.push_back(i);
    }
  } else if (r < options_.max_rank) {
    for (int64_t i = 0; i < r; ++i) {
      bool composite = false;
      for (int64_t f = 2; f < dims[i]; ++f) composite |= dims[i] % f == 0;
      if (composite) candidates.push_back(i);
    }
  }
  if (candidates.empty()) {
    // A fresh value of a suitable shape.
    if (merge) {
      dims = {ch.Range(2, 4), ch.Range(2, 4)};
      if (ch.Below(2) == 0) dims.push_back(1 + ch.Below(3));
    } else {
      dims = {ch.Range(2, 3) * ch.Range(2, 3)};
      if (ch.Below(2) == 0) dims.insert(dims.begin(), 1 + ch.Below(3));
    }
    a = Parameter(Shape::Array(base_type_, dims), ch);
    if (a == nullptr) return false;
    candidates = {merge ? 0 : static_cast<int64_t>(dims.size()) - 1};
  }
  const int64_t i = candidates[ch.Below(candidates.size())];
  std::vector<int64_t> out = dims;
  int64_t sharded = i;
  if (merge) {
    sharded = i + ch.Below(2);
    out[i] *= out[i + 1];
    out.erase(out.begin() + i + 1);
  } else {
    std::vector<int64_t> fs;
    for (int64_t f = 2; f < dims[i]; ++f) {
      if (dims[i] % f == 0) fs.push_back(f);
    }
    if (fs.empty()) return false;
    const int64_t f = fs[ch.Below(fs.size())];
    out[i] = f;
    out.insert(out.begin() + i + 1, dims[i] / f);
  }
  a = ShardDim(a, sharded, ch);
  if (a == nullptr) return false;
  return EmitEntry(Make(HloOpcode::kReshape, "reshape",
                        Shape::Array(a->shape().element_type(), out), {a}),
                   ch) != nullptr;
}

bool Builder::NarrowFloat(Choices& ch) {
  static constexpr PrimitiveType kNarrow[] = {PrimitiveType::kBF16, PrimitiveType::kF16,
                                              PrimitiveType::kF8E4M3FN, PrimitiveType::kF8E5M2};
  HloInstruction* a = Pick(ch);
  const PrimitiveType t = kNarrow[ch.Below(std::size(kNarrow))];
  Shape narrow = a->shape();
  if (narrow.element_type() == t) return FollowUp(a, ch);
  narrow.set_element_type(t);
  const bool f8 = t == PrimitiveType::kF8E4M3FN || t == PrimitiveType::kF8E5M2;
  HloInstruction* c = EmitEntry(Make(HloOpcode::kConvert, "convert", narrow, {a}), ch, !f8);
  if (c == nullptr) return false;
  if (!f8) return FollowUp(c, ch);
  // f8 values only pass through: converted back to a computing type at once.
  Shape back = a->shape();
  back.set_element_type(PrimitiveType::kF32);
  return EmitEntry(Make(HloOpcode::kConvert, "convert", back, {c}), ch) != nullptr;
}

bool Builder::IntegerOverflow(Choices& ch) {
  HloInstruction* a = Pick(ch);
  PrimitiveType t = a->shape().element_type();
  if (t != PrimitiveType::kS32 && t != PrimitiveType::kU32) {
    Shape s = a->shape();
    t = ch.Below(3) == 2 ? PrimitiveType::kU32 : PrimitiveType::kS32;
    s.set_element_type(t);
    a = EmitEntry(Make(HloOpcode::kConvert, "convert", s, {a}), ch);
    if (a == nullptr) return false;
  }
  static constexpr int64_t kSigned[] = {2147483647, 2147483600, int64_t{1} << 30, -2147483647 - 1,
                                        1073741825};
  static constexpr int64_t kUnsigned[] = {4294967295, 3000000000, int64_t{1} << 31,
                                          int64_t{1} << 30};
  const int64_t big = t == PrimitiveType::kS32 ? kSigned[ch.Below(std::size(kSigned))]
                                               : kUnsigned[ch.Below(std::size(kUnsigned))];
  HloInstruction* c = ScalarConstant(t, static_cast<double>(big), ch);
  if (c == nullptr) return false;
  auto b = Make(HloOpcode::kBroadcast, "broadcast", a->shape(), {c});
  b->mutable_attrs().dimensions = std::vector<int64_t>{};
  HloInstruction* bc = EmitEntry(std::move(b), ch, /*add_to_pool=*/false);
  if (bc == nullptr) return false;
  static constexpr HloOpcode kOps[] = {HloOpcode::kAdd, HloOpcode::kMultiply, HloOpcode::kSubtract};
  const HloOpcode op = kOps[ch.Below(3)];
  HloInstruction* x = a;
  HloInstruction* y = bc;
  if (ch.Below(2) == 1) std::swap(x, y);
  return EmitEntry(Make(op, HloOpcodeString(op), a->shape(), {x, y}), ch) != nullptr;
}

// A manual region: Sharding -> SPMDFullToShardShape -> per-device code -> SPMDShardToFullShape.
// With `loop`, the per-device code is a while loop whose body selects this device's value by
// partition-id and all-reduces it (shard_map with axis_index and psum inside a fori_loop).
bool Builder::ManualRegion(Choices& ch, bool loop) {
  if (one_mesh_) return false;  // Shardy's import takes no manual regions.
  HloInstruction* x = Pick(ch);
  PrimitiveType t = x->shape().element_type();
  if (x->shape().rank() == 0 || !IsNumeric(t)) return false;
  const int64_t rank = x->shape().rank();
  const int64_t k = ch.Below(rank);
  std::optional<HloSharding> s = DimSharding(rank, k, ch, ch.Below(4) == 3);
  if (!s.has_value()) return false;
  const int64_t tiles = s->tile_assignment().dim(k);
  if (x->shape().dimensions(k) % tiles != 0) {
    // Even shards only: XLA leaves the padding of an uneven manual shard unspecified.
    std::vector<int64_t> dims = x->shape().dimensions();
    dims[k] = tiles * ch.Range(1, 2);
    if (Product(dims) > options_.max_elements) return false;
    x = Parameter(Shape::Array(t, dims), ch);
    if (x == nullptr) return false;
  }
  const Shape global = x->shape();
  const Shape local = s->TileShape(global);
  const HloSharding manual = HloSharding::Manual();
  auto mark = [&](HloComputation* comp, std::unique_ptr<HloInstruction> i,
                  const HloSharding& sh) -> HloInstruction* {
    i->set_sharding(sh);
    return Emit(comp, std::move(i));
  };
  auto sharding_cc = Make(HloOpcode::kCustomCall, "sharding", global, {x});
  sharding_cc->mutable_attrs().custom_call_target = "Sharding";
  HloInstruction* sx = mark(entry_, std::move(sharding_cc), *s);
  if (sx == nullptr) return false;
  auto to_shard = Make(HloOpcode::kCustomCall, "to-shard", local, {sx});
  to_shard->mutable_attrs().custom_call_target = "SPMDFullToShardShape";
  HloInstruction* lx = mark(entry_, std::move(to_shard), manual);
  if (lx == nullptr) return false;
  const int64_t n = mesh_.num_devices();
  std::vector<int64_t> all(n);
  std::iota(all.begin(), all.end(), 0);
  // All-reduce over every device of `v` (in `comp`).
  auto all_reduce = [&](HloComputation* comp, HloInstruction* v) -> HloInstruction* {
    auto ar = Make(HloOpcode::kAllReduce, "all-reduce", v->shape(), {v});
    ar->mutable_attrs().channel_id = NewChannel();
    ar->mutable_attrs().replica_groups = ReplicaGroups(std::vector<std::vector<int64_t>>{all});
    ar->mutable_attrs().use_global_device_ids = true;
    ar->mutable_called().push_back(
        CalledComputations{"to_apply", {ScalarComputation(HloOpcode::kAdd, t)}, false});
    return mark(comp, std::move(ar), manual);
  };
  HloInstruction* result = nullptr;
  if (!loop) {
    const int64_t form = ch.Below(3);
    if (form == 0) {
      result = mark(entry_, Make(HloOpcode::kNegate, "negate", local, {lx}), manual);
    } else if (form == 1) {
      result = mark(entry_, Make(HloOpcode::kMultiply, "multiply", local, {lx, lx}), manual);
    } else {
      result = all_reduce(entry_, lx);
    }
  } else {
    const Shape counter = Shape::Scalar(PrimitiveType::kS32);
    const Shape state = Shape::Tuple({counter, local});
    const HloSharding state_manual = HloSharding::Tuple({manual, manual});
    const int64_t id = next_comp_id_++;
    const int64_t trips = ch.Range(1, 3);
    auto scalar_const = [&](HloComputation* comp, PrimitiveType type, int64_t v) {
      auto c = Make(HloOpcode::kConstant, "constant", Shape::Scalar(type));
      Literal lit(Shape::Scalar(type));
      lit.SetInt64(0, v);
      c->set_literal(std::move(lit));
      return mark(comp, std::move(c), manual);
    };
    auto cond = std::make_unique<HloComputation>(absl::StrCat("manual_cond.", id));
    {
      auto p = Make(HloOpcode::kParameter, "state", state);
      p->set_parameter_number(0);
      HloInstruction* sp = mark(cond.get(), std::move(p), state_manual);
      if (sp == nullptr) return false;
      auto g = Make(HloOpcode::kGetTupleElement, "counter", counter, {sp});
      g->mutable_attrs().tuple_index = 0;
      HloInstruction* i = mark(cond.get(), std::move(g), manual);
      HloInstruction* lim = scalar_const(cond.get(), PrimitiveType::kS32, trips);
      if (i == nullptr || lim == nullptr) return false;
      auto cmp = Make(HloOpcode::kCompare, "lt", Shape::Scalar(PrimitiveType::kPred), {i, lim});
      cmp->mutable_attrs().direction = ComparisonDirection::kLt;
      HloInstruction* root = mark(cond.get(), std::move(cmp), manual);
      if (root == nullptr) return false;
      cond->set_root(root);
    }
    auto body = std::make_unique<HloComputation>(absl::StrCat("manual_body.", id));
    {
      HloComputation* bc = body.get();
      auto p = Make(HloOpcode::kParameter, "state", state);
      p->set_parameter_number(0);
      HloInstruction* sp = mark(bc, std::move(p), state_manual);
      if (sp == nullptr) return false;
      auto g0 = Make(HloOpcode::kGetTupleElement, "counter", counter, {sp});
      g0->mutable_attrs().tuple_index = 0;
      auto g1 = Make(HloOpcode::kGetTupleElement, "x", local, {sp});
      g1->mutable_attrs().tuple_index = 1;
      HloInstruction* i = mark(bc, std::move(g0), manual);
      HloInstruction* xv = mark(bc, std::move(g1), manual);
      HloInstruction* one = scalar_const(bc, PrimitiveType::kS32, 1);
      if (i == nullptr || xv == nullptr || one == nullptr) return false;
      HloInstruction* next = mark(bc, Make(HloOpcode::kAdd, "next", counter, {i, one}), manual);
      // The leader trick: select(partition-id == c, x, 0).
      auto pid_instr =
          Make(HloOpcode::kPartitionId, "partition-id", Shape::Scalar(PrimitiveType::kU32));
      HloInstruction* pid = mark(bc, std::move(pid_instr), manual);
      HloInstruction* leader = scalar_const(bc, PrimitiveType::kU32, ch.Below(n));
      if (next == nullptr || pid == nullptr || leader == nullptr) return false;
      auto eq = Make(HloOpcode::kCompare, "is-leader", Shape::Scalar(PrimitiveType::kPred),
                     {pid, leader});
      eq->mutable_attrs().direction = ComparisonDirection::kEq;
      HloInstruction* eqp = mark(bc, std::move(eq), manual);
      if (eqp == nullptr) return false;
      Shape pred = local;
      pred.set_element_type(PrimitiveType::kPred);
      auto eqb = Make(HloOpcode::kBroadcast, "broadcast", pred, {eqp});
      eqb->mutable_attrs().dimensions = std::vector<int64_t>{};
      HloInstruction* eqbp = mark(bc, std::move(eqb), manual);
      HloInstruction* zero = scalar_const(bc, t, 0);
      if (eqbp == nullptr || zero == nullptr) return false;
      auto zb = Make(HloOpcode::kBroadcast, "broadcast", local, {zero});
      zb->mutable_attrs().dimensions = std::vector<int64_t>{};
      HloInstruction* zbp = mark(bc, std::move(zb), manual);
      if (zbp == nullptr) return false;
      HloInstruction* sel =
          mark(bc, Make(HloOpcode::kSelect, "select", local, {eqbp, xv, zbp}), manual);
      if (sel == nullptr) return false;
      HloInstruction* reduced = nullptr;
      // A local reduce gives every device its own value; where devices hold replicas of one
      // shard (partial replication) they would disagree and the region's result would be
      // ill-defined, so there the all-reduce (the same value everywhere) it is.
      const bool replicas = s->NumTiles() < n;
      if (replicas || ch.Below(3) != 0) {
        reduced = all_reduce(bc, sel);  // Broadcasts the leader's value to every device.
      } else {
        std::vector<int64_t> dims_all(local.rank());
        std::iota(dims_all.begin(), dims_all.end(), 0);
        HloInstruction* init = scalar_const(bc, t, 0);
        if (init == nullptr) return false;
        auto red = Make(HloOpcode::kReduce, "reduce", Shape::Scalar(t), {sel, init});
        red->mutable_attrs().dimensions = dims_all;
        red->mutable_called().push_back(
            CalledComputations{"to_apply", {ScalarComputation(HloOpcode::kAdd, t)}, false});
        HloInstruction* rp = mark(bc, std::move(red), manual);
        if (rp == nullptr) return false;
        auto rb = Make(HloOpcode::kBroadcast, "broadcast", local, {rp});
        rb->mutable_attrs().dimensions = std::vector<int64_t>{};
        reduced = mark(bc, std::move(rb), manual);
      }
      if (reduced == nullptr) return false;
      HloInstruction* nx = mark(bc, Make(HloOpcode::kAdd, "add", local, {xv, reduced}), manual);
      if (nx == nullptr) return false;
      HloInstruction* root =
          mark(bc, Make(HloOpcode::kTuple, "tuple", state, {next, nx}), state_manual);
      if (root == nullptr) return false;
      bc->set_root(root);
    }
    // The loop is a called computation's, as jax lowers a shard_map body to its own function:
    // XLA's StableHLO import merges equal constants of one function whatever their shardings,
    // and the loop counter's manual 0 shared with a replicated 0 of the entry made GSPMD abort
    // (hlo_sharding.cc `!IsManualLeaf()`, fuzz seed 20261204 case 73).
    auto region = std::make_unique<HloComputation>(absl::StrCat("manual_region.", id));
    HloComputation* rc = region.get();
    auto rp = Make(HloOpcode::kParameter, "x", local);
    rp->set_parameter_number(0);
    HloInstruction* rx = mark(rc, std::move(rp), manual);
    HloInstruction* zero = scalar_const(rc, PrimitiveType::kS32, 0);
    if (rx == nullptr || zero == nullptr) return false;
    HloInstruction* init =
        mark(rc, Make(HloOpcode::kTuple, "tuple", state, {zero, rx}), state_manual);
    if (init == nullptr) return false;
    auto w = Make(HloOpcode::kWhile, "manual-while", state, {init});
    w->mutable_called().push_back(CalledComputations{"condition", {cond.get()}, false});
    w->mutable_called().push_back(CalledComputations{"body", {body.get()}, false});
    HloInstruction* wp = mark(rc, std::move(w), state_manual);
    if (wp == nullptr) return false;
    auto g = Make(HloOpcode::kGetTupleElement, "get-tuple-element", local, {wp});
    g->mutable_attrs().tuple_index = 1;
    HloInstruction* gp = mark(rc, std::move(g), manual);
    if (gp == nullptr) return false;
    rc->set_root(gp);
    pending_.push_back(std::move(cond));
    pending_.push_back(std::move(body));
    pending_.push_back(std::move(region));
    auto call = Make(HloOpcode::kCall, "manual-call", local, {lx});
    call->mutable_called().push_back(CalledComputations{"to_apply", {rc}, false});
    result = mark(entry_, std::move(call), manual);
  }
  if (result == nullptr) return false;
  auto to_full = Make(HloOpcode::kCustomCall, "to-full", global, {result});
  to_full->mutable_attrs().custom_call_target = "SPMDShardToFullShape";
  HloInstruction* full = mark(entry_, std::move(to_full), *s);
  if (full == nullptr) return false;
  pool_.push_back(full);
  return true;
}

bool Builder::PatternStep(GenPattern pattern, Choices& ch) {
  switch (pattern) {
    case GenPattern::kDsOutOfRangeStart:
      slice_force_ = 1;
      return DynamicSlice(ch);
    case GenPattern::kDusOutOfRangeStart:
      slice_force_ = 2;
      return DynamicUpdateSlice(ch);
    case GenPattern::kIndexS64:
    case GenPattern::kIndexU32: {
      forced_index_type_ =
          pattern == GenPattern::kIndexS64 ? PrimitiveType::kS64 : PrimitiveType::kU32;
      switch (ch.Below(4)) {
        case 0:
          return DynamicSlice(ch);
        case 1:
          return DynamicUpdateSlice(ch);
        case 2:
          return Gather(ch);
        default:
          return Scatter(ch);
      }
    }
    case GenPattern::kUnevenDim:
      return UnevenDim(ch, /*over_more_devices=*/false);
    case GenPattern::kUnevenDimOverMoreDevices:
      return UnevenDim(ch, /*over_more_devices=*/true);
    case GenPattern::kPartialReplication:
      return PartialReplication(ch);
    case GenPattern::kTransposedIotaDevices:
      return TransposedIota(ch);
    case GenPattern::kMultiAxisDim:
      return MultiAxisDim(ch);
    case GenPattern::kReshapeMergeSharded:
      return ReshapeSharded(ch, /*merge=*/true);
    case GenPattern::kReshapeSplitSharded:
      return ReshapeSharded(ch, /*merge=*/false);
    case GenPattern::kDotShardedContracting:
      dot_force_ = 1;
      return Dot(ch);
    case GenPattern::kDotShardedBatch:
      dot_force_ = 2;
      return Dot(ch);
    case GenPattern::kConvFeatureGroups:
      return Convolution(ch, Force::kFeatureGroups);
    case GenPattern::kConvBatchGroups:
      return Convolution(ch, Force::kBatchGroups);
    case GenPattern::kConvShardedBatch:
      return Convolution(ch, Force::kBatch);
    case GenPattern::kConvShardedFeature:
      return Convolution(ch, Force::kFeature);
    case GenPattern::kConvShardedSpatial:
      return Convolution(ch, Force::kSpatial);
    case GenPattern::kGatherShardedIndexedDim:
      gather_force_ = 1;
      return Gather(ch);
    case GenPattern::kGatherShardedOffsetDim:
      gather_force_ = 2;
      return Gather(ch);
    case GenPattern::kGatherShardedIndices:
      gather_force_ = 3;
      return Gather(ch);
    case GenPattern::kScatterShardedIndexedDim:
      scatter_force_ = 1;
      return Scatter(ch);
    case GenPattern::kScatterShardedUpdates:
      scatter_force_ = 2;
      return Scatter(ch);
    case GenPattern::kScatterNoncommutative:
      scatter_force_ = 3;
      return Scatter(ch);
    case GenPattern::kSortShardedDim:
      return Sort(ch, /*shard_sort_dim=*/true);
    case GenPattern::kTopKShardedDim:
      return TopK(ch, /*shard_last_dim=*/true);
    case GenPattern::kReduceWindow:
      return ReduceWindow(ch, /*shard_window_dim=*/true);
    case GenPattern::kPadNegative:
    case GenPattern::kPadInteriorTinyShards: {
      int64_t dim = -1;
      HloInstruction* v = nullptr;
      if (pattern == GenPattern::kPadNegative) {
        v = Pick(ch);
        if (v->shape().rank() == 0) return false;
        dim = ch.Below(v->shape().rank());
        v = ShardDim(v, dim, ch);
      } else {
        v = TinyShards(ch, &dim);
      }
      if (v == nullptr) return false;
      forced_pick_ = v;
      pad_dim_ = dim;
      pad_force_ = pattern == GenPattern::kPadNegative ? 1 : 2;
      return Pad(ch);
    }
    case GenPattern::kConcatTinyShards: {
      int64_t dim = -1;
      HloInstruction* v = TinyShards(ch, &dim);
      if (v == nullptr) return false;
      forced_pick_ = v;
      concat_dim_ = dim;
      return Concatenate(ch);
    }
    case GenPattern::kWhilePartitionIdSelectReduce:
      return ManualRegion(ch, /*loop=*/true);
    case GenPattern::kManualRegion:
      return ManualRegion(ch, /*loop=*/false);
    case GenPattern::kNarrowFloat:
      return NarrowFloat(ch);
    case GenPattern::kIntegerOverflow:
      return IntegerOverflow(ch);
  }
  return false;
}

void Builder::DropDisabledSharding(HloInstruction* instr) {
  if (!options_.exclude_disabled_patterns || instr == nullptr || !instr->sharding().has_value()) {
    return;
  }
  for (GenPattern p : DetectPatterns(*instr, &mesh_)) {
    if (options_.pattern_weights[static_cast<int>(p)] <= 0) {
      instr->clear_sharding();
      return;
    }
  }
}

}  // namespace spmdcheck::fuzz::program_gen_internal
