// `spmdcheck equiv GLOBAL PARTITIONED [--num-partitions N] [--trials K] [--seed S] [--float]
// [--same-input-everywhere] [--max-elements M]`: checks that a partitioned program computes
// the global program's result on every device.
#include "absl/strings/str_cat.h"
#include "oracle/equivalence.h"
#include "tools/cli.h"
#include "tools/module_loading.h"

namespace spmdcheck::cli {
namespace {

constexpr char kEquivHelp[] =
    R"(usage: spmdcheck equiv GLOBAL PARTITIONED [--num-partitions N] [--trials K] [--seed S]
                        [--float] [--same-input-everywhere] [--max-elements M]

Draws global inputs, gives every partition its own shard of each parameter (padding poisoned),
runs both programs on N simulated devices and checks that every device's result equals its
shard of the global result under the root sharding (every replica checked). Two partitioned
programs with the same signature are compared device by device instead.
  --num-partitions N       partition count (default: PARTITIONED's header)
  --trials K               random trials (default 3)
  --seed S                 seed (default 1); printed with every verdict
  --float                  real-valued inputs with a tolerance (default: small integers, exact)
  --same-input-everywhere  feed every partition the same shard: UNSOUND, shows the pitfall
  --max-elements M         refuse arrays larger than M elements (default 2^28)
Exit codes: 0 holds (no counterexample in K trials), 1 fails (counterexample printed),
2 bad input, 3 unknown (unsupported op or limit).
)";

}  // namespace

int RunEquiv(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Args> args =
      Args::Parse(argv, {"--num-partitions", "--trials", "--seed", "--max-elements"},
                  {"--float", "--same-input-everywhere", "--help"});
  if (!args.ok()) return BadInput(err, "equiv", args.status().message());
  if (args->Has("--help")) {
    out << kEquivHelp;
    return kExitHolds;
  }
  if (args->positional().size() != 2) {
    err << kEquivHelp;
    return kExitBadInput;
  }
  absl::StatusOr<std::unique_ptr<HloModule>> first = LoadVerifiedModule(args->positional()[0], err);
  if (!first.ok()) return BadInput(err, "equiv", first.status().message());
  absl::StatusOr<std::unique_ptr<HloModule>> second =
      LoadVerifiedModule(args->positional()[1], err);
  if (!second.ok()) return BadInput(err, "equiv", second.status().message());
  oracle::EquivOptions options;
  absl::StatusOr<int64_t> partitions = args->GetInt("--num-partitions", 0);
  absl::StatusOr<int64_t> trials = args->GetInt("--trials", 3);
  absl::StatusOr<uint64_t> seed = args->GetUint64("--seed", 1);
  absl::StatusOr<int64_t> max_elements = args->GetInt("--max-elements", int64_t{1} << 28);
  for (const auto* value : {&partitions, &trials, &max_elements}) {
    if (!value->ok()) return BadInput(err, "equiv", value->status().message());
  }
  if (!seed.ok()) return BadInput(err, "equiv", seed.status().message());
  if (*partitions < 0 || *partitions > 65536 || *trials < 1) {
    return BadInput(err, "equiv", "--num-partitions must be in [1, 65536] and --trials >= 1");
  }
  options.num_partitions = *partitions;
  options.trials = *trials;
  options.seed = static_cast<uint64_t>(*seed);
  options.max_elements_per_array = *max_elements;
  options.float_inputs = args->Has("--float");
  options.same_input_everywhere = args->Has("--same-input-everywhere");
  absl::StatusOr<std::string> source = ReadModuleText(args->positional()[1]);
  if (source.ok()) options.partitioned_source = *std::move(source);
  absl::StatusOr<oracle::EquivReport> report = oracle::CheckEquivalence(**first, **second, options);
  if (!report.ok()) return BadInput(err, "equiv", report.status().message());
  out << oracle::FormatEquivReport(*report);
  std::string reproduce =
      absl::StrCat("spmdcheck equiv ", args->positional()[0], " ", args->positional()[1],
                   " --seed ", *seed, " --trials ", *trials);
  if (*partitions > 0) absl::StrAppend(&reproduce, " --num-partitions ", *partitions);
  if (options.float_inputs) absl::StrAppend(&reproduce, " --float");
  if (options.same_input_everywhere) absl::StrAppend(&reproduce, " --same-input-everywhere");
  out << "reproduce: " << reproduce << "\n";
  return VerdictExitCode(report->verdict);
}

}  // namespace spmdcheck::cli
