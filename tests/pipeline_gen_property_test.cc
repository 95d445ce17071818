// Properties of the generated pipelines (fuzz/pipeline_gen.h): they verify and print -> parse ->
// print is a fixed point; the reference partitioner's output holds under the oracle (what
// `spmdcheck check` runs); `explain` on that output finds the pipeline loop over the stage axis
// with the spec's stage count and micro-batch count, and every pipeline check holds (a rotation
// proof per stream for manual-region rotations). The program generator's pipeline step emits
// valid programs too.
#include <memory>
#include <string>

#include "check/check_pipeline.h"
#include "explain/explain.h"
#include "fuzz/pipeline_gen.h"
#include "fuzz/program_gen.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "rapidcheck/gtest.h"

namespace spmdcheck::fuzz {
namespace {

RC_GTEST_PROP(PipelineGenTest, GeneratedPipelinesVerifyAndPrintParsePrint, ()) {
  const PipelineSpec spec = *GenPipelineSpec(16);
  absl::StatusOr<std::unique_ptr<HloModule>> module = BuildPipelineModule(spec);
  RC_ASSERT(module.ok());
  const absl::Status verified = VerifyModule(**module);
  if (!verified.ok()) RC_FAIL(std::string(verified.message()));
  const std::string text = PrintModule(**module);
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(PrintModule(*parsed->module) == text);
}

RC_GTEST_PROP(PipelineGenTest, ReferencePartitionerHoldsAndExplainFindsTheStages, ()) {
  const PipelineSpec spec = *GenPipelineSpec(8);
  absl::StatusOr<std::unique_ptr<HloModule>> module = BuildPipelineModule(spec);
  RC_ASSERT(module.ok());
  check::CheckOptions options;
  options.trials = 1;
  options.seed = *rc::gen::inRange<uint64_t>(1, 1000);
  absl::StatusOr<check::CheckOutcome> outcome = check::CheckPartitioning(**module, options);
  RC_ASSERT(outcome.ok());
  if (outcome->status != check::CheckStatus::kHolds) {
    RC_FAIL(absl::StrCat(check::CheckStatusName(outcome->status), ": ", outcome->message));
  }
  RC_ASSERT(outcome->partitioned != nullptr);
  const std::string text = PrintModule(*outcome->partitioned);
  absl::StatusOr<ParsedModule> partitioned = ParseHloModule(text);
  RC_ASSERT(partitioned.ok());
  explain::ModuleSource input{partitioned->module.get(), text};
  absl::StatusOr<explain::Explanation> e = explain::Explain(input, nullptr, {});
  RC_ASSERT(e.ok());
  const explain::PipelineExplanation* found = nullptr;
  for (const explain::PipelineExplanation& p : e->pipelines) {
    if (p.stages == spec.stages) found = &p;
  }
  if (found == nullptr) RC_FAIL(explain::FormatText(*e));
  RC_ASSERT(e->answer.find(absl::StrCat("intra-op plus ", spec.stages, " pipeline stages")) !=
            std::string::npos);
  if (found->loop.empty() || found->micro_batches != spec.micro_batches) {
    RC_FAIL(explain::FormatText(*e));
  }
  // Rotations (manual regions) are proved; rolls have no permute to prove.
  int rotations = 0;
  for (const explain::PipelineCheck& c : found->checks) {
    if (c.name == "rotation") ++rotations;
    if (c.result.verdict != Verdict::kHolds) {
      RC_FAIL(absl::StrCat(c.name, ": ", smt::FormatProofResult(c.result), "\n",
                           explain::FormatText(*e)));
    }
  }
  const int streams = spec.schedule == PipelineSchedule::kOneFOneB ? 2 : 1;
  RC_ASSERT(rotations == (spec.manual_rotation ? streams : 0));
}

TEST(PipelineGenTest, ProgramGeneratorEmitsPipelineSteps) {
  ProgramGenOptions options;
  options.op_weights.fill(0);
  options.pattern_weights = ProgramGenOptions::NoPatternWeights();
  options.exclude_disabled_patterns = false;  // No pattern steps; the op mix as it was.
  options.op_weights[static_cast<int>(GenOp::kPipelineSchedule)] = 1;
  int pipelines = 0;
  for (uint8_t seed = 0; seed < 40; ++seed) {
    ProgramRecipe recipe;
    recipe.header = {3, seed, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0};  // A mesh of 2 x 4 x 2 at most.
    recipe.steps.push_back(std::vector<uint8_t>(kRecipeStepBytes, seed));
    absl::StatusOr<GeneratedProgram> p = BuildProgram(recipe, options);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_TRUE(VerifyModule(*p->module).ok()) << p->hlo_text;
    for (const auto& c : p->module->computations()) {
      for (const auto& h : c->instructions()) {
        if (h->opcode() == HloOpcode::kWhile) ++pipelines;
      }
    }
  }
  EXPECT_GT(pipelines, 20);
}

}  // namespace
}  // namespace spmdcheck::fuzz
