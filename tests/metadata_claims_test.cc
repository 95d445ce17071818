// Claims read from XLA's metadata (check/metadata_claims.h) on a module shaped like GSPMD's
// output for a windowed op: the instruction that ends a handler holds the source op's value, a
// halo exchange (a collective-permute that leaves a partition without data) holds none.
#include "check/metadata_claims.h"

#include <memory>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "ir/hlo_parser.h"

namespace spmdcheck::check {
namespace {

std::unique_ptr<HloModule> Parse(const std::string& text) {
  absl::StatusOr<ParsedModule> m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(m->module) : nullptr;
}

// What XLA received: a copy split over 3 devices.
constexpr char kReceived[] = R"(HloModule g, num_partitions=3
ENTRY main {
  p = f32[6] parameter(0), metadata={op_name="p"}
  c = f32[6] copy(p), metadata={op_name="copy.15"}
  ROOT n = f32[6] negate(c), metadata={op_name="negate.16"}
}
)";

// After propagation: the shardings XLA chose.
constexpr char kPropagated[] = R"(HloModule g, num_partitions=3
ENTRY main {
  p = f32[6] parameter(0), sharding={devices=[3]<=[3]}
  c = f32[6] copy(p), sharding={devices=[3]<=[3]}
  ROOT n = f32[6] negate(c), sharding={devices=[3]<=[3]}
}
)";

// Partitioned, with `permute` (named after the copy, shaped like its tile) a shift to the left
// neighbour: device 2 receives nothing.
std::string Partitioned(const std::string& pairs) {
  return R"(HloModule g_spmd, num_partitions=3
ENTRY main {
  p = f32[2] parameter(0), metadata={op_name="p"}
  c = f32[2] copy(p), metadata={op_name="copy.15"}
  permute = f32[2] collective-permute(c), channel_id=1, source_target_pairs=)" +
         pairs + R"(, metadata={op_name="copy.15"}
  ROOT n = f32[2] negate(c), metadata={op_name="negate.16"}
}
)";
}

TEST(MetadataClaims, AHaloExchangeHoldsNoValueOfTheOpItIsNamedAfter) {
  std::unique_ptr<HloModule> received = Parse(kReceived);
  std::unique_ptr<HloModule> propagated = Parse(kPropagated);
  std::unique_ptr<HloModule> partitioned = Parse(Partitioned("{{1,0},{2,1}}"));
  auto claims = ClaimsFromMetadata(*received, propagated.get(), *partitioned);
  ASSERT_TRUE(claims.contains("c"));
  EXPECT_EQ(claims.at("c").global, "c");
  EXPECT_EQ(claims.at("c").sharding.ToString(false), "{devices=[3]<=[3]}");
  EXPECT_FALSE(claims.contains("permute"));
  ASSERT_TRUE(claims.contains("n"));
  EXPECT_EQ(claims.at("n").global, "n");
}

// A full permutation of the copy's own part, labelled after the copy, moves the copy's value to
// other devices for a consumer: the copy holds it under its sharding, the permute does not (the
// campaign's `xla.miscompile.copy`, seed 103, named such a permute as the first divergence).
TEST(MetadataClaims, APermuteOfTheValueItIsNamedAfterMovesItAway) {
  std::unique_ptr<HloModule> received = Parse(kReceived);
  std::unique_ptr<HloModule> propagated = Parse(kPropagated);
  std::unique_ptr<HloModule> partitioned = Parse(Partitioned("{{0,1},{1,2},{2,0}}"));
  auto claims = ClaimsFromMetadata(*received, propagated.get(), *partitioned);
  ASSERT_TRUE(claims.contains("c"));
  EXPECT_EQ(claims.at("c").global, "c");
  EXPECT_FALSE(claims.contains("permute"));
}

// A permute that ends the handler (its operand made for another op, or not its tile shape)
// holds the op's value: the reshard into the propagated sharding.
TEST(MetadataClaims, APermuteThatEndsTheHandlerHoldsTheValue) {
  std::unique_ptr<HloModule> received = Parse(kReceived);
  std::unique_ptr<HloModule> propagated = Parse(kPropagated);
  std::unique_ptr<HloModule> partitioned = Parse(R"(HloModule g_spmd, num_partitions=3
ENTRY main {
  p = f32[2] parameter(0), metadata={op_name="p"}
  c = f32[2] copy(p), metadata={op_name="other.1"}
  permute = f32[2] collective-permute(c), channel_id=1, source_target_pairs={{0,1},{1,2},{2,0}}, metadata={op_name="copy.15"}
  ROOT n = f32[2] negate(permute), metadata={op_name="negate.16"}
}
)");
  auto claims = ClaimsFromMetadata(*received, propagated.get(), *partitioned);
  ASSERT_TRUE(claims.contains("permute"));
  EXPECT_EQ(claims.at("permute").global, "c");
}

// Shardy's propagated module renames the instructions (copy c received is c.0 propagated) and
// keeps the op_name metadata: the shardings are found through it.
TEST(MetadataClaims, ShardyRenamesThePropagatedInstructions) {
  std::unique_ptr<HloModule> received = Parse(kReceived);
  std::unique_ptr<HloModule> propagated = Parse(
      R"(HloModule g, num_partitions=3
ENTRY main {
  p.0 = f32[6] parameter(0), sharding={devices=[3]<=[3]}, metadata={op_name="p"}
  c.0 = f32[6] copy(p.0), sharding={devices=[3]<=[3]}, metadata={op_name="copy.15"}
  ROOT n.0 = f32[6] negate(c.0), sharding={replicated}, metadata={op_name="negate.16"}
}
)");
  std::unique_ptr<HloModule> partitioned = Parse(Partitioned("{{1,0},{2,1}}"));
  auto claims = ClaimsFromMetadata(*received, propagated.get(), *partitioned);
  ASSERT_TRUE(claims.contains("c"));
  EXPECT_EQ(claims.at("c").global, "c");
  EXPECT_EQ(claims.at("c").sharding.ToString(false), "{devices=[3]<=[3]}");
  // n's propagated sharding is replicated: its tile is the whole f32[6], which the partitioned
  // f32[2] is not, so nothing claims it.
  EXPECT_FALSE(claims.contains("n"));
}

// An all-gather named after the copy, with the copy's whole shape (the reshard of the copy for a
// consumer that needs all of it, as GSPMD labels it): a tentative claim on all of the copy; the
// instruction with the tile shape keeps the real claim.
TEST(MetadataClaims, AWholeCopyNamedAfterAnOpClaimsItTentatively) {
  std::unique_ptr<HloModule> received = Parse(kReceived);
  std::unique_ptr<HloModule> propagated = Parse(kPropagated);
  std::unique_ptr<HloModule> partitioned = Parse(R"(HloModule g_spmd, num_partitions=3
ENTRY main {
  p = f32[2] parameter(0), metadata={op_name="p"}
  c = f32[2] copy(p), metadata={op_name="copy.15"}
  whole = f32[6] all-gather(c), channel_id=1, replica_groups={{0,1,2}}, dimensions={0}, metadata={op_name="copy.15"}
  ROOT n = f32[2] negate(c), metadata={op_name="negate.16"}
}
)");
  auto claims = ClaimsFromMetadata(*received, propagated.get(), *partitioned);
  ASSERT_TRUE(claims.contains("c"));
  EXPECT_FALSE(claims.at("c").tentative);
  ASSERT_TRUE(claims.contains("whole"));
  EXPECT_EQ(claims.at("whole").global, "c");
  EXPECT_TRUE(claims.at("whole").tentative);
  EXPECT_TRUE(claims.at("whole").sharding.IsReplicated());
  // A parameter's name is no source op (its value is the input itself).
  EXPECT_FALSE(claims.contains("p"));
}

// The consumer's handler cuts the padding off a padded all-gather of its operand: that slice,
// named after the consumer (a slice of the copy), has the operand's whole shape and claims it
// tentatively.
TEST(MetadataClaims, AWholeCopyOfAnOperandNamedAfterItsConsumerClaimsItTentatively) {
  std::unique_ptr<HloModule> received = Parse(R"(HloModule g, num_partitions=3
ENTRY main {
  p = f32[6] parameter(0), metadata={op_name="p"}
  c = f32[6] copy(p), metadata={op_name="copy.15"}
  ROOT s = f32[3] slice(c), slice={[1:4]}, metadata={op_name="slice.16"}
}
)");
  std::unique_ptr<HloModule> propagated = Parse(R"(HloModule g, num_partitions=3
ENTRY main {
  p = f32[6] parameter(0), sharding={devices=[3]<=[3]}
  c = f32[6] copy(p), sharding={devices=[3]<=[3]}
  ROOT s = f32[3] slice(c), sharding={devices=[3]<=[3]}
}
)");
  std::unique_ptr<HloModule> partitioned = Parse(R"(HloModule g_spmd, num_partitions=3
ENTRY main {
  p = f32[2] parameter(0), metadata={op_name="p"}
  c = f32[2] copy(p), metadata={op_name="copy.15"}
  z = f32[] constant(0)
  padded = f32[3] pad(c, z), padding=0_1, metadata={op_name="copy.15"}
  gathered = f32[9] all-gather(padded), channel_id=1, replica_groups={{0,1,2}}, dimensions={0}, metadata={op_name="copy.15"}
  whole = f32[6] slice(gathered), slice={[0:6]}, metadata={op_name="slice.16"}
  ROOT s = f32[1] slice(whole), slice={[1:2]}, metadata={op_name="slice.16"}
}
)");
  auto claims = ClaimsFromMetadata(*received, propagated.get(), *partitioned);
  ASSERT_TRUE(claims.contains("whole"));
  EXPECT_EQ(claims.at("whole").global, "c");
  EXPECT_TRUE(claims.at("whole").tentative);
  // Neither the padded part nor the padded gather has the whole shape of the copy or its operand.
  EXPECT_FALSE(claims.contains("padded"));
  EXPECT_FALSE(claims.contains("gathered"));
  ASSERT_TRUE(claims.contains("s"));
  EXPECT_FALSE(claims.at("s").tentative);
}

TEST(MetadataClaims, NoPropagatedModuleNoClaims) {
  std::unique_ptr<HloModule> received = Parse(kReceived);
  std::unique_ptr<HloModule> partitioned = Parse(Partitioned("{{1,0},{2,1}}"));
  EXPECT_TRUE(ClaimsFromMetadata(*received, nullptr, *partitioned).empty());
}

}  // namespace
}  // namespace spmdcheck::check
