// Contractions: dot (general dimension numbers) and convolution.
//
// Arithmetic follows XLA's HloEvaluator (hlo_evaluator_typed_visitor.h, HandleDotSlowPath and
// HandleConvolutionWithLiterals, Dec 2023):
//  * operands whose element type differs from the result's are first converted to the result
//    type (as `convert` would);
//  * the contraction is accumulated from 0 in the element-wise type of the result — f32 for
//    f32/bf16/f16/f8, f64 for f64, the integer type itself (wrapping) for integers, OR-of-ANDs
//    for pred — and rounded to the result type once at the end;
//  * dot sums over the contracting dims in row-major order of the contracting dims as listed in
//    the dimension numbers (last fastest); convolution sums over the kernel spatial positions in
//    row-major order of the kernel spatial dims (dim_labels order) and, innermost, over the input
//    features of the group. Every output element is a sequential sum in that order, so results
//    are reproducible bit for bit. (XLA's evaluator sends rank-2 f32 dots to Eigen, whose
//    summation order is blocked; those can differ from ours in the last bits.)
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "ir/float_types.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"
#include "ir/shape.h"
#include "oracle/element_type_dispatch.h"
#include "oracle/kernel_util.h"
#include "oracle/op_registry.h"

namespace spmdcheck::oracle {
namespace {

constexpr int64_t kMaxWindowValue = int64_t{1} << 31;

std::string DimsString(absl::Span<const int64_t> dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

// PACKED_NIBBLE operand precision changes the arithmetic (two s4 values per byte).
bool HasPackedNibble(const HloInstruction& instruction) {
  const RawAttribute* precision = instruction.FindRawAttribute("operand_precision");
  return precision != nullptr &&
         absl::StrContains(absl::AsciiStrToLower(precision->text), "packed_nibble");
}

// ---- Conversion to the result type -----------------------------------------------------------

// `src` converted element-wise to `to` as XLA's convert does it (floats round to nearest even,
// integer -> narrow float goes through f32, float -> integer truncates and saturates, integers
// wrap). Returns `src` itself when it already has that type.
absl::StatusOr<const Literal*> AsType(const HloInstruction& instruction, const Literal& src,
                                      PrimitiveType to, Literal& holder) {
  const PrimitiveType from = src.shape().element_type();
  if (from == to) return &src;
  if (IsComplexType(from) && !IsComplexType(to)) {
    return Unsupported(instruction, "a complex operand with a real result");
  }
  holder = Literal(Shape::Array(to, src.shape().dimensions()));
  const int64_t n = src.element_count();
  const bool from_float = IsFloatingType(from);
  const bool from_signed = IsSignedIntegralType(from);
  for (int64_t i = 0; i < n; ++i) {
    if (IsComplexType(to)) {
      if (IsComplexType(from)) {
        holder.SetComplex(i, src.GetComplex(i));
      } else if (from_float) {
        holder.SetComplex(i, {src.GetDouble(i), 0.0});
      } else if (to == PrimitiveType::kC64) {
        const float v = from_signed ? static_cast<float>(src.GetInt64(i))
                                    : static_cast<float>(src.GetUint64(i));
        holder.SetComplex(i, {v, 0.0});
      } else {
        const double v = from_signed ? static_cast<double>(src.GetInt64(i))
                                     : static_cast<double>(src.GetUint64(i));
        holder.SetComplex(i, {v, 0.0});
      }
    } else if (IsFloatingType(to)) {
      if (from_float) {
        holder.SetDouble(i, src.GetDouble(i));
      } else if (to == PrimitiveType::kF64) {
        holder.SetDouble(i, from_signed ? static_cast<double>(src.GetInt64(i))
                                        : static_cast<double>(src.GetUint64(i)));
      } else {
        // One rounding to f32, then (for the narrow types) f32 -> narrow, as Eigen does.
        const float v = from_signed ? static_cast<float>(src.GetInt64(i))
                                    : static_cast<float>(src.GetUint64(i));
        holder.SetDouble(i, static_cast<double>(v));
      }
    } else if (from_float) {
      holder.SetDouble(i, src.GetDouble(i));
    } else if (from_signed) {
      holder.SetInt64(i, src.GetInt64(i));
    } else {
      holder.SetUint64(i, src.GetUint64(i));
    }
  }
  return &holder;
}

// ---- Compute buffers -------------------------------------------------------------------------

// The element-wise type a result type is accumulated in.
enum class ComputeKind { kFloat, kDouble, kInteger, kComplex64, kComplex128, kNone };

ComputeKind ComputeKindOf(PrimitiveType type) {
  if (type == PrimitiveType::kF64) return ComputeKind::kDouble;
  if (IsFloatingType(type)) return ComputeKind::kFloat;
  if (IsIntegralType(type) || type == PrimitiveType::kPred) return ComputeKind::kInteger;
  if (type == PrimitiveType::kC64) return ComputeKind::kComplex64;
  if (type == PrimitiveType::kC128) return ComputeKind::kComplex128;
  return ComputeKind::kNone;
}

template <typename T>
void CopyOut(const Literal& lit, T* out) {
  if (lit.element_count() == 0) return;
  std::memcpy(out, lit.raw_data(), static_cast<size_t>(lit.element_count()) * sizeof(T));
}

template <typename T>
void WidenInts(const Literal& lit, uint64_t* out) {
  const absl::Span<const T> data = lit.data<T>();
  for (size_t i = 0; i < data.size(); ++i) {
    if constexpr (std::is_signed_v<T>) {
      // Sign-extended on purpose (as GetInt64 does for the sub-byte types): two's complement.
      out[i] = static_cast<uint64_t>(static_cast<int64_t>(data[i]));
    } else {
      out[i] = static_cast<uint64_t>(data[i]);
    }
  }
}

// Row-major values of `lit` (whose type has compute type C) as C.
template <typename C>
std::vector<C> ToCompute(const Literal& lit) {
  const PrimitiveType type = lit.shape().element_type();
  const int64_t n = lit.element_count();
  std::vector<C> out(static_cast<size_t>(n));
  if constexpr (std::is_same_v<C, float>) {
    if (type == PrimitiveType::kF32) {
      CopyOut(lit, out.data());
    } else {
      for (int64_t i = 0; i < n; ++i) {
        out[i] = NarrowBitsToFloat(type, static_cast<uint32_t>(lit.GetBits(i)));
      }
    }
  } else if constexpr (std::is_same_v<C, double>) {
    CopyOut(lit, out.data());
  } else if constexpr (std::is_same_v<C, uint64_t>) {
    // Only integer and pred types compute in uint64_t (ComputeKindOf); the status is always ok.
    DispatchElementType(type, [&](auto tag) {
      using Tag = decltype(tag);
      if constexpr (Tag::kIsNativeInteger || Tag::kIsPred) {
        WidenInts<typename Tag::Storage>(lit, out.data());
      } else {  // Sub-byte integers.
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<uint64_t>(lit.GetInt64(i));
      }
    }).IgnoreError();
  } else {
    CopyOut(lit, out.data());  // std::complex<float/double> has the layout of c64/c128.
  }
  return out;
}

template <typename T>
void NarrowInts(const std::vector<uint64_t>& values, Literal& lit) {
  absl::Span<T> data = lit.data<T>();
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<T>(values[i]);
}

// Stores accumulated values into `lit` (row-major), rounding/wrapping to its element type.
template <typename C>
void FromCompute(const std::vector<C>& values, Literal& lit) {
  const PrimitiveType type = lit.shape().element_type();
  const int64_t n = lit.element_count();
  if (n == 0) return;
  if constexpr (std::is_same_v<C, float>) {
    if (type == PrimitiveType::kF32) {
      std::memcpy(lit.raw_data(), values.data(), static_cast<size_t>(n) * sizeof(float));
    } else {
      for (int64_t i = 0; i < n; ++i) lit.SetBits(i, FloatToNarrowBits(type, values[i]));
    }
  } else if constexpr (std::is_same_v<C, uint64_t>) {
    // Only integer and pred types compute in uint64_t (ComputeKindOf); the status is always ok.
    DispatchElementType(type, [&](auto tag) {
      using Tag = decltype(tag);
      if constexpr (Tag::kIsNativeInteger) {
        NarrowInts<typename Tag::Storage>(values, lit);
      } else {  // pred (any product true) and sub-byte integers.
        for (int64_t i = 0; i < n; ++i) lit.SetBits(i, WrapToType(type, values[i]));
      }
    }).IgnoreError();
  } else {
    std::memcpy(lit.raw_data(), values.data(), static_cast<size_t>(n) * sizeof(C));
  }
}

// Calls fn.template operator()<C>() with the compute type of `kind`.
template <typename Fn>
auto WithComputeType(ComputeKind kind, Fn&& fn) {
  switch (kind) {
    case ComputeKind::kFloat:
      return fn(float{});
    case ComputeKind::kDouble:
      return fn(double{});
    case ComputeKind::kInteger:
      return fn(uint64_t{});
    case ComputeKind::kComplex64:
      return fn(std::complex<float>{});
    default:
      return fn(std::complex<double>{});
  }
}

// ---- dot -------------------------------------------------------------------------------------

// `flat` (row-major with `dims`) transposed so that the result's dims are dims[perm[0]], ...
template <typename C>
std::vector<C> Permute(std::vector<C> flat, absl::Span<const int64_t> dims,
                       absl::Span<const int64_t> perm) {
  bool identity = true;
  for (size_t j = 0; j < perm.size(); ++j)
    identity = identity && perm[j] == static_cast<int64_t>(j);
  if (identity) return flat;
  std::vector<C> out(flat.size());
  if (flat.empty()) return out;
  const std::vector<int64_t> strides = RowMajorStrides(dims);
  const int64_t rank = static_cast<int64_t>(perm.size());
  if (rank == 0) {
    out[0] = flat[0];
    return out;
  }
  std::vector<int64_t> pdims(rank);
  std::vector<int64_t> pstrides(rank);
  for (int64_t j = 0; j < rank; ++j) {
    pdims[j] = dims[perm[j]];
    pstrides[j] = strides[perm[j]];
  }
  const int64_t inner = pdims[rank - 1];
  const int64_t inner_stride = pstrides[rank - 1];
  std::vector<int64_t> index(rank, 0);
  int64_t src = 0;
  size_t dst = 0;
  while (true) {
    for (int64_t j = 0; j < inner; ++j) out[dst++] = flat[src + j * inner_stride];
    int64_t k = rank - 2;
    for (; k >= 0; --k) {
      src += pstrides[k];
      if (++index[k] < pdims[k]) break;
      src -= pstrides[k] * pdims[k];
      index[k] = 0;
    }
    if (k < 0) break;
  }
  return out;
}

// c[M,N] += a[M,K] * b[K,N], each c[i][j] summed over k in increasing order (blocked i-k-j).
template <typename C>
void MatmulAccumulate(const C* a, const C* b, C* c, int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kBlockK = 128;
  constexpr int64_t kBlockN = 256;
  for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
    const int64_t j1 = std::min(n, j0 + kBlockN);
    for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
      const int64_t k1 = std::min(k, k0 + kBlockK);
      for (int64_t i = 0; i < m; ++i) {
        C* __restrict crow = c + i * n;
        const C* arow = a + i * k;
        for (int64_t kk = k0; kk < k1; ++kk) {
          const C av = arow[kk];
          const C* __restrict brow = b + kk * n;
          for (int64_t j = j0; j < j1; ++j) crow[j] += av * brow[j];
        }
      }
    }
  }
}

// The same for f32/f64 with a register-blocked kernel: a column panel of b (kCols wide) is
// packed contiguously, and a kRows x kCols tile of c is kept in registers while k runs from 0 to
// K, so each c[i][j] is still 0 + a[i][0]*b[0][j] + a[i][1]*b[1][j] + ... in increasing k, one
// IEEE multiply and one add per step (no FMA: fp-contract is off), lane by lane — the same bits
// as the naive loop, whatever the vector width.
template <typename T, int kBytes>
[[gnu::always_inline]] inline void MatmulFloatKernel(const T* a, const T* b, T* c, int64_t m,
                                                     int64_t n, int64_t k) {
  typedef T V __attribute__((vector_size(kBytes)));
  constexpr int64_t kLanes = kBytes / static_cast<int64_t>(sizeof(T));
  constexpr int64_t kRows = 3;
  constexpr int64_t kVecs = 4;
  constexpr int64_t kCols = kLanes * kVecs;
  const int64_t m_full = m - m % kRows;
  const int64_t n_full = n - n % kCols;
  std::vector<T> panel(static_cast<size_t>(k * kCols));
  for (int64_t j0 = 0; j0 < n_full; j0 += kCols) {
    for (int64_t kk = 0; kk < k; ++kk) {
      std::memcpy(panel.data() + kk * kCols, b + kk * n + j0, sizeof(T) * kCols);
    }
    for (int64_t i0 = 0; i0 < m_full; i0 += kRows) {
      V acc[kRows][kVecs];
#pragma GCC unroll 8
      for (int64_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
        for (int64_t v = 0; v < kVecs; ++v) acc[r][v] = V{};
      }
      const T* arow = a + i0 * k;
      const T* p = panel.data();
      for (int64_t kk = 0; kk < k; ++kk) {
        V bv[kVecs];
#pragma GCC unroll 8
        for (int64_t v = 0; v < kVecs; ++v) {
          std::memcpy(&bv[v], p + kk * kCols + v * kLanes, sizeof(V));
        }
#pragma GCC unroll 8
        for (int64_t r = 0; r < kRows; ++r) {
          const V av = V{} + arow[r * k + kk];
#pragma GCC unroll 8
          for (int64_t v = 0; v < kVecs; ++v) acc[r][v] += av * bv[v];
        }
      }
#pragma GCC unroll 8
      for (int64_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
        for (int64_t v = 0; v < kVecs; ++v) {
          std::memcpy(c + (i0 + r) * n + j0 + v * kLanes, &acc[r][v], sizeof(V));
        }
      }
    }
  }
  // Leftover columns of the full row blocks, then leftover rows: the plain loop (same order).
  if (n_full < n) {
    for (int64_t i = 0; i < m_full; ++i) {
      T* crow = c + i * n;
      const T* arow = a + i * k;
      for (int64_t kk = 0; kk < k; ++kk) {
        const T av = arow[kk];
        const T* brow = b + kk * n;
        for (int64_t j = n_full; j < n; ++j) crow[j] += av * brow[j];
      }
    }
  }
  if (m_full < m) MatmulAccumulate(a + m_full * k, b, c + m_full * n, m - m_full, n, k);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
template <typename T>
__attribute__((target("avx2"))) void MatmulFloatAvx2(const T* a, const T* b, T* c, int64_t m,
                                                     int64_t n, int64_t k) {
  MatmulFloatKernel<T, 32>(a, b, c, m, n, k);
}
#endif

template <typename T>
void MatmulFloat(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool kHasAvx2 = __builtin_cpu_supports("avx2");
  if (kHasAvx2) {
    MatmulFloatAvx2(a, b, c, m, n, k);
    return;
  }
#endif
  MatmulFloatKernel<T, 16>(a, b, c, m, n, k);
}

// c (zero on entry) = a[M,K] * b[K,N].
template <typename C>
void Matmul(const C* a, const C* b, C* c, int64_t m, int64_t n, int64_t k) {
  if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double>) {
    MatmulFloat(a, b, c, m, n, k);
  } else {
    MatmulAccumulate(a, b, c, m, n, k);
  }
}

absl::Status CheckDims(const HloInstruction& instruction, absl::Span<const int64_t> dims,
                       int64_t rank, std::vector<bool>& used, absl::string_view what) {
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || used[d]) {
      return InstructionError(instruction,
                              absl::StrCat(what, " dimension ", d, " is out of range or repeated"));
    }
    used[d] = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<Literal> HandleDot(const HloInstruction& instruction,
                                  absl::Span<const Literal* const> operands, const EvalEnv&) {
  if (instruction.operand_count() > 2) return Unsupported(instruction, "a sparse dot");
  if (operands.size() != 2) return InstructionError(instruction, "dot takes two operands");
  if (HasPackedNibble(instruction)) return Unsupported(instruction, "PACKED_NIBBLE precision");
  const Literal& lhs = *operands[0];
  const Literal& rhs = *operands[1];
  const Shape& shape = instruction.shape();
  if (!lhs.shape().IsArray() || lhs.elided() || !rhs.shape().IsArray() || rhs.elided() ||
      !shape.IsArray()) {
    return InstructionError(instruction, "dot needs array operands and an array result");
  }
  const PrimitiveType result_type = shape.element_type();
  const ComputeKind kind = ComputeKindOf(result_type);
  if (kind == ComputeKind::kNone) {
    return Unsupported(instruction, absl::StrCat("a dot of type ", PrimitiveTypeName(result_type)));
  }
  const DotDimensionNumbers dnums =
      instruction.attrs().dot_dimension_numbers.value_or(DotDimensionNumbers{});
  const std::vector<int64_t>& ld = lhs.shape().dimensions();
  const std::vector<int64_t>& rd = rhs.shape().dimensions();
  const int64_t lrank = static_cast<int64_t>(ld.size());
  const int64_t rrank = static_cast<int64_t>(rd.size());
  if (dnums.lhs_batch.size() != dnums.rhs_batch.size() ||
      dnums.lhs_contracting.size() != dnums.rhs_contracting.size()) {
    return InstructionError(instruction,
                            "lhs and rhs have different numbers of batch or "
                            "contracting dimensions");
  }
  std::vector<bool> lused(lrank, false);
  std::vector<bool> rused(rrank, false);
  for (absl::Status s :
       {CheckDims(instruction, dnums.lhs_batch, lrank, lused, "lhs batch"),
        CheckDims(instruction, dnums.lhs_contracting, lrank, lused, "lhs contracting"),
        CheckDims(instruction, dnums.rhs_batch, rrank, rused, "rhs batch"),
        CheckDims(instruction, dnums.rhs_contracting, rrank, rused, "rhs contracting")}) {
    if (!s.ok()) return s;
  }
  std::vector<int64_t> out_dims;
  int64_t batch = 1;
  int64_t m = 1;
  int64_t n = 1;
  int64_t k = 1;
  for (size_t i = 0; i < dnums.lhs_batch.size(); ++i) {
    const int64_t size = ld[dnums.lhs_batch[i]];
    if (size != rd[dnums.rhs_batch[i]]) {
      return InstructionError(instruction, absl::StrCat("batch dimension ", i, " sizes differ"));
    }
    out_dims.push_back(size);
    batch *= size;
  }
  for (size_t i = 0; i < dnums.lhs_contracting.size(); ++i) {
    const int64_t size = ld[dnums.lhs_contracting[i]];
    if (size != rd[dnums.rhs_contracting[i]]) {
      return InstructionError(instruction,
                              absl::StrCat("contracting dimension ", i, " sizes differ"));
    }
    k *= size;
  }
  std::vector<int64_t> lhs_perm(dnums.lhs_batch.begin(), dnums.lhs_batch.end());
  std::vector<int64_t> rhs_perm(dnums.rhs_batch.begin(), dnums.rhs_batch.end());
  for (int64_t d = 0; d < lrank; ++d) {
    if (!lused[d]) {
      lhs_perm.push_back(d);
      out_dims.push_back(ld[d]);
      m *= ld[d];
    }
  }
  lhs_perm.insert(lhs_perm.end(), dnums.lhs_contracting.begin(), dnums.lhs_contracting.end());
  rhs_perm.insert(rhs_perm.end(), dnums.rhs_contracting.begin(), dnums.rhs_contracting.end());
  for (int64_t d = 0; d < rrank; ++d) {
    if (!rused[d]) {
      rhs_perm.push_back(d);
      out_dims.push_back(rd[d]);
      n *= rd[d];
    }
  }
  if (shape.dimensions() != out_dims) {
    return InstructionError(
        instruction, absl::StrCat("result dims ", DimsString(shape.dimensions()), " should be ",
                                  DimsString(out_dims)));
  }
  Literal lhs_holder;
  Literal rhs_holder;
  absl::StatusOr<const Literal*> lhs_r = AsType(instruction, lhs, result_type, lhs_holder);
  if (!lhs_r.ok()) return lhs_r.status();
  absl::StatusOr<const Literal*> rhs_r = AsType(instruction, rhs, result_type, rhs_holder);
  if (!rhs_r.ok()) return rhs_r.status();
  absl::StatusOr<Literal> created = Literal::CreateChecked(shape);
  if (!created.ok()) return created.status();
  Literal result = *std::move(created);

  WithComputeType(kind, [&](auto zero) {
    using C = decltype(zero);
    // [batch, M, K] and [batch, K, N].
    const std::vector<C> a = Permute(ToCompute<C>(**lhs_r), ld, lhs_perm);
    const std::vector<C> b = Permute(ToCompute<C>(**rhs_r), rd, rhs_perm);
    std::vector<C> c(static_cast<size_t>(batch * m * n), zero);
    for (int64_t bi = 0; bi < batch; ++bi) {
      Matmul(a.data() + bi * m * k, b.data() + bi * k * n, c.data() + bi * m * n, m, n, k);
    }
    FromCompute(c, result);
  });
  return result;
}

// ---- convolution -----------------------------------------------------------------------------

int64_t DilatedBound(int64_t bound, int64_t dilation) {
  return bound == 0 ? 0 : (bound - 1) * dilation + 1;
}
int64_t StridedBound(int64_t bound, int64_t window, int64_t stride) {
  return window > bound ? 0 : (bound - window) / stride + 1;
}

// `dims` (batch/feature then spatial) must be a permutation of [0, rank).
bool IsPermutation(std::vector<int64_t> dims, int64_t rank) {
  if (static_cast<int64_t>(dims.size()) != rank) return false;
  std::sort(dims.begin(), dims.end());
  for (int64_t i = 0; i < rank; ++i) {
    if (dims[i] != i) return false;
  }
  return true;
}

struct ConvPlan {
  ConvolutionDimensionNumbers dnums;
  std::vector<WindowDim> window;
  std::vector<int64_t> lhs_dims;
  std::vector<int64_t> rhs_dims;
  std::vector<int64_t> out_dims;
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
};

template <typename C>
std::vector<C> Convolve(const ConvPlan& p, const std::vector<C>& lhs, const std::vector<C>& rhs) {
  const ConvolutionDimensionNumbers& dn = p.dnums;
  const std::vector<int64_t> ls = RowMajorStrides(p.lhs_dims);
  const std::vector<int64_t> rs = RowMajorStrides(p.rhs_dims);
  const int64_t ns = static_cast<int64_t>(dn.input_spatial.size());
  const int64_t input_batch = p.lhs_dims[dn.input_batch];
  const int64_t input_z = p.lhs_dims[dn.input_feature];
  const int64_t output_z = p.rhs_dims[dn.kernel_output_feature];
  const int64_t batch_group_size = input_batch / p.batch_group_count;
  const int64_t input_feature_group_size = input_z / p.feature_group_count;
  const int64_t output_feature_group_size = output_z / p.feature_group_count;
  const int64_t depthwise_multiplier = p.batch_group_count > 1 ? output_z / p.batch_group_count : 1;
  std::vector<int64_t> kernel_spatial_sizes(ns);
  for (int64_t s = 0; s < ns; ++s) kernel_spatial_sizes[s] = p.rhs_dims[dn.kernel_spatial[s]];

  int64_t out_count = 1;
  for (int64_t d : p.out_dims) out_count *= d;
  std::vector<C> out(static_cast<size_t>(out_count), C{});
  int64_t linear = 0;
  ForEachIndex(p.out_dims, [&](absl::Span<const int64_t> out_index) {
    const int64_t ob = out_index[dn.output_batch];
    const int64_t oz = out_index[dn.output_feature];
    const int64_t feature_group_index = oz / output_feature_group_size;
    const int64_t batch_group_index = oz / depthwise_multiplier;
    const int64_t lhs_batch = ob + (batch_group_index * batch_group_size) % input_batch;
    const int64_t lhs_base = lhs_batch * ls[dn.input_batch] +
                             feature_group_index * input_feature_group_size * ls[dn.input_feature];
    const int64_t rhs_base = oz * rs[dn.kernel_output_feature];
    const int64_t lhs_z_stride = ls[dn.input_feature];
    const int64_t rhs_z_stride = rs[dn.kernel_input_feature];
    C acc{};
    ForEachIndex(kernel_spatial_sizes, [&](absl::Span<const int64_t> kernel_index) {
      int64_t lhs_offset = lhs_base;
      int64_t rhs_offset = rhs_base;
      for (int64_t s = 0; s < ns; ++s) {
        const WindowDim& w = p.window[s];
        int64_t pos = out_index[dn.output_spatial[s]] * w.stride - w.pad_low +
                      kernel_index[s] * w.rhs_dilation;
        if (w.lhs_dilation > 1) {
          if (pos % w.lhs_dilation != 0) return;
          pos /= w.lhs_dilation;
        }
        if (pos < 0 || pos >= p.lhs_dims[dn.input_spatial[s]]) return;
        lhs_offset += pos * ls[dn.input_spatial[s]];
        const int64_t kpos = w.reversal ? w.size - 1 - kernel_index[s] : kernel_index[s];
        rhs_offset += kpos * rs[dn.kernel_spatial[s]];
      }
      for (int64_t iz = 0; iz < input_feature_group_size; ++iz) {
        acc += lhs[lhs_offset + iz * lhs_z_stride] * rhs[rhs_offset + iz * rhs_z_stride];
      }
    });
    out[linear++] = acc;
  });
  return out;
}

absl::StatusOr<Literal> HandleConvolution(const HloInstruction& instruction,
                                          absl::Span<const Literal* const> operands,
                                          const EvalEnv&) {
  if (operands.size() != 2 || instruction.operand_count() != 2) {
    return InstructionError(instruction, "convolution takes two operands");
  }
  if (HasPackedNibble(instruction)) return Unsupported(instruction, "PACKED_NIBBLE precision");
  const Literal& lhs = *operands[0];
  const Literal& rhs = *operands[1];
  const Shape& shape = instruction.shape();
  if (!lhs.shape().IsArray() || lhs.elided() || !rhs.shape().IsArray() || rhs.elided() ||
      !shape.IsArray()) {
    return InstructionError(instruction, "convolution needs array operands and an array result");
  }
  const PrimitiveType result_type = shape.element_type();
  const ComputeKind kind = ComputeKindOf(result_type);
  if (kind == ComputeKind::kNone) {
    return Unsupported(instruction,
                       absl::StrCat("a convolution of type ", PrimitiveTypeName(result_type)));
  }
  if (!instruction.attrs().dim_labels) return InstructionError(instruction, "needs dim_labels");
  ConvPlan p;
  p.dnums = *instruction.attrs().dim_labels;
  p.lhs_dims = lhs.shape().dimensions();
  p.rhs_dims = rhs.shape().dimensions();
  p.feature_group_count = instruction.attrs().feature_group_count.value_or(1);
  p.batch_group_count = instruction.attrs().batch_group_count.value_or(1);
  const ConvolutionDimensionNumbers& dn = p.dnums;
  const int64_t ns = static_cast<int64_t>(dn.input_spatial.size());
  if (static_cast<int64_t>(dn.kernel_spatial.size()) != ns ||
      static_cast<int64_t>(dn.output_spatial.size()) != ns) {
    return InstructionError(instruction, "dim_labels have different numbers of spatial dims");
  }
  if (instruction.attrs().window) p.window = *instruction.attrs().window;
  if (static_cast<int64_t>(p.window.size()) != ns) {
    return InstructionError(instruction, absl::StrCat("window has ", p.window.size(),
                                                      " dims, dim_labels ", ns, " spatial dims"));
  }
  const int64_t rank = ns + 2;
  if (lhs.shape().rank() != rank || rhs.shape().rank() != rank || shape.rank() != rank) {
    return InstructionError(instruction, absl::StrCat("operands and result must have rank ", rank));
  }
  std::vector<int64_t> in_all = {dn.input_batch, dn.input_feature};
  in_all.insert(in_all.end(), dn.input_spatial.begin(), dn.input_spatial.end());
  std::vector<int64_t> k_all = {dn.kernel_input_feature, dn.kernel_output_feature};
  k_all.insert(k_all.end(), dn.kernel_spatial.begin(), dn.kernel_spatial.end());
  std::vector<int64_t> o_all = {dn.output_batch, dn.output_feature};
  o_all.insert(o_all.end(), dn.output_spatial.begin(), dn.output_spatial.end());
  if (!IsPermutation(in_all, rank) || !IsPermutation(k_all, rank) || !IsPermutation(o_all, rank)) {
    return InstructionError(instruction, "dim_labels do not name every dimension once");
  }
  const int64_t fgc = p.feature_group_count;
  const int64_t bgc = p.batch_group_count;
  if (fgc < 1 || bgc < 1) {
    return InstructionError(instruction, "group counts must be positive");
  }
  if (fgc > 1 && bgc > 1) {
    return Unsupported(instruction, "feature_group_count and batch_group_count both > 1");
  }
  const int64_t input_batch = p.lhs_dims[dn.input_batch];
  const int64_t input_z = p.lhs_dims[dn.input_feature];
  const int64_t kernel_in_z = p.rhs_dims[dn.kernel_input_feature];
  const int64_t kernel_out_z = p.rhs_dims[dn.kernel_output_feature];
  if (input_z % fgc != 0 || input_z / fgc != kernel_in_z || kernel_out_z % fgc != 0 ||
      kernel_out_z % bgc != 0 || input_batch % bgc != 0) {
    return InstructionError(
        instruction,
        absl::StrCat("feature/batch sizes do not fit the group counts (input features ", input_z,
                     ", kernel input features ", kernel_in_z, ", kernel output features ",
                     kernel_out_z, ", batch ", input_batch, ")"));
  }
  p.out_dims.assign(rank, 0);
  p.out_dims[dn.output_batch] = input_batch / bgc;
  p.out_dims[dn.output_feature] = kernel_out_z;
  for (int64_t s = 0; s < ns; ++s) {
    const WindowDim& w = p.window[s];
    if (w.size < 1 || w.stride < 1 || w.lhs_dilation < 1 || w.rhs_dilation < 1 ||
        w.size > kMaxWindowValue || w.stride > kMaxWindowValue ||
        w.lhs_dilation > kMaxWindowValue || w.rhs_dilation > kMaxWindowValue ||
        std::abs(w.pad_low) > kMaxWindowValue || std::abs(w.pad_high) > kMaxWindowValue) {
      return InstructionError(instruction, absl::StrCat("invalid window in spatial dim ", s));
    }
    if (w.size != p.rhs_dims[dn.kernel_spatial[s]]) {
      return InstructionError(instruction,
                              absl::StrCat("window size ", w.size, " differs from the kernel's ",
                                           p.rhs_dims[dn.kernel_spatial[s]]));
    }
    const int64_t padded =
        DilatedBound(p.lhs_dims[dn.input_spatial[s]], w.lhs_dilation) + w.pad_low + w.pad_high;
    p.out_dims[dn.output_spatial[s]] =
        StridedBound(padded, DilatedBound(w.size, w.rhs_dilation), w.stride);
  }
  if (shape.dimensions() != p.out_dims) {
    return InstructionError(
        instruction, absl::StrCat("result dims ", DimsString(shape.dimensions()), " should be ",
                                  DimsString(p.out_dims)));
  }
  Literal lhs_holder;
  Literal rhs_holder;
  absl::StatusOr<const Literal*> lhs_r = AsType(instruction, lhs, result_type, lhs_holder);
  if (!lhs_r.ok()) return lhs_r.status();
  absl::StatusOr<const Literal*> rhs_r = AsType(instruction, rhs, result_type, rhs_holder);
  if (!rhs_r.ok()) return rhs_r.status();
  absl::StatusOr<Literal> created = Literal::CreateChecked(shape);
  if (!created.ok()) return created.status();
  Literal result = *std::move(created);
  WithComputeType(kind, [&](auto zero) {
    using C = decltype(zero);
    FromCompute(Convolve<C>(p, ToCompute<C>(**lhs_r), ToCompute<C>(**rhs_r)), result);
  });
  return result;
}

}  // namespace

void RegisterContractionOps(OpRegistry& registry) {
  registry.Register(HloOpcode::kDot, HandleDot);
  registry.Register(HloOpcode::kConvolution, HandleConvolution);
}

}  // namespace spmdcheck::oracle
