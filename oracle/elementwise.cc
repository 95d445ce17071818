// Elementwise ops: arithmetic, bitwise logic, shifts, math functions, compare, select, clamp,
// convert, bitcast-convert, reduce-precision, copy and real/imag/complex.
//
// Kernels are templates over an element "traits" type: S is the C++ type of one element in the
// literal buffer, C the type XLA's evaluator computes in (bf16, f16 and the f8 types in f32, as
// HloEvaluatorTypedVisitor<bfloat16, float> does; sub-byte integers in 64 bits), and Load/Store
// convert between the two (Store rounds to nearest even for narrow floats, wraps for integers).
// Integer arithmetic wraps modulo 2^n; the evaluator's edge cases (x / 0, INT_MIN / -1, x % 0,
// out-of-range shifts, saturating float->int convert) follow docs/xla-semantics §4.9.

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/float_types.h"
#include "ir/hlo_attributes.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"
#include "ir/primitive_type.h"
#include "ir/shape.h"
#include "oracle/element_type_dispatch.h"
#include "oracle/kernel_util.h"
#include "oracle/op_registry.h"

namespace spmdcheck::oracle {
namespace {

// ---- Element traits -------------------------------------------------------------------------

enum class Cat : uint8_t { kPred, kInt, kFloat, kComplex };

struct PredTr {
  using S = uint8_t;
  using C = bool;
  static constexpr Cat kCat = Cat::kPred;
  static C Load(S s) { return s != 0; }
  static S Store(C c) { return c ? 1 : 0; }
};

template <typename T>
struct IntTr {
  using S = T;
  using C = T;
  static constexpr Cat kCat = Cat::kInt;
  static constexpr bool kSigned = std::is_signed_v<T>;
  static constexpr int kBits = 8 * sizeof(T);
  static C Load(S s) { return s; }
  static S Store(C c) { return c; }
};

// s2/s4/u2/u4: one byte per element holding the low kBits bits; computed in 64 bits.
template <bool kSignedV, int kBitsV>
struct SubIntTr {
  using S = uint8_t;
  using C = std::conditional_t<kSignedV, int64_t, uint64_t>;
  static constexpr Cat kCat = Cat::kInt;
  static constexpr bool kSigned = kSignedV;
  static constexpr int kBits = kBitsV;
  static constexpr uint64_t kMask = (uint64_t{1} << kBitsV) - 1;
  static C Load(S s) {
    const uint64_t v = s & kMask;
    if constexpr (kSignedV) {
      const uint64_t sign = uint64_t{1} << (kBitsV - 1);
      return static_cast<int64_t>((v ^ sign) - sign);
    } else {
      return v;
    }
  }
  static S Store(C c) { return static_cast<S>(static_cast<uint64_t>(c) & kMask); }
};

template <typename T>
struct FloatTr {
  using S = T;
  using C = T;
  static constexpr Cat kCat = Cat::kFloat;
  static constexpr bool kSigned = true;
  static constexpr int kBits = 8 * sizeof(T);
  static C Load(S s) { return s; }
  static S Store(C c) { return c; }
};

// Eigen's float -> bfloat16: round to nearest even on the upper half; NaN -> quiet NaN with sign.
// (Branch-free so that loops over it vectorize.)
inline uint16_t F32ToBf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = ((bits >> 16) & 0x8000u) | 0x7FC0u;
  const bool is_nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
  return static_cast<uint16_t>(is_nan ? quiet_nan : rounded);
}

struct BF16Tr {
  using S = uint16_t;
  using C = float;
  static constexpr Cat kCat = Cat::kFloat;
  static C Load(S s) { return std::bit_cast<float>(static_cast<uint32_t>(s) << 16); }
  static S Store(C c) { return F32ToBf16(c); }
};

template <PrimitiveType kType, typename Bits>
struct NarrowTr {
  using S = Bits;
  using C = float;
  static constexpr Cat kCat = Cat::kFloat;
  static constexpr bool kSigned = true;
  static constexpr int kBits = 8 * sizeof(Bits);
  // ml_dtypes converts f64 to the f8 types in one rounding (Eigen's f16 goes through f32).
  static constexpr bool kDirectFromF64 = sizeof(Bits) == 1;
  static C Load(S s) { return NarrowBitsToFloat(kType, s); }
  static S Store(C c) { return static_cast<S>(FloatToNarrowBits(kType, c)); }
};

template <typename T>
struct ComplexTr {
  using S = std::complex<T>;
  using C = std::complex<T>;
  static constexpr Cat kCat = Cat::kComplex;
  static constexpr bool kSigned = true;
  static constexpr int kBits = 16 * sizeof(T);
  static C Load(S s) { return s; }
  static S Store(C c) { return c; }
};

// The traits of element type Tag (an ElementTypeTag, oracle/element_type_dispatch.h).
template <typename Tag>
auto TraitsOf() {
  using S = typename Tag::Storage;
  if constexpr (Tag::kIsPred) {
    return PredTr{};
  } else if constexpr (Tag::kIsSubByte) {
    return SubIntTr<Tag::kIsSigned, Tag::kBits>{};
  } else if constexpr (Tag::kIsInteger) {
    return IntTr<S>{};
  } else if constexpr (Tag::kType == PrimitiveType::kBF16) {
    return BF16Tr{};
  } else if constexpr (Tag::kIsNarrowFloat) {
    return NarrowTr<Tag::kType, S>{};
  } else if constexpr (Tag::kIsFloat) {
    return FloatTr<S>{};
  } else {
    static_assert(Tag::kIsComplex);
    return ComplexTr<typename S::value_type>{};
  }
}

template <typename Tag>
using TraitsFor = decltype(TraitsOf<Tag>());

// Calls fn(Traits{}) for the element type; an error when the type has no elements (token, tuple).
template <typename Fn>
absl::Status DispatchType(PrimitiveType type, Fn&& fn) {
  return DispatchElementType(type, [&](auto tag) { return fn(TraitsFor<decltype(tag)>{}); });
}

std::optional<Cat> CatOf(PrimitiveType type) {
  if (type == PrimitiveType::kPred) return Cat::kPred;
  if (IsIntegralType(type)) return Cat::kInt;
  if (IsFloatingType(type)) return Cat::kFloat;
  if (IsComplexType(type)) return Cat::kComplex;
  return std::nullopt;
}

bool IsFnuz(PrimitiveType type) {
  return type == PrimitiveType::kF8E4M3B11FNUZ || type == PrimitiveType::kF8E5M2FNUZ ||
         type == PrimitiveType::kF8E4M3FNUZ;
}

// Unsigned type of at least 32 bits for wrap-around arithmetic without promotion to int.
template <typename C>
using Wide = std::conditional_t<(sizeof(C) <= 4), uint32_t, uint64_t>;

constexpr uint64_t LowMask(int bits) {
  return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

// ---- Validation -----------------------------------------------------------------------------

std::string TypeName(PrimitiveType type) { return std::string(PrimitiveTypeName(type)); }

bool AnyElided(const Literal& literal) {
  if (literal.elided()) return true;
  for (const Literal& element : literal.tuple_elements()) {
    if (AnyElided(element)) return true;
  }
  return false;
}

absl::Status CheckOperandCount(const HloInstruction& instr,
                               absl::Span<const Literal* const> operands, size_t count) {
  if (operands.size() != count) {
    return InstructionError(instr,
                            absl::StrCat("expects ", count, " operands, got ", operands.size()));
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i] == nullptr) {
      return InstructionError(instr, absl::StrCat("operand ", i, " has no value"));
    }
  }
  return absl::OkStatus();
}

// An array operand with a buffer that matches its shape.
absl::Status CheckArrayOperand(const HloInstruction& instr, const Literal& literal, size_t index) {
  const Shape& shape = literal.shape();
  if (!shape.IsArray()) {
    return InstructionError(
        instr, absl::StrCat("operand ", index, " must be an array, got ", shape.ToString(false)));
  }
  if (literal.elided()) {
    return Unsupported(instr, absl::StrCat("operand ", index, " with elided contents"));
  }
  if (!CatOf(shape.element_type()).has_value()) {
    return InstructionError(instr, absl::StrCat("operand ", index, " has element type ",
                                                TypeName(shape.element_type())));
  }
  if (literal.size_bytes() != literal.element_count() * ByteWidth(shape.element_type())) {
    return InstructionError(
        instr, absl::StrCat("operand ", index, " buffer does not match ", shape.ToString(false)));
  }
  return absl::OkStatus();
}

absl::Status CheckAllArrays(const HloInstruction& instr,
                            absl::Span<const Literal* const> operands) {
  for (size_t i = 0; i < operands.size(); ++i) {
    absl::Status status = CheckArrayOperand(instr, *operands[i], i);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

std::string DimsText(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

// The instruction's own shape must be an array of `type` with `dims`.
absl::Status CheckResultShape(const HloInstruction& instr, PrimitiveType type,
                              const std::vector<int64_t>& dims) {
  const Shape& shape = instr.shape();
  if (!shape.IsArray()) {
    return InstructionError(
        instr, absl::StrCat("result shape ", shape.ToString(false), " must be an array"));
  }
  if (shape.element_type() != type) {
    return InstructionError(
        instr, absl::StrCat("result element type ", TypeName(shape.element_type()), " must be ",
                            TypeName(type)));
  }
  if (shape.dimensions() != dims) {
    return InstructionError(instr, absl::StrCat("result dims ", DimsText(shape.dimensions()),
                                                " must be ", DimsText(dims)));
  }
  return absl::OkStatus();
}

absl::Status SameDims(const HloInstruction& instr, const Literal& a, const Literal& b,
                      size_t index_b) {
  if (a.shape().dimensions() != b.shape().dimensions()) {
    return InstructionError(
        instr, absl::StrCat("operand ", index_b, " ", b.shape().ToString(false),
                            " must have the dims of operand 0 ", a.shape().ToString(false)));
  }
  return absl::OkStatus();
}

absl::Status SameType(const HloInstruction& instr, const Literal& a, const Literal& b,
                      size_t index_b) {
  if (a.shape().element_type() != b.shape().element_type()) {
    return InstructionError(instr, absl::StrCat("operand ", index_b, " ", b.shape().ToString(false),
                                                " must have the element type of operand 0 ",
                                                a.shape().ToString(false)));
  }
  return absl::OkStatus();
}

absl::Status BadType(const HloInstruction& instr, PrimitiveType type) {
  return InstructionError(
      instr, absl::StrCat("element type ", TypeName(type), " is not valid for this op"));
}

// Copies the element bytes of `from` into `to` (same element type and element count).
void CopyBytes(const Literal& from, Literal& to) {
  if (from.size_bytes() > 0 && from.size_bytes() == to.size_bytes()) {
    std::memcpy(to.raw_data(), from.raw_data(), static_cast<size_t>(from.size_bytes()));
  }
}

#define SPMDCHECK_EW_RETURN_IF_ERROR(expr) \
  do {                                     \
    absl::Status status_ = (expr);         \
    if (!status_.ok()) return status_;     \
  } while (false)

// ---- Op support tables ----------------------------------------------------------------------

enum class Support : uint8_t { kOk, kBadType, kUnsupported };

constexpr Support UnarySupport(HloOpcode op, Cat cat) {
  const bool real = cat == Cat::kFloat;
  const bool complex = cat == Cat::kComplex;
  switch (op) {
    case HloOpcode::kNegate:
    case HloOpcode::kSign:
      return cat == Cat::kPred ? Support::kBadType : Support::kOk;
    case HloOpcode::kAbs:  // Complex abs changes the element type: handled separately.
      return cat == Cat::kPred ? Support::kBadType
                               : (complex ? Support::kUnsupported : Support::kOk);
    case HloOpcode::kNot:
      return cat == Cat::kPred || cat == Cat::kInt ? Support::kOk : Support::kBadType;
    case HloOpcode::kPopulationCount:
    case HloOpcode::kClz:
      return cat == Cat::kInt ? Support::kOk : Support::kBadType;
    case HloOpcode::kExp:
    case HloOpcode::kLog:
    case HloOpcode::kSqrt:
    case HloOpcode::kRsqrt:
    case HloOpcode::kTanh:
    case HloOpcode::kSin:
    case HloOpcode::kCos:
    case HloOpcode::kTan:
    case HloOpcode::kLogistic:
      return real || complex ? Support::kOk : Support::kBadType;
    case HloOpcode::kExpm1:
    case HloOpcode::kLog1p:
    case HloOpcode::kCbrt:
    case HloOpcode::kErf:
      return real ? Support::kOk : (complex ? Support::kUnsupported : Support::kBadType);
    case HloOpcode::kFloor:
    case HloOpcode::kCeil:
    case HloOpcode::kRoundNearestEven:
    case HloOpcode::kRoundNearestAfz:
      return real ? Support::kOk : Support::kBadType;
    default:
      return Support::kUnsupported;
  }
}

constexpr Support BinarySupport(HloOpcode op, Cat cat) {
  switch (op) {
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide:
    case HloOpcode::kPower:
      return cat == Cat::kPred ? Support::kBadType : Support::kOk;
    case HloOpcode::kRemainder:
      return cat == Cat::kInt || cat == Cat::kFloat ? Support::kOk : Support::kBadType;
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
      return cat == Cat::kComplex ? Support::kBadType : Support::kOk;
    case HloOpcode::kAtan2:
      return cat == Cat::kFloat
                 ? Support::kOk
                 : (cat == Cat::kComplex ? Support::kUnsupported : Support::kBadType);
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kXor:
      return cat == Cat::kPred || cat == Cat::kInt ? Support::kOk : Support::kBadType;
    case HloOpcode::kShiftLeft:
    case HloOpcode::kShiftRightLogical:
    case HloOpcode::kShiftRightArithmetic:
      return cat == Cat::kInt ? Support::kOk : Support::kBadType;
    default:
      return Support::kUnsupported;
  }
}

absl::Status SupportStatus(const HloInstruction& instr, Support support, PrimitiveType type) {
  switch (support) {
    case Support::kOk:
      return absl::OkStatus();
    case Support::kBadType:
      return BadType(instr, type);
    case Support::kUnsupported:
      return Unsupported(instr,
                         absl::StrCat(HloOpcodeString(instr.opcode()), " on ", TypeName(type)));
  }
  return absl::OkStatus();
}

// ---- Scalar semantics -----------------------------------------------------------------------

template <HloOpcode kOp, typename Tr>
typename Tr::C UnaryOp(typename Tr::C x) {
  using C = typename Tr::C;
  constexpr Cat cat = Tr::kCat;
  if constexpr (kOp == HloOpcode::kNegate) {
    if constexpr (cat == Cat::kInt) {
      return static_cast<C>(-static_cast<Wide<C>>(x));
    } else {
      return -x;
    }
  } else if constexpr (kOp == HloOpcode::kAbs) {
    if constexpr (cat == Cat::kInt) {
      if constexpr (Tr::kSigned) {
        // abs(INT_MIN) = INT_MIN (two's complement wrap), as std::abs yields in the evaluator.
        return x < 0 ? static_cast<C>(-static_cast<Wide<C>>(x)) : x;
      } else {
        return x;
      }
    } else {
      return std::abs(x);
    }
  } else if constexpr (kOp == HloOpcode::kSign) {
    if constexpr (cat == Cat::kInt) {
      if constexpr (Tr::kSigned) {
        return static_cast<C>((C(0) < x) - (x < C(0)));
      } else {
        return static_cast<C>(x != C(0) ? 1 : 0);
      }
    } else if constexpr (cat == Cat::kFloat) {
      return std::isnan(x) ? x : std::copysign(x != C(0) ? C(1) : C(0), x);
    } else {
      const auto magnitude = std::abs(x);
      return magnitude == 0 ? C(0) : x / magnitude;
    }
  } else if constexpr (kOp == HloOpcode::kNot) {
    if constexpr (cat == Cat::kPred) {
      return !x;
    } else {
      return static_cast<C>(~x);
    }
  } else if constexpr (kOp == HloOpcode::kPopulationCount) {
    return static_cast<C>(std::popcount(static_cast<uint64_t>(x) & LowMask(Tr::kBits)));
  } else if constexpr (kOp == HloOpcode::kClz) {
    return static_cast<C>(std::countl_zero(static_cast<uint64_t>(x) & LowMask(Tr::kBits)) -
                          (64 - Tr::kBits));
  } else if constexpr (kOp == HloOpcode::kExp) {
    return std::exp(x);
  } else if constexpr (kOp == HloOpcode::kLog) {
    return std::log(x);
  } else if constexpr (kOp == HloOpcode::kSqrt) {
    return std::sqrt(x);
  } else if constexpr (kOp == HloOpcode::kRsqrt) {
    return C(1) / std::sqrt(x);
  } else if constexpr (kOp == HloOpcode::kTanh) {
    return std::tanh(x);
  } else if constexpr (kOp == HloOpcode::kSin) {
    return std::sin(x);
  } else if constexpr (kOp == HloOpcode::kCos) {
    return std::cos(x);
  } else if constexpr (kOp == HloOpcode::kTan) {
    return std::tan(x);
  } else if constexpr (kOp == HloOpcode::kLogistic) {
    return C(1) / (C(1) + std::exp(-x));
  } else if constexpr (kOp == HloOpcode::kExpm1) {
    return std::expm1(x);
  } else if constexpr (kOp == HloOpcode::kLog1p) {
    return std::log1p(x);
  } else if constexpr (kOp == HloOpcode::kCbrt) {
    return std::cbrt(x);
  } else if constexpr (kOp == HloOpcode::kErf) {
    return std::erf(x);
  } else if constexpr (kOp == HloOpcode::kFloor) {
    return std::floor(x);
  } else if constexpr (kOp == HloOpcode::kCeil) {
    return std::ceil(x);
  } else if constexpr (kOp == HloOpcode::kRoundNearestEven) {
    return std::nearbyint(x);  // The process runs in the default FE_TONEAREST mode.
  } else if constexpr (kOp == HloOpcode::kRoundNearestAfz) {
    return std::round(x);
  } else {
    static_assert(kOp == HloOpcode::kNegate, "unhandled unary op");
    return x;
  }
}

template <typename U>
U IntegerPower(U base, U exponent) {
  U result = 1;
  while (exponent != 0) {
    if (exponent & 1) result = static_cast<U>(result * base);
    exponent >>= 1;
    base = static_cast<U>(base * base);
  }
  return result;
}

template <HloOpcode kOp, typename Tr>
typename Tr::C BinaryOp(typename Tr::C a, typename Tr::C b) {
  using C = typename Tr::C;
  constexpr Cat cat = Tr::kCat;
  if constexpr (kOp == HloOpcode::kAdd) {
    if constexpr (cat == Cat::kInt) {
      return static_cast<C>(static_cast<Wide<C>>(a) + static_cast<Wide<C>>(b));
    } else {
      return a + b;
    }
  } else if constexpr (kOp == HloOpcode::kSubtract) {
    if constexpr (cat == Cat::kInt) {
      return static_cast<C>(static_cast<Wide<C>>(a) - static_cast<Wide<C>>(b));
    } else {
      return a - b;
    }
  } else if constexpr (kOp == HloOpcode::kMultiply) {
    if constexpr (cat == Cat::kInt) {
      return static_cast<C>(static_cast<Wide<C>>(a) * static_cast<Wide<C>>(b));
    } else {
      return a * b;
    }
  } else if constexpr (kOp == HloOpcode::kDivide) {
    if constexpr (cat == Cat::kInt) {
      if (b == 0) {
        if constexpr (Tr::kSigned) {
          return C(-1);
        } else {
          return std::numeric_limits<C>::max();
        }
      }
      if constexpr (Tr::kSigned) {
        if (b == C(-1)) return static_cast<C>(-static_cast<Wide<C>>(a));  // INT_MIN / -1 wraps.
      }
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  } else if constexpr (kOp == HloOpcode::kRemainder) {
    if constexpr (cat == Cat::kInt) {
      if (b == 0) return a;
      if constexpr (Tr::kSigned) {
        if (b == C(-1)) return C(0);  // Also INT_MIN % -1.
      }
      return static_cast<C>(a % b);
    } else {
      return std::fmod(a, b);
    }
  } else if constexpr (kOp == HloOpcode::kMaximum || kOp == HloOpcode::kMinimum) {
    if constexpr (cat == Cat::kFloat) {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
    }
    // std::max/std::min: on equal values (e.g. -0 and +0) the first operand is returned.
    if constexpr (kOp == HloOpcode::kMaximum) {
      return std::max(a, b);
    } else {
      return std::min(a, b);
    }
  } else if constexpr (kOp == HloOpcode::kPower) {
    if constexpr (cat == Cat::kInt) {
      if (a == C(1) || b == C(0)) return C(1);
      if constexpr (Tr::kSigned) {
        if (b < 0) return C(0);
      }
      return static_cast<C>(
          IntegerPower<uint64_t>(static_cast<uint64_t>(a), static_cast<uint64_t>(b)));
    } else if constexpr (cat == Cat::kFloat) {
      if (a == C(1) || b == C(0)) return C(1);
      return std::pow(a, b);
    } else {
      // 1^x = x^0 = 1; inf^(a+0i) = inf for a > 0 and 0 for a < 0 (Kahan), as the evaluator.
      if (a == C(1) || b == C(0)) return C(1);
      if (a.imag() == 0 && a.real() > 0 && std::isinf(a.real()) && b.imag() == 0) {
        if (b.real() > 0) return a;
        if (b.real() < 0) return C(0);
      }
      return std::pow(a, b);
    }
  } else if constexpr (kOp == HloOpcode::kAtan2) {
    return std::atan2(a, b);
  } else if constexpr (kOp == HloOpcode::kAnd) {
    if constexpr (cat == Cat::kPred) {
      return a && b;
    } else {
      return static_cast<C>(a & b);
    }
  } else if constexpr (kOp == HloOpcode::kOr) {
    if constexpr (cat == Cat::kPred) {
      return a || b;
    } else {
      return static_cast<C>(a | b);
    }
  } else if constexpr (kOp == HloOpcode::kXor) {
    if constexpr (cat == Cat::kPred) {
      return a != b;
    } else {
      return static_cast<C>(a ^ b);
    }
  } else if constexpr (kOp == HloOpcode::kShiftLeft || kOp == HloOpcode::kShiftRightLogical ||
                       kOp == HloOpcode::kShiftRightArithmetic) {
    constexpr int kBits = Tr::kBits;
    constexpr uint64_t kMask = LowMask(kBits);
    const uint64_t value = static_cast<uint64_t>(a) & kMask;
    // The shift amount is read as an unsigned number of the element width.
    const uint64_t amount = static_cast<uint64_t>(b) & kMask;
    const bool out_of_range = amount >= static_cast<uint64_t>(kBits);
    if constexpr (kOp == HloOpcode::kShiftLeft) {
      return out_of_range ? C(0) : static_cast<C>(value << amount);
    } else if constexpr (kOp == HloOpcode::kShiftRightLogical) {
      return out_of_range ? C(0) : static_cast<C>(value >> amount);
    } else {
      // The value is read as signed of the element width (also for unsigned types).
      const uint64_t sign = uint64_t{1} << (kBits - 1);
      const int64_t signed_value =
          kBits >= 64 ? static_cast<int64_t>(value) : static_cast<int64_t>((value ^ sign) - sign);
      const int64_t shifted = out_of_range ? (signed_value < 0 ? -1 : 0) : (signed_value >> amount);
      return static_cast<C>(shifted);
    }
  } else {
    static_assert(kOp == HloOpcode::kAdd, "unhandled binary op");
    return a;
  }
}

// ---- Unary / binary drivers -----------------------------------------------------------------

template <HloOpcode kOp, typename Tr>
void UnaryLoop(const Literal& in, Literal& out) {
  using S = typename Tr::S;
  absl::Span<const S> x = in.data<S>();
  absl::Span<S> o = out.data<S>();
  const size_t n = x.size();
  for (size_t i = 0; i < n; ++i) o[i] = Tr::Store(UnaryOp<kOp, Tr>(Tr::Load(x[i])));
}

template <HloOpcode kOp>
absl::StatusOr<Literal> RunUnary(const HloInstruction& instr,
                                 absl::Span<const Literal* const> operands) {
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckOperandCount(instr, operands, 1));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckAllArrays(instr, operands));
  const Literal& in = *operands[0];
  const PrimitiveType type = in.shape().element_type();
  SPMDCHECK_EW_RETURN_IF_ERROR(SupportStatus(instr, UnarySupport(kOp, *CatOf(type)), type));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckResultShape(instr, type, in.shape().dimensions()));
  Literal out(instr.shape());
  const absl::Status dispatched = DispatchType(type, [&](auto tr) {
    using Tr = decltype(tr);
    if constexpr (UnarySupport(kOp, Tr::kCat) == Support::kOk) UnaryLoop<kOp, Tr>(in, out);
  });
  if (!dispatched.ok()) return dispatched;
  return out;
}

template <HloOpcode kOp, typename Tr>
void BinaryLoop(const Literal& lhs, const Literal& rhs, Literal& out) {
  using S = typename Tr::S;
  absl::Span<const S> a = lhs.data<S>();
  absl::Span<const S> b = rhs.data<S>();
  absl::Span<S> o = out.data<S>();
  const size_t n = a.size();
  for (size_t i = 0; i < n; ++i) {
    o[i] = Tr::Store(BinaryOp<kOp, Tr>(Tr::Load(a[i]), Tr::Load(b[i])));
  }
}

template <HloOpcode kOp>
absl::StatusOr<Literal> RunBinary(const HloInstruction& instr,
                                  absl::Span<const Literal* const> operands) {
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckOperandCount(instr, operands, 2));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckAllArrays(instr, operands));
  const Literal& lhs = *operands[0];
  const Literal& rhs = *operands[1];
  SPMDCHECK_EW_RETURN_IF_ERROR(SameType(instr, lhs, rhs, 1));
  SPMDCHECK_EW_RETURN_IF_ERROR(SameDims(instr, lhs, rhs, 1));
  const PrimitiveType type = lhs.shape().element_type();
  SPMDCHECK_EW_RETURN_IF_ERROR(SupportStatus(instr, BinarySupport(kOp, *CatOf(type)), type));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckResultShape(instr, type, lhs.shape().dimensions()));
  Literal out(instr.shape());
  const absl::Status dispatched = DispatchType(type, [&](auto tr) {
    using Tr = decltype(tr);
    if constexpr (BinarySupport(kOp, Tr::kCat) == Support::kOk) {
      BinaryLoop<kOp, Tr>(lhs, rhs, out);
    }
  });
  if (!dispatched.ok()) return dispatched;
  return out;
}

#define SPMDCHECK_EW_UNARY_CASE(op) \
  case HloOpcode::op:               \
    return RunUnary<HloOpcode::op>(instr, operands);

absl::StatusOr<Literal> HandleUnary(const HloInstruction& instr,
                                    absl::Span<const Literal* const> operands, const EvalEnv&) {
  switch (instr.opcode()) {
    SPMDCHECK_EW_UNARY_CASE(kNegate)
    SPMDCHECK_EW_UNARY_CASE(kSign)
    SPMDCHECK_EW_UNARY_CASE(kNot)
    SPMDCHECK_EW_UNARY_CASE(kPopulationCount)
    SPMDCHECK_EW_UNARY_CASE(kClz)
    SPMDCHECK_EW_UNARY_CASE(kExp)
    SPMDCHECK_EW_UNARY_CASE(kLog)
    SPMDCHECK_EW_UNARY_CASE(kSqrt)
    SPMDCHECK_EW_UNARY_CASE(kRsqrt)
    SPMDCHECK_EW_UNARY_CASE(kTanh)
    SPMDCHECK_EW_UNARY_CASE(kSin)
    SPMDCHECK_EW_UNARY_CASE(kCos)
    SPMDCHECK_EW_UNARY_CASE(kTan)
    SPMDCHECK_EW_UNARY_CASE(kLogistic)
    SPMDCHECK_EW_UNARY_CASE(kExpm1)
    SPMDCHECK_EW_UNARY_CASE(kLog1p)
    SPMDCHECK_EW_UNARY_CASE(kCbrt)
    SPMDCHECK_EW_UNARY_CASE(kErf)
    SPMDCHECK_EW_UNARY_CASE(kFloor)
    SPMDCHECK_EW_UNARY_CASE(kCeil)
    SPMDCHECK_EW_UNARY_CASE(kRoundNearestEven)
    SPMDCHECK_EW_UNARY_CASE(kRoundNearestAfz)
    default:
      return Unsupported(instr, HloOpcodeString(instr.opcode()));
  }
}
#undef SPMDCHECK_EW_UNARY_CASE

#define SPMDCHECK_EW_BINARY_CASE(op) \
  case HloOpcode::op:                \
    return RunBinary<HloOpcode::op>(instr, operands);

absl::StatusOr<Literal> HandleBinary(const HloInstruction& instr,
                                     absl::Span<const Literal* const> operands, const EvalEnv&) {
  switch (instr.opcode()) {
    SPMDCHECK_EW_BINARY_CASE(kAdd)
    SPMDCHECK_EW_BINARY_CASE(kSubtract)
    SPMDCHECK_EW_BINARY_CASE(kMultiply)
    SPMDCHECK_EW_BINARY_CASE(kDivide)
    SPMDCHECK_EW_BINARY_CASE(kRemainder)
    SPMDCHECK_EW_BINARY_CASE(kMaximum)
    SPMDCHECK_EW_BINARY_CASE(kMinimum)
    SPMDCHECK_EW_BINARY_CASE(kPower)
    SPMDCHECK_EW_BINARY_CASE(kAtan2)
    SPMDCHECK_EW_BINARY_CASE(kAnd)
    SPMDCHECK_EW_BINARY_CASE(kOr)
    SPMDCHECK_EW_BINARY_CASE(kXor)
    SPMDCHECK_EW_BINARY_CASE(kShiftLeft)
    SPMDCHECK_EW_BINARY_CASE(kShiftRightLogical)
    SPMDCHECK_EW_BINARY_CASE(kShiftRightArithmetic)
    default:
      return Unsupported(instr, HloOpcodeString(instr.opcode()));
  }
}
#undef SPMDCHECK_EW_BINARY_CASE

// ---- abs (complex -> real), is-finite, real, imag, complex, copy -----------------------------

PrimitiveType ComponentType(PrimitiveType complex_type) {
  return complex_type == PrimitiveType::kC64 ? PrimitiveType::kF32 : PrimitiveType::kF64;
}

template <typename T>
void ComplexAbsLoop(const Literal& in, Literal& out) {
  absl::Span<const std::complex<T>> x = in.data<std::complex<T>>();
  absl::Span<T> o = out.data<T>();
  for (size_t i = 0; i < x.size(); ++i) o[i] = std::abs(x[i]);
}

absl::StatusOr<Literal> HandleAbs(const HloInstruction& instr,
                                  absl::Span<const Literal* const> operands, const EvalEnv&) {
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckOperandCount(instr, operands, 1));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckAllArrays(instr, operands));
  const Literal& in = *operands[0];
  const PrimitiveType type = in.shape().element_type();
  if (!IsComplexType(type)) return RunUnary<HloOpcode::kAbs>(instr, operands);
  SPMDCHECK_EW_RETURN_IF_ERROR(
      CheckResultShape(instr, ComponentType(type), in.shape().dimensions()));
  Literal out(instr.shape());
  const absl::Status dispatched = DispatchElementType(type, [&](auto tag) {
    using Tag = decltype(tag);
    if constexpr (Tag::kIsComplex) ComplexAbsLoop<typename Tag::Storage::value_type>(in, out);
  });
  if (!dispatched.ok()) return dispatched;
  return out;
}

absl::StatusOr<Literal> HandleIsFinite(const HloInstruction& instr,
                                       absl::Span<const Literal* const> operands, const EvalEnv&) {
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckOperandCount(instr, operands, 1));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckAllArrays(instr, operands));
  const Literal& in = *operands[0];
  const PrimitiveType type = in.shape().element_type();
  if (!IsFloatingType(type)) return BadType(instr, type);
  SPMDCHECK_EW_RETURN_IF_ERROR(
      CheckResultShape(instr, PrimitiveType::kPred, in.shape().dimensions()));
  Literal out(instr.shape());
  const absl::Status dispatched = DispatchType(type, [&](auto tr) {
    using Tr = decltype(tr);
    if constexpr (Tr::kCat == Cat::kFloat) {
      absl::Span<const typename Tr::S> x = in.data<typename Tr::S>();
      absl::Span<uint8_t> o = out.data<uint8_t>();
      for (size_t i = 0; i < x.size(); ++i) o[i] = std::isfinite(Tr::Load(x[i])) ? 1 : 0;
    }
  });
  if (!dispatched.ok()) return dispatched;
  return out;
}

template <bool kImag, typename T>
void ComplexPartLoop(const Literal& in, Literal& out) {
  absl::Span<const std::complex<T>> x = in.data<std::complex<T>>();
  absl::Span<T> o = out.data<T>();
  for (size_t i = 0; i < x.size(); ++i) o[i] = kImag ? x[i].imag() : x[i].real();
}

absl::StatusOr<Literal> HandleRealImag(const HloInstruction& instr,
                                       absl::Span<const Literal* const> operands, const EvalEnv&) {
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckOperandCount(instr, operands, 1));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckAllArrays(instr, operands));
  const Literal& in = *operands[0];
  const PrimitiveType type = in.shape().element_type();
  const bool imag = instr.opcode() == HloOpcode::kImag;
  if (IsFloatingType(type)) {
    // real(x) = x, imag(x) = 0 for a real operand.
    SPMDCHECK_EW_RETURN_IF_ERROR(CheckResultShape(instr, type, in.shape().dimensions()));
    Literal out(instr.shape());
    if (!imag) CopyBytes(in, out);
    return out;
  }
  if (!IsComplexType(type)) return BadType(instr, type);
  SPMDCHECK_EW_RETURN_IF_ERROR(
      CheckResultShape(instr, ComponentType(type), in.shape().dimensions()));
  Literal out(instr.shape());
  const absl::Status dispatched = DispatchElementType(type, [&](auto tag) {
    using Tag = decltype(tag);
    if constexpr (Tag::kIsComplex) {
      using T = typename Tag::Storage::value_type;
      if (imag) {
        ComplexPartLoop<true, T>(in, out);
      } else {
        ComplexPartLoop<false, T>(in, out);
      }
    }
  });
  if (!dispatched.ok()) return dispatched;
  return out;
}

template <typename T>
void MakeComplexLoop(const Literal& re, const Literal& im, Literal& out) {
  absl::Span<const T> a = re.data<T>();
  absl::Span<const T> b = im.data<T>();
  absl::Span<std::complex<T>> o = out.data<std::complex<T>>();
  for (size_t i = 0; i < a.size(); ++i) o[i] = std::complex<T>(a[i], b[i]);
}

absl::StatusOr<Literal> HandleComplex(const HloInstruction& instr,
                                      absl::Span<const Literal* const> operands, const EvalEnv&) {
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckOperandCount(instr, operands, 2));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckAllArrays(instr, operands));
  const Literal& re = *operands[0];
  const Literal& im = *operands[1];
  SPMDCHECK_EW_RETURN_IF_ERROR(SameType(instr, re, im, 1));
  SPMDCHECK_EW_RETURN_IF_ERROR(SameDims(instr, re, im, 1));
  const PrimitiveType type = re.shape().element_type();
  if (type != PrimitiveType::kF32 && type != PrimitiveType::kF64) return BadType(instr, type);
  const PrimitiveType result_type =
      type == PrimitiveType::kF32 ? PrimitiveType::kC64 : PrimitiveType::kC128;
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckResultShape(instr, result_type, re.shape().dimensions()));
  Literal out(instr.shape());
  const absl::Status dispatched = DispatchElementType(type, [&](auto tag) {
    using Tag = decltype(tag);
    if constexpr (Tag::kIsNativeFloat) MakeComplexLoop<typename Tag::Storage>(re, im, out);
  });
  if (!dispatched.ok()) return dispatched;
  return out;
}

absl::StatusOr<Literal> HandleCopy(const HloInstruction& instr,
                                   absl::Span<const Literal* const> operands, const EvalEnv&) {
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckOperandCount(instr, operands, 1));
  const Literal& in = *operands[0];
  if (AnyElided(in)) return Unsupported(instr, "copy of an elided constant");
  if (!instr.shape().Compatible(in.shape())) {
    return InstructionError(
        instr, absl::StrCat("result shape ", instr.shape().ToString(false),
                            " differs from the operand shape ", in.shape().ToString(false)));
  }
  Literal out = in;
  return out;
}

// ---- compare ---------------------------------------------------------------------------------

// Sign-magnitude bits -> two's complement, so that integer order is XLA's float total order:
// -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
template <typename S>
int64_t TotalOrderKey(S value) {
  constexpr int kBits = 8 * sizeof(S);
  using U =
      std::conditional_t<kBits == 8, uint8_t,
                         std::conditional_t<kBits == 16, uint16_t,
                                            std::conditional_t<kBits == 32, uint32_t, uint64_t>>>;
  U raw;
  std::memcpy(&raw, &value, sizeof(raw));
  const uint64_t bits = raw;
  const uint64_t magnitude = bits & (LowMask(kBits) >> 1);
  const bool negative = (bits >> (kBits - 1)) & 1;
  return negative ? -static_cast<int64_t>(magnitude) - 1 : static_cast<int64_t>(magnitude);
}

template <ComparisonDirection kDir, typename T>
bool Cmp(const T& a, const T& b) {
  if constexpr (kDir == ComparisonDirection::kEq) {
    return a == b;
  } else if constexpr (kDir == ComparisonDirection::kNe) {
    return a != b;
  } else if constexpr (kDir == ComparisonDirection::kLt) {
    return a < b;
  } else if constexpr (kDir == ComparisonDirection::kLe) {
    return a <= b;
  } else if constexpr (kDir == ComparisonDirection::kGt) {
    return a > b;
  } else {
    return a >= b;
  }
}

template <typename Tr, ComparisonDirection kDir, bool kTotal>
void CompareLoop(const Literal& lhs, const Literal& rhs, Literal& out) {
  using S = typename Tr::S;
  absl::Span<const S> a = lhs.data<S>();
  absl::Span<const S> b = rhs.data<S>();
  absl::Span<uint8_t> o = out.data<uint8_t>();
  for (size_t i = 0; i < a.size(); ++i) {
    if constexpr (kTotal) {
      o[i] = Cmp<kDir>(TotalOrderKey(a[i]), TotalOrderKey(b[i])) ? 1 : 0;
    } else {
      o[i] = Cmp<kDir>(Tr::Load(a[i]), Tr::Load(b[i])) ? 1 : 0;
    }
  }
}

template <typename Tr, bool kTotal>
void CompareDirection(ComparisonDirection direction, const Literal& lhs, const Literal& rhs,
                      Literal& out) {
  if constexpr (Tr::kCat == Cat::kComplex) {
    if (direction == ComparisonDirection::kEq) {
      CompareLoop<Tr, ComparisonDirection::kEq, false>(lhs, rhs, out);
    } else {
      CompareLoop<Tr, ComparisonDirection::kNe, false>(lhs, rhs, out);
    }
  } else {
    switch (direction) {
      case ComparisonDirection::kEq:
        CompareLoop<Tr, ComparisonDirection::kEq, kTotal>(lhs, rhs, out);
        break;
      case ComparisonDirection::kNe:
        CompareLoop<Tr, ComparisonDirection::kNe, kTotal>(lhs, rhs, out);
        break;
      case ComparisonDirection::kLt:
        CompareLoop<Tr, ComparisonDirection::kLt, kTotal>(lhs, rhs, out);
        break;
      case ComparisonDirection::kLe:
        CompareLoop<Tr, ComparisonDirection::kLe, kTotal>(lhs, rhs, out);
        break;
      case ComparisonDirection::kGt:
        CompareLoop<Tr, ComparisonDirection::kGt, kTotal>(lhs, rhs, out);
        break;
      case ComparisonDirection::kGe:
        CompareLoop<Tr, ComparisonDirection::kGe, kTotal>(lhs, rhs, out);
        break;
    }
  }
}

absl::StatusOr<Literal> HandleCompare(const HloInstruction& instr,
                                      absl::Span<const Literal* const> operands, const EvalEnv&) {
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckOperandCount(instr, operands, 2));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckAllArrays(instr, operands));
  const Literal& lhs = *operands[0];
  const Literal& rhs = *operands[1];
  SPMDCHECK_EW_RETURN_IF_ERROR(SameType(instr, lhs, rhs, 1));
  SPMDCHECK_EW_RETURN_IF_ERROR(SameDims(instr, lhs, rhs, 1));
  if (!instr.attrs().direction.has_value()) {
    return InstructionError(instr, "missing attribute direction");
  }
  const ComparisonDirection direction = *instr.attrs().direction;
  const PrimitiveType type = lhs.shape().element_type();
  const Cat cat = *CatOf(type);
  // The comparison type must match the operand type (XLA's default for the type when absent):
  // FLOAT / TOTALORDER for floats, SIGNED for signed, UNSIGNED for unsigned integers and pred.
  bool total = false;
  if (instr.attrs().comparison_type.has_value()) {
    const std::string& ctype = *instr.attrs().comparison_type;
    bool ok = false;
    if (ctype == "FLOAT") {
      ok = cat == Cat::kFloat || cat == Cat::kComplex;
    } else if (ctype == "TOTALORDER") {
      ok = cat == Cat::kFloat;
      total = true;
    } else if (ctype == "SIGNED") {
      ok = cat == Cat::kInt && IsSignedIntegralType(type);
    } else if (ctype == "UNSIGNED") {
      ok = cat == Cat::kPred || (cat == Cat::kInt && IsUnsignedIntegralType(type));
    } else {
      return InstructionError(instr, absl::StrCat("unknown comparison type ", ctype));
    }
    if (!ok) {
      return InstructionError(instr, absl::StrCat("comparison type ", ctype,
                                                  " does not match operand type ", TypeName(type)));
    }
  }
  if (cat == Cat::kComplex && direction != ComparisonDirection::kEq &&
      direction != ComparisonDirection::kNe) {
    return InstructionError(instr, "complex operands only support EQ and NE");
  }
  if (total && IsFnuz(type)) {
    return Unsupported(instr, absl::StrCat("TOTALORDER compare of ", TypeName(type)));
  }
  SPMDCHECK_EW_RETURN_IF_ERROR(
      CheckResultShape(instr, PrimitiveType::kPred, lhs.shape().dimensions()));
  Literal out(instr.shape());
  const absl::Status dispatched = DispatchType(type, [&](auto tr) {
    using Tr = decltype(tr);
    if constexpr (Tr::kCat == Cat::kFloat) {
      if (total) {
        CompareDirection<Tr, true>(direction, lhs, rhs, out);
        return;
      }
    }
    CompareDirection<Tr, false>(direction, lhs, rhs, out);
  });
  if (!dispatched.ok()) return dispatched;
  return out;
}

// ---- select / clamp ---------------------------------------------------------------------------

struct Bytes16 {
  uint64_t lo;
  uint64_t hi;
};

template <typename T>
void SelectLoop(const Literal& pred, const Literal& on_true, const Literal& on_false,
                Literal& out) {
  absl::Span<const uint8_t> p = pred.data<uint8_t>();
  absl::Span<const T> t = on_true.data<T>();
  absl::Span<const T> f = on_false.data<T>();
  absl::Span<T> o = out.data<T>();
  for (size_t i = 0; i < o.size(); ++i) o[i] = p[i] != 0 ? t[i] : f[i];
}

absl::StatusOr<Literal> HandleSelect(const HloInstruction& instr,
                                     absl::Span<const Literal* const> operands, const EvalEnv&) {
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckOperandCount(instr, operands, 3));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckAllArrays(instr, operands));
  const Literal& pred = *operands[0];
  const Literal& on_true = *operands[1];
  const Literal& on_false = *operands[2];
  if (pred.shape().element_type() != PrimitiveType::kPred) {
    return InstructionError(
        instr, absl::StrCat("predicate must be pred, got ", pred.shape().ToString(false)));
  }
  if (on_true.shape().element_type() != on_false.shape().element_type()) {
    return InstructionError(instr, "on_true and on_false must have the same element type");
  }
  if (on_true.shape().dimensions() != on_false.shape().dimensions()) {
    return InstructionError(instr, "on_true and on_false must have the same dims");
  }
  const bool scalar_pred = pred.shape().rank() == 0;
  if (!scalar_pred && pred.shape().dimensions() != on_true.shape().dimensions()) {
    return InstructionError(instr, "predicate must be a scalar or have the dims of on_true");
  }
  const PrimitiveType type = on_true.shape().element_type();
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckResultShape(instr, type, on_true.shape().dimensions()));
  Literal out(instr.shape());
  if (scalar_pred) {
    const Literal& chosen = pred.GetBits(0) != 0 ? on_true : on_false;
    CopyBytes(chosen, out);
    return out;
  }
  switch (on_true.element_byte_width()) {
    case 1:
      SelectLoop<uint8_t>(pred, on_true, on_false, out);
      break;
    case 2:
      SelectLoop<uint16_t>(pred, on_true, on_false, out);
      break;
    case 4:
      SelectLoop<uint32_t>(pred, on_true, on_false, out);
      break;
    case 8:
      SelectLoop<uint64_t>(pred, on_true, on_false, out);
      break;
    case 16:
      SelectLoop<Bytes16>(pred, on_true, on_false, out);
      break;
    default:
      return Unsupported(instr, absl::StrCat("select of ", TypeName(type)));
  }
  return out;
}

template <typename Tr>
typename Tr::C ClampOne(typename Tr::C lo, typename Tr::C x, typename Tr::C hi) {
  if constexpr (Tr::kCat == Cat::kFloat) {
    if (std::isnan(lo)) return lo;
    if (std::isnan(x)) return x;
    if (std::isnan(hi)) return hi;
  }
  return std::min(hi, std::max(x, lo));
}

template <typename Tr>
void ClampLoop(const Literal& lo_lit, const Literal& x_lit, const Literal& hi_lit, Literal& out) {
  using S = typename Tr::S;
  absl::Span<const S> lo = lo_lit.data<S>();
  absl::Span<const S> x = x_lit.data<S>();
  absl::Span<const S> hi = hi_lit.data<S>();
  absl::Span<S> o = out.data<S>();
  const bool lo_scalar = lo_lit.shape().rank() == 0;
  const bool hi_scalar = hi_lit.shape().rank() == 0;
  if (lo_scalar && hi_scalar) {
    const auto l = Tr::Load(lo[0]);
    const auto h = Tr::Load(hi[0]);
    for (size_t i = 0; i < x.size(); ++i) o[i] = Tr::Store(ClampOne<Tr>(l, Tr::Load(x[i]), h));
    return;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    o[i] = Tr::Store(ClampOne<Tr>(Tr::Load(lo[lo_scalar ? 0 : i]), Tr::Load(x[i]),
                                  Tr::Load(hi[hi_scalar ? 0 : i])));
  }
}

absl::StatusOr<Literal> HandleClamp(const HloInstruction& instr,
                                    absl::Span<const Literal* const> operands, const EvalEnv&) {
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckOperandCount(instr, operands, 3));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckAllArrays(instr, operands));
  const Literal& lo = *operands[0];
  const Literal& x = *operands[1];
  const Literal& hi = *operands[2];
  const PrimitiveType type = x.shape().element_type();
  for (size_t i : {size_t{0}, size_t{2}}) {
    const Literal& bound = *operands[i];
    SPMDCHECK_EW_RETURN_IF_ERROR(SameType(instr, x, bound, i));
    if (bound.shape().rank() != 0 && bound.shape().dimensions() != x.shape().dimensions()) {
      return InstructionError(
          instr, absl::StrCat("bound operand ", i, " must be a scalar or have the operand dims"));
    }
  }
  if (IsComplexType(type)) return BadType(instr, type);
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckResultShape(instr, type, x.shape().dimensions()));
  Literal out(instr.shape());
  const absl::Status dispatched = DispatchType(type, [&](auto tr) {
    using Tr = decltype(tr);
    if constexpr (Tr::kCat != Cat::kComplex) ClampLoop<Tr>(lo, x, hi, out);
  });
  if (!dispatched.ok()) return dispatched;
  return out;
}

// ---- convert ---------------------------------------------------------------------------------

// Float -> integer: truncate toward zero, saturate at the type's limits, NaN -> 0.
template <typename Tr>
typename Tr::C SaturatingToInt(double d) {
  using C = typename Tr::C;
  constexpr int kBits = Tr::kBits;
  if (std::isnan(d)) return C(0);
  if constexpr (Tr::kSigned) {
    const double limit = std::ldexp(1.0, kBits - 1);
    const int64_t max_value = static_cast<int64_t>(LowMask(kBits - 1));
    if (d >= limit) return static_cast<C>(max_value);
    if (d <= -limit) return static_cast<C>(-max_value - 1);
    return static_cast<C>(static_cast<int64_t>(d));
  } else {
    const double limit = std::ldexp(1.0, kBits);
    if (d >= limit) return static_cast<C>(LowMask(kBits));
    if (d <= 0) return C(0);
    return static_cast<C>(static_cast<uint64_t>(d));
  }
}

template <typename Tr>
constexpr bool DirectFromF64() {
  if constexpr (requires { Tr::kDirectFromF64; }) {
    return Tr::kDirectFromF64;
  } else {
    return false;
  }
}

// f64 -> f32 rounding to odd (truncate, then set the last bit when inexact): a following
// round-to-nearest-even into a format with at most 22 mantissa bits is then the correctly
// rounded f64 result (no double-rounding error).
float RoundToOddF32(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

template <typename Src, typename Dst>
typename Dst::S ConvertOne(typename Src::S s) {
  using SC = typename Src::C;
  using DC = typename Dst::C;
  const SC v = Src::Load(s);
  if constexpr (Dst::kCat == Cat::kPred) {
    return Dst::Store(v != SC(0));  // NaN -> true.
  } else if constexpr (Dst::kCat == Cat::kInt) {
    if constexpr (Src::kCat == Cat::kFloat) {
      return Dst::Store(SaturatingToInt<Dst>(static_cast<double>(v)));
    } else {
      return Dst::Store(static_cast<DC>(v));  // pred -> 0/1; integers wrap.
    }
  } else if constexpr (Dst::kCat == Cat::kFloat) {
    if constexpr (std::is_same_v<DC, double>) {
      return Dst::Store(static_cast<double>(v));
    } else if constexpr (std::is_same_v<SC, double> && DirectFromF64<Dst>()) {
      return Dst::Store(RoundToOddF32(v));
    } else {
      // f32 directly (one rounding); bf16/f16 from f64, and bf16/f16/f8 from integers, go
      // through f32 first, as Eigen's and ml_dtypes' constructors do.
      return Dst::Store(static_cast<float>(v));
    }
  } else {
    using T = typename DC::value_type;
    if constexpr (Src::kCat == Cat::kComplex) {
      return Dst::Store(DC(static_cast<T>(v.real()), static_cast<T>(v.imag())));
    } else if constexpr (Src::kCat == Cat::kPred) {
      return Dst::Store(DC(v ? T(1) : T(0), T(0)));
    } else {
      return Dst::Store(DC(static_cast<T>(v), T(0)));
    }
  }
}

template <typename Src, typename Dst>
void ConvertLoop(const Literal& in, Literal& out) {
  absl::Span<const typename Src::S> x = in.data<typename Src::S>();
  absl::Span<typename Dst::S> o = out.data<typename Dst::S>();
  for (size_t i = 0; i < x.size(); ++i) o[i] = ConvertOne<Src, Dst>(x[i]);
}

absl::StatusOr<Literal> HandleConvert(const HloInstruction& instr,
                                      absl::Span<const Literal* const> operands, const EvalEnv&) {
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckOperandCount(instr, operands, 1));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckAllArrays(instr, operands));
  const Literal& in = *operands[0];
  const PrimitiveType from = in.shape().element_type();
  if (!instr.shape().IsArray() || !CatOf(instr.shape().element_type()).has_value()) {
    return InstructionError(
        instr, absl::StrCat("result shape ", instr.shape().ToString(false), " must be an array"));
  }
  const PrimitiveType to = instr.shape().element_type();
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckResultShape(instr, to, in.shape().dimensions()));
  if (IsComplexType(from) && !IsComplexType(to)) {
    return Unsupported(instr, absl::StrCat("convert from ", TypeName(from), " to ", TypeName(to)));
  }
  Literal out(instr.shape());
  if (from == to) {
    CopyBytes(in, out);
    return out;
  }
  const absl::Status dispatched = DispatchType(from, [&](auto src) {
    using Src = decltype(src);
    return DispatchType(to, [&](auto dst) {
      using Dst = decltype(dst);
      if constexpr (Src::kCat != Cat::kComplex || Dst::kCat == Cat::kComplex) {
        ConvertLoop<Src, Dst>(in, out);
      }
    });
  });
  if (!dispatched.ok()) return dispatched;
  return out;
}

// ---- bitcast-convert --------------------------------------------------------------------------

bool IsSubByte(PrimitiveType type) {
  return DispatchElementTypeIfHandled(type, [](auto tag) { return decltype(tag)::kIsSubByte; });
}

absl::StatusOr<Literal> HandleBitcastConvert(const HloInstruction& instr,
                                             absl::Span<const Literal* const> operands,
                                             const EvalEnv&) {
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckOperandCount(instr, operands, 1));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckAllArrays(instr, operands));
  const Literal& in = *operands[0];
  const Shape& shape = instr.shape();
  if (!shape.IsArray() || !CatOf(shape.element_type()).has_value()) {
    return InstructionError(
        instr, absl::StrCat("result shape ", shape.ToString(false), " must be an array"));
  }
  const PrimitiveType from = in.shape().element_type();
  const PrimitiveType to = shape.element_type();
  if (IsSubByte(from) || IsSubByte(to)) {
    return Unsupported(
        instr, absl::StrCat("bitcast-convert between ", TypeName(from), " and ", TypeName(to)));
  }
  const int in_bits = BitWidth(from);
  const int out_bits = BitWidth(to);
  // XLA's rule: a wider input gains a minor dim of in/out elements; a narrower one loses its
  // minor dim, which must be out/in. Elements are reinterpreted in little-endian byte order.
  std::vector<int64_t> expected = in.shape().dimensions();
  if (in_bits > out_bits) {
    expected.push_back(in_bits / out_bits);
  } else if (in_bits < out_bits) {
    if (expected.empty() || expected.back() != out_bits / in_bits) {
      return InstructionError(
          instr, absl::StrCat("operand ", in.shape().ToString(false), " must have a minor dim of ",
                              out_bits / in_bits));
    }
    expected.pop_back();
  }
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckResultShape(instr, to, expected));
  Literal out(shape);
  if (out.size_bytes() != in.size_bytes()) {
    return InstructionError(instr, "operand and result byte sizes differ");
  }
  if (in.size_bytes() > 0) {
    std::memcpy(out.raw_data(), in.raw_data(), static_cast<size_t>(in.size_bytes()));
  }
  if (to == PrimitiveType::kPred) {
    // A pred byte other than 0 reads as true.
    absl::Span<uint8_t> o = out.data<uint8_t>();
    for (uint8_t& b : o) b = b != 0 ? 1 : 0;
  }
  return out;
}

// ---- reduce-precision -------------------------------------------------------------------------

absl::StatusOr<int64_t> IntAttribute(const HloInstruction& instr, absl::string_view name) {
  const RawAttribute* attribute = instr.FindRawAttribute(name);
  if (attribute == nullptr) {
    return InstructionError(instr, absl::StrCat("missing attribute ", name));
  }
  int64_t value = 0;
  if (!absl::SimpleAtoi(attribute->text, &value)) {
    return InstructionError(
        instr, absl::StrCat("attribute ", name, "=", attribute->text, " is not an integer"));
  }
  return value;
}

// XLA's evaluator (and the CPU/GPU emitters): round the mantissa to nearest even, then force
// exponents out of range to inf (overflow) or signed zero (underflow, which flushes every value
// that would be subnormal); NaN stays NaN unless no mantissa bits remain (then +inf).
template <typename F, typename U>
F ReducePrecisionValue(F x, int64_t exponent_bits, int64_t mantissa_bits) {
  constexpr int64_t kSrcMantissa = std::numeric_limits<F>::digits - 1;
  constexpr int64_t kSrcExponent = 8 * static_cast<int64_t>(sizeof(F)) - kSrcMantissa - 1;
  U v = std::bit_cast<U>(x);
  if (mantissa_bits < kSrcMantissa) {
    const int shift = static_cast<int>(kSrcMantissa - mantissa_bits);
    const U last_bit_mask = U{1} << shift;
    const U base_bias = (last_bit_mask >> 1) - 1;
    const U last_bit = (v & last_bit_mask) >> shift;
    v = static_cast<U>(v + last_bit + base_bias) & ~static_cast<U>(last_bit_mask - 1);
  }
  if (exponent_bits < kSrcExponent) {
    const U sign_mask = U{1} << (8 * sizeof(F) - 1);
    const U exponent_mask = ((U{1} << kSrcExponent) - 1) << kSrcMantissa;
    const U bias = (U{1} << (kSrcExponent - 1)) - 1;
    const U reduced_bias = (U{1} << (exponent_bits - 1)) - 1;
    const U max_exponent = bias + reduced_bias;
    const U min_exponent = bias - reduced_bias;
    const U x_exponent = v & exponent_mask;
    const U signed_zero = v & sign_mask;
    if (x_exponent > (max_exponent << kSrcMantissa)) v = signed_zero | exponent_mask;
    if (x_exponent <= (min_exponent << kSrcMantissa)) v = signed_zero;
  }
  F result = std::bit_cast<F>(v);
  if (std::isnan(x)) result = mantissa_bits > 0 ? x : std::numeric_limits<F>::infinity();
  return result;
}

absl::StatusOr<Literal> HandleReducePrecision(const HloInstruction& instr,
                                              absl::Span<const Literal* const> operands,
                                              const EvalEnv&) {
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckOperandCount(instr, operands, 1));
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckAllArrays(instr, operands));
  const Literal& in = *operands[0];
  const PrimitiveType type = in.shape().element_type();
  if (!IsFloatingType(type)) return BadType(instr, type);
  absl::StatusOr<int64_t> exponent_bits = IntAttribute(instr, "exponent_bits");
  if (!exponent_bits.ok()) return exponent_bits.status();
  absl::StatusOr<int64_t> mantissa_bits = IntAttribute(instr, "mantissa_bits");
  if (!mantissa_bits.ok()) return mantissa_bits.status();
  if (*exponent_bits < 1 || *mantissa_bits < 0) {
    return InstructionError(instr,
                            "reduce-precision needs exponent_bits >= 1 and "
                            "mantissa_bits >= 0");
  }
  SPMDCHECK_EW_RETURN_IF_ERROR(CheckResultShape(instr, type, in.shape().dimensions()));
  Literal out(instr.shape());
  const absl::Status dispatched = DispatchType(type, [&](auto tr) {
    using Tr = decltype(tr);
    if constexpr (Tr::kCat == Cat::kFloat) {
      using C = typename Tr::C;
      using U = std::conditional_t<std::is_same_v<C, double>, uint64_t, uint32_t>;
      absl::Span<const typename Tr::S> x = in.data<typename Tr::S>();
      absl::Span<typename Tr::S> o = out.data<typename Tr::S>();
      for (size_t i = 0; i < x.size(); ++i) {
        o[i] =
            Tr::Store(ReducePrecisionValue<C, U>(Tr::Load(x[i]), *exponent_bits, *mantissa_bits));
      }
    }
  });
  if (!dispatched.ok()) return dispatched;
  return out;
}

#undef SPMDCHECK_EW_RETURN_IF_ERROR

}  // namespace

void RegisterElementwiseOps(OpRegistry& registry) {
  for (HloOpcode op : {HloOpcode::kNegate,
                       HloOpcode::kSign,
                       HloOpcode::kNot,
                       HloOpcode::kPopulationCount,
                       HloOpcode::kClz,
                       HloOpcode::kExp,
                       HloOpcode::kLog,
                       HloOpcode::kSqrt,
                       HloOpcode::kRsqrt,
                       HloOpcode::kTanh,
                       HloOpcode::kSin,
                       HloOpcode::kCos,
                       HloOpcode::kTan,
                       HloOpcode::kLogistic,
                       HloOpcode::kExpm1,
                       HloOpcode::kLog1p,
                       HloOpcode::kCbrt,
                       HloOpcode::kErf,
                       HloOpcode::kFloor,
                       HloOpcode::kCeil,
                       HloOpcode::kRoundNearestEven,
                       HloOpcode::kRoundNearestAfz}) {
    registry.Register(op, &HandleUnary);
  }
  for (HloOpcode op :
       {HloOpcode::kAdd, HloOpcode::kSubtract, HloOpcode::kMultiply, HloOpcode::kDivide,
        HloOpcode::kRemainder, HloOpcode::kMaximum, HloOpcode::kMinimum, HloOpcode::kPower,
        HloOpcode::kAtan2, HloOpcode::kAnd, HloOpcode::kOr, HloOpcode::kXor, HloOpcode::kShiftLeft,
        HloOpcode::kShiftRightLogical, HloOpcode::kShiftRightArithmetic}) {
    registry.Register(op, &HandleBinary);
  }
  registry.Register(HloOpcode::kAbs, &HandleAbs);
  registry.Register(HloOpcode::kIsFinite, &HandleIsFinite);
  registry.Register(HloOpcode::kReal, &HandleRealImag);
  registry.Register(HloOpcode::kImag, &HandleRealImag);
  registry.Register(HloOpcode::kComplex, &HandleComplex);
  registry.Register(HloOpcode::kCopy, &HandleCopy);
  registry.Register(HloOpcode::kCompare, &HandleCompare);
  registry.Register(HloOpcode::kSelect, &HandleSelect);
  registry.Register(HloOpcode::kClamp, &HandleClamp);
  registry.Register(HloOpcode::kConvert, &HandleConvert);
  registry.Register(HloOpcode::kBitcastConvert, &HandleBitcastConvert);
  registry.Register(HloOpcode::kReducePrecision, &HandleReducePrecision);
}

}  // namespace spmdcheck::oracle
