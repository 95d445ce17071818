// HLO opcodes with their XLA text spellings (xla/hlo/ir/hlo_opcode.h).
#ifndef SPMDCHECK_IR_HLO_OPCODE_H_
#define SPMDCHECK_IR_HLO_OPCODE_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace spmdcheck {

// V(enum, spelling, arity class) with arity: 1 unary elementwise, 2 binary elementwise,
// 3 ternary elementwise, 0 anything else.
#define SPMDCHECK_HLO_OPCODES(V)                            \
  V(kAbs, "abs", 1)                                         \
  V(kAdd, "add", 2)                                         \
  V(kAddDependency, "add-dependency", 0)                    \
  V(kAfterAll, "after-all", 0)                              \
  V(kAllGather, "all-gather", 0)                            \
  V(kAllGatherStart, "all-gather-start", 0)                 \
  V(kAllGatherDone, "all-gather-done", 0)                   \
  V(kAllReduce, "all-reduce", 0)                            \
  V(kAllReduceStart, "all-reduce-start", 0)                 \
  V(kAllReduceDone, "all-reduce-done", 0)                   \
  V(kAllToAll, "all-to-all", 0)                             \
  V(kAnd, "and", 2)                                         \
  V(kAsyncStart, "async-start", 0)                          \
  V(kAsyncUpdate, "async-update", 0)                        \
  V(kAsyncDone, "async-done", 0)                            \
  V(kAtan2, "atan2", 2)                                     \
  V(kBatchNormGrad, "batch-norm-grad", 0)                   \
  V(kBatchNormInference, "batch-norm-inference", 0)         \
  V(kBatchNormTraining, "batch-norm-training", 0)           \
  V(kBitcast, "bitcast", 0)                                 \
  V(kBitcastConvert, "bitcast-convert", 0)                  \
  V(kBroadcast, "broadcast", 0)                             \
  V(kCall, "call", 0)                                       \
  V(kCbrt, "cbrt", 1)                                       \
  V(kCeil, "ceil", 1)                                       \
  V(kCholesky, "cholesky", 0)                               \
  V(kClamp, "clamp", 3)                                     \
  V(kClz, "count-leading-zeros", 1)                         \
  V(kCollectiveBroadcast, "collective-broadcast", 0)        \
  V(kCollectivePermute, "collective-permute", 0)            \
  V(kCollectivePermuteStart, "collective-permute-start", 0) \
  V(kCollectivePermuteDone, "collective-permute-done", 0)   \
  V(kCompare, "compare", 0)                                 \
  V(kComplex, "complex", 2)                                 \
  V(kConcatenate, "concatenate", 0)                         \
  V(kConditional, "conditional", 0)                         \
  V(kConstant, "constant", 0)                               \
  V(kConvert, "convert", 0)                                 \
  V(kConvolution, "convolution", 0)                         \
  V(kCopy, "copy", 1)                                       \
  V(kCopyStart, "copy-start", 0)                            \
  V(kCopyDone, "copy-done", 0)                              \
  V(kCos, "cosine", 1)                                      \
  V(kCustomCall, "custom-call", 0)                          \
  V(kDivide, "divide", 2)                                   \
  V(kDomain, "domain", 0)                                   \
  V(kDot, "dot", 0)                                         \
  V(kDynamicReshape, "dynamic-reshape", 0)                  \
  V(kDynamicSlice, "dynamic-slice", 0)                      \
  V(kDynamicUpdateSlice, "dynamic-update-slice", 0)         \
  V(kErf, "erf", 1)                                         \
  V(kExp, "exponential", 1)                                 \
  V(kExpm1, "exponential-minus-one", 1)                     \
  V(kFft, "fft", 0)                                         \
  V(kFloor, "floor", 1)                                     \
  V(kFusion, "fusion", 0)                                   \
  V(kGather, "gather", 0)                                   \
  V(kGetDimensionSize, "get-dimension-size", 0)             \
  V(kGetTupleElement, "get-tuple-element", 0)               \
  V(kImag, "imag", 0)                                       \
  V(kInfeed, "infeed", 0)                                   \
  V(kIota, "iota", 0)                                       \
  V(kIsFinite, "is-finite", 0)                              \
  V(kLog, "log", 1)                                         \
  V(kLog1p, "log-plus-one", 1)                              \
  V(kLogistic, "logistic", 1)                               \
  V(kMap, "map", 0)                                         \
  V(kMaximum, "maximum", 2)                                 \
  V(kMinimum, "minimum", 2)                                 \
  V(kMultiply, "multiply", 2)                               \
  V(kNegate, "negate", 1)                                   \
  V(kNot, "not", 1)                                         \
  V(kOptimizationBarrier, "opt-barrier", 0)                 \
  V(kOr, "or", 2)                                           \
  V(kOutfeed, "outfeed", 0)                                 \
  V(kPad, "pad", 0)                                         \
  V(kParameter, "parameter", 0)                             \
  V(kPartitionId, "partition-id", 0)                        \
  V(kPopulationCount, "popcnt", 1)                          \
  V(kPower, "power", 2)                                     \
  V(kRaggedAllToAll, "ragged-all-to-all", 0)                \
  V(kReal, "real", 0)                                       \
  V(kRecv, "recv", 0)                                       \
  V(kRecvDone, "recv-done", 0)                              \
  V(kReduce, "reduce", 0)                                   \
  V(kReducePrecision, "reduce-precision", 1)                \
  V(kReduceScatter, "reduce-scatter", 0)                    \
  V(kReduceWindow, "reduce-window", 0)                      \
  V(kRemainder, "remainder", 2)                             \
  V(kReplicaId, "replica-id", 0)                            \
  V(kReshape, "reshape", 0)                                 \
  V(kReverse, "reverse", 0)                                 \
  V(kRng, "rng", 0)                                         \
  V(kRngBitGenerator, "rng-bit-generator", 0)               \
  V(kRngGetAndUpdateState, "rng-get-and-update-state", 0)   \
  V(kRoundNearestAfz, "round-nearest-afz", 1)               \
  V(kRoundNearestEven, "round-nearest-even", 1)             \
  V(kRsqrt, "rsqrt", 1)                                     \
  V(kScatter, "scatter", 0)                                 \
  V(kSelect, "select", 3)                                   \
  V(kSelectAndScatter, "select-and-scatter", 0)             \
  V(kSend, "send", 0)                                       \
  V(kSendDone, "send-done", 0)                              \
  V(kSetDimensionSize, "set-dimension-size", 0)             \
  V(kShiftLeft, "shift-left", 2)                            \
  V(kShiftRightArithmetic, "shift-right-arithmetic", 2)     \
  V(kShiftRightLogical, "shift-right-logical", 2)           \
  V(kSign, "sign", 1)                                       \
  V(kSin, "sine", 1)                                        \
  V(kSlice, "slice", 0)                                     \
  V(kSort, "sort", 0)                                       \
  V(kSqrt, "sqrt", 1)                                       \
  V(kStochasticConvert, "stochastic-convert", 0)            \
  V(kSubtract, "subtract", 2)                               \
  V(kTan, "tan", 1)                                         \
  V(kTanh, "tanh", 1)                                       \
  V(kTopK, "topk", 0)                                       \
  V(kTranspose, "transpose", 0)                             \
  V(kTriangularSolve, "triangular-solve", 0)                \
  V(kTuple, "tuple", 0)                                     \
  V(kWhile, "while", 0)                                     \
  V(kXor, "xor", 2)

enum class HloOpcode : uint8_t {
#define SPMDCHECK_DECLARE_OPCODE(enum_name, spelling, arity) enum_name,
  SPMDCHECK_HLO_OPCODES(SPMDCHECK_DECLARE_OPCODE)
#undef SPMDCHECK_DECLARE_OPCODE
};

absl::string_view HloOpcodeString(HloOpcode opcode);
std::optional<HloOpcode> StringToHloOpcode(absl::string_view spelling);
// 1, 2 or 3 for elementwise unary/binary/ternary ops (incl. copy), 0 otherwise.
int ElementwiseArity(HloOpcode opcode);
bool IsCollective(HloOpcode opcode);  // Any op that communicates between devices.

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_HLO_OPCODE_H_
