// Tests of the Z3 device-algebra proofs; expected verdicts are known by hand or by brute force.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "ir/hlo_parser.h"
#include "ir/replica_groups.h"
#include "ir/sharding.h"
#include "ir/tile_assignment.h"
#include "smt/device_algebra.h"
#include "smt/proof_result.h"
#include "tests/random_factors.h"

namespace spmdcheck::smt {
namespace {

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

TEST(ProveShardingTest, IotaProved) {
  EXPECT_EQ(ProveSharding(S("{devices=[2,2]<=[4]}"), 4).verdict, Verdict::kHolds);
  EXPECT_EQ(ProveSharding(S("{devices=[4,2,8]<=[2,4,8]T(1,0,2)}"), 64).verdict, Verdict::kHolds);
  EXPECT_EQ(ProveSharding(S("{devices=[2,1,4]<=[8] last_tile_dim_replicate}"), 8).verdict,
            Verdict::kHolds);
}

TEST(ProveShardingTest, Iota8192IsFast) {
  const auto start = std::chrono::steady_clock::now();
  ProofResult r = ProveSharding(S("{devices=[16,8,64]<=[8,16,64]T(2,1,0)}"), 8192);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.verdict, Verdict::kHolds) << FormatProofResult(r);
  EXPECT_LT(seconds, 5.0);
  // Too few devices: a tile lands outside [0, 4096).
  ProofResult small = ProveSharding(S("{devices=[16,8,64]<=[8,16,64]T(2,1,0)}"), 4096);
  EXPECT_EQ(small.verdict, Verdict::kFails);
  EXPECT_NE(small.counterexample.find("outside [0,4096)"), std::string::npos);
}

TEST(ProveShardingTest, ExplicitDuplicateRefuted) {
  ProofResult r = ProveSharding(S("{devices=[2,2]0,1,1,3}"), 4);
  ASSERT_EQ(r.verdict, Verdict::kFails);
  EXPECT_EQ(r.counterexample, "tiles [0,1] and [1,0] are both on device 1");
  EXPECT_EQ(FormatProofResult(r), "refuted: tiles [0,1] and [1,0] are both on device 1");
}

TEST(ProveShardingTest, ExplicitMissingRefuted) {
  ProofResult r = ProveSharding(S("{devices=[2,2]0,1,2,3}"), 5);
  ASSERT_EQ(r.verdict, Verdict::kFails);
  EXPECT_NE(r.counterexample.find("device 4 holds no tile"), std::string::npos);
}

TEST(ProveShardingTest, ExplicitPermutationProved) {
  EXPECT_EQ(ProveSharding(S("{devices=[2,2]3,1,0,2}"), 4).verdict, Verdict::kHolds);
  EXPECT_EQ(FormatProofResult(ProveSharding(S("{devices=[2,2]3,1,0,2}"), 4)), "proved");
}

TEST(ProveSameTest, ExplicitVsIota) {
  EXPECT_EQ(ProveSame(S("{devices=[2,2]0,2,1,3}"), S("{devices=[2,2]<=[2,2]T(1,0)}")).verdict,
            Verdict::kHolds);
  ProofResult r = ProveSame(S("{devices=[2,2]0,2,1,3}"), S("{devices=[2,2]<=[4]}"));
  ASSERT_EQ(r.verdict, Verdict::kFails);
  EXPECT_NE(r.counterexample.find("is on device"), std::string::npos);
  EXPECT_EQ(ProveSame(S("{devices=[2,2]<=[4]}"), S("{devices=[4,1]<=[4]}")).verdict,
            Verdict::kFails);
  EXPECT_EQ(ProveSame(S("{replicated}"), S("{devices=[2,2]<=[4]}")).verdict, Verdict::kFails);
}

TEST(ProveSameTest, TwoIotaForms) {
  // [2,4]<=[2,4] is the plain iota [2,4]<=[8].
  EXPECT_EQ(ProveSame(S("{devices=[4,2,8]<=[2,4,8]T(1,0,2)}"),
                      S("{devices=[4,2,8]<=[2,4,8]T(1,0,2)}").Expanded())
                .verdict,
            Verdict::kHolds);
}

TEST(ProveGroupsTest, AlongDim1) {
  const HloSharding s = S("{devices=[2,2,2]<=[8]}");
  EXPECT_EQ(ProveGroups(s, {1}, G("{{0,2},{1,3},{4,6},{5,7}}")).verdict, Verdict::kHolds);
  // Reordered groups.
  ProofResult reordered = ProveGroups(s, {1}, G("{{1,3},{0,2},{4,6},{5,7}}"));
  ASSERT_EQ(reordered.verdict, Verdict::kFails);
  EXPECT_NE(reordered.counterexample.find("in G; grouping along dims {1} puts it in group"),
            std::string::npos);
  // Reordered members.
  EXPECT_EQ(ProveGroups(s, {1}, G("{{2,0},{1,3},{4,6},{5,7}}")).verdict, Verdict::kFails);
  // Wrong grouping (along dim 2).
  EXPECT_EQ(ProveGroups(s, {1}, G("{{0,1},{2,3},{4,5},{6,7}}")).verdict, Verdict::kFails);
  // Wrong shape.
  EXPECT_EQ(ProveGroups(s, {1}, G("{{0,2,1,3},{4,6,5,7}}")).verdict, Verdict::kFails);
}

TEST(ProveGroupsTest, ExampleADim1) {
  const HloSharding s = S("{devices=[4,2,8]<=[2,4,8]T(1,0,2)}");
  EXPECT_EQ(ProveGroups(s, {1}, G("[32,2]<=[2,32]T(1,0)")).verdict, Verdict::kHolds);
  EXPECT_EQ(ProveGroups(s, {1}, G("[32,2]<=[64]")).verdict, Verdict::kFails);
  EXPECT_EQ(ReplicaGroups(s.GroupsAlongDims({1})), G("[32,2]<=[2,32]T(1,0)"));
}

TEST(ProvePairsTest, DeviceOrderChange) {
  const HloSharding from = S("{devices=[2,2]<=[4]}");
  const HloSharding to = S("{devices=[2,2]<=[2,2]T(1,0)}");
  // Tile [0,1] moves from device 1 to device 2 and back.
  EXPECT_EQ(ProvePairs(from, to, {{0, 0}, {1, 2}, {2, 1}, {3, 3}}).verdict, Verdict::kHolds);
  // Every receiving device needs a pair, even one whose tile stays put (devices 0 and 3).
  EXPECT_EQ(ProvePairs(from, to, {{1, 2}, {2, 1}}).verdict, Verdict::kFails);
}

TEST(ProvePairsTest, WrongPairsRefuted) {
  const HloSharding from = S("{devices=[4]<=[4]}");
  const HloSharding to = S("{devices=[4]3,2,1,0}");
  EXPECT_EQ(ProvePairs(from, to, {{0, 3}, {1, 2}, {2, 1}, {3, 0}}).verdict, Verdict::kHolds);
  ProofResult wrong = ProvePairs(from, to, {{0, 3}, {1, 2}, {2, 0}, {3, 1}});
  ASSERT_EQ(wrong.verdict, Verdict::kFails);
  EXPECT_NE(wrong.counterexample.find("should send it to device"), std::string::npos);
  ProofResult missing = ProvePairs(from, to, {{0, 3}, {1, 2}, {2, 1}});
  ASSERT_EQ(missing.verdict, Verdict::kFails);
  EXPECT_NE(missing.counterexample.find("no pair targets it"), std::string::npos);
}

// ------------------------------------------------------------- brute-force cross-check

using test_support::RandomFactors;

TileAssignment RandomIota() {
  const int64_t n = *rc::gen::elementOf(std::vector<int64_t>{2, 4, 6, 8, 12, 16, 24, 32, 64});
  const std::vector<int64_t> dims = RandomFactors(n);
  const std::vector<int64_t> reshape = RandomFactors(n);
  std::vector<int64_t> perm(reshape.size());
  std::iota(perm.begin(), perm.end(), 0);
  perm = *rc::gen::just(perm);
  const int64_t shuffles = *rc::gen::inRange<int64_t>(0, 4);
  for (int64_t k = 0; k < shuffles && perm.size() > 1; ++k) {
    const size_t i = *rc::gen::inRange<size_t>(0, perm.size());
    const size_t j = *rc::gen::inRange<size_t>(0, perm.size());
    std::swap(perm[i], perm[j]);
  }
  absl::StatusOr<TileAssignment> t = TileAssignment::Iota(dims, reshape, perm);
  RC_ASSERT(t.ok());
  return *t;
}

bool BruteBijection(const std::vector<int64_t>& devices, int64_t n) {
  std::vector<int64_t> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  if (static_cast<int64_t>(sorted.size()) != n) return false;
  for (int64_t i = 0; i < n; ++i) {
    if (sorted[i] != i) return false;
  }
  return true;
}

RC_GTEST_PROP(ProveShardingProperty, IotaMatchesBruteForce, ()) {
  const TileAssignment tiles = RandomIota();
  const HloSharding s = HloSharding::Tile(tiles);
  RC_PRE(s.IsTiled());
  const int64_t n = tiles.num_elements() + *rc::gen::inRange<int64_t>(-1, 2);
  RC_PRE(n > 0);
  const bool expected = BruteBijection(tiles.Devices(), n);
  const ProofResult r = ProveSharding(s, n);
  RC_ASSERT(r.verdict == (expected ? Verdict::kHolds : Verdict::kFails));
}

RC_GTEST_PROP(ProveShardingProperty, ExplicitMatchesBruteForce, ()) {
  const int64_t m = *rc::gen::inRange<int64_t>(2, 17);
  std::vector<int64_t> devices = *rc::gen::container<std::vector<int64_t>>(
      static_cast<size_t>(m), rc::gen::inRange<int64_t>(0, m + 1));
  absl::StatusOr<TileAssignment> t = TileAssignment::Explicit({m}, devices);
  RC_ASSERT(t.ok());
  const HloSharding s = HloSharding::Tile(*t);
  const bool expected = BruteBijection(devices, m);
  RC_ASSERT(ProveSharding(s, m).verdict == (expected ? Verdict::kHolds : Verdict::kFails));
}

RC_GTEST_PROP(ProveGroupsProperty, MatchesBruteForce, ()) {
  const TileAssignment tiles = RandomIota();
  const HloSharding s = HloSharding::Tile(tiles);
  RC_PRE(s.IsTiled());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < tiles.num_dimensions(); ++i) {
    if (*rc::gen::arbitrary<bool>()) dims.push_back(i);
  }
  const std::vector<std::vector<int64_t>> expected = s.GroupsAlongDims(dims);
  std::vector<std::vector<int64_t>> given = expected;
  const int64_t mutation = *rc::gen::inRange<int64_t>(0, 3);
  if (mutation == 1) {
    // Swap two devices (maybe the same one, maybe within one group).
    const size_t g1 = *rc::gen::inRange<size_t>(0, given.size());
    const size_t g2 = *rc::gen::inRange<size_t>(0, given.size());
    const size_t p1 = *rc::gen::inRange<size_t>(0, given[g1].size());
    const size_t p2 = *rc::gen::inRange<size_t>(0, given[g2].size());
    std::swap(given[g1][p1], given[g2][p2]);
  } else if (mutation == 2) {
    // The groups of another random selection of dims.
    std::vector<int64_t> other;
    for (int64_t i = 0; i < tiles.num_dimensions(); ++i) {
      if (*rc::gen::arbitrary<bool>()) other.push_back(i);
    }
    given = s.GroupsAlongDims(other);
  }
  const bool holds = given == expected;
  const ReplicaGroups groups(given);
  RC_ASSERT(ProveGroups(s, dims, groups).verdict == (holds ? Verdict::kHolds : Verdict::kFails));
  // The iota form of the same groups gives the same verdict.
  RC_ASSERT(ProveGroups(s, dims, groups.Canonical()).verdict ==
            (holds ? Verdict::kHolds : Verdict::kFails));
}

}  // namespace
}  // namespace spmdcheck::smt
