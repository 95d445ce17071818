// `spmdcheck repro MODULE --jax -o repro.py [--partitioner SPEC] [--seed S] [--trial T]
// [--num-partitions N]`: a standalone script that reproduces a partitioning with nothing but
// jax (see docs/repro.md and check/repro_script.h).
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "check/repro_script.h"
#include "tools/cli.h"
#include "tools/module_loading.h"
#include "tools/partitioner_flags.h"

namespace spmdcheck::cli {
namespace {

constexpr char kReproHelp[] =
    R"(usage: spmdcheck repro MODULE --jax -o repro.py [--partitioner SPEC] [--seed S] [--trial T]
                      [--num-partitions N]

Writes a standalone Python script that reproduces the partitioning of MODULE with nothing but
`pip install jax==V` (V: the jax the partitioner under test runs, written into the script). The
script compiles MODULE for one CPU device and, sharded, for N CPU devices, runs both on the
inputs of `spmdcheck check MODULE --seed S` (trial T), prints both results and exits 1 when
they differ, 0 when they agree, 2 when it cannot run. With --partitioner xla XLA partitions the
module inside the script; with shardy the script compiles the StableHLO module with Shardy
shardings that the XLA worker made; with any other partitioner (reference, cmd:...) the script
runs the per-device program that partitioner wrote, so XLA's runtime judges it.
  --jax                the script's kind (the only one so far)
  -o OUT               where to write it (required)
  --seed S, --trial T  the inputs (defaults 1 and 0, as `check`'s first trial)
  --num-partitions N   partition count (default: the module's num_partitions)
)"
    R"(Exit codes: 0 written, 2 bad input, 3 the partitioner could not partition the module or XLA
is unavailable (the reason is printed).
)";

std::set<std::string> ReproFlags() {
  std::set<std::string> flags = {"-o", "--seed", "--trial", "--num-partitions"};
  flags.insert(kPartitionerValueFlags.begin(), kPartitionerValueFlags.end());
  return flags;
}

}  // namespace

int RunRepro(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Args> args = Args::Parse(argv, ReproFlags(), {"--jax", "--help"});
  if (!args.ok()) return BadInput(err, "repro", args.status().message());
  if (args->Has("--help")) {
    out << kReproHelp << kPartitionerFlagsHelp;
    return kExitHolds;
  }
  if (args->positional().size() != 1 || !args->Get("-o").has_value()) {
    err << kReproHelp;
    return kExitBadInput;
  }
  if (!args->Has("--jax")) return BadInput(err, "repro", "give the script's kind: --jax");
  absl::StatusOr<uint64_t> seed = args->GetUint64("--seed", 1);
  if (!seed.ok()) return BadInput(err, "repro", seed.status().message());
  absl::StatusOr<int64_t> trial = args->GetInt("--trial", 0);
  if (!trial.ok() || *trial < 0) return BadInput(err, "repro", "--trial takes an integer >= 0");
  absl::StatusOr<int64_t> partitions = args->GetInt("--num-partitions", 0);
  if (!partitions.ok() || *partitions < 0 || *partitions > 4096) {
    return BadInput(err, "repro", "--num-partitions must be in [1, 4096]");
  }
  const std::string& path = args->positional()[0];
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
  if (!module.ok()) return BadInput(err, "repro", module.status().message());
  absl::StatusOr<PartitionerChoice> choice = PartitionerChoiceFromArgs(*args);
  if (!choice.ok()) return BadInput(err, "repro", choice.status().message());
  absl::StatusOr<std::vector<std::unique_ptr<target::PartitionerUnderTest>>> partitioners =
      target::MakePartitioners(choice->specs, choice->options);
  if (!partitioners.ok()) return BadInput(err, "repro", partitioners.status().message());
  if (partitioners->size() != 1) return BadInput(err, "repro", "repro takes one --partitioner");
  check::ReproRequest request;
  request.seed = *seed;
  request.trial = *trial;
  request.num_partitions = *partitions;
  request.command = absl::StrCat("spmdcheck repro ", absl::StrJoin(argv, " "));
  request.found = absl::StrCat("see `spmdcheck check ", path, " --seed ", *seed, " --partitioner ",
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
  const std::string out_path = *args->Get("-o");
  std::ofstream file(out_path, std::ios::binary | std::ios::trunc);
  file << *text;
  file.close();
  if (!file) return BadInput(err, "repro", absl::StrCat("cannot write ", out_path));
  out << "wrote " << out_path << " (" << check::ReproModeName(script->mode) << ", "
      << script->num_partitions << " devices, jax " << script->jax_version << "): python "
      << out_path << "\n";
  return kExitHolds;
}

}  // namespace spmdcheck::cli
