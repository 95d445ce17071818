// `spmdcheck reshard --shape T --from S1 --to S2 --num-partitions N [--naive]`: the resharding
// planner's plan as HLO, with its cost and the naive plan's (see docs/reshard.md).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "partitioner/reshard.h"
#include "tools/cli.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] =
    "usage: spmdcheck reshard --shape T --from S1 --to S2 --num-partitions N [--naive]\n";

constexpr char kDescription[] =
    R"(Plans moving an array of shape T from sharding S1 to sharding S2 over N partitions with the
fewest bytes under the alpha-beta cost model (docs/reshard.md), prints the plan as a partitioned
HLO module (parameter = the local piece under S1, root = the local piece under S2) and its cost
next to the naive plan's (all-gather to replicated, then dynamic-slice).)";

constexpr char kFooter[] =
    "Exit codes: 0 planned, 2 bad input, 3 a pair of shardings the planner cannot move between.";

}  // namespace

int RunReshard(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("reshard", kUsage, kDescription, kFooter);
  CLI::App& app = command.app();
  std::string shape_text, from_text, to_text;
  int64_t n = 0;
  bool naive_only = false;
  app.add_option("--shape", shape_text, "the array shape, e.g. f32[8,12]")
      ->type_name("T")
      ->required();
  app.add_option("--from", from_text, "the sharding it has")->type_name("S1")->required();
  app.add_option("--to", to_text, "the sharding it gets")->type_name("S2")->required();
  app.add_option("--num-partitions", n, "partition count, in [1, 65536]")
      ->type_name("N")
      ->required()
      ->transform(DecimalInt64());
  app.add_flag("--naive", naive_only, "print the naive plan instead");
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  absl::StatusOr<Shape> shape = ParseShape(shape_text);
  if (!shape.ok())
    return BadInput(err, "reshard", absl::StrCat("--shape: ", shape.status().message()));
  if (!shape->IsArray()) return BadInput(err, "reshard", "--shape must be an array shape");
  absl::StatusOr<HloSharding> from = ParseSharding(from_text);
  if (!from.ok())
    return BadInput(err, "reshard", absl::StrCat("--from: ", from.status().message()));
  absl::StatusOr<HloSharding> to = ParseSharding(to_text);
  if (!to.ok()) return BadInput(err, "reshard", absl::StrCat("--to: ", to.status().message()));
  if (n < 1 || n > 65536) return BadInput(err, "reshard", "--num-partitions must be in [1, 65536]");
  for (const HloSharding* s : {&*from, &*to}) {
    if (absl::Status status = s->Validate(*shape, n); !status.ok()) {
      return BadInput(err, "reshard", absl::StrCat(s->ToString(false), ": ", status.message()));
    }
  }
  absl::StatusOr<partitioner::ReshardPlan> plan = partitioner::PlanReshard(*shape, *from, *to, n);
  absl::StatusOr<partitioner::ReshardPlan> naive =
      partitioner::NaiveReshardPlan(*shape, *from, *to, n);
  if (!plan.ok() || !naive.ok()) {
    const absl::Status& status = plan.ok() ? naive.status() : plan.status();
    if (absl::IsUnimplemented(status)) {
      err << "spmdcheck reshard: unknown: " << status.message() << "\n";
      return kExitUnknown;
    }
    return BadInput(err, "reshard", status.message());
  }
  const partitioner::ReshardPlan& chosen = naive_only ? *naive : *plan;
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      partitioner::BuildReshardModule(*shape, *from, chosen, n);
  if (!module.ok()) return BadInput(err, "reshard", module.status().message());
  out << PrintModule(**module);
  out << "// plan: " << chosen.Describe() << "\n";
  out << "// cost: " << chosen.cost.ToString() << " (score " << chosen.cost.Score() << ")\n";
  out << "// naive plan: " << naive->Describe() << "; cost: " << naive->cost.ToString()
      << " (score " << naive->cost.Score() << ")\n";
  return kExitHolds;
}

}  // namespace spmdcheck::cli
