// `spmdcheck prove rewrites [--max-devices N] [--rule NAME] [--timeout-ms MS]
// [--no-parametric]`: checks the rewrite catalog (smt/rewrite_catalog.h) and
// prints one table row per rule.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "smt/rewrite_catalog.h"
#include "smt/rewrite_rules.h"
#include "tools/cli.h"
#include "tools/prove_flags.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] =
    R"(usage: spmdcheck prove rewrites [--max-devices N] [--rule NAME] [--timeout-ms MS]
                                [--no-parametric] [--list] [--show NAME]
)";

constexpr char kDescription[] =
    R"(Proves every rule of the collective rewrite catalog with Z3 for every mesh shape (axes of size
>= 2, at most 4 axes) and every choice of mesh axes with at most N devices (default 16), and,
where the rule has no loop over the group size, for symbolic sizes. Wrong variants are expected
to be refuted with a counterexample (mesh, axes, device, local index, both sides).
The rules are written in the rule language of `spmdcheck prove rule` (smt/rules/*.rules);
--show NAME prints one.)";

constexpr char kFooter[] =
    R"(Exit code: 0 every sound rule proved and every wrong variant refuted, 1 a sound rule refuted or
a wrong variant proved, 2 bad input, 3 some rule unknown.)";

}  // namespace

int RunProveRewrites(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("prove rewrites", kUsage, kDescription, kFooter);
  CatalogFlags catalog;
  AddCatalogFlags(command.app(), catalog);
  bool list = false;
  std::optional<std::string> show;
  command.app().add_flag("--list", list, "print the rules' names and exit");
  AddOptional(command.app(), "--show", show, "print the rule NAME in the rule language and exit")
      ->type_name("NAME");
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  const std::vector<std::string> names = smt::RewriteRuleNames();
  if (list) {
    for (const std::string& name : names) out << name << "\n";
    return kExitHolds;
  }
  if (show.has_value()) {
    for (const smt::rw::RuleDef& rule : smt::rw::RewriteRules()) {
      if (rule.name == *show) {
        out << rule.source;
        return kExitHolds;
      }
    }
    return BadInput(err, command.name(), absl::StrCat("unknown rule '", *show, "'"));
  }
  absl::StatusOr<smt::CatalogOptions> options = CatalogOptionsFrom(catalog, names);
  if (!options.ok()) return BadInput(err, command.name(), options.status().message());
  return PrintRuleReports(smt::CheckRewriteCatalog(*options), options->max_devices, out);
}

}  // namespace spmdcheck::cli
