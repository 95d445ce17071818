// The seed case (../shared/cases/seed-scatter): the facts its README says a correct tool must
// reproduce, checked with the oracle's own equivalence check and with hand-picked inputs.
#include "oracle/equivalence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/file.h"
#include "ir/hlo_parser.h"
#include "oracle/engine.h"
#include "oracle/sharded_values.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::oracle {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The module of `text` (a parse error fails the test and gives null).
std::unique_ptr<HloModule> ParseForTest(absl::string_view text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text, ParseOptions());
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? std::move(parsed->module) : nullptr;
}
namespace fs = std::filesystem;

std::string ReadCase(const std::string& name) {
  return test_support::ReadFileOrFail(test_support::SharedPath("cases/seed-scatter/" + name));
}

std::unique_ptr<HloModule> ParseCase(const std::string& name) {
  const fs::path path = test_support::SharedPath("cases/seed-scatter/" + name);
  // A missing case is no failure: the fixture skips.
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return nullptr;
  ParseOptions options;
  options.path = path.string();
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(*text, options);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? std::move(parsed->module) : nullptr;
}

class SeedCaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SPMDCHECK_SKIP_WITHOUT_SHARED("cases/seed-scatter");
    pre_ = ParseCase("pre.hlo");
    gspmd_ = ParseCase("gspmd.hlo");
    simplified_ = ParseCase("simplified.hlo");
    if (pre_ == nullptr || gspmd_ == nullptr || simplified_ == nullptr) {
      GTEST_SKIP() << "seed case not available";
    }
  }
  std::unique_ptr<HloModule> pre_, gspmd_, simplified_;
};

TEST_F(SeedCaseTest, GspmdImplementsThePreProgramOnAll64Partitions) {
  EquivOptions options;
  options.trials = 2;
  options.partitioned_source = ReadCase("gspmd.hlo");
  absl::StatusOr<EquivReport> report = CheckEquivalence(*pre_, *gspmd_, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->verdict, Verdict::kHolds) << FormatEquivReport(*report);
  EXPECT_EQ(report->num_devices, 64);
  // Every `sharding=` it carries holds: the `// holds=` claims are checked, none diverges.
  EXPECT_GE(report->annotations_checked, 10);
  EXPECT_FALSE(report->first_divergence.has_value());
}

TEST_F(SeedCaseTest, SimplifiedIsWrongOn48PartitionsOffStageZero) {
  EquivOptions options;
  options.partitioned_source = ReadCase("simplified.hlo");
  absl::StatusOr<EquivReport> report = CheckEquivalence(*pre_, *simplified_, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->verdict, Verdict::kFails) << FormatEquivReport(*report);
  // The first instruction that leaves the value it claims is the all-gather over the
  // tensor-parallel groups, wrong on the 48 partitions off stage 0.
  ASSERT_TRUE(report->first_divergence.has_value());
  EXPECT_EQ(report->first_divergence->instruction, "all-gather.148");
  EXPECT_EQ(report->first_divergence->holds, "transpose.9599");
  EXPECT_EQ(report->first_divergence->devices_wrong, 48);
  // Device id = 32*data + 8*pipeline + model: stage 0 is the partitions with (d / 8) % 4 == 0.
  EXPECT_EQ(report->wrong_devices.size(), 48u) << FormatEquivReport(*report);
  for (int64_t d : report->wrong_devices) EXPECT_NE((d / 8) % 4, 0) << d;
  EXPECT_NE((report->device / 8) % 4, 0);
}

TEST_F(SeedCaseTest, SameInputEverywhereLooksEqualAndSaysWhyThatIsUnsound) {
  EquivOptions options;
  options.same_input_everywhere = true;
  absl::StatusOr<EquivReport> report = CheckEquivalence(*pre_, *simplified_, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->verdict, Verdict::kHolds);
  EXPECT_THAT(FormatEquivReport(*report), HasSubstr("UNSOUND (--same-input-everywhere)"));
}

TEST_F(SeedCaseTest, TwoPartitionedProgramsAreComparedDeviceByDevice) {
  EquivOptions options;
  absl::StatusOr<EquivReport> same = CheckEquivalence(*gspmd_, *gspmd_, options);
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_EQ(same->mode, "partitioned vs partitioned");
  EXPECT_EQ(same->verdict, Verdict::kHolds) << FormatEquivReport(*same);
  absl::StatusOr<EquivReport> rewrite = CheckEquivalence(*gspmd_, *simplified_, options);
  ASSERT_TRUE(rewrite.ok()) << rewrite.status().message();
  EXPECT_EQ(rewrite->mode, "partitioned vs partitioned");
  ASSERT_EQ(rewrite->verdict, Verdict::kFails) << FormatEquivReport(*rewrite);
  EXPECT_EQ(rewrite->wrong_devices.size(), 48u);
  // Fed the same literal on every partition (the HLO runner comparison), they agree.
  options.same_input_everywhere = true;
  absl::StatusOr<EquivReport> runner = CheckEquivalence(*gspmd_, *simplified_, options);
  ASSERT_TRUE(runner.ok()) << runner.status().message();
  EXPECT_EQ(runner->verdict, Verdict::kHolds) << FormatEquivReport(*runner);
}

TEST_F(SeedCaseTest, SmallestCounterexampleFromTheCaseReadme) {
  // x all zero except a 1 at x[0,1,0,0,0] (pipeline stage 1): y is all zero, but the rewrite puts
  // a 1 on partitions 8-15.
  const HloInstruction* param = pre_->entry()->parameters()[0];
  Literal x(param->shape());
  x.SetDouble(1 * 2 * 16 * 4, 1.0);  // Row-major index of [0,1,0,0,0] in bf16[3,4,2,16,4].
  EngineOptions options;
  options.num_partitions = 64;
  Engine engine(*simplified_, options);
  std::vector<std::vector<Literal>> args(64);
  for (int64_t d = 0; d < 64; ++d) {
    absl::StatusOr<Literal> shard = ShardOf(x, *param->sharding(), d);
    ASSERT_TRUE(shard.ok()) << shard.status().message();
    args[d].push_back(*std::move(shard));
  }
  absl::StatusOr<std::vector<Literal>> results = engine.Run(std::move(args));
  ASSERT_TRUE(results.ok()) << results.status().message();
  for (int64_t d = 0; d < 64; ++d) {
    double sum = 0;
    for (int64_t i = 0; i < (*results)[d].element_count(); ++i) sum += (*results)[d].GetDouble(i);
    EXPECT_EQ(sum, d >= 8 && d < 16 ? 1.0 : 0.0) << "device " << d;
  }
}

// A global program with a TopK whose only sharded parameter, f32[1,3] over 2 devices, keeps its
// local shape: same signature as its partitioning. TopK is pure, so it is still the global
// program (found by the campaign, seed 7 case 620: run device by device on shards, device 1's
// padding made its TopK indices differ).
TEST(EquivalenceTest, ATopKDoesNotMakeTheGlobalProgramAPartitionedOne) {
  const std::string comparator = R"(
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT, type=TOTALORDER
}
)";
  std::unique_ptr<HloModule> global =
      ParseForTest(absl::StrCat("HloModule g, num_partitions=2\n", comparator, R"(
ENTRY main {
  p = f32[1,3] parameter(0), sharding={devices=[2,1]<=[2]}
  z = f32[] constant(0)
  padded = f32[1,7] pad(p, z), padding=0_0x1_3
  topk = (f32[1,3], s32[1,3]) custom-call(padded), custom_call_target="TopK", to_apply=cmp
  ROOT indices = s32[1,3] get-tuple-element(topk), index=1
}
)"));
  std::unique_ptr<HloModule> partitioned =
      ParseForTest(absl::StrCat("HloModule p, num_partitions=2\n", comparator, R"(
ENTRY main {
  p = f32[1,3] parameter(0), sharding={devices=[2,1]<=[2]}
  ag = f32[2,3] all-gather(p), channel_id=1, replica_groups=[1,2]<=[2], dimensions={0}, use_global_device_ids=true
  row = f32[1,3] slice(ag), slice={[0:1], [0:3]}
  z = f32[] constant(0)
  padded = f32[1,7] pad(row, z), padding=0_0x1_3
  topk = (f32[1,3], s32[1,3]) custom-call(padded), custom_call_target="TopK", to_apply=cmp
  ROOT indices = s32[1,3] get-tuple-element(topk), index=1, sharding={replicated}
}
)"));
  EquivOptions options;
  options.trials = 4;
  absl::StatusOr<EquivReport> report = CheckEquivalence(*global, *partitioned, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->mode, "global vs partitioned");
  EXPECT_EQ(report->verdict, Verdict::kHolds) << FormatEquivReport(*report);
}

// The suspects of a wrong value leave out what also made a value found right before it: XLA's
// partitioner shares a partition offset or a constant between the handlers of two source ops
// (found by the campaign, seed 20261204: a dynamic-update-slice's wrong select was named after
// the reverse whose offset computation it reused).
TEST(EquivalenceTest, SuspectsLeaveOutWhatAlsoMadeAValueFoundRight) {
  std::unique_ptr<HloModule> global = ParseForTest(R"(HloModule g, num_partitions=2
ENTRY main {
  a = f32[4] parameter(0), sharding={devices=[2]<=[2]}
  b = f32[4] parameter(1), sharding={devices=[2]<=[2]}
  r = f32[4] negate(a), sharding={devices=[2]<=[2]}
  d = f32[4] add(b, b), sharding={devices=[2]<=[2]}
  ROOT t = (f32[4], f32[4]) tuple(r, d), sharding={{devices=[2]<=[2]}, {devices=[2]<=[2]}}
}
)");
  std::unique_ptr<HloModule> partitioned = ParseForTest(R"(HloModule p, num_partitions=2
ENTRY main {
  a = f32[2] parameter(0), sharding={devices=[2]<=[2]}
  b = f32[2] parameter(1), sharding={devices=[2]<=[2]}
  c = f32[] constant(1)
  one = f32[2] broadcast(c), dimensions={}
  n = f32[2] negate(a)
  r = f32[2] multiply(n, one), sharding={devices=[2]<=[2]}
  wrong = f32[2] add(b, one)
  d = f32[2] multiply(wrong, one), sharding={devices=[2]<=[2]}
  ROOT t = (f32[2], f32[2]) tuple(r, d)
}
)");
  EquivOptions options;
  options.first_is_global = true;
  absl::StatusOr<EquivReport> report = CheckEquivalence(*global, *partitioned, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->verdict, Verdict::kFails) << FormatEquivReport(*report);
  ASSERT_TRUE(report->first_divergence.has_value()) << FormatEquivReport(*report);
  EXPECT_EQ(report->first_divergence->instruction, "d");
  std::vector<std::string> suspects;
  for (const Divergence::Suspect& s : report->first_divergence->suspects) {
    suspects.push_back(s.name);
  }
  // `c` and `one` also made `r`, which holds; `wrong` and `d` are the handler's own.
  EXPECT_EQ(suspects, (std::vector<std::string>{"wrong", "d"}));
}

// A tentative claim (EquivOptions::HeldValue::tentative) found right ends the search for the
// makers of a later wrong value: the whole copy `g` of `x`, made right, is not a suspect of the
// wrong slice after it (XLA labels such a reshard after its producer, and the producer's op was
// named as the root cause). Found wrong, a tentative claim is no divergence and stays a suspect.
TEST(EquivalenceTest, ATentativeClaimFoundRightIsNoSuspect) {
  std::unique_ptr<HloModule> global = ParseForTest(R"(HloModule g, num_partitions=2
ENTRY main {
  a = f32[4] parameter(0), sharding={devices=[2]<=[2]}
  x = f32[4] negate(a), sharding={devices=[2]<=[2]}
  ROOT s = f32[2] slice(x), slice={[1:3]}, sharding={replicated}
}
)");
  auto partitioned_with = [&](absl::string_view gather) {
    return ParseForTest(absl::StrCat(R"(HloModule p, num_partitions=2
ENTRY main {
  a = f32[2] parameter(0), sharding={devices=[2]<=[2]}
  x = f32[2] negate(a)
  )",
                                     gather, R"(
  ROOT s = f32[2] slice(g), slice={[0:2]}
}
)"));
  };
  EquivOptions options;
  options.first_is_global = true;
  options.claims["x"] = {"x", *ParseSharding("{devices=[2]<=[2]}")};
  options.claims["g"] = {"x", HloSharding::Replicate(), /*tentative=*/true};
  options.claims["s"] = {"s", HloSharding::Replicate()};
  auto suspects_of = [](const EquivReport& report) {
    std::vector<std::string> names;
    for (const Divergence::Suspect& s : report.first_divergence->suspects) names.push_back(s.name);
    return names;
  };
  // The all-gather is right, the slice's start is dropped (0 instead of 1).
  std::unique_ptr<HloModule> right_gather = partitioned_with(
      "g = f32[4] all-gather(x), channel_id=1, replica_groups={{0,1}}, dimensions={0}, "
      "use_global_device_ids=true");
  absl::StatusOr<EquivReport> report = CheckEquivalence(*global, *right_gather, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->verdict, Verdict::kFails) << FormatEquivReport(*report);
  ASSERT_TRUE(report->first_divergence.has_value()) << FormatEquivReport(*report);
  EXPECT_EQ(report->first_divergence->instruction, "s");
  EXPECT_EQ(suspects_of(*report), (std::vector<std::string>{"s"}));
  // The all-gather gathers in the wrong order: no divergence at it (a tentative claim), but it
  // is among the wrong slice's suspects.
  std::unique_ptr<HloModule> wrong_gather = partitioned_with(
      "g = f32[4] all-gather(x), channel_id=1, replica_groups={{1,0}}, dimensions={0}, "
      "use_global_device_ids=true");
  report = CheckEquivalence(*global, *wrong_gather, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->verdict, Verdict::kFails) << FormatEquivReport(*report);
  ASSERT_TRUE(report->first_divergence.has_value()) << FormatEquivReport(*report);
  EXPECT_EQ(report->first_divergence->instruction, "s");
  EXPECT_EQ(suspects_of(*report), (std::vector<std::string>{"g", "s"}));
}

// Two independent wrong values: both are reported, the second among the later divergences (XLA's
// execution may flag only the second's output, check/signature.cc), and each instruction once
// however often it runs.
TEST(EquivalenceTest, ReportsTheDivergencesAfterTheFirst) {
  std::unique_ptr<HloModule> global = ParseForTest(R"(HloModule g, num_partitions=2
ENTRY main {
  a = f32[4] parameter(0), sharding={devices=[2]<=[2]}
  b = f32[4] parameter(1), sharding={devices=[2]<=[2]}
  r = f32[4] negate(a), sharding={devices=[2]<=[2]}
  s = f32[4] abs(r), sharding={devices=[2]<=[2]}
  d = f32[4] add(b, b), sharding={devices=[2]<=[2]}
  ROOT t = (f32[4], f32[4]) tuple(s, d), sharding={{devices=[2]<=[2]}, {devices=[2]<=[2]}}
}
)");
  std::unique_ptr<HloModule> partitioned = ParseForTest(R"(HloModule p, num_partitions=2
ENTRY main {
  a = f32[2] parameter(0), sharding={devices=[2]<=[2]}
  b = f32[2] parameter(1), sharding={devices=[2]<=[2]}
  r = f32[2] exponential(a), sharding={devices=[2]<=[2]}
  s = f32[2] abs(r), sharding={devices=[2]<=[2]}
  d = f32[2] multiply(b, b), sharding={devices=[2]<=[2]}
  ROOT t = (f32[2], f32[2]) tuple(s, d)
}
)");
  EquivOptions options;
  options.first_is_global = true;
  absl::StatusOr<EquivReport> report = CheckEquivalence(*global, *partitioned, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->verdict, Verdict::kFails) << FormatEquivReport(*report);
  ASSERT_TRUE(report->first_divergence.has_value()) << FormatEquivReport(*report);
  EXPECT_EQ(report->first_divergence->holds, "r");
  std::vector<std::string> later;
  for (const Divergence& d : report->later_divergences) later.push_back(d.holds);
  // `s` only carries `r`'s wrong value on; `d` is a second wrong value.
  EXPECT_EQ(later, (std::vector<std::string>{"s", "d"}));
  EXPECT_THAT(FormatEquivReport(*report),
              ::testing::HasSubstr("later divergences (holding): s, d"));
}

// Doubles x on each of 3 trips of a while loop (the global program of the loop tests).
constexpr absl::string_view kDoublingLoopGlobal = R"(HloModule g, num_partitions=2
cond {
  s = (s32[], f32[4]) parameter(0), sharding={{replicated}, {devices=[2]<=[2]}}
  i = s32[] get-tuple-element(s), index=0, sharding={replicated}
  n = s32[] constant(3), sharding={replicated}
  ROOT lt = pred[] compare(i, n), direction=LT, sharding={replicated}
}
body {
  b = (s32[], f32[4]) parameter(0), sharding={{replicated}, {devices=[2]<=[2]}}
  j = s32[] get-tuple-element(b), index=0, sharding={replicated}
  x = f32[4] get-tuple-element(b), index=1, sharding={devices=[2]<=[2]}
  one = s32[] constant(1), sharding={replicated}
  j1 = s32[] add(j, one), sharding={replicated}
  twice = f32[4] add(x, x), sharding={devices=[2]<=[2]}
  ROOT next = (s32[], f32[4]) tuple(j1, twice), sharding={{replicated}, {devices=[2]<=[2]}}
}
ENTRY main {
  a = f32[4] parameter(0), sharding={devices=[2]<=[2]}
  zero = s32[] constant(0), sharding={replicated}
  init = (s32[], f32[4]) tuple(zero, a), sharding={{replicated}, {devices=[2]<=[2]}}
  w = (s32[], f32[4]) while(init), condition=cond, body=body, sharding={{replicated}, {devices=[2]<=[2]}}
  ROOT r = f32[4] get-tuple-element(w), index=1, sharding={devices=[2]<=[2]}
}
)";

// A wrong value made inside a loop body is localised there, on the trip it goes wrong: the
// body's instructions are checked against the global body's on every trip (before, only the
// entry's were, and the whole `while` was named).
TEST(EquivalenceTest, LocalisesInsideALoopBodyOnEveryTrip) {
  // Doubles x on each of 3 trips; the partitioned body adds a wrong 1 from the second trip on.
  std::unique_ptr<HloModule> global = ParseForTest(kDoublingLoopGlobal);
  std::unique_ptr<HloModule> partitioned = ParseForTest(R"(HloModule p, num_partitions=2
cond {
  s = (s32[], f32[2]) parameter(0), sharding={{replicated}, {devices=[2]<=[2]}}
  i = s32[] get-tuple-element(s), index=0, sharding={replicated}
  n = s32[] constant(3), sharding={replicated}
  ROOT lt = pred[] compare(i, n), direction=LT, sharding={replicated}
}
body {
  b = (s32[], f32[2]) parameter(0), sharding={{replicated}, {devices=[2]<=[2]}}
  j = s32[] get-tuple-element(b), index=0, sharding={replicated}
  x = f32[2] get-tuple-element(b), index=1, sharding={devices=[2]<=[2]}
  one = s32[] constant(1), sharding={replicated}
  j1 = s32[] add(j, one), sharding={replicated}
  doubled = f32[2] add(x, x)
  zero.i = s32[] constant(0)
  late = pred[] compare(j, zero.i), direction=GT
  c1 = f32[] constant(1)
  c0 = f32[] constant(0)
  extra = f32[] select(late, c1, c0)
  extras = f32[2] broadcast(extra), dimensions={}
  twice = f32[2] add(doubled, extras), sharding={devices=[2]<=[2]}
  ROOT next = (s32[], f32[2]) tuple(j1, twice), sharding={{replicated}, {devices=[2]<=[2]}}
}
ENTRY main {
  a = f32[2] parameter(0), sharding={devices=[2]<=[2]}
  zero = s32[] constant(0), sharding={replicated}
  init = (s32[], f32[2]) tuple(zero, a), sharding={{replicated}, {devices=[2]<=[2]}}
  w = (s32[], f32[2]) while(init), condition=cond, body=body, sharding={{replicated}, {devices=[2]<=[2]}}
  ROOT r = f32[2] get-tuple-element(w), index=1, sharding={devices=[2]<=[2]}
}
)");
  EquivOptions options;
  options.first_is_global = true;
  absl::StatusOr<EquivReport> report = CheckEquivalence(*global, *partitioned, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->verdict, Verdict::kFails) << FormatEquivReport(*report);
  ASSERT_TRUE(report->first_divergence.has_value()) << FormatEquivReport(*report);
  EXPECT_EQ(report->first_divergence->instruction, "twice") << FormatEquivReport(*report);
  std::vector<std::string> suspects;
  for (const Divergence::Suspect& s : report->first_divergence->suspects) {
    suspects.push_back(s.name);
  }
  EXPECT_THAT(suspects, ::testing::Contains("extras"));
  EXPECT_THAT(suspects, ::testing::Not(::testing::Contains("x")));
}

// A loop's state found wrong on a later trip, where the body ends in an unclaimed instruction
// (a reshard of ours): the suspects are what the body made it from on the trip before.
TEST(EquivalenceTest, ALoopStateWrongOnALaterTripSuspectsTheBodysEnd) {
  std::unique_ptr<HloModule> global = ParseForTest(R"(HloModule g, num_partitions=2
cond {
  s = (s32[], f32[4]) parameter(0), sharding={{replicated}, {devices=[2]<=[2]}}
  i = s32[] get-tuple-element(s), index=0, sharding={replicated}
  n = s32[] constant(3), sharding={replicated}
  ROOT lt = pred[] compare(i, n), direction=LT, sharding={replicated}
}
body {
  b = (s32[], f32[4]) parameter(0), sharding={{replicated}, {devices=[2]<=[2]}}
  j = s32[] get-tuple-element(b), index=0, sharding={replicated}
  x = f32[4] get-tuple-element(b), index=1, sharding={devices=[2]<=[2]}
  one = s32[] constant(1), sharding={replicated}
  j1 = s32[] add(j, one), sharding={replicated}
  ROOT next = (s32[], f32[4]) tuple(j1, x)
}
ENTRY main {
  a = f32[4] parameter(0), sharding={devices=[2]<=[2]}
  zero = s32[] constant(0), sharding={replicated}
  init = (s32[], f32[4]) tuple(zero, a), sharding={{replicated}, {devices=[2]<=[2]}}
  w = (s32[], f32[4]) while(init), condition=cond, body=body, sharding={{replicated}, {devices=[2]<=[2]}}
  ROOT r = f32[4] get-tuple-element(w), index=1, sharding={devices=[2]<=[2]}
}
)");
  // The body's end negates the carried value (an unclaimed, wrong reshard step).
  std::unique_ptr<HloModule> partitioned = ParseForTest(R"(HloModule p, num_partitions=2
cond {
  s = (s32[], f32[2]) parameter(0), sharding={{replicated}, {devices=[2]<=[2]}}
  i = s32[] get-tuple-element(s), index=0, sharding={replicated}
  n = s32[] constant(3), sharding={replicated}
  ROOT lt = pred[] compare(i, n), direction=LT, sharding={replicated}
}
body {
  b = (s32[], f32[2]) parameter(0), sharding={{replicated}, {devices=[2]<=[2]}}
  j = s32[] get-tuple-element(b), index=0, sharding={replicated}
  x = f32[2] get-tuple-element(b), index=1, sharding={devices=[2]<=[2]}
  one = s32[] constant(1), sharding={replicated}
  j1 = s32[] add(j, one), sharding={replicated}
  flipped = f32[2] negate(x)
  ROOT reshard.end = (s32[], f32[2]) tuple(j1, flipped)
}
ENTRY main {
  a = f32[2] parameter(0), sharding={devices=[2]<=[2]}
  zero = s32[] constant(0), sharding={replicated}
  init = (s32[], f32[2]) tuple(zero, a), sharding={{replicated}, {devices=[2]<=[2]}}
  w = (s32[], f32[2]) while(init), condition=cond, body=body, sharding={{replicated}, {devices=[2]<=[2]}}
  ROOT r = f32[2] get-tuple-element(w), index=1, sharding={devices=[2]<=[2]}
}
)");
  EquivOptions options;
  options.first_is_global = true;
  absl::StatusOr<EquivReport> report = CheckEquivalence(*global, *partitioned, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->verdict, Verdict::kFails) << FormatEquivReport(*report);
  ASSERT_TRUE(report->first_divergence.has_value()) << FormatEquivReport(*report);
  // The condition's state on the second trip is the first claimed value that is wrong.
  EXPECT_EQ(report->first_divergence->instruction, "s") << FormatEquivReport(*report);
  std::vector<std::string> suspects;
  for (const Divergence::Suspect& s : report->first_divergence->suspects) {
    suspects.push_back(s.name);
  }
  EXPECT_EQ(suspects, (std::vector<std::string>{"flipped", "reshard.end", "s"}));
}

// A global program with manual regions runs on every device; the localisation replays it so,
// and finds the first wrong value (before, it ran it on one device, failed, and localised
// nothing: "none of the 0 annotated instructions").
TEST(EquivalenceTest, LocalisesWhenTheGlobalProgramHasManualRegions) {
  std::unique_ptr<HloModule> global = ParseForTest(R"(HloModule g, num_partitions=2
region {
  m = f32[2] parameter(0), sharding={manual}
  ROOT mm = f32[2] negate(m), sharding={manual}
}
ENTRY main {
  a = f32[4] parameter(0), sharding={devices=[2]<=[2]}
  d = f32[4] add(a, a), sharding={devices=[2]<=[2]}
  to-shard = f32[2] custom-call(d), custom_call_target="SPMDFullToShardShape", sharding={manual}
  called = f32[2] call(to-shard), to_apply=region, sharding={manual}
  ROOT to-full = f32[4] custom-call(called), custom_call_target="SPMDShardToFullShape", sharding={devices=[2]<=[2]}
}
)");
  std::unique_ptr<HloModule> partitioned = ParseForTest(R"(HloModule p, num_partitions=2
region {
  m = f32[2] parameter(0), sharding={manual}
  ROOT mm = f32[2] negate(m), sharding={manual}
}
ENTRY main {
  a = f32[2] parameter(0), sharding={devices=[2]<=[2]}
  d = f32[2] multiply(a, a), sharding={devices=[2]<=[2]}
  called = f32[2] call(d), to_apply=region
  ROOT to-full = f32[2] copy(called), sharding={devices=[2]<=[2]}
}
)");
  EquivOptions options;
  options.first_is_global = true;
  absl::StatusOr<EquivReport> report = CheckEquivalence(*global, *partitioned, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->verdict, Verdict::kFails) << FormatEquivReport(*report);
  ASSERT_TRUE(report->first_divergence.has_value()) << FormatEquivReport(*report);
  EXPECT_EQ(report->first_divergence->instruction, "d");
}

std::vector<std::string> SuspectNames(const Divergence& divergence) {
  std::vector<std::string> names;
  for (const Divergence::Suspect& s : divergence.suspects) names.push_back(s.name);
  return names;
}

// Two leaves of one tuple value, made apart: `t` is wrong through its leaf {1} only, so what made
// leaf {0} is no suspect (all-gather-group-order once came out as `wrong-result.all-to-all`: the
// all-to-all of a sort's right leaf came before the all-gather of its wrong one).
constexpr absl::string_view kTwoLeavesGlobal = R"(HloModule g, num_partitions=2
ENTRY main {
  a = f32[4] parameter(0), sharding={devices=[2]<=[2]}
  x = f32[4] negate(a), sharding={devices=[2]<=[2]}
  y = f32[4] add(a, a), sharding={devices=[2]<=[2]}
  ROOT t = (f32[4], f32[4]) tuple(x, y), sharding={{devices=[2]<=[2]}, {devices=[2]<=[2]}}
}
)";
constexpr absl::string_view kTwoLeavesPartitioned = R"(HloModule p, num_partitions=2
ENTRY main {
  a = f32[2] parameter(0), sharding={devices=[2]<=[2]}
  first = f32[2] negate(a)
  c = f32[] constant(1)
  ones = f32[2] broadcast(c), dimensions={}
  doubled = f32[2] add(a, a)
  second = f32[2] add(doubled, ones)
  ROOT t = (f32[2], f32[2]) tuple(first, second), sharding={{devices=[2]<=[2]}, {devices=[2]<=[2]}}
}
)";

TEST(EquivalenceTest, ATuplesSuspectsAreTheMakersOfItsWrongLeaf) {
  std::unique_ptr<HloModule> global = ParseForTest(kTwoLeavesGlobal);
  std::unique_ptr<HloModule> partitioned = ParseForTest(kTwoLeavesPartitioned);
  ASSERT_TRUE(global && partitioned);
  EquivOptions options;
  options.first_is_global = true;
  absl::StatusOr<EquivReport> report = CheckEquivalence(*global, *partitioned, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->verdict, Verdict::kFails) << FormatEquivReport(*report);
  ASSERT_TRUE(report->first_divergence.has_value()) << FormatEquivReport(*report);
  EXPECT_EQ(report->first_divergence->instruction, "t");
  EXPECT_EQ(report->first_divergence->mismatch.leaf, "{1}");
  EXPECT_EQ(SuspectNames(*report->first_divergence),
            (std::vector<std::string>{"c", "ones", "doubled", "second", "t"}));
}

// A given claim may name one leaf of a tuple value (`t{1}`, the reference partitioner's reshard
// steps of a tuple's elements): the leaf is compared, under the claim's sharding.
TEST(EquivalenceTest, AClaimCanNameOneLeafOfATuple) {
  std::unique_ptr<HloModule> global = ParseForTest(kTwoLeavesGlobal);
  std::unique_ptr<HloModule> partitioned = ParseForTest(kTwoLeavesPartitioned);
  ASSERT_TRUE(global && partitioned);
  EquivOptions options;
  options.first_is_global = true;
  const HloSharding halves = HloSharding::Tile(TileAssignment::Iota({2}));
  options.claims["first"] = {"t{0}", halves};
  options.claims["doubled"] = {"t{1}", halves};
  options.claims["second"] = {"t{1}", halves};
  absl::StatusOr<EquivReport> report = CheckEquivalence(*global, *partitioned, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_TRUE(report->first_divergence.has_value()) << FormatEquivReport(*report);
  // `first` and `doubled` hold their leaves; `second` is the first wrong one.
  EXPECT_EQ(report->first_divergence->instruction, "second") << FormatEquivReport(*report);
  EXPECT_EQ(report->first_divergence->holds, "t");
  EXPECT_EQ(report->first_divergence->holds_leaf, "{1}");
  EXPECT_THAT(FormatDivergence(*report->first_divergence),
              HasSubstr("second (line 8) should hold t{1} under {devices=[2]<=[2]}"));
  // `a`, `first`, `doubled`, `second` and `t`.
  EXPECT_EQ(report->annotations_checked, 5) << FormatEquivReport(*report);
  // A path past the value's tuple structure claims nothing.
  options.claims = {{"first", {"t{0}{3}", halves}}};
  report = CheckEquivalence(*global, *partitioned, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_TRUE(report->first_divergence.has_value()) << FormatEquivReport(*report);
  EXPECT_EQ(report->first_divergence->instruction, "t");
}

// Given claims reach a loop body through `called_claims` (by computation: names repeat across
// computations), and an entry claim does not.
TEST(EquivalenceTest, GivenClaimsReachALoopBodyByComputation) {
  std::unique_ptr<HloModule> global = ParseForTest(kDoublingLoopGlobal);
  std::unique_ptr<HloModule> partitioned = ParseForTest(R"(HloModule p, num_partitions=2
cond {
  s = (s32[], f32[2]) parameter(0), sharding={{replicated}, {devices=[2]<=[2]}}
  i = s32[] get-tuple-element(s), index=0, sharding={replicated}
  n = s32[] constant(3), sharding={replicated}
  ROOT lt = pred[] compare(i, n), direction=LT, sharding={replicated}
}
body {
  b = (s32[], f32[2]) parameter(0), sharding={{replicated}, {devices=[2]<=[2]}}
  j = s32[] get-tuple-element(b), index=0, sharding={replicated}
  x = f32[2] get-tuple-element(b), index=1, sharding={devices=[2]<=[2]}
  one = s32[] constant(1), sharding={replicated}
  j1 = s32[] add(j, one), sharding={replicated}
  c = f32[] constant(1)
  ones = f32[2] broadcast(c), dimensions={}
  doubled = f32[2] add(x, x)
  bumped = f32[2] add(doubled, ones)
  twice = f32[2] copy(bumped), sharding={devices=[2]<=[2]}
  ROOT next = (s32[], f32[2]) tuple(j1, twice), sharding={{replicated}, {devices=[2]<=[2]}}
}
ENTRY main {
  a = f32[2] parameter(0), sharding={devices=[2]<=[2]}
  zero = s32[] constant(0), sharding={replicated}
  init = (s32[], f32[2]) tuple(zero, a), sharding={{replicated}, {devices=[2]<=[2]}}
  w = (s32[], f32[2]) while(init), condition=cond, body=body, sharding={{replicated}, {devices=[2]<=[2]}}
  ROOT r = f32[2] get-tuple-element(w), index=1, sharding={devices=[2]<=[2]}
}
)");
  ASSERT_TRUE(global && partitioned);
  EquivOptions options;
  options.first_is_global = true;
  const HloSharding halves = HloSharding::Tile(TileAssignment::Iota({2}));
  options.claims["bumped"] = {"twice", halves};  // The entry has no `bumped`: no claim.
  absl::StatusOr<EquivReport> report = CheckEquivalence(*global, *partitioned, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_TRUE(report->first_divergence.has_value()) << FormatEquivReport(*report);
  EXPECT_EQ(report->first_divergence->instruction, "twice") << FormatEquivReport(*report);

  options.called_claims["body"]["bumped"] = {"twice", halves};
  report = CheckEquivalence(*global, *partitioned, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_TRUE(report->first_divergence.has_value()) << FormatEquivReport(*report);
  EXPECT_EQ(report->first_divergence->instruction, "bumped") << FormatEquivReport(*report);
  EXPECT_EQ(SuspectNames(*report->first_divergence),
            (std::vector<std::string>{"c", "ones", "doubled", "bumped"}));
}

// A generated f32 pipeline (tests/data/oracle/f32_rounding_pipeline*.hlo: PipelineGenTest, seed
// 8135646384220318788) whose partitioning sums a dot in two halves: six loop trips of dots and
// tanh grow the last-bit difference beyond f32's tolerance, and evaluated in f64 the programs
// agree. `edit` changes both texts before they are parsed.
absl::StatusOr<EquivReport> CheckRoundingPipeline(
    const std::function<void(std::string& global, std::string& partitioned)>& edit = {}) {
  std::string global_text = test_support::ReadFileOrFail(
      test_support::SourcePath("tests/data/oracle/f32_rounding_pipeline.hlo"));
  std::string partitioned_text = test_support::ReadFileOrFail(
      test_support::SourcePath("tests/data/oracle/f32_rounding_pipeline_partitioned.hlo"));
  if (edit) edit(global_text, partitioned_text);
  absl::StatusOr<ParsedModule> global = ParseHloModule(global_text);
  absl::StatusOr<ParsedModule> partitioned = ParseHloModule(partitioned_text);
  if (!global.ok()) return global.status();
  if (!partitioned.ok()) return partitioned.status();
  EquivOptions options;
  options.seed = 918;
  options.trials = 1;
  options.first_is_global = true;
  return CheckEquivalence(*global->module, *partitioned->module, options);
}

TEST(F32RoundingTest, AnF32MismatchThatF64EvaluationRemovesIsRounding) {
  absl::StatusOr<EquivReport> report = CheckRoundingPipeline();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->verdict, Verdict::kHolds) << FormatEquivReport(*report);
  EXPECT_THAT(FormatEquivReport(*report),
              HasSubstr("in f32 the programs differ beyond the tolerance (trial 0, device 0 at "
                        "[2,1,0]: expected 2.590447, got 2.5902197); evaluated in f64 on the same "
                        "trials they agree within f32's tolerance"));
}

TEST(F32RoundingTest, AWrongValueIsWrongInF64Too) {
  // One loop trip fewer in the partitioned program: the last micro-batch is never collected.
  absl::StatusOr<EquivReport> report = CheckRoundingPipeline([](std::string&,
                                                                std::string& partitioned) {
    const std::string trips = "constant.3 = s32[] constant(6)";
    ASSERT_NE(partitioned.find(trips), std::string::npos);
    partitioned.replace(partitioned.find(trips), trips.size(), "constant.3 = s32[] constant(5)");
  });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->verdict, Verdict::kFails) << FormatEquivReport(*report);
  EXPECT_THAT(FormatEquivReport(*report),
              HasSubstr("evaluated in f64 the programs differ as well: the difference is not "
                        "rounding"));
}

TEST(F32RoundingTest, ProgramsWithAnotherFloatTypeGetNoSecondLook) {
  // An f64 value (unused) in both programs: widening f32 could then hide a partitioner that
  // computes an f64 value in f32, so the f32 mismatch stands.
  absl::StatusOr<EquivReport> report =
      CheckRoundingPipeline([](std::string& global, std::string& partitioned) {
        for (std::string* text : {&global, &partitioned}) {
          const std::string entry = "  constant.30 = s32[] constant(0)";
          ASSERT_NE(text->find(entry), std::string::npos);
          text->insert(text->find(entry), "  unused = f64[] constant(0)\n");
        }
      });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->verdict, Verdict::kFails) << FormatEquivReport(*report);
  EXPECT_THAT(FormatEquivReport(*report), Not(HasSubstr("f64")));
}

}  // namespace
}  // namespace spmdcheck::oracle
