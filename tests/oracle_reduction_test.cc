// Reduction handlers of the oracle (oracle/reduction.cc): reduce, reduce-window,
// select-and-scatter and map. Expected values are worked out by hand (the comments show the
// arithmetic) or computed by naive references written here; computations that the handlers do
// not recognise are run by a tiny scalar evaluator written in this file (MiniCall), which also
// lets the properties compare every typed fast path with the generic call-per-element path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_module.h"
#include "ir/hlo_parser.h"
#include "ir/literal.h"
#include "ir/shape.h"
#include "oracle/op_registry.h"

namespace spmdcheck::oracle {
namespace {

using ::testing::HasSubstr;

Shape S(absl::string_view text) {
  absl::StatusOr<Shape> shape = ParseShape(text);
  EXPECT_TRUE(shape.ok()) << text << ": " << shape.status();
  return shape.ok() ? *shape : Shape();
}

Literal L(absl::string_view shape, absl::string_view values) {
  absl::StatusOr<Literal> literal = ParseLiteral(values, S(shape));
  EXPECT_TRUE(literal.ok()) << shape << " " << values << ": " << literal.status();
  return literal.ok() ? *std::move(literal) : Literal();
}

// ---- A tiny scalar evaluator for called computations ------------------------------------------

double Num(const Literal& l) { return l.GetDouble(0); }

absl::StatusOr<Literal> MiniCall(const HloComputation& computation,
                                 absl::Span<const Literal* const> args) {
  std::map<const HloInstruction*, Literal> values;
  for (HloInstruction* inst : computation.PostOrder()) {
    std::vector<const Literal*> in;
    for (const HloInstruction* op : inst->operands()) in.push_back(&values.at(op));
    const Shape& shape = inst->shape();
    Literal out = shape.IsTuple() ? Literal() : Literal(shape);
    const PrimitiveType type = shape.IsArray() ? shape.element_type() : PrimitiveType::kInvalid;
    const bool is_float = IsFloatingType(type);
    auto set_num = [&](double f, int64_t i) {
      if (is_float) {
        out.SetDouble(0, f);
      } else {
        out.SetInt64(0, i);
      }
    };
    switch (inst->opcode()) {
      case HloOpcode::kParameter:
        out = *args.at(inst->parameter_number());
        break;
      case HloOpcode::kConstant:
        out = *inst->literal();
        break;
      case HloOpcode::kCopy:
        out = *in[0];
        break;
      case HloOpcode::kTuple: {
        std::vector<Literal> parts;
        for (const Literal* l : in) parts.push_back(*l);
        out = Literal::Tuple(std::move(parts));
        break;
      }
      case HloOpcode::kSelect:
        out = in[0]->GetBits(0) != 0 ? *in[1] : *in[2];
        break;
      case HloOpcode::kAdd:
        set_num(Num(*in[0]) + Num(*in[1]), in[0]->GetInt64(0) + in[1]->GetInt64(0));
        break;
      case HloOpcode::kSubtract:
        set_num(Num(*in[0]) - Num(*in[1]), in[0]->GetInt64(0) - in[1]->GetInt64(0));
        break;
      case HloOpcode::kMultiply:
        set_num(Num(*in[0]) * Num(*in[1]),
                static_cast<int64_t>(static_cast<uint64_t>(in[0]->GetInt64(0)) *
                                     static_cast<uint64_t>(in[1]->GetInt64(0))));
        break;
      case HloOpcode::kMaximum:
      case HloOpcode::kMinimum: {
        const bool mx = inst->opcode() == HloOpcode::kMaximum;
        if (is_float) {
          const double a = Num(*in[0]);
          const double b = Num(*in[1]);
          out.SetDouble(0, std::isnan(a)   ? a
                           : std::isnan(b) ? b
                           : mx            ? std::max(a, b)
                                           : std::min(a, b));
        } else {
          const int64_t a = in[0]->GetInt64(0);
          const int64_t b = in[1]->GetInt64(0);
          out.SetInt64(0, mx ? std::max(a, b) : std::min(a, b));
        }
        break;
      }
      case HloOpcode::kAnd:
        out.SetUint64(0, in[0]->GetUint64(0) & in[1]->GetUint64(0));
        break;
      case HloOpcode::kXor:
        out.SetUint64(0, in[0]->GetUint64(0) ^ in[1]->GetUint64(0));
        break;
      case HloOpcode::kOr:
        out.SetUint64(0, in[0]->GetUint64(0) | in[1]->GetUint64(0));
        break;
      case HloOpcode::kCompare: {
        const double a = IsFloatingType(in[0]->shape().element_type())
                             ? Num(*in[0])
                             : static_cast<double>(in[0]->GetInt64(0));
        const double b = IsFloatingType(in[1]->shape().element_type())
                             ? Num(*in[1])
                             : static_cast<double>(in[1]->GetInt64(0));
        bool r = false;
        switch (*inst->attrs().direction) {
          case ComparisonDirection::kEq:
            r = a == b;
            break;
          case ComparisonDirection::kNe:
            r = a != b;
            break;
          case ComparisonDirection::kLt:
            r = a < b;
            break;
          case ComparisonDirection::kLe:
            r = a <= b;
            break;
          case ComparisonDirection::kGt:
            r = a > b;
            break;
          case ComparisonDirection::kGe:
            r = a >= b;
            break;
        }
        out.SetBits(0, r ? 1 : 0);
        break;
      }
      default:
        return absl::UnimplementedError(
            absl::StrCat("MiniCall: ", HloOpcodeString(inst->opcode())));
    }
    values[inst] = std::move(out);
  }
  return values.at(computation.root());
}

int call_count = 0;

EvalEnv MiniEnv() {
  EvalEnv env;
  env.call = [](const HloComputation& c, absl::Span<const Literal* const> args) {
    ++call_count;
    return MiniCall(c, args);
  };
  return env;
}

// Parses `hlo`, optionally edits instruction `name`, and runs its reduction handler on `args`.
absl::StatusOr<Literal> Eval(absl::string_view hlo, absl::string_view name,
                             const std::vector<Literal>& args,
                             const std::function<void(HloInstruction&)>& edit = nullptr) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(hlo);
  if (!parsed.ok()) {
    ADD_FAILURE() << "parse failed: " << parsed.status() << "\n" << hlo;
    return absl::InternalError("parse failed");
  }
  HloInstruction* instruction = parsed->module->entry()->FindInstruction(name);
  if (instruction == nullptr) {
    ADD_FAILURE() << "no instruction " << name;
    return absl::InternalError("no instruction");
  }
  if (edit) edit(*instruction);
  OpRegistry registry;
  RegisterReductionOps(registry);
  OpHandler handler = registry.Find(instruction->opcode());
  if (handler == nullptr) {
    ADD_FAILURE() << "no handler for " << HloOpcodeString(instruction->opcode());
    return absl::InternalError("no handler");
  }
  std::vector<const Literal*> operands;
  for (const Literal& arg : args) operands.push_back(&arg);
  return handler(*instruction, operands, MiniEnv());
}

std::string Str(const absl::StatusOr<Literal>& r) {
  return r.ok() ? r->ToString() : absl::StrCat("error: ", r.status().ToString());
}

// Scalar binary computations named after their root op, over type T; `copy_` variants hide the
// op behind a copy so the handler cannot recognise them and must call the computation.
std::string Binary(absl::string_view name, absl::string_view type, absl::string_view op,
                   bool hidden = false, bool swapped = false) {
  const char* a = swapped ? "b" : "a";
  const char* b = swapped ? "a" : "b";
  if (hidden) {
    return absl::StrCat(name, " {\n  a = ", type, "[] parameter(0)\n  b = ", type,
                        "[] parameter(1)\n  r = ", type, "[] ", op, "(", a, ", ", b,
                        ")\n  ROOT c = ", type, "[] copy(r)\n}\n\n");
  }
  return absl::StrCat(name, " {\n  a = ", type, "[] parameter(0)\n  b = ", type,
                      "[] parameter(1)\n  ROOT r = ", type, "[] ", op, "(", a, ", ", b, ")\n}\n\n");
}

std::string Module(absl::string_view computations, absl::string_view entry) {
  return absl::StrCat("HloModule m\n\n", computations, "ENTRY e {\n", entry, "\n}\n");
}

// ---- reduce ----------------------------------------------------------------------------------

const char kIota24[] =
    "{{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}}, {{12, 13, 14, 15}, {16, 17, 18, 19}, "
    "{20, 21, 22, 23}}}";

TEST(ReduceTest, SumOverSeveralDims) {
  // v[i][j][k] = 12i + 4j + k. Over {0,2}: out[j] = sum_i,k = 48 + 32j + 12 = {60, 92, 124}.
  const std::string hlo = Module(Binary("add", "f32", "add"), R"(
  p = f32[2,3,4] parameter(0)
  z = f32[] parameter(1)
  r02 = f32[3] reduce(p, z), dimensions={0,2}, to_apply=add
  r1 = f32[2,4] reduce(p, z), dimensions={1}, to_apply=add
  all = f32[] reduce(p, z), dimensions={2,0,1}, to_apply=add
  ROOT none = f32[2,3,4] reduce(p, z), dimensions={}, to_apply=add)");
  const std::vector<Literal> args = {L("f32[2,3,4]", kIota24), L("f32[]", "0")};
  EXPECT_EQ(Str(Eval(hlo, "r02", args)), "f32[3] {60, 92, 124}");
  // Over {1}: out[i][k] = sum_j 12i + 4j + k = 36i + 12 + 3k.
  EXPECT_EQ(Str(Eval(hlo, "r1", args)), "f32[2,4] {{12, 15, 18, 21}, {48, 51, 54, 57}}");
  EXPECT_EQ(Str(Eval(hlo, "all", args)), "f32[] 276");  // 0 + 1 + ... + 23
  // Reducing no dims applies the computation once per element: init + v.
  const std::vector<Literal> args100 = {L("f32[2,3,4]", kIota24), L("f32[]", "100")};
  absl::StatusOr<Literal> none = Eval(hlo, "none", args100);
  ASSERT_TRUE(none.ok()) << none.status();
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(none->GetDouble(i), 100.0 + i);
}

TEST(ReduceTest, UnevenRowsWithNonIdentityInit) {
  // Rows of 7 (an uneven shard length); the init is folded in exactly once per output element.
  const std::string hlo = Module(Binary("add", "s32", "add") + Binary("max", "f32", "maximum"),
                                 R"(
  p = s32[3,7] parameter(0)
  z = s32[] parameter(1)
  s = s32[3] reduce(p, z), dimensions={1}, to_apply=add
  q = f32[2,7] parameter(2)
  y = f32[] parameter(3)
  ROOT m = f32[2] reduce(q, y), dimensions={1}, to_apply=max)");
  const std::vector<Literal> args = {
      L("s32[3,7]",
        "{{1, 2, 3, 4, 5, 6, 7}, {-1, -2, -3, -4, -5, -6, -7}, "
        "{100, 0, 0, 0, 0, 0, -50}}"),
      L("s32[]", "10"), L("f32[2,7]", "{{1, 2, 3, 4, 3, 2, 1}, {-1, 9, 0, 0, 0, 0, 8}}"),
      L("f32[]", "5")};
  // 28 + 10, -28 + 10, 50 + 10.
  EXPECT_EQ(Str(Eval(hlo, "s", {args[0], args[1]})), "s32[3] {38, -18, 60}");
  // max(5, 4) = 5 and max(5, 9) = 9.
  EXPECT_EQ(Str(Eval(hlo, "m", {args[2], args[3]})), "f32[2] {5, 9}");
}

TEST(ReduceTest, FloatAddSumsInF64AndRoundsOnce) {
  // bf16 has 8 significant bits: 256 + 1 = 257 rounds (to even) to 256 at every step, but the
  // evaluator's fast path sums 256 + 1 + 1 = 258 in f64, which bf16 represents exactly.
  const std::string hlo =
      Module(Binary("add", "bf16", "add") +
                 Binary("hidden", "bf16", "add",
                        /*hidden=*/true) +
                 Binary("addf", "f32", "add") + Binary("hiddenf", "f32", "add", /*hidden=*/true) +
                 Binary("addr", "bf16", "add", false, /*swapped=*/true),
             R"(
  p = bf16[3] parameter(0)
  z = bf16[] parameter(1)
  fast = bf16[] reduce(p, z), dimensions={0}, to_apply=add
  fastr = bf16[] reduce(p, z), dimensions={0}, to_apply=addr
  slow = bf16[] reduce(p, z), dimensions={0}, to_apply=hidden
  q = f32[3] parameter(2)
  y = f32[] parameter(3)
  fastf = f32[] reduce(q, y), dimensions={0}, to_apply=addf
  ROOT slowf = f32[] reduce(q, y), dimensions={0}, to_apply=hiddenf)");
  const std::vector<Literal> bf = {L("bf16[3]", "{256, 1, 1}"), L("bf16[]", "0")};
  EXPECT_EQ(Str(Eval(hlo, "fast", bf)), "bf16[] 258");
  EXPECT_EQ(Str(Eval(hlo, "fastr", bf)), "bf16[] 258");
  EXPECT_EQ(Str(Eval(hlo, "slow", bf)), "bf16[] 256");
  // f32: 2^24 + 1 + 1 = 16777218 in f64; step by step 2^24 + 1 rounds back to 2^24.
  const std::vector<Literal> f = {L("f32[3]", "{16777216, 1, 1}"), L("f32[]", "0")};
  EXPECT_EQ(Str(Eval(hlo, "fastf", f)), "f32[] 16777218");
  EXPECT_EQ(Str(Eval(hlo, "slowf", f)), "f32[] 16777216");
}

TEST(ReduceTest, NarrowTypesRoundAfterEveryStepForOtherReducers) {
  // bf16 (8 significant bits) multiply: 3^5 = 243 exactly; 243 * 3 = 729 rounds to 728 (spacing
  // 4 in [512, 1024): 728 and 732 bracket 729) and 728 * 3 = 2184 rounds to 2176 (spacing 16 in
  // [2048, 4096): 2184 is the tie between 2176 = 136*16 and 2192 = 137*16 -> even 2176). In f64
  // the product would be 3^7 = 2187 -> 2192.
  const std::string hlo = Module(Binary("mul", "bf16", "multiply"), R"(
  p = bf16[7] parameter(0)
  one = bf16[] parameter(1)
  ROOT r = bf16[] reduce(p, one), dimensions={0}, to_apply=mul)");
  absl::StatusOr<Literal> r =
      Eval(hlo, "r", {L("bf16[7]", "{3, 3, 3, 3, 3, 3, 3}"), L("bf16[]", "1")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->GetDouble(0), 2176.0);
}

TEST(ReduceTest, MaxAndMinPropagateNaN) {
  const std::string hlo = Module(Binary("max", "f32", "maximum") + Binary("min", "f32", "minimum"),
                                 R"(
  p = f32[2,3] parameter(0)
  z = f32[] parameter(1)
  mx = f32[2] reduce(p, z), dimensions={1}, to_apply=max
  ROOT mn = f32[2] reduce(p, z), dimensions={1}, to_apply=min)");
  const std::vector<Literal> args = {L("f32[2,3]", "{{1, nan, 3}, {-4, -2, -8}}"),
                                     L("f32[]", "-inf")};
  EXPECT_EQ(Str(Eval(hlo, "mx", args)), "f32[2] {nan, -2}");
  const std::vector<Literal> args2 = {L("f32[2,3]", "{{1, nan, 3}, {-4, -2, -8}}"),
                                      L("f32[]", "inf")};
  EXPECT_EQ(Str(Eval(hlo, "mn", args2)), "f32[2] {nan, -8}");
}

TEST(ReduceTest, IntegersWrap) {
  const std::string hlo = Module(Binary("add8", "s8", "add") + Binary("mulu8", "u8", "multiply") +
                                     Binary("add32", "s32", "add") + Binary("xor32", "u32", "xor"),
                                 R"(
  a = s8[2] parameter(0)
  za = s8[] parameter(1)
  ra = s8[] reduce(a, za), dimensions={0}, to_apply=add8
  b = u8[2] parameter(2)
  zb = u8[] parameter(3)
  rb = u8[] reduce(b, zb), dimensions={0}, to_apply=mulu8
  c = s32[2] parameter(4)
  zc = s32[] parameter(5)
  rc = s32[] reduce(c, zc), dimensions={0}, to_apply=add32
  d = u32[3] parameter(6)
  zd = u32[] parameter(7)
  ROOT rd = u32[] reduce(d, zd), dimensions={0}, to_apply=xor32)");
  EXPECT_EQ(Str(Eval(hlo, "ra", {L("s8[2]", "{100, 100}"), L("s8[]", "0")})), "s8[] -56");
  EXPECT_EQ(Str(Eval(hlo, "rb", {L("u8[2]", "{16, 16}"), L("u8[]", "1")})), "u8[] 0");
  EXPECT_EQ(Str(Eval(hlo, "rc", {L("s32[2]", "{2147483647, 1}"), L("s32[]", "0")})),
            "s32[] -2147483648");
  // 12 ^ 10 ^ 6 ^ 1 = 1.
  EXPECT_EQ(Str(Eval(hlo, "rd", {L("u32[3]", "{12, 10, 6}"), L("u32[]", "1")})), "u32[] 1");
}

TEST(ReduceTest, PredAndOr) {
  const std::string hlo = Module(Binary("and", "pred", "and") + Binary("or", "pred", "or"), R"(
  p = pred[3,3] parameter(0)
  z = pred[] parameter(1)
  all = pred[3] reduce(p, z), dimensions={1}, to_apply=and
  ROOT any = pred[3] reduce(p, z), dimensions={1}, to_apply=or)");
  const Literal p = L("pred[3,3]", "{{1, 1, 1}, {1, 0, 1}, {0, 0, 0}}");
  EXPECT_EQ(Str(Eval(hlo, "all", {p, L("pred[]", "true")})), "pred[3] {true, false, false}");
  EXPECT_EQ(Str(Eval(hlo, "any", {p, L("pred[]", "false")})), "pred[3] {true, true, false}");
}

const char kArgmax[] = R"(argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  pick = pred[] or(gt, tie)
  v = f32[] select(pick, av, bv)
  i = s32[] select(pick, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}

)";

TEST(ReduceTest, VariadicArgmax) {
  // Row 0: (-inf,0) -> (3,0) -> (7,1); (7,2) ties and loses on index; (1,3) loses.
  // Row 1: (-1,0) wins; (-1,2) ties and loses on index.
  const std::string hlo = Module(kArgmax, R"(
  v = f32[2,4] parameter(0)
  i = s32[2,4] parameter(1)
  iv = f32[] parameter(2)
  ii = s32[] parameter(3)
  ROOT r = (f32[2], s32[2]) reduce(v, i, iv, ii), dimensions={1}, to_apply=argmax)");
  absl::StatusOr<Literal> r =
      Eval(hlo, "r",
           {L("f32[2,4]", "{{3, 7, 7, 1}, {-1, -5, -1, -2}}"),
            L("s32[2,4]", "{{0, 1, 2, 3}, {0, 1, 2, 3}}"), L("f32[]", "-inf"), L("s32[]", "0")});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->tuple_size(), 2);
  EXPECT_EQ(r->tuple_elements()[0].ToString(), "f32[2] {7, -1}");
  EXPECT_EQ(r->tuple_elements()[1].ToString(), "s32[2] {1, 0}");
}

TEST(ReduceTest, MalformedInputIsAnError) {
  const std::string hlo = Module(Binary("add", "f32", "add"), R"(
  p = f32[2,3] parameter(0)
  z = f32[] parameter(1)
  ROOT r = f32[3] reduce(p, z), dimensions={0}, to_apply=add)");
  const std::vector<Literal> args = {L("f32[2,3]", "{{1, 2, 3}, {4, 5, 6}}"), L("f32[]", "0")};
  EXPECT_EQ(Str(Eval(hlo, "r", args)), "f32[3] {5, 7, 9}");
  auto bad_dims = [](HloInstruction& i) {
    i.mutable_attrs().dimensions = {std::vector<int64_t>{5}};
  };
  absl::StatusOr<Literal> r = Eval(hlo, "r", args, bad_dims);
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  auto repeated = [](HloInstruction& i) {
    i.mutable_attrs().dimensions = {std::vector<int64_t>{0, 0}};
  };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo, "r", args, repeated).status()));
  auto wrong_shape = [](HloInstruction& i) { i.set_shape(Shape::Array(PrimitiveType::kF32, {2})); };
  r = Eval(hlo, "r", args, wrong_shape);
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  // Wrong number of operands at run time.
  r = Eval(hlo, "r", {args[0]});
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  // The init must have the input's type.
  r = Eval(hlo, "r", {args[0], L("s32[]", "0")});
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
}

TEST(ReduceTest, SumOfLargeArrayIsFast) {
  // reduce-sum f32[256,256,64] over one dim, each element 1: every output is 256.
  const std::string hlo = Module(Binary("add", "f32", "add"), R"(
  p = f32[256,256,64] parameter(0)
  z = f32[] parameter(1)
  r0 = f32[256,64] reduce(p, z), dimensions={0}, to_apply=add
  ROOT r2 = f32[256,256] reduce(p, z), dimensions={2}, to_apply=add)");
  Literal p(Shape::Array(PrimitiveType::kF32, {256, 256, 64}));
  for (float& x : p.data<float>()) x = 1.0f;
  const std::vector<Literal> args = {p, L("f32[]", "0")};
  for (const char* name : {"r0", "r2"}) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<Literal> r = Eval(hlo, name, args);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(r.ok()) << r.status();
    const float expected = std::string(name) == "r0" ? 256.0f : 64.0f;
    for (float x : r->data<float>()) ASSERT_EQ(x, expected);
    EXPECT_LT(seconds, 5.0) << name;
    std::printf("reduce %s of f32[256,256,64]: %.3f s\n", name, seconds);
  }
}

// ---- reduce-window ---------------------------------------------------------------------------

TEST(ReduceWindowTest, PaddingAndStrides) {
  // Rows {2r-1, 2r}, cols {c-1, c, c+1} of {{1,2,3,4},{5,6,7,8},{9,10,11,12}}:
  // r=0 only row 0: 1+2, 1+2+3, 2+3+4, 3+4; r=1 rows 1,2 (col sums 14,16,18,20):
  // 14+16, 14+16+18, 16+18+20, 18+20.
  const std::string hlo = Module(Binary("add", "f32", "add") + Binary("max", "f32", "maximum"), R"(
  p = f32[3,4] parameter(0)
  z = f32[] parameter(1)
  s = f32[2,4] reduce-window(p, z), window={size=2x3 stride=2x1 pad=1_0x1_1}, to_apply=add
  ROOT m = f32[2,2] reduce-window(p, z), window={size=2x2 stride=2x2 pad=0_1x0_0}, to_apply=max)");
  const Literal p = L("f32[3,4]", "{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}");
  EXPECT_EQ(Str(Eval(hlo, "s", {p, L("f32[]", "0")})), "f32[2,4] {{3, 6, 9, 7}, {30, 48, 54, 38}}");
  // With the (uneven) padding skipped, a non-zero init is added once per window.
  EXPECT_EQ(Str(Eval(hlo, "s", {p, L("f32[]", "1")})),
            "f32[2,4] {{4, 7, 10, 8}, {31, 49, 55, 39}}");
  // Max pool; the bottom windows half in the padding: max(9,10) and max(11,12).
  EXPECT_EQ(Str(Eval(hlo, "m", {p, L("f32[]", "-inf")})), "f32[2,2] {{6, 8}, {10, 12}}");
  // Padding is skipped, not filled: a non-identity init shows up once per window.
  EXPECT_EQ(Str(Eval(hlo, "m", {p, L("f32[]", "100")})), "f32[2,2] {{100, 100}, {100, 100}}");
}

TEST(ReduceWindowTest, BaseAndWindowDilation) {
  // Base dilation 2 puts 1..5 at positions 0,2,4,6,8 (holes between); pad 1 each side; the
  // window {0, 2} (size 2, dilation 2) at o covers dilated positions o-1 and o+1: only odd o
  // hit two elements: o=1 -> 1+2, o=3 -> 2+3, o=5 -> 3+4, o=7 -> 4+5.
  const std::string hlo = Module(Binary("add", "s32", "add") + Binary("addf", "f32", "add"), R"(
  p = s32[5] parameter(0)
  z = s32[] parameter(1)
  d = s32[9] reduce-window(p, z), window={size=2 pad=1_1 lhs_dilate=2 rhs_dilate=2}, to_apply=add
  q = f32[7] parameter(2)
  y = f32[] parameter(3)
  ROOT s = f32[3] reduce-window(q, y), window={size=3 stride=2}, to_apply=addf)");
  EXPECT_EQ(Str(Eval(hlo, "d", {L("s32[5]", "{1, 2, 3, 4, 5}"), L("s32[]", "0")})),
            "s32[9] {0, 3, 0, 5, 0, 7, 0, 9, 0}");
  // 1+2+3, 3+4+5, 5+6+7.
  EXPECT_EQ(Str(Eval(hlo, "s", {L("f32[7]", "{1, 2, 3, 4, 5, 6, 7}"), L("f32[]", "0")})),
            "f32[3] {6, 12, 18}");
}

TEST(ReduceWindowTest, VariadicArgmax) {
  // Windows [3,1] [1,4] [4,1] [1,5] -> (3,0) (4,2) (4,2) (5,4).
  const std::string hlo = Module(kArgmax, R"(
  v = f32[5] parameter(0)
  i = s32[5] parameter(1)
  iv = f32[] parameter(2)
  ii = s32[] parameter(3)
  ROOT r = (f32[4], s32[4]) reduce-window(v, i, iv, ii), window={size=2}, to_apply=argmax)");
  absl::StatusOr<Literal> r = Eval(hlo, "r",
                                   {L("f32[5]", "{3, 1, 4, 1, 5}"), L("s32[5]", "{0, 1, 2, 3, 4}"),
                                    L("f32[]", "-inf"), L("s32[]", "0")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tuple_elements()[0].ToString(), "f32[4] {3, 4, 4, 5}");
  EXPECT_EQ(r->tuple_elements()[1].ToString(), "s32[4] {0, 2, 2, 4}");
}

TEST(ReduceWindowTest, UnsupportedAndMalformed) {
  const std::string hlo = Module(Binary("add", "f32", "add"), R"(
  p = f32[4] parameter(0)
  z = f32[] parameter(1)
  ROOT s = f32[3] reduce-window(p, z), window={size=2}, to_apply=add)");
  const std::vector<Literal> args = {L("f32[4]", "{1, 2, 3, 4}"), L("f32[]", "0")};
  EXPECT_EQ(Str(Eval(hlo, "s", args)), "f32[3] {3, 5, 7}");
  auto reversal = [](HloInstruction& i) { (*i.mutable_attrs().window)[0].reversal = true; };
  EXPECT_TRUE(absl::IsUnimplemented(Eval(hlo, "s", args, reversal).status()));
  auto zero_stride = [](HloInstruction& i) { (*i.mutable_attrs().window)[0].stride = 0; };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo, "s", args, zero_stride).status()));
  auto no_window = [](HloInstruction& i) { i.mutable_attrs().window.reset(); };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo, "s", args, no_window).status()));
  auto huge = [](HloInstruction& i) { (*i.mutable_attrs().window)[0].pad_low = int64_t{1} << 62; };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo, "s", args, huge).status()));
  auto wrong_shape = [](HloInstruction& i) { i.set_shape(Shape::Array(PrimitiveType::kF32, {4})); };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo, "s", args, wrong_shape).status()));
}

// ---- select-and-scatter ----------------------------------------------------------------------

std::string Select(absl::string_view name, absl::string_view direction, bool hidden = false) {
  if (hidden) {
    return absl::StrCat(name,
                        " {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = pred[] "
                        "compare(a, b), direction=",
                        direction, "\n  ROOT r = pred[] copy(c)\n}\n\n");
  }
  return absl::StrCat(name,
                      " {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] "
                      "compare(a, b), direction=",
                      direction, "\n}\n\n");
}

TEST(SelectAndScatterTest, MaxPoolGradient) {
  // 2x2 windows, stride 2: maxima 5 at (0,1), 8 at (1,2), 9 at (2,1); the last window
  // {1,1,3,3} ties: GE keeps the first 3 (3,2), GT moves on to the last (3,3).
  const std::string hlo =
      Module(Select("ge", "GE") + Select("gt", "GT") + Binary("add", "f32", "add"), R"(
  p = f32[4,4] parameter(0)
  s = f32[2,2] parameter(1)
  z = f32[] parameter(2)
  ge = f32[4,4] select-and-scatter(p, s, z), window={size=2x2 stride=2x2}, select=ge, scatter=add
  ROOT gt = f32[4,4] select-and-scatter(p, s, z), window={size=2x2 stride=2x2}, select=gt, scatter=add)");
  const std::vector<Literal> args = {
      L("f32[4,4]", "{{1, 5, 2, 0}, {3, 4, 8, 7}, {6, 9, 1, 1}, {2, 2, 3, 3}}"),
      L("f32[2,2]", "{{10, 20}, {30, 40}}"), L("f32[]", "0")};
  EXPECT_EQ(Str(Eval(hlo, "ge", args)),
            "f32[4,4] {{0, 10, 0, 0}, {0, 0, 20, 0}, {0, 30, 0, 0}, {0, 0, 40, 0}}");
  EXPECT_EQ(Str(Eval(hlo, "gt", args)),
            "f32[4,4] {{0, 10, 0, 0}, {0, 0, 20, 0}, {0, 30, 0, 0}, {0, 0, 0, 40}}");
}

TEST(SelectAndScatterTest, OverlappingWindowsPaddingAndInit) {
  const std::string hlo = Module(Select("ge", "GE") + Select("ge_hidden", "GE", true) +
                                     Binary("add", "f32", "add") + Binary("sub", "f32", "subtract"),
                                 R"(
  p = f32[5] parameter(0)
  s = f32[2] parameter(1)
  z = f32[] parameter(2)
  o = f32[5] select-and-scatter(p, s, z), window={size=3 stride=2}, select=ge, scatter=add
  g = f32[5] select-and-scatter(p, s, z), window={size=3 stride=2}, select=ge_hidden, scatter=add
  n = f32[5] select-and-scatter(p, s, z), window={size=3 stride=2}, select=ge, scatter=sub
  t = f32[3] parameter(3)
  ROOT q = f32[5] select-and-scatter(p, t, z), window={size=3 stride=2 pad=1_1}, select=ge, scatter=add)");
  const Literal p = L("f32[5]", "{1, 2, 9, 0, 3}");
  // Both windows {1,2,9} and {9,0,3} select index 2: 0 + 10 + 20.
  EXPECT_EQ(Str(Eval(hlo, "o", {p, L("f32[2]", "{10, 20}"), L("f32[]", "0")})),
            "f32[5] {0, 0, 30, 0, 0}");
  EXPECT_EQ(Str(Eval(hlo, "g", {p, L("f32[2]", "{10, 20}"), L("f32[]", "0")})),
            "f32[5] {0, 0, 30, 0, 0}");
  // A non-identity init stays on unselected elements and starts the selected ones.
  EXPECT_EQ(Str(Eval(hlo, "o", {p, L("f32[2]", "{10, 20}"), L("f32[]", "1")})),
            "f32[5] {1, 1, 31, 1, 1}");
  // scatter(current, source): (100 - 10) - 20 = 70.
  EXPECT_EQ(Str(Eval(hlo, "n", {p, L("f32[2]", "{10, 20}"), L("f32[]", "100")})),
            "f32[5] {100, 100, 70, 100, 100}");
  // Padded windows {-1,0,1} {1,2,3} {3,4,5}: maxima 2 at 1, 9 at 2, 3 at 4.
  EXPECT_EQ(
      Str(Eval(hlo, "q",
               {p, L("f32[3]", "{10, 20, 30}"), L("f32[]", "0"), L("f32[3]", "{10, 20, 30}")})),
      "error: INVALID_ARGUMENT: q (select-and-scatter): expects operand, source and init "
      "value");
  EXPECT_EQ(Str(Eval(hlo, "q", {p, L("f32[3]", "{10, 20, 30}"), L("f32[]", "0")})),
            "f32[5] {0, 10, 20, 0, 30}");
  // The source must have the window-count shape.
  EXPECT_TRUE(absl::IsInvalidArgument(
      Eval(hlo, "o", {p, L("f32[3]", "{10, 20, 30}"), L("f32[]", "0")}).status()));
}

// ---- map -------------------------------------------------------------------------------------

TEST(MapTest, AppliesComputationElementwise) {
  const std::string hlo = Module(R"(f {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  two = f32[] constant(2)
  d = f32[] multiply(x, two)
  ROOT r = f32[] add(d, y)
}

)",
                                 R"(
  x = f32[2,2] parameter(0)
  y = f32[2,2] parameter(1)
  ROOT m = f32[2,2] map(x, y), dimensions={0,1}, to_apply=f)");
  // 2x + y.
  EXPECT_EQ(Str(Eval(hlo, "m",
                     {L("f32[2,2]", "{{1, 2}, {3, 4}}"), L("f32[2,2]", "{{10, 20}, {30, 40}}")})),
            "f32[2,2] {{12, 24}, {36, 48}}");
  EXPECT_TRUE(absl::IsInvalidArgument(
      Eval(hlo, "m", {L("f32[2,2]", "{{1, 2}, {3, 4}}"), L("f32[2]", "{1, 2}")}).status()));
}

// ---- Properties ------------------------------------------------------------------------------

// Fast typed paths must agree with calling the (hidden) computation element by element. Values
// are small integers so every f32 sum is exact and the f64 fast path agrees too.
Literal RandomLiteral(PrimitiveType type, const std::vector<int64_t>& dims, int lo, int hi) {
  Literal l(Shape::Array(type, dims));
  for (int64_t i = 0; i < l.element_count(); ++i) {
    const int v = *rc::gen::inRange(lo, hi + 1);
    if (IsFloatingType(type)) {
      l.SetDouble(i, v);
    } else {
      l.SetInt64(i, v);
    }
  }
  return l;
}

struct OpCase {
  const char* type;
  PrimitiveType ptype;
  const char* op;
  int init;
};

const OpCase kOps[] = {
    {"f32", PrimitiveType::kF32, "add", 0},      {"f32", PrimitiveType::kF32, "maximum", -100},
    {"f32", PrimitiveType::kF32, "minimum", 7},  {"s32", PrimitiveType::kS32, "multiply", 3},
    {"s32", PrimitiveType::kS32, "add", 5},      {"s8", PrimitiveType::kS8, "add", 0},
    {"u16", PrimitiveType::kU16, "multiply", 1}, {"s32", PrimitiveType::kS32, "xor", 0},
    {"bf16", PrimitiveType::kBF16, "maximum", 0}};

RC_GTEST_PROP(ReductionProperties, ReduceFastPathMatchesCalls, ()) {
  const OpCase op = *rc::gen::elementOf(std::vector<OpCase>(std::begin(kOps), std::end(kOps)));
  const int64_t rank = *rc::gen::inRange<int64_t>(0, 4);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) {
    dims.push_back(*rc::gen::inRange(0, 10) == 0 ? 0 : *rc::gen::inRange<int64_t>(1, 6));
  }
  std::vector<int64_t> reduce_dims;
  std::vector<int64_t> out_dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (*rc::gen::arbitrary<bool>()) {
      reduce_dims.push_back(d);
    } else {
      out_dims.push_back(dims[d]);
    }
  }
  const bool swapped = *rc::gen::arbitrary<bool>();
  const std::string t = op.type;
  auto shape = [&](const std::vector<int64_t>& ds) {
    return absl::StrCat(t, "[", absl::StrJoin(ds, ","), "]");
  };
  const std::string hlo = Module(
      Binary("fast", t, op.op, false, swapped) + Binary("slow", t, op.op, true, swapped),
      absl::StrCat("  p = ", shape(dims), " parameter(0)\n  z = ", t, "[] parameter(1)\n  f = ",
                   shape(out_dims), " reduce(p, z), dimensions={", absl::StrJoin(reduce_dims, ","),
                   "}, to_apply=fast\n  ROOT s = ", shape(out_dims), " reduce(p, z), dimensions={",
                   absl::StrJoin(reduce_dims, ","), "}, to_apply=slow"));
  const std::vector<Literal> args = {RandomLiteral(op.ptype, dims, -9, 9),
                                     RandomLiteral(op.ptype, {}, op.init, op.init)};
  const int before = call_count;
  absl::StatusOr<Literal> fast = Eval(hlo, "f", args);
  RC_ASSERT(call_count == before);  // The fast path calls nothing.
  absl::StatusOr<Literal> slow = Eval(hlo, "s", args);
  RC_ASSERT(fast.ok());
  RC_ASSERT(slow.ok());
  RC_ASSERT(fast->ToString() == slow->ToString());
}

// Naive reduce-window (sum) on an explicitly dilated and padded 2-D base.
std::vector<int64_t> NaiveWindowSum(const std::vector<int64_t>& in, int64_t rows, int64_t cols,
                                    const std::vector<WindowDim>& w, int64_t init,
                                    std::vector<int64_t>* out_dims) {
  const int64_t dims[2] = {rows, cols};
  int64_t padded[2];
  for (int d = 0; d < 2; ++d) {
    const int64_t dilated = dims[d] == 0 ? 0 : (dims[d] - 1) * w[d].lhs_dilation + 1;
    padded[d] = dilated + w[d].pad_low + w[d].pad_high;
  }
  // Base cell (r, c) of the padded, dilated array holds an element or nothing.
  auto cell = [&](int64_t r, int64_t c) -> std::optional<int64_t> {
    const int64_t rc[2] = {r, c};
    int64_t src[2];
    for (int d = 0; d < 2; ++d) {
      const int64_t x = rc[d] - w[d].pad_low;  // position in the dilated base
      if (x < 0 || x % w[d].lhs_dilation != 0) return std::nullopt;
      src[d] = x / w[d].lhs_dilation;
      if (src[d] >= dims[d]) return std::nullopt;
    }
    return in[src[0] * cols + src[1]];
  };
  out_dims->clear();
  for (int d = 0; d < 2; ++d) {
    const int64_t span = (w[d].size - 1) * w[d].rhs_dilation + 1;
    out_dims->push_back(span > padded[d] ? 0 : (padded[d] - span) / w[d].stride + 1);
  }
  std::vector<int64_t> out;
  for (int64_t i = 0; i < (*out_dims)[0]; ++i) {
    for (int64_t j = 0; j < (*out_dims)[1]; ++j) {
      int64_t acc = init;
      for (int64_t a = 0; a < w[0].size; ++a) {
        for (int64_t b = 0; b < w[1].size; ++b) {
          std::optional<int64_t> v = cell(i * w[0].stride + a * w[0].rhs_dilation,
                                          j * w[1].stride + b * w[1].rhs_dilation);
          if (v) acc += *v;
        }
      }
      out.push_back(acc);
    }
  }
  return out;
}

RC_GTEST_PROP(ReductionProperties, ReduceWindowMatchesNaiveReference, ()) {
  const int64_t rows = *rc::gen::inRange<int64_t>(0, 7);
  const int64_t cols = *rc::gen::inRange<int64_t>(1, 7);
  std::vector<WindowDim> w(2);
  for (WindowDim& d : w) {
    d.size = *rc::gen::inRange<int64_t>(1, 4);
    d.stride = *rc::gen::inRange<int64_t>(1, 4);
    d.pad_low = *rc::gen::inRange<int64_t>(-1, 3);
    d.pad_high = *rc::gen::inRange<int64_t>(-1, 3);
    d.lhs_dilation = *rc::gen::inRange<int64_t>(1, 3);
    d.rhs_dilation = *rc::gen::inRange<int64_t>(1, 3);
  }
  std::vector<int64_t> in;
  for (int64_t i = 0; i < rows * cols; ++i) in.push_back(*rc::gen::inRange(-50, 50));
  const int64_t init = *rc::gen::inRange(-3, 3);
  std::vector<int64_t> out_dims;
  const std::vector<int64_t> expected = NaiveWindowSum(in, rows, cols, w, init, &out_dims);
  const bool hidden = *rc::gen::arbitrary<bool>();
  const std::string hlo = Module(
      Binary("add", "s32", "add", hidden),
      absl::StrCat("  p = s32[", rows, ",", cols, "] parameter(0)\n  z = s32[] parameter(1)\n",
                   "  ROOT r = s32[", out_dims[0], ",", out_dims[1],
                   "] reduce-window(p, z), window=", WindowToString(w), ", to_apply=add"));
  Literal p(Shape::Array(PrimitiveType::kS32, {rows, cols}));
  for (int64_t i = 0; i < rows * cols; ++i) p.SetInt64(i, in[i]);
  Literal z(Shape::Scalar(PrimitiveType::kS32));
  z.SetInt64(0, init);
  absl::StatusOr<Literal> r = Eval(hlo, "r", {p, z});
  RC_ASSERT(r.ok());
  RC_ASSERT(r->element_count() == static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) RC_ASSERT(r->GetInt64(i) == expected[i]);
}

RC_GTEST_PROP(ReductionProperties, SelectAndScatterFastPathMatchesCalls, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(1, 9);
  WindowDim w;
  w.size = *rc::gen::inRange<int64_t>(1, 4);
  w.stride = *rc::gen::inRange<int64_t>(1, 3);
  w.pad_low = *rc::gen::inRange<int64_t>(0, 2);
  w.pad_high = *rc::gen::inRange<int64_t>(0, 2);
  const int64_t padded = n + w.pad_low + w.pad_high;
  const int64_t count = w.size > padded ? 0 : (padded - w.size) / w.stride + 1;
  const std::string direction =
      *rc::gen::element(std::string("GE"), std::string("GT"), std::string("LE"), std::string("LT"));
  const std::string window = absl::StrCat("window=", WindowToString({w}));
  const std::string hlo =
      Module(Select("fast", direction) + Select("slow", direction, true) +
                 Binary("add", "f32", "add") + Binary("add_hidden", "f32", "add", true),
             absl::StrCat("  p = f32[", n, "] parameter(0)\n  s = f32[", count,
                          "] parameter(1)\n  z = f32[] parameter(2)\n  f = f32[", n,
                          "] select-and-scatter(p, s, z), ", window, ", select=fast, scatter=add\n",
                          "  ROOT g = f32[", n, "] select-and-scatter(p, s, z), ", window,
                          ", select=slow, scatter=add_hidden"));
  const std::vector<Literal> args = {RandomLiteral(PrimitiveType::kF32, {n}, -3, 3),
                                     RandomLiteral(PrimitiveType::kF32, {count}, 1, 9),
                                     RandomLiteral(PrimitiveType::kF32, {}, 0, 2)};
  absl::StatusOr<Literal> fast = Eval(hlo, "f", args);
  absl::StatusOr<Literal> slow = Eval(hlo, "g", args);
  RC_ASSERT(fast.ok());
  RC_ASSERT(slow.ok());
  RC_ASSERT(fast->ToString() == slow->ToString());
}

}  // namespace
}  // namespace spmdcheck::oracle
