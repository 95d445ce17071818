// `spmdcheck partition FILE [--partitioner SPEC] [--num-partitions N] [-o OUT] [--stats]
// [--inject-bug NAME]`: the partitioner under test on one module (see docs/partition.md).
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/cost_model.h"
#include "analysis/partition_stats.h"
#include "base/file.h"
#include "ir/hlo_printer.h"
#include "target/partitioner_under_test.h"
#include "tools/cli.h"
#include "tools/module_loading.h"
#include "tools/partitioner_flags.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] =
    "usage: spmdcheck partition FILE [--partitioner SPEC] [--num-partitions N] [-o OUT] "
    "[--stats]\n";

constexpr char kDescription[] =
    R"(Partitions a module whose instructions carry shardings into the per-device program (XLA's
conventions: local shapes, partition-id offset tables, collectives with channel ids and global
device ids). With the reference partitioner (the default) each output instruction keeps the
global sharding of the value it holds, and instructions without a sharding get one by
propagation (operands, else users, else replicated); with xla or shardy the output is XLA's
module after spmd-partitioning, as XLA wrote it.)";

constexpr char kFooter[] =
    R"(Exit codes: 0 partitioned, 1 the partitioner crashed or rejected a valid module, 2 bad input,
3 unknown (a construct the partitioner cannot express, XLA unavailable, a timeout).)";

}  // namespace

void PrintCollectiveCost(const HloModule& partitioned, std::ostream& out);

void PrintPartitionStats(const analysis::PartitionStats& stats, const HloModule& partitioned,
                         std::ostream& out) {
  out << "instructions: " << stats.instructions << ", handled: " << stats.handled
      << ", fallback: " << stats.fallbacks() << "\n";
  for (const auto& [reason, count] : stats.fallback_reasons) {
    out << "  fallback x" << count << ": " << reason << "\n";
  }
  PrintCollectiveCost(partitioned, out);
}

void PrintCollectiveCost(const HloModule& partitioned, std::ostream& out) {
  analysis::ModuleCost cost = analysis::CostOfModule(partitioned, partitioned.num_partitions());
  out << "collectives: " << cost.total.collectives << " (" << cost.total.collective_permutes
      << " collective-permute), max bytes received per device: " << cost.total.max_recv_bytes
      << ", sent: " << cost.total.max_send_bytes << "\n";
}

int RunPartition(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("partition", kUsage, kDescription, kFooter);
  CLI::App& app = command.app();
  std::string path;
  app.add_option("FILE", path, "the module, its instructions carrying shardings")->required();
  int64_t partitions = 0;
  std::optional<std::string> output;
  bool stats = false;
  app.add_option("--num-partitions", partitions,
                 "partition count (default: the module's num_partitions)")
      ->type_name("N")
      ->transform(DecimalInt64());
  AddOptional(app, "-o", output, "write the partitioned module to OUT (default: stdout)")
      ->type_name("OUT");
  app.add_flag("--stats", stats, "print handled/fallback counts and the collective cost to stderr");
  PartitionerFlags partitioner_flags;
  AddPartitionerFlags(app, partitioner_flags);
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  if (partitions < 0 || partitions > 65536) {
    return BadInput(err, "partition", "--num-partitions must be in [1, 65536]");
  }
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
  if (!module.ok()) return BadInput(err, "partition", module.status().message());
  absl::StatusOr<PartitionerChoice> choice = ChoosePartitioner(partitioner_flags);
  if (!choice.ok()) return BadInput(err, "partition", choice.status().message());
  absl::StatusOr<std::vector<std::unique_ptr<target::PartitionerUnderTest>>> partitioners =
      target::MakePartitioners(choice->specs, choice->options);
  if (!partitioners.ok()) return BadInput(err, "partition", partitioners.status().message());
  if (partitioners->size() != 1) {
    return BadInput(err, "partition", "partition takes one --partitioner (check takes several)");
  }
  const int64_t count = partitions > 0 ? partitions : (*module)->num_partitions();
  absl::StatusOr<target::PartitionOutput> result =
      partitioners->front()->Partition(**module, count);
  if (!result.ok()) {
    return BadInput(err, "partition", absl::StrCat(path, ": ", result.status().message()));
  }
  if (result->status != target::PartitionStatus::kOk) {
    const std::string message = absl::StrCat(path, ": ", result->message);
    switch (result->status) {
      case target::PartitionStatus::kCrash:
      case target::PartitionStatus::kRejected:
        err << "spmdcheck partition: " << target::PartitionStatusName(result->status) << ": "
            << message << "\n";
        return kExitFails;
      default:
        err << "spmdcheck partition: unknown: "
            << (result->status == target::PartitionStatus::kUnavailable
                    ? ""
                    : absl::StrCat(target::PartitionStatusName(result->status), ": "))
            << message << "\n";
        return kExitUnknown;
    }
  }
  const std::string text = result->partitioned_text.empty() ? PrintModule(*result->partitioned)
                                                            : result->partitioned_text;
  if (output.has_value()) {
    if (absl::Status written = base::WriteFile(*output, text); !written.ok()) {
      return BadInput(err, "partition", written.message());
    }
  } else {
    out << text;
  }
  if (stats) {
    if (partitioners->front()->capabilities().handler_stats) {
      PrintPartitionStats(result->stats, *result->partitioned, err);
    } else {
      err << "partitioner: " << result->report.name << " (" << result->report.version << "), "
          << result->report.seconds << " s\n";
      PrintCollectiveCost(*result->partitioned, err);
    }
  }
  return kExitHolds;
}

}  // namespace spmdcheck::cli
