// `spmdcheck equiv GLOBAL PARTITIONED [--num-partitions N] [--trials K] [--seed S] [--float]
// [--same-input-everywhere] [--max-elements M]`: checks that a partitioned program computes
// the global program's result on every device.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "oracle/equivalence.h"
#include "tools/cli.h"
#include "tools/module_loading.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] =
    R"(usage: spmdcheck equiv GLOBAL PARTITIONED [--num-partitions N] [--trials K] [--seed S]
                        [--float] [--same-input-everywhere] [--max-elements M]
)";

constexpr char kDescription[] =
    R"(Draws global inputs, gives every partition its own shard of each parameter (padding poisoned),
runs both programs on N simulated devices and checks that every device's result equals its
shard of the global result under the root sharding (every replica checked). Two partitioned
programs with the same signature are compared device by device instead.)";

constexpr char kFooter[] =
    R"(Exit codes: 0 holds (no counterexample in K trials), 1 fails (counterexample printed),
2 bad input, 3 unknown (unsupported op or limit).)";

}  // namespace

int RunEquiv(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("equiv", kUsage, kDescription, kFooter);
  CLI::App& app = command.app();
  std::string global_path, partitioned_path;
  app.add_option("GLOBAL", global_path, "the global program")->required();
  app.add_option("PARTITIONED", partitioned_path, "the partitioned program")->required();
  int64_t partitions = 0, trials = 3, max_elements = int64_t{1} << 28;
  uint64_t seed = 1;
  bool float_inputs = false, same_input_everywhere = false;
  app.add_option("--num-partitions", partitions, "partition count (default: PARTITIONED's header)")
      ->type_name("N")
      ->transform(DecimalInt64());
  app.add_option("--trials", trials, "random trials (default 3)")
      ->type_name("K")
      ->transform(DecimalInt64());
  app.add_option("--seed", seed, "seed (default 1); printed with every verdict")
      ->type_name("S")
      ->transform(DecimalUint64());
  app.add_flag("--float", float_inputs,
               "real-valued inputs with a tolerance (default: small integers, exact)");
  app.add_flag("--same-input-everywhere", same_input_everywhere,
               "feed every partition the same shard: UNSOUND, shows the pitfall");
  app.add_option("--max-elements", max_elements,
                 "refuse arrays larger than M elements (default 2^28)")
      ->type_name("M")
      ->transform(DecimalInt64());
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  absl::StatusOr<std::unique_ptr<HloModule>> first = LoadVerifiedModule(global_path, err);
  if (!first.ok()) return BadInput(err, "equiv", first.status().message());
  absl::StatusOr<std::unique_ptr<HloModule>> second = LoadVerifiedModule(partitioned_path, err);
  if (!second.ok()) return BadInput(err, "equiv", second.status().message());
  oracle::EquivOptions options;
  if (partitions < 0 || partitions > 65536 || trials < 1) {
    return BadInput(err, "equiv", "--num-partitions must be in [1, 65536] and --trials >= 1");
  }
  options.num_partitions = partitions;
  options.trials = trials;
  options.seed = seed;
  options.max_elements_per_array = max_elements;
  options.float_inputs = float_inputs;
  options.same_input_everywhere = same_input_everywhere;
  absl::StatusOr<std::string> source = ReadModuleText(partitioned_path);
  if (source.ok()) options.partitioned_source = *std::move(source);
  absl::StatusOr<oracle::EquivReport> report = oracle::CheckEquivalence(**first, **second, options);
  if (!report.ok()) return BadInput(err, "equiv", report.status().message());
  out << oracle::FormatEquivReport(*report);
  std::string reproduce = absl::StrCat("spmdcheck equiv ", global_path, " ", partitioned_path,
                                       " --seed ", seed, " --trials ", trials);
  if (partitions > 0) absl::StrAppend(&reproduce, " --num-partitions ", partitions);
  if (options.float_inputs) absl::StrAppend(&reproduce, " --float");
  if (options.same_input_everywhere) absl::StrAppend(&reproduce, " --same-input-everywhere");
  out << "reproduce: " << reproduce << "\n";
  return VerdictExitCode(report->verdict);
}

}  // namespace spmdcheck::cli
