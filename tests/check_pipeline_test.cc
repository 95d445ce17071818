// The check pipeline's verdict logic for partitioners that run programs (XLA), against an
// in-process fake: a fail is claimed only when the partitioner's own execution confirms it;
// what only our oracle sees is oracle-only, and a global program our interpreter computes
// differently is oracle-disagrees (both unknown).
#include "check/check_pipeline.h"

#include <memory>
#include <string>
#include <vector>

#include "check/judges.h"
#include "check/signature.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "oracle/engine.h"
#include "oracle/inputs.h"
#include "oracle/sharded_values.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::check {
namespace {

using target::Executable;
using target::PartitionerUnderTest;
using target::PartitionOutput;
using target::PartitionStatus;

using ::testing::HasSubstr;

constexpr char kGlobal[] = R"(HloModule g, num_partitions=2

ENTRY e {
  p = s32[4] parameter(0), sharding={devices=[2]<=[2]}
  ROOT n = s32[4] negate(p), sharding={devices=[2]<=[2]}
}
)";
// Right: each device negates its half.
constexpr char kRight[] = R"(HloModule g_spmd, num_partitions=2

ENTRY e {
  p = s32[2] parameter(0), sharding={devices=[2]<=[2]}
  ROOT n = s32[2] negate(p)
}
)";
// Wrong: the identity.
constexpr char kWrong[] = R"(HloModule g_spmd, num_partitions=2

ENTRY e {
  ROOT p = s32[2] parameter(0), sharding={devices=[2]<=[2]}
}
)";

std::unique_ptr<HloModule> Parse(const char* text) {
  absl::StatusOr<ParsedModule> m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return std::move(m->module);
}

// Runs a module on our interpreter per device: stands in for XLA's executables.
class InterpretedExecutable : public Executable {
 public:
  InterpretedExecutable(const char* text, int32_t off_by) : module_(Parse(text)), off_by_(off_by) {}
  int64_t num_devices() const override { return 2; }
  absl::StatusOr<std::vector<std::vector<Literal>>> Run(
      const std::vector<std::vector<Literal>>& arguments) override {
    oracle::EngineOptions options;
    options.num_partitions = 2;
    oracle::Engine engine(*module_, options);
    std::vector<std::vector<Literal>> per_device(2);
    for (int d = 0; d < 2; ++d) {
      for (const auto& argument : arguments) per_device[d].push_back(argument[d]);
    }
    absl::StatusOr<std::vector<Literal>> results = engine.Run(per_device);
    if (!results.ok()) return results.status();
    for (Literal& value : *results) {
      for (int64_t i = 0; i < value.element_count(); ++i) {
        value.SetInt64(i, value.GetInt64(i) + off_by_);
      }
    }
    return std::vector<std::vector<Literal>>{{(*results)[0], (*results)[1]}};
  }

 private:
  std::unique_ptr<HloModule> module_;
  int32_t off_by_;
};

class FakeXla : public PartitionerUnderTest {
 public:
  // `partitioned`: what it says it partitioned to; `runs`: what its executable really runs;
  // `off_by`: all its runs add this to every element (XLA computing differently from us).
  // `received`: the module it says it received (XLA's round trip); its single-device run runs
  // that module, as XLA's does.
  FakeXla(const char* partitioned, const char* runs, int32_t off_by = 0,
          const char* received = kGlobal)
      : partitioned_(partitioned), runs_(runs), off_by_(off_by), received_(received) {}
  std::string spec() const override { return "fake-xla"; }
  bool InvalidOutputIsItsFault() const override { return false; }
  absl::StatusOr<PartitionOutput> Partition(const HloModule& global, int64_t) override {
    PartitionOutput out;
    out.status = PartitionStatus::kOk;
    out.partitioned = Parse(partitioned_);
    out.received = Parse(received_);
    out.parameter_shardings = {*global.entry()->parameters()[0]->sharding()};
    out.output_shardings = {*global.entry()->root()->sharding()};
    out.executable = std::make_shared<InterpretedExecutable>(runs_, off_by_);
    return out;
  }
  absl::StatusOr<std::vector<Literal>> RunGlobal(const HloModule& /*global*/,
                                                 const std::vector<Literal>& args) override {
    const std::unique_ptr<HloModule> received = Parse(received_);
    oracle::Engine engine(*received, oracle::EngineOptions{});
    absl::StatusOr<std::vector<Literal>> results = engine.Run({args});
    if (!results.ok()) return results.status();
    Literal value = (*results)[0];
    for (int64_t i = 0; i < value.element_count(); ++i) {
      value.SetInt64(i, value.GetInt64(i) + off_by_);
    }
    return std::vector<Literal>{value};
  }

 private:
  const char* partitioned_;
  const char* runs_;
  int32_t off_by_;
  const char* received_;
};

CheckOutcome Check(PartitionerUnderTest& partitioner) {
  std::unique_ptr<HloModule> global = Parse(kGlobal);
  absl::StatusOr<CheckOutcome> outcome = CheckPartitioning(*global, partitioner, CheckOptions{});
  EXPECT_TRUE(outcome.ok()) << outcome.status();
  return *std::move(outcome);
}

TEST(CheckPipelineVerdicts, HoldsWhenAllThreeAgree) {
  FakeXla xla(kRight, kRight);
  CheckOutcome o = Check(xla);
  EXPECT_EQ(o.status, CheckStatus::kHolds) << o.message;
  ASSERT_TRUE(o.xla_end_to_end.has_value());
  EXPECT_EQ(o.xla_end_to_end->verdict, Verdict::kHolds);
  EXPECT_EQ(o.interpreter_vs_xla->verdict, Verdict::kHolds);
  // Every judge of the table left its record, in the table's order.
  std::vector<std::string> judges;
  for (const JudgeRecord& r : o.judges) judges.push_back(r.judge);
  EXPECT_THAT(judges,
              testing::ElementsAre("oracle", "round-trip", "xla-end-to-end", "interpreter-vs-xla"));
  EXPECT_EQ(o.judges[1].verdict, Verdict::kHolds) << o.judges[1].detail;
}

TEST(JudgesTable, OracleFirstThenRoundTripThenXlasExecutionsThenLintThenSmtProofs) {
  std::vector<std::string> names;
  for (const Judge* judge : Judges()) names.push_back(std::string(judge->name()));
  EXPECT_THAT(names,
              testing::ElementsAre("oracle", "round-trip", "xla-executions", "lint", "smt-proofs"));
}

// What XLA received computes abs, not the negate that was sent; its partitioning of abs is
// right, and its single-device run (of what it received) agrees with it. Every comparison made
// on XLA's side holds, but about another program: no `holds`.
constexpr char kReceivedAbs[] = R"(HloModule g, num_partitions=2

ENTRY e {
  p = s32[4] parameter(0), sharding={devices=[2]<=[2]}
  ROOT n = s32[4] abs(p), sharding={devices=[2]<=[2]}
}
)";
constexpr char kRightAbs[] = R"(HloModule g_spmd, num_partitions=2

ENTRY e {
  p = s32[2] parameter(0), sharding={devices=[2]<=[2]}
  ROOT n = s32[2] abs(p)
}
)";

TEST(CheckPipelineVerdicts, ARoundTripThatChangesTheValuesIsNeverHolds) {
  FakeXla xla(kRightAbs, kRightAbs, 0, kReceivedAbs);
  CheckOutcome o = Check(xla);
  EXPECT_EQ(o.status, CheckStatus::kUnsupported) << o.message;
  EXPECT_EQ(o.finding, Finding::kRoundTripChangesMeaning);
  EXPECT_THAT(o.message, HasSubstr("round-trip-changes-meaning"));
  EXPECT_THAT(o.message, HasSubstr("expected = the program as sent"));
  const JudgeRecord* route = FindJudgeRecord(o, "round-trip");
  ASSERT_NE(route, nullptr);
  EXPECT_EQ(route->verdict, Verdict::kFails);
  std::unique_ptr<HloModule> global = Parse(kGlobal);
  const FailureSignature signature = SignatureOf("fake-xla", o, *global);
  EXPECT_THAT(signature.text, HasSubstr("fake-xla.round-trip-changes-meaning."));
  EXPECT_FALSE(signature.claim);
}

// A fail XLA's execution confirms stays a fail; the changed route is a note.
TEST(VerdictPolicy, ARoundTripDifferenceUnderAConfirmedFailIsANote) {
  CheckOutcome o;
  o.judges = {{"oracle", Verdict::kFails, "device 1 differs", 0, true},
              {"round-trip", Verdict::kFails, "trial 0: at [1]: expected 2, got -2", 0, true},
              {"xla-end-to-end", Verdict::kFails, "", 0, true},
              {"interpreter-vs-xla", Verdict::kHolds, "", 0, true}};
  o.xla_end_to_end.emplace();
  o.xla_end_to_end->verdict = Verdict::kFails;
  o.interpreter_vs_xla.emplace();
  o.interpreter_vs_xla->verdict = Verdict::kHolds;
  ApplyVerdictPolicy(o);
  EXPECT_EQ(o.status, CheckStatus::kFails);
  EXPECT_EQ(o.finding, Finding::kConfirmedByXla);
  EXPECT_THAT(o.notes, testing::Contains(HasSubstr("computes other values than the one sent")));
}

// The policy on records alone: XLA's sharded run wrong only with garbage in the padding of
// uneven input shards is no bug claim, whatever the oracle says.
TEST(VerdictPolicy, ReadsInputPaddingIsNoBugClaim) {
  CheckOutcome o;
  o.judges = {{"oracle", Verdict::kFails, "device 1 differs", 0, true},
              {"xla-end-to-end", Verdict::kUnknown, "", 0, true},
              {"interpreter-vs-xla", Verdict::kHolds, "", 0, true}};
  o.xla_end_to_end.emplace();
  o.xla_end_to_end->padding_dependent = true;
  o.interpreter_vs_xla.emplace();
  o.interpreter_vs_xla->verdict = Verdict::kHolds;
  ApplyVerdictPolicy(o);
  EXPECT_EQ(o.status, CheckStatus::kUnsupported);
  EXPECT_EQ(o.finding, Finding::kReadsInputPadding);
}

// Without executables the oracle decides: its fail is a fail (ours), its unknown unknown.
TEST(VerdictPolicy, WithoutExecutablesTheOracleDecides) {
  CheckOutcome fails;
  fails.judges = {{"oracle", Verdict::kFails, "device 0 differs at [3]", 0, true}};
  ApplyVerdictPolicy(fails);
  EXPECT_EQ(fails.status, CheckStatus::kFails);
  EXPECT_EQ(fails.message, "device 0 differs at [3]");
  CheckOutcome unknown;
  unknown.judges = {{"oracle", Verdict::kUnknown, "oracle: too large", 0, false}};
  ApplyVerdictPolicy(unknown);
  EXPECT_EQ(unknown.status, CheckStatus::kUnsupported);
  EXPECT_EQ(unknown.finding, Finding::kNone);
}

TEST(CheckPipelineVerdicts, FailsOnlyWhenXlasExecutionConfirms) {
  FakeXla xla(kWrong, kWrong);
  CheckOutcome o = Check(xla);
  EXPECT_EQ(o.status, CheckStatus::kFails) << o.message;
  EXPECT_EQ(o.finding, Finding::kConfirmedByXla);
  EXPECT_THAT(o.message, HasSubstr("single-device run"));
  EXPECT_EQ(o.report.verdict, Verdict::kFails);  // The oracle agrees.
}

TEST(CheckPipelineVerdicts, OracleOnlyIsUnknownNotAnXlaBug) {
  // The module shown is wrong, but what XLA runs is right: only our oracle sees a difference.
  FakeXla xla(kWrong, kRight);
  CheckOutcome o = Check(xla);
  EXPECT_EQ(o.status, CheckStatus::kUnsupported) << o.message;
  EXPECT_EQ(o.finding, Finding::kOracleOnly);
  EXPECT_THAT(o.message, HasSubstr("oracle-only"));
  EXPECT_THAT(o.message, HasSubstr("not an XLA bug"));
}

TEST(CheckPipelineVerdicts, InterpretersDisagreeingIsOracleDisagrees) {
  // XLA's sharded and single-device runs agree with each other, not with our interpreter.
  FakeXla xla(kRight, kRight, /*off_by=*/1);
  CheckOutcome o = Check(xla);
  EXPECT_EQ(o.status, CheckStatus::kUnsupported) << o.message;
  EXPECT_EQ(o.finding, Finding::kOracleDisagrees);
  EXPECT_EQ(o.xla_end_to_end->verdict, Verdict::kHolds);
  ASSERT_TRUE(o.interpreter_vs_xla.has_value());
  EXPECT_EQ(o.interpreter_vs_xla->verdict, Verdict::kFails);
  EXPECT_THAT(o.message, HasSubstr("oracle-disagrees"));
}

TEST(CheckPipelineVerdicts, NoExecuteLeavesAFailUnconfirmed) {
  FakeXla xla(kWrong, kWrong);
  std::unique_ptr<HloModule> global = Parse(kGlobal);
  CheckOptions options;
  options.execute = false;
  absl::StatusOr<CheckOutcome> o = CheckPartitioning(*global, xla, options);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->status, CheckStatus::kUnsupported);
  EXPECT_EQ(o->finding, Finding::kOracleOnly);
}

TEST(CheckPipelineVerdicts, UnreadableXlaOutputIsOurGapNotACrash) {
  class Unverifiable : public FakeXla {
   public:
    Unverifiable() : FakeXla(kRight, kRight) {}
    absl::StatusOr<PartitionOutput> Partition(const HloModule& global, int64_t n) override {
      absl::StatusOr<PartitionOutput> out = FakeXla::Partition(global, n);
      // A shape our verifier rejects: negate of s32[2] claimed to give s32[3].
      HloInstruction* root = out->partitioned->entry()->root();
      root->set_shape(Shape::Array(PrimitiveType::kS32, {3}));
      return out;
    }
  } xla;
  CheckOutcome o = Check(xla);
  EXPECT_EQ(o.status, CheckStatus::kUnsupported) << o.message;
  EXPECT_THAT(o.message, HasSubstr("a gap of ours"));
}

// An executable that runs `right` on its first `right_runs` runs and `wrong` after them, and
// keeps every run's arguments: a miscompile that shows only on some inputs.
class WrongFromRun : public Executable {
 public:
  WrongFromRun(int64_t right_runs, std::vector<std::vector<std::vector<Literal>>>* seen)
      : right_(kRight, 0), wrong_(kWrong, 0), right_runs_(right_runs), seen_(seen) {}
  int64_t num_devices() const override { return 2; }
  absl::StatusOr<std::vector<std::vector<Literal>>> Run(
      const std::vector<std::vector<Literal>>& arguments) override {
    seen_->push_back(arguments);
    return static_cast<int64_t>(seen_->size()) <= right_runs_ ? right_.Run(arguments)
                                                              : wrong_.Run(arguments);
  }

 private:
  InterpretedExecutable right_, wrong_;
  int64_t right_runs_;
  std::vector<std::vector<std::vector<Literal>>>* seen_;
};

class XlaWrongFromRun : public FakeXla {
 public:
  XlaWrongFromRun(const char* partitioned, int64_t right_runs)
      : FakeXla(partitioned, kRight), right_runs_(right_runs) {}
  absl::StatusOr<PartitionOutput> Partition(const HloModule& global, int64_t n) override {
    absl::StatusOr<PartitionOutput> out = FakeXla::Partition(global, n);
    out->executable = std::make_shared<WrongFromRun>(right_runs_, &runs);
    return out;
  }
  std::vector<std::vector<std::vector<Literal>>> runs;

 private:
  int64_t right_runs_;
};

// XLA's executions run every trial --trials asks for (they stopped at 2, and a miscompile that
// shows on the third inputs was called oracle-only).
TEST(CheckPipelineTrials, XlasExecutionsHonourTrials) {
  XlaWrongFromRun xla(kRight, /*right_runs=*/2);
  std::unique_ptr<HloModule> global = Parse(kGlobal);
  CheckOptions options;
  options.trials = 4;
  absl::StatusOr<CheckOutcome> o = CheckPartitioning(*global, xla, options);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->status, CheckStatus::kFails) << o->message;
  EXPECT_EQ(o->finding, Finding::kConfirmedByXla);
  ASSERT_TRUE(o->xla_end_to_end.has_value());
  EXPECT_EQ(o->xla_end_to_end->trial, 2);
  EXPECT_EQ(o->xla_end_to_end->trials_run, 3);

  XlaWrongFromRun holds(kRight, /*right_runs=*/100);
  o = CheckPartitioning(*global, holds, options);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->status, CheckStatus::kHolds) << o->message;
  EXPECT_EQ(o->xla_end_to_end->trials_run, 4);
  EXPECT_EQ(holds.runs.size(), 4u);
}

// A difference only the oracle sees is retried on XLA: the oracle's failing inputs first, then
// twice as many trials as asked, before it is called oracle-only.
TEST(CheckPipelineTrials, OracleOnlyIsRetriedOnXlaWithTheOraclesInputsFirst) {
  XlaWrongFromRun xla(kWrong, /*right_runs=*/100);
  std::unique_ptr<HloModule> global = Parse(kGlobal);
  CheckOptions options;
  options.trials = 2;
  options.seed = 5;
  absl::StatusOr<CheckOutcome> o = CheckPartitioning(*global, xla, options);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->finding, Finding::kOracleOnly) << o->message;
  ASSERT_GE(o->report.failing_trial, 0);
  EXPECT_EQ(o->xla_end_to_end->trials_run, 5);
  EXPECT_THAT(o->message, HasSubstr("on 5 trials (the oracle's failing inputs first)"));
  ASSERT_EQ(xla.runs.size(), 5u);
  // The first run's shards are the oracle's failing trial's inputs.
  std::vector<Literal> failing = oracle::TrialInputs(*global, options.seed, o->report.failing_trial,
                                                     oracle::InputStyle::kSmallIntegers);
  absl::StatusOr<Literal> shard0 = oracle::ShardOf(
      failing[0], *global->entry()->parameters()[0]->sharding(), 0, oracle::PaddingFill::kPoison);
  ASSERT_TRUE(shard0.ok());
  EXPECT_EQ(xla.runs[0][0][0], *shard0);

  // And a miscompile XLA shows only on those extra inputs is confirmed.
  XlaWrongFromRun late(kWrong, /*right_runs=*/3);
  o = CheckPartitioning(*global, late, options);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->status, CheckStatus::kFails) << o->message;
  EXPECT_EQ(o->finding, Finding::kConfirmedByXla);
}

TEST(DescribeModuleChanges, NamesOpcodeCountsThatMoved) {
  std::unique_ptr<HloModule> a = Parse(kGlobal);
  std::unique_ptr<HloModule> b = Parse(kWrong);
  std::vector<std::string> changes = DescribeModuleChanges(*a, *b);
  ASSERT_FALSE(changes.empty());
  EXPECT_THAT(changes[0], HasSubstr("negate 1 -> 0"));
}

// The check pipeline knows which module is global: a matching signature does not make the
// global program a partitioned one (tests/data/manual_region_same_signature.hlo).
TEST(CheckPipeline, AGlobalProgramWithAManualRegionIsJudgedAsGlobal) {
  absl::StatusOr<ParsedModule> m = ParseHloModule(::spmdcheck::test_support::ReadFileOrFail(
      ::spmdcheck::test_support::SourceDir() + "/tests/data/manual_region_same_signature.hlo"));
  ASSERT_TRUE(m.ok()) << m.status();
  CheckOptions options;
  options.seed = 17986186861305372233u;
  options.trials = 2;
  absl::StatusOr<CheckOutcome> o = CheckPartitioning(*m->module, options);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->status, CheckStatus::kHolds) << o->message;
}

// A miscompile only XLA's execution shows, in output {1} of a tuple root, is named after the
// instruction that produces that output (through nested tuples), not after the tuple.
TEST(SignatureTest, XlaMiscompileOfATupleOutputNamesItsProducer) {
  absl::StatusOr<ParsedModule> m = ParseHloModule(R"(HloModule t, num_partitions=2
ENTRY main (p: f32[4], q: f32[4]) -> (f32[4], (f32[4], f32[4])) {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  n = f32[4] negate(q)
  a = f32[4] add(p, q)
  inner = (f32[4], f32[4]) tuple(a, n)
  ROOT t = (f32[4], (f32[4], f32[4])) tuple(p, inner)
})");
  ASSERT_TRUE(m.ok()) << m.status();
  CheckOutcome outcome;
  outcome.status = CheckStatus::kFails;
  outcome.finding = Finding::kConfirmedByXla;
  outcome.xla_end_to_end.emplace();
  outcome.xla_end_to_end->verdict = Verdict::kFails;
  outcome.xla_end_to_end->output = 2;
  EXPECT_EQ(SignatureOf("xla", outcome, *m->module).text, "xla.miscompile.negate");
  outcome.xla_end_to_end->output = 1;
  EXPECT_EQ(SignatureOf("xla", outcome, *m->module).text, "xla.miscompile.add");
  // The oracle's first divergence at the tuple itself: XLA's wrong output still names it.
  outcome.report.verdict = Verdict::kFails;
  outcome.report.first_divergence.emplace();
  outcome.report.first_divergence->holds = "t";
  EXPECT_EQ(SignatureOf("xla", outcome, *m->module).text, "xla.miscompile.add");
  // A divergence outside the wrong output's cone is not what XLA showed: the producer names it.
  outcome.report.first_divergence->holds = "n";
  EXPECT_EQ(SignatureOf("xla", outcome, *m->module).text, "xla.miscompile.add");
  outcome.xla_end_to_end->output = 2;
  EXPECT_EQ(SignatureOf("xla", outcome, *m->module).text, "xla.miscompile.negate");
  outcome.report.first_divergence.reset();
  outcome.xla_end_to_end->output = -1;  // Unknown output: the root.
  EXPECT_EQ(SignatureOf("xla", outcome, *m->module).text, "xla.miscompile.tuple");
}

// Two wrong values, and XLA's execution flags only the second's output: the divergence that
// explains the failure is the first one in that output's cone, not the oracle's first (the case
// of a fuzz finding that was named `xla.miscompile.copy` after a conv's halo exchange while XLA's
// wrong output was a dynamic-update-slice's).
TEST(SignatureTest, TheCauseIsTheFirstDivergenceInTheOutputXlaFoundWrong) {
  absl::StatusOr<ParsedModule> m = ParseHloModule(R"(HloModule t, num_partitions=2
ENTRY main (p: f32[4], q: f32[4]) -> (f32[4], f32[4]) {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  c = f32[4] copy(p)
  n = f32[4] negate(c)
  s = f32[4] sqrt(q)
  a = f32[4] abs(s)
  ROOT t = (f32[4], f32[4]) tuple(n, a)
})");
  ASSERT_TRUE(m.ok()) << m.status();
  CheckOutcome outcome;
  outcome.status = CheckStatus::kFails;
  outcome.finding = Finding::kConfirmedByXla;
  outcome.report.verdict = Verdict::kFails;
  outcome.report.first_divergence.emplace();
  outcome.report.first_divergence->holds = "c";
  for (const char* holds : {"n", "s", "a"}) {
    outcome.report.later_divergences.emplace_back();
    outcome.report.later_divergences.back().holds = holds;
  }
  outcome.xla_end_to_end.emplace();
  outcome.xla_end_to_end->verdict = Verdict::kFails;
  outcome.xla_end_to_end->output = 1;
  const oracle::Divergence* cause = CauseDivergence(outcome, *m->module);
  ASSERT_NE(cause, nullptr);
  EXPECT_EQ(cause->holds, "s");
  EXPECT_EQ(SignatureOf("xla", outcome, *m->module).text, "xla.miscompile.sqrt");
  // XLA names output 0: the oracle's first divergence is in its cone.
  outcome.xla_end_to_end->output = 0;
  EXPECT_EQ(CauseDivergence(outcome, *m->module), &*outcome.report.first_divergence);
  EXPECT_EQ(SignatureOf("xla", outcome, *m->module).text, "xla.miscompile.copy");
  // No wrong output named (the oracle alone): its first divergence.
  outcome.xla_end_to_end.reset();
  EXPECT_EQ(CauseDivergence(outcome, *m->module), &*outcome.report.first_divergence);
  // No divergence in the wrong output's cone: none, and the output's producer names it.
  outcome.report.later_divergences.clear();
  outcome.xla_end_to_end.emplace();
  outcome.xla_end_to_end->output = 1;
  EXPECT_EQ(CauseDivergence(outcome, *m->module), nullptr);
  EXPECT_EQ(SignatureOf("xla", outcome, *m->module).text, "xla.miscompile.abs");
}

// Ours failing at `n` (a negate over 2 devices) with `suspects` (Divergence::suspects): the
// signature.
std::string OursSignatureWithSuspects(std::vector<oracle::Divergence::Suspect> suspects) {
  absl::StatusOr<ParsedModule> m = ParseHloModule(R"(HloModule t, num_partitions=2
ENTRY main (p: f32[4]) -> f32[4] {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
})");
  if (!m.ok()) return std::string(m.status().message());
  CheckOutcome outcome;
  outcome.status = CheckStatus::kFails;
  outcome.report.verdict = Verdict::kFails;
  outcome.report.first_divergence.emplace();
  outcome.report.first_divergence->holds = "n";
  outcome.report.first_divergence->suspects = std::move(suspects);
  return SignatureOf("reference", outcome, *m->module).text;
}

// Ours: a static slice that cuts every device's part at one offset is the same reshard step as
// a dynamic-slice by partition-id (uneven-offset-off-by-one made both): one name.
TEST(SignatureTest, OursNamesASliceOfADevicesPartAsDynamicSlice) {
  EXPECT_EQ(
      OursSignatureWithSuspects({{"slice.2", HloOpcode::kSlice}, {"tuple.29", HloOpcode::kTuple}}),
      "wrong-result.dynamic-slice");
  // A collective among the suspects still comes first.
  EXPECT_EQ(OursSignatureWithSuspects({{"all-gather.0", HloOpcode::kAllGather},
                                       {"slice.2", HloOpcode::kSlice},
                                       {"tuple.29", HloOpcode::kTuple}}),
            "wrong-result.all-gather");
}

// Ours: a reduce-scatter is the all-reduce of partial values, scattered (the reference
// partitioner makes one from the other): a wrong partial sum reaches the result through either,
// and is one root cause (reduce-padding-unmasked came out as two signatures).
TEST(SignatureTest, OursNamesAReduceScatterAsAllReduce) {
  EXPECT_EQ(OursSignatureWithSuspects({{"reduce.1", HloOpcode::kReduce},
                                       {"reduce-scatter.0", HloOpcode::kReduceScatter},
                                       {"n", HloOpcode::kNegate}}),
            "wrong-result.all-reduce");
}

// Our interpreter and XLA's one-device run disagreeing on the global program is named after the
// output they disagree on (seed 104: a dynamic-slice with a u32 start of 4294967295 came out as
// `xla.oracle-disagrees.tuple`, the root).
TEST(SignatureTest, OracleDisagreesNamesTheOutputTheyDisagreeOn) {
  absl::StatusOr<ParsedModule> m = ParseHloModule(R"(HloModule t, num_partitions=2
ENTRY main (p: s32[2], q: f32[3]) -> (s32[2], f32[2]) {
  p = s32[2] parameter(0)
  q = f32[3] parameter(1)
  start = u32[] constant(4294967295)
  ds = f32[2] dynamic-slice(q, start), dynamic_slice_sizes={2}
  ROOT t = (s32[2], f32[2]) tuple(p, ds)
})");
  ASSERT_TRUE(m.ok()) << m.status();
  CheckOutcome outcome;
  outcome.status = CheckStatus::kUnsupported;
  outcome.finding = Finding::kOracleDisagrees;
  outcome.interpreter_vs_xla.emplace();
  outcome.interpreter_vs_xla->verdict = Verdict::kFails;
  outcome.interpreter_vs_xla->output = 1;
  EXPECT_EQ(SignatureOf("xla", outcome, *m->module).text, "xla.oracle-disagrees.dynamic-slice");
  outcome.interpreter_vs_xla->output = -1;
  EXPECT_EQ(SignatureOf("xla", outcome, *m->module).text, "xla.oracle-disagrees.tuple");
}

TEST(FailedCheckOf, NamesTheConditionWithoutTheLine) {
  EXPECT_EQ(FailedCheckOf("XLA compile: INTERNAL: RET_CHECK failure "
                          "(external/xla+/xla/service/spmd/custom_call_handler.cc:1298) "
                          "input->sharding().IsManual() || input->sharding().IsManualSubgroup() "
                          "\n\t\nSuspected Python Code Location:"),
            "input->sharding().IsManual() || input->sharding().IsManualSubgroup()");
  EXPECT_EQ(FailedCheckOf("F1201 12:00:00.1 1 spmd_partitioner_util.h:118] Check failed: "
                          "a.size() == b.size() (2 vs. 3)\nbacktrace"),
            "a.size() == b.size()");
  EXPECT_EQ(FailedCheckOf("XLA compile: INVALID_ARGUMENT: bad shape"), "");
}

// XLA's root cause is the source op of the earliest suspect that the wrong value depends on: a
// partition offset XLA's CSE shared with another op's handler (here a sort's) comes first in
// program order but is not it (campaign seed 102: a convolution's miscompile was named sort).
TEST(SignatureTest, XlaRootCauseIsASourceOpTheWrongValueDependsOn) {
  absl::StatusOr<ParsedModule> m = ParseHloModule(R"(HloModule t, num_partitions=2
ENTRY main (p: s32[4], q: f32[4]) -> (s32[4], f32[4]) {
  p = s32[4] parameter(0)
  q = f32[4] parameter(1)
  s = s32[4] sort(p), dimensions={0}, metadata={op_name="sort.9"}
  c = f32[4] negate(q), metadata={op_name="negate.15"}
  ROOT t = (s32[4], f32[4]) tuple(s, c)
})");
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<ParsedModule> partitioned = ParseHloModule(R"(HloModule t_spmd, num_partitions=2
ENTRY main (p: s32[2], q: f32[2]) -> (s32[2], f32[2]) {
  p = s32[2] parameter(0)
  q = f32[2] parameter(1)
  offsets = s32[2] constant({0, 2}), metadata={op_name="sort.9"}
  id = u32[] partition-id()
  offset = s32[1] dynamic-slice(offsets, id), dynamic_slice_sizes={1}, metadata={op_name="sort.9"}
  s = s32[2] sort(p), dimensions={0}, metadata={op_name="sort.9"}
  n = f32[2] negate(q), metadata={op_name="negate.15"}
  ROOT t = (s32[2], f32[2]) tuple(s, n)
})");
  ASSERT_TRUE(partitioned.ok()) << partitioned.status();
  CheckOutcome outcome;
  outcome.status = CheckStatus::kFails;
  outcome.finding = Finding::kConfirmedByXla;
  outcome.partitioned = std::move(partitioned->module);
  outcome.report.verdict = Verdict::kFails;
  outcome.report.first_divergence.emplace();
  outcome.report.first_divergence->holds = "c";
  outcome.report.first_divergence->suspects = {{"offset", HloOpcode::kDynamicSlice},
                                               {"n", HloOpcode::kNegate}};
  EXPECT_EQ(SignatureOf("xla", outcome, *m->module).text, "xla.miscompile.negate");
  // Holding the sort's value, the shared offset is the earliest suspect in its cone.
  outcome.report.first_divergence->holds = "s";
  EXPECT_EQ(SignatureOf("xla", outcome, *m->module).text, "xla.miscompile.sort");
}

}  // namespace
}  // namespace spmdcheck::check
