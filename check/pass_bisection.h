// Which pass broke it: translation validation of XLA's passes after SPMD partitioning, in the
// manner of Alive2 for LLVM. A miscompile that XLA's end-to-end execution shows while the
// module right after `spmd-partitioning` computes the global program's result was made by a
// later pass (collective combiners, reduce-scatter creation, while-loop all-reduce code motion,
// collective-permute decomposition, algebraic simplification...). XLA dumps the module after
// every pass that changed it (`--xla_dump_hlo_pass_re=.*`); the oracle runs each dump, in pass
// order, against the global module XLA received, on the check's inputs. The first dump that no
// longer computes the global result, after one that did, names the pass. Dumps the oracle cannot
// run (a CPU custom-call, a layout it does not model) are `unknown` with the reason, never a
// verdict, and the pass is then named only as "between" the dumps around them.
#ifndef SPMDCHECK_CHECK_PASS_BISECTION_H_
#define SPMDCHECK_CHECK_PASS_BISECTION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "check/check_pipeline.h"
#include "ir/hlo_module.h"
#include "ir/verdict.h"
#include "target/partitioner_under_test.h"

namespace spmdcheck::check {

struct PassStep {
  std::string file;      // XLA's dump file.
  std::string pipeline;  // e.g. "simplification"
  std::string pass;      // The pass whose output this dump is, e.g. "algsimp".
  Verdict verdict = Verdict::kUnknown;
  std::string detail;  // The first mismatch, or why unknown.
};

struct PassBisection {
  std::vector<PassStep> steps;
  int64_t first_wrong = -1;      // Index into steps; -1: no dump computes a wrong result.
  int64_t last_right = -1;       // The last step before it that holds; -1: none.
  std::string Summary() const;   // One line for reports.
  std::string ToString() const;  // One line per step.
};

// Compiles `global` with every pass dumped and runs the oracle on each dump after
// spmd-partitioning. Errors: the partitioner cannot dump its passes (pass_dumping() is null),
// the compile did not produce a module, or XLA wrote no dumps.
absl::StatusOr<PassBisection> BisectPasses(const HloModule& global,
                                           target::PartitionerUnderTest& partitioner,
                                           const CheckOptions& options);

// ("HLO_passes_through_layout_assignment", "simplification") from
// "module_0002.dus.0012.HLO_passes_through_layout_assignment.after_simplification.before_x.txt".
std::pair<std::string, std::string> PipelineAndPass(const std::string& file);

}  // namespace spmdcheck::check

#endif  // SPMDCHECK_CHECK_PASS_BISECTION_H_
