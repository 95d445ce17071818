// Reductions: reduce, reduce-window, select-and-scatter and map.
//
// Semantics follow XLA's HloEvaluator (xla/hlo/evaluator/hlo_evaluator.cc, Dec 2023):
//  * reduce visits, for every output element, the reduced elements in row-major order of the
//    reduced dims, starting from the init value. A single-input reduce of a floating type whose
//    computation is `add(p0, p1)` of two scalar parameters is summed in f64 and rounded once
//    (GenerateReduceOutputElement / IsScalarAdd); every other reduce applies the computation step
//    by step in the element type. The fast paths below compute exactly what a step-by-step call
//    of the recognised computation would (bf16/f16/f8 in f32, rounded after every step;
//    integers wrap; maximum/minimum propagate NaN as the evaluator does).
//  * reduce-window visits the window positions in row-major order; positions that fall on
//    padding or on base-dilation holes are skipped (so the init value stands for them).
//  * select-and-scatter: for each source element (row-major), the first in-bounds window element
//    is the initial selection and every later one replaces it when select(selected, candidate)
//    is false; then the output at the selected index becomes scatter(output, source) — current
//    output value first, as docs/operation_semantics.md and the CPU/GPU emitters have it (the
//    Dec-2023 evaluator passes the two the other way round; equal for commutative scatters).
//  * map applies to_apply element by element.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
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

// Window fields beyond this magnitude are refused, so index arithmetic cannot overflow int64.
constexpr int64_t kMaxWindowValue = int64_t{1} << 31;

// ---- Element codecs: how an element type is stored and in which type it is computed. ----------

template <typename T>
struct NativeCodec {
  using Storage = T;
  using Compute = T;
  static constexpr bool kIsPred = false;
  T Load(T v) const { return v; }
  T Store(T v) const { return v; }
};

struct PredCodec {
  using Storage = uint8_t;
  using Compute = uint8_t;
  static constexpr bool kIsPred = true;
  uint8_t Load(uint8_t v) const { return v != 0 ? 1 : 0; }
  uint8_t Store(uint8_t v) const { return v != 0 ? 1 : 0; }
};

// bf16, f16 and the f8 formats: computed in f32, rounded to nearest even on every store.
template <typename B>
struct NarrowCodec {
  using Storage = B;
  using Compute = float;
  static constexpr bool kIsPred = false;
  PrimitiveType type;
  float Load(B bits) const { return NarrowBitsToFloat(type, bits); }
  B Store(float v) const { return static_cast<B>(FloatToNarrowBits(type, v)); }
};

// Calls fn(codec) for the element types with a typed kernel; false for the others (sub-byte
// integers, complex), which take the generic path.
template <typename Fn>
bool WithCodec(PrimitiveType type, Fn&& fn) {
  return DispatchElementTypeIfHandled(type, [&](auto tag) -> bool {
    using Tag = decltype(tag);
    using S = typename Tag::Storage;
    if constexpr (Tag::kIsPred) {
      fn(PredCodec{});
      return true;
    } else if constexpr (Tag::kIsNativeInteger || Tag::kIsNativeFloat) {
      fn(NativeCodec<S>{});
      return true;
    } else if constexpr (Tag::kIsNarrowFloat) {
      fn(NarrowCodec<S>{Tag::kType});
      return true;
    } else {
      return false;
    }
  });
}

template <ReducerKind K>
using KindTag = std::integral_constant<ReducerKind, K>;

template <typename Fn>
bool WithKind(ReducerKind kind, Fn&& fn) {
  switch (kind) {
    case ReducerKind::kAdd:
      fn(KindTag<ReducerKind::kAdd>{});
      return true;
    case ReducerKind::kMultiply:
      fn(KindTag<ReducerKind::kMultiply>{});
      return true;
    case ReducerKind::kMaximum:
      fn(KindTag<ReducerKind::kMaximum>{});
      return true;
    case ReducerKind::kMinimum:
      fn(KindTag<ReducerKind::kMinimum>{});
      return true;
    case ReducerKind::kAnd:
      fn(KindTag<ReducerKind::kAnd>{});
      return true;
    case ReducerKind::kOr:
      fn(KindTag<ReducerKind::kOr>{});
      return true;
    case ReducerKind::kXor:
      fn(KindTag<ReducerKind::kXor>{});
      return true;
    default:
      return false;
  }
}

// Whether the typed kernel implements `kind` for `Codec` (everything else calls the computation,
// which also reports ops that are invalid for the type).
template <typename Codec>
bool KindSupported(ReducerKind kind) {
  using C = typename Codec::Compute;
  switch (kind) {
    case ReducerKind::kMaximum:
    case ReducerKind::kMinimum:
      return true;
    case ReducerKind::kAdd:
    case ReducerKind::kMultiply:
      return !Codec::kIsPred;
    case ReducerKind::kAnd:
    case ReducerKind::kOr:
    case ReducerKind::kXor:
      return std::is_integral_v<C>;
    default:
      return false;
  }
}

// One step of a recognised binary computation, as the evaluator computes it in type C.
template <ReducerKind K, typename C>
inline C Apply(C a, C b) {
  if constexpr (K == ReducerKind::kAdd) {
    if constexpr (std::is_floating_point_v<C>) {
      return a + b;
    } else {
      return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    }
  } else if constexpr (K == ReducerKind::kMultiply) {
    if constexpr (std::is_floating_point_v<C>) {
      return a * b;
    } else {
      return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    }
  } else if constexpr (K == ReducerKind::kMaximum) {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
    }
    return std::max(a, b);
  } else if constexpr (K == ReducerKind::kMinimum) {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
    }
    return std::min(a, b);
  } else if constexpr (std::is_integral_v<C>) {
    if constexpr (K == ReducerKind::kAnd) return static_cast<C>(a & b);
    if constexpr (K == ReducerKind::kOr) return static_cast<C>(a | b);
    if constexpr (K == ReducerKind::kXor) return static_cast<C>(a ^ b);
  }
  return a;  // Not reached: KindSupported() filters the rest.
}

// A recognised scalar binary computation: its kind and whether its root takes the parameters
// in reverse order (`op(p1, p0)`), which matters for NaN payloads and signed zeros.
struct BinaryReducer {
  ReducerKind kind = ReducerKind::kOther;
  bool swapped = false;
};

BinaryReducer MatchReducer(const HloComputation& computation, PrimitiveType type) {
  BinaryReducer result;
  result.kind = MatchBinaryReducer(computation);
  if (result.kind == ReducerKind::kOther) return result;
  const HloInstruction* root = computation.root();
  // The parameters and the root must all be scalars of the element type.
  for (const HloInstruction* p : computation.parameters()) {
    if (p == nullptr || !p->shape().IsScalar() || p->shape().element_type() != type) {
      return BinaryReducer{};
    }
  }
  if (root->shape().element_type() != type) return BinaryReducer{};
  result.swapped = root->operand(0)->parameter_number() == 1;
  return result;
}

template <ReducerKind K, typename C>
inline C ApplyOrdered(bool swapped, C acc, C x) {
  return swapped ? Apply<K, C>(x, acc) : Apply<K, C>(acc, x);
}

// ---- Literal helpers
// -----------------------------------------------------------------------------

void CopyElement(Literal& dst, int64_t di, const Literal& src, int64_t si) {
  const int64_t width = dst.element_byte_width();
  std::memcpy(dst.raw_data() + di * width, src.raw_data() + si * width, static_cast<size_t>(width));
}

Literal ScalarFrom(const Literal& src, int64_t i) {
  Literal scalar(Shape::Scalar(src.shape().element_type()));
  CopyElement(scalar, 0, src, i);
  return scalar;
}

std::string DimsString(absl::Span<const int64_t> dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

// Copies the value(s) a computation returned into `acc` (one scalar per accumulator): a scalar
// when there is one accumulator (a 1-tuple is accepted too), otherwise a tuple of scalars.
absl::Status UnpackResult(const HloInstruction& instruction, const Literal& value,
                          std::vector<Literal>& acc) {
  const int64_t n = static_cast<int64_t>(acc.size());
  auto fits = [](const Literal& v, const Literal& a) {
    return v.shape().IsScalar() && v.shape().element_type() == a.shape().element_type();
  };
  if (n == 1 && fits(value, acc[0])) {
    CopyElement(acc[0], 0, value, 0);
    return absl::OkStatus();
  }
  if (value.shape().IsTuple() && value.tuple_size() == n) {
    for (int64_t i = 0; i < n; ++i) {
      if (!fits(value.tuple_elements()[i], acc[i])) {
        return InstructionError(
            instruction, absl::StrCat("the computation returned ", value.shape().ToString(false)));
      }
    }
    for (int64_t i = 0; i < n; ++i) CopyElement(acc[i], 0, value.tuple_elements()[i], 0);
    return absl::OkStatus();
  }
  return InstructionError(instruction,
                          absl::StrCat("the computation returned ", value.shape().ToString(false)));
}

// Calls `computation` on accumulators then elements, and stores the result into the accumulators.
absl::Status Step(const HloInstruction& instruction, const HloComputation& computation,
                  const EvalEnv& env, std::vector<Literal>& acc,
                  const std::vector<Literal>& elements) {
  std::vector<const Literal*> args;
  args.reserve(acc.size() + elements.size());
  for (const Literal& a : acc) args.push_back(&a);
  for (const Literal& e : elements) args.push_back(&e);
  absl::StatusOr<Literal> value = env.call(computation, args);
  if (!value.ok()) return value.status();
  return UnpackResult(instruction, *value, acc);
}

absl::Status CheckCallable(const HloInstruction& instruction, const HloComputation* computation,
                           absl::string_view role, int64_t num_params) {
  if (computation == nullptr) {
    return InstructionError(instruction, absl::StrCat("needs a ", role, "= computation"));
  }
  if (computation->is_opaque()) {
    return Unsupported(instruction, absl::StrCat("the opaque computation ", computation->name()));
  }
  if (static_cast<int64_t>(computation->parameters().size()) != num_params) {
    return InstructionError(instruction, absl::StrCat(role, " computation ", computation->name(),
                                                      " takes ", computation->parameters().size(),
                                                      " parameters, expected ", num_params));
  }
  return absl::OkStatus();
}

bool NeedsCall(const EvalEnv& env) { return !static_cast<bool>(env.call); }

// The literal for an instruction's (possibly tuple) result made of `parts`.
Literal Assemble(const Shape& shape, std::vector<Literal> parts) {
  if (!shape.IsTuple()) return std::move(parts[0]);
  Literal tuple = Literal::Tuple(std::move(parts));
  return tuple;
}

// Splits an N-input reduction's operands: inputs (arrays of one shape) then N scalar inits of the
// same element types; `result` must be the array (N = 1) or tuple of N arrays with `out_dims`.
absl::Status CheckVariadic(const HloInstruction& instruction,
                           absl::Span<const Literal* const> operands, int64_t* n_out) {
  if (operands.empty() || operands.size() % 2 != 0 ||
      static_cast<int64_t>(operands.size()) != instruction.operand_count()) {
    return InstructionError(instruction, "expects N inputs followed by N init values");
  }
  const int64_t n = static_cast<int64_t>(operands.size()) / 2;
  for (int64_t i = 0; i < n; ++i) {
    const Literal& input = *operands[i];
    const Literal& init = *operands[n + i];
    if (!input.shape().IsArray() || input.elided()) {
      return InstructionError(instruction, absl::StrCat("input ", i, " is not an array value"));
    }
    if (input.shape().dimensions() != operands[0]->shape().dimensions()) {
      return InstructionError(instruction, "inputs have different dimensions");
    }
    if (!init.shape().IsScalar() || init.elided() ||
        init.shape().element_type() != input.shape().element_type()) {
      return InstructionError(instruction,
                              absl::StrCat("init value ", i, " is not a scalar of the input type"));
    }
  }
  *n_out = n;
  return absl::OkStatus();
}

absl::Status CheckResultShape(const HloInstruction& instruction,
                              absl::Span<const Literal* const> inputs,
                              absl::Span<const int64_t> out_dims) {
  const Shape& shape = instruction.shape();
  const int64_t n = static_cast<int64_t>(inputs.size());
  auto check_array = [&](const Shape& s, int64_t i) -> absl::Status {
    if (!s.IsArray() || s.element_type() != inputs[i]->shape().element_type() ||
        s.dimensions() != std::vector<int64_t>(out_dims.begin(), out_dims.end())) {
      return InstructionError(
          instruction,
          absl::StrCat("result shape ", shape.ToString(false), " does not match the expected ",
                       PrimitiveTypeName(inputs[i]->shape().element_type()), DimsString(out_dims)));
    }
    return absl::OkStatus();
  };
  if (n == 1 && !shape.IsTuple()) return check_array(shape, 0);
  if (!shape.IsTuple() || shape.tuple_size() != n) {
    return InstructionError(instruction, absl::StrCat("result shape ", shape.ToString(false),
                                                      " should be a ", n, "-tuple"));
  }
  for (int64_t i = 0; i < n; ++i) {
    absl::Status status = check_array(shape.tuple_shapes()[i], i);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// ---- reduce ----------------------------------------------------------------------------------

// Calls fn(in_offset, out_offset) for every input element in row-major order, where out_offset
// is the offset of the output element it reduces into (out_stride[d] = 0 for reduced dims).
template <typename Fn>
void ForEachWithOutputOffset(absl::Span<const int64_t> dims, absl::Span<const int64_t> out_stride,
                             Fn&& fn) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  if (rank == 0) {
    fn(int64_t{0}, int64_t{0});
    return;
  }
  const int64_t inner = dims[rank - 1];
  const int64_t inner_stride = out_stride[rank - 1];
  std::vector<int64_t> index(rank, 0);
  int64_t in_offset = 0;
  int64_t out_offset = 0;
  while (true) {
    for (int64_t j = 0; j < inner; ++j) fn(in_offset + j, out_offset + j * inner_stride);
    in_offset += inner;
    int64_t k = rank - 2;
    for (; k >= 0; --k) {
      out_offset += out_stride[k];
      if (++index[k] < dims[k]) break;
      out_offset -= out_stride[k] * dims[k];
      index[k] = 0;
    }
    if (k < 0) return;
  }
}

// Calls row_fn(in_offset, out_offset, length, out_step) for every innermost row of the input in
// row-major order (out_step = the output stride of the innermost dim, 0 when it is reduced).
template <typename Fn>
void ForEachRowWithOutputOffset(absl::Span<const int64_t> dims,
                                absl::Span<const int64_t> out_stride, Fn&& row_fn) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  if (rank == 0) {
    row_fn(int64_t{0}, int64_t{0}, int64_t{1}, int64_t{0});
    return;
  }
  const int64_t inner = dims[rank - 1];
  const int64_t inner_stride = out_stride[rank - 1];
  std::vector<int64_t> index(rank, 0);
  int64_t in_offset = 0;
  int64_t out_offset = 0;
  while (true) {
    row_fn(in_offset, out_offset, inner, inner_stride);
    in_offset += inner;
    int64_t k = rank - 2;
    for (; k >= 0; --k) {
      out_offset += out_stride[k];
      if (++index[k] < dims[k]) break;
      out_offset -= out_stride[k] * dims[k];
      index[k] = 0;
    }
    if (k < 0) return;
  }
}

struct ReducePlan {
  std::vector<int64_t> in_dims;
  std::vector<bool> reduced;
  std::vector<int64_t> out_dims;
  std::vector<int64_t> out_stride_of_in_dim;  // 0 for reduced dims
};

template <typename Codec>
bool TryTypedReduce(const Codec& codec, const ReducePlan& plan, const BinaryReducer& reducer,
                    const Literal& input, const Literal& init, Literal& out) {
  using S = typename Codec::Storage;
  using C = typename Codec::Compute;
  if (!KindSupported<Codec>(reducer.kind)) return false;
  const S* in = input.data<S>().data();
  const int64_t out_count = out.element_count();
  // Floating `add`: summed in f64 from the init value, rounded once (the evaluator's fast path).
  if constexpr (std::is_floating_point_v<C>) {
    if (reducer.kind == ReducerKind::kAdd) {
      std::vector<double> acc(static_cast<size_t>(out_count),
                              static_cast<double>(codec.Load(init.data<S>()[0])));
      // Row by row so that the common case (innermost dim kept, out_step == 1) vectorises; each
      // output element still sums its inputs in increasing row-major order.
      double* a = acc.data();
      ForEachRowWithOutputOffset(plan.in_dims, plan.out_stride_of_in_dim,
                                 [&](int64_t i, int64_t o, int64_t length, int64_t step) {
                                   const S* x = in + i;
                                   if (step == 1) {
                                     double* row = a + o;
                                     for (int64_t j = 0; j < length; ++j)
                                       row[j] += static_cast<double>(codec.Load(x[j]));
                                   } else if (step == 0) {
                                     double sum = a[o];
                                     for (int64_t j = 0; j < length; ++j)
                                       sum += static_cast<double>(codec.Load(x[j]));
                                     a[o] = sum;
                                   } else {
                                     for (int64_t j = 0; j < length; ++j) {
                                       a[o + j * step] += static_cast<double>(codec.Load(x[j]));
                                     }
                                   }
                                 });
      for (int64_t o = 0; o < out_count; ++o) out.SetDouble(o, acc[o]);
      return true;
    }
  }
  S* acc = out.data<S>().data();
  std::fill(acc, acc + out_count, init.data<S>()[0]);
  const bool swapped = reducer.swapped;
  WithKind(reducer.kind, [&](auto tag) {
    constexpr ReducerKind K = decltype(tag)::value;
    ForEachWithOutputOffset(plan.in_dims, plan.out_stride_of_in_dim, [&](int64_t i, int64_t o) {
      acc[o] = codec.Store(ApplyOrdered<K, C>(swapped, codec.Load(acc[o]), codec.Load(in[i])));
    });
  });
  return true;
}

absl::StatusOr<Literal> HandleReduce(const HloInstruction& instruction,
                                     absl::Span<const Literal* const> operands,
                                     const EvalEnv& env) {
  int64_t n = 0;
  absl::Status status = CheckVariadic(instruction, operands, &n);
  if (!status.ok()) return status;
  const HloComputation* computation = instruction.called_computation("to_apply");
  status = CheckCallable(instruction, computation, "to_apply", 2 * n);
  if (!status.ok()) return status;
  if (!instruction.attrs().dimensions) {
    return InstructionError(instruction, "needs dimensions={...}");
  }
  ReducePlan plan;
  plan.in_dims = operands[0]->shape().dimensions();
  const int64_t rank = static_cast<int64_t>(plan.in_dims.size());
  plan.reduced.assign(rank, false);
  for (int64_t d : *instruction.attrs().dimensions) {
    if (d < 0 || d >= rank || plan.reduced[d]) {
      return InstructionError(
          instruction, absl::StrCat("bad or repeated reduce dimension ", d, " for rank ", rank));
    }
    plan.reduced[d] = true;
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (!plan.reduced[d]) plan.out_dims.push_back(plan.in_dims[d]);
  }
  status = CheckResultShape(instruction, operands.subspan(0, n), plan.out_dims);
  if (!status.ok()) return status;
  const std::vector<int64_t> out_strides = RowMajorStrides(plan.out_dims);
  plan.out_stride_of_in_dim.assign(rank, 0);
  for (int64_t d = 0, j = 0; d < rank; ++d) {
    if (!plan.reduced[d]) plan.out_stride_of_in_dim[d] = out_strides[j++];
  }

  std::vector<Literal> results;
  for (int64_t i = 0; i < n; ++i) {
    absl::StatusOr<Literal> r =
        Literal::CreateChecked(Shape::Array(operands[i]->shape().element_type(), plan.out_dims));
    if (!r.ok()) return r.status();
    results.push_back(*std::move(r));
  }

  // Typed fast path for a single input and a recognised computation.
  if (n == 1) {
    const PrimitiveType type = operands[0]->shape().element_type();
    const BinaryReducer reducer = MatchReducer(*computation, type);
    if (reducer.kind != ReducerKind::kOther) {
      bool done = false;
      WithCodec(type, [&](auto codec) {
        done = TryTypedReduce(codec, plan, reducer, *operands[0], *operands[1], results[0]);
      });
      if (done) return Assemble(instruction.shape(), std::move(results));
    }
  }

  // Generic path: call the computation for every reduced element.
  if (NeedsCall(env)) return Unsupported(instruction, "a reduce without a way to call to_apply");
  const std::vector<int64_t> in_strides = RowMajorStrides(plan.in_dims);
  std::vector<int64_t> kept_strides;
  std::vector<int64_t> reduced_dims;
  std::vector<int64_t> reduced_strides;
  for (int64_t d = 0; d < rank; ++d) {
    if (plan.reduced[d]) {
      reduced_dims.push_back(plan.in_dims[d]);
      reduced_strides.push_back(in_strides[d]);
    } else {
      kept_strides.push_back(in_strides[d]);
    }
  }
  std::vector<Literal> acc;
  std::vector<Literal> elements;
  for (int64_t i = 0; i < n; ++i) {
    acc.push_back(ScalarFrom(*operands[n + i], 0));
    elements.push_back(ScalarFrom(*operands[n + i], 0));
  }
  int64_t out_linear = 0;
  ForEachIndex(plan.out_dims, [&](absl::Span<const int64_t> out_index) {
    if (!status.ok()) return;
    int64_t base = 0;
    for (size_t j = 0; j < out_index.size(); ++j) base += out_index[j] * kept_strides[j];
    for (int64_t i = 0; i < n; ++i) CopyElement(acc[i], 0, *operands[n + i], 0);
    ForEachIndex(reduced_dims, [&](absl::Span<const int64_t> red_index) {
      if (!status.ok()) return;
      int64_t offset = base;
      for (size_t j = 0; j < red_index.size(); ++j) offset += red_index[j] * reduced_strides[j];
      for (int64_t i = 0; i < n; ++i) CopyElement(elements[i], 0, *operands[i], offset);
      status = Step(instruction, *computation, env, acc, elements);
    });
    for (int64_t i = 0; i < n; ++i) CopyElement(results[i], out_linear, acc[i], 0);
    ++out_linear;
  });
  if (!status.ok()) return status;
  return Assemble(instruction.shape(), std::move(results));
}

// ---- Windows (reduce-window, select-and-scatter) --------------------------------------------

struct WindowPlan {
  std::vector<int64_t> in_dims;
  std::vector<int64_t> in_strides;
  std::vector<WindowDim> window;
  std::vector<int64_t> out_dims;
};

int64_t DilatedBound(int64_t bound, int64_t dilation) {
  return bound == 0 ? 0 : (bound - 1) * dilation + 1;
}
int64_t StridedBound(int64_t bound, int64_t window, int64_t stride) {
  return window > bound ? 0 : (bound - window) / stride + 1;
}

absl::StatusOr<WindowPlan> MakeWindowPlan(const HloInstruction& instruction,
                                          const std::vector<int64_t>& in_dims) {
  WindowPlan plan;
  plan.in_dims = in_dims;
  plan.in_strides = RowMajorStrides(in_dims);
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  if (instruction.attrs().window) {
    plan.window = *instruction.attrs().window;
  } else if (rank != 0) {
    return InstructionError(instruction, "needs window={...}");
  }
  if (static_cast<int64_t>(plan.window.size()) != rank) {
    return InstructionError(
        instruction, absl::StrCat("window has ", plan.window.size(), " dims, the operand ", rank));
  }
  for (int64_t d = 0; d < rank; ++d) {
    const WindowDim& w = plan.window[d];
    if (w.reversal) return Unsupported(instruction, "window reversal in a windowed reduction");
    if (w.size < 1 || w.stride < 1 || w.lhs_dilation < 1 || w.rhs_dilation < 1 ||
        w.size > kMaxWindowValue || w.stride > kMaxWindowValue ||
        w.lhs_dilation > kMaxWindowValue || w.rhs_dilation > kMaxWindowValue ||
        std::abs(w.pad_low) > kMaxWindowValue || std::abs(w.pad_high) > kMaxWindowValue) {
      return InstructionError(instruction, absl::StrCat("invalid window in dim ", d));
    }
    const int64_t padded = DilatedBound(in_dims[d], w.lhs_dilation) + w.pad_low + w.pad_high;
    plan.out_dims.push_back(StridedBound(padded, DilatedBound(w.size, w.rhs_dilation), w.stride));
  }
  return plan;
}

// Calls fn(input_offset) for every window element of output `out_index` that is a real input
// element (not padding, not a dilation hole), in row-major order of the window.
template <typename Fn>
void ForEachInWindow(const WindowPlan& plan, absl::Span<const int64_t> out_index, Fn&& fn) {
  const int64_t rank = static_cast<int64_t>(plan.in_dims.size());
  auto rec = [&](auto&& self, int64_t d, int64_t offset) -> void {
    if (d == rank) {
      fn(offset);
      return;
    }
    const WindowDim& w = plan.window[d];
    const int64_t start = out_index[d] * w.stride - w.pad_low;
    for (int64_t k = 0; k < w.size; ++k) {
      int64_t pos = start + k * w.rhs_dilation;
      if (w.lhs_dilation > 1) {
        if (pos % w.lhs_dilation != 0) continue;
        pos /= w.lhs_dilation;
      }
      if (pos < 0 || pos >= plan.in_dims[d]) continue;
      self(self, d + 1, offset + pos * plan.in_strides[d]);
    }
  };
  rec(rec, 0, 0);
}

template <typename Codec>
bool TryTypedReduceWindow(const Codec& codec, const WindowPlan& plan, const BinaryReducer& reducer,
                          const Literal& input, const Literal& init, Literal& out) {
  using S = typename Codec::Storage;
  using C = typename Codec::Compute;
  if (!KindSupported<Codec>(reducer.kind)) return false;
  const S* in = input.data<S>().data();
  S* result = out.data<S>().data();
  const S init_value = init.data<S>()[0];
  const bool swapped = reducer.swapped;
  WithKind(reducer.kind, [&](auto tag) {
    constexpr ReducerKind K = decltype(tag)::value;
    int64_t o = 0;
    ForEachIndex(plan.out_dims, [&](absl::Span<const int64_t> out_index) {
      S acc = init_value;
      ForEachInWindow(plan, out_index, [&](int64_t i) {
        acc = codec.Store(ApplyOrdered<K, C>(swapped, codec.Load(acc), codec.Load(in[i])));
      });
      result[o++] = acc;
    });
  });
  return true;
}

absl::StatusOr<Literal> HandleReduceWindow(const HloInstruction& instruction,
                                           absl::Span<const Literal* const> operands,
                                           const EvalEnv& env) {
  int64_t n = 0;
  absl::Status status = CheckVariadic(instruction, operands, &n);
  if (!status.ok()) return status;
  const HloComputation* computation = instruction.called_computation("to_apply");
  status = CheckCallable(instruction, computation, "to_apply", 2 * n);
  if (!status.ok()) return status;
  absl::StatusOr<WindowPlan> plan = MakeWindowPlan(instruction, operands[0]->shape().dimensions());
  if (!plan.ok()) return plan.status();
  status = CheckResultShape(instruction, operands.subspan(0, n), plan->out_dims);
  if (!status.ok()) return status;
  std::vector<Literal> results;
  for (int64_t i = 0; i < n; ++i) {
    absl::StatusOr<Literal> r =
        Literal::CreateChecked(Shape::Array(operands[i]->shape().element_type(), plan->out_dims));
    if (!r.ok()) return r.status();
    results.push_back(*std::move(r));
  }

  if (n == 1) {
    const PrimitiveType type = operands[0]->shape().element_type();
    const BinaryReducer reducer = MatchReducer(*computation, type);
    if (reducer.kind != ReducerKind::kOther) {
      bool done = false;
      WithCodec(type, [&](auto codec) {
        done = TryTypedReduceWindow(codec, *plan, reducer, *operands[0], *operands[1], results[0]);
      });
      if (done) return Assemble(instruction.shape(), std::move(results));
    }
  }

  if (NeedsCall(env)) {
    return Unsupported(instruction, "a reduce-window without a way to call to_apply");
  }
  std::vector<Literal> acc;
  std::vector<Literal> elements;
  for (int64_t i = 0; i < n; ++i) {
    acc.push_back(ScalarFrom(*operands[n + i], 0));
    elements.push_back(ScalarFrom(*operands[n + i], 0));
  }
  int64_t o = 0;
  ForEachIndex(plan->out_dims, [&](absl::Span<const int64_t> out_index) {
    if (!status.ok()) return;
    for (int64_t i = 0; i < n; ++i) CopyElement(acc[i], 0, *operands[n + i], 0);
    ForEachInWindow(*plan, out_index, [&](int64_t offset) {
      if (!status.ok()) return;
      for (int64_t i = 0; i < n; ++i) CopyElement(elements[i], 0, *operands[i], offset);
      status = Step(instruction, *computation, env, acc, elements);
    });
    for (int64_t i = 0; i < n; ++i) CopyElement(results[i], o, acc[i], 0);
    ++o;
  });
  if (!status.ok()) return status;
  return Assemble(instruction.shape(), std::move(results));
}

// ---- select-and-scatter ----------------------------------------------------------------------

// A select computation recognised as `compare(p_a, p_b), direction=D` with the default
// comparison for the type (TOTALORDER and anything else is called instead).
struct CompareSelect {
  bool matched = false;
  ComparisonDirection direction = ComparisonDirection::kGe;
  bool swapped = false;  // compare(p1, p0)
};

CompareSelect MatchCompareSelect(const HloComputation& computation, PrimitiveType type) {
  CompareSelect result;
  const HloInstruction* root = computation.root();
  if (root == nullptr || root->opcode() != HloOpcode::kCompare || root->operand_count() != 2 ||
      !root->shape().IsScalar() || root->shape().element_type() != PrimitiveType::kPred ||
      computation.parameters().size() != 2 || !root->attrs().direction) {
    return result;
  }
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter || a == b) {
    return result;
  }
  for (const HloInstruction* p : computation.parameters()) {
    if (p == nullptr || !p->shape().IsScalar() || p->shape().element_type() != type) return result;
  }
  if (root->attrs().comparison_type) {
    const std::string& t = *root->attrs().comparison_type;
    const bool is_default = IsFloatingType(type)           ? t == "FLOAT"
                            : IsSignedIntegralType(type)   ? t == "SIGNED"
                            : IsUnsignedIntegralType(type) ? t == "UNSIGNED"
                                                           : t == "UNSIGNED";
    if (!is_default) return result;
  }
  result.matched = true;
  result.direction = *root->attrs().direction;
  result.swapped = a->parameter_number() == 1;
  return result;
}

template <typename C>
bool Compare(ComparisonDirection direction, C a, C b) {
  switch (direction) {
    case ComparisonDirection::kEq:
      return a == b;
    case ComparisonDirection::kNe:
      return a != b;
    case ComparisonDirection::kLt:
      return a < b;
    case ComparisonDirection::kLe:
      return a <= b;
    case ComparisonDirection::kGt:
      return a > b;
    case ComparisonDirection::kGe:
      return a >= b;
  }
  return false;
}

absl::StatusOr<Literal> HandleSelectAndScatter(const HloInstruction& instruction,
                                               absl::Span<const Literal* const> operands,
                                               const EvalEnv& env) {
  if (operands.size() != 3 || instruction.operand_count() != 3) {
    return InstructionError(instruction, "expects operand, source and init value");
  }
  const Literal& operand = *operands[0];
  const Literal& source = *operands[1];
  const Literal& init = *operands[2];
  if (!operand.shape().IsArray() || operand.elided() || !source.shape().IsArray() ||
      source.elided()) {
    return InstructionError(instruction, "operand and source must be array values");
  }
  const PrimitiveType type = operand.shape().element_type();
  if (source.shape().element_type() != type || !init.shape().IsScalar() || init.elided() ||
      init.shape().element_type() != type) {
    return InstructionError(instruction, "source and init value must have the operand's type");
  }
  if (!instruction.shape().IsArray() || instruction.shape().element_type() != type ||
      instruction.shape().dimensions() != operand.shape().dimensions()) {
    return InstructionError(instruction, "result shape must be the operand shape");
  }
  const HloComputation* select = instruction.called_computation("select");
  const HloComputation* scatter = instruction.called_computation("scatter");
  absl::Status status = CheckCallable(instruction, select, "select", 2);
  if (!status.ok()) return status;
  status = CheckCallable(instruction, scatter, "scatter", 2);
  if (!status.ok()) return status;
  absl::StatusOr<WindowPlan> plan = MakeWindowPlan(instruction, operand.shape().dimensions());
  if (!plan.ok()) return plan.status();
  if (source.shape().dimensions() != plan->out_dims) {
    return InstructionError(
        instruction, absl::StrCat("source dims ", DimsString(source.shape().dimensions()),
                                  " differ from the window count ", DimsString(plan->out_dims)));
  }
  absl::StatusOr<Literal> created = Literal::CreateChecked(instruction.shape());
  if (!created.ok()) return created.status();
  Literal result = *std::move(created);
  for (int64_t i = 0; i < result.element_count(); ++i) CopyElement(result, i, init, 0);

  const CompareSelect compare = MatchCompareSelect(*select, type);
  const BinaryReducer combiner = MatchReducer(*scatter, type);

  // keep(selected_offset, candidate_offset): select(selected, candidate).
  Literal a_arg = ScalarFrom(init, 0);
  Literal b_arg = ScalarFrom(init, 0);
  auto generic_select = [&](int64_t sel, int64_t cand) -> absl::StatusOr<bool> {
    CopyElement(a_arg, 0, operand, sel);
    CopyElement(b_arg, 0, operand, cand);
    const Literal* args[] = {&a_arg, &b_arg};
    absl::StatusOr<Literal> value = env.call(*select, args);
    if (!value.ok()) return value.status();
    if (!value->shape().IsScalar() || value->shape().element_type() != PrimitiveType::kPred) {
      return InstructionError(instruction, "select must return a pred scalar");
    }
    return value->GetBits(0) != 0;
  };
  // result[r] = scatter(result[r], source[s]).
  auto generic_scatter = [&](int64_t r, int64_t s) -> absl::Status {
    CopyElement(a_arg, 0, result, r);
    CopyElement(b_arg, 0, source, s);
    const Literal* args[] = {&a_arg, &b_arg};
    absl::StatusOr<Literal> value = env.call(*scatter, args);
    if (!value.ok()) return value.status();
    if (!value->shape().IsScalar() || value->shape().element_type() != type) {
      return InstructionError(instruction, "scatter must return a scalar of the operand type");
    }
    CopyElement(result, r, *value, 0);
    return absl::OkStatus();
  };

  bool typed_select = false;
  bool typed_scatter = false;
  // Typed select/scatter functions, bound when the element type has a codec.
  std::function<bool(int64_t, int64_t)> fast_select;
  std::function<void(int64_t, int64_t)> fast_scatter;
  WithCodec(type, [&](auto codec) {
    using Codec = decltype(codec);
    using S = typename Codec::Storage;
    using C = typename Codec::Compute;
    const S* op = operand.data<S>().data();
    const S* src = source.data<S>().data();
    S* res = result.data<S>().data();
    if (compare.matched) {
      typed_select = true;
      fast_select = [=](int64_t sel, int64_t cand) {
        const C x = codec.Load(op[sel]);
        const C y = codec.Load(op[cand]);
        return compare.swapped ? Compare<C>(compare.direction, y, x)
                               : Compare<C>(compare.direction, x, y);
      };
    }
    if (combiner.kind != ReducerKind::kOther && KindSupported<Codec>(combiner.kind)) {
      typed_scatter = true;
      const bool swapped = combiner.swapped;
      WithKind(combiner.kind, [&](auto tag) {
        constexpr ReducerKind K = decltype(tag)::value;
        fast_scatter = [=](int64_t r, int64_t s) {
          res[r] = codec.Store(ApplyOrdered<K, C>(swapped, codec.Load(res[r]), codec.Load(src[s])));
        };
      });
    }
  });
  if ((!typed_select || !typed_scatter) && NeedsCall(env)) {
    return Unsupported(instruction, "a select-and-scatter without a way to call its computations");
  }

  int64_t s = 0;
  ForEachIndex(plan->out_dims, [&](absl::Span<const int64_t> out_index) {
    if (!status.ok()) return;
    int64_t selected = -1;
    ForEachInWindow(*plan, out_index, [&](int64_t offset) {
      if (!status.ok()) return;
      if (selected < 0) {
        selected = offset;
        return;
      }
      bool keep;
      if (typed_select) {
        keep = fast_select(selected, offset);
      } else {
        absl::StatusOr<bool> k = generic_select(selected, offset);
        if (!k.ok()) {
          status = k.status();
          return;
        }
        keep = *k;
      }
      if (!keep) selected = offset;
    });
    if (status.ok() && selected >= 0) {
      if (typed_scatter) {
        fast_scatter(selected, s);
      } else {
        status = generic_scatter(selected, s);
      }
    }
    ++s;
  });
  if (!status.ok()) return status;
  return result;
}

// ---- map -------------------------------------------------------------------------------------

absl::StatusOr<Literal> HandleMap(const HloInstruction& instruction,
                                  absl::Span<const Literal* const> operands, const EvalEnv& env) {
  const Shape& shape = instruction.shape();
  if (!shape.IsArray()) return InstructionError(instruction, "result must be an array");
  if (static_cast<int64_t>(operands.size()) != instruction.operand_count()) {
    return InstructionError(instruction, "operand count mismatch");
  }
  for (const Literal* operand : operands) {
    if (!operand->shape().IsArray() || operand->elided() ||
        operand->shape().dimensions() != shape.dimensions()) {
      return InstructionError(instruction, "operands must be arrays of the result's dimensions");
    }
  }
  if (instruction.attrs().dimensions) {
    const std::vector<int64_t>& dims = *instruction.attrs().dimensions;
    bool identity = static_cast<int64_t>(dims.size()) == shape.rank();
    for (size_t i = 0; identity && i < dims.size(); ++i)
      identity = dims[i] == static_cast<int64_t>(i);
    if (!identity) return Unsupported(instruction, "map over a subset of the dimensions");
  }
  const HloComputation* computation = instruction.called_computation("to_apply");
  absl::Status status =
      CheckCallable(instruction, computation, "to_apply", static_cast<int64_t>(operands.size()));
  if (!status.ok()) return status;
  if (NeedsCall(env)) return Unsupported(instruction, "a map without a way to call to_apply");
  absl::StatusOr<Literal> created = Literal::CreateChecked(shape);
  if (!created.ok()) return created.status();
  Literal result = *std::move(created);
  std::vector<Literal> args;
  for (const Literal* operand : operands) {
    args.emplace_back(Shape::Scalar(operand->shape().element_type()));
  }
  std::vector<const Literal*> arg_ptrs;
  for (const Literal& a : args) arg_ptrs.push_back(&a);
  const int64_t count = result.element_count();
  for (int64_t i = 0; i < count; ++i) {
    for (size_t k = 0; k < operands.size(); ++k) CopyElement(args[k], 0, *operands[k], i);
    absl::StatusOr<Literal> value = env.call(*computation, arg_ptrs);
    if (!value.ok()) return value.status();
    if (!value->shape().IsScalar() || value->shape().element_type() != shape.element_type()) {
      return InstructionError(instruction,
                              absl::StrCat("to_apply returned ", value->shape().ToString(false)));
    }
    CopyElement(result, i, *value, 0);
  }
  return result;
}

}  // namespace

void RegisterReductionOps(OpRegistry& registry) {
  registry.Register(HloOpcode::kReduce, HandleReduce);
  registry.Register(HloOpcode::kReduceWindow, HandleReduceWindow);
  registry.Register(HloOpcode::kSelectAndScatter, HandleSelectAndScatter);
  registry.Register(HloOpcode::kMap, HandleMap);
}

}  // namespace spmdcheck::oracle
