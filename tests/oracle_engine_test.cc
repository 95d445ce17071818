// The lock-step engine: control flow with per-device behaviour, collectives that a device never
// reaches, and the SPMD custom-calls. Expected values are worked out by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/hlo_parser.h"
#include "oracle/engine.h"
#include "oracle/sharded_values.h"

namespace spmdcheck::oracle {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<HloModule> Parse(absl::string_view text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? std::move(parsed->module) : nullptr;
}

std::vector<std::vector<Literal>> NoArgs(int64_t devices) {
  return std::vector<std::vector<Literal>>(devices);
}

TEST(EngineTest, WhileLoopsRunPerDeviceTripCounts) {
  // Device p loops p+1 times, doubling x each time: device p returns 2^(p+1).
  auto module = Parse(R"(HloModule m, num_partitions=3
cond {
  s = (u32[], s32[]) parameter(0)
  i = u32[] get-tuple-element(s), index=0
  pid = u32[] partition-id()
  one = u32[] constant(1)
  limit = u32[] add(pid, one)
  ROOT lt = pred[] compare(i, limit), direction=LT
}
body {
  s = (u32[], s32[]) parameter(0)
  i = u32[] get-tuple-element(s), index=0
  x = s32[] get-tuple-element(s), index=1
  one = u32[] constant(1)
  i1 = u32[] add(i, one)
  x2 = s32[] add(x, x)
  ROOT t = (u32[], s32[]) tuple(i1, x2)
}
ENTRY e {
  zero = u32[] constant(0)
  one = s32[] constant(1)
  init = (u32[], s32[]) tuple(zero, one)
  w = (u32[], s32[]) while(init), condition=cond, body=body
  ROOT x = s32[] get-tuple-element(w), index=1
})");
  ASSERT_NE(module, nullptr);
  EngineOptions options;
  options.num_partitions = 3;
  Engine engine(*module, options);
  ASSERT_TRUE(engine.CheckRunnable().ok());
  absl::StatusOr<std::vector<Literal>> results = engine.Run(NoArgs(3));
  ASSERT_TRUE(results.ok()) << results.status().message();
  EXPECT_EQ((*results)[0].ToString(), "s32[] 2");
  EXPECT_EQ((*results)[1].ToString(), "s32[] 4");
  EXPECT_EQ((*results)[2].ToString(), "s32[] 8");
}

TEST(EngineTest, ConditionalBranchesPerDevice) {
  auto module = Parse(R"(HloModule m, num_partitions=4
neg {
  p = s32[2] parameter(0)
  ROOT n = s32[2] negate(p)
}
same {
  p = s32[2] parameter(0)
  ROOT c = s32[2] copy(p)
}
ENTRY e {
  x = s32[2] constant({3, -5})
  pid = u32[] partition-id()
  two = u32[] constant(2)
  odd = u32[] remainder(pid, two)
  zero = u32[] constant(0)
  is_odd = pred[] compare(odd, zero), direction=NE
  ROOT r = s32[2] conditional(is_odd, x, x), true_computation=neg, false_computation=same
})");
  ASSERT_NE(module, nullptr);
  EngineOptions options;
  options.num_partitions = 4;
  Engine engine(*module, options);
  absl::StatusOr<std::vector<Literal>> results = engine.Run(NoArgs(4));
  ASSERT_TRUE(results.ok()) << results.status().message();
  EXPECT_EQ((*results)[0].ToString(), "s32[2] {3, -5}");
  EXPECT_EQ((*results)[1].ToString(), "s32[2] {-3, 5}");
  EXPECT_EQ((*results)[2].ToString(), "s32[2] {3, -5}");
  EXPECT_EQ((*results)[3].ToString(), "s32[2] {-3, 5}");
}

TEST(EngineTest, IndexedConditionalOutOfRangeRunsLastBranch) {
  auto module = Parse(R"(HloModule m
b0 {
  p = s32[] parameter(0)
  ROOT c = s32[] constant(10)
}
b1 {
  p = s32[] parameter(0)
  ROOT c = s32[] constant(11)
}
ENTRY e {
  i = s32[] constant(7)
  x = s32[] constant(0)
  ROOT r = s32[] conditional(i, x, x), branch_computations={b0, b1}
})");
  ASSERT_NE(module, nullptr);
  Engine engine(*module, EngineOptions());
  absl::StatusOr<std::vector<Literal>> results = engine.Run(NoArgs(1));
  ASSERT_TRUE(results.ok()) << results.status().message();
  EXPECT_EQ((*results)[0].ToString(), "s32[] 11");
}

TEST(EngineTest, CollectiveThatADeviceNeverReachesIsAnError) {
  // Partition 0 leaves the loop at once; partition 1 enters the body, whose all-reduce needs
  // partition 0 too: that is a deadlock on real hardware and an error here.
  auto module = Parse(R"(HloModule m, num_partitions=2
sum {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
cond {
  s = (s32[]) parameter(0)
  pid = u32[] partition-id()
  zero = u32[] constant(0)
  ROOT ne = pred[] compare(pid, zero), direction=NE
}
body {
  s = (s32[]) parameter(0)
  x = s32[] get-tuple-element(s), index=0
  r = s32[] all-reduce(x), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
  ROOT t = (s32[]) tuple(r)
}
ENTRY e {
  one = s32[] constant(1)
  init = (s32[]) tuple(one)
  ROOT w = (s32[]) while(init), condition=cond, body=body
})");
  ASSERT_NE(module, nullptr);
  EngineOptions options;
  options.num_partitions = 2;
  options.max_while_iterations = 10;
  Engine engine(*module, options);
  absl::StatusOr<std::vector<Literal>> results = engine.Run(NoArgs(2));
  ASSERT_FALSE(results.ok());
  EXPECT_THAT(std::string(results.status().message()), HasSubstr("r"));
}

TEST(EngineTest, UnsupportedOpsAndBudgetsAreRefusedUpFront) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  ROOT p = f32[65536,65536] parameter(0)
})");
  ASSERT_NE(module, nullptr);
  EngineOptions options;
  options.max_elements_per_array = 1 << 20;
  Engine engine(*module, options);
  absl::Status status = engine.CheckRunnable();
  EXPECT_TRUE(absl::IsResourceExhausted(status));
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("f32[65536,65536] has 4294967296 elements, over the budget of 1048576"));
  auto fft = Parse(R"(HloModule m
ENTRY e {
  c = c64[4] parameter(0)
  ROOT f = c64[4] fft(c), fft_type=FFT, fft_length={4}
})");
  ASSERT_NE(fft, nullptr);
  Engine fft_engine(*fft, EngineOptions());
  EXPECT_TRUE(absl::IsUnimplemented(fft_engine.CheckRunnable()));
}

TEST(EngineTest, ShardToFullAssemblesEveryDevicesShard) {
  auto module = Parse(R"(HloModule m, num_partitions=2
ENTRY e {
  pid = u32[] partition-id()
  v = u32[2] broadcast(pid), dimensions={}
  ROOT full = u32[4] custom-call(v), custom_call_target="SPMDShardToFullShape", sharding={devices=[2]0,1}
})");
  ASSERT_NE(module, nullptr);
  EngineOptions options;
  options.num_partitions = 2;
  Engine engine(*module, options);
  absl::StatusOr<std::vector<Literal>> results = engine.Run(NoArgs(2));
  ASSERT_TRUE(results.ok()) << results.status().message();
  EXPECT_EQ((*results)[0].ToString(), "u32[4] {0, 0, 1, 1}");
  EXPECT_EQ((*results)[1].ToString(), "u32[4] {0, 0, 1, 1}");
}

TEST(EngineTest, FullToShardGivesEachDeviceItsTile) {
  auto module = Parse(R"(HloModule m, num_partitions=2
ENTRY e {
  v = u32[3] iota(), iota_dimension=0, sharding={devices=[2]0,1}
  ROOT s = u32[2] custom-call(v), custom_call_target="SPMDFullToShardShape", sharding={manual}
})");
  ASSERT_NE(module, nullptr);
  EngineOptions options;
  options.num_partitions = 2;
  Engine engine(*module, options);
  absl::StatusOr<std::vector<Literal>> results = engine.Run(NoArgs(2));
  ASSERT_TRUE(results.ok()) << results.status().message();
  // 3 elements over 2 tiles of 2: device 1 holds element 2 and one zero of padding.
  EXPECT_EQ((*results)[0].ToString(), "u32[2] {0, 1}");
  EXPECT_EQ((*results)[1].ToString(), "u32[2] {2, 0}");
}

// Float results compare within 64 ulps of the largest magnitude in the same array: a cancelled
// sum (a small element next to large ones) may carry the rounding error of its large terms,
// while an element off by more than that is still a mismatch.
TEST(OracleToleranceTest, AbsoluteToleranceFollowsTheArraysLargestMagnitude) {
  Tolerance tolerance;
  tolerance.relative = tolerance.absolute = 64 * 0x1.0p-23;  // 7.6e-6
  tolerance.absolute_scales_with_magnitude = true;
  auto r1 = [](std::vector<double> values) {
    Literal l(Shape::Array(PrimitiveType::kF32, {static_cast<int64_t>(values.size())}));
    for (size_t i = 0; i < values.size(); ++i) l.SetDouble(static_cast<int64_t>(i), values[i]);
    return l;
  };
  // Next to a 2.0, a 0.0128 off by 7.9e-6 (the tanh/dot pipeline's cancellation) is rounding.
  EXPECT_FALSE(CompareLiterals(r1({2.0, 0.012781858}), r1({2.0, 0.012773991}), tolerance));
  // Alone, it is not: the error exceeds 64 ulps of every value in the array.
  EXPECT_TRUE(CompareLiterals(r1({0.5, 0.012781858}), r1({0.5, 0.012773991}), tolerance));
  // A wrong element next to large ones is still wrong.
  EXPECT_TRUE(CompareLiterals(r1({100.0, 1.0}), r1({100.0, 1.01}), tolerance));
  // The same scale in a device's shard: device 1 holds {0.012773991} of {2.0, 0.012781858}.
  const HloSharding split = HloSharding::Tile(TileAssignment::Iota({2}));
  absl::StatusOr<std::optional<ElementMismatch>> shard =
      CompareShard(r1({0.012773991}), r1({2.0, 0.012781858}), split, 1, tolerance);
  ASSERT_TRUE(shard.ok()) << shard.status();
  EXPECT_FALSE(shard->has_value());
  shard = CompareShard(r1({0.02}), r1({2.0, 0.012781858}), split, 1, tolerance);
  ASSERT_TRUE(shard.ok()) << shard.status();
  EXPECT_TRUE(shard->has_value());
  // Without the scaling (narrow floats), 64 ulps of each value only.
  tolerance.absolute_scales_with_magnitude = false;
  EXPECT_TRUE(CompareLiterals(r1({2.0, 0.012781858}), r1({2.0, 0.012773991}), tolerance));
}

}  // namespace
}  // namespace spmdcheck::oracle
