#include "smt/chain_encoding.h"

#include <z3++.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_opcode.h"
#include "ir/primitive_type.h"
#include "smt/tile_encoding.h"

namespace spmdcheck::smt {

std::string SourceSumText(const SourceSum& sum, absl::Span<const std::string> input_names) {
  std::vector<std::string> parts;
  for (const auto& [element, coefficient] : sum.terms) {
    const std::string name =
        element.input >= 0 && element.input < static_cast<int64_t>(input_names.size())
            ? input_names[element.input]
            : absl::StrCat("input", element.input);
    const std::string text = absl::StrCat(name, "[", absl::StrJoin(element.index, ","), "]");
    if (coefficient == 1) {
      parts.push_back(text);
    } else if (coefficient == -1) {
      parts.push_back(absl::StrCat("-", text));
    } else {
      parts.push_back(absl::StrCat(coefficient, "*", text));
    }
  }
  if (sum.constant != 0 || parts.empty()) parts.push_back(absl::StrCat(sum.constant));
  return absl::StrJoin(parts, " + ");
}

int64_t ConcreteDomain::InputId(const std::string& key) {
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return static_cast<int64_t>(i);
  }
  keys_.push_back(key);
  return static_cast<int64_t>(keys_.size()) - 1;
}

SourceSum ConcreteDomain::Add(SourceSum a, const SourceSum& b) {
  for (const auto& [element, coefficient] : b.terms) {
    auto [it, inserted] = a.terms.emplace(element, coefficient);
    if (!inserted) {
      it->second += coefficient;
      if (it->second == 0) a.terms.erase(it);
    }
  }
  a.constant += b.constant;
  return a;
}

SourceSum ConcreteDomain::Scale(SourceSum a, double factor) {
  if (factor == 0) return SourceSum{};
  for (auto& [element, coefficient] : a.terms) coefficient *= factor;
  a.constant *= factor;
  return a;
}

SourceSum ConcreteDomain::Multiply(const SourceSum& a, const SourceSum& b) {
  if (a.terms.empty()) return Scale(b, a.constant);
  if (b.terms.empty()) return Scale(a, b.constant);
  SourceSum invalid = a;
  invalid.constant = std::nan("");  // Not a data movement; the model rejects such chains.
  return invalid;
}

int64_t Z3Domain::InputId(const std::string& key, int64_t rank) {
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return static_cast<int64_t>(i);
  }
  z3::sort_vector domain(ctx_);
  for (int64_t k = 0; k < rank; ++k) domain.push_back(ctx_.int_sort());
  functions_.push_back(
      ctx_.function(absl::StrCat("input", keys_.size()).c_str(), domain, ctx_.real_sort()));
  keys_.push_back(key);
  return static_cast<int64_t>(keys_.size()) - 1;
}

z3::expr Z3Domain::DataVal(double v) const {
  if (v == std::floor(v) && std::fabs(v) < 9.0e15) {
    return ctx_.real_val(static_cast<int64_t>(v));
  }
  int exponent = 0;
  const double mantissa = std::frexp(v, &exponent);
  int64_t numerator = static_cast<int64_t>(std::ldexp(mantissa, 53));
  int shift = 53 - exponent;
  while (shift > 0 && numerator % 2 == 0) {
    numerator /= 2;
    --shift;
  }
  if (shift > 62) shift = 62;  // Below 2^-62: rounded (no such constants move data).
  return ctx_.real_val(numerator) / ctx_.real_val(int64_t{1} << shift);
}

std::optional<int64_t> Z3Domain::Numeral(const z3::expr& e) {
  int64_t v = 0;
  if (e.is_numeral_i64(v)) return v;
  const z3::expr s = e.simplify();
  if (s.is_numeral_i64(v)) return v;
  return std::nullopt;
}

z3::expr Z3Domain::Div(const z3::expr& a, int64_t b) const {
  if (b == 1) return a;
  if (std::optional<int64_t> v = Numeral(a)) return ctx_.int_val(ConcreteDomain::Div(*v, b));
  return a / ctx_.int_val(b);
}

z3::expr Z3Domain::Mod(const z3::expr& a, int64_t b) const {
  if (b == 1) return ctx_.int_val(0);
  if (std::optional<int64_t> v = Numeral(a)) return ctx_.int_val(ConcreteDomain::Mod(*v, b));
  return z3::mod(a, ctx_.int_val(b));
}

z3::expr Z3Domain::Lookup(const z3::expr& key, absl::Span<const int64_t> table) const {
  if (std::optional<int64_t> v = Numeral(key)) {
    return ctx_.int_val(ConcreteDomain::Lookup(*v, table));
  }
  return TableLookup(ctx_, key, table);
}

z3::expr Z3Domain::LookupData(const z3::expr& key, absl::Span<const double> table) const {
  if (table.empty()) return DataVal(0);
  if (std::optional<int64_t> v = Numeral(key)) {
    const int64_t n = static_cast<int64_t>(table.size());
    return DataVal(*v >= 0 && *v < n - 1 ? table[*v] : table.back());
  }
  z3::expr result = DataVal(table.back());
  for (size_t i = table.size() - 1; i-- > 0;) {
    result = z3::ite(key == ctx_.int_val(static_cast<int64_t>(i)), DataVal(table[i]), result);
  }
  return result;
}

z3::expr Z3Domain::Input(int64_t input, const std::vector<z3::expr>& global_index) const {
  z3::expr_vector args(ctx_);
  for (const z3::expr& e : global_index) args.push_back(e);
  return functions_[input](args);
}

// ---------------------------------------------------------------------------------------------
// The evaluator.

template <typename D>
typename D::Int ChainEvaluator<D>::Linear(const std::vector<Int>& index,
                                          absl::Span<const int64_t> dims) {
  Int sum = dom_.IntVal(0);
  int64_t stride = 1;
  bool first = true;
  for (size_t k = dims.size(); k-- > 0;) {
    if (dims[k] != 1) {
      Int term = stride == 1 ? index[k] : index[k] * dom_.IntVal(stride);
      sum = first ? term : sum + term;
      first = false;
    }
    stride *= dims[k];
  }
  return sum;
}

template <typename D>
std::vector<typename D::Int> ChainEvaluator<D>::Digits(const Int& linear,
                                                       absl::Span<const int64_t> dims) {
  std::vector<Int> digits;
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) strides[k - 1] = strides[k] * dims[k];
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 1) {
      digits.push_back(dom_.IntVal(0));
    } else if (k == 0) {
      digits.push_back(dom_.Div(linear, strides[k]));
    } else {
      digits.push_back(dom_.Mod(dom_.Div(linear, strides[k]), dims[k]));
    }
  }
  return digits;
}

template <typename D>
std::vector<typename D::Int> ChainEvaluator<D>::ReshapeIndex(
    const std::vector<Int>& index, absl::Span<const int64_t> result_dims,
    absl::Span<const int64_t> operand_dims) {
  std::vector<Int> operand(operand_dims.size(), dom_.IntVal(0));
  auto whole = [&]() { return Digits(Linear(index, result_dims), operand_dims); };
  for (int64_t d : result_dims) {
    if (d == 0) return whole();
  }
  for (int64_t d : operand_dims) {
    if (d == 0) return whole();
  }
  // Split both dim lists into the smallest groups with equal products; only groups that merge or
  // split dims need div/mod, and only over their own dims.
  const size_t nr = result_dims.size();
  const size_t no = operand_dims.size();
  size_t i = 0;
  size_t j = 0;
  while (i < nr || j < no) {
    if (i < nr && result_dims[i] == 1) {
      ++i;
      continue;
    }
    if (j < no && operand_dims[j] == 1) {
      ++j;
      continue;
    }
    if (i >= nr || j >= no) return whole();
    size_t i_end = i + 1;
    size_t j_end = j + 1;
    int64_t result_product = result_dims[i];
    int64_t operand_product = operand_dims[j];
    while (result_product != operand_product) {
      if (result_product < operand_product) {
        if (i_end >= nr) return whole();
        result_product *= result_dims[i_end++];
      } else {
        if (j_end >= no) return whole();
        operand_product *= operand_dims[j_end++];
      }
    }
    if (i_end - i == 1 && j_end - j == 1) {
      operand[j] = index[i];
    } else {
      std::vector<Int> group_index(index.begin() + i, index.begin() + i_end);
      std::vector<Int> digits = Digits(Linear(group_index, result_dims.subspan(i, i_end - i)),
                                       operand_dims.subspan(j, j_end - j));
      for (size_t k = j; k < j_end; ++k) operand[k] = digits[k - j];
    }
    i = i_end;
    j = j_end;
  }
  return operand;
}

template <typename D>
typename D::Int ChainEvaluator<D>::IotaLinearOf(const IotaTileAssignment& iota, const Int& device) {
  const absl::Span<const int64_t> reshape = iota.reshape_dims();
  const absl::Span<const int64_t> perm = iota.perm();
  std::vector<Int> r = Digits(device, reshape);
  std::vector<Int> transposed;
  std::vector<int64_t> sizes;
  for (int64_t p : perm) {
    transposed.push_back(r[p]);
    sizes.push_back(reshape[p]);
  }
  return Linear(transposed, sizes);
}

template <typename D>
typename D::Int ChainEvaluator<D>::IotaDeviceAt(const IotaTileAssignment& iota, const Int& linear) {
  const absl::Span<const int64_t> reshape = iota.reshape_dims();
  const absl::Span<const int64_t> perm = iota.perm();
  std::vector<int64_t> sizes;
  for (int64_t p : perm) sizes.push_back(reshape[p]);
  std::vector<Int> t = Digits(linear, sizes);
  std::vector<Int> r(reshape.size(), dom_.IntVal(0));
  for (size_t i = 0; i < perm.size(); ++i) r[perm[i]] = t[i];
  return Linear(r, reshape);
}

template <typename D>
typename D::Int ChainEvaluator<D>::GroupOf(const DeviceGroups& g, const Int& device) {
  if (g.iota.has_value()) return dom_.Div(IotaLinearOf(*g.iota, device), g.group_size);
  return dom_.Lookup(device, g.group_of);
}

template <typename D>
typename D::Int ChainEvaluator<D>::PositionOf(const DeviceGroups& g, const Int& device) {
  if (g.iota.has_value()) return dom_.Mod(IotaLinearOf(*g.iota, device), g.group_size);
  return dom_.Lookup(device, g.position_of);
}

template <typename D>
typename D::Int ChainEvaluator<D>::Member(const DeviceGroups& g, const Int& group,
                                          const Int& position) {
  Int linear = g.group_size == 1 ? group : group * dom_.IntVal(g.group_size) + position;
  if (g.iota.has_value()) return IotaDeviceAt(*g.iota, linear);
  return dom_.Lookup(linear, g.members);
}

template <typename D>
typename D::Data ChainEvaluator<D>::FromMember(const DeviceGroups& g, const Int& group,
                                               const Int& position, const HloInstruction* operand,
                                               const std::vector<Int>& at) {
  if constexpr (D::kSymbolic) {
    // A position that depends on the index: one case per position, so that every device term
    // stays a constant when the device is one (tables then fold away).
    if (!Z3Domain::Numeral(position).has_value() && Z3Domain::Numeral(group).has_value()) {
      std::function<Data(int64_t)> from = [&](int64_t p) -> Data {
        if (p + 1 == g.group_size) {
          return Eval<true>(operand, Member(g, group, dom_.IntVal(p)), at);
        }
        return D::Choose(
            position == dom_.IntVal(p),
            [&]() { return Eval<true>(operand, Member(g, group, dom_.IntVal(p)), at); },
            [&]() { return from(p + 1); });
      };
      return from(0);
    }
  }
  return Eval<true>(operand, Member(g, group, position), at);
}

template <typename D>
typename D::Int ChainEvaluator<D>::Clamp(const Int& v, int64_t lo, int64_t hi) {
  return D::IteInt(v < dom_.IntVal(lo), dom_.IntVal(lo),
                   D::IteInt(v > dom_.IntVal(hi), dom_.IntVal(hi), v));
}

template <typename D>
std::vector<typename D::Int> ChainEvaluator<D>::TileIndex(const ShardingLayout& layout,
                                                          const Int& device) {
  std::vector<Int> index;
  if (layout.replicated) return index;
  if (layout.tiles.is_iota()) {
    Int linear = IotaLinearOf(*layout.tiles.iota(), device);
    std::vector<Int> all = Digits(linear, layout.tiles.dims());
    all.resize(layout.data_rank, dom_.IntVal(0));
    return all;
  }
  for (int64_t k = 0; k < layout.data_rank; ++k) {
    index.push_back(dom_.Lookup(device, layout.tile_index_tables[k]));
  }
  return index;
}

template <typename D>
std::vector<typename D::Int> ChainEvaluator<D>::GlobalIndex(const ShardingLayout& layout,
                                                            absl::Span<const int64_t> local_dims,
                                                            const Int& device,
                                                            const std::vector<Int>& index) {
  if (layout.replicated) return index;
  std::vector<Int> tile = TileIndex(layout, device);
  std::vector<Int> global;
  for (size_t k = 0; k < index.size(); ++k) {
    if (layout.tiles.dim(k) == 1) {
      global.push_back(index[k]);
    } else {
      global.push_back(tile[k] * dom_.IntVal(local_dims[k]) + index[k]);
    }
  }
  return global;
}

template <typename D>
std::vector<typename D::Int> ChainEvaluator<D>::InputIndexOf(absl::Span<const GlobalStep> steps,
                                                             std::vector<Int> index) {
  for (size_t s = steps.size(); s-- > 0;) {
    const GlobalStep& step = steps[s];
    std::vector<Int> operand(step.operand_dims.size(), dom_.IntVal(0));
    switch (step.kind) {
      case GlobalStep::Kind::kReshape:
        operand = ReshapeIndex(index, step.result_dims, step.operand_dims);
        break;
      case GlobalStep::Kind::kTranspose:
        for (size_t i = 0; i < step.map.size(); ++i) operand[step.map[i]] = index[i];
        break;
      case GlobalStep::Kind::kBroadcast:
        for (size_t j = 0; j < step.map.size(); ++j) operand[j] = index[step.map[j]];
        break;
      case GlobalStep::Kind::kDropDims:
        for (size_t j = 0; j < step.map.size(); ++j) {
          if (step.map[j] >= 0) operand[j] = index[step.map[j]];
        }
        break;
    }
    index = std::move(operand);
  }
  return index;
}

template <typename D>
typename D::Data ChainEvaluator<D>::EvalData(const HloInstruction* h, const Int& device,
                                             const std::vector<Int>& index) {
  return Eval<true>(h, device, index);
}

template <typename D>
typename D::Int ChainEvaluator<D>::EvalInt(const HloInstruction* h, const Int& device,
                                           const std::vector<Int>& index) {
  return Eval<false>(h, device, index);
}

template <typename D>
template <bool kData>
typename ChainEvaluator<D>::template Value<kData> ChainEvaluator<D>::Eval(
    const HloInstruction* h, const Int& device, const std::vector<Int>& index) {
  if (budget_ >= 0 && --budget_ < 0) exhausted_ = true;
  if (exhausted_) return Zero<kData>();
  const InstructionFacts& facts = model_.facts(h);
  if constexpr (kData) {
    if (facts.domain == ValueDomain::kInteger) return dom_.FromInt(Eval<false>(h, device, index));
    if (facts.input >= 0) {
      const ChainInput& input = model_.inputs()[facts.input];
      return dom_.Input(input_ids_[facts.input], GlobalIndex(model_.input_layout(facts.input),
                                                             input.local_dims, device, index));
    }
  }
  switch (h->opcode()) {
    case HloOpcode::kCopy:
    case HloOpcode::kConvert:
    case HloOpcode::kReshape:
    case HloOpcode::kTranspose:
    case HloOpcode::kBroadcast:
    case HloOpcode::kSlice:
    case HloOpcode::kDynamicSlice:
      return EvalIndexMapping<kData>(h, device, index);
    case HloOpcode::kPad:
    case HloOpcode::kConcatenate:
    case HloOpcode::kDynamicUpdateSlice:
    case HloOpcode::kSelect:
      return EvalPiecewise<kData>(h, device, index);
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kNegate:
    case HloOpcode::kConstant:
    case HloOpcode::kIota:
      return EvalArithmetic<kData>(h, facts, device, index);
    default:
      break;
  }
  if constexpr (kData) {
    return EvalCollective(h, facts, device, index);
  } else {
    return EvalIntegerOp(h, device, index);
  }
}

template <typename D>
template <bool kData>
typename ChainEvaluator<D>::template Value<kData> ChainEvaluator<D>::EvalIndexMapping(
    const HloInstruction* h, const Int& device, const std::vector<Int>& index) {
  const std::vector<int64_t>& dims = h->shape().dimensions();
  const HloAttributes& attrs = h->attrs();
  const std::vector<int64_t>& operand_dims = h->operand(0)->shape().dimensions();
  switch (h->opcode()) {
    case HloOpcode::kCopy:
      return Eval<kData>(h->operand(0), device, index);
    case HloOpcode::kConvert: {
      if constexpr (kData) {
        return Eval<true>(h->operand(0), device, index);
      } else {
        Int v = Eval<false>(h->operand(0), device, index);
        if (h->shape().element_type() == PrimitiveType::kPred) return BoolToInt(dom_.Truth(v));
        return v;
      }
    }
    case HloOpcode::kReshape:
      return Eval<kData>(h->operand(0), device, ReshapeIndex(index, dims, operand_dims));
    case HloOpcode::kTranspose: {
      std::vector<Int> operand(index.size(), dom_.IntVal(0));
      const std::vector<int64_t>& perm = *attrs.dimensions;
      for (size_t i = 0; i < perm.size(); ++i) operand[perm[i]] = index[i];
      return Eval<kData>(h->operand(0), device, operand);
    }
    case HloOpcode::kBroadcast: {
      std::vector<Int> operand;
      for (int64_t d : *attrs.dimensions) operand.push_back(index[d]);
      return Eval<kData>(h->operand(0), device, operand);
    }
    case HloOpcode::kSlice: {
      std::vector<Int> operand;
      const std::vector<SliceDim>& slice = *attrs.slice;
      for (size_t k = 0; k < index.size(); ++k) {
        Int i = slice[k].stride == 1 ? index[k] : index[k] * dom_.IntVal(slice[k].stride);
        operand.push_back(slice[k].start == 0 ? i : i + dom_.IntVal(slice[k].start));
      }
      return Eval<kData>(h->operand(0), device, operand);
    }
    case HloOpcode::kDynamicSlice: {
      std::vector<Int> operand;
      for (size_t k = 0; k < index.size(); ++k) {
        Int start = Eval<false>(h->operand(1 + k), device, std::vector<Int>());
        start = Clamp(start, 0, operand_dims[k] - dims[k]);
        operand.push_back(start + index[k]);
      }
      return Eval<kData>(h->operand(0), device, operand);
    }
    default:
      return Zero<kData>();  // Unreachable: Eval dispatches only the ops above here.
  }
}

template <typename D>
template <bool kData>
typename ChainEvaluator<D>::template Value<kData> ChainEvaluator<D>::EvalPiecewise(
    const HloInstruction* h, const Int& device, const std::vector<Int>& index) {
  const std::vector<int64_t>& dims = h->shape().dimensions();
  const HloAttributes& attrs = h->attrs();
  auto operand_dims = [&](int64_t i) -> const std::vector<int64_t>& {
    return h->operand(i)->shape().dimensions();
  };
  switch (h->opcode()) {
    case HloOpcode::kPad: {
      const std::vector<PadDim>& padding = *attrs.padding;
      std::vector<Int> operand;
      Bool inside = dom_.IntVal(0) == dom_.IntVal(0);
      for (size_t k = 0; k < index.size(); ++k) {
        const int64_t step = padding[k].interior + 1;
        Int t = padding[k].low == 0 ? index[k] : index[k] - dom_.IntVal(padding[k].low);
        Int position = dom_.Div(t, step);
        inside = inside && t >= dom_.IntVal(0) && position < dom_.IntVal(operand_dims(0)[k]);
        if (step != 1) inside = inside && dom_.Mod(t, step) == dom_.IntVal(0);
        operand.push_back(position);
      }
      return Choose<kData>(
          inside, [&]() { return Eval<kData>(h->operand(0), device, operand); },
          [&]() { return Eval<kData>(h->operand(1), device, std::vector<Int>()); });
    }
    case HloOpcode::kConcatenate: {
      const int64_t axis = (*attrs.dimensions)[0];
      std::vector<int64_t> offsets;
      int64_t offset = 0;
      for (int64_t i = 0; i < h->operand_count(); ++i) {
        offsets.push_back(offset);
        offset += operand_dims(i)[axis];
      }
      std::function<Value<kData>(int64_t)> from = [&](int64_t i) -> Value<kData> {
        std::vector<Int> operand = index;
        if (offsets[i] != 0) operand[axis] = index[axis] - dom_.IntVal(offsets[i]);
        if (i + 1 == h->operand_count()) return Eval<kData>(h->operand(i), device, operand);
        return Choose<kData>(
            index[axis] < dom_.IntVal(offsets[i + 1]),
            [&]() { return Eval<kData>(h->operand(i), device, operand); },
            [&]() { return from(i + 1); });
      };
      return from(0);
    }
    case HloOpcode::kDynamicUpdateSlice: {
      const std::vector<int64_t>& update_dims = operand_dims(1);
      std::vector<Int> in_update;
      Bool inside = dom_.IntVal(0) == dom_.IntVal(0);
      for (size_t k = 0; k < index.size(); ++k) {
        Int start = Eval<false>(h->operand(2 + k), device, std::vector<Int>());
        start = Clamp(start, 0, dims[k] - update_dims[k]);
        Int t = index[k] - start;
        inside = inside && t >= dom_.IntVal(0) && t < dom_.IntVal(update_dims[k]);
        in_update.push_back(t);
      }
      return Choose<kData>(
          inside, [&]() { return Eval<kData>(h->operand(1), device, in_update); },
          [&]() { return Eval<kData>(h->operand(0), device, index); });
    }
    case HloOpcode::kSelect: {
      const std::vector<Int> pred_index =
          h->operand(0)->shape().rank() == 0 ? std::vector<Int>() : index;
      Bool pred = dom_.Truth(Eval<false>(h->operand(0), device, pred_index));
      return Choose<kData>(
          pred, [&]() { return Eval<kData>(h->operand(1), device, index); },
          [&]() { return Eval<kData>(h->operand(2), device, index); });
    }
    default:
      return Zero<kData>();  // Unreachable: Eval dispatches only the ops above here.
  }
}

template <typename D>
template <bool kData>
typename ChainEvaluator<D>::template Value<kData> ChainEvaluator<D>::EvalArithmetic(
    const HloInstruction* h, const InstructionFacts& facts, const Int& device,
    const std::vector<Int>& index) {
  const std::vector<int64_t>& dims = h->shape().dimensions();
  const HloAttributes& attrs = h->attrs();
  switch (h->opcode()) {
    case HloOpcode::kAdd: {
      if constexpr (kData) {
        return dom_.Add(Eval<true>(h->operand(0), device, index),
                        Eval<true>(h->operand(1), device, index));
      } else {
        return Eval<false>(h->operand(0), device, index) +
               Eval<false>(h->operand(1), device, index);
      }
    }
    case HloOpcode::kSubtract: {
      if constexpr (kData) {
        return dom_.Add(Eval<true>(h->operand(0), device, index),
                        dom_.Negate(Eval<true>(h->operand(1), device, index)));
      } else {
        return Eval<false>(h->operand(0), device, index) -
               Eval<false>(h->operand(1), device, index);
      }
    }
    case HloOpcode::kMultiply: {
      if constexpr (kData) {
        return dom_.Multiply(Eval<true>(h->operand(0), device, index),
                             Eval<true>(h->operand(1), device, index));
      } else {
        return Eval<false>(h->operand(0), device, index) *
               Eval<false>(h->operand(1), device, index);
      }
    }
    case HloOpcode::kNegate: {
      if constexpr (kData) {
        return dom_.Negate(Eval<true>(h->operand(0), device, index));
      } else {
        return dom_.IntVal(0) - Eval<false>(h->operand(0), device, index);
      }
    }
    case HloOpcode::kConstant: {
      Int key = dims.empty() ? dom_.IntVal(0) : Linear(index, dims);
      if constexpr (kData) {
        return dom_.LookupData(key, facts.data_table);
      } else {
        return dom_.Lookup(key, facts.int_table);
      }
    }
    case HloOpcode::kIota:
      if constexpr (kData) {
        return dom_.FromInt(index[*attrs.iota_dimension]);
      } else {
        return index[*attrs.iota_dimension];
      }
    default:
      return Zero<kData>();  // Unreachable: Eval dispatches only the ops above here.
  }
}

template <typename D>
typename D::Data ChainEvaluator<D>::EvalCollective(const HloInstruction* h,
                                                   const InstructionFacts& facts, const Int& device,
                                                   const std::vector<Int>& index) {
  const std::vector<int64_t>& dims = h->shape().dimensions();
  const HloAttributes& attrs = h->attrs();
  const HloInstruction* operand = h->operand(0);
  switch (h->opcode()) {
    case HloOpcode::kAllGather: {
      const DeviceGroups& g = *facts.groups;
      const int64_t axis = (*attrs.dimensions)[0];
      const int64_t chunk = operand->shape().dimensions()[axis];
      std::vector<Int> at = index;
      at[axis] = dom_.Mod(index[axis], chunk);
      return FromMember(g, GroupOf(g, device), dom_.Div(index[axis], chunk), operand, at);
    }
    case HloOpcode::kAllReduce:
    case HloOpcode::kReduceScatter: {
      const DeviceGroups& g = *facts.groups;
      std::vector<Int> at = index;
      if (h->opcode() == HloOpcode::kReduceScatter) {
        const int64_t axis = (*attrs.dimensions)[0];
        at[axis] = PositionOf(g, device) * dom_.IntVal(dims[axis]) + index[axis];
      }
      Int group = GroupOf(g, device);
      Data sum = dom_.DataVal(0);
      for (int64_t p = 0; p < g.group_size; ++p) {
        Int member = Member(g, group, dom_.IntVal(p));
        if (g.uniform) {
          sum = dom_.Add(sum, Eval<true>(operand, member, at));
        } else {
          Bool present = dom_.IntVal(p) < dom_.Lookup(group, g.sizes);
          sum = dom_.Add(sum, D::Choose(
                                  present, [&]() { return Eval<true>(operand, member, at); },
                                  [&]() { return dom_.DataVal(0); }));
        }
      }
      return sum;
    }
    case HloOpcode::kAllToAll: {
      const DeviceGroups& g = *facts.groups;
      const int64_t axis = (*attrs.dimensions)[0];
      const int64_t chunk = dims[axis] / g.group_size;
      std::vector<Int> at = index;
      at[axis] = PositionOf(g, device) * dom_.IntVal(chunk) + dom_.Mod(index[axis], chunk);
      return FromMember(g, GroupOf(g, device), dom_.Div(index[axis], chunk), operand, at);
    }
    case HloOpcode::kCollectivePermute: {
      Int source = dom_.Lookup(device, facts.permute_source);
      Bool has_source = source >= dom_.IntVal(0);
      return D::Choose(
          has_source,
          [&]() { return Eval<true>(operand, D::IteInt(has_source, source, device), index); },
          [&]() { return dom_.DataVal(0); });
    }
    case HloOpcode::kCollectiveBroadcast: {
      const DeviceGroups& g = *facts.groups;
      return Eval<true>(operand, Member(g, GroupOf(g, device), dom_.IntVal(0)), index);
    }
    default:
      return dom_.DataVal(0);  // Unreachable: ChainModel::Build rejects everything else.
  }
}

template <typename D>
typename D::Int ChainEvaluator<D>::EvalIntegerOp(const HloInstruction* h, const Int& device,
                                                 const std::vector<Int>& index) {
  const HloAttributes& attrs = h->attrs();
  auto operand = [&](int64_t i) { return Eval<false>(h->operand(i), device, index); };
  switch (h->opcode()) {
    case HloOpcode::kPartitionId:
      return device;
    case HloOpcode::kReplicaId:
      return dom_.IntVal(0);
    case HloOpcode::kCompare: {
      Int a = operand(0);
      Int b = operand(1);
      switch (*attrs.direction) {
        case ComparisonDirection::kEq:
          return BoolToInt(a == b);
        case ComparisonDirection::kNe:
          return BoolToInt(a != b);
        case ComparisonDirection::kLt:
          return BoolToInt(a < b);
        case ComparisonDirection::kLe:
          return BoolToInt(a <= b);
        case ComparisonDirection::kGt:
          return BoolToInt(a > b);
        case ComparisonDirection::kGe:
          return BoolToInt(a >= b);
      }
      return dom_.IntVal(0);
    }
    case HloOpcode::kMaximum: {
      Int a = operand(0);
      Int b = operand(1);
      return D::IteInt(a >= b, a, b);
    }
    case HloOpcode::kMinimum: {
      Int a = operand(0);
      Int b = operand(1);
      return D::IteInt(a <= b, a, b);
    }
    case HloOpcode::kClamp: {
      Int lo = operand(0);
      Int x = operand(1);
      Int hi = operand(2);
      Int low_bounded = D::IteInt(x >= lo, x, lo);
      return D::IteInt(low_bounded <= hi, low_bounded, hi);
    }
    case HloOpcode::kAbs: {
      Int a = operand(0);
      return D::IteInt(a >= dom_.IntVal(0), a, dom_.IntVal(0) - a);
    }
    case HloOpcode::kAnd:
      return BoolToInt(dom_.Truth(operand(0)) && dom_.Truth(operand(1)));
    case HloOpcode::kOr:
      return BoolToInt(dom_.Truth(operand(0)) || dom_.Truth(operand(1)));
    case HloOpcode::kNot:
      return BoolToInt(!dom_.Truth(operand(0)));
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder: {
      Int a = operand(0);
      Int b = operand(1);
      Int quotient = dom_.IntVal(0);
      if constexpr (D::kSymbolic) {
        // HLO integer division truncates toward zero; Z3's div is Euclidean.
        Int zero = dom_.IntVal(0);
        Int abs_b = D::IteInt(b < zero, zero - b, b);
        Int abs_q = D::IteInt(a >= zero, a / abs_b, zero - ((zero - a) / abs_b));
        quotient = D::IteInt(b < zero, zero - abs_q, abs_q);
      } else {
        quotient = b == 0 ? -1 : a / b;
      }
      if (h->opcode() == HloOpcode::kDivide) return quotient;
      return a - quotient * b;
    }
    default:
      return dom_.IntVal(0);  // Unreachable: ChainModel::Build rejects everything else.
  }
}

template class ChainEvaluator<ConcreteDomain>;
template class ChainEvaluator<Z3Domain>;

}  // namespace spmdcheck::smt
