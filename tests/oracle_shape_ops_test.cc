// Shape-op handlers of the oracle (oracle/shape_ops.cc): golden tests with expected values
// worked out by hand (or by a naive index loop written here), plus RapidCheck properties against
// independent references (inverse transposes, slicing a concatenation back apart, a naive pad
// and a naive clamped dynamic-update-slice).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
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

// A literal of `shape` with `values` in XLA's text form.
Literal L(absl::string_view shape, absl::string_view values) {
  absl::StatusOr<Literal> literal = ParseLiteral(values, S(shape));
  EXPECT_TRUE(literal.ok()) << shape << " " << values << ": " << literal.status();
  return literal.ok() ? *std::move(literal) : Literal();
}

std::string Entry(absl::string_view body) {
  return absl::StrCat("HloModule m\n\nENTRY e {\n", body, "\n}\n");
}

// Parses `hlo`, optionally edits instruction `name` (to build malformed attributes the parser
// would reject), and runs the shape-op handler for it on `args`.
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
  RegisterShapeOps(registry);
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

// Runs and returns the result's text (`SHAPE VALUES`), or the error.
std::string RunOp(absl::string_view body, absl::string_view name,
                  const std::vector<Literal>& args) {
  absl::StatusOr<Literal> result = Eval(Entry(body), name, args);
  if (!result.ok()) return absl::StrCat("ERROR: ", result.status().ToString());
  return result->ToString();
}

absl::StatusCode Code(absl::string_view body, absl::string_view name,
                      const std::vector<Literal>& args,
                      const std::function<void(HloInstruction&)>& edit = nullptr) {
  absl::StatusOr<Literal> result = Eval(Entry(body), name, args, edit);
  return result.status().code();
}

Literal S32Scalar(int64_t v) { return L("s32[]", absl::StrCat(v)); }
Literal U32Scalar(uint64_t v) { return L("u32[]", absl::StrCat(v)); }

// ---- broadcast ---------------------------------------------------------------------------------

TEST(ShapeOpsBroadcast, ScalarToMatrix) {
  EXPECT_EQ(RunOp("p = f32[] parameter(0)\nROOT b = f32[2,3] broadcast(p), dimensions={}", "b",
                  {L("f32[]", "1.5")}),
            "f32[2,3] {{1.5, 1.5, 1.5}, {1.5, 1.5, 1.5}}");
  // A scalar broadcast may omit dimensions={}.
  EXPECT_EQ(RunOp("p = s32[] parameter(0)\nROOT b = s32[2] broadcast(p)", "b", {S32Scalar(-7)}),
            "s32[2] {-7, -7}");
}

TEST(ShapeOpsBroadcast, VectorIntoMiddleDim) {
  EXPECT_EQ(RunOp("p = s32[3] parameter(0)\nROOT b = s32[2,3,2] broadcast(p), dimensions={1}", "b",
                  {L("s32[3]", "{1, 2, 3}")}),
            "s32[2,3,2] {{{1, 1}, {2, 2}, {3, 3}}, {{1, 1}, {2, 2}, {3, 3}}}");
}

TEST(ShapeOpsBroadcast, MatrixOuterAndInner) {
  EXPECT_EQ(RunOp("p = u8[2,3] parameter(0)\nROOT b = u8[2,2,3] broadcast(p), dimensions={0,2}",
                  "b", {L("u8[2,3]", "{{1, 2, 3}, {4, 5, 6}}")}),
            "u8[2,2,3] {{{1, 2, 3}, {1, 2, 3}}, {{4, 5, 6}, {4, 5, 6}}}");
}

TEST(ShapeOpsBroadcast, UnsortedDimensionsPermute) {
  // operand dim 0 -> result dim 1, operand dim 1 -> result dim 0: result[i][j] = p[j][i].
  EXPECT_EQ(RunOp("p = s32[2,3] parameter(0)\nROOT b = s32[3,2] broadcast(p), dimensions={1,0}",
                  "b", {L("s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}")}),
            "s32[3,2] {{1, 4}, {2, 5}, {3, 6}}");
}

TEST(ShapeOpsBroadcast, ZeroSized) {
  EXPECT_EQ(RunOp("p = f32[0] parameter(0)\nROOT b = f32[2,0] broadcast(p), dimensions={1}", "b",
                  {Literal(S("f32[0]"))}),
            "f32[2,0] {{}, {}}");
  EXPECT_EQ(RunOp("p = f32[2] parameter(0)\nROOT b = f32[0,2] broadcast(p), dimensions={1}", "b",
                  {L("f32[2]", "{1, 2}")}),
            "f32[0,2] {}");
}

TEST(ShapeOpsBroadcast, Errors) {
  const char* body = "p = s32[3] parameter(0)\nROOT b = s32[2,3] broadcast(p), dimensions={1}";
  const Literal arg = L("s32[3]", "{1, 2, 3}");
  EXPECT_EQ(Code(body, "b", {arg}, [](HloInstruction& i) { i.mutable_attrs().dimensions = {0}; }),
            absl::StatusCode::kInvalidArgument);  // size 3 into a dim of size 2
  EXPECT_EQ(Code(body, "b", {arg}, [](HloInstruction& i) { i.mutable_attrs().dimensions = {5}; }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "b", {arg}, [](HloInstruction& i) { i.mutable_attrs().dimensions = {-1}; }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "b", {arg}, [](HloInstruction& i) { i.mutable_attrs().dimensions.reset(); }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "b", {arg},
                 [](HloInstruction& i) {
                   i.mutable_attrs().dimensions = {0, 1};
                 }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "b", {}), absl::StatusCode::kInvalidArgument);  // missing operand value
  // An elided constant operand cannot be computed on.
  EXPECT_EQ(Code(body, "b", {Literal::Elided(S("s32[3]"))}), absl::StatusCode::kUnimplemented);
}

// ---- reshape / bitcast -------------------------------------------------------------------------

TEST(ShapeOpsReshape, RowMajorOrder) {
  EXPECT_EQ(RunOp("p = s32[2,3] parameter(0)\nROOT r = s32[3,2] reshape(p)", "r",
                  {L("s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}")}),
            "s32[3,2] {{1, 2}, {3, 4}, {5, 6}}");
  EXPECT_EQ(RunOp("p = s32[2,3] parameter(0)\nROOT r = s32[6] reshape(p)", "r",
                  {L("s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}")}),
            "s32[6] {1, 2, 3, 4, 5, 6}");
}

TEST(ShapeOpsReshape, RankZeroAndZeroSized) {
  EXPECT_EQ(
      RunOp("p = bf16[] parameter(0)\nROOT r = bf16[1,1] reshape(p)", "r", {L("bf16[]", "2.5")}),
      "bf16[1,1] {{2.5}}");
  EXPECT_EQ(RunOp("p = bf16[1,1] parameter(0)\nROOT r = bf16[] reshape(p)", "r",
                  {L("bf16[1,1]", "{{-3}}")}),
            "bf16[] -3");
  EXPECT_EQ(RunOp("p = f32[0,3] parameter(0)\nROOT r = f32[3,0] reshape(p)", "r",
                  {Literal(S("f32[0,3]"))}),
            "f32[3,0] {{}, {}, {}}");
}

TEST(ShapeOpsReshape, LayoutsAreIgnored) {
  EXPECT_EQ(RunOp("p = s32[2,2]{0,1} parameter(0)\nROOT r = s32[4]{0} reshape(p)", "r",
                  {L("s32[2,2]", "{{1, 2}, {3, 4}}")}),
            "s32[4] {1, 2, 3, 4}");
}

TEST(ShapeOpsReshape, Errors) {
  EXPECT_EQ(Code("p = s32[2,3] parameter(0)\nROOT r = s32[5] reshape(p)", "r",
                 {L("s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}")}),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code("p = s32[<=4] parameter(0)\nROOT r = s32[<=4] reshape(p)", "r",
                 {Literal(S("s32[<=4]"))}),
            absl::StatusCode::kUnimplemented);
}

TEST(ShapeOpsBitcast, WithoutLayoutsIsAReshape) {
  EXPECT_EQ(RunOp("p = s32[2,3] parameter(0)\nROOT r = s32[3,2] bitcast(p)", "r",
                  {L("s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}")}),
            "s32[3,2] {{1, 2}, {3, 4}, {5, 6}}");
  EXPECT_EQ(RunOp("p = s32[2,3]{1,0} parameter(0)\nROOT r = s32[6]{0} bitcast(p)", "r",
                  {L("s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}")}),
            "s32[6] {1, 2, 3, 4, 5, 6}");
}

TEST(ShapeOpsBitcast, ReadsThePhysicalLayout) {
  // p is column-major: its buffer holds 1, 4, 2, 5, 3, 6. Read row-major as [3,2].
  EXPECT_EQ(RunOp("p = s32[2,3]{0,1} parameter(0)\nROOT r = s32[3,2]{1,0} bitcast(p)", "r",
                  {L("s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}")}),
            "s32[3,2] {{1, 4}, {2, 5}, {3, 6}}");
  // Same buffer read as a column-major [2,3] again: unchanged values.
  EXPECT_EQ(RunOp("p = s32[2,3]{0,1} parameter(0)\nROOT r = s32[2,3]{0,1} bitcast(p)", "r",
                  {L("s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}")}),
            "s32[2,3] {{1, 2, 3}, {4, 5, 6}}");
  // Row-major buffer 1..6 read as column-major [3,2]: r[i][j] = buffer[j*3 + i].
  EXPECT_EQ(RunOp("p = s32[2,3]{1,0} parameter(0)\nROOT r = s32[3,2]{0,1} bitcast(p)", "r",
                  {L("s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}")}),
            "s32[3,2] {{1, 4}, {2, 5}, {3, 6}}");
}

TEST(ShapeOpsBitcast, ElementTypeChangeReinterpretsBytes) {
  // 1.0f is 0x3f800000 = 1065353216; -2.0f is 0xc0000000 = 3221225472 as u32.
  EXPECT_EQ(
      RunOp("p = f32[2] parameter(0)\nROOT r = u32[2] bitcast(p)", "r", {L("f32[2]", "{1, -2}")}),
      "u32[2] {1065353216, 3221225472}");
  // Little-endian: u16 pairs of a u32.
  EXPECT_EQ(RunOp("p = u32[1] parameter(0)\nROOT r = u16[2] bitcast(p)", "r",
                  {L("u32[1]", "{65539}")}),  // 0x00010003
            "u16[2] {3, 1}");
}

TEST(ShapeOpsBitcast, IdenticalTiledLayoutsAreANoOp) {
  EXPECT_EQ(RunOp("p = s32[2,2]{1,0:T(2,128)} parameter(0)\n"
                  "ROOT r = s32[2,2]{1,0:T(2,128)} bitcast(p)",
                  "r", {L("s32[2,2]", "{{1, 2}, {3, 4}}")}),
            "s32[2,2] {{1, 2}, {3, 4}}");
  // A memory-space annotation does not change the byte order.
  EXPECT_EQ(RunOp("p = s32[2,2]{0,1:S(1)} parameter(0)\n"
                  "ROOT r = s32[4]{0} bitcast(p)",
                  "r", {L("s32[2,2]", "{{1, 2}, {3, 4}}")}),
            "s32[4] {1, 3, 2, 4}");
}

TEST(ShapeOpsBitcast, Unsupported) {
  // Element count changes.
  EXPECT_EQ(Code("p = s32[4] parameter(0)\nROOT r = s32[2] bitcast(p)", "r",
                 {L("s32[4]", "{1, 2, 3, 4}")}),
            absl::StatusCode::kUnimplemented);
  // pred has no plain byte representation to reinterpret.
  EXPECT_EQ(
      Code("p = u8[2] parameter(0)\nROOT r = pred[2] bitcast(p)", "r", {L("u8[2]", "{1, 0}")}),
      absl::StatusCode::kUnimplemented);
  // Tiled layouts that differ.
  EXPECT_EQ(Code("p = f32[8,128]{1,0:T(8,128)} parameter(0)\n"
                 "ROOT r = f32[1024]{0} bitcast(p)",
                 "r", {Literal(S("f32[8,128]"))}),
            absl::StatusCode::kUnimplemented);
}

// ---- transpose -----------------------------------------------------------------------------

TEST(ShapeOpsTranspose, Matrix) {
  EXPECT_EQ(RunOp("p = s32[2,3] parameter(0)\nROOT t = s32[3,2] transpose(p), dimensions={1,0}",
                  "t", {L("s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}")}),
            "s32[3,2] {{1, 4}, {2, 5}, {3, 6}}");
}

TEST(ShapeOpsTranspose, Rank3ByHand) {
  // p[a][b][c] = 100a + 10b + c; t = transpose {2,0,1}: t[i][j][k] = p[j][k][i].
  EXPECT_EQ(
      RunOp("p = s16[2,2,3] parameter(0)\n"
            "ROOT t = s16[3,2,2] transpose(p), dimensions={2,0,1}",
            "t",
            {L("s16[2,2,3]", "{{{0, 1, 2}, {10, 11, 12}}, {{100, 101, 102}, {110, 111, 112}}}")}),
      "s16[3,2,2] {{{0, 10}, {100, 110}}, {{1, 11}, {101, 111}}, "
      "{{2, 12}, {102, 112}}}");
}

TEST(ShapeOpsTranspose, RankZeroAndZeroSized) {
  EXPECT_EQ(RunOp("p = f64[] parameter(0)\nROOT t = f64[] transpose(p), dimensions={}", "t",
                  {L("f64[]", "0.25")}),
            "f64[] 0.25");
  EXPECT_EQ(RunOp("p = f32[2,0] parameter(0)\nROOT t = f32[0,2] transpose(p), dimensions={1,0}",
                  "t", {Literal(S("f32[2,0]"))}),
            "f32[0,2] {}");
}

TEST(ShapeOpsTranspose, Errors) {
  const char* body = "p = s32[2,3] parameter(0)\nROOT t = s32[3,2] transpose(p), dimensions={1,0}";
  const Literal arg = L("s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}");
  EXPECT_EQ(Code(body, "t", {arg},
                 [](HloInstruction& i) {
                   i.mutable_attrs().dimensions = {1, 1};
                 }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "t", {arg},
                 [](HloInstruction& i) {
                   i.mutable_attrs().dimensions = {0, 1};
                 }),
            absl::StatusCode::kInvalidArgument);  // result shape would be [2,3]
  EXPECT_EQ(Code(body, "t", {arg}, [](HloInstruction& i) { i.mutable_attrs().dimensions = {2}; }),
            absl::StatusCode::kInvalidArgument);
}

// Naive reference: out[idx] = in[idx permuted], index arithmetic written out per element.
std::vector<float> NaiveTranspose(const std::vector<float>& in, const std::vector<int64_t>& dims,
                                  const std::vector<int64_t>& perm) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> out_dims(rank);
  for (int64_t i = 0; i < rank; ++i) out_dims[i] = dims[perm[i]];
  std::vector<float> out(in.size());
  std::vector<int64_t> idx(rank, 0);
  for (size_t linear = 0; linear < out.size(); ++linear) {
    // Decompose linear into out index.
    int64_t rest = static_cast<int64_t>(linear);
    for (int64_t d = rank - 1; d >= 0; --d) {
      idx[d] = rest % out_dims[d];
      rest /= out_dims[d];
    }
    std::vector<int64_t> in_idx(rank);
    for (int64_t i = 0; i < rank; ++i) in_idx[perm[i]] = idx[i];
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) src = src * dims[d] + in_idx[d];
    out[linear] = in[src];
  }
  return out;
}

TEST(ShapeOpsTranspose, LargeCubeIsCorrectAndFast) {
  Literal in(S("f32[64,64,64]"));
  absl::Span<float> data = in.data<float>();
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.5f - 7.0f;
  const std::string body =
      "p = f32[64,64,64] parameter(0)\nROOT t = f32[64,64,64] transpose(p), dimensions={2,0,1}";
  const std::vector<Literal> args = {in};
  // Time the handler alone (parsing excluded).
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(Entry(body));
  ASSERT_TRUE(parsed.ok());
  const HloInstruction* t = parsed->module->entry()->FindInstruction("t");
  OpRegistry registry;
  RegisterShapeOps(registry);
  const Literal* operand = &args[0];
  EvalEnv env;
  double best_ms = 1e9;
  absl::StatusOr<Literal> result;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    result = registry.Find(HloOpcode::kTranspose)(*t, absl::MakeConstSpan(&operand, 1), env);
    const auto end = std::chrono::steady_clock::now();
    best_ms = std::min(best_ms, std::chrono::duration<double, std::milli>(end - start).count());
  }
  ASSERT_TRUE(result.ok()) << result.status();
  std::vector<float> expected =
      NaiveTranspose(std::vector<float>(data.begin(), data.end()), {64, 64, 64}, {2, 0, 1});
  absl::Span<const float> got = result->data<float>();
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), expected.begin()));
  RecordProperty("transpose_64cube_ms", std::to_string(best_ms));
  EXPECT_LT(best_ms, 50.0) << "transpose f32[64,64,64] took " << best_ms << " ms";
}

TEST(ShapeOpsTranspose, LargeMatrixAllPermutationsOfRank3) {
  Literal in(S("s32[7,33,40]"));
  absl::Span<int32_t> data = in.data<int32_t>();
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>(i * 7 + 1);
  std::vector<float> as_float(data.begin(), data.end());
  std::vector<int64_t> perm = {0, 1, 2};
  do {
    const std::vector<int64_t> dims = {7, 33, 40};
    const std::string out_shape =
        absl::StrCat("s32[", dims[perm[0]], ",", dims[perm[1]], ",", dims[perm[2]], "]");
    absl::StatusOr<Literal> result =
        Eval(Entry(absl::StrCat("p = s32[7,33,40] parameter(0)\nROOT t = ", out_shape,
                                " transpose(p), dimensions={", absl::StrJoin(perm, ","), "}")),
             "t", {in});
    ASSERT_TRUE(result.ok()) << result.status();
    std::vector<float> expected = NaiveTranspose(as_float, dims, perm);
    absl::Span<const int32_t> got = result->data<int32_t>();
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(static_cast<float>(got[i]), expected[i]) << absl::StrJoin(perm, ",") << " @" << i;
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
}

// ---- slice ---------------------------------------------------------------------------------

TEST(ShapeOpsSlice, StridedUneven) {
  // Rows 1, 3 (of [1:5:2]); columns 0, 3, 6 (of [0:7:3]).
  Literal p(S("s32[5,7]"));
  for (int64_t i = 0; i < 35; ++i) p.SetInt64(i, (i / 7) * 10 + i % 7);
  EXPECT_EQ(RunOp("p = s32[5,7] parameter(0)\nROOT s = s32[2,3] slice(p), slice={[1:5:2], [0:7:3]}",
                  "s", {p}),
            "s32[2,3] {{10, 13, 16}, {30, 33, 36}}");
  // [1:4:2] keeps 1 and 3 (uneven: the last step runs past the limit).
  EXPECT_EQ(RunOp("p = s32[5,7] parameter(0)\nROOT s = s32[2,1] slice(p), slice={[1:4:2], [6:7]}",
                  "s", {p}),
            "s32[2,1] {{16}, {36}}");
}

TEST(ShapeOpsSlice, EmptyAndRankZero) {
  EXPECT_EQ(RunOp("p = f32[4] parameter(0)\nROOT s = f32[0] slice(p), slice={[2:2]}", "s",
                  {L("f32[4]", "{1, 2, 3, 4}")}),
            "f32[0] {}");
  EXPECT_EQ(
      RunOp("p = f32[] parameter(0)\nROOT s = f32[] slice(p), slice={}", "s", {L("f32[]", "4")}),
      "f32[] 4");
}

TEST(ShapeOpsSlice, Errors) {
  const char* body = "p = f32[4] parameter(0)\nROOT s = f32[2] slice(p), slice={[0:2]}";
  const Literal arg = L("f32[4]", "{1, 2, 3, 4}");
  auto with = [](int64_t start, int64_t limit, int64_t stride) {
    return [=](HloInstruction& i) {
      i.mutable_attrs().slice = std::vector<SliceDim>{{start, limit, stride}};
    };
  };
  EXPECT_EQ(Code(body, "s", {arg}, with(0, 5, 1)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "s", {arg}, with(-1, 1, 1)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "s", {arg}, with(3, 1, 1)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "s", {arg}, with(0, 2, 0)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "s", {arg}, with(0, 4, 1)), absl::StatusCode::kInvalidArgument);  // [4]
  EXPECT_EQ(Code(body, "s", {arg}, [](HloInstruction& i) { i.mutable_attrs().slice.reset(); }),
            absl::StatusCode::kInvalidArgument);
}

// ---- dynamic-slice -------------------------------------------------------------------------

std::string DsBody(absl::string_view index_type) {
  return absl::StrCat("p = s32[5] parameter(0)\ni = ", index_type,
                      "[] parameter(1)\nROOT d = s32[2] dynamic-slice(p, i), "
                      "dynamic_slice_sizes={2}");
}

TEST(ShapeOpsDynamicSlice, ClampsSignedAndUnsignedStarts) {
  const Literal p = L("s32[5]", "{0, 1, 2, 3, 4}");
  EXPECT_EQ(RunOp(DsBody("s32"), "d", {p, S32Scalar(1)}), "s32[2] {1, 2}");
  EXPECT_EQ(RunOp(DsBody("s32"), "d", {p, S32Scalar(3)}), "s32[2] {3, 4}");
  EXPECT_EQ(RunOp(DsBody("s32"), "d", {p, S32Scalar(4)}), "s32[2] {3, 4}");   // past the end
  EXPECT_EQ(RunOp(DsBody("s32"), "d", {p, S32Scalar(-3)}), "s32[2] {0, 1}");  // negative -> 0
  EXPECT_EQ(RunOp(DsBody("s32"), "d", {p, S32Scalar(-2147483648)}), "s32[2] {0, 1}");
  EXPECT_EQ(RunOp(DsBody("s32"), "d", {p, S32Scalar(2147483647)}), "s32[2] {3, 4}");
  // u32 values >= 2^31 are large positive numbers, clamped to the maximum start (3).
  EXPECT_EQ(RunOp(DsBody("u32"), "d", {p, U32Scalar(2)}), "s32[2] {2, 3}");
  EXPECT_EQ(RunOp(DsBody("u32"), "d", {p, U32Scalar(2147483648u)}), "s32[2] {3, 4}");
  EXPECT_EQ(RunOp(DsBody("u32"), "d", {p, U32Scalar(4294967295u)}), "s32[2] {3, 4}");
  // Other integer types.
  EXPECT_EQ(RunOp(DsBody("s8"), "d", {p, L("s8[]", "-1")}), "s32[2] {0, 1}");
  EXPECT_EQ(RunOp(DsBody("u8"), "d", {p, L("u8[]", "255")}), "s32[2] {3, 4}");
  EXPECT_EQ(RunOp(DsBody("s64"), "d", {p, L("s64[]", "-9223372036854775808")}), "s32[2] {0, 1}");
  EXPECT_EQ(RunOp(DsBody("u64"), "d", {p, L("u64[]", "2")}), "s32[2] {2, 3}");
  // A u64 >= 2^63 read into int64 is negative: clamps to 0.
  EXPECT_EQ(RunOp(DsBody("u64"), "d", {p, L("u64[]", "18446744073709551615")}), "s32[2] {0, 1}");
  EXPECT_EQ(RunOp(DsBody("s16"), "d", {p, L("s16[]", "2")}), "s32[2] {2, 3}");
}

TEST(ShapeOpsDynamicSlice, TwoDimsClampedIndependently) {
  Literal p(S("s32[4,5]"));
  for (int64_t i = 0; i < 20; ++i) p.SetInt64(i, (i / 5) * 10 + i % 5);
  const std::string body =
      "p = s32[4,5] parameter(0)\ni = s32[] parameter(1)\nj = u32[] parameter(2)\n"
      "ROOT d = s32[2,3] dynamic-slice(p, i, j), dynamic_slice_sizes={2,3}";
  // (1, 10) -> (1, 2).
  EXPECT_EQ(RunOp(body, "d", {p, S32Scalar(1), U32Scalar(10)}),
            "s32[2,3] {{12, 13, 14}, {22, 23, 24}}");
  // (-5, 3000000000) -> (0, 2).
  EXPECT_EQ(RunOp(body, "d", {p, S32Scalar(-5), U32Scalar(3000000000u)}),
            "s32[2,3] {{2, 3, 4}, {12, 13, 14}}");
  // (7, 1) -> (2, 1).
  EXPECT_EQ(RunOp(body, "d", {p, S32Scalar(7), U32Scalar(1)}),
            "s32[2,3] {{21, 22, 23}, {31, 32, 33}}");
}

TEST(ShapeOpsDynamicSlice, FullSizeForcesStartZeroAndEmptySlices) {
  const Literal p = L("s32[5]", "{0, 1, 2, 3, 4}");
  EXPECT_EQ(RunOp("p = s32[5] parameter(0)\ni = s32[] parameter(1)\n"
                  "ROOT d = s32[5] dynamic-slice(p, i), dynamic_slice_sizes={5}",
                  "d", {p, S32Scalar(3)}),
            "s32[5] {0, 1, 2, 3, 4}");
  EXPECT_EQ(RunOp("p = s32[5] parameter(0)\ni = s32[] parameter(1)\n"
                  "ROOT d = s32[0] dynamic-slice(p, i), dynamic_slice_sizes={0}",
                  "d", {p, S32Scalar(9)}),
            "s32[0] {}");
  EXPECT_EQ(RunOp("p = s32[0] parameter(0)\ni = s32[] parameter(1)\n"
                  "ROOT d = s32[0] dynamic-slice(p, i), dynamic_slice_sizes={0}",
                  "d", {Literal(S("s32[0]")), S32Scalar(-9)}),
            "s32[0] {}");
}

TEST(ShapeOpsDynamicSlice, RankZeroOperandsTakeNoIndices) {
  EXPECT_EQ(RunOp("p = s32[] parameter(0)\n"
                  "ROOT d = s32[] dynamic-slice(p), dynamic_slice_sizes={}",
                  "d", {S32Scalar(5)}),
            "s32[] 5");
  EXPECT_EQ(RunOp("p = s32[] parameter(0)\nu = s32[] parameter(1)\n"
                  "ROOT d = s32[] dynamic-update-slice(p, u)",
                  "d", {S32Scalar(5), S32Scalar(6)}),
            "s32[] 6");
}

TEST(ShapeOpsDynamicSlice, RankOneIndexArrayForm) {
  Literal p(S("s32[4,5]"));
  for (int64_t i = 0; i < 20; ++i) p.SetInt64(i, (i / 5) * 10 + i % 5);
  EXPECT_EQ(RunOp("p = s32[4,5] parameter(0)\ni = s32[2] parameter(1)\n"
                  "ROOT d = s32[1,2] dynamic-slice(p, i), dynamic_slice_sizes={1,2}",
                  "d", {p, L("s32[2]", "{9, -1}")}),
            "s32[1,2] {{30, 31}}");
}

TEST(ShapeOpsDynamicSlice, Errors) {
  const Literal p = L("s32[5]", "{0, 1, 2, 3, 4}");
  // A float index.
  EXPECT_EQ(Code("p = s32[5] parameter(0)\ni = f32[] parameter(1)\n"
                 "ROOT d = s32[2] dynamic-slice(p, i), dynamic_slice_sizes={2}",
                 "d", {p, L("f32[]", "1")}),
            absl::StatusCode::kInvalidArgument);
  // Slice size larger than the dim.
  EXPECT_EQ(Code(DsBody("s32"), "d", {p, S32Scalar(0)},
                 [](HloInstruction& i) { i.mutable_attrs().dynamic_slice_sizes = {6}; }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(DsBody("s32"), "d", {p, S32Scalar(0)},
                 [](HloInstruction& i) { i.mutable_attrs().dynamic_slice_sizes = {-1}; }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(DsBody("s32"), "d", {p, S32Scalar(0)},
                 [](HloInstruction& i) {
                   i.mutable_attrs().dynamic_slice_sizes = {1, 1};
                 }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(DsBody("s32"), "d", {p, S32Scalar(0)},
                 [](HloInstruction& i) { i.mutable_attrs().dynamic_slice_sizes.reset(); }),
            absl::StatusCode::kInvalidArgument);
}

// ---- dynamic-update-slice ------------------------------------------------------------------

std::string DusBody(absl::string_view index_type) {
  return absl::StrCat("p = s32[5] parameter(0)\nu = s32[2] parameter(1)\ni = ", index_type,
                      "[] parameter(2)\nROOT d = s32[5] dynamic-update-slice(p, u, i)");
}

TEST(ShapeOpsDynamicUpdateSlice, ClampsSignedAndUnsignedStarts) {
  const Literal p = L("s32[5]", "{0, 1, 2, 3, 4}");
  const Literal u = L("s32[2]", "{10, 11}");
  EXPECT_EQ(RunOp(DusBody("s32"), "d", {p, u, S32Scalar(1)}), "s32[5] {0, 10, 11, 3, 4}");
  EXPECT_EQ(RunOp(DusBody("s32"), "d", {p, u, S32Scalar(-1)}), "s32[5] {10, 11, 2, 3, 4}");
  EXPECT_EQ(RunOp(DusBody("s32"), "d", {p, u, S32Scalar(4)}), "s32[5] {0, 1, 2, 10, 11}");
  EXPECT_EQ(RunOp(DusBody("u32"), "d", {p, u, U32Scalar(2147483648u)}), "s32[5] {0, 1, 2, 10, 11}");
  EXPECT_EQ(RunOp(DusBody("u32"), "d", {p, u, U32Scalar(4294967295u)}), "s32[5] {0, 1, 2, 10, 11}");
  EXPECT_EQ(RunOp(DusBody("s8"), "d", {p, u, L("s8[]", "-128")}), "s32[5] {10, 11, 2, 3, 4}");
}

TEST(ShapeOpsDynamicUpdateSlice, TwoDims) {
  const std::string body =
      "p = f32[3,4] parameter(0)\nu = f32[2,2] parameter(1)\ni = s32[] parameter(2)\n"
      "j = u32[] parameter(3)\nROOT d = f32[3,4] dynamic-update-slice(p, u, i, j)";
  const Literal p = L("f32[3,4]", "{{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}");
  const Literal u = L("f32[2,2]", "{{1.5, 2.5}, {3.5, 4.5}}");
  // (2, 4000000000) -> (1, 2).
  EXPECT_EQ(RunOp(body, "d", {p, u, S32Scalar(2), U32Scalar(4000000000u)}),
            "f32[3,4] {{0, 0, 0, 0}, {0, 0, 1.5, 2.5}, {0, 0, 3.5, 4.5}}");
  // (-5, 1) -> (0, 1).
  EXPECT_EQ(RunOp(body, "d", {p, u, S32Scalar(-5), U32Scalar(1)}),
            "f32[3,4] {{0, 1.5, 2.5, 0}, {0, 3.5, 4.5, 0}, {0, 0, 0, 0}}");
}

TEST(ShapeOpsDynamicUpdateSlice, FullAndEmptyUpdates) {
  const Literal p = L("s32[3]", "{1, 2, 3}");
  EXPECT_EQ(RunOp("p = s32[3] parameter(0)\nu = s32[3] parameter(1)\ni = s32[] parameter(2)\n"
                  "ROOT d = s32[3] dynamic-update-slice(p, u, i)",
                  "d", {p, L("s32[3]", "{7, 8, 9}"), S32Scalar(2)}),
            "s32[3] {7, 8, 9}");
  EXPECT_EQ(RunOp("p = s32[3] parameter(0)\nu = s32[0] parameter(1)\ni = s32[] parameter(2)\n"
                  "ROOT d = s32[3] dynamic-update-slice(p, u, i)",
                  "d", {p, Literal(S("s32[0]")), S32Scalar(2)}),
            "s32[3] {1, 2, 3}");
}

TEST(ShapeOpsDynamicUpdateSlice, Errors) {
  // Update larger than the operand.
  EXPECT_EQ(Code("p = s32[2] parameter(0)\nu = s32[2] parameter(1)\ni = s32[] parameter(2)\n"
                 "ROOT d = s32[2] dynamic-update-slice(p, u, i)",
                 "d", {L("s32[2]", "{1, 2}"), L("s32[3]", "{1, 2, 3}"), S32Scalar(0)}),
            absl::StatusCode::kInvalidArgument);
  // Wrong number of start indices.
  EXPECT_EQ(Code("p = s32[2] parameter(0)\nu = s32[1] parameter(1)\ni = s32[] parameter(2)\n"
                 "ROOT d = s32[2] dynamic-update-slice(p, u, i, i)",
                 "d", {L("s32[2]", "{1, 2}"), L("s32[1]", "{1}"), S32Scalar(0), S32Scalar(0)}),
            absl::StatusCode::kInvalidArgument);
}

// ---- concatenate ---------------------------------------------------------------------------

TEST(ShapeOpsConcatenate, UnevenPiecesIncludingEmpty) {
  EXPECT_EQ(
      RunOp("a = s32[2,1] parameter(0)\nb = s32[2,3] parameter(1)\nc = s32[2,0] parameter(2)\n"
            "ROOT r = s32[2,4] concatenate(a, b, c), dimensions={1}",
            "r",
            {L("s32[2,1]", "{{1}, {2}}"), L("s32[2,3]", "{{3, 4, 5}, {6, 7, 8}}"),
             Literal(S("s32[2,0]"))}),
      "s32[2,4] {{1, 3, 4, 5}, {2, 6, 7, 8}}");
  EXPECT_EQ(RunOp("a = u16[1,2] parameter(0)\nb = u16[2,2] parameter(1)\n"
                  "ROOT r = u16[3,2] concatenate(a, b), dimensions={0}",
                  "r", {L("u16[1,2]", "{{1, 2}}"), L("u16[2,2]", "{{3, 4}, {5, 6}}")}),
            "u16[3,2] {{1, 2}, {3, 4}, {5, 6}}");
  EXPECT_EQ(RunOp("a = pred[1] parameter(0)\nROOT r = pred[1] concatenate(a), dimensions={0}", "r",
                  {L("pred[1]", "{true}")}),
            "pred[1] {true}");
}

TEST(ShapeOpsConcatenate, Errors) {
  const char* body =
      "a = s32[2] parameter(0)\nb = s32[3] parameter(1)\n"
      "ROOT r = s32[5] concatenate(a, b), dimensions={0}";
  const std::vector<Literal> args = {L("s32[2]", "{1, 2}"), L("s32[3]", "{3, 4, 5}")};
  EXPECT_EQ(RunOp(body, "r", args), "s32[5] {1, 2, 3, 4, 5}");
  EXPECT_EQ(Code(body, "r", args, [](HloInstruction& i) { i.mutable_attrs().dimensions = {1}; }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "r", args,
                 [](HloInstruction& i) {
                   i.mutable_attrs().dimensions = {0, 0};
                 }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "r", {L("s32[2]", "{1, 2}"), L("s32[1,3]", "{{3, 4, 5}}")}),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "r", {L("s32[2]", "{1, 2}"), L("u32[3]", "{3, 4, 5}")}),
            absl::StatusCode::kInvalidArgument);
}

// ---- pad -----------------------------------------------------------------------------------

std::string PadBody(absl::string_view out_shape, absl::string_view padding) {
  return absl::StrCat("p = s32[3] parameter(0)\nv = s32[] parameter(1)\nROOT r = ", out_shape,
                      " pad(p, v), padding=", padding);
}

TEST(ShapeOpsPad, EdgeAndInterior) {
  const Literal p = L("s32[3]", "{1, 2, 3}");
  const Literal v = S32Scalar(0);
  EXPECT_EQ(RunOp(PadBody("s32[8]", "1_2_1"), "r", {p, v}), "s32[8] {0, 1, 0, 2, 0, 3, 0, 0}");
  EXPECT_EQ(RunOp(PadBody("s32[5]", "2_0"), "r", {p, S32Scalar(-9)}), "s32[5] {-9, -9, 1, 2, 3}");
}

TEST(ShapeOpsPad, NegativeCropsAndCombinesWithInterior) {
  const Literal p = L("s32[3]", "{1, 2, 3}");
  const Literal v = S32Scalar(0);
  // 1 0 2 0 3, cropped by one on each side.
  EXPECT_EQ(RunOp(PadBody("s32[3]", "-1_-1_1"), "r", {p, v}), "s32[3] {0, 2, 0}");
  // 1 0 0 2 0 0 3, crop 2 low, add 1 high: 0 2 0 0 3 0.
  EXPECT_EQ(RunOp(PadBody("s32[6]", "-2_1_2"), "r", {p, v}), "s32[6] {0, 2, 0, 0, 3, 0}");
  // Crop into the data: 2 3 then pad high.
  EXPECT_EQ(RunOp(PadBody("s32[4]", "-1_2"), "r", {p, S32Scalar(7)}), "s32[4] {2, 3, 7, 7}");
  // Everything cropped away.
  EXPECT_EQ(RunOp(PadBody("s32[0]", "-4_1"), "r", {p, v}), "s32[0] {}");
  // High padding crops the end, low padding extends.
  EXPECT_EQ(RunOp(PadBody("s32[5]", "3_-1"), "r", {p, S32Scalar(5)}), "s32[5] {5, 5, 5, 1, 2}");
  // Only padding left: 1 0 0 0 2 0 0 0 3 -> window [1, 4) is 0 0 0.
  EXPECT_EQ(RunOp(PadBody("s32[3]", "-1_-5_3"), "r", {p, S32Scalar(4)}), "s32[3] {4, 4, 4}");
}

TEST(ShapeOpsPad, TwoDimsMixed) {
  // Dim 0: low 1, no interior; dim 1: crop 1 low, high 1, interior 1.
  // Row {1,2,3} with interior: 1 v 2 v 3 -> crop 1 low: v 2 v 3 -> high 1: v 2 v 3 v.
  EXPECT_EQ(RunOp("p = s32[2,3] parameter(0)\nv = s32[] parameter(1)\n"
                  "ROOT r = s32[3,5] pad(p, v), padding=1_0x-1_1_1",
                  "r", {L("s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}"), S32Scalar(9)}),
            "s32[3,5] {{9, 9, 9, 9, 9}, {9, 2, 9, 3, 9}, {9, 5, 9, 6, 9}}");
}

TEST(ShapeOpsPad, EmptyOperandAndOtherTypes) {
  EXPECT_EQ(RunOp("p = s32[0] parameter(0)\nv = s32[] parameter(1)\n"
                  "ROOT r = s32[3] pad(p, v), padding=2_1_5",
                  "r", {Literal(S("s32[0]")), S32Scalar(8)}),
            "s32[3] {8, 8, 8}");
  EXPECT_EQ(RunOp("p = bf16[2] parameter(0)\nv = bf16[] parameter(1)\n"
                  "ROOT r = bf16[4] pad(p, v), padding=1_0_1",
                  "r", {L("bf16[2]", "{1.5, -2}"), L("bf16[]", "-inf")}),
            "bf16[4] {-inf, 1.5, -inf, -2}");
  // Rank 0 (the text form cannot spell an empty padding, so edit a rank-1 pad).
  absl::StatusOr<Literal> scalar =
      Eval(Entry("p = f32[1] parameter(0)\nv = f32[] parameter(1)\n"
                 "ROOT r = f32[1] pad(p, v), padding=0_0"),
           "r", {L("f32[]", "3"), L("f32[]", "0")}, [](HloInstruction& i) {
             i.set_shape(Shape::Scalar(PrimitiveType::kF32));
             i.mutable_attrs().padding = std::vector<PadDim>{};
           });
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ(scalar->ToString(), "f32[] 3");
}

TEST(ShapeOpsPad, Errors) {
  const Literal p = L("s32[3]", "{1, 2, 3}");
  const Literal v = S32Scalar(0);
  auto with = [](int64_t low, int64_t high, int64_t interior) {
    return [=](HloInstruction& i) {
      i.mutable_attrs().padding = std::vector<PadDim>{{low, high, interior}};
    };
  };
  // Size does not match the result.
  EXPECT_EQ(Code(PadBody("s32[3]", "0_0"), "r", {p, v}, with(1, 0, 0)),
            absl::StatusCode::kInvalidArgument);
  // Negative size.
  EXPECT_EQ(Code(PadBody("s32[3]", "0_0"), "r", {p, v}, with(-4, 0, 0)),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(PadBody("s32[3]", "0_0"), "r", {p, v}, with(0, 0, -1)),
            absl::StatusCode::kInvalidArgument);
  // Extreme values must not overflow into a "valid" size.
  EXPECT_EQ(Code(PadBody("s32[3]", "0_0"), "r", {p, v}, with(INT64_MIN, INT64_MAX, INT64_MAX)),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(PadBody("s32[3]", "0_0"), "r", {p, v}, with(INT64_MIN + 1, INT64_MAX - 1, 0)),
            absl::StatusCode::kInvalidArgument);  // size 1, result says 3
  // A non-scalar or mistyped pad value.
  EXPECT_EQ(Code(PadBody("s32[3]", "0_0"), "r", {p, L("u32[]", "0")}),
            absl::StatusCode::kInvalidArgument);
}

TEST(ShapeOpsPad, ExtremeButConsistentPaddingIsExact) {
  // low = INT64_MIN + 1, high = INT64_MAX - 1 + 2 ... chosen so the size is exactly 3:
  // low + high + 3 = 3 -> high = -low. All data is cropped (it lies far below 0).
  const Literal p = L("s32[3]", "{1, 2, 3}");
  absl::StatusOr<Literal> r =
      Eval(Entry(PadBody("s32[3]", "0_0")), "r", {p, S32Scalar(6)}, [](HloInstruction& i) {
        i.mutable_attrs().padding = std::vector<PadDim>{{INT64_MIN + 1, INT64_MAX, 0}};
      });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ToString(), "s32[3] {6, 6, 6}");
}

// ---- reverse -------------------------------------------------------------------------------

TEST(ShapeOpsReverse, Dims) {
  const Literal p = L("s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}");
  EXPECT_EQ(
      RunOp("p = s32[2,3] parameter(0)\nROOT r = s32[2,3] reverse(p), dimensions={1}", "r", {p}),
      "s32[2,3] {{3, 2, 1}, {6, 5, 4}}");
  EXPECT_EQ(
      RunOp("p = s32[2,3] parameter(0)\nROOT r = s32[2,3] reverse(p), dimensions={0}", "r", {p}),
      "s32[2,3] {{4, 5, 6}, {1, 2, 3}}");
  EXPECT_EQ(
      RunOp("p = s32[2,3] parameter(0)\nROOT r = s32[2,3] reverse(p), dimensions={1,0}", "r", {p}),
      "s32[2,3] {{6, 5, 4}, {3, 2, 1}}");
  EXPECT_EQ(
      RunOp("p = s32[2,3] parameter(0)\nROOT r = s32[2,3] reverse(p), dimensions={}", "r", {p}),
      "s32[2,3] {{1, 2, 3}, {4, 5, 6}}");
  EXPECT_EQ(RunOp("p = s32[] parameter(0)\nROOT r = s32[] reverse(p), dimensions={}", "r",
                  {S32Scalar(3)}),
            "s32[] 3");
  EXPECT_EQ(RunOp("p = s32[0,2] parameter(0)\nROOT r = s32[0,2] reverse(p), dimensions={0,1}", "r",
                  {Literal(S("s32[0,2]"))}),
            "s32[0,2] {}");
  EXPECT_EQ(
      Code("p = s32[2,3] parameter(0)\nROOT r = s32[2,3] reverse(p), dimensions={1}", "r", {p},
           [](HloInstruction& i) {
             i.mutable_attrs().dimensions = {1, 1};
           }),
      absl::StatusCode::kInvalidArgument);
}

// ---- iota ----------------------------------------------------------------------------------

TEST(ShapeOpsIota, IntegerDims) {
  EXPECT_EQ(RunOp("ROOT i = s32[2,3] iota(), iota_dimension=1", "i", {}),
            "s32[2,3] {{0, 1, 2}, {0, 1, 2}}");
  EXPECT_EQ(RunOp("ROOT i = u64[2,3] iota(), iota_dimension=0", "i", {}),
            "u64[2,3] {{0, 0, 0}, {1, 1, 1}}");
  EXPECT_EQ(RunOp("ROOT i = pred[3] iota(), iota_dimension=0", "i", {}),
            "pred[3] {false, true, true}");
  EXPECT_EQ(RunOp("ROOT i = s32[2,0] iota(), iota_dimension=1", "i", {}), "s32[2,0] {{}, {}}");
  EXPECT_EQ(Code("ROOT i = s32[2,3] iota(), iota_dimension=1", "i", {},
                 [](HloInstruction& i) { i.mutable_attrs().iota_dimension = 2; }),
            absl::StatusCode::kInvalidArgument);
}

TEST(ShapeOpsIota, IntegersWrap) {
  absl::StatusOr<Literal> s8 = Eval(Entry("ROOT i = s8[300] iota(), iota_dimension=0"), "i", {});
  ASSERT_TRUE(s8.ok());
  EXPECT_EQ(s8->GetInt64(127), 127);
  EXPECT_EQ(s8->GetInt64(128), -128);
  EXPECT_EQ(s8->GetInt64(200), -56);
  absl::StatusOr<Literal> u8 = Eval(Entry("ROOT i = u8[300] iota(), iota_dimension=0"), "i", {});
  ASSERT_TRUE(u8.ok());
  EXPECT_EQ(u8->GetInt64(255), 255);
  EXPECT_EQ(u8->GetInt64(256), 0);
  EXPECT_EQ(u8->GetInt64(299), 43);
}

TEST(ShapeOpsIota, FloatsRoundToNearestEven) {
  EXPECT_EQ(RunOp("ROOT i = f32[2,2] iota(), iota_dimension=1", "i", {}),
            "f32[2,2] {{0, 1}, {0, 1}}");
  absl::StatusOr<Literal> bf = Eval(Entry("ROOT i = bf16[300] iota(), iota_dimension=0"), "i", {});
  ASSERT_TRUE(bf.ok());
  // bf16 holds 8 significant bits: integers are exact up to 256; 257 is a tie between 256
  // and 258 and goes to the even significand (256); 259 -> 260; 261 -> 260; 263 -> 264.
  EXPECT_EQ(bf->GetDouble(255), 255.0);
  EXPECT_EQ(bf->GetDouble(256), 256.0);
  EXPECT_EQ(bf->GetDouble(257), 256.0);
  EXPECT_EQ(bf->GetDouble(258), 258.0);
  EXPECT_EQ(bf->GetDouble(259), 260.0);
  EXPECT_EQ(bf->GetDouble(261), 260.0);
  EXPECT_EQ(bf->GetDouble(263), 264.0);
  absl::StatusOr<Literal> f16 =
      Eval(Entry("ROOT i = f16[2,2100] iota(), iota_dimension=1"), "i", {});
  ASSERT_TRUE(f16.ok());
  // f16 holds 11 significant bits: 2049 is a tie between 2048 and 2050 -> 2048; 2051 -> 2052.
  EXPECT_EQ(f16->GetDouble(2048), 2048.0);
  EXPECT_EQ(f16->GetDouble(2049), 2048.0);
  EXPECT_EQ(f16->GetDouble(2051), 2052.0);
  EXPECT_EQ(f16->GetDouble(2100 + 2051), 2052.0);  // second row
  EXPECT_EQ(RunOp("ROOT i = f64[3] iota(), iota_dimension=0", "i", {}), "f64[3] {0, 1, 2}");
  EXPECT_EQ(RunOp("ROOT i = c64[2] iota(), iota_dimension=0", "i", {}), "c64[2] {(0, 0), (1, 0)}");
}

// ---- tuple, get-tuple-element, opt-barrier, copy-start/done, get-dimension-size -------------

TEST(ShapeOpsTuple, TupleOfTuplesAndGetTupleElement) {
  const char* body =
      "a = s32[2] parameter(0)\nb = f32[] parameter(1)\n"
      "inner = (s32[2], f32[]) tuple(a, b)\n"
      "outer = ((s32[2], f32[]), f32[], ()) tuple(inner, b, empty)\n"
      "empty = () tuple()\n"
      "g0 = (s32[2], f32[]) get-tuple-element(outer), index=0\n"
      "g00 = s32[2] get-tuple-element(g0), index=0\n"
      "ROOT g2 = () get-tuple-element(outer), index=2";
  const Literal a = L("s32[2]", "{1, 2}");
  const Literal b = L("f32[]", "0.5");
  absl::StatusOr<Literal> inner = Eval(Entry(body), "inner", {a, b});
  ASSERT_TRUE(inner.ok()) << inner.status();
  EXPECT_EQ(inner->ToString(), "(s32[2], f32[]) ({1, 2}, 0.5)");
  absl::StatusOr<Literal> empty = Eval(Entry(body), "empty", {});
  ASSERT_TRUE(empty.ok()) << empty.status();
  absl::StatusOr<Literal> outer = Eval(Entry(body), "outer", {*inner, b, *empty});
  ASSERT_TRUE(outer.ok()) << outer.status();
  EXPECT_EQ(outer->ToString(), "((s32[2], f32[]), f32[], ()) (({1, 2}, 0.5), 0.5, ())");
  absl::StatusOr<Literal> g0 = Eval(Entry(body), "g0", {*outer});
  ASSERT_TRUE(g0.ok()) << g0.status();
  EXPECT_TRUE(*g0 == *inner);
  absl::StatusOr<Literal> g00 = Eval(Entry(body), "g00", {*g0});
  ASSERT_TRUE(g00.ok()) << g00.status();
  EXPECT_EQ(g00->ToString(), "s32[2] {1, 2}");
  absl::StatusOr<Literal> g2 = Eval(Entry(body), "g2", {*outer});
  ASSERT_TRUE(g2.ok()) << g2.status();
  EXPECT_EQ(g2->ToString(), "() ()");
  // Out-of-range and negative indices; a non-tuple operand; a mismatched result shape.
  EXPECT_EQ(
      Code(body, "g0", {*outer}, [](HloInstruction& i) { i.mutable_attrs().tuple_index = 3; }),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      Code(body, "g0", {*outer}, [](HloInstruction& i) { i.mutable_attrs().tuple_index = -1; }),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      Code(body, "g0", {*outer}, [](HloInstruction& i) { i.mutable_attrs().tuple_index = 1; }),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "g00", {a}), absl::StatusCode::kInvalidArgument);
  // tuple with a wrong operand shape.
  EXPECT_EQ(Code(body, "inner", {b, a}), absl::StatusCode::kInvalidArgument);
}

TEST(ShapeOpsTuple, OptBarrierAndCopyStartDone) {
  const char* body =
      "a = s32[2] parameter(0)\nb = f32[] parameter(1)\n"
      "t = (s32[2], f32[]) tuple(a, b)\n"
      "o = (s32[2], f32[]) opt-barrier(t)\n"
      "cs = (s32[2], s32[2], u32[]) copy-start(a)\n"
      "ROOT cd = s32[2] copy-done(cs)";
  const Literal a = L("s32[2]", "{3, 4}");
  const Literal t = Literal::Tuple({a, L("f32[]", "-1")});
  absl::StatusOr<Literal> o = Eval(Entry(body), "o", {t});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ToString(), "(s32[2], f32[]) ({3, 4}, -1)");
  absl::StatusOr<Literal> cs = Eval(Entry(body), "cs", {a});
  ASSERT_TRUE(cs.ok()) << cs.status();
  EXPECT_EQ(cs->ToString(), "(s32[2], s32[2], u32[]) ({3, 4}, {3, 4}, 0)");
  absl::StatusOr<Literal> cd = Eval(Entry(body), "cd", {*cs});
  ASSERT_TRUE(cd.ok()) << cd.status();
  EXPECT_EQ(cd->ToString(), "s32[2] {3, 4}");
  EXPECT_EQ(Code(body, "o", {a}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(body, "cd", {a}), absl::StatusCode::kInvalidArgument);
}

TEST(ShapeOpsGetDimensionSize, StaticDims) {
  const char* body =
      "p = f32[3,0,7] parameter(0)\n"
      "d0 = s32[] get-dimension-size(p), dimensions={0}\n"
      "d1 = s32[] get-dimension-size(p), dimensions={1}\n"
      "ROOT d2 = s32[] get-dimension-size(p), dimensions={2}";
  const Literal p(S("f32[3,0,7]"));
  EXPECT_EQ(RunOp(body, "d0", {p}), "s32[] 3");
  EXPECT_EQ(RunOp(body, "d1", {p}), "s32[] 0");
  EXPECT_EQ(RunOp(body, "d2", {p}), "s32[] 7");
  // Only the shape matters: an elided operand is fine.
  EXPECT_EQ(RunOp(body, "d2", {Literal::Elided(S("f32[3,0,7]"))}), "s32[] 7");
  EXPECT_EQ(Code(body, "d0", {p}, [](HloInstruction& i) { i.mutable_attrs().dimensions = {3}; }),
            absl::StatusCode::kInvalidArgument);
  // A dynamic dimension's runtime size is not known to the interpreter.
  EXPECT_EQ(Code("p = f32[<=4] parameter(0)\nROOT d = s32[] get-dimension-size(p), "
                 "dimensions={0}",
                 "d", {Literal(S("f32[<=4]"))}),
            absl::StatusCode::kUnimplemented);
}

// ---- every element type moves the same ------------------------------------------------------

struct TypeCase {
  const char* type;
  const char* x;
  const char* y;
};

class ShapeOpsAllTypes : public ::testing::TestWithParam<TypeCase> {};

TEST_P(ShapeOpsAllTypes, MovesElementsUnchanged) {
  const TypeCase& c = GetParam();
  const std::string t = c.type;
  const std::string x = c.x;
  const std::string y = c.y;
  auto lit = [&](const std::string& dims, const std::string& values) {
    return L(absl::StrCat(t, dims), values);
  };
  auto expect = [&](absl::string_view body, absl::string_view name,
                    const std::vector<Literal>& args, const std::string& dims,
                    const std::string& values) {
    absl::StatusOr<Literal> got = Eval(Entry(body), name, args);
    ASSERT_TRUE(got.ok()) << t << " " << name << ": " << got.status();
    const Literal want = lit(dims, values);
    EXPECT_TRUE(*got == want) << t << " " << name << ": got " << got->ToString() << " want "
                              << want.ToString();
  };
  const Literal m = lit("[2,2]", absl::StrCat("{{", x, ", ", y, "}, {", y, ", ", y, "}}"));
  // transpose
  expect(absl::StrCat("p = ", t, "[2,2] parameter(0)\nROOT r = ", t,
                      "[2,2] transpose(p), dimensions={1,0}"),
         "r", {m}, "[2,2]", absl::StrCat("{{", x, ", ", y, "}, {", y, ", ", y, "}}"));
  // reverse
  expect(absl::StrCat("p = ", t, "[2,2] parameter(0)\nROOT r = ", t,
                      "[2,2] reverse(p), dimensions={0}"),
         "r", {m}, "[2,2]", absl::StrCat("{{", y, ", ", y, "}, {", x, ", ", y, "}}"));
  // slice
  expect(absl::StrCat("p = ", t, "[2,2] parameter(0)\nROOT r = ", t,
                      "[1,1] slice(p), slice={[0:1], [0:1]}"),
         "r", {m}, "[1,1]", absl::StrCat("{{", x, "}}"));
  // pad with interior and negative low
  expect(absl::StrCat("p = ", t, "[2,2] parameter(0)\nv = ", t, "[] parameter(1)\nROOT r = ", t,
                      "[2,3] pad(p, v), padding=0_0x-1_1_1"),
         "r", {m, lit("[]", x)}, "[2,3]",
         absl::StrCat("{{", x, ", ", y, ", ", x, "}, {", x, ", ", y, ", ", x, "}}"));
  // broadcast
  expect(
      absl::StrCat("p = ", t, "[] parameter(0)\nROOT r = ", t, "[3] broadcast(p), dimensions={}"),
      "r", {lit("[]", y)}, "[3]", absl::StrCat("{", y, ", ", y, ", ", y, "}"));
  // concatenate
  expect(
      absl::StrCat("p = ", t, "[2,2] parameter(0)\nROOT r = ", t,
                   "[2,4] concatenate(p, p), dimensions={1}"),
      "r", {m, m}, "[2,4]",
      absl::StrCat("{{", x, ", ", y, ", ", x, ", ", y, "}, {", y, ", ", y, ", ", y, ", ", y, "}}"));
  // dynamic-slice and dynamic-update-slice
  expect(absl::StrCat("p = ", t, "[2,2] parameter(0)\ni = s32[] parameter(1)\nROOT r = ", t,
                      "[1,2] dynamic-slice(p, i, i), dynamic_slice_sizes={1,2}"),
         "r", {m, S32Scalar(5), S32Scalar(5)}, "[1,2]", absl::StrCat("{{", y, ", ", y, "}}"));
  expect(absl::StrCat("p = ", t, "[2,2] parameter(0)\nu = ", t,
                      "[1,1] parameter(1)\ni = u32[] parameter(2)\nROOT r = ", t,
                      "[2,2] dynamic-update-slice(p, u, i, i)"),
         "r",
         {m, lit("[1,1]", absl::StrCat("{{", x, "}}")), U32Scalar(4000000000u),
          U32Scalar(4000000000u)},
         "[2,2]", absl::StrCat("{{", x, ", ", y, "}, {", y, ", ", x, "}}"));
  // reshape
  expect(absl::StrCat("p = ", t, "[2,2] parameter(0)\nROOT r = ", t, "[4] reshape(p)"), "r", {m},
         "[4]", absl::StrCat("{", x, ", ", y, ", ", y, ", ", y, "}"));
}

INSTANTIATE_TEST_SUITE_P(
    Types, ShapeOpsAllTypes,
    ::testing::Values(TypeCase{"pred", "true", "false"}, TypeCase{"s8", "-3", "7"},
                      TypeCase{"s16", "-300", "7"}, TypeCase{"s32", "-70000", "7"},
                      TypeCase{"s64", "-9000000000", "7"}, TypeCase{"u8", "200", "7"},
                      TypeCase{"u16", "60000", "7"}, TypeCase{"u32", "4000000000", "7"},
                      TypeCase{"u64", "18000000000000000000", "7"}, TypeCase{"f16", "-1.5", "0.25"},
                      TypeCase{"bf16", "-1.5", "0.25"}, TypeCase{"f32", "-1.5", "0.1"},
                      TypeCase{"f64", "-1.5", "0.1"}, TypeCase{"s4", "-3", "5"},
                      TypeCase{"u4", "13", "2"}, TypeCase{"f8e5m2", "-1.5", "0.25"},
                      TypeCase{"f8e4m3fn", "-1.5", "0.25"}, TypeCase{"c64", "(1, -2)", "(0.5, 3)"},
                      TypeCase{"c128", "(1, -2)", "(0.5, 3)"}),
    [](const ::testing::TestParamInfo<TypeCase>& info) { return std::string(info.param.type); });

// ---- properties ----------------------------------------------------------------------------

template <typename T>
T Uniform(T lo, T hi) {  // [lo, hi)
  return *rc::gen::inRange<T>(lo, hi);
}

PrimitiveType GenType() {
  return *rc::gen::element(PrimitiveType::kS32, PrimitiveType::kU8, PrimitiveType::kPred,
                           PrimitiveType::kBF16, PrimitiveType::kF64, PrimitiveType::kC64,
                           PrimitiveType::kS4);
}

std::vector<int64_t> GenDims(int64_t min_rank, int64_t max_rank, int64_t max_dim) {
  const int64_t rank = Uniform<int64_t>(min_rank, max_rank + 1);
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < rank; ++i) dims.push_back(Uniform<int64_t>(0, max_dim + 1));
  return dims;
}

// Random bits, wrapped to the type (so pred is 0/1 and s4 holds 4 bits).
Literal GenLiteral(PrimitiveType type, const std::vector<int64_t>& dims) {
  Literal l(Shape::Array(type, dims));
  for (int64_t i = 0; i < l.element_count(); ++i) {
    const uint64_t bits = *rc::gen::arbitrary<uint64_t>();
    if (type == PrimitiveType::kC64) {
      std::memcpy(l.raw_data() + i * 8, &bits, 8);
    } else {
      l.SetBits(i, WrapToType(type, bits));
    }
  }
  return l;
}

std::string ShapeText(PrimitiveType type, const std::vector<int64_t>& dims) {
  return Shape::Array(type, dims).ToString(false);
}

RC_GTEST_PROP(ShapeOpsProperties, TransposeThenInverseIsIdentity, ()) {
  const PrimitiveType type = GenType();
  const std::vector<int64_t> dims = GenDims(0, 4, 5);
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> perm(rank);
  for (int64_t i = 0; i < rank; ++i) perm[i] = i;
  for (int64_t i = rank - 1; i > 0; --i) std::swap(perm[i], perm[Uniform<int64_t>(0, i + 1)]);
  std::vector<int64_t> inverse(rank);
  std::vector<int64_t> mid_dims(rank);
  for (int64_t i = 0; i < rank; ++i) {
    inverse[perm[i]] = i;
    mid_dims[i] = dims[perm[i]];
  }
  const Literal x = GenLiteral(type, dims);
  const std::string hlo = Entry(absl::StrCat(
      "p = ", ShapeText(type, dims), " parameter(0)\nt = ", ShapeText(type, mid_dims),
      " transpose(p), dimensions={", absl::StrJoin(perm, ","), "}\nROOT u = ",
      ShapeText(type, dims), " transpose(t), dimensions={", absl::StrJoin(inverse, ","), "}"));
  absl::StatusOr<Literal> t = Eval(hlo, "t", {x});
  RC_ASSERT(t.ok());
  // The middle value agrees with the definition at a random index.
  if (x.element_count() > 0) {
    std::vector<int64_t> idx(rank);
    for (int64_t i = 0; i < rank; ++i) idx[i] = Uniform<int64_t>(0, mid_dims[i]);
    int64_t t_linear = 0;
    for (int64_t i = 0; i < rank; ++i) t_linear = t_linear * mid_dims[i] + idx[i];
    std::vector<int64_t> src(rank);
    for (int64_t i = 0; i < rank; ++i) src[perm[i]] = idx[i];
    int64_t x_linear = 0;
    for (int64_t i = 0; i < rank; ++i) x_linear = x_linear * dims[i] + src[i];
    RC_ASSERT(std::memcmp(t->raw_data() + t_linear * t->element_byte_width(),
                          x.raw_data() + x_linear * x.element_byte_width(),
                          static_cast<size_t>(x.element_byte_width())) == 0);
  }
  absl::StatusOr<Literal> u = Eval(hlo, "u", {*t});
  RC_ASSERT(u.ok());
  RC_ASSERT(*u == x);
}

RC_GTEST_PROP(ShapeOpsProperties, SliceOfConcatenateRecoversEachPiece, ()) {
  const PrimitiveType type = GenType();
  const std::vector<int64_t> base = GenDims(1, 3, 4);
  const int64_t rank = static_cast<int64_t>(base.size());
  const int64_t dim = Uniform<int64_t>(0, rank);
  const int64_t count = Uniform<int64_t>(1, 5);
  std::vector<Literal> pieces;
  std::vector<std::string> names;
  std::string body;
  int64_t total = 0;
  for (int64_t k = 0; k < count; ++k) {
    std::vector<int64_t> dims = base;
    dims[dim] = Uniform<int64_t>(0, 5);
    total += dims[dim];
    pieces.push_back(GenLiteral(type, dims));
    names.push_back(absl::StrCat("p", k));
    absl::StrAppend(&body, "p", k, " = ", ShapeText(type, dims), " parameter(", k, ")\n");
  }
  std::vector<int64_t> out_dims = base;
  out_dims[dim] = total;
  absl::StrAppend(&body, "c = ", ShapeText(type, out_dims), " concatenate(",
                  absl::StrJoin(names, ", "), "), dimensions={", dim, "}\n");
  int64_t offset = 0;
  for (int64_t k = 0; k < count; ++k) {
    std::vector<std::string> ranges;
    for (int64_t d = 0; d < rank; ++d) {
      ranges.push_back(
          d == dim ? absl::StrCat("[", offset, ":", offset + pieces[k].shape().dimensions(d), "]")
                   : absl::StrCat("[0:", base[d], "]"));
    }
    absl::StrAppend(&body, k + 1 == count ? "ROOT " : "", "s", k, " = ",
                    pieces[k].shape().ToString(false), " slice(c), slice={",
                    absl::StrJoin(ranges, ", "), "}\n");
    offset += pieces[k].shape().dimensions(dim);
  }
  const std::string hlo = Entry(body);
  absl::StatusOr<Literal> c = Eval(hlo, "c", pieces);
  RC_ASSERT(c.ok());
  for (int64_t k = 0; k < count; ++k) {
    absl::StatusOr<Literal> s = Eval(hlo, absl::StrCat("s", k), {*c});
    RC_ASSERT(s.ok());
    RC_ASSERT(*s == pieces[k]);
  }
}

// Naive pad: for every output index, find whether some operand index lands on it.
Literal NaivePad(const Literal& x, const Literal& value, const std::vector<PadDim>& padding,
                 const std::vector<int64_t>& out_dims) {
  Literal out(Shape::Array(x.shape().element_type(), out_dims));
  const int64_t rank = static_cast<int64_t>(out_dims.size());
  const int64_t width = x.element_byte_width();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t linear = 0; linear < out.element_count(); ++linear) {
    int64_t rest = linear;
    for (int64_t d = rank - 1; d >= 0; --d) {
      idx[d] = rest % out_dims[d];
      rest /= out_dims[d];
    }
    bool from_operand = true;
    int64_t src = 0;
    for (int64_t d = 0; d < rank && from_operand; ++d) {
      const int64_t rel = idx[d] - padding[d].low;
      const int64_t step = padding[d].interior + 1;
      if (rel < 0 || rel % step != 0 || rel / step >= x.shape().dimensions(d)) {
        from_operand = false;
      } else {
        src = src * x.shape().dimensions(d) + rel / step;
      }
    }
    std::memcpy(out.raw_data() + linear * width,
                from_operand ? x.raw_data() + src * width : value.raw_data(),
                static_cast<size_t>(width));
  }
  return out;
}

RC_GTEST_PROP(ShapeOpsProperties, PadMatchesNaiveReference, ()) {
  const PrimitiveType type = GenType();
  const std::vector<int64_t> dims = GenDims(1, 3, 4);
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<PadDim> padding(rank);
  std::vector<int64_t> out_dims(rank);
  std::vector<std::string> texts;
  for (int64_t d = 0; d < rank; ++d) {
    PadDim& p = padding[d];
    p.interior = Uniform<int64_t>(0, 3);
    const int64_t core = dims[d] + std::max<int64_t>(dims[d] - 1, 0) * p.interior;
    p.low = Uniform<int64_t>(-core - 1, 4);
    // Keep the result size >= 0.
    p.high = Uniform<int64_t>(std::max<int64_t>(-core - p.low, -core - 1), 4);
    out_dims[d] = p.low + p.high + core;
    RC_PRE(out_dims[d] >= 0);
    texts.push_back(absl::StrCat(p.low, "_", p.high, "_", p.interior));
  }
  const Literal x = GenLiteral(type, dims);
  const Literal v = GenLiteral(type, {});
  const std::string hlo =
      Entry(absl::StrCat("p = ", ShapeText(type, dims), " parameter(0)\nv = ", ShapeText(type, {}),
                         " parameter(1)\nROOT r = ", ShapeText(type, out_dims),
                         " pad(p, v), padding=", absl::StrJoin(texts, "x")));
  absl::StatusOr<Literal> r = Eval(hlo, "r", {x, v});
  RC_ASSERT(r.ok());
  RC_ASSERT(*r == NaivePad(x, v, padding, out_dims));
}

RC_GTEST_PROP(ShapeOpsProperties, DynamicSliceAndUpdateMatchNaiveClamp, ()) {
  const PrimitiveType type = GenType();
  const std::vector<int64_t> dims = GenDims(1, 3, 5);
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> sizes(rank);
  std::vector<int64_t> starts(rank);
  std::vector<int64_t> clamped(rank);
  const bool unsigned_index = *rc::gen::arbitrary<bool>();
  std::vector<Literal> indices;
  for (int64_t d = 0; d < rank; ++d) {
    sizes[d] = Uniform<int64_t>(0, dims[d] + 1);
    if (unsigned_index) {
      const uint32_t s =
          *rc::gen::oneOf(rc::gen::inRange<uint32_t>(0, 8), rc::gen::arbitrary<uint32_t>());
      indices.push_back(U32Scalar(s));
      starts[d] = static_cast<int64_t>(s);
    } else {
      const int32_t s =
          *rc::gen::oneOf(rc::gen::inRange<int32_t>(-8, 8), rc::gen::arbitrary<int32_t>());
      indices.push_back(S32Scalar(s));
      starts[d] = s;
    }
    clamped[d] = std::min(std::max<int64_t>(starts[d], 0), dims[d] - sizes[d]);
  }
  const Literal x = GenLiteral(type, dims);
  const Literal update = GenLiteral(type, sizes);
  std::string body = absl::StrCat("p = ", ShapeText(type, dims),
                                  " parameter(0)\nu = ", ShapeText(type, sizes), " parameter(1)\n");
  std::vector<std::string> names;
  for (int64_t d = 0; d < rank; ++d) {
    names.push_back(absl::StrCat("i", d));
    absl::StrAppend(&body, "i", d, " = ", unsigned_index ? "u32" : "s32", "[] parameter(", d + 2,
                    ")\n");
  }
  absl::StrAppend(&body, "ds = ", ShapeText(type, sizes), " dynamic-slice(p, ",
                  absl::StrJoin(names, ", "), "), dynamic_slice_sizes={", absl::StrJoin(sizes, ","),
                  "}\n");
  absl::StrAppend(&body, "ROOT dus = ", ShapeText(type, dims), " dynamic-update-slice(p, u, ",
                  absl::StrJoin(names, ", "), ")\n");
  const std::string hlo = Entry(body);
  std::vector<Literal> ds_args = {x};
  for (const Literal& i : indices) ds_args.push_back(i);
  std::vector<Literal> dus_args = {x, update};
  for (const Literal& i : indices) dus_args.push_back(i);
  // Operand count of dynamic-slice: p and the indices (u is not an operand).
  absl::StatusOr<Literal> ds = Eval(hlo, "ds", ds_args);
  RC_ASSERT(ds.ok());
  absl::StatusOr<Literal> dus = Eval(hlo, "dus", dus_args);
  RC_ASSERT(dus.ok());
  // Naive references, element by element.
  const int64_t width = x.element_byte_width();
  Literal want_ds(Shape::Array(type, sizes));
  Literal want_dus = x;
  std::vector<int64_t> idx(rank);
  for (int64_t linear = 0; linear < want_ds.element_count(); ++linear) {
    int64_t rest = linear;
    for (int64_t d = rank - 1; d >= 0; --d) {
      idx[d] = rest % sizes[d];
      rest /= sizes[d];
    }
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) src = src * dims[d] + clamped[d] + idx[d];
    std::memcpy(want_ds.raw_data() + linear * width, x.raw_data() + src * width,
                static_cast<size_t>(width));
    std::memcpy(want_dus.raw_data() + src * width, update.raw_data() + linear * width,
                static_cast<size_t>(width));
  }
  RC_ASSERT(*ds == want_ds);
  RC_ASSERT(*dus == want_dus);
}

// Robustness: random (mostly malformed) attributes and result shapes never crash a handler;
// whatever is accepted has the instruction's shape.
int64_t GenWildInt() {
  return *rc::gen::weightedOneOf<int64_t>(
      {{6, rc::gen::inRange<int64_t>(-2, 7)},
       {1, rc::gen::element<int64_t>(INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1,
                                     int64_t{1} << 40, -(int64_t{1} << 40))}});
}

std::vector<int64_t> GenWildList() {
  const int64_t n = Uniform<int64_t>(0, 4);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(GenWildInt());
  return out;
}

RC_GTEST_PROP(ShapeOpsProperties, MalformedAttributesNeverCrash, ()) {
  static const std::vector<std::string> kBodies = {
      "p = s32[2,3] parameter(0)\nROOT r = s32[3,2,2] broadcast(p), dimensions={2,1}",
      "p = s32[2,3] parameter(0)\nROOT r = s32[3,2] transpose(p), dimensions={1,0}",
      "p = s32[2,3] parameter(0)\nROOT r = s32[2,3] reverse(p), dimensions={1}",
      "p = s32[2,3] parameter(0)\nROOT r = s32[1,2] slice(p), slice={[0:1], [0:3:2]}",
      "p = s32[2,3] parameter(0)\nROOT r = s32[6] reshape(p)",
      "p = s32[2,3] parameter(0)\nROOT r = s32[6] bitcast(p)",
      "p = s32[2,3] parameter(0)\nv = s32[] parameter(1)\n"
      "ROOT r = s32[4,3] pad(p, v), padding=1_1x-1_-1_1",
      "p = s32[2,3] parameter(0)\ni = s32[] parameter(1)\nj = u32[] parameter(2)\n"
      "ROOT r = s32[1,2] dynamic-slice(p, i, j), dynamic_slice_sizes={1,2}",
      "p = s32[2,3] parameter(0)\nu = s32[1,2] parameter(1)\ni = s32[] parameter(2)\n"
      "j = u32[] parameter(3)\nROOT r = s32[2,3] dynamic-update-slice(p, u, i, j)",
      "p = s32[2,3] parameter(0)\nq = s32[2,1] parameter(1)\n"
      "ROOT r = s32[2,4] concatenate(p, q), dimensions={1}",
      "ROOT r = s32[2,3] iota(), iota_dimension=1",
      "p = s32[2,3] parameter(0)\nq = s32[] parameter(1)\n"
      "ROOT r = (s32[2,3], s32[]) tuple(p, q)",
      "p = (s32[2,3], s32[]) parameter(0)\nROOT r = s32[] get-tuple-element(p), index=1",
      "p = s32[2,3] parameter(0)\nROOT r = s32[] get-dimension-size(p), dimensions={1}",
  };
  const std::string body = *rc::gen::elementOf(kBodies);
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(Entry(body));
  RC_ASSERT(parsed.ok());
  HloInstruction* r = parsed->module->entry()->FindInstruction("r");
  RC_ASSERT(r != nullptr);
  // Operand values of the declared shapes (sometimes of a wrong shape).
  std::vector<Literal> args;
  for (const HloInstruction* operand : r->operands()) {
    const Shape& shape = operand->shape();
    if (shape.IsArray() &&
        *rc::gen::weightedOneOf<bool>({{9, rc::gen::just(false)}, {1, rc::gen::just(true)}})) {
      args.push_back(GenLiteral(shape.element_type(), GenDims(0, 3, 3)));
    } else if (shape.IsArray()) {
      args.push_back(GenLiteral(shape.element_type(), shape.dimensions()));
    } else {
      args.emplace_back(shape);
    }
  }
  HloAttributes& a = r->mutable_attrs();
  switch (Uniform<int>(0, 8)) {
    case 0:
      a.dimensions = GenWildList();
      break;
    case 1: {
      std::vector<SliceDim> slice;
      for (int64_t i = Uniform<int64_t>(0, 4); i > 0; --i) {
        slice.push_back({GenWildInt(), GenWildInt(), GenWildInt()});
      }
      a.slice = slice;
      break;
    }
    case 2: {
      std::vector<PadDim> padding;
      for (int64_t i = Uniform<int64_t>(0, 4); i > 0; --i) {
        padding.push_back({GenWildInt(), GenWildInt(), GenWildInt()});
      }
      a.padding = padding;
      break;
    }
    case 3:
      a.dynamic_slice_sizes = GenWildList();
      break;
    case 4:
      a.iota_dimension = GenWildInt();
      break;
    case 5:
      a.tuple_index = GenWildInt();
      break;
    case 6:
      r->set_shape(Shape::Array(*rc::gen::element(PrimitiveType::kS32, PrimitiveType::kU32),
                                GenDims(0, 3, 6)));
      break;
    default:
      break;  // unchanged
  }
  OpRegistry registry;
  RegisterShapeOps(registry);
  std::vector<const Literal*> operands;
  for (const Literal& arg : args) operands.push_back(&arg);
  absl::StatusOr<Literal> result = registry.Find(r->opcode())(*r, operands, EvalEnv());
  if (result.ok()) {
    RC_ASSERT(result->shape().Compatible(r->shape()));
  } else {
    RC_ASSERT(result.status().code() == absl::StatusCode::kInvalidArgument ||
              result.status().code() == absl::StatusCode::kUnimplemented);
  }
}

}  // namespace
}  // namespace spmdcheck::oracle
