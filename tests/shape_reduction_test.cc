// Shape reduction: hand-written modules are shrunk consistently (ties through ops, sharded dims
// divisible, uneven dims uneven, attributes rewritten), verify and run in the oracle; and a sweep
// over the XLA SPMD conformance modules either shrinks each module within the budget or says why
// it cannot.
#include "oracle/shape_reduction.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "oracle/engine.h"
#include "oracle/inputs.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::oracle {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::unique_ptr<HloModule> Parse(absl::string_view text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? std::move(parsed->module) : nullptr;
}

const HloInstruction* Find(const HloModule& module, absl::string_view name) {
  for (const auto& computation : module.computations()) {
    if (const HloInstruction* i = computation->FindInstruction(name)) return i;
  }
  return nullptr;
}

std::vector<int64_t> Dims(const HloModule& module, absl::string_view name) {
  const HloInstruction* i = Find(module, name);
  EXPECT_NE(i, nullptr) << name;
  return i == nullptr ? std::vector<int64_t>{} : i->shape().dimensions();
}

void CollectArrays(const Shape& shape, std::vector<Shape>* out) {
  if (shape.IsTuple()) {
    for (const Shape& e : shape.tuple_shapes()) CollectArrays(e, out);
  } else if (shape.IsArray()) {
    out->push_back(shape);
  }
}

// Largest array and total elements of every instruction of the module.
std::pair<int64_t, int64_t> Sizes(const HloModule& module) {
  int64_t largest = 0;
  int64_t total = 0;
  for (const auto& computation : module.computations()) {
    for (const auto& instr : computation->instructions()) {
      std::vector<Shape> arrays;
      CollectArrays(instr->shape(), &arrays);
      for (const Shape& s : arrays) {
        largest = std::max(largest, s.ElementCount());
        total += s.ElementCount();
      }
    }
  }
  return {largest, total};
}

// Every tiled dim of every sharded array of `module` is divisible by its tile count exactly
// when it was in `original` (same instruction names).
void ExpectTileRemaindersKept(const HloModule& original, const HloModule& shrunk) {
  for (const auto& computation : shrunk.computations()) {
    for (const auto& instr : computation->instructions()) {
      const std::optional<HloSharding>& s = instr->sharding();
      if (!s.has_value() || !s->IsTiled() || !instr->shape().IsArray()) continue;
      const HloInstruction* before = Find(original, instr->name());
      ASSERT_NE(before, nullptr);
      for (int64_t d = 0; d < std::min(s->TiledDataRank(), instr->shape().rank()); ++d) {
        const int64_t t = s->tile_assignment().dim(d);
        EXPECT_EQ(instr->shape().dimensions(d) % t, before->shape().dimensions(d) % t)
            << instr->name() << " dim " << d;
      }
    }
  }
}

// Runs the (global) module on one device with random inputs.
absl::StatusOr<std::vector<Literal>> RunGlobal(const HloModule& module) {
  EngineOptions options;
  options.num_partitions = 1;
  Engine engine(module, options);
  absl::Status runnable = engine.CheckRunnable();
  if (!runnable.ok()) return runnable;
  std::mt19937_64 rng(7);
  std::vector<ParameterProfile> profiles = ProfileParameters(module);
  std::vector<Literal> args;
  for (const HloInstruction* p : module.entry()->parameters()) {
    args.push_back(RandomLiteral(p->shape(), profiles[p->parameter_number()],
                                 InputStyle::kSmallIntegers, rng));
  }
  std::vector<std::vector<Literal>> all;
  all.push_back(std::move(args));
  return engine.Run(std::move(all));
}

// Shrinks, checks the result verifies, fits the budget, keeps tile remainders and runs.
ShrinkResult ShrinkAndRun(const HloModule& module, const ShrinkOptions& options = {}) {
  absl::StatusOr<ShrinkResult> result = ShrinkModuleShapes(module, options);
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (!result.ok()) return ShrinkResult{};
  EXPECT_TRUE(result->shrunk);
  EXPECT_TRUE(VerifyModule(*result->module).ok()) << PrintModule(*result->module);
  auto [largest, total] = Sizes(*result->module);
  EXPECT_LE(largest, options.max_elements_per_array) << PrintModule(*result->module);
  EXPECT_LE(total, options.max_total_elements);
  ExpectTileRemaindersKept(module, *result->module);
  absl::StatusOr<std::vector<Literal>> ran = RunGlobal(*result->module);
  EXPECT_TRUE(ran.ok()) << ran.status().message() << "\n" << PrintModule(*result->module);
  return *std::move(result);
}

TEST(ShapeReductionTest, SmallModuleIsCopiedUnchanged) {
  auto module = Parse(R"(HloModule m, num_partitions=2
ENTRY e {
  a = f32[16,8] parameter(0), sharding={devices=[2,1]0,1}
  ROOT n = f32[16,8] negate(a), sharding={devices=[2,1]0,1}
})");
  ASSERT_NE(module, nullptr);
  absl::StatusOr<ShrinkResult> result = ShrinkModuleShapes(*module);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_FALSE(result->shrunk);
  EXPECT_TRUE(result->description.empty());
  EXPECT_EQ(PrintModule(*result->module), PrintModule(*module));
}

TEST(ShapeReductionTest, DotTiesContractingBatchAndFreeDims) {
  auto module = Parse(R"(HloModule m, num_partitions=8
ENTRY e {
  a = f32[4,8192,4096] parameter(0), sharding={devices=[1,2,4]<=[8]}
  b = f32[4,4096,2048] parameter(1), sharding={devices=[1,4,2]<=[8]}
  d = f32[4,8192,2048] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}, sharding={devices=[1,2,4]<=[8]}
  t = f32[4,2048,8192] transpose(d), dimensions={0,2,1}
  zero = f32[] constant(0)
  r = f32[4,2048] reduce(t, zero), dimensions={2}, to_apply=add
  ROOT m = f32[4,2048] multiply(r, r)
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
})");
  ASSERT_NE(module, nullptr);
  ShrinkResult result = ShrinkAndRun(*module);
  ASSERT_NE(result.module, nullptr);
  const std::vector<int64_t> a = Dims(*result.module, "a");
  const std::vector<int64_t> b = Dims(*result.module, "b");
  const std::vector<int64_t> d = Dims(*result.module, "d");
  const std::vector<int64_t> t = Dims(*result.module, "t");
  EXPECT_EQ(a[0], 4);  // Batch dim not over the budget's reach: small dims are kept.
  EXPECT_EQ(a[2], b[1]);
  EXPECT_EQ(d, (std::vector<int64_t>{a[0], a[1], b[2]}));
  EXPECT_EQ(t, (std::vector<int64_t>{a[0], b[2], a[1]}));
  EXPECT_EQ(Dims(*result.module, "r"), (std::vector<int64_t>{a[0], b[2]}));
  EXPECT_LT(a[1], 8192);
  EXPECT_THAT(result.description, HasSubstr("f32[4,8192,4096] -> "));
  EXPECT_THAT(result.description, HasSubstr("arrays changed"));
}

TEST(ShapeReductionTest, ReshapeSplitAndMergeKeepProducts) {
  auto module = Parse(R"(HloModule m, num_partitions=4
ENTRY e {
  p = f32[8192,4096] parameter(0), sharding={devices=[4,1]<=[4]}
  split = f32[64,128,4096] reshape(p), sharding={devices=[4,1,1]<=[4]}
  n = f32[64,128,4096] negate(split)
  ROOT merged = f32[8192,4096] reshape(n)
})");
  ASSERT_NE(module, nullptr);
  ShrinkResult result = ShrinkAndRun(*module);
  ASSERT_NE(result.module, nullptr);
  const std::vector<int64_t> p = Dims(*result.module, "p");
  const std::vector<int64_t> split = Dims(*result.module, "split");
  EXPECT_EQ(p[0], split[0] * split[1]);
  EXPECT_EQ(p[1], split[2]);
  EXPECT_EQ(split[0] % 4, 0);
  EXPECT_EQ(Dims(*result.module, "merged"), p);
}

TEST(ShapeReductionTest, SlicePadAndConcatenateAttributesStayValid) {
  auto module = Parse(R"(HloModule m, num_partitions=2
ENTRY e {
  p = f32[8194,1024] parameter(0), sharding={devices=[2,1]0,1}
  inner = f32[8192,1024] slice(p), slice={[1:8193], [0:1024]}, sharding={devices=[2,1]0,1}
  half = f32[4096,1024] slice(p), slice={[0:8192:2], [0:1024]}
  row = f32[1,1024] slice(p), slice={[4000:4001], [0:1024]}
  zero = f32[] constant(0)
  padded = f32[8196,1024] pad(inner, zero), padding=2_2x0_0
  cat = f32[12292,1024] concatenate(padded, half), dimensions={0}
  q = f32[8192,1024] parameter(1)
  five = s32[] constant(5)
  izero = s32[] constant(0)
  ds = f32[16,1024] dynamic-slice(q, five, izero), dynamic_slice_sizes={16,1024}
  ROOT t = (f32[12292,1024], f32[1,1024], f32[16,1024]) tuple(cat, row, ds)
})");
  ASSERT_NE(module, nullptr);
  ShrinkResult result = ShrinkAndRun(*module);
  ASSERT_NE(result.module, nullptr);
  const int64_t n = Dims(*result.module, "p")[0];
  EXPECT_EQ(n % 2, 0);
  EXPECT_EQ(Dims(*result.module, "inner")[0], n - 2);  // The margins are kept.
  const HloInstruction* inner = Find(*result.module, "inner");
  EXPECT_EQ((*inner->attrs().slice)[0].start, 1);
  EXPECT_EQ((*inner->attrs().slice)[0].limit, n - 1);
  EXPECT_EQ(Dims(*result.module, "half")[0], (n - 2 + 1) / 2);  // Strided: margins kept.
  EXPECT_EQ(Dims(*result.module, "row")[0], 1);  // A single row stays a row, moved with p.
  const HloInstruction* row = Find(*result.module, "row");
  EXPECT_EQ((*row->attrs().slice)[0].start, 4000 * n / 8194);
  EXPECT_EQ(Dims(*result.module, "padded")[0], n + 2);
  EXPECT_EQ(Dims(*result.module, "cat")[0], n + 2 + (n - 1) / 2);
  // The dynamic slice scales with its operand and its sizes attribute follows.
  const HloInstruction* ds = Find(*result.module, "ds");
  EXPECT_EQ(*ds->attrs().dynamic_slice_sizes, ds->shape().dimensions());
  EXPECT_GE(ds->shape().dimensions(0), 2);
  EXPECT_LE(ds->shape().dimensions(0), Dims(*result.module, "q")[0]);
}

TEST(ShapeReductionTest, UnevenShardedDimsStayUneven) {
  auto module = Parse(R"(HloModule m, num_partitions=8
ENTRY e {
  p = f32[8191,1023] parameter(0), sharding={devices=[4,2]<=[8]}
  c = f32[8191,1023] copy(p), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
  ROOT e = f32[8191,1023] exponential(c), sharding={devices=[1,8]<=[8]}
})");
  ASSERT_NE(module, nullptr);
  ShrinkResult result = ShrinkAndRun(*module);
  ASSERT_NE(result.module, nullptr);
  const std::vector<int64_t> p = Dims(*result.module, "p");
  EXPECT_EQ(p[0] % 4, 8191 % 4);
  EXPECT_GE(p[0], 4);
  EXPECT_EQ(p[1] % 8, 1023 % 8);  // Tiled 2 ways on p and 8 ways on e: remainder mod 8 kept.
  EXPECT_GE(p[1], 8);
}

TEST(ShapeReductionTest, WhileLoopStateShrinksWithItsBody) {
  auto module = Parse(R"(HloModule m, num_partitions=2
cond {
  s = (s32[], f32[4096,512]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}
body {
  s = (s32[], f32[4096,512]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4096,512] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x2 = f32[4096,512] add(x, x), sharding={devices=[2,1]0,1}
  ROOT t = (s32[], f32[4096,512]) tuple(i1, x2)
}
ENTRY e {
  p = f32[4096,512] parameter(0), sharding={devices=[2,1]0,1}
  zero = s32[] constant(0)
  init = (s32[], f32[4096,512]) tuple(zero, p)
  w = (s32[], f32[4096,512]) while(init), condition=cond, body=body
  ROOT r = f32[4096,512] get-tuple-element(w), index=1
})");
  ASSERT_NE(module, nullptr);
  ShrinkResult result = ShrinkAndRun(*module);
  ASSERT_NE(result.module, nullptr);
  const std::vector<int64_t> p = Dims(*result.module, "p");
  EXPECT_EQ(Dims(*result.module, "x2"), p);
  EXPECT_EQ(Dims(*result.module, "r"), p);
  EXPECT_LT(p[0] * p[1], 4096 * 512);
}

TEST(ShapeReductionTest, ConvolutionKeepsSmallWindowAndShrinksImage) {
  auto module = Parse(R"(HloModule m, num_partitions=2
ENTRY e {
  lhs = f32[128,224,224,3] parameter(0), sharding={devices=[1,2,1,1]0,1}
  rhs = f32[7,7,3,64] parameter(1), sharding={replicated}
  ROOT conv = f32[128,112,112,64] convolution(lhs, rhs), window={size=7x7 stride=2x2 pad=3_3x3_3}, dim_labels=b01f_01io->b01f, sharding={devices=[1,2,1,1]0,1}
})");
  ASSERT_NE(module, nullptr);
  ShrinkResult result = ShrinkAndRun(*module);
  ASSERT_NE(result.module, nullptr);
  const std::vector<int64_t> rhs = Dims(*result.module, "rhs");
  EXPECT_EQ(rhs[0], 7);  // The window is kept.
  EXPECT_EQ(rhs[1], 7);
  EXPECT_EQ(rhs[3], Dims(*result.module, "conv")[3]);
  const std::vector<int64_t> lhs = Dims(*result.module, "lhs");
  const std::vector<int64_t> conv = Dims(*result.module, "conv");
  EXPECT_EQ(conv[1], (lhs[1] + 6 - 7) / 2 + 1);
}

TEST(ShapeReductionTest, DepthwiseConvolutionGroupCountFollowsFeatures) {
  auto module = Parse(R"(HloModule m, num_partitions=2
ENTRY e {
  lhs = f32[16,801,1,1024] parameter(0), sharding={devices=[1,1,1,2]0,1}
  rhs = f32[5,1,1,1024] parameter(1), sharding={devices=[1,1,1,2]0,1}
  ROOT conv = f32[16,801,1,1024] convolution(lhs, rhs), window={size=5x1 pad=2_2x0_0}, dim_labels=b01f_01io->b01f, feature_group_count=1024, sharding={devices=[1,1,1,2]0,1}
})");
  ASSERT_NE(module, nullptr);
  ShrinkOptions options;
  options.max_elements_per_array = 4096;
  ShrinkResult result = ShrinkAndRun(*module, options);
  ASSERT_NE(result.module, nullptr);
  const HloInstruction* conv = Find(*result.module, "conv");
  const int64_t features = Dims(*result.module, "lhs")[3];
  EXPECT_LT(features, 1024);
  EXPECT_EQ(*conv->attrs().feature_group_count, features);
  EXPECT_EQ(Dims(*result.module, "rhs")[3], features);
  EXPECT_EQ(Dims(*result.module, "rhs")[0], 5);
}

TEST(ShapeReductionTest, ManualRegionShardShapesFollowTheFullShapes) {
  // Uneven: 4095 rows over 4 devices are 1024 per device, and back to 4095.
  auto module = Parse(R"(HloModule m, num_partitions=4
ENTRY e {
  p = f32[4095,64] parameter(0), sharding={devices=[4,1]<=[4]}
  s = f32[1024,64] custom-call(p), custom_call_target="SPMDFullToShardShape", sharding={manual}
  n = f32[1024,64] negate(s), sharding={manual}
  ROOT f = f32[4095,64] custom-call(n), custom_call_target="SPMDShardToFullShape", sharding={devices=[4,1]<=[4]}
})");
  ASSERT_NE(module, nullptr);
  ShrinkOptions options;
  options.max_elements_per_array = 4096;
  absl::StatusOr<ShrinkResult> result = ShrinkModuleShapes(*module, options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_TRUE(result->shrunk);
  const std::vector<int64_t> p = Dims(*result->module, "p");
  EXPECT_EQ(p[0] % 4, 3);
  EXPECT_LT(p[0], 4095);
  EXPECT_EQ(Dims(*result->module, "s")[0], (p[0] + 3) / 4);
  EXPECT_EQ(Dims(*result->module, "f"), p);
  EXPECT_LE(Sizes(*result->module).first, 4096);
}

TEST(ShapeReductionTest, ConstantsAreResizedOrRefused) {
  // A splat constant and an iota-valued constant are regenerated at the new size.
  auto module = Parse(R"(HloModule m, num_partitions=1
ENTRY e {
  p = s32[300000] parameter(0)
  k = s32[300000] iota(), iota_dimension=0
  ROOT a = s32[300000] add(p, k)
})");
  ASSERT_NE(module, nullptr);
  ShrinkAndRun(*module);
  // An arbitrary literal cannot be resized: the reason is named.
  auto fixed = Parse(R"(HloModule m, num_partitions=1
ENTRY e {
  p = s32[70000,4] parameter(0)
  k = s32[4] constant({3, 1, 4, 1})
  b = s32[70000,4] broadcast(k), dimensions={1}
  ROOT a = s32[70000,4] add(p, b)
})");
  ASSERT_NE(fixed, nullptr);
  ShrinkAndRun(*fixed);  // dim 1 is fixed by the literal, dim 0 shrinks.
  auto refused = Parse(R"(HloModule m, num_partitions=1
ENTRY e {
  p = s32[4,70000] parameter(0)
  k = s32[4,2] constant({{3, 1}, {4, 1}, {5, 9}, {2, 6}})
  r = s32[4,70000] custom-call(p, k), custom_call_target="foo"
  ROOT a = s32[4,70000] add(p, r)
})");
  ASSERT_NE(refused, nullptr);
  absl::StatusOr<ShrinkResult> result = ShrinkModuleShapes(*refused);
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(absl::IsUnimplemented(result.status()));
  EXPECT_THAT(result.status().message(), HasSubstr("custom-call foo"));
}

TEST(ShapeReductionTest, ConstantIndicesStayInBounds) {
  // Index 48 writes rows [48,176) of 224: after shrinking, the update must still fit at 48
  // (XLA would clamp it otherwise, silently moving it).
  auto module = Parse(R"(HloModule m, num_partitions=8
ENTRY e {
  p1 = bf16[16,192,192,384] parameter(0), sharding={replicated}
  p2 = bf16[16,128,128,384] parameter(1), sharding={replicated}
  c1 = bf16[16,192,192,384] copy(p1), sharding={devices=[2,2,2,1]<=[8]}
  c2 = bf16[16,128,128,384] copy(p2), sharding={devices=[2,2,2,1]<=[8]}
  z = bf16[] constant(0)
  i0 = s32[] constant(0)
  pad = bf16[16,224,224,384] pad(c1, z), padding=0_0x16_16x16_16x0_0, sharding={devices=[2,2,2,1]<=[8]}
  i48 = s32[] constant(48)
  ROOT dus = bf16[16,224,224,384] dynamic-update-slice(pad, c2, i0, i48, i48, i0), sharding={devices=[2,2,2,1]<=[8]}
})");
  ASSERT_NE(module, nullptr);
  ShrinkResult result = ShrinkAndRun(*module);
  ASSERT_NE(result.module, nullptr);
  const std::vector<int64_t> dus = Dims(*result.module, "dus");
  const std::vector<int64_t> c2 = Dims(*result.module, "c2");
  EXPECT_LE(48 + c2[1], dus[1]);
  EXPECT_LE(48 + c2[2], dus[2]);
  EXPECT_EQ(dus[1], Dims(*result.module, "c1")[1] + 32);  // Padding amounts kept.
}

TEST(ShapeReductionTest, TotalBudgetShrinksManySmallArrays) {
  auto module = Parse(R"(HloModule m, num_partitions=1
ENTRY e {
  p = f32[200,200] parameter(0)
  a = f32[200,200] negate(p)
  b = f32[200,200] exponential(a)
  c = f32[200,200] add(a, b)
  ROOT d = f32[200,200] multiply(c, c)
})");
  ASSERT_NE(module, nullptr);
  ShrinkOptions options;
  options.max_elements_per_array = 1 << 20;
  options.max_total_elements = 50000;
  ShrinkResult result = ShrinkAndRun(*module, options);
  ASSERT_NE(result.module, nullptr);
  EXPECT_LE(Sizes(*result.module).second, 50000);
}

// ---- Conformance sweep.

std::string ReasonOf(const absl::Status& status) {
  std::string m(status.message());
  const std::string prefix = "shape reduction: ";
  if (m.rfind(prefix, 0) == 0) m = m.substr(prefix.size());
  const size_t colon = m.find(':');
  return colon == std::string::npos ? m : m.substr(0, colon);
}

struct SweepCounts {
  int modules = 0;
  int needed = 0;
  int shrunk = 0;
  int not_needed = 0;
  std::map<std::string, int> unimplemented;
  double shrink_seconds = 0;
  double run_seconds = 0;
  int ran = 0;                         // Shrunk modules that ran in the oracle.
  std::map<std::string, int> not_run;  // Why the others did not.
  std::vector<std::string> errors;
};

bool Verbose() { return std::getenv("SPMDCHECK_SHRINK_VERBOSE") != nullptr; }

// The first tiled dim whose remainder modulo its tile count changed, or "".
std::string TileRemainderChange(const HloModule& original, const HloModule& shrunk) {
  for (const auto& computation : shrunk.computations()) {
    for (const auto& instr : computation->instructions()) {
      const std::optional<HloSharding>& s = instr->sharding();
      if (!s.has_value() || !s->IsTiled() || !instr->shape().IsArray()) continue;
      const HloInstruction* before = Find(original, instr->name());
      if (before == nullptr) return absl::StrCat(instr->name(), " is new");
      for (int64_t d = 0; d < std::min(s->TiledDataRank(), instr->shape().rank()); ++d) {
        const int64_t t = s->tile_assignment().dim(d);
        if (instr->shape().dimensions(d) % t != before->shape().dimensions(d) % t) {
          return absl::StrCat(instr->name(), " dim ", d);
        }
      }
    }
  }
  return "";
}

bool HasSort(const HloModule& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& instr : computation->instructions()) {
      if (instr->opcode() == HloOpcode::kSort) return true;
    }
  }
  return false;
}

SweepCounts Sweep(const fs::path& dir, const ShrinkOptions& options) {
  SweepCounts counts;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".hlo") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& path : files) {
    ParseOptions parse_options;
    parse_options.path = path.string();
    absl::StatusOr<ParsedModule> parsed =
        ParseHloModule(test_support::ReadFileOrFail(path), parse_options);
    if (!parsed.ok() || !VerifyModule(*parsed->module).ok()) continue;
    ++counts.modules;
    const HloModule& module = *parsed->module;
    auto [largest, total] = Sizes(module);
    const bool needed =
        largest > options.max_elements_per_array || total > options.max_total_elements;
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<ShrinkResult> result = ShrinkModuleShapes(module, options);
    counts.shrink_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!needed) {
      ++counts.not_needed;
      if (!result.ok() || result->shrunk) {
        counts.errors.push_back(absl::StrCat(path.filename().string(), ": shrunk unneeded"));
      }
      continue;
    }
    ++counts.needed;
    if (!result.ok()) {
      if (absl::IsUnimplemented(result.status())) {
        ++counts.unimplemented[ReasonOf(result.status())];
        std::cout << "  unimplemented " << path.filename().string() << ": "
                  << result.status().message() << "\n";
      } else {
        counts.errors.push_back(
            absl::StrCat(path.filename().string(), ": ", result.status().message()));
      }
      continue;
    }
    const absl::Status verified = VerifyModule(*result->module);
    auto [new_largest, new_total] = Sizes(*result->module);
    if (!verified.ok() || !result->shrunk || new_largest > options.max_elements_per_array ||
        new_total > options.max_total_elements) {
      counts.errors.push_back(absl::StrCat(path.filename().string(), ": bad result: ",
                                           verified.message(), " largest ", new_largest));
      continue;
    }
    const std::string remainder = TileRemainderChange(module, *result->module);
    if (!remainder.empty()) {
      counts.errors.push_back(
          absl::StrCat(path.filename().string(), ": tile remainder changed at ", remainder));
      continue;
    }
    ++counts.shrunk;
    if (const char* dump = std::getenv("SPMDCHECK_SHRINK_DUMP")) {
      test_support::WriteFileOrFail(fs::path(dump) / path.filename(), PrintModule(*result->module));
    }
    if (Verbose()) {
      std::cout << "  shrunk " << path.filename().string() << ": " << result->description << "\n";
    }
    if (HasSort(*result->module) && std::getenv("SPMDCHECK_SHRINK_RUN_ALL") == nullptr) {
      ++counts.not_run["sort is slow in the oracle; SPMDCHECK_SHRINK_RUN_ALL=1 runs it"];
      continue;
    }
    const auto t1 = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<Literal>> ran = RunGlobal(*result->module);
    const double run_time =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    counts.run_seconds += run_time;
    if (Verbose())
      std::cout << "  run time " << path.filename().string() << ": " << run_time << "\n";
    if (ran.ok()) {
      ++counts.ran;
    } else {
      std::string why(ran.status().message());
      why = why.substr(0, why.find_first_of(":("));
      ++counts.not_run[why];
      if (Verbose()) {
        std::cout << "  not run " << path.filename().string() << ": " << ran.status().message()
                  << "\n";
      }
    }
  }
  return counts;
}

TEST(ShapeReductionTest, ConformanceSweep) {
  SPMDCHECK_SKIP_WITHOUT_SHARED("conformance/xla-spmd-2023");
  const fs::path root = test_support::SharedPath("conformance");
  // Floors measured when this test was written: modules shrunk within the budget, and of
  // those the ones that then ran in the oracle (sort modules are skipped for time), per folder.
  // Measured: 2023: 95 need shrinking, 94 shrunk, 84 ran (10 with sort); 2022: 78, 77, 74 (3).
  const std::map<std::string, std::pair<int, int>> floors = {{"xla-spmd-2023", {94, 84}},
                                                             {"xla-spmd-2022", {77, 74}}};
  ShrinkOptions options;
  if (const char* budget = std::getenv("SPMDCHECK_SHRINK_BUDGET")) {
    // Exploration only (the floors below hold for the default budget).
    options.max_elements_per_array = std::atoll(budget);
    options.max_total_elements = 64 * options.max_elements_per_array;
  }
  const auto start = std::chrono::steady_clock::now();
  const bool default_budget = std::getenv("SPMDCHECK_SHRINK_BUDGET") == nullptr;
  for (const auto& [folder, floor] : floors) {
    if (!fs::is_directory(root / folder)) continue;
    SweepCounts counts = Sweep(root / folder, options);
    std::cout << folder << ": " << counts.modules << " modules verify, " << counts.not_needed
              << " need no shrinking, " << counts.needed << " need it: " << counts.shrunk
              << " shrunk ok";
    for (const auto& [reason, n] : counts.unimplemented) {
      std::cout << ", " << n << " unimplemented (" << reason << ")";
    }
    std::cout << "\n  shrinking took " << counts.shrink_seconds
              << " s; of the shrunk: " << counts.ran << " run in the oracle (" << counts.run_seconds
              << " s)";
    for (const auto& [why, n] : counts.not_run)
      std::cout << ", " << n << " not run (" << why << ")";
    std::cout << "\n";
    for (const std::string& e : counts.errors) ADD_FAILURE() << e;
    if (default_budget) {
      EXPECT_GE(counts.shrunk, floor.first) << folder;
      EXPECT_GE(counts.ran, floor.second) << folder;
      // Target: at least 90% of the modules that need shrinking are shrunk.
      EXPECT_GE(counts.shrunk * 10, counts.needed * 9) << folder;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "sweep time: " << seconds << " s\n";
}

}  // namespace
}  // namespace spmdcheck::oracle
