// Shape: an array (element type + dims + optional layout), a tuple of shapes, or a token.
#ifndef SPMDCHECK_IR_SHAPE_H_
#define SPMDCHECK_IR_SHAPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "ir/primitive_type.h"

namespace spmdcheck {

// Largest element count we accept for one array. Anything larger is reported as an error by the
// parser and the verifier instead of being allocated.
inline constexpr int64_t kMaxArrayElements = int64_t{1} << 31;

// A layout as XLA prints it: `{1,0}` or `{1,0:T(8,128)}`. The minor-to-major list is structured;
// whatever follows the ':' (tiling, memory space, element size, ...) is kept verbatim since it
// never changes values.
struct Layout {
  std::vector<int64_t> minor_to_major;
  std::string extension;  // Text after ':' without the colon; empty when absent.

  bool operator==(const Layout& other) const = default;
  std::string ToString() const;
};

// Dimension kinds: static `8`, bounded dynamic `<=8`, unbounded dynamic `?`.
enum class DimensionKind : uint8_t { kStatic, kBoundedDynamic, kUnbounded };

class Shape {
 public:
  Shape() = default;  // An invalid shape.
  static Shape Array(PrimitiveType type, absl::Span<const int64_t> dims);
  static Shape Scalar(PrimitiveType type) { return Array(type, {}); }
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Token();

  bool IsValid() const { return element_type_ != PrimitiveType::kInvalid; }
  bool IsArray() const { return IsArrayType(element_type_); }
  bool IsTuple() const { return element_type_ == PrimitiveType::kTuple; }
  bool IsToken() const { return element_type_ == PrimitiveType::kToken; }
  bool IsScalar() const { return IsArray() && dims_.empty(); }

  PrimitiveType element_type() const { return element_type_; }
  void set_element_type(PrimitiveType type) { element_type_ = type; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  const std::vector<int64_t>& dimensions() const { return dims_; }
  int64_t dimensions(int64_t i) const { return dims_[i]; }
  void set_dimensions(int64_t i, int64_t size) { dims_[i] = size; }
  DimensionKind dimension_kind(int64_t i) const {
    return dim_kinds_.empty() ? DimensionKind::kStatic : dim_kinds_[i];
  }
  void set_dimension_kind(int64_t i, DimensionKind kind);
  bool is_static() const;

  const std::vector<Shape>& tuple_shapes() const { return tuple_shapes_; }
  std::vector<Shape>& mutable_tuple_shapes() { return tuple_shapes_; }
  int64_t tuple_size() const { return static_cast<int64_t>(tuple_shapes_.size()); }
  // Number of array/token leaves (a tuple counts its leaves recursively).
  int64_t LeafCount() const;

  const std::optional<Layout>& layout() const { return layout_; }
  void set_layout(Layout layout) { layout_ = std::move(layout); }
  void clear_layout() { layout_.reset(); }

  // Product of the dims, saturating at INT64_MAX. Arrays only.
  int64_t ElementCount() const;
  // ElementCount() * ByteWidth(element_type), saturating.
  int64_t ByteSize() const;

  // XLA text: `f32[8,4]{1,0}`, `(s32[], f32[2])`, `token[]`.
  std::string ToString(bool print_layout = true) const;

  // Same element types, dims and dim kinds, recursively; layouts ignored.
  bool Compatible(const Shape& other) const;
  // Compatible() and the same layouts.
  bool operator==(const Shape& other) const;

 private:
  PrimitiveType element_type_ = PrimitiveType::kInvalid;
  std::vector<int64_t> dims_;
  std::vector<DimensionKind> dim_kinds_;  // Empty means all static.
  std::vector<Shape> tuple_shapes_;
  std::optional<Layout> layout_;
};

// Row-major strides of `dims` (last dim fastest).
std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dims);
// Product of `dims`, or nullopt when it overflows int64.
std::optional<int64_t> CheckedProduct(absl::Span<const int64_t> dims);

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_SHAPE_H_
