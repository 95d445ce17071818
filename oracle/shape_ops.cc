// Shape ops: the ops that only move elements (broadcast, reshape, bitcast, transpose, slice,
// dynamic-slice, dynamic-update-slice, concatenate, pad, reverse), iota, the tuple plumbing
// (tuple, get-tuple-element, opt-barrier, copy-start/copy-done) and get-dimension-size.
//
// Every data-moving op is expressed as one or more strided copies on raw bytes: a destination
// and a source base pointer plus, per iteration dimension, a size and a destination and source
// stride in elements. Element types therefore all behave the same (pred, sub-byte integers held
// one per byte, narrow floats, complex), and one tuned copy loop (dimension merging, memcpy for
// contiguous rows, width-specialised element loops, 2-D tiling for transposes) serves all ops.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"
#include "ir/primitive_type.h"
#include "ir/shape.h"
#include "oracle/kernel_util.h"
#include "oracle/op_registry.h"

namespace spmdcheck::oracle {
namespace {

__extension__ using Int128 = __int128;

// ---------------------------------------------------------------------------------------------
// Strided copy on raw bytes.

struct CopyDim {
  int64_t size = 0;
  int64_t dst_stride = 0;  // In elements; may be negative (reverse) or 0 (never for dst).
  int64_t src_stride = 0;  // In elements; 0 replicates (broadcast, fills).
};

template <int kWidth>
void CopyRowFixed(uint8_t* dst, int64_t dst_step, const uint8_t* src, int64_t src_step, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst, src, kWidth);
    dst += dst_step;
    src += src_step;
  }
}

// Copies n elements of `width` bytes; steps are in bytes.
void CopyRow(uint8_t* dst, int64_t dst_step, const uint8_t* src, int64_t src_step, int64_t n,
             int64_t width) {
  if (dst_step == width && src_step == width) {
    std::memcpy(dst, src, static_cast<size_t>(n * width));
    return;
  }
  switch (width) {
    case 1:
      return CopyRowFixed<1>(dst, dst_step, src, src_step, n);
    case 2:
      return CopyRowFixed<2>(dst, dst_step, src, src_step, n);
    case 4:
      return CopyRowFixed<4>(dst, dst_step, src, src_step, n);
    case 8:
      return CopyRowFixed<8>(dst, dst_step, src, src_step, n);
    case 16:
      return CopyRowFixed<16>(dst, dst_step, src, src_step, n);
    default:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(dst, src, static_cast<size_t>(width));
        dst += dst_step;
        src += src_step;
      }
  }
}

// A 2-D block copy in square tiles: `a` is the dimension along which the source is contiguous,
// `b` the one along which the destination is, so both sides stay in cache within a tile.
template <int kWidth>
void CopyTiledFixed(uint8_t* dst, int64_t dst_a, int64_t dst_b, const uint8_t* src, int64_t src_a,
                    int64_t src_b, int64_t na, int64_t nb) {
  constexpr int64_t kTile = 32;
  for (int64_t a0 = 0; a0 < na; a0 += kTile) {
    const int64_t a1 = std::min(na, a0 + kTile);
    for (int64_t b0 = 0; b0 < nb; b0 += kTile) {
      const int64_t b1 = std::min(nb, b0 + kTile);
      for (int64_t a = a0; a < a1; ++a) {
        uint8_t* d = dst + a * dst_a + b0 * dst_b;
        const uint8_t* s = src + a * src_a + b0 * src_b;
        for (int64_t b = b0; b < b1; ++b) {
          std::memcpy(d, s, kWidth);
          d += dst_b;
          s += src_b;
        }
      }
    }
  }
}

void CopyTiled(uint8_t* dst, int64_t dst_a, int64_t dst_b, const uint8_t* src, int64_t src_a,
               int64_t src_b, int64_t na, int64_t nb, int64_t width) {
  switch (width) {
    case 1:
      return CopyTiledFixed<1>(dst, dst_a, dst_b, src, src_a, src_b, na, nb);
    case 2:
      return CopyTiledFixed<2>(dst, dst_a, dst_b, src, src_a, src_b, na, nb);
    case 4:
      return CopyTiledFixed<4>(dst, dst_a, dst_b, src, src_a, src_b, na, nb);
    case 8:
      return CopyTiledFixed<8>(dst, dst_a, dst_b, src, src_a, src_b, na, nb);
    case 16:
      return CopyTiledFixed<16>(dst, dst_a, dst_b, src, src_a, src_b, na, nb);
    default:
      for (int64_t a = 0; a < na; ++a) {
        CopyRow(dst + a * dst_a, dst_b, src + a * src_a, src_b, nb, width);
      }
  }
}

// dst[sum_d i_d * dst_stride_d] = src[sum_d i_d * src_stride_d] for every index i of `dims`
// (outermost first). Destination positions must be distinct.
void StridedCopy(uint8_t* dst, const uint8_t* src, int64_t width,
                 const std::vector<CopyDim>& dims) {
  for (const CopyDim& d : dims) {
    if (d.size <= 0) return;
  }
  // Drop size-1 dims, then merge neighbours that are contiguous on both sides.
  std::vector<CopyDim> merged;
  for (const CopyDim& d : dims) {
    if (d.size == 1) continue;
    if (!merged.empty()) {
      CopyDim& outer = merged.back();
      if (outer.dst_stride == d.dst_stride * d.size && outer.src_stride == d.src_stride * d.size) {
        outer.size *= d.size;
        outer.dst_stride = d.dst_stride;
        outer.src_stride = d.src_stride;
        continue;
      }
    }
    merged.push_back(d);
  }
  if (merged.empty()) {
    std::memcpy(dst, src, static_cast<size_t>(width));
    return;
  }
  // Transpose-like copies: the innermost dim reads with a stride while another dim reads
  // contiguously; copy those two dims in tiles.
  int64_t inner_dims = 1;
  const int64_t rank = static_cast<int64_t>(merged.size());
  if (rank >= 2 && merged.back().src_stride != 1 && merged.back().src_stride != 0 &&
      merged.back().size >= 4) {
    int64_t contiguous = -1;
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (merged[d].src_stride == 1 && merged[d].size >= 4) {
        contiguous = d;
        break;
      }
    }
    if (contiguous >= 0) {
      CopyDim moved = merged[contiguous];
      merged.erase(merged.begin() + contiguous);
      merged.insert(merged.end() - 1, moved);
      inner_dims = 2;
    }
  }
  const int64_t outer_rank = rank - inner_dims;
  std::vector<int64_t> index(static_cast<size_t>(outer_rank), 0);
  const CopyDim& last = merged[rank - 1];
  const int64_t dst_step = last.dst_stride * width;
  const int64_t src_step = last.src_stride * width;
  int64_t dst_offset = 0;
  int64_t src_offset = 0;
  while (true) {
    if (inner_dims == 2) {
      const CopyDim& a = merged[rank - 2];
      CopyTiled(dst + dst_offset, a.dst_stride * width, dst_step, src + src_offset,
                a.src_stride * width, src_step, a.size, last.size, width);
    } else {
      CopyRow(dst + dst_offset, dst_step, src + src_offset, src_step, last.size, width);
    }
    int64_t k = outer_rank - 1;
    for (; k >= 0; --k) {
      const CopyDim& d = merged[k];
      if (++index[k] < d.size) {
        dst_offset += d.dst_stride * width;
        src_offset += d.src_stride * width;
        break;
      }
      index[k] = 0;
      dst_offset -= (d.size - 1) * d.dst_stride * width;
      src_offset -= (d.size - 1) * d.src_stride * width;
    }
    if (k < 0) return;
  }
}

// Row-major copy dims of `dims` with the given strides on each side.
std::vector<CopyDim> MakeCopyDims(absl::Span<const int64_t> dims,
                                  absl::Span<const int64_t> dst_strides,
                                  absl::Span<const int64_t> src_strides) {
  std::vector<CopyDim> out(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) out[i] = {dims[i], dst_strides[i], src_strides[i]};
  return out;
}

// ---------------------------------------------------------------------------------------------
// Validation helpers.

std::string DimsText(absl::Span<const int64_t> dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

absl::Status CheckOperandCount(const HloInstruction& instruction,
                               absl::Span<const Literal* const> operands, int64_t min_count,
                               int64_t max_count) {
  const int64_t n = static_cast<int64_t>(operands.size());
  if (n != instruction.operand_count()) {
    return InstructionError(instruction, absl::StrCat("given ", n, " operand values for ",
                                                      instruction.operand_count(), " operands"));
  }
  if (n < min_count || (max_count >= 0 && n > max_count)) {
    return InstructionError(
        instruction, max_count == min_count
                         ? absl::StrCat("expects ", min_count, " operands, has ", n)
                         : absl::StrCat("expects at least ", min_count, " operands, has ", n));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (operands[i] == nullptr) {
      return InstructionError(instruction, absl::StrCat("operand ", i, " has no value"));
    }
  }
  return absl::OkStatus();
}

// Operand `i` as an array literal whose contents can be read.
absl::StatusOr<const Literal*> ArrayOperand(const HloInstruction& instruction,
                                            absl::Span<const Literal* const> operands, int64_t i,
                                            bool need_data = true) {
  const Literal* literal = operands[i];
  const Shape& shape = literal->shape();
  if (!shape.IsArray()) {
    return InstructionError(
        instruction, absl::StrCat("operand ", i, " must be an array, is ", shape.ToString(false)));
  }
  if (!shape.is_static()) {
    return Unsupported(instruction, absl::StrCat("operand ", i, " with dynamic dimensions (",
                                                 shape.ToString(false), ")"));
  }
  if (!need_data) return literal;
  if (literal->elided()) {
    return Unsupported(instruction, absl::StrCat("operand ", i, " with elided contents"));
  }
  if (literal->element_byte_width() != ByteWidth(shape.element_type()) ||
      literal->size_bytes() != literal->element_count() * literal->element_byte_width()) {
    return InstructionError(instruction,
                            absl::StrCat("operand ", i, " value does not fill its shape"));
  }
  return literal;
}

// The instruction's (array) result shape, checked to hold `type` with `dims`, allocated.
absl::StatusOr<Literal> NewResult(const HloInstruction& instruction, PrimitiveType type,
                                  absl::Span<const int64_t> dims) {
  const Shape& shape = instruction.shape();
  if (!shape.IsArray()) {
    return InstructionError(instruction,
                            absl::StrCat("result must be an array, is ", shape.ToString(false)));
  }
  if (!shape.is_static()) {
    return Unsupported(instruction, absl::StrCat("a result with dynamic dimensions (",
                                                 shape.ToString(false), ")"));
  }
  if (shape.element_type() != type ||
      !std::equal(shape.dimensions().begin(), shape.dimensions().end(), dims.begin(), dims.end())) {
    return InstructionError(instruction,
                            absl::StrCat("result shape ", shape.ToString(false), " should be ",
                                         PrimitiveTypeName(type), DimsText(dims)));
  }
  return Literal::CreateChecked(shape);
}

absl::Status CheckResultArrayShape(const HloInstruction& instruction) {
  const Shape& shape = instruction.shape();
  if (!shape.IsArray()) {
    return InstructionError(instruction,
                            absl::StrCat("result must be an array, is ", shape.ToString(false)));
  }
  if (!shape.is_static()) {
    return Unsupported(instruction, absl::StrCat("a result with dynamic dimensions (",
                                                 shape.ToString(false), ")"));
  }
  return absl::OkStatus();
}

// A list of distinct dimension numbers in [0, rank).
absl::Status CheckDimensionList(const HloInstruction& instruction,
                                absl::Span<const int64_t> dimensions, int64_t rank,
                                absl::string_view what) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t d : dimensions) {
    if (d < 0 || d >= rank) {
      return InstructionError(instruction,
                              absl::StrCat(what, " ", d, " is out of range for rank ", rank));
    }
    if (seen[d]) {
      return InstructionError(instruction, absl::StrCat(what, " ", d, " is repeated"));
    }
    seen[d] = true;
  }
  return absl::OkStatus();
}

std::vector<int64_t> Strides(const Shape& shape) { return RowMajorStrides(shape.dimensions()); }

// Copies a literal (any shape) for ops that forward values.
Literal CopyLiteral(const Literal& literal) { return literal; }

#define SHAPE_OPS_RETURN_IF_ERROR(expr)                    \
  do {                                                     \
    absl::Status spmdcheck_status_ = (expr);               \
    if (!spmdcheck_status_.ok()) return spmdcheck_status_; \
  } while (false)

#define SHAPE_OPS_CONCAT_INNER(a, b) a##b
#define SHAPE_OPS_CONCAT(a, b) SHAPE_OPS_CONCAT_INNER(a, b)
// `lhs` is a declaration (`Literal result`), which parentheses would not compile: hence the NOLINT.
#define SHAPE_OPS_ASSIGN_OR_RETURN(lhs, expr)                  \
  auto SHAPE_OPS_CONCAT(spmdcheck_or_, __LINE__) = (expr);     \
  if (!SHAPE_OPS_CONCAT(spmdcheck_or_, __LINE__).ok())         \
    return SHAPE_OPS_CONCAT(spmdcheck_or_, __LINE__).status(); \
  lhs = *std::move(SHAPE_OPS_CONCAT(spmdcheck_or_, __LINE__))  // NOLINT(bugprone-macro-parentheses)

// ---------------------------------------------------------------------------------------------
// broadcast

absl::StatusOr<Literal> HandleBroadcast(const HloInstruction& instruction,
                                        absl::Span<const Literal* const> operands, const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 1, 1));
  SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* operand, ArrayOperand(instruction, operands, 0));
  SHAPE_OPS_RETURN_IF_ERROR(CheckResultArrayShape(instruction));
  const Shape& in = operand->shape();
  const Shape& out = instruction.shape();
  std::vector<int64_t> dimensions;
  if (instruction.attrs().dimensions.has_value()) {
    dimensions = *instruction.attrs().dimensions;
  } else if (in.rank() != 0) {
    return InstructionError(instruction, "missing dimensions={...} for a non-scalar operand");
  }
  if (static_cast<int64_t>(dimensions.size()) != in.rank()) {
    return InstructionError(instruction,
                            absl::StrCat("dimensions has ", dimensions.size(),
                                         " entries for an operand of rank ", in.rank()));
  }
  SHAPE_OPS_RETURN_IF_ERROR(CheckDimensionList(instruction, dimensions, out.rank(), "dimension"));
  for (int64_t i = 0; i < in.rank(); ++i) {
    if (out.dimensions(dimensions[i]) != in.dimensions(i)) {
      return InstructionError(
          instruction,
          absl::StrCat("operand dim ", i, " (size ", in.dimensions(i), ") maps to result dim ",
                       dimensions[i], " of size ", out.dimensions(dimensions[i])));
    }
  }
  SHAPE_OPS_ASSIGN_OR_RETURN(Literal result,
                             NewResult(instruction, in.element_type(), out.dimensions()));
  const std::vector<int64_t> in_strides = Strides(in);
  std::vector<int64_t> src_strides(static_cast<size_t>(out.rank()), 0);
  for (int64_t i = 0; i < in.rank(); ++i) src_strides[dimensions[i]] = in_strides[i];
  StridedCopy(result.raw_data(), operand->raw_data(), result.element_byte_width(),
              MakeCopyDims(out.dimensions(), Strides(out), src_strides));
  return result;
}

// ---------------------------------------------------------------------------------------------
// reshape, bitcast

absl::StatusOr<Literal> HandleReshape(const HloInstruction& instruction,
                                      absl::Span<const Literal* const> operands, const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 1, 1));
  SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* operand, ArrayOperand(instruction, operands, 0));
  SHAPE_OPS_RETURN_IF_ERROR(CheckResultArrayShape(instruction));
  const Shape& out = instruction.shape();
  if (out.element_type() != operand->shape().element_type()) {
    return InstructionError(instruction,
                            absl::StrCat("element type changes from ",
                                         PrimitiveTypeName(operand->shape().element_type()), " to ",
                                         PrimitiveTypeName(out.element_type())));
  }
  std::optional<int64_t> count = CheckedProduct(out.dimensions());
  if (!count.has_value() || *count != operand->element_count()) {
    return InstructionError(instruction,
                            absl::StrCat("reshape of ", operand->shape().ToString(false), " to ",
                                         out.ToString(false), " changes the element count"));
  }
  SHAPE_OPS_ASSIGN_OR_RETURN(Literal result,
                             NewResult(instruction, out.element_type(), out.dimensions()));
  if (result.size_bytes() > 0) {
    std::memcpy(result.raw_data(), operand->raw_data(), static_cast<size_t>(result.size_bytes()));
  }
  return result;
}

// Element strides of the physical buffer of `shape` (indexed by logical dim), or nullopt when the
// layout is one this interpreter does not model (tiling, element size, ...). No layout means the
// default row-major layout.
std::optional<std::vector<int64_t>> PhysicalStrides(const Shape& shape) {
  const int64_t rank = shape.rank();
  if (!shape.layout().has_value()) return RowMajorStrides(shape.dimensions());
  const Layout& layout = *shape.layout();
  if (!layout.extension.empty()) {
    // Only a memory space annotation (`S(n)`) leaves the byte order alone.
    const std::string& e = layout.extension;
    bool memory_space_only = e.size() >= 4 && e[0] == 'S' && e[1] == '(' && e.back() == ')';
    for (size_t i = 2; memory_space_only && i + 1 < e.size(); ++i) {
      if (e[i] < '0' || e[i] > '9') memory_space_only = false;
    }
    if (!memory_space_only) return std::nullopt;
  }
  if (static_cast<int64_t>(layout.minor_to_major.size()) != rank) return std::nullopt;
  std::vector<int64_t> strides(static_cast<size_t>(rank), 0);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  int64_t stride = 1;
  for (int64_t d : layout.minor_to_major) {
    if (d < 0 || d >= rank || seen[d]) return std::nullopt;
    seen[d] = true;
    strides[d] = stride;
    stride *= shape.dimensions(d);
  }
  return strides;
}

// True for types whose Literal bytes are exactly their in-memory bits (not pred, not sub-byte).
bool HasPlainBytes(PrimitiveType type) {
  return type != PrimitiveType::kPred && BitWidth(type) == 8 * ByteWidth(type);
}

// bitcast reinterprets the physical buffer: the operand is laid out by its layout, the bytes are
// read back by the result's layout (XLA's evaluator memcpys the layout-ordered buffer). Without
// layouts (or with equal default ones) this is a reshape.
absl::StatusOr<Literal> HandleBitcast(const HloInstruction& instruction,
                                      absl::Span<const Literal* const> operands, const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 1, 1));
  SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* operand, ArrayOperand(instruction, operands, 0));
  SHAPE_OPS_RETURN_IF_ERROR(CheckResultArrayShape(instruction));
  const Shape& out = instruction.shape();
  // The operand's layout is the one its producing instruction was written with; the literal
  // itself is always logical row-major.
  Shape in = operand->shape();
  const Shape& declared_in = instruction.operand(0)->shape();
  if (declared_in.layout().has_value()) {
    in.set_layout(*declared_in.layout());
  } else {
    in.clear_layout();
  }
  const PrimitiveType in_type = in.element_type();
  const PrimitiveType out_type = out.element_type();
  std::optional<int64_t> out_count = CheckedProduct(out.dimensions());
  if (!out_count.has_value()) {
    return InstructionError(instruction, "result element count overflows");
  }
  // Layout-identical no-op (any layout, even tiled ones).
  if (in_type == out_type && in.dimensions() == out.dimensions() && in.layout() == out.layout()) {
    SHAPE_OPS_ASSIGN_OR_RETURN(Literal same, NewResult(instruction, out_type, out.dimensions()));
    if (same.size_bytes() > 0) {
      std::memcpy(same.raw_data(), operand->raw_data(), static_cast<size_t>(same.size_bytes()));
    }
    return same;
  }
  if (in_type == out_type) {
    if (*out_count != operand->element_count()) {
      return Unsupported(
          instruction, absl::StrCat("bitcast that changes the element count (", in.ToString(false),
                                    " to ", out.ToString(false), ")"));
    }
  } else {
    if (!HasPlainBytes(in_type) || !HasPlainBytes(out_type)) {
      return Unsupported(instruction, absl::StrCat("bitcast from ", PrimitiveTypeName(in_type),
                                                   " to ", PrimitiveTypeName(out_type)));
    }
    if (*out_count > kMaxArrayElements ||
        *out_count * ByteWidth(out_type) != operand->size_bytes()) {
      return Unsupported(instruction,
                         absl::StrCat("bitcast that changes the byte size (", in.ToString(false),
                                      " to ", out.ToString(false), ")"));
    }
  }
  if (*out_count == 0) return NewResult(instruction, out_type, out.dimensions());
  std::optional<std::vector<int64_t>> in_physical = PhysicalStrides(in);
  std::optional<std::vector<int64_t>> out_physical = PhysicalStrides(out);
  if (!in_physical.has_value() || !out_physical.has_value()) {
    return Unsupported(instruction, absl::StrCat("bitcast between layouts ", in.ToString(true),
                                                 " and ", out.ToString(true)));
  }
  SHAPE_OPS_ASSIGN_OR_RETURN(Literal result, NewResult(instruction, out_type, out.dimensions()));
  if (result.size_bytes() == 0) return result;
  const bool in_row_major = *in_physical == RowMajorStrides(in.dimensions());
  const bool out_row_major = *out_physical == RowMajorStrides(out.dimensions());
  if (in_row_major && out_row_major) {
    std::memcpy(result.raw_data(), operand->raw_data(), static_cast<size_t>(result.size_bytes()));
    return result;
  }
  // Lay the operand out physically, then read the result from the physical bytes.
  std::vector<uint8_t> physical(static_cast<size_t>(operand->size_bytes()));
  StridedCopy(physical.data(), operand->raw_data(), operand->element_byte_width(),
              MakeCopyDims(in.dimensions(), *in_physical, Strides(in)));
  StridedCopy(result.raw_data(), physical.data(), result.element_byte_width(),
              MakeCopyDims(out.dimensions(), Strides(out), *out_physical));
  return result;
}

// ---------------------------------------------------------------------------------------------
// transpose, reverse

absl::StatusOr<Literal> HandleTranspose(const HloInstruction& instruction,
                                        absl::Span<const Literal* const> operands, const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 1, 1));
  SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* operand, ArrayOperand(instruction, operands, 0));
  const Shape& in = operand->shape();
  if (!instruction.attrs().dimensions.has_value()) {
    return InstructionError(instruction, "missing dimensions={...}");
  }
  const std::vector<int64_t>& perm = *instruction.attrs().dimensions;
  if (static_cast<int64_t>(perm.size()) != in.rank()) {
    return InstructionError(
        instruction, absl::StrCat("dimensions has ", perm.size(), " entries for rank ", in.rank()));
  }
  SHAPE_OPS_RETURN_IF_ERROR(CheckDimensionList(instruction, perm, in.rank(), "dimension"));
  std::vector<int64_t> out_dims(perm.size());
  std::vector<int64_t> src_strides(perm.size());
  const std::vector<int64_t> in_strides = Strides(in);
  for (size_t i = 0; i < perm.size(); ++i) {
    out_dims[i] = in.dimensions(perm[i]);
    src_strides[i] = in_strides[perm[i]];
  }
  SHAPE_OPS_ASSIGN_OR_RETURN(Literal result, NewResult(instruction, in.element_type(), out_dims));
  StridedCopy(result.raw_data(), operand->raw_data(), result.element_byte_width(),
              MakeCopyDims(out_dims, RowMajorStrides(out_dims), src_strides));
  return result;
}

absl::StatusOr<Literal> HandleReverse(const HloInstruction& instruction,
                                      absl::Span<const Literal* const> operands, const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 1, 1));
  SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* operand, ArrayOperand(instruction, operands, 0));
  const Shape& in = operand->shape();
  if (!instruction.attrs().dimensions.has_value()) {
    return InstructionError(instruction, "missing dimensions={...}");
  }
  const std::vector<int64_t>& dimensions = *instruction.attrs().dimensions;
  SHAPE_OPS_RETURN_IF_ERROR(CheckDimensionList(instruction, dimensions, in.rank(), "dimension"));
  SHAPE_OPS_ASSIGN_OR_RETURN(Literal result,
                             NewResult(instruction, in.element_type(), in.dimensions()));
  if (result.element_count() == 0) return result;
  std::vector<int64_t> src_strides = Strides(in);
  int64_t src_offset = 0;
  for (int64_t d : dimensions) {
    src_offset += (in.dimensions(d) - 1) * src_strides[d];
    src_strides[d] = -src_strides[d];
  }
  const int64_t width = result.element_byte_width();
  StridedCopy(result.raw_data(), operand->raw_data() + src_offset * width, width,
              MakeCopyDims(in.dimensions(), Strides(in), src_strides));
  return result;
}

// ---------------------------------------------------------------------------------------------
// slice, dynamic-slice, dynamic-update-slice

absl::StatusOr<Literal> HandleSlice(const HloInstruction& instruction,
                                    absl::Span<const Literal* const> operands, const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 1, 1));
  SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* operand, ArrayOperand(instruction, operands, 0));
  const Shape& in = operand->shape();
  if (!instruction.attrs().slice.has_value()) {
    return InstructionError(instruction, "missing slice={...}");
  }
  const std::vector<SliceDim>& slice = *instruction.attrs().slice;
  if (static_cast<int64_t>(slice.size()) != in.rank()) {
    return InstructionError(
        instruction, absl::StrCat("slice has ", slice.size(), " entries for rank ", in.rank()));
  }
  const std::vector<int64_t> in_strides = Strides(in);
  std::vector<int64_t> out_dims(slice.size());
  std::vector<int64_t> src_strides(slice.size());
  int64_t src_offset = 0;
  for (int64_t d = 0; d < in.rank(); ++d) {
    const SliceDim& s = slice[d];
    if (s.start < 0 || s.start > s.limit || s.limit > in.dimensions(d) || s.stride < 1) {
      return InstructionError(
          instruction, absl::StrCat("slice [", s.start, ":", s.limit, ":", s.stride,
                                    "] is invalid for dim ", d, " of size ", in.dimensions(d)));
    }
    out_dims[d] = (s.limit - s.start) / s.stride + ((s.limit - s.start) % s.stride != 0 ? 1 : 0);
  }
  SHAPE_OPS_ASSIGN_OR_RETURN(Literal result, NewResult(instruction, in.element_type(), out_dims));
  if (result.element_count() == 0) return result;
  // Non-empty: every dim is small enough for these products.
  for (int64_t d = 0; d < in.rank(); ++d) {
    src_strides[d] = out_dims[d] > 1 ? in_strides[d] * slice[d].stride : 0;
    src_offset += slice[d].start * in_strides[d];
  }
  const int64_t width = result.element_byte_width();
  StridedCopy(result.raw_data(), operand->raw_data() + src_offset * width, width,
              MakeCopyDims(out_dims, RowMajorStrides(out_dims), src_strides));
  return result;
}

// Reads the start indices of dynamic-slice / dynamic-update-slice from operands
// [first, operands.size()): one integer scalar per dim, or (older form) one rank-1 integer array.
// Each index is read by value into int64 (so u32 >= 2^31 stays large) and clamped to
// [0, dims[d] - sizes[d]].
absl::StatusOr<std::vector<int64_t>> ClampedStarts(const HloInstruction& instruction,
                                                   absl::Span<const Literal* const> operands,
                                                   int64_t first, absl::Span<const int64_t> dims,
                                                   absl::Span<const int64_t> sizes) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t count = static_cast<int64_t>(operands.size()) - first;
  std::vector<int64_t> starts(static_cast<size_t>(rank), 0);
  auto check_integral = [&](int64_t i) -> absl::Status {
    if (!IsIntegralType(operands[i]->shape().element_type())) {
      return InstructionError(instruction,
                              absl::StrCat("start index operand ", i, " must be an integer, is ",
                                           operands[i]->shape().ToString(false)));
    }
    return absl::OkStatus();
  };
  if (count == rank && (rank > 0 ? operands[first]->shape().rank() == 0 : true)) {
    for (int64_t d = 0; d < rank; ++d) {
      SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* index,
                                 ArrayOperand(instruction, operands, first + d));
      SHAPE_OPS_RETURN_IF_ERROR(check_integral(first + d));
      if (index->shape().rank() != 0) {
        return InstructionError(
            instruction, absl::StrCat("start index operand ", first + d, " must be a scalar, is ",
                                      index->shape().ToString(false)));
      }
      starts[d] = index->GetInt64(0);
    }
  } else if (count == 1) {
    SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* index, ArrayOperand(instruction, operands, first));
    SHAPE_OPS_RETURN_IF_ERROR(check_integral(first));
    if (index->shape().rank() != 1 || index->shape().dimensions(0) != rank) {
      return InstructionError(instruction,
                              absl::StrCat("start indices ", index->shape().ToString(false),
                                           " do not match rank ", rank));
    }
    for (int64_t d = 0; d < rank; ++d) starts[d] = index->GetInt64(d);
  } else {
    return InstructionError(instruction,
                            absl::StrCat("has ", count, " start index operands for rank ", rank));
  }
  for (int64_t d = 0; d < rank; ++d) {
    starts[d] = std::clamp<int64_t>(starts[d], 0, dims[d] - sizes[d]);
  }
  return starts;
}

absl::StatusOr<Literal> HandleDynamicSlice(const HloInstruction& instruction,
                                           absl::Span<const Literal* const> operands,
                                           const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 1, -1));
  SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* operand, ArrayOperand(instruction, operands, 0));
  const Shape& in = operand->shape();
  if (!instruction.attrs().dynamic_slice_sizes.has_value()) {
    return InstructionError(instruction, "missing dynamic_slice_sizes={...}");
  }
  const std::vector<int64_t>& sizes = *instruction.attrs().dynamic_slice_sizes;
  if (static_cast<int64_t>(sizes.size()) != in.rank()) {
    return InstructionError(instruction, absl::StrCat("dynamic_slice_sizes has ", sizes.size(),
                                                      " entries for rank ", in.rank()));
  }
  for (int64_t d = 0; d < in.rank(); ++d) {
    if (sizes[d] < 0 || sizes[d] > in.dimensions(d)) {
      return InstructionError(instruction, absl::StrCat("slice size ", sizes[d], " of dim ", d,
                                                        " exceeds its size ", in.dimensions(d)));
    }
  }
  SHAPE_OPS_ASSIGN_OR_RETURN(std::vector<int64_t> starts,
                             ClampedStarts(instruction, operands, 1, in.dimensions(), sizes));
  SHAPE_OPS_ASSIGN_OR_RETURN(Literal result, NewResult(instruction, in.element_type(), sizes));
  if (result.element_count() == 0) return result;
  const std::vector<int64_t> in_strides = Strides(in);
  int64_t src_offset = 0;
  for (int64_t d = 0; d < in.rank(); ++d) src_offset += starts[d] * in_strides[d];
  const int64_t width = result.element_byte_width();
  StridedCopy(result.raw_data(), operand->raw_data() + src_offset * width, width,
              MakeCopyDims(sizes, RowMajorStrides(sizes), in_strides));
  return result;
}

absl::StatusOr<Literal> HandleDynamicUpdateSlice(const HloInstruction& instruction,
                                                 absl::Span<const Literal* const> operands,
                                                 const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 2, -1));
  SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* operand, ArrayOperand(instruction, operands, 0));
  SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* update, ArrayOperand(instruction, operands, 1));
  const Shape& in = operand->shape();
  const Shape& up = update->shape();
  if (up.element_type() != in.element_type() || up.rank() != in.rank()) {
    return InstructionError(
        instruction,
        absl::StrCat("update ", up.ToString(false), " does not fit operand ", in.ToString(false)));
  }
  for (int64_t d = 0; d < in.rank(); ++d) {
    if (up.dimensions(d) > in.dimensions(d)) {
      return InstructionError(
          instruction, absl::StrCat("update ", up.ToString(false), " is larger than operand ",
                                    in.ToString(false)));
    }
  }
  SHAPE_OPS_ASSIGN_OR_RETURN(
      std::vector<int64_t> starts,
      ClampedStarts(instruction, operands, 2, in.dimensions(), up.dimensions()));
  SHAPE_OPS_ASSIGN_OR_RETURN(Literal result,
                             NewResult(instruction, in.element_type(), in.dimensions()));
  if (result.size_bytes() == 0) return result;
  std::memcpy(result.raw_data(), operand->raw_data(), static_cast<size_t>(result.size_bytes()));
  if (update->element_count() == 0) return result;
  const std::vector<int64_t> out_strides = Strides(in);
  int64_t dst_offset = 0;
  for (int64_t d = 0; d < in.rank(); ++d) dst_offset += starts[d] * out_strides[d];
  const int64_t width = result.element_byte_width();
  StridedCopy(result.raw_data() + dst_offset * width, update->raw_data(), width,
              MakeCopyDims(up.dimensions(), out_strides, Strides(up)));
  return result;
}

// ---------------------------------------------------------------------------------------------
// concatenate, pad

absl::StatusOr<Literal> HandleConcatenate(const HloInstruction& instruction,
                                          absl::Span<const Literal* const> operands,
                                          const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 1, -1));
  std::vector<const Literal*> pieces;
  for (size_t i = 0; i < operands.size(); ++i) {
    SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* piece,
                               ArrayOperand(instruction, operands, static_cast<int64_t>(i)));
    pieces.push_back(piece);
  }
  const Shape& first = pieces[0]->shape();
  if (!instruction.attrs().dimensions.has_value() || instruction.attrs().dimensions->size() != 1) {
    return InstructionError(instruction, "needs dimensions={d} with exactly one entry");
  }
  const int64_t dim = (*instruction.attrs().dimensions)[0];
  if (dim < 0 || dim >= first.rank()) {
    return InstructionError(
        instruction, absl::StrCat("dimension ", dim, " is out of range for rank ", first.rank()));
  }
  std::vector<int64_t> out_dims = first.dimensions();
  out_dims[dim] = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Shape& s = pieces[i]->shape();
    bool ok = s.element_type() == first.element_type() && s.rank() == first.rank();
    for (int64_t d = 0; ok && d < s.rank(); ++d) {
      if (d != dim && s.dimensions(d) != first.dimensions(d)) ok = false;
    }
    if (!ok) {
      return InstructionError(instruction,
                              absl::StrCat("operand ", i, " ", s.ToString(false),
                                           " does not match operand 0 ", first.ToString(false)));
    }
    if (__builtin_add_overflow(out_dims[dim], s.dimensions(dim), &out_dims[dim])) {
      return InstructionError(instruction, "concatenated dimension overflows");
    }
  }
  SHAPE_OPS_ASSIGN_OR_RETURN(Literal result,
                             NewResult(instruction, first.element_type(), out_dims));
  if (result.element_count() == 0) return result;
  const std::vector<int64_t> out_strides = RowMajorStrides(out_dims);
  const int64_t width = result.element_byte_width();
  int64_t offset = 0;
  for (const Literal* piece : pieces) {
    const Shape& s = piece->shape();
    if (piece->element_count() > 0) {
      StridedCopy(result.raw_data() + offset * out_strides[dim] * width, piece->raw_data(), width,
                  MakeCopyDims(s.dimensions(), out_strides, Strides(s)));
    }
    offset += s.dimensions(dim);
  }
  return result;
}

absl::StatusOr<Literal> HandlePad(const HloInstruction& instruction,
                                  absl::Span<const Literal* const> operands, const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 2, 2));
  SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* operand, ArrayOperand(instruction, operands, 0));
  SHAPE_OPS_ASSIGN_OR_RETURN(const Literal* value, ArrayOperand(instruction, operands, 1));
  const Shape& in = operand->shape();
  if (value->shape().rank() != 0 || value->shape().element_type() != in.element_type()) {
    return InstructionError(instruction,
                            absl::StrCat("padding value ", value->shape().ToString(false),
                                         " must be a scalar of the operand's element type"));
  }
  if (!instruction.attrs().padding.has_value()) {
    return InstructionError(instruction, "missing padding=...");
  }
  const std::vector<PadDim>& padding = *instruction.attrs().padding;
  if (static_cast<int64_t>(padding.size()) != in.rank()) {
    return InstructionError(
        instruction, absl::StrCat("padding has ", padding.size(), " entries for rank ", in.rank()));
  }
  std::vector<int64_t> out_dims(padding.size());
  for (int64_t d = 0; d < in.rank(); ++d) {
    const PadDim& p = padding[d];
    const int64_t n = in.dimensions(d);
    if (p.interior < 0) {
      return InstructionError(instruction, absl::StrCat("negative interior padding on dim ", d));
    }
    const Int128 size = Int128{p.low} + Int128{p.high} + Int128{n} +
                        (n > 0 ? Int128{n - 1} * Int128{p.interior} : Int128{0});
    if (size < 0 || size > Int128{INT64_MAX}) {
      return InstructionError(instruction,
                              absl::StrCat("padding ", p.low, "_", p.high, "_", p.interior,
                                           " gives an invalid size for dim ", d));
    }
    out_dims[d] = static_cast<int64_t>(size);
  }
  SHAPE_OPS_ASSIGN_OR_RETURN(Literal result, NewResult(instruction, in.element_type(), out_dims));
  if (result.element_count() == 0) return result;
  const int64_t width = result.element_byte_width();
  const std::vector<int64_t> out_strides = RowMajorStrides(out_dims);
  // Fill with the padding value.
  StridedCopy(result.raw_data(), value->raw_data(), width,
              MakeCopyDims(out_dims, out_strides, std::vector<int64_t>(out_dims.size(), 0)));
  if (operand->element_count() == 0) return result;
  // Operand element i of dim d lands at low + i * (interior + 1); keep those inside [0, out).
  std::vector<CopyDim> copy(padding.size());
  int64_t dst_offset = 0;
  int64_t src_offset = 0;
  const std::vector<int64_t> in_strides = Strides(in);
  for (int64_t d = 0; d < in.rank(); ++d) {
    const PadDim& p = padding[d];
    const Int128 step = Int128{p.interior} + 1;
    const Int128 low = p.low;
    const Int128 n = in.dimensions(d);
    const Int128 out = out_dims[d];
    // Smallest i with low + i*step >= 0; largest with low + i*step <= out - 1.
    Int128 first = low >= 0 ? Int128{0} : (-low + step - 1) / step;
    if (low > out - 1) return result;
    Int128 last = std::min(n - 1, (out - 1 - low) / step);
    if (first > last) return result;
    copy[d] = {static_cast<int64_t>(last - first + 1), static_cast<int64_t>(step * out_strides[d]),
               in_strides[d]};
    dst_offset += static_cast<int64_t>((low + first * step) * out_strides[d]);
    src_offset += static_cast<int64_t>(first * in_strides[d]);
  }
  StridedCopy(result.raw_data() + dst_offset * width, operand->raw_data() + src_offset * width,
              width, copy);
  return result;
}

// ---------------------------------------------------------------------------------------------
// iota

absl::StatusOr<Literal> HandleIota(const HloInstruction& instruction,
                                   absl::Span<const Literal* const> operands, const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 0, 0));
  SHAPE_OPS_RETURN_IF_ERROR(CheckResultArrayShape(instruction));
  const Shape& out = instruction.shape();
  if (!instruction.attrs().iota_dimension.has_value()) {
    return InstructionError(instruction, "missing iota_dimension=");
  }
  const int64_t dim = *instruction.attrs().iota_dimension;
  if (dim < 0 || dim >= out.rank()) {
    return InstructionError(instruction, absl::StrCat("iota_dimension ", dim,
                                                      " is out of range for rank ", out.rank()));
  }
  const PrimitiveType type = out.element_type();
  SHAPE_OPS_ASSIGN_OR_RETURN(Literal result, NewResult(instruction, type, out.dimensions()));
  if (result.element_count() == 0) return result;
  // The values along the iota dimension, converted as XLA's static_cast<T>(index) does: floats
  // round to nearest even (narrow floats through f32), integers wrap, pred is index != 0.
  const int64_t n = out.dimensions(dim);
  Literal values(Shape::Array(type, {n}));
  const bool is_float = IsFloatingType(type) || IsComplexType(type);
  for (int64_t k = 0; k < n; ++k) {
    if (is_float) {
      values.SetDouble(k, static_cast<double>(k));
    } else {
      values.SetInt64(k, k);
    }
  }
  std::vector<int64_t> src_strides(static_cast<size_t>(out.rank()), 0);
  src_strides[dim] = 1;
  StridedCopy(result.raw_data(), values.raw_data(), result.element_byte_width(),
              MakeCopyDims(out.dimensions(), Strides(out), src_strides));
  return result;
}

// ---------------------------------------------------------------------------------------------
// tuple, get-tuple-element, opt-barrier, copy-start, copy-done, get-dimension-size

absl::StatusOr<Literal> HandleTuple(const HloInstruction& instruction,
                                    absl::Span<const Literal* const> operands, const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 0, -1));
  const Shape& shape = instruction.shape();
  if (!shape.IsTuple() || shape.tuple_size() != static_cast<int64_t>(operands.size())) {
    return InstructionError(instruction,
                            absl::StrCat("result ", shape.ToString(false), " is not a tuple of ",
                                         operands.size(), " elements"));
  }
  std::vector<Literal> elements;
  elements.reserve(operands.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i]->shape().Compatible(shape.tuple_shapes()[i])) {
      return InstructionError(
          instruction,
          absl::StrCat("operand ", i, " ", operands[i]->shape().ToString(false),
                       " does not match tuple element ", shape.tuple_shapes()[i].ToString(false)));
    }
    elements.push_back(CopyLiteral(*operands[i]));
  }
  return Literal::Tuple(std::move(elements));
}

absl::StatusOr<Literal> HandleGetTupleElement(const HloInstruction& instruction,
                                              absl::Span<const Literal* const> operands,
                                              const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 1, 1));
  const Literal& tuple = *operands[0];
  if (!tuple.shape().IsTuple()) {
    return InstructionError(
        instruction, absl::StrCat("operand ", tuple.shape().ToString(false), " is not a tuple"));
  }
  if (!instruction.attrs().tuple_index.has_value()) {
    return InstructionError(instruction, "missing index=");
  }
  const int64_t index = *instruction.attrs().tuple_index;
  if (index < 0 || index >= tuple.tuple_size()) {
    return InstructionError(instruction, absl::StrCat("index ", index, " is out of range for ",
                                                      tuple.shape().ToString(false)));
  }
  const Literal& element = tuple.tuple_elements()[index];
  if (!element.shape().Compatible(instruction.shape())) {
    return InstructionError(instruction,
                            absl::StrCat("element ", index, " is ", element.shape().ToString(false),
                                         ", the result is ", instruction.shape().ToString(false)));
  }
  return CopyLiteral(element);
}

absl::StatusOr<Literal> HandleOptimizationBarrier(const HloInstruction& instruction,
                                                  absl::Span<const Literal* const> operands,
                                                  const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 1, 1));
  if (!operands[0]->shape().Compatible(instruction.shape())) {
    return InstructionError(
        instruction,
        absl::StrCat("operand ", operands[0]->shape().ToString(false),
                     " does not match the result ", instruction.shape().ToString(false)));
  }
  return CopyLiteral(*operands[0]);
}

// copy-start yields (operand, operand, u32 context); the context is undefined in XLA and 0 here,
// as in XLA's evaluator.
absl::StatusOr<Literal> HandleCopyStart(const HloInstruction& instruction,
                                        absl::Span<const Literal* const> operands, const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 1, 1));
  const Shape& shape = instruction.shape();
  const Literal& operand = *operands[0];
  if (!shape.IsTuple() || shape.tuple_size() != 3 ||
      !shape.tuple_shapes()[0].Compatible(operand.shape()) ||
      !shape.tuple_shapes()[1].Compatible(operand.shape()) ||
      !shape.tuple_shapes()[2].Compatible(Shape::Scalar(PrimitiveType::kU32))) {
    return InstructionError(instruction,
                            absl::StrCat("result ", shape.ToString(false), " should be (",
                                         operand.shape().ToString(false), ", ",
                                         operand.shape().ToString(false), ", u32[])"));
  }
  std::vector<Literal> elements;
  elements.push_back(CopyLiteral(operand));
  elements.push_back(CopyLiteral(operand));
  elements.emplace_back(Shape::Scalar(PrimitiveType::kU32));
  return Literal::Tuple(std::move(elements));
}

absl::StatusOr<Literal> HandleCopyDone(const HloInstruction& instruction,
                                       absl::Span<const Literal* const> operands, const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 1, 1));
  const Literal& tuple = *operands[0];
  if (!tuple.shape().IsTuple() || tuple.tuple_size() < 1 ||
      !tuple.tuple_elements()[0].shape().Compatible(instruction.shape())) {
    return InstructionError(
        instruction,
        absl::StrCat("operand ", tuple.shape().ToString(false), " does not hold the result ",
                     instruction.shape().ToString(false), " at index 0"));
  }
  return CopyLiteral(tuple.tuple_elements()[0]);
}

absl::StatusOr<Literal> HandleGetDimensionSize(const HloInstruction& instruction,
                                               absl::Span<const Literal* const> operands,
                                               const EvalEnv&) {
  SHAPE_OPS_RETURN_IF_ERROR(CheckOperandCount(instruction, operands, 1, 1));
  const Shape& in = operands[0]->shape();
  if (!in.IsArray()) {
    return InstructionError(instruction,
                            absl::StrCat("operand ", in.ToString(false), " must be an array"));
  }
  if (!instruction.attrs().dimensions.has_value() || instruction.attrs().dimensions->size() != 1) {
    return InstructionError(instruction, "needs dimensions={d} with exactly one entry");
  }
  const int64_t dim = (*instruction.attrs().dimensions)[0];
  if (dim < 0 || dim >= in.rank()) {
    return InstructionError(
        instruction, absl::StrCat("dimension ", dim, " is out of range for rank ", in.rank()));
  }
  const Shape& declared = instruction.operand(0)->shape();
  if (in.dimension_kind(dim) != DimensionKind::kStatic ||
      (declared.IsArray() && declared.rank() == in.rank() &&
       declared.dimension_kind(dim) != DimensionKind::kStatic)) {
    return Unsupported(instruction, absl::StrCat("get-dimension-size of dynamic dimension ", dim,
                                                 " of ", in.ToString(false)));
  }
  SHAPE_OPS_ASSIGN_OR_RETURN(Literal result, NewResult(instruction, PrimitiveType::kS32, {}));
  // XLA returns static_cast<int32_t>(size).
  result.SetInt64(0, static_cast<int64_t>(static_cast<int32_t>(in.dimensions(dim))));
  return result;
}

#undef SHAPE_OPS_RETURN_IF_ERROR
#undef SHAPE_OPS_ASSIGN_OR_RETURN
#undef SHAPE_OPS_CONCAT
#undef SHAPE_OPS_CONCAT_INNER

}  // namespace

void RegisterShapeOps(OpRegistry& registry) {
  registry.Register(HloOpcode::kBroadcast, &HandleBroadcast);
  registry.Register(HloOpcode::kReshape, &HandleReshape);
  registry.Register(HloOpcode::kBitcast, &HandleBitcast);
  registry.Register(HloOpcode::kTranspose, &HandleTranspose);
  registry.Register(HloOpcode::kReverse, &HandleReverse);
  registry.Register(HloOpcode::kSlice, &HandleSlice);
  registry.Register(HloOpcode::kDynamicSlice, &HandleDynamicSlice);
  registry.Register(HloOpcode::kDynamicUpdateSlice, &HandleDynamicUpdateSlice);
  registry.Register(HloOpcode::kConcatenate, &HandleConcatenate);
  registry.Register(HloOpcode::kPad, &HandlePad);
  registry.Register(HloOpcode::kIota, &HandleIota);
  registry.Register(HloOpcode::kTuple, &HandleTuple);
  registry.Register(HloOpcode::kGetTupleElement, &HandleGetTupleElement);
  registry.Register(HloOpcode::kOptimizationBarrier, &HandleOptimizationBarrier);
  registry.Register(HloOpcode::kCopyStart, &HandleCopyStart);
  registry.Register(HloOpcode::kCopyDone, &HandleCopyDone);
  registry.Register(HloOpcode::kGetDimensionSize, &HandleGetDimensionSize);
}

}  // namespace spmdcheck::oracle
