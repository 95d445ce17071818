// The table `prove rewrites` and `prove rule` print: one row per rule (verdict, meshes checked,
// time), then a paragraph per rule (summary, XLA pass, parametric note, counterexample), then a
// summary line. Returns the exit code (0 every rule as expected, 1 one not, 3 one unknown).
#ifndef SPMDCHECK_TOOLS_RULE_REPORTS_H_
#define SPMDCHECK_TOOLS_RULE_REPORTS_H_

#include <cstdint>
#include <ostream>
#include <vector>

#include "smt/rewrite_catalog.h"

namespace spmdcheck::cli {

int PrintRuleReports(const std::vector<smt::RuleReport>& reports, int64_t max_devices,
                     std::ostream& out);

}  // namespace spmdcheck::cli

#endif  // SPMDCHECK_TOOLS_RULE_REPORTS_H_
