// `spmdcheck explain PARTITIONED`: which parallelism a partitioned program uses, mesh axis by mesh
// axis, with pipeline stages checked (docs/explain.md).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/file.h"
#include "explain/explain.h"
#include "explain/ifrt_program.h"
#include "explain/mpmd_explanation.h"
#include "ir/hlo_module.h"
#include "tools/cli.h"
#include "tools/module_loading.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] =
    R"(usage: spmdcheck explain PARTITIONED [--global PRE.hlo] [--mesh NAME=SIZE,...]
                         [--num-partitions N] [--format text|json|html] [--timeout-ms MS]
)";

constexpr char kDescription[] =
    R"(Says which parallelism a partitioned module uses, mesh axis by mesh axis: the device mesh is
recovered from the tile assignments and collective groups (named when --mesh gives the axes or
the module states a mesh), each axis gets its roles (data, tensor/model, FSDP/ZeRO,
sequence/context, expert, pipeline) with the instructions that show them, its collectives and the
bytes a device receives over it per step. A pipeline (a while loop rotating stage-split state
between neighbours, with stage-stacked weights) is checked: Z3 proves the rotation and the weight
placement for every device, and a run of the loop's schedule checks that every micro-batch passes
every stage in order. The last line answers: intra-op only, or intra-op plus N pipeline stages
over an axis. A global (pre-partitioning) module is explained from its shardings.
An MPMD (pipeline) program in IFRT IR (Shardy's MPMD partitioner after lower_to_ifrt) is
explained mesh by mesh: stages, each mesh's order of fragment calls with microbatches,
transfers between meshes and their bytes, what each mesh axis splits; its wiring is checked
(values, placement, transfers, fragments) and the last line answers inter-op and intra-op.)";

constexpr char kFooter[] =
    R"(Exit codes: 0 explained (pipeline checks proved or none), 1 a pipeline check refuted, 2 bad input,
3 a pipeline check unknown.)";

// An MPMD program in IFRT IR (explain/mpmd_explanation.h).
int ExplainIfrt(const std::string& path, const std::string& text, const std::string& format,
                std::ostream& out, std::ostream& err) {
  absl::StatusOr<explain::IfrtProgram> program = explain::ParseIfrtProgram(text, path);
  if (!program.ok()) return BadInput(err, "explain", program.status().message());
  absl::StatusOr<explain::MpmdExplanation> explanation = explain::ExplainMpmd(*program);
  if (!explanation.ok()) return BadInput(err, "explain", explanation.status().message());
  out << (format == "json" ? explain::FormatMpmdJson(*explanation)
                           : explain::FormatMpmdText(*explanation));
  return VerdictExitCode(explanation->verdict());
}

}  // namespace

int RunExplain(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("explain", kUsage, kDescription, kFooter);
  CLI::App& app = command.app();
  std::string path;
  app.add_option("PARTITIONED", path, "the partitioned module (HLO), or an IFRT IR program")
      ->required();
  std::optional<std::string> global_path, mesh_spec;
  int64_t n = 0;
  std::string format = "text";
  explain::ExplainOptions options;
  AddOptional(app, "--global", global_path,
              "the pre-partitioning program (XLA's before_spmd-partitioning dump): its\n"
              "dots and shardings say what the axes are for")
      ->type_name("PRE.hlo")
      ->check(InputFile());
  AddOptional(app, "--mesh", mesh_spec,
              "axis names and sizes in device-id order, e.g. data=2,pipeline=4,model=8")
      ->type_name("SPEC");
  app.add_option("--num-partitions", n, "when the module header does not say")
      ->type_name("N")
      ->transform(DecimalInt64());
  app.add_option("--format", format,
                 "text (default), json (schema in docs/explain.md), html (one page)")
      ->type_name("F");
  app.add_option("--timeout-ms", options.timeout_ms,
                 absl::StrCat("per Z3 query (default ", options.timeout_ms, ")"))
      ->type_name("MS")
      ->transform(DecimalInt64());
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  if (format != "text" && format != "json" && format != "html") {
    return BadInput(err, "explain",
                    absl::StrCat("--format must be text, json or html, not '", format, "'"));
  }
  if (options.timeout_ms <= 0) {
    return BadInput(err, "explain", "--timeout-ms must be a positive integer");
  }
  if (mesh_spec.has_value()) {
    absl::StatusOr<explain::NamedMesh> mesh = explain::ParseMeshFlag(*mesh_spec);
    if (!mesh.ok()) return BadInput(err, "explain", mesh.status().message());
    options.mesh = *std::move(mesh);
  }
  if (n < 0 || n > 65536) {
    return BadInput(err, "explain", "--num-partitions must be in [1, 65536]");
  }
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return BadInput(err, "explain", text.status().message());
  if (explain::LooksLikeIfrtProgram(*text)) {
    if (format == "html" || global_path.has_value() || mesh_spec.has_value()) {
      return BadInput(err, "explain",
                      absl::StrCat(path,
                                   ": an IFRT (MPMD) program is explained as text or json; "
                                   "--global, --mesh and html are for SPMD modules"));
    }
    return ExplainIfrt(path, *text, format, out, err);
  }
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
  if (!module.ok()) return BadInput(err, "explain", module.status().message());
  if (n > 0) {
    (*module)->set_num_partitions(n);
  } else if (!(*module)->has_num_partitions()) {
    return BadInput(
        err, "explain",
        absl::StrCat(path, ": the module has no num_partitions; pass --num-partitions"));
  }
  if ((*module)->num_partitions() > 65536) {
    return BadInput(err, "explain", "more than 65536 partitions are not supported");
  }
  explain::ModuleSource input{module->get(), *std::move(text)};
  std::unique_ptr<HloModule> global;
  std::optional<explain::ModuleSource> global_source;
  if (global_path.has_value()) {
    absl::StatusOr<std::string> global_text = base::ReadFile(*global_path);
    if (!global_text.ok()) return BadInput(err, "explain", global_text.status().message());
    absl::StatusOr<std::unique_ptr<HloModule>> loaded = LoadVerifiedModule(*global_path, err);
    if (!loaded.ok()) return BadInput(err, "explain", loaded.status().message());
    global = *std::move(loaded);
    if (!global->has_num_partitions()) global->set_num_partitions((*module)->num_partitions());
    global_source = explain::ModuleSource{global.get(), *std::move(global_text)};
  }
  absl::StatusOr<explain::Explanation> explanation =
      explain::Explain(input, global_source.has_value() ? &*global_source : nullptr, options);
  if (!explanation.ok()) return BadInput(err, "explain", explanation.status().message());
  explanation->path = path;
  if (format == "json") {
    out << explain::FormatJson(*explanation);
  } else if (format == "html") {
    out << explain::FormatHtml(*explanation);
  } else {
    out << explain::FormatText(*explanation);
  }
  return VerdictExitCode(explanation->verdict());
}

}  // namespace spmdcheck::cli
