// `spmdcheck prove sharding|same|groups|pairs|chain|equiv-chain ...`: Z3 proofs about device-id
// algebra and collective chains (see docs/prove.md). Prints `proved`, `refuted: <counterexample>`
// or `unknown: <reason>`.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/file.h"
#include "ir/hlo_module.h"
#include "ir/hlo_parser.h"
#include "ir/replica_groups.h"
#include "ir/sharding.h"
#include "lint/global_program.h"
#include "smt/chain_prover.h"
#include "smt/device_algebra.h"
#include "smt/proof_result.h"
#include "tools/cli.h"
#include "tools/module_loading.h"
#include "tools/prove_flags.h"

namespace spmdcheck::cli {
namespace {

constexpr char kProveHelp[] = R"(usage: spmdcheck prove <verb> ...

Proves facts about device ids with Z3 (iota tile assignments are never expanded).
verbs:
  sharding S [--num-partitions N]   every device in [0,N) holds exactly one tile position
                                    (N defaults to the number of tile positions)
  same S1 S2                        same structure and the same device at every tile position
  groups --sharding S --dims D,D,... --groups G
                                    G ({{0,1},{2,3}} or [2,4]<=[4,2]T(1,0)) is exactly the
                                    grouping along those tile dims, in order
  pairs --from S1 --to S2 --pairs {{s,t},...}
                                    the pairs move every data tile from its holder under S1
                                    to its holder under S2
  chain FILE [--from X] [--to Y] [--num-partitions N] [--global PRE.hlo]
                                    the instructions from X to Y of a partitioned module move
                                    data exactly as the sharding= annotations of X and Y require
  equiv-chain A B [--from X] [--to Y] [--num-partitions N]
                                    the two chains give every device the same values
  instructions FILE                 every collective against its operand's and result's shardings
  rewrites                          the collective rewrite catalog
  rule FILE                         rewrite rules of a file
Run `spmdcheck prove <verb> --help` for the flags of a verb (--timeout-ms for all of them,
--procedure for sharding, same, groups and pairs).
Prints `proved`, `refuted: <counterexample>` or `unknown: <reason>`; sharding, same, groups and
pairs add `decided by: <procedure> (<time>)`.
Exit code: 0 proved, 1 refuted, 2 bad input, 3 unknown.
)";

constexpr char kFactFooter[] =
    R"(Prints `proved`, `refuted: <counterexample>` or `unknown: <reason>`, then `decided by:
<procedure> (<time>)`.
Exit code: 0 proved, 1 refuted, 2 bad input, 3 unknown.)";

// The usage and description of each verb of the device facts and the chains.
struct VerbHelp {
  const char* verb;
  const char* usage;
  const char* description;
};

constexpr VerbHelp kVerbHelp[] = {
    {"sharding", "usage: spmdcheck prove sharding S [--num-partitions N] [--procedure P]\n",
     "Proves that every device in [0,N) holds exactly one tile position of the sharding S (N\n"
     "defaults to the number of tile positions)."},
    {"same", "usage: spmdcheck prove same S1 S2 [--procedure P]\n",
     "Proves that two shardings have the same structure and the same device at every tile\n"
     "position."},
    {"groups",
     "usage: spmdcheck prove groups --sharding S --dims D,D,... --groups G [--procedure P]\n",
     "Proves that G ({{0,1},{2,3}} or [2,4]<=[4,2]T(1,0)) is exactly the grouping of the devices\n"
     "of S along those tile dims, in order. S and G may be @FILE."},
    {"pairs",
     "usage: spmdcheck prove pairs --from S1 --to S2 --pairs {{s,t},...} [--procedure P]\n",
     "Proves that the source-target pairs move every data tile from its holder under S1 to its\n"
     "holder under S2. S1, S2 and the pairs may be @FILE."},
    {"chain",
     "usage: spmdcheck prove chain FILE [--from X] [--to Y] [--num-partitions N] [--global "
     "PRE.hlo]\n",
     "Proves that the instructions from X (default: the entry parameters) to Y (default: the\n"
     "root) of a partitioned module move data exactly as the sharding= annotations of X and Y\n"
     "require, for every device, local index and input value; with --global, that they give\n"
     "every device what the global program's ops give it (values matched by `// holds=` or\n"
     "name)."},
    {"equiv-chain",
     "usage: spmdcheck prove equiv-chain A B [--from X] [--to Y] [--num-partitions N]\n",
     "Proves that the chains from X to Y of two partitioned modules give every device the same\n"
     "values."},
};

// A Command for `prove VERB`; nullptr for a verb this file does not run.
std::unique_ptr<Command> VerbCommand(const std::string& verb) {
  for (const VerbHelp& help : kVerbHelp) {
    if (verb == help.verb) {
      const bool fact = verb != "chain" && verb != "equiv-chain";
      return std::make_unique<Command>(absl::StrCat("prove ", verb), help.usage, help.description,
                                       fact ? kFactFooter
                                            : "Exit code: 0 proved, 1 refuted, 2 bad input, 3 "
                                              "unknown.");
    }
  }
  return nullptr;
}

absl::Status Invalid(absl::string_view message) { return absl::InvalidArgumentError(message); }

// A flag's value, or the contents of FILE for `@FILE` (device lists of V1 dumps are longer than
// a command-line argument may be).
absl::StatusOr<std::string> FlagText(const std::string& text) {
  if (text.empty() || text[0] != '@') return text;
  return base::ReadFile(text.substr(1));
}

absl::StatusOr<HloSharding> ShardingFlag(const std::string& text) {
  absl::StatusOr<std::string> contents = FlagText(text);
  if (!contents.ok()) return contents.status();
  return ParseSharding(*contents);
}

absl::Status CheckDims(const std::vector<int64_t>& dims, int64_t rank) {
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i];
    if (d < 0 || d >= rank) {
      return Invalid(
          absl::StrCat("--dims: tile dim ", d, " is out of range (tile rank ", rank, ")"));
    }
    if (std::find(dims.begin(), dims.begin() + i, d) != dims.begin() + i) {
      return Invalid(absl::StrCat("--dims lists tile dim ", d, " twice"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SourceTargetPairs> ParsePairs(absl::string_view text) {
  absl::StatusOr<ReplicaGroups> groups = ParseReplicaGroups(text);
  if (!groups.ok()) return groups.status();
  SourceTargetPairs pairs;
  for (const std::vector<int64_t>& g : groups->groups()) {
    if (g.size() != 2) {
      return Invalid(
          absl::StrCat("--pairs: each pair must be {source,target}, got ", g.size(), " ids"));
    }
    pairs.emplace_back(g[0], g[1]);
  }
  absl::Status valid = ValidateSourceTargetPairs(pairs, 0);
  if (!valid.ok()) return valid;
  return pairs;
}

int Report(const smt::ProofResult& result, std::ostream& out) {
  out << smt::FormatProofResult(result) << "\n";
  if (!result.procedure.empty()) out << "decided by: " << result.procedure << "\n";
  return VerdictExitCode(result.verdict);
}

// `--from`/`--to` must name instructions of the entry computation (bad input otherwise).
absl::Status CheckNames(const HloModule& module, const smt::ChainProofOptions& options,
                        const std::string& path) {
  for (const std::string* name : {&options.from, &options.to}) {
    if (name->empty()) continue;
    if (module.entry() == nullptr || module.entry()->FindInstruction(*name) == nullptr) {
      return Invalid(
          absl::StrCat(path, ": no instruction named '", *name, "' in the entry computation"));
    }
  }
  return absl::OkStatus();
}

// The flags of the device facts, as given.
struct FactFlags {
  std::string s1, s2;  // sharding: S; same: S1 S2.
  std::optional<int64_t> num_partitions;
  std::string sharding, groups, from, to, pairs;  // groups, pairs: the flags (maybe @FILE).
  std::vector<int64_t> dims;
  int64_t timeout_ms = smt::kDefaultTimeoutMs;
  std::string procedure;
};

void AddFactFlags(const std::string& verb, CLI::App& app, FactFlags& flags) {
  if (verb == "sharding") {
    app.add_option("S", flags.s1, "the sharding (quote it for the shell)")->required();
    AddOptional(app, "--num-partitions", flags.num_partitions,
                "the device count (default: the number of tile positions)")
        ->type_name("N")
        ->transform(DecimalInt64());
  } else if (verb == "same") {
    app.add_option("S1", flags.s1, "the first sharding (quote it for the shell)")->required();
    app.add_option("S2", flags.s2, "the second sharding")->required();
  } else if (verb == "groups") {
    app.add_option("--sharding", flags.sharding, "the sharding (or @FILE)")
        ->type_name("S")
        ->required();
    app.add_option("--dims", flags.dims, "tile dims to group along")
        ->type_name("D,D,...")
        ->delimiter(',')
        ->transform(DecimalInt64())
        ->required();
    app.add_option("--groups", flags.groups, "the replica groups (or @FILE)")
        ->type_name("G")
        ->required();
  } else {
    app.add_option("--from", flags.from, "the sharding before (or @FILE)")
        ->type_name("S1")
        ->required();
    app.add_option("--to", flags.to, "the sharding after (or @FILE)")->type_name("S2")->required();
    app.add_option("--pairs", flags.pairs, "the source-target pairs (or @FILE)")
        ->type_name("{{s,t},...}")
        ->required();
  }
  AddTimeoutMsFlag(app, flags.timeout_ms, "per Z3 query");
  AddProcedureFlag(app, flags.procedure);
}

// sharding, same, groups, pairs.
int RunFactVerb(const std::string& verb, const std::vector<std::string>& argv, std::ostream& out,
                std::ostream& err) {
  std::unique_ptr<Command> command = VerbCommand(verb);
  FactFlags flags;
  AddFactFlags(verb, command->app(), flags);
  if (std::optional<int> done = command->Parse(argv, out, err)) return *done;
  const std::string& name = command->name();
  if (absl::Status valid = CheckTimeoutMs(flags.timeout_ms); !valid.ok()) {
    return BadInput(err, name, valid.message());
  }
  smt::FactOptions facts;
  facts.timeout_ms = flags.timeout_ms;
  absl::StatusOr<smt::Procedure> procedure = ParseProcedureFlag(flags.procedure);
  if (!procedure.ok()) return BadInput(err, name, procedure.status().message());
  facts.procedure = *procedure;
  if (verb == "sharding") {
    absl::StatusOr<HloSharding> s = ParseSharding(flags.s1);
    if (!s.ok()) return BadInput(err, name, s.status().message());
    if (flags.num_partitions.has_value() && *flags.num_partitions <= 0) {
      return BadInput(err, name, "--num-partitions must be positive");
    }
    return Report(smt::ProveSharding(*s, flags.num_partitions.value_or(0), facts), out);
  }
  if (verb == "same") {
    absl::StatusOr<HloSharding> a = ParseSharding(flags.s1);
    if (!a.ok()) return BadInput(err, name, a.status().message());
    absl::StatusOr<HloSharding> b = ParseSharding(flags.s2);
    if (!b.ok()) return BadInput(err, name, b.status().message());
    return Report(smt::ProveSame(*a, *b, facts), out);
  }
  if (verb == "groups") {
    absl::StatusOr<HloSharding> s = ShardingFlag(flags.sharding);
    if (!s.ok()) return BadInput(err, name, s.status().message());
    if (!s->IsTiled()) {
      return BadInput(err, name,
                      absl::StrCat("groups needs a tiled sharding, not ", s->ToString(false)));
    }
    absl::StatusOr<std::string> groups_text = FlagText(flags.groups);
    if (!groups_text.ok()) return BadInput(err, name, groups_text.status().message());
    absl::Status dims = CheckDims(flags.dims, s->tile_assignment().num_dimensions());
    if (!dims.ok()) return BadInput(err, name, dims.message());
    absl::StatusOr<ReplicaGroups> groups = ParseReplicaGroups(*groups_text);
    if (!groups.ok()) return BadInput(err, name, groups.status().message());
    return Report(smt::ProveGroups(*s, flags.dims, *groups, facts), out);
  }
  // pairs
  absl::StatusOr<HloSharding> from = ShardingFlag(flags.from);
  if (!from.ok()) return BadInput(err, name, from.status().message());
  absl::StatusOr<HloSharding> to = ShardingFlag(flags.to);
  if (!to.ok()) return BadInput(err, name, to.status().message());
  absl::StatusOr<std::string> pairs_text = FlagText(flags.pairs);
  if (!pairs_text.ok()) return BadInput(err, name, pairs_text.status().message());
  absl::StatusOr<SourceTargetPairs> pairs = ParsePairs(*pairs_text);
  if (!pairs.ok()) return BadInput(err, name, pairs.status().message());
  return Report(smt::ProvePairs(*from, *to, *pairs, facts), out);
}

// chain, equiv-chain.
int RunChainVerb(const std::string& verb, const std::vector<std::string>& argv, std::ostream& out,
                 std::ostream& err) {
  std::unique_ptr<Command> command = VerbCommand(verb);
  CLI::App& app = command->app();
  std::string first, second;
  if (verb == "chain") {
    app.add_option("FILE", first, "the partitioned module")->required();
  } else {
    app.add_option("A", first, "the first partitioned module")->required();
    app.add_option("B", second, "the second partitioned module")->required();
  }
  smt::ChainProofOptions options;
  app.add_option("--from", options.from, "the chain's first instruction (default: parameters)")
      ->type_name("X");
  app.add_option("--to", options.to, "the chain's last instruction (default: the root)")
      ->type_name("Y");
  std::optional<int64_t> partitions;
  AddOptional(app, "--num-partitions", partitions, "partition count (default: the module's)")
      ->type_name("N")
      ->transform(DecimalInt64());
  std::optional<std::string> global_path;
  if (verb == "chain") {
    AddOptional(app, "--global", global_path, "prove against the pre-partitioning program")
        ->type_name("PRE.hlo")
        ->check(InputFile());
  }
  int64_t timeout = smt::kDefaultTimeoutMs;
  AddTimeoutMsFlag(app, timeout, "the whole search");
  if (std::optional<int> done = command->Parse(argv, out, err)) return *done;
  const std::string& name = command->name();
  if (absl::Status valid = CheckTimeoutMs(timeout); !valid.ok()) {
    return BadInput(err, name, valid.message());
  }
  options.timeout_ms = timeout;
  if (partitions.has_value() && *partitions <= 0) {
    return BadInput(err, name, "--num-partitions must be positive");
  }
  options.num_partitions = partitions.value_or(0);
  std::vector<std::string> paths = {first};
  if (verb == "equiv-chain") paths.push_back(second);
  std::vector<std::unique_ptr<HloModule>> modules;
  for (const std::string& path : paths) {
    absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
    if (!module.ok()) return BadInput(err, name, module.status().message());
    absl::Status names = CheckNames(**module, options, path);
    if (!names.ok()) return BadInput(err, name, names.message());
    modules.push_back(*std::move(module));
  }
  if (verb == "equiv-chain") {
    return Report(smt::ProveEquivChain(*modules[0], *modules[1], options), out);
  }
  if (global_path.has_value()) {
    absl::StatusOr<std::unique_ptr<HloModule>> global = LoadVerifiedModule(*global_path, err);
    if (!global.ok()) return BadInput(err, name, global.status().message());
    absl::StatusOr<std::string> text = base::ReadFile(paths[0]);
    if (!text.ok()) return BadInput(err, name, text.status().message());
    std::string checked;
    const smt::ProofResult result =
        lint::ProveChainAgainstGlobal(*modules[0], *text, **global, options, &checked);
    const int code = Report(result, out);
    if (!checked.empty()) out << "checked: " << checked << "\n";
    return code;
  }
  const smt::ProofResult result = smt::ProveChain(*modules[0], options);
  const int code = Report(result, out);
  if (result.verdict != Verdict::kUnknown) {
    absl::StatusOr<std::string> meaning = smt::DescribeChain(*modules[0], options);
    if (meaning.ok()) out << "checked: " << *meaning << "\n";
  }
  return code;
}

}  // namespace

int RunProve(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  if (argv.empty()) {
    err << kProveHelp;
    return kExitBadInput;
  }
  const std::string& verb = argv[0];
  if (verb == "--help" || verb == "-h" || verb == "help") {
    out << kProveHelp;
    return kExitHolds;
  }
  const std::vector<std::string> verb_args(argv.begin() + 1, argv.end());
  if (verb == "rewrites") return RunProveRewrites(verb_args, out, err);
  if (verb == "instructions") return RunProveInstructions(verb_args, out, err);
  if (verb == "rule") return RunProveRule(verb_args, out, err);
  if (verb == "chain" || verb == "equiv-chain") return RunChainVerb(verb, verb_args, out, err);
  if (VerbCommand(verb) != nullptr) return RunFactVerb(verb, verb_args, out, err);
  BadInput(err, "prove",
           absl::StrCat("unknown verb '", verb,
                        "' (expected sharding, same, groups, pairs, chain, equiv-chain, "
                        "instructions, rewrites or rule)"));
  err << kProveHelp;
  return kExitBadInput;
}

}  // namespace spmdcheck::cli
