// Contraction handlers of the oracle (oracle/contraction.cc): dot and convolution. Expected
// values are worked out by hand (comments show the arithmetic) or computed by naive references
// written here: a loop over explicit index maps for dot, and for convolution a direct
// transcription of docs/operation_semantics.md (materialise the dilated, padded input and the
// dilated, reversed kernel, then slide) in canonical [batch, feature, spatial...] layout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
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

std::string Entry(absl::string_view body) {
  return absl::StrCat("HloModule m\n\nENTRY e {\n", body, "\n}\n");
}

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
  RegisterContractionOps(registry);
  OpHandler handler = registry.Find(instruction->opcode());
  if (handler == nullptr) {
    ADD_FAILURE() << "no handler for " << HloOpcodeString(instruction->opcode());
    return absl::InternalError("no handler");
  }
  std::vector<const Literal*> operands;
  for (const Literal& arg : args) operands.push_back(&arg);
  EvalEnv env;
  return handler(*instruction, operands, env);
}

std::string Str(const absl::StatusOr<Literal>& r) {
  return r.ok() ? r->ToString() : absl::StrCat("error: ", r.status().ToString());
}

// A random permutation of `v` (Fisher-Yates driven by RapidCheck, so it shrinks).
template <typename T>
std::vector<T> Shuffle(std::vector<T> v) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = *rc::gen::inRange<size_t>(0, i);
    std::swap(v[i - 1], v[j]);
  }
  return v;
}

// A dimension size in [1, hi], or 0 one time in ten.
int64_t Size(int64_t hi) {
  return *rc::gen::inRange(0, 10) == 0 ? 0 : *rc::gen::inRange<int64_t>(1, hi + 1);
}

// ---- dot -------------------------------------------------------------------------------------

TEST(DotTest, MatrixProductByHand) {
  // {{1,2,3},{4,5,6}} x {{7,8},{9,10},{11,12}}: 1*7+2*9+3*11 = 58, 1*8+2*10+3*12 = 64,
  // 4*7+5*9+6*11 = 139, 4*8+5*10+6*12 = 154.
  const std::string hlo = Entry(R"(
  a = f32[2,3] parameter(0)
  b = f32[3,2] parameter(1)
  ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0})");
  EXPECT_EQ(Str(Eval(hlo, "d",
                     {L("f32[2,3]", "{{1, 2, 3}, {4, 5, 6}}"),
                      L("f32[3,2]", "{{7, 8}, {9, 10}, {11, 12}}")})),
            "f32[2,2] {{58, 64}, {139, 154}}");
}

TEST(DotTest, OuterProductAndVectorDot) {
  const std::string hlo = Entry(R"(
  a = f32[2] parameter(0)
  b = f32[3] parameter(1)
  ROOT o = f32[2,3] dot(a, b))");
  EXPECT_EQ(Str(Eval(hlo, "o", {L("f32[2]", "{1, 2}"), L("f32[3]", "{3, 4, 5}")})),
            "f32[2,3] {{3, 4, 5}, {6, 8, 10}}");
  const std::string hlo2 = Entry(R"(
  a = s32[3] parameter(0)
  b = s32[3] parameter(1)
  ROOT v = s32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0})");
  EXPECT_EQ(Str(Eval(hlo2, "v", {L("s32[3]", "{1, 2, 3}"), L("s32[3]", "{4, -5, 6}")})),
            "s32[] 12");  // 4 - 10 + 18
}

// Reference for lhs[b, k1, m, k2] . rhs[k2, b, n, k1] with batch {0}/{1} and contracting
// {1,3}/{3,0}: out[b][m][n] = sum_{k1,k2} lhs[b][k1][m][k2] * rhs[k2][b][n][k1].
TEST(DotTest, BatchAndTwoContractingDimsMatchNaiveLoop) {
  const int B = 2, K1 = 3, M = 2, K2 = 2, N = 3;
  Literal lhs(Shape::Array(PrimitiveType::kF32, {B, K1, M, K2}));
  Literal rhs(Shape::Array(PrimitiveType::kF32, {K2, B, N, K1}));
  for (int64_t i = 0; i < lhs.element_count(); ++i) lhs.SetDouble(i, (i * 7) % 11 - 5);
  for (int64_t i = 0; i < rhs.element_count(); ++i) rhs.SetDouble(i, (i * 5) % 13 - 6);
  const std::string hlo = Entry(R"(
  a = f32[2,3,2,2] parameter(0)
  b = f32[2,2,3,3] parameter(1)
  ROOT d = f32[2,2,3] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={1}, lhs_contracting_dims={1,3}, rhs_contracting_dims={3,0})");
  absl::StatusOr<Literal> r = Eval(hlo, "d", {lhs, rhs});
  ASSERT_TRUE(r.ok()) << r.status();
  auto l = [&](int b, int k1, int m, int k2) {
    return lhs.GetDouble(((b * K1 + k1) * M + m) * K2 + k2);
  };
  auto rr = [&](int k2, int b, int n, int k1) {
    return rhs.GetDouble(((k2 * B + b) * N + n) * K1 + k1);
  };
  for (int b = 0; b < B; ++b) {
    for (int m = 0; m < M; ++m) {
      for (int n = 0; n < N; ++n) {
        double sum = 0;
        for (int k1 = 0; k1 < K1; ++k1) {
          for (int k2 = 0; k2 < K2; ++k2) sum += l(b, k1, m, k2) * rr(k2, b, n, k1);
        }
        EXPECT_EQ(r->GetDouble((b * M + m) * N + n), sum) << b << " " << m << " " << n;
      }
    }
  }
}

TEST(DotTest, IntegerTypesWrapAndMixedTypesConvertFirst) {
  const std::string hlo = Entry(R"(
  a = s8[1,2] parameter(0)
  b = s8[2,1] parameter(1)
  w = s8[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT x = s32[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0})");
  const std::vector<Literal> args = {L("s8[1,2]", "{{100, 100}}"), L("s8[2,1]", "{{2}, {2}}")};
  EXPECT_EQ(Str(Eval(hlo, "w", args)), "s8[1,1] {{-112}}");  // 400 mod 256 = 144 = -112
  EXPECT_EQ(Str(Eval(hlo, "x", args)), "s32[1,1] {{400}}");
  // f32 operands of an s32 dot are converted (truncated) first: 1 + 2, not trunc(4.6).
  const std::string hlo2 = Entry(R"(
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  ROOT t = s32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0})");
  absl::StatusOr<Literal> t =
      Eval(hlo2, "t", {L("f32[2]", "{1.7, 2.9}"), L("f32[2]", "{1, 1}")},
           [](HloInstruction& i) { i.set_shape(Shape::Scalar(PrimitiveType::kS32)); });
  EXPECT_EQ(Str(t), "s32[] 3");
  // u32 wraps too: 2^31 * 2 + 5 * 1 = 2^32 + 5 -> 5.
  const std::string hlo3 = Entry(R"(
  a = u32[2] parameter(0)
  b = u32[2] parameter(1)
  ROOT u = u32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0})");
  EXPECT_EQ(Str(Eval(hlo3, "u", {L("u32[2]", "{2147483648, 5}"), L("u32[2]", "{2, 1}")})),
            "u32[] 5");
}

TEST(DotTest, SubByteComplexAndF64) {
  // s4: 7*7 + 7*1 = 56 = 0b0011_1000 -> low nibble 1000 = -8.
  const std::string hlo = Entry(R"(
  a = s4[2] parameter(0)
  b = s4[2] parameter(1)
  ROOT d = s4[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0})");
  EXPECT_EQ(Str(Eval(hlo, "d", {L("s4[2]", "{7, 7}"), L("s4[2]", "{7, 1}")})), "s4[] -8");
  // (1+2i)(3+4i) + (0+1i)(0+1i) = (-5+10i) + (-1) = -6+10i.
  const std::string hlo2 = Entry(R"(
  a = c64[2] parameter(0)
  b = c64[2] parameter(1)
  ROOT d = c64[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0})");
  EXPECT_EQ(
      Str(Eval(hlo2, "d", {L("c64[2]", "{(1, 2), (0, 1)}"), L("c64[2]", "{(3, 4), (0, 1)}")})),
      "c64[] (-6, 10)");
  // f64 keeps what f32 would lose: 2^53 - 1 is exact; 0.1 * 3 in f64.
  const std::string hlo3 = Entry(R"(
  a = f64[2] parameter(0)
  b = f64[2] parameter(1)
  ROOT d = f64[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0})");
  absl::StatusOr<Literal> r =
      Eval(hlo3, "d", {L("f64[2]", "{4503599627370496, 1}"), L("f64[2]", "{2, -1}")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->GetDouble(0), 9007199254740991.0);  // 2^53 - 1
}

TEST(DotTest, NarrowFloatsAccumulateInF32AndRoundOnce) {
  // 256 + 1 + 1 = 258 in f32, representable in bf16; rounding after every step would give 256.
  const std::string hlo = Entry(R"(
  a = bf16[3] parameter(0)
  b = bf16[3] parameter(1)
  h = bf16[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT f = f32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0})");
  const std::vector<Literal> args = {L("bf16[3]", "{256, 1, 1}"), L("bf16[3]", "{1, 1, 1}")};
  EXPECT_EQ(Str(Eval(hlo, "h", args)), "bf16[] 258");
  EXPECT_EQ(Str(Eval(hlo, "f", args)), "f32[] 258");
  // f16: 2048 + 1 + 1: f16 has 11 significant bits, 2049 is not representable but 2050 is.
  const std::string hlo2 = Entry(R"(
  a = f16[3] parameter(0)
  b = f16[3] parameter(1)
  ROOT h = f16[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0})");
  absl::StatusOr<Literal> h =
      Eval(hlo2, "h", {L("f16[3]", "{2048, 1, 1}"), L("f16[3]", "{1, 1, 1}")});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->GetDouble(0), 2050.0);
}

TEST(DotTest, PredIsAnyOfAnd) {
  const std::string hlo = Entry(R"(
  a = pred[2,2] parameter(0)
  b = pred[2,2] parameter(1)
  ROOT d = pred[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0})");
  // Row {1,0}: column j is true iff b[0][j]; row {0,0} is all false.
  EXPECT_EQ(
      Str(Eval(hlo, "d", {L("pred[2,2]", "{{1, 0}, {0, 0}}"), L("pred[2,2]", "{{1, 0}, {1, 1}}")})),
      "pred[2,2] {{true, false}, {false, false}}");
}

TEST(DotTest, MalformedAndUnsupported) {
  const std::string hlo = Entry(R"(
  a = f32[2,3] parameter(0)
  b = f32[3,2] parameter(1)
  ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0})");
  const std::vector<Literal> args = {L("f32[2,3]", "{{1, 2, 3}, {4, 5, 6}}"),
                                     L("f32[3,2]", "{{7, 8}, {9, 10}, {11, 12}}")};
  auto bad_index = [](HloInstruction& i) {
    i.mutable_attrs().dot_dimension_numbers->lhs_contracting = {2};
  };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo, "d", args, bad_index).status()));
  auto size_mismatch = [](HloInstruction& i) {
    i.mutable_attrs().dot_dimension_numbers->rhs_contracting = {1};
  };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo, "d", args, size_mismatch).status()));
  auto repeated = [](HloInstruction& i) {
    i.mutable_attrs().dot_dimension_numbers->lhs_batch = {1};
    i.mutable_attrs().dot_dimension_numbers->rhs_batch = {0};
  };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo, "d", args, repeated).status()));
  auto count_mismatch = [](HloInstruction& i) {
    i.mutable_attrs().dot_dimension_numbers->rhs_contracting.clear();
  };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo, "d", args, count_mismatch).status()));
  auto wrong_shape = [](HloInstruction& i) { i.set_shape(Shape::Array(PrimitiveType::kF32, {2})); };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo, "d", args, wrong_shape).status()));
  auto packed = [](HloInstruction& i) {
    i.mutable_raw_attributes().push_back({"operand_precision", "{packed_nibble,packed_nibble}"});
  };
  EXPECT_TRUE(absl::IsUnimplemented(Eval(hlo, "d", args, packed).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo, "d", {args[0]}).status()));
}

TEST(DotTest, LargeMatmulIsFastAndCorrect) {
  const int64_t n = 512;
  Literal a(Shape::Array(PrimitiveType::kF32, {n, n}));
  Literal b(Shape::Array(PrimitiveType::kF32, {n, n}));
  // Small integers: every partial sum is exact in f32, so any summation order gives the same.
  for (int64_t i = 0; i < n * n; ++i) {
    a.data<float>()[i] = static_cast<float>((i * 7) % 5 - 2);
    b.data<float>()[i] = static_cast<float>((i * 3) % 7 - 3);
  }
  const std::string hlo = Entry(R"(
  a = f32[512,512] parameter(0)
  b = f32[512,512] parameter(1)
  ROOT d = f32[512,512] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0})");
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Literal> r = Eval(hlo, "d", {a, b});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok()) << r.status();
  std::printf("dot f32[512,512] x f32[512,512]: %.3f s\n", seconds);
  EXPECT_LT(seconds, 5.0);
  for (int64_t i : {0, 1, 77, 255, 511}) {
    for (int64_t j : {0, 3, 128, 400, 511}) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k)
        sum += a.data<float>()[i * n + k] * b.data<float>()[k * n + j];
      EXPECT_EQ(r->data<float>()[i * n + j], sum) << i << "," << j;
    }
  }
}

// Random dot dimension numbers: each operand dim is batch, contracting or free; values small.
RC_GTEST_PROP(ContractionProperties, DotMatchesNaiveReference, ()) {
  const int nb = *rc::gen::inRange(0, 3);
  const int nc = *rc::gen::inRange(0, 3);
  const int nl = *rc::gen::inRange(0, 3);
  const int nr = *rc::gen::inRange(0, 3);
  auto sizes = [](int count) {
    std::vector<int64_t> s;
    for (int i = 0; i < count; ++i) s.push_back(Size(4));
    return s;
  };
  const std::vector<int64_t> bs = sizes(nb), cs = sizes(nc), ls = sizes(nl), rs = sizes(nr);
  // Operand dims in a random order: role 0 batch, 1 contracting, 2 free, with the role index.
  auto layout = [](int nb_, int nc_, int nf) {
    std::vector<std::pair<int, int>> roles;
    for (int i = 0; i < nb_; ++i) roles.push_back({0, i});
    for (int i = 0; i < nc_; ++i) roles.push_back({1, i});
    for (int i = 0; i < nf; ++i) roles.push_back({2, i});
    return roles;
  };
  const std::vector<std::pair<int, int>> lroles = layout(nb, nc, nl);
  const std::vector<std::pair<int, int>> rroles = layout(nb, nc, nr);
  std::vector<int> lidx(lroles.size()), ridx(rroles.size());
  std::iota(lidx.begin(), lidx.end(), 0);
  std::iota(ridx.begin(), ridx.end(), 0);
  const std::vector<int> lperm = Shuffle(lidx);
  const std::vector<int> rperm = Shuffle(ridx);
  std::vector<std::pair<int, int>> lr, rr;
  for (int i : lperm) lr.push_back(lroles[i]);
  for (int i : rperm) rr.push_back(rroles[i]);
  auto dims_of = [&](const std::vector<std::pair<int, int>>& roles,
                     const std::vector<int64_t>& free) {
    std::vector<int64_t> d;
    for (auto [role, i] : roles) d.push_back(role == 0 ? bs[i] : role == 1 ? cs[i] : free[i]);
    return d;
  };
  const std::vector<int64_t> ld = dims_of(lr, ls), rd = dims_of(rr, rs);
  std::vector<int64_t> lb(nb), rb(nb), lc(nc), rc_(nc);
  for (size_t d = 0; d < lr.size(); ++d) {
    if (lr[d].first == 0) lb[lr[d].second] = d;
    if (lr[d].first == 1) lc[lr[d].second] = d;
  }
  for (size_t d = 0; d < rr.size(); ++d) {
    if (rr[d].first == 0) rb[rr[d].second] = d;
    if (rr[d].first == 1) rc_[rr[d].second] = d;
  }
  const bool use_int = *rc::gen::arbitrary<bool>();
  const std::string t = use_int ? "s32" : "f32";
  const PrimitiveType pt = use_int ? PrimitiveType::kS32 : PrimitiveType::kF32;
  std::vector<int64_t> out_dims = bs;
  std::vector<int64_t> lfree_pos, rfree_pos;  // operand dim of each free index
  for (size_t d = 0; d < lr.size(); ++d) {
    if (lr[d].first == 2) lfree_pos.push_back(d);
  }
  for (size_t d = 0; d < rr.size(); ++d) {
    if (rr[d].first == 2) rfree_pos.push_back(d);
  }
  for (int64_t d : lfree_pos) out_dims.push_back(ld[d]);
  for (int64_t d : rfree_pos) out_dims.push_back(rd[d]);
  auto shape = [&](const std::vector<int64_t>& d) {
    return absl::StrCat(t, "[", absl::StrJoin(d, ","), "]");
  };
  const std::string hlo = Entry(absl::StrCat(
      "  a = ", shape(ld), " parameter(0)\n  b = ", shape(rd), " parameter(1)\n  ROOT d = ",
      shape(out_dims), " dot(a, b), lhs_batch_dims={", absl::StrJoin(lb, ","),
      "}, rhs_batch_dims={", absl::StrJoin(rb, ","), "}, lhs_contracting_dims={",
      absl::StrJoin(lc, ","), "}, rhs_contracting_dims={", absl::StrJoin(rc_, ","), "}"));
  Literal a(Shape::Array(pt, ld));
  Literal b(Shape::Array(pt, rd));
  // s32 values span the whole range (products wrap); f32 values are small so sums are exact.
  const int64_t big = use_int ? 2000000000 : 9;
  for (Literal* l : {&a, &b}) {
    for (int64_t i = 0; i < l->element_count(); ++i) {
      l->SetInt64(i, *rc::gen::inRange<int64_t>(-big, big + 1));
    }
  }
  absl::StatusOr<Literal> r = Eval(hlo, "d", {a, b});
  RC_ASSERT(r.ok());
  // Naive: for every output index and every contracting index, locate the operand elements.
  const std::vector<int64_t> lstrides = RowMajorStrides(ld), rstrides = RowMajorStrides(rd);
  int64_t out_linear = 0;
  std::vector<int64_t> oi(out_dims.size(), 0);
  const int64_t out_count = r->element_count();
  for (; out_linear < out_count; ++out_linear) {
    int64_t rem = out_linear;
    for (int64_t d = static_cast<int64_t>(out_dims.size()) - 1; d >= 0; --d) {
      oi[d] = rem % out_dims[d];
      rem /= out_dims[d];
    }
    int64_t lbase = 0, rbase = 0;
    for (int i = 0; i < nb; ++i) {
      lbase += oi[i] * lstrides[lb[i]];
      rbase += oi[i] * rstrides[rb[i]];
    }
    for (size_t i = 0; i < lfree_pos.size(); ++i) lbase += oi[nb + i] * lstrides[lfree_pos[i]];
    for (size_t i = 0; i < rfree_pos.size(); ++i) {
      rbase += oi[nb + lfree_pos.size() + i] * rstrides[rfree_pos[i]];
    }
    int64_t kcount = 1;
    for (int64_t c : cs) kcount *= c;
    uint32_t isum = 0;
    double fsum = 0;
    for (int64_t kl = 0; kl < kcount; ++kl) {
      int64_t rem2 = kl, lo = lbase, ro = rbase;
      for (int i = nc - 1; i >= 0; --i) {
        const int64_t ki = rem2 % cs[i];
        rem2 /= cs[i];
        lo += ki * lstrides[lc[i]];
        ro += ki * rstrides[rc_[i]];
      }
      if (use_int) {
        isum += static_cast<uint32_t>(a.GetInt64(lo)) * static_cast<uint32_t>(b.GetInt64(ro));
      } else {
        fsum += a.GetDouble(lo) * b.GetDouble(ro);
      }
    }
    if (use_int) {
      RC_ASSERT(r->GetInt64(out_linear) == static_cast<int32_t>(isum));
    } else {
      RC_ASSERT(r->GetDouble(out_linear) == fsum);
    }
  }
}

// ---- convolution -----------------------------------------------------------------------------

TEST(ConvolutionTest, OneDimensionalByHand) {
  const std::string hlo = Entry(R"(
  x = f32[1,1,5] parameter(0)
  k = f32[1,1,3] parameter(1)
  p = f32[1,1,3] convolution(x, k), window={size=3 stride=2 pad=1_1}, dim_labels=bf0_oi0->bf0
  r = f32[1,1,3] convolution(x, k), window={size=3 stride=2 pad=1_1 rhs_reversal=1}, dim_labels=bf0_oi0->bf0
  l = f32[1,1,7] convolution(x, k), window={size=3 lhs_dilate=2}, dim_labels=bf0_oi0->bf0
  ROOT d = f32[1,1,1] convolution(x, k), window={size=3 rhs_dilate=2}, dim_labels=bf0_oi0->bf0)");
  const std::vector<Literal> args = {L("f32[1,1,5]", "{{{1, 2, 3, 4, 5}}}"),
                                     L("f32[1,1,3]", "{{{1, 0, -1}}}")};
  // Padded {0,1,2,3,4,5,0}, windows at 0,2,4: 0-2, 2-4, 4-0.
  EXPECT_EQ(Str(Eval(hlo, "p", args)), "f32[1,1,3] {{{-2, -2, 4}}}");
  // Reversed kernel {-1,0,1}: -0+2, -2+4, -4+0.
  EXPECT_EQ(Str(Eval(hlo, "r", args)), "f32[1,1,3] {{{2, 2, -4}}}");
  // Dilated input {1,_,2,_,3,_,4,_,5}; out[o] = d[o] - d[o+2] with holes as 0.
  EXPECT_EQ(Str(Eval(hlo, "l", args)), "f32[1,1,7] {{{-1, 0, -1, 0, -1, 0, -1}}}");
  // Kernel taps at 0, 2, 4: 1*1 + 3*0 + 5*(-1).
  EXPECT_EQ(Str(Eval(hlo, "d", args)), "f32[1,1,1] {{{-4}}}");
}

TEST(ConvolutionTest, FeatureAndBatchGroupsByHand) {
  // feature_group_count=2: input features {1,2,3} and {10,20,30}; output feature 0 sees only
  // input feature 0 (kernel 2), output feature 1 only input feature 1 (kernel 3).
  const std::string hlo = Entry(R"(
  x = f32[1,2,3] parameter(0)
  k = f32[2,1,1] parameter(1)
  ROOT g = f32[1,2,3] convolution(x, k), window={size=1}, dim_labels=bf0_oi0->bf0, feature_group_count=2)");
  EXPECT_EQ(Str(Eval(hlo, "g",
                     {L("f32[1,2,3]", "{{{1, 2, 3}, {10, 20, 30}}}"),
                      L("f32[2,1,1]", "{{{2}}, {{3}}}")})),
            "f32[1,2,3] {{{2, 4, 6}, {30, 60, 90}}}");
  // batch_group_count=2: batch 0 {1,2,3} feeds output feature 0, batch 1 {10,20,30} feature 1;
  // the output batch is 2 / 2 = 1.
  const std::string hlo2 = Entry(R"(
  x = f32[2,1,3] parameter(0)
  k = f32[2,1,1] parameter(1)
  ROOT g = f32[1,2,3] convolution(x, k), window={size=1}, dim_labels=bf0_oi0->bf0, batch_group_count=2)");
  EXPECT_EQ(Str(Eval(hlo2, "g",
                     {L("f32[2,1,3]", "{{{1, 2, 3}}, {{10, 20, 30}}}"),
                      L("f32[2,1,1]", "{{{2}}, {{3}}}")})),
            "f32[1,2,3] {{{2, 4, 6}, {30, 60, 90}}}");
}

TEST(ConvolutionTest, TypesAndErrors) {
  // bf16: 256*1 + 1*1 + 1*1 over three input features, accumulated in f32 -> 258.
  const std::string hlo = Entry(R"(
  x = bf16[1,3,1] parameter(0)
  k = bf16[1,3,1] parameter(1)
  ROOT c = bf16[1,1,1] convolution(x, k), window={size=1}, dim_labels=bf0_oi0->bf0)");
  EXPECT_EQ(
      Str(Eval(hlo, "c",
               {L("bf16[1,3,1]", "{{{256}, {1}, {1}}}"), L("bf16[1,3,1]", "{{{1}, {1}, {1}}}")})),
      "bf16[1,1,1] {{{258}}}");
  // s8 wraps: 100*2 + 100*1 = 300 -> 44.
  const std::string hlo2 = Entry(R"(
  x = s8[1,1,2] parameter(0)
  k = s8[1,1,2] parameter(1)
  ROOT c = s8[1,1,1] convolution(x, k), window={size=2}, dim_labels=bf0_oi0->bf0)");
  const std::vector<Literal> args = {L("s8[1,1,2]", "{{{100, 100}}}"),
                                     L("s8[1,1,2]", "{{{2, 1}}}")};
  EXPECT_EQ(Str(Eval(hlo2, "c", args)), "s8[1,1,1] {{{44}}}");
  auto bad_labels = [](HloInstruction& i) { i.mutable_attrs().dim_labels->input_feature = 0; };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo2, "c", args, bad_labels).status()));
  auto bad_window = [](HloInstruction& i) { (*i.mutable_attrs().window)[0].size = 3; };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo2, "c", args, bad_window).status()));
  auto no_window = [](HloInstruction& i) { i.mutable_attrs().window.reset(); };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo2, "c", args, no_window).status()));
  auto groups = [](HloInstruction& i) { i.mutable_attrs().feature_group_count = 2; };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo2, "c", args, groups).status()));
  auto both = [](HloInstruction& i) {
    i.mutable_attrs().feature_group_count = 2;
    i.mutable_attrs().batch_group_count = 2;
  };
  EXPECT_TRUE(absl::IsUnimplemented(Eval(hlo2, "c", args, both).status()));
  auto wrong_shape = [](HloInstruction& i) {
    i.set_shape(Shape::Array(PrimitiveType::kS8, {1, 1, 2}));
  };
  EXPECT_TRUE(absl::IsInvalidArgument(Eval(hlo2, "c", args, wrong_shape).status()));
}

// The docs' definition in canonical layout: input [B, IF, spatial...], kernel [OF, IF/fgc,
// spatial...], output [B/bgc, OF, spatial...]. The input is dilated (lhs_dilate - 1 zeros between
// elements) and padded (negative padding removes elements), the kernel is reversed where asked
// and dilated; then every output position is the plain strided correlation over the group's
// input features. Output feature o belongs to feature group o / (OF / fgc) and batch group
// o / (OF / bgc); batch group g reads input batches g * (B / bgc) + b.
struct ConvCase {
  int64_t batch, in_features, out_features, fgc, bgc;
  std::vector<int64_t> in_spatial, kernel_spatial;
  std::vector<WindowDim> window;
};

std::vector<int64_t> ConvOutSpatial(const ConvCase& c) {
  std::vector<int64_t> out;
  for (size_t s = 0; s < c.in_spatial.size(); ++s) {
    const WindowDim& w = c.window[s];
    const int64_t dilated = c.in_spatial[s] == 0 ? 0 : (c.in_spatial[s] - 1) * w.lhs_dilation + 1;
    const int64_t padded = dilated + w.pad_low + w.pad_high;
    const int64_t span = (w.size - 1) * w.rhs_dilation + 1;
    out.push_back(span > padded ? 0 : (padded - span) / w.stride + 1);
  }
  return out;
}

// Values indexed canonically (row-major over [dim0, dim1, spatial...]).
std::vector<int64_t> NaiveConv(const ConvCase& c, const std::vector<int64_t>& input,
                               const std::vector<int64_t>& kernel) {
  const size_t ns = c.in_spatial.size();
  // Materialise the padded, dilated input per (batch, feature) as a map from position to value.
  std::vector<int64_t> pdims;
  for (size_t s = 0; s < ns; ++s) {
    const WindowDim& w = c.window[s];
    const int64_t dilated = c.in_spatial[s] == 0 ? 0 : (c.in_spatial[s] - 1) * w.lhs_dilation + 1;
    pdims.push_back(std::max<int64_t>(0, dilated + w.pad_low + w.pad_high));
  }
  int64_t in_sp = 1, p_sp = 1, k_sp = 1;
  for (size_t s = 0; s < ns; ++s) {
    in_sp *= c.in_spatial[s];
    p_sp *= pdims[s];
    k_sp *= c.kernel_spatial[s];
  }
  std::vector<int64_t> padded(static_cast<size_t>(c.batch * c.in_features * p_sp), 0);
  for (int64_t bf = 0; bf < c.batch * c.in_features; ++bf) {
    for (int64_t e = 0; e < in_sp; ++e) {
      // Spatial index of element e, its place in the dilated array, shifted by pad_low.
      int64_t rem = e, pos = 0;
      bool inside = true;
      std::vector<int64_t> idx(ns);
      for (int64_t s = static_cast<int64_t>(ns) - 1; s >= 0; --s) {
        idx[s] = rem % c.in_spatial[s];
        rem /= c.in_spatial[s];
      }
      for (size_t s = 0; s < ns; ++s) {
        const int64_t p = idx[s] * c.window[s].lhs_dilation + c.window[s].pad_low;
        if (p < 0 || p >= pdims[s]) inside = false;
        pos = pos * pdims[s] + p;
      }
      if (inside) padded[bf * p_sp + pos] = input[bf * in_sp + e];
    }
  }
  const std::vector<int64_t> out_sp_dims = ConvOutSpatial(c);
  int64_t out_sp = 1;
  for (int64_t d : out_sp_dims) out_sp *= d;
  const int64_t out_batch = c.batch / c.bgc;
  const int64_t ifg = c.in_features / c.fgc;
  std::vector<int64_t> out;
  for (int64_t b = 0; b < out_batch; ++b) {
    for (int64_t o = 0; o < c.out_features; ++o) {
      const int64_t fg = o / (c.out_features / c.fgc);
      const int64_t bg = o / (c.out_features / c.bgc);
      const int64_t in_b = bg * (c.batch / c.bgc) + b;
      for (int64_t y = 0; y < out_sp; ++y) {
        std::vector<int64_t> oy(ns);
        int64_t rem = y;
        for (int64_t s = static_cast<int64_t>(ns) - 1; s >= 0; --s) {
          oy[s] = rem % out_sp_dims[s];
          rem /= out_sp_dims[s];
        }
        int64_t acc = 0;
        for (int64_t ci = 0; ci < ifg; ++ci) {
          const int64_t in_f = fg * ifg + ci;
          for (int64_t kk = 0; kk < k_sp; ++kk) {
            std::vector<int64_t> ki(ns);
            int64_t r2 = kk;
            for (int64_t s = static_cast<int64_t>(ns) - 1; s >= 0; --s) {
              ki[s] = r2 % c.kernel_spatial[s];
              r2 /= c.kernel_spatial[s];
            }
            int64_t pos = 0;
            int64_t kpos = 0;
            for (size_t s = 0; s < ns; ++s) {
              const WindowDim& w = c.window[s];
              // Tap ki of the (possibly reversed) kernel sits at ki * rhs_dilation.
              pos = pos * pdims[s] + oy[s] * w.stride + ki[s] * w.rhs_dilation;
              const int64_t src = w.reversal ? c.kernel_spatial[s] - 1 - ki[s] : ki[s];
              kpos = kpos * c.kernel_spatial[s] + src;
            }
            acc += padded[(in_b * c.in_features + in_f) * p_sp + pos] *
                   kernel[(o * ifg + ci) * k_sp + kpos];
          }
        }
        out.push_back(acc);
      }
    }
  }
  return out;
}

// Lays canonical values out in the dim order `perm` (perm[j] = canonical dim of layout dim j).
Literal Layout(const std::vector<int64_t>& canonical_dims, const std::vector<int64_t>& values,
               const std::vector<int64_t>& perm, PrimitiveType type) {
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(canonical_dims[p]);
  Literal l(Shape::Array(type, dims));
  const std::vector<int64_t> cstrides = RowMajorStrides(canonical_dims);
  const int64_t n = l.element_count();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, src = 0;
    for (int64_t j = static_cast<int64_t>(dims.size()) - 1; j >= 0; --j) {
      src += (rem % dims[j]) * cstrides[perm[j]];
      rem /= dims[j];
    }
    l.SetInt64(i, values[src]);
  }
  return l;
}

std::string Labels(const std::vector<int64_t>& perm, const char* names) {
  std::string s;
  for (int64_t p : perm) s += p < 2 ? names[p] : static_cast<char>('0' + (p - 2));
  return s;
}

absl::StatusOr<std::vector<int64_t>> RunConv(const ConvCase& c, const std::vector<int64_t>& input,
                                             const std::vector<int64_t>& kernel,
                                             const std::vector<int64_t>& in_perm,
                                             const std::vector<int64_t>& k_perm,
                                             const std::vector<int64_t>& out_perm,
                                             PrimitiveType type) {
  std::vector<int64_t> in_dims = {c.batch, c.in_features};
  in_dims.insert(in_dims.end(), c.in_spatial.begin(), c.in_spatial.end());
  std::vector<int64_t> k_dims = {c.out_features, c.in_features / c.fgc};
  k_dims.insert(k_dims.end(), c.kernel_spatial.begin(), c.kernel_spatial.end());
  std::vector<int64_t> out_dims = {c.batch / c.bgc, c.out_features};
  const std::vector<int64_t> osp = ConvOutSpatial(c);
  out_dims.insert(out_dims.end(), osp.begin(), osp.end());
  const Literal x = Layout(in_dims, input, in_perm, type);
  // Kernel layout names: canonical 0 = o, 1 = i.
  const Literal k = Layout(k_dims, kernel, k_perm, type);
  std::vector<int64_t> out_layout_dims;
  for (int64_t p : out_perm) out_layout_dims.push_back(out_dims[p]);
  const Shape out_shape = Shape::Array(type, out_layout_dims);
  const std::string hlo = Entry(absl::StrCat(
      "  x = ", x.shape().ToString(false), " parameter(0)\n  k = ", k.shape().ToString(false),
      " parameter(1)\n  ROOT c = ", out_shape.ToString(false),
      " convolution(x, k), window=", WindowToString(c.window),
      ", dim_labels=", Labels(in_perm, "bf"), "_", Labels(k_perm, "oi"), "->",
      Labels(out_perm, "bf"), ", feature_group_count=", c.fgc, ", batch_group_count=", c.bgc));
  absl::StatusOr<Literal> r = Eval(hlo, "c", {x, k});
  if (!r.ok()) return r.status();
  // Back to canonical order.
  std::vector<int64_t> out(static_cast<size_t>(r->element_count()));
  const std::vector<int64_t> cstrides = RowMajorStrides(out_dims);
  for (int64_t i = 0; i < r->element_count(); ++i) {
    int64_t rem = i, dst = 0;
    for (int64_t j = static_cast<int64_t>(out_layout_dims.size()) - 1; j >= 0; --j) {
      dst += (rem % out_layout_dims[j]) * cstrides[out_perm[j]];
      rem /= out_layout_dims[j];
    }
    out[dst] = r->GetInt64(i);
  }
  return out;
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(ConvolutionTest, TwoDimensionalMatchesDocsReference) {
  // 2-D, padding (one side negative), stride, lhs and rhs dilation, reversal; then the same with
  // feature_group_count=2 and with batch_group_count=2, in NHWC/HWIO layout.
  std::vector<ConvCase> cases;
  ConvCase base;
  base.batch = 2;
  base.in_features = 2;
  base.out_features = 2;
  base.fgc = 1;
  base.bgc = 1;
  base.in_spatial = {5, 4};
  base.kernel_spatial = {3, 2};
  base.window.resize(2);
  base.window[0] = {.size = 3,
                    .stride = 2,
                    .pad_low = 1,
                    .pad_high = 2,
                    .lhs_dilation = 2,
                    .rhs_dilation = 1,
                    .reversal = false};
  base.window[1] = {.size = 2,
                    .stride = 1,
                    .pad_low = 0,
                    .pad_high = -1,
                    .lhs_dilation = 1,
                    .rhs_dilation = 2,
                    .reversal = true};
  cases.push_back(base);
  ConvCase grouped = base;
  grouped.in_features = 4;
  grouped.out_features = 4;
  grouped.fgc = 2;
  cases.push_back(grouped);
  ConvCase batched = base;
  batched.batch = 4;
  batched.out_features = 4;
  batched.bgc = 2;
  cases.push_back(batched);
  for (const ConvCase& c : cases) {
    std::vector<int64_t> input(static_cast<size_t>(c.batch * c.in_features * 20));
    std::vector<int64_t> kernel(static_cast<size_t>(c.out_features * (c.in_features / c.fgc) * 6));
    for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<int64_t>((i * 7) % 9) - 4;
    for (size_t i = 0; i < kernel.size(); ++i) kernel[i] = static_cast<int64_t>((i * 5) % 7) - 3;
    const std::vector<int64_t> expected = NaiveConv(c, input, kernel);
    // Canonical layouts (bf01_oi01->bf01) and NHWC / HWIO / NHWC (b01f_01io->b01f).
    for (const auto& perms : std::vector<std::vector<std::vector<int64_t>>>{
             {Iota(4), Iota(4), Iota(4)}, {{0, 2, 3, 1}, {2, 3, 1, 0}, {0, 2, 3, 1}}}) {
      for (PrimitiveType type : {PrimitiveType::kF32, PrimitiveType::kS32}) {
        absl::StatusOr<std::vector<int64_t>> got =
            RunConv(c, input, kernel, perms[0], perms[1], perms[2], type);
        ASSERT_TRUE(got.ok()) << got.status();
        EXPECT_EQ(*got, expected) << "fgc=" << c.fgc << " bgc=" << c.bgc;
      }
    }
  }
}

TEST(ConvolutionTest, TypicalConvolutionRunsInReasonableTime) {
  // NHWC 8x32x32x64 input, 3x3x64x64 HWIO kernel, SAME padding: 302M multiply-adds.
  Literal x(Shape::Array(PrimitiveType::kF32, {8, 32, 32, 64}));
  Literal k(Shape::Array(PrimitiveType::kF32, {3, 3, 64, 64}));
  for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = static_cast<float>(i % 3);
  for (int64_t i = 0; i < k.element_count(); ++i) k.data<float>()[i] = static_cast<float>(i % 2);
  const std::string hlo = Entry(R"(
  x = f32[8,32,32,64] parameter(0)
  k = f32[3,3,64,64] parameter(1)
  ROOT c = f32[8,32,32,64] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f)");
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Literal> r = Eval(hlo, "c", {x, k});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok()) << r.status();
  std::printf("convolution f32[8,32,32,64] * f32[3,3,64,64]: %.3f s\n", seconds);
  EXPECT_LT(seconds, 30.0);
}

RC_GTEST_PROP(ContractionProperties, ConvolutionMatchesDocsReference, ()) {
  ConvCase c;
  const int64_t ns = *rc::gen::inRange<int64_t>(0, 3);
  const int group_kind = *rc::gen::inRange(0, 3);  // none, feature groups, batch groups
  const int64_t groups = group_kind == 0 ? 1 : *rc::gen::inRange<int64_t>(1, 4);
  c.fgc = group_kind == 1 ? groups : 1;
  c.bgc = group_kind == 2 ? groups : 1;
  c.batch = Size(2) * c.bgc;
  c.in_features = *rc::gen::inRange<int64_t>(1, 3) * c.fgc;
  c.out_features = *rc::gen::inRange<int64_t>(1, 3) * groups;
  for (int64_t s = 0; s < ns; ++s) {
    c.in_spatial.push_back(Size(6));
    WindowDim w;
    w.size = *rc::gen::inRange<int64_t>(1, 4);
    w.stride = *rc::gen::inRange<int64_t>(1, 3);
    w.pad_low = *rc::gen::inRange<int64_t>(-1, 3);
    w.pad_high = *rc::gen::inRange<int64_t>(-1, 3);
    w.lhs_dilation = *rc::gen::inRange<int64_t>(1, 4);
    w.rhs_dilation = *rc::gen::inRange<int64_t>(1, 3);
    w.reversal = *rc::gen::arbitrary<bool>();
    c.window.push_back(w);
    c.kernel_spatial.push_back(w.size);
  }
  int64_t in_count = c.batch * c.in_features, k_count = c.out_features * (c.in_features / c.fgc);
  for (int64_t s = 0; s < ns; ++s) {
    in_count *= c.in_spatial[s];
    k_count *= c.kernel_spatial[s];
  }
  std::vector<int64_t> input, kernel;
  for (int64_t i = 0; i < in_count; ++i) input.push_back(*rc::gen::inRange(-5, 6));
  for (int64_t i = 0; i < k_count; ++i) kernel.push_back(*rc::gen::inRange(-5, 6));
  const std::vector<int64_t> in_perm = Shuffle(Iota(ns + 2));
  const std::vector<int64_t> k_perm = Shuffle(Iota(ns + 2));
  const std::vector<int64_t> out_perm = Shuffle(Iota(ns + 2));
  const PrimitiveType type =
      *rc::gen::element(PrimitiveType::kF32, PrimitiveType::kS32, PrimitiveType::kF64);
  absl::StatusOr<std::vector<int64_t>> got =
      RunConv(c, input, kernel, in_perm, k_perm, out_perm, type);
  RC_ASSERT(got.ok());
  RC_ASSERT(*got == NaiveConv(c, input, kernel));
}

}  // namespace
}  // namespace spmdcheck::oracle
