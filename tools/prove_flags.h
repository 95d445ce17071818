// What the `prove` verbs share: the --procedure flag of the device facts, the options of the
// rule checks (`prove rewrites`, `prove rule`) and the table those print.
#ifndef SPMDCHECK_TOOLS_PROVE_FLAGS_H_
#define SPMDCHECK_TOOLS_PROVE_FLAGS_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "smt/device_algebra.h"
#include "smt/rewrite_catalog.h"
#include "tools/cli.h"

namespace spmdcheck::cli {

// `--procedure auto|enumerate|z3|both` (auto when absent).
absl::StatusOr<smt::Procedure> ProcedureFlag(const Args& args);

// --max-devices, --timeout-ms, --no-parametric and --rule (one of `names`).
absl::StatusOr<smt::CatalogOptions> CatalogFlags(const Args& args,
                                                 const std::vector<std::string>& names);

// The table: one row per rule (verdict, meshes checked, time), then a paragraph per rule
// (summary, XLA pass, parametric note, counterexample), then a summary line. Returns the exit
// code (0 every rule as expected, 1 one not, 3 one unknown).
int PrintRuleReports(const std::vector<smt::RuleReport>& reports, int64_t max_devices,
                     std::ostream& out);

}  // namespace spmdcheck::cli

#endif  // SPMDCHECK_TOOLS_PROVE_FLAGS_H_
