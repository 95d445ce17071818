// `spmdcheck run FILE [--num-partitions N] [--seed S] [--float] [--max-elements M]`: runs a
// module on inputs drawn from the seed and prints the result (one line per device when N > 1).
#include <random>

#include "absl/strings/str_cat.h"
#include "oracle/engine.h"
#include "oracle/inputs.h"
#include "oracle/sharded_values.h"
#include "tools/cli.h"
#include "tools/module_loading.h"

namespace spmdcheck::cli {
namespace {

constexpr char kRunHelp[] =
    R"(usage: spmdcheck run FILE [--num-partitions N] [--seed S] [--float] [--max-elements M]

Runs the module on inputs drawn from the seed and prints the result literal, or one line per
device (`device 3: s32[1,3] {{4, 5, 6}}`) when the module runs on more than one device. With
several devices, each parameter is drawn as a global value and every device gets its shard under
the parameter's sharding= (replicated when it has none).
  --num-partitions N  partition count (default: the module header's)
  --seed S            input seed (default 1); the same seed gives the same inputs and output
  --float             real-valued inputs in [-1, 1] instead of small integers
  --max-elements M    refuse arrays larger than M elements (default 2^28) with exit code 3
Exit codes: 0 ran, 2 bad input, 3 unsupported op or limit reached.
)";

}  // namespace

int RunRun(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Args> args =
      Args::Parse(argv, {"--num-partitions", "--seed", "--max-elements"}, {"--float", "--help"});
  if (!args.ok()) return BadInput(err, "run", args.status().message());
  if (args->Has("--help")) {
    out << kRunHelp;
    return kExitHolds;
  }
  if (args->positional().size() != 1) {
    err << kRunHelp;
    return kExitBadInput;
  }
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      LoadVerifiedModule(args->positional()[0], err);
  if (!module.ok()) return BadInput(err, "run", module.status().message());
  absl::StatusOr<int64_t> partitions =
      args->GetInt("--num-partitions", (*module)->num_partitions());
  absl::StatusOr<uint64_t> seed = args->GetUint64("--seed", 1);
  absl::StatusOr<int64_t> max_elements = args->GetInt("--max-elements", int64_t{1} << 28);
  for (const auto* value : {&partitions, &max_elements}) {
    if (!value->ok()) return BadInput(err, "run", value->status().message());
  }
  if (!seed.ok()) return BadInput(err, "run", seed.status().message());
  if (*partitions < 1 || *partitions > 65536) {
    return BadInput(err, "run", "--num-partitions must be in [1, 65536]");
  }
  oracle::EngineOptions options;
  options.num_partitions = *partitions;
  options.replica_count = (*module)->replica_count();
  options.seed = static_cast<uint64_t>(*seed);
  options.max_elements_per_array = *max_elements;
  oracle::Engine engine(**module, options);
  absl::Status runnable = engine.CheckRunnable();
  if (!runnable.ok()) {
    err << "spmdcheck run: unknown: " << runnable.message() << "\n";
    return kExitUnknown;
  }
  const int64_t n = engine.num_devices();
  std::mt19937_64 rng(oracle::TrialSeed(static_cast<uint64_t>(*seed), 0));
  const oracle::InputStyle style =
      args->Has("--float") ? oracle::InputStyle::kReals : oracle::InputStyle::kSmallIntegers;
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
      absl::StatusOr<Literal> shard = oracle::ShardOf(global, sharding, d % *partitions);
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
  out << "seed " << *seed << "\n";
  if (n == 1) {
    out << (*results)[0].ToString() << "\n";
  } else {
    for (int64_t d = 0; d < n; ++d)
      out << "device " << d << ": " << (*results)[d].ToString() << "\n";
  }
  return kExitHolds;
}

}  // namespace spmdcheck::cli
