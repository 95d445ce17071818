// `spmdcheck partition FILE [--num-partitions N] [-o OUT] [--stats] [--inject-bug NAME]`: the
// reference SPMD partitioner (see docs/partition.md).
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/hlo_printer.h"
#include "partitioner/cost_model.h"
#include "partitioner/partitioner.h"
#include "tools/cli.h"
#include "tools/module_loading.h"

namespace spmdcheck::cli {
namespace {

constexpr char kPartitionHelp[] =
    R"(usage: spmdcheck partition FILE [--num-partitions N] [-o OUT] [--stats]

Partitions a module whose instructions carry shardings into the per-device program (XLA's
conventions: local shapes, partition-id offset tables, collectives with channel ids and global
device ids). Each output instruction keeps the global sharding of the value it holds.
Instructions without a sharding get one by propagation (operands, else users, else replicated).
  --num-partitions N   partition count (default: the module's num_partitions)
  -o OUT               write the partitioned module to OUT (default: stdout)
  --stats              print handled/fallback counts and the collective cost to stderr
Exit codes: 0 partitioned, 2 bad input, 3 a construct the partitioner cannot express.
)";

}  // namespace

void PrintPartitionStats(const partitioner::PartitionStats& stats, const HloModule& partitioned,
                         std::ostream& out) {
  out << "instructions: " << stats.instructions << ", handled: " << stats.handled
      << ", fallback: " << stats.fallbacks() << "\n";
  for (const auto& [reason, count] : stats.fallback_reasons) {
    out << "  fallback x" << count << ": " << reason << "\n";
  }
  partitioner::ModuleCost cost =
      partitioner::CostOfModule(partitioned, partitioned.num_partitions());
  out << "collectives: " << cost.total.collectives << " (" << cost.total.collective_permutes
      << " collective-permute), max bytes received per device: " << cost.total.max_recv_bytes
      << ", sent: " << cost.total.max_send_bytes << "\n";
}

int RunPartition(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Args> args =
      Args::Parse(argv, {"--num-partitions", "-o", "--inject-bug"}, {"--stats", "--help"});
  if (!args.ok()) return BadInput(err, "partition", args.status().message());
  if (args->Has("--help")) {
    out << kPartitionHelp;
    return kExitHolds;
  }
  if (args->positional().size() != 1) {
    err << kPartitionHelp;
    return kExitBadInput;
  }
  absl::StatusOr<int64_t> partitions = args->GetInt("--num-partitions", 0);
  if (!partitions.ok()) return BadInput(err, "partition", partitions.status().message());
  if (*partitions < 0 || *partitions > 65536) {
    return BadInput(err, "partition", "--num-partitions must be in [1, 65536]");
  }
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      LoadVerifiedModule(args->positional()[0], err);
  if (!module.ok()) return BadInput(err, "partition", module.status().message());
  partitioner::PartitionOptions options;
  options.num_partitions = *partitions;
  options.inject_bug = args->Get("--inject-bug").value_or("");
  absl::StatusOr<partitioner::PartitionResult> result =
      partitioner::PartitionModule(**module, options);
  if (!result.ok()) {
    const std::string message =
        absl::StrCat(args->positional()[0], ": ", result.status().message());
    if (absl::IsUnimplemented(result.status())) {
      err << "spmdcheck partition: unknown: " << message << "\n";
      return kExitUnknown;
    }
    return BadInput(err, "partition", message);
  }
  const std::string text = PrintModule(*result->module);
  if (std::optional<std::string> path = args->Get("-o")) {
    std::ofstream file(*path);
    file << text;
    if (!file) return BadInput(err, "partition", absl::StrCat("cannot write ", *path));
  } else {
    out << text;
  }
  if (args->Has("--stats")) PrintPartitionStats(result->stats, *result->module, err);
  return kExitHolds;
}

}  // namespace spmdcheck::cli
