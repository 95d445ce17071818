#include "ir/float_types.h"

#include <bit>
#include <cmath>
#include <limits>

namespace spmdcheck {
namespace {

// Parameters of a binary floating format with 1 sign bit.
struct Format {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_inf;      // IEEE-style inf/NaN at the all-ones exponent.
  bool nan_is_neg0;  // FNUZ: the only NaN is 0x80 (negative zero pattern), no inf.
  bool fn;           // FN (e4m3fn): no inf; NaN is all-ones exponent and mantissa.
};

Format FormatOf(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kBF16:
      return {8, 7, 127, true, false, false};
    case PrimitiveType::kF16:
      return {5, 10, 15, true, false, false};
    case PrimitiveType::kF8E5M2:
      return {5, 2, 15, true, false, false};
    case PrimitiveType::kF8E4M3FN:
      return {4, 3, 7, false, false, true};
    case PrimitiveType::kF8E4M3B11FNUZ:
      return {4, 3, 11, false, true, false};
    case PrimitiveType::kF8E5M2FNUZ:
      return {5, 2, 16, false, true, false};
    case PrimitiveType::kF8E4M3FNUZ:
      return {4, 3, 8, false, true, false};
    default:
      return {8, 23, 127, true, false, false};
  }
}

uint32_t NanBits(const Format& f, bool negative) {
  const int total = 1 + f.exponent_bits + f.mantissa_bits;
  const uint32_t sign = negative ? (1u << (total - 1)) : 0;
  if (f.nan_is_neg0) return 1u << (total - 1);
  const uint32_t exp_all = ((1u << f.exponent_bits) - 1) << f.mantissa_bits;
  if (f.fn) return sign | exp_all | ((1u << f.mantissa_bits) - 1);
  return sign | exp_all | (1u << (f.mantissa_bits - 1));
}

// Largest finite magnitude bits (without sign).
uint32_t MaxFiniteBits(const Format& f) {
  const uint32_t exp_all = (1u << f.exponent_bits) - 1;
  const uint32_t man_all = (1u << f.mantissa_bits) - 1;
  if (f.has_inf) return ((exp_all - 1) << f.mantissa_bits) | man_all;
  if (f.fn) return (exp_all << f.mantissa_bits) | (man_all - 1);
  return (exp_all << f.mantissa_bits) | man_all;  // FNUZ
}

}  // namespace

bool IsNarrowFloat(PrimitiveType type) {
  return IsFloatingType(type) && type != PrimitiveType::kF32 && type != PrimitiveType::kF64;
}

uint32_t FloatToNarrowBits(PrimitiveType type, float value) {
  const Format f = FormatOf(type);
  const int total = 1 + f.exponent_bits + f.mantissa_bits;
  const bool negative = std::signbit(value);
  const uint32_t sign = negative ? (1u << (total - 1)) : 0;
  if (std::isnan(value)) return NanBits(f, negative);
  if (type == PrimitiveType::kBF16) {
    // Eigen: round the f32 bit pattern to nearest even on the upper 16 bits.
    uint32_t bits = std::bit_cast<uint32_t>(value);
    uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
    return (bits + rounding) >> 16;
  }
  const double magnitude = std::fabs(static_cast<double>(value));
  const uint32_t max_bits = MaxFiniteBits(f);
  auto overflow = [&]() -> uint32_t {
    if (f.has_inf) return sign | (((1u << f.exponent_bits) - 1) << f.mantissa_bits);
    return NanBits(f, negative);
  };
  if (std::isinf(value)) return overflow();
  // Exact decoding of the largest finite value, to decide overflow after rounding.
  const int min_exp = 1 - f.bias;  // Exponent of the smallest normal.
  if (magnitude == 0) return f.nan_is_neg0 ? 0 : sign;
  int exp = std::ilogb(magnitude);
  if (exp < min_exp) exp = min_exp;  // Subnormal range: fixed quantum.
  const double quantum = std::ldexp(1.0, exp - f.mantissa_bits);
  double scaled = magnitude / quantum;      // Exact: power-of-two scaling.
  double rounded = std::nearbyint(scaled);  // Default rounding mode is to-nearest-even.
  // Compose bits: value = rounded * quantum.
  double result = rounded * quantum;
  const float max_value = NarrowBitsToFloat(type, max_bits);
  if (result > static_cast<double>(max_value)) {
    // Values at or beyond max + half a quantum overflow.
    return overflow();
  }
  if (result == 0) return f.nan_is_neg0 ? 0 : sign;
  int rexp = std::ilogb(result);
  uint32_t bits;
  if (rexp < min_exp) {
    bits = static_cast<uint32_t>(std::ldexp(result, f.mantissa_bits - min_exp));  // Subnormal.
  } else {
    uint32_t biased = static_cast<uint32_t>(rexp + f.bias);
    uint32_t mantissa =
        static_cast<uint32_t>(std::ldexp(result, f.mantissa_bits - rexp)) - (1u << f.mantissa_bits);
    bits = (biased << f.mantissa_bits) | mantissa;
  }
  return sign | bits;
}

float NarrowBitsToFloat(PrimitiveType type, uint32_t bits) {
  const Format f = FormatOf(type);
  if (type == PrimitiveType::kBF16) return std::bit_cast<float>(bits << 16);
  const int total = 1 + f.exponent_bits + f.mantissa_bits;
  const bool negative = (bits >> (total - 1)) & 1;
  const uint32_t exp_field = (bits >> f.mantissa_bits) & ((1u << f.exponent_bits) - 1);
  const uint32_t man_field = bits & ((1u << f.mantissa_bits) - 1);
  const uint32_t exp_all = (1u << f.exponent_bits) - 1;
  if (f.nan_is_neg0 && bits == (1u << (total - 1))) return std::numeric_limits<float>::quiet_NaN();
  if (f.has_inf && exp_field == exp_all) {
    if (man_field == 0) {
      return negative ? -std::numeric_limits<float>::infinity()
                      : std::numeric_limits<float>::infinity();
    }
    return std::numeric_limits<float>::quiet_NaN();
  }
  if (f.fn && exp_field == exp_all && man_field == (1u << f.mantissa_bits) - 1) {
    return std::numeric_limits<float>::quiet_NaN();
  }
  double value;
  if (exp_field == 0) {
    value = std::ldexp(static_cast<double>(man_field), 1 - f.bias - f.mantissa_bits);
  } else {
    value = std::ldexp(static_cast<double>(man_field + (1u << f.mantissa_bits)),
                       static_cast<int>(exp_field) - f.bias - f.mantissa_bits);
  }
  return static_cast<float>(negative ? -value : value);
}

}  // namespace spmdcheck
