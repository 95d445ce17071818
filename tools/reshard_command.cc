// `spmdcheck reshard --shape T --from S1 --to S2 --num-partitions N [--naive]`: the resharding
// planner's plan as HLO, with its cost and the naive plan's (see docs/reshard.md).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "partitioner/reshard.h"
#include "tools/cli.h"

namespace spmdcheck::cli {
namespace {

constexpr char kReshardHelp[] =
    R"(usage: spmdcheck reshard --shape T --from S1 --to S2 --num-partitions N [--naive]

Plans moving an array of shape T from sharding S1 to sharding S2 over N partitions with the
fewest bytes under the alpha-beta cost model (docs/reshard.md), prints the plan as a partitioned
HLO module (parameter = the local piece under S1, root = the local piece under S2) and its cost
next to the naive plan's (all-gather to replicated, then dynamic-slice).
  --naive   print the naive plan instead
Exit codes: 0 planned, 2 bad input, 3 a pair of shardings the planner cannot move between.
)";

}  // namespace

int RunReshard(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Args> args =
      Args::Parse(argv, {"--shape", "--from", "--to", "--num-partitions"}, {"--naive", "--help"});
  if (!args.ok()) return BadInput(err, "reshard", args.status().message());
  if (args->Has("--help")) {
    out << kReshardHelp;
    return kExitHolds;
  }
  for (const char* flag : {"--shape", "--from", "--to", "--num-partitions"}) {
    if (!args->Has(flag)) {
      err << kReshardHelp;
      return BadInput(err, "reshard", absl::StrCat("missing ", flag));
    }
  }
  absl::StatusOr<Shape> shape = ParseShape(*args->Get("--shape"));
  if (!shape.ok())
    return BadInput(err, "reshard", absl::StrCat("--shape: ", shape.status().message()));
  if (!shape->IsArray()) return BadInput(err, "reshard", "--shape must be an array shape");
  absl::StatusOr<HloSharding> from = ParseSharding(*args->Get("--from"));
  if (!from.ok())
    return BadInput(err, "reshard", absl::StrCat("--from: ", from.status().message()));
  absl::StatusOr<HloSharding> to = ParseSharding(*args->Get("--to"));
  if (!to.ok()) return BadInput(err, "reshard", absl::StrCat("--to: ", to.status().message()));
  absl::StatusOr<int64_t> n = args->GetInt("--num-partitions", 0);
  if (!n.ok()) return BadInput(err, "reshard", n.status().message());
  if (*n < 1 || *n > 65536)
    return BadInput(err, "reshard", "--num-partitions must be in [1, 65536]");
  for (const HloSharding* s : {&*from, &*to}) {
    if (absl::Status status = s->Validate(*shape, *n); !status.ok()) {
      return BadInput(err, "reshard", absl::StrCat(s->ToString(false), ": ", status.message()));
    }
  }
  absl::StatusOr<partitioner::ReshardPlan> plan = partitioner::PlanReshard(*shape, *from, *to, *n);
  absl::StatusOr<partitioner::ReshardPlan> naive =
      partitioner::NaiveReshardPlan(*shape, *from, *to, *n);
  if (!plan.ok() || !naive.ok()) {
    const absl::Status& status = plan.ok() ? naive.status() : plan.status();
    if (absl::IsUnimplemented(status)) {
      err << "spmdcheck reshard: unknown: " << status.message() << "\n";
      return kExitUnknown;
    }
    return BadInput(err, "reshard", status.message());
  }
  const partitioner::ReshardPlan& chosen = args->Has("--naive") ? *naive : *plan;
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      partitioner::BuildReshardModule(*shape, *from, chosen, *n);
  if (!module.ok()) return BadInput(err, "reshard", module.status().message());
  out << PrintModule(**module);
  out << "// plan: " << chosen.Describe() << "\n";
  out << "// cost: " << chosen.cost.ToString() << " (score " << chosen.cost.Score() << ")\n";
  out << "// naive plan: " << naive->Describe() << "; cost: " << naive->cost.ToString()
      << " (score " << naive->cost.Score() << ")\n";
  return kExitHolds;
}

}  // namespace spmdcheck::cli
