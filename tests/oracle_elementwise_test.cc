// Golden tests for the elementwise op family (oracle/elementwise.cc): every expected value is
// worked out by hand (or by an independent reference written here), following the evaluator
// arithmetic of docs/xla-semantics §4.9: integer wrap-around and division edge cases, shifts out
// of range, bf16/f16 computed in f32 and rounded to nearest even, convert saturation, compare
// TOTALORDER, select with a scalar predicate, clamp, bitcast-convert and reduce-precision.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "ir/hlo_module.h"
#include "ir/hlo_parser.h"
#include "ir/literal.h"
#include "ir/shape.h"
#include "oracle/op_registry.h"

namespace spmdcheck::oracle {
namespace {

using ::testing::HasSubstr;

// A parsed module whose entry has parameters p0..pN-1 and an instruction named `r`.
struct Program {
  std::unique_ptr<HloModule> module;
  const HloInstruction* r = nullptr;
  std::vector<Shape> parameter_shapes;
};

Program Parse(const std::string& text) {
  Program program;
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  if (!parsed.ok()) return program;
  program.module = std::move(parsed->module);
  program.r = program.module->entry()->FindInstruction("r");
  EXPECT_NE(program.r, nullptr) << text;
  for (const HloInstruction* p : program.module->entry()->parameters()) {
    program.parameter_shapes.push_back(p->shape());
  }
  return program;
}

const OpRegistry& Registry() {
  static const OpRegistry* const registry = [] {
    auto* r = new OpRegistry();
    RegisterElementwiseOps(*r);
    return r;
  }();
  return *registry;
}

absl::StatusOr<Literal> Call(const HloInstruction& instruction,
                             const std::vector<const Literal*>& operands) {
  OpHandler handler = Registry().Find(instruction.opcode());
  if (handler == nullptr) return absl::NotFoundError("no handler");
  EvalEnv env;
  return handler(instruction, operands, env);
}

// Parses `text`, builds the operand literals from `args` (one per parameter, in XLA's literal
// text) and runs the handler of `r`.
absl::StatusOr<Literal> Eval(const std::string& text, const std::vector<std::string>& args) {
  Program program = Parse(text);
  if (program.r == nullptr) return absl::InternalError("bad test module");
  std::vector<Literal> literals;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::StatusOr<Literal> literal = ParseLiteral(args[i], program.parameter_shapes.at(i));
    EXPECT_TRUE(literal.ok()) << literal.status() << ": " << args[i];
    if (!literal.ok()) return literal.status();
    literals.push_back(*std::move(literal));
  }
  std::vector<const Literal*> operands;
  for (const Literal& literal : literals) operands.push_back(&literal);
  return Call(*program.r, operands);
}

// `ROOT r = OUT OP(p0, ..)` with parameters of the given shapes.
std::string Module(const std::vector<std::string>& param_shapes, const std::string& out_shape,
                   const std::string& op, const std::string& attrs = "") {
  std::string text = "HloModule m\n\nENTRY e {\n";
  std::vector<std::string> names;
  for (size_t i = 0; i < param_shapes.size(); ++i) {
    absl::StrAppend(&text, "  p", i, " = ", param_shapes[i], " parameter(", i, ")\n");
    names.push_back(absl::StrCat("p", i));
  }
  absl::StrAppend(&text, "  ROOT r = ", out_shape, " ", op, "(", absl::StrJoin(names, ", "), ")",
                  attrs.empty() ? "" : ", ", attrs, "\n}\n");
  return text;
}

// Runs OP on operands that all have `shape`; the result has `out_shape` (default: `shape`).
absl::StatusOr<Literal> Op(const std::string& op, const std::string& shape,
                           const std::vector<std::string>& args, const std::string& out_shape = "",
                           const std::string& attrs = "") {
  std::vector<std::string> shapes(args.size(), shape);
  return Eval(Module(shapes, out_shape.empty() ? shape : out_shape, op, attrs), args);
}

// The result's text (`f32[3] {1, 2, 3}`), or the error.
std::string Str(const absl::StatusOr<Literal>& result) {
  if (!result.ok()) return result.status().ToString();
  return result->ToString();
}

// As Str, with NaN signs ignored (x86 produces -nan for invalid operations).
std::string NanStr(const absl::StatusOr<Literal>& result) {
  return absl::StrReplaceAll(Str(result), {{"-nan", "nan"}});
}

absl::StatusCode Code(const absl::StatusOr<Literal>& result) { return result.status().code(); }

// Exact element values ("1, 1.0078125, nan"), for narrow floats whose text form is shortened.
std::string Values(const absl::StatusOr<Literal>& result) {
  if (!result.ok()) return result.status().ToString();
  std::vector<std::string> parts;
  for (int64_t i = 0; i < result->element_count(); ++i) {
    const double v = result->GetDouble(i);
    if (std::isnan(v)) {
      parts.push_back("nan");
    } else if (std::isinf(v)) {
      parts.push_back(v < 0 ? "-inf" : "inf");
    } else {
      char buffer[64];
      std::snprintf(buffer, sizeof(buffer), "%.17g", v);
      parts.push_back(buffer);
    }
  }
  return absl::StrJoin(parts, ", ");
}

// --- add / subtract / multiply -------------------------------------------------------------

TEST(ElementwiseAdd, FloatAndInteger) {
  EXPECT_EQ(Str(Op("add", "f32[3]", {"{1, 2.5, -3}", "{4, 0.25, 3}"})), "f32[3] {5, 2.75, 0}");
  EXPECT_EQ(Str(Op("add", "f64[2]", {"{0.5, 1e300}", "{0.25, 1e300}"})), "f64[2] {0.75, 2e+300}");
  // s32 wraps around.
  EXPECT_EQ(Str(Op("add", "s32[3]", {"{2147483647, -2147483648, 5}", "{1, -1, -7}"})),
            "s32[3] {-2147483648, 2147483647, -2}");
  EXPECT_EQ(Str(Op("add", "u8[2]", {"{250, 0}", "{10, 255}"})), "u8[2] {4, 255}");
  EXPECT_EQ(Str(Op("add", "s16[1]", {"{32767}", "{1}"})), "s16[1] {-32768}");
  EXPECT_EQ(Str(Op("add", "u64[1]", {"{18446744073709551615}", "{2}"})), "u64[1] {1}");
  EXPECT_EQ(Str(Op("add", "s4[2]", {"{7, -8}", "{1, -1}"})), "s4[2] {-8, 7}");
  EXPECT_EQ(Str(Op("add", "u4[2]", {"{15, 3}", "{1, 4}"})), "u4[2] {0, 7}");
  EXPECT_EQ(Str(Op("add", "c64[2]", {"{(1, 2), (0.5, 0)}", "{(3, -1), (0.25, 1)}"})),
            "c64[2] {(4, 1), (0.75, 1)}");
}

TEST(ElementwiseAdd, Bf16SumIsComputedInF32AndRoundedToNearestEven) {
  // bf16 has 8 significant bits: the spacing above 1 is 2^-7 = 0.0078125.
  // 1 + 2^-8 is a tie and rounds to the even 1; 1 + 3*2^-9 is above the tie and rounds up;
  // 1.0078125 + 2^-8 is a tie between 1.0078125 (odd) and 1.015625 (even).
  EXPECT_EQ(
      Values(Op("add", "bf16[4]",
                {"{1, 1, 1, 1.0078125}", "{0.00390625, 0.005859375, 0.0078125, 0.00390625}"})),
      "1, 1.0078125, 1.0078125, 1.015625");
  absl::StatusOr<Literal> r = Op("add", "bf16[2]", {"{1, 1}", "{0.00390625, 0.005859375}"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->GetBits(0), 0x3F80u);
  EXPECT_EQ(r->GetBits(1), 0x3F81u);
  // Overflow to inf, and a NaN operand gives the quiet NaN.
  absl::StatusOr<Literal> big = Op("add", "bf16[2]", {"{3.38e38, nan}", "{3.38e38, 1}"});
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->GetBits(0), 0x7F80u);
  EXPECT_EQ(big->GetBits(1) & 0x7FFFu, 0x7FC0u);
}

TEST(ElementwiseAdd, F16AndF8Rounding) {
  // f16 has 11 significant bits: the spacing above 1 is 2^-10.
  EXPECT_EQ(Values(Op("add", "f16[2]", {"{1, 1}", "{0.00048828125, 0.000732421875}"})),
            "1, 1.0009765625");
  EXPECT_EQ(Str(Op("add", "f16[1]", {"{65504}", "{16}"})), "f16[1] {inf}");
  // f8e5m2 has 3 significant bits: spacing 0.25 above 1. 1.125 ties to 1; 1.375 ties to 1.5.
  EXPECT_EQ(Str(Op("add", "f8e5m2[2]", {"{1, 1}", "{0.125, 0.375}"})), "f8e5m2[2] {1, 1.5}");
}

TEST(ElementwiseSubtractMultiply, WrapAndRounding) {
  EXPECT_EQ(Str(Op("subtract", "s32[2]", {"{-2147483648, 5}", "{1, 7}"})),
            "s32[2] {2147483647, -2}");
  EXPECT_EQ(Str(Op("subtract", "u32[1]", {"{0}", "{1}"})), "u32[1] {4294967295}");
  EXPECT_EQ(Str(Op("subtract", "f32[2]", {"{-0, 1}", "{0, 1}"})), "f32[2] {-0, 0}");
  EXPECT_EQ(Str(Op("multiply", "s32[3]", {"{65536, -2147483648, -3}", "{65536, -1, 7}"})),
            "s32[3] {0, -2147483648, -21}");
  // (2^16 - 1)^2 = 2^32 - 2^17 + 1 = 1 (mod 2^16).
  EXPECT_EQ(Str(Op("multiply", "u16[1]", {"{65535}", "{65535}"})), "u16[1] {1}");
  EXPECT_EQ(Str(Op("multiply", "s8[2]", {"{16, -128}", "{16, -1}"})), "s8[2] {0, -128}");
  // 1.0078125^2 = 1.01568603515625 -> nearest bf16 is 1.015625.
  EXPECT_EQ(Values(Op("multiply", "bf16[1]", {"{1.0078125}", "{1.0078125}"})), "1.015625");
  EXPECT_EQ(Str(Op("multiply", "c64[1]", {"{(1, 2)}", "{(3, 4)}"})), "c64[1] {(-5, 10)}");
}

// --- divide / remainder -------------------------------------------------------------------

TEST(ElementwiseDivide, IntegerEdgeCases) {
  EXPECT_EQ(Str(Op("divide", "s32[7]",
                   {"{7, -7, 7, -7, 5, -2147483648, 0}", "{2, 2, -2, -2, 0, -1, 0}"})),
            "s32[7] {3, -3, -3, 3, -1, -2147483648, -1}");
  EXPECT_EQ(Str(Op("divide", "u32[3]", {"{7, 5, 0}", "{2, 0, 0}"})),
            "u32[3] {3, 4294967295, 4294967295}");
  EXPECT_EQ(Str(Op("divide", "s8[2]", {"{-128, 9}", "{-1, 0}"})), "s8[2] {-128, -1}");
  EXPECT_EQ(Str(Op("divide", "u8[1]", {"{9}", "{0}"})), "u8[1] {255}");
  EXPECT_EQ(Str(Op("divide", "s64[2]", {"{-9223372036854775808, 1}", "{-1, 0}"})),
            "s64[2] {-9223372036854775808, -1}");
  EXPECT_EQ(Str(Op("divide", "s4[2]", {"{-8, 7}", "{-1, 0}"})), "s4[2] {-8, -1}");
}

TEST(ElementwiseDivide, Float) {
  absl::StatusOr<Literal> r = Op("divide", "f32[4]", {"{1, -1, 0, 1}", "{0, 0, 0, 3}"});
  EXPECT_EQ(NanStr(r), "f32[4] {inf, -inf, nan, 0.33333334}");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->GetDouble(3), static_cast<double>(static_cast<float>(1.0 / 3.0)));
  EXPECT_EQ(Str(Op("divide", "c64[1]", {"{(-5, 10)}", "{(3, 4)}"})), "c64[1] {(1, 2)}");
}

TEST(ElementwiseRemainder, IntegerAndFloat) {
  EXPECT_EQ(Str(Op("remainder", "s32[7]",
                   {"{7, -7, 7, -7, 5, -2147483648, -2147483648}", "{3, 3, -3, -3, 0, -1, 0}"})),
            "s32[7] {1, -1, 1, -1, 5, 0, -2147483648}");
  EXPECT_EQ(Str(Op("remainder", "u8[2]", {"{7, 9}", "{0, 4}"})), "u8[2] {7, 1}");
  EXPECT_EQ(Str(Op("remainder", "s8[1]", {"{-128}", "{-1}"})), "s8[1] {0}");
  EXPECT_EQ(NanStr(Op("remainder", "f32[5]", {"{5.5, -5.5, 5.5, 1, inf}", "{2, 2, -2, 0, 2}"})),
            "f32[5] {1.5, -1.5, 1.5, nan, nan}");
  EXPECT_EQ(Code(Op("remainder", "c64[1]", {"{(1, 1)}", "{(1, 1)}"})),
            absl::StatusCode::kInvalidArgument);
}

// --- maximum / minimum / power / atan2 ----------------------------------------------------

TEST(ElementwiseMaxMin, NanPropagatesAndTiesKeepTheFirstOperand) {
  EXPECT_EQ(NanStr(Op("maximum", "f32[5]", {"{1, nan, 2, -1, -0}", "{nan, 1, 3, -2, 0}"})),
            "f32[5] {nan, nan, 3, -1, -0}");
  EXPECT_EQ(NanStr(Op("minimum", "f32[5]", {"{1, nan, 2, -1, 0}", "{nan, 1, 3, -2, -0}"})),
            "f32[5] {nan, nan, 2, -2, 0}");
  EXPECT_EQ(NanStr(Op("maximum", "bf16[2]", {"{nan, 1}", "{1, nan}"})), "bf16[2] {nan, nan}");
  EXPECT_EQ(NanStr(Op("minimum", "f64[2]", {"{-inf, 1}", "{nan, -inf}"})), "f64[2] {nan, -inf}");
  EXPECT_EQ(Str(Op("maximum", "s32[2]", {"{-5, 3}", "{2, -7}"})), "s32[2] {2, 3}");
  EXPECT_EQ(Str(Op("minimum", "u32[2]", {"{4294967295, 0}", "{1, 0}"})), "u32[2] {1, 0}");
  EXPECT_EQ(Str(Op("maximum", "pred[3]", {"{true, false, false}", "{false, false, true}"})),
            "pred[3] {true, false, true}");
  EXPECT_EQ(Str(Op("minimum", "pred[3]", {"{true, false, true}", "{true, true, false}"})),
            "pred[3] {true, false, false}");
}

TEST(ElementwisePower, FloatAndInteger) {
  EXPECT_EQ(Str(Op("power", "f32[6]", {"{2, 0, 2, 1, nan, 4}", "{10, 0, -1, nan, 0, 0.5}"})),
            "f32[6] {1024, 1, 0.5, 1, 1, 2}");
  // Negative exponents give 0 unless the base is 1; 0^0 = 1; results wrap.
  EXPECT_EQ(Str(Op("power", "s32[10]",
                   {"{2, 3, 1, -1, -2, 0, 2, 0, 5, -1}", "{10, -1, -5, -1, 3, 0, 31, 5, 0, 3}"})),
            "s32[10] {1024, 0, 1, 0, -8, 1, -2147483648, 0, 1, -1}");
  EXPECT_EQ(Str(Op("power", "u8[3]", {"{3, 3, 2}", "{5, 6, 8}"})), "u8[3] {243, 217, 0}");
  // 3^40 = 12157665459056928801 > 2^63 wraps to 3^40 - 2^64.
  EXPECT_EQ(Str(Op("power", "s64[1]", {"{3}", "{40}"})), "s64[1] {-6289078614652622815}");
}

TEST(ElementwiseAtan2, Quadrants) {
  absl::StatusOr<Literal> r = Op("atan2", "f32[4]", {"{0, 1, 0, -0}", "{-1, 0, 1, -1}"});
  ASSERT_TRUE(r.ok()) << r.status();
  const double pi = static_cast<float>(3.14159265358979323846);
  const double half_pi = static_cast<float>(1.57079632679489661923);
  EXPECT_EQ(r->GetDouble(0), pi);
  EXPECT_EQ(r->GetDouble(1), half_pi);
  EXPECT_EQ(r->ElementToString(2), "0");
  EXPECT_EQ(r->GetDouble(3), -pi);
  EXPECT_EQ(Code(Op("atan2", "s32[1]", {"{1}", "{1}"})), absl::StatusCode::kInvalidArgument);
}

// --- bitwise logic and shifts --------------------------------------------------------------

TEST(ElementwiseLogic, PredAndIntegers) {
  const std::vector<std::string> p = {"{true, true, false, false}", "{true, false, true, false}"};
  EXPECT_EQ(Str(Op("and", "pred[4]", p)), "pred[4] {true, false, false, false}");
  EXPECT_EQ(Str(Op("or", "pred[4]", p)), "pred[4] {true, true, true, false}");
  EXPECT_EQ(Str(Op("xor", "pred[4]", p)), "pred[4] {false, true, true, false}");
  EXPECT_EQ(Str(Op("not", "pred[2]", {"{true, false}"})), "pred[2] {false, true}");
  EXPECT_EQ(Str(Op("and", "s32[2]", {"{12, -1}", "{10, 7}"})), "s32[2] {8, 7}");
  EXPECT_EQ(Str(Op("or", "s32[2]", {"{12, -1}", "{10, 7}"})), "s32[2] {14, -1}");
  EXPECT_EQ(Str(Op("xor", "s32[2]", {"{12, -1}", "{10, 7}"})), "s32[2] {6, -8}");
  EXPECT_EQ(Str(Op("not", "s32[3]", {"{0, -1, 5}"})), "s32[3] {-1, 0, -6}");
  EXPECT_EQ(Str(Op("not", "u8[3]", {"{0, 255, 15}"})), "u8[3] {255, 0, 240}");
  EXPECT_EQ(Str(Op("not", "u4[2]", {"{0, 5}"})), "u4[2] {15, 10}");
  EXPECT_EQ(Code(Op("and", "f32[1]", {"{1}", "{1}"})), absl::StatusCode::kInvalidArgument);
}

TEST(ElementwiseShift, OutOfRangeAmounts) {
  EXPECT_EQ(Str(Op("shift-left", "s32[6]", {"{1, 1, 1, 1, -1, 3}", "{31, 32, -1, 0, 4, 33}"})),
            "s32[6] {-2147483648, 0, 0, 1, -16, 0}");
  EXPECT_EQ(Str(Op("shift-right-logical", "s32[5]", {"{-8, -8, 8, 1, -1}", "{1, 33, -1, 0, 31}"})),
            "s32[5] {2147483644, 0, 0, 1, 1}");
  EXPECT_EQ(Str(Op("shift-right-arithmetic", "s32[6]",
                   {"{-8, -8, 8, -1, 7, -2147483648}", "{1, 40, 40, -1, 2, 31}"})),
            "s32[6] {-4, -1, 0, -1, 1, -1}");
  // Narrow types shift in their own width.
  EXPECT_EQ(Str(Op("shift-right-logical", "s8[3]", {"{-1, -128, -1}", "{1, 7, 8}"})),
            "s8[3] {127, 1, 0}");
  EXPECT_EQ(Str(Op("shift-right-arithmetic", "s8[2]", {"{-128, 64}", "{7, 8}"})), "s8[2] {-1, 0}");
  EXPECT_EQ(Str(Op("shift-left", "s8[2]", {"{1, 1}", "{7, 8}"})), "s8[2] {-128, 0}");
  // shift-right-arithmetic of an unsigned type reads the value as signed.
  EXPECT_EQ(Str(Op("shift-right-arithmetic", "u8[3]", {"{128, 128, 127}", "{1, 9, 1}"})),
            "u8[3] {192, 255, 63}");
  EXPECT_EQ(Str(Op("shift-left", "u32[2]", {"{1, 1}", "{31, 4294967295}"})),
            "u32[2] {2147483648, 0}");
  EXPECT_EQ(Str(Op("shift-right-logical", "u32[1]", {"{4294967295}", "{28}"})), "u32[1] {15}");
  EXPECT_EQ(Str(Op("shift-left", "s64[2]", {"{1, 1}", "{63, 64}"})),
            "s64[2] {-9223372036854775808, 0}");
  EXPECT_EQ(Str(Op("shift-right-logical", "u16[1]", {"{65535}", "{16}"})), "u16[1] {0}");
  EXPECT_EQ(Str(Op("shift-right-arithmetic", "s4[2]", {"{-8, -8}", "{2, 4}"})), "s4[2] {-2, -1}");
}

// --- unary arithmetic -----------------------------------------------------------------------

TEST(ElementwiseUnary, NegateAbsSign) {
  EXPECT_EQ(Str(Op("negate", "s32[3]", {"{-2147483648, 5, 0}"})), "s32[3] {-2147483648, -5, 0}");
  EXPECT_EQ(Str(Op("negate", "f32[3]", {"{0, -1.5, inf}"})), "f32[3] {-0, 1.5, -inf}");
  EXPECT_EQ(Str(Op("negate", "u8[2]", {"{1, 0}"})), "u8[2] {255, 0}");
  EXPECT_EQ(Str(Op("negate", "c64[1]", {"{(1, -2)}"})), "c64[1] {(-1, 2)}");
  EXPECT_EQ(Str(Op("abs", "s32[3]", {"{-2147483648, -5, 7}"})), "s32[3] {-2147483648, 5, 7}");
  EXPECT_EQ(Str(Op("abs", "s8[1]", {"{-128}"})), "s8[1] {-128}");
  EXPECT_EQ(NanStr(Op("abs", "f32[4]", {"{-0, -inf, -2.5, -nan}"})), "f32[4] {0, inf, 2.5, nan}");
  EXPECT_EQ(Str(Op("abs", "c64[2]", {"{(3, 4), (-5, 12)}"}, "f32[2]")), "f32[2] {5, 13}");
  EXPECT_EQ(Str(Op("abs", "c128[1]", {"{(-3, 4)}"}, "f64[1]")), "f64[1] {5}");
  EXPECT_EQ(NanStr(Op("sign", "f32[6]", {"{-2, -0, 0, 3, nan, -inf}"})),
            "f32[6] {-1, -0, 0, 1, nan, -1}");
  EXPECT_EQ(Str(Op("sign", "s32[3]", {"{-5, 0, 7}"})), "s32[3] {-1, 0, 1}");
  EXPECT_EQ(Str(Op("sign", "bf16[2]", {"{-0.5, 100}"})), "bf16[2] {-1, 1}");
  EXPECT_EQ(Str(Op("sign", "c64[2]", {"{(3, 4), (0, 0)}"})), "c64[2] {(0.6, 0.8), (0, 0)}");
  EXPECT_EQ(Code(Op("negate", "pred[1]", {"{true}"})), absl::StatusCode::kInvalidArgument);
}

TEST(ElementwiseUnary, ExactMathValues) {
  EXPECT_EQ(Str(Op("exponential", "f32[3]", {"{0, -inf, inf}"})), "f32[3] {1, 0, inf}");
  EXPECT_EQ(NanStr(Op("log", "f32[4]", {"{1, 0, -1, inf}"})), "f32[4] {0, -inf, nan, inf}");
  EXPECT_EQ(NanStr(Op("sqrt", "f32[5]", {"{4, 0, -0, -1, inf}"})), "f32[5] {2, 0, -0, nan, inf}");
  EXPECT_EQ(Str(Op("rsqrt", "f32[3]", {"{4, 0, 0.25}"})), "f32[3] {0.5, inf, 2}");
  EXPECT_EQ(Str(Op("cbrt", "f32[3]", {"{27, -8, 0}"})), "f32[3] {3, -2, 0}");
  EXPECT_EQ(Str(Op("tanh", "f32[3]", {"{0, inf, -inf}"})), "f32[3] {0, 1, -1}");
  EXPECT_EQ(Str(Op("logistic", "f32[3]", {"{0, inf, -inf}"})), "f32[3] {0.5, 1, 0}");
  EXPECT_EQ(Str(Op("sine", "f32[2]", {"{0, -0}"})), "f32[2] {0, -0}");
  EXPECT_EQ(Str(Op("cosine", "f32[1]", {"{0}"})), "f32[1] {1}");
  EXPECT_EQ(Str(Op("tan", "f32[1]", {"{0}"})), "f32[1] {0}");
  EXPECT_EQ(Str(Op("exponential-minus-one", "f32[2]", {"{0, -inf}"})), "f32[2] {0, -1}");
  EXPECT_EQ(Str(Op("log-plus-one", "f32[2]", {"{0, -1}"})), "f32[2] {0, -inf}");
  EXPECT_EQ(Str(Op("erf", "f32[2]", {"{0, inf}"})), "f32[2] {0, 1}");
  EXPECT_EQ(Str(Op("sqrt", "c64[1]", {"{(-4, 0)}"})), "c64[1] {(0, 2)}");
  EXPECT_EQ(Str(Op("exponential", "c64[1]", {"{(0, 0)}"})), "c64[1] {(1, 0)}");
  EXPECT_EQ(Code(Op("sine", "s32[1]", {"{1}"})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(Op("exponential-minus-one", "c64[1]", {"{(1, 1)}"})),
            absl::StatusCode::kUnimplemented);
}

TEST(ElementwiseUnary, InexactMathValuesRoundToTheElementType) {
  absl::StatusOr<Literal> e = Op("exponential", "f32[1]", {"{1}"});
  ASSERT_TRUE(e.ok());
  // e = 2.71828182845904523536...; the nearest f32 is 2.71828174591064453125 (within one ulp).
  EXPECT_NEAR(e->GetDouble(0), 2.71828182845904523536, std::ldexp(1.0, -22));
  // bf16 exp(1): computed in f32 and rounded to 8 significant bits: 2.71875.
  absl::StatusOr<Literal> b = Op("exponential", "bf16[1]", {"{1}"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->GetDouble(0), 2.71875);
  absl::StatusOr<Literal> d = Op("exponential", "f64[1]", {"{1}"});
  ASSERT_TRUE(d.ok());
  EXPECT_NEAR(d->GetDouble(0), 2.71828182845904523536, 1e-15);
  absl::StatusOr<Literal> t = Op("tanh", "f16[1]", {"{0.5}"});
  ASSERT_TRUE(t.ok());
  // tanh(0.5) = 0.46211715726...; f16 spacing in [0.25, 0.5) is 2^-12: nearest is 1893 * 2^-12.
  EXPECT_EQ(t->GetDouble(0), 1893.0 / 4096.0);
}

TEST(ElementwiseUnary, Rounding) {
  const std::string x = "{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -0}";
  EXPECT_EQ(Str(Op("round-nearest-even", "f32[8]", {x})), "f32[8] {-2, -2, -0, 0, 2, 2, 3, -0}");
  EXPECT_EQ(Str(Op("round-nearest-afz", "f32[8]", {x})), "f32[8] {-3, -2, -1, 1, 2, 3, 3, -0}");
  EXPECT_EQ(Str(Op("floor", "f32[8]", {x})), "f32[8] {-3, -2, -1, 0, 1, 2, 2, -0}");
  EXPECT_EQ(Str(Op("ceil", "f32[8]", {x})), "f32[8] {-2, -1, -0, 1, 2, 3, 3, -0}");
  EXPECT_EQ(Str(Op("round-nearest-even", "bf16[2]", {"{2.5, 3.5}"})), "bf16[2] {2, 4}");
  EXPECT_EQ(Code(Op("floor", "s32[1]", {"{1}"})), absl::StatusCode::kInvalidArgument);
}

TEST(ElementwiseUnary, PopcntAndClzUseTheElementWidth) {
  EXPECT_EQ(Str(Op("popcnt", "s32[5]", {"{0, 1, -1, 240, -2147483648}"})),
            "s32[5] {0, 1, 32, 4, 1}");
  EXPECT_EQ(Str(Op("count-leading-zeros", "s32[5]", {"{0, 1, -1, 240, -2147483648}"})),
            "s32[5] {32, 31, 0, 24, 0}");
  EXPECT_EQ(Str(Op("popcnt", "s8[2]", {"{-1, 127}"})), "s8[2] {8, 7}");
  EXPECT_EQ(Str(Op("count-leading-zeros", "s8[3]", {"{1, 0, -1}"})), "s8[3] {7, 8, 0}");
  EXPECT_EQ(Str(Op("count-leading-zeros", "u64[2]", {"{1, 0}"})), "u64[2] {63, 64}");
  EXPECT_EQ(Str(Op("popcnt", "u64[1]", {"{18446744073709551615}"})), "u64[1] {64}");
  EXPECT_EQ(Str(Op("count-leading-zeros", "u16[1]", {"{256}"})), "u16[1] {7}");
  EXPECT_EQ(Str(Op("count-leading-zeros", "s4[2]", {"{1, -1}"})), "s4[2] {3, 0}");
  EXPECT_EQ(Str(Op("popcnt", "s4[1]", {"{-1}"})), "s4[1] {4}");
  EXPECT_EQ(Code(Op("popcnt", "pred[1]", {"{true}"})), absl::StatusCode::kInvalidArgument);
}

TEST(ElementwiseUnary, IsFinite) {
  EXPECT_EQ(Str(Op("is-finite", "f32[5]", {"{1, inf, -inf, nan, -0}"}, "pred[5]")),
            "pred[5] {true, false, false, false, true}");
  EXPECT_EQ(Str(Op("is-finite", "bf16[2]", {"{inf, 1}"}, "pred[2]")), "pred[2] {false, true}");
  EXPECT_EQ(Str(Op("is-finite", "f16[2]", {"{65504, nan}"}, "pred[2]")), "pred[2] {true, false}");
  EXPECT_EQ(Code(Op("is-finite", "s32[1]", {"{1}"}, "pred[1]")),
            absl::StatusCode::kInvalidArgument);
}

// --- compare -------------------------------------------------------------------------------

std::string Compare(const std::string& shape, const std::string& direction, const std::string& a,
                    const std::string& b, const std::string& type = "") {
  const std::string dims = shape.substr(shape.find('['));
  std::string attrs = absl::StrCat("direction=", direction);
  if (!type.empty()) absl::StrAppend(&attrs, ", type=", type);
  return Str(Op("compare", shape, {a, b}, "pred" + dims, attrs));
}

TEST(ElementwiseCompare, FloatPartialOrder) {
  const std::string a = "{nan, nan, 1, -0, 1, 2}";
  const std::string b = "{nan, 1, nan, 0, 2, 2}";
  EXPECT_EQ(Compare("f32[6]", "EQ", a, b), "pred[6] {false, false, false, true, false, true}");
  EXPECT_EQ(Compare("f32[6]", "NE", a, b), "pred[6] {true, true, true, false, true, false}");
  EXPECT_EQ(Compare("f32[6]", "LT", a, b), "pred[6] {false, false, false, false, true, false}");
  EXPECT_EQ(Compare("f32[6]", "LE", a, b), "pred[6] {false, false, false, true, true, true}");
  EXPECT_EQ(Compare("f32[6]", "GT", a, b), "pred[6] {false, false, false, false, false, false}");
  EXPECT_EQ(Compare("f32[6]", "GE", a, b), "pred[6] {false, false, false, true, false, true}");
  // type=FLOAT is the default for floats.
  EXPECT_EQ(Compare("f32[6]", "GE", a, b, "FLOAT"),
            "pred[6] {false, false, false, true, false, true}");
  EXPECT_EQ(Compare("bf16[2]", "EQ", "{-0, nan}", "{0, nan}"), "pred[2] {true, false}");
}

TEST(ElementwiseCompare, TotalOrder) {
  // -NaN < -inf < -1 < -0 < +0 < 1 < inf < NaN.
  const std::string a = "{-nan, -inf, -1, -0, 0, 1, inf}";
  const std::string b = "{-inf, -1, -0, 0, 1, inf, nan}";
  const std::string all_true = "pred[7] {true, true, true, true, true, true, true}";
  const std::string all_false = "pred[7] {false, false, false, false, false, false, false}";
  EXPECT_EQ(Compare("f32[7]", "LT", a, b, "TOTALORDER"), all_true);
  EXPECT_EQ(Compare("f32[7]", "LE", a, b, "TOTALORDER"), all_true);
  EXPECT_EQ(Compare("f32[7]", "NE", a, b, "TOTALORDER"), all_true);
  EXPECT_EQ(Compare("f32[7]", "GT", a, b, "TOTALORDER"), all_false);
  EXPECT_EQ(Compare("f32[7]", "GE", a, b, "TOTALORDER"), all_false);
  EXPECT_EQ(Compare("f32[7]", "EQ", a, b, "TOTALORDER"), all_false);
  EXPECT_EQ(Compare("f32[7]", "GT", b, a, "TOTALORDER"), all_true);
  // Equal bits are equal, NaN included; -0 and +0 differ.
  EXPECT_EQ(Compare("f32[3]", "EQ", "{nan, -0, 1}", "{nan, 0, 1}", "TOTALORDER"),
            "pred[3] {true, false, true}");
  EXPECT_EQ(Compare("f64[3]", "LT", "{-0, -nan, 5}", "{0, -inf, nan}", "TOTALORDER"),
            "pred[3] {true, true, true}");
  EXPECT_EQ(Compare("bf16[3]", "LT", "{-0, nan, -nan}", "{0, inf, -inf}", "TOTALORDER"),
            "pred[3] {true, false, true}");
  EXPECT_EQ(Compare("f16[3]", "GE", "{0, nan, -0}", "{-0, nan, -0}", "TOTALORDER"),
            "pred[3] {true, true, true}");
}

TEST(ElementwiseCompare, IntegersPredAndComplex) {
  EXPECT_EQ(Compare("s32[3]", "LT", "{-1, 5, -2147483648}", "{1, 5, 2147483647}", "SIGNED"),
            "pred[3] {true, false, true}");
  EXPECT_EQ(Compare("s32[3]", "LE", "{-1, 5, 6}", "{1, 5, 5}"), "pred[3] {true, true, false}");
  EXPECT_EQ(Compare("u32[2]", "GT", "{4294967295, 0}", "{1, 0}", "UNSIGNED"),
            "pred[2] {true, false}");
  EXPECT_EQ(Compare("u8[2]", "GE", "{255, 3}", "{0, 4}"), "pred[2] {true, false}");
  EXPECT_EQ(Compare("s8[2]", "NE", "{-128, 3}", "{127, 3}"), "pred[2] {true, false}");
  EXPECT_EQ(Compare("pred[4]", "LT", "{false, false, true, true}", "{false, true, false, true}"),
            "pred[4] {false, true, false, false}");
  EXPECT_EQ(Compare("pred[2]", "EQ", "{true, false}", "{true, true}", "UNSIGNED"),
            "pred[2] {true, false}");
  EXPECT_EQ(Compare("c64[2]", "EQ", "{(1, 2), (1, 2)}", "{(1, 2), (1, 3)}"),
            "pred[2] {true, false}");
  EXPECT_EQ(Compare("c64[2]", "NE", "{(1, 2), (1, 2)}", "{(1, 2), (1, 3)}"),
            "pred[2] {false, true}");
  EXPECT_EQ(Compare("s4[2]", "LT", "{-8, 7}", "{7, -8}"), "pred[2] {true, false}");
}

TEST(ElementwiseCompare, InconsistentComparisonTypesAreRejected) {
  EXPECT_THAT(Compare("s32[1]", "LT", "{1}", "{2}", "UNSIGNED"), HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(Compare("u32[1]", "LT", "{1}", "{2}", "SIGNED"), HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(Compare("f32[1]", "LT", "{1}", "{2}", "SIGNED"), HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(Compare("s32[1]", "LT", "{1}", "{2}", "TOTALORDER"), HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(Compare("c64[1]", "LT", "{(1, 0)}", "{(2, 0)}"), HasSubstr("INVALID_ARGUMENT"));
  // Operand types that differ.
  EXPECT_EQ(Code(Eval(Module({"f32[1]", "s32[1]"}, "pred[1]", "compare", "direction=EQ"),
                      {"{1}", "{1}"})),
            absl::StatusCode::kInvalidArgument);
}

// --- select / clamp ------------------------------------------------------------------------

TEST(ElementwiseSelect, ArrayAndScalarPredicate) {
  EXPECT_EQ(Str(Eval(Module({"pred[3]", "f32[3]", "f32[3]"}, "f32[3]", "select"),
                     {"{true, false, true}", "{1, 2, 3}", "{10, 20, 30}"})),
            "f32[3] {1, 20, 3}");
  const std::string scalar = Module({"pred[]", "s32[2,2]", "s32[2,2]"}, "s32[2,2]", "select");
  EXPECT_EQ(Str(Eval(scalar, {"true", "{{1, 2}, {3, 4}}", "{{5, 6}, {7, 8}}"})),
            "s32[2,2] {{1, 2}, {3, 4}}");
  EXPECT_EQ(Str(Eval(scalar, {"false", "{{1, 2}, {3, 4}}", "{{5, 6}, {7, 8}}"})),
            "s32[2,2] {{5, 6}, {7, 8}}");
  EXPECT_EQ(Str(Eval(Module({"pred[2]", "bf16[2]", "bf16[2]"}, "bf16[2]", "select"),
                     {"{false, true}", "{1.5, 2.5}", "{-1, -2}"})),
            "bf16[2] {-1, 2.5}");
  EXPECT_EQ(Str(Eval(Module({"pred[2]", "c128[2]", "c128[2]"}, "c128[2]", "select"),
                     {"{false, true}", "{(1, 2), (3, 4)}", "{(5, 6), (7, 8)}"})),
            "c128[2] {(5, 6), (3, 4)}");
  EXPECT_EQ(Str(Eval(Module({"pred[2]", "pred[2]", "pred[2]"}, "pred[2]", "select"),
                     {"{false, true}", "{true, true}", "{false, false}"})),
            "pred[2] {false, true}");
  // A non-pred predicate and mismatched dims are rejected.
  EXPECT_EQ(Code(Eval(Module({"s32[2]", "f32[2]", "f32[2]"}, "f32[2]", "select"),
                      {"{1, 0}", "{1, 2}", "{3, 4}"})),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(Eval(Module({"pred[3]", "f32[2]", "f32[2]"}, "f32[2]", "select"),
                      {"{true, true, false}", "{1, 2}", "{3, 4}"})),
            absl::StatusCode::kInvalidArgument);
}

TEST(ElementwiseClamp, ScalarAndArrayBounds) {
  // clamp(lo, x, hi).
  EXPECT_EQ(NanStr(Eval(Module({"f32[]", "f32[4]", "f32[]"}, "f32[4]", "clamp"),
                        {"0", "{-1, 0.5, 2, nan}", "1"})),
            "f32[4] {0, 0.5, 1, nan}");
  EXPECT_EQ(NanStr(Eval(Module({"f32[4]", "f32[4]", "f32[4]"}, "f32[4]", "clamp"),
                        {"{0, 5, nan, 5}", "{3, 3, 3, 3}", "{1, 10, 4, 1}"})),
            "f32[4] {1, 5, nan, 1}");
  EXPECT_EQ(
      NanStr(Eval(Module({"f32[]", "f32[1]", "f32[]"}, "f32[1]", "clamp"), {"0", "{0.5}", "nan"})),
      "f32[1] {nan}");
  EXPECT_EQ(
      Str(Eval(Module({"s32[]", "s32[3]", "s32[]"}, "s32[3]", "clamp"), {"-2", "{-5, 0, 5}", "2"})),
      "s32[3] {-2, 0, 2}");
  EXPECT_EQ(Str(Eval(Module({"u8[3]", "u8[3]", "u8[]"}, "u8[3]", "clamp"),
                     {"{10, 0, 200}", "{5, 50, 255}", "100"})),
            "u8[3] {10, 50, 100}");
  EXPECT_EQ(Str(Eval(Module({"bf16[]", "bf16[2]", "bf16[]"}, "bf16[2]", "clamp"),
                     {"-0.5", "{-3, 3}", "0.5"})),
            "bf16[2] {-0.5, 0.5}");
  EXPECT_EQ(Code(Eval(Module({"f32[2]", "f32[3]", "f32[]"}, "f32[3]", "clamp"),
                      {"{0, 0}", "{1, 2, 3}", "1"})),
            absl::StatusCode::kInvalidArgument);
}

// --- convert -------------------------------------------------------------------------------

absl::StatusOr<Literal> Convert(const std::string& from, const std::string& to,
                                const std::string& values) {
  return Op("convert", from, {values}, to);
}

TEST(ElementwiseConvert, FloatToIntegerTruncatesAndSaturates) {
  EXPECT_EQ(Str(Convert("f32[9]", "s32[9]",
                        "{1e10, -1e10, nan, 2.9, -2.9, inf, -inf, 2147483520, -2147483648}")),
            "s32[9] {2147483647, -2147483648, 0, 2, -2, 2147483647, -2147483648, 2147483520, "
            "-2147483648}");
  EXPECT_EQ(Str(Convert("f32[6]", "u8[6]", "{-1.5, 300, 255.9, nan, -0.5, 1.5}")),
            "u8[6] {0, 255, 255, 0, 0, 1}");
  EXPECT_EQ(Str(Convert("f32[2]", "s64[2]", "{1e19, -1e19}")),
            "s64[2] {9223372036854775807, -9223372036854775808}");
  EXPECT_EQ(Str(Convert("f32[2]", "u64[2]", "{1e20, -1}")), "u64[2] {18446744073709551615, 0}");
  EXPECT_EQ(Str(Convert("f64[2]", "s32[2]", "{2147483647.9, -2147483648.9}")),
            "s32[2] {2147483647, -2147483648}");
  EXPECT_EQ(Str(Convert("bf16[3]", "s8[3]", "{200, -200, 3.5}")), "s8[3] {127, -128, 3}");
  EXPECT_EQ(Str(Convert("f16[2]", "u16[2]", "{65504, -inf}")), "u16[2] {65504, 0}");
  EXPECT_EQ(Str(Convert("f32[3]", "s4[3]", "{100, -100, 3.9}")), "s4[3] {7, -8, 3}");
}

TEST(ElementwiseConvert, IntegerToIntegerWraps) {
  EXPECT_EQ(Str(Convert("s32[3]", "s8[3]", "{300, -129, 127}")), "s8[3] {44, 127, 127}");
  EXPECT_EQ(Str(Convert("u32[1]", "s32[1]", "{4294967295}")), "s32[1] {-1}");
  EXPECT_EQ(Str(Convert("s32[1]", "u64[1]", "{-1}")), "u64[1] {18446744073709551615}");
  EXPECT_EQ(Str(Convert("u8[1]", "s64[1]", "{200}")), "s64[1] {200}");
  EXPECT_EQ(Str(Convert("s32[3]", "s4[3]", "{7, 8, -9}")), "s4[3] {7, -8, 7}");
  EXPECT_EQ(Str(Convert("s4[1]", "s32[1]", "{-3}")), "s32[1] {-3}");
  EXPECT_EQ(Str(Convert("s32[3]", "pred[3]", "{0, 5, -1}")), "pred[3] {false, true, true}");
  EXPECT_EQ(Str(Convert("pred[2]", "s32[2]", "{true, false}")), "s32[2] {1, 0}");
}

TEST(ElementwiseConvert, ToFloatRoundsOnce) {
  EXPECT_EQ(Str(Convert("s32[2]", "f32[2]", "{16777217, -16777217}")),
            "f32[2] {16777216, -16777216}");
  // 2^60 + 2^36 + 1 rounds up to 2^60 + 2^37 in one step (via f64 it would tie down to 2^60).
  absl::StatusOr<Literal> r = Convert("s64[1]", "f32[1]", "{1152921573326323713}");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->GetDouble(0), 1152921642045800448.0);
  absl::StatusOr<Literal> u = Convert("u64[1]", "f32[1]", "{18446744073709551615}");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->GetDouble(0), 18446744073709551616.0);
  absl::StatusOr<Literal> d = Convert("s64[1]", "f64[1]", "{9007199254740993}");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->GetDouble(0), 9007199254740992.0);
  EXPECT_EQ(Str(Convert("pred[2]", "f32[2]", "{true, false}")), "f32[2] {1, 0}");
  EXPECT_EQ(Str(Convert("f32[4]", "pred[4]", "{0, -0, nan, 0.5}")),
            "pred[4] {false, false, true, true}");
}

TEST(ElementwiseConvert, NarrowFloats) {
  absl::StatusOr<Literal> r =
      Convert("f32[4]", "bf16[4]", "{1.00390625, 1.005859375, 3.4e38, nan}");
  EXPECT_EQ(Values(r), "1, 1.0078125, inf, nan");
  // f64 -> bf16 goes through f32: 1 + 2^-8 + 2^-30 becomes 1 + 2^-8 in f32, then ties to 1.
  EXPECT_EQ(Str(Convert("f64[1]", "bf16[1]", "{1.003906250931322574615478515625}")), "bf16[1] {1}");
  // s32 -> bf16 goes through f32: 2^24 + 2^16 + 1 -> 2^24 + 2^16 (f32 tie to even) -> 2^24.
  absl::StatusOr<Literal> i = Convert("s32[1]", "bf16[1]", "{16842753}");
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->GetDouble(0), 16777216.0);
  absl::StatusOr<Literal> h = Convert("f32[4]", "f16[4]", "{65504, 65520, 1e-8, 0.1}");
  EXPECT_EQ(Values(h), "65504, inf, 0, 0.0999755859375");
  EXPECT_EQ(Str(Convert("bf16[2]", "f32[2]", "{1.0078125, -inf}")), "f32[2] {1.0078125, -inf}");
  EXPECT_EQ(Values(Convert("bf16[1]", "f16[1]", "{1.0078125}")), "1.0078125");
  // f64 -> f8 rounds once: 1.125 + 2^-40 is just above the e5m2 tie 1.125 and rounds up to 1.25
  // (through f32 it would become the tie and round to the even 1).
  EXPECT_EQ(Values(Convert("f64[3]", "f8e5m2[3]", "{1.1250000000009095, 1.125, 1.375}")),
            "1.25, 1, 1.5");
  // f8e4m3fn has no inf: overflow gives NaN.
  EXPECT_EQ(Values(Convert("f32[2]", "f8e4m3fn[2]", "{448, 1000}")), "448, nan");
  EXPECT_EQ(Str(Convert("f32[2]", "f32[2]", "{1.5, -0}")), "f32[2] {1.5, -0}");
}

TEST(ElementwiseConvert, Complex) {
  EXPECT_EQ(Str(Convert("f32[1]", "c64[1]", "{1.5}")), "c64[1] {(1.5, 0)}");
  EXPECT_EQ(Str(Convert("s32[1]", "c128[1]", "{-3}")), "c128[1] {(-3, 0)}");
  EXPECT_EQ(Str(Convert("c128[1]", "c64[1]", "{(0.5, -2)}")), "c64[1] {(0.5, -2)}");
  EXPECT_EQ(Code(Convert("c64[1]", "f32[1]", "{(1, 2)}")), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(Code(Convert("f32[2]", "s32[3]", "{1, 2}")), absl::StatusCode::kInvalidArgument);
}

// --- bitcast-convert -----------------------------------------------------------------------

TEST(ElementwiseBitcastConvert, SameWidth) {
  // 1.0f = 0x3F800000, -2.0f = 0xC0000000.
  EXPECT_EQ(Str(Op("bitcast-convert", "f32[2]", {"{1, -2}"}, "s32[2]")),
            "s32[2] {1065353216, -1073741824}");
  EXPECT_EQ(Str(Op("bitcast-convert", "s32[1]", {"{-1}"}, "u32[1]")), "u32[1] {4294967295}");
  EXPECT_EQ(Str(Op("bitcast-convert", "u16[2]", {"{16256, 32704}"}, "bf16[2]")),
            "bf16[2] {1, nan}");
  EXPECT_EQ(Str(Op("bitcast-convert", "u8[3]", {"{0, 1, 2}"}, "pred[3]")),
            "pred[3] {false, true, true}");
}

TEST(ElementwiseBitcastConvert, DifferentWidthsAddOrRemoveTheMinorDim) {
  // Little-endian: the low half comes first.
  EXPECT_EQ(Str(Op("bitcast-convert", "f32[2]", {"{1, 2}"}, "u16[2,2]")),
            "u16[2,2] {{0, 16256}, {0, 16384}}");
  EXPECT_EQ(Str(Op("bitcast-convert", "u16[2,2]", {"{{0, 16256}, {0, 16384}}"}, "f32[2]")),
            "f32[2] {1, 2}");
  EXPECT_EQ(Str(Op("bitcast-convert", "u8[4]", {"{0, 0, 128, 63}"}, "f32[]")), "f32[] 1");
  // 1.0 as f64 is 0x3FF0000000000000: low word 0, high word 0x3FF00000 = 1.875f.
  EXPECT_EQ(Str(Op("bitcast-convert", "f64[]", {"1"}, "f32[2]")), "f32[2] {0, 1.875}");
  EXPECT_EQ(Code(Op("bitcast-convert", "f32[3]", {"{1, 2, 3}"}, "u16[3]")),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(Op("bitcast-convert", "u16[3]", {"{1, 2, 3}"}, "f32[1]")),
            absl::StatusCode::kInvalidArgument);
}

// --- reduce-precision ----------------------------------------------------------------------

absl::StatusOr<Literal> ReducePrecision(const std::string& shape, const std::string& values,
                                        int exponent_bits, int mantissa_bits) {
  return Op("reduce-precision", shape, {values}, "",
            absl::StrCat("exponent_bits=", exponent_bits, ", mantissa_bits=", mantissa_bits));
}

TEST(ElementwiseReducePrecision, Bf16AndF16Emulation) {
  EXPECT_EQ(
      NanStr(ReducePrecision("f32[5]", "{1.00390625, 1.005859375, 1.01171875, nan, 3.4e38}", 8, 7)),
      "f32[5] {1, 1.0078125, 1.015625, nan, inf}");
  // f16: 65520 rounds up to 2^16 and overflows; 2^-15 is below the smallest normal 2^-14 and
  // flushes to (signed) zero.
  EXPECT_EQ(Str(ReducePrecision(
                "f32[6]",
                "{65504, 65520, 0.00006103515625, 0.000030517578125, -1e-5, 1.0009765625}", 5, 10)),
            "f32[6] {65504, inf, 6.1035156e-05, 0, -0, 1.0009766}");
  // No mantissa bits: ties go to the even exponent; NaN becomes +inf.
  EXPECT_EQ(Str(ReducePrecision("f32[3]", "{1.5, 3, nan}", 8, 0)), "f32[3] {2, 2, inf}");
  // f64 reduced to f32 precision: 1 + 2^-24 ties to 1; 1 + 3*2^-25 rounds up to 1 + 2^-23.
  absl::StatusOr<Literal> d =
      ReducePrecision("f64[2]", "{1.000000059604644775390625, 1.0000000894069671630859375}", 8, 23);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->GetDouble(0), 1.0);
  EXPECT_EQ(d->GetDouble(1), 1.0 + std::ldexp(1.0, -23));
  // bf16 in, 2 mantissa bits: 1.125 ties to 1, 1.375 ties to 1.5.
  EXPECT_EQ(Str(ReducePrecision("bf16[2]", "{1.125, 1.375}", 8, 2)), "bf16[2] {1, 1.5}");
  EXPECT_EQ(Code(Op("reduce-precision", "f32[1]", {"{1}"}, "", "exponent_bits=8")),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(ReducePrecision("f32[1]", "{1}", 0, 3)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(ReducePrecision("s32[1]", "{1}", 8, 7)), absl::StatusCode::kInvalidArgument);
}

// --- copy / real / imag / complex ----------------------------------------------------------

TEST(ElementwiseMisc, CopyRealImagComplex) {
  EXPECT_EQ(Str(Op("copy", "s32[2,2]", {"{{1, 2}, {3, 4}}"})), "s32[2,2] {{1, 2}, {3, 4}}");
  EXPECT_EQ(Str(Op("copy", "(s32[], f32[2])", {"(7, {1.5, 2})"})), "(s32[], f32[2]) (7, {1.5, 2})");
  EXPECT_EQ(Str(Op("real", "c64[2]", {"{(1, 2), (3, -4)}"}, "f32[2]")), "f32[2] {1, 3}");
  EXPECT_EQ(Str(Op("imag", "c64[2]", {"{(1, 2), (3, -4)}"}, "f32[2]")), "f32[2] {2, -4}");
  EXPECT_EQ(Str(Op("real", "f32[2]", {"{1.5, -2}"})), "f32[2] {1.5, -2}");
  EXPECT_EQ(Str(Op("imag", "f32[2]", {"{1.5, -2}"})), "f32[2] {0, 0}");
  EXPECT_EQ(Str(Eval(Module({"f32[2]", "f32[2]"}, "c64[2]", "complex"), {"{1, 3}", "{2, -4}"})),
            "c64[2] {(1, 2), (3, -4)}");
  EXPECT_EQ(Str(Eval(Module({"f64[1]", "f64[1]"}, "c128[1]", "complex"), {"{0.5}", "{-1}"})),
            "c128[1] {(0.5, -1)}");
}

// --- malformed input never crashes ----------------------------------------------------------

TEST(ElementwiseErrors, InconsistentInputIsReported) {
  Program program = Parse(Module({"f32[2]", "f32[2]"}, "f32[2]", "add"));
  ASSERT_NE(program.r, nullptr);
  Literal a = *ParseLiteral("{1, 2}", Shape::Array(PrimitiveType::kF32, {2}));
  Literal b3 = *ParseLiteral("{1, 2, 3}", Shape::Array(PrimitiveType::kF32, {3}));
  Literal s = *ParseLiteral("{1, 2}", Shape::Array(PrimitiveType::kS32, {2}));
  Literal tuple = Literal::Tuple({a});
  Literal elided = Literal::Elided(Shape::Array(PrimitiveType::kF32, {2}));
  EXPECT_EQ(Code(Call(*program.r, {&a})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(Call(*program.r, {&a, nullptr})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(Call(*program.r, {&a, &b3})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(Call(*program.r, {&a, &s})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(Call(*program.r, {&a, &tuple})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(Call(*program.r, {&a, &elided})), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(Code(Call(*program.r, {&a, &a})), absl::StatusCode::kOk);
  // The written result shape must match.
  EXPECT_EQ(Code(Op("add", "f32[2]", {"{1, 2}", "{3, 4}"}, "s32[2]")),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(Op("add", "f32[2]", {"{1, 2}", "{3, 4}"}, "f32[3]")),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(Op("add", "pred[1]", {"{true}", "{true}"})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(Op("shift-left", "f32[1]", {"{1}", "{1}"})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(Op("compare", "f32[1]", {"{1}", "{1}"}, "pred[1]")),
            absl::StatusCode::kInvalidArgument);  // No direction.
}

TEST(ElementwiseErrors, EmptyAndScalarArrays) {
  EXPECT_EQ(Str(Op("add", "f32[0]", {"{}", "{}"})), "f32[0] {}");
  EXPECT_EQ(Str(Op("multiply", "s32[]", {"6", "7"})), "s32[] 42");
  EXPECT_EQ(Str(Op("convert", "f32[0,3]", {"{}"}, "bf16[0,3]")), "bf16[0,3] {}");
}

// --- properties against independent references ---------------------------------------------

constexpr int64_t kN = 64;

// Runs `r` over two operands filled with `a` and `b` (as the literal's native element type).
template <typename T>
Literal RunTyped(const Program& program, const std::vector<T>& a, const std::vector<T>& b) {
  Literal la(program.parameter_shapes.at(0));
  Literal lb(program.parameter_shapes.at(1));
  std::memcpy(la.raw_data(), a.data(), a.size() * sizeof(T));
  std::memcpy(lb.raw_data(), b.data(), b.size() * sizeof(T));
  absl::StatusOr<Literal> result = Call(*program.r, {&la, &lb});
  RC_ASSERT(result.ok());
  return *std::move(result);
}

const Program& S32Program(const std::string& op) {
  static auto* cache = new std::map<std::string, Program>();
  auto it = cache->find(op);
  if (it == cache->end()) {
    const std::string shape = absl::StrCat("s32[", kN, "]");
    it = cache->emplace(op, Parse(Module({shape, shape}, shape, op))).first;
  }
  return it->second;
}

std::vector<int32_t> GenS32() {
  return *rc::gen::container<std::vector<int32_t>>(
      kN, rc::gen::oneOf(rc::gen::arbitrary<int32_t>(), rc::gen::inRange<int32_t>(-3, 4),
                         rc::gen::element(std::numeric_limits<int32_t>::min(),
                                          std::numeric_limits<int32_t>::max())));
}

RC_GTEST_PROP(ElementwiseProperty, S32ArithmeticWrapsLikeInt64Truncation, ()) {
  const std::vector<int32_t> a = GenS32();
  const std::vector<int32_t> b = GenS32();
  const Literal add = RunTyped(S32Program("add"), a, b);
  const Literal sub = RunTyped(S32Program("subtract"), a, b);
  const Literal mul = RunTyped(S32Program("multiply"), a, b);
  const Literal div = RunTyped(S32Program("divide"), a, b);
  const Literal rem = RunTyped(S32Program("remainder"), a, b);
  const Literal shl = RunTyped(S32Program("shift-left"), a, b);
  for (int64_t i = 0; i < kN; ++i) {
    const int64_t x = a[i];
    const int64_t y = b[i];
    auto wrap = [](int64_t v) { return static_cast<int64_t>(static_cast<int32_t>(v)); };
    RC_ASSERT(add.GetInt64(i) == wrap(x + y));
    RC_ASSERT(sub.GetInt64(i) == wrap(x - y));
    RC_ASSERT(mul.GetInt64(i) == wrap(x * y));
    // Division in int64 never overflows; the result truncated to 32 bits is INT_MIN / -1 =
    // INT_MIN. x / 0 = -1 and x % 0 = x.
    RC_ASSERT(div.GetInt64(i) == (y == 0 ? -1 : wrap(x / y)));
    RC_ASSERT(rem.GetInt64(i) == (y == 0 ? x : wrap(x % y)));
    const uint64_t amount = static_cast<uint32_t>(y);
    RC_ASSERT(shl.GetInt64(i) ==
              (amount >= 32 ? 0 : wrap(static_cast<int64_t>(static_cast<uint64_t>(x) << amount))));
  }
}

// Rounds a double to bf16 (8 significant bits) directly, to nearest even; normal range only.
double RoundToBf16(double v) {
  if (v == 0) return v;
  int exponent = 0;
  const double mantissa = std::frexp(v, &exponent);  // |mantissa| in [0.5, 1).
  return std::ldexp(std::nearbyint(std::ldexp(mantissa, 8)), exponent - 8);
}

// A random bf16 value with a moderate exponent (so sums and products are exact in f64).
float GenBf16Value() {
  const int sign = *rc::gen::inRange(0, 2);
  const int exponent = *rc::gen::inRange(-20, 21);
  const int mantissa = *rc::gen::inRange(128, 256);  // 8 significant bits.
  return static_cast<float>((sign ? -1.0 : 1.0) * std::ldexp(mantissa, exponent - 7));
}

RC_GTEST_PROP(ElementwiseProperty, Bf16AddAndMultiplyAreCorrectlyRounded, ()) {
  static const Program add = Parse(Module({"bf16[2]", "bf16[2]"}, "bf16[2]", "add"));
  static const Program mul = Parse(Module({"bf16[2]", "bf16[2]"}, "bf16[2]", "multiply"));
  const float x = GenBf16Value();
  const float y = GenBf16Value();
  Literal la(add.parameter_shapes[0]);
  Literal lb(add.parameter_shapes[1]);
  la.SetDouble(0, x);
  lb.SetDouble(0, y);
  la.SetDouble(1, y);
  lb.SetDouble(1, x);
  RC_ASSERT(la.GetDouble(0) == x);  // The generated values are exact bf16 values.
  absl::StatusOr<Literal> sum = Call(*add.r, {&la, &lb});
  absl::StatusOr<Literal> product = Call(*mul.r, {&la, &lb});
  RC_ASSERT(sum.ok() && product.ok());
  const double exact_sum = static_cast<double>(x) + static_cast<double>(y);
  const double exact_product = static_cast<double>(x) * static_cast<double>(y);
  RC_ASSERT(sum->GetDouble(0) == RoundToBf16(exact_sum));
  RC_ASSERT(sum->GetDouble(1) == RoundToBf16(exact_sum));
  RC_ASSERT(product->GetDouble(0) == RoundToBf16(exact_product));
}

RC_GTEST_PROP(ElementwiseProperty, TotalOrderAgreesWithNumericOrderAndSignOfZero, ()) {
  static const Program lt =
      Parse(Module({"f32[1]", "f32[1]"}, "pred[1]", "compare", "direction=LT, type=TOTALORDER"));
  static const Program eq =
      Parse(Module({"f32[1]", "f32[1]"}, "pred[1]", "compare", "direction=EQ, type=TOTALORDER"));
  auto gen = rc::gen::oneOf(rc::gen::arbitrary<float>(),
                            rc::gen::element(0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                                             -std::numeric_limits<float>::infinity(), 1.0f));
  const float x = *gen;
  const float y = *gen;
  RC_PRE(!std::isnan(x) && !std::isnan(y));
  const std::vector<float> a = {x};
  const std::vector<float> b = {y};
  const bool less = RunTyped(lt, a, b).GetBits(0) != 0;
  const bool equal = RunTyped(eq, a, b).GetBits(0) != 0;
  if (x == 0 && y == 0) {
    RC_ASSERT(less == (std::signbit(x) && !std::signbit(y)));
    RC_ASSERT(equal == (std::signbit(x) == std::signbit(y)));
  } else {
    RC_ASSERT(less == (x < y));
    RC_ASSERT(equal == (x == y));
  }
}

RC_GTEST_PROP(ElementwiseProperty, F32ToS32ConvertSaturates, ()) {
  static const Program convert = Parse(Module({"f32[1]"}, "s32[1]", "convert"));
  const float x = *rc::gen::oneOf(
      rc::gen::arbitrary<float>(),
      rc::gen::map(rc::gen::arbitrary<int32_t>(), [](int32_t v) { return static_cast<float>(v); }));
  Literal in(convert.parameter_shapes[0]);
  std::memcpy(in.raw_data(), &x, sizeof(x));
  absl::StatusOr<Literal> out = Call(*convert.r, {&in});
  RC_ASSERT(out.ok());
  int64_t expected;
  if (std::isnan(x)) {
    expected = 0;
  } else if (x >= 2147483648.0f) {
    expected = std::numeric_limits<int32_t>::max();
  } else if (x <= -2147483648.0f) {
    expected = std::numeric_limits<int32_t>::min();
  } else {
    expected = static_cast<int64_t>(std::trunc(static_cast<double>(x)));
  }
  RC_ASSERT(out->GetInt64(0) == expected);
}

}  // namespace
}  // namespace spmdcheck::oracle
