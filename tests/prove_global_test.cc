// Issue 14 item 3: `prove chain --global PRE.hlo` refutes wrong chains of the seed program (a
// mutated replica group, a swapped permute target, a mask on the wrong member) against the
// global program's ops, with a counterexample, where `prove chain` alone can only say `unknown`
// (its lifted global meaning is a guess); GSPMD's own chain is proved either way.
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "lint/global_program.h"
#include "smt/chain_prover.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::lint {
namespace {

using test_support::ReadFileOrFail;
using ::testing::HasSubstr;

std::unique_ptr<HloModule> Parse(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? std::move(parsed->module) : nullptr;
}

// `text` with `from` replaced by `to` (which must occur once).
std::string Mutate(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

class SeedAgainstGlobalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SPMDCHECK_SKIP_WITHOUT_SHARED("cases/seed-scatter/gspmd.hlo");
    gspmd_ = ReadFileOrFail(test_support::SharedPath("cases/seed-scatter/gspmd.hlo"));
    global_ = Parse(ReadFileOrFail(test_support::SharedPath("cases/seed-scatter/pre.hlo")));
    ASSERT_NE(global_, nullptr);
  }

  // Without --global, then with it.
  std::pair<smt::ProofResult, smt::ProofResult> Prove(const std::string& text) {
    std::unique_ptr<HloModule> module = Parse(text);
    if (module == nullptr) return {};
    smt::ChainProofOptions options;
    std::string checked;
    return {smt::ProveChain(*module, options),
            ProveChainAgainstGlobal(*module, text, *global_, options, &checked)};
  }

  std::string gspmd_;
  std::unique_ptr<HloModule> global_;
};

TEST_F(SeedAgainstGlobalTest, GspmdsChainIsProvedAgainstTheGlobalProgram) {
  const auto [alone, against] = Prove(gspmd_);
  EXPECT_EQ(alone.verdict, Verdict::kHolds) << smt::FormatProofResult(alone);
  EXPECT_EQ(against.verdict, Verdict::kHolds) << smt::FormatProofResult(against);
}

TEST_F(SeedAgainstGlobalTest, AMutatedReplicaGroupIsRefuted) {
  // Devices 3 and 4 trade places between the first two all-reduce groups.
  const auto [alone, against] = Prove(Mutate(gspmd_, "replica_groups={{0,1,2,3},{4,5,6,7},",
                                             "replica_groups={{0,1,2,4},{3,5,6,7},"));
  EXPECT_EQ(alone.verdict, Verdict::kUnknown) << smt::FormatProofResult(alone);
  EXPECT_THAT(alone.reason, HasSubstr("is a guess"));
  ASSERT_EQ(against.verdict, Verdict::kFails) << smt::FormatProofResult(against);
  EXPECT_EQ(against.counterexample,
            "device 0, local index [0,0,0] of copy.428 / copy.131 (global [0,0,0] under the "
            "chain's sharding): the chain gives param[0,0,0,0,0] + param[0,0,0,2,0], the global "
            "program gives param[0,0,0,0,0]");
}

TEST_F(SeedAgainstGlobalTest, ASwappedPermuteTargetIsRefuted) {
  // collective-permute.11: device 8's tile goes to 24 and device 40's to 16.
  const auto [alone, against] =
      Prove(Mutate(Mutate(gspmd_, "{8,16},{9,17}", "{8,24},{9,17}"), "{40,24}", "{40,16}"));
  EXPECT_EQ(alone.verdict, Verdict::kUnknown) << smt::FormatProofResult(alone);
  ASSERT_EQ(against.verdict, Verdict::kFails) << smt::FormatProofResult(against);
  EXPECT_THAT(against.counterexample,
              HasSubstr("the chain gives param[0,0,0,12,0], the global program gives "
                        "param[0,0,0,8,0]"));
}

TEST_F(SeedAgainstGlobalTest, AMaskOnTheWrongMemberIsRefuted) {
  const auto [alone, against] =
      Prove(Mutate(gspmd_, "constant.src = u32[] constant(0)", "constant.src = u32[] constant(1)"));
  EXPECT_EQ(alone.verdict, Verdict::kUnknown) << smt::FormatProofResult(alone);
  ASSERT_EQ(against.verdict, Verdict::kFails) << smt::FormatProofResult(against);
  EXPECT_THAT(against.counterexample, HasSubstr("the chain gives param[0,1,0,0,0]"));
}

TEST_F(SeedAgainstGlobalTest, AGlobalProgramWithoutTheValuesIsUnknown) {
  std::unique_ptr<HloModule> module = Parse(gspmd_);
  std::unique_ptr<HloModule> other = Parse(
      "HloModule other, num_partitions=64\n"
      "ENTRY e {\n  p = bf16[4] parameter(0)\n  ROOT c = bf16[4] copy(p)\n}\n");
  ASSERT_NE(other, nullptr);
  const smt::ProofResult r =
      ProveChainAgainstGlobal(*module, gspmd_, *other, smt::ChainProofOptions(), nullptr);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_THAT(r.reason, HasSubstr("--global has no instruction named"));
}

}  // namespace
}  // namespace spmdcheck::lint
