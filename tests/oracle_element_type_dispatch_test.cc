// The oracle's element-type dispatch (oracle/element_type_dispatch.h): every array type reaches
// a tag whose storage type has the type's size and signedness, and the others give an error.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/float_types.h"
#include "ir/primitive_type.h"
#include "oracle/element_type_dispatch.h"

namespace spmdcheck::oracle {
namespace {

static_assert(std::is_same_v<StorageType<PrimitiveType::kPred>, uint8_t>);
static_assert(std::is_same_v<StorageType<PrimitiveType::kS8>, int8_t>);
static_assert(std::is_same_v<StorageType<PrimitiveType::kS32>, int32_t>);
static_assert(std::is_same_v<StorageType<PrimitiveType::kU64>, uint64_t>);
static_assert(std::is_same_v<StorageType<PrimitiveType::kBF16>, uint16_t>);
static_assert(std::is_same_v<StorageType<PrimitiveType::kF32>, float>);
static_assert(std::is_same_v<StorageType<PrimitiveType::kF64>, double>);
static_assert(std::is_same_v<StorageType<PrimitiveType::kF8E4M3FN>, uint8_t>);
static_assert(std::is_same_v<StorageType<PrimitiveType::kC64>, std::complex<float>>);
static_assert(std::is_same_v<StorageType<PrimitiveType::kC128>, std::complex<double>>);
static_assert(ElementTypeTag<PrimitiveType::kS4>::kIsSubByte);
static_assert(!ElementTypeTag<PrimitiveType::kS8>::kIsSubByte);
static_assert(ElementTypeTag<PrimitiveType::kF16>::kIsNarrowFloat);
static_assert(ElementTypeTag<PrimitiveType::kF64>::kIsNativeFloat);

// Every PrimitiveType value, array or not.
std::vector<PrimitiveType> AllTypes() {
  std::vector<PrimitiveType> types;
  for (int i = static_cast<int>(PrimitiveType::kInvalid);
       i <= static_cast<int>(PrimitiveType::kTuple); ++i) {
    types.push_back(static_cast<PrimitiveType>(i));
  }
  return types;
}

// What the tag of one type says, gathered at run time to compare with ir/primitive_type.h.
struct TagFacts {
  PrimitiveType type = PrimitiveType::kInvalid;
  ElementCategory category = ElementCategory::kPred;
  int64_t storage_bytes = 0;
  int bits = 0;
  bool storage_signed = false;    // std::is_signed_v of the storage (value type for complex).
  bool storage_integral = false;  // std::is_integral_v of the storage.
  bool storage_floating = false;  // std::is_floating_point_v of the storage.
  bool storage_complex = false;   // The storage is std::complex<T> of the half width.
  bool sub_byte = false;
  bool native_integer = false;
  bool native_float = false;
  bool narrow_float = false;
  int mantissa_bits = 0;
  int native_mantissa_bits = 0;  // std::numeric_limits<Storage>::digits - 1 for float/double.
};

template <typename T>
struct IsComplex : std::false_type {};
template <typename T>
struct IsComplex<std::complex<T>> : std::true_type {};

absl::StatusOr<TagFacts> FactsOf(PrimitiveType type) {
  return DispatchElementType(type, [](auto tag) {
    using Tag = decltype(tag);
    using S = typename Tag::Storage;
    TagFacts facts;
    facts.type = Tag::kType;
    facts.category = Tag::kCategory;
    facts.storage_bytes = sizeof(S);
    facts.bits = Tag::kBits;
    facts.storage_integral = std::is_integral_v<S>;
    facts.storage_floating = std::is_floating_point_v<S>;
    if constexpr (IsComplex<S>::value) {
      facts.storage_complex = 2 * sizeof(typename S::value_type) == sizeof(S);
      facts.storage_signed = std::is_signed_v<typename S::value_type>;
    } else {
      facts.storage_signed = std::is_signed_v<S>;
    }
    if constexpr (std::is_floating_point_v<S>) {
      facts.native_mantissa_bits = std::numeric_limits<S>::digits - 1;
    }
    facts.sub_byte = Tag::kIsSubByte;
    facts.native_integer = Tag::kIsNativeInteger;
    facts.native_float = Tag::kIsNativeFloat;
    facts.narrow_float = Tag::kIsNarrowFloat;
    facts.mantissa_bits = Tag::kMantissaBits;
    return facts;
  });
}

TEST(ElementTypeDispatchTest, EveryArrayTypeReachesItsOwnTag) {
  int dispatched = 0;
  for (PrimitiveType type : AllTypes()) {
    if (!IsArrayType(type)) continue;
    SCOPED_TRACE(std::string(PrimitiveTypeName(type)));
    absl::StatusOr<TagFacts> facts = FactsOf(type);
    ASSERT_TRUE(facts.ok()) << facts.status();
    ++dispatched;
    EXPECT_EQ(facts->type, type);
    EXPECT_EQ(facts->storage_bytes, ByteWidth(type));
    EXPECT_EQ(facts->bits, BitWidth(type));
  }
  EXPECT_EQ(dispatched, 24);
}

TEST(ElementTypeDispatchTest, CategoriesAgreeWithTheIrPredicates) {
  for (PrimitiveType type : AllTypes()) {
    if (!IsArrayType(type)) continue;
    SCOPED_TRACE(std::string(PrimitiveTypeName(type)));
    absl::StatusOr<TagFacts> facts = FactsOf(type);
    ASSERT_TRUE(facts.ok()) << facts.status();
    EXPECT_EQ(facts->category == ElementCategory::kPred, type == PrimitiveType::kPred);
    EXPECT_EQ(facts->category == ElementCategory::kSigned, IsSignedIntegralType(type));
    EXPECT_EQ(facts->category == ElementCategory::kUnsigned, IsUnsignedIntegralType(type));
    EXPECT_EQ(facts->category == ElementCategory::kFloat, IsFloatingType(type));
    EXPECT_EQ(facts->category == ElementCategory::kComplex, IsComplexType(type));
    EXPECT_EQ(facts->narrow_float, IsNarrowFloat(type));
  }
}

TEST(ElementTypeDispatchTest, StorageTypesHaveTheRightKindAndSignedness) {
  for (PrimitiveType type : AllTypes()) {
    if (!IsArrayType(type)) continue;
    SCOPED_TRACE(std::string(PrimitiveTypeName(type)));
    absl::StatusOr<TagFacts> facts = FactsOf(type);
    ASSERT_TRUE(facts.ok()) << facts.status();
    switch (facts->category) {
      case ElementCategory::kPred:
        EXPECT_TRUE(facts->storage_integral);
        EXPECT_FALSE(facts->storage_signed);
        break;
      case ElementCategory::kSigned:
      case ElementCategory::kUnsigned: {
        const bool is_signed = facts->category == ElementCategory::kSigned;
        EXPECT_TRUE(facts->storage_integral);
        EXPECT_EQ(facts->sub_byte, BitWidth(type) < 8);
        EXPECT_EQ(facts->native_integer, !facts->sub_byte);
        if (facts->sub_byte) {
          // Literal keeps the low bits of a sub-byte integer in an unsigned byte.
          EXPECT_FALSE(facts->storage_signed);
        } else {
          EXPECT_EQ(facts->storage_signed, is_signed);
        }
        break;
      }
      case ElementCategory::kFloat:
        if (type == PrimitiveType::kF32 || type == PrimitiveType::kF64) {
          EXPECT_TRUE(facts->storage_floating);
          EXPECT_TRUE(facts->native_float);
          EXPECT_EQ(facts->mantissa_bits, facts->native_mantissa_bits);
        } else {
          // Narrow floats are held as their bits.
          EXPECT_TRUE(facts->storage_integral);
          EXPECT_FALSE(facts->storage_signed);
          EXPECT_FALSE(facts->native_float);
        }
        break;
      case ElementCategory::kComplex:
        EXPECT_TRUE(facts->storage_complex);
        EXPECT_TRUE(facts->storage_signed);
        break;
    }
  }
}

// 1 + 2^-m is the float after 1 in a format with m mantissa bits: it survives a round trip
// through the narrow format, 1 + 2^-(m+1) (a tie) rounds to even, i.e. back to 1.
TEST(ElementTypeDispatchTest, NarrowFloatMantissaBitsMatchTheConversions) {
  for (PrimitiveType type : AllTypes()) {
    if (!IsArrayType(type) || !IsNarrowFloat(type)) continue;
    SCOPED_TRACE(std::string(PrimitiveTypeName(type)));
    absl::StatusOr<TagFacts> facts = FactsOf(type);
    ASSERT_TRUE(facts.ok()) << facts.status();
    const int m = facts->mantissa_bits;
    ASSERT_GT(m, 0);
    const float next = 1.0f + std::ldexp(1.0f, -m);
    const float half = 1.0f + std::ldexp(1.0f, -(m + 1));
    EXPECT_EQ(NarrowBitsToFloat(type, FloatToNarrowBits(type, next)), next);
    EXPECT_EQ(NarrowBitsToFloat(type, FloatToNarrowBits(type, half)), 1.0f);
  }
}

TEST(ElementTypeDispatchTest, TypesWithoutElementsGiveAnError) {
  for (PrimitiveType type :
       {PrimitiveType::kInvalid, PrimitiveType::kToken, PrimitiveType::kTuple}) {
    SCOPED_TRACE(std::string(PrimitiveTypeName(type)));
    bool called = false;
    const absl::Status status = DispatchElementType(type, [&](auto) { called = true; });
    EXPECT_FALSE(called);
    EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
    EXPECT_EQ(status.message(),
              std::string("unsupported element type ") + std::string(PrimitiveTypeName(type)));
    EXPECT_EQ(FactsOf(type).status(), status);
  }
  // An out-of-range value (say, from a corrupted enum) is refused too, not a crash.
  const auto bogus = static_cast<PrimitiveType>(200);
  EXPECT_FALSE(DispatchElementType(bogus, [](auto) {}).ok());
}

TEST(ElementTypeDispatchTest, ResultsAreForwarded) {
  // void -> Status.
  EXPECT_TRUE(DispatchElementType(PrimitiveType::kS32, [](auto) {}).ok());
  // Status -> the same Status.
  const absl::Status failed = DispatchElementType(PrimitiveType::kF32, [](auto tag) {
    return decltype(tag)::kIsFloat ? absl::InvalidArgumentError("float") : absl::OkStatus();
  });
  EXPECT_EQ(failed, absl::InvalidArgumentError("float"));
  // A value -> StatusOr of it.
  const absl::StatusOr<int> bits =
      DispatchElementType(PrimitiveType::kU16, [](auto tag) { return decltype(tag)::kBits; });
  ASSERT_TRUE(bits.ok());
  EXPECT_EQ(*bits, 16);
  // StatusOr -> the same StatusOr.
  const absl::StatusOr<int> bytes =
      DispatchElementType(PrimitiveType::kC128, [](auto tag) -> absl::StatusOr<int> {
        return static_cast<int>(sizeof(typename decltype(tag)::Storage));
      });
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 16);
}

TEST(ElementTypeDispatchTest, IfHandledIsFalseForUnhandledAndUnsupportedTypes) {
  auto floats_only = [](auto tag) { return decltype(tag)::kIsFloat; };
  EXPECT_TRUE(DispatchElementTypeIfHandled(PrimitiveType::kBF16, floats_only));
  EXPECT_FALSE(DispatchElementTypeIfHandled(PrimitiveType::kS32, floats_only));
  EXPECT_FALSE(DispatchElementTypeIfHandled(PrimitiveType::kToken, floats_only));
}

}  // namespace
}  // namespace spmdcheck::oracle
