// Golden tests for the oracle's gather and scatter (oracle/indexing.cc): expected values are
// worked out by hand in the comments, or computed by the naive per-element reference written
// below straight from the operation semantics (spec §4.9: gather clamps, scatter drops whole
// out-of-bounds windows, combiner called as to_apply(current, update)).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_parser.h"
#include "ir/literal.h"
#include "ir/shape.h"
#include "oracle/op_registry.h"
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

absl::StatusOr<Literal> RunOp(const Program& p, const std::vector<Literal>& operands) {
  OpRegistry registry;
  RegisterIndexingOps(registry);
  if (p.instr == nullptr) return absl::InternalError("no instruction");
  OpHandler handler = registry.Find(p.instr->opcode());
  if (handler == nullptr) return absl::InternalError("no handler");
  std::vector<const Literal*> ptrs;
  for (const Literal& l : operands) ptrs.push_back(&l);
  return handler(*p.instr, ptrs, TestEnv());
}

std::string MustRun(const Program& p, const std::vector<Literal>& operands) {
  absl::StatusOr<Literal> result = RunOp(p, operands);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->ToString() : result.status().ToString();
}

constexpr char kAddS32[] = R"(
add {
  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  ROOT r = s32[] add(p0, p1)
}
)";

// ---- Gather -----------------------------------------------------------------------------------

TEST(Gather, RowsWithImplicitIndexVectorDim) {
  // indices s32[2] with index_vector_dim=1 == rank: each index is a 1-vector.
  Program p = Parse(R"(HloModule m
ENTRY e {
  op = f32[3,3] parameter(0)
  idx = s32[2] parameter(1)
  ROOT g = f32[2,3] gather(op, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
})",
                    "g");
  EXPECT_EQ(MustRun(p, {Lit("f32[3,3]", "{{1,2,3},{4,5,6},{7,8,9}}"), Lit("s32[2]", "{2,0}")}),
            "f32[2,3] {{7, 8, 9}, {1, 2, 3}}");
}

TEST(Gather, ColumnsAsOffsetDimZero) {
  // Gather columns: start_index_map={1}, offset dim 0 holds the rows; output [3, 2].
  Program p = Parse(R"(HloModule m
ENTRY e {
  op = s32[3,3] parameter(0)
  idx = s32[2] parameter(1)
  ROOT g = s32[3,2] gather(op, idx), offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={3,1}
})",
                    "g");
  EXPECT_EQ(MustRun(p, {Lit("s32[3,3]", "{{1,2,3},{4,5,6},{7,8,9}}"), Lit("s32[2]", "{0,2}")}),
            "s32[3,2] {{1, 3}, {4, 6}, {7, 9}}");
}

TEST(Gather, OutOfRangeAndNegativeStartsAreClamped) {
  // Window of 2 over s32[5]: starts clamp into [0, 3].
  Program p = Parse(R"(HloModule m
ENTRY e {
  op = s32[5] parameter(0)
  idx = s32[4,1] parameter(1)
  ROOT g = s32[4,2] gather(op, idx), offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={2}
})",
                    "g");
  EXPECT_EQ(
      MustRun(p, {Lit("s32[5]", "{10,11,12,13,14}"), Lit("s32[4,1]", "{{-3},{4},{100},{1}}")}),
      "s32[4,2] {{10, 11}, {13, 14}, {13, 14}, {11, 12}}");
}

TEST(Gather, UnsignedIndicesAboveTwoToThe31AreLarge) {
  // u32 2^31 and 2^32-1 are huge positive starts (not negative): clamped to the last row.
  Program p = Parse(R"(HloModule m
ENTRY e {
  op = s32[4] parameter(0)
  idx = u32[3] parameter(1)
  ROOT g = s32[3] gather(op, idx), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}
})",
                    "g");
  EXPECT_EQ(MustRun(p, {Lit("s32[4]", "{0,1,2,3}"), Lit("u32[3]", "{2147483648,4294967295,1}")}),
            "s32[3] {3, 3, 1}");
  // u64 above INT64_MAX as well.
  Program q = Parse(R"(HloModule m
ENTRY e {
  op = s32[4] parameter(0)
  idx = u64[2] parameter(1)
  ROOT g = s32[2] gather(op, idx), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}
})",
                    "g");
  EXPECT_EQ(MustRun(q, {Lit("s32[4]", "{0,1,2,3}"), Lit("u64[2]", "{18446744073709551615,2}")}),
            "s32[2] {3, 2}");
}

TEST(Gather, TwoDimStartsIndexVectorDimFirstAndClamp) {
  // indices s64[2,3]: index_vector_dim=0, so the 3 start vectors are the columns
  // (row, col) = (0,0), (2,1), (1,5). Window 2x2 over s32[3,4]; starts clamp to
  // row in [0,1], col in [0,2]: (0,0), (1,1), (1,2).
  Program p = Parse(R"(HloModule m
ENTRY e {
  op = s32[3,4] parameter(0)
  idx = s64[2,3] parameter(1)
  ROOT g = s32[3,2,2] gather(op, idx), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=0, slice_sizes={2,2}
})",
                    "g");
  EXPECT_EQ(MustRun(p, {Lit("s32[3,4]", "{{0,1,2,3},{10,11,12,13},{20,21,22,23}}"),
                        Lit("s64[2,3]", "{{0,2,1},{0,1,5}}")}),
            "s32[3,2,2] {{{0, 1}, {10, 11}}, {{11, 12}, {21, 22}}, {{12, 13}, {22, 23}}}");
}

TEST(Gather, StartIndexMapReordersDims) {
  // start_index_map={1,0}: the vector (a, b) is (col, row). Collapse both dims.
  Program p = Parse(R"(HloModule m
ENTRY e {
  op = s32[2,3] parameter(0)
  idx = s32[2,2] parameter(1)
  ROOT g = s32[2] gather(op, idx), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={1,0}, index_vector_dim=1, slice_sizes={1,1}
})",
                    "g");
  EXPECT_EQ(MustRun(p, {Lit("s32[2,3]", "{{0,1,2},{10,11,12}}"), Lit("s32[2,2]", "{{2,0},{0,1}}")}),
            "s32[2] {2, 10}");
}

TEST(Gather, BatchingDims) {
  // out[b, :] = op[b, idx[b], :] with operand_batching_dims={0}.
  Program p = Parse(R"(HloModule m
ENTRY e {
  op = s32[2,3,2] parameter(0)
  idx = s32[2] parameter(1)
  ROOT g = s32[2,2] gather(op, idx), offset_dims={1}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={1,1,2}, operand_batching_dims={0}, start_indices_batching_dims={0}
})",
                    "g");
  EXPECT_EQ(MustRun(p, {Lit("s32[2,3,2]", "{{{0,1},{2,3},{4,5}},{{10,11},{12,13},{14,15}}}"),
                        Lit("s32[2]", "{2,7}")}),
            // Batch 1's index 7 clamps to 2.
            "s32[2,2] {{4, 5}, {14, 15}}");
}

TEST(Gather, BatchingDimAfterIndexVectorDim) {
  // indices s32[1,2]: index_vector_dim=0, batching dim 1 of the indices is batch position 0.
  // out[b] = op[idx[0][b], b] (operand batching dim 1, collapsed dim 0).
  Program p = Parse(R"(HloModule m
ENTRY e {
  op = s32[3,2] parameter(0)
  idx = s32[1,2] parameter(1)
  ROOT g = s32[2] gather(op, idx), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=0, slice_sizes={1,1}, operand_batching_dims={1}, start_indices_batching_dims={1}
})",
                    "g");
  EXPECT_EQ(MustRun(p, {Lit("s32[3,2]", "{{0,1},{10,11},{20,21}}"), Lit("s32[1,2]", "{{2,1}}")}),
            "s32[2] {20, 11}");
}

TEST(Gather, NarrowAndPredTypesCopyExactly) {
  Program p = Parse(R"(HloModule m
ENTRY e {
  op = bf16[3] parameter(0)
  idx = s8[2] parameter(1)
  ROOT g = bf16[2] gather(op, idx), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}
})",
                    "g");
  EXPECT_EQ(MustRun(p, {Lit("bf16[3]", "{1.5,-2,nan}"), Lit("s8[2]", "{2,-1}")}),
            "bf16[2] {nan, 1.5}");
  Program q = Parse(R"(HloModule m
ENTRY e {
  op = pred[2,2] parameter(0)
  idx = s32[1] parameter(1)
  ROOT g = pred[1,2] gather(op, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}
})",
                    "g");
  EXPECT_EQ(MustRun(q, {Lit("pred[2,2]", "{{true,false},{false,true}}"), Lit("s32[1]", "{1}")}),
            "pred[1,2] {{false, true}}");
}

TEST(Gather, MalformedAttributesAreErrorsNotCrashes) {
  const std::vector<std::string> bad = {
      // start_index_map out of range.
      "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={5}, index_vector_dim=1, "
      "slice_sizes={1,3}",
      // index_vector_dim out of range.
      "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=7, "
      "slice_sizes={1,3}",
      // slice_sizes wrong length.
      "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
      "slice_sizes={1}",
      // slice size larger than the operand.
      "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
      "slice_sizes={1,4}",
      // offset_dims beyond the output rank.
      "offset_dims={5}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
      "slice_sizes={1,3}",
      // batching dims of unequal count.
      "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
      "slice_sizes={1,3}, operand_batching_dims={1}",
      // result shape not what the attributes give (3 wide, slice 2).
      "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
      "slice_sizes={1,2}",
  };
  for (const std::string& attrs : bad) {
    Program p = Parse(absl::StrCat(R"(HloModule m
ENTRY e {
  op = f32[3,3] parameter(0)
  idx = s32[2] parameter(1)
  ROOT g = f32[2,3] gather(op, idx), )",
                                   attrs, "\n}"),
                      "g");
    absl::StatusOr<Literal> r =
        RunOp(p, {Lit("f32[3,3]", "{{1,2,3},{4,5,6},{7,8,9}}"), Lit("s32[2]", "{2,0}")});
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << attrs << " " << r.status();
  }
  // Float indices.
  Program p = Parse(R"(HloModule m
ENTRY e {
  op = f32[3] parameter(0)
  idx = f32[1] parameter(1)
  ROOT g = f32[1] gather(op, idx), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}
})",
                    "g");
  EXPECT_EQ(RunOp(p, {Lit("f32[3]", "{1,2,3}"), Lit("f32[1]", "{0}")}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Wrong operand count.
  EXPECT_EQ(RunOp(p, {Lit("f32[3]", "{1,2,3}")}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Gather, FourThousandRowsIsFast) {
  Program p = Parse(R"(HloModule m
ENTRY e {
  op = f32[32768,128] parameter(0)
  idx = s32[4096,1] parameter(1)
  ROOT g = f32[4096,128] gather(op, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,128}
})",
                    "g");
  std::vector<Literal> operands;
  operands.emplace_back(Shape::Array(PrimitiveType::kF32, {32768, 128}));
  operands.emplace_back(Shape::Array(PrimitiveType::kS32, {4096, 1}));
  absl::Span<float> data = operands[0].data<float>();
  for (int64_t i = 0; i < static_cast<int64_t>(data.size()); ++i) data[i] = static_cast<float>(i);
  absl::Span<int32_t> idx = operands[1].data<int32_t>();
  for (int64_t i = 0; i < 4096; ++i) idx[i] = static_cast<int32_t>((i * 7919) % 32768);
  double best = 1e9;
  absl::StatusOr<Literal> result;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    result = RunOp(p, operands);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  ASSERT_TRUE(result.ok()) << result.status();
  for (int64_t i : {0, 1, 4095}) {
    const int64_t row = (i * 7919) % 32768;
    for (int64_t c : {0, 127}) {
      EXPECT_EQ(result->data<float>()[i * 128 + c], static_cast<float>(row * 128 + c));
    }
  }
  // About a millisecond on an idle core; generous bound for a shared machine.
  EXPECT_LT(best, 50.0) << "gather of 4096 rows took " << best << " ms";
  RecordProperty("gather_4096_rows_ms", std::to_string(best));
  std::printf("gather of 4096 rows from f32[32768,128]: %.3f ms\n", best);
}

// ---- Naive references ---------------------------------------------------------------------------

std::vector<int64_t> Unflatten(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size());
  for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
    index[i] = flat % dims[i];
    flat /= dims[i];
  }
  return index;
}

int64_t Flatten(const std::vector<int64_t>& index, const std::vector<int64_t>& dims) {
  int64_t flat = 0;
  for (size_t i = 0; i < dims.size(); ++i) flat = flat * dims[i] + index[i];
  return flat;
}

// Gather one output element at a time, following the docs' index arithmetic plus the clamp.
std::vector<int64_t> NaiveGather(const std::vector<int64_t>& op,
                                 const std::vector<int64_t>& op_dims,
                                 const std::vector<int64_t>& idx,
                                 const std::vector<int64_t>& idx_dims,
                                 const GatherDimensionNumbers& dn,
                                 const std::vector<int64_t>& slice_sizes,
                                 const std::vector<int64_t>& out_dims) {
  const int64_t out_count = std::max<int64_t>(1, [&] {
    int64_t c = 1;
    for (int64_t d : out_dims) c *= d;
    return c;
  }());
  std::vector<int64_t> out;
  auto in = [](const std::vector<int64_t>& v, int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  for (int64_t flat = 0; flat < out_count; ++flat) {
    const std::vector<int64_t> o = Unflatten(flat, out_dims);
    std::vector<int64_t> batch;
    for (size_t d = 0; d < o.size(); ++d) {
      if (!in(dn.offset_dims, static_cast<int64_t>(d))) batch.push_back(o[d]);
    }
    // Start indices vector.
    std::vector<int64_t> full(op_dims.size(), 0);
    for (size_t k = 0; k < dn.start_index_map.size(); ++k) {
      std::vector<int64_t> ii;
      size_t next = 0;
      for (size_t d = 0; d < std::max<size_t>(idx_dims.size(), dn.index_vector_dim + 1); ++d) {
        if (static_cast<int64_t>(d) == dn.index_vector_dim) {
          if (d < idx_dims.size()) ii.push_back(static_cast<int64_t>(k));
        } else {
          ii.push_back(batch[next++]);
        }
      }
      full[dn.start_index_map[k]] = idx[Flatten(ii, idx_dims)];
    }
    for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i) {
      int64_t pos = dn.start_indices_batching_dims[i];
      if (pos > dn.index_vector_dim) --pos;
      full[dn.operand_batching_dims[i]] = batch[pos];
    }
    std::vector<int64_t> operand_index(op_dims.size());
    size_t next_offset = 0;
    for (size_t d = 0; d < op_dims.size(); ++d) {
      const int64_t start = std::min(std::max<int64_t>(full[d], 0), op_dims[d] - slice_sizes[d]);
      int64_t offset = 0;
      if (!in(dn.collapsed_slice_dims, d) && !in(dn.operand_batching_dims, d)) {
        offset = o[dn.offset_dims[next_offset++]];
      }
      operand_index[d] = (in(dn.operand_batching_dims, d) ? full[d] : start) + offset;
    }
    out.push_back(op[Flatten(operand_index, op_dims)]);
  }
  return out;
}

std::vector<int64_t> Ints(const Literal& l) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < l.element_count(); ++i) v.push_back(l.GetInt64(i));
  return v;
}

Literal S32Literal(const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
  Literal l(Shape::Array(PrimitiveType::kS32, dims));
  for (size_t i = 0; i < values.size(); ++i) l.SetInt64(static_cast<int64_t>(i), values[i]);
  return l;
}

// Gather of a random rank-3 operand by random (often out-of-range) 2-vectors against the naive
// reference, with the index vector dim and the start_index_map order varying.
RC_GTEST_PROP(GatherProperties, MatchesNaiveReference, ()) {
  const std::vector<int64_t> op_dims = {*rc::gen::inRange<int64_t>(1, 5),
                                        *rc::gen::inRange<int64_t>(1, 5),
                                        *rc::gen::inRange<int64_t>(1, 5)};
  std::vector<int64_t> slice_sizes;
  for (int64_t d : op_dims) slice_sizes.push_back(*rc::gen::inRange<int64_t>(1, d + 1));
  const int64_t collapsed = *rc::gen::inRange<int64_t>(0, 3);  // which dim collapses
  slice_sizes[collapsed] = 1;
  const bool swap_map = *rc::gen::arbitrary<bool>();
  const bool ivd_first = *rc::gen::arbitrary<bool>();
  const int64_t batch = *rc::gen::inRange<int64_t>(1, 4);
  std::vector<int64_t> start_map = {collapsed, (collapsed + 1) % 3};
  if (swap_map) std::swap(start_map[0], start_map[1]);
  const std::vector<int64_t> idx_dims =
      ivd_first ? std::vector<int64_t>{2, batch} : std::vector<int64_t>{batch, 2};
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < 2 * batch; ++i) idx.push_back(*rc::gen::inRange<int64_t>(-3, 8));
  std::vector<int64_t> op;
  for (int64_t i = 0; i < op_dims[0] * op_dims[1] * op_dims[2]; ++i) op.push_back(i * 3 + 1);

  GatherDimensionNumbers dn;
  dn.collapsed_slice_dims = {collapsed};
  dn.start_index_map = start_map;
  dn.index_vector_dim = ivd_first ? 0 : 1;
  const bool batch_last = *rc::gen::arbitrary<bool>();
  // Output: batch dim first or last, two offset dims.
  dn.offset_dims = batch_last ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1, 2};
  std::vector<int64_t> out_dims;
  std::vector<int64_t> window;
  for (int64_t d = 0; d < 3; ++d) {
    if (d != collapsed) window.push_back(slice_sizes[d]);
  }
  out_dims = batch_last ? std::vector<int64_t>{window[0], window[1], batch}
                        : std::vector<int64_t>{batch, window[0], window[1]};

  const std::string text =
      absl::StrCat("HloModule m\nENTRY e {\n  op = s32[", absl::StrJoin(op_dims, ","),
                   "] parameter(0)\n  idx = s32[", absl::StrJoin(idx_dims, ","),
                   "] parameter(1)\n  ROOT g = s32[", absl::StrJoin(out_dims, ","),
                   "] gather(op, idx), offset_dims={", absl::StrJoin(dn.offset_dims, ","),
                   "}, collapsed_slice_dims={", collapsed, "}, start_index_map={",
                   absl::StrJoin(start_map, ","), "}, index_vector_dim=", dn.index_vector_dim,
                   ", slice_sizes={", absl::StrJoin(slice_sizes, ","), "}\n}\n");
  Program p = Parse(text, "g");
  RC_ASSERT(p.instr != nullptr);
  absl::StatusOr<Literal> result = RunOp(p, {S32Literal(op_dims, op), S32Literal(idx_dims, idx)});
  RC_ASSERT(result.ok());
  RC_ASSERT(Ints(*result) == NaiveGather(op, op_dims, idx, idx_dims, dn, slice_sizes, out_dims));
}

// ---- Scatter ----------------------------------------------------------------------------------

TEST(Scatter, AddWithRepeatedIndices) {
  Program p = Parse(absl::StrCat("HloModule m\n", kAddS32, R"(
ENTRY e {
  op = s32[4] parameter(0)
  idx = s32[3,1] parameter(1)
  upd = s32[3] parameter(2)
  ROOT s = s32[4] scatter(op, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})"),
                    "s");
  EXPECT_EQ(MustRun(p, {Lit("s32[4]", "{1,2,3,4}"), Lit("s32[3,1]", "{{1},{1},{3}}"),
                        Lit("s32[3]", "{10,20,5}")}),
            "s32[4] {1, 32, 3, 9}");
}

TEST(Scatter, OutOfBoundsWindowIsDroppedWhole) {
  // Windows of 2 over f32[5]: start 1 -> elements 1,2; start 4 would cover 4 and 5 -> dropped,
  // element 4 unchanged even though it is in bounds; start -1 -> dropped (element 0 unchanged).
  Program p = Parse(R"(HloModule m
add {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = f32[] add(p0, p1)
}
ENTRY e {
  op = f32[5] parameter(0)
  idx = s32[3,1] parameter(1)
  upd = f32[3,2] parameter(2)
  ROOT s = f32[5] scatter(op, idx, upd), update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})",
                    "s");
  EXPECT_EQ(MustRun(p, {Lit("f32[5]", "{0,0,0,0,0}"), Lit("s32[3,1]", "{{1},{4},{-1}}"),
                        Lit("f32[3,2]", "{{1,2},{3,4},{5,6}}")}),
            "f32[5] {0, 1, 2, 0, 0}");
}

TEST(Scatter, UnsignedHugeIndexIsDropped) {
  Program p = Parse(absl::StrCat("HloModule m\n", kAddS32, R"(
ENTRY e {
  op = s32[3] parameter(0)
  idx = u32[2] parameter(1)
  upd = s32[2] parameter(2)
  ROOT s = s32[3] scatter(op, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})"),
                    "s");
  EXPECT_EQ(MustRun(p, {Lit("s32[3]", "{0,0,0}"), Lit("u32[2]", "{4294967295,2}"),
                        Lit("s32[2]", "{7,8}")}),
            "s32[3] {0, 0, 8}");
}

TEST(Scatter, TwoDimWindowsIntoRows) {
  // Row windows s32[1,3] into s32[3,3] at rows 2 and 0 (update_window_dims={1},
  // inserted_window_dims={0}); replacement combiner.
  Program p = Parse(R"(HloModule m
assign {
  p0 = s32[] parameter(0)
  ROOT p1 = s32[] parameter(1)
}
ENTRY e {
  op = s32[3,3] parameter(0)
  idx = s32[2] parameter(1)
  upd = s32[2,3] parameter(2)
  ROOT s = s32[3,3] scatter(op, idx, upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=assign
})",
                    "s");
  EXPECT_EQ(MustRun(p, {Lit("s32[3,3]", "{{1,1,1},{2,2,2},{3,3,3}}"), Lit("s32[2]", "{2,0}"),
                        Lit("s32[2,3]", "{{7,8,9},{4,5,6}}")}),
            "s32[3,3] {{4, 5, 6}, {2, 2, 2}, {7, 8, 9}}");
}

TEST(Scatter, ReplacementLastWriteWins) {
  Program p = Parse(R"(HloModule m
assign {
  p0 = f32[] parameter(0)
  ROOT p1 = f32[] parameter(1)
}
ENTRY e {
  op = f32[2] parameter(0)
  idx = s32[3] parameter(1)
  upd = f32[3] parameter(2)
  ROOT s = f32[2] scatter(op, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=assign
})",
                    "s");
  EXPECT_EQ(
      MustRun(p, {Lit("f32[2]", "{0,0}"), Lit("s32[3]", "{1,1,0}"), Lit("f32[3]", "{5,6,7}")}),
      "f32[2] {7, 6}");
}

TEST(Scatter, NonCommutativeCombinerIsCurrentMinusUpdate) {
  // to_apply = subtract(current, update): 10 - 1 - 2 = 7 at index 0; 10 - 3 = 7 at index 1.
  // (update - current would give 2 - (1 - 10) = 11 and -7.)
  Program p = Parse(R"(HloModule m
sub {
  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  ROOT r = s32[] subtract(p0, p1)
}
ENTRY e {
  op = s32[2] parameter(0)
  idx = s32[3] parameter(1)
  upd = s32[3] parameter(2)
  ROOT s = s32[2] scatter(op, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=sub
})",
                    "s");
  EXPECT_EQ(
      MustRun(p, {Lit("s32[2]", "{10,10}"), Lit("s32[3]", "{0,0,1}"), Lit("s32[3]", "{1,2,3}")}),
      "s32[2] {7, 7}");
}

TEST(Scatter, UpdatesAppliedInRowMajorOrder) {
  // to_apply = current * 10 + update: the digits record the order updates arrive in. Update
  // scatter dims are [2,2] (row-major: (0,0),(0,1),(1,0),(1,1)), all at index 0.
  Program p = Parse(R"(HloModule m
append {
  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  ten = s32[] constant(10)
  m = s32[] multiply(p0, ten)
  ROOT r = s32[] add(m, p1)
}
ENTRY e {
  op = s32[1] parameter(0)
  idx = s32[2,2] parameter(1)
  upd = s32[2,2] parameter(2)
  ROOT s = s32[1] scatter(op, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=2, to_apply=append
})",
                    "s");
  EXPECT_EQ(MustRun(p, {Lit("s32[1]", "{0}"), Lit("s32[2,2]", "{{0,0},{0,0}}"),
                        Lit("s32[2,2]", "{{1,2},{3,4}}")}),
            "s32[1] {1234}");
}

TEST(Scatter, VariadicWithTupleCombiner) {
  // Two inputs: (s32 sums, f32 products); to_apply(c0, c1, u0, u1) = (c0 + u0, c1 * u1).
  Program p = Parse(R"(HloModule m
comb {
  c0 = s32[] parameter(0)
  c1 = f32[] parameter(1)
  u0 = s32[] parameter(2)
  u1 = f32[] parameter(3)
  a = s32[] add(c0, u0)
  m = f32[] multiply(c1, u1)
  ROOT t = (s32[], f32[]) tuple(a, m)
}
ENTRY e {
  op0 = s32[3] parameter(0)
  op1 = f32[3] parameter(1)
  idx = s32[3] parameter(2)
  u0 = s32[3] parameter(3)
  u1 = f32[3] parameter(4)
  ROOT s = (s32[3], f32[3]) scatter(op0, op1, idx, u0, u1), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
})",
                    "s");
  EXPECT_EQ(
      MustRun(p, {Lit("s32[3]", "{0,0,0}"), Lit("f32[3]", "{1,1,1}"), Lit("s32[3]", "{2,0,2}"),
                  Lit("s32[3]", "{5,6,7}"), Lit("f32[3]", "{2,3,4}")}),
      "(s32[3], f32[3]) ({6, 0, 12}, {3, 1, 8})");
}

TEST(Scatter, VariadicReplacement) {
  Program p = Parse(R"(HloModule m
comb {
  c0 = s32[] parameter(0)
  c1 = pred[] parameter(1)
  u0 = s32[] parameter(2)
  u1 = pred[] parameter(3)
  ROOT t = (s32[], pred[]) tuple(u0, u1)
}
ENTRY e {
  op0 = s32[3] parameter(0)
  op1 = pred[3] parameter(1)
  idx = s32[2] parameter(2)
  u0 = s32[2] parameter(3)
  u1 = pred[2] parameter(4)
  ROOT s = (s32[3], pred[3]) scatter(op0, op1, idx, u0, u1), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
})",
                    "s");
  EXPECT_EQ(
      MustRun(p, {Lit("s32[3]", "{1,2,3}"), Lit("pred[3]", "{false,false,false}"),
                  Lit("s32[2]", "{2,5}"), Lit("s32[2]", "{9,8}"), Lit("pred[2]", "{true,true}")}),
      "(s32[3], pred[3]) ({1, 2, 9}, {false, false, true})");
}

TEST(Scatter, BatchingDims) {
  // out[b, idx[b]] += upd[b] with input_batching_dims={0}, scatter_indices_batching_dims={0}.
  Program p = Parse(absl::StrCat("HloModule m\n", kAddS32, R"(
ENTRY e {
  op = s32[2,4] parameter(0)
  idx = s32[2] parameter(1)
  upd = s32[2] parameter(2)
  ROOT s = s32[2,4] scatter(op, idx, upd), update_window_dims={}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, index_vector_dim=1, input_batching_dims={0}, scatter_indices_batching_dims={0}, to_apply=add
})"),
                    "s");
  EXPECT_EQ(MustRun(p, {Lit("s32[2,4]", "{{0,0,0,0},{0,0,0,0}}"), Lit("s32[2]", "{3,1}"),
                        Lit("s32[2]", "{5,6}")}),
            "s32[2,4] {{0, 0, 0, 5}, {0, 6, 0, 0}}");
}

TEST(Scatter, BatchingDimsWithWindowAndOutOfBounds) {
  // op [2 batch, 4]; per batch b two scatter indices (idx[b][j]), windows of 2 along dim 1.
  // Batch 0: starts 0 and 3 (3 > 4-2: dropped). Batch 1: starts 2 and 1.
  Program p = Parse(absl::StrCat("HloModule m\n", kAddS32, R"(
ENTRY e {
  op = s32[2,4] parameter(0)
  idx = s32[2,2] parameter(1)
  upd = s32[2,2,2] parameter(2)
  ROOT s = s32[2,4] scatter(op, idx, upd), update_window_dims={2}, inserted_window_dims={}, scatter_dims_to_operand_dims={1}, index_vector_dim=2, input_batching_dims={0}, scatter_indices_batching_dims={0}, to_apply=add
})"),
                    "s");
  EXPECT_EQ(MustRun(p, {Lit("s32[2,4]", "{{0,0,0,0},{0,0,0,0}}"), Lit("s32[2,2]", "{{0,3},{2,1}}"),
                        Lit("s32[2,2,2]", "{{{1,2},{3,4}},{{5,6},{7,8}}}")}),
            "s32[2,4] {{1, 2, 0, 0}, {0, 7, 13, 6}}");
}

TEST(Scatter, Bf16AddRoundsEveryStep) {
  // bf16 has 8 significant bits: 256 + 1 = 257 rounds (to even) back to 256 each time.
  Program p = Parse(R"(HloModule m
add {
  p0 = bf16[] parameter(0)
  p1 = bf16[] parameter(1)
  ROOT r = bf16[] add(p0, p1)
}
ENTRY e {
  op = bf16[2] parameter(0)
  idx = s32[4] parameter(1)
  upd = bf16[4] parameter(2)
  ROOT s = bf16[2] scatter(op, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})",
                    "s");
  absl::StatusOr<Literal> r = RunOp(
      p, {Lit("bf16[2]", "{256,256}"), Lit("s32[4]", "{0,0,0,1}"), Lit("bf16[4]", "{1,1,1,3}")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->GetDouble(0), 256.0);
  // 256 + 3 = 259 -> 260 (neighbours 258 and 260; the tie goes to the even mantissa, 260).
  EXPECT_EQ(r->GetDouble(1), 260.0);
}

TEST(Scatter, FloatMaxWithNaNGoesThroughToApply) {
  // The typed max path hands NaN cases to to_apply (the test evaluator propagates NaN).
  Program p = Parse(R"(HloModule m
mx {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = f32[] maximum(p0, p1)
}
ENTRY e {
  op = f32[3] parameter(0)
  idx = s32[3] parameter(1)
  upd = f32[3] parameter(2)
  ROOT s = f32[3] scatter(op, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=mx
})",
                    "s");
  EXPECT_EQ(MustRun(p, {Lit("f32[3]", "{1,nan,-5}"), Lit("s32[3]", "{0,1,2}"),
                        Lit("f32[3]", "{nan,2,-7}")}),
            "f32[3] {nan, nan, -5}");
}

TEST(Scatter, MalformedAttributesAreErrorsNotCrashes) {
  const std::vector<std::string> bad = {
      "update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={3}, "
      "index_vector_dim=1",
      "update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
      "index_vector_dim=4",
      "update_window_dims={2}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
      "index_vector_dim=1",
      "update_window_dims={}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, "
      "index_vector_dim=1",
      "update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
      "index_vector_dim=1, input_batching_dims={0}",
  };
  for (const std::string& attrs : bad) {
    Program p = Parse(absl::StrCat("HloModule m\n", kAddS32, R"(
ENTRY e {
  op = s32[4] parameter(0)
  idx = s32[3] parameter(1)
  upd = s32[3] parameter(2)
  ROOT s = s32[4] scatter(op, idx, upd), )",
                                   attrs, ", to_apply=add\n}"),
                      "s");
    absl::StatusOr<Literal> r =
        RunOp(p, {Lit("s32[4]", "{0,0,0,0}"), Lit("s32[3]", "{0,1,2}"), Lit("s32[3]", "{1,1,1}")});
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << attrs << " " << r.status();
  }
  // Even operand count.
  Program p = Parse(absl::StrCat("HloModule m\n", kAddS32, R"(
ENTRY e {
  op = s32[4] parameter(0)
  idx = s32[3] parameter(1)
  upd = s32[3] parameter(2)
  ROOT s = s32[4] scatter(op, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})"),
                    "s");
  EXPECT_EQ(RunOp(p, {Lit("s32[4]", "{0,0,0,0}"), Lit("s32[3]", "{0,1,2}")}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Updates of a different element type.
  EXPECT_EQ(
      RunOp(p, {Lit("s32[4]", "{0,0,0,0}"), Lit("s32[3]", "{0,1,2}"), Lit("f32[3]", "{1,1,1}")})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

// Naive scatter: per scatter index in row-major order, drop the window if any part is out of
// bounds, else combine each element with `combine(current, update)`.
template <typename Combine>
std::vector<int64_t> NaiveScatter1D(std::vector<int64_t> op, const std::vector<int64_t>& starts,
                                    const std::vector<int64_t>& upd, int64_t window,
                                    Combine combine) {
  const int64_t size = static_cast<int64_t>(op.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    if (starts[i] < 0 || starts[i] + window > size) continue;
    for (int64_t w = 0; w < window; ++w) {
      int64_t& cur = op[starts[i] + w];
      cur = combine(cur, upd[i * window + w]);
    }
  }
  return op;
}

// The typed add fast path and the to_apply path (a combiner MatchBinaryReducer does not
// recognise) both agree with the naive reference, windows and out-of-range starts included.
RC_GTEST_PROP(ScatterProperties, AddAndGenericMatchNaive, ()) {
  const int64_t size = *rc::gen::inRange<int64_t>(1, 8);
  const int64_t window = *rc::gen::inRange<int64_t>(1, size + 1);
  const int64_t count = *rc::gen::inRange<int64_t>(1, 6);
  std::vector<int64_t> op, starts, upd;
  for (int64_t i = 0; i < size; ++i) op.push_back(*rc::gen::inRange<int64_t>(-100, 100));
  for (int64_t i = 0; i < count; ++i) starts.push_back(*rc::gen::inRange<int64_t>(-2, size + 2));
  for (int64_t i = 0; i < count * window; ++i) {
    upd.push_back(*rc::gen::inRange<int64_t>(-100, 100));
  }
  for (const bool generic : {false, true}) {
    const std::string comb = generic ? R"(
comb {
  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  n = s32[] negate(p1)
  ROOT r = s32[] subtract(p0, n)
})"
                                     : R"(
comb {
  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  ROOT r = s32[] add(p1, p0)
})";
    Program p = Parse(
        absl::StrCat("HloModule m\n", comb, "\nENTRY e {\n  op = s32[", size,
                     "] parameter(0)\n  idx = s32[", count, ",1] parameter(1)\n  upd = s32[", count,
                     ",", window, "] parameter(2)\n  ROOT s = s32[", size,
                     "] scatter(op, idx, upd), update_window_dims={1}, inserted_window_dims={}, "
                     "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb\n}\n"),
        "s");
    RC_ASSERT(p.instr != nullptr);
    absl::StatusOr<Literal> result = RunOp(
        p,
        {S32Literal({size}, op), S32Literal({count, 1}, starts), S32Literal({count, window}, upd)});
    RC_ASSERT(result.ok());
    RC_ASSERT(Ints(*result) ==
              NaiveScatter1D(op, starts, upd, window, [](int64_t a, int64_t b) { return a + b; }));
  }
}

}  // namespace
}  // namespace spmdcheck::oracle
