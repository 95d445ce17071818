// libFuzzer target: structure-aware differential fuzzing of the reference partitioner. The bytes
// drive the program generator (fuzz/program_gen, the same generator the RapidCheck properties
// and `spmdcheck fuzz` use); the program is partitioned and checked with the oracle. A wrong
// result or invalid partitioned HLO is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "check/check_pipeline.h"
#include "fuzz/program_gen.h"
#include "fuzz/targets/fuzz_common.h"

using spmdcheck::fuzz_targets::FuzzFail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  spmdcheck::fuzz::ProgramGenOptions gen;
  // Arrays of at most 256 elements (the campaign's 1024 cost this target half its executions
  // per second under the sanitizers; the partitioner's logic does not depend on array size
  // beyond uneven and tiny shards, which small arrays reach more often).
  gen.max_elements = 256;
  // At most 16 entry instructions (the campaign's 30 halved this target's executions per second
  // once libFuzzer's inputs grew long): the partitioner's bugs sit in one op or a short chain
  // and its reshards, which small programs reach as well; the campaign keeps the longer ones.
  gen.max_instructions = 16;
  absl::StatusOr<spmdcheck::fuzz::GeneratedProgram> program =
      spmdcheck::fuzz::ProgramFromBytes(absl::MakeConstSpan(data, size), gen);
  if (!program.ok() || program->module == nullptr) {
    FuzzFail("generator error", program.ok() ? program->hlo_text : "",
             program.ok() ? "" : std::string(program.status().message()));
  }
  spmdcheck::check::CheckOptions options;
  options.trials = 1;
  absl::StatusOr<spmdcheck::check::CheckOutcome> outcome =
      spmdcheck::check::CheckPartitioning(*program->module, options);
  if (!outcome.ok()) {
    FuzzFail("generated program rejected", program->hlo_text,
             std::string(outcome.status().message()));
  }
  if (outcome->status == spmdcheck::check::CheckStatus::kFails ||
      outcome->status == spmdcheck::check::CheckStatus::kCrash) {
    FuzzFail("partitioned program differs", program->hlo_text, outcome->message);
  }
  return 0;
}
