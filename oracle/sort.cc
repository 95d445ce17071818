// sort and TopK (the kTopK opcode here; the custom-call form through EvaluateTopK in sort.h).
//
// Rows are sorted with the same stable algorithm as XLA's evaluator (HandleSort): a top-down
// merge sort that splits at size/2 and, when merging, takes the right element only when
// comparator(right, left) is true, with a binary insertion sort for runs shorter than 9. For
// comparators that are strict weak orders this is the unique stable order (what std::stable_sort
// gives); for ones that are not (a plain LT on floats with NaNs, an LE) it reproduces the
// evaluator's result instead of depending on the library's sort.
//
// A comparator that is a single `compare(p[2i], p[2i+1])` (either operand order) runs on typed
// keys (with std::stable_sort on (key, position) pairs when it is a strict weak order: LT/GT
// without NaNs, where every stable sort agrees); every other comparator is called through
// EvalEnv::call.
#include "oracle/sort.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ir/float_types.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"
#include "ir/shape.h"
#include "oracle/element_type_dispatch.h"
#include "oracle/kernel_util.h"
#include "oracle/op_registry.h"

namespace spmdcheck::oracle {
namespace {

absl::Status CheckArrayLiteral(const HloInstruction& instruction, const Literal* literal,
                               absl::string_view what) {
  if (literal == nullptr) return InstructionError(instruction, absl::StrCat(what, " is missing"));
  if (literal->elided()) return Unsupported(instruction, absl::StrCat("an elided ", what));
  if (!literal->shape().IsArray()) {
    return InstructionError(instruction, absl::StrCat(what, " must be an array, got ",
                                                      literal->shape().ToString(false)));
  }
  if (literal->size_bytes() != literal->element_count() * literal->element_byte_width()) {
    return InstructionError(instruction, absl::StrCat(what, " has a malformed buffer"));
  }
  return absl::OkStatus();
}

// ---- The sort algorithm ----------------------------------------------------------------------

// Sorts v[0, size) by `less` (see the file comment for why this exact algorithm).
template <typename Less>
void MergeSort(int64_t* v, int64_t size, std::vector<int64_t>& scratch, Less& less) {
  if (size < 2) return;
  if (size >= 9) {
    const int64_t half = size / 2;
    MergeSort(v, half, scratch, less);
    MergeSort(v + half, size - half, scratch, less);
    scratch.clear();
    int64_t i = 0;
    int64_t j = half;
    while (i < half && j < size) {
      if (less(v[j], v[i])) {
        scratch.push_back(v[j++]);
      } else {
        scratch.push_back(v[i++]);
      }
    }
    while (i < half) scratch.push_back(v[i++]);
    while (j < size) scratch.push_back(v[j++]);
    std::copy(scratch.begin(), scratch.end(), v);
    return;
  }
  // Binary insertion: v[0, i) is sorted; insert v[i] after every element it is not less than.
  for (int64_t i = 1; i < size; ++i) {
    const int64_t needle = v[i];
    int64_t lo = 0;
    int64_t len = i;
    while (len != 0) {
      const int64_t half = len / 2;
      if (less(needle, v[lo + half])) {
        len = half;
      } else {
        lo += half + 1;
        len -= half + 1;
      }
    }
    std::rotate(v + lo, v + i, v + i + 1);
  }
}

// ---- Typed keys for simple comparators -------------------------------------------------------

// How the keys of one operand compare: IEEE (as double), XLA's total order (sign-magnitude bits
// turned into an int64), signed or unsigned integers.
enum class KeyMode { kFloat, kTotalOrder, kSigned, kUnsigned };

struct SimpleComparator {
  int64_t operand = 0;   // Whose elements are compared.
  bool swapped = false;  // compare(rhs, lhs).
  ComparisonDirection direction = ComparisonDirection::kLt;
  KeyMode mode = KeyMode::kFloat;
};

// The element types with typed keys: f32, f64, bf16 and f16 read as doubles, s8..s64 as int64,
// pred and u8..u64 as uint64 (an element type tag's predicates). The others (sub-byte integers,
// the f8 formats, complex) call the comparator.
template <typename Tag>
constexpr bool kFloatKeys = Tag::kIsNativeFloat || (Tag::kIsNarrowFloat && Tag::kBits == 16);
template <typename Tag>
constexpr bool kSignedKeys = Tag::kIsSigned&& Tag::kIsNativeInteger;
template <typename Tag>
constexpr bool kUnsignedKeys = Tag::kIsPred || (Tag::kIsUnsigned && Tag::kIsNativeInteger);

bool IsFastFloat(PrimitiveType type) {
  return DispatchElementTypeIfHandled(type, [](auto tag) { return kFloatKeys<decltype(tag)>; });
}
bool IsFastSigned(PrimitiveType type) {
  return DispatchElementTypeIfHandled(type, [](auto tag) { return kSignedKeys<decltype(tag)>; });
}
bool IsFastUnsigned(PrimitiveType type) {
  return DispatchElementTypeIfHandled(type, [](auto tag) { return kUnsignedKeys<decltype(tag)>; });
}

// The key mode of `compare(..., type=comparison_type)` on `type`, when the fast path covers it.
std::optional<KeyMode> KeyModeFor(PrimitiveType type,
                                  const std::optional<std::string>& comparison_type) {
  const std::string name = comparison_type.value_or("");
  if (IsFastFloat(type)) {
    if (name.empty() || name == "FLOAT") return KeyMode::kFloat;
    if (name == "TOTALORDER") return KeyMode::kTotalOrder;
    return std::nullopt;
  }
  if (IsFastSigned(type) && (name.empty() || name == "SIGNED")) return KeyMode::kSigned;
  if (IsFastUnsigned(type) && (name.empty() || name == "UNSIGNED")) return KeyMode::kUnsigned;
  return std::nullopt;
}

// The total-order key mode for the default TopK comparator.
std::optional<KeyMode> TotalOrderModeFor(PrimitiveType type) {
  if (IsFastFloat(type)) return KeyMode::kTotalOrder;
  if (IsFastSigned(type)) return KeyMode::kSigned;
  if (IsFastUnsigned(type)) return KeyMode::kUnsigned;
  return std::nullopt;
}

// Recognises `ROOT c = pred[] compare(p[2i], p[2i+1])` (either order) over operand i's type.
std::optional<SimpleComparator> MatchSimpleComparator(const HloComputation& computation,
                                                      absl::Span<const Literal* const> operands) {
  const HloInstruction* root = computation.root();
  if (root == nullptr || root->opcode() != HloOpcode::kCompare || root->operand_count() != 2 ||
      !root->attrs().direction || !root->shape().IsArray() ||
      root->shape().element_type() != PrimitiveType::kPred || !root->shape().IsScalar()) {
    return std::nullopt;
  }
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter) {
    return std::nullopt;
  }
  const int64_t pa = a->parameter_number();
  const int64_t pb = b->parameter_number();
  if (pa < 0 || pb < 0 || pa == pb || pa / 2 != pb / 2) return std::nullopt;
  const int64_t operand = pa / 2;
  if (operand >= static_cast<int64_t>(operands.size())) return std::nullopt;
  const PrimitiveType type = operands[operand]->shape().element_type();
  for (const HloInstruction* p : {a, b}) {
    if (!p->shape().IsScalar() || p->shape().element_type() != type) return std::nullopt;
  }
  std::optional<KeyMode> mode = KeyModeFor(type, root->attrs().comparison_type);
  if (!mode) return std::nullopt;
  SimpleComparator result;
  result.operand = operand;
  result.swapped = pa % 2 == 1;
  result.direction = *root->attrs().direction;
  result.mode = *mode;
  return result;
}

int64_t TotalOrderKey(uint64_t bits, int width) {
  int64_t s;
  if (width >= 64) {
    s = static_cast<int64_t>(bits);
  } else {
    const uint64_t sign = uint64_t{1} << (width - 1);
    s = static_cast<int64_t>((bits ^ sign) - sign);
  }
  // Negative values: flip the magnitude bits so that larger magnitudes order first.
  if (s < 0) {
    const int64_t magnitude_mask = width >= 64
                                       ? std::numeric_limits<int64_t>::max()
                                       : static_cast<int64_t>((uint64_t{1} << (width - 1)) - 1);
    s ^= magnitude_mask;
  }
  return s;
}

// Keys of elements base + j * stride, j in [0, n), of `literal` (a fast type for `mode`): doubles
// for kFloat, signeds for kTotalOrder and kSigned, unsigneds for kUnsigned.
absl::Status ExtractKeys(const Literal& literal, KeyMode mode, int64_t base, int64_t stride,
                         int64_t n, std::vector<double>& doubles, std::vector<int64_t>& signeds,
                         std::vector<uint64_t>& unsigneds) {
  const PrimitiveType type = literal.shape().element_type();
  if (mode == KeyMode::kTotalOrder) {
    signeds.resize(static_cast<size_t>(n));
    const int width = BitWidth(type);
    for (int64_t j = 0; j < n; ++j) {
      signeds[j] = TotalOrderKey(literal.GetBits(base + j * stride), width);
    }
    return absl::OkStatus();
  }
  // kFloat, kSigned and kUnsigned are the modes of the float, signed and unsigned fast types.
  return DispatchElementType(type, [&](auto tag) {
    using Tag = decltype(tag);
    using S = typename Tag::Storage;
    if constexpr (kFloatKeys<Tag>) {
      doubles.resize(static_cast<size_t>(n));
      const S* data = literal.data<S>().data();
      for (int64_t j = 0; j < n; ++j) {
        if constexpr (Tag::kIsNativeFloat) {
          doubles[j] = data[base + j * stride];
        } else {
          doubles[j] = NarrowBitsToFloat(Tag::kType, data[base + j * stride]);
        }
      }
    } else if constexpr (kSignedKeys<Tag>) {
      signeds.resize(static_cast<size_t>(n));
      const S* data = literal.data<S>().data();
      // NOLINTNEXTLINE(bugprone-signed-char-misuse): s8 keys are signed; sign-extend.
      for (int64_t j = 0; j < n; ++j) signeds[j] = data[base + j * stride];
    } else if constexpr (kUnsignedKeys<Tag>) {
      unsigneds.resize(static_cast<size_t>(n));
      const S* data = literal.data<S>().data();
      for (int64_t j = 0; j < n; ++j) unsigneds[j] = data[base + j * stride];
    }
  });
}

template <typename K>
bool CompareKeys(ComparisonDirection direction, K a, K b) {
  switch (direction) {
    case ComparisonDirection::kEq:
      return a == b;
    case ComparisonDirection::kNe:
      return a != b;
    case ComparisonDirection::kLt:
      return a < b;
    case ComparisonDirection::kLe:
      return a <= b;
    case ComparisonDirection::kGt:
      return a > b;
    case ComparisonDirection::kGe:
      return a >= b;
  }
  return false;
}

// LT/GT on keys without NaNs is a strict weak order: then every stable sort gives the same
// (unique) result, and std::stable_sort on (key, position) pairs is the fastest way to get it.
template <typename K>
bool SortPairsIfStrict(const std::vector<K>& keys, const SimpleComparator& cmp,
                       std::vector<int64_t>& perm) {
  bool greater;
  switch (cmp.direction) {
    case ComparisonDirection::kLt:
      greater = cmp.swapped;
      break;
    case ComparisonDirection::kGt:
      greater = !cmp.swapped;
      break;
    default:
      return false;
  }
  if constexpr (std::is_floating_point_v<K>) {
    for (K key : keys) {
      if (std::isnan(key)) return false;
    }
  }
  std::vector<std::pair<K, int64_t>> pairs(keys.size());
  for (size_t j = 0; j < keys.size(); ++j) pairs[j] = {keys[j], static_cast<int64_t>(j)};
  if (greater) {
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const auto& x, const auto& y) { return x.first > y.first; });
  } else {
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
  }
  for (size_t j = 0; j < pairs.size(); ++j) perm[j] = pairs[j].second;
  return true;
}

template <typename K>
void SortByKeys(const std::vector<K>& keys, const SimpleComparator& cmp, std::vector<int64_t>& perm,
                std::vector<int64_t>& scratch) {
  if (SortPairsIfStrict(keys, cmp, perm)) return;
  // Specialise the common directions so the hot comparison is branch-free.
  auto run = [&](auto compare) {
    auto less = [&](int64_t x, int64_t y) {
      return cmp.swapped ? compare(keys[y], keys[x]) : compare(keys[x], keys[y]);
    };
    MergeSort(perm.data(), static_cast<int64_t>(perm.size()), scratch, less);
  };
  switch (cmp.direction) {
    case ComparisonDirection::kLt:
      run([](K a, K b) { return a < b; });
      break;
    case ComparisonDirection::kGt:
      run([](K a, K b) { return a > b; });
      break;
    default: {
      const ComparisonDirection direction = cmp.direction;
      run([direction](K a, K b) { return CompareKeys(direction, a, b); });
      break;
    }
  }
}

// ---- Row sorter ------------------------------------------------------------------------------

// Sorts rows of `operands` (all of the same dims) along one dim: either with a simple comparator
// on typed keys, or by calling `computation` with 2N scalars per comparison.
class RowSorter {
 public:
  RowSorter(const HloInstruction& instruction, absl::Span<const Literal* const> operands,
            const HloComputation* computation, std::optional<SimpleComparator> simple,
            const EvalEnv& env)
      : instruction_(instruction),
        operands_(operands),
        computation_(computation),
        simple_(simple),
        env_(env) {}

  // Sorts elements base + j * stride, j in [0, n), leaving the permutation in perm.
  absl::Status SortRow(int64_t base, int64_t stride, int64_t n, std::vector<int64_t>& perm) {
    perm.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) perm[j] = j;
    if (n < 2) return absl::OkStatus();
    if (simple_) {
      if (absl::Status s = ExtractKeys(*operands_[simple_->operand], simple_->mode, base, stride, n,
                                       doubles_, signeds_, unsigneds_);
          !s.ok()) {
        return s;
      }
      switch (simple_->mode) {
        case KeyMode::kFloat:
          SortByKeys(doubles_, *simple_, perm, scratch_);
          break;
        case KeyMode::kUnsigned:
          SortByKeys(unsigneds_, *simple_, perm, scratch_);
          break;
        default:
          SortByKeys(signeds_, *simple_, perm, scratch_);
          break;
      }
      return absl::OkStatus();
    }
    if (!env_.call) {
      return InstructionError(instruction_, "no computation evaluator in the environment");
    }
    // One scalar literal per element of the row and operand, reused across rows.
    const int64_t count = static_cast<int64_t>(operands_.size());
    if (static_cast<int64_t>(scalars_.size()) != count * n) {
      scalars_.clear();
      for (int64_t i = 0; i < count; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          scalars_.emplace_back(Shape::Scalar(operands_[i]->shape().element_type()));
        }
      }
    }
    for (int64_t i = 0; i < count; ++i) {
      const int64_t w = operands_[i]->element_byte_width();
      for (int64_t j = 0; j < n; ++j) {
        std::memcpy(scalars_[i * n + j].raw_data(),
                    operands_[i]->raw_data() + (base + j * stride) * w, static_cast<size_t>(w));
      }
    }
    args_.assign(static_cast<size_t>(2 * count), nullptr);
    absl::Status status;
    auto less = [&](int64_t x, int64_t y) -> bool {
      if (!status.ok()) return false;
      for (int64_t i = 0; i < count; ++i) {
        args_[2 * i] = &scalars_[i * n + x];
        args_[2 * i + 1] = &scalars_[i * n + y];
      }
      absl::StatusOr<Literal> value = env_.call(*computation_, args_);
      if (!value.ok()) {
        status = value.status();
        return false;
      }
      if (!value->shape().IsScalar() || value->shape().element_type() != PrimitiveType::kPred) {
        status = InstructionError(
            instruction_, absl::StrCat("comparator returned ", value->shape().ToString(false),
                                       ", expected pred[]"));
        return false;
      }
      return value->GetBits(0) != 0;
    };
    MergeSort(perm.data(), n, scratch_, less);
    return status;
  }

 private:
  const HloInstruction& instruction_;
  absl::Span<const Literal* const> operands_;
  const HloComputation* computation_;
  std::optional<SimpleComparator> simple_;
  const EvalEnv& env_;
  std::vector<int64_t> scratch_;
  std::vector<double> doubles_;
  std::vector<int64_t> signeds_;
  std::vector<uint64_t> unsigneds_;
  std::vector<Literal> scalars_;
  std::vector<const Literal*> args_;
};

// ---- sort ------------------------------------------------------------------------------------

absl::StatusOr<Literal> HandleSort(const HloInstruction& instruction,
                                   absl::Span<const Literal* const> operands, const EvalEnv& env) {
  if (operands.empty()) return InstructionError(instruction, "expects at least one operand");
  for (const Literal* operand : operands) {
    if (absl::Status s = CheckArrayLiteral(instruction, operand, "operand"); !s.ok()) return s;
  }
  const std::vector<int64_t>& dims = operands[0]->shape().dimensions();
  for (const Literal* operand : operands) {
    if (operand->shape().dimensions() != dims) {
      return InstructionError(instruction, "sort operands must have equal dims");
    }
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  const std::optional<std::vector<int64_t>>& dimensions = instruction.attrs().dimensions;
  if (!dimensions || dimensions->size() != 1) {
    return InstructionError(instruction, "expects dimensions={d} with exactly one entry");
  }
  const int64_t dim = (*dimensions)[0];
  if (dim < 0 || dim >= rank) {
    return InstructionError(
        instruction, absl::StrCat("sort dimension ", dim, " is out of range for rank ", rank));
  }
  const HloComputation* comparator = instruction.called_computation("to_apply");
  if (comparator == nullptr) return InstructionError(instruction, "missing to_apply");
  if (comparator->is_opaque() || comparator->root() == nullptr) {
    return Unsupported(instruction, "an opaque comparator");
  }
  const int64_t count = static_cast<int64_t>(operands.size());
  if (static_cast<int64_t>(comparator->parameters().size()) != 2 * count) {
    return InstructionError(instruction,
                            absl::StrCat("comparator must take ", 2 * count, " parameters"));
  }
  const Shape& shape = instruction.shape();
  auto matches = [&](const Shape& s, int64_t i) {
    return s.IsArray() && s.element_type() == operands[i]->shape().element_type() &&
           s.dimensions() == dims;
  };
  bool shape_ok;
  if (shape.IsTuple()) {
    shape_ok = shape.tuple_size() == count;
    for (int64_t i = 0; shape_ok && i < count; ++i) shape_ok = matches(shape.tuple_shapes()[i], i);
  } else {
    shape_ok = count == 1 && matches(shape, 0);
  }
  if (!shape_ok) {
    return InstructionError(instruction, absl::StrCat("result shape ", shape.ToString(false),
                                                      " does not match the operands"));
  }
  std::vector<Literal> results;
  for (int64_t i = 0; i < count; ++i) {
    absl::StatusOr<Literal> literal =
        Literal::CreateChecked(shape.IsTuple() ? shape.tuple_shapes()[i] : shape);
    if (!literal.ok()) return literal.status();
    results.push_back(*std::move(literal));
  }

  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= dims[d];
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < rank; ++d) inner *= dims[d];
  const int64_t n = dims[dim];
  if (outer * inner * n > 0) {
    RowSorter sorter(instruction, operands, comparator,
                     MatchSimpleComparator(*comparator, operands), env);
    std::vector<int64_t> perm;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        const int64_t base = o * n * inner + in;
        if (absl::Status s = sorter.SortRow(base, inner, n, perm); !s.ok()) return s;
        for (int64_t i = 0; i < count; ++i) {
          const int64_t w = results[i].element_byte_width();
          const uint8_t* src = operands[i]->raw_data();
          uint8_t* dst = results[i].raw_data();
          for (int64_t j = 0; j < n; ++j) {
            std::memcpy(dst + (base + j * inner) * w, src + (base + perm[j] * inner) * w,
                        static_cast<size_t>(w));
          }
        }
      }
    }
  }
  if (!shape.IsTuple()) return std::move(results[0]);
  return Literal::Tuple(std::move(results));
}

// ---- TopK ------------------------------------------------------------------------------------

// Rows along the last dim of `operand`, first k of a stable sort by the comparator.
absl::StatusOr<Literal> TopKImpl(const HloInstruction& instruction, const Literal& operand,
                                 const HloComputation* comparator, bool largest,
                                 const EvalEnv& env) {
  const Shape& shape = instruction.shape();
  const std::vector<int64_t>& dims = operand.shape().dimensions();
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (rank < 1) return InstructionError(instruction, "operand must have rank >= 1");
  if (!shape.IsTuple() || shape.tuple_size() != 2 || !shape.tuple_shapes()[0].IsArray() ||
      !shape.tuple_shapes()[1].IsArray()) {
    return InstructionError(instruction, absl::StrCat("result shape ", shape.ToString(false),
                                                      " must be (values, indices)"));
  }
  const Shape& values_shape = shape.tuple_shapes()[0];
  const Shape& indices_shape = shape.tuple_shapes()[1];
  if (values_shape.rank() != rank) {
    return InstructionError(instruction, "values must have the operand's rank");
  }
  const int64_t n = dims[rank - 1];
  const int64_t k = values_shape.dimensions(rank - 1);
  std::vector<int64_t> expected = dims;
  expected[rank - 1] = k;
  if (k < 0 || k > n || values_shape.element_type() != operand.shape().element_type() ||
      values_shape.dimensions() != expected ||
      indices_shape.element_type() != PrimitiveType::kS32 ||
      indices_shape.dimensions() != expected) {
    return InstructionError(
        instruction, absl::StrCat("result shape ", shape.ToString(false), " does not fit operand ",
                                  operand.shape().ToString(false)));
  }

  // The sort operands: the values, plus an s32 iota along the last dim for a 4-parameter
  // comparator.
  std::vector<const Literal*> sort_operands = {&operand};
  Literal iota;
  std::optional<SimpleComparator> simple;
  if (comparator != nullptr) {
    if (comparator->is_opaque() || comparator->root() == nullptr) {
      return Unsupported(instruction, "an opaque comparator");
    }
    const size_t params = comparator->parameters().size();
    if (params == 4) {
      if (n > std::numeric_limits<int32_t>::max()) {
        return InstructionError(instruction, "row too long for s32 indices");
      }
      iota = Literal(Shape::Array(PrimitiveType::kS32, dims));
      absl::Span<int32_t> data = iota.data<int32_t>();
      for (int64_t i = 0; i < static_cast<int64_t>(data.size()); ++i) {
        data[i] = static_cast<int32_t>(i % n);
      }
      sort_operands.push_back(&iota);
    } else if (params != 2) {
      return InstructionError(instruction, "TopK comparator must take 2 or 4 parameters");
    }
    simple = MatchSimpleComparator(*comparator, sort_operands);
  } else {
    std::optional<KeyMode> mode = TotalOrderModeFor(operand.shape().element_type());
    if (!mode) {
      return Unsupported(
          instruction, absl::StrCat("TopK on ", PrimitiveTypeName(operand.shape().element_type())));
    }
    SimpleComparator cmp;
    cmp.operand = 0;
    cmp.direction = largest ? ComparisonDirection::kGt : ComparisonDirection::kLt;
    cmp.mode = *mode;
    simple = cmp;
  }

  absl::StatusOr<Literal> values_or = Literal::CreateChecked(values_shape);
  if (!values_or.ok()) return values_or.status();
  absl::StatusOr<Literal> indices_or = Literal::CreateChecked(indices_shape);
  if (!indices_or.ok()) return indices_or.status();
  Literal values = *std::move(values_or);
  Literal indices = *std::move(indices_or);
  if (k > 0) {
    int64_t rows = 1;
    for (int64_t d = 0; d + 1 < rank; ++d) rows *= dims[d];
    RowSorter sorter(instruction, sort_operands, comparator, simple, env);
    std::vector<int64_t> perm;
    const int64_t w = operand.element_byte_width();
    const uint8_t* src = operand.raw_data();
    uint8_t* dst = values.raw_data();
    int32_t* out_indices = indices.data<int32_t>().data();
    for (int64_t r = 0; r < rows; ++r) {
      if (absl::Status s = sorter.SortRow(r * n, 1, n, perm); !s.ok()) return s;
      for (int64_t j = 0; j < k; ++j) {
        std::memcpy(dst + (r * k + j) * w, src + (r * n + perm[j]) * w, static_cast<size_t>(w));
        out_indices[r * k + j] = static_cast<int32_t>(perm[j]);
      }
    }
  }
  std::vector<Literal> elements;
  elements.push_back(std::move(values));
  elements.push_back(std::move(indices));
  return Literal::Tuple(std::move(elements));
}

// `largest=true|false` written on the instruction; `fallback` when absent.
absl::StatusOr<bool> LargestAttribute(const HloInstruction& instruction, bool fallback) {
  const RawAttribute* attr = instruction.FindRawAttribute("largest");
  if (attr == nullptr) return fallback;
  if (attr->text == "true") return true;
  if (attr->text == "false") return false;
  return InstructionError(instruction, absl::StrCat("largest=", attr->text, " is not a bool"));
}

// The `topk(x), k=K, largest=B` opcode: XLA decomposes it into a stable sort with a total-order
// greater-than (largest) or less-than comparator.
absl::StatusOr<Literal> HandleTopK(const HloInstruction& instruction,
                                   absl::Span<const Literal* const> operands, const EvalEnv& env) {
  if (operands.size() != 1) return InstructionError(instruction, "expects one operand");
  if (absl::Status s = CheckArrayLiteral(instruction, operands[0], "operand"); !s.ok()) return s;
  absl::StatusOr<bool> largest = LargestAttribute(instruction, true);
  if (!largest.ok()) return largest.status();
  const RawAttribute* k_attr = instruction.FindRawAttribute("k");
  int64_t k = 0;
  if (k_attr == nullptr || !absl::SimpleAtoi(k_attr->text, &k)) {
    return InstructionError(instruction, "missing or malformed attribute k");
  }
  const Shape& shape = instruction.shape();
  if (!shape.IsTuple() || shape.tuple_size() != 2 || !shape.tuple_shapes()[0].IsArray() ||
      shape.tuple_shapes()[0].rank() < 1 || shape.tuple_shapes()[0].dimensions().back() != k) {
    return InstructionError(instruction, absl::StrCat("k=", k, " does not match the result shape ",
                                                      shape.ToString(false)));
  }
  if (instruction.called_computation("to_apply") != nullptr) {
    return Unsupported(instruction, "topk with a to_apply computation");
  }
  return TopKImpl(instruction, *operands[0], nullptr, *largest, env);
}

}  // namespace

absl::StatusOr<Literal> EvaluateTopK(const HloInstruction& instruction,
                                     absl::Span<const Literal* const> operands,
                                     const EvalEnv& env) {
  if (operands.size() != 1) return InstructionError(instruction, "TopK expects one operand");
  if (absl::Status s = CheckArrayLiteral(instruction, operands[0], "operand"); !s.ok()) return s;
  absl::StatusOr<bool> largest = LargestAttribute(instruction, true);
  if (!largest.ok()) return largest.status();
  // The comparator is written as to_apply= (TopkRewriter) or as a one-entry
  // called_computations={...}.
  const HloComputation* comparator = instruction.called_computation("to_apply");
  if (comparator == nullptr) {
    for (const CalledComputations& called : instruction.called()) {
      if (called.role == "called_computations" && called.computations.size() == 1) {
        comparator = called.computations[0];
      } else if (called.role == "called_computations" && called.computations.size() > 1) {
        return Unsupported(instruction, "TopK with several called computations");
      }
    }
  }
  return TopKImpl(instruction, *operands[0], comparator, *largest, env);
}

void RegisterSortOps(OpRegistry& registry) {
  registry.Register(HloOpcode::kSort, HandleSort);
  registry.Register(HloOpcode::kTopK, HandleTopK);
}

}  // namespace spmdcheck::oracle
