// `spmdcheck prove rule FILE [--rule NAME] [--max-devices N] [--timeout-ms MS] [--no-parametric]`:
// rewrite rules a user writes (two HLO fragments over named mesh axes and symbolic sizes,
// smt/rule_language.h, docs/prove_rewrites.md), proved or refuted exactly as the built-in catalog
// is (smt/rewrite_catalog.h).
#include <optional>
#include <string>
#include <vector>

#include "base/file.h"
#include "smt/rewrite_catalog.h"
#include "smt/rewrite_rules.h"
#include "smt/rule_language.h"
#include "tools/cli.h"
#include "tools/prove_flags.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] =
    R"(usage: spmdcheck prove rule FILE [--rule NAME] [--max-devices N] [--timeout-ms MS]
                            [--no-parametric]
)";

constexpr char kDescription[] =
    R"(Proves the rewrite rules of FILE: each is two HLO fragments (lhs, rhs) over named mesh axes and
symbolic local sizes (the format of docs/prove_rewrites.md; the built-in catalog is written in it,
`spmdcheck prove rewrites --show NAME` prints a rule). A rule is checked with Z3 on every mesh
(axes of size >= 2, at most 4 axes) and every choice of its axes with at most N devices (default
16), and, where no op loops over a group size or needs a concrete table, for every size at once.
`expect sound` rules must be proved; `expect wrong` rules (tempting variants) refuted, with a
counterexample: mesh, axes, device, local index and both sides.)";

constexpr char kFooter[] =
    R"(Exit code: 0 every rule as expected, 1 a sound rule refuted or a wrong one proved, 2 bad input
(FILE:LINE:COL), 3 some rule unknown.)";

}  // namespace

int RunProveRule(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("prove rule", kUsage, kDescription, kFooter);
  std::string path;
  command.app().add_option("FILE", path, "the rules (docs/prove_rewrites.md)")->required();
  CatalogFlags catalog;
  AddCatalogFlags(command.app(), catalog);
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return BadInput(err, command.name(), text.status().message());
  absl::StatusOr<std::vector<smt::rw::RuleDef>> rules = smt::rw::ParseRules(*text, path);
  if (!rules.ok()) return BadInput(err, command.name(), rules.status().message());
  std::vector<std::string> names;
  for (const smt::rw::RuleDef& r : *rules) names.push_back(r.name);
  absl::StatusOr<smt::CatalogOptions> options = CatalogOptionsFrom(catalog, names);
  if (!options.ok()) return BadInput(err, command.name(), options.status().message());
  return PrintRuleReports(smt::CheckRules(*rules, *options), options->max_devices, out);
}

}  // namespace spmdcheck::cli
