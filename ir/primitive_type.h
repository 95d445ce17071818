// Element types of HLO arrays, with their XLA text spellings.
#ifndef SPMDCHECK_IR_PRIMITIVE_TYPE_H_
#define SPMDCHECK_IR_PRIMITIVE_TYPE_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace spmdcheck {

enum class PrimitiveType : uint8_t {
  kInvalid,
  kPred,
  kS2,
  kS4,
  kS8,
  kS16,
  kS32,
  kS64,
  kU2,
  kU4,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kF8E5M2,
  kF8E4M3FN,
  kF8E4M3B11FNUZ,
  kF8E5M2FNUZ,
  kF8E4M3FNUZ,
  kC64,
  kC128,
  kToken,
  kTuple,  // Only used as the element type of tuple shapes.
};

// The XLA spelling ("f32", "bf16", "pred", "token", ...). "tuple" for kTuple.
absl::string_view PrimitiveTypeName(PrimitiveType type);
// Inverse of PrimitiveTypeName for array and token types; nullopt for unknown names.
std::optional<PrimitiveType> PrimitiveTypeFromName(absl::string_view name);

// Bytes of one element (pred = 1, token/tuple = 0, s4/u4/s2/u2 = 1).
int64_t ByteWidth(PrimitiveType type);
// Bits of one element as XLA counts them (pred = 8).
int BitWidth(PrimitiveType type);

bool IsArrayType(PrimitiveType type);  // Everything but token, tuple, invalid.
bool IsFloatingType(PrimitiveType type);
bool IsComplexType(PrimitiveType type);
bool IsSignedIntegralType(PrimitiveType type);
bool IsUnsignedIntegralType(PrimitiveType type);
inline bool IsIntegralType(PrimitiveType type) {
  return IsSignedIntegralType(type) || IsUnsignedIntegralType(type);
}

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_PRIMITIVE_TYPE_H_
