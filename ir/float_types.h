// Conversions between f32/f64 and the narrow float formats (bf16, f16, f8 variants), with
// round-to-nearest-even as XLA (Eigen / ml_dtypes) does them.
#ifndef SPMDCHECK_IR_FLOAT_TYPES_H_
#define SPMDCHECK_IR_FLOAT_TYPES_H_

#include <cstdint>

#include "ir/primitive_type.h"

namespace spmdcheck {

// Bits of the narrow float `type` closest to `value` (round to nearest even; NaN kept as a quiet
// NaN with the sign; overflow to inf, or to NaN for the finite-only f8 formats).
uint32_t FloatToNarrowBits(PrimitiveType type, float value);
// Value of narrow float bits.
float NarrowBitsToFloat(PrimitiveType type, uint32_t bits);
// True for bf16, f16 and the f8 formats.
bool IsNarrowFloat(PrimitiveType type);

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_FLOAT_TYPES_H_
