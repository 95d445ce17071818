// `spmdcheck run FILE [--num-partitions N] [--seed S] [--float] [--max-elements M]`: runs a
// module on inputs drawn from the seed and prints the result (one line per device when N > 1).
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "oracle/engine.h"
#include "oracle/inputs.h"
#include "oracle/sharded_values.h"
#include "tools/cli.h"
#include "tools/module_loading.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] =
    "usage: spmdcheck run FILE [--num-partitions N] [--seed S] [--float] [--max-elements M]\n";

constexpr char kDescription[] =
    R"(Runs the module on inputs drawn from the seed and prints the result literal, or one line per
device (`device 3: s32[1,3] {{4, 5, 6}}`) when the module runs on more than one device. With
several devices, each parameter is drawn as a global value and every device gets its shard under
the parameter's sharding= (replicated when it has none).)";

}  // namespace

int RunRun(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("run", kUsage, kDescription,
                  "Exit codes: 0 ran, 2 bad input, 3 unsupported op or limit reached.");
  CLI::App& app = command.app();
  std::string path;
  app.add_option("FILE", path, "the module")->required();
  std::optional<int64_t> partitions_flag;
  uint64_t seed = 1;
  bool float_inputs = false;
  int64_t max_elements = int64_t{1} << 28;
  AddOptional(app, "--num-partitions", partitions_flag,
              "partition count (default: the module header's)")
      ->type_name("N")
      ->transform(DecimalInt64());
  app.add_option("--seed", seed,
                 "input seed (default 1); the same seed gives the same inputs and output")
      ->type_name("S")
      ->transform(DecimalUint64());
  app.add_flag("--float", float_inputs, "real-valued inputs in [-1, 1] instead of small integers");
  app.add_option("--max-elements", max_elements,
                 "refuse arrays larger than M elements (default 2^28) with exit code 3")
      ->type_name("M")
      ->transform(DecimalInt64());
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
  if (!module.ok()) return BadInput(err, "run", module.status().message());
  const int64_t partitions = partitions_flag.value_or((*module)->num_partitions());
  if (partitions < 1 || partitions > 65536) {
    return BadInput(err, "run", "--num-partitions must be in [1, 65536]");
  }
  oracle::EngineOptions options;
  options.num_partitions = partitions;
  options.replica_count = (*module)->replica_count();
  options.seed = seed;
  options.max_elements_per_array = max_elements;
  oracle::Engine engine(**module, options);
  absl::Status runnable = engine.CheckRunnable();
  if (!runnable.ok()) {
    err << "spmdcheck run: unknown: " << runnable.message() << "\n";
    return kExitUnknown;
  }
  const int64_t n = engine.num_devices();
  std::mt19937_64 rng(oracle::TrialSeed(seed, 0));
  const oracle::InputStyle style =
      float_inputs ? oracle::InputStyle::kReals : oracle::InputStyle::kSmallIntegers;
  const std::vector<oracle::ParameterProfile> profiles = oracle::ProfileParameters(**module);
  std::vector<std::vector<Literal>> inputs(n);
  const std::vector<HloInstruction*> params = (*module)->entry()->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i] == nullptr)
      return BadInput(err, "run", absl::StrCat("parameter ", i, " is missing"));
    const HloSharding sharding = params[i]->sharding().value_or(HloSharding::Replicate());
    Shape global_shape = params[i]->shape();
    if (n > 1 && sharding.IsTiled() && global_shape.IsArray()) {
      for (int64_t k = 0; k < global_shape.rank(); ++k) {
        global_shape.set_dimensions(k,
                                    global_shape.dimensions(k) * sharding.tile_assignment().dim(k));
      }
    }
    Literal global = oracle::RandomLiteral(global_shape, profiles[i], style, rng);
    for (int64_t d = 0; d < n; ++d) {
      if (n == 1) {
        inputs[d].push_back(global);
        continue;
      }
      absl::StatusOr<Literal> shard = oracle::ShardOf(global, sharding, d % partitions);
      if (!shard.ok()) {
        err << "spmdcheck run: unknown: parameter " << i << ": " << shard.status().message()
            << "\n";
        return kExitUnknown;
      }
      inputs[d].push_back(*std::move(shard));
    }
  }
  absl::StatusOr<std::vector<Literal>> results = engine.Run(std::move(inputs));
  if (!results.ok()) {
    const absl::Status& status = results.status();
    if (absl::IsUnimplemented(status) || absl::IsResourceExhausted(status)) {
      err << "spmdcheck run: unknown: " << status.message() << "\n";
      return kExitUnknown;
    }
    return BadInput(err, "run", status.message());
  }
  out << "seed " << seed << "\n";
  if (n == 1) {
    out << (*results)[0].ToString() << "\n";
  } else {
    for (int64_t d = 0; d < n; ++d)
      out << "device " << d << ": " << (*results)[d].ToString() << "\n";
  }
  return kExitHolds;
}

}  // namespace spmdcheck::cli
