#include "ir/primitive_type.h"

#include <array>
#include <utility>

namespace spmdcheck {
namespace {

struct TypeInfo {
  PrimitiveType type;
  absl::string_view name;
  int bits;
};

constexpr std::array<TypeInfo, 26> kTypes = {{
    {PrimitiveType::kPred, "pred", 8},
    {PrimitiveType::kS2, "s2", 2},
    {PrimitiveType::kS4, "s4", 4},
    {PrimitiveType::kS8, "s8", 8},
    {PrimitiveType::kS16, "s16", 16},
    {PrimitiveType::kS32, "s32", 32},
    {PrimitiveType::kS64, "s64", 64},
    {PrimitiveType::kU2, "u2", 2},
    {PrimitiveType::kU4, "u4", 4},
    {PrimitiveType::kU8, "u8", 8},
    {PrimitiveType::kU16, "u16", 16},
    {PrimitiveType::kU32, "u32", 32},
    {PrimitiveType::kU64, "u64", 64},
    {PrimitiveType::kF16, "f16", 16},
    {PrimitiveType::kBF16, "bf16", 16},
    {PrimitiveType::kF32, "f32", 32},
    {PrimitiveType::kF64, "f64", 64},
    {PrimitiveType::kF8E5M2, "f8e5m2", 8},
    {PrimitiveType::kF8E4M3FN, "f8e4m3fn", 8},
    {PrimitiveType::kF8E4M3B11FNUZ, "f8e4m3b11fnuz", 8},
    {PrimitiveType::kF8E5M2FNUZ, "f8e5m2fnuz", 8},
    {PrimitiveType::kF8E4M3FNUZ, "f8e4m3fnuz", 8},
    {PrimitiveType::kC64, "c64", 64},
    {PrimitiveType::kC128, "c128", 128},
    {PrimitiveType::kToken, "token", 0},
    {PrimitiveType::kTuple, "tuple", 0},
}};

const TypeInfo* Find(PrimitiveType type) {
  for (const TypeInfo& info : kTypes) {
    if (info.type == type) return &info;
  }
  return nullptr;
}

}  // namespace

absl::string_view PrimitiveTypeName(PrimitiveType type) {
  const TypeInfo* info = Find(type);
  return info == nullptr ? "invalid" : info->name;
}

std::optional<PrimitiveType> PrimitiveTypeFromName(absl::string_view name) {
  for (const TypeInfo& info : kTypes) {
    if (info.name == name && info.type != PrimitiveType::kTuple) return info.type;
  }
  return std::nullopt;
}

int BitWidth(PrimitiveType type) {
  const TypeInfo* info = Find(type);
  return info == nullptr ? 0 : info->bits;
}

int64_t ByteWidth(PrimitiveType type) {
  int bits = BitWidth(type);
  return bits == 0 ? 0 : (bits + 7) / 8;
}

bool IsArrayType(PrimitiveType type) {
  return type != PrimitiveType::kInvalid && type != PrimitiveType::kToken &&
         type != PrimitiveType::kTuple;
}

bool IsFloatingType(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kF16:
    case PrimitiveType::kBF16:
    case PrimitiveType::kF32:
    case PrimitiveType::kF64:
    case PrimitiveType::kF8E5M2:
    case PrimitiveType::kF8E4M3FN:
    case PrimitiveType::kF8E4M3B11FNUZ:
    case PrimitiveType::kF8E5M2FNUZ:
    case PrimitiveType::kF8E4M3FNUZ:
      return true;
    default:
      return false;
  }
}

bool IsComplexType(PrimitiveType type) {
  return type == PrimitiveType::kC64 || type == PrimitiveType::kC128;
}

bool IsSignedIntegralType(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kS2:
    case PrimitiveType::kS4:
    case PrimitiveType::kS8:
    case PrimitiveType::kS16:
    case PrimitiveType::kS32:
    case PrimitiveType::kS64:
      return true;
    default:
      return false;
  }
}

bool IsUnsignedIntegralType(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kU2:
    case PrimitiveType::kU4:
    case PrimitiveType::kU8:
    case PrimitiveType::kU16:
    case PrimitiveType::kU32:
    case PrimitiveType::kU64:
      return true;
    default:
      return false;
  }
}

}  // namespace spmdcheck
