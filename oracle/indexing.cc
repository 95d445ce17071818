// gather and scatter.
//
// Gather clamps every start index into the operand like dynamic-slice; scatter drops an update
// window whole when any part of it is out of bounds and applies the combiner as
// to_apply(current, update) in row-major order of the update scatter index (spec §4.9).
//
// Both kernels are type-agnostic where they only move data: window rows that are contiguous in
// both buffers are copied with memcpy on the raw bytes. Scatter combiners recognised by
// MatchBinaryReducer run as typed loops; anything else calls to_apply through EvalEnv::call.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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

// ---- Shared helpers --------------------------------------------------------------------------

absl::Status CheckArrayLiteral(const HloInstruction& instruction, const Literal* literal,
                               absl::string_view what) {
  if (literal == nullptr) return InstructionError(instruction, absl::StrCat(what, " is missing"));
  if (literal->elided()) return Unsupported(instruction, absl::StrCat("an elided ", what));
  if (!literal->shape().IsArray()) {
    return InstructionError(instruction, absl::StrCat(what, " must be an array, got ",
                                                      literal->shape().ToString(false)));
  }
  if (literal->size_bytes() != literal->element_count() * literal->element_byte_width()) {
    return InstructionError(instruction, absl::StrCat(what, " has a malformed buffer"));
  }
  return absl::OkStatus();
}

bool Contains(absl::Span<const int64_t> list, int64_t value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// Every entry in [0, bound), no repeats, strictly increasing when `sorted`.
absl::Status CheckDimList(const HloInstruction& instruction, absl::Span<const int64_t> dims,
                          int64_t bound, absl::string_view what, bool sorted) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= bound) {
      return InstructionError(
          instruction, absl::StrCat(what, " {", absl::StrJoin(dims, ","), "} has entry ", dims[i],
                                    " out of range [0, ", bound, ")"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (dims[j] == dims[i]) {
        return InstructionError(
            instruction, absl::StrCat(what, " {", absl::StrJoin(dims, ","), "} repeats ", dims[i]));
      }
    }
    if (sorted && i > 0 && dims[i - 1] > dims[i]) {
      return InstructionError(
          instruction, absl::StrCat(what, " {", absl::StrJoin(dims, ","), "} must be sorted"));
    }
  }
  return absl::OkStatus();
}

// The index array read by value into int64 (unsigned values above INT64_MAX saturate; they are
// out of range for any operand either way).
absl::StatusOr<std::vector<int64_t>> ReadIndices(const HloInstruction& instruction,
                                                 const Literal& indices) {
  const PrimitiveType type = indices.shape().element_type();
  if (!IsIntegralType(type)) {
    return InstructionError(instruction, absl::StrCat("indices must be integral, got ",
                                                      indices.shape().ToString(false)));
  }
  const int64_t n = indices.element_count();
  std::vector<int64_t> out(static_cast<size_t>(n));
  // The element type is integral (checked above): the dispatch cannot fail.
  DispatchElementType(type, [&](auto tag) {
    using Tag = decltype(tag);
    using T = typename Tag::Storage;
    if constexpr (Tag::kIsNativeInteger) {
      absl::Span<const T> data = indices.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<T, uint64_t>) {
          out[i] = data[i] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                       ? std::numeric_limits<int64_t>::max()
                       : static_cast<int64_t>(data[i]);
        } else {
          // NOLINTNEXTLINE(bugprone-signed-char-misuse): s8 indices are signed; sign-extend.
          out[i] = static_cast<int64_t>(data[i]);
        }
      }
    } else if constexpr (Tag::kIsSubByte) {
      // One byte each in the buffer, holding the low bits.
      for (int64_t i = 0; i < n; ++i) {
        out[i] = Tag::kIsSigned ? indices.GetInt64(i) : static_cast<int64_t>(indices.GetUint64(i));
      }
    }
  }).IgnoreError();
  return out;
}

// One dimension of a window walked in two buffers at once (element strides in each).
struct WalkDim {
  int64_t size;
  int64_t a_stride;
  int64_t b_stride;
};

// A window walk: the outer dims (outermost first) and the length of the innermost run, which is
// contiguous in both buffers.
struct WindowWalk {
  std::vector<WalkDim> outer;
  int64_t run = 1;
};

// Drops size-1 dims, merges neighbours that are contiguous in both buffers and peels off the
// innermost contiguous run. `dims` is outermost first; no size may be 0.
WindowWalk MakeWalk(const std::vector<WalkDim>& dims) {
  std::vector<WalkDim> kept;
  for (const WalkDim& d : dims) {
    if (d.size != 1) kept.push_back(d);
  }
  std::vector<WalkDim> merged;
  for (const WalkDim& d : kept) {
    if (!merged.empty()) {
      // `d` is inner to merged.back() and follows it.
      WalkDim& prev = merged.back();
      if (prev.a_stride == d.a_stride * d.size && prev.b_stride == d.b_stride * d.size) {
        prev = {prev.size * d.size, d.a_stride, d.b_stride};
        continue;
      }
    }
    merged.push_back(d);
  }
  WindowWalk walk;
  if (!merged.empty() && merged.back().a_stride == 1 && merged.back().b_stride == 1) {
    walk.run = merged.back().size;
    merged.pop_back();
  }
  walk.outer = std::move(merged);
  return walk;
}

// Calls fn(a_offset, b_offset) for the start of every run of the walk from the given bases.
// `counter` is scratch.
template <typename Fn>
void ForEachRun(const WindowWalk& walk, int64_t a_base, int64_t b_base,
                std::vector<int64_t>& counter, Fn&& fn) {
  if (walk.outer.empty()) {
    fn(a_base, b_base);
    return;
  }
  const int64_t rank = static_cast<int64_t>(walk.outer.size());
  counter.assign(static_cast<size_t>(rank), 0);
  int64_t a = a_base;
  int64_t b = b_base;
  while (true) {
    fn(a, b);
    int64_t k = rank - 1;
    for (; k >= 0; --k) {
      const WalkDim& d = walk.outer[k];
      a += d.a_stride;
      b += d.b_stride;
      if (++counter[k] < d.size) break;
      a -= d.a_stride * d.size;
      b -= d.b_stride * d.size;
      counter[k] = 0;
    }
    if (k < 0) return;
  }
}

// Odometer over `dims` that keeps two linear offsets (strides per dim in each).
template <typename Fn>
void ForEachIndexWithOffsets(absl::Span<const int64_t> dims, absl::Span<const int64_t> a_strides,
                             absl::Span<const int64_t> b_strides, Fn&& fn) {
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  int64_t a = 0;
  int64_t b = 0;
  while (true) {
    fn(absl::Span<const int64_t>(index), a, b);
    int64_t k = rank - 1;
    for (; k >= 0; --k) {
      a += a_strides[k];
      b += b_strides[k];
      if (++index[k] < dims[k]) break;
      a -= a_strides[k] * dims[k];
      b -= b_strides[k] * dims[k];
      index[k] = 0;
    }
    if (k < 0) return;
  }
}

// ---- Gather ----------------------------------------------------------------------------------

// Checks the gather dimension numbers and slice sizes against the operand and start_indices
// dims (nothing after them may index out of range).
absl::Status CheckGatherDims(const HloInstruction& instruction, const GatherDimensionNumbers& dn,
                             const std::vector<int64_t>& slice_sizes,
                             const std::vector<int64_t>& op_dims,
                             const std::vector<int64_t>& idx_dims) {
  const int64_t rank = static_cast<int64_t>(op_dims.size());
  const int64_t idx_rank = static_cast<int64_t>(idx_dims.size());
  const int64_t ivd = dn.index_vector_dim;
  if (ivd < 0 || ivd > idx_rank) {
    return InstructionError(instruction, absl::StrCat("index_vector_dim ", ivd,
                                                      " is out of range [0, ", idx_rank, "]"));
  }
  const int64_t index_vector_size = ivd == idx_rank ? 1 : idx_dims[ivd];
  if (index_vector_size != static_cast<int64_t>(dn.start_index_map.size())) {
    return InstructionError(instruction, absl::StrCat("index vector has size ", index_vector_size,
                                                      " but start_index_map has ",
                                                      dn.start_index_map.size(), " entries"));
  }
  if (static_cast<int64_t>(slice_sizes.size()) != rank) {
    return InstructionError(instruction, absl::StrCat("slice_sizes has ", slice_sizes.size(),
                                                      " entries for an operand of rank ", rank));
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (slice_sizes[d] < 0 || slice_sizes[d] > op_dims[d]) {
      return InstructionError(instruction,
                              absl::StrCat("slice size ", slice_sizes[d], " of dim ", d,
                                           " does not fit operand dim of size ", op_dims[d]));
    }
  }
  if (absl::Status s = CheckDimList(instruction, dn.start_index_map, rank, "start_index_map",
                                    /*sorted=*/false);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckDimList(instruction, dn.collapsed_slice_dims, rank,
                                    "collapsed_slice_dims", /*sorted=*/true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckDimList(instruction, dn.operand_batching_dims, rank,
                                    "operand_batching_dims", /*sorted=*/true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckDimList(instruction, dn.start_indices_batching_dims, idx_rank,
                                    "start_indices_batching_dims", /*sorted=*/false);
      !s.ok()) {
    return s;
  }
  if (dn.operand_batching_dims.size() != dn.start_indices_batching_dims.size()) {
    return InstructionError(instruction,
                            "operand_batching_dims and start_indices_batching_dims differ in size");
  }
  for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i) {
    const int64_t od = dn.operand_batching_dims[i];
    const int64_t id = dn.start_indices_batching_dims[i];
    if (Contains(dn.collapsed_slice_dims, od) || Contains(dn.start_index_map, od)) {
      return InstructionError(
          instruction,
          absl::StrCat("operand batching dim ", od, " is also collapsed or in start_index_map"));
    }
    if (id == ivd) {
      return InstructionError(instruction, "start_indices_batching_dims contains index_vector_dim");
    }
    if (idx_dims[id] != op_dims[od]) {
      return InstructionError(
          instruction, absl::StrCat("start_indices batching dim ", id, " has size ", idx_dims[id],
                                    " but operand batching dim ", od, " has size ", op_dims[od]));
    }
    if (slice_sizes[od] != 1) {
      return InstructionError(instruction,
                              absl::StrCat("operand batching dim ", od, " must have slice size 1"));
    }
  }
  for (int64_t d : dn.collapsed_slice_dims) {
    if (slice_sizes[d] > 1) {
      return InstructionError(
          instruction, absl::StrCat("collapsed slice dim ", d, " has slice size ", slice_sizes[d]));
    }
  }
  return absl::OkStatus();
}

// Where the dims of a gather go: operand dims in the result, start_indices batch dims, and the
// result dims they make.
struct GatherPlan {
  std::vector<int64_t> window_operand_dims;  // Offset dims, in operand order.
  std::vector<int64_t> batch_index_dims;     // start_indices dims other than index_vector_dim.
  std::vector<int64_t> out_dims;
  std::vector<int64_t> batch_out_dims;  // Output dim of each batch dim.
};

// The plan of a gather whose dims CheckGatherDims accepted; an error when the offset dims or the
// result shape do not match.
absl::StatusOr<GatherPlan> PlanGather(const HloInstruction& instruction,
                                      const GatherDimensionNumbers& dn,
                                      const std::vector<int64_t>& slice_sizes,
                                      const Shape& operand_shape,
                                      const std::vector<int64_t>& idx_dims) {
  const int64_t rank = operand_shape.rank();
  const int64_t idx_rank = static_cast<int64_t>(idx_dims.size());
  GatherPlan plan;
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(dn.collapsed_slice_dims, d) && !Contains(dn.operand_batching_dims, d)) {
      plan.window_operand_dims.push_back(d);
    }
  }
  if (plan.window_operand_dims.size() != dn.offset_dims.size()) {
    return InstructionError(
        instruction, absl::StrCat("offset_dims has ", dn.offset_dims.size(),
                                  " entries but the operand has ", plan.window_operand_dims.size(),
                                  " dims that are neither collapsed nor batching"));
  }
  for (int64_t d = 0; d < idx_rank; ++d) {
    if (d != dn.index_vector_dim) plan.batch_index_dims.push_back(d);
  }
  const int64_t out_rank =
      static_cast<int64_t>(dn.offset_dims.size() + plan.batch_index_dims.size());
  if (absl::Status s = CheckDimList(instruction, dn.offset_dims, out_rank, "offset_dims",
                                    /*sorted=*/true);
      !s.ok()) {
    return s;
  }
  plan.out_dims.resize(static_cast<size_t>(out_rank));
  size_t next_window = 0;
  size_t next_batch = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (Contains(dn.offset_dims, i)) {
      plan.out_dims[i] = slice_sizes[plan.window_operand_dims[next_window++]];
    } else {
      plan.out_dims[i] = idx_dims[plan.batch_index_dims[next_batch++]];
      plan.batch_out_dims.push_back(i);
    }
  }
  const Shape& shape = instruction.shape();
  if (!shape.IsArray() || shape.element_type() != operand_shape.element_type() ||
      shape.dimensions() != plan.out_dims) {
    return InstructionError(
        instruction,
        absl::StrCat("result shape ", shape.ToString(false), " does not match ",
                     Shape::Array(operand_shape.element_type(), plan.out_dims).ToString(false)));
  }
  if (shape.ElementCount() > 0) {
    for (int64_t d : dn.collapsed_slice_dims) {
      if (slice_sizes[d] == 0) {
        return Unsupported(instruction, "gather with a collapsed dim of slice size 0");
      }
    }
  }
  return plan;
}

// Copies every slice of `operand` the start indices select into `result` (starts clamped into
// the operand).
void RunGather(const GatherDimensionNumbers& dn, const std::vector<int64_t>& slice_sizes,
               const GatherPlan& plan, const Literal& operand, const std::vector<int64_t>& idx_dims,
               const std::vector<int64_t>& index_values, Literal& result) {
  const std::vector<int64_t>& op_dims = operand.shape().dimensions();
  const int64_t idx_rank = static_cast<int64_t>(idx_dims.size());
  const int64_t ivd = dn.index_vector_dim;
  const std::vector<int64_t> op_strides = RowMajorStrides(op_dims);
  const std::vector<int64_t> idx_strides = RowMajorStrides(idx_dims);
  const std::vector<int64_t> out_strides = RowMajorStrides(plan.out_dims);
  const int64_t ivd_stride = ivd == idx_rank ? 0 : idx_strides[ivd];

  std::vector<int64_t> batch_sizes;
  std::vector<int64_t> batch_idx_strides;
  std::vector<int64_t> batch_out_strides;
  for (size_t i = 0; i < plan.batch_index_dims.size(); ++i) {
    batch_sizes.push_back(idx_dims[plan.batch_index_dims[i]]);
    batch_idx_strides.push_back(idx_strides[plan.batch_index_dims[i]]);
    batch_out_strides.push_back(out_strides[plan.batch_out_dims[i]]);
  }
  // Position among the batch dims of each operand batching dim's start_indices dim.
  std::vector<int64_t> batching_positions;
  for (int64_t id : dn.start_indices_batching_dims) {
    batching_positions.push_back(id < ivd ? id : id - 1);
  }
  std::vector<WalkDim> window;
  for (size_t k = 0; k < plan.window_operand_dims.size(); ++k) {
    const int64_t d = plan.window_operand_dims[k];
    window.push_back({slice_sizes[d], op_strides[d], out_strides[dn.offset_dims[k]]});
  }
  const WindowWalk walk = MakeWalk(window);
  const int64_t width = operand.element_byte_width();
  const int64_t run_bytes = walk.run * width;
  const uint8_t* src = operand.raw_data();
  uint8_t* dst = result.raw_data();
  std::vector<int64_t> counter;

  ForEachIndexWithOffsets(
      batch_sizes, batch_idx_strides, batch_out_strides,
      [&](absl::Span<const int64_t> batch_index, int64_t idx_base, int64_t out_base) {
        int64_t op_base = 0;
        for (size_t k = 0; k < dn.start_index_map.size(); ++k) {
          const int64_t d = dn.start_index_map[k];
          const int64_t start = index_values[idx_base + static_cast<int64_t>(k) * ivd_stride];
          const int64_t clamped = std::clamp<int64_t>(start, 0, op_dims[d] - slice_sizes[d]);
          op_base += clamped * op_strides[d];
        }
        for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i) {
          op_base += batch_index[batching_positions[i]] * op_strides[dn.operand_batching_dims[i]];
        }
        ForEachRun(walk, op_base, out_base, counter, [&](int64_t a, int64_t b) {
          std::memcpy(dst + b * width, src + a * width, static_cast<size_t>(run_bytes));
        });
      });
}

absl::StatusOr<Literal> HandleGather(const HloInstruction& instruction,
                                     absl::Span<const Literal* const> operands,
                                     const EvalEnv& /*env*/) {
  if (operands.size() != 2) {
    return InstructionError(instruction, absl::StrCat("expects 2 operands, got ", operands.size()));
  }
  if (absl::Status s = CheckArrayLiteral(instruction, operands[0], "operand"); !s.ok()) return s;
  if (absl::Status s = CheckArrayLiteral(instruction, operands[1], "start_indices"); !s.ok()) {
    return s;
  }
  const Literal& operand = *operands[0];
  const Literal& indices = *operands[1];
  const HloAttributes& attrs = instruction.attrs();
  if (!attrs.gather_dimension_numbers) {
    return InstructionError(instruction, "missing gather dimension numbers");
  }
  if (!attrs.gather_slice_sizes) return InstructionError(instruction, "missing slice_sizes");
  const GatherDimensionNumbers& dn = *attrs.gather_dimension_numbers;
  const std::vector<int64_t>& slice_sizes = *attrs.gather_slice_sizes;
  const std::vector<int64_t>& idx_dims = indices.shape().dimensions();
  if (absl::Status s =
          CheckGatherDims(instruction, dn, slice_sizes, operand.shape().dimensions(), idx_dims);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<GatherPlan> plan =
      PlanGather(instruction, dn, slice_sizes, operand.shape(), idx_dims);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<Literal> result_or = Literal::CreateChecked(instruction.shape());
  if (!result_or.ok()) return result_or.status();
  Literal result = *std::move(result_or);
  if (result.element_count() == 0) return result;

  absl::StatusOr<std::vector<int64_t>> index_values = ReadIndices(instruction, indices);
  if (!index_values.ok()) return index_values.status();
  RunGather(dn, slice_sizes, *plan, operand, idx_dims, *index_values, result);
  return result;
}

// ---- Scatter ---------------------------------------------------------------------------------

// What the combiner computation does.
enum class CombinerKind { kReplace, kKeep, kReducer, kGeneric };

// `ROOT p(index)` or `ROOT tuple(p(first), ..., p(first + n - 1))`.
bool ReturnsParameters(const HloComputation& computation, int64_t first, int64_t n) {
  const HloInstruction* root = computation.root();
  if (root == nullptr) return false;
  if (n == 1 && root->opcode() == HloOpcode::kParameter) {
    return root->parameter_number() == first;
  }
  if (root->opcode() != HloOpcode::kTuple || root->operand_count() != n) return false;
  for (int64_t i = 0; i < n; ++i) {
    const HloInstruction* element = root->operand(i);
    if (element->opcode() != HloOpcode::kParameter || element->parameter_number() != first + i) {
      return false;
    }
  }
  return true;
}

// Typed combine of one element. Returns false when the case must go through to_apply (a float
// max/min with a NaN or a ±0 tie, or an op the fast path does not cover for the type).
template <typename F>
bool CombineFloat(ReducerKind op, F& cur, F upd) {
  switch (op) {
    case ReducerKind::kAdd:
      cur = cur + upd;
      return true;
    case ReducerKind::kMultiply:
      cur = cur * upd;
      return true;
    case ReducerKind::kMaximum:
    case ReducerKind::kMinimum:
      if (std::isnan(cur) || std::isnan(upd)) return false;
      if (cur == upd) return std::signbit(cur) == std::signbit(upd);  // Unchanged when same.
      cur = op == ReducerKind::kMaximum ? std::max(cur, upd) : std::min(cur, upd);
      return true;
    default:
      return false;
  }
}

template <typename T>
bool CombineInt(ReducerKind op, T& cur, T upd) {
  switch (op) {
    case ReducerKind::kAdd:
      cur = static_cast<T>(static_cast<uint64_t>(cur) + static_cast<uint64_t>(upd));
      return true;
    case ReducerKind::kMultiply:
      cur = static_cast<T>(static_cast<uint64_t>(cur) * static_cast<uint64_t>(upd));
      return true;
    case ReducerKind::kMaximum:
      cur = std::max(cur, upd);
      return true;
    case ReducerKind::kMinimum:
      cur = std::min(cur, upd);
      return true;
    case ReducerKind::kAnd:
      cur = static_cast<T>(cur & upd);
      return true;
    case ReducerKind::kOr:
      cur = static_cast<T>(cur | upd);
      return true;
    case ReducerKind::kXor:
      cur = static_cast<T>(cur ^ upd);
      return true;
    default:
      return false;
  }
}

bool CombinePred(ReducerKind op, uint8_t& cur, uint8_t upd) {
  const bool a = cur != 0;
  const bool b = upd != 0;
  switch (op) {
    case ReducerKind::kAnd:
    case ReducerKind::kMinimum:
      cur = (a && b) ? 1 : 0;
      return true;
    case ReducerKind::kOr:
    case ReducerKind::kMaximum:
      cur = (a || b) ? 1 : 0;
      return true;
    case ReducerKind::kXor:
      cur = (a != b) ? 1 : 0;
      return true;
    default:
      return false;
  }
}

// Whether the typed fast path knows `op` on `type` at all (per-element fallbacks aside).
bool FastReducerSupports(ReducerKind op, PrimitiveType type) {
  return DispatchElementTypeIfHandled(type, [op](auto tag) -> bool {
    using Tag = decltype(tag);
    if constexpr (Tag::kIsPred) {
      return op == ReducerKind::kAnd || op == ReducerKind::kOr || op == ReducerKind::kXor ||
             op == ReducerKind::kMaximum || op == ReducerKind::kMinimum;
    } else if constexpr (Tag::kIsNativeInteger) {
      return op != ReducerKind::kOther;
    } else if constexpr (Tag::kIsNativeFloat || (Tag::kIsNarrowFloat && Tag::kBits == 16)) {
      return op == ReducerKind::kAdd || op == ReducerKind::kMultiply ||
             op == ReducerKind::kMaximum || op == ReducerKind::kMinimum;
    } else {
      return false;
    }
  });
}

// Calls to_apply(current..., update...) for single elements and writes the results back.
class GenericCombiner {
 public:
  GenericCombiner(const HloInstruction& instruction, const HloComputation& computation,
                  std::vector<Literal>& results, absl::Span<const Literal* const> updates,
                  const EvalEnv& env)
      : instruction_(instruction),
        computation_(computation),
        results_(results),
        updates_(updates),
        env_(env) {
    const size_t n = results.size();
    for (size_t i = 0; i < n; ++i) {
      current_.emplace_back(Shape::Scalar(results[i].shape().element_type()));
    }
    for (size_t i = 0; i < n; ++i) {
      update_.emplace_back(Shape::Scalar(results[i].shape().element_type()));
    }
    for (size_t i = 0; i < n; ++i) args_.push_back(&current_[i]);
    for (size_t i = 0; i < n; ++i) args_.push_back(&update_[i]);
  }

  absl::Status Combine(int64_t out_index, int64_t update_index) {
    if (!env_.call) {
      return InstructionError(instruction_, "no computation evaluator in the environment");
    }
    const size_t n = results_.size();
    for (size_t i = 0; i < n; ++i) {
      const int64_t w = results_[i].element_byte_width();
      std::memcpy(current_[i].raw_data(), results_[i].raw_data() + out_index * w,
                  static_cast<size_t>(w));
      std::memcpy(update_[i].raw_data(), updates_[i]->raw_data() + update_index * w,
                  static_cast<size_t>(w));
    }
    absl::StatusOr<Literal> value = env_.call(computation_, args_);
    if (!value.ok()) return value.status();
    const bool tuple = value->shape().IsTuple();
    if (n == 1 && !tuple) return Store(0, *value, out_index);
    if (!tuple || value->tuple_size() != static_cast<int64_t>(n)) {
      return InstructionError(instruction_,
                              absl::StrCat("to_apply returned ", value->shape().ToString(false),
                                           ", expected ", n, " scalars"));
    }
    for (size_t i = 0; i < n; ++i) {
      if (absl::Status s = Store(i, value->tuple_elements()[i], out_index); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Store(size_t i, const Literal& value, int64_t out_index) {
    Literal& out = results_[i];
    if (!value.shape().IsScalar() || value.shape().element_type() != out.shape().element_type() ||
        value.size_bytes() != out.element_byte_width()) {
      return InstructionError(instruction_,
                              absl::StrCat("to_apply returned ", value.shape().ToString(false),
                                           " for a scatter into ", out.shape().ToString(false)));
    }
    const int64_t w = out.element_byte_width();
    std::memcpy(out.raw_data() + out_index * w, value.raw_data(), static_cast<size_t>(w));
    return absl::OkStatus();
  }

  const HloInstruction& instruction_;
  const HloComputation& computation_;
  std::vector<Literal>& results_;
  absl::Span<const Literal* const> updates_;
  const EvalEnv& env_;
  std::vector<Literal> current_;
  std::vector<Literal> update_;
  std::vector<const Literal*> args_;
};

// Applies the typed reducer over a run of `n` elements of storage type S; elements the fast path
// declines go to `generic`.
template <typename S, typename Op>
absl::Status CombineRun(Literal& out, const Literal& updates, int64_t out_offset,
                        int64_t update_offset, int64_t n, GenericCombiner& generic, Op&& op) {
  S* cur = out.data<S>().data() + out_offset;
  const S* upd = updates.data<S>().data() + update_offset;
  for (int64_t k = 0; k < n; ++k) {
    if (!op(cur[k], upd[k])) {
      if (absl::Status s = generic.Combine(out_offset + k, update_offset + k); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ReducerRun(ReducerKind op, PrimitiveType type, Literal& out, const Literal& updates,
                        int64_t out_offset, int64_t update_offset, int64_t n,
                        GenericCombiner& generic) {
  return DispatchElementType(type, [&](auto tag) -> absl::Status {
    using Tag = decltype(tag);
    using S = typename Tag::Storage;
    if constexpr (Tag::kIsPred) {
      return CombineRun<uint8_t>(out, updates, out_offset, update_offset, n, generic,
                                 [op](uint8_t& c, uint8_t u) { return CombinePred(op, c, u); });
    } else if constexpr (Tag::kIsNativeInteger) {
      return CombineRun<S>(out, updates, out_offset, update_offset, n, generic,
                           [op](S& c, S u) { return CombineInt<S>(op, c, u); });
    } else if constexpr (Tag::kIsNativeFloat) {
      return CombineRun<S>(out, updates, out_offset, update_offset, n, generic,
                           [op](S& c, S u) { return CombineFloat<S>(op, c, u); });
    } else if constexpr (Tag::kIsNarrowFloat && Tag::kBits == 16) {
      // bf16, f16: computed in f32 and rounded to nearest even per element, as the evaluator does.
      return CombineRun<S>(out, updates, out_offset, update_offset, n, generic, [op](S& c, S u) {
        float value = NarrowBitsToFloat(Tag::kType, c);
        if (!CombineFloat<float>(op, value, NarrowBitsToFloat(Tag::kType, u))) return false;
        c = static_cast<S>(FloatToNarrowBits(Tag::kType, value));
        return true;
      });
    } else {
      for (int64_t k = 0; k < n; ++k) {
        if (absl::Status s = generic.Combine(out_offset + k, update_offset + k); !s.ok()) {
          return s;
        }
      }
      return absl::OkStatus();
    }
  });
}

// The operands of a scatter: N inputs, the indices and N updates, arrays, inputs (and updates)
// of equal dims, each update of its input's element type.
absl::Status CheckScatterOperands(const HloInstruction& instruction,
                                  absl::Span<const Literal* const> operands) {
  const int64_t count = static_cast<int64_t>(operands.size());
  if (count < 3 || count % 2 == 0) {
    return InstructionError(
        instruction,
        absl::StrCat("expects N inputs, indices and N updates, got ", count, " operands"));
  }
  const int64_t n = (count - 1) / 2;
  for (int64_t i = 0; i < count; ++i) {
    const char* what = i < n ? "input" : (i == n ? "scatter_indices" : "updates");
    if (absl::Status s = CheckArrayLiteral(instruction, operands[i], what); !s.ok()) return s;
  }
  absl::Span<const Literal* const> inputs = operands.subspan(0, n);
  absl::Span<const Literal* const> updates = operands.subspan(n + 1, n);
  const std::vector<int64_t>& op_dims = inputs[0]->shape().dimensions();
  const std::vector<int64_t>& upd_dims = updates[0]->shape().dimensions();
  for (int64_t i = 0; i < n; ++i) {
    if (inputs[i]->shape().dimensions() != op_dims ||
        updates[i]->shape().dimensions() != upd_dims) {
      return InstructionError(instruction, "scatter inputs (and updates) must have equal dims");
    }
    if (inputs[i]->shape().element_type() != updates[i]->shape().element_type()) {
      return InstructionError(
          instruction, absl::StrCat("updates ", i, " must have the element type of input ", i));
    }
  }
  return absl::OkStatus();
}

// Checks the scatter dimension numbers against the input, indices and updates ranks and the
// batching dims' sizes.
absl::Status CheckScatterDims(const HloInstruction& instruction, const ScatterDimensionNumbers& dn,
                              const std::vector<int64_t>& op_dims,
                              const std::vector<int64_t>& idx_dims, int64_t upd_rank) {
  const int64_t rank = static_cast<int64_t>(op_dims.size());
  const int64_t idx_rank = static_cast<int64_t>(idx_dims.size());
  const int64_t ivd = dn.index_vector_dim;
  if (ivd < 0 || ivd > idx_rank) {
    return InstructionError(instruction, absl::StrCat("index_vector_dim ", ivd,
                                                      " is out of range [0, ", idx_rank, "]"));
  }
  const int64_t index_vector_size = ivd == idx_rank ? 1 : idx_dims[ivd];
  if (index_vector_size != static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size())) {
    return InstructionError(instruction,
                            absl::StrCat("index vector has size ", index_vector_size,
                                         " but scatter_dims_to_operand_dims has ",
                                         dn.scatter_dims_to_operand_dims.size(), " entries"));
  }
  if (absl::Status s = CheckDimList(instruction, dn.update_window_dims, upd_rank,
                                    "update_window_dims", /*sorted=*/true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckDimList(instruction, dn.inserted_window_dims, rank,
                                    "inserted_window_dims", /*sorted=*/true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckDimList(instruction, dn.input_batching_dims, rank,
                                    "input_batching_dims", /*sorted=*/true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckDimList(instruction, dn.scatter_dims_to_operand_dims, rank,
                                    "scatter_dims_to_operand_dims", /*sorted=*/false);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckDimList(instruction, dn.scatter_indices_batching_dims, idx_rank,
                                    "scatter_indices_batching_dims", /*sorted=*/false);
      !s.ok()) {
    return s;
  }
  if (dn.input_batching_dims.size() != dn.scatter_indices_batching_dims.size()) {
    return InstructionError(instruction,
                            "input_batching_dims and scatter_indices_batching_dims differ in size");
  }
  for (size_t i = 0; i < dn.input_batching_dims.size(); ++i) {
    const int64_t od = dn.input_batching_dims[i];
    const int64_t id = dn.scatter_indices_batching_dims[i];
    if (Contains(dn.inserted_window_dims, od) || Contains(dn.scatter_dims_to_operand_dims, od)) {
      return InstructionError(instruction,
                              absl::StrCat("input batching dim ", od,
                                           " is also inserted or in scatter_dims_to_operand_dims"));
    }
    if (id == ivd) {
      return InstructionError(instruction,
                              "scatter_indices_batching_dims contains index_vector_dim");
    }
    if (idx_dims[id] != op_dims[od]) {
      return InstructionError(
          instruction, absl::StrCat("scatter_indices batching dim ", id, " has size ", idx_dims[id],
                                    " but input batching dim ", od, " has size ", op_dims[od]));
    }
  }
  return absl::OkStatus();
}

// Where the dims of a scatter go: input dims the update windows cover, the scatter dims of the
// indices and of the updates, and the window size of every input dim.
struct ScatterPlan {
  std::vector<int64_t> window_operand_dims;  // Neither inserted nor batching, in input order.
  std::vector<int64_t> scatter_index_dims;   // start_indices dims other than index_vector_dim.
  std::vector<int64_t> update_scatter_dims;  // updates dims that are not window dims.
  std::vector<int64_t> window_sizes;         // Per input dim (1 for inserted and batching dims).
};

// The plan of a scatter whose dims CheckScatterDims accepted; an error when the window or
// scatter dims do not match.
absl::StatusOr<ScatterPlan> PlanScatter(const HloInstruction& instruction,
                                        const ScatterDimensionNumbers& dn,
                                        const std::vector<int64_t>& op_dims,
                                        const std::vector<int64_t>& idx_dims,
                                        const std::vector<int64_t>& upd_dims) {
  const int64_t rank = static_cast<int64_t>(op_dims.size());
  const int64_t idx_rank = static_cast<int64_t>(idx_dims.size());
  const int64_t upd_rank = static_cast<int64_t>(upd_dims.size());
  ScatterPlan plan;
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(dn.inserted_window_dims, d) && !Contains(dn.input_batching_dims, d)) {
      plan.window_operand_dims.push_back(d);
    }
  }
  if (plan.window_operand_dims.size() != dn.update_window_dims.size()) {
    return InstructionError(
        instruction, absl::StrCat("update_window_dims has ", dn.update_window_dims.size(),
                                  " entries but the input has ", plan.window_operand_dims.size(),
                                  " dims that are neither inserted nor batching"));
  }
  for (int64_t d = 0; d < idx_rank; ++d) {
    if (d != dn.index_vector_dim) plan.scatter_index_dims.push_back(d);
  }
  for (int64_t d = 0; d < upd_rank; ++d) {
    if (!Contains(dn.update_window_dims, d)) plan.update_scatter_dims.push_back(d);
  }
  if (plan.update_scatter_dims.size() != plan.scatter_index_dims.size()) {
    return InstructionError(
        instruction,
        absl::StrCat("updates have ", plan.update_scatter_dims.size(),
                     " scatter dims but scatter_indices have ", plan.scatter_index_dims.size()));
  }
  for (size_t i = 0; i < plan.update_scatter_dims.size(); ++i) {
    const int64_t ud = plan.update_scatter_dims[i];
    const int64_t id = plan.scatter_index_dims[i];
    if (upd_dims[ud] != idx_dims[id]) {
      return InstructionError(
          instruction, absl::StrCat("updates scatter dim ", ud, " has size ", upd_dims[ud],
                                    " but scatter_indices dim ", id, " has size ", idx_dims[id]));
    }
  }
  plan.window_sizes.assign(static_cast<size_t>(rank), 1);
  for (size_t k = 0; k < plan.window_operand_dims.size(); ++k) {
    const int64_t d = plan.window_operand_dims[k];
    plan.window_sizes[d] = upd_dims[dn.update_window_dims[k]];
    if (plan.window_sizes[d] > op_dims[d]) {
      return InstructionError(
          instruction, absl::StrCat("updates window dim ", dn.update_window_dims[k], " has size ",
                                    plan.window_sizes[d], " which exceeds input dim ", d,
                                    " of size ", op_dims[d]));
    }
  }
  return plan;
}

// The result shape: the input (N == 1) or a tuple of the inputs; to_apply takes 2N parameters.
absl::Status CheckScatterResult(const HloInstruction& instruction,
                                absl::Span<const Literal* const> inputs,
                                const HloComputation& to_apply) {
  const int64_t n = static_cast<int64_t>(inputs.size());
  const Shape& shape = instruction.shape();
  auto matches = [&](const Shape& s, int64_t i) {
    return s.IsArray() && s.element_type() == inputs[i]->shape().element_type() &&
           s.dimensions() == inputs[0]->shape().dimensions();
  };
  bool shape_ok = false;
  if (shape.IsTuple()) {
    shape_ok = shape.tuple_size() == n;
    for (int64_t i = 0; shape_ok && i < n; ++i) shape_ok = matches(shape.tuple_shapes()[i], i);
  } else {
    shape_ok = n == 1 && matches(shape, 0);
  }
  if (!shape_ok) {
    return InstructionError(instruction, absl::StrCat("result shape ", shape.ToString(false),
                                                      " does not match the inputs"));
  }
  if (static_cast<int64_t>(to_apply.parameters().size()) != 2 * n) {
    return InstructionError(instruction, absl::StrCat("to_apply must take ", 2 * n, " parameters"));
  }
  return absl::OkStatus();
}

// The results before any update: copies of the inputs.
absl::StatusOr<std::vector<Literal>> CopyInputs(const HloInstruction& instruction,
                                                absl::Span<const Literal* const> inputs) {
  const Shape& shape = instruction.shape();
  std::vector<Literal> results;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& element = shape.IsTuple() ? shape.tuple_shapes()[i] : shape;
    absl::StatusOr<Literal> literal = Literal::CreateChecked(element);
    if (!literal.ok()) return literal.status();
    if (literal->size_bytes() != inputs[i]->size_bytes()) {
      return InstructionError(instruction, "result and input buffers differ in size");
    }
    if (literal->size_bytes() > 0) {
      std::memcpy(literal->raw_data(), inputs[i]->raw_data(),
                  static_cast<size_t>(literal->size_bytes()));
    }
    results.push_back(*std::move(literal));
  }
  return results;
}

// What to_apply does to N inputs of element type `type`; `reducer` is set for kReducer.
CombinerKind ClassifyCombiner(const HloComputation& to_apply, int64_t n, PrimitiveType type,
                              ReducerKind* reducer) {
  if (ReturnsParameters(to_apply, n, n)) return CombinerKind::kReplace;
  if (ReturnsParameters(to_apply, 0, n)) return CombinerKind::kKeep;
  if (n == 1) {
    *reducer = MatchBinaryReducer(to_apply);
    if (*reducer != ReducerKind::kOther && to_apply.root()->shape().element_type() == type &&
        FastReducerSupports(*reducer, type)) {
      return CombinerKind::kReducer;
    }
  }
  return CombinerKind::kGeneric;
}

// A scatter's combining step: the kind of to_apply, the typed reducer of kReducer, and the
// generic path for everything else.
struct ScatterCombine {
  CombinerKind kind = CombinerKind::kGeneric;
  ReducerKind reducer = ReducerKind::kOther;
  PrimitiveType type = PrimitiveType::kPred;
  GenericCombiner* generic = nullptr;
};

// Applies every update window whose start is in bounds to `results` (a window partly out of
// bounds is dropped).
absl::Status RunScatter(const ScatterDimensionNumbers& dn, const ScatterPlan& plan,
                        const std::vector<int64_t>& op_dims, const std::vector<int64_t>& idx_dims,
                        const std::vector<int64_t>& index_values,
                        absl::Span<const Literal* const> updates, const ScatterCombine& combine,
                        std::vector<Literal>& results) {
  const int64_t n = static_cast<int64_t>(updates.size());
  const int64_t rank = static_cast<int64_t>(op_dims.size());
  const int64_t idx_rank = static_cast<int64_t>(idx_dims.size());
  const int64_t ivd = dn.index_vector_dim;
  const std::vector<int64_t>& upd_dims = updates[0]->shape().dimensions();
  const std::vector<int64_t> op_strides = RowMajorStrides(op_dims);
  const std::vector<int64_t> idx_strides = RowMajorStrides(idx_dims);
  const std::vector<int64_t> upd_strides = RowMajorStrides(upd_dims);
  const int64_t ivd_stride = ivd == idx_rank ? 0 : idx_strides[ivd];
  std::vector<int64_t> scatter_sizes;
  std::vector<int64_t> scatter_idx_strides;
  std::vector<int64_t> scatter_upd_strides;
  for (size_t i = 0; i < plan.scatter_index_dims.size(); ++i) {
    scatter_sizes.push_back(idx_dims[plan.scatter_index_dims[i]]);
    scatter_idx_strides.push_back(idx_strides[plan.scatter_index_dims[i]]);
    scatter_upd_strides.push_back(upd_strides[plan.update_scatter_dims[i]]);
  }
  std::vector<int64_t> batching_positions;
  for (int64_t id : dn.scatter_indices_batching_dims) {
    batching_positions.push_back(id < ivd ? id : id - 1);
  }
  std::vector<WalkDim> window;
  for (size_t k = 0; k < plan.window_operand_dims.size(); ++k) {
    const int64_t d = plan.window_operand_dims[k];
    window.push_back({plan.window_sizes[d], op_strides[d], upd_strides[dn.update_window_dims[k]]});
  }
  const WindowWalk walk = MakeWalk(window);
  std::vector<int64_t> start(static_cast<size_t>(rank), 0);
  std::vector<int64_t> counter;
  absl::Status status;

  ForEachIndexWithOffsets(
      scatter_sizes, scatter_idx_strides, scatter_upd_strides,
      [&](absl::Span<const int64_t> scatter_index, int64_t idx_base, int64_t upd_base) {
        if (!status.ok()) return;
        std::fill(start.begin(), start.end(), 0);
        for (size_t k = 0; k < dn.scatter_dims_to_operand_dims.size(); ++k) {
          start[dn.scatter_dims_to_operand_dims[k]] =
              index_values[idx_base + static_cast<int64_t>(k) * ivd_stride];
        }
        for (size_t i = 0; i < dn.input_batching_dims.size(); ++i) {
          start[dn.input_batching_dims[i]] = scatter_index[batching_positions[i]];
        }
        int64_t op_base = 0;
        for (int64_t d = 0; d < rank; ++d) {
          // The whole window is dropped when any part of it is out of bounds.
          if (start[d] < 0 || start[d] > op_dims[d] - plan.window_sizes[d]) return;
          op_base += start[d] * op_strides[d];
        }
        ForEachRun(walk, op_base, upd_base, counter, [&](int64_t a, int64_t b) {
          if (!status.ok()) return;
          switch (combine.kind) {
            case CombinerKind::kReplace:
              for (int64_t i = 0; i < n; ++i) {
                const int64_t w = results[i].element_byte_width();
                std::memcpy(results[i].raw_data() + a * w, updates[i]->raw_data() + b * w,
                            static_cast<size_t>(walk.run * w));
              }
              break;
            case CombinerKind::kReducer:
              status = ReducerRun(combine.reducer, combine.type, results[0], *updates[0], a, b,
                                  walk.run, *combine.generic);
              break;
            default:
              for (int64_t k = 0; k < walk.run && status.ok(); ++k) {
                status = combine.generic->Combine(a + k, b + k);
              }
              break;
          }
        });
      });
  return status;
}

absl::StatusOr<Literal> HandleScatter(const HloInstruction& instruction,
                                      absl::Span<const Literal* const> operands,
                                      const EvalEnv& env) {
  if (absl::Status s = CheckScatterOperands(instruction, operands); !s.ok()) return s;
  const int64_t n = (static_cast<int64_t>(operands.size()) - 1) / 2;
  absl::Span<const Literal* const> inputs = operands.subspan(0, n);
  const Literal& indices = *operands[n];
  absl::Span<const Literal* const> updates = operands.subspan(n + 1, n);
  const std::vector<int64_t>& op_dims = inputs[0]->shape().dimensions();
  const std::vector<int64_t>& upd_dims = updates[0]->shape().dimensions();
  const std::vector<int64_t>& idx_dims = indices.shape().dimensions();
  const HloAttributes& attrs = instruction.attrs();
  if (!attrs.scatter_dimension_numbers) {
    return InstructionError(instruction, "missing scatter dimension numbers");
  }
  const ScatterDimensionNumbers& dn = *attrs.scatter_dimension_numbers;
  const HloComputation* to_apply = instruction.called_computation("to_apply");
  if (to_apply == nullptr) return InstructionError(instruction, "missing to_apply");
  if (to_apply->is_opaque() || to_apply->root() == nullptr) {
    return Unsupported(instruction, "an opaque to_apply computation");
  }
  if (absl::Status s = CheckScatterDims(instruction, dn, op_dims, idx_dims,
                                        static_cast<int64_t>(upd_dims.size()));
      !s.ok()) {
    return s;
  }
  absl::StatusOr<ScatterPlan> plan = PlanScatter(instruction, dn, op_dims, idx_dims, upd_dims);
  if (!plan.ok()) return plan.status();
  if (absl::Status s = CheckScatterResult(instruction, inputs, *to_apply); !s.ok()) return s;

  absl::StatusOr<std::vector<Literal>> results = CopyInputs(instruction, inputs);
  if (!results.ok()) return results.status();
  auto finish = [&]() -> Literal {
    if (!instruction.shape().IsTuple()) return std::move((*results)[0]);
    return Literal::Tuple(*std::move(results));
  };
  ScatterCombine combine;
  combine.type = inputs[0]->shape().element_type();
  combine.kind = ClassifyCombiner(*to_apply, n, combine.type, &combine.reducer);
  if (combine.kind == CombinerKind::kKeep) return finish();
  for (int64_t w : plan->window_sizes) {
    if (w == 0) return finish();  // Empty windows: nothing to apply.
  }

  absl::StatusOr<std::vector<int64_t>> index_values = ReadIndices(instruction, indices);
  if (!index_values.ok()) return index_values.status();
  GenericCombiner generic(instruction, *to_apply, *results, updates, env);
  combine.generic = &generic;
  if (absl::Status s =
          RunScatter(dn, *plan, op_dims, idx_dims, *index_values, updates, combine, *results);
      !s.ok()) {
    return s;
  }
  return finish();
}

}  // namespace

void RegisterIndexingOps(OpRegistry& registry) {
  registry.Register(HloOpcode::kGather, HandleGather);
  registry.Register(HloOpcode::kScatter, HandleScatter);
}

}  // namespace spmdcheck::oracle
