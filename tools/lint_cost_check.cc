#include "tools/lint_cost_check.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lint/lint.h"

namespace spmdcheck::cli {

namespace {

// What a finding proposes, without sizes: a reduction shrinks the shapes (and so the bytes) but
// must keep the value to constrain and its better sharding, or the collectives proposed.
std::string ProposalOf(const lint::Finding& f) {
  if (f.cause.has_value()) {
    return absl::StrCat(f.rule, ": constrain ", f.cause->holds, " to ", f.cause->better_sharding);
  }
  return absl::StrCat(f.rule, ": ", f.proposed.flat.collectives, " collective(s), ",
                      f.proposed.flat.collective_permutes, " collective-permute(s) instead of ",
                      f.current.flat.collectives, " (", f.current.flat.collective_permutes, ")");
}

}  // namespace

fuzz::CostCheck LintCostCheck() {
  return [](const HloModule& partitioned, const std::string& text, const HloModule& global) {
    lint::LintOptions lint_options;
    lint_options.global = &global;
    // The program the partitioner received: its annotations are the user's constraints.
    lint_options.global_shardings_are_constraints = true;
    lint_options.timeout_ms = 2000;
    std::vector<fuzz::CostFinding> found;
    absl::StatusOr<lint::LintReport> report = lint::LintModule(partitioned, text, lint_options);
    if (!report.ok()) return found;
    for (const lint::Finding& f : report->findings) {
      if (f.status != lint::FindingStatus::kProved) continue;
      found.push_back(
          {f.rule == "search" ? "intermediate-sharding" : f.rule, f.message, ProposalOf(f)});
    }
    return found;
  };
}

}  // namespace spmdcheck::cli
