// Literal: a dense array value of any rank and element type, or a tuple of literals.
// Elements are held row-major in their native width (pred and sub-byte integers one byte each,
// complex as two floats), so typed kernels can work on the buffer directly through data<T>().
#ifndef SPMDCHECK_IR_LITERAL_H_
#define SPMDCHECK_IR_LITERAL_H_

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/shape.h"

namespace spmdcheck {

class Literal {
 public:
  Literal() = default;  // An invalid (empty) literal.
  // Zero-filled literal of `shape` (tuples recursively). The shape must be within
  // kMaxArrayElements per array; use CreateChecked for untrusted shapes.
  explicit Literal(const Shape& shape);
  static absl::StatusOr<Literal> CreateChecked(const Shape& shape);
  static Literal Tuple(std::vector<Literal> elements);
  // A literal whose contents were elided in the text (`constant({...})`).
  static Literal Elided(const Shape& shape);

  const Shape& shape() const { return shape_; }
  bool elided() const { return elided_; }
  int64_t element_count() const { return shape_.IsArray() ? shape_.ElementCount() : 0; }

  // Raw bits of element `i` (row-major), zero-extended. Complex: the real part's bits.
  uint64_t GetBits(int64_t i) const;
  void SetBits(int64_t i, uint64_t bits);

  // Bytes per element in the buffer (complex: both parts).
  int64_t element_byte_width() const { return width_; }
  uint8_t* raw_data() { return bytes_.data(); }
  const uint8_t* raw_data() const { return bytes_.data(); }
  int64_t size_bytes() const { return static_cast<int64_t>(bytes_.size()); }
  // Typed view of the buffer; sizeof(T) must equal element_byte_width().
  template <typename T>
  absl::Span<T> data() {
    return absl::Span<T>(reinterpret_cast<T*>(bytes_.data()), bytes_.size() / sizeof(T));
  }
  template <typename T>
  absl::Span<const T> data() const {
    return absl::Span<const T>(reinterpret_cast<const T*>(bytes_.data()),
                               bytes_.size() / sizeof(T));
  }

  // Value accessors that convert from the element type.
  double GetDouble(int64_t i) const;
  int64_t GetInt64(int64_t i) const;    // Integral and pred types (sign-extended).
  uint64_t GetUint64(int64_t i) const;  // Integral and pred types (zero-extended).
  std::complex<double> GetComplex(int64_t i) const;
  // Setters that convert into the element type (floats round to nearest even; integers wrap).
  void SetDouble(int64_t i, double value);
  void SetInt64(int64_t i, int64_t value);
  void SetUint64(int64_t i, uint64_t value);
  void SetComplex(int64_t i, std::complex<double> value);

  int64_t tuple_size() const { return static_cast<int64_t>(tuple_elements_.size()); }
  const std::vector<Literal>& tuple_elements() const { return tuple_elements_; }
  std::vector<Literal>& mutable_tuple_elements() { return tuple_elements_; }

  // Element `i` in XLA's text form (`1`, `-0.5`, `inf`, `nan`, `true`, `(1, 2)`).
  std::string ElementToString(int64_t i) const;
  // Values only: `{{1, 2, 3}, {4, 5, 6}}`, `7`, tuples `(1, {2, 3})`, elided `{...}`.
  std::string ValuesToString() const;
  // Shape then values: `s32[2,3] {{1, 2, 3}, {4, 5, 6}}`.
  std::string ToString() const;

  // Same shape (layouts ignored) and the same bits everywhere.
  bool operator==(const Literal& other) const;

 private:
  Shape shape_;
  bool elided_ = false;
  int64_t width_ = 0;
  std::vector<uint8_t> bytes_;
  std::vector<Literal> tuple_elements_;
};

// Truncates/extends `value` to the width of the integral (or pred) type, as two's complement.
uint64_t WrapToType(PrimitiveType type, uint64_t value);

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_LITERAL_H_
