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

constexpr char kLintHelp[] = R"(usage: spmdcheck lint FILE [--num-partitions N] [--global PRE.hlo]
                      [--topology SPEC] [--format text|json|sarif] [--timeout-ms MS]
                      [--mesh NAME=N,...] [--holdings] [--no-infer]
                      [--user-shardings]

Reads a partitioned module (an XLA dump after SPMD partitioning, or `spmdcheck partition`
output), splits it into chains of data movement and collectives between values with known
shardings, and reports each chain a cheaper sequence of collectives could replace: the
replacement is the reference partitioner run on the chain's global meaning with intermediate
shardings chosen by a search, and it counts only when Z3 proves it gives every device the same
values. Chains that do not implement their own sharding annotations are reported as incorrect.
  --num-partitions N   when the module header does not say
  --global PRE.hlo     the pre-partitioning program: the global ops of a chain are read from it
                       (via the `// holds=NAME` comments of XLA-style dumps or equal names)
  --topology SPEC      nodes=K (K consecutive ids per fast domain) or {{0,1},{2,3}}, optionally
                       ,cross=F (a byte crossing domains costs F; default 8)
  --format F           text (default), json (docs/lint.md), sarif (SARIF 2.1.0)
  --timeout-ms MS      per proof (default 20000); a timeout makes a finding `unproven`
  --html FILE          also write a page: each chain before and after between device groups,
                       both costs, the hint, the proof
  --mesh NAME=N,...    the named device mesh (e.g. data=2,model=4, devices row-major): hints
                       also name the JAX constraint, with_sharding_constraint(x,
                       NamedSharding(mesh, P(...))); default: a mesh the module names
  --holdings           print what each unannotated value holds (the inferred shardings, each
                       proved) and how the annotations compare, instead of the findings
  --no-infer           read only the module's own annotations (no inference)
  --user-shardings     the --global program is the user's, before propagation: each value it
                       annotates keeps its sharding (as parameters, the result and custom-call
                       Sharding constraints always do); a proposal that changes one is no finding
Exit codes: 0 no proved finding, 1 a proved finding or an incorrect chain, 2 bad input.
)";

}  // namespace

int RunLint(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Args> args =
      Args::Parse(argv,
                  {"--num-partitions", "--global", "--topology", "--format", "--timeout-ms",
                   "--html", "--mesh"},
                  {"--help", "--holdings", "--no-infer", "--user-shardings"});
  if (!args.ok()) return BadInput(err, "lint", args.status().message());
  if (args->Has("--help")) {
    out << kLintHelp;
    return kExitHolds;
  }
  if (args->positional().size() != 1) {
    err << kLintHelp;
    return BadInput(err, "lint", "expected exactly one FILE");
  }
  const std::string format = args->Get("--format").value_or("text");
  if (format != "text" && format != "json" && format != "sarif") {
    return BadInput(err, "lint",
                    absl::StrCat("--format must be text, json or sarif, not '", format, "'"));
  }
  const std::string path = args->positional()[0];
  absl::StatusOr<std::string> text = ReadModuleText(path);
  if (!text.ok()) return BadInput(err, "lint", text.status().message());
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
  if (!module.ok()) return BadInput(err, "lint", module.status().message());
  lint::LintOptions options;
  absl::StatusOr<int64_t> n = args->GetInt("--num-partitions", 0);
  if (!n.ok()) return BadInput(err, "lint", n.status().message());
  if (*n < 0 || *n > 65536) return BadInput(err, "lint", "--num-partitions must be in [1, 65536]");
  options.num_partitions = *n > 0 ? *n : (*module)->num_partitions();
  if (!(*module)->has_num_partitions() && *n == 0) {
    return BadInput(
        err, "lint",
        absl::StrCat(path, ": the module has no num_partitions; pass --num-partitions"));
  }
  absl::StatusOr<int64_t> timeout = args->GetInt("--timeout-ms", options.timeout_ms);
  if (!timeout.ok() || *timeout <= 0) {
    return BadInput(err, "lint", "--timeout-ms must be a positive integer");
  }
  options.timeout_ms = *timeout;
  std::unique_ptr<HloModule> global;
  if (std::optional<std::string> global_path = args->Get("--global")) {
    absl::StatusOr<std::unique_ptr<HloModule>> loaded = LoadVerifiedModule(*global_path, err);
    if (!loaded.ok()) return BadInput(err, "lint", loaded.status().message());
    global = *std::move(loaded);
    options.global = global.get();
  }
  if (std::optional<std::string> spec = args->Get("--topology")) {
    absl::StatusOr<lint::Topology> topology = lint::ParseTopology(*spec, options.num_partitions);
    if (!topology.ok()) return BadInput(err, "lint", topology.status().message());
    options.topology = *std::move(topology);
  }
  options.infer = !args->Has("--no-infer");
  options.global_shardings_are_constraints = args->Has("--user-shardings");
  if (options.global_shardings_are_constraints && options.global == nullptr) {
    return BadInput(err, "lint", "--user-shardings needs --global PRE.hlo");
  }
  if (std::optional<std::string> mesh_text = args->Get("--mesh")) {
    absl::StatusOr<Mesh> mesh = lint::ParseMeshFlag(*mesh_text);
    if (!mesh.ok()) return BadInput(err, "lint", absl::StrCat("--mesh: ", mesh.status().message()));
    if (mesh->num_devices() != options.num_partitions) {
      return BadInput(err, "lint",
                      absl::StrCat("--mesh ", *mesh_text, " has ", mesh->num_devices(),
                                   " devices; the module has ", options.num_partitions));
    }
    options.mesh = *std::move(mesh);
  }
  options.holdings_only = args->Has("--holdings");
  absl::StatusOr<lint::LintReport> report = lint::LintModule(**module, *text, options);
  if (!report.ok()) return BadInput(err, "lint", report.status().message());
  report->path = path;
  if (args->Has("--holdings")) {
    out << lint::FormatHoldings(*report);
    return kExitHolds;
  }
  if (std::optional<std::string> html = args->Get("--html")) {
    absl::Status written = viz::WriteLintPage(*html, *report, **module);
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
