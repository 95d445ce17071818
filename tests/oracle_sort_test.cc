// Golden tests for the oracle's sort and TopK (oracle/sort.cc): expected orders worked out by
// hand, and properties against std::stable_sort on (key, position) pairs written in the test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_parser.h"
#include "ir/literal.h"
#include "ir/shape.h"
#include "oracle/op_registry.h"
#include "oracle/sort.h"
#include "tests/oracle_indexing_sort_test_util.h"

namespace spmdcheck::oracle {
namespace {

using testing_util::EvalScalar;
using testing_util::Lit;
using testing_util::Parse;
using testing_util::Program;

EvalEnv TestEnv() {
  EvalEnv env;
  env.call = EvalScalar;
  return env;
}

std::vector<const Literal*> Ptrs(const std::vector<Literal>& operands) {
  std::vector<const Literal*> ptrs;
  for (const Literal& l : operands) ptrs.push_back(&l);
  return ptrs;
}

absl::StatusOr<Literal> RunOp(const Program& p, const std::vector<Literal>& operands) {
  OpRegistry registry;
  RegisterSortOps(registry);
  if (p.instr == nullptr) return absl::InternalError("no instruction");
  OpHandler handler = registry.Find(p.instr->opcode());
  if (handler == nullptr) return absl::InternalError("no handler");
  return handler(*p.instr, Ptrs(operands), TestEnv());
}

std::string MustRun(const Program& p, const std::vector<Literal>& operands) {
  absl::StatusOr<Literal> result = RunOp(p, operands);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->ToString() : result.status().ToString();
}

std::string MustTopK(const Program& p, const std::vector<Literal>& operands) {
  if (p.instr == nullptr) return "no instruction";
  absl::StatusOr<Literal> result = EvaluateTopK(*p.instr, Ptrs(operands), TestEnv());
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->ToString() : result.status().ToString();
}

// A sort of one operand of `shape` along `dim` with comparator `body` over p0, p1.
std::string SortModule(const std::string& type, const std::string& shape, int dim,
                       const std::string& body) {
  return absl::StrCat("HloModule m\ncmp {\n  p0 = ", type, "[] parameter(0)\n  p1 = ", type,
                      "[] parameter(1)\n", body, "\n}\nENTRY e {\n  x = ", shape,
                      " parameter(0)\n  ROOT s = ", shape, " sort(x), dimensions={", dim,
                      "}, is_stable=true, to_apply=cmp\n}\n");
}

// ---- sort -------------------------------------------------------------------------------------

TEST(Sort, AscendingF32) {
  Program p = Parse(
      SortModule("f32", "f32[6]", 0, "  ROOT lt = pred[] compare(p0, p1), direction=LT"), "s");
  EXPECT_EQ(MustRun(p, {Lit("f32[6]", "{3, -1, 2.5, 0, -7, 10}")}),
            "f32[6] {-7, -1, 0, 2.5, 3, 10}");
}

TEST(Sort, DescendingS32AlongEitherDim) {
  Program rows = Parse(
      SortModule("s32", "s32[2,3]", 1, "  ROOT gt = pred[] compare(p0, p1), direction=GT"), "s");
  EXPECT_EQ(MustRun(rows, {Lit("s32[2,3]", "{{1, 3, 2}, {-5, 9, 0}}")}),
            "s32[2,3] {{3, 2, 1}, {9, 0, -5}}");
  Program cols = Parse(
      SortModule("s32", "s32[2,3]", 0, "  ROOT gt = pred[] compare(p0, p1), direction=GT"), "s");
  EXPECT_EQ(MustRun(cols, {Lit("s32[2,3]", "{{1, 3, 2}, {-5, 9, 0}}")}),
            "s32[2,3] {{1, 9, 2}, {-5, 3, 0}}");
  // compare(p1, p0), direction=LT is also descending.
  Program swapped = Parse(
      SortModule("s32", "s32[4]", 0, "  ROOT lt = pred[] compare(p1, p0), direction=LT"), "s");
  EXPECT_EQ(MustRun(swapped, {Lit("s32[4]", "{2, 4, 1, 3}")}), "s32[4] {4, 3, 2, 1}");
}

TEST(Sort, RankThreeMiddleDim) {
  Program p = Parse(
      SortModule("s8", "s8[2,3,2]", 1, "  ROOT lt = pred[] compare(p0, p1), direction=LT"), "s");
  EXPECT_EQ(MustRun(p, {Lit("s8[2,3,2]", "{{{3,0},{1,5},{2,-1}},{{0,0},{-1,1},{7,-2}}}")}),
            "s8[2,3,2] {{{1, -1}, {2, 0}, {3, 5}}, {{-1, -2}, {0, 0}, {7, 1}}}");
}

TEST(Sort, UnsignedAndNarrowTypes) {
  Program u = Parse(
      SortModule("u32", "u32[4]", 0, "  ROOT lt = pred[] compare(p0, p1), direction=LT"), "s");
  EXPECT_EQ(MustRun(u, {Lit("u32[4]", "{4294967295, 1, 2147483648, 0}")}),
            "u32[4] {0, 1, 2147483648, 4294967295}");
  Program b = Parse(
      SortModule("bf16", "bf16[4]", 0, "  ROOT lt = pred[] compare(p0, p1), direction=LT"), "s");
  EXPECT_EQ(MustRun(b, {Lit("bf16[4]", "{1.5, -0.5, 0.25, -3}")}), "bf16[4] {-3, -0.5, 0.25, 1.5}");
  Program q = Parse(
      SortModule("pred", "pred[4]", 0, "  ROOT gt = pred[] compare(p0, p1), direction=GT"), "s");
  EXPECT_EQ(MustRun(q, {Lit("pred[4]", "{false, true, false, true}")}),
            "pred[4] {true, true, false, false}");
}

TEST(Sort, KeyValueSortPermutesAllOperands) {
  // Keys s32 compared by p0/p1; values f32 (and u8) follow their keys.
  Program p = Parse(R"(HloModule m
cmp {
  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  p2 = f32[] parameter(2)
  p3 = f32[] parameter(3)
  p4 = u8[] parameter(4)
  p5 = u8[] parameter(5)
  ROOT lt = pred[] compare(p0, p1), direction=LT
}
ENTRY e {
  k = s32[4] parameter(0)
  v = f32[4] parameter(1)
  w = u8[4] parameter(2)
  ROOT s = (s32[4], f32[4], u8[4]) sort(k, v, w), dimensions={0}, to_apply=cmp
})",
                    "s");
  EXPECT_EQ(MustRun(p, {Lit("s32[4]", "{30, 10, 40, 20}"), Lit("f32[4]", "{0.5, 1.5, 2.5, 3.5}"),
                        Lit("u8[4]", "{0, 1, 2, 3}")}),
            "(s32[4], f32[4], u8[4]) ({10, 20, 30, 40}, {1.5, 3.5, 0.5, 2.5}, {1, 3, 0, 2})");
}

TEST(Sort, ComparatorOnSecondOperand) {
  // compare(p2, p3): sort by the values, keys follow.
  Program p = Parse(R"(HloModule m
cmp {
  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  p2 = f32[] parameter(2)
  p3 = f32[] parameter(3)
  ROOT gt = pred[] compare(p2, p3), direction=GT
}
ENTRY e {
  k = s32[3] parameter(0)
  v = f32[3] parameter(1)
  ROOT s = (s32[3], f32[3]) sort(k, v), dimensions={0}, to_apply=cmp
})",
                    "s");
  EXPECT_EQ(MustRun(p, {Lit("s32[3]", "{1, 2, 3}"), Lit("f32[3]", "{0.5, 9, -1}")}),
            "(s32[3], f32[3]) ({2, 1, 3}, {9, 0.5, -1})");
}

constexpr char kStableCmpFast[] = "  ROOT lt = pred[] compare(p0, p1), direction=LT";
// Same order, but not a single compare: goes through to_apply.
constexpr char kStableCmpGeneric[] = R"(  lt = pred[] compare(p0, p1), direction=LT
  t = pred[] constant(true)
  ROOT r = pred[] and(lt, t))";

TEST(Sort, StableWithEqualKeysFastAndGeneric) {
  for (const char* body : {kStableCmpFast, kStableCmpGeneric}) {
    Program p = Parse(absl::StrCat(R"(HloModule m
cmp {
  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  p2 = s32[] parameter(2)
  p3 = s32[] parameter(3)
)",
                                   body, R"(
}
ENTRY e {
  k = s32[20] parameter(0)
  v = s32[20] parameter(1)
  ROOT s = (s32[20], s32[20]) sort(k, v), dimensions={0}, is_stable=true, to_apply=cmp
})"),
                      "s");
    // Keys alternate 2,1,0,2,1,0,...: values (the positions) of equal keys stay in order.
    EXPECT_EQ(MustRun(p, {Lit("s32[20]", "{2,1,0,2,1,0,2,1,0,2,1,0,2,1,0,2,1,0,2,1}"),
                          Lit("s32[20]", "{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19}")}),
              "(s32[20], s32[20]) ({0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2}, "
              "{2, 5, 8, 11, 14, 17, 1, 4, 7, 10, 13, 16, 19, 0, 3, 6, 9, 12, 15, 18})")
        << body;
  }
}

TEST(Sort, NaNUnderTotalOrder) {
  Program p = Parse(SortModule("f32", "f32[8]", 0,
                               "  ROOT lt = pred[] compare(p0, p1), direction=LT, type=TOTALORDER"),
                    "s");
  absl::StatusOr<Literal> r = RunOp(p, {Lit("f32[8]", "{nan, 1, -nan, -0, 0, -inf, inf, -1}")});
  ASSERT_TRUE(r.ok()) << r.status();
  // -NaN < -inf < -1 < -0 < 0 < 1 < inf < NaN.
  const std::vector<uint32_t> expected = {
      std::bit_cast<uint32_t>(-std::numeric_limits<float>::quiet_NaN()),
      std::bit_cast<uint32_t>(-std::numeric_limits<float>::infinity()),
      std::bit_cast<uint32_t>(-1.0f),
      std::bit_cast<uint32_t>(-0.0f),
      std::bit_cast<uint32_t>(0.0f),
      std::bit_cast<uint32_t>(1.0f),
      std::bit_cast<uint32_t>(std::numeric_limits<float>::infinity()),
      std::bit_cast<uint32_t>(std::numeric_limits<float>::quiet_NaN()),
  };
  for (int i = 0; i < 8; ++i) {
    const uint32_t bits = static_cast<uint32_t>(r->GetBits(i));
    if (std::isnan(std::bit_cast<float>(expected[i]))) {
      EXPECT_TRUE(std::isnan(std::bit_cast<float>(bits))) << i;
      EXPECT_EQ(bits >> 31, expected[i] >> 31) << i;
    } else {
      EXPECT_EQ(bits, expected[i]) << i;
    }
  }
  // Descending with the same type, and through to_apply with the generic path.
  Program d = Parse(SortModule("f32", "f32[4]", 0,
                               "  ROOT gt = pred[] compare(p0, p1), direction=GT, type=TOTALORDER"),
                    "s");
  EXPECT_EQ(MustRun(d, {Lit("f32[4]", "{-0, nan, 0, 2}")}), "f32[4] {nan, 2, 0, -0}");
  Program g = Parse(
      SortModule("f32", "f32[4]", 0, R"(  gt = pred[] compare(p0, p1), direction=GT, type=TOTALORDER
  t = pred[] constant(true)
  ROOT r = pred[] and(gt, t))"),
      "s");
  EXPECT_EQ(MustRun(g, {Lit("f32[4]", "{-0, nan, 0, 2}")}), "f32[4] {nan, 2, 0, -0}");
}

TEST(Sort, PlainLtWithNaNFollowsTheEvaluatorsAlgorithm) {
  // LT without TOTALORDER is not a strict weak order with NaNs. XLA's evaluator uses binary
  // insertion for fewer than 9 elements: 3 | NaN (NaN < 3 false: stays), then 1: compared with
  // the middle of [3, NaN], i.e. NaN: 1 < NaN false -> inserted after it. Result unchanged.
  for (const char* body : {"  ROOT lt = pred[] compare(p0, p1), direction=LT",
                           R"(  lt = pred[] compare(p0, p1), direction=LT
  t = pred[] constant(true)
  ROOT r = pred[] and(lt, t))"}) {
    Program p = Parse(SortModule("f32", "f32[3]", 0, body), "s");
    EXPECT_EQ(MustRun(p, {Lit("f32[3]", "{3, nan, 1}")}), "f32[3] {3, nan, 1}") << body;
  }
}

TEST(Sort, LexicographicGenericComparator) {
  // Sort by (a ascending, b descending) with select: the to_apply path.
  Program p = Parse(R"(HloModule m
cmp {
  a0 = s32[] parameter(0)
  a1 = s32[] parameter(1)
  b0 = s32[] parameter(2)
  b1 = s32[] parameter(3)
  eq = pred[] compare(a0, a1), direction=EQ
  lt = pred[] compare(a0, a1), direction=LT
  gt = pred[] compare(b0, b1), direction=GT
  ROOT r = pred[] select(eq, gt, lt)
}
ENTRY e {
  a = s32[5] parameter(0)
  b = s32[5] parameter(1)
  ROOT s = (s32[5], s32[5]) sort(a, b), dimensions={0}, to_apply=cmp
})",
                    "s");
  EXPECT_EQ(MustRun(p, {Lit("s32[5]", "{2, 1, 2, 1, 0}"), Lit("s32[5]", "{5, 6, 7, 8, 9}")}),
            "(s32[5], s32[5]) ({0, 1, 1, 2, 2}, {9, 8, 6, 7, 5})");
}

TEST(Sort, MalformedIsAnErrorNotACrash) {
  // Dimension out of range.
  Program p = Parse(
      SortModule("s32", "s32[3]", 4, "  ROOT lt = pred[] compare(p0, p1), direction=LT"), "s");
  EXPECT_EQ(RunOp(p, {Lit("s32[3]", "{1,2,3}")}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Comparator with the wrong number of parameters for two operands.
  Program q = Parse(R"(HloModule m
cmp {
  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  ROOT lt = pred[] compare(p0, p1), direction=LT
}
ENTRY e {
  k = s32[3] parameter(0)
  v = s32[3] parameter(1)
  ROOT s = (s32[3], s32[3]) sort(k, v), dimensions={0}, to_apply=cmp
})",
                    "s");
  EXPECT_EQ(RunOp(q, {Lit("s32[3]", "{1,2,3}"), Lit("s32[3]", "{1,2,3}")}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Operands of different dims.
  Program r = Parse(R"(HloModule m
cmp {
  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  p2 = s32[] parameter(2)
  p3 = s32[] parameter(3)
  ROOT lt = pred[] compare(p0, p1), direction=LT
}
ENTRY e {
  k = s32[3] parameter(0)
  v = s32[3] parameter(1)
  ROOT s = (s32[3], s32[3]) sort(k, v), dimensions={0}, to_apply=cmp
})",
                    "s");
  EXPECT_EQ(RunOp(r, {Lit("s32[3]", "{1,2,3}"), Lit("s32[2]", "{1,2}")}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Sort, MillionFloatsKeyValueIsReasonablyFast) {
  const int64_t n = 1 << 20;
  Program p = Parse(absl::StrCat(R"(HloModule m
cmp {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  p2 = s32[] parameter(2)
  p3 = s32[] parameter(3)
  ROOT lt = pred[] compare(p0, p1), direction=LT
}
ENTRY e {
  k = f32[)",
                                 n, R"(] parameter(0)
  v = s32[)",
                                 n, R"(] parameter(1)
  ROOT s = (f32[)",
                                 n, "], s32[", n, R"(]) sort(k, v), dimensions={0}, to_apply=cmp
})"),
                    "s");
  std::vector<Literal> operands;
  operands.emplace_back(Shape::Array(PrimitiveType::kF32, {n}));
  operands.emplace_back(Shape::Array(PrimitiveType::kS32, {n}));
  uint32_t state = 12345;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    operands[0].data<float>()[i] = static_cast<float>(state >> 8);
    operands[1].data<int32_t>()[i] = static_cast<int32_t>(i);
  }
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<Literal> r = RunOp(p, operands);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.status();
  const absl::Span<const float> keys = r->tuple_elements()[0].data<float>();
  const absl::Span<const int32_t> values = r->tuple_elements()[1].data<int32_t>();
  for (int64_t i = 1; i < n; ++i) ASSERT_LE(keys[i - 1], keys[i]) << i;
  for (int64_t i = 0; i < n; i += 4099) {
    ASSERT_EQ(operands[0].data<float>()[values[i]], keys[i]);
  }
  std::printf("sort of f32[%lld] with s32 values: %.1f ms\n", static_cast<long long>(n), ms);
  EXPECT_LT(ms, 5000.0);
}

// Sorting s32 keys with their positions as values agrees with std::stable_sort, in both the
// typed path and the to_apply path, ascending and descending.
RC_GTEST_PROP(SortProperties, MatchesStableSort, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(0, 40);
  const bool descending = *rc::gen::arbitrary<bool>();
  std::vector<int32_t> keys;
  for (int64_t i = 0; i < n; ++i) keys.push_back(*rc::gen::inRange<int32_t>(-4, 5));
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return descending ? keys[a] > keys[b] : keys[a] < keys[b];
  });
  const std::string dir = descending ? "GT" : "LT";
  for (const bool generic : {false, true}) {
    const std::string body =
        generic ? absl::StrCat("  c = pred[] compare(p0, p1), direction=", dir,
                               "\n  t = pred[] constant(true)\n  ROOT r = pred[] and(c, t)")
                : absl::StrCat("  ROOT c = pred[] compare(p0, p1), direction=", dir);
    Program p =
        Parse(absl::StrCat("HloModule m\ncmp {\n  p0 = s32[] parameter(0)\n  p1 = s32[] "
                           "parameter(1)\n  p2 = s32[] parameter(2)\n  p3 = s32[] "
                           "parameter(3)\n",
                           body, "\n}\nENTRY e {\n  k = s32[", n, "] parameter(0)\n  v = s32[", n,
                           "] parameter(1)\n  ROOT s = (s32[", n, "], s32[", n,
                           "]) sort(k, v), dimensions={0}, to_apply=cmp\n}\n"),
              "s");
    RC_ASSERT(p.instr != nullptr);
    std::vector<Literal> operands;
    operands.emplace_back(Shape::Array(PrimitiveType::kS32, {n}));
    operands.emplace_back(Shape::Array(PrimitiveType::kS32, {n}));
    for (int64_t i = 0; i < n; ++i) {
      operands[0].data<int32_t>()[i] = keys[i];
      operands[1].data<int32_t>()[i] = static_cast<int32_t>(i);
    }
    absl::StatusOr<Literal> result = RunOp(p, operands);
    RC_ASSERT(result.ok());
    for (int64_t i = 0; i < n; ++i) {
      RC_ASSERT(result->tuple_elements()[1].data<int32_t>()[i] == order[i]);
      RC_ASSERT(result->tuple_elements()[0].data<int32_t>()[i] == keys[order[i]]);
    }
  }
}

// With NaNs a plain (FLOAT) LT/GT is not a strict weak order, so the result depends on the
// algorithm: the typed path must make exactly the comparisons the to_apply path makes.
RC_GTEST_PROP(SortProperties, TypedAndToApplyPathsAgreeWithNaNs, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(0, 40);
  const std::string dir = *rc::gen::element<std::string>("LT", "GT", "LE", "NE");
  std::vector<Literal> operands;
  operands.emplace_back(Shape::Array(PrimitiveType::kF32, {n}));
  for (int64_t i = 0; i < n; ++i) {
    const int v = *rc::gen::inRange(-3, 4);
    operands[0].data<float>()[i] =
        v == 3 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(v);
  }
  std::vector<std::string> results;
  for (const bool generic : {false, true}) {
    const std::string body =
        generic ? absl::StrCat("  c = pred[] compare(p0, p1), direction=", dir,
                               "\n  t = pred[] constant(true)\n  ROOT r = pred[] and(c, t)")
                : absl::StrCat("  ROOT c = pred[] compare(p0, p1), direction=", dir);
    Program p = Parse(SortModule("f32", absl::StrCat("f32[", n, "]"), 0, body), "s");
    RC_ASSERT(p.instr != nullptr);
    absl::StatusOr<Literal> result = RunOp(p, operands);
    RC_ASSERT(result.ok());
    results.push_back(result->ToString());
  }
  RC_ASSERT(results[0] == results[1]);
}

// ---- TopK -------------------------------------------------------------------------------------

TEST(TopK, OpcodeTiesKeepLowerIndexFirst) {
  Program p = Parse(R"(HloModule m
ENTRY e {
  x = f32[6] parameter(0)
  ROOT t = (f32[3], s32[3]) topk(x), k=3, largest=true
})",
                    "t");
  EXPECT_EQ(MustRun(p, {Lit("f32[6]", "{1, 3, 3, 2, 3, 0}")}),
            "(f32[3], s32[3]) ({3, 3, 3}, {1, 2, 4})");
}

TEST(TopK, OpcodeSmallestAndBatched) {
  Program p = Parse(R"(HloModule m
ENTRY e {
  x = s32[2,4] parameter(0)
  ROOT t = (s32[2,2], s32[2,2]) topk(x), k=2, largest=false
})",
                    "t");
  EXPECT_EQ(MustRun(p, {Lit("s32[2,4]", "{{5, -1, 7, -1}, {0, 9, 8, 1}}")}),
            "(s32[2,2], s32[2,2]) ({{-1, -1}, {0, 1}}, {{1, 3}, {0, 3}})");
}

TEST(TopK, OpcodeTotalOrderNaNAndSignedZero) {
  // Largest first in total order: NaN > 5 > 0 > -0.
  Program p = Parse(R"(HloModule m
ENTRY e {
  x = f32[5] parameter(0)
  ROOT t = (f32[4], s32[4]) topk(x), k=4
})",
                    "t");
  absl::StatusOr<Literal> r = RunOp(p, {Lit("f32[5]", "{-0, 5, nan, 0, -inf}")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tuple_elements()[1].ToString(), "s32[4] {2, 1, 3, 0}");
  EXPECT_TRUE(std::isnan(r->tuple_elements()[0].GetDouble(0)));
  EXPECT_EQ(r->tuple_elements()[0].GetBits(2), std::bit_cast<uint32_t>(0.0f));
  EXPECT_EQ(r->tuple_elements()[0].GetBits(3), std::bit_cast<uint32_t>(-0.0f));
}

TEST(TopK, OpcodeMalformedK) {
  Program p = Parse(R"(HloModule m
ENTRY e {
  x = f32[5] parameter(0)
  ROOT t = (f32[2], s32[2]) topk(x), k=3
})",
                    "t");
  EXPECT_EQ(RunOp(p, {Lit("f32[5]", "{1,2,3,4,5}")}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

constexpr char kTopKCustomCall[] = R"(HloModule m
gt {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = pred[] compare(p0, p1), direction=GT
}
ENTRY e {
  x = f32[2,5] parameter(0)
  ROOT t = (f32[2,3], s32[2,3]) custom-call(x), custom_call_target="TopK", to_apply=gt
})";

TEST(TopK, CustomCallWithComparator) {
  Program p = Parse(kTopKCustomCall, "t");
  EXPECT_EQ(MustTopK(p, {Lit("f32[2,5]", "{{0.5, 4, 4, -1, 2}, {7, 7, 7, 7, 1}}")}),
            "(f32[2,3], s32[2,3]) ({{4, 4, 2}, {7, 7, 7}}, {{1, 2, 4}, {0, 1, 2}})");
}

TEST(TopK, CustomCallDefaultIsLargestTotalOrder) {
  Program p = Parse(R"(HloModule m
ENTRY e {
  x = bf16[6] parameter(0)
  ROOT t = (bf16[2], s32[2]) custom-call(x), custom_call_target="TopK"
})",
                    "t");
  EXPECT_EQ(MustTopK(p, {Lit("bf16[6]", "{1, 8, -2, 8, nan, 3}")}),
            "(bf16[2], s32[2]) ({nan, 8}, {4, 1})");
}

TEST(TopK, CustomCallFourParameterComparatorSeesIndices) {
  // Larger value first; on ties the HIGHER index first (uses the s32 index parameters).
  Program p = Parse(R"(HloModule m
cmp {
  v0 = s32[] parameter(0)
  v1 = s32[] parameter(1)
  i0 = s32[] parameter(2)
  i1 = s32[] parameter(3)
  eq = pred[] compare(v0, v1), direction=EQ
  gt = pred[] compare(v0, v1), direction=GT
  igt = pred[] compare(i0, i1), direction=GT
  ROOT r = pred[] select(eq, igt, gt)
}
ENTRY e {
  x = s32[5] parameter(0)
  ROOT t = (s32[3], s32[3]) custom-call(x), custom_call_target="TopK", to_apply=cmp
})",
                    "t");
  EXPECT_EQ(MustTopK(p, {Lit("s32[5]", "{4, 9, 4, 9, 1}")}),
            "(s32[3], s32[3]) ({9, 9, 4}, {3, 1, 2})");
}

TEST(TopK, CustomCallMalformedShapes) {
  Program p = Parse(R"(HloModule m
ENTRY e {
  x = f32[5] parameter(0)
  ROOT t = (f32[6], s32[6]) custom-call(x), custom_call_target="TopK"
})",
                    "t");
  ASSERT_NE(p.instr, nullptr);
  EXPECT_EQ(EvaluateTopK(*p.instr, Ptrs({Lit("f32[5]", "{1,2,3,4,5}")}), TestEnv()).status().code(),
            absl::StatusCode::kInvalidArgument);
  Program q = Parse(R"(HloModule m
ENTRY e {
  x = f32[5] parameter(0)
  ROOT t = (f32[2], f32[2]) custom-call(x), custom_call_target="TopK"
})",
                    "t");
  ASSERT_NE(q.instr, nullptr);
  EXPECT_EQ(EvaluateTopK(*q.instr, Ptrs({Lit("f32[5]", "{1,2,3,4,5}")}), TestEnv()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// TopK over random rows equals a stable descending sort truncated to k.
RC_GTEST_PROP(TopKProperties, MatchesStableSortPrefix, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(1, 30);
  const int64_t k = *rc::gen::inRange<int64_t>(0, n + 1);
  std::vector<int32_t> values;
  for (int64_t i = 0; i < n; ++i) values.push_back(*rc::gen::inRange<int32_t>(-5, 6));
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return values[a] > values[b]; });
  Program p = Parse(
      absl::StrCat("HloModule m\nENTRY e {\n  x = s32[", n, "] parameter(0)\n  ROOT t = (s32[", k,
                   "], s32[", k, "]) topk(x), k=", k, "\n}\n"),
      "t");
  RC_ASSERT(p.instr != nullptr);
  std::vector<Literal> operands;
  operands.emplace_back(Shape::Array(PrimitiveType::kS32, {n}));
  for (int64_t i = 0; i < n; ++i) operands[0].data<int32_t>()[i] = values[i];
  absl::StatusOr<Literal> result = RunOp(p, operands);
  RC_ASSERT(result.ok());
  for (int64_t j = 0; j < k; ++j) {
    RC_ASSERT(result->tuple_elements()[1].data<int32_t>()[j] == order[j]);
    RC_ASSERT(result->tuple_elements()[0].data<int32_t>()[j] == values[order[j]]);
  }
}

}  // namespace
}  // namespace spmdcheck::oracle
