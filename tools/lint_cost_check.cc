#include "tools/lint_cost_check.h"

#include <string>
#include <vector>

#include "lint/lint.h"

namespace spmdcheck::cli {

fuzz::CostCheck LintCostCheck() {
  return [](const HloModule& partitioned, const std::string& text, const HloModule& global) {
    lint::LintOptions lint_options;
    lint_options.global = &global;
    lint_options.timeout_ms = 2000;
    std::vector<fuzz::CostFinding> found;
    absl::StatusOr<lint::LintReport> report = lint::LintModule(partitioned, text, lint_options);
    if (!report.ok()) return found;
    for (const lint::Finding& f : report->findings) {
      if (f.status != lint::FindingStatus::kProved) continue;
      found.push_back({f.rule == "search" ? "intermediate-sharding" : f.rule, f.message});
    }
    return found;
  };
}

}  // namespace spmdcheck::cli
