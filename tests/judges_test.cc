// The lint and SMT proofs judges (check/judges.h) through the check pipeline, on a fixed
// partitioning of a copy over 4 devices: the lint finds the wasteful all-gather + dynamic-slice
// (corpus/lint/wasteful/01_ag_ds_own_tile.hlo) and the verdict stays `holds`; Z3 proves its
// all-gather, and refutes it with the group order swapped (which the oracle sees too). The verdict
// policy's treatment of their records, on synthetic records.
#include "check/judges.h"

#include <memory>
#include <string>
#include <utility>

#include "check/check_pipeline.h"
#include "check/signature.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"

namespace spmdcheck::check {
namespace {

using target::PartitionerUnderTest;
using target::PartitionOutput;
using target::PartitionStatus;
using ::testing::HasSubstr;

constexpr char kGlobal[] = R"(HloModule g, num_partitions=4

ENTRY main {
  param = f32[8,8]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT copy.1 = f32[8,8]{1,0} copy(param), sharding={devices=[4,1]<=[4]}
}
)";

// Right but wasteful: gathers every row block and cuts the device's own block out again.
constexpr char kWasteful[] = R"(HloModule g_spmd, num_partitions=4

ENTRY main_spmd {
  param = f32[2,8]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  all-gather.1 = f32[8,8]{1,0} all-gather(param), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
  partition-id.1 = u32[] partition-id()
  constant.table = u32[4]{0} constant({0, 1, 2, 3})
  dynamic-slice.table = u32[1]{0} dynamic-slice(constant.table, partition-id.1), dynamic_slice_sizes={1}
  reshape.tile = u32[] reshape(dynamic-slice.table)
  constant.size = u32[] constant(2)
  multiply.offset = u32[] multiply(reshape.tile, constant.size)
  constant.zero = u32[] constant(0)
  ROOT dynamic-slice.1 = f32[2,8]{1,0} dynamic-slice(all-gather.1, multiply.offset, constant.zero), dynamic_slice_sizes={2,8}, sharding={devices=[4,1]<=[4]}
}
)";

// Right and cheap: each device copies its own block.
constexpr char kCheap[] = R"(HloModule g_spmd, num_partitions=4

ENTRY main_spmd {
  param = f32[2,8]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT copy.1 = f32[2,8]{1,0} copy(param), sharding={devices=[4,1]<=[4]}
}
)";

std::unique_ptr<HloModule> Parse(const std::string& text) {
  absl::StatusOr<ParsedModule> m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(m->module) : nullptr;
}

// A partitioner that answers every module with the same partitioned text (no executables).
class FixedPartitioner : public PartitionerUnderTest {
 public:
  explicit FixedPartitioner(std::string partitioned) : partitioned_(std::move(partitioned)) {}
  std::string spec() const override { return "fixed"; }
  bool InvalidOutputIsItsFault() const override { return false; }
  absl::StatusOr<PartitionOutput> Partition(const HloModule&, int64_t) override {
    PartitionOutput out;
    out.status = PartitionStatus::kOk;
    out.partitioned = Parse(partitioned_);
    out.partitioned_text = partitioned_;
    return out;
  }

 private:
  std::string partitioned_;
};

CheckOutcome Check(const std::string& partitioned, bool lint, bool prove) {
  std::unique_ptr<HloModule> global = Parse(kGlobal);
  FixedPartitioner partitioner(partitioned);
  CheckOptions options;
  options.lint = lint;
  options.prove = prove;
  options.proof_timeout_ms = 20000;
  absl::StatusOr<CheckOutcome> outcome = CheckPartitioning(*global, partitioner, options);
  EXPECT_TRUE(outcome.ok()) << outcome.status();
  return outcome.ok() ? *std::move(outcome) : CheckOutcome{};
}

// Wrong: the all-gather's group out of order (device 0 gets device 1's block first), its result
// annotated replicated (without an annotation the proofs cannot judge it: unknown).
std::string WithSwappedGroup(std::string text) {
  const std::string from = "replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true";
  text.replace(text.find(from), from.size(),
               "replica_groups={{1,0,2,3}}, dimensions={0}, use_global_device_ids=true, "
               "sharding={replicated}");
  return text;
}

TEST(LintJudge, AWastefulChainIsAFindingNotAMiscompile) {
  const CheckOutcome o = Check(kWasteful, /*lint=*/true, /*prove=*/false);
  EXPECT_EQ(o.status, CheckStatus::kHolds) << o.message;
  const JudgeRecord* lint = FindJudgeRecord(o, "lint");
  ASSERT_NE(lint, nullptr);
  EXPECT_TRUE(lint->ran);
  EXPECT_EQ(lint->verdict, Verdict::kFails) << lint->detail;
  EXPECT_THAT(lint->detail, HasSubstr("wasteful: "));
  ASSERT_FALSE(o.cheaper_chains.empty());
  EXPECT_FALSE(o.cheaper_chains.front().pattern.empty());
  EXPECT_THAT(o.notes, ::testing::Contains(HasSubstr("lint (a cost, not a miscompile)")));
  // The campaign's cost check finds the same chains.
  std::unique_ptr<HloModule> global = Parse(kGlobal);
  std::unique_ptr<HloModule> partitioned = Parse(kWasteful);
  const std::string text(kWasteful);
  const CheckOutcome alone = JudgeProgramsAlone({*partitioned, text, *global, 20000});
  ASSERT_FALSE(alone.cheaper_chains.empty());
  EXPECT_EQ(alone.cheaper_chains.front().pattern, o.cheaper_chains.front().pattern);
  ASSERT_NE(FindJudgeRecord(alone, "lint"), nullptr);
  EXPECT_EQ(FindJudgeRecord(alone, "lint")->verdict, Verdict::kFails);
}

// The judges a campaign runs beside its cases are those of the table that read programs alone:
// the lint. The oracle and XLA's executions need the partitioner's output and inputs; the SMT
// proofs judge every partitioning, correct or not, in the check itself (a refutation decides
// the check's status).
TEST(JudgesTable, OnlyTheLintJudgesProgramsAlone) {
  std::vector<std::string> alone;
  for (const Judge* judge : Judges()) {
    if (judge->JudgesProgramsAlone()) alone.emplace_back(judge->name());
  }
  EXPECT_EQ(alone, std::vector<std::string>{"lint"});
}

TEST(LintJudge, HoldsOnACheapPartitioningAndIsOffByDefault) {
  const CheckOutcome cheap = Check(kCheap, /*lint=*/true, /*prove=*/false);
  EXPECT_EQ(cheap.status, CheckStatus::kHolds);
  const JudgeRecord* lint = FindJudgeRecord(cheap, "lint");
  ASSERT_NE(lint, nullptr);
  EXPECT_EQ(lint->verdict, Verdict::kHolds) << lint->detail;
  EXPECT_TRUE(cheap.cheaper_chains.empty());
  const CheckOutcome off = Check(kWasteful, /*lint=*/false, /*prove=*/false);
  EXPECT_EQ(FindJudgeRecord(off, "lint"), nullptr);
  EXPECT_EQ(FindJudgeRecord(off, "smt-proofs"), nullptr);
  EXPECT_TRUE(off.cheaper_chains.empty());
  EXPECT_TRUE(off.notes.empty());
}

TEST(LintJudge, DoesNotRunOnAWrongPartitioning) {
  const CheckOutcome o = Check(WithSwappedGroup(kWasteful), /*lint=*/true, /*prove=*/false);
  EXPECT_EQ(o.status, CheckStatus::kFails);
  const JudgeRecord* lint = FindJudgeRecord(o, "lint");
  ASSERT_NE(lint, nullptr);
  EXPECT_FALSE(lint->ran);
  EXPECT_EQ(lint->verdict, Verdict::kUnknown);
}

TEST(SmtProofsJudge, ProvesTheAllGather) {
  const CheckOutcome o = Check(kWasteful, /*lint=*/false, /*prove=*/true);
  EXPECT_EQ(o.status, CheckStatus::kHolds) << o.message;
  const JudgeRecord* proofs = FindJudgeRecord(o, "smt-proofs");
  ASSERT_NE(proofs, nullptr);
  EXPECT_EQ(proofs->verdict, Verdict::kHolds) << proofs->detail;
  EXPECT_EQ(proofs->detail, "1 collective(s) proved");
}

TEST(SmtProofsJudge, RefutesAnAllGatherWithItsGroupOutOfOrder) {
  const CheckOutcome o = Check(WithSwappedGroup(kWasteful), /*lint=*/false, /*prove=*/true);
  EXPECT_EQ(o.status, CheckStatus::kFails);  // The oracle's verdict; the proof agrees.
  const JudgeRecord* proofs = FindJudgeRecord(o, "smt-proofs");
  ASSERT_NE(proofs, nullptr);
  EXPECT_EQ(proofs->verdict, Verdict::kFails) << proofs->detail;
  EXPECT_THAT(proofs->detail, HasSubstr("all-gather.1 (all-gather): refuted: groups: device 1"));
  EXPECT_THAT(o.notes, ::testing::Contains(HasSubstr("smt-proofs: all-gather.1")));
}

TEST(SmtProofsJudge, AnUnannotatedCollectiveIsUnknownNeverHolds) {
  std::string text = kWasteful;
  const std::string from = "replica_groups={{0,1,2,3}}";
  text.replace(text.find(from), from.size(), "replica_groups={{1,0,2,3}}");
  const CheckOutcome o = Check(text, /*lint=*/false, /*prove=*/true);
  const JudgeRecord* proofs = FindJudgeRecord(o, "smt-proofs");
  ASSERT_NE(proofs, nullptr);
  EXPECT_EQ(proofs->verdict, Verdict::kUnknown) << proofs->detail;
  EXPECT_THAT(proofs->detail, HasSubstr("has no sharding annotation"));
}

CheckOutcome Records(Verdict oracle, const std::string& judge, Verdict verdict) {
  CheckOutcome o;
  o.judges.push_back({"oracle", oracle, oracle == Verdict::kFails ? "device 0 differs" : ""});
  o.judges.push_back({judge, verdict, "detail of " + judge});
  ApplyVerdictPolicy(o);
  return o;
}

TEST(VerdictPolicy, ARefutedProofNeverLetsTheStatusHold) {
  const CheckOutcome o = Records(Verdict::kHolds, "smt-proofs", Verdict::kFails);
  EXPECT_EQ(o.status, CheckStatus::kUnsupported);
  EXPECT_THAT(o.message, HasSubstr("proof-disagrees"));
  EXPECT_EQ(Records(Verdict::kFails, "smt-proofs", Verdict::kFails).status, CheckStatus::kFails);
  // Unknown proofs (a timeout, an op Z3 cannot encode) change nothing.
  EXPECT_EQ(Records(Verdict::kHolds, "smt-proofs", Verdict::kUnknown).status, CheckStatus::kHolds);
  EXPECT_EQ(Records(Verdict::kUnknown, "smt-proofs", Verdict::kHolds).status,
            CheckStatus::kUnsupported);
}

TEST(VerdictPolicy, AWastefulFindingIsANote) {
  const CheckOutcome o = Records(Verdict::kHolds, "lint", Verdict::kFails);
  EXPECT_EQ(o.status, CheckStatus::kHolds);
  EXPECT_EQ(o.finding, Finding::kNone);
  EXPECT_THAT(o.notes, ::testing::ElementsAre(HasSubstr("detail of lint")));
}

// XLA's sharded run and its single-device run disagree on one output; `sharded_is_ours`: our
// interpreter computes what the sharded run does.
CheckOutcome XlaRunsDisagree(bool sharded_is_ours) {
  CheckOutcome o;
  o.judges.push_back({"oracle", Verdict::kHolds, ""});
  o.judges.push_back({"xla-end-to-end", Verdict::kFails, "device 0 at [4]: expected 9, got 5"});
  o.xla_end_to_end.emplace();
  o.xla_end_to_end->verdict = Verdict::kFails;
  o.xla_end_to_end->detail = "device 0 at [4]: expected 9, got 5";
  o.xla_end_to_end->output = 0;
  o.xla_end_to_end->sharded_agrees_with_interpreter = sharded_is_ours;
  o.interpreter_vs_xla.emplace();
  o.interpreter_vs_xla->verdict = sharded_is_ours ? Verdict::kFails : Verdict::kHolds;
  o.interpreter_vs_xla->detail = "at [4]: expected 9, got 5 (expected = XLA, got = ours)";
  ApplyVerdictPolicy(o);
  return o;
}

TEST(VerdictPolicy, WhenOurInterpreterSidesWithTheShardedRunTheSingleDeviceRunIsTheSuspect) {
  absl::StatusOr<ParsedModule> m = ParseHloModule(R"(HloModule m, num_partitions=2
ENTRY e {
  p = s32[6] parameter(0), sharding={replicated}
  ROOT a = s32[6] add(p, p), sharding={devices=[2]<=[2]}
})");
  ASSERT_TRUE(m.ok()) << m.status();
  const CheckOutcome suspect = XlaRunsDisagree(/*sharded_is_ours=*/true);
  EXPECT_EQ(suspect.status, CheckStatus::kFails);
  EXPECT_EQ(suspect.finding, Finding::kSingleDeviceSuspect);
  EXPECT_THAT(suspect.message, HasSubstr("single-device compile is the suspect"));
  EXPECT_EQ(SignatureOf("xla", suspect, *m->module).text, "xla.single-device-miscompile.add");
  // Our interpreter agrees with the single-device run: the partitioner is the suspect.
  const CheckOutcome confirmed = XlaRunsDisagree(/*sharded_is_ours=*/false);
  EXPECT_EQ(confirmed.status, CheckStatus::kFails);
  EXPECT_EQ(confirmed.finding, Finding::kConfirmedByXla);
  EXPECT_EQ(SignatureOf("xla", confirmed, *m->module).text, "xla.miscompile.add");
}

}  // namespace
}  // namespace spmdcheck::check
