// `spmdcheck reduce DIR`: reduces a finding folder a campaign wrote unreduced (its time budget
// ran out) and writes the folder again, as the campaign would have (fuzz/finding_handover.h).
#ifndef SPMDCHECK_TOOLS_REDUCE_FINDING_H_
#define SPMDCHECK_TOOLS_REDUCE_FINDING_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "tools/cli.h"
#include "tools/partitioner_flags.h"

namespace spmdcheck::cli {

// The flags of `reduce` that apply to a finding folder, as given.
struct ReduceFindingFlags {
  PartitionerFlags partitioner;  // Default: the finding's own partitioner and injected bug.
  int64_t trials = 2;
  std::optional<uint64_t> seed;        // Default: the finding's case seed.
  std::optional<int64_t> max_seconds;  // Default: 300.
};

// DIR holds finding.json and module.hlo. Exit 0 when written again, 2 for bad input (no finding
// there, a jax-level program, a finding that no longer reproduces), 3 when the reduction could
// not run.
int RunReduceFinding(const std::string& dir, const ReduceFindingFlags& flags, std::ostream& out,
                     std::ostream& err);

}  // namespace spmdcheck::cli

#endif  // SPMDCHECK_TOOLS_REDUCE_FINDING_H_
