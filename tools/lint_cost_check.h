// The judges of the table that read programs alone (check::JudgeProgramsAlone; today the
// collective lint) as the fuzz room's cost check (fuzz/campaign.h CostCheck): a proved cheaper
// chain in a correct partitioning is a wasteful finding. The same judges as `check --lint`, so
// that `check --lint`, `fuzz` and `reduce` find the same chains; the campaign runs them beside
// its cases (fuzz/background_cost_check.h).
#ifndef SPMDCHECK_TOOLS_LINT_COST_CHECK_H_
#define SPMDCHECK_TOOLS_LINT_COST_CHECK_H_

#include "fuzz/campaign.h"

namespace spmdcheck::cli {

fuzz::CostCheck LintCostCheck();

}  // namespace spmdcheck::cli

#endif  // SPMDCHECK_TOOLS_LINT_COST_CHECK_H_
