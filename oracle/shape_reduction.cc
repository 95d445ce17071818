// Shape reduction. Model: every dimension of every array leaf of every instruction is a "size
// variable". Ops tie variables into classes whose members all move by the same shift
// (new = original + shift): equal dims (elementwise, dot, transpose, ...) and dims that differ by
// a constant that is kept (pad without interior padding, a slice that keeps its margins, a
// stride-1 window). Other relations derive a class from other classes (concatenate: sum; reshape
// merge/split: product; strided windows, interior padding, proportional slices). A class that no
// relation can express is frozen at its original size, with the reason kept for messages.
//
// A class's shift is a multiple of the lcm of the tile counts applied to any of its members, so
// every sharded dim keeps its remainder modulo its tile count (even stays even, uneven stays
// uneven), and a dim at least as large as its tile count stays so. A greedy search shrinks the
// free classes that feed the largest array over the budget, largest first, and accepts a step
// only when every derived class is consistent and every rewritten instruction passes shape
// inference.
#include "oracle/shape_reduction.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "ir/primitive_type.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"

namespace spmdcheck::oracle {
namespace {

// Slice sizes at most this large are kept as they are (a gathered row, a halo).
constexpr int64_t kSmallSize = 8;
// Dims are first shrunk no further than this (then further only if the budget needs it).
constexpr int64_t kSoftFloor = 4;
// Steps of the greedy search before giving up (each shrinks one class).
constexpr int kMaxSteps = 400;

void CollectLeaves(const Shape& shape, std::vector<Shape>* out) {
  if (shape.IsTuple()) {
    for (const Shape& e : shape.tuple_shapes()) CollectLeaves(e, out);
    return;
  }
  out->push_back(shape);
}

void SetLeafDims(Shape* shape, const std::vector<std::vector<int64_t>>& dims, size_t* pos) {
  if (shape->IsTuple()) {
    for (Shape& e : shape->mutable_tuple_shapes()) SetLeafDims(&e, dims, pos);
    return;
  }
  const std::vector<int64_t>& d = dims[(*pos)++];
  for (size_t i = 0; i < d.size() && static_cast<int64_t>(i) < shape->rank(); ++i) {
    shape->set_dimensions(static_cast<int64_t>(i), d[i]);
  }
}

int64_t LeafCountOf(const Shape& shape) {
  std::vector<Shape> leaves;
  CollectLeaves(shape, &leaves);
  return static_cast<int64_t>(leaves.size());
}

int64_t Lcm(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return std::max(a, b);
  return a / std::gcd(a, b) * b;
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t Dilated(int64_t size, int64_t dilation) {
  return size == 0 ? 0 : (size - 1) * dilation + 1;
}

bool IsElementwiseLike(HloOpcode op) {
  if (ElementwiseArity(op) > 0) return true;
  switch (op) {
    case HloOpcode::kCompare:
    case HloOpcode::kConvert:
    case HloOpcode::kIsFinite:
    case HloOpcode::kReal:
    case HloOpcode::kImag:
    case HloOpcode::kStochasticConvert:
    case HloOpcode::kMap:
    case HloOpcode::kReverse:
    case HloOpcode::kBitcastConvert:
      return true;
    default:
      return false;
  }
}

// How a dim of a slice-like op was rewritten.
enum class DimMode : uint8_t {
  kTied,      // Same size as the operand dim (whole dim).
  kOffset,    // Start and the cut at the end kept; tied with a shift.
  kFixedOut,  // Output size kept; start scaled with the operand.
  kScale,     // Output size scaled with the operand; start scaled too.
  kFree,      // Output size independent (small); start scaled.
};

struct Derivation {
  enum Kind : uint8_t { kSum, kProduct, kWindow, kLinear, kScale, kCeilDiv, kMulMinus, kStrided };
  Kind kind = kSum;
  int64_t out = -1;
  std::vector<int64_t> in;
  std::vector<int64_t> coeff;  // kLinear
  int64_t den = 1;             // kLinear, kCeilDiv, kMulMinus (tile count)
  // kWindow: out = floor((dilate(in) + pad_total - dilate(window)) / stride) + 1.
  int64_t pad_total = 0;
  int64_t lhs_dil = 1;
  int64_t rhs_dil = 1;
  int64_t stride = 1;
  int64_t window = 1;
};

struct InstrInfo {
  HloInstruction* instr = nullptr;
  std::vector<Shape> leaves;  // Original leaf shapes.
  std::vector<int64_t> leaf_base;
  Shape orig_shape;
  SharedValue<HloAttributes> orig_attrs;
  SharedValue<std::optional<Literal>> orig_literal;
  std::vector<DimMode> modes;  // Slice-like ops: per result dim.
  bool literal_iota = false;   // Constant: an iota along literal_iota_dim.
  int group_mode = 0;  // Convolution: 1 feature_group_count / 2 batch_group_count follows lhs.
  int64_t literal_iota_dim = 0;
};

struct ClassInfo {
  std::vector<int64_t> members;
  int64_t lcm = 1;
  int64_t min_shift = 0;       // Most negative allowed shift.
  int64_t soft_min_shift = 0;  // Same, keeping every member >= min(original, kSoftFloor).
  int64_t max_orig = 0;
  bool frozen = false;
  std::vector<std::string> reasons;
  std::vector<int64_t> derivations;
};

class Shrinker {
 public:
  Shrinker(HloModule* work, const ShrinkOptions& options, int64_t num_partitions)
      : work_(work), options_(options), num_partitions_(num_partitions) {}

  absl::Status Analyze();
  // Runs the greedy search; on success the work module holds the shrunk shapes.
  absl::Status Search();
  bool changed() const { return changed_; }

 private:
  // ---- Variables and classes.
  int64_t Var(const HloInstruction* instr, int64_t leaf, int64_t dim) const {
    return infos_[index_.at(instr)].leaf_base[leaf] + dim;
  }
  const Shape& Leaf(const HloInstruction* instr, int64_t leaf = 0) const {
    return infos_[index_.at(instr)].leaves[leaf];
  }
  int64_t LeafCount(const HloInstruction* instr) const {
    return static_cast<int64_t>(infos_[index_.at(instr)].leaves.size());
  }
  int64_t Find(int64_t v) {
    while (parent_[v] != v) {
      parent_[v] = parent_[parent_[v]];
      v = parent_[v];
    }
    return v;
  }
  void Tie(int64_t a, int64_t b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent_[a] = b;
  }
  void Freeze(int64_t v, const std::string& reason) { frozen_[v].push_back(reason); }
  void FreezeLeaves(const HloInstruction* instr, const std::string& reason) {
    for (int64_t l = 0; l < LeafCount(instr); ++l) {
      for (int64_t d = 0; d < Leaf(instr, l).rank(); ++d) Freeze(Var(instr, l, d), reason);
    }
  }
  void FreezeAll(const HloInstruction* instr, const std::string& reason) {
    FreezeLeaves(instr, reason);
    for (const HloInstruction* op : instr->operands()) FreezeLeaves(op, reason);
  }
  // Ties leaf a_leaf+k of a to leaf b_leaf+k of b for k < count, dim by dim.
  void TieLeaves(const HloInstruction* a, int64_t a_leaf, const HloInstruction* b, int64_t b_leaf,
                 int64_t count, const std::string& what) {
    for (int64_t k = 0; k < count; ++k) {
      if (a_leaf + k >= LeafCount(a) || b_leaf + k >= LeafCount(b)) {
        FreezeLeaves(a, what);
        FreezeLeaves(b, what);
        return;
      }
      const Shape& sa = Leaf(a, a_leaf + k);
      const Shape& sb = Leaf(b, b_leaf + k);
      if (sa.rank() != sb.rank() || sa.dimensions() != sb.dimensions()) {
        FreezeLeaves(a, what);
        FreezeLeaves(b, what);
        return;
      }
      for (int64_t d = 0; d < sa.rank(); ++d) Tie(Var(a, a_leaf + k, d), Var(b, b_leaf + k, d));
    }
  }
  void TieSame(const HloInstruction* a, const HloInstruction* b, const std::string& what) {
    if (LeafCount(a) != LeafCount(b)) {
      FreezeLeaves(a, what);
      FreezeLeaves(b, what);
      return;
    }
    TieLeaves(a, 0, b, 0, LeafCount(a), what);
  }
  // Ties two dims that must stay equal (or differ by their original difference).
  void TieDims(const HloInstruction* a, int64_t da, const HloInstruction* b, int64_t db) {
    Tie(Var(a, 0, da), Var(b, 0, db));
  }
  void Derive(Derivation d) { derivations_.push_back(std::move(d)); }

  // Ties and derivations of one instruction, dispatched by opcode to one step per op family.
  void AnalyzeInstruction(HloInstruction* instr);
  void AnalyzeWhile(HloInstruction* instr);
  void AnalyzeCall(HloInstruction* instr);
  void AnalyzeConditional(HloInstruction* instr);
  void AnalyzeTuple(const HloInstruction* instr);
  // all-reduce, collective-permute, sort: operands against result leaves one to one.
  void AnalyzeLeafwise(const HloInstruction* instr);
  void AnalyzeGatherOrScatterCollective(const HloInstruction* instr);
  void AnalyzeCustomCall(const HloInstruction* instr);
  void AnalyzeBroadcastOrTranspose(const HloInstruction* instr);
  void AnalyzeReduce(const HloInstruction* instr);
  void AnalyzeConcatenate(const HloInstruction* instr);
  void AnalyzeDot(const HloInstruction* instr);
  // reduce-window and select-and-scatter.
  void AnalyzeWindowed(const HloInstruction* instr);
  // Elementwise ops, select and clamp; everything else is frozen.
  void AnalyzeElementwise(const HloInstruction* instr);
  void AnalyzeReshape(const HloInstruction* instr);
  void AnalyzeSlice(HloInstruction* instr);
  void AnalyzeConvolution(const HloInstruction* instr);
  void AnalyzeWindowDims(const HloInstruction* in, const HloInstruction* out, int64_t out_leaf,
                         const std::vector<WindowDim>& window);
  void AnalyzeGather(HloInstruction* instr);
  void AnalyzeScatter(const HloInstruction* instr);
  void AnalyzeConstant(HloInstruction* instr);
  // Index values a constant feeds to a gather/scatter/dynamic-slice: keeps their in-bounds
  // status (an index that was in bounds stays so; clamping does not silently move it).
  void AddIndexChecks(const HloInstruction* instr);
  // An operand dim of size N read as a window of size `size` into a result dim.
  void SubDim(int64_t operand_var, int64_t result_var, DimMode* mode);
  void ApplyShardingConstraints(const HloInstruction* instr);
  void BuildClasses();

  // ---- Evaluation.
  // Shifts of every class for the free shifts `free`; error text when inconsistent.
  bool Evaluate(const std::vector<int64_t>& free, std::vector<int64_t>* shift, std::string* error);
  int64_t Size(int64_t v, const std::vector<int64_t>& shift) const {
    return orig_[v] + shift[class_of_[v]];
  }
  // Rewrites the work module for `shift`; error text when an instruction does not check.
  bool Apply(const std::vector<int64_t>& shift, std::string* error);
  // Apply's steps: which instructions change shape; one instruction's shape and size-holding
  // attributes (slice, dynamic-slice, gather, constant values); convolution windows; outfeed
  // shapes; the index and top-k bounds; every rewritten instruction against shape inference.
  std::vector<char> ResizedInstructions(const std::vector<int64_t>& shift) const;
  bool ApplyInstruction(const InstrInfo& info, const std::vector<int64_t>& shift,
                        const std::vector<char>& resized, std::string* error);
  bool ResizeSliceAttrs(const InstrInfo& info, const std::vector<int64_t>& shift,
                        const std::vector<int64_t>& result_dims, std::string* error);
  void ResizeGatherAttrs(const InstrInfo& info, const std::vector<int64_t>& result_dims);
  bool ResizeConstant(const InstrInfo& info, const Shape& shape, std::string* error);
  void ApplyConvolutionWindows();
  void ApplyOutfeedShapes();
  bool CheckBounds(const std::vector<int64_t>& shift, std::string* error) const;
  bool CheckShapes(std::string* error) const;
  // Shifts to try for free class c, smaller than current_shift; `soft` keeps every member at
  // least min(original, kSoftFloor).
  std::vector<int64_t> Candidates(int64_t c, int64_t current_shift, bool soft) const;
  void FreeAncestors(int64_t c, std::set<int64_t>* out, std::set<int64_t>* seen) const;
  void FrozenReasons(int64_t c, std::vector<std::string>* out, std::set<int64_t>* seen) const;

  HloModule* work_;
  ShrinkOptions options_;
  int64_t num_partitions_;
  std::vector<InstrInfo> infos_;
  absl::flat_hash_map<const HloInstruction*, int64_t> index_;
  std::vector<int64_t> orig_;
  std::vector<int64_t> parent_;
  std::vector<std::vector<std::string>> frozen_;
  std::vector<std::vector<int64_t>> tiles_;  // Tile counts per var.
  std::vector<Derivation> derivations_;
  std::vector<int64_t> class_of_;
  std::vector<ClassInfo> classes_;
  std::vector<int64_t> free_classes_;
  std::vector<const HloInstruction*> topk_;  // TopK custom-calls with k < n.
  struct IndexCheck {
    const HloInstruction* instr;
    int64_t operand_var;  // The indexed dim.
    int64_t window_var;   // The size read or written there, or -1 for window_size.
    int64_t window_size;
    int64_t max_index;  // Largest constant index into the dim.
    bool in_bounds;     // max_index + window <= dim originally.
  };
  std::vector<IndexCheck> index_checks_;
  bool changed_ = false;
};

absl::Status Shrinker::Analyze() {
  // Variables.
  for (const auto& comp : work_->computations()) {
    for (const auto& instr : comp->instructions()) {
      InstrInfo info;
      info.instr = instr.get();
      info.orig_shape = instr->shape();
      CollectLeaves(instr->shape(), &info.leaves);
      for (const Shape& leaf : info.leaves) {
        info.leaf_base.push_back(static_cast<int64_t>(orig_.size()));
        for (int64_t d = 0; d < (leaf.IsArray() ? leaf.rank() : 0); ++d) {
          orig_.push_back(leaf.dimensions(d));
        }
      }
      info.orig_attrs = instr->shared_attrs();
      info.orig_literal = instr->shared_literal();
      index_[instr.get()] = static_cast<int64_t>(infos_.size());
      infos_.push_back(std::move(info));
    }
  }
  const int64_t n = static_cast<int64_t>(orig_.size());
  parent_.resize(n);
  std::iota(parent_.begin(), parent_.end(), 0);
  frozen_.resize(n);
  tiles_.resize(n);
  for (InstrInfo& info : infos_) {
    for (size_t l = 0; l < info.leaves.size(); ++l) {
      const Shape& leaf = info.leaves[l];
      for (int64_t d = 0; d < (leaf.IsArray() ? leaf.rank() : 0); ++d) {
        if (leaf.dimension_kind(d) != DimensionKind::kStatic) {
          Freeze(info.leaf_base[l] + d, "dynamic dimension");
        }
      }
    }
  }
  for (InstrInfo& info : infos_) {
    AnalyzeInstruction(info.instr);
    ApplyShardingConstraints(info.instr);
  }
  BuildClasses();
  return absl::OkStatus();
}

void Shrinker::ApplyShardingConstraints(const HloInstruction* instr) {
  const std::optional<HloSharding>& sharding = instr->sharding();
  if (!sharding.has_value()) return;
  const int64_t leaves = LeafCount(instr);
  auto apply = [&](const HloSharding& s, int64_t leaf) {
    if (!s.IsTiled() || leaf >= leaves) return;
    const Shape& shape = Leaf(instr, leaf);
    if (!shape.IsArray()) return;
    const int64_t data_rank = s.TiledDataRank();
    for (int64_t d = 0; d < std::min(data_rank, shape.rank()); ++d) {
      const int64_t t = s.tile_assignment().dim(d);
      if (t > 1) tiles_[Var(instr, leaf, d)].push_back(t);
    }
  };
  if (sharding->IsTuple()) {
    const auto& elements = sharding->tuple_elements();
    for (int64_t l = 0; l < std::min<int64_t>(leaves, static_cast<int64_t>(elements.size())); ++l) {
      apply(elements[l], l);
    }
  } else {
    for (int64_t l = 0; l < leaves; ++l) apply(*sharding, l);
  }
}

void Shrinker::SubDim(int64_t operand_var, int64_t result_var, DimMode* mode) {
  const int64_t size = orig_[result_var];
  const int64_t full = orig_[operand_var];
  if (size == full) {
    Tie(operand_var, result_var);
    *mode = DimMode::kTied;
  } else if (size <= kSmallSize) {
    *mode = DimMode::kFree;
  } else {
    Derivation d;
    d.kind = Derivation::kScale;
    d.out = result_var;
    d.in = {operand_var};
    Derive(std::move(d));
    *mode = DimMode::kScale;
  }
}

void Shrinker::AnalyzeInstruction(HloInstruction* instr) {
  const HloOpcode op = instr->opcode();
  const auto& operands = instr->operands();
  switch (op) {
    case HloOpcode::kParameter:
    case HloOpcode::kIota:
    case HloOpcode::kRng:
    case HloOpcode::kPartitionId:
    case HloOpcode::kReplicaId:
    case HloOpcode::kAfterAll:
    case HloOpcode::kGetDimensionSize:
      return;
    case HloOpcode::kConstant:
      return AnalyzeConstant(instr);
    case HloOpcode::kInfeed:
    case HloOpcode::kOutfeed:
      // Host transfers: the data shapes are free (an outfeed_shape is rewritten to match).
      return;
    case HloOpcode::kRngBitGenerator:
      // The state keeps its size; the generated bits are free.
      if (instr->operand_count() == 1 && LeafCount(instr) == 2) {
        FreezeLeaves(operands[0], "rng state");
        TieLeaves(operands[0], 0, instr, 0, 1, "rng-bit-generator");
        return;
      }
      return AnalyzeElementwise(instr);
    case HloOpcode::kWhile:
      return AnalyzeWhile(instr);
    case HloOpcode::kCall:
    case HloOpcode::kFusion:
    case HloOpcode::kAsyncStart:
      return AnalyzeCall(instr);
    case HloOpcode::kConditional:
      return AnalyzeConditional(instr);
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
      return AnalyzeTuple(instr);
    case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kDomain:
    case HloOpcode::kAddDependency:
    case HloOpcode::kCopyStart:
    case HloOpcode::kCopyDone:
      if (instr->operand_count() >= 1)
        TieSame(operands[0], instr, std::string(HloOpcodeString(op)));
      return;
    case HloOpcode::kAllReduce:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kSort:
      return AnalyzeLeafwise(instr);
    case HloOpcode::kAllGather:
    case HloOpcode::kReduceScatter:
      return AnalyzeGatherOrScatterCollective(instr);
    case HloOpcode::kAllToAll:
      if (instr->operand_count() == 1 && instr->shape().IsArray()) {
        TieSame(operands[0], instr, "all-to-all");
        return;
      }
      FreezeAll(instr, "op all-to-all");
      return;
    case HloOpcode::kCustomCall:
      return AnalyzeCustomCall(instr);
    case HloOpcode::kBroadcast:
    case HloOpcode::kTranspose:
      return AnalyzeBroadcastOrTranspose(instr);
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
      return AnalyzeReshape(instr);
    case HloOpcode::kReduce:
      return AnalyzeReduce(instr);
    case HloOpcode::kConcatenate:
      return AnalyzeConcatenate(instr);
    case HloOpcode::kSlice:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kPad:
    case HloOpcode::kDynamicUpdateSlice:
      AnalyzeSlice(instr);
      AddIndexChecks(instr);
      return;
    case HloOpcode::kDot:
      return AnalyzeDot(instr);
    case HloOpcode::kConvolution:
      return AnalyzeConvolution(instr);
    case HloOpcode::kReduceWindow:
    case HloOpcode::kSelectAndScatter:
      return AnalyzeWindowed(instr);
    case HloOpcode::kGather:
      AnalyzeGather(instr);
      AddIndexChecks(instr);
      return;
    case HloOpcode::kScatter:
      AnalyzeScatter(instr);
      AddIndexChecks(instr);
      return;
    default:
      return AnalyzeElementwise(instr);
  }
}

void Shrinker::AnalyzeWhile(HloInstruction* instr) {
  HloComputation* body = instr->called_computation("body");
  HloComputation* cond = instr->called_computation("condition");
  if (instr->operand_count() != 1 || body == nullptr || cond == nullptr) {
    FreezeAll(instr, "malformed while");
    return;
  }
  TieSame(instr->operand(0), instr, "while");
  for (HloComputation* c : {body, cond}) {
    std::vector<HloInstruction*> params = c->parameters();
    if (params.size() == 1 && params[0] != nullptr) TieSame(params[0], instr, "while");
  }
  if (body->root() != nullptr) TieSame(body->root(), instr, "while");
}

void Shrinker::AnalyzeCall(HloInstruction* instr) {
  const HloOpcode op = instr->opcode();
  const std::string op_name(HloOpcodeString(op));
  const auto& operands = instr->operands();
  std::vector<HloComputation*> called = instr->AllCalledComputations();
  if (called.size() != 1 || op == HloOpcode::kAsyncStart) {
    FreezeAll(instr, op_name);
    return;
  }
  std::vector<HloInstruction*> params = called[0]->parameters();
  for (size_t i = 0; i < params.size() && i < operands.size(); ++i) {
    if (params[i] != nullptr) TieSame(params[i], operands[i], op_name);
  }
  if (called[0]->root() != nullptr) TieSame(called[0]->root(), instr, op_name);
}

void Shrinker::AnalyzeConditional(HloInstruction* instr) {
  const auto& operands = instr->operands();
  std::vector<HloComputation*> branches = instr->AllCalledComputations();
  for (size_t b = 0; b < branches.size(); ++b) {
    std::vector<HloInstruction*> params = branches[b]->parameters();
    if (params.size() == 1 && params[0] != nullptr && b + 1 < operands.size()) {
      TieSame(params[0], operands[b + 1], "conditional");
    }
    if (branches[b]->root() != nullptr) TieSame(branches[b]->root(), instr, "conditional");
  }
}

void Shrinker::AnalyzeTuple(const HloInstruction* instr) {
  const auto& operands = instr->operands();
  if (instr->opcode() == HloOpcode::kTuple) {
    int64_t leaf = 0;
    for (const HloInstruction* operand : operands) {
      const int64_t count = LeafCount(operand);
      TieLeaves(operand, 0, instr, leaf, count, "tuple");
      leaf += count;
    }
    return;
  }
  const Shape& tuple = operands[0]->shape();
  const int64_t index = instr->attrs().tuple_index.value_or(-1);
  if (!tuple.IsTuple() || index < 0 || index >= tuple.tuple_size()) {
    FreezeAll(instr, "get-tuple-element");
    return;
  }
  int64_t offset = 0;
  for (int64_t i = 0; i < index; ++i) offset += LeafCountOf(tuple.tuple_shapes()[i]);
  TieLeaves(operands[0], offset, instr, 0, LeafCount(instr), "get-tuple-element");
}

void Shrinker::AnalyzeLeafwise(const HloInstruction* instr) {
  const std::string op_name(HloOpcodeString(instr->opcode()));
  const auto& operands = instr->operands();
  // Operands leaf by leaf against the result leaves (variadic forms: a tuple result).
  int64_t leaf = 0;
  for (const HloInstruction* operand : operands) {
    const int64_t count = LeafCount(operand);
    TieLeaves(operand, 0, instr, leaf, count, op_name);
    leaf += count;
  }
  if (leaf != LeafCount(instr)) FreezeAll(instr, op_name);
  if (instr->opcode() == HloOpcode::kSort) {
    for (size_t i = 1; i < operands.size(); ++i) TieSame(operands[0], operands[i], "sort");
  }
}

void Shrinker::AnalyzeGatherOrScatterCollective(const HloInstruction* instr) {
  const HloOpcode op = instr->opcode();
  const std::string op_name(HloOpcodeString(op));
  const auto& operands = instr->operands();
  // One array: the gathered (scattered) dim is the group size times (over) the other.
  const std::vector<int64_t> dims = instr->attrs().dimensions.value_or(std::vector<int64_t>{});
  if (instr->operand_count() != 1 || dims.size() != 1 || !instr->shape().IsArray() ||
      !operands[0]->shape().IsArray() || operands[0]->shape().rank() != instr->shape().rank() ||
      dims[0] < 0 || dims[0] >= instr->shape().rank()) {
    FreezeAll(instr, absl::StrCat("op ", op_name));
    return;
  }
  const int64_t d = dims[0];
  for (int64_t i = 0; i < instr->shape().rank(); ++i) {
    if (i != d) TieDims(operands[0], i, instr, i);
  }
  const int64_t in_var = Var(operands[0], 0, d);
  const int64_t out_var = Var(instr, 0, d);
  const bool gather = op == HloOpcode::kAllGather;
  const int64_t big = gather ? orig_[out_var] : orig_[in_var];
  const int64_t small = gather ? orig_[in_var] : orig_[out_var];
  if (small == 0 || big % small != 0) {
    FreezeAll(instr, absl::StrCat("op ", op_name));
    return;
  }
  const int64_t g = big / small;
  Derivation der;
  der.kind = Derivation::kLinear;
  der.out = out_var;
  der.in = {in_var};
  der.coeff = {gather ? g : 1};
  der.den = gather ? 1 : g;
  if (!gather) tiles_[in_var].push_back(g);
  Derive(std::move(der));
}

void Shrinker::AnalyzeCustomCall(const HloInstruction* instr) {
  const auto& operands = instr->operands();
  const bool operand_is_array = instr->operand_count() >= 1 && operands[0]->shape().IsArray();
  const std::string target = instr->attrs().custom_call_target.value_or("");
  if (IsShardingAnnotationTarget(target) && instr->operand_count() == 1) {
    TieSame(operands[0], instr, "custom-call Sharding");
    return;
  }
  if ((target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape") &&
      instr->operand_count() == 1 && instr->shape().IsArray() && operand_is_array &&
      operands[0]->shape().rank() == instr->shape().rank()) {
    const bool to_shard = target == "SPMDFullToShardShape";
    const HloInstruction* full = to_shard ? operands[0] : instr;
    const std::optional<HloSharding>& s = full->sharding();
    for (int64_t d = 0; d < instr->shape().rank(); ++d) {
      int64_t t = 1;
      if (s.has_value() && s->IsTiled() && d < s->TiledDataRank()) {
        t = s->tile_assignment().dim(d);
      }
      if (t == 1) {
        TieDims(operands[0], d, instr, d);
        continue;
      }
      Derivation der;
      der.kind = to_shard ? Derivation::kCeilDiv : Derivation::kMulMinus;
      der.out = Var(instr, 0, d);
      der.in = {Var(operands[0], 0, d)};
      der.den = t;
      Derive(std::move(der));
    }
    return;
  }
  if (target == "TopK" && instr->operand_count() == 1 && operand_is_array &&
      LeafCount(instr) == 2 && operands[0]->shape().rank() >= 1 &&
      Leaf(instr, 0).rank() == operands[0]->shape().rank() &&
      Leaf(instr, 1).rank() == operands[0]->shape().rank()) {
    // Batch dims follow the operand; k stays (or follows n when k == n).
    const int64_t rank = operands[0]->shape().rank();
    TieLeaves(instr, 0, instr, 1, 1, "custom-call TopK");
    for (int64_t d = 0; d + 1 < rank; ++d) TieDims(operands[0], d, instr, d);
    if (Leaf(instr, 0).dimensions(rank - 1) == operands[0]->shape().dimensions(rank - 1)) {
      TieDims(operands[0], rank - 1, instr, rank - 1);
    } else {
      Freeze(Var(instr, 0, rank - 1), "topk k");
      topk_.push_back(instr);
    }
    return;
  }
  FreezeAll(instr, absl::StrCat("custom-call ", target));
}

void Shrinker::AnalyzeBroadcastOrTranspose(const HloInstruction* instr) {
  const auto& operands = instr->operands();
  const bool operand_is_array = instr->operand_count() >= 1 && operands[0]->shape().IsArray();
  const std::vector<int64_t> dims = instr->attrs().dimensions.value_or(std::vector<int64_t>{});
  if (instr->opcode() == HloOpcode::kBroadcast) {
    if (!operand_is_array || static_cast<int64_t>(dims.size()) != operands[0]->shape().rank()) {
      FreezeAll(instr, "broadcast");
      return;
    }
    for (size_t i = 0; i < dims.size(); ++i) TieDims(operands[0], i, instr, dims[i]);
    return;
  }
  // Transpose: `dims` is the permutation.
  if (!operand_is_array || static_cast<int64_t>(dims.size()) != instr->shape().rank()) {
    FreezeAll(instr, "transpose");
    return;
  }
  for (size_t i = 0; i < dims.size(); ++i) TieDims(operands[0], dims[i], instr, i);
}

void Shrinker::AnalyzeReduce(const HloInstruction* instr) {
  const auto& operands = instr->operands();
  const int64_t n = instr->operand_count() / 2;
  const std::vector<int64_t> dims = instr->attrs().dimensions.value_or(std::vector<int64_t>{});
  if (n < 1 || LeafCount(instr) != n) {
    FreezeAll(instr, "reduce");
    return;
  }
  for (int64_t i = 1; i < n; ++i) TieSame(operands[0], operands[i], "reduce");
  for (int64_t j = 0; j < n; ++j) {
    const Shape& in = Leaf(operands[j]);
    int64_t k = 0;
    for (int64_t d = 0; d < in.rank(); ++d) {
      if (std::find(dims.begin(), dims.end(), d) != dims.end()) continue;
      if (k >= Leaf(instr, j).rank()) break;
      Tie(Var(operands[j], 0, d), Var(instr, j, k++));
    }
  }
}

void Shrinker::AnalyzeConcatenate(const HloInstruction* instr) {
  const std::vector<int64_t> dims = instr->attrs().dimensions.value_or(std::vector<int64_t>{});
  if (dims.size() != 1 || !instr->shape().IsArray()) {
    FreezeAll(instr, "concatenate");
    return;
  }
  Derivation der;
  der.kind = Derivation::kSum;
  der.out = Var(instr, 0, dims[0]);
  for (const HloInstruction* operand : instr->operands()) {
    if (operand->shape().rank() != instr->shape().rank()) {
      FreezeAll(instr, "concatenate");
      return;
    }
    for (int64_t d = 0; d < instr->shape().rank(); ++d) {
      if (d != dims[0]) TieDims(operand, d, instr, d);
    }
    der.in.push_back(Var(operand, 0, dims[0]));
  }
  Derive(std::move(der));
}

void Shrinker::AnalyzeDot(const HloInstruction* instr) {
  const auto& operands = instr->operands();
  auto operand_is_array = [&](int64_t i) {
    return i < instr->operand_count() && operands[i]->shape().IsArray();
  };
  const std::optional<DotDimensionNumbers>& dn = instr->attrs().dot_dimension_numbers;
  if (!dn.has_value() || !operand_is_array(0) || !operand_is_array(1) ||
      !instr->shape().IsArray() || dn->lhs_batch.size() != dn->rhs_batch.size() ||
      dn->lhs_contracting.size() != dn->rhs_contracting.size()) {
    FreezeAll(instr, "dot");
    return;
  }
  const HloInstruction* lhs = operands[0];
  const HloInstruction* rhs = operands[1];
  int64_t out = 0;
  for (size_t i = 0; i < dn->lhs_batch.size(); ++i) {
    TieDims(lhs, dn->lhs_batch[i], rhs, dn->rhs_batch[i]);
    TieDims(lhs, dn->lhs_batch[i], instr, out++);
  }
  for (size_t i = 0; i < dn->lhs_contracting.size(); ++i) {
    TieDims(lhs, dn->lhs_contracting[i], rhs, dn->rhs_contracting[i]);
  }
  auto free_dims = [](const Shape& s, const std::vector<int64_t>& a,
                      const std::vector<int64_t>& b) {
    std::vector<int64_t> r;
    for (int64_t d = 0; d < s.rank(); ++d) {
      if (std::find(a.begin(), a.end(), d) == a.end() &&
          std::find(b.begin(), b.end(), d) == b.end()) {
        r.push_back(d);
      }
    }
    return r;
  };
  for (int64_t d : free_dims(lhs->shape(), dn->lhs_batch, dn->lhs_contracting)) {
    if (out < instr->shape().rank()) TieDims(lhs, d, instr, out++);
  }
  for (int64_t d : free_dims(rhs->shape(), dn->rhs_batch, dn->rhs_contracting)) {
    if (out < instr->shape().rank()) TieDims(rhs, d, instr, out++);
  }
}

void Shrinker::AnalyzeWindowed(const HloInstruction* instr) {
  const auto& operands = instr->operands();
  const std::optional<std::vector<WindowDim>>& window = instr->attrs().window;
  if (instr->opcode() == HloOpcode::kReduceWindow) {
    const int64_t n = instr->operand_count() / 2;
    if (n < 1 || LeafCount(instr) != n || !window.has_value() ||
        static_cast<int64_t>(window->size()) != Leaf(operands[0]).rank()) {
      FreezeAll(instr, "reduce-window");
      return;
    }
    for (int64_t i = 1; i < n; ++i) TieSame(operands[0], operands[i], "reduce-window");
    for (int64_t i = 1; i < n; ++i) TieLeaves(instr, 0, instr, i, 1, "reduce-window");
    AnalyzeWindowDims(operands[0], instr, 0, *window);
    return;
  }
  // Select-and-scatter: the source is windowed like the operand; the result is the operand's.
  if (instr->operand_count() != 3 || !window.has_value() ||
      static_cast<int64_t>(window->size()) != Leaf(operands[0]).rank()) {
    FreezeAll(instr, "select-and-scatter");
    return;
  }
  TieSame(operands[0], instr, "select-and-scatter");
  AnalyzeWindowDims(operands[0], operands[1], 0, *window);
}

void Shrinker::AnalyzeElementwise(const HloInstruction* instr) {
  const HloOpcode op = instr->opcode();
  const std::string op_name(HloOpcodeString(op));
  const auto& operands = instr->operands();
  if (!IsElementwiseLike(op) && op != HloOpcode::kSelect && op != HloOpcode::kClamp) {
    FreezeAll(instr, absl::StrCat("op ", op_name));
    return;
  }
  if (!instr->shape().IsArray()) {
    if (instr->operand_count() >= 1) {
      TieSame(operands[0], instr, op_name);
    }
    return;
  }
  const int64_t rank = instr->shape().rank();
  for (const HloInstruction* operand : operands) {
    if (!operand->shape().IsArray()) continue;
    const int64_t r = operand->shape().rank();
    if (r == 0 && rank > 0) continue;  // Scalar operand of select/clamp.
    if (r == rank) {
      for (int64_t d = 0; d < rank; ++d) TieDims(operand, d, instr, d);
      continue;
    }
    if (op == HloOpcode::kBitcastConvert && std::abs(r - rank) == 1) {
      // Bitcast between widths: the extra minor dim is the width ratio.
      const int64_t common = std::min(r, rank);
      for (int64_t d = 0; d < common; ++d) TieDims(operand, d, instr, d);
      if (r > rank) {
        Freeze(Var(operand, 0, r - 1), "bitcast-convert");
      } else {
        Freeze(Var(instr, 0, rank - 1), "bitcast-convert");
      }
      continue;
    }
    FreezeAll(instr, op_name);
    return;
  }
}

void Shrinker::AnalyzeConstant(HloInstruction* instr) {
  InstrInfo& info = infos_[index_.at(instr)];
  const std::optional<Literal>& literal = instr->literal();
  if (!instr->shape().IsArray() || instr->shape().rank() == 0) {
    if (!instr->shape().IsArray() && LeafCount(instr) > 0) {
      FreezeLeaves(instr, "constant literal");
    }
    return;
  }
  if (!literal.has_value() || literal->elided()) return;  // Resized as elided.
  const int64_t n = literal->element_count();
  bool uniform = true;
  for (int64_t i = 1; i < n && uniform; ++i) uniform = literal->GetBits(i) == literal->GetBits(0);
  if (uniform) return;
  // An iota along one dim (values equal to the index along that dim)?
  const Shape& shape = instr->shape();
  const PrimitiveType type = shape.element_type();
  if (IsIntegralType(type) || IsFloatingType(type)) {
    const std::vector<int64_t> strides = RowMajorStrides(shape.dimensions());
    for (int64_t dim = 0; dim < shape.rank(); ++dim) {
      bool ok = true;
      for (int64_t i = 0; i < n && ok; ++i) {
        const int64_t idx = (i / strides[dim]) % shape.dimensions(dim);
        if (IsIntegralType(type)) {
          ok = literal->GetInt64(i) == idx;
        } else {
          ok = literal->GetDouble(i) == static_cast<double>(idx);
        }
      }
      if (ok) {
        info.literal_iota = true;
        info.literal_iota_dim = dim;
        return;
      }
    }
  }
  FreezeLeaves(instr, "constant literal");
}

void Shrinker::AddIndexChecks(const HloInstruction* instr) {
  auto constant_of = [](const HloInstruction* i) -> const Literal* {
    if (i->opcode() != HloOpcode::kConstant || !i->literal().has_value() ||
        i->literal()->elided() || !i->shape().IsArray() ||
        !IsIntegralType(i->shape().element_type())) {
      return nullptr;
    }
    return &*i->literal();
  };
  auto add = [&](int64_t operand_var, int64_t window_var, int64_t window_size, int64_t max_index) {
    if (max_index < 0) return;  // Clamped to 0 (or skipped) at any size.
    const int64_t w = window_var >= 0 ? orig_[window_var] : window_size;
    index_checks_.push_back({instr, operand_var, window_var, window_size, max_index,
                             max_index + w <= orig_[operand_var]});
  };
  const HloOpcode op = instr->opcode();
  if (op == HloOpcode::kDynamicSlice || op == HloOpcode::kDynamicUpdateSlice) {
    const int64_t first = op == HloOpcode::kDynamicSlice ? 1 : 2;
    const HloInstruction* operand = instr->operand(0);
    if (!operand->shape().IsArray()) return;
    const int64_t rank = operand->shape().rank();
    if (instr->operand_count() != first + rank) return;
    const HloInstruction* window = op == HloOpcode::kDynamicSlice ? instr : instr->operand(1);
    if (!window->shape().IsArray() || window->shape().rank() != rank) return;
    for (int64_t d = 0; d < rank; ++d) {
      const Literal* literal = constant_of(instr->operand(first + d));
      if (literal == nullptr || literal->element_count() != 1) continue;
      add(Var(operand, 0, d), Var(window, 0, d), 0, literal->GetInt64(0));
    }
    return;
  }
  const bool gather = op == HloOpcode::kGather;
  const HloAttributes& attrs = instr->attrs();
  const HloInstruction* operand = instr->operand(0);
  int64_t indices_pos = 1;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> index_map;
  if (gather) {
    if (!attrs.gather_dimension_numbers.has_value() || !attrs.gather_slice_sizes.has_value()) {
      return;
    }
    index_vector_dim = attrs.gather_dimension_numbers->index_vector_dim;
    index_map = attrs.gather_dimension_numbers->start_index_map;
  } else {
    if (!attrs.scatter_dimension_numbers.has_value()) return;
    indices_pos = (instr->operand_count() - 1) / 2;
    index_vector_dim = attrs.scatter_dimension_numbers->index_vector_dim;
    index_map = attrs.scatter_dimension_numbers->scatter_dims_to_operand_dims;
  }
  const HloInstruction* indices = instr->operand(indices_pos);
  const Literal* literal = constant_of(indices);
  if (literal == nullptr || !operand->shape().IsArray()) return;
  const Shape& ishape = indices->shape();
  std::vector<int64_t> max_index(index_map.size(), std::numeric_limits<int64_t>::min());
  const std::vector<int64_t> strides = RowMajorStrides(ishape.dimensions());
  for (int64_t i = 0; i < literal->element_count(); ++i) {
    int64_t k = 0;
    if (index_vector_dim < ishape.rank()) {
      k = (i / strides[index_vector_dim]) % ishape.dimensions(index_vector_dim);
    }
    if (k < static_cast<int64_t>(max_index.size())) {
      max_index[k] = std::max(max_index[k], literal->GetInt64(i));
    }
  }
  for (size_t k = 0; k < index_map.size(); ++k) {
    const int64_t d = index_map[k];
    if (d < 0 || d >= operand->shape().rank()) continue;
    if (gather) {
      if (d >= static_cast<int64_t>(attrs.gather_slice_sizes->size())) continue;
      // The slice size follows the matching offset dim of the result (or stays fixed).
      int64_t window_var = -1;
      const GatherDimensionNumbers& dn = *attrs.gather_dimension_numbers;
      std::vector<int64_t> offset = dn.offset_dims;
      std::sort(offset.begin(), offset.end());
      size_t j = 0;
      for (int64_t e = 0; e < operand->shape().rank(); ++e) {
        const bool skipped =
            std::find(dn.collapsed_slice_dims.begin(), dn.collapsed_slice_dims.end(), e) !=
                dn.collapsed_slice_dims.end() ||
            std::find(dn.operand_batching_dims.begin(), dn.operand_batching_dims.end(), e) !=
                dn.operand_batching_dims.end();
        if (skipped) continue;
        if (e == d && j < offset.size()) window_var = Var(instr, 0, offset[j]);
        ++j;
      }
      add(Var(operand, 0, d), window_var, (*attrs.gather_slice_sizes)[d], max_index[k]);
    } else {
      const ScatterDimensionNumbers& dn = *attrs.scatter_dimension_numbers;
      const HloInstruction* updates = instr->operand(indices_pos + 1);
      std::vector<int64_t> window = dn.update_window_dims;
      std::sort(window.begin(), window.end());
      int64_t window_var = -1;
      size_t j = 0;
      for (int64_t e = 0; e < operand->shape().rank(); ++e) {
        const bool skipped =
            std::find(dn.inserted_window_dims.begin(), dn.inserted_window_dims.end(), e) !=
                dn.inserted_window_dims.end() ||
            std::find(dn.input_batching_dims.begin(), dn.input_batching_dims.end(), e) !=
                dn.input_batching_dims.end();
        if (skipped) continue;
        if (e == d && j < window.size()) window_var = Var(updates, 0, window[j]);
        ++j;
      }
      add(Var(operand, 0, d), window_var, 1, max_index[k]);
    }
  }
}

void Shrinker::AnalyzeReshape(const HloInstruction* instr) {
  const HloInstruction* operand = instr->operand(0);
  if (!operand->shape().IsArray() || !instr->shape().IsArray()) {
    FreezeAll(instr, "reshape");
    return;
  }
  const Shape& in = operand->shape();
  const Shape& out = instr->shape();
  std::vector<int64_t> a;
  std::vector<int64_t> b;
  bool zero = false;
  for (int64_t d = 0; d < in.rank(); ++d) {
    if (in.dimensions(d) == 0) zero = true;
    if (in.dimensions(d) != 1) a.push_back(d);
  }
  for (int64_t d = 0; d < out.rank(); ++d) {
    if (out.dimensions(d) == 0) zero = true;
    if (out.dimensions(d) != 1) b.push_back(d);
  }
  if (zero || in.ElementCount() != out.ElementCount()) {
    FreezeAll(instr, "reshape");
    return;
  }
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    const size_t i0 = i;
    const size_t j0 = j;
    int64_t pa = in.dimensions(a[i]);
    int64_t pb = out.dimensions(b[j]);
    while (pa != pb) {
      if (pa < pb) {
        if (++i >= a.size()) break;
        pa *= in.dimensions(a[i]);
      } else {
        if (++j >= b.size()) break;
        pb *= out.dimensions(b[j]);
      }
    }
    if (pa != pb) break;
    const size_t na = i - i0 + 1;
    const size_t nb = j - j0 + 1;
    if (na == 1 && nb == 1) {
      TieDims(operand, a[i0], instr, b[j0]);
    } else if (na == 1 || nb == 1) {
      Derivation der;
      der.kind = Derivation::kProduct;
      if (na == 1) {
        der.out = Var(operand, 0, a[i0]);
        for (size_t k = j0; k <= j; ++k) der.in.push_back(Var(instr, 0, b[k]));
      } else {
        der.out = Var(instr, 0, b[j0]);
        for (size_t k = i0; k <= i; ++k) der.in.push_back(Var(operand, 0, a[k]));
      }
      Derive(std::move(der));
    } else {
      for (size_t k = i0; k <= i; ++k) Freeze(Var(operand, 0, a[k]), "reshape regroups dims");
      for (size_t k = j0; k <= j; ++k) Freeze(Var(instr, 0, b[k]), "reshape regroups dims");
    }
    ++i;
    ++j;
  }
}

void Shrinker::AnalyzeSlice(HloInstruction* instr) {
  InstrInfo& info = infos_[index_.at(instr)];
  const HloOpcode op = instr->opcode();
  const HloInstruction* operand = instr->operand(0);
  if (!instr->shape().IsArray() || !operand->shape().IsArray() ||
      operand->shape().rank() != instr->shape().rank()) {
    FreezeAll(instr, std::string(HloOpcodeString(op)));
    return;
  }
  const int64_t rank = instr->shape().rank();
  info.modes.assign(rank, DimMode::kTied);
  const HloAttributes& attrs = instr->attrs();
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t in_var = Var(operand, 0, d);
    const int64_t out_var = Var(instr, 0, d);
    const int64_t n = orig_[in_var];
    const int64_t out = orig_[out_var];
    switch (op) {
      case HloOpcode::kSlice: {
        if (!attrs.slice.has_value() || static_cast<int64_t>(attrs.slice->size()) != rank) {
          FreezeAll(instr, "slice");
          return;
        }
        const SliceDim& s = (*attrs.slice)[d];
        const int64_t margins = s.start + (n - s.limit);
        if (s.start == 0 && s.limit == n && s.stride == 1) {
          Tie(in_var, out_var);
          info.modes[d] = DimMode::kTied;
        } else if (margins <= out) {
          // Start and the cut at the end kept; the output follows (strided: ceil).
          if (s.stride == 1) {
            Tie(in_var, out_var);
          } else {
            Derivation der;
            der.kind = Derivation::kStrided;
            der.out = out_var;
            der.in = {in_var};
            der.pad_total = margins;
            der.stride = s.stride;
            Derive(std::move(der));
          }
          info.modes[d] = DimMode::kOffset;
        } else if (out <= kSmallSize) {
          Freeze(out_var, "small slice");
          info.modes[d] = DimMode::kFixedOut;
        } else {
          Derivation der;
          der.kind = Derivation::kScale;
          der.out = out_var;
          der.in = {in_var};
          Derive(std::move(der));
          info.modes[d] = DimMode::kScale;
        }
        break;
      }
      case HloOpcode::kPad: {
        if (!attrs.padding.has_value() || static_cast<int64_t>(attrs.padding->size()) != rank) {
          FreezeAll(instr, "pad");
          return;
        }
        const PadDim& p = (*attrs.padding)[d];
        if (p.interior == 0) {
          Tie(in_var, out_var);
        } else {
          Derivation der;
          der.kind = Derivation::kLinear;
          der.out = out_var;
          der.in = {in_var};
          der.coeff = {1 + p.interior};
          Derive(std::move(der));
        }
        break;
      }
      case HloOpcode::kDynamicSlice: {
        DimMode mode = DimMode::kTied;
        SubDim(in_var, out_var, &mode);
        info.modes[d] = mode;
        break;
      }
      case HloOpcode::kDynamicUpdateSlice: {
        Tie(in_var, out_var);
        if (instr->operand_count() < 2 || !instr->operand(1)->shape().IsArray() ||
            instr->operand(1)->shape().rank() != rank) {
          FreezeAll(instr, "dynamic-update-slice");
          return;
        }
        DimMode mode = DimMode::kTied;
        SubDim(in_var, Var(instr->operand(1), 0, d), &mode);
        break;
      }
      default:
        break;
    }
  }
  // Index operands given as one rank-1 array.
  if (op == HloOpcode::kDynamicSlice || op == HloOpcode::kDynamicUpdateSlice) {
    for (int64_t i = (op == HloOpcode::kDynamicSlice ? 1 : 2); i < instr->operand_count(); ++i) {
      FreezeLeaves(instr->operand(i), "index vector");
    }
  }
}

void Shrinker::AnalyzeWindowDims(const HloInstruction* in, const HloInstruction* out,
                                 int64_t out_leaf, const std::vector<WindowDim>& window) {
  for (size_t d = 0; d < window.size(); ++d) {
    const WindowDim& w = window[d];
    if (static_cast<int64_t>(d) >= Leaf(in).rank() ||
        static_cast<int64_t>(d) >= Leaf(out, out_leaf).rank() || w.stride < 1 ||
        w.lhs_dilation < 1 || w.rhs_dilation < 1) {
      FreezeLeaves(in, "window");
      FreezeLeaves(out, "window");
      return;
    }
    const int64_t in_var = Var(in, 0, d);
    const int64_t out_var = Var(out, out_leaf, d);
    if (w.stride == 1 && w.lhs_dilation == 1) {
      Tie(in_var, out_var);
      continue;
    }
    Derivation der;
    der.kind = Derivation::kWindow;
    der.out = out_var;
    der.in = {in_var};
    der.pad_total = w.pad_low + w.pad_high;
    der.lhs_dil = w.lhs_dilation;
    der.rhs_dil = w.rhs_dilation;
    der.stride = w.stride;
    der.window = w.size;
    Derive(std::move(der));
  }
}

void Shrinker::AnalyzeConvolution(const HloInstruction* instr) {
  const HloAttributes& attrs = instr->attrs();
  if (!attrs.dim_labels.has_value() || instr->operand_count() != 2 || !instr->shape().IsArray() ||
      !instr->operand(0)->shape().IsArray() || !instr->operand(1)->shape().IsArray()) {
    FreezeAll(instr, "convolution");
    return;
  }
  const ConvolutionDimensionNumbers& dn = *attrs.dim_labels;
  const HloInstruction* lhs = instr->operand(0);
  const HloInstruction* rhs = instr->operand(1);
  const size_t spatial = dn.input_spatial.size();
  std::vector<WindowDim> window = attrs.window.value_or(std::vector<WindowDim>{});
  if (!attrs.window.has_value() && spatial > 0) {
    FreezeAll(instr, "convolution without window");
    return;
  }
  if (window.size() != spatial || dn.kernel_spatial.size() != spatial ||
      dn.output_spatial.size() != spatial) {
    FreezeAll(instr, "convolution");
    return;
  }
  const int64_t fgc = attrs.feature_group_count.value_or(1);
  const int64_t bgc = attrs.batch_group_count.value_or(1);
  const std::string groups = "convolution groups";
  InstrInfo& info = infos_[index_.at(instr)];
  const int64_t in_batch = Var(lhs, 0, dn.input_batch);
  const int64_t in_feature = Var(lhs, 0, dn.input_feature);
  const int64_t k_in = Var(rhs, 0, dn.kernel_input_feature);
  const int64_t k_out = Var(rhs, 0, dn.kernel_output_feature);
  const int64_t out_batch = Var(instr, 0, dn.output_batch);
  const int64_t out_feature = Var(instr, 0, dn.output_feature);
  // k_out' = k_out + ratio * (x' - x): the kernel's outputs per group stay the same.
  auto derive = [&](int64_t out, int64_t in, int64_t ratio) {
    Derivation der;
    der.kind = Derivation::kLinear;
    der.out = out;
    der.in = {in};
    der.coeff = {ratio};
    Derive(std::move(der));
  };
  Tie(k_out, out_feature);
  if (fgc > 1 && bgc > 1) {
    for (int64_t v : {in_batch, in_feature, k_in, k_out, out_batch}) Freeze(v, groups);
  } else if (fgc > 1) {
    Tie(in_batch, out_batch);
    if (orig_[k_out] % fgc != 0) {
      for (int64_t v : {in_feature, k_in, k_out}) Freeze(v, groups);
    } else if (orig_[k_in] == 1 && orig_[in_feature] == fgc) {
      // Depthwise: one group per input feature; the group count follows the features.
      derive(k_out, in_feature, orig_[k_out] / fgc);
      info.group_mode = 1;
    } else {
      derive(in_feature, k_in, fgc);
      tiles_[k_out].push_back(fgc);
    }
  } else if (bgc > 1) {
    Tie(in_feature, k_in);
    if (orig_[k_out] % bgc != 0) {
      for (int64_t v : {in_batch, out_batch, k_out}) Freeze(v, groups);
    } else if (orig_[out_batch] == 1 && orig_[in_batch] == bgc) {
      derive(k_out, in_batch, orig_[k_out] / bgc);
      info.group_mode = 2;
    } else {
      derive(in_batch, out_batch, bgc);
      tiles_[k_out].push_back(bgc);
    }
  } else {
    Tie(in_batch, out_batch);
    Tie(in_feature, k_in);
  }
  for (size_t i = 0; i < spatial; ++i) {
    const WindowDim& w = window[i];
    const int64_t in_var = Var(lhs, 0, dn.input_spatial[i]);
    const int64_t k_var = Var(rhs, 0, dn.kernel_spatial[i]);
    const int64_t out_var = Var(instr, 0, dn.output_spatial[i]);
    if (orig_[out_var] >= orig_[k_var]) {
      // A small window sliding over a large input: the window is kept, the output follows.
      Freeze(k_var, "convolution window");
      if (w.stride == 1 && w.lhs_dilation == 1) {
        Tie(in_var, out_var);
        continue;
      }
      Derivation der;
      der.kind = Derivation::kWindow;
      der.out = out_var;
      der.in = {in_var};
      der.pad_total = w.pad_low + w.pad_high;
      der.lhs_dil = w.lhs_dilation;
      der.rhs_dil = w.rhs_dilation;
      der.stride = w.stride;
      der.window = orig_[k_var];
      Derive(std::move(der));
    } else {
      // A window as large as the input (a gradient of the kernel): the output is kept and the
      // input follows the window.
      Freeze(out_var, "convolution output");
      if (w.rhs_dilation == 1 && w.lhs_dilation == 1) {
        Tie(in_var, k_var);
        continue;
      }
      Derivation der;
      der.kind = Derivation::kLinear;
      der.out = in_var;
      der.in = {k_var};
      der.coeff = {w.rhs_dilation};
      der.den = w.lhs_dilation;
      Derive(std::move(der));
    }
  }
}

void Shrinker::AnalyzeGather(HloInstruction* instr) {
  const HloAttributes& attrs = instr->attrs();
  if (!attrs.gather_dimension_numbers.has_value() || !attrs.gather_slice_sizes.has_value() ||
      instr->operand_count() != 2 || !instr->shape().IsArray()) {
    FreezeAll(instr, "gather");
    return;
  }
  const GatherDimensionNumbers& dn = *attrs.gather_dimension_numbers;
  const HloInstruction* operand = instr->operand(0);
  const HloInstruction* indices = instr->operand(1);
  const Shape& out = instr->shape();
  auto contains = [](const std::vector<int64_t>& v, int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  std::vector<int64_t> offset = dn.offset_dims;
  std::sort(offset.begin(), offset.end());
  size_t k = 0;
  for (int64_t d = 0; d < operand->shape().rank(); ++d) {
    if (contains(dn.collapsed_slice_dims, d) || contains(dn.operand_batching_dims, d)) continue;
    if (k >= offset.size()) break;
    DimMode mode = DimMode::kTied;
    SubDim(Var(operand, 0, d), Var(instr, 0, offset[k++]), &mode);
  }
  std::vector<int64_t> batch_out;
  for (int64_t d = 0; d < out.rank(); ++d) {
    if (!contains(offset, d)) batch_out.push_back(d);
  }
  size_t b = 0;
  for (int64_t d = 0; d < indices->shape().rank(); ++d) {
    if (d == dn.index_vector_dim) {
      Freeze(Var(indices, 0, d), "index vector");
      continue;
    }
    if (b < batch_out.size()) TieDims(indices, d, instr, batch_out[b++]);
  }
  for (size_t i = 0;
       i < dn.operand_batching_dims.size() && i < dn.start_indices_batching_dims.size(); ++i) {
    TieDims(operand, dn.operand_batching_dims[i], indices, dn.start_indices_batching_dims[i]);
  }
}

void Shrinker::AnalyzeScatter(const HloInstruction* instr) {
  const HloAttributes& attrs = instr->attrs();
  const int64_t n = (instr->operand_count() - 1) / 2;
  if (!attrs.scatter_dimension_numbers.has_value() || n < 1 ||
      instr->operand_count() != 2 * n + 1 || LeafCount(instr) != n) {
    FreezeAll(instr, "scatter");
    return;
  }
  const ScatterDimensionNumbers& dn = *attrs.scatter_dimension_numbers;
  const HloInstruction* operand = instr->operand(0);
  const HloInstruction* indices = instr->operand(n);
  const HloInstruction* updates = instr->operand(n + 1);
  for (int64_t i = 0; i < n; ++i) {
    TieLeaves(instr->operand(i), 0, instr, i, 1, "scatter");
    TieSame(updates, instr->operand(n + 1 + i), "scatter");
  }
  auto contains = [](const std::vector<int64_t>& v, int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  std::vector<int64_t> window = dn.update_window_dims;
  std::sort(window.begin(), window.end());
  size_t k = 0;
  for (int64_t d = 0; d < operand->shape().rank(); ++d) {
    if (contains(dn.inserted_window_dims, d) || contains(dn.input_batching_dims, d)) continue;
    if (k >= window.size()) break;
    DimMode mode = DimMode::kTied;
    SubDim(Var(operand, 0, d), Var(updates, 0, window[k++]), &mode);
  }
  std::vector<int64_t> scatter_dims;
  for (int64_t d = 0; d < updates->shape().rank(); ++d) {
    if (!contains(window, d)) scatter_dims.push_back(d);
  }
  size_t b = 0;
  for (int64_t d = 0; d < indices->shape().rank(); ++d) {
    if (d == dn.index_vector_dim) {
      Freeze(Var(indices, 0, d), "index vector");
      continue;
    }
    if (b < scatter_dims.size()) TieDims(indices, d, updates, scatter_dims[b++]);
  }
  for (size_t i = 0;
       i < dn.input_batching_dims.size() && i < dn.scatter_indices_batching_dims.size(); ++i) {
    TieDims(operand, dn.input_batching_dims[i], indices, dn.scatter_indices_batching_dims[i]);
  }
}

void Shrinker::BuildClasses() {
  const int64_t n = static_cast<int64_t>(orig_.size());
  class_of_.assign(n, -1);
  absl::flat_hash_map<int64_t, int64_t> root_class;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t r = Find(v);
    auto [it, inserted] = root_class.try_emplace(r, static_cast<int64_t>(classes_.size()));
    if (inserted) classes_.emplace_back();
    class_of_[v] = it->second;
    ClassInfo& c = classes_[it->second];
    c.members.push_back(v);
    c.max_orig = std::max(c.max_orig, orig_[v]);
    for (int64_t t : tiles_[v]) c.lcm = Lcm(c.lcm, t);
    if (!frozen_[v].empty()) {
      c.frozen = true;
      for (const std::string& r2 : frozen_[v]) {
        if (std::find(c.reasons.begin(), c.reasons.end(), r2) == c.reasons.end()) {
          c.reasons.push_back(r2);
        }
      }
    }
  }
  for (ClassInfo& c : classes_) {
    int64_t min_shift = std::numeric_limits<int64_t>::min();
    for (int64_t v : c.members) {
      int64_t lower = std::min<int64_t>(orig_[v], 1);
      for (int64_t t : tiles_[v]) lower = std::max(lower, std::min(orig_[v], t));
      min_shift = std::max(min_shift, lower - orig_[v]);
    }
    // Round up to a multiple of the lcm (shifts are non-positive multiples of it).
    c.min_shift = -(FloorDiv(-min_shift, c.lcm) * c.lcm);
    if (c.min_shift > 0) c.min_shift = 0;
    int64_t soft = min_shift;
    for (int64_t v : c.members) soft = std::max(soft, std::min(orig_[v], kSoftFloor) - orig_[v]);
    c.soft_min_shift = std::min<int64_t>(0, -(FloorDiv(-soft, c.lcm) * c.lcm));
  }
  for (size_t i = 0; i < derivations_.size(); ++i) {
    classes_[class_of_[derivations_[i].out]].derivations.push_back(static_cast<int64_t>(i));
  }
  for (size_t c = 0; c < classes_.size(); ++c) {
    if (!classes_[c].frozen && classes_[c].derivations.empty() && classes_[c].min_shift < 0) {
      free_classes_.push_back(static_cast<int64_t>(c));
    }
  }
}

bool Shrinker::Evaluate(const std::vector<int64_t>& free, std::vector<int64_t>* shift,
                        std::string* error) {
  const size_t nc = classes_.size();
  shift->assign(nc, 0);
  std::vector<char> state(nc, 0);  // 0 new, 1 in progress, 2 done.
  for (int64_t c : free_classes_) {
    (*shift)[c] = free[c];
    state[c] = 2;
  }
  std::function<bool(int64_t)> compute = [&](int64_t c) -> bool {
    if (state[c] == 2) return true;
    if (state[c] == 1) {
      *error = "cyclic size relations";
      return false;
    }
    state[c] = 1;
    const ClassInfo& info = classes_[c];
    std::optional<int64_t> value;
    for (int64_t di : info.derivations) {
      const Derivation& d = derivations_[di];
      if (d.den < 1 || d.stride < 1) {
        *error = "degenerate size relation";
        return false;
      }
      std::vector<int64_t> in;
      for (int64_t v : d.in) {
        if (!compute(class_of_[v])) return false;
        in.push_back(Size(v, *shift));
      }
      __int128 out = 0;
      switch (d.kind) {
        case Derivation::kSum:
          for (int64_t x : in) out += x;
          break;
        case Derivation::kProduct:
          out = 1;
          for (int64_t x : in) {
            out *= x;
            if (out > (__int128{1} << 62)) break;
          }
          break;
        case Derivation::kWindow: {
          const int64_t num =
              Dilated(in[0], d.lhs_dil) + d.pad_total - Dilated(d.window, d.rhs_dil);
          if (num < 0) {
            *error = "window larger than its input";
            return false;
          }
          out = num / d.stride + 1;
          break;
        }
        case Derivation::kLinear: {
          __int128 num = 0;
          for (size_t i = 0; i < in.size(); ++i) {
            num += static_cast<__int128>(d.coeff[i]) * (in[i] - orig_[d.in[i]]);
          }
          if (num % d.den != 0) {
            *error = "dilation does not divide the change";
            return false;
          }
          out = orig_[d.out] + num / d.den;
          break;
        }
        case Derivation::kScale:
          out = static_cast<__int128>(orig_[d.out]) * in[0] / std::max<int64_t>(orig_[d.in[0]], 1);
          // Keep a slice of several elements several elements long where it fits.
          out = std::max<__int128>(out, std::min<int64_t>({orig_[d.out], 2, in[0]}));
          if (out < 1) out = 1;
          break;
        case Derivation::kStrided:
          if (in[0] - d.pad_total < 1) {
            *error = "slice margins larger than the dim";
            return false;
          }
          out = (in[0] - d.pad_total + d.stride - 1) / d.stride;
          break;
        case Derivation::kCeilDiv:
          out = (in[0] + d.den - 1) / d.den;
          break;
        case Derivation::kMulMinus:
          out = static_cast<__int128>(in[0]) * d.den -
                (static_cast<__int128>(orig_[d.in[0]]) * d.den - orig_[d.out]);
          break;
      }
      if (out > (__int128{1} << 62) || out < 0) {
        *error = "size out of range";
        return false;
      }
      const int64_t s = static_cast<int64_t>(out) - orig_[d.out];
      if (value.has_value() && *value != s) {
        *error = "inconsistent derived sizes";
        return false;
      }
      value = s;
    }
    const int64_t s = value.value_or(0);
    if (info.frozen && s != 0) {
      *error = absl::StrCat("size fixed by ", info.reasons.empty() ? "?" : info.reasons[0]);
      return false;
    }
    if (s % info.lcm != 0 || s < info.min_shift || s > 0) {
      *error = "derived size breaks tile divisibility or bounds";
      return false;
    }
    (*shift)[c] = s;
    state[c] = 2;
    return true;
  };
  for (size_t c = 0; c < nc; ++c) {
    if (!compute(static_cast<int64_t>(c))) return false;
  }
  return true;
}

std::vector<char> Shrinker::ResizedInstructions(const std::vector<int64_t>& shift) const {
  std::vector<char> resized(infos_.size(), 0);
  for (size_t i = 0; i < infos_.size(); ++i) {
    const InstrInfo& info = infos_[i];
    for (size_t l = 0; l < info.leaves.size() && !resized[i]; ++l) {
      const Shape& leaf = info.leaves[l];
      for (int64_t d = 0; d < (leaf.IsArray() ? leaf.rank() : 0); ++d) {
        if (shift[class_of_[info.leaf_base[l] + d]] != 0) resized[i] = 1;
      }
    }
  }
  return resized;
}

bool Shrinker::ResizeSliceAttrs(const InstrInfo& info, const std::vector<int64_t>& shift,
                                const std::vector<int64_t>& result_dims, std::string* error) {
  HloInstruction* instr = info.instr;
  HloAttributes attrs = *info.orig_attrs;
  const InstrInfo& oi = infos_[index_.at(instr->operand(0))];
  for (size_t d = 0; d < attrs.slice->size(); ++d) {
    SliceDim& s = (*attrs.slice)[d];
    const int64_t in_var = oi.leaf_base[0] + static_cast<int64_t>(d);
    const int64_t n = orig_[in_var];
    const int64_t n2 = Size(in_var, shift);
    const int64_t out2 = result_dims[d];
    switch (info.modes[d]) {
      case DimMode::kTied:
        s.limit = n2;
        break;
      case DimMode::kOffset:
        s.limit = n2 - (n - s.limit);
        break;
      default: {
        const int64_t span = out2 == 0 ? 0 : (out2 - 1) * s.stride + 1;
        int64_t start =
            static_cast<int64_t>(static_cast<__int128>(s.start) * n2 / std::max<int64_t>(n, 1));
        if (start + span > n2) start = n2 - span;
        if (start < 0) {
          *error = absl::StrCat(instr->name(), ": slice does not fit");
          return false;
        }
        s.start = start;
        s.limit = start + span;
        break;
      }
    }
  }
  instr->set_shared_attrs(SharedValue<HloAttributes>::Make(std::move(attrs)));
  return true;
}

void Shrinker::ResizeGatherAttrs(const InstrInfo& info, const std::vector<int64_t>& result_dims) {
  HloAttributes attrs = *info.orig_attrs;
  const GatherDimensionNumbers& dn = *attrs.gather_dimension_numbers;
  std::vector<int64_t> offset = dn.offset_dims;
  std::sort(offset.begin(), offset.end());
  size_t k = 0;
  for (size_t d = 0; d < attrs.gather_slice_sizes->size(); ++d) {
    const int64_t dd = static_cast<int64_t>(d);
    if (std::find(dn.collapsed_slice_dims.begin(), dn.collapsed_slice_dims.end(), dd) !=
            dn.collapsed_slice_dims.end() ||
        std::find(dn.operand_batching_dims.begin(), dn.operand_batching_dims.end(), dd) !=
            dn.operand_batching_dims.end()) {
      continue;
    }
    if (k < offset.size()) (*attrs.gather_slice_sizes)[d] = result_dims[offset[k++]];
  }
  info.instr->set_shared_attrs(SharedValue<HloAttributes>::Make(std::move(attrs)));
}

bool Shrinker::ResizeConstant(const InstrInfo& info, const Shape& shape, std::string* error) {
  HloInstruction* instr = info.instr;
  const Literal& old = *instr->literal();
  if (old.elided()) {
    instr->set_literal(Literal::Elided(shape));
    return true;
  }
  absl::StatusOr<Literal> fresh = Literal::CreateChecked(shape);
  if (!fresh.ok()) {
    *error = absl::StrCat(instr->name(), ": ", fresh.status().message());
    return false;
  }
  const int64_t n = fresh->element_count();
  if (info.literal_iota) {
    const std::vector<int64_t> strides = RowMajorStrides(shape.dimensions());
    const int64_t dim = info.literal_iota_dim;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t idx = (i / strides[dim]) % shape.dimensions(dim);
      if (IsIntegralType(shape.element_type())) {
        fresh->SetInt64(i, idx);
      } else {
        fresh->SetDouble(i, static_cast<double>(idx));
      }
    }
  } else if (old.element_count() > 0) {
    const uint64_t bits = old.GetBits(0);
    const bool complex = IsComplexType(shape.element_type());
    for (int64_t i = 0; i < n; ++i) {
      if (complex) {
        fresh->SetComplex(i, old.GetComplex(0));
      } else {
        fresh->SetBits(i, bits);
      }
    }
  }
  instr->set_literal(*std::move(fresh));
  return true;
}

bool Shrinker::ApplyInstruction(const InstrInfo& info, const std::vector<int64_t>& shift,
                                const std::vector<char>& resized, std::string* error) {
  HloInstruction* instr = info.instr;
  std::vector<std::vector<int64_t>> leaf_dims;
  bool changed = resized[index_.at(instr)] != 0;
  for (const HloInstruction* operand : instr->operands()) {
    if (resized[index_.at(operand)]) changed = true;
  }
  for (size_t l = 0; l < info.leaves.size(); ++l) {
    const Shape& leaf = info.leaves[l];
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < (leaf.IsArray() ? leaf.rank() : 0); ++d) {
      dims.push_back(Size(info.leaf_base[l] + d, shift));
    }
    leaf_dims.push_back(std::move(dims));
  }
  if (!changed) {
    if (!(instr->shape() == info.orig_shape)) instr->set_shape(info.orig_shape);
    instr->set_shared_attrs(info.orig_attrs);
    instr->set_shared_literal(info.orig_literal);
    return true;
  }
  Shape shape = info.orig_shape;
  size_t pos = 0;
  SetLeafDims(&shape, leaf_dims, &pos);
  instr->set_shape(shape);
  instr->set_shared_attrs(info.orig_attrs);
  instr->set_shared_literal(info.orig_literal);
  // Attributes that hold sizes.
  const HloOpcode op = instr->opcode();
  if (op == HloOpcode::kSlice && info.orig_attrs && info.orig_attrs->slice.has_value()) {
    return ResizeSliceAttrs(info, shift, leaf_dims[0], error);
  }
  if (op == HloOpcode::kDynamicSlice && info.orig_attrs &&
      info.orig_attrs->dynamic_slice_sizes.has_value()) {
    HloAttributes attrs = *info.orig_attrs;
    attrs.dynamic_slice_sizes = leaf_dims[0];
    instr->set_shared_attrs(SharedValue<HloAttributes>::Make(std::move(attrs)));
    return true;
  }
  if (op == HloOpcode::kGather && info.orig_attrs &&
      info.orig_attrs->gather_slice_sizes.has_value() &&
      info.orig_attrs->gather_dimension_numbers.has_value()) {
    ResizeGatherAttrs(info, leaf_dims[0]);
    return true;
  }
  if (op == HloOpcode::kConstant && instr->literal().has_value() && shape.IsArray()) {
    return ResizeConstant(info, shape, error);
  }
  return true;
}

void Shrinker::ApplyConvolutionWindows() {
  for (InstrInfo& info : infos_) {
    HloInstruction* instr = info.instr;
    if (instr->opcode() != HloOpcode::kConvolution || !info.orig_attrs ||
        !info.orig_attrs->dim_labels.has_value()) {
      continue;
    }
    HloAttributes attrs = *info.orig_attrs;
    bool changed = false;
    const Shape& kernel = instr->operand(1)->shape();
    const Shape& lhs = instr->operand(0)->shape();
    if (info.group_mode == 1) {
      attrs.feature_group_count = lhs.dimensions(attrs.dim_labels->input_feature);
      changed = attrs.feature_group_count != info.orig_attrs->feature_group_count;
    } else if (info.group_mode == 2) {
      attrs.batch_group_count = lhs.dimensions(attrs.dim_labels->input_batch);
      changed = attrs.batch_group_count != info.orig_attrs->batch_group_count;
    }
    for (size_t i = 0; attrs.window.has_value() && i < attrs.window->size() &&
                       i < attrs.dim_labels->kernel_spatial.size();
         ++i) {
      const int64_t k = kernel.dimensions(attrs.dim_labels->kernel_spatial[i]);
      if ((*attrs.window)[i].size != k) {
        (*attrs.window)[i].size = k;
        changed = true;
      }
    }
    if (changed) instr->set_shared_attrs(SharedValue<HloAttributes>::Make(std::move(attrs)));
  }
}

void Shrinker::ApplyOutfeedShapes() {
  for (InstrInfo& info : infos_) {
    HloInstruction* instr = info.instr;
    if (instr->opcode() != HloOpcode::kOutfeed || instr->operand_count() < 1) continue;
    for (RawAttribute& raw : instr->mutable_raw_attributes()) {
      if (raw.name == "outfeed_shape") raw.text = instr->operand(0)->shape().ToString();
    }
  }
}

bool Shrinker::CheckBounds(const std::vector<int64_t>& shift, std::string* error) const {
  for (const IndexCheck& check : index_checks_) {
    const int64_t n = Size(check.operand_var, shift);
    const int64_t w = check.window_var >= 0 ? Size(check.window_var, shift) : check.window_size;
    if ((check.max_index + w <= n) != check.in_bounds) {
      *error = absl::StrCat(check.instr->name(), ": constant index ", check.max_index,
                            check.in_bounds ? " would leave" : " would enter",
                            " the bounds of the shrunk dim");
      return false;
    }
  }
  for (const HloInstruction* topk : topk_) {
    const Shape& in = topk->operand(0)->shape();
    const Shape& out = topk->shape().tuple_shapes()[0];
    if (out.dimensions(out.rank() - 1) > in.dimensions(in.rank() - 1)) {
      *error = absl::StrCat(topk->name(), ": top-k larger than its operand");
      return false;
    }
  }
  return true;
}

bool Shrinker::CheckShapes(std::string* error) const {
  for (const InstrInfo& info : infos_) {
    const HloInstruction* instr = info.instr;
    if (instr->shape() == info.orig_shape && instr->opcode() != HloOpcode::kConvolution) {
      bool operands_same = true;
      for (const HloInstruction* operand : instr->operands()) {
        if (!(operand->shape() == infos_[index_.at(operand)].orig_shape)) operands_same = false;
      }
      if (operands_same) continue;
    }
    if (instr->opcode() == HloOpcode::kReshape || instr->opcode() == HloOpcode::kBitcast) {
      if (instr->shape().IsArray() && instr->operand(0)->shape().IsArray() &&
          instr->shape().ElementCount() != instr->operand(0)->shape().ElementCount()) {
        *error = absl::StrCat(instr->name(), ": reshape element counts differ");
        return false;
      }
      continue;
    }
    absl::StatusOr<Shape> inferred = InferShape(*instr, num_partitions_, work_->replica_count());
    if (!inferred.ok()) {
      if (absl::IsUnimplemented(inferred.status())) continue;
      *error = absl::StrCat(instr->name(), ": ", inferred.status().message());
      return false;
    }
    if (!inferred->Compatible(instr->shape())) {
      *error = absl::StrCat(instr->name(), ": shape ", instr->shape().ToString(false),
                            " but inferred ", inferred->ToString(false));
      return false;
    }
  }
  return true;
}

bool Shrinker::Apply(const std::vector<int64_t>& shift, std::string* error) {
  // Which instructions change shape (their attributes may also depend on their operands').
  const std::vector<char> resized = ResizedInstructions(shift);
  for (const InstrInfo& info : infos_) {
    if (!ApplyInstruction(info, shift, resized, error)) return false;
  }
  // Convolution windows follow the kernel's spatial dims.
  ApplyConvolutionWindows();
  // Outfeeds name the shape they send.
  ApplyOutfeedShapes();
  // Checks shape inference does not know, then every instruction must still check.
  return CheckBounds(shift, error) && CheckShapes(error);
}

std::vector<int64_t> Shrinker::Candidates(int64_t c, int64_t current_shift, bool soft) const {
  const ClassInfo& info = classes_[c];
  const int64_t m = info.max_orig;
  const int64_t cur = m + current_shift;
  const int64_t floor = soft ? info.soft_min_shift : info.min_shift;
  std::vector<int64_t> out;
  auto add = [&](int64_t target) {
    int64_t s = target - m;
    s = FloorDiv(s, info.lcm) * info.lcm;
    if (s < floor) s = floor;
    if (s < current_shift && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  for (int64_t div : {2, 4, 8, 16, 32, 64, 128, 256}) add(cur / div);
  add(cur * 3 / 4);
  add(cur * 7 / 8);
  add(0);
  add(cur - 1);
  return out;
}

void Shrinker::FreeAncestors(int64_t c, std::set<int64_t>* out, std::set<int64_t>* seen) const {
  if (!seen->insert(c).second) return;
  const ClassInfo& info = classes_[c];
  if (info.frozen) return;
  if (info.derivations.empty()) {
    if (info.min_shift < 0) out->insert(c);
    return;
  }
  for (int64_t di : info.derivations) {
    for (int64_t v : derivations_[di].in) FreeAncestors(class_of_[v], out, seen);
  }
}

void Shrinker::FrozenReasons(int64_t c, std::vector<std::string>* out,
                             std::set<int64_t>* seen) const {
  if (!seen->insert(c).second) return;
  const ClassInfo& info = classes_[c];
  for (const std::string& r : info.reasons) {
    if (std::find(out->begin(), out->end(), r) == out->end()) out->push_back(r);
  }
  for (int64_t di : info.derivations) {
    for (int64_t v : derivations_[di].in) FrozenReasons(class_of_[v], out, seen);
  }
}

absl::Status Shrinker::Search() {
  std::vector<int64_t> free(classes_.size(), 0);
  std::vector<int64_t> shift;
  std::string error;
  if (!Evaluate(free, &shift, &error)) {
    return absl::InternalError(
        absl::StrCat("shape reduction: original sizes inconsistent: ", error));
  }
  struct Array {
    int64_t instr;
    int64_t leaf;
    int64_t elements;
  };
  auto arrays_of = [&](const std::vector<int64_t>& sh, int64_t* total) {
    std::vector<Array> arrays;
    *total = 0;
    for (size_t i = 0; i < infos_.size(); ++i) {
      const InstrInfo& info = infos_[i];
      for (size_t l = 0; l < info.leaves.size(); ++l) {
        if (!info.leaves[l].IsArray()) continue;
        __int128 e = 1;
        for (int64_t d = 0; d < info.leaves[l].rank(); ++d) {
          e *= Size(info.leaf_base[l] + d, sh);
          if (e > (__int128{1} << 62)) e = __int128{1} << 62;
        }
        const int64_t elements = static_cast<int64_t>(e);
        *total = std::min<int64_t>(int64_t{1} << 62, *total + elements);
        arrays.push_back({static_cast<int64_t>(i), static_cast<int64_t>(l), elements});
      }
    }
    std::sort(arrays.begin(), arrays.end(),
              [](const Array& a, const Array& b) { return a.elements > b.elements; });
    return arrays;
  };
  std::string last_error;
  for (int step = 0; step < kMaxSteps; ++step) {
    int64_t total = 0;
    std::vector<Array> arrays = arrays_of(shift, &total);
    const bool over_total = total > options_.max_total_elements;
    std::vector<Array> targets;
    for (const Array& a : arrays) {
      if (a.elements > options_.max_elements_per_array || over_total) targets.push_back(a);
    }
    if (targets.empty()) {
      if (step > 0) changed_ = true;
      if (!Apply(shift, &error)) {
        return absl::InternalError(absl::StrCat("shape reduction: ", error));
      }
      return absl::OkStatus();
    }
    bool progressed = false;
    // First pass: no dim below min(its size, kSoftFloor); second pass: down to the hard bounds.
    for (int pass = 0; pass < 2 && !progressed; ++pass) {
      for (const Array& a : targets) {
        const InstrInfo& info = infos_[a.instr];
        std::set<int64_t> cands;
        std::set<int64_t> seen;
        for (int64_t d = 0; d < info.leaves[a.leaf].rank(); ++d) {
          FreeAncestors(class_of_[info.leaf_base[a.leaf] + d], &cands, &seen);
        }
        std::vector<int64_t> order(cands.begin(), cands.end());
        std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return classes_[x].max_orig + shift[x] > classes_[y].max_orig + shift[y];
        });
        for (int64_t c : order) {
          for (int64_t s : Candidates(c, shift[c], /*soft=*/pass == 0)) {
            std::vector<int64_t> trial_free(classes_.size(), 0);
            for (int64_t f : free_classes_) trial_free[f] = shift[f];
            trial_free[c] = s;
            std::vector<int64_t> trial;
            if (!Evaluate(trial_free, &trial, &error)) {
              last_error = error;
              continue;
            }
            if (!Apply(trial, &error)) {
              last_error = error;
              continue;
            }
            shift = std::move(trial);
            progressed = true;
            break;
          }
          if (progressed) break;
        }
        if (progressed) break;
        if (pass == 1 && a.elements > options_.max_elements_per_array) {
          // The largest array over the budget cannot shrink: say why.
          std::vector<std::string> reasons;
          std::set<int64_t> seen2;
          for (int64_t d = 0; d < info.leaves[a.leaf].rank(); ++d) {
            const int64_t v = info.leaf_base[a.leaf] + d;
            if (Size(v, shift) > 1) FrozenReasons(class_of_[v], &reasons, &seen2);
          }
          const std::string what =
              absl::StrCat(info.instr->name(), " ", info.leaves[a.leaf].ToString(false), " (now ",
                           a.elements, " elements, budget ", options_.max_elements_per_array, ")");
          if (!reasons.empty()) {
            return absl::UnimplementedError(
                absl::StrCat("shape reduction: ", reasons[0], ": cannot shrink ", what));
          }
          return absl::UnimplementedError(
              absl::StrCat("shape reduction: no consistent smaller size: cannot shrink ", what,
                           last_error.empty() ? "" : absl::StrCat("; last attempt: ", last_error)));
        }
      }
    }
    if (!progressed) {
      return absl::UnimplementedError(
          absl::StrCat("shape reduction: total size: cannot bring ", total, " elements under ",
                       options_.max_total_elements,
                       last_error.empty() ? "" : absl::StrCat("; last attempt: ", last_error)));
    }
  }
  return absl::UnimplementedError("shape reduction: search limit: too many steps");
}

}  // namespace

absl::StatusOr<ShrinkResult> ShrinkModuleShapes(const HloModule& global,
                                                const ShrinkOptions& options) {
  absl::Status verified = VerifyModule(global);
  if (!verified.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape reduction: input does not verify: ", verified.message()));
  }
  std::unique_ptr<HloModule> work = global.Clone();
  const int64_t num_partitions =
      options.num_partitions > 0 ? options.num_partitions : global.num_partitions();
  Shrinker shrinker(work.get(), options, num_partitions);
  absl::Status analyzed = shrinker.Analyze();
  if (!analyzed.ok()) return analyzed;
  // Original arrays for the description.
  std::vector<std::pair<const HloInstruction*, Shape>> before;
  for (const auto& comp : work->computations()) {
    for (const auto& instr : comp->instructions()) before.emplace_back(instr.get(), instr->shape());
  }
  absl::Status searched = shrinker.Search();
  if (!searched.ok()) return searched;
  ShrinkResult result;
  result.shrunk = shrinker.changed();
  if (result.shrunk) {
    std::vector<std::string> entries;
    int64_t changed = 0;
    int64_t arrays = 0;
    // Entry parameters first, then everything else.
    std::vector<std::pair<const HloInstruction*, Shape>> ordered;
    for (const auto& p : before) {
      if (p.first->opcode() == HloOpcode::kParameter && p.first->parent() == work->entry()) {
        ordered.push_back(p);
      }
    }
    for (const auto& p : before) {
      if (!(p.first->opcode() == HloOpcode::kParameter && p.first->parent() == work->entry())) {
        ordered.push_back(p);
      }
    }
    for (const auto& [instr, shape] : ordered) {
      std::vector<Shape> old_leaves;
      std::vector<Shape> new_leaves;
      CollectLeaves(shape, &old_leaves);
      CollectLeaves(instr->shape(), &new_leaves);
      for (size_t l = 0; l < old_leaves.size() && l < new_leaves.size(); ++l) {
        if (!old_leaves[l].IsArray()) continue;
        ++arrays;
        if (old_leaves[l].dimensions() != new_leaves[l].dimensions()) ++changed;
      }
      if (instr->shape() == shape) continue;
      if (entries.size() < 6) {
        entries.push_back(absl::StrCat(shape.ToString(false), " -> ",
                                       instr->shape().ToString(false), " (", instr->name(), ")"));
      }
    }
    // A shape written in the header no longer matches.
    auto& header = work->mutable_raw_header_attributes();
    const size_t header_size = header.size();
    header.erase(
        std::remove_if(header.begin(), header.end(),
                       [](const RawAttribute& a) { return a.name == "entry_computation_layout"; }),
        header.end());
    result.description = absl::StrCat(
        "dims shrunk: ", absl::StrJoin(entries, ", "), entries.size() >= 6 ? ", ..." : "", "; ",
        changed, " of ", arrays, " arrays changed",
        header.size() != header_size ? "; entry_computation_layout dropped" : "");
  }
  absl::Status ok = VerifyModule(*work);
  if (!ok.ok()) {
    return absl::InternalError(
        absl::StrCat("shape reduction: shrunk module does not verify: ", ok.message()));
  }
  result.module = std::move(work);
  return result;
}

}  // namespace spmdcheck::oracle
