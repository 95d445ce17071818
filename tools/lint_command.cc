// `spmdcheck lint FILE`: wasteful collective chains in a partitioned module, with cheaper
// replacements proved equal (docs/lint.md).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/hlo_module.h"
#include "lint/jax_hint.h"
#include "lint/lint.h"
#include "lint/topology.h"
#include "tools/cli.h"
#include "tools/module_loading.h"
#include "viz/report_pages.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] = R"(usage: spmdcheck lint FILE [--num-partitions N] [--global PRE.hlo]
                      [--topology SPEC] [--format text|json|sarif] [--timeout-ms MS]
                      [--mesh NAME=N,...] [--holdings] [--no-infer]
                      [--user-shardings]
)";

constexpr char kDescription[] =
    R"(Reads a partitioned module (an XLA dump after SPMD partitioning, or `spmdcheck partition`
output), splits it into chains of data movement and collectives between values with known
shardings, and reports each chain a cheaper sequence of collectives could replace: the
replacement is the reference partitioner run on the chain's global meaning with intermediate
shardings chosen by a search, and it counts only when Z3 proves it gives every device the same
values. Chains that do not implement their own sharding annotations are reported as incorrect.)";

// The flags as given.
struct LintFlags {
  std::string path;
  int64_t num_partitions = 0;
  std::optional<std::string> global_path, topology, html, mesh;
  std::string format = "text";
  int64_t timeout_ms = lint::LintOptions().timeout_ms;
  bool holdings = false, no_infer = false, user_shardings = false;
};

void AddLintFlags(CLI::App& app, LintFlags& flags) {
  app.add_option("FILE", flags.path, "the partitioned module")->required();
  app.add_option("--num-partitions", flags.num_partitions, "when the module header does not say")
      ->type_name("N")
      ->transform(DecimalInt64());
  AddOptional(app, "--global", flags.global_path,
              "the pre-partitioning program: the global ops of a chain are read from it\n"
              "(via the `// holds=NAME` comments of XLA-style dumps or equal names)")
      ->type_name("PRE.hlo")
      ->check(InputFile());
  AddOptional(app, "--topology", flags.topology,
              "nodes=K (K consecutive ids per fast domain) or {{0,1},{2,3}}, optionally\n"
              ",cross=F (a byte crossing domains costs F; default 8)")
      ->type_name("SPEC");
  app.add_option("--format", flags.format,
                 "text (default), json (docs/lint.md), sarif (SARIF 2.1.0)")
      ->type_name("F");
  app.add_option("--timeout-ms", flags.timeout_ms,
                 absl::StrCat("per proof (default ", flags.timeout_ms,
                              "); a timeout makes a finding `unproven`"))
      ->type_name("MS")
      ->transform(DecimalInt64());
  AddOptional(app, "--html", flags.html,
              "also write a page: each chain before and after between device groups,\n"
              "both costs, the hint, the proof")
      ->type_name("FILE");
  AddOptional(app, "--mesh", flags.mesh,
              "the named device mesh (e.g. data=2,model=4, devices row-major): hints\n"
              "also name the JAX constraint, with_sharding_constraint(x,\n"
              "NamedSharding(mesh, P(...))); default: a mesh the module names")
      ->type_name("NAME=N,...");
  app.add_flag("--holdings", flags.holdings,
               "print what each unannotated value holds (the inferred shardings, each\n"
               "proved) and how the annotations compare, instead of the findings");
  app.add_flag("--no-infer", flags.no_infer,
               "read only the module's own annotations (no inference)");
  app.add_flag("--user-shardings", flags.user_shardings,
               "the --global program is the user's, before propagation: each value it\n"
               "annotates keeps its sharding (as parameters, the result and custom-call\n"
               "Sharding constraints always do); a proposal that changes one is no finding");
}

}  // namespace

int RunLint(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("lint", kUsage, kDescription,
                  "Exit codes: 0 no proved finding, 1 a proved finding or an incorrect chain, 2 "
                  "bad input.");
  LintFlags flags;
  AddLintFlags(command.app(), flags);
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  const std::string& format = flags.format;
  if (format != "text" && format != "json" && format != "sarif") {
    return BadInput(err, "lint",
                    absl::StrCat("--format must be text, json or sarif, not '", format, "'"));
  }
  const std::string& path = flags.path;
  absl::StatusOr<std::string> text = ReadModuleText(path);
  if (!text.ok()) return BadInput(err, "lint", text.status().message());
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
  if (!module.ok()) return BadInput(err, "lint", module.status().message());
  lint::LintOptions options;
  const int64_t n = flags.num_partitions;
  if (n < 0 || n > 65536) return BadInput(err, "lint", "--num-partitions must be in [1, 65536]");
  options.num_partitions = n > 0 ? n : (*module)->num_partitions();
  if (!(*module)->has_num_partitions() && n == 0) {
    return BadInput(
        err, "lint",
        absl::StrCat(path, ": the module has no num_partitions; pass --num-partitions"));
  }
  if (flags.timeout_ms <= 0) {
    return BadInput(err, "lint", "--timeout-ms must be a positive integer");
  }
  options.timeout_ms = flags.timeout_ms;
  std::unique_ptr<HloModule> global;
  if (flags.global_path.has_value()) {
    absl::StatusOr<std::unique_ptr<HloModule>> loaded = LoadVerifiedModule(*flags.global_path, err);
    if (!loaded.ok()) return BadInput(err, "lint", loaded.status().message());
    global = *std::move(loaded);
    options.global = global.get();
  }
  if (flags.topology.has_value()) {
    absl::StatusOr<lint::Topology> topology =
        lint::ParseTopology(*flags.topology, options.num_partitions);
    if (!topology.ok()) return BadInput(err, "lint", topology.status().message());
    options.topology = *std::move(topology);
  }
  options.infer = !flags.no_infer;
  options.global_shardings_are_constraints = flags.user_shardings;
  if (options.global_shardings_are_constraints && options.global == nullptr) {
    return BadInput(err, "lint", "--user-shardings needs --global PRE.hlo");
  }
  if (const std::optional<std::string>& mesh_text = flags.mesh) {
    absl::StatusOr<Mesh> mesh = lint::ParseMeshFlag(*mesh_text);
    if (!mesh.ok()) return BadInput(err, "lint", absl::StrCat("--mesh: ", mesh.status().message()));
    if (mesh->num_devices() != options.num_partitions) {
      return BadInput(err, "lint",
                      absl::StrCat("--mesh ", *mesh_text, " has ", mesh->num_devices(),
                                   " devices; the module has ", options.num_partitions));
    }
    options.mesh = *std::move(mesh);
  }
  options.holdings_only = flags.holdings;
  absl::StatusOr<lint::LintReport> report = lint::LintModule(**module, *text, options);
  if (!report.ok()) return BadInput(err, "lint", report.status().message());
  report->path = path;
  if (flags.holdings) {
    out << lint::FormatHoldings(*report);
    return kExitHolds;
  }
  if (flags.html.has_value()) {
    absl::Status written = viz::WriteLintPage(*flags.html, *report, **module);
    if (!written.ok()) return BadInput(err, "lint", written.message());
  }
  if (format == "json") {
    out << lint::FormatJson(*report);
  } else if (format == "sarif") {
    out << lint::FormatSarif(*report);
  } else {
    out << lint::FormatText(*report);
  }
  return report->proved() + report->incorrect() > 0 ? kExitFails : kExitHolds;
}

}  // namespace spmdcheck::cli
