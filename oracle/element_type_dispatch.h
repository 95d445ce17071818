// The oracle's one mapping from the element types it evaluates to the C++ types their elements
// have in a Literal buffer, and its one dispatch from a run-time PrimitiveType to that mapping.
//
// Kernels are written once as a generic lambda over an ElementTypeTag and instantiated per type:
//
//   absl::Status status = DispatchElementType(type, [&](auto tag) {
//     using Tag = decltype(tag);
//     if constexpr (Tag::kIsNativeFloat) Kernel<typename Tag::Storage>(...);
//   });
//
// An op family that handles a subset of the types (only floats, only integers, a fast path for
// some types and a generic one for the rest) says so with `if constexpr` on the tag's category.
// Types without elements (token, tuple, invalid) give an "unsupported element type" error.
#ifndef SPMDCHECK_ORACLE_ELEMENT_TYPE_DISPATCH_H_
#define SPMDCHECK_ORACLE_ELEMENT_TYPE_DISPATCH_H_

#include <complex>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/primitive_type.h"

namespace spmdcheck::oracle {

enum class ElementCategory : uint8_t { kPred, kSigned, kUnsigned, kFloat, kComplex };

// Everything a kernel needs to know about element type kTypeV at compile time.
//  * Storage: the C++ type of one element in the Literal buffer (ir/literal.h): sizeof(Storage) is
//    ByteWidth(kType). pred: uint8_t holding 0 or 1. s2/s4/u2/u4: uint8_t holding the low kBits
//    bits (one element per byte). s8..u64: the fixed-width integer. f32/f64: float/double.
//    bf16, f16 and the f8 formats: their raw bits as uint16_t/uint8_t (ir/float_types.h converts).
//    c64/c128: std::complex<float>/std::complex<double>.
//  * kBits: BitWidth(kType) (pred 8). kMantissaBits: explicit mantissa bits of a float type (0
//    for the others).
template <PrimitiveType kTypeV, typename StorageT, ElementCategory kCategoryV, int kBitsV,
          int kMantissaBitsV = 0>
struct ElementTypeTraits {
  static constexpr PrimitiveType kType = kTypeV;
  using Storage = StorageT;
  static constexpr ElementCategory kCategory = kCategoryV;
  static constexpr int kBits = kBitsV;
  static constexpr int kMantissaBits = kMantissaBitsV;

  static constexpr bool kIsPred = kCategoryV == ElementCategory::kPred;
  static constexpr bool kIsSigned = kCategoryV == ElementCategory::kSigned;
  static constexpr bool kIsUnsigned = kCategoryV == ElementCategory::kUnsigned;
  static constexpr bool kIsInteger = kIsSigned || kIsUnsigned;
  // s2, s4, u2, u4: the storage byte is not the value; read through Literal or mask and extend.
  static constexpr bool kIsSubByte = kIsInteger && kBitsV < 8;
  // s8..s64 and u8..u64: the storage type is the value's type.
  static constexpr bool kIsNativeInteger = kIsInteger && !kIsSubByte;
  static constexpr bool kIsFloat = kCategoryV == ElementCategory::kFloat;
  // f32 and f64: the storage type is the value's type.
  static constexpr bool kIsNativeFloat = std::is_floating_point_v<StorageT>;
  // bf16, f16 and the f8 formats: stored as bits, computed in f32.
  static constexpr bool kIsNarrowFloat = kIsFloat && !kIsNativeFloat;
  static constexpr bool kIsComplex = kCategoryV == ElementCategory::kComplex;

  static_assert(sizeof(StorageT) * 8 >= static_cast<size_t>(kBitsV));
  static_assert(!kIsComplex || sizeof(StorageT) * 8 == static_cast<size_t>(kBitsV));
};

// The tag of element type kType; defined for every array type (IsArrayType), nothing else.
template <PrimitiveType kType>
struct ElementTypeTag;

template <>
struct ElementTypeTag<PrimitiveType::kPred>
    : ElementTypeTraits<PrimitiveType::kPred, uint8_t, ElementCategory::kPred, 8> {};
template <>
struct ElementTypeTag<PrimitiveType::kS2>
    : ElementTypeTraits<PrimitiveType::kS2, uint8_t, ElementCategory::kSigned, 2> {};
template <>
struct ElementTypeTag<PrimitiveType::kS4>
    : ElementTypeTraits<PrimitiveType::kS4, uint8_t, ElementCategory::kSigned, 4> {};
template <>
struct ElementTypeTag<PrimitiveType::kS8>
    : ElementTypeTraits<PrimitiveType::kS8, int8_t, ElementCategory::kSigned, 8> {};
template <>
struct ElementTypeTag<PrimitiveType::kS16>
    : ElementTypeTraits<PrimitiveType::kS16, int16_t, ElementCategory::kSigned, 16> {};
template <>
struct ElementTypeTag<PrimitiveType::kS32>
    : ElementTypeTraits<PrimitiveType::kS32, int32_t, ElementCategory::kSigned, 32> {};
template <>
struct ElementTypeTag<PrimitiveType::kS64>
    : ElementTypeTraits<PrimitiveType::kS64, int64_t, ElementCategory::kSigned, 64> {};
template <>
struct ElementTypeTag<PrimitiveType::kU2>
    : ElementTypeTraits<PrimitiveType::kU2, uint8_t, ElementCategory::kUnsigned, 2> {};
template <>
struct ElementTypeTag<PrimitiveType::kU4>
    : ElementTypeTraits<PrimitiveType::kU4, uint8_t, ElementCategory::kUnsigned, 4> {};
template <>
struct ElementTypeTag<PrimitiveType::kU8>
    : ElementTypeTraits<PrimitiveType::kU8, uint8_t, ElementCategory::kUnsigned, 8> {};
template <>
struct ElementTypeTag<PrimitiveType::kU16>
    : ElementTypeTraits<PrimitiveType::kU16, uint16_t, ElementCategory::kUnsigned, 16> {};
template <>
struct ElementTypeTag<PrimitiveType::kU32>
    : ElementTypeTraits<PrimitiveType::kU32, uint32_t, ElementCategory::kUnsigned, 32> {};
template <>
struct ElementTypeTag<PrimitiveType::kU64>
    : ElementTypeTraits<PrimitiveType::kU64, uint64_t, ElementCategory::kUnsigned, 64> {};
template <>
struct ElementTypeTag<PrimitiveType::kF16>
    : ElementTypeTraits<PrimitiveType::kF16, uint16_t, ElementCategory::kFloat, 16, 10> {};
template <>
struct ElementTypeTag<PrimitiveType::kBF16>
    : ElementTypeTraits<PrimitiveType::kBF16, uint16_t, ElementCategory::kFloat, 16, 7> {};
template <>
struct ElementTypeTag<PrimitiveType::kF32>
    : ElementTypeTraits<PrimitiveType::kF32, float, ElementCategory::kFloat, 32, 23> {};
template <>
struct ElementTypeTag<PrimitiveType::kF64>
    : ElementTypeTraits<PrimitiveType::kF64, double, ElementCategory::kFloat, 64, 52> {};
template <>
struct ElementTypeTag<PrimitiveType::kF8E5M2>
    : ElementTypeTraits<PrimitiveType::kF8E5M2, uint8_t, ElementCategory::kFloat, 8, 2> {};
template <>
struct ElementTypeTag<PrimitiveType::kF8E4M3FN>
    : ElementTypeTraits<PrimitiveType::kF8E4M3FN, uint8_t, ElementCategory::kFloat, 8, 3> {};
template <>
struct ElementTypeTag<PrimitiveType::kF8E4M3B11FNUZ>
    : ElementTypeTraits<PrimitiveType::kF8E4M3B11FNUZ, uint8_t, ElementCategory::kFloat, 8, 3> {};
template <>
struct ElementTypeTag<PrimitiveType::kF8E5M2FNUZ>
    : ElementTypeTraits<PrimitiveType::kF8E5M2FNUZ, uint8_t, ElementCategory::kFloat, 8, 2> {};
template <>
struct ElementTypeTag<PrimitiveType::kF8E4M3FNUZ>
    : ElementTypeTraits<PrimitiveType::kF8E4M3FNUZ, uint8_t, ElementCategory::kFloat, 8, 3> {};
template <>
struct ElementTypeTag<PrimitiveType::kC64>
    : ElementTypeTraits<PrimitiveType::kC64, std::complex<float>, ElementCategory::kComplex, 64> {};
template <>
struct ElementTypeTag<PrimitiveType::kC128>
    : ElementTypeTraits<PrimitiveType::kC128, std::complex<double>, ElementCategory::kComplex,
                        128> {};

// The storage type of element type kType (int32_t for s32, uint16_t for bf16, ...).
template <PrimitiveType kType>
using StorageType = typename ElementTypeTag<kType>::Storage;

// "unsupported element type NAME": what the dispatch returns for a type it has no tag for.
inline absl::Status UnsupportedElementTypeError(PrimitiveType type) {
  return absl::UnimplementedError(
      absl::StrCat("unsupported element type ", PrimitiveTypeName(type)));
}

namespace element_type_dispatch_internal {

// What DispatchElementType returns for a callable returning R: absl::Status for void and Status,
// StatusOr<T> for StatusOr<T>, StatusOr<R> otherwise.
template <typename R>
struct DispatchResult {
  using type = absl::StatusOr<R>;
};
template <>
struct DispatchResult<void> {
  using type = absl::Status;
};
template <>
struct DispatchResult<absl::Status> {
  using type = absl::Status;
};
template <typename T>
struct DispatchResult<absl::StatusOr<T>> {
  using type = absl::StatusOr<T>;
};

template <typename Fn>
using FnResult = std::invoke_result_t<Fn&, ElementTypeTag<PrimitiveType::kPred>>;

template <PrimitiveType kType, typename Fn>
typename DispatchResult<FnResult<Fn>>::type Invoke(Fn& fn) {
  using Tag = ElementTypeTag<kType>;
  static_assert(std::is_same_v<std::invoke_result_t<Fn&, Tag>, FnResult<Fn>>,
                "the callable must return the same type for every element type tag");
  if constexpr (std::is_void_v<FnResult<Fn>>) {
    fn(Tag{});
    return absl::OkStatus();
  } else {
    return fn(Tag{});
  }
}

}  // namespace element_type_dispatch_internal

// Calls fn(ElementTypeTag<type>{}) and returns its result: absl::Status when fn returns void or
// a Status, absl::StatusOr<R> when it returns R (or StatusOr<R>). fn must return the same type
// for every tag. For a type without a tag (token, tuple, invalid) fn is not called and the
// result is UnsupportedElementTypeError(type).
template <typename Fn>
auto DispatchElementType(PrimitiveType type, Fn&& fn) ->
    typename element_type_dispatch_internal::DispatchResult<
        element_type_dispatch_internal::FnResult<Fn>>::type {
  using element_type_dispatch_internal::Invoke;
  switch (type) {
    case PrimitiveType::kPred:
      return Invoke<PrimitiveType::kPred>(fn);
    case PrimitiveType::kS2:
      return Invoke<PrimitiveType::kS2>(fn);
    case PrimitiveType::kS4:
      return Invoke<PrimitiveType::kS4>(fn);
    case PrimitiveType::kS8:
      return Invoke<PrimitiveType::kS8>(fn);
    case PrimitiveType::kS16:
      return Invoke<PrimitiveType::kS16>(fn);
    case PrimitiveType::kS32:
      return Invoke<PrimitiveType::kS32>(fn);
    case PrimitiveType::kS64:
      return Invoke<PrimitiveType::kS64>(fn);
    case PrimitiveType::kU2:
      return Invoke<PrimitiveType::kU2>(fn);
    case PrimitiveType::kU4:
      return Invoke<PrimitiveType::kU4>(fn);
    case PrimitiveType::kU8:
      return Invoke<PrimitiveType::kU8>(fn);
    case PrimitiveType::kU16:
      return Invoke<PrimitiveType::kU16>(fn);
    case PrimitiveType::kU32:
      return Invoke<PrimitiveType::kU32>(fn);
    case PrimitiveType::kU64:
      return Invoke<PrimitiveType::kU64>(fn);
    case PrimitiveType::kF16:
      return Invoke<PrimitiveType::kF16>(fn);
    case PrimitiveType::kBF16:
      return Invoke<PrimitiveType::kBF16>(fn);
    case PrimitiveType::kF32:
      return Invoke<PrimitiveType::kF32>(fn);
    case PrimitiveType::kF64:
      return Invoke<PrimitiveType::kF64>(fn);
    case PrimitiveType::kF8E5M2:
      return Invoke<PrimitiveType::kF8E5M2>(fn);
    case PrimitiveType::kF8E4M3FN:
      return Invoke<PrimitiveType::kF8E4M3FN>(fn);
    case PrimitiveType::kF8E4M3B11FNUZ:
      return Invoke<PrimitiveType::kF8E4M3B11FNUZ>(fn);
    case PrimitiveType::kF8E5M2FNUZ:
      return Invoke<PrimitiveType::kF8E5M2FNUZ>(fn);
    case PrimitiveType::kF8E4M3FNUZ:
      return Invoke<PrimitiveType::kF8E4M3FNUZ>(fn);
    case PrimitiveType::kC64:
      return Invoke<PrimitiveType::kC64>(fn);
    case PrimitiveType::kC128:
      return Invoke<PrimitiveType::kC128>(fn);
    case PrimitiveType::kInvalid:
    case PrimitiveType::kToken:
    case PrimitiveType::kTuple:
      break;
  }
  return UnsupportedElementTypeError(type);
}

// For kernels with a typed fast path on some element types: fn(tag) returns whether it handled
// the type; false also for the types DispatchElementType has no tag for.
template <typename Fn>
bool DispatchElementTypeIfHandled(PrimitiveType type, Fn&& fn) {
  const absl::StatusOr<bool> handled = DispatchElementType(type, std::forward<Fn>(fn));
  return handled.ok() && *handled;
}

}  // namespace spmdcheck::oracle

#endif  // SPMDCHECK_ORACLE_ELEMENT_TYPE_DISPATCH_H_
