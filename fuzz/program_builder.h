// The program generator's builder (fuzz/program_gen.h), shared by program_gen.cc (the op steps,
// loops, the root, the drivers) and program_gen_patterns.cc (the pattern steps and the op families
// they brought: convolution, sort, TopK, reduce-window, manual regions). Internal: not part of the
// generator's interface.
#ifndef SPMDCHECK_FUZZ_PROGRAM_BUILDER_H_
#define SPMDCHECK_FUZZ_PROGRAM_BUILDER_H_

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fuzz/gen.h"
#include "fuzz/pipeline_gen.h"
#include "fuzz/program_gen.h"
#include "ir/hlo_printer.h"
#include "ir/mesh.h"
#include "ir/shape_inference.h"

namespace spmdcheck::fuzz::program_gen_internal {

class Choices {
 public:
  explicit Choices(absl::Span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t Byte() {
    const uint64_t b = pos_ < bytes_.size() ? bytes_[pos_] : 0;
    ++pos_;
    return b;
  }
  // Uniform-ish in [0, n).
  int64_t Below(int64_t n) {
    if (n <= 1) return 0;
    uint64_t v = Byte();
    if (n > 256) v = v * 256 + Byte();
    return static_cast<int64_t>(v % static_cast<uint64_t>(n));
  }
  // In [lo, hi] (lo when hi < lo).
  int64_t Range(int64_t lo, int64_t hi) { return hi <= lo ? lo : lo + Below(hi - lo + 1); }
  bool Percent(int p) { return Below(100) < p; }
  uint64_t Seed() {
    uint64_t s = 0;
    for (int i = 0; i < 3; ++i) s = s * 256 + Byte();
    return s;
  }

 private:
  absl::Span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

inline int64_t Product(absl::Span<const int64_t> v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

inline bool IsNumeric(PrimitiveType t) {
  return IsFloatingType(t) || IsSignedIntegralType(t) || IsUnsignedIntegralType(t);
}

inline constexpr PrimitiveType kValueTypes[] = {PrimitiveType::kF32, PrimitiveType::kS32,
                                                PrimitiveType::kBF16};

// The instructions a step added, to undo the step when one of them turns out invalid.
struct Checkpoint {
  int64_t instructions = 0;
  size_t pool = 0;
  int64_t params = 0;
  size_t pending = 0;
};

class Builder {
 public:
  // `one_mesh`: every sharding comes from `mesh` (ProgramGenOptions::one_mesh_percent).
  Builder(const ProgramGenOptions& options, Mesh mesh, PrimitiveType base_type,
          bool one_mesh = false)
      : options_(options), mesh_(std::move(mesh)), base_type_(base_type), one_mesh_(one_mesh) {
    module_ = std::make_unique<HloModule>("generated");
    module_->set_num_partitions(mesh_.num_devices());
    auto entry = std::make_unique<HloComputation>("main");
    entry_ = module_->AddComputation(std::move(entry));
    module_->set_entry(entry_);
  }

  int64_t EntryCount() const { return entry_->instruction_count(); }
  const std::vector<HloInstruction*>& pool() const { return pool_; }

  Checkpoint Save() const {
    return Checkpoint{entry_->instruction_count(), pool_.size(), num_params_, pending_.size()};
  }
  void Restore(const Checkpoint& c) {
    entry_->TruncateInstructions(c.instructions);
    pool_.resize(c.pool);
    num_params_ = c.params;
    for (size_t i = c.pending; i < pending_.size(); ++i) {
      for (auto it = scalar_comps_.begin(); it != scalar_comps_.end();) {
        if (it->second == pending_[i].get()) {
          scalar_comps_.erase(it++);
        } else {
          ++it;
        }
      }
    }
    pending_.resize(c.pending);
  }
  void Commit() {
    for (auto& c : pending_) module_->AddComputation(std::move(c));
    pending_.clear();
  }

  // Adds `instr` to `comp` after checking its shape against shape inference: nullptr when the
  // shapes differ or inference rejects the instruction. Ops inference does not model (it answers
  // Unimplemented: custom-calls such as TopK or SPMDFullToShardShape) keep the shape the pattern
  // gave them; the verifier still checks the whole program afterwards.
  HloInstruction* Emit(HloComputation* comp, std::unique_ptr<HloInstruction> instr) {
    absl::StatusOr<Shape> inferred = InferShape(*instr, mesh_.num_devices(), 1);
    if (inferred.ok()) {
      if (!instr->shape().Compatible(*inferred)) return nullptr;
    } else if (!absl::IsUnimplemented(inferred.status())) {
      return nullptr;
    }
    const Shape& s = instr->shape();
    if (s.IsArray() && (s.ElementCount() > options_.max_elements || s.ElementCount() < 1)) {
      return nullptr;
    }
    return comp->AddInstruction(std::move(instr));
  }

  std::unique_ptr<HloInstruction> Make(HloOpcode op, absl::string_view stem, Shape shape,
                                       std::vector<HloInstruction*> operands = {}) {
    auto instr =
        std::make_unique<HloInstruction>(op, absl::StrCat(stem, ".", next_id_++), std::move(shape));
    instr->set_operands(std::move(operands));
    return instr;
  }

  // Emits into the entry computation, adds an array result to the operand pool and maybe gives
  // it a sharding.
  HloInstruction* EmitEntry(std::unique_ptr<HloInstruction> instr, Choices& ch,
                            bool add_to_pool = true) {
    HloInstruction* out = Emit(entry_, std::move(instr));
    if (out == nullptr) return nullptr;
    MaybeShard(out, ch);
    if (add_to_pool && out->shape().IsArray()) pool_.push_back(out);
    return out;
  }

  void MaybeShard(HloInstruction* instr, Choices& ch) {
    if (!ch.Percent(options_.sharding_percent)) return;
    // A one-mesh program leaves tuple-shaped custom-calls (TopK) to propagation: in StableHLO
    // they have one tuple-typed result, which a Shardy sharding cannot describe.
    if (one_mesh_ && instr->opcode() == HloOpcode::kCustomCall && instr->shape().IsTuple()) return;
    const uint64_t seed = ch.Seed();
    const int size = static_cast<int>(ch.Below(101));
    std::optional<HloSharding> s = RandomSharding(instr->shape(), seed, size);
    if (s) instr->set_sharding(*std::move(s));
  }

  // A sharding from fuzz/gen.h for `shape` on the mesh; manual / maximal ones become replicated
  // when the options exclude them.
  std::optional<HloSharding> RandomSharding(const Shape& shape, uint64_t seed, int size) {
    HloSharding s = (one_mesh_ ? GenOneMeshShardingFor(shape, mesh_)
                               : GenShardingFor(shape, mesh_))(rc::Random(seed), size)
                        .value();
    return Allowed(s);
  }

  HloSharding Allowed(const HloSharding& s) const {
    if (s.IsTuple()) {
      std::vector<HloSharding> elements;
      for (const HloSharding& e : s.tuple_elements()) elements.push_back(Allowed(e));
      return HloSharding::Tuple(std::move(elements));
    }
    if (!options_.allow_manual && (s.IsManual() || (s.IsTiled() && s.HasManualSubgroup()))) {
      return HloSharding::Replicate();
    }
    if (!options_.allow_maximal && s.IsMaximal()) return HloSharding::Replicate();
    return s;
  }

  // ---- Operand choice -------------------------------------------------------------------------

  // Recent values first: choice 0 is the newest value.
  HloInstruction* Pick(Choices& ch) {
    if (forced_pick_ != nullptr) {
      HloInstruction* out = forced_pick_;
      forced_pick_ = nullptr;
      return out;
    }
    return pool_[pool_.size() - 1 - static_cast<size_t>(ch.Below(pool_.size()))];
  }

  // A value of exactly `shape`: `self` (when it fits), another value of the pool, a new
  // parameter or a broadcast constant.
  HloInstruction* ValueOfShape(const Shape& shape, HloInstruction* self, Choices& ch) {
    const int64_t form = ch.Below(4);
    if (form == 0 && self != nullptr && self->shape().Compatible(shape)) return self;
    if (form <= 1) {
      std::vector<HloInstruction*> same;
      for (HloInstruction* v : pool_) {
        if (v != self && v->shape().Compatible(shape)) same.push_back(v);
      }
      if (!same.empty()) return same[same.size() - 1 - ch.Below(same.size())];
    }
    if (form == 3) {
      HloInstruction* c = ScalarConstant(shape.element_type(), ch.Range(-3, 3), ch);
      if (c == nullptr) return nullptr;
      std::vector<int64_t> none;
      auto b = Make(HloOpcode::kBroadcast, "broadcast", shape, {c});
      b->mutable_attrs().dimensions = none;
      return EmitEntry(std::move(b), ch, /*add_to_pool=*/false);
    }
    return Parameter(shape, ch);
  }

  HloInstruction* Parameter(const Shape& shape, Choices& ch) {
    auto p = Make(HloOpcode::kParameter, "param", shape);
    p->set_parameter_number(num_params_);
    HloInstruction* out = EmitEntry(std::move(p), ch);
    if (out != nullptr) ++num_params_;
    return out;
  }

  HloInstruction* ScalarConstant(PrimitiveType type, double value, Choices& ch) {
    Literal literal(Shape::Scalar(type));
    if (IsFloatingType(type)) {
      literal.SetDouble(0, value);
    } else {
      literal.SetInt64(0, std::isinf(value) ? (value < 0 ? std::numeric_limits<int64_t>::min()
                                                         : std::numeric_limits<int64_t>::max())
                                            : static_cast<int64_t>(value));
    }
    auto c = Make(HloOpcode::kConstant, "constant", Shape::Scalar(type));
    c->set_literal(std::move(literal));
    return EmitEntry(std::move(c), ch, /*add_to_pool=*/false);
  }

  // The identity of max for `type`.
  static double Lowest(PrimitiveType type) {
    if (IsFloatingType(type)) return -std::numeric_limits<double>::infinity();
    switch (type) {
      case PrimitiveType::kS32:
        return std::numeric_limits<int32_t>::min();
      case PrimitiveType::kS64:
        return -std::numeric_limits<double>::infinity();
      default:
        return 0;
    }
  }

  PrimitiveType RandomType(Choices& ch) {
    // Mostly the program's base type, so binary ops find partners.
    if (ch.Below(4) != 0) return base_type_;
    return kValueTypes[ch.Below(std::size(kValueTypes))];
  }

  std::vector<int64_t> RandomDims(Choices& ch, int64_t min_rank) {
    const int64_t rank = ch.Range(min_rank, options_.max_rank);
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < rank; ++i) dims.push_back(1 + ch.Below(options_.max_dim));
    while (Product(dims) > options_.max_elements) {
      auto it = std::max_element(dims.begin(), dims.end());
      *it = (*it + 1) / 2;
    }
    return dims;
  }

  // A scalar computation `(x, y) -> op(x, y)` (op kAdd / kMaximum) for `type`.
  HloComputation* ScalarComputation(HloOpcode op, PrimitiveType type) {
    const std::string name =
        absl::StrCat(HloOpcodeString(op) == "add" ? "add" : "max", "_", PrimitiveTypeName(type));
    auto it = scalar_comps_.find(name);
    if (it != scalar_comps_.end()) return it->second;
    auto comp = std::make_unique<HloComputation>(name);
    const Shape scalar = Shape::Scalar(type);
    auto x = Make(HloOpcode::kParameter, "x", scalar);
    x->set_parameter_number(0);
    auto y = Make(HloOpcode::kParameter, "y", scalar);
    y->set_parameter_number(1);
    HloInstruction* xp = comp->AddInstruction(std::move(x));
    HloInstruction* yp = comp->AddInstruction(std::move(y));
    HloInstruction* r =
        comp->AddInstruction(Make(op, op == HloOpcode::kAdd ? "add" : "maximum", scalar, {xp, yp}));
    comp->set_root(r);
    HloComputation* out = comp.get();
    pending_.push_back(std::move(comp));
    scalar_comps_[name] = out;
    return out;
  }

  // ---- Steps ----------------------------------------------------------------------------------

  bool Step(GenOp op, Choices& ch);

  bool Unary(Choices& ch) {
    HloInstruction* a = Pick(ch);
    const HloOpcode op = ch.Below(2) == 0 ? HloOpcode::kNegate : HloOpcode::kAbs;
    if (!IsNumeric(a->shape().element_type())) return false;
    return EmitEntry(Make(op, HloOpcodeString(op), a->shape(), {a}), ch) != nullptr;
  }

  bool Binary(Choices& ch) {
    static constexpr HloOpcode kOps[] = {HloOpcode::kAdd, HloOpcode::kMultiply,
                                         HloOpcode::kSubtract, HloOpcode::kMaximum};
    const HloOpcode op = kOps[ch.Below(4)];
    HloInstruction* a = Pick(ch);
    HloInstruction* b = ValueOfShape(a->shape(), a, ch);
    if (b == nullptr) return false;
    if (ch.Below(2) == 1) std::swap(a, b);
    return EmitEntry(Make(op, HloOpcodeString(op), a->shape(), {a, b}), ch) != nullptr;
  }

  bool Convert(Choices& ch) {
    HloInstruction* a = Pick(ch);
    Shape s = a->shape();
    PrimitiveType t = kValueTypes[ch.Below(std::size(kValueTypes))];
    if (t == s.element_type()) t = kValueTypes[(ch.Below(2) + 1) % std::size(kValueTypes)];
    s.set_element_type(t);
    return EmitEntry(Make(HloOpcode::kConvert, "convert", s, {a}), ch) != nullptr;
  }

  bool CompareSelect(Choices& ch) {
    HloInstruction* a = Pick(ch);
    HloInstruction* b = ValueOfShape(a->shape(), a, ch);
    if (b == nullptr) return false;
    Shape pred = a->shape();
    pred.set_element_type(PrimitiveType::kPred);
    auto cmp = Make(HloOpcode::kCompare, "compare", pred, {a, b});
    cmp->mutable_attrs().direction = static_cast<ComparisonDirection>(ch.Below(6));
    HloInstruction* c = EmitEntry(std::move(cmp), ch, /*add_to_pool=*/false);
    if (c == nullptr) return false;
    if (ch.Below(2) == 1) std::swap(a, b);
    return EmitEntry(Make(HloOpcode::kSelect, "select", a->shape(), {c, a, b}), ch) != nullptr;
  }

  bool Broadcast(Choices& ch) {
    HloInstruction* a = Pick(ch);
    const Shape& s = a->shape();
    const int64_t r = s.rank();
    const int64_t extra = ch.Range(0, std::min<int64_t>(2, options_.max_rank - r));
    const int64_t out_rank = r + extra;
    // Positions of the new dims: `extra` distinct positions out of out_rank.
    std::vector<bool> is_new(out_rank, false);
    for (int64_t i = 0; i < extra; ++i) {
      int64_t k = ch.Below(out_rank - i);
      for (int64_t p = 0; p < out_rank; ++p) {
        if (is_new[p]) continue;
        if (k-- == 0) {
          is_new[p] = true;
          break;
        }
      }
    }
    std::vector<int64_t> dims, mapping;
    int64_t next = 0;
    for (int64_t p = 0; p < out_rank; ++p) {
      if (is_new[p]) {
        dims.push_back(1 + ch.Below(options_.max_dim));
      } else {
        mapping.push_back(p);
        dims.push_back(s.dimensions(next++));
      }
    }
    for (int64_t p = 0; p < out_rank && Product(dims) > options_.max_elements; ++p) {
      if (is_new[p]) dims[p] = 1;
    }
    auto b = Make(HloOpcode::kBroadcast, "broadcast", Shape::Array(s.element_type(), dims), {a});
    b->mutable_attrs().dimensions = mapping;
    return EmitEntry(std::move(b), ch) != nullptr;
  }

  bool Reshape(Choices& ch) {
    HloInstruction* a = Pick(ch);
    const Shape& s = a->shape();
    std::vector<int64_t> dims = s.dimensions();
    const int64_t r = s.rank();
    switch (ch.Below(6)) {
      case 0:  // Merge two adjacent dims.
        if (r >= 2) {
          const int64_t i = ch.Below(r - 1);
          dims[i] *= dims[i + 1];
          dims.erase(dims.begin() + i + 1);
          break;
        }
        [[fallthrough]];
      case 1: {  // Split a dim into two factors.
        std::vector<int64_t> splittable;
        for (int64_t i = 0; i < r; ++i) {
          if (dims[i] >= 4 || dims[i] == 2 || dims[i] == 3) splittable.push_back(i);
        }
        if (!splittable.empty() && r < options_.max_rank) {
          const int64_t i = splittable[ch.Below(splittable.size())];
          std::vector<int64_t> divisors;
          for (int64_t d = 1; d <= dims[i]; ++d) {
            if (dims[i] % d == 0) divisors.push_back(d);
          }
          const int64_t f = divisors[ch.Below(divisors.size())];
          const int64_t rest = dims[i] / f;
          dims[i] = f;
          dims.insert(dims.begin() + i + 1, rest);
          break;
        }
        [[fallthrough]];
      }
      case 2:  // Insert a size-1 dim.
        if (r < options_.max_rank) {
          dims.insert(dims.begin() + ch.Below(r + 1), 1);
          break;
        }
        [[fallthrough]];
      case 3: {  // Remove a size-1 dim.
        auto it = std::find(dims.begin(), dims.end(), 1);
        if (it != dims.end()) {
          dims.erase(it);
          break;
        }
        [[fallthrough]];
      }
      case 4:  // Flatten.
        dims = {s.ElementCount()};
        break;
      default: {  // Refactor the element count into random dims.
        int64_t n = s.ElementCount();
        dims.clear();
        const int64_t rank = ch.Range(1, options_.max_rank);
        for (int64_t i = 0; i + 1 < rank; ++i) {
          std::vector<int64_t> divisors;
          for (int64_t d = 1; d <= n; ++d) {
            if (n % d == 0) divisors.push_back(d);
          }
          const int64_t f = divisors[ch.Below(divisors.size())];
          dims.push_back(f);
          n /= f;
        }
        dims.push_back(n);
        break;
      }
    }
    return EmitEntry(
               Make(HloOpcode::kReshape, "reshape", Shape::Array(s.element_type(), dims), {a}),
               ch) != nullptr;
  }

  std::vector<int64_t> Permutation(int64_t n, Choices& ch) {
    std::vector<int64_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t i = 0; i + 1 < n; ++i) std::swap(perm[i], perm[i + ch.Below(n - i)]);
    return perm;
  }

  bool Transpose(Choices& ch) {
    HloInstruction* a = Pick(ch);
    const Shape& s = a->shape();
    const std::vector<int64_t> perm = Permutation(s.rank(), ch);
    std::vector<int64_t> dims;
    for (int64_t p : perm) dims.push_back(s.dimensions(p));
    auto t = Make(HloOpcode::kTranspose, "transpose", Shape::Array(s.element_type(), dims), {a});
    t->mutable_attrs().dimensions = perm;
    return EmitEntry(std::move(t), ch) != nullptr;
  }

  bool Slice(Choices& ch) {
    HloInstruction* a = Pick(ch);
    const Shape& s = a->shape();
    if (s.rank() == 0) return false;
    std::vector<SliceDim> slice;
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < s.rank(); ++i) {
      const int64_t d = s.dimensions(i);
      SliceDim sd;
      sd.start = ch.Below(d);
      sd.limit = d - ch.Below(d - sd.start);
      sd.stride = 1 + (ch.Below(4) == 3 ? ch.Below(3) : 0);
      slice.push_back(sd);
      dims.push_back((sd.limit - sd.start + sd.stride - 1) / sd.stride);
    }
    auto out = Make(HloOpcode::kSlice, "slice", Shape::Array(s.element_type(), dims), {a});
    out->mutable_attrs().slice = slice;
    return EmitEntry(std::move(out), ch) != nullptr;
  }

  bool Pad(Choices& ch) {
    HloInstruction* a = Pick(ch);
    const Shape& s = a->shape();
    if (s.rank() == 0) return false;
    HloInstruction* value = ScalarConstant(s.element_type(), ch.Range(-1, 1), ch);
    if (value == nullptr) return false;
    std::vector<PadDim> padding;
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < s.rank(); ++i) {
      const int64_t d = s.dimensions(i);
      PadDim p;
      const bool forced = i == pad_dim_;
      p.interior = (forced && pad_force_ == 2) || ch.Below(4) == 3 ? ch.Range(1, 2) : 0;
      const int64_t base = d + (d - 1) * p.interior;
      if (forced && pad_force_ == 1) {
        // At least one negative side, keeping at least one element.
        if (base < 2) return false;
        p.low = ch.Below(2) == 0 ? -ch.Range(1, std::min<int64_t>(base - 1, 3)) : ch.Below(2);
        const int64_t after_low = base + p.low;
        p.high = p.low >= 0 || ch.Below(2) == 0
                     ? -ch.Range(1, std::min<int64_t>(std::max<int64_t>(after_low - 1, 1), 3))
                     : ch.Below(2);
        if (after_low + p.high < 1) p.high = 1 - after_low;
        padding.push_back(p);
        dims.push_back(after_low + p.high);
        continue;
      }
      // Negative padding keeps at least one element.
      p.low = ch.Below(4) == 3 ? -ch.Below(std::min<int64_t>(base - 1, 3) + 1) : ch.Below(3);
      const int64_t after_low = base + p.low;
      p.high = ch.Below(4) == 3 ? -ch.Below(std::min<int64_t>(after_low - 1, 3) + 1) : ch.Below(3);
      padding.push_back(p);
      dims.push_back(after_low + p.high);
    }
    auto out = Make(HloOpcode::kPad, "pad", Shape::Array(s.element_type(), dims), {a, value});
    out->mutable_attrs().padding = padding;
    return EmitEntry(std::move(out), ch) != nullptr;
  }

  bool Concatenate(Choices& ch) {
    HloInstruction* a = Pick(ch);
    const Shape& s = a->shape();
    if (s.rank() == 0) return false;
    const int64_t dim = concat_dim_ >= 0 ? concat_dim_ : ch.Below(s.rank());
    const int64_t count = ch.Range(2, 3);
    std::vector<HloInstruction*> operands = {a};
    std::vector<int64_t> dims = s.dimensions();
    for (int64_t i = 1; i < count; ++i) {
      HloInstruction* b = nullptr;
      const int64_t form = ch.Below(3);
      if (form == 0) {
        b = a;
      } else if (form == 1) {
        for (HloInstruction* v : pool_) {
          const Shape& vs = v->shape();
          if (v == a || vs.element_type() != s.element_type() || vs.rank() != s.rank()) continue;
          bool match = true;
          for (int64_t k = 0; k < s.rank(); ++k) match &= k == dim || vs.dimensions(k) == dims[k];
          if (match) b = v;
        }
      }
      if (b == nullptr) {
        std::vector<int64_t> bd = s.dimensions();
        bd[dim] = 1 + ch.Below(options_.max_dim);
        b = Parameter(Shape::Array(s.element_type(), bd), ch);
        if (b == nullptr) return false;
      }
      operands.push_back(b);
    }
    if (ch.Below(2) == 1) std::reverse(operands.begin(), operands.end());
    dims[dim] = 0;
    for (HloInstruction* o : operands) dims[dim] += o->shape().dimensions(dim);
    auto out = Make(HloOpcode::kConcatenate, "concatenate", Shape::Array(s.element_type(), dims),
                    operands);
    out->mutable_attrs().dimensions = std::vector<int64_t>{dim};
    return EmitEntry(std::move(out), ch) != nullptr;
  }

  bool Reverse(Choices& ch) {
    HloInstruction* a = Pick(ch);
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < a->shape().rank(); ++i) {
      if (ch.Below(2) == 1) dims.push_back(i);
    }
    if (dims.empty() && a->shape().rank() > 0) dims.push_back(0);
    auto out = Make(HloOpcode::kReverse, "reverse", a->shape(), {a});
    out->mutable_attrs().dimensions = dims;
    return EmitEntry(std::move(out), ch) != nullptr;
  }

  bool Reduce(Choices& ch) {
    HloInstruction* a = Pick(ch);
    const Shape& s = a->shape();
    if (s.rank() == 0) return false;
    const PrimitiveType t = s.element_type();
    const bool is_max = ch.Below(2) == 1;
    std::vector<int64_t> reduced, kept;
    for (int64_t i = 0; i < s.rank(); ++i) {
      if (ch.Below(2) == 0) {
        reduced.push_back(i);
      } else {
        kept.push_back(s.dimensions(i));
      }
    }
    if (reduced.empty()) {
      reduced.push_back(s.rank() - 1);
      kept.pop_back();
    }
    HloInstruction* init = ScalarConstant(t, is_max ? Lowest(t) : 0, ch);
    if (init == nullptr) return false;
    HloComputation* fn = ScalarComputation(is_max ? HloOpcode::kMaximum : HloOpcode::kAdd, t);
    auto out = Make(HloOpcode::kReduce, "reduce", Shape::Array(t, kept), {a, init});
    out->mutable_attrs().dimensions = reduced;
    out->mutable_called().push_back(CalledComputations{"to_apply", {fn}, false});
    return EmitEntry(std::move(out), ch) != nullptr;
  }

  bool Dot(Choices& ch) {
    HloInstruction* a = Pick(ch);
    const Shape& s = a->shape();
    const int64_t r = s.rank();
    if (r == 0 || r > 3) return false;
    // Roles of lhs dims: 0 free, 1 contracting, 2 batch.
    std::vector<int> role(r, 0);
    int64_t contracting = ch.Below(5) == 4 ? 0 : 1 + (r >= 3 && ch.Below(4) == 3);
    if (dot_force_ == 1) contracting = std::max<int64_t>(contracting, 1);
    if (dot_force_ == 2 && contracting >= r) contracting = r - 1;
    const std::vector<int64_t> order = Permutation(r, ch);
    int64_t k = 0;
    for (; k < contracting && k < r; ++k) role[order[k]] = 1;
    if (k < r && (dot_force_ == 2 || ch.Below(3) == 2)) role[order[k++]] = 2;
    DotDimensionNumbers dn;
    std::vector<int64_t> rhs_dims;
    for (int64_t i = 0; i < r; ++i) {
      if (role[i] == 2) {
        dn.lhs_batch.push_back(i);
        dn.rhs_batch.push_back(static_cast<int64_t>(rhs_dims.size()));
        rhs_dims.push_back(s.dimensions(i));
      }
    }
    // Contracting and free rhs dims after the batch dims, interleaved at random.
    std::vector<std::pair<int64_t, int64_t>> rest;  // (lhs dim or -1 for free, size)
    for (int64_t i = 0; i < r; ++i) {
      if (role[i] == 1) rest.push_back({i, s.dimensions(i)});
    }
    // XLA's dot needs operands of rank >= 1: a rhs without batch or contracting dims gets a free
    // dim.
    const int64_t free = ch.Below(3) == 0 && !(rest.empty() && rhs_dims.empty()) ? 0 : 1;
    for (int64_t i = 0; i < free; ++i) rest.push_back({-1, 1 + ch.Below(options_.max_dim)});
    const std::vector<int64_t> perm = Permutation(rest.size(), ch);
    for (int64_t p : perm) {
      if (rest[p].first >= 0) {
        dn.lhs_contracting.push_back(rest[p].first);
        dn.rhs_contracting.push_back(static_cast<int64_t>(rhs_dims.size()));
      }
      rhs_dims.push_back(rest[p].second);
    }
    const Shape rhs_shape = Shape::Array(s.element_type(), rhs_dims);
    if (rhs_shape.ElementCount() > options_.max_elements) return false;
    HloInstruction* b = ValueOfShape(rhs_shape, a, ch);
    if (b == nullptr) return false;
    if (dot_force_ != 0) {
      // Shard the forced role's dim of lhs (and sometimes the matching rhs dim).
      const auto& lhs_dims = dot_force_ == 1 ? dn.lhs_contracting : dn.lhs_batch;
      const auto& rhs_dims_of = dot_force_ == 1 ? dn.rhs_contracting : dn.rhs_batch;
      if (lhs_dims.empty()) return false;
      const size_t pick = static_cast<size_t>(ch.Below(lhs_dims.size()));
      const int64_t side = ch.Below(3);  // 0 lhs, 1 rhs, 2 both.
      if (side != 1) a = ShardDim(a, lhs_dims[pick], ch);
      if (side != 0 && a != nullptr) b = ShardDim(b, rhs_dims_of[pick], ch);
      if (a == nullptr || b == nullptr) return false;
    }
    std::vector<int64_t> out_dims;
    for (int64_t i : dn.lhs_batch) out_dims.push_back(s.dimensions(i));
    for (int64_t i = 0; i < r; ++i) {
      if (role[i] == 0) out_dims.push_back(s.dimensions(i));
    }
    for (int64_t i = 0; i < rhs_shape.rank(); ++i) {
      if (std::find(dn.rhs_batch.begin(), dn.rhs_batch.end(), i) == dn.rhs_batch.end() &&
          std::find(dn.rhs_contracting.begin(), dn.rhs_contracting.end(), i) ==
              dn.rhs_contracting.end()) {
        out_dims.push_back(rhs_dims[i]);
      }
    }
    if (static_cast<int64_t>(out_dims.size()) > options_.max_rank) return false;
    auto out = Make(HloOpcode::kDot, "dot", Shape::Array(s.element_type(), out_dims), {a, b});
    out->mutable_attrs().dot_dimension_numbers = dn;
    return EmitEntry(std::move(out), ch) != nullptr;
  }

  // The element type of index operands: mostly s32, sometimes s64 or u32 (mixed signedness and
  // widths are where index arithmetic goes wrong).
  PrimitiveType IndexType(Choices& ch) {
    if (forced_index_type_.has_value()) return *forced_index_type_;
    static constexpr PrimitiveType kTypes[] = {PrimitiveType::kS32, PrimitiveType::kS32,
                                               PrimitiveType::kS32, PrimitiveType::kS64,
                                               PrimitiveType::kU32};
    return kTypes[ch.Below(std::size(kTypes))];
  }

  // Index operand of shape `dims`: a parameter (the oracle feeds it out-of-range values) or a
  // constant with values in [-2, bound + 2] (negative ones wrap for u32).
  HloInstruction* Indices(const std::vector<int64_t>& dims, int64_t bound, Choices& ch) {
    const Shape shape = Shape::Array(IndexType(ch), dims);
    if (ch.Below(2) == 0) return Parameter(shape, ch);
    Literal literal(shape);
    for (int64_t i = 0; i < shape.ElementCount(); ++i) {
      literal.SetInt64(i, ch.Range(-2, bound + 2));
    }
    auto c = Make(HloOpcode::kConstant, "constant", shape);
    c->set_literal(std::move(literal));
    return EmitEntry(std::move(c), ch, /*add_to_pool=*/false);
  }

  bool Gather(Choices& ch) {
    HloInstruction* a = Pick(ch);
    const Shape& s = a->shape();
    const int64_t r = s.rank();
    if (r == 0 || (gather_force_ == 2 && r < 2)) return false;
    const int64_t k = gather_force_ == 2 ? 1 : ch.Range(1, std::min<int64_t>(2, r));
    std::vector<int64_t> map = Permutation(r, ch);
    if (gather_force_ == 1) a = ShardDim(a, map[ch.Below(k)], ch);
    if (gather_force_ == 2) a = ShardDim(a, map[1 + ch.Below(r - 1)], ch);
    if (a == nullptr) return false;
    map.resize(k);
    std::vector<int64_t> slice_sizes = s.dimensions();
    std::vector<int64_t> collapsed;
    int64_t bound = 0;
    for (int64_t d : map) {
      if (ch.Below(2) == 0) {
        slice_sizes[d] = 1;
        collapsed.push_back(d);
      } else {
        slice_sizes[d] = 1 + ch.Below(s.dimensions(d));
      }
      bound = std::max(bound, s.dimensions(d) - slice_sizes[d]);
    }
    std::sort(collapsed.begin(), collapsed.end());
    const int64_t n = (gather_force_ == 3 ? 2 : 1) + ch.Below(4);
    HloInstruction* idx = Indices({n, k}, bound, ch);
    if (idx != nullptr && gather_force_ == 3) idx = ShardDim(idx, 0, ch);
    if (idx == nullptr) return false;
    const int64_t offset_count = r - static_cast<int64_t>(collapsed.size());
    const bool batch_first = ch.Below(2) == 0;
    GatherDimensionNumbers dn;
    std::vector<int64_t> out_dims;
    if (batch_first) out_dims.push_back(n);
    for (int64_t i = 0; i < offset_count; ++i) dn.offset_dims.push_back(batch_first ? i + 1 : i);
    for (int64_t d = 0; d < r; ++d) {
      if (std::find(collapsed.begin(), collapsed.end(), d) == collapsed.end()) {
        out_dims.push_back(slice_sizes[d]);
      }
    }
    if (!batch_first) out_dims.push_back(n);
    dn.collapsed_slice_dims = collapsed;
    dn.start_index_map = map;
    dn.index_vector_dim = 1;
    auto out =
        Make(HloOpcode::kGather, "gather", Shape::Array(s.element_type(), out_dims), {a, idx});
    out->mutable_attrs().gather_dimension_numbers = dn;
    out->mutable_attrs().gather_slice_sizes = slice_sizes;
    return EmitEntry(std::move(out), ch) != nullptr;
  }

  bool Scatter(Choices& ch) {
    HloInstruction* a = Pick(ch);
    const Shape& s = a->shape();
    const int64_t r = s.rank();
    if (r == 0) return false;
    const PrimitiveType t = s.element_type();
    const int64_t k = ch.Range(1, std::min<int64_t>(2, r));
    std::vector<int64_t> map = Permutation(r, ch);
    map.resize(k);
    if (scatter_force_ == 1) a = ShardDim(a, map[ch.Below(k)], ch);
    if (a == nullptr) return false;
    std::vector<int64_t> window = s.dimensions();
    std::vector<int64_t> inserted;
    int64_t bound = 0;
    const bool overwrite = scatter_force_ == 3;
    for (int64_t d : map) {
      if (overwrite || ch.Below(2) == 0) {
        window[d] = 1;
        inserted.push_back(d);
      } else {
        window[d] = 1 + ch.Below(s.dimensions(d));
      }
      bound = std::max(bound, s.dimensions(d) - window[d]);
    }
    std::sort(inserted.begin(), inserted.end());
    int64_t n = 1 + ch.Below(3);
    HloInstruction* idx = nullptr;
    if (overwrite) {
      // Distinct in-range index tuples: no two updates meet, so the combiner's order does not
      // matter (XLA leaves the order of colliding updates unspecified).
      int64_t positions = 1;
      for (int64_t d : map) positions *= s.dimensions(d);
      n = std::min(n, positions);
      const Shape shape = Shape::Array(IndexType(ch), {n, k});
      Literal literal(shape);
      const int64_t stride = 1 + ch.Below(positions);
      std::vector<int64_t> used;
      int64_t pos = ch.Below(positions);
      for (int64_t i = 0; i < n; ++i) {
        while (std::find(used.begin(), used.end(), pos) != used.end()) pos = (pos + 1) % positions;
        used.push_back(pos);
        int64_t rest = pos;
        for (int64_t j = 0; j < k; ++j) {
          literal.SetInt64(i * k + j, rest % s.dimensions(map[j]));
          rest /= s.dimensions(map[j]);
        }
        pos = (pos + stride) % positions;
      }
      auto c = Make(HloOpcode::kConstant, "constant", shape);
      c->set_literal(std::move(literal));
      idx = EmitEntry(std::move(c), ch, /*add_to_pool=*/false);
    } else {
      idx = Indices({n, k}, bound, ch);
    }
    if (idx == nullptr) return false;
    std::vector<int64_t> update_dims = {n};
    ScatterDimensionNumbers dn;
    for (int64_t d = 0; d < r; ++d) {
      if (std::find(inserted.begin(), inserted.end(), d) == inserted.end()) {
        dn.update_window_dims.push_back(static_cast<int64_t>(update_dims.size()));
        update_dims.push_back(window[d]);
      }
    }
    dn.inserted_window_dims = inserted;
    dn.scatter_dims_to_operand_dims = map;
    dn.index_vector_dim = 1;
    HloInstruction* updates = ValueOfShape(Shape::Array(t, update_dims), nullptr, ch);
    if (updates != nullptr && scatter_force_ == 2) {
      updates = ShardDim(updates, ch.Below(static_cast<int64_t>(update_dims.size())), ch);
    }
    if (updates == nullptr) return false;
    const bool is_max = ch.Below(2) == 1;
    HloComputation* fn = overwrite
                             ? Overwrite(t)
                             : ScalarComputation(is_max ? HloOpcode::kMaximum : HloOpcode::kAdd, t);
    auto out = Make(HloOpcode::kScatter, "scatter", s, {a, idx, updates});
    out->mutable_attrs().scatter_dimension_numbers = dn;
    out->mutable_called().push_back(CalledComputations{"to_apply", {fn}, false});
    return EmitEntry(std::move(out), ch) != nullptr;
  }

  // `rank` scalar start indices of one index type, in-range and out-of-range ones.
  bool StartIndices(const Shape& s, const std::vector<int64_t>& sizes, Choices& ch,
                    std::vector<HloInstruction*>* out, int64_t out_of_range_dim = -1) {
    const PrimitiveType type = IndexType(ch);
    for (int64_t i = 0; i < s.rank(); ++i) {
      HloInstruction* v;
      if (i == out_of_range_dim) {
        // Below 0 or past dim - size (XLA clamps the start into range).
        const int64_t over = s.dimensions(i) - sizes[i] + ch.Range(1, 3);
        v = ScalarConstant(type, ch.Below(2) == 0 ? -ch.Range(1, 3) : over, ch);
      } else if (ch.Below(3) == 2) {
        v = Parameter(Shape::Scalar(type), ch);
      } else {
        v = ScalarConstant(type, ch.Range(-2, s.dimensions(i) - sizes[i] + 2), ch);
      }
      if (v == nullptr) return false;
      out->push_back(v);
    }
    return true;
  }

  bool DynamicSlice(Choices& ch) {
    HloInstruction* a = Pick(ch);
    const Shape& s = a->shape();
    if (s.rank() == 0) return false;
    std::vector<int64_t> sizes;
    for (int64_t d : s.dimensions()) sizes.push_back(1 + ch.Below(d));
    const int64_t oob = slice_force_ == 1 ? ch.Below(s.rank()) : -1;
    if (oob >= 0) a = ShardDim(a, oob, ch);
    if (a == nullptr) return false;
    std::vector<HloInstruction*> operands = {a};
    if (!StartIndices(s, sizes, ch, &operands, oob)) return false;
    auto out = Make(HloOpcode::kDynamicSlice, "dynamic-slice",
                    Shape::Array(s.element_type(), sizes), operands);
    out->mutable_attrs().dynamic_slice_sizes = sizes;
    return EmitEntry(std::move(out), ch) != nullptr;
  }

  bool DynamicUpdateSlice(Choices& ch) {
    HloInstruction* a = Pick(ch);
    const Shape& s = a->shape();
    if (s.rank() == 0) return false;
    std::vector<int64_t> sizes;
    for (int64_t d : s.dimensions()) sizes.push_back(1 + ch.Below(d));
    HloInstruction* update = ValueOfShape(Shape::Array(s.element_type(), sizes), a, ch);
    if (update == nullptr) return false;
    const int64_t oob = slice_force_ == 2 ? ch.Below(s.rank()) : -1;
    if (oob >= 0) a = ShardDim(a, oob, ch);
    if (a == nullptr) return false;
    std::vector<HloInstruction*> operands = {a, update};
    if (!StartIndices(s, sizes, ch, &operands, oob)) return false;
    HloInstruction* out =
        EmitEntry(Make(HloOpcode::kDynamicUpdateSlice, "dynamic-update-slice", s, operands), ch);
    if (out != nullptr && oob >= 0 && ch.Below(2) == 0) out->set_sharding(*a->sharding());
    return out != nullptr;
  }

  bool Iota(Choices& ch) {
    const Shape s = Shape::Array(RandomType(ch), RandomDims(ch, 1));
    auto out = Make(HloOpcode::kIota, "iota", s);
    out->mutable_attrs().iota_dimension = ch.Below(s.rank());
    return EmitEntry(std::move(out), ch) != nullptr;
  }

  bool Constant(Choices& ch) {
    const PrimitiveType t = RandomType(ch);
    std::vector<int64_t> dims;
    const int64_t rank = ch.Below(3);
    for (int64_t i = 0; i < rank; ++i) dims.push_back(1 + ch.Below(4));
    const Shape s = Shape::Array(t, dims);
    Literal literal(s);
    for (int64_t i = 0; i < s.ElementCount(); ++i) {
      if (IsFloatingType(t)) {
        literal.SetDouble(i, static_cast<double>(ch.Range(-3, 3)));
      } else {
        literal.SetInt64(i, ch.Range(-3, 3));
      }
    }
    auto c = Make(HloOpcode::kConstant, "constant", s);
    c->set_literal(std::move(literal));
    return EmitEntry(std::move(c), ch) != nullptr;
  }

  bool NewParameter(Choices& ch) {
    return Parameter(Shape::Array(RandomType(ch), RandomDims(ch, 0)), ch) != nullptr;
  }

  // while loop: state (s32[] counter, x[, w]); the body updates x by negate / add / multiply /
  // rotate (slice + concatenate along one dim), plus the invariant w in a pipeline.
  bool While(Choices& ch, bool pipeline);

  // A GPipe- or 1F1B-style pipeline over axes of the mesh, emitted by fuzz/pipeline_gen.h.
  bool PipelineSchedule(Choices& ch) {
    std::optional<PipelineOnMesh> p =
        PipelineSpecForMesh(mesh_, [&ch](int64_t n) { return ch.Below(n); });
    if (!p.has_value()) return false;
    PipelineSink sink;
    sink.parameter = [&](const Shape& shape) { return Parameter(shape, ch); };
    sink.add = [&](std::unique_ptr<HloInstruction> h) { return Emit(entry_, std::move(h)); };
    sink.add_computation = [&](std::unique_ptr<HloComputation> c) {
      pending_.push_back(std::move(c));
    };
    sink.name = [&](absl::string_view stem) { return absl::StrCat(stem, ".", next_id_++); };
    absl::StatusOr<HloInstruction*> out =
        EmitPipeline(p->spec, mesh_, p->stage_axis, p->data_axis, p->tensor_axis, sink);
    if (!out.ok()) return false;
    pool_.push_back(*out);
    return true;
  }

  std::unique_ptr<HloModule> Finish(Choices& ch);

  // ---- New op families and pattern steps (below the class) ------------------------------------
  enum class Force : uint8_t { kNone, kFeatureGroups, kBatchGroups, kBatch, kFeature, kSpatial };
  bool Convolution(Choices& ch, Force force = Force::kNone);
  bool Sort(Choices& ch, bool shard_sort_dim = false);
  bool TopK(Choices& ch, bool shard_last_dim = false);
  bool ReduceWindow(Choices& ch, bool shard_window_dim = false);
  bool PatternStep(GenPattern pattern, Choices& ch);
  // Mesh axes of size > 1.
  std::vector<int64_t> BigAxes() const;
  // A sharding of a rank-`rank` array tiling `dim` over one random mesh axis of size > 1 (two
  // when `two` and the mesh has them); nullopt on a mesh without such axes.
  std::optional<HloSharding> DimSharding(int64_t rank, int64_t dim, Choices& ch, bool two = false);
  // copy(a) carrying `sharding` (in the pool).
  HloInstruction* WithSharding(HloInstruction* a, HloSharding sharding);
  // copy(a) sharded along `dim` (DimSharding); nullptr on a mesh without axes > 1.
  HloInstruction* ShardDim(HloInstruction* a, int64_t dim, Choices& ch);
  // A value with dim `*dim` sharded over `*tiles` > 1 devices and at most 2 elements per shard
  // (a fresh parameter when the picked value's dim is too large).
  HloInstruction* TinyShards(Choices& ch, int64_t* dim);
  bool UnevenDim(Choices& ch, bool over_more_devices);
  bool PartialReplication(Choices& ch);
  bool TransposedIota(Choices& ch);
  bool MultiAxisDim(Choices& ch);
  bool ReshapeSharded(Choices& ch, bool merge);
  bool NarrowFloat(Choices& ch);
  bool IntegerOverflow(Choices& ch);
  bool ManualRegion(Choices& ch, bool loop);
  // An ordinary step on `value` (used after a pattern made a value).
  bool FollowUp(HloInstruction* value, Choices& ch);
  HloComputation* Comparator(PrimitiveType type, int64_t operands, ComparisonDirection dir);
  HloComputation* Overwrite(PrimitiveType type);
  int64_t NewChannel() { return next_channel_++; }

  // Step-local forcing, reset by BuildProgram after each step.
  HloInstruction* forced_pick_ = nullptr;
  std::optional<PrimitiveType> forced_index_type_;
  int dot_force_ = 0;      // 1: a sharded contracting dim, 2: a sharded batch dim.
  int gather_force_ = 0;   // 1: indexed dim, 2: offset dim, 3: indices sharded.
  int scatter_force_ = 0;  // 1: indexed dim, 2: updates sharded, 3: overwrite combiner.
  int slice_force_ = 0;    // 1: dynamic-slice, 2: dynamic-update-slice out-of-range start.
  int pad_force_ = 0;      // 1: negative padding, 2: interior padding on *pad_dim_.
  int64_t pad_dim_ = -1;
  int64_t concat_dim_ = -1;
  void ClearForcing() {
    forced_pick_ = nullptr;
    forced_index_type_.reset();
    dot_force_ = gather_force_ = scatter_force_ = slice_force_ = pad_force_ = 0;
    pad_dim_ = concat_dim_ = -1;
  }
  HloComputation* entry() const { return entry_; }
  const Mesh& mesh() const { return mesh_; }
  bool one_mesh() const { return one_mesh_; }
  const std::vector<std::unique_ptr<HloComputation>>& pending() const { return pending_; }
  // Drops the sharding of `instr` when it carries a pattern of weight 0.
  void DropDisabledSharding(HloInstruction* instr);

 private:
  int64_t next_channel_ = 1;
  const ProgramGenOptions& options_;
  Mesh mesh_;
  PrimitiveType base_type_;
  bool one_mesh_ = false;  // Shardings only from mesh_ (no random tile dims, no manual).
  std::unique_ptr<HloModule> module_;
  HloComputation* entry_ = nullptr;
  std::vector<HloInstruction*> pool_;
  int64_t num_params_ = 0;
  int64_t next_id_ = 0;
  int64_t next_comp_id_ = 0;
  absl::flat_hash_map<std::string, HloComputation*> scalar_comps_;
  std::vector<std::unique_ptr<HloComputation>> pending_;
};

}  // namespace spmdcheck::fuzz::program_gen_internal

#endif  // SPMDCHECK_FUZZ_PROGRAM_BUILDER_H_
