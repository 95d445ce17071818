#include "tools/lint_cost_check.h"

#include <string>
#include <utility>
#include <vector>

#include "check/judges.h"

namespace spmdcheck::cli {

fuzz::CostCheck LintCostCheck() {
  return [](const HloModule& partitioned, const std::string& text, const HloModule& global) {
    std::vector<fuzz::CostFinding> found;
    for (check::CheaperChain& chain :
         check::JudgeProgramsAlone({partitioned, text, global}).cheaper_chains) {
      found.push_back(
          {std::move(chain.pattern), std::move(chain.message), std::move(chain.proposal)});
    }
    return found;
  };
}

}  // namespace spmdcheck::cli
