// What the `prove` verbs share: the --timeout-ms and --procedure flags of the device facts, the
// flags of the rule checks (`prove rewrites`, `prove rule`) and the table those print.
#ifndef SPMDCHECK_TOOLS_PROVE_FLAGS_H_
#define SPMDCHECK_TOOLS_PROVE_FLAGS_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "smt/device_algebra.h"
#include "smt/rewrite_catalog.h"
#include "tools/cli.h"

namespace spmdcheck::cli {

// `--timeout-ms MS` into `timeout_ms` (left at its value when absent); `what` says what it
// bounds. CheckTimeoutMs refuses values <= 0.
void AddTimeoutMsFlag(CLI::App& app, int64_t& timeout_ms, const std::string& what);
absl::Status CheckTimeoutMs(int64_t timeout_ms);

// `--procedure auto|enumerate|z3|both` into `procedure` ("auto" unless given); ParseProcedureFlag
// reads it.
void AddProcedureFlag(CLI::App& app, std::string& procedure);
absl::StatusOr<smt::Procedure> ParseProcedureFlag(const std::string& procedure);

// --max-devices, --timeout-ms, --no-parametric and --rule, as given.
struct CatalogFlags {
  int64_t max_devices = smt::CatalogOptions().max_devices;
  int64_t timeout_ms = smt::CatalogOptions().timeout_ms;
  bool no_parametric = false;
  std::optional<std::string> rule;
};
void AddCatalogFlags(CLI::App& app, CatalogFlags& flags);
// The options they ask for; --rule must be one of `names`.
absl::StatusOr<smt::CatalogOptions> CatalogOptionsFrom(const CatalogFlags& flags,
                                                       const std::vector<std::string>& names);

// The table: one row per rule (verdict, meshes checked, time), then a paragraph per rule
// (summary, XLA pass, parametric note, counterexample), then a summary line. Returns the exit
// code (0 every rule as expected, 1 one not, 3 one unknown).
int PrintRuleReports(const std::vector<smt::RuleReport>& reports, int64_t max_devices,
                     std::ostream& out);

}  // namespace spmdcheck::cli

#endif  // SPMDCHECK_TOOLS_PROVE_FLAGS_H_
