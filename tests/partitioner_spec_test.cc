// Partitioner specs (`reference+bug=NAME`, the `--inject-bug` shorthand) and the capabilities
// that tools, campaigns and the nightly job ask instead of a partitioner's name.
#include <memory>
#include <string>
#include <vector>

#include "check/check_pipeline.h"
#include "check/pass_bisection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "target/partitioner_under_test.h"

namespace spmdcheck::target {
namespace {

using ::testing::HasSubstr;

TEST(PartitionerSpec, ParsesAnInjectedBug) {
  absl::StatusOr<PartitionerSpec> plain = ParsePartitionerSpec("reference");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->name, "reference");
  EXPECT_EQ(plain->inject_bug, "");
  absl::StatusOr<PartitionerSpec> bug = ParsePartitionerSpec("reference+bug=dot-padding-unmasked");
  ASSERT_TRUE(bug.ok()) << bug.status();
  EXPECT_EQ(bug->name, "reference");
  EXPECT_EQ(bug->inject_bug, "dot-padding-unmasked");
  EXPECT_EQ(bug->ToString(), "reference+bug=dot-padding-unmasked");
  // A command is taken whole, `+` and all.
  absl::StatusOr<PartitionerSpec> command = ParsePartitionerSpec("cmd:a+bug=b");
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->name, "cmd:a+bug=b");
  EXPECT_EQ(command->inject_bug, "");
}

TEST(PartitionerSpec, RefusesWhatCannotBe) {
  EXPECT_THAT(std::string(ParsePartitionerSpec("reference+bug=no-such-bug").status().message()),
              HasSubstr("unknown injected bug 'no-such-bug'"));
  EXPECT_THAT(std::string(ParsePartitionerSpec("xla+bug=dot-padding-unmasked").status().message()),
              HasSubstr("not of xla"));
  EXPECT_THAT(std::string(ParsePartitionerSpec("reference+fast").status().message()),
              HasSubstr("+bug=NAME"));
  EXPECT_THAT(std::string(ParsePartitionerSpec("reference+bug=").status().message()),
              HasSubstr("+bug=NAME"));
  EXPECT_THAT(std::string(ParsePartitionerSpec("mine").status().message()),
              HasSubstr("unknown partitioner 'mine'"));
  EXPECT_FALSE(ParsePartitionerSpec("cmd:").ok());
}

TEST(PartitionerSpec, InjectBugIsAShorthand) {
  absl::StatusOr<std::string> specs = WithInjectedBug("reference", "all-gather-group-order");
  ASSERT_TRUE(specs.ok()) << specs.status();
  EXPECT_EQ(*specs, "reference+bug=all-gather-group-order");
  // The same bug twice is the same spec; another one is refused.
  EXPECT_EQ(*WithInjectedBug(*specs, "all-gather-group-order"), *specs);
  EXPECT_FALSE(WithInjectedBug(*specs, "dot-padding-unmasked").ok());
  EXPECT_THAT(
      std::string(WithInjectedBug("reference,xla", "dot-padding-unmasked").status().message()),
      HasSubstr("a bug of the reference partitioner, not of xla"));
  EXPECT_EQ(InjectedBugOf("reference+bug=dot-padding-unmasked"), "dot-padding-unmasked");
  EXPECT_EQ(InjectedBugOf("xla,shardy"), "");
  EXPECT_EQ(WithoutInjectedBugs("reference+bug=dot-padding-unmasked"), "reference");
}

TEST(PartitionerSpec, ReproduceFlagsMakeTheSamePartitioner) {
  EXPECT_EQ(ReproducePartitionerFlags("reference"), "");
  EXPECT_EQ(ReproducePartitionerFlags("reference+bug=dot-padding-unmasked"),
            " --inject-bug dot-padding-unmasked");
  EXPECT_EQ(ReproducePartitionerFlags("xla"), " --partitioner xla");
  EXPECT_EQ(ReproducePartitionerFlags("xla,shardy"), " --partitioner xla,shardy");
  EXPECT_EQ(
      ReproducePartitionerFlags("cmd:my tool", [](const std::string& s) { return "'" + s + "'"; }),
      " --partitioner 'cmd:my tool'");
}

TEST(PartitionerSpec, AReferencePartitionerCarriesItsBug) {
  absl::StatusOr<std::unique_ptr<PartitionerUnderTest>> made =
      MakePartitioner("reference+bug=dot-padding-unmasked", TargetOptions());
  ASSERT_TRUE(made.ok()) << made.status();
  // Its name keys signatures and summaries; the full spec makes it again.
  EXPECT_EQ((*made)->spec(), "reference");
  EXPECT_EQ((*made)->full_spec(), "reference+bug=dot-padding-unmasked");
  absl::StatusOr<std::unique_ptr<PartitionerUnderTest>> again =
      MakePartitioner((*made)->full_spec(), TargetOptions());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->full_spec(), (*made)->full_spec());
  EXPECT_EQ(MakeOurPartitioner()->full_spec(), "reference");
}

TEST(PartitionerSpec, TheInjectedBugChangesTheResult) {
  // A dot whose contracting dim is padded: the padding must be masked before the all-reduce.
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(R"(HloModule padded_dot, num_partitions=2
ENTRY e {
  a = f32[2,3] parameter(0), sharding={devices=[1,2]<=[2]}
  b = f32[3,2] parameter(1), sharding={devices=[2,1]<=[2]}
  ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}
}
)");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  check::CheckOptions options;
  options.trials = 2;
  for (const char* spec : {"reference", "reference+bug=dot-padding-unmasked"}) {
    absl::StatusOr<std::unique_ptr<PartitionerUnderTest>> made =
        MakePartitioner(spec, TargetOptions());
    ASSERT_TRUE(made.ok()) << made.status();
    absl::StatusOr<check::CheckOutcome> outcome =
        check::CheckPartitioning(*parsed->module, **made, options);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    EXPECT_EQ(outcome->status, std::string(spec) == "reference" ? check::CheckStatus::kHolds
                                                                : check::CheckStatus::kFails)
        << spec << ": " << outcome->message;
  }
}

TEST(PartitionerCapabilities, AreAskedNotNames) {
  const PartitionerCapabilities ours = *CapabilitiesOfSpec("reference+bug=dot-padding-unmasked");
  EXPECT_TRUE(ours.in_process);
  EXPECT_TRUE(ours.injected_bugs);
  EXPECT_TRUE(ours.handler_stats);
  EXPECT_TRUE(ours.lint_planner);
  EXPECT_FALSE(ours.xla_findings);
  EXPECT_EQ(ours.min_devices, 1);
  const PartitionerCapabilities gspmd = *CapabilitiesOfSpec("gspmd");
  EXPECT_FALSE(gspmd.in_process);
  EXPECT_FALSE(gspmd.injected_bugs);
  EXPECT_TRUE(gspmd.xla_findings);
  EXPECT_EQ(gspmd.min_devices, 2);
  EXPECT_FALSE(gspmd.compiles_sdy_programs);
  const PartitionerCapabilities shardy = *CapabilitiesOfSpec("shardy");
  EXPECT_TRUE(shardy.prefers_one_mesh);
  EXPECT_TRUE(shardy.compiles_sdy_programs);
  const PartitionerCapabilities command = *CapabilitiesOfSpec("cmd:true");
  EXPECT_FALSE(command.in_process);
  EXPECT_FALSE(command.injected_bugs);
  EXPECT_FALSE(CapabilitiesOfSpec("mine").ok());
  EXPECT_TRUE(AnySpecCan("xla,shardy", &PartitionerCapabilities::prefers_one_mesh));
  EXPECT_FALSE(AnySpecCan("xla,gspmd", &PartitionerCapabilities::prefers_one_mesh));
  EXPECT_EQ(ReduceSecondsOf("reference"), 10);
  EXPECT_EQ(ReduceSecondsOf("reference,shardy"), 90);
  EXPECT_EQ(ReduceSecondsOf("cmd:true"), 10);
  EXPECT_FALSE(AnySpecCan("not,a,spec", &PartitionerCapabilities::in_process));
  // A made partitioner says the same as its spec.
  for (const char* spec : {"reference", "cmd:true"}) {
    absl::StatusOr<std::unique_ptr<PartitionerUnderTest>> made =
        MakePartitioner(spec, TargetOptions());
    ASSERT_TRUE(made.ok()) << made.status();
    EXPECT_EQ((*made)->capabilities().in_process, CapabilitiesOfSpec(spec)->in_process) << spec;
    EXPECT_EQ((*made)->capabilities().handler_stats, CapabilitiesOfSpec(spec)->handler_stats);
  }
}

TEST(PartitionerCapabilities, PassBisectionNeedsPassDumps) {
  std::unique_ptr<PartitionerUnderTest> ours = MakeOurPartitioner();
  EXPECT_EQ(ours->pass_dumping(), nullptr);
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(R"(HloModule m, num_partitions=2
ENTRY e {
  ROOT p = f32[4] parameter(0), sharding={devices=[2]<=[2]}
}
)");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<check::PassBisection> bisection =
      check::BisectPasses(*parsed->module, *ours, check::CheckOptions());
  ASSERT_FALSE(bisection.ok());
  EXPECT_THAT(std::string(bisection.status().message()), HasSubstr("does not dump its passes"));
}

}  // namespace
}  // namespace spmdcheck::target
