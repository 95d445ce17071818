// Shape inference for HLO instructions, following XLA's ShapeInference and the shape checks of
// its HloVerifier (xla/service/shape_inference.cc, xla/service/hlo_verifier.cc).
#include "ir/shape_inference.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/collective_group_mode.h"

namespace spmdcheck {
namespace {

// NOLINTBEGIN(bugprone-macro-parentheses): `lhs` is a declaration.
#define SPMDCHECK_SI_RETURN_IF_ERROR(expr)                   \
  do {                                                       \
    absl::Status status_macro_value = (expr);                \
    if (!status_macro_value.ok()) return status_macro_value; \
  } while (0)

#define SPMDCHECK_SI_CONCAT_INNER(a, b) a##b
#define SPMDCHECK_SI_CONCAT(a, b) SPMDCHECK_SI_CONCAT_INNER(a, b)
#define SPMDCHECK_SI_ASSIGN_OR_RETURN(lhs, expr) \
  SPMDCHECK_SI_ASSIGN_OR_RETURN_IMPL(SPMDCHECK_SI_CONCAT(statusor_value_, __LINE__), lhs, expr)
#define SPMDCHECK_SI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                       \
  if (!tmp.ok()) return tmp.status();                      \
  lhs = std::move(*tmp)
// NOLINTEND(bugprone-macro-parentheses)

std::string Str(const Shape& shape) { return shape.ToString(/*print_layout=*/false); }

std::string DimsStr(absl::Span<const int64_t> dims) {
  return absl::StrCat("{", absl::StrJoin(dims, ","), "}");
}

// A dimension of a result: its size and whether it is dynamic.
struct Dim {
  int64_t size = 0;
  DimensionKind kind = DimensionKind::kStatic;
};

Dim DimOf(const Shape& shape, int64_t i) { return {shape.dimensions(i), shape.dimension_kind(i)}; }

Shape MakeArray(PrimitiveType type, const std::vector<Dim>& dims) {
  std::vector<int64_t> sizes;
  sizes.reserve(dims.size());
  for (const Dim& dim : dims) sizes.push_back(dim.size);
  Shape shape = Shape::Array(type, sizes);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].kind != DimensionKind::kStatic) {
      shape.set_dimension_kind(static_cast<int64_t>(i), dims[i].kind);
    }
  }
  return shape;
}

// The more dynamic of two dimension kinds (unbounded > bounded > static).
DimensionKind MergeKinds(DimensionKind a, DimensionKind b) {
  return static_cast<uint8_t>(a) >= static_cast<uint8_t>(b) ? a : b;
}

// `shape` without any layout (recursively).
Shape StripLayouts(Shape shape) {
  shape.clear_layout();
  for (Shape& element : shape.mutable_tuple_shapes()) element = StripLayouts(std::move(element));
  return shape;
}

// Same rank and dim sizes (dim kinds and element types ignored).
bool SameDims(const Shape& a, const Shape& b) {
  return a.IsArray() && b.IsArray() && a.dimensions() == b.dimensions();
}

// A copy of `shape` whose dims are dynamic wherever `a` or `b` is (both of the same rank).
Shape MergeDynamic(Shape shape, const Shape& other) {
  if (!shape.IsArray() || !other.IsArray() || shape.rank() != other.rank()) return shape;
  for (int64_t i = 0; i < shape.rank(); ++i) {
    DimensionKind kind = MergeKinds(shape.dimension_kind(i), other.dimension_kind(i));
    if (kind != shape.dimension_kind(i)) shape.set_dimension_kind(i, kind);
  }
  return shape;
}

PrimitiveType ComplexComponentType(PrimitiveType type) {
  if (type == PrimitiveType::kC64) return PrimitiveType::kF32;
  if (type == PrimitiveType::kC128) return PrimitiveType::kF64;
  return type;
}

std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// Allowed operand counts of an opcode: [min, max], max < 0 meaning unbounded.
struct OperandCountRange {
  int64_t min = 0;
  int64_t max = -1;
};

OperandCountRange ExpectedOperandCount(HloOpcode opcode) {
  switch (ElementwiseArity(opcode)) {
    case 1:
      return {1, 1};
    case 2:
      return {2, 2};
    case 3:
      return {3, 3};
    default:
      break;
  }
  switch (opcode) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kIota:
    case HloOpcode::kPartitionId:
    case HloOpcode::kReplicaId:
    case HloOpcode::kRngGetAndUpdateState:
      return {0, 0};
    case HloOpcode::kBitcast:
    case HloOpcode::kBitcastConvert:
    case HloOpcode::kBroadcast:
    case HloOpcode::kCholesky:
    case HloOpcode::kConvert:
    case HloOpcode::kCopyDone:
    case HloOpcode::kCopyStart:
    case HloOpcode::kDomain:
    case HloOpcode::kFft:
    case HloOpcode::kGetDimensionSize:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kImag:
    case HloOpcode::kInfeed:
    case HloOpcode::kIsFinite:
    case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kReal:
    case HloOpcode::kRecv:
    case HloOpcode::kRecvDone:
    case HloOpcode::kReshape:
    case HloOpcode::kReverse:
    case HloOpcode::kRngBitGenerator:
    case HloOpcode::kSendDone:
    case HloOpcode::kSlice:
    case HloOpcode::kTopK:
    case HloOpcode::kTranspose:
    case HloOpcode::kWhile:
    case HloOpcode::kAllGatherDone:
    case HloOpcode::kAllReduceDone:
    case HloOpcode::kCollectivePermuteDone:
    case HloOpcode::kAsyncUpdate:
    case HloOpcode::kAsyncDone:
      return {1, 1};
    case HloOpcode::kAddDependency:
    case HloOpcode::kCompare:
    case HloOpcode::kConvolution:
    case HloOpcode::kDot:
    case HloOpcode::kGather:
    case HloOpcode::kOutfeed:
    case HloOpcode::kPad:
    case HloOpcode::kRng:
    case HloOpcode::kSend:
    case HloOpcode::kSetDimensionSize:
    case HloOpcode::kStochasticConvert:
    case HloOpcode::kTriangularSolve:
      return {2, 2};
    case HloOpcode::kSelectAndScatter:
    case HloOpcode::kBatchNormTraining:
      return {3, 3};
    case HloOpcode::kBatchNormInference:
    case HloOpcode::kBatchNormGrad:
      return {5, 5};
    case HloOpcode::kRaggedAllToAll:
      return {6, 6};
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kReduce:
    case HloOpcode::kReduceWindow:
    case HloOpcode::kDynamicReshape:
      return {2, -1};
    case HloOpcode::kDynamicUpdateSlice:
    case HloOpcode::kScatter:
      return {3, -1};
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectiveBroadcast:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectivePermuteStart:
    case HloOpcode::kConcatenate:
    case HloOpcode::kConditional:
    case HloOpcode::kMap:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kSort:
      return {1, -1};
    default:
      // after-all, tuple, call, fusion, custom-call, async-start: any number.
      return {0, -1};
  }
}

// How the ids in a collective's replica_groups are interpreted: ir/collective_group_mode.h.
using GroupMode = CollectiveGroupMode;

std::optional<GroupMode> GroupModeOf(const HloInstruction& instruction) {
  return CollectiveGroupModeOf(instruction);
}

class Inferrer {
 public:
  Inferrer(const HloInstruction& instruction, int64_t num_partitions, int64_t replica_count)
      : instr_(instruction), num_partitions_(num_partitions), replica_count_(replica_count) {}

  absl::StatusOr<Shape> Run() {
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckOperands());
    SPMDCHECK_SI_ASSIGN_OR_RETURN(Shape shape, Dispatch());
    return StripLayouts(std::move(shape));
  }

 private:
  // ---- Messages ------------------------------------------------------------------------------

  template <typename... Args>
  absl::Status Error(const Args&... args) const {
    return absl::InvalidArgumentError(
        absl::StrCat(HloOpcodeString(instr_.opcode()), ": ", args...));
  }

  template <typename... Args>
  absl::Status NotInferable(const Args&... args) const {
    return absl::UnimplementedError(absl::StrCat(HloOpcodeString(instr_.opcode()), ": ", args...));
  }

  // ---- Operands ------------------------------------------------------------------------------

  int64_t OperandCount() const { return instr_.operand_count(); }
  const Shape& Op(int64_t i) const { return instr_.operand(i)->shape(); }

  absl::Status CheckOperands() const {
    const OperandCountRange range = ExpectedOperandCount(instr_.opcode());
    const int64_t n = OperandCount();
    if (n < range.min || (range.max >= 0 && n > range.max)) {
      std::string expected;
      if (range.min == range.max) {
        expected = absl::StrCat(range.min);
      } else if (range.max < 0) {
        expected = absl::StrCat("at least ", range.min);
      } else {
        expected = absl::StrCat(range.min, " to ", range.max);
      }
      return Error("expects ", expected, " operand", (range.min == 1 && range.max == 1) ? "" : "s",
                   " but has ", n);
    }
    for (int64_t i = 0; i < n; ++i) {
      if (instr_.operand(i) == nullptr) return Error("operand ", i, " is missing");
    }
    for (int64_t i = 0; i < n; ++i) {
      if (!Op(i).IsValid()) {
        return NotInferable("the shape of operand ", i, " is unknown");
      }
    }
    return absl::OkStatus();
  }

  absl::Status ExpectArray(int64_t i, absl::string_view role = "") const {
    if (!Op(i).IsArray()) {
      return Error(role.empty() ? absl::StrCat("operand ", i) : std::string(role),
                   " must be an array, got ", Str(Op(i)));
    }
    return absl::OkStatus();
  }

  absl::Status ExpectScalar(int64_t i, absl::string_view role) const {
    if (!Op(i).IsScalar()) return Error(role, " must be a scalar, got ", Str(Op(i)));
    return absl::OkStatus();
  }

  absl::Status ExpectToken(int64_t i) const {
    if (!Op(i).IsToken()) return Error("operand ", i, " must be a token, got ", Str(Op(i)));
    return absl::OkStatus();
  }

  // All operands in [begin, end) are arrays with the same dims as operand `begin`.
  absl::Status ExpectSameDims(int64_t begin, int64_t end, absl::string_view what) const {
    for (int64_t i = begin; i < end; ++i) SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(i));
    for (int64_t i = begin + 1; i < end; ++i) {
      if (!SameDims(Op(begin), Op(i))) {
        return Error(what, " must have the same dimensions: operand ", begin, " is ",
                     Str(Op(begin)), " but operand ", i, " is ", Str(Op(i)));
      }
    }
    return absl::OkStatus();
  }

  // ---- Attributes ----------------------------------------------------------------------------

  absl::StatusOr<std::vector<int64_t>> RequiredDimensions() const {
    if (!instr_.attrs().dimensions) return Error("missing attribute dimensions");
    return *instr_.attrs().dimensions;
  }

  absl::StatusOr<int64_t> SingleDimension(int64_t rank) const {
    SPMDCHECK_SI_ASSIGN_OR_RETURN(std::vector<int64_t> dims, RequiredDimensions());
    if (dims.size() != 1) {
      return Error("dimensions must have exactly one entry, got ", DimsStr(dims));
    }
    if (dims[0] < 0 || dims[0] >= rank) {
      return Error("dimension ", dims[0], " is out of range for rank ", rank);
    }
    return dims[0];
  }

  // Each entry in [0, bound), no duplicates; sorted when `sorted`.
  absl::Status CheckDimList(absl::Span<const int64_t> dims, int64_t bound, absl::string_view what,
                            bool sorted = false) const {
    absl::flat_hash_set<int64_t> seen;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < 0 || dims[i] >= bound) {
        return Error(what, " entry ", dims[i], " is out of range [0, ", bound, ")");
      }
      if (!seen.insert(dims[i]).second) return Error(what, " lists dimension ", dims[i], " twice");
      if (sorted && i > 0 && dims[i] < dims[i - 1]) {
        return Error(what, " must be sorted, got ", DimsStr(dims));
      }
    }
    return absl::OkStatus();
  }

  const HloComputation* Called(absl::string_view role) const {
    return instr_.called_computation(role);
  }

  static bool Usable(const HloComputation* computation) {
    return computation != nullptr && !computation->is_opaque() && computation->root() != nullptr &&
           computation->root()->shape().IsValid();
  }

  static int64_t ParameterCount(const HloComputation& computation) {
    return static_cast<int64_t>(computation.parameters().size());
  }

  // Checks `computation` (when usable) has `count` parameters.
  absl::Status CheckParameterCount(const HloComputation* computation, absl::string_view role,
                                   int64_t count) const {
    if (!Usable(computation)) return absl::OkStatus();
    const int64_t actual = ParameterCount(*computation);
    if (actual != count) {
      return Error(role, " computation ", computation->name(), " must have ", count,
                   " parameters but has ", actual);
    }
    return absl::OkStatus();
  }

  // Checks parameter `index` of `computation` (when usable and present) is compatible with
  // `shape`.
  absl::Status CheckParameterShape(const HloComputation* computation, absl::string_view role,
                                   int64_t index, const Shape& shape) const {
    if (!Usable(computation)) return absl::OkStatus();
    std::vector<HloInstruction*> params = computation->parameters();
    if (index >= static_cast<int64_t>(params.size()) || params[index] == nullptr) {
      return Error(role, " computation ", computation->name(), " has no parameter ", index);
    }
    if (params[index]->shape().IsValid() && !params[index]->shape().Compatible(shape)) {
      return Error(role, " computation ", computation->name(), " parameter ", index, " has shape ",
                   Str(params[index]->shape()), " but is passed ", Str(shape));
    }
    return absl::OkStatus();
  }

  // A reducer (to_apply of reduce, reduce-window, all-reduce, scatter, ...) over `n` values:
  // 2n parameters and a root of n scalars (a scalar when n == 1).
  absl::Status CheckReducer(int64_t n) const {
    const HloComputation* reducer = Called("to_apply");
    if (reducer == nullptr) return Error("missing attribute to_apply");
    if (!Usable(reducer)) return absl::OkStatus();
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterCount(reducer, "to_apply", 2 * n));
    const Shape& root = reducer->root()->shape();
    const bool ok = n == 1 ? root.IsScalar()
                           : (root.IsTuple() && root.tuple_size() == n &&
                              std::all_of(root.tuple_shapes().begin(), root.tuple_shapes().end(),
                                          [](const Shape& s) { return s.IsScalar(); }));
    if (!ok) {
      return Error("to_apply computation ", reducer->name(), " must return ",
                   n == 1 ? "a scalar" : absl::StrCat("a tuple of ", n, " scalars"), ", got ",
                   Str(root));
    }
    return absl::OkStatus();
  }

  // Element type of a dot/convolution result: the written type when there is one (XLA's
  // preferred_element_type), else the wider operand type. Operands may differ in precision
  // (XLA allow-lists dot and convolution for mixed precision) but not in kind.
  absl::StatusOr<PrimitiveType> ContractionResultType(PrimitiveType lhs, PrimitiveType rhs) const {
    if ((lhs == PrimitiveType::kPred) != (rhs == PrimitiveType::kPred) ||
        IsComplexType(lhs) != IsComplexType(rhs)) {
      return Error("operand element types ", PrimitiveTypeName(lhs), " and ",
                   PrimitiveTypeName(rhs), " are incompatible");
    }
    const PrimitiveType operand_type =
        BitWidth(rhs) > BitWidth(lhs) || (IsFloatingType(rhs) && !IsFloatingType(lhs)) ? rhs : lhs;
    const Shape& written = instr_.shape();
    if (!written.IsArray()) return operand_type;
    const PrimitiveType preferred = written.element_type();
    if (preferred != operand_type && !IsFloatingType(operand_type) &&
        !IsComplexType(operand_type) && BitWidth(preferred) < BitWidth(operand_type)) {
      return Error("result type ", PrimitiveTypeName(preferred),
                   " must not be narrower than the operand type ", PrimitiveTypeName(operand_type));
    }
    return preferred;
  }

  // ---- Dispatch ------------------------------------------------------------------------------

  absl::StatusOr<Shape> Dispatch() {
    const HloOpcode opcode = instr_.opcode();
    switch (ElementwiseArity(opcode)) {
      case 1:
        return Unary();
      case 2:
        return Binary();
      case 3:
        return opcode == HloOpcode::kSelect ? Select() : Clamp();
      default:
        break;
    }
    switch (opcode) {
      case HloOpcode::kCompare:
        return Compare();
      case HloOpcode::kIsFinite:
      case HloOpcode::kReal:
      case HloOpcode::kImag:
        return Unary();
      case HloOpcode::kBroadcast:
        return Broadcast();
      case HloOpcode::kConcatenate:
        return Concatenate();
      case HloOpcode::kDot:
        return Dot();
      case HloOpcode::kConvolution:
        return Convolution();
      case HloOpcode::kGather:
        return Gather();
      case HloOpcode::kScatter:
        return Scatter();
      case HloOpcode::kGetTupleElement:
        return GetTupleElement();
      case HloOpcode::kTuple: {
        std::vector<Shape> elements;
        for (int64_t i = 0; i < OperandCount(); ++i) elements.push_back(Op(i));
        return Shape::Tuple(std::move(elements));
      }
      case HloOpcode::kPad:
        return Pad();
      case HloOpcode::kReduce:
        return Reduce();
      case HloOpcode::kReduceWindow:
        return ReduceWindow();
      case HloOpcode::kSelectAndScatter:
        return SelectAndScatter();
      case HloOpcode::kReverse:
        return Reverse();
      case HloOpcode::kTranspose:
        return Transpose();
      case HloOpcode::kSlice:
        return Slice();
      case HloOpcode::kDynamicSlice:
        return DynamicSlice();
      case HloOpcode::kDynamicUpdateSlice:
        return DynamicUpdateSlice();
      case HloOpcode::kSort:
        return Sort();
      case HloOpcode::kMap:
        return Map();
      case HloOpcode::kCall:
        return Call();
      case HloOpcode::kFusion:
        return Fusion();
      case HloOpcode::kWhile:
        return While();
      case HloOpcode::kConditional:
        return Conditional();
      case HloOpcode::kAfterAll:
        for (int64_t i = 0; i < OperandCount(); ++i) SPMDCHECK_SI_RETURN_IF_ERROR(ExpectToken(i));
        return Shape::Token();
      case HloOpcode::kAddDependency:
        SPMDCHECK_SI_RETURN_IF_ERROR(ExpectToken(1));
        return Op(0);
      case HloOpcode::kDomain:
      case HloOpcode::kOptimizationBarrier:
        return Op(0);
      case HloOpcode::kPartitionId:
      case HloOpcode::kReplicaId:
        return Shape::Scalar(PrimitiveType::kU32);
      case HloOpcode::kGetDimensionSize: {
        SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0));
        SPMDCHECK_SI_RETURN_IF_ERROR(SingleDimension(Op(0).rank()).status());
        return Shape::Scalar(PrimitiveType::kS32);
      }
      case HloOpcode::kSetDimensionSize:
        return SetDimensionSize();
      case HloOpcode::kAllReduce:
      case HloOpcode::kAllReduceStart:
      case HloOpcode::kCollectiveBroadcast:
        return SameAsOperands(/*arrays_only=*/true);
      case HloOpcode::kAllReduceDone:
        return Op(0);
      case HloOpcode::kAllGather:
        return AllGather();
      case HloOpcode::kAllGatherStart:
        return AllGatherStart();
      case HloOpcode::kReduceScatter:
        return ReduceScatter();
      case HloOpcode::kAllGatherDone:
      case HloOpcode::kCollectivePermuteDone:
      case HloOpcode::kAsyncDone:
        return TupleElementOfOperand(1);
      case HloOpcode::kAllToAll:
        return AllToAll();
      case HloOpcode::kRaggedAllToAll:
        return Op(1);
      case HloOpcode::kCollectivePermute:
        return CollectivePermute();
      case HloOpcode::kCollectivePermuteStart:
        return CollectivePermuteStart();
      case HloOpcode::kAsyncStart:
        return AsyncStart();
      case HloOpcode::kAsyncUpdate:
        return Op(0);
      case HloOpcode::kCopyStart:
        return Shape::Tuple({Op(0), Op(0), Shape::Scalar(PrimitiveType::kU32)});
      case HloOpcode::kCopyDone:
        return TupleElementOfOperand(0);
      case HloOpcode::kSend:
        SPMDCHECK_SI_RETURN_IF_ERROR(ExpectToken(1));
        return Shape::Tuple({Op(0), Shape::Scalar(PrimitiveType::kU32), Shape::Token()});
      case HloOpcode::kSendDone:
        return Shape::Token();
      case HloOpcode::kRecvDone: {
        SPMDCHECK_SI_ASSIGN_OR_RETURN(Shape data, TupleElementOfOperand(0));
        return Shape::Tuple({std::move(data), Shape::Token()});
      }
      case HloOpcode::kOutfeed:
        SPMDCHECK_SI_RETURN_IF_ERROR(ExpectToken(1));
        return Shape::Token();
      case HloOpcode::kRngGetAndUpdateState:
        return Shape::Array(PrimitiveType::kU64, {2});
      case HloOpcode::kCholesky:
        return Cholesky();
      case HloOpcode::kTriangularSolve:
        return TriangularSolve();
      case HloOpcode::kBatchNormTraining:
      case HloOpcode::kBatchNormInference:
      case HloOpcode::kBatchNormGrad:
        return BatchNorm();
      case HloOpcode::kTopK:
        return TopK();
      case HloOpcode::kConvert:
      case HloOpcode::kBitcastConvert:
      case HloOpcode::kStochasticConvert:
        return NotInferable("the result element type must be written");
      case HloOpcode::kIota:
      case HloOpcode::kReshape:
      case HloOpcode::kBitcast:
      case HloOpcode::kDynamicReshape:
      case HloOpcode::kRng:
      case HloOpcode::kRngBitGenerator:
      case HloOpcode::kInfeed:
      case HloOpcode::kRecv:
      case HloOpcode::kFft:
        return NotInferable("the result shape must be written");
      case HloOpcode::kParameter:
      case HloOpcode::kConstant:
      case HloOpcode::kCustomCall:
        return NotInferable("the result shape is not derived from operands");
      default:
        return NotInferable("shape inference is not supported for this opcode");
    }
  }

  // ---- Elementwise ---------------------------------------------------------------------------

  absl::StatusOr<Shape> Unary() const {
    const HloOpcode opcode = instr_.opcode();
    if (opcode == HloOpcode::kCopy) return Op(0);
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0));
    const PrimitiveType type = Op(0).element_type();
    const bool is_float = IsFloatingType(type);
    const bool is_complex = IsComplexType(type);
    const bool is_int = IsIntegralType(type);
    const bool is_signed_int = IsSignedIntegralType(type);
    auto bad_type = [&](absl::string_view expected) {
      return Error("expects ", expected, " operand, got ", Str(Op(0)));
    };
    Shape result = Op(0);
    switch (opcode) {
      case HloOpcode::kFloor:
      case HloOpcode::kCeil:
      case HloOpcode::kRoundNearestAfz:
      case HloOpcode::kRoundNearestEven:
      case HloOpcode::kErf:
      case HloOpcode::kReducePrecision:
        if (!is_float) return bad_type("a floating-point");
        break;
      case HloOpcode::kCos:
      case HloOpcode::kSin:
      case HloOpcode::kTan:
      case HloOpcode::kExp:
      case HloOpcode::kExpm1:
      case HloOpcode::kLog:
      case HloOpcode::kLog1p:
      case HloOpcode::kLogistic:
      case HloOpcode::kRsqrt:
      case HloOpcode::kSqrt:
      case HloOpcode::kCbrt:
      case HloOpcode::kTanh:
        if (!is_float && !is_complex) return bad_type("a floating-point or complex");
        break;
      case HloOpcode::kReal:
      case HloOpcode::kImag:
        if (!is_float && !is_complex) return bad_type("a floating-point or complex");
        result.set_element_type(ComplexComponentType(type));
        break;
      case HloOpcode::kAbs:
        if (!is_signed_int && !is_float && !is_complex) {
          return bad_type("a signed integral, floating-point or complex");
        }
        result.set_element_type(ComplexComponentType(type));
        break;
      case HloOpcode::kSign:
        if (!is_signed_int && !is_float && !is_complex) {
          return bad_type("a signed integral, floating-point or complex");
        }
        break;
      case HloOpcode::kNegate:
        if (!is_int && !is_float && !is_complex) {
          return bad_type("an integral, floating-point or complex");
        }
        break;
      case HloOpcode::kClz:
      case HloOpcode::kPopulationCount:
        if (!is_int) return bad_type("an integral");
        break;
      case HloOpcode::kNot:
        if (!is_int && type != PrimitiveType::kPred) return bad_type("a pred or integral");
        break;
      case HloOpcode::kIsFinite:
        if (!is_float) return bad_type("a floating-point");
        result.set_element_type(PrimitiveType::kPred);
        break;
      default:
        break;
    }
    return result;
  }

  // Two arrays with the same dims (no implicit broadcast in HLO).
  absl::Status CheckBinaryOperands(bool same_type) const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0, "lhs"));
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(1, "rhs"));
    if (same_type && Op(0).element_type() != Op(1).element_type()) {
      return Error("operands must have the same element type, got ", Str(Op(0)), " and ",
                   Str(Op(1)));
    }
    if (!SameDims(Op(0), Op(1))) {
      return Error("operands must have the same dimensions, got ", Str(Op(0)), " and ", Str(Op(1)));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Shape> Binary() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckBinaryOperands(/*same_type=*/true));
    const HloOpcode opcode = instr_.opcode();
    const PrimitiveType type = Op(0).element_type();
    auto bad_type = [&](absl::string_view expected) {
      return Error("expects ", expected, " operands, got ", Str(Op(0)));
    };
    Shape result = MergeDynamic(Op(0), Op(1));
    switch (opcode) {
      case HloOpcode::kAnd:
      case HloOpcode::kOr:
      case HloOpcode::kXor:
        if (type != PrimitiveType::kPred && !IsIntegralType(type)) {
          return bad_type("pred or integral");
        }
        break;
      case HloOpcode::kShiftLeft:
      case HloOpcode::kShiftRightArithmetic:
      case HloOpcode::kShiftRightLogical:
        if (!IsIntegralType(type)) return bad_type("integral");
        break;
      case HloOpcode::kAtan2:
        if (!IsFloatingType(type) && !IsComplexType(type)) {
          return bad_type("floating-point or complex");
        }
        break;
      case HloOpcode::kComplex:
        if (type != PrimitiveType::kF32 && type != PrimitiveType::kF64) {
          return bad_type("f32 or f64");
        }
        result.set_element_type(type == PrimitiveType::kF32 ? PrimitiveType::kC64
                                                            : PrimitiveType::kC128);
        break;
      case HloOpcode::kAdd:
      case HloOpcode::kSubtract:
      case HloOpcode::kMultiply:
      case HloOpcode::kDivide:
      case HloOpcode::kRemainder:
      case HloOpcode::kPower:
        if (type == PrimitiveType::kPred) return bad_type("arithmetic (non-pred)");
        break;
      default:
        break;
    }
    return result;
  }

  absl::StatusOr<Shape> Compare() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckBinaryOperands(/*same_type=*/true));
    if (!instr_.attrs().direction) return Error("missing attribute direction");
    Shape result = MergeDynamic(Op(0), Op(1));
    result.set_element_type(PrimitiveType::kPred);
    return result;
  }

  absl::StatusOr<Shape> Select() const {
    for (int64_t i = 0; i < 3; ++i) SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(i));
    const Shape& pred = Op(0);
    const Shape& on_true = Op(1);
    const Shape& on_false = Op(2);
    if (pred.element_type() != PrimitiveType::kPred) {
      return Error("operand 0 (the predicate) must have element type pred, got ", Str(pred));
    }
    if (on_true.element_type() != on_false.element_type() || !SameDims(on_true, on_false)) {
      return Error("on_true ", Str(on_true), " and on_false ", Str(on_false),
                   " must have the same shape");
    }
    if (!pred.IsScalar() && !SameDims(pred, on_true)) {
      return Error("predicate ", Str(pred), " must be a scalar or have the dimensions of ",
                   Str(on_true));
    }
    return MergeDynamic(on_true, on_false);
  }

  absl::StatusOr<Shape> Clamp() const {
    for (int64_t i = 0; i < 3; ++i) SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(i));
    const Shape& operand = Op(1);
    for (int64_t i : {0, 2}) {
      const Shape& bound = Op(i);
      const char* name = i == 0 ? "min" : "max";
      if (bound.element_type() != operand.element_type()) {
        return Error(name, " ", Str(bound), " must have the element type of the operand ",
                     Str(operand));
      }
      if (!bound.IsScalar() && !SameDims(bound, operand)) {
        return Error(name, " ", Str(bound), " must be a scalar or have the dimensions of ",
                     Str(operand));
      }
    }
    return operand;
  }

  // ---- Shape-changing ops --------------------------------------------------------------------

  absl::StatusOr<Shape> Broadcast() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0));
    const Shape& operand = Op(0);
    std::vector<int64_t> dims;
    if (instr_.attrs().dimensions) {
      dims = *instr_.attrs().dimensions;
    } else if (!operand.IsScalar()) {
      return Error("missing attribute dimensions (required for a non-scalar operand)");
    }
    if (static_cast<int64_t>(dims.size()) != operand.rank()) {
      return Error("dimensions ", DimsStr(dims), " has ", dims.size(),
                   " entries but the operand has rank ", operand.rank());
    }
    const Shape& written = instr_.shape();
    if (!written.IsArray()) {
      // The result's rank and its new dims are only known from a written shape.
      SPMDCHECK_SI_RETURN_IF_ERROR(
          CheckDimList(dims, std::numeric_limits<int64_t>::max(), "dimensions"));
      return NotInferable("the result dimensions must be written");
    }
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(dims, written.rank(), "dimensions"));
    std::vector<Dim> result;
    for (int64_t i = 0; i < written.rank(); ++i) result.push_back(DimOf(written, i));
    for (int64_t i = 0; i < operand.rank(); ++i) {
      if (operand.dimensions(i) != written.dimensions(dims[i])) {
        return Error("operand dim ", i, " has size ", operand.dimensions(i), " but result dim ",
                     dims[i], " has size ", written.dimensions(dims[i]));
      }
      result[dims[i]] = DimOf(operand, i);
    }
    return MakeArray(operand.element_type(), result);
  }

  absl::StatusOr<Shape> Concatenate() const {
    for (int64_t i = 0; i < OperandCount(); ++i) SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(i));
    const Shape& first = Op(0);
    SPMDCHECK_SI_ASSIGN_OR_RETURN(int64_t dim, SingleDimension(first.rank()));
    std::vector<Dim> result;
    for (int64_t i = 0; i < first.rank(); ++i) result.push_back(DimOf(first, i));
    for (int64_t i = 1; i < OperandCount(); ++i) {
      const Shape& shape = Op(i);
      if (shape.element_type() != first.element_type()) {
        return Error("operand ", i, " ", Str(shape),
                     " has a different element type than operand 0 ", Str(first));
      }
      if (shape.rank() != first.rank()) {
        return Error("operand ", i, " ", Str(shape), " has a different rank than operand 0 ",
                     Str(first));
      }
      for (int64_t d = 0; d < first.rank(); ++d) {
        if (d == dim) continue;
        if (shape.dimensions(d) != first.dimensions(d)) {
          return Error("operand ", i, " ", Str(shape), " differs from operand 0 ", Str(first),
                       " in dim ", d, " (only dim ", dim, " may differ)");
        }
        result[d].kind = MergeKinds(result[d].kind, shape.dimension_kind(d));
      }
      std::optional<int64_t> sum = CheckedAdd(result[dim].size, shape.dimensions(dim));
      if (!sum) return Error("concatenated dimension overflows");
      result[dim].size = *sum;
      result[dim].kind = MergeKinds(result[dim].kind, shape.dimension_kind(dim));
    }
    return MakeArray(first.element_type(), result);
  }

  absl::StatusOr<Shape> Dot() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0, "lhs"));
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(1, "rhs"));
    const Shape& lhs = Op(0);
    const Shape& rhs = Op(1);
    const DotDimensionNumbers dnums =
        instr_.attrs().dot_dimension_numbers.value_or(DotDimensionNumbers{});
    if (dnums.lhs_batch.size() != dnums.rhs_batch.size()) {
      return Error("lhs has ", dnums.lhs_batch.size(), " batch dims but rhs has ",
                   dnums.rhs_batch.size());
    }
    if (dnums.lhs_contracting.size() != dnums.rhs_contracting.size()) {
      return Error("lhs has ", dnums.lhs_contracting.size(), " contracting dims but rhs has ",
                   dnums.rhs_contracting.size());
    }
    std::vector<int64_t> lhs_all = dnums.lhs_batch;
    lhs_all.insert(lhs_all.end(), dnums.lhs_contracting.begin(), dnums.lhs_contracting.end());
    std::vector<int64_t> rhs_all = dnums.rhs_batch;
    rhs_all.insert(rhs_all.end(), dnums.rhs_contracting.begin(), dnums.rhs_contracting.end());
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(lhs_all, lhs.rank(), "lhs batch/contracting dims"));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(rhs_all, rhs.rank(), "rhs batch/contracting dims"));
    for (size_t i = 0; i < dnums.lhs_batch.size(); ++i) {
      const int64_t l = dnums.lhs_batch[i];
      const int64_t r = dnums.rhs_batch[i];
      if (lhs.dimensions(l) != rhs.dimensions(r)) {
        return Error("lhs batch dim ", l, " has size ", lhs.dimensions(l), " but rhs batch dim ", r,
                     " has size ", rhs.dimensions(r));
      }
    }
    for (size_t i = 0; i < dnums.lhs_contracting.size(); ++i) {
      const int64_t l = dnums.lhs_contracting[i];
      const int64_t r = dnums.rhs_contracting[i];
      if (lhs.dimensions(l) != rhs.dimensions(r)) {
        return Error("lhs contracting dim ", l, " has size ", lhs.dimensions(l),
                     " but rhs contracting dim ", r, " has size ", rhs.dimensions(r));
      }
    }
    SPMDCHECK_SI_ASSIGN_OR_RETURN(PrimitiveType type,
                                  ContractionResultType(lhs.element_type(), rhs.element_type()));
    std::vector<Dim> result;
    for (size_t i = 0; i < dnums.lhs_batch.size(); ++i) {
      Dim dim = DimOf(lhs, dnums.lhs_batch[i]);
      dim.kind = MergeKinds(dim.kind, rhs.dimension_kind(dnums.rhs_batch[i]));
      result.push_back(dim);
    }
    auto append_free = [&](const Shape& shape, absl::Span<const int64_t> used) {
      for (int64_t d = 0; d < shape.rank(); ++d) {
        if (std::find(used.begin(), used.end(), d) == used.end()) result.push_back(DimOf(shape, d));
      }
    };
    append_free(lhs, lhs_all);
    append_free(rhs, rhs_all);
    return MakeArray(type, result);
  }

  // XLA's window output size (InferWindowOutputShape): dilate the base, pad it, slide the
  // dilated window with the stride.
  absl::StatusOr<int64_t> WindowOutputSize(int64_t dim_index, int64_t base,
                                           const WindowDim& window) const {
    if (window.size <= 0) {
      return Error("window dim ", dim_index, " has non-positive size ", window.size);
    }
    if (window.stride <= 0) {
      return Error("window dim ", dim_index, " has non-positive stride ", window.stride);
    }
    if (window.lhs_dilation < 1) {
      return Error("window dim ", dim_index, " has base (lhs) dilation ", window.lhs_dilation,
                   " < 1");
    }
    if (window.rhs_dilation < 1) {
      return Error("window dim ", dim_index, " has window (rhs) dilation ", window.rhs_dilation,
                   " < 1");
    }
    std::optional<int64_t> dilated_base = 0;
    if (base > 0) {
      std::optional<int64_t> scaled = CheckedMul(base - 1, window.lhs_dilation);
      dilated_base = scaled ? CheckedAdd(*scaled, 1) : std::nullopt;
    }
    std::optional<int64_t> padded =
        dilated_base ? CheckedAdd(*dilated_base, window.pad_low) : std::nullopt;
    padded = padded ? CheckedAdd(*padded, window.pad_high) : std::nullopt;
    std::optional<int64_t> scaled_window = CheckedMul(window.size - 1, window.rhs_dilation);
    std::optional<int64_t> dilated_window =
        scaled_window ? CheckedAdd(*scaled_window, 1) : std::nullopt;
    if (!padded || !dilated_window) return Error("window dim ", dim_index, " overflows");
    if (*padded < 0) {
      return Error("window dim ", dim_index, ": padded base size ", *padded, " is negative");
    }
    if (*padded == 0 || *dilated_window > *padded) return int64_t{0};
    return (*padded - *dilated_window) / window.stride + 1;
  }

  absl::StatusOr<Shape> Convolution() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0, "lhs"));
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(1, "rhs"));
    const Shape& input = Op(0);
    const Shape& kernel = Op(1);
    if (!instr_.attrs().dim_labels) return Error("missing attribute dim_labels");
    const ConvolutionDimensionNumbers& dn = *instr_.attrs().dim_labels;
    const std::vector<WindowDim> window = instr_.attrs().window.value_or(std::vector<WindowDim>{});
    const int64_t fgc = instr_.attrs().feature_group_count.value_or(1);
    const int64_t bgc = instr_.attrs().batch_group_count.value_or(1);
    const int64_t spatial = static_cast<int64_t>(dn.input_spatial.size());
    if (static_cast<int64_t>(dn.kernel_spatial.size()) != spatial ||
        static_cast<int64_t>(dn.output_spatial.size()) != spatial) {
      return Error("dim_labels has ", spatial, " input, ", dn.kernel_spatial.size(), " kernel and ",
                   dn.output_spatial.size(), " output spatial dims");
    }
    if (input.rank() != spatial + 2) {
      return Error("input ", Str(input), " must have rank ", spatial + 2, " for dim_labels ",
                   DimLabelsToString(dn));
    }
    if (kernel.rank() != spatial + 2) {
      return Error("kernel ", Str(kernel), " must have rank ", spatial + 2, " for dim_labels ",
                   DimLabelsToString(dn));
    }
    std::vector<int64_t> input_dims = {dn.input_batch, dn.input_feature};
    input_dims.insert(input_dims.end(), dn.input_spatial.begin(), dn.input_spatial.end());
    std::vector<int64_t> kernel_dims = {dn.kernel_input_feature, dn.kernel_output_feature};
    kernel_dims.insert(kernel_dims.end(), dn.kernel_spatial.begin(), dn.kernel_spatial.end());
    std::vector<int64_t> output_dims = {dn.output_batch, dn.output_feature};
    output_dims.insert(output_dims.end(), dn.output_spatial.begin(), dn.output_spatial.end());
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(input_dims, spatial + 2, "input dim_labels"));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(kernel_dims, spatial + 2, "kernel dim_labels"));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(output_dims, spatial + 2, "output dim_labels"));
    if (static_cast<int64_t>(window.size()) != spatial) {
      return Error("window has ", window.size(), " dims but the convolution has ", spatial,
                   " spatial dims");
    }
    if (fgc <= 0) return Error("feature_group_count ", fgc, " must be positive");
    if (bgc <= 0) return Error("batch_group_count ", bgc, " must be positive");
    if (fgc > 1 && bgc > 1) {
      return Error("feature_group_count ", fgc, " and batch_group_count ", bgc,
                   " cannot both be > 1");
    }
    const int64_t input_batch = input.dimensions(dn.input_batch);
    const int64_t input_features = input.dimensions(dn.input_feature);
    const int64_t kernel_input_features = kernel.dimensions(dn.kernel_input_feature);
    const int64_t kernel_output_features = kernel.dimensions(dn.kernel_output_feature);
    if (input_features % fgc != 0) {
      return Error("input feature dim ", dn.input_feature, " has size ", input_features,
                   " which is not a multiple of feature_group_count ", fgc);
    }
    if (input_features / fgc != kernel_input_features) {
      return Error("input feature dim ", dn.input_feature, " has size ", input_features,
                   " but kernel input feature dim ", dn.kernel_input_feature, " has size ",
                   kernel_input_features, " (feature_group_count ", fgc, ")");
    }
    if (kernel_output_features % fgc != 0) {
      return Error("kernel output feature dim ", dn.kernel_output_feature, " has size ",
                   kernel_output_features, " which is not a multiple of feature_group_count ", fgc);
    }
    if (input_batch % bgc != 0) {
      return Error("input batch dim ", dn.input_batch, " has size ", input_batch,
                   " which is not a multiple of batch_group_count ", bgc);
    }
    if (kernel_output_features % bgc != 0) {
      return Error("kernel output feature dim ", dn.kernel_output_feature, " has size ",
                   kernel_output_features, " which is not a multiple of batch_group_count ", bgc);
    }
    SPMDCHECK_SI_ASSIGN_OR_RETURN(
        PrimitiveType type, ContractionResultType(input.element_type(), kernel.element_type()));
    std::vector<Dim> result(spatial + 2);
    result[dn.output_batch] = {input_batch / bgc, input.dimension_kind(dn.input_batch)};
    result[dn.output_feature] = {kernel_output_features, DimensionKind::kStatic};
    for (int64_t i = 0; i < spatial; ++i) {
      const int64_t kernel_size = kernel.dimensions(dn.kernel_spatial[i]);
      if (window[i].size != kernel_size) {
        return Error("window dim ", i, " has size ", window[i].size, " but kernel spatial dim ",
                     dn.kernel_spatial[i], " has size ", kernel_size);
      }
      SPMDCHECK_SI_ASSIGN_OR_RETURN(
          int64_t size, WindowOutputSize(i, input.dimensions(dn.input_spatial[i]), window[i]));
      result[dn.output_spatial[i]] = {size, input.dimension_kind(dn.input_spatial[i])};
    }
    return MakeArray(type, result);
  }

  absl::StatusOr<Shape> Gather() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0, "operand"));
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(1, "start_indices"));
    const Shape& operand = Op(0);
    const Shape& indices = Op(1);
    if (!IsIntegralType(indices.element_type())) {
      return Error("start_indices must be integral, got ", Str(indices));
    }
    if (!instr_.attrs().gather_dimension_numbers) {
      return Error("missing gather dimension numbers");
    }
    if (!instr_.attrs().gather_slice_sizes) return Error("missing attribute slice_sizes");
    const GatherDimensionNumbers& dn = *instr_.attrs().gather_dimension_numbers;
    const std::vector<int64_t>& slice_sizes = *instr_.attrs().gather_slice_sizes;
    const int64_t ivd = dn.index_vector_dim;
    if (ivd < 0 || ivd > indices.rank()) {
      return Error("index_vector_dim ", ivd, " is out of range [0, ", indices.rank(), "]");
    }
    const int64_t index_vector_size = ivd == indices.rank() ? 1 : indices.dimensions(ivd);
    if (index_vector_size != static_cast<int64_t>(dn.start_index_map.size())) {
      return Error("index vector has size ", index_vector_size, " but start_index_map has ",
                   dn.start_index_map.size(), " entries");
    }
    if (static_cast<int64_t>(slice_sizes.size()) != operand.rank()) {
      return Error("slice_sizes has ", slice_sizes.size(), " entries but the operand has rank ",
                   operand.rank());
    }
    SPMDCHECK_SI_RETURN_IF_ERROR(
        CheckDimList(dn.start_index_map, operand.rank(), "start_index_map"));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(dn.collapsed_slice_dims, operand.rank(),
                                              "collapsed_slice_dims", /*sorted=*/true));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(dn.operand_batching_dims, operand.rank(),
                                              "operand_batching_dims", /*sorted=*/true));
    for (int64_t d : dn.operand_batching_dims) {
      if (std::find(dn.collapsed_slice_dims.begin(), dn.collapsed_slice_dims.end(), d) !=
          dn.collapsed_slice_dims.end()) {
        return Error("dim ", d, " is both collapsed and a batching dim");
      }
    }
    const int64_t expanded_rank = std::max(indices.rank(), ivd + 1);
    SPMDCHECK_SI_RETURN_IF_ERROR(
        CheckDimList(dn.start_indices_batching_dims, expanded_rank, "start_indices_batching_dims"));
    if (dn.start_indices_batching_dims.size() != dn.operand_batching_dims.size()) {
      return Error("operand_batching_dims has ", dn.operand_batching_dims.size(),
                   " entries but start_indices_batching_dims has ",
                   dn.start_indices_batching_dims.size());
    }
    for (size_t i = 0; i < dn.start_indices_batching_dims.size(); ++i) {
      const int64_t d = dn.start_indices_batching_dims[i];
      if (d == ivd) return Error("start_indices_batching_dims contains index_vector_dim ", ivd);
      if (d < indices.rank() &&
          indices.dimensions(d) != operand.dimensions(dn.operand_batching_dims[i])) {
        return Error("start_indices batching dim ", d, " has size ", indices.dimensions(d),
                     " but operand batching dim ", dn.operand_batching_dims[i], " has size ",
                     operand.dimensions(dn.operand_batching_dims[i]));
      }
    }
    for (int64_t i = 0; i < operand.rank(); ++i) {
      if (slice_sizes[i] < 0 || slice_sizes[i] > operand.dimensions(i)) {
        return Error("slice size ", slice_sizes[i], " of dim ", i, " is out of range for operand ",
                     Str(operand));
      }
    }
    for (int64_t d : dn.collapsed_slice_dims) {
      if (slice_sizes[d] > 1) {
        return Error("collapsed slice dim ", d, " has slice size ", slice_sizes[d],
                     " (must be at most 1)");
      }
    }
    for (int64_t d : dn.operand_batching_dims) {
      if (slice_sizes[d] > 1) {
        return Error("operand batching dim ", d, " has slice size ", slice_sizes[d],
                     " (must be at most 1)");
      }
    }
    const size_t window_dims =
        dn.offset_dims.size() + dn.collapsed_slice_dims.size() + dn.operand_batching_dims.size();
    if (window_dims != slice_sizes.size()) {
      return Error("offset_dims (", dn.offset_dims.size(), ") + collapsed_slice_dims (",
                   dn.collapsed_slice_dims.size(), ") + operand_batching_dims (",
                   dn.operand_batching_dims.size(), ") must equal the operand rank ",
                   slice_sizes.size());
    }
    std::vector<Dim> batch_dims;
    for (int64_t d = 0; d < indices.rank(); ++d) {
      if (d != ivd) batch_dims.push_back(DimOf(indices, d));
    }
    const int64_t output_rank = static_cast<int64_t>(dn.offset_dims.size() + batch_dims.size());
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(dn.offset_dims, output_rank, "offset_dims",
                                              /*sorted=*/true));
    std::vector<Dim> result;
    size_t next_batch = 0;
    int64_t next_slice = 0;
    auto is_dropped = [&](int64_t d) {
      return std::find(dn.collapsed_slice_dims.begin(), dn.collapsed_slice_dims.end(), d) !=
                 dn.collapsed_slice_dims.end() ||
             std::find(dn.operand_batching_dims.begin(), dn.operand_batching_dims.end(), d) !=
                 dn.operand_batching_dims.end();
    };
    for (int64_t i = 0; i < output_rank; ++i) {
      if (std::find(dn.offset_dims.begin(), dn.offset_dims.end(), i) != dn.offset_dims.end()) {
        while (next_slice < operand.rank() && is_dropped(next_slice)) ++next_slice;
        if (next_slice >= operand.rank()) return Error("offset_dims do not match slice_sizes");
        result.push_back({slice_sizes[next_slice], DimensionKind::kStatic});
        ++next_slice;
      } else {
        if (next_batch >= batch_dims.size()) return Error("offset_dims do not fit the result");
        result.push_back(batch_dims[next_batch++]);
      }
    }
    return MakeArray(operand.element_type(), result);
  }

  absl::StatusOr<Shape> Scatter() const {
    const int64_t n = OperandCount();
    if (n % 2 == 0) {
      return Error("expects an odd number of operands (N inputs, indices, N updates), got ", n);
    }
    const int64_t num_inputs = (n - 1) / 2;
    const int64_t indices_index = num_inputs;
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectSameDims(0, num_inputs, "scatter inputs"));
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(indices_index, "scatter_indices"));
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectSameDims(num_inputs + 1, n, "scatter updates"));
    const Shape& operand = Op(0);
    const Shape& indices = Op(indices_index);
    const Shape& updates = Op(num_inputs + 1);
    if (!IsIntegralType(indices.element_type())) {
      return Error("scatter_indices must be integral, got ", Str(indices));
    }
    for (int64_t i = 0; i < num_inputs; ++i) {
      if (Op(i).element_type() != Op(num_inputs + 1 + i).element_type()) {
        return Error("updates ", i, " ", Str(Op(num_inputs + 1 + i)),
                     " must have the element type of input ", i, " ", Str(Op(i)));
      }
    }
    if (!instr_.attrs().scatter_dimension_numbers) {
      return Error("missing scatter dimension numbers");
    }
    const ScatterDimensionNumbers& dn = *instr_.attrs().scatter_dimension_numbers;
    const int64_t ivd = dn.index_vector_dim;
    if (ivd < 0 || ivd > indices.rank()) {
      return Error("index_vector_dim ", ivd, " is out of range [0, ", indices.rank(), "]");
    }
    const int64_t index_vector_size = ivd == indices.rank() ? 1 : indices.dimensions(ivd);
    if (index_vector_size != static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size())) {
      return Error("index vector has size ", index_vector_size,
                   " but scatter_dims_to_operand_dims has ", dn.scatter_dims_to_operand_dims.size(),
                   " entries");
    }
    SPMDCHECK_SI_RETURN_IF_ERROR(
        CheckDimList(dn.update_window_dims, updates.rank(), "update_window_dims", /*sorted=*/true));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(dn.inserted_window_dims, operand.rank(),
                                              "inserted_window_dims", /*sorted=*/true));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(dn.input_batching_dims, operand.rank(),
                                              "input_batching_dims", /*sorted=*/true));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(dn.scatter_dims_to_operand_dims, operand.rank(),
                                              "scatter_dims_to_operand_dims"));
    auto contains = [](const std::vector<int64_t>& list, int64_t d) {
      return std::find(list.begin(), list.end(), d) != list.end();
    };
    for (int64_t d : dn.input_batching_dims) {
      if (contains(dn.inserted_window_dims, d)) {
        return Error("dim ", d, " is both an inserted window dim and a batching dim");
      }
    }
    const int64_t expanded_rank = std::max(indices.rank(), ivd + 1);
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(dn.scatter_indices_batching_dims, expanded_rank,
                                              "scatter_indices_batching_dims"));
    if (dn.scatter_indices_batching_dims.size() != dn.input_batching_dims.size()) {
      return Error("input_batching_dims has ", dn.input_batching_dims.size(),
                   " entries but scatter_indices_batching_dims has ",
                   dn.scatter_indices_batching_dims.size());
    }
    if (contains(dn.scatter_indices_batching_dims, ivd)) {
      return Error("scatter_indices_batching_dims contains index_vector_dim ", ivd);
    }
    const size_t window_size = dn.update_window_dims.size() + dn.inserted_window_dims.size() +
                               dn.input_batching_dims.size();
    if (static_cast<int64_t>(window_size) != operand.rank()) {
      return Error("update_window_dims (", dn.update_window_dims.size(),
                   ") + inserted_window_dims (", dn.inserted_window_dims.size(),
                   ") + input_batching_dims (", dn.input_batching_dims.size(),
                   ") must equal the operand rank ", operand.rank());
    }
    const int64_t scatter_dims = expanded_rank - 1;
    const int64_t expected_updates_rank =
        static_cast<int64_t>(dn.update_window_dims.size()) + scatter_dims;
    if (updates.rank() != expected_updates_rank) {
      return Error("updates ", Str(updates), " must have rank ", expected_updates_rank,
                   " (update_window_dims + scatter dims)");
    }
    // Window dims of the updates fit into the operand dims that are not inserted/batching.
    int64_t operand_dim = 0;
    for (int64_t update_dim : dn.update_window_dims) {
      while (operand_dim < operand.rank() && (contains(dn.inserted_window_dims, operand_dim) ||
                                              contains(dn.input_batching_dims, operand_dim))) {
        ++operand_dim;
      }
      if (operand_dim >= operand.rank()) return Error("update_window_dims do not fit the operand");
      if (updates.dimensions(update_dim) > operand.dimensions(operand_dim)) {
        return Error("updates window dim ", update_dim, " has size ",
                     updates.dimensions(update_dim), " which exceeds operand dim ", operand_dim,
                     " of size ", operand.dimensions(operand_dim));
      }
      ++operand_dim;
    }
    // Scatter dims of the updates match the index dims other than the index vector dim.
    std::vector<int64_t> index_batch_dims;
    for (int64_t d = 0; d < indices.rank(); ++d) {
      if (d != ivd) index_batch_dims.push_back(indices.dimensions(d));
    }
    size_t next = 0;
    for (int64_t d = 0; d < updates.rank(); ++d) {
      if (contains(dn.update_window_dims, d)) continue;
      if (next < index_batch_dims.size() && updates.dimensions(d) != index_batch_dims[next]) {
        return Error("updates scatter dim ", d, " has size ", updates.dimensions(d),
                     " but the matching scatter_indices dim has size ", index_batch_dims[next]);
      }
      ++next;
    }
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckReducer(num_inputs));
    if (num_inputs == 1) return Op(0);
    std::vector<Shape> elements;
    for (int64_t i = 0; i < num_inputs; ++i) elements.push_back(Op(i));
    return Shape::Tuple(std::move(elements));
  }

  absl::StatusOr<Shape> GetTupleElement() const {
    if (!Op(0).IsTuple()) return Error("operand must be a tuple, got ", Str(Op(0)));
    if (!instr_.attrs().tuple_index) return Error("missing attribute index");
    const int64_t index = *instr_.attrs().tuple_index;
    if (index < 0 || index >= Op(0).tuple_size()) {
      return Error("index ", index, " is out of range for ", Str(Op(0)));
    }
    return Op(0).tuple_shapes()[index];
  }

  // Element `index` of operand 0, which must be a tuple (async done ops).
  absl::StatusOr<Shape> TupleElementOfOperand(int64_t index) const {
    if (!Op(0).IsTuple() || Op(0).tuple_size() <= index) {
      return Error("operand must be a tuple with at least ", index + 1, " elements, got ",
                   Str(Op(0)));
    }
    return Op(0).tuple_shapes()[index];
  }

  absl::StatusOr<Shape> Pad() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0));
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectScalar(1, "padding value"));
    const Shape& operand = Op(0);
    if (Op(1).element_type() != operand.element_type()) {
      return Error("padding value ", Str(Op(1)), " must have the element type of the operand ",
                   Str(operand));
    }
    if (!instr_.attrs().padding) return Error("missing attribute padding");
    const std::vector<PadDim>& padding = *instr_.attrs().padding;
    if (static_cast<int64_t>(padding.size()) != operand.rank()) {
      return Error("padding has ", padding.size(), " dims but the operand has rank ",
                   operand.rank());
    }
    std::vector<Dim> result;
    for (int64_t i = 0; i < operand.rank(); ++i) {
      const PadDim& pad = padding[i];
      if (pad.interior < 0)
        return Error("dim ", i, " has negative interior padding ", pad.interior);
      const int64_t n = operand.dimensions(i);
      std::optional<int64_t> size = CheckedAdd(pad.low, pad.high);
      size = size ? CheckedAdd(*size, n) : std::nullopt;
      std::optional<int64_t> interior = CheckedMul(std::max<int64_t>(n - 1, 0), pad.interior);
      size = size && interior ? CheckedAdd(*size, *interior) : std::nullopt;
      if (!size) return Error("padded size of dim ", i, " overflows");
      if (*size < 0) return Error("padding makes dim ", i, " negative (", *size, ")");
      result.push_back({*size, operand.dimension_kind(i)});
    }
    return MakeArray(operand.element_type(), result);
  }

  absl::StatusOr<Shape> Reduce() const {
    const int64_t n = OperandCount();
    if (n % 2 != 0) return Error("expects an even number of operands (N inputs, N inits), got ", n);
    const int64_t num_inputs = n / 2;
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectSameDims(0, num_inputs, "reduce inputs"));
    for (int64_t i = num_inputs; i < n; ++i) {
      SPMDCHECK_SI_RETURN_IF_ERROR(ExpectScalar(i, absl::StrCat("init value ", i - num_inputs)));
    }
    const Shape& input = Op(0);
    SPMDCHECK_SI_ASSIGN_OR_RETURN(std::vector<int64_t> dims, RequiredDimensions());
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(dims, input.rank(), "dimensions"));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckReducer(num_inputs));
    std::vector<Shape> results;
    for (int64_t i = 0; i < num_inputs; ++i) {
      const Shape& in = Op(i);
      std::vector<Dim> kept;
      for (int64_t d = 0; d < in.rank(); ++d) {
        if (std::find(dims.begin(), dims.end(), d) == dims.end()) kept.push_back(DimOf(in, d));
      }
      results.push_back(MakeArray(Op(num_inputs + i).element_type(), kept));
    }
    if (num_inputs == 1) return results[0];
    return Shape::Tuple(std::move(results));
  }

  absl::StatusOr<std::vector<Dim>> WindowedDims(const Shape& base) const {
    if (!instr_.attrs().window) return Error("missing attribute window");
    const std::vector<WindowDim>& window = *instr_.attrs().window;
    if (static_cast<int64_t>(window.size()) != base.rank()) {
      return Error("window has ", window.size(), " dims but the operand ", Str(base), " has rank ",
                   base.rank());
    }
    std::vector<Dim> dims;
    for (int64_t i = 0; i < base.rank(); ++i) {
      SPMDCHECK_SI_ASSIGN_OR_RETURN(int64_t size,
                                    WindowOutputSize(i, base.dimensions(i), window[i]));
      dims.push_back({size, base.dimension_kind(i)});
    }
    return dims;
  }

  absl::StatusOr<Shape> ReduceWindow() const {
    const int64_t n = OperandCount();
    if (n % 2 != 0) return Error("expects an even number of operands (N inputs, N inits), got ", n);
    const int64_t num_inputs = n / 2;
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectSameDims(0, num_inputs, "reduce-window inputs"));
    for (int64_t i = num_inputs; i < n; ++i) {
      SPMDCHECK_SI_RETURN_IF_ERROR(ExpectScalar(i, absl::StrCat("init value ", i - num_inputs)));
    }
    SPMDCHECK_SI_ASSIGN_OR_RETURN(std::vector<Dim> dims, WindowedDims(Op(0)));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckReducer(num_inputs));
    std::vector<Shape> results;
    for (int64_t i = 0; i < num_inputs; ++i) {
      results.push_back(MakeArray(Op(num_inputs + i).element_type(), dims));
    }
    if (num_inputs == 1) return results[0];
    return Shape::Tuple(std::move(results));
  }

  absl::StatusOr<Shape> SelectAndScatter() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0, "operand"));
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(1, "source"));
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectScalar(2, "init value"));
    const Shape& operand = Op(0);
    const Shape& source = Op(1);
    if (source.element_type() != operand.element_type() ||
        Op(2).element_type() != operand.element_type()) {
      return Error("source ", Str(source), " and init value ", Str(Op(2)),
                   " must have the element type of the operand ", Str(operand));
    }
    SPMDCHECK_SI_ASSIGN_OR_RETURN(std::vector<Dim> window_dims, WindowedDims(operand));
    std::vector<int64_t> sizes;
    sizes.reserve(window_dims.size());
    for (const Dim& dim : window_dims) sizes.push_back(dim.size);
    if (source.dimensions() != sizes) {
      return Error("source ", Str(source), " must have the window output dims ", DimsStr(sizes));
    }
    const HloComputation* select = Called("select");
    const HloComputation* scatter = Called("scatter");
    if (select == nullptr) return Error("missing attribute select");
    if (scatter == nullptr) return Error("missing attribute scatter");
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterCount(select, "select", 2));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterCount(scatter, "scatter", 2));
    if (Usable(select) &&
        !select->root()->shape().Compatible(Shape::Scalar(PrimitiveType::kPred))) {
      return Error("select computation ", select->name(), " must return pred[], got ",
                   Str(select->root()->shape()));
    }
    return operand;
  }

  absl::StatusOr<Shape> Reverse() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0));
    SPMDCHECK_SI_ASSIGN_OR_RETURN(std::vector<int64_t> dims, RequiredDimensions());
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(dims, Op(0).rank(), "dimensions"));
    return Op(0);
  }

  absl::StatusOr<Shape> Transpose() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0));
    const Shape& operand = Op(0);
    SPMDCHECK_SI_ASSIGN_OR_RETURN(std::vector<int64_t> perm, RequiredDimensions());
    if (static_cast<int64_t>(perm.size()) != operand.rank()) {
      return Error("dimensions ", DimsStr(perm), " is not a permutation of the operand's ",
                   operand.rank(), " dims");
    }
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckDimList(perm, operand.rank(), "dimensions"));
    std::vector<Dim> result;
    result.reserve(perm.size());
    for (int64_t d : perm) result.push_back(DimOf(operand, d));
    return MakeArray(operand.element_type(), result);
  }

  absl::StatusOr<Shape> Slice() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0));
    const Shape& operand = Op(0);
    if (!instr_.attrs().slice) return Error("missing attribute slice");
    const std::vector<SliceDim>& slice = *instr_.attrs().slice;
    if (static_cast<int64_t>(slice.size()) != operand.rank()) {
      return Error("slice has ", slice.size(), " dims but the operand has rank ", operand.rank());
    }
    std::vector<Dim> result;
    for (int64_t i = 0; i < operand.rank(); ++i) {
      const SliceDim& s = slice[i];
      if (s.stride <= 0) return Error("dim ", i, " has non-positive stride ", s.stride);
      if (s.start < 0 || s.start > s.limit || s.limit > operand.dimensions(i)) {
        return Error("dim ", i, " slice [", s.start, ":", s.limit, "] is out of range for size ",
                     operand.dimensions(i));
      }
      const int64_t extent = s.limit - s.start;
      result.push_back(
          {extent / s.stride + (extent % s.stride != 0 ? 1 : 0), DimensionKind::kStatic});
    }
    return MakeArray(operand.element_type(), result);
  }

  // Start-index operands from `first` on: one scalar integer per dim, or one rank-1 integer
  // array of `rank` elements (the old form).
  absl::Status CheckStartIndices(int64_t first, int64_t rank) const {
    const int64_t count = OperandCount() - first;
    if (count == 1 && Op(first).IsArray() && Op(first).rank() == 1 && rank != 1) {
      if (Op(first).dimensions(0) != rank) {
        return Error("start index vector ", Str(Op(first)), " must have ", rank, " elements");
      }
      if (!IsIntegralType(Op(first).element_type())) {
        return Error("start indices must be integral, got ", Str(Op(first)));
      }
      return absl::OkStatus();
    }
    if (count != rank) {
      return Error("expects ", rank, " start index operands (one per operand dim) but has ", count);
    }
    for (int64_t i = first; i < OperandCount(); ++i) {
      const Shape& index = Op(i);
      const bool scalar_ok = index.IsScalar() || (index.IsArray() && index.rank() == 1 &&
                                                  index.dimensions(0) == 1 && rank == 1);
      if (!scalar_ok || !IsIntegralType(index.element_type())) {
        return Error("start index operand ", i, " must be an integral scalar, got ", Str(index));
      }
      if (index.element_type() != Op(first).element_type()) {
        return Error("start index operands must have the same type, got ", Str(Op(first)), " and ",
                     Str(index));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Shape> DynamicSlice() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0));
    const Shape& operand = Op(0);
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckStartIndices(1, operand.rank()));
    if (!instr_.attrs().dynamic_slice_sizes) {
      return Error("missing attribute dynamic_slice_sizes");
    }
    const std::vector<int64_t>& sizes = *instr_.attrs().dynamic_slice_sizes;
    if (static_cast<int64_t>(sizes.size()) != operand.rank()) {
      return Error("dynamic_slice_sizes has ", sizes.size(), " entries but the operand has rank ",
                   operand.rank());
    }
    std::vector<Dim> result;
    for (int64_t i = 0; i < operand.rank(); ++i) {
      if (sizes[i] < 0 || sizes[i] > operand.dimensions(i)) {
        return Error("slice size ", sizes[i], " of dim ", i, " is out of range for operand ",
                     Str(operand));
      }
      result.push_back({sizes[i], DimensionKind::kStatic});
    }
    return MakeArray(operand.element_type(), result);
  }

  absl::StatusOr<Shape> DynamicUpdateSlice() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0, "operand"));
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(1, "update"));
    const Shape& operand = Op(0);
    const Shape& update = Op(1);
    if (update.element_type() != operand.element_type()) {
      return Error("update ", Str(update), " must have the element type of the operand ",
                   Str(operand));
    }
    if (update.rank() != operand.rank()) {
      return Error("update ", Str(update), " must have the rank of the operand ", Str(operand));
    }
    for (int64_t i = 0; i < operand.rank(); ++i) {
      if (update.dimensions(i) > operand.dimensions(i)) {
        return Error("update dim ", i, " has size ", update.dimensions(i),
                     " which exceeds the operand's ", operand.dimensions(i));
      }
    }
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckStartIndices(2, operand.rank()));
    return operand;
  }

  absl::StatusOr<Shape> Sort() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectSameDims(0, OperandCount(), "sort operands"));
    SPMDCHECK_SI_RETURN_IF_ERROR(SingleDimension(Op(0).rank()).status());
    const HloComputation* comparator = Called("to_apply");
    if (comparator == nullptr) return Error("missing attribute to_apply");
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterCount(comparator, "to_apply", 2 * OperandCount()));
    if (Usable(comparator) &&
        !comparator->root()->shape().Compatible(Shape::Scalar(PrimitiveType::kPred))) {
      return Error("comparator ", comparator->name(), " must return pred[], got ",
                   Str(comparator->root()->shape()));
    }
    return SameAsOperands(/*arrays_only=*/true);
  }

  absl::StatusOr<Shape> Map() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectSameDims(0, OperandCount(), "map operands"));
    const HloComputation* mapped = Called("to_apply");
    if (mapped == nullptr) return Error("missing attribute to_apply");
    if (!Usable(mapped)) return NotInferable("to_apply computation is opaque");
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterCount(mapped, "to_apply", OperandCount()));
    const Shape& root = mapped->root()->shape();
    if (!root.IsScalar()) {
      return Error("to_apply computation ", mapped->name(), " must return a scalar, got ",
                   Str(root));
    }
    Shape result = Op(0);
    result.set_element_type(root.element_type());
    return result;
  }

  // Operand i must match parameter i of `computation`; returns the root shape.
  absl::StatusOr<Shape> CallLike(absl::string_view role) const {
    const HloComputation* callee = Called(role);
    if (callee == nullptr) return Error("missing attribute ", role);
    if (!Usable(callee)) return NotInferable(role, " computation is opaque");
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterCount(callee, role, OperandCount()));
    for (int64_t i = 0; i < OperandCount(); ++i) {
      SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterShape(callee, role, i, Op(i)));
    }
    return callee->root()->shape();
  }

  absl::StatusOr<Shape> Call() const { return CallLike("to_apply"); }
  absl::StatusOr<Shape> Fusion() const { return CallLike("calls"); }

  absl::StatusOr<Shape> While() const {
    const HloComputation* condition = Called("condition");
    const HloComputation* body = Called("body");
    if (condition == nullptr) return Error("missing attribute condition");
    if (body == nullptr) return Error("missing attribute body");
    const Shape& init = Op(0);
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterCount(condition, "condition", 1));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterCount(body, "body", 1));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterShape(condition, "condition", 0, init));
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterShape(body, "body", 0, init));
    if (Usable(condition) &&
        !condition->root()->shape().Compatible(Shape::Scalar(PrimitiveType::kPred))) {
      return Error("condition computation ", condition->name(), " must return pred[], got ",
                   Str(condition->root()->shape()));
    }
    if (Usable(body) && !body->root()->shape().Compatible(init)) {
      return Error("body computation ", body->name(), " returns ", Str(body->root()->shape()),
                   " but the loop state is ", Str(init));
    }
    return init;
  }

  absl::StatusOr<Shape> Conditional() const {
    std::vector<const HloComputation*> branches;
    const CalledComputations* list = nullptr;
    for (const CalledComputations& called : instr_.called()) {
      if (called.role == "branch_computations") list = &called;
    }
    const Shape& selector = Op(0);
    if (list != nullptr) {
      branches.assign(list->computations.begin(), list->computations.end());
      if (!selector.Compatible(Shape::Scalar(PrimitiveType::kS32))) {
        return Error("branch index operand must be s32[], got ", Str(selector));
      }
      if (branches.empty()) return Error("branch_computations is empty");
    } else {
      const HloComputation* on_true = Called("true_computation");
      const HloComputation* on_false = Called("false_computation");
      if (on_true == nullptr || on_false == nullptr) {
        return Error("needs true_computation and false_computation, or branch_computations");
      }
      if (!selector.Compatible(Shape::Scalar(PrimitiveType::kPred))) {
        return Error("predicate operand must be pred[], got ", Str(selector));
      }
      branches = {on_true, on_false};
    }
    if (OperandCount() != static_cast<int64_t>(branches.size()) + 1) {
      return Error("has ", branches.size(), " branches so expects ", branches.size() + 1,
                   " operands but has ", OperandCount());
    }
    std::optional<Shape> result;
    for (size_t b = 0; b < branches.size(); ++b) {
      const HloComputation* branch = branches[b];
      if (branch == nullptr) return Error("branch ", b, " computation is missing");
      const std::string role = absl::StrCat("branch ", b);
      SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterCount(branch, role, 1));
      SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterShape(branch, role, 0, Op(b + 1)));
      if (!Usable(branch)) continue;
      const Shape& root = branch->root()->shape();
      if (!result) {
        result = root;
      } else if (!result->Compatible(root)) {
        return Error("branch ", b, " returns ", Str(root), " but an earlier branch returns ",
                     Str(*result));
      }
    }
    if (!result) return NotInferable("all branch computations are opaque");
    return *result;
  }

  absl::StatusOr<Shape> SetDimensionSize() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0));
    if (!Op(1).Compatible(Shape::Scalar(PrimitiveType::kS32))) {
      return Error("size operand must be s32[], got ", Str(Op(1)));
    }
    SPMDCHECK_SI_ASSIGN_OR_RETURN(int64_t dim, SingleDimension(Op(0).rank()));
    Shape result = Op(0);
    result.set_dimension_kind(dim, DimensionKind::kBoundedDynamic);
    return result;
  }

  // One operand: its shape; several: the tuple of their shapes.
  absl::StatusOr<Shape> SameAsOperands(bool arrays_only) const {
    if (arrays_only) {
      for (int64_t i = 0; i < OperandCount(); ++i) SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(i));
    }
    if (OperandCount() == 1) return Op(0);
    std::vector<Shape> elements;
    for (int64_t i = 0; i < OperandCount(); ++i) elements.push_back(Op(i));
    return Shape::Tuple(std::move(elements));
  }

  // ---- Collectives ---------------------------------------------------------------------------

  // Participant count of all-gather / reduce-scatter / all-to-all (XLA's GetSubgroupSize);
  // nullopt when it is unknown (counts <= 0, illegal group mode).
  std::optional<int64_t> ParticipantCount() const {
    std::optional<GroupMode> mode = GroupModeOf(instr_);
    if (!mode) return std::nullopt;
    const ReplicaGroups groups = instr_.attrs().replica_groups.value_or(ReplicaGroups());
    const std::optional<int64_t> replicas =
        replica_count_ > 0 ? std::optional<int64_t>(replica_count_) : std::nullopt;
    const std::optional<int64_t> partitions =
        num_partitions_ > 0 ? std::optional<int64_t>(num_partitions_) : std::nullopt;
    std::optional<int64_t> first =
        groups.empty() ? std::nullopt : std::optional<int64_t>(groups.first_group_size());
    if (first && *first <= 0) return std::nullopt;
    switch (*mode) {
      case GroupMode::kCrossReplica:
        return first ? first : replicas;
      case GroupMode::kCrossReplicaAndPartition: {
        std::optional<int64_t> base = first ? first : replicas;
        if (!base || !partitions) return std::nullopt;
        return CheckedMul(*base, *partitions);
      }
      case GroupMode::kFlattenedId:
        return first;
      case GroupMode::kCrossPartition:
        return first ? first : partitions;
    }
    return std::nullopt;
  }

  // The gather/scatter dimension of all-gather / reduce-scatter, checked against every operand.
  absl::StatusOr<int64_t> CollectiveDimension() const {
    for (int64_t i = 0; i < OperandCount(); ++i) SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(i));
    SPMDCHECK_SI_ASSIGN_OR_RETURN(std::vector<int64_t> dims, RequiredDimensions());
    if (dims.size() != 1) {
      return Error("dimensions must have exactly one entry, got ", DimsStr(dims));
    }
    const int64_t dim = dims[0];
    for (int64_t i = 0; i < OperandCount(); ++i) {
      if (dim < 0 || dim >= Op(i).rank()) {
        return Error("dimension ", dim, " is out of range for operand ", i, " ", Str(Op(i)));
      }
    }
    return dim;
  }

  absl::StatusOr<Shape> AllGather() const {
    SPMDCHECK_SI_ASSIGN_OR_RETURN(int64_t dim, CollectiveDimension());
    std::optional<int64_t> count = ParticipantCount();
    if (!count) return NotInferable("the participant count is unknown");
    std::vector<Shape> results;
    for (int64_t i = 0; i < OperandCount(); ++i) {
      Shape result = Op(i);
      std::optional<int64_t> size = CheckedMul(result.dimensions(dim), *count);
      if (!size) return Error("gathered dimension overflows");
      result.set_dimensions(dim, *size);
      results.push_back(std::move(result));
    }
    if (results.size() == 1) return results[0];
    return Shape::Tuple(std::move(results));
  }

  absl::StatusOr<Shape> AllGatherStart() const {
    SPMDCHECK_SI_ASSIGN_OR_RETURN(Shape gathered, AllGather());
    SPMDCHECK_SI_ASSIGN_OR_RETURN(Shape input, SameAsOperands(/*arrays_only=*/true));
    return Shape::Tuple({std::move(input), std::move(gathered)});
  }

  absl::StatusOr<Shape> ReduceScatter() const {
    SPMDCHECK_SI_ASSIGN_OR_RETURN(int64_t dim, CollectiveDimension());
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckReducer(1));
    std::optional<int64_t> count = ParticipantCount();
    if (!count) return NotInferable("the participant count is unknown");
    std::vector<Shape> results;
    for (int64_t i = 0; i < OperandCount(); ++i) {
      Shape result = Op(i);
      if (result.dimensions(dim) % *count != 0) {
        return Error("operand ", i, " dim ", dim, " has size ", result.dimensions(dim),
                     " which is not divisible by the ", *count, " participants");
      }
      result.set_dimensions(dim, result.dimensions(dim) / *count);
      results.push_back(std::move(result));
    }
    if (results.size() == 1) return results[0];
    return Shape::Tuple(std::move(results));
  }

  absl::StatusOr<Shape> AllToAll() const {
    for (int64_t i = 0; i < OperandCount(); ++i) SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(i));
    const std::optional<std::vector<int64_t>>& dims = instr_.attrs().dimensions;
    std::optional<int64_t> count = ParticipantCount();
    if (dims && !dims->empty()) {
      if (dims->size() != 1) {
        return Error("dimensions must have at most one entry, got ", DimsStr(*dims));
      }
      if (OperandCount() != 1) {
        return Error("the array form (with dimensions) expects 1 operand but has ", OperandCount());
      }
      const int64_t dim = (*dims)[0];
      if (dim < 0 || dim >= Op(0).rank()) {
        return Error("split dimension ", dim, " is out of range for ", Str(Op(0)));
      }
      if (count && *count > 0 && Op(0).dimensions(dim) % *count != 0) {
        return Error("split dimension ", dim, " of size ", Op(0).dimensions(dim),
                     " is not divisible by the ", *count, " participants");
      }
      return Op(0);
    }
    if (count && *count > 1 && OperandCount() != *count) {
      return Error("the tuple form expects one operand per participant (", *count, ") but has ",
                   OperandCount());
    }
    std::vector<Shape> elements;
    for (int64_t i = 0; i < OperandCount(); ++i) elements.push_back(Op(i));
    return Shape::Tuple(std::move(elements));
  }

  // The 4-operand in-place collective-permute: (input, output, input offsets, output offsets).
  bool IsInPlacePermute() const {
    return OperandCount() == 4 &&
           (instr_.FindRawAttribute("slice_sizes") != nullptr || Op(2).IsTuple());
  }

  absl::StatusOr<Shape> CollectivePermute() const {
    if (OperandCount() == 1) return Op(0);
    if (IsInPlacePermute()) return Op(1);
    return SameAsOperands(/*arrays_only=*/false);
  }

  absl::StatusOr<Shape> CollectivePermuteStart() const {
    std::vector<Shape> elements;
    if (OperandCount() == 1) {
      elements = {Op(0), Op(0)};
    } else if (IsInPlacePermute()) {
      elements = {Op(0), Op(1)};
    } else {
      return NotInferable("combined collective-permute-start is not supported");
    }
    // Context elements (u32[] by default) follow; XLA takes them from the written shape.
    const Shape& written = instr_.shape();
    if (written.IsTuple() && written.tuple_size() >= 2) {
      for (int64_t i = 2; i < written.tuple_size(); ++i) {
        elements.push_back(written.tuple_shapes()[i]);
      }
    } else {
      elements.push_back(Shape::Scalar(PrimitiveType::kU32));
      elements.push_back(Shape::Scalar(PrimitiveType::kU32));
    }
    return Shape::Tuple(std::move(elements));
  }

  absl::StatusOr<Shape> AsyncStart() const {
    const HloComputation* wrapped = Called("calls");
    if (wrapped == nullptr) {
      std::vector<HloComputation*> all = instr_.AllCalledComputations();
      if (all.size() == 1) wrapped = all[0];
    }
    if (wrapped == nullptr) return Error("missing attribute calls");
    if (!Usable(wrapped)) return NotInferable("the wrapped computation is opaque");
    SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterCount(wrapped, "calls", OperandCount()));
    std::vector<Shape> operands;
    for (int64_t i = 0; i < OperandCount(); ++i) {
      SPMDCHECK_SI_RETURN_IF_ERROR(CheckParameterShape(wrapped, "calls", i, Op(i)));
      operands.push_back(Op(i));
    }
    std::vector<Shape> elements = {Shape::Tuple(std::move(operands)), wrapped->root()->shape()};
    // Further elements hold backend state; XLA takes them from the written shape.
    const Shape& written = instr_.shape();
    if (written.IsTuple()) {
      for (int64_t i = 2; i < written.tuple_size(); ++i) {
        elements.push_back(written.tuple_shapes()[i]);
      }
    }
    return Shape::Tuple(std::move(elements));
  }

  // ---- Linear algebra and friends ------------------------------------------------------------

  absl::StatusOr<Shape> Cholesky() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0));
    const Shape& a = Op(0);
    if (!IsFloatingType(a.element_type()) && !IsComplexType(a.element_type())) {
      return Error("expects a floating-point or complex operand, got ", Str(a));
    }
    if (a.rank() < 2) return Error("operand ", Str(a), " must have rank >= 2");
    if (a.dimensions(a.rank() - 1) != a.dimensions(a.rank() - 2)) {
      return Error("operand ", Str(a), " must be square in its two minor dims");
    }
    return a;
  }

  absl::StatusOr<Shape> TriangularSolve() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0, "a"));
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(1, "b"));
    const Shape& a = Op(0);
    const Shape& b = Op(1);
    if (a.element_type() != b.element_type()) {
      return Error("a ", Str(a), " and b ", Str(b), " must have the same element type");
    }
    if (a.rank() < 2 || a.rank() != b.rank()) {
      return Error("a ", Str(a), " and b ", Str(b), " must have the same rank >= 2");
    }
    const int64_t rank = a.rank();
    if (a.dimensions(rank - 1) != a.dimensions(rank - 2)) {
      return Error("a ", Str(a), " must be square in its two minor dims");
    }
    for (int64_t i = 0; i < rank - 2; ++i) {
      if (a.dimensions(i) != b.dimensions(i)) {
        return Error("a ", Str(a), " and b ", Str(b), " must have the same batch dims");
      }
    }
    const RawAttribute* left_side = instr_.FindRawAttribute("left_side");
    const bool left = left_side != nullptr && left_side->text == "true";
    const int64_t b_dim = left ? rank - 2 : rank - 1;
    if (b.dimensions(b_dim) != a.dimensions(rank - 1)) {
      return Error("b dim ", b_dim, " has size ", b.dimensions(b_dim), " but a is ",
                   a.dimensions(rank - 1), "x", a.dimensions(rank - 1));
    }
    return b;
  }

  absl::StatusOr<Shape> BatchNorm() const {
    for (int64_t i = 0; i < OperandCount(); ++i) SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(i));
    const Shape& operand = Op(0);
    const Shape& scale = Op(1);
    if (!IsFloatingType(operand.element_type())) {
      return Error("operand ", Str(operand), " must be floating-point");
    }
    for (int64_t i = 1; i < OperandCount(); ++i) {
      const bool is_grad_output = instr_.opcode() == HloOpcode::kBatchNormGrad && i == 4;
      const Shape& shape = Op(i);
      if (is_grad_output) {
        if (!shape.Compatible(operand)) {
          return Error("grad_output ", Str(shape), " must have the operand's shape ", Str(operand));
        }
        continue;
      }
      if (shape.rank() != 1 || !SameDims(shape, scale) ||
          shape.element_type() != operand.element_type()) {
        return Error("operand ", i, " ", Str(shape),
                     " must be a rank-1 array like the scale operand ", Str(scale));
      }
    }
    const RawAttribute* feature_index = instr_.FindRawAttribute("feature_index");
    int64_t feature = -1;
    if (feature_index != nullptr && absl::SimpleAtoi(feature_index->text, &feature)) {
      if (feature < 0 || feature >= operand.rank()) {
        return Error("feature_index ", feature, " is out of range for ", Str(operand));
      }
      if (scale.dimensions(0) != operand.dimensions(feature)) {
        return Error("scale ", Str(scale), " must have the size of feature dim ", feature, " of ",
                     Str(operand));
      }
    }
    if (instr_.opcode() == HloOpcode::kBatchNormInference) return operand;
    return Shape::Tuple({operand, scale, scale});
  }

  absl::StatusOr<Shape> TopK() const {
    SPMDCHECK_SI_RETURN_IF_ERROR(ExpectArray(0));
    const Shape& operand = Op(0);
    if (operand.rank() < 1) return Error("operand ", Str(operand), " must have rank >= 1");
    const RawAttribute* k_attr = instr_.FindRawAttribute("k");
    int64_t k = 0;
    if (k_attr == nullptr || !absl::SimpleAtoi(k_attr->text, &k)) {
      return NotInferable("needs the k attribute");
    }
    if (k < 0 || k > operand.dimensions(operand.rank() - 1)) {
      return Error("k ", k, " is out of range for ", Str(operand));
    }
    Shape values = operand;
    values.set_dimensions(operand.rank() - 1, k);
    Shape indices = values;
    indices.set_element_type(PrimitiveType::kS32);
    return Shape::Tuple({std::move(values), std::move(indices)});
  }

  const HloInstruction& instr_;
  const int64_t num_partitions_;
  const int64_t replica_count_;
};

#undef SPMDCHECK_SI_ASSIGN_OR_RETURN_IMPL
#undef SPMDCHECK_SI_ASSIGN_OR_RETURN
#undef SPMDCHECK_SI_CONCAT
#undef SPMDCHECK_SI_CONCAT_INNER
#undef SPMDCHECK_SI_RETURN_IF_ERROR

}  // namespace

// `num_partitions` or `replica_count` <= 0 means "unknown": collectives whose participant count
// depends on an unknown count are Unimplemented.
absl::StatusOr<Shape> InferShape(const HloInstruction& instruction, int64_t num_partitions,
                                 int64_t replica_count) {
  return Inferrer(instruction, num_partitions, replica_count).Run();
}

}  // namespace spmdcheck
