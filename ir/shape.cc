#include "ir/shape.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace spmdcheck {

std::string Layout::ToString() const {
  std::string out = absl::StrCat("{", absl::StrJoin(minor_to_major, ","));
  if (!extension.empty()) absl::StrAppend(&out, ":", extension);
  out += "}";
  return out;
}

Shape Shape::Array(PrimitiveType type, absl::Span<const int64_t> dims) {
  Shape shape;
  shape.element_type_ = type;
  shape.dims_.assign(dims.begin(), dims.end());
  return shape;
}

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape shape;
  shape.element_type_ = PrimitiveType::kTuple;
  shape.tuple_shapes_ = std::move(elements);
  return shape;
}

Shape Shape::Token() {
  Shape shape;
  shape.element_type_ = PrimitiveType::kToken;
  return shape;
}

void Shape::set_dimension_kind(int64_t i, DimensionKind kind) {
  if (dim_kinds_.empty()) {
    if (kind == DimensionKind::kStatic) return;
    dim_kinds_.assign(dims_.size(), DimensionKind::kStatic);
  }
  dim_kinds_[i] = kind;
}

bool Shape::is_static() const {
  for (DimensionKind kind : dim_kinds_) {
    if (kind != DimensionKind::kStatic) return false;
  }
  for (const Shape& element : tuple_shapes_) {
    if (!element.is_static()) return false;
  }
  return true;
}

int64_t Shape::LeafCount() const {
  if (!IsTuple()) return 1;
  int64_t count = 0;
  for (const Shape& element : tuple_shapes_) count += element.LeafCount();
  return count;
}

std::optional<int64_t> CheckedProduct(absl::Span<const int64_t> dims) {
  int64_t product = 1;
  for (int64_t dim : dims) {
    if (dim < 0) return std::nullopt;
    if (dim != 0 && product > std::numeric_limits<int64_t>::max() / dim) return std::nullopt;
    product *= dim;
  }
  return product;
}

int64_t Shape::ElementCount() const {
  return CheckedProduct(dims_).value_or(std::numeric_limits<int64_t>::max());
}

int64_t Shape::ByteSize() const {
  if (IsTuple()) {
    int64_t total = 0;
    for (const Shape& element : tuple_shapes_) total += element.ByteSize();
    return total;
  }
  int64_t count = ElementCount();
  int64_t width = ByteWidth(element_type_);
  if (width != 0 && count > std::numeric_limits<int64_t>::max() / width) {
    return std::numeric_limits<int64_t>::max();
  }
  return count * width;
}

std::string Shape::ToString(bool print_layout) const {
  if (IsTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < tuple_shapes_.size(); ++i) {
      if (i > 0) out += ", ";
      if (i > 0 && i % 5 == 0) absl::StrAppend(&out, "/*index=", i, "*/");
      out += tuple_shapes_[i].ToString(print_layout);
    }
    out += ")";
    return out;
  }
  std::string out = absl::StrCat(PrimitiveTypeName(element_type_), "[");
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i > 0) out += ",";
    switch (dimension_kind(static_cast<int64_t>(i))) {
      case DimensionKind::kStatic:
        absl::StrAppend(&out, dims_[i]);
        break;
      case DimensionKind::kBoundedDynamic:
        absl::StrAppend(&out, "<=", dims_[i]);
        break;
      case DimensionKind::kUnbounded:
        out += "?";
        break;
    }
  }
  out += "]";
  if (print_layout && layout_.has_value() && IsArray()) out += layout_->ToString();
  return out;
}

bool Shape::Compatible(const Shape& other) const {
  if (element_type_ != other.element_type_) return false;
  if (IsTuple()) {
    if (tuple_shapes_.size() != other.tuple_shapes_.size()) return false;
    for (size_t i = 0; i < tuple_shapes_.size(); ++i) {
      if (!tuple_shapes_[i].Compatible(other.tuple_shapes_[i])) return false;
    }
    return true;
  }
  if (dims_ != other.dims_) return false;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (dimension_kind(i) != other.dimension_kind(i)) return false;
  }
  return true;
}

bool Shape::operator==(const Shape& other) const {
  if (!Compatible(other)) return false;
  if (IsTuple()) {
    for (size_t i = 0; i < tuple_shapes_.size(); ++i) {
      if (!(tuple_shapes_[i] == other.tuple_shapes_[i])) return false;
    }
    return true;
  }
  return layout_ == other.layout_;
}

std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

}  // namespace spmdcheck
