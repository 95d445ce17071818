// `spmdcheck check FILE [--num-partitions N] [--trials K] [--seed S] [--stats] [--compare PART]
// [--no-shrink] [--inject-bug NAME]`: partition with the reference partitioner, then judge the
// result with the oracle (see docs/check.md).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/check_pipeline.h"
#include "oracle/equivalence.h"
#include "partitioner/cost_model.h"
#include "tools/cli.h"
#include "tools/module_loading.h"

namespace spmdcheck::cli {

void PrintPartitionStats(const partitioner::PartitionStats& stats, const HloModule& partitioned,
                         std::ostream& out);

namespace {

constexpr char kCheckHelp[] =
    R"(usage: spmdcheck check FILE [--num-partitions N] [--trials K] [--seed S] [--stats]
                       [--compare PARTITIONED] [--no-shrink] [--inject-bug NAME]

Partitions FILE with the reference partitioner and checks with the oracle that the partitioned
program computes FILE's result on every device (random inputs, padding poisoned).
  --num-partitions N      partition count (default: the module's num_partitions)
  --trials K              random trials (default 2); --seed S (default 1)
  --stats                 handled/fallback counts and the collective cost of our partitioning
  --compare PARTITIONED   also print the collective cost of another partitioned module
                          (e.g. XLA's dump) next to ours
  --no-shrink             do not shrink arrays over the oracle's budget (then: unknown)
  --no-widen              keep bf16/f16/f8 arithmetic (default: both programs run in f32,
                          since partitioning legitimately reorders sums)
  --inject-bug NAME       switch on an injected partitioner bug (spmdcheck fuzz --list-bugs)
Exit codes: 0 holds, 1 fails (counterexample printed), 2 bad input, 3 unknown (unsupported
op or limit; the message names it).
)";

}  // namespace

int RunCheck(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Args> args =
      Args::Parse(argv, {"--num-partitions", "--trials", "--seed", "--compare", "--inject-bug"},
                  {"--stats", "--no-shrink", "--no-widen", "--help"});
  if (!args.ok()) return BadInput(err, "check", args.status().message());
  if (args->Has("--help")) {
    out << kCheckHelp;
    return kExitHolds;
  }
  if (args->positional().size() != 1) {
    err << kCheckHelp;
    return kExitBadInput;
  }
  absl::StatusOr<int64_t> partitions = args->GetInt("--num-partitions", 0);
  absl::StatusOr<int64_t> trials = args->GetInt("--trials", 2);
  absl::StatusOr<int64_t> seed = args->GetInt("--seed", 1);
  for (const auto* value : {&partitions, &trials, &seed}) {
    if (!value->ok()) return BadInput(err, "check", value->status().message());
  }
  if (*partitions < 0 || *partitions > 65536 || *trials < 1) {
    return BadInput(err, "check", "--num-partitions must be in [1, 65536] and --trials >= 1");
  }
  const std::string& path = args->positional()[0];
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
  if (!module.ok()) return BadInput(err, "check", module.status().message());
  fuzz::CheckOptions options;
  options.num_partitions = *partitions;
  options.trials = *trials;
  options.seed = static_cast<uint64_t>(*seed);
  options.inject_bug = args->Get("--inject-bug").value_or("");
  options.shrink = !args->Has("--no-shrink");
  options.widen_narrow_floats = !args->Has("--no-widen");
  absl::StatusOr<fuzz::CheckOutcome> outcome = fuzz::CheckPartitioning(**module, options);
  if (!outcome.ok()) return BadInput(err, "check", outcome.status().message());
  if (!outcome->shrink_note.empty()) out << "shrunk: " << outcome->shrink_note << "\n";
  for (const std::string& note : outcome->notes) out << "note: " << note << "\n";
  std::string reproduce =
      absl::StrCat("spmdcheck check ", path, " --seed ", *seed, " --trials ", *trials);
  if (*partitions > 0) absl::StrAppend(&reproduce, " --num-partitions ", *partitions);
  if (!options.inject_bug.empty())
    absl::StrAppend(&reproduce, " --inject-bug ", options.inject_bug);
  if (!options.shrink) absl::StrAppend(&reproduce, " --no-shrink");
  if (!options.widen_narrow_floats) absl::StrAppend(&reproduce, " --no-widen");
  int code = kExitUnknown;
  switch (outcome->status) {
    case fuzz::CheckStatus::kHolds:
    case fuzz::CheckStatus::kFails:
      out << oracle::FormatEquivReport(outcome->report);
      code = VerdictExitCode(outcome->report.verdict);
      break;
    case fuzz::CheckStatus::kUnsupported:
      out << "verdict: unknown\nreason: " << outcome->message << "\n";
      code = kExitUnknown;
      break;
    case fuzz::CheckStatus::kCrash:
      out << "verdict: fails\nreason: " << outcome->message << "\n";
      code = kExitFails;
      break;
  }
  out << "reproduce: " << reproduce << "\n";
  if (args->Has("--stats") && outcome->partitioned != nullptr) {
    out << "ours (reference partitioner):\n";
    PrintPartitionStats(
        outcome->stats,
        outcome->as_written != nullptr ? *outcome->as_written : *outcome->partitioned, out);
  }
  if (std::optional<std::string> other = args->Get("--compare")) {
    absl::StatusOr<std::unique_ptr<HloModule>> compared = LoadVerifiedModule(*other, err);
    if (!compared.ok()) return BadInput(err, "check", compared.status().message());
    partitioner::ModuleCost cost =
        partitioner::CostOfModule(**compared, (*compared)->num_partitions());
    out << "compared (" << *other << "): collectives: " << cost.total.collectives << " ("
        << cost.total.collective_permutes
        << " collective-permute), max bytes received per device: " << cost.total.max_recv_bytes
        << ", sent: " << cost.total.max_send_bytes << "\n";
  }
  return code;
}

}  // namespace spmdcheck::cli
