// `spmdcheck reduce DIR`: reduces a finding folder a campaign wrote unreduced (its time budget
// ran out) and writes the folder again, as the campaign would have (fuzz/finding_handover.h).
#ifndef SPMDCHECK_TOOLS_REDUCE_FINDING_H_
#define SPMDCHECK_TOOLS_REDUCE_FINDING_H_

#include <ostream>
#include <string>

#include "tools/cli.h"

namespace spmdcheck::cli {

// DIR holds finding.json and module.hlo. Flags of `reduce` that apply: --partitioner,
// --inject-bug, --xla-venv, --timeout (default: the finding's own), --trials, --seed (default:
// the finding's case seed), --max-seconds (default 300), --verbose. Exit 0 when written again,
// 2 for bad input (no finding there, a jax-level program, a finding that no longer
// reproduces), 3 when the reduction could not run.
int RunReduceFinding(const std::string& dir, const Args& args, std::ostream& out,
                     std::ostream& err);

}  // namespace spmdcheck::cli

#endif  // SPMDCHECK_TOOLS_REDUCE_FINDING_H_
