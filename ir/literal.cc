#include "ir/literal.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/float_types.h"

namespace spmdcheck {

uint64_t WrapToType(PrimitiveType type, uint64_t value) {
  if (type == PrimitiveType::kPred) return value != 0 ? 1 : 0;
  const int bits = BitWidth(type);
  if (bits >= 64) return value;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  return value & mask;
}

Literal::Literal(const Shape& shape) : shape_(shape) {
  if (shape.IsTuple()) {
    for (const Shape& element : shape.tuple_shapes()) tuple_elements_.emplace_back(element);
    return;
  }
  if (!shape.IsArray()) return;
  width_ = ByteWidth(shape.element_type());
  bytes_.assign(static_cast<size_t>(shape.ElementCount() * width_), 0);
}

uint64_t Literal::GetBits(int64_t i) const {
  const int64_t part = IsComplexType(shape_.element_type()) ? width_ / 2 : width_;
  uint64_t bits = 0;
  std::memcpy(&bits, bytes_.data() + i * width_, static_cast<size_t>(part));
  return bits;
}

void Literal::SetBits(int64_t i, uint64_t bits) {
  const int64_t part = IsComplexType(shape_.element_type()) ? width_ / 2 : width_;
  std::memcpy(bytes_.data() + i * width_, &bits, static_cast<size_t>(part));
}

absl::StatusOr<Literal> Literal::CreateChecked(const Shape& shape) {
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    for (const Shape& element : shape.tuple_shapes()) {
      absl::StatusOr<Literal> literal = CreateChecked(element);
      if (!literal.ok()) return literal.status();
      elements.push_back(*std::move(literal));
    }
    Literal result = Tuple(std::move(elements));
    result.shape_ = shape;
    return result;
  }
  if (shape.IsArray() && shape.ElementCount() > kMaxArrayElements) {
    return absl::ResourceExhaustedError(
        absl::StrCat("array ", shape.ToString(false), " has more than 2^31 elements"));
  }
  return Literal(shape);
}

Literal Literal::Tuple(std::vector<Literal> elements) {
  std::vector<Shape> shapes;
  for (const Literal& element : elements) shapes.push_back(element.shape());
  Literal result;
  result.shape_ = Shape::Tuple(std::move(shapes));
  result.tuple_elements_ = std::move(elements);
  return result;
}

Literal Literal::Elided(const Shape& shape) {
  Literal result;
  result.shape_ = shape;
  result.elided_ = true;
  return result;
}

namespace {

int64_t SignExtend(uint64_t bits, int width) {
  if (width >= 64) return static_cast<int64_t>(bits);
  const uint64_t sign = uint64_t{1} << (width - 1);
  return static_cast<int64_t>((bits ^ sign) - sign);
}

}  // namespace

double Literal::GetDouble(int64_t i) const {
  const PrimitiveType type = shape_.element_type();
  const uint64_t bits = GetBits(i);
  switch (type) {
    case PrimitiveType::kF64:
      return std::bit_cast<double>(bits);
    case PrimitiveType::kF32:
    case PrimitiveType::kC64:
      return std::bit_cast<float>(static_cast<uint32_t>(bits));
    case PrimitiveType::kC128:
      return std::bit_cast<double>(bits);
    default:
      break;
  }
  if (IsNarrowFloat(type)) return NarrowBitsToFloat(type, static_cast<uint32_t>(bits));
  if (IsSignedIntegralType(type)) return static_cast<double>(SignExtend(bits, BitWidth(type)));
  return static_cast<double>(bits);
}

int64_t Literal::GetInt64(int64_t i) const {
  const PrimitiveType type = shape_.element_type();
  const uint64_t bits = GetBits(i);
  if (IsSignedIntegralType(type)) return SignExtend(bits, BitWidth(type));
  if (IsFloatingType(type) || IsComplexType(type)) return static_cast<int64_t>(GetDouble(i));
  return static_cast<int64_t>(bits);
}

uint64_t Literal::GetUint64(int64_t i) const {
  const PrimitiveType type = shape_.element_type();
  if (IsSignedIntegralType(type)) return static_cast<uint64_t>(GetInt64(i));
  if (IsFloatingType(type) || IsComplexType(type)) return static_cast<uint64_t>(GetDouble(i));
  return GetBits(i);
}

std::complex<double> Literal::GetComplex(int64_t i) const {
  const PrimitiveType type = shape_.element_type();
  if (type == PrimitiveType::kC64) {
    float parts[2];
    std::memcpy(parts, bytes_.data() + i * width_, sizeof(parts));
    return {parts[0], parts[1]};
  }
  if (type == PrimitiveType::kC128) {
    double parts[2];
    std::memcpy(parts, bytes_.data() + i * width_, sizeof(parts));
    return {parts[0], parts[1]};
  }
  return {GetDouble(i), 0.0};
}

void Literal::SetDouble(int64_t i, double value) {
  const PrimitiveType type = shape_.element_type();
  switch (type) {
    case PrimitiveType::kF64:
      SetBits(i, std::bit_cast<uint64_t>(value));
      return;
    case PrimitiveType::kF32:
      SetBits(i, std::bit_cast<uint32_t>(static_cast<float>(value)));
      return;
    case PrimitiveType::kC64:
    case PrimitiveType::kC128:
      SetComplex(i, {value, 0.0});
      return;
    default:
      break;
  }
  if (IsNarrowFloat(type)) {
    // f64 -> narrow goes through f32 first, as Eigen's constructors do.
    SetBits(i, FloatToNarrowBits(type, static_cast<float>(value)));
    return;
  }
  if (type == PrimitiveType::kPred) {
    SetBits(i, value != 0 ? 1 : 0);
    return;
  }
  // Float -> integer: truncate toward zero, saturate, NaN -> 0.
  if (std::isnan(value)) {
    SetBits(i, 0);
    return;
  }
  const int width = BitWidth(type);
  if (IsSignedIntegralType(type)) {
    const double lo = -std::ldexp(1.0, width - 1);
    const double hi = std::ldexp(1.0, width - 1);
    int64_t v;
    if (value <= lo) {
      v = width >= 64 ? INT64_MIN : -(int64_t{1} << (width - 1));
    } else if (value >= hi) {
      v = width >= 64 ? INT64_MAX : (int64_t{1} << (width - 1)) - 1;
    } else {
      v = static_cast<int64_t>(std::trunc(value));
    }
    SetBits(i, WrapToType(type, static_cast<uint64_t>(v)));
  } else {
    const double hi = std::ldexp(1.0, width);
    uint64_t v;
    if (value <= 0) {
      v = 0;
    } else if (value >= hi) {
      v = width >= 64 ? UINT64_MAX : (uint64_t{1} << width) - 1;
    } else {
      v = static_cast<uint64_t>(std::trunc(value));
    }
    SetBits(i, v);
  }
}

void Literal::SetInt64(int64_t i, int64_t value) {
  const PrimitiveType type = shape_.element_type();
  if (IsFloatingType(type) || IsComplexType(type)) {
    SetDouble(i, static_cast<double>(value));
    return;
  }
  SetBits(i, WrapToType(type, static_cast<uint64_t>(value)));
}

void Literal::SetUint64(int64_t i, uint64_t value) {
  const PrimitiveType type = shape_.element_type();
  if (IsFloatingType(type) || IsComplexType(type)) {
    SetDouble(i, static_cast<double>(value));
    return;
  }
  SetBits(i, WrapToType(type, value));
}

void Literal::SetComplex(int64_t i, std::complex<double> value) {
  const PrimitiveType type = shape_.element_type();
  if (type == PrimitiveType::kC64) {
    const float parts[2] = {static_cast<float>(value.real()), static_cast<float>(value.imag())};
    std::memcpy(bytes_.data() + i * width_, parts, sizeof(parts));
  } else if (type == PrimitiveType::kC128) {
    const double parts[2] = {value.real(), value.imag()};
    std::memcpy(bytes_.data() + i * width_, parts, sizeof(parts));
  } else {
    SetDouble(i, value.real());
  }
}

namespace {

// Shortest decimal text that reads back to the same value of `type`.
std::string FloatText(PrimitiveType type, double value) {
  if (std::isnan(value)) return std::signbit(value) ? "-nan" : "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buffer[64];
  if (type == PrimitiveType::kF64 || type == PrimitiveType::kC128) {
    auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
    return std::string(buffer, result.ptr);
  }
  if (type == PrimitiveType::kF32 || type == PrimitiveType::kC64) {
    auto result = std::to_chars(buffer, buffer + sizeof(buffer), static_cast<float>(value));
    return std::string(buffer, result.ptr);
  }
  // Narrow floats: the shortest %g text that rounds back to the same bits.
  const uint32_t bits = FloatToNarrowBits(type, static_cast<float>(value));
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    float back = std::strtof(buffer, nullptr);
    if (FloatToNarrowBits(type, back) == bits) return buffer;
  }
  std::snprintf(buffer, sizeof(buffer), "%.9g", value);
  return buffer;
}

}  // namespace

std::string Literal::ElementToString(int64_t i) const {
  const PrimitiveType type = shape_.element_type();
  if (type == PrimitiveType::kPred) return GetBits(i) != 0 ? "true" : "false";
  if (IsComplexType(type)) {
    std::complex<double> c = GetComplex(i);
    return absl::StrCat("(", FloatText(type, c.real()), ", ", FloatText(type, c.imag()), ")");
  }
  if (IsFloatingType(type)) return FloatText(type, GetDouble(i));
  if (IsSignedIntegralType(type)) return absl::StrCat(GetInt64(i));
  return absl::StrCat(GetUint64(i));
}

std::string Literal::ValuesToString() const {
  if (shape_.IsTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < tuple_elements_.size(); ++i) {
      if (i > 0) out += ", ";
      out += tuple_elements_[i].ValuesToString();
    }
    return out + ")";
  }
  if (shape_.IsToken()) return "token";
  if (elided_) return "{...}";
  if (shape_.rank() == 0) return ElementToString(0);
  std::string out;
  const std::vector<int64_t>& dims = shape_.dimensions();
  const int64_t rank = shape_.rank();
  std::vector<int64_t> index(rank, 0);
  const int64_t n = element_count();
  if (n == 0) {
    // Empty array: dims[0] copies of the (empty) rest, down to the first zero dim.
    std::function<std::string(int64_t)> empty = [&](int64_t d) -> std::string {
      if (dims[d] == 0 || d + 1 == rank) return "{}";
      std::vector<std::string> parts(static_cast<size_t>(dims[d]), empty(d + 1));
      return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
    };
    return empty(0);
  }
  for (int64_t linear = 0; linear < n; ++linear) {
    // Open braces for every dim whose index is 0 from the innermost changed dim.
    int64_t opens = 0;
    for (int64_t d = rank - 1; d >= 0 && index[d] == 0; --d) ++opens;
    if (linear > 0) out += ", ";
    out.append(static_cast<size_t>(opens), '{');
    out += ElementToString(linear);
    int64_t closes = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
      ++closes;
    }
    out.append(static_cast<size_t>(closes), '}');
  }
  return out;
}

std::string Literal::ToString() const {
  return absl::StrCat(shape_.ToString(false), " ", ValuesToString());
}

bool Literal::operator==(const Literal& other) const {
  return shape_.Compatible(other.shape_) && elided_ == other.elided_ && bytes_ == other.bytes_ &&
         tuple_elements_ == other.tuple_elements_;
}

}  // namespace spmdcheck
