// The collective lint as the fuzz room's cost check (fuzz/campaign.h CostCheck): a proved
// cheaper chain in a correct partitioning is a wasteful finding. The lint judge's own routine
// (check::CheaperChains), so that `check --lint`, `fuzz` and `reduce` find the same chains.
#ifndef SPMDCHECK_TOOLS_LINT_COST_CHECK_H_
#define SPMDCHECK_TOOLS_LINT_COST_CHECK_H_

#include "fuzz/campaign.h"

namespace spmdcheck::cli {

fuzz::CostCheck LintCostCheck();

}  // namespace spmdcheck::cli

#endif  // SPMDCHECK_TOOLS_LINT_COST_CHECK_H_
