// Shape inference: expected shapes are worked out by hand from the XLA semantics (operation
// semantics docs and spec §3-§4), never copied from the code under test.
#include "ir/shape_inference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_module.h"
#include "ir/hlo_parser.h"

namespace spmdcheck {
namespace {

using ::testing::HasSubstr;

Shape S(absl::string_view text) {
  absl::StatusOr<Shape> shape = ParseShape(text);
  EXPECT_TRUE(shape.ok()) << text << ": " << shape.status().message();
  return shape.ok() ? *shape : Shape();
}

// Expects inference to succeed with exactly `expected` (layouts ignored, none inferred).
void ExpectShape(const absl::StatusOr<Shape>& inferred, absl::string_view expected) {
  ASSERT_TRUE(inferred.ok()) << inferred.status().message();
  EXPECT_TRUE(inferred->Compatible(S(expected)))
      << "inferred " << inferred->ToString() << ", expected " << expected;
  EXPECT_FALSE(inferred->layout().has_value()) << inferred->ToString();
}

void ExpectInvalid(const absl::StatusOr<Shape>& inferred, absl::string_view fragment) {
  ASSERT_FALSE(inferred.ok()) << "inferred " << inferred->ToString();
  EXPECT_EQ(inferred.status().code(), absl::StatusCode::kInvalidArgument)
      << inferred.status().message();
  EXPECT_THAT(std::string(inferred.status().message()), HasSubstr(std::string(fragment)));
}

void ExpectUnimplemented(const absl::StatusOr<Shape>& inferred) {
  ASSERT_FALSE(inferred.ok()) << "inferred " << inferred->ToString();
  EXPECT_EQ(inferred.status().code(), absl::StatusCode::kUnimplemented)
      << inferred.status().message();
}

class ShapeInferenceTest : public ::testing::Test {
 protected:
  ShapeInferenceTest() : module_("m") {
    computation_ = module_.AddComputation(std::make_unique<HloComputation>("entry"));
    module_.set_entry(computation_);
  }

  // A parameter of the entry computation with the given shape.
  HloInstruction* P(absl::string_view shape) {
    auto param = std::make_unique<HloInstruction>(HloOpcode::kParameter,
                                                  absl::StrCat("p", next_id_), S(shape));
    param->set_parameter_number(next_param_++);
    ++next_id_;
    return computation_->AddInstruction(std::move(param));
  }

  // An instruction with the given operands; `shape` empty means "not written".
  HloInstruction* I(HloOpcode opcode, std::vector<HloInstruction*> operands,
                    absl::string_view shape = "") {
    auto instruction = std::make_unique<HloInstruction>(opcode, absl::StrCat("i", next_id_++),
                                                        shape.empty() ? Shape() : S(shape));
    for (HloInstruction* operand : operands) instruction->AppendOperand(operand);
    return computation_->AddInstruction(std::move(instruction));
  }

  // A computation with parameters of the given shapes whose root has shape `root` (the root
  // is a parameter when one has that shape, else a constant).
  HloComputation* Computation(const std::string& name, std::vector<std::string> params,
                              absl::string_view root) {
    HloComputation* c = module_.AddComputation(std::make_unique<HloComputation>(name));
    HloInstruction* root_instruction = nullptr;
    for (size_t i = 0; i < params.size(); ++i) {
      auto param = std::make_unique<HloInstruction>(HloOpcode::kParameter,
                                                    absl::StrCat(name, ".p", i), S(params[i]));
      param->set_parameter_number(static_cast<int64_t>(i));
      HloInstruction* added = c->AddInstruction(std::move(param));
      if (root_instruction == nullptr && added->shape().Compatible(S(root))) {
        root_instruction = added;
      }
    }
    if (root_instruction == nullptr) {
      root_instruction = c->AddInstruction(
          std::make_unique<HloInstruction>(HloOpcode::kConstant, name + ".root", S(root)));
    }
    c->set_root(root_instruction);
    return c;
  }

  static void Call(HloInstruction* instruction, const std::string& role,
                   std::vector<HloComputation*> computations, bool is_list = false) {
    instruction->mutable_called().push_back({role, std::move(computations), is_list});
  }

  // (f32[], f32[]) -> f32[] and friends.
  HloComputation* Reducer(absl::string_view type = "f32") {
    const std::string scalar = absl::StrCat(type, "[]");
    return Computation(absl::StrCat("reducer", next_id_++), {scalar, scalar}, scalar);
  }

  static absl::StatusOr<Shape> Infer(const HloInstruction* instruction, int64_t partitions = 0,
                                     int64_t replicas = 0) {
    return InferShape(*instruction, partitions, replicas);
  }

  HloModule module_;
  HloComputation* computation_;
  int64_t next_id_ = 0;
  int64_t next_param_ = 0;
};

// ---- Elementwise -------------------------------------------------------------------------------

TEST_F(ShapeInferenceTest, UnaryKeepsShapeAndDropsLayout) {
  ExpectShape(Infer(I(HloOpcode::kNegate, {P("f32[2,3]{0,1}")})), "f32[2,3]");
  ExpectShape(Infer(I(HloOpcode::kExp, {P("bf16[4]")})), "bf16[4]");
  ExpectShape(Infer(I(HloOpcode::kClz, {P("u8[4]")})), "u8[4]");
  ExpectShape(Infer(I(HloOpcode::kNot, {P("pred[4]")})), "pred[4]");
}

TEST_F(ShapeInferenceTest, ComplexToRealUnaryOps) {
  ExpectShape(Infer(I(HloOpcode::kAbs, {P("c64[4]")})), "f32[4]");
  ExpectShape(Infer(I(HloOpcode::kAbs, {P("s32[4]")})), "s32[4]");
  ExpectShape(Infer(I(HloOpcode::kReal, {P("c128[2,2]")})), "f64[2,2]");
  ExpectShape(Infer(I(HloOpcode::kImag, {P("c64[]")})), "f32[]");
  ExpectShape(Infer(I(HloOpcode::kReal, {P("f32[3]")})), "f32[3]");
}

TEST_F(ShapeInferenceTest, IsFiniteReturnsPred) {
  ExpectShape(Infer(I(HloOpcode::kIsFinite, {P("f32[3,5]")})), "pred[3,5]");
  ExpectInvalid(Infer(I(HloOpcode::kIsFinite, {P("s32[3]")})), "floating-point");
}

TEST_F(ShapeInferenceTest, UnaryRejectsWrongElementTypes) {
  ExpectInvalid(Infer(I(HloOpcode::kNot, {P("f32[3]")})), "pred or integral");
  ExpectInvalid(Infer(I(HloOpcode::kFloor, {P("s32[3]")})), "floating-point");
  ExpectInvalid(Infer(I(HloOpcode::kAbs, {P("u32[3]")})), "signed");
  ExpectInvalid(Infer(I(HloOpcode::kSign, {P("u8[3]")})), "signed");
  ExpectInvalid(Infer(I(HloOpcode::kPopulationCount, {P("f32[3]")})), "integral");
  ExpectInvalid(Infer(I(HloOpcode::kNegate, {P("(f32[3])")})), "must be an array");
}

TEST_F(ShapeInferenceTest, CopyAcceptsTuples) {
  ExpectShape(Infer(I(HloOpcode::kCopy, {P("(f32[2], s32[])")})), "(f32[2], s32[])");
}

TEST_F(ShapeInferenceTest, BinaryOps) {
  HloInstruction* a = P("f32[2,3]");
  HloInstruction* b = P("f32[2,3]");
  ExpectShape(Infer(I(HloOpcode::kAdd, {a, b})), "f32[2,3]");
  ExpectShape(Infer(I(HloOpcode::kPower, {a, b})), "f32[2,3]");
  ExpectShape(Infer(I(HloOpcode::kAnd, {P("pred[4]"), P("pred[4]")})), "pred[4]");
  ExpectShape(Infer(I(HloOpcode::kShiftLeft, {P("u32[4]"), P("u32[4]")})), "u32[4]");
  ExpectShape(Infer(I(HloOpcode::kComplex, {P("f32[2]"), P("f32[2]")})), "c64[2]");
  ExpectShape(Infer(I(HloOpcode::kComplex, {P("f64[]"), P("f64[]")})), "c128[]");
}

TEST_F(ShapeInferenceTest, BinaryRejectsImplicitBroadcastAndMixedTypes) {
  ExpectInvalid(Infer(I(HloOpcode::kAdd, {P("f32[2,3]"), P("f32[3,2]")})), "same dimensions");
  ExpectInvalid(Infer(I(HloOpcode::kAdd, {P("f32[2,3]"), P("f32[]")})), "same dimensions");
  ExpectInvalid(Infer(I(HloOpcode::kMultiply, {P("f32[2]"), P("bf16[2]")})), "same element type");
  ExpectInvalid(Infer(I(HloOpcode::kAdd, {P("pred[2]"), P("pred[2]")})), "non-pred");
  ExpectInvalid(Infer(I(HloOpcode::kShiftLeft, {P("f32[2]"), P("f32[2]")})), "integral");
  ExpectInvalid(Infer(I(HloOpcode::kOr, {P("f32[2]"), P("f32[2]")})), "pred or integral");
  ExpectInvalid(Infer(I(HloOpcode::kComplex, {P("bf16[2]"), P("bf16[2]")})), "f32 or f64");
}

TEST_F(ShapeInferenceTest, CompareReturnsPredAndNeedsDirection) {
  HloInstruction* compare = I(HloOpcode::kCompare, {P("s32[4,2]"), P("s32[4,2]")});
  ExpectInvalid(Infer(compare), "direction");
  compare->mutable_attrs().direction = ComparisonDirection::kLt;
  ExpectShape(Infer(compare), "pred[4,2]");
  HloInstruction* mixed = I(HloOpcode::kCompare, {P("s32[4]"), P("u32[4]")});
  mixed->mutable_attrs().direction = ComparisonDirection::kEq;
  ExpectInvalid(Infer(mixed), "same element type");
}

TEST_F(ShapeInferenceTest, SelectWithArrayOrScalarPredicate) {
  ExpectShape(Infer(I(HloOpcode::kSelect, {P("pred[2,3]"), P("f32[2,3]"), P("f32[2,3]")})),
              "f32[2,3]");
  ExpectShape(Infer(I(HloOpcode::kSelect, {P("pred[]"), P("s32[5]"), P("s32[5]")})), "s32[5]");
  ExpectInvalid(Infer(I(HloOpcode::kSelect, {P("pred[3]"), P("f32[2,3]"), P("f32[2,3]")})),
                "predicate");
  ExpectInvalid(Infer(I(HloOpcode::kSelect, {P("s32[2]"), P("f32[2]"), P("f32[2]")})),
                "element type pred");
  ExpectInvalid(Infer(I(HloOpcode::kSelect, {P("pred[2]"), P("f32[2]"), P("s32[2]")})),
                "same shape");
}

TEST_F(ShapeInferenceTest, ClampWithScalarOrArrayBounds) {
  ExpectShape(Infer(I(HloOpcode::kClamp, {P("f32[]"), P("f32[5]"), P("f32[]")})), "f32[5]");
  ExpectShape(Infer(I(HloOpcode::kClamp, {P("s32[5]"), P("s32[5]"), P("s32[]")})), "s32[5]");
  ExpectInvalid(Infer(I(HloOpcode::kClamp, {P("f32[4]"), P("f32[5]"), P("f32[]")})), "min f32[4]");
  ExpectInvalid(Infer(I(HloOpcode::kClamp, {P("f32[]"), P("f32[5]"), P("s32[]")})), "element type");
}

TEST_F(ShapeInferenceTest, OpsThatNeedAWrittenShapeAreUnimplemented) {
  ExpectUnimplemented(Infer(I(HloOpcode::kConvert, {P("f32[4]")})));
  ExpectUnimplemented(Infer(I(HloOpcode::kBitcastConvert, {P("f32[4]")})));
  ExpectUnimplemented(Infer(I(HloOpcode::kReshape, {P("f32[4]")}, "f32[2,2]")));
  ExpectUnimplemented(Infer(I(HloOpcode::kIota, {}, "s32[4]")));
  ExpectUnimplemented(Infer(P("f32[4]")));
  ExpectUnimplemented(Infer(I(HloOpcode::kConstant, {}, "f32[]")));
  ExpectUnimplemented(Infer(I(HloOpcode::kCustomCall, {P("f32[4]")}, "f32[4]")));
}

// ---- Operand counts and robustness --------------------------------------------------------------

TEST_F(ShapeInferenceTest, WrongOperandCountsAreInvalid) {
  ExpectInvalid(Infer(I(HloOpcode::kAdd, {P("f32[2]")})), "expects 2 operands but has 1");
  ExpectInvalid(Infer(I(HloOpcode::kNegate, {P("f32[2]"), P("f32[2]")})),
                "expects 1 operand but has 2");
  ExpectInvalid(Infer(I(HloOpcode::kConvert, {})), "expects 1 operand but has 0");
  ExpectInvalid(Infer(I(HloOpcode::kReplicaId, {P("u32[]")})), "expects 0 operands");
  ExpectInvalid(Infer(I(HloOpcode::kConcatenate, {})), "expects at least 1 operand");
  ExpectInvalid(Infer(I(HloOpcode::kBatchNormInference, {P("f32[2]")})), "expects 5 operands");
}

TEST_F(ShapeInferenceTest, MissingOperandIsInvalidAndUnknownOperandShapeIsUnimplemented) {
  HloInstruction* negate = I(HloOpcode::kNegate, {});
  negate->AppendOperand(nullptr);
  ExpectInvalid(Infer(negate), "operand 0 is missing");
  HloInstruction* no_shape = I(HloOpcode::kCustomCall, {});
  ExpectUnimplemented(Infer(I(HloOpcode::kNegate, {no_shape})));
}

// ---- Broadcast, concatenate, transpose, reverse
// ----------------------------------------------------

TEST_F(ShapeInferenceTest, BroadcastMapsOperandDimsIntoTheWrittenShape) {
  HloInstruction* broadcast = I(HloOpcode::kBroadcast, {P("f32[3]")}, "f32[2,3]");
  broadcast->mutable_attrs().dimensions = std::vector<int64_t>{1};
  ExpectShape(Infer(broadcast), "f32[2,3]");
  // The written element type does not change what the operand dictates.
  HloInstruction* retyped = I(HloOpcode::kBroadcast, {P("f32[3]")}, "s32[3,7]");
  retyped->mutable_attrs().dimensions = std::vector<int64_t>{0};
  ExpectShape(Infer(retyped), "f32[3,7]");
  HloInstruction* scalar = I(HloOpcode::kBroadcast, {P("f32[]")}, "f32[4,4]");
  ExpectShape(Infer(scalar), "f32[4,4]");
}

TEST_F(ShapeInferenceTest, BroadcastErrors) {
  HloInstruction* mismatch = I(HloOpcode::kBroadcast, {P("f32[3]")}, "f32[3,2]");
  mismatch->mutable_attrs().dimensions = std::vector<int64_t>{1};
  ExpectInvalid(Infer(mismatch), "operand dim 0 has size 3 but result dim 1 has size 2");
  HloInstruction* out_of_range = I(HloOpcode::kBroadcast, {P("f32[3]")}, "f32[2,3]");
  out_of_range->mutable_attrs().dimensions = std::vector<int64_t>{5};
  ExpectInvalid(Infer(out_of_range), "out of range");
  HloInstruction* wrong_count = I(HloOpcode::kBroadcast, {P("f32[3,2]")}, "f32[3,2]");
  wrong_count->mutable_attrs().dimensions = std::vector<int64_t>{0};
  ExpectInvalid(Infer(wrong_count), "rank 2");
  HloInstruction* missing = I(HloOpcode::kBroadcast, {P("f32[3]")}, "f32[3]");
  ExpectInvalid(Infer(missing), "missing attribute dimensions");
  HloInstruction* unwritten = I(HloOpcode::kBroadcast, {P("f32[3]")});
  unwritten->mutable_attrs().dimensions = std::vector<int64_t>{0};
  ExpectUnimplemented(Infer(unwritten));
}

TEST_F(ShapeInferenceTest, Concatenate) {
  HloInstruction* concat =
      I(HloOpcode::kConcatenate, {P("f32[2,3]"), P("f32[4,3]"), P("f32[1,3]")});
  concat->mutable_attrs().dimensions = std::vector<int64_t>{0};
  ExpectShape(Infer(concat), "f32[7,3]");
  HloInstruction* bad = I(HloOpcode::kConcatenate, {P("f32[2,3]"), P("f32[2,4]")});
  bad->mutable_attrs().dimensions = std::vector<int64_t>{0};
  ExpectInvalid(Infer(bad), "in dim 1");
  HloInstruction* out_of_range = I(HloOpcode::kConcatenate, {P("f32[2]"), P("f32[2]")});
  out_of_range->mutable_attrs().dimensions = std::vector<int64_t>{1};
  ExpectInvalid(Infer(out_of_range), "out of range");
  ExpectInvalid(Infer(I(HloOpcode::kConcatenate, {P("f32[2]")})), "missing attribute");
  HloInstruction* types = I(HloOpcode::kConcatenate, {P("f32[2]"), P("s32[2]")});
  types->mutable_attrs().dimensions = std::vector<int64_t>{0};
  ExpectInvalid(Infer(types), "element type");
}

TEST_F(ShapeInferenceTest, TransposeAndReverse) {
  HloInstruction* transpose = I(HloOpcode::kTranspose, {P("f32[2,3,4]")});
  transpose->mutable_attrs().dimensions = std::vector<int64_t>{2, 0, 1};
  ExpectShape(Infer(transpose), "f32[4,2,3]");
  HloInstruction* not_perm = I(HloOpcode::kTranspose, {P("f32[2,3,4]")});
  not_perm->mutable_attrs().dimensions = std::vector<int64_t>{0, 0, 1};
  ExpectInvalid(Infer(not_perm), "twice");
  HloInstruction* short_perm = I(HloOpcode::kTranspose, {P("f32[2,3,4]")});
  short_perm->mutable_attrs().dimensions = std::vector<int64_t>{1, 0};
  ExpectInvalid(Infer(short_perm), "permutation");
  HloInstruction* reverse = I(HloOpcode::kReverse, {P("s32[5,6]")});
  reverse->mutable_attrs().dimensions = std::vector<int64_t>{1};
  ExpectShape(Infer(reverse), "s32[5,6]");
  HloInstruction* bad_reverse = I(HloOpcode::kReverse, {P("s32[5,6]")});
  bad_reverse->mutable_attrs().dimensions = std::vector<int64_t>{2};
  ExpectInvalid(Infer(bad_reverse), "out of range");
}

// ---- Dot and convolution ------------------------------------------------------------------------

TEST_F(ShapeInferenceTest, DotMatmulAndBatchedMatmul) {
  HloInstruction* matmul = I(HloOpcode::kDot, {P("f32[8,100]"), P("f32[100,16]")});
  matmul->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {1}, {0}};
  ExpectShape(Infer(matmul), "f32[8,16]");
  HloInstruction* batched = I(HloOpcode::kDot, {P("f32[4,8,16]"), P("f32[4,16,32]")});
  batched->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{0}, {0}, {2}, {1}};
  ExpectShape(Infer(batched), "f32[4,8,32]");
}

TEST_F(ShapeInferenceTest, DotResultOrderIsBatchThenLhsFreeThenRhsFree) {
  // lhs [3,4,5]: batch 1, contracting 2, free 0. rhs [5,4,6]: batch 1, contracting 0, free 2.
  HloInstruction* dot = I(HloOpcode::kDot, {P("f32[3,4,5]"), P("f32[5,4,6]")});
  dot->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{1}, {1}, {2}, {0}};
  ExpectShape(Infer(dot), "f32[4,3,6]");
  HloInstruction* outer = I(HloOpcode::kDot, {P("f32[2,3,5]"), P("f32[5,7,11]")});
  outer->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {2}, {0}};
  ExpectShape(Infer(outer), "f32[2,3,7,11]");
}

TEST_F(ShapeInferenceTest, DotResultTypeComesFromTheWrittenShape) {
  HloInstruction* dot = I(HloOpcode::kDot, {P("bf16[2,3]"), P("bf16[3,4]")}, "f32[2,4]");
  dot->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {1}, {0}};
  ExpectShape(Infer(dot), "f32[2,4]");
  HloInstruction* narrowing = I(HloOpcode::kDot, {P("s32[2,3]"), P("s32[3,4]")}, "s8[2,4]");
  narrowing->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {1}, {0}};
  ExpectInvalid(Infer(narrowing), "narrower");
  // Mixed precision without a written type: the wider operand type.
  HloInstruction* mixed = I(HloOpcode::kDot, {P("bf16[2,3]"), P("f32[3,4]")});
  mixed->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {1}, {0}};
  ExpectShape(Infer(mixed), "f32[2,4]");
}

TEST_F(ShapeInferenceTest, DotErrors) {
  HloInstruction* sizes = I(HloOpcode::kDot, {P("f32[8,100]"), P("f32[64,16]")});
  sizes->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {1}, {0}};
  ExpectInvalid(Infer(sizes),
                "dot: lhs contracting dim 1 has size 100 but rhs contracting dim 0 has size 64");
  HloInstruction* range = I(HloOpcode::kDot, {P("f32[8,100]"), P("f32[100,16]")});
  range->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {2}, {0}};
  ExpectInvalid(Infer(range), "out of range");
  HloInstruction* counts = I(HloOpcode::kDot, {P("f32[8,100]"), P("f32[100,16]")});
  counts->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{0}, {}, {1}, {0}};
  ExpectInvalid(Infer(counts), "batch dims");
  HloInstruction* twice = I(HloOpcode::kDot, {P("f32[8,8]"), P("f32[8,8]")});
  twice->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{0}, {0}, {0}, {1}};
  ExpectInvalid(Infer(twice), "twice");
  HloInstruction* batch = I(HloOpcode::kDot, {P("f32[2,8]"), P("f32[3,8]")});
  batch->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{0}, {0}, {1}, {1}};
  ExpectInvalid(Infer(batch), "lhs batch dim 0 has size 2 but rhs batch dim 0 has size 3");
  HloInstruction* kinds = I(HloOpcode::kDot, {P("c64[2,3]"), P("f32[3,4]")});
  kinds->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {1}, {0}};
  ExpectInvalid(Infer(kinds), "incompatible");
}

ConvolutionDimensionNumbers B01fO1io() {  // b01f_01io->b01f
  ConvolutionDimensionNumbers dn;
  dn.input_batch = 0;
  dn.input_feature = 3;
  dn.input_spatial = {1, 2};
  dn.kernel_spatial = {0, 1};
  dn.kernel_input_feature = 2;
  dn.kernel_output_feature = 3;
  dn.output_batch = 0;
  dn.output_feature = 3;
  dn.output_spatial = {1, 2};
  return dn;
}

WindowDim Win(int64_t size, int64_t stride = 1, int64_t low = 0, int64_t high = 0,
              int64_t lhs_dilation = 1, int64_t rhs_dilation = 1) {
  WindowDim w;
  w.size = size;
  w.stride = stride;
  w.pad_low = low;
  w.pad_high = high;
  w.lhs_dilation = lhs_dilation;
  w.rhs_dilation = rhs_dilation;
  return w;
}

TEST_F(ShapeInferenceTest, ConvolutionValidWindow) {
  HloInstruction* conv = I(HloOpcode::kConvolution, {P("f32[1,5,5,2]"), P("f32[3,3,2,4]")});
  conv->mutable_attrs().dim_labels = B01fO1io();
  conv->mutable_attrs().window = std::vector<WindowDim>{Win(3), Win(3)};
  // 5 - 3 + 1 = 3 per spatial dim; 4 output features.
  ExpectShape(Infer(conv), "f32[1,3,3,4]");
}

TEST_F(ShapeInferenceTest, ConvolutionPaddingStrideAndDilation) {
  HloInstruction* conv = I(HloOpcode::kConvolution, {P("f32[1,6,7,2]"), P("f32[3,3,2,4]")});
  conv->mutable_attrs().dim_labels = B01fO1io();
  conv->mutable_attrs().window = std::vector<WindowDim>{Win(3, 2, 1, 1), Win(3, 2, 1, 1)};
  // dim 1: 6 + 2 = 8 padded, (8 - 3) / 2 + 1 = 3; dim 2: 7 + 2 = 9, (9 - 3) / 2 + 1 = 4.
  ExpectShape(Infer(conv), "f32[1,3,4,4]");
  HloInstruction* dilated = I(HloOpcode::kConvolution, {P("f32[1,4,7,2]"), P("f32[3,3,2,4]")});
  dilated->mutable_attrs().dim_labels = B01fO1io();
  dilated->mutable_attrs().window =
      std::vector<WindowDim>{Win(3, 1, 0, 0, /*lhs=*/2, 1), Win(3, 1, 0, 0, 1, /*rhs=*/2)};
  // dim 1: base (4-1)*2+1 = 7, window 3 -> 5. dim 2: base 7, window (3-1)*2+1 = 5 -> 3.
  ExpectShape(Infer(dilated), "f32[1,5,3,4]");
  HloInstruction* too_small = I(HloOpcode::kConvolution, {P("f32[1,2,2,2]"), P("f32[3,3,2,4]")});
  too_small->mutable_attrs().dim_labels = B01fO1io();
  too_small->mutable_attrs().window = std::vector<WindowDim>{Win(3), Win(3)};
  ExpectShape(Infer(too_small), "f32[1,0,0,4]");
}

TEST_F(ShapeInferenceTest, ConvolutionFeatureAndBatchGroups) {
  HloInstruction* grouped = I(HloOpcode::kConvolution, {P("f32[1,4,4,6]"), P("f32[1,1,3,6]")});
  grouped->mutable_attrs().dim_labels = B01fO1io();
  grouped->mutable_attrs().window = std::vector<WindowDim>{Win(1), Win(1)};
  grouped->mutable_attrs().feature_group_count = 2;
  ExpectShape(Infer(grouped), "f32[1,4,4,6]");
  grouped->mutable_attrs().feature_group_count = 3;
  ExpectInvalid(Infer(grouped), "feature_group_count 3");
  HloInstruction* batched = I(HloOpcode::kConvolution, {P("f32[4,5,5,2]"), P("f32[3,3,2,2]")});
  batched->mutable_attrs().dim_labels = B01fO1io();
  batched->mutable_attrs().window = std::vector<WindowDim>{Win(3), Win(3)};
  batched->mutable_attrs().batch_group_count = 2;
  // Batch 4 / 2 = 2; output features = kernel output features = 2.
  ExpectShape(Infer(batched), "f32[2,3,3,2]");
  batched->mutable_attrs().batch_group_count = 3;
  ExpectInvalid(Infer(batched), "batch_group_count 3");
}

TEST_F(ShapeInferenceTest, ConvolutionWithPermutedDimLabels) {
  // bf01_oi01->bf01
  ConvolutionDimensionNumbers dn;
  dn.input_batch = 0;
  dn.input_feature = 1;
  dn.input_spatial = {2, 3};
  dn.kernel_output_feature = 0;
  dn.kernel_input_feature = 1;
  dn.kernel_spatial = {2, 3};
  dn.output_batch = 0;
  dn.output_feature = 1;
  dn.output_spatial = {2, 3};
  HloInstruction* conv = I(HloOpcode::kConvolution, {P("f32[2,3,10,10]"), P("f32[8,3,3,3]")});
  conv->mutable_attrs().dim_labels = dn;
  conv->mutable_attrs().window = std::vector<WindowDim>{Win(3), Win(3)};
  ExpectShape(Infer(conv), "f32[2,8,8,8]");
}

TEST_F(ShapeInferenceTest, ConvolutionWithoutSpatialDims) {
  ConvolutionDimensionNumbers dn;  // bf_io->bf
  dn.input_batch = 0;
  dn.input_feature = 1;
  dn.kernel_input_feature = 0;
  dn.kernel_output_feature = 1;
  dn.output_batch = 0;
  dn.output_feature = 1;
  HloInstruction* conv = I(HloOpcode::kConvolution, {P("f32[4,3]"), P("f32[3,5]")});
  conv->mutable_attrs().dim_labels = dn;
  ExpectShape(Infer(conv), "f32[4,5]");
}

TEST_F(ShapeInferenceTest, ConvolutionErrors) {
  HloInstruction* no_labels = I(HloOpcode::kConvolution, {P("f32[1,5,5,2]"), P("f32[3,3,2,4]")});
  ExpectInvalid(Infer(no_labels), "dim_labels");
  HloInstruction* window = I(HloOpcode::kConvolution, {P("f32[1,5,5,2]"), P("f32[3,3,2,4]")});
  window->mutable_attrs().dim_labels = B01fO1io();
  window->mutable_attrs().window = std::vector<WindowDim>{Win(3), Win(2)};
  ExpectInvalid(Infer(window), "window dim 1 has size 2 but kernel spatial dim 1 has size 3");
  window->mutable_attrs().window = std::vector<WindowDim>{Win(3)};
  ExpectInvalid(Infer(window), "window has 1 dims");
  HloInstruction* features = I(HloOpcode::kConvolution, {P("f32[1,5,5,3]"), P("f32[3,3,2,4]")});
  features->mutable_attrs().dim_labels = B01fO1io();
  features->mutable_attrs().window = std::vector<WindowDim>{Win(3), Win(3)};
  ExpectInvalid(Infer(features), "kernel input feature dim 2 has size 2");
  HloInstruction* rank = I(HloOpcode::kConvolution, {P("f32[5,5,2]"), P("f32[3,3,2,4]")});
  rank->mutable_attrs().dim_labels = B01fO1io();
  rank->mutable_attrs().window = std::vector<WindowDim>{Win(3), Win(3)};
  ExpectInvalid(Infer(rank), "must have rank 4");
  HloInstruction* stride = I(HloOpcode::kConvolution, {P("f32[1,5,5,2]"), P("f32[3,3,2,4]")});
  stride->mutable_attrs().dim_labels = B01fO1io();
  stride->mutable_attrs().window = std::vector<WindowDim>{Win(3, 0), Win(3)};
  ExpectInvalid(Infer(stride), "stride");
}

// ---- Gather and scatter -------------------------------------------------------------------------

GatherDimensionNumbers GatherDims(std::vector<int64_t> offset, std::vector<int64_t> collapsed,
                                  std::vector<int64_t> start_index_map, int64_t ivd) {
  GatherDimensionNumbers dn;
  dn.offset_dims = std::move(offset);
  dn.collapsed_slice_dims = std::move(collapsed);
  dn.start_index_map = std::move(start_index_map);
  dn.index_vector_dim = ivd;
  return dn;
}

TEST_F(ShapeInferenceTest, GatherRows) {
  // Gather 3 whole rows of a [5,4] matrix: batch dim 3, offset dim of size 4.
  HloInstruction* gather = I(HloOpcode::kGather, {P("f32[5,4]"), P("s32[3,1]")});
  gather->mutable_attrs().gather_dimension_numbers = GatherDims({1}, {0}, {0}, 1);
  gather->mutable_attrs().gather_slice_sizes = std::vector<int64_t>{1, 4};
  ExpectShape(Infer(gather), "f32[3,4]");
  // Implicit index vector dim (index_vector_dim == rank of the indices).
  HloInstruction* implicit = I(HloOpcode::kGather, {P("f32[5,4]"), P("s32[3]")});
  implicit->mutable_attrs().gather_dimension_numbers = GatherDims({1}, {0}, {0}, 1);
  implicit->mutable_attrs().gather_slice_sizes = std::vector<int64_t>{1, 4};
  ExpectShape(Infer(implicit), "f32[3,4]");
}

TEST_F(ShapeInferenceTest, GatherOffsetDimsInterleaveWithBatchDims) {
  // Two offset dims at output positions 1 and 2, batch dim of size 2 at position 0.
  HloInstruction* gather = I(HloOpcode::kGather, {P("f32[5,4]"), P("s32[2,1]")});
  gather->mutable_attrs().gather_dimension_numbers = GatherDims({1, 2}, {}, {0}, 1);
  gather->mutable_attrs().gather_slice_sizes = std::vector<int64_t>{2, 4};
  ExpectShape(Infer(gather), "f32[2,2,4]");
  // Offset dims at 0 and 2, batch dims (indices [6,7]) at 1 and 3.
  HloInstruction* spread = I(HloOpcode::kGather, {P("f32[9,8]"), P("s32[6,7,2]")});
  spread->mutable_attrs().gather_dimension_numbers = GatherDims({0, 2}, {}, {0, 1}, 2);
  spread->mutable_attrs().gather_slice_sizes = std::vector<int64_t>{3, 5};
  ExpectShape(Infer(spread), "f32[3,6,5,7]");
}

TEST_F(ShapeInferenceTest, GatherWithBatchingDims) {
  HloInstruction* gather = I(HloOpcode::kGather, {P("f32[3,5,4]"), P("s32[3,1]")});
  GatherDimensionNumbers dn = GatherDims({1}, {1}, {1}, 1);
  dn.operand_batching_dims = {0};
  dn.start_indices_batching_dims = {0};
  gather->mutable_attrs().gather_dimension_numbers = dn;
  gather->mutable_attrs().gather_slice_sizes = std::vector<int64_t>{1, 1, 4};
  ExpectShape(Infer(gather), "f32[3,4]");
}

TEST_F(ShapeInferenceTest, GatherErrors) {
  auto make = [&](GatherDimensionNumbers dn, std::vector<int64_t> sizes,
                  absl::string_view indices = "s32[3,1]") {
    HloInstruction* gather = I(HloOpcode::kGather, {P("f32[5,4]"), P(indices)});
    gather->mutable_attrs().gather_dimension_numbers = std::move(dn);
    gather->mutable_attrs().gather_slice_sizes = std::move(sizes);
    return gather;
  };
  ExpectInvalid(Infer(make(GatherDims({1}, {0}, {0}, 1), {1, 5})), "slice size 5");
  ExpectInvalid(Infer(make(GatherDims({1}, {0}, {0}, 1), {2, 4})), "collapsed slice dim 0");
  ExpectInvalid(Infer(make(GatherDims({1}, {0}, {0, 1}, 1), {1, 4})), "start_index_map");
  ExpectInvalid(Infer(make(GatherDims({1}, {0}, {0}, 3), {1, 4})), "index_vector_dim 3");
  ExpectInvalid(Infer(make(GatherDims({1}, {}, {0}, 1), {1, 4})), "must equal the operand rank");
  ExpectInvalid(Infer(make(GatherDims({1}, {0}, {0}, 1), {1, 4}, "f32[3,1]")), "integral");
  ExpectInvalid(Infer(make(GatherDims({5}, {0}, {0}, 1), {1, 4})), "offset_dims");
  HloInstruction* no_dnums = I(HloOpcode::kGather, {P("f32[5,4]"), P("s32[3,1]")});
  ExpectInvalid(Infer(no_dnums), "missing gather dimension numbers");
}

ScatterDimensionNumbers ScatterDims(std::vector<int64_t> update_window,
                                    std::vector<int64_t> inserted, std::vector<int64_t> to_operand,
                                    int64_t ivd) {
  ScatterDimensionNumbers dn;
  dn.update_window_dims = std::move(update_window);
  dn.inserted_window_dims = std::move(inserted);
  dn.scatter_dims_to_operand_dims = std::move(to_operand);
  dn.index_vector_dim = ivd;
  return dn;
}

TEST_F(ShapeInferenceTest, ScatterRowsAndVariadic) {
  HloInstruction* scatter = I(HloOpcode::kScatter, {P("f32[5,4]"), P("s32[3,1]"), P("f32[3,4]")});
  scatter->mutable_attrs().scatter_dimension_numbers = ScatterDims({1}, {0}, {0}, 1);
  Call(scatter, "to_apply", {Reducer()});
  ExpectShape(Infer(scatter), "f32[5,4]");
  HloInstruction* variadic = I(HloOpcode::kScatter, {P("f32[5,4]"), P("s32[5,4]"), P("s32[3,1]"),
                                                     P("f32[3,4]"), P("s32[3,4]")});
  variadic->mutable_attrs().scatter_dimension_numbers = ScatterDims({1}, {0}, {0}, 1);
  Call(variadic, "to_apply",
       {Computation("variadic_reducer", {"f32[]", "s32[]", "f32[]", "s32[]"}, "(f32[], s32[])")});
  ExpectShape(Infer(variadic), "(f32[5,4], s32[5,4])");
}

TEST_F(ShapeInferenceTest, ScatterErrors) {
  auto make = [&](absl::string_view updates, ScatterDimensionNumbers dn, bool reducer = true) {
    HloInstruction* scatter = I(HloOpcode::kScatter, {P("f32[5,4]"), P("s32[3,1]"), P(updates)});
    scatter->mutable_attrs().scatter_dimension_numbers = std::move(dn);
    if (reducer) Call(scatter, "to_apply", {Reducer()});
    return scatter;
  };
  ExpectInvalid(Infer(make("f32[3,5]", ScatterDims({1}, {0}, {0}, 1))),
                "updates window dim 1 has size 5");
  ExpectInvalid(Infer(make("f32[2,4]", ScatterDims({1}, {0}, {0}, 1))),
                "updates scatter dim 0 has size 2");
  ExpectInvalid(Infer(make("f32[3,4]", ScatterDims({1}, {0}, {0}, 1), /*reducer=*/false)),
                "to_apply");
  ExpectInvalid(Infer(make("f32[3,4]", ScatterDims({1}, {}, {0}, 1))),
                "must equal the operand rank");
  ExpectInvalid(Infer(make("s32[3,4]", ScatterDims({1}, {0}, {0}, 1))), "element type");
  ExpectInvalid(
      Infer(I(HloOpcode::kScatter, {P("f32[5,4]"), P("s32[3,1]"), P("f32[3,4]"), P("f32[3,4]")})),
      "odd number of operands");
  HloInstruction* bad_reducer = make("f32[3,4]", ScatterDims({1}, {0}, {0}, 1), false);
  Call(bad_reducer, "to_apply",
       {Computation("three_params", {"f32[]", "f32[]", "f32[]"}, "f32[]")});
  ExpectInvalid(Infer(bad_reducer), "must have 2 parameters but has 3");
}

// ---- Tuples, pad, slices ------------------------------------------------------------------------

TEST_F(ShapeInferenceTest, TupleAndGetTupleElement) {
  HloInstruction* tuple = I(HloOpcode::kTuple, {P("f32[2]"), P("s32[]")});
  ExpectShape(Infer(tuple), "(f32[2], s32[])");
  ExpectShape(Infer(I(HloOpcode::kTuple, {})), "()");
  HloInstruction* gte = I(HloOpcode::kGetTupleElement, {P("(f32[2], (s32[], u8[3]))")});
  gte->mutable_attrs().tuple_index = 1;
  ExpectShape(Infer(gte), "(s32[], u8[3])");
  gte->mutable_attrs().tuple_index = 2;
  ExpectInvalid(Infer(gte), "index 2 is out of range");
  gte->mutable_attrs().tuple_index.reset();
  ExpectInvalid(Infer(gte), "missing attribute index");
  HloInstruction* not_tuple = I(HloOpcode::kGetTupleElement, {P("f32[2]")});
  not_tuple->mutable_attrs().tuple_index = 0;
  ExpectInvalid(Infer(not_tuple), "must be a tuple");
}

TEST_F(ShapeInferenceTest, PadEdgeAndInterior) {
  auto pad = [&](absl::string_view operand, std::vector<PadDim> padding,
                 absl::string_view value = "f32[]") {
    HloInstruction* instruction = I(HloOpcode::kPad, {P(operand), P(value)});
    instruction->mutable_attrs().padding = std::move(padding);
    return instruction;
  };
  // 1 + 2 + 4 + 3 * 1 = 10.
  ExpectShape(Infer(pad("f32[4]", {{1, 2, 1}})), "f32[10]");
  // Negative padding crops: 5 - 1 - 1 = 3; interior 2 on 3 elements: 3 + 2 * 2 = 7.
  ExpectShape(Infer(pad("f32[5,3]", {{-1, -1, 0}, {0, 0, 2}})), "f32[3,7]");
  // No interior padding on an empty dim.
  ExpectShape(Infer(pad("f32[0]", {{1, 1, 5}})), "f32[2]");
  ExpectInvalid(Infer(pad("f32[2]", {{-3, 0, 0}})), "negative");
  ExpectInvalid(Infer(pad("f32[2]", {{0, 0, -1}})), "negative interior");
  ExpectInvalid(Infer(pad("f32[2]", {{0, 0, 0}}, "s32[]")), "element type");
  ExpectInvalid(Infer(pad("f32[2]", {{0, 0, 0}}, "f32[1]")), "must be a scalar");
  ExpectInvalid(Infer(pad("f32[2]", {})), "padding has 0 dims");
}

TEST_F(ShapeInferenceTest, SliceUsesCeilOfStridedExtent) {
  auto slice = [&](absl::string_view operand, std::vector<SliceDim> dims) {
    HloInstruction* instruction = I(HloOpcode::kSlice, {P(operand)});
    instruction->mutable_attrs().slice = std::move(dims);
    return instruction;
  };
  // [2:9:3] takes 2, 5, 8.
  ExpectShape(Infer(slice("f32[10]", {{2, 9, 3}})), "f32[3]");
  // [1:8:2] takes 1, 3, 5, 7.
  ExpectShape(Infer(slice("f32[10,8]", {{0, 10, 1}, {1, 8, 2}})), "f32[10,4]");
  ExpectShape(Infer(slice("f32[10]", {{4, 4, 1}})), "f32[0]");
  ExpectInvalid(Infer(slice("f32[10]", {{0, 11, 1}})), "out of range");
  ExpectInvalid(Infer(slice("f32[10]", {{5, 4, 1}})), "out of range");
  ExpectInvalid(Infer(slice("f32[10]", {{0, 10, 0}})), "stride");
  ExpectInvalid(Infer(slice("f32[10]", {{0, 10, 1}, {0, 1, 1}})), "slice has 2 dims");
  ExpectInvalid(Infer(I(HloOpcode::kSlice, {P("f32[10]")})), "missing attribute slice");
}

TEST_F(ShapeInferenceTest, DynamicSlice) {
  HloInstruction* ds = I(HloOpcode::kDynamicSlice, {P("f32[8,6]"), P("s32[]"), P("s32[]")});
  ds->mutable_attrs().dynamic_slice_sizes = std::vector<int64_t>{2, 3};
  ExpectShape(Infer(ds), "f32[2,3]");
  // The old form with one index vector.
  HloInstruction* vector = I(HloOpcode::kDynamicSlice, {P("f32[8,6]"), P("u32[2]")});
  vector->mutable_attrs().dynamic_slice_sizes = std::vector<int64_t>{8, 1};
  ExpectShape(Infer(vector), "f32[8,1]");
  HloInstruction* too_big = I(HloOpcode::kDynamicSlice, {P("f32[8,6]"), P("s32[]"), P("s32[]")});
  too_big->mutable_attrs().dynamic_slice_sizes = std::vector<int64_t>{2, 7};
  ExpectInvalid(Infer(too_big), "slice size 7 of dim 1");
  HloInstruction* indices = I(HloOpcode::kDynamicSlice, {P("f32[8,6]"), P("s32[]")});
  indices->mutable_attrs().dynamic_slice_sizes = std::vector<int64_t>{2, 3};
  ExpectInvalid(Infer(indices), "expects 2 start index operands");
  HloInstruction* float_index =
      I(HloOpcode::kDynamicSlice, {P("f32[8,6]"), P("f32[]"), P("f32[]")});
  float_index->mutable_attrs().dynamic_slice_sizes = std::vector<int64_t>{2, 3};
  ExpectInvalid(Infer(float_index), "integral scalar");
  HloInstruction* no_sizes = I(HloOpcode::kDynamicSlice, {P("f32[8,6]"), P("s32[]"), P("s32[]")});
  ExpectInvalid(Infer(no_sizes), "dynamic_slice_sizes");
}

TEST_F(ShapeInferenceTest, DynamicUpdateSlice) {
  ExpectShape(Infer(I(HloOpcode::kDynamicUpdateSlice,
                      {P("f32[8,6]"), P("f32[2,6]"), P("s32[]"), P("s32[]")})),
              "f32[8,6]");
  ExpectInvalid(Infer(I(HloOpcode::kDynamicUpdateSlice,
                        {P("f32[8,6]"), P("f32[9,6]"), P("s32[]"), P("s32[]")})),
                "update dim 0 has size 9");
  ExpectInvalid(Infer(I(HloOpcode::kDynamicUpdateSlice,
                        {P("f32[8,6]"), P("s32[2,6]"), P("s32[]"), P("s32[]")})),
                "element type");
  ExpectInvalid(
      Infer(I(HloOpcode::kDynamicUpdateSlice, {P("f32[8,6]"), P("f32[2,6]"), P("s32[]")})),
      "expects 2 start index operands");
}

// ---- Reductions ---------------------------------------------------------------------------------

TEST_F(ShapeInferenceTest, ReduceDropsReducedDims) {
  HloInstruction* reduce = I(HloOpcode::kReduce, {P("f32[2,3,4]"), P("f32[]")});
  reduce->mutable_attrs().dimensions = std::vector<int64_t>{1};
  Call(reduce, "to_apply", {Reducer()});
  ExpectShape(Infer(reduce), "f32[2,4]");
  HloInstruction* all = I(HloOpcode::kReduce, {P("f32[2,3,4]"), P("f32[]")});
  all->mutable_attrs().dimensions = std::vector<int64_t>{0, 2, 1};
  Call(all, "to_apply", {Reducer()});
  ExpectShape(Infer(all), "f32[]");
}

TEST_F(ShapeInferenceTest, VariadicReduceReturnsTuple) {
  HloInstruction* reduce =
      I(HloOpcode::kReduce, {P("f32[2,3]"), P("s32[2,3]"), P("f32[]"), P("s32[]")});
  reduce->mutable_attrs().dimensions = std::vector<int64_t>{0};
  Call(reduce, "to_apply",
       {Computation("argmax", {"f32[]", "s32[]", "f32[]", "s32[]"}, "(f32[], s32[])")});
  ExpectShape(Infer(reduce), "(f32[3], s32[3])");
}

TEST_F(ShapeInferenceTest, ReduceErrors) {
  HloInstruction* range = I(HloOpcode::kReduce, {P("f32[2,3]"), P("f32[]")});
  range->mutable_attrs().dimensions = std::vector<int64_t>{2};
  Call(range, "to_apply", {Reducer()});
  ExpectInvalid(Infer(range), "out of range");
  HloInstruction* no_reducer = I(HloOpcode::kReduce, {P("f32[2,3]"), P("f32[]")});
  no_reducer->mutable_attrs().dimensions = std::vector<int64_t>{0};
  ExpectInvalid(Infer(no_reducer), "to_apply");
  HloInstruction* odd = I(HloOpcode::kReduce, {P("f32[2,3]"), P("f32[]"), P("f32[]")});
  odd->mutable_attrs().dimensions = std::vector<int64_t>{0};
  ExpectInvalid(Infer(odd), "even number");
  HloInstruction* init = I(HloOpcode::kReduce, {P("f32[2,3]"), P("f32[1]")});
  init->mutable_attrs().dimensions = std::vector<int64_t>{0};
  Call(init, "to_apply", {Reducer()});
  ExpectInvalid(Infer(init), "init value 0 must be a scalar");
  HloInstruction* root = I(HloOpcode::kReduce, {P("f32[2,3]"), P("f32[]")});
  root->mutable_attrs().dimensions = std::vector<int64_t>{0};
  Call(root, "to_apply", {Computation("vector_root", {"f32[]", "f32[]"}, "f32[2]")});
  ExpectInvalid(Infer(root), "must return a scalar");
}

TEST_F(ShapeInferenceTest, ReduceWindow) {
  HloInstruction* pool = I(HloOpcode::kReduceWindow, {P("f32[4,6]"), P("f32[]")});
  pool->mutable_attrs().window = std::vector<WindowDim>{Win(2, 2), Win(3, 3)};
  Call(pool, "to_apply", {Reducer()});
  ExpectShape(Infer(pool), "f32[2,2]");
  HloInstruction* same = I(HloOpcode::kReduceWindow, {P("f32[4,6]"), P("f32[]")});
  same->mutable_attrs().window = std::vector<WindowDim>{Win(3, 1, 1, 1), Win(3, 1, 1, 1)};
  Call(same, "to_apply", {Reducer()});
  ExpectShape(Infer(same), "f32[4,6]");
  HloInstruction* dilated = I(HloOpcode::kReduceWindow, {P("f32[4]"), P("f32[]")});
  dilated->mutable_attrs().window = std::vector<WindowDim>{Win(1, 1, 0, 0, /*lhs=*/2)};
  Call(dilated, "to_apply", {Reducer()});
  // Base dilation 2 on 4 elements: (4 - 1) * 2 + 1 = 7 windows of size 1.
  ExpectShape(Infer(dilated), "f32[7]");
  HloInstruction* rank = I(HloOpcode::kReduceWindow, {P("f32[4,6]"), P("f32[]")});
  rank->mutable_attrs().window = std::vector<WindowDim>{Win(2)};
  Call(rank, "to_apply", {Reducer()});
  ExpectInvalid(Infer(rank), "window has 1 dims");
}

TEST_F(ShapeInferenceTest, SelectAndScatter) {
  auto make = [&](absl::string_view source) {
    HloInstruction* sas = I(HloOpcode::kSelectAndScatter, {P("f32[4,6]"), P(source), P("f32[]")});
    sas->mutable_attrs().window = std::vector<WindowDim>{Win(2, 2), Win(3, 3)};
    Call(sas, "select", {Computation(absl::StrCat("ge", next_id_), {"f32[]", "f32[]"}, "pred[]")});
    Call(sas, "scatter", {Reducer()});
    return sas;
  };
  ExpectShape(Infer(make("f32[2,2]")), "f32[4,6]");
  ExpectInvalid(Infer(make("f32[2,3]")), "window output dims");
}

TEST_F(ShapeInferenceTest, SortMap) {
  HloInstruction* sort = I(HloOpcode::kSort, {P("f32[10]")});
  sort->mutable_attrs().dimensions = std::vector<int64_t>{0};
  Call(sort, "to_apply", {Computation("lt", {"f32[]", "f32[]"}, "pred[]")});
  ExpectShape(Infer(sort), "f32[10]");
  HloInstruction* pairs = I(HloOpcode::kSort, {P("f32[3,10]"), P("s32[3,10]")});
  pairs->mutable_attrs().dimensions = std::vector<int64_t>{1};
  Call(pairs, "to_apply", {Computation("lt2", {"f32[]", "f32[]", "s32[]", "s32[]"}, "pred[]")});
  ExpectShape(Infer(pairs), "(f32[3,10], s32[3,10])");
  HloInstruction* bad = I(HloOpcode::kSort, {P("f32[3,10]"), P("s32[3,10]")});
  bad->mutable_attrs().dimensions = std::vector<int64_t>{1};
  Call(bad, "to_apply", {Computation("lt3", {"f32[]", "f32[]"}, "pred[]")});
  ExpectInvalid(Infer(bad), "must have 4 parameters but has 2");
  HloInstruction* map = I(HloOpcode::kMap, {P("f32[4]"), P("f32[4]")});
  Call(map, "to_apply", {Computation("gt", {"f32[]", "f32[]"}, "pred[]")});
  ExpectShape(Infer(map), "pred[4]");
}

// ---- Control flow -------------------------------------------------------------------------------

TEST_F(ShapeInferenceTest, CallReturnsRootShape) {
  HloInstruction* call = I(HloOpcode::kCall, {P("f32[2]"), P("s32[]")});
  Call(call, "to_apply", {Computation("callee", {"f32[2]", "s32[]"}, "(s32[], u8[3])")});
  ExpectShape(Infer(call), "(s32[], u8[3])");
  HloInstruction* wrong = I(HloOpcode::kCall, {P("f32[2]")});
  Call(wrong, "to_apply", {Computation("callee2", {"f32[2]", "s32[]"}, "s32[]")});
  ExpectInvalid(Infer(wrong), "must have 1 parameters but has 2");
  HloInstruction* mismatch = I(HloOpcode::kCall, {P("f32[3]")});
  Call(mismatch, "to_apply", {Computation("callee3", {"f32[2]"}, "s32[]")});
  ExpectInvalid(Infer(mismatch), "parameter 0 has shape f32[2] but is passed f32[3]");
  HloComputation* opaque = module_.AddComputation(std::make_unique<HloComputation>("opaque"));
  opaque->set_opaque(true);
  HloInstruction* opaque_call = I(HloOpcode::kCall, {P("f32[3]")});
  Call(opaque_call, "to_apply", {opaque});
  ExpectUnimplemented(Infer(opaque_call));
}

TEST_F(ShapeInferenceTest, WhileKeepsTheLoopState) {
  HloInstruction* loop = I(HloOpcode::kWhile, {P("(s32[], f32[4])")});
  Call(loop, "condition", {Computation("cond", {"(s32[], f32[4])"}, "pred[]")});
  Call(loop, "body", {Computation("body", {"(s32[], f32[4])"}, "(s32[], f32[4])")});
  ExpectShape(Infer(loop), "(s32[], f32[4])");
  HloInstruction* bad_body = I(HloOpcode::kWhile, {P("(s32[], f32[4])")});
  Call(bad_body, "condition", {Computation("cond2", {"(s32[], f32[4])"}, "pred[]")});
  Call(bad_body, "body", {Computation("body2", {"(s32[], f32[4])"}, "(s32[], f32[5])")});
  ExpectInvalid(Infer(bad_body), "body computation body2 returns (s32[], f32[5])");
  HloInstruction* bad_cond = I(HloOpcode::kWhile, {P("s32[]")});
  Call(bad_cond, "condition", {Computation("cond3", {"s32[]"}, "s32[]")});
  Call(bad_cond, "body", {Computation("body3", {"s32[]"}, "s32[]")});
  ExpectInvalid(Infer(bad_cond), "must return pred[]");
  HloInstruction* no_body = I(HloOpcode::kWhile, {P("s32[]")});
  Call(no_body, "condition", {Computation("cond4", {"s32[]"}, "pred[]")});
  ExpectInvalid(Infer(no_body), "missing attribute body");
}

TEST_F(ShapeInferenceTest, Conditional) {
  HloInstruction* cond = I(HloOpcode::kConditional, {P("pred[]"), P("f32[2]"), P("s32[]")});
  Call(cond, "true_computation", {Computation("t", {"f32[2]"}, "f32[3]")});
  Call(cond, "false_computation", {Computation("f", {"s32[]"}, "f32[3]")});
  ExpectShape(Infer(cond), "f32[3]");
  HloInstruction* indexed =
      I(HloOpcode::kConditional, {P("s32[]"), P("f32[2]"), P("f32[2]"), P("f32[2]")});
  Call(indexed, "branch_computations",
       {Computation("b0", {"f32[2]"}, "u8[]"), Computation("b1", {"f32[2]"}, "u8[]"),
        Computation("b2", {"f32[2]"}, "u8[]")},
       /*is_list=*/true);
  ExpectShape(Infer(indexed), "u8[]");
  HloInstruction* differ = I(HloOpcode::kConditional, {P("pred[]"), P("f32[2]"), P("f32[2]")});
  Call(differ, "true_computation", {Computation("t2", {"f32[2]"}, "f32[3]")});
  Call(differ, "false_computation", {Computation("f2", {"f32[2]"}, "f32[4]")});
  ExpectInvalid(Infer(differ), "branch 1 returns f32[4]");
  HloInstruction* selector = I(HloOpcode::kConditional, {P("s32[]"), P("f32[2]"), P("f32[2]")});
  Call(selector, "true_computation", {Computation("t3", {"f32[2]"}, "f32[3]")});
  Call(selector, "false_computation", {Computation("f3", {"f32[2]"}, "f32[3]")});
  ExpectInvalid(Infer(selector), "pred[]");
}

TEST_F(ShapeInferenceTest, TokensIdsAndPassThroughOps) {
  HloInstruction* token = I(HloOpcode::kAfterAll, {}, "token[]");
  ExpectShape(Infer(token), "token[]");
  ExpectShape(Infer(I(HloOpcode::kAfterAll, {token, token})), "token[]");
  ExpectInvalid(Infer(I(HloOpcode::kAfterAll, {P("f32[]")})), "must be a token");
  ExpectShape(Infer(I(HloOpcode::kPartitionId, {})), "u32[]");
  ExpectShape(Infer(I(HloOpcode::kReplicaId, {})), "u32[]");
  HloInstruction* size = I(HloOpcode::kGetDimensionSize, {P("f32[3,7]")});
  size->mutable_attrs().dimensions = std::vector<int64_t>{1};
  ExpectShape(Infer(size), "s32[]");
  size->mutable_attrs().dimensions = std::vector<int64_t>{2};
  ExpectInvalid(Infer(size), "out of range");
  ExpectShape(Infer(I(HloOpcode::kOptimizationBarrier, {P("(f32[2], s32[])")})), "(f32[2], s32[])");
  ExpectShape(Infer(I(HloOpcode::kDomain, {P("f32[128]")})), "f32[128]");
  ExpectShape(Infer(I(HloOpcode::kAddDependency, {P("f32[4]"), token})), "f32[4]");
  ExpectShape(Infer(I(HloOpcode::kOutfeed, {P("(f32[8])"), token})), "token[]");
  ExpectShape(Infer(I(HloOpcode::kSend, {P("u32[2]"), token})), "(u32[2], u32[], token[])");
  ExpectShape(Infer(I(HloOpcode::kRecvDone, {P("(u32[2], u32[], token[])")})), "(u32[2], token[])");
  HloInstruction* copy_start = I(HloOpcode::kCopyStart, {P("f32[4]")});
  ExpectShape(Infer(copy_start), "(f32[4], f32[4], u32[])");
  ExpectShape(Infer(I(HloOpcode::kCopyDone, {P("(f32[4], f32[4], u32[])")})), "f32[4]");
}

// ---- Collectives --------------------------------------------------------------------------------

HloInstruction* WithGroups(HloInstruction* instruction, std::vector<std::vector<int64_t>> groups) {
  instruction->mutable_attrs().replica_groups = ReplicaGroups(std::move(groups));
  return instruction;
}

TEST_F(ShapeInferenceTest, AllReduceKeepsOperandShapes) {
  HloInstruction* ar = I(HloOpcode::kAllReduce, {P("f32[8]")});
  Call(ar, "to_apply", {Reducer()});
  ExpectShape(Infer(ar), "f32[8]");
  HloInstruction* tuple = I(HloOpcode::kAllReduce, {P("f32[8]"), P("s32[2]")});
  Call(tuple, "to_apply", {Reducer()});
  ExpectShape(Infer(tuple), "(f32[8], s32[2])");
  HloInstruction* start = I(HloOpcode::kAllReduceStart, {P("u32[]"), P("u32[]")}, "(u32[], u32[])");
  ExpectShape(Infer(start), "(u32[], u32[])");
  ExpectShape(Infer(I(HloOpcode::kAllReduceDone, {start})), "(u32[], u32[])");
}

TEST_F(ShapeInferenceTest, AllGatherMultipliesByTheGroupSize) {
  HloInstruction* ag = WithGroups(I(HloOpcode::kAllGather, {P("f32[8,3]")}), {{0, 1, 2, 3}});
  ag->mutable_attrs().dimensions = std::vector<int64_t>{0};
  ExpectShape(Infer(ag), "f32[32,3]");
  HloInstruction* ag1 = WithGroups(I(HloOpcode::kAllGather, {P("f32[8,3]")}), {{0, 1}, {2, 3}});
  ag1->mutable_attrs().dimensions = std::vector<int64_t>{1};
  ExpectShape(Infer(ag1), "f32[8,6]");
}

TEST_F(ShapeInferenceTest, AllGatherParticipantCountPerGroupMode) {
  // Cross-replica, empty groups: all replicas.
  HloInstruction* replicas = I(HloOpcode::kAllGather, {P("f32[4]")});
  replicas->mutable_attrs().dimensions = std::vector<int64_t>{0};
  ExpectShape(Infer(replicas, /*partitions=*/8, /*replicas=*/2), "f32[8]");
  ExpectUnimplemented(Infer(replicas, 8, /*replicas unknown=*/0));
  // Cross-replica-and-partition: group size times the partition count.
  HloInstruction* crp = WithGroups(I(HloOpcode::kAllGather, {P("f32[4]")}), {{0, 1}});
  crp->mutable_attrs().dimensions = std::vector<int64_t>{0};
  crp->mutable_attrs().channel_id = 1;
  ExpectShape(Infer(crp, /*partitions=*/4, /*replicas=*/2), "f32[32]");
  ExpectUnimplemented(Infer(crp, /*partitions unknown=*/0, 2));
  // Flattened ids: the group size.
  HloInstruction* flat =
      WithGroups(I(HloOpcode::kAllGather, {P("f32[4]")}), {{0, 1, 2, 3}, {4, 5, 6, 7}});
  flat->mutable_attrs().dimensions = std::vector<int64_t>{0};
  flat->mutable_attrs().channel_id = 1;
  flat->mutable_attrs().use_global_device_ids = true;
  ExpectShape(Infer(flat, 8, 1), "f32[16]");
  // Flattened ids need explicit groups; global ids need a channel.
  HloInstruction* flat_empty = I(HloOpcode::kAllGather, {P("f32[4]")});
  flat_empty->mutable_attrs().dimensions = std::vector<int64_t>{0};
  flat_empty->mutable_attrs().channel_id = 1;
  flat_empty->mutable_attrs().use_global_device_ids = true;
  ExpectUnimplemented(Infer(flat_empty, 8, 1));
  HloInstruction* no_channel = WithGroups(I(HloOpcode::kAllGather, {P("f32[4]")}), {{0, 1}});
  no_channel->mutable_attrs().dimensions = std::vector<int64_t>{0};
  no_channel->mutable_attrs().use_global_device_ids = true;
  ExpectUnimplemented(Infer(no_channel, 8, 1));
}

TEST_F(ShapeInferenceTest, AllGatherErrorsAndVariadic) {
  HloInstruction* range = WithGroups(I(HloOpcode::kAllGather, {P("f32[4]")}), {{0, 1}});
  range->mutable_attrs().dimensions = std::vector<int64_t>{1};
  ExpectInvalid(Infer(range), "out of range");
  HloInstruction* missing = WithGroups(I(HloOpcode::kAllGather, {P("f32[4]")}), {{0, 1}});
  ExpectInvalid(Infer(missing), "missing attribute dimensions");
  HloInstruction* variadic =
      WithGroups(I(HloOpcode::kAllGather, {P("f32[4]"), P("s32[4,2]")}), {{0, 1, 2}});
  variadic->mutable_attrs().dimensions = std::vector<int64_t>{0};
  ExpectShape(Infer(variadic), "(f32[12], s32[12,2])");
}

TEST_F(ShapeInferenceTest, AllGatherStartAndDone) {
  HloInstruction* start = WithGroups(I(HloOpcode::kAllGatherStart, {P("u32[1,2]")}), {{0, 1}});
  start->mutable_attrs().dimensions = std::vector<int64_t>{0};
  ExpectShape(Infer(start), "(u32[1,2], u32[2,2])");
  HloInstruction* done = I(HloOpcode::kAllGatherDone, {P("(u32[1,2], u32[2,2])")});
  ExpectShape(Infer(done), "u32[2,2]");
  ExpectInvalid(Infer(I(HloOpcode::kAllGatherDone, {P("u32[2]")})), "must be a tuple");
}

TEST_F(ShapeInferenceTest, ReduceScatterDividesByTheGroupSize) {
  HloInstruction* rs = WithGroups(I(HloOpcode::kReduceScatter, {P("f32[8,4]")}), {{0, 1, 2, 3}});
  rs->mutable_attrs().dimensions = std::vector<int64_t>{0};
  Call(rs, "to_apply", {Reducer()});
  ExpectShape(Infer(rs), "f32[2,4]");
  HloInstruction* uneven =
      WithGroups(I(HloOpcode::kReduceScatter, {P("f32[6,4]")}), {{0, 1, 2, 3}});
  uneven->mutable_attrs().dimensions = std::vector<int64_t>{0};
  Call(uneven, "to_apply", {Reducer()});
  ExpectInvalid(Infer(uneven), "not divisible by the 4 participants");
  HloInstruction* partitions = I(HloOpcode::kReduceScatter, {P("f32[4,6]"), P("f32[4,9]")});
  partitions->mutable_attrs().dimensions = std::vector<int64_t>{1};
  Call(partitions, "to_apply", {Reducer()});
  ExpectShape(Infer(partitions, 8, /*replicas=*/3), "(f32[4,2], f32[4,3])");
}

TEST_F(ShapeInferenceTest, AllToAll) {
  HloInstruction* array = WithGroups(I(HloOpcode::kAllToAll, {P("f32[4,8]")}), {{0, 1, 2, 3}});
  array->mutable_attrs().dimensions = std::vector<int64_t>{1};
  ExpectShape(Infer(array), "f32[4,8]");
  HloInstruction* uneven = WithGroups(I(HloOpcode::kAllToAll, {P("f32[4,6]")}), {{0, 1, 2, 3}});
  uneven->mutable_attrs().dimensions = std::vector<int64_t>{1};
  ExpectInvalid(Infer(uneven), "not divisible by the 4 participants");
  HloInstruction* tuple =
      WithGroups(I(HloOpcode::kAllToAll, {P("u32[2]"), P("u32[2]")}), {{2, 1}, {3, 0}});
  ExpectShape(Infer(tuple), "(u32[2], u32[2])");
  HloInstruction* count =
      WithGroups(I(HloOpcode::kAllToAll, {P("u32[2]"), P("u32[2]")}), {{0, 1, 2}});
  ExpectInvalid(Infer(count), "one operand per participant (3)");
  // Cross-partition (channel_id): empty groups mean all partitions.
  HloInstruction* partitions = I(HloOpcode::kAllToAll, {P("u32[2]"), P("u32[2]")});
  partitions->mutable_attrs().channel_id = 1;
  ExpectInvalid(Infer(partitions, /*partitions=*/4, /*replicas=*/2), "participant (4)");
  ExpectShape(Infer(partitions, /*partitions=*/2, /*replicas=*/4), "(u32[2], u32[2])");
}

TEST_F(ShapeInferenceTest, CollectivePermuteAndAsyncForms) {
  HloInstruction* permute = I(HloOpcode::kCollectivePermute, {P("f32[4]")});
  ExpectShape(Infer(permute), "f32[4]");
  HloInstruction* start =
      I(HloOpcode::kCollectivePermuteStart, {P("f32[4]")}, "(f32[4], f32[4], u32[], u32[])");
  ExpectShape(Infer(start), "(f32[4], f32[4], u32[], u32[])");
  // Without a written shape the two u32[] contexts are assumed.
  ExpectShape(Infer(I(HloOpcode::kCollectivePermuteStart, {P("s8[3]")})),
              "(s8[3], s8[3], u32[], u32[])");
  // Context elements are taken from the written shape, as XLA does.
  HloInstruction* written =
      I(HloOpcode::kCollectivePermuteStart, {P("u32[2]")}, "(u32[2], u32[2])");
  ExpectShape(Infer(written), "(u32[2], u32[2])");
  ExpectShape(Infer(I(HloOpcode::kCollectivePermuteDone, {start})), "f32[4]");
  ExpectShape(Infer(I(HloOpcode::kCollectiveBroadcast, {P("f32[3]")})), "f32[3]");
  ExpectShape(Infer(I(HloOpcode::kRaggedAllToAll, {P("f32[8]"), P("f32[16]"), P("s32[2]"),
                                                   P("s32[2]"), P("s32[2]"), P("s32[2]")})),
              "f32[16]");
}

TEST_F(ShapeInferenceTest, AsyncStartWrapsTheCalledComputation) {
  HloInstruction* start = I(HloOpcode::kAsyncStart, {P("u32[2]")}, "((u32[2]), u32[4])");
  Call(start, "calls", {Computation("wrapped", {"u32[2]"}, "u32[4]")});
  ExpectShape(Infer(start), "((u32[2]), u32[4])");
  HloInstruction* with_state =
      I(HloOpcode::kAsyncStart, {P("u32[2]")}, "((u32[2]), u32[4], s32[])");
  Call(with_state, "calls", {Computation("wrapped2", {"u32[2]"}, "u32[4]")});
  ExpectShape(Infer(with_state), "((u32[2]), u32[4], s32[])");
  ExpectShape(Infer(I(HloOpcode::kAsyncDone, {start})), "u32[4]");
  HloInstruction* mismatch = I(HloOpcode::kAsyncStart, {P("u32[3]")});
  Call(mismatch, "calls", {Computation("wrapped3", {"u32[2]"}, "u32[4]")});
  ExpectInvalid(Infer(mismatch), "parameter 0 has shape u32[2] but is passed u32[3]");
}

// ---- Properties ---------------------------------------------------------------------------------

// Slice size equals the number of indices start, start+stride, ... below limit.
RC_GTEST_FIXTURE_PROP(ShapeInferenceTest, SliceSizeCountsTheTakenIndices, ()) {
  const int64_t size = *rc::gen::inRange<int64_t>(0, 40);
  const int64_t start = *rc::gen::inRange<int64_t>(0, size + 1);
  const int64_t limit = *rc::gen::inRange<int64_t>(start, size + 1);
  const int64_t stride = *rc::gen::inRange<int64_t>(1, 9);
  HloInstruction* slice = I(HloOpcode::kSlice, {P(absl::StrCat("f32[", size, "]"))});
  slice->mutable_attrs().slice = std::vector<SliceDim>{{start, limit, stride}};
  int64_t taken = 0;
  for (int64_t i = start; i < limit; i += stride) ++taken;
  absl::StatusOr<Shape> inferred = Infer(slice);
  RC_ASSERT(inferred.ok());
  RC_ASSERT(inferred->dimensions() == std::vector<int64_t>{taken});
}

// Pad size equals the length of the padded sequence built element by element.
RC_GTEST_FIXTURE_PROP(ShapeInferenceTest, PadSizeMatchesTheBuiltSequence, ()) {
  const int64_t size = *rc::gen::inRange<int64_t>(0, 12);
  const int64_t low = *rc::gen::inRange<int64_t>(-3, 5);
  const int64_t high = *rc::gen::inRange<int64_t>(-3, 5);
  const int64_t interior = *rc::gen::inRange<int64_t>(0, 4);
  HloInstruction* pad = I(HloOpcode::kPad, {P(absl::StrCat("f32[", size, "]")), P("f32[]")});
  pad->mutable_attrs().padding = std::vector<PadDim>{{low, high, interior}};
  // Build the interior-padded sequence, then add (or crop) the edges.
  int64_t length = 0;
  for (int64_t i = 0; i < size; ++i) length += (i == 0 ? 1 : 1 + interior);
  length += low + high;
  absl::StatusOr<Shape> inferred = Infer(pad);
  if (length < 0) {
    RC_ASSERT(!inferred.ok());
    RC_ASSERT(inferred.status().code() == absl::StatusCode::kInvalidArgument);
  } else {
    RC_ASSERT(inferred.ok());
    RC_ASSERT(inferred->dimensions() == std::vector<int64_t>{length});
  }
}

// A window output size equals the number of window positions that fit in the padded, dilated
// base when enumerated one by one.
RC_GTEST_FIXTURE_PROP(ShapeInferenceTest, ReduceWindowCountsWindowPositions, ()) {
  const int64_t base = *rc::gen::inRange<int64_t>(1, 12);
  WindowDim window;
  window.size = *rc::gen::inRange<int64_t>(1, 5);
  window.stride = *rc::gen::inRange<int64_t>(1, 4);
  window.pad_low = *rc::gen::inRange<int64_t>(0, 3);
  window.pad_high = *rc::gen::inRange<int64_t>(0, 3);
  window.lhs_dilation = *rc::gen::inRange<int64_t>(1, 3);
  window.rhs_dilation = *rc::gen::inRange<int64_t>(1, 3);
  HloInstruction* rw =
      I(HloOpcode::kReduceWindow, {P(absl::StrCat("f32[", base, "]")), P("f32[]")});
  rw->mutable_attrs().window = std::vector<WindowDim>{window};
  Call(rw, "to_apply", {Reducer()});
  const int64_t padded = window.pad_low + (base - 1) * window.lhs_dilation + 1 + window.pad_high;
  const int64_t span = (window.size - 1) * window.rhs_dilation + 1;
  int64_t positions = 0;
  for (int64_t start = 0; start + span <= padded; start += window.stride) ++positions;
  absl::StatusOr<Shape> inferred = Infer(rw);
  RC_ASSERT(inferred.ok());
  RC_ASSERT(inferred->dimensions() == std::vector<int64_t>{positions});
}

// Arbitrary attribute values never crash inference; results are valid shapes or errors.
RC_GTEST_FIXTURE_PROP(ShapeInferenceTest, ArbitraryAttributesNeverCrash, ()) {
  static const std::vector<HloOpcode> kOpcodes = {HloOpcode::kBroadcast,
                                                  HloOpcode::kConcatenate,
                                                  HloOpcode::kDot,
                                                  HloOpcode::kConvolution,
                                                  HloOpcode::kGather,
                                                  HloOpcode::kScatter,
                                                  HloOpcode::kPad,
                                                  HloOpcode::kReduce,
                                                  HloOpcode::kReduceWindow,
                                                  HloOpcode::kReverse,
                                                  HloOpcode::kTranspose,
                                                  HloOpcode::kSlice,
                                                  HloOpcode::kDynamicSlice,
                                                  HloOpcode::kDynamicUpdateSlice,
                                                  HloOpcode::kSort,
                                                  HloOpcode::kAllGather,
                                                  HloOpcode::kReduceScatter,
                                                  HloOpcode::kAllToAll,
                                                  HloOpcode::kGetTupleElement,
                                                  HloOpcode::kGetDimensionSize,
                                                  HloOpcode::kSelectAndScatter,
                                                  HloOpcode::kCollectivePermuteStart,
                                                  HloOpcode::kAllGatherStart,
                                                  HloOpcode::kSetDimensionSize};
  const HloOpcode opcode = *rc::gen::elementOf(kOpcodes);
  const auto small = rc::gen::inRange<int64_t>(-2, 6);
  const auto dim_list = rc::gen::container<std::vector<int64_t>>(rc::gen::inRange<int64_t>(-1, 5));
  const int operand_count = *rc::gen::inRange(0, 6);
  std::vector<HloInstruction*> operands;
  for (int i = 0; i < operand_count; ++i) {
    const int rank = *rc::gen::inRange(0, 4);
    std::vector<std::string> dims;
    for (int d = 0; d < rank; ++d) dims.push_back(absl::StrCat(*rc::gen::inRange(0, 5)));
    const bool integral = *rc::gen::arbitrary<bool>();
    operands.push_back(P(absl::StrCat(integral ? "s32[" : "f32[", absl::StrJoin(dims, ","), "]")));
  }
  HloInstruction* instruction = I(opcode, operands, *rc::gen::arbitrary<bool>() ? "f32[2,3]" : "");
  HloAttributes& attrs = instruction->mutable_attrs();
  if (*rc::gen::arbitrary<bool>()) attrs.dimensions = *dim_list;
  if (*rc::gen::arbitrary<bool>()) attrs.tuple_index = *small;
  if (*rc::gen::arbitrary<bool>()) attrs.dynamic_slice_sizes = *dim_list;
  if (*rc::gen::arbitrary<bool>()) {
    attrs.slice = std::vector<SliceDim>{{*small, *small, *small}, {*small, *small, *small}};
  }
  if (*rc::gen::arbitrary<bool>()) {
    attrs.padding = std::vector<PadDim>{{*small, *small, *small}};
  }
  if (*rc::gen::arbitrary<bool>()) {
    attrs.window = std::vector<WindowDim>{Win(*small, *small, *small, *small, *small, *small)};
  }
  if (*rc::gen::arbitrary<bool>()) {
    attrs.dot_dimension_numbers = DotDimensionNumbers{*dim_list, *dim_list, *dim_list, *dim_list};
  }
  if (*rc::gen::arbitrary<bool>()) {
    ConvolutionDimensionNumbers dn;
    dn.input_batch = *small;
    dn.input_feature = *small;
    dn.input_spatial = *dim_list;
    dn.kernel_input_feature = *small;
    dn.kernel_output_feature = *small;
    dn.kernel_spatial = *dim_list;
    dn.output_batch = *small;
    dn.output_feature = *small;
    dn.output_spatial = *dim_list;
    attrs.dim_labels = dn;
    attrs.feature_group_count = *small;
    attrs.batch_group_count = *small;
  }
  if (*rc::gen::arbitrary<bool>()) {
    GatherDimensionNumbers dn = GatherDims(*dim_list, *dim_list, *dim_list, *small);
    dn.operand_batching_dims = *dim_list;
    dn.start_indices_batching_dims = *dim_list;
    attrs.gather_dimension_numbers = dn;
    attrs.gather_slice_sizes = *dim_list;
  }
  if (*rc::gen::arbitrary<bool>()) {
    ScatterDimensionNumbers dn = ScatterDims(*dim_list, *dim_list, *dim_list, *small);
    dn.input_batching_dims = *dim_list;
    dn.scatter_indices_batching_dims = *dim_list;
    attrs.scatter_dimension_numbers = dn;
  }
  if (*rc::gen::arbitrary<bool>()) {
    attrs.replica_groups = ReplicaGroups(std::vector<std::vector<int64_t>>{*dim_list});
  }
  if (*rc::gen::arbitrary<bool>()) attrs.channel_id = 1;
  if (*rc::gen::arbitrary<bool>()) Call(instruction, "to_apply", {Reducer()});
  absl::StatusOr<Shape> inferred = Infer(instruction, *small, *small);
  if (inferred.ok()) {
    RC_ASSERT(inferred->IsValid());
  } else {
    RC_ASSERT(inferred.status().code() == absl::StatusCode::kInvalidArgument ||
              inferred.status().code() == absl::StatusCode::kUnimplemented);
  }
}

}  // namespace
}  // namespace spmdcheck
