// spmdcheck: one CLI, one subcommand per job. Each subcommand lives in its own file.
#include <iostream>
#include <string>
#include <vector>

#include "tools/cli.h"

namespace {

constexpr char kUsage[] = R"(usage: spmdcheck <command> [args]

commands:
  parse FILE|DIR...     parse and verify HLO modules (--fragment for pasted statements)
  fmt FILE              print a module as canonical HLO text
  sharding expand|canon|show|groups S   inspect a sharding
  run FILE              run a module on seeded inputs (one line per device)
  equiv GLOBAL PART     check a partitioned program against the global one
  prove sharding|same|groups|pairs|chain|equiv-chain|instructions|rewrites   Z3 proofs
  partition FILE        the reference SPMD partitioner (--stats: fallbacks and cost)
  check FILE            partition, then check the result with the oracle
  reshard --shape T --from S1 --to S2 --num-partitions N   the cheapest resharding plan
  reduce FILE --until fails|crash|unsupported -o OUT   shrink a failing module
  reduce DIR            reduce a finding folder the campaign left unreduced
  report DIR [-o FILE]  the upstream issue (Markdown) for a finding folder
  fuzz [--seconds T] [--inject-bug NAME]   generate -> partition -> check campaign
  nightly --hours H --out DIR [--resume]   every campaign for a night, time-boxed, with reports
  repro FILE --jax -o repro.py   a standalone jax script that reproduces a partitioning
  lint FILE [--global PRE] [--topology SPEC] [--format text|json|sarif]
                        wasteful collective chains, with cheaper replacements proved equal
  explain PARTITIONED [--global PRE] [--mesh data=2,...] [--format text|json|html]
                        which parallelism each mesh axis carries; pipeline stages checked

exit codes: 0 holds/success, 1 fails (finding printed), 2 bad input or usage, 3 unknown
Run `spmdcheck <command> --help` for the flags of a command.
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? spmdcheck::cli::kExitBadInput : spmdcheck::cli::kExitHolds;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "parse") return spmdcheck::cli::RunParse(args, std::cout, std::cerr);
  if (command == "fmt") return spmdcheck::cli::RunFmt(args, std::cout, std::cerr);
  if (command == "sharding") return spmdcheck::cli::RunSharding(args, std::cout, std::cerr);
  if (command == "run") return spmdcheck::cli::RunRun(args, std::cout, std::cerr);
  if (command == "equiv") return spmdcheck::cli::RunEquiv(args, std::cout, std::cerr);
  if (command == "prove") return spmdcheck::cli::RunProve(args, std::cout, std::cerr);
  if (command == "partition") return spmdcheck::cli::RunPartition(args, std::cout, std::cerr);
  if (command == "check") return spmdcheck::cli::RunCheck(args, std::cout, std::cerr);
  if (command == "reshard") return spmdcheck::cli::RunReshard(args, std::cout, std::cerr);
  if (command == "reduce") return spmdcheck::cli::RunReduce(args, std::cout, std::cerr);
  if (command == "fuzz") return spmdcheck::cli::RunFuzz(args, std::cout, std::cerr);
  if (command == "nightly") return spmdcheck::cli::RunNightly(args, std::cout, std::cerr);
  if (command == "repro") return spmdcheck::cli::RunRepro(args, std::cout, std::cerr);
  if (command == "lint") return spmdcheck::cli::RunLint(args, std::cout, std::cerr);
  if (command == "explain") return spmdcheck::cli::RunExplain(args, std::cout, std::cerr);
  if (command == "report") return spmdcheck::cli::RunReport(args, std::cout, std::cerr);
  std::cerr << "spmdcheck: error: unknown command '" << command << "'\n" << kUsage;
  return spmdcheck::cli::kExitBadInput;
}
