// Issue 14 items 2 and 4: group, pair and sharding facts decided by enumeration agree with Z3
// (random iota and explicit assignments, with mutations; the expected verdict comes from a brute
// force over the expanded device lists, not from either procedure), the procedure is recorded,
// `both` reports disagreement as unknown, and Z3 failures (exceptions, the memory cap, resource
// limits) become `unknown` with the reason instead of ending the process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <z3++.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "ir/hlo_parser.h"
#include "ir/replica_groups.h"
#include "ir/sharding.h"
#include "ir/tile_assignment.h"
#include "smt/chain_prover.h"
#include "smt/device_algebra.h"
#include "smt/proof_result.h"
#include "smt/z3_guard.h"
#include "tests/random_factors.h"

namespace spmdcheck::smt {
namespace {

using ::testing::HasSubstr;

HloSharding S(const std::string& text) {
  absl::StatusOr<HloSharding> s = ParseSharding(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status();
  return *s;
}

ReplicaGroups G(const std::string& text) {
  absl::StatusOr<ReplicaGroups> g = ParseReplicaGroups(text);
  EXPECT_TRUE(g.ok()) << text << ": " << g.status();
  return *g;
}

constexpr FactOptions kEnumerate{kDefaultTimeoutMs, Procedure::kEnumerate};
constexpr FactOptions kZ3{kDefaultTimeoutMs, Procedure::kZ3};
constexpr FactOptions kBoth{kDefaultTimeoutMs, Procedure::kBoth};

TEST(ProcedureTest, AutoEnumeratesAndSaysSo) {
  const ProofResult r =
      ProveGroups(S("{devices=[2,2,2]<=[8]}"), {1}, G("{{0,2},{1,3},{4,6},{5,7}}"));
  EXPECT_EQ(r.verdict, Verdict::kHolds);
  EXPECT_THAT(r.procedure, HasSubstr("enumeration over 4 groups of 2"));
}

TEST(ProcedureTest, ExplicitGroupsOver8192DevicesAreDecidedByEnumeration) {
  // The case: 256 explicit groups of 32, the way V1 dumps print them.
  std::vector<std::vector<int64_t>> groups;
  for (int64_t g = 0; g < 256; ++g) {
    std::vector<int64_t> members(32);
    std::iota(members.begin(), members.end(), g * 32);
    groups.push_back(members);
  }
  const HloSharding s = S("{devices=[256,32]<=[8192]}");
  ProofResult r = ProveGroups(s, {1}, ReplicaGroups(groups));
  EXPECT_EQ(r.verdict, Verdict::kHolds) << FormatProofResult(r);
  EXPECT_THAT(r.procedure, HasSubstr("enumeration over 256 groups of 32"));
  std::swap(groups[7][3], groups[9][30]);
  r = ProveGroups(s, {1}, ReplicaGroups(groups));
  ASSERT_EQ(r.verdict, Verdict::kFails);
  EXPECT_EQ(r.counterexample,
            "device 318 is at position 3 of group 7 in G; grouping along dims {1} puts it in group "
            "9 at position 30 (position 3 of group 7 should be device 227)");
}

TEST(ProcedureTest, BothRunsBothAndPrintsTheRatio) {
  const ProofResult r = ProveSharding(S("{devices=[2,2]0,1,1,3}"), 4, kBoth);
  ASSERT_EQ(r.verdict, Verdict::kFails);
  EXPECT_EQ(r.counterexample, "tiles [0,1] and [1,0] are both on device 1");
  EXPECT_THAT(r.procedure, HasSubstr("and Z3 ("));
  EXPECT_THAT(r.procedure, HasSubstr("both refuted; Z3 / enumeration time = "));
}

TEST(ProcedureTest, BothDisagreeingIsUnknown) {
  const ProofResult r = DecideFact(
      kBoth, 1, "1 position", "a test fact", [] { return ProofResult::Proved(); },
      [] { return ProofResult::Refuted("made up"); });
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_THAT(r.reason, HasSubstr("the procedures disagree"));
}

TEST(ProcedureTest, AZ3UnknownLeavesTheEnumerationsVerdict) {
  const ProofResult r = DecideFact(
      kBoth, 1, "1 position", "a test fact", [] { return ProofResult::Proved(); },
      [] { return ProofResult::Unknown("Z3 timed out (timeout)"); });
  EXPECT_EQ(r.verdict, Verdict::kHolds);
  EXPECT_THAT(r.procedure, HasSubstr("Z3 gave no answer"));
}

TEST(ProcedureTest, CounterexamplesReadTheSameFromBothProcedures) {
  const HloSharding from = S("{devices=[4]<=[4]}");
  const HloSharding to = S("{devices=[4]3,2,1,0}");
  const SourceTargetPairs pairs = {{0, 3}, {1, 2}, {2, 0}, {3, 1}};
  EXPECT_EQ(ProvePairs(from, to, pairs, kEnumerate).counterexample,
            ProvePairs(from, to, pairs, kZ3).counterexample);
  EXPECT_EQ(ProveSharding(S("{devices=[4]<=[4]}"), 3, kEnumerate).counterexample,
            "tile [3] is on device 3, outside [0,3)");
  EXPECT_EQ(ProveSharding(S("{devices=[2,2]0,1,2,3}"), 8, kEnumerate).counterexample,
            "device 4 holds no tile (4 tile positions for 8 devices)");
  EXPECT_EQ(
      ProveSame(S("{devices=[2,2]0,2,1,3}"), S("{devices=[2,2]<=[4]}"), kEnumerate).counterexample,
      "tile [0,1] is on device 2 vs device 1");
}

// ------------------------------------------------------------------ Z3 failures are unknown

TEST(Z3GuardTest, AnExceptionBecomesUnknownWithTheReason) {
  const ProofResult r =
      GuardZ3("a test proof", []() -> ProofResult { throw z3::exception("invalid argument"); });
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, "Z3 failed in a test proof: invalid argument");
}

TEST(Z3GuardTest, TheMemoryCapGivesUnknownNotACrash) {
  // 4096 devices in explicit groups: Z3's table encoding needs far more than 36 MB.
  std::vector<std::vector<int64_t>> groups;
  for (int64_t g = 0; g < 128; ++g) {
    std::vector<int64_t> members(32);
    std::iota(members.begin(), members.end(), g * 32);
    groups.push_back(members);
  }
  const int64_t before = Z3MemoryLimitMb();
  SetZ3MemoryLimitMb(36);
  const ProofResult r = ProveGroups(S("{devices=[128,32]<=[4096]}"), {1}, ReplicaGroups(groups),
                                    FactOptions{60000, Procedure::kZ3});
  SetZ3MemoryLimitMb(before);
  EXPECT_EQ(r.verdict, Verdict::kUnknown) << FormatProofResult(r);
  EXPECT_THAT(r.reason, HasSubstr("memory"));
  // Z3 works again once the cap is lifted.
  EXPECT_EQ(ProveSharding(S("{devices=[2,2]<=[4]}"), 4, kZ3).verdict, Verdict::kHolds);
}

TEST(Z3GuardTest, UnknownReasonsAreWorded) {
  EXPECT_EQ(Z3UnknownReason("timeout"), "Z3 timed out (timeout)");
  EXPECT_THAT(Z3UnknownReason("max. resource limit exceeded"), HasSubstr("resource limit"));
  EXPECT_THAT(Z3UnknownReason("out of memory"), HasSubstr("memory cap"));
}

// ------------------------------------------------------------- both procedures, brute force

using test_support::RandomFactors;

// A tile assignment over n devices: an iota (random reshape and transpose) or a random
// permutation written out, sometimes with a device repeated or out of range.
TileAssignment RandomAssignment(int64_t n, bool allow_broken) {
  const std::vector<int64_t> dims = RandomFactors(n);
  if (*rc::gen::arbitrary<bool>()) {
    const std::vector<int64_t> reshape = RandomFactors(n);
    std::vector<int64_t> perm(reshape.size());
    std::iota(perm.begin(), perm.end(), 0);
    for (size_t k = 0; k + 1 < perm.size(); ++k) {
      std::swap(perm[k], perm[*rc::gen::inRange<size_t>(k, perm.size())]);
    }
    return *TileAssignment::Iota(dims, reshape, perm);
  }
  std::vector<int64_t> devices(static_cast<size_t>(n));
  std::iota(devices.begin(), devices.end(), 0);
  for (size_t k = 0; k + 1 < devices.size(); ++k) {
    std::swap(devices[k], devices[*rc::gen::inRange<size_t>(k, devices.size())]);
  }
  if (allow_broken && *rc::gen::inRange(0, 3) == 0) {
    devices[*rc::gen::inRange<size_t>(0, devices.size())] = *rc::gen::inRange<int64_t>(0, n + 1);
  }
  return *TileAssignment::Explicit(dims, devices);
}

Verdict BruteBijection(const TileAssignment& tiles, int64_t n) {
  std::vector<int64_t> sorted = tiles.Devices();
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  return sorted == all ? Verdict::kHolds : Verdict::kFails;
}

const std::vector<int64_t> kSizes = {2, 4, 6, 8, 12, 16, 24};

RC_GTEST_PROP(ProcedureProperty, ShardingEnumerationAndZ3AgreeWithBruteForce, ()) {
  const int64_t n = *rc::gen::elementOf(kSizes);
  const TileAssignment tiles = RandomAssignment(n, /*allow_broken=*/true);
  const int64_t devices = n + *rc::gen::inRange<int64_t>(-1, 2);
  RC_PRE(devices > 0);
  const HloSharding s = HloSharding::Tile(tiles);
  const Verdict expected = BruteBijection(tiles, devices);
  const ProofResult enumerated = ProveSharding(s, devices, kEnumerate);
  const ProofResult z3 = ProveSharding(s, devices, kZ3);
  RC_ASSERT(enumerated.verdict == expected);
  RC_ASSERT(z3.verdict == expected);
}

RC_GTEST_PROP(ProcedureProperty, GroupsEnumerationAndZ3AgreeWithBruteForce, ()) {
  const int64_t n = *rc::gen::elementOf(kSizes);
  const HloSharding s = HloSharding::Tile(RandomAssignment(n, /*allow_broken=*/false));
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < s.tile_assignment().num_dimensions(); ++i) {
    if (*rc::gen::arbitrary<bool>()) dims.push_back(i);
  }
  const std::vector<std::vector<int64_t>> expected = s.GroupsAlongDims(dims);
  std::vector<std::vector<int64_t>> given = expected;
  if (*rc::gen::arbitrary<bool>()) {
    const size_t g1 = *rc::gen::inRange<size_t>(0, given.size());
    const size_t g2 = *rc::gen::inRange<size_t>(0, given.size());
    std::swap(given[g1][*rc::gen::inRange<size_t>(0, given[g1].size())],
              given[g2][*rc::gen::inRange<size_t>(0, given[g2].size())]);
  }
  const Verdict want = given == expected ? Verdict::kHolds : Verdict::kFails;
  const ReplicaGroups groups(given);
  const ProofResult enumerated = ProveGroups(s, dims, groups, kEnumerate);
  const ProofResult z3 = ProveGroups(s, dims, groups, kZ3);
  RC_ASSERT(enumerated.verdict == want);
  RC_ASSERT(z3.verdict == want);
  RC_ASSERT(ProveGroups(s, dims, groups.Canonical(), kEnumerate).verdict == want);
}

RC_GTEST_PROP(ProcedureProperty, PairsEnumerationAndZ3AgreeWithBruteForce, ()) {
  const int64_t n = *rc::gen::elementOf(kSizes);
  const std::vector<int64_t> dims = RandomFactors(n);
  const HloSharding from = HloSharding::Tile(RandomAssignment(n, false).Reshape(dims));
  const HloSharding to = HloSharding::Tile(RandomAssignment(n, false).Reshape(dims));
  // The right pairs: each target t receives its `to` tile from the device holding it in `from`.
  SourceTargetPairs pairs;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t s = from.tile_assignment().DeviceAt(*to.tile_assignment().TileIndexOf(t));
    pairs.push_back({s, t});
  }
  bool right = true;
  const int mutation = *rc::gen::inRange(0, 3);
  if (mutation == 1) {
    const size_t k = *rc::gen::inRange<size_t>(0, pairs.size());
    const int64_t other = *rc::gen::inRange<int64_t>(0, n);
    right = pairs[k].first == other;
    pairs[k].first = other;
  } else if (mutation == 2) {
    pairs.erase(pairs.begin() + *rc::gen::inRange<size_t>(0, pairs.size()));
    right = false;
  }
  const Verdict want = right ? Verdict::kHolds : Verdict::kFails;
  RC_ASSERT(ProvePairs(from, to, pairs, kEnumerate).verdict == want);
  RC_ASSERT(ProvePairs(from, to, pairs, kZ3).verdict == want);
}

}  // namespace
}  // namespace spmdcheck::smt
