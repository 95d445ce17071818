// `spmdcheck repro MODULE --jax -o repro.py [--partitioner SPEC] [--seed S] [--trial T]
// [--num-partitions N]`: a standalone script that reproduces a partitioning with nothing but
// jax (see docs/repro.md and check/repro_script.h).
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/file.h"
#include "check/repro_script.h"
#include "tools/cli.h"
#include "tools/module_loading.h"
#include "tools/partitioner_flags.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] =
    R"(usage: spmdcheck repro MODULE --jax -o repro.py [--partitioner SPEC] [--seed S] [--trial T]
                      [--num-partitions N]
)";

constexpr char kDescription[] =
    R"(Writes a standalone Python script that reproduces the partitioning of MODULE with nothing but
`pip install jax==V` (V: the jax the partitioner under test runs, written into the script). The
script compiles MODULE for one CPU device and, sharded, for N CPU devices, runs both on the
inputs of `spmdcheck check MODULE --seed S` (trial T), prints both results and exits 1 when
they differ, 0 when they agree, 2 when it cannot run. With --partitioner xla XLA partitions the
module inside the script; with shardy the script compiles the StableHLO module with Shardy
shardings that the XLA worker made; with any other partitioner (reference, cmd:...) the script
runs the per-device program that partitioner wrote, so XLA's runtime judges it.)";

constexpr char kFooter[] =
    R"(Exit codes: 0 written, 2 bad input, 3 the partitioner could not partition the module or XLA
is unavailable (the reason is printed).)";

}  // namespace

int RunRepro(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("repro", kUsage, kDescription, kFooter);
  CLI::App& app = command.app();
  std::string path, out_path;
  bool jax = false;
  uint64_t seed = 1;
  int64_t trial = 0, partitions = 0;
  app.add_option("MODULE", path, "the module to reproduce")->required();
  app.add_flag("--jax", jax, "the script's kind (the only one so far)");
  app.add_option("-o", out_path, "where to write it")->type_name("OUT")->required();
  app.add_option("--seed", seed, "the inputs' seed (default 1, as `check`'s)")
      ->type_name("S")
      ->transform(DecimalUint64());
  app.add_option("--trial", trial, "the trial (default 0, as `check`'s first)")
      ->type_name("T")
      ->transform(DecimalInt64());
  app.add_option("--num-partitions", partitions,
                 "partition count (default: the module's num_partitions)")
      ->type_name("N")
      ->transform(DecimalInt64());
  PartitionerFlags partitioner_flags;
  AddPartitionerFlags(app, partitioner_flags);
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  if (!jax) return command.UsageError(err, "give the script's kind: --jax");
  if (trial < 0) return BadInput(err, "repro", "--trial takes an integer >= 0");
  if (partitions < 0 || partitions > 4096) {
    return BadInput(err, "repro", "--num-partitions must be in [1, 4096]");
  }
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
  if (!module.ok()) return BadInput(err, "repro", module.status().message());
  absl::StatusOr<PartitionerChoice> choice = ChoosePartitioner(partitioner_flags);
  if (!choice.ok()) return BadInput(err, "repro", choice.status().message());
  absl::StatusOr<std::vector<std::unique_ptr<target::PartitionerUnderTest>>> partitioners =
      target::MakePartitioners(choice->specs, choice->options);
  if (!partitioners.ok()) return BadInput(err, "repro", partitioners.status().message());
  if (partitioners->size() != 1) return BadInput(err, "repro", "repro takes one --partitioner");
  check::ReproRequest request;
  request.seed = seed;
  request.trial = trial;
  request.num_partitions = partitions;
  request.command = absl::StrCat("spmdcheck repro ", absl::StrJoin(argv, " "));
  request.found = absl::StrCat("see `spmdcheck check ", path, " --seed ", seed, " --partitioner ",
                               partitioners->front()->spec(), "`");
  absl::StatusOr<check::ReproScript> script =
      check::MakeReproScript(**module, *partitioners->front(), request);
  if (!script.ok()) {
    if (absl::IsInvalidArgument(script.status())) {
      return BadInput(err, "repro", absl::StrCat(path, ": ", script.status().message()));
    }
    err << "spmdcheck repro: unknown: " << path << ": " << script.status().message() << "\n";
    return kExitUnknown;
  }
  absl::StatusOr<std::string> text = check::RenderReproScript(*script);
  if (!text.ok()) return BadInput(err, "repro", text.status().message());
  if (absl::Status written = base::WriteFile(out_path, *text); !written.ok()) {
    return BadInput(err, "repro", written.message());
  }
  out << "wrote " << out_path << " (" << check::ReproModeName(script->mode) << ", "
      << script->num_partitions << " devices, jax " << script->jax_version << "): python "
      << out_path << "\n";
  return kExitHolds;
}

}  // namespace spmdcheck::cli
