#include "fuzz/program_gen.h"

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
#include "ir/hlo_printer.h"
#include "ir/mesh.h"
#include "ir/shape_inference.h"

namespace spmdcheck::fuzz {
namespace {

using rc::Gen;
namespace gen = rc::gen;

constexpr const char* kGenOpNames[kNumGenOps] = {"unary",
                                                 "binary",
                                                 "convert",
                                                 "compare-select",
                                                 "broadcast",
                                                 "reshape",
                                                 "transpose",
                                                 "slice",
                                                 "pad",
                                                 "concatenate",
                                                 "reverse",
                                                 "reduce",
                                                 "dot",
                                                 "gather",
                                                 "scatter",
                                                 "dynamic-slice",
                                                 "dynamic-update-slice",
                                                 "iota",
                                                 "constant",
                                                 "parameter",
                                                 "while",
                                                 "pipeline",
                                                 "pipeline-schedule",
                                                 "convolution",
                                                 "sort",
                                                 "topk",
                                                 "reduce-window"};

// Reads choices from a block of bytes; bytes past the end read as 0, so 0 is always the
// simplest option.
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

int64_t Product(absl::Span<const int64_t> v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

bool IsNumeric(PrimitiveType t) {
  return IsFloatingType(t) || IsSignedIntegralType(t) || IsUnsignedIntegralType(t);
}

constexpr PrimitiveType kValueTypes[] = {PrimitiveType::kF32, PrimitiveType::kS32,
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
  Builder(const ProgramGenOptions& options, Mesh mesh, PrimitiveType base_type)
      : options_(options), mesh_(std::move(mesh)), base_type_(base_type) {
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

  // Adds `instr` to `comp` after checking its shape against shape inference (the inferred shape
  // wins when there is one). nullptr when the instruction is inconsistent.
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
    const uint64_t seed = ch.Seed();
    const int size = static_cast<int>(ch.Below(101));
    std::optional<HloSharding> s = RandomSharding(instr->shape(), seed, size);
    if (s) instr->set_sharding(*std::move(s));
  }

  // A sharding from fuzz/gen.h for `shape` on the mesh; manual / maximal ones become replicated
  // when the options exclude them.
  std::optional<HloSharding> RandomSharding(const Shape& shape, uint64_t seed, int size) {
    HloSharding s = GenShardingFor(shape, mesh_)(rc::Random(seed), size).value();
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
  const std::vector<std::unique_ptr<HloComputation>>& pending() const { return pending_; }
  // Drops the sharding of `instr` when it carries a pattern of weight 0.
  void DropDisabledSharding(HloInstruction* instr);

 private:
  int64_t next_channel_ = 1;
  const ProgramGenOptions& options_;
  Mesh mesh_;
  PrimitiveType base_type_;
  std::unique_ptr<HloModule> module_;
  HloComputation* entry_ = nullptr;
  std::vector<HloInstruction*> pool_;
  int64_t num_params_ = 0;
  int64_t next_id_ = 0;
  int64_t next_comp_id_ = 0;
  absl::flat_hash_map<std::string, HloComputation*> scalar_comps_;
  std::vector<std::unique_ptr<HloComputation>> pending_;
};

bool Builder::While(Choices& ch, bool pipeline) {
  HloInstruction* x = Pick(ch);
  const Shape& xs = x->shape();
  if (pipeline && xs.rank() == 0) return false;
  const Shape counter = Shape::Scalar(PrimitiveType::kS32);
  std::vector<Shape> elements = {counter, xs};
  HloInstruction* w = nullptr;
  if (pipeline) {
    w = ValueOfShape(xs, x, ch);
    if (w == nullptr) return false;
    elements.push_back(xs);
  }
  const Shape state = Shape::Tuple(elements);
  const int64_t id = next_comp_id_++;
  const int64_t rotate_dim = xs.rank() == 0 ? -1 : ch.Below(xs.rank());
  // Body update of x: 0 negate, 1 add x+x, 2 rotate.
  int64_t update = pipeline ? 2 : ch.Below(3);
  if (update == 2 && (rotate_dim < 0 || xs.dimensions(rotate_dim) < 2)) update = 0;
  const int64_t trips = ch.Range(0, 4);

  // Sharding of the state: a pipeline shards its stage dim (the rotated one) over one mesh axis.
  std::optional<HloSharding> state_sharding;
  if (pipeline) {
    std::vector<std::vector<std::string>> dim_axes(xs.rank());
    const auto& axes = mesh_.axes();
    dim_axes[rotate_dim].push_back(axes[ch.Below(axes.size())].name);
    absl::StatusOr<HloSharding> xsh = mesh_.ShardingFor(dim_axes);
    if (!xsh.ok()) return false;
    std::vector<HloSharding> parts = {HloSharding::Replicate(), *xsh, *xsh};
    state_sharding = HloSharding::Tuple(std::move(parts));
  } else if (ch.Percent(options_.sharding_percent)) {
    const uint64_t seed = ch.Seed();
    state_sharding = RandomSharding(state, seed, static_cast<int>(ch.Below(101)));
  }
  auto shard = [&](HloInstruction* i) {
    if (state_sharding) i->set_sharding(*state_sharding);
  };

  // Condition: counter < trips.
  auto cond = std::make_unique<HloComputation>(absl::StrCat("cond.", id));
  {
    auto p = Make(HloOpcode::kParameter, "state", state);
    p->set_parameter_number(0);
    shard(p.get());
    HloInstruction* sp = Emit(cond.get(), std::move(p));
    auto i = Make(HloOpcode::kGetTupleElement, "counter", counter, {sp});
    i->mutable_attrs().tuple_index = 0;
    HloInstruction* ip = Emit(cond.get(), std::move(i));
    auto limit = Make(HloOpcode::kConstant, "trips", counter);
    Literal lit(counter);
    lit.SetInt64(0, trips);
    limit->set_literal(std::move(lit));
    HloInstruction* lp = Emit(cond.get(), std::move(limit));
    auto cmp = Make(HloOpcode::kCompare, "lt", Shape::Scalar(PrimitiveType::kPred), {ip, lp});
    cmp->mutable_attrs().direction = ComparisonDirection::kLt;
    HloInstruction* root = Emit(cond.get(), std::move(cmp));
    if (sp == nullptr || ip == nullptr || lp == nullptr || root == nullptr) return false;
    cond->set_root(root);
  }
  // Body.
  auto body = std::make_unique<HloComputation>(absl::StrCat("body.", id));
  {
    auto p = Make(HloOpcode::kParameter, "state", state);
    p->set_parameter_number(0);
    shard(p.get());
    HloInstruction* sp = Emit(body.get(), std::move(p));
    if (sp == nullptr) return false;
    std::vector<HloInstruction*> gte;
    for (int64_t e = 0; e < state.tuple_size(); ++e) {
      auto g = Make(HloOpcode::kGetTupleElement, "get-tuple-element", elements[e], {sp});
      g->mutable_attrs().tuple_index = e;
      gte.push_back(Emit(body.get(), std::move(g)));
      if (gte.back() == nullptr) return false;
    }
    auto one = Make(HloOpcode::kConstant, "one", counter);
    Literal lit(counter);
    lit.SetInt64(0, 1);
    one->set_literal(std::move(lit));
    HloInstruction* onep = Emit(body.get(), std::move(one));
    HloInstruction* next =
        onep ? Emit(body.get(), Make(HloOpcode::kAdd, "next", counter, {gte[0], onep})) : nullptr;
    if (next == nullptr) return false;
    HloInstruction* xv = gte[1];
    HloInstruction* nx = nullptr;
    if (update == 0) {
      nx = Emit(body.get(), Make(HloOpcode::kNegate, "negate", xs, {xv}));
    } else if (update == 1) {
      nx = Emit(body.get(), Make(HloOpcode::kAdd, "add", xs, {xv, xv}));
    } else {
      // Rotate by `shift` along rotate_dim: concatenate(x[shift:], x[:shift]).
      const int64_t d = xs.dimensions(rotate_dim);
      const int64_t shift = 1 + ch.Below(d - 1);
      std::vector<SliceDim> hi, lo;
      std::vector<int64_t> hi_dims = xs.dimensions(), lo_dims = xs.dimensions();
      for (int64_t k = 0; k < xs.rank(); ++k) {
        SliceDim a{0, xs.dimensions(k), 1}, b{0, xs.dimensions(k), 1};
        if (k == rotate_dim) {
          a = {shift, d, 1};
          b = {0, shift, 1};
          hi_dims[k] = d - shift;
          lo_dims[k] = shift;
        }
        hi.push_back(a);
        lo.push_back(b);
      }
      auto s1 = Make(HloOpcode::kSlice, "slice", Shape::Array(xs.element_type(), hi_dims), {xv});
      s1->mutable_attrs().slice = hi;
      auto s2 = Make(HloOpcode::kSlice, "slice", Shape::Array(xs.element_type(), lo_dims), {xv});
      s2->mutable_attrs().slice = lo;
      HloInstruction* p1 = Emit(body.get(), std::move(s1));
      HloInstruction* p2 = Emit(body.get(), std::move(s2));
      if (p1 == nullptr || p2 == nullptr) return false;
      auto cat = Make(HloOpcode::kConcatenate, "rotate", xs, {p1, p2});
      cat->mutable_attrs().dimensions = std::vector<int64_t>{rotate_dim};
      nx = Emit(body.get(), std::move(cat));
      if (nx != nullptr && pipeline) {
        // Each stage adds its (invariant) weights: a shifted stage computation.
        nx = Emit(body.get(), Make(HloOpcode::kAdd, "stage", xs, {nx, gte[2]}));
      }
    }
    if (nx == nullptr) return false;
    std::vector<HloInstruction*> outs = {next, nx};
    if (pipeline) {
      // The weights go round through a copy: XLA's HLO -> StableHLO import turns a state element
      // the body passes through unchanged into an implicit capture and keeps the while's old
      // tuple sharding, which XLA then refuses (leaf_count == tuple_elements_.size()) -- a limit
      // of the route into XLA that jax programs never take, not of its partitioner.
      HloInstruction* w_out =
          Emit(body.get(), Make(HloOpcode::kCopy, "weights", elements[2], {gte[2]}));
      if (w_out == nullptr) return false;
      outs.push_back(w_out);
    }
    auto t = Make(HloOpcode::kTuple, "tuple", state, outs);
    shard(t.get());
    HloInstruction* root = Emit(body.get(), std::move(t));
    if (root == nullptr) return false;
    body->set_root(root);
  }
  // Entry: init tuple, while, get-tuple-element of x.
  HloInstruction* zero = ScalarConstant(PrimitiveType::kS32, 0, ch);
  if (zero == nullptr) return false;
  std::vector<HloInstruction*> init_ops = {zero, x};
  if (pipeline) init_ops.push_back(w);
  auto init = Make(HloOpcode::kTuple, "tuple", state, init_ops);
  shard(init.get());
  HloInstruction* ip = Emit(entry_, std::move(init));
  if (ip == nullptr) return false;
  auto loop = Make(HloOpcode::kWhile, pipeline ? "pipeline" : "while", state, {ip});
  loop->mutable_called().push_back(CalledComputations{"condition", {cond.get()}, false});
  loop->mutable_called().push_back(CalledComputations{"body", {body.get()}, false});
  shard(loop.get());
  HloInstruction* lp = Emit(entry_, std::move(loop));
  if (lp == nullptr) return false;
  pending_.push_back(std::move(cond));
  pending_.push_back(std::move(body));
  auto g = Make(HloOpcode::kGetTupleElement, "get-tuple-element", xs, {lp});
  g->mutable_attrs().tuple_index = 1;
  return EmitEntry(std::move(g), ch) != nullptr;
}

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
      if (ch.Below(3) != 0) {
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
    HloInstruction* zero = scalar_const(entry_, PrimitiveType::kS32, 0);
    if (zero == nullptr) return false;
    HloInstruction* init =
        mark(entry_, Make(HloOpcode::kTuple, "tuple", state, {zero, lx}), state_manual);
    if (init == nullptr) return false;
    auto w = Make(HloOpcode::kWhile, "manual-while", state, {init});
    w->mutable_called().push_back(CalledComputations{"condition", {cond.get()}, false});
    w->mutable_called().push_back(CalledComputations{"body", {body.get()}, false});
    HloInstruction* wp = mark(entry_, std::move(w), state_manual);
    if (wp == nullptr) return false;
    pending_.push_back(std::move(cond));
    pending_.push_back(std::move(body));
    auto g = Make(HloOpcode::kGetTupleElement, "get-tuple-element", local, {wp});
    g->mutable_attrs().tuple_index = 1;
    result = mark(entry_, std::move(g), manual);
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

bool Builder::Step(GenOp op, Choices& ch) {
  switch (op) {
    case GenOp::kUnary:
      return Unary(ch);
    case GenOp::kBinary:
      return Binary(ch);
    case GenOp::kConvert:
      return Convert(ch);
    case GenOp::kCompareSelect:
      return CompareSelect(ch);
    case GenOp::kBroadcast:
      return Broadcast(ch);
    case GenOp::kReshape:
      return Reshape(ch);
    case GenOp::kTranspose:
      return Transpose(ch);
    case GenOp::kSlice:
      return Slice(ch);
    case GenOp::kPad:
      return Pad(ch);
    case GenOp::kConcatenate:
      return Concatenate(ch);
    case GenOp::kReverse:
      return Reverse(ch);
    case GenOp::kReduce:
      return Reduce(ch);
    case GenOp::kDot:
      return Dot(ch);
    case GenOp::kGather:
      return Gather(ch);
    case GenOp::kScatter:
      return Scatter(ch);
    case GenOp::kDynamicSlice:
      return DynamicSlice(ch);
    case GenOp::kDynamicUpdateSlice:
      return DynamicUpdateSlice(ch);
    case GenOp::kIota:
      return Iota(ch);
    case GenOp::kConstant:
      return Constant(ch);
    case GenOp::kParameter:
      return NewParameter(ch);
    case GenOp::kWhile:
      return While(ch, /*pipeline=*/false);
    case GenOp::kPipeline:
      return While(ch, /*pipeline=*/true);
    case GenOp::kPipelineSchedule:
      return PipelineSchedule(ch);
    case GenOp::kConvolution:
      return Convolution(ch);
    case GenOp::kSort:
      return Sort(ch);
    case GenOp::kTopK:
      return TopK(ch);
    case GenOp::kReduceWindow:
      return ReduceWindow(ch);
  }
  return false;
}

// Root: the only value nobody uses, or a tuple of every such value.
std::unique_ptr<HloModule> Builder::Finish(Choices& ch) {
  absl::flat_hash_set<const HloInstruction*> used;
  for (const auto& instr : entry_->instructions()) {
    for (const HloInstruction* o : instr->operands()) used.insert(o);
  }
  std::vector<HloInstruction*> sinks;
  for (HloInstruction* v : pool_) {
    if (!used.contains(v)) sinks.push_back(v);
  }
  if (sinks.empty()) sinks.push_back(pool_.back());
  HloInstruction* root = sinks.back();
  if (sinks.size() > 1) {
    std::vector<Shape> shapes;
    for (HloInstruction* s : sinks) shapes.push_back(s->shape());
    auto t = Make(HloOpcode::kTuple, "tuple", Shape::Tuple(shapes), sinks);
    root = Emit(entry_, std::move(t));
    if (root != nullptr) MaybeShard(root, ch);
  }
  entry_->set_root(root);
  return std::move(module_);
}

std::vector<int64_t> Reversed(std::vector<int64_t> v) {
  std::reverse(v.begin(), v.end());
  return v;
}

Mesh MeshFromHeader(Choices& ch, int64_t max_devices, bool allow_transposed) {
  static constexpr int64_t kSizes[] = {1, 2, 2, 4, 3, 2, 8, 4, 2, 6, 5, 16};
  const int64_t k = 1 + ch.Below(3);
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < k; ++i) sizes.push_back(kSizes[ch.Below(std::size(kSizes))]);
  while (Product(sizes) > std::max<int64_t>(1, max_devices)) {
    auto it = std::max_element(sizes.begin(), sizes.end());
    *it /= 2;
  }
  static const char* const kNames[] = {"x", "y", "z"};
  std::vector<MeshAxis> axes;
  for (int64_t i = 0; i < k; ++i) axes.push_back({kNames[i], sizes[i]});
  std::optional<TileAssignment> devices;
  if (k > 1 && ch.Below(3) == 2 && allow_transposed) {
    std::vector<int64_t> perm(k);
    std::iota(perm.begin(), perm.end(), 0);
    absl::StatusOr<TileAssignment> t = TileAssignment::Iota(sizes, Reversed(sizes), Reversed(perm));
    if (t.ok()) devices = *t;
  }
  absl::StatusOr<Mesh> mesh = Mesh::Create(axes, devices);
  if (!mesh.ok()) mesh = Mesh::Create(axes);
  return *mesh;
}

// What a step emits: an op, or a pattern on purpose.
struct StepKind {
  std::optional<GenOp> op;
  std::optional<GenPattern> pattern;
};

StepKind PickStep(Choices& ch, const ProgramGenOptions& options) {
  int64_t total = 0;
  for (int w : options.op_weights) total += std::max(w, 0);
  for (int w : options.pattern_weights) total += std::max(w, 0);
  if (total <= 0) return {GenOp::kUnary, std::nullopt};
  int64_t pick = ch.Below(total);
  for (int i = 0; i < kNumGenOps; ++i) {
    const int64_t w = std::max(options.op_weights[i], 0);
    if (pick < w) return {static_cast<GenOp>(i), std::nullopt};
    pick -= w;
  }
  for (int i = 0; i < kNumGenPatterns; ++i) {
    const int64_t w = std::max(options.pattern_weights[i], 0);
    if (pick < w) return {std::nullopt, static_cast<GenPattern>(i)};
    pick -= w;
  }
  return {GenOp::kUnary, std::nullopt};
}

// Whether the instructions a step added (entry instructions from `first` on, and the step's
// new computations) contain a pattern of weight 0.
bool StepHasDisabledPattern(const Builder& b, int64_t first, const ProgramGenOptions& options) {
  if (!options.exclude_disabled_patterns) return false;
  auto disabled = [&](const HloInstruction& instr) {
    for (GenPattern p : DetectPatterns(instr, &b.mesh())) {
      if (options.pattern_weights[static_cast<int>(p)] <= 0) return true;
    }
    return false;
  };
  const auto& entry = b.entry()->instructions();
  for (int64_t i = first; i < static_cast<int64_t>(entry.size()); ++i) {
    if (disabled(*entry[i])) return true;
  }
  for (const auto& comp : b.pending()) {
    for (const auto& instr : comp->instructions()) {
      if (disabled(*instr)) return true;
    }
  }
  return false;
}

}  // namespace

absl::string_view GenOpName(GenOp op) { return kGenOpNames[static_cast<int>(op)]; }

std::array<int, kNumGenOps> ProgramGenOptions::DefaultOpWeights() {
  std::array<int, kNumGenOps> w{};
  auto set = [&w](GenOp op, int weight) { w[static_cast<int>(op)] = weight; };
  set(GenOp::kUnary, 6);
  set(GenOp::kBinary, 10);
  set(GenOp::kConvert, 3);
  set(GenOp::kCompareSelect, 4);
  set(GenOp::kBroadcast, 6);
  set(GenOp::kReshape, 8);
  set(GenOp::kTranspose, 6);
  set(GenOp::kSlice, 6);
  set(GenOp::kPad, 5);
  set(GenOp::kConcatenate, 5);
  set(GenOp::kReverse, 3);
  set(GenOp::kReduce, 6);
  set(GenOp::kDot, 8);
  set(GenOp::kGather, 4);
  set(GenOp::kScatter, 4);
  set(GenOp::kDynamicSlice, 4);
  set(GenOp::kDynamicUpdateSlice, 4);
  set(GenOp::kIota, 2);
  set(GenOp::kConstant, 2);
  set(GenOp::kParameter, 3);
  set(GenOp::kWhile, 3);
  set(GenOp::kPipeline, 2);
  set(GenOp::kPipelineSchedule, 2);
  set(GenOp::kConvolution, 3);
  set(GenOp::kSort, 3);
  set(GenOp::kTopK, 2);
  set(GenOp::kReduceWindow, 3);
  return w;
}

std::array<int, kNumGenOps> ProgramGenOptions::NarrowOpWeights() {
  std::array<int, kNumGenOps> w = DefaultOpWeights();
  for (GenOp op : {GenOp::kCompareSelect, GenOp::kPad, GenOp::kConcatenate, GenOp::kReverse,
                   GenOp::kGather, GenOp::kScatter, GenOp::kDynamicSlice,
                   GenOp::kDynamicUpdateSlice, GenOp::kIota, GenOp::kWhile, GenOp::kPipeline}) {
    w[static_cast<int>(op)] = 0;
  }
  for (GenOp op : {GenOp::kPipelineSchedule, GenOp::kConvolution, GenOp::kSort, GenOp::kTopK,
                   GenOp::kReduceWindow}) {
    w[static_cast<int>(op)] = 0;
  }
  return w;
}

void showValue(const ProgramRecipe& recipe, std::ostream& os) {
  os << "recipe: " << recipe.steps.size() << " steps";
}

std::ostream& operator<<(std::ostream& os, const GeneratedProgram& program) {
  os << "// generated program: num_partitions=" << program.num_partitions
     << ", entry instructions=" << program.instruction_count << "\n"
     << program.hlo_text;
  return os;
}

void showValue(const GeneratedProgram& program, std::ostream& os) { os << program; }

absl::StatusOr<GeneratedProgram> BuildProgram(const ProgramRecipe& recipe,
                                              const ProgramGenOptions& options) {
  if (options.max_instructions < 1 || options.max_rank < 1 || options.max_dim < 1 ||
      options.max_elements < 1) {
    return absl::InvalidArgumentError("program generator options must be positive");
  }
  Choices header(recipe.header);
  Mesh mesh = MeshFromHeader(
      header, options.max_devices,
      !options.exclude_disabled_patterns ||
          options.pattern_weights[static_cast<int>(GenPattern::kTransposedIotaDevices)] > 0);
  static constexpr PrimitiveType kBaseTypes[] = {PrimitiveType::kF32, PrimitiveType::kS32,
                                                 PrimitiveType::kF32, PrimitiveType::kBF16};
  PrimitiveType base = kBaseTypes[header.Below(std::size(kBaseTypes))];
  if (base == PrimitiveType::kBF16 && options.exclude_disabled_patterns &&
      options.pattern_weights[static_cast<int>(GenPattern::kNarrowFloat)] <= 0) {
    base = PrimitiveType::kF32;
  }
  Builder b(options, std::move(mesh), base);
  // The first parameter, so that every step has an operand.
  {
    const std::vector<int64_t> dims = b.RandomDims(header, 1);
    HloInstruction* first = b.Parameter(Shape::Array(base, dims), header);
    if (first == nullptr) {
      return absl::InternalError("program generator: the first parameter is invalid");
    }
    b.DropDisabledSharding(first);
  }
  for (const std::vector<uint8_t>& step : recipe.steps) {
    if (b.EntryCount() >= options.max_instructions - 1) break;
    Choices ch(step);
    const StepKind kind = PickStep(ch, options);
    const Checkpoint cp = b.Save();
    const bool ok = kind.op.has_value() ? b.Step(*kind.op, ch) : b.PatternStep(*kind.pattern, ch);
    b.ClearForcing();
    if (!ok || b.EntryCount() > options.max_instructions - 1 ||
        StepHasDisabledPattern(b, cp.instructions, options)) {
      b.Restore(cp);
    } else {
      b.Commit();
    }
  }
  std::unique_ptr<HloModule> module = b.Finish(header);
  if (module->entry()->root() != nullptr) b.DropDisabledSharding(module->entry()->root());
  if (module->entry()->root() == nullptr) {
    return absl::InternalError("program generator: no root");
  }
  GeneratedProgram out;
  out.num_partitions = module->num_partitions();
  out.instruction_count = module->entry()->instruction_count();
  out.hlo_text = PrintModule(*module);
  for (GenPattern p : DetectPatterns(*module, &b.mesh())) {
    out.patterns.emplace_back(GenPatternName(p));
  }
  out.mesh = b.mesh();
  out.module = std::move(module);
  return out;
}

Gen<ProgramRecipe> GenProgramRecipe(const ProgramGenOptions& options) {
  const auto byte = gen::resize(100, gen::inRange<int>(0, 256));
  const auto block = [byte](size_t n) {
    return gen::map(gen::container<std::vector<int>>(n, byte), [](const std::vector<int>& v) {
      return std::vector<uint8_t>(v.begin(), v.end());
    });
  };
  const size_t max_steps = static_cast<size_t>(std::max<int64_t>(1, options.max_instructions));
  return gen::map(
      gen::pair(
          block(kRecipeHeaderBytes),
          gen::scale(static_cast<double>(max_steps) / 100.0,
                     gen::container<std::vector<std::vector<uint8_t>>>(block(kRecipeStepBytes)))),
      [max_steps](std::pair<std::vector<uint8_t>, std::vector<std::vector<uint8_t>>> p) {
        ProgramRecipe r;
        r.header = std::move(p.first);
        r.steps = std::move(p.second);
        if (r.steps.size() > max_steps) r.steps.resize(max_steps);
        return r;
      });
}

Gen<GeneratedProgram> GenProgram(const ProgramGenOptions& options) {
  return gen::map(GenProgramRecipe(options), [options](const ProgramRecipe& recipe) {
    absl::StatusOr<GeneratedProgram> p = BuildProgram(recipe, options);
    if (p.ok()) return *std::move(p);
    GeneratedProgram bad;
    bad.hlo_text = absl::StrCat("<generator error: ", p.status().message(), ">");
    return bad;
  });
}

ProgramRecipe RecipeFromBytes(absl::Span<const uint8_t> data, const ProgramGenOptions& options) {
  ProgramRecipe r;
  const size_t h = std::min(data.size(), kRecipeHeaderBytes);
  r.header.assign(data.begin(), data.begin() + h);
  data.remove_prefix(h);
  const size_t max_steps = static_cast<size_t>(std::max<int64_t>(1, options.max_instructions));
  while (!data.empty() && r.steps.size() < max_steps) {
    const size_t n = std::min(data.size(), kRecipeStepBytes);
    r.steps.emplace_back(data.begin(), data.begin() + n);
    data.remove_prefix(n);
  }
  return r;
}

absl::StatusOr<GeneratedProgram> ProgramFromBytes(absl::Span<const uint8_t> data,
                                                  const ProgramGenOptions& options) {
  return BuildProgram(RecipeFromBytes(data, options), options);
}

}  // namespace spmdcheck::fuzz
