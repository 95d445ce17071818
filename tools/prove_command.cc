// `spmdcheck prove sharding|same|groups|pairs|chain|equiv-chain ...`: Z3 proofs about device-id
// algebra and collective chains (see docs/prove.md). Prints `proved`, `refuted: <counterexample>`
// or `unknown: <reason>`.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
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

constexpr char kCommand[] = "prove";

constexpr char kProveHelp[] = R"(usage: spmdcheck prove <verb> ... [--timeout-ms MS]

Proves facts about device ids with Z3 (iota tile assignments are never expanded).
verbs:
  sharding S [--num-partitions N]   every device in [0,N) holds exactly one tile position
                                    (N defaults to the number of tile positions)
  same S1 S2                        same structure and the same device at every tile position
  groups --sharding S --dims D,D,... --groups G
                                    G ({{0,1},{2,3}} or [2,4]<=[4,2]T(1,0)) is exactly the
                                    grouping along those tile dims, in order
                                    (any of S, G, S1, S2, P may be @FILE)
  pairs --from S1 --to S2 --pairs {{s,t},...}
                                    the pairs move every data tile from its holder under S1
                                    to its holder under S2
  chain FILE [--from X] [--to Y] [--num-partitions N] [--global PRE.hlo]
                                    the instructions from X (default: the entry parameters) to
                                    Y (default: the root) of a partitioned module move data
                                    exactly as the sharding= annotations of X and Y require,
                                    for every device, local index and input value; with
                                    --global, they give every device what the global program's
                                    ops give it (values matched by `// holds=` or name)
  equiv-chain A B [--from X] [--to Y] [--num-partitions N]
                                    the two chains give every device the same values
  instructions FILE, rewrites, rule FILE
                                    see `spmdcheck prove <verb> --help`
  --timeout-ms MS                   per Z3 query (chain, equiv-chain: the whole search;
                                    default 10000); a timeout is `unknown`
  --procedure auto|enumerate|z3|both
                                    sharding, same, groups, pairs: decide by enumerating every
                                    tile position (the device count is concrete), by Z3, or
                                    both (they must agree; both times printed). auto (default)
                                    enumerates up to 2^24 positions and asks Z3 beyond.
Prints `proved`, `refuted: <counterexample>` or `unknown: <reason>`; sharding, same, groups and
pairs add `decided by: <procedure> (<time>)`.
Exit code: 0 proved, 1 refuted, 2 bad input, 3 unknown.
)";

absl::Status Invalid(absl::string_view message) { return absl::InvalidArgumentError(message); }

// A flag's value, or the contents of FILE for `@FILE` (device lists of V1 dumps are longer than
// a command-line argument may be).
absl::StatusOr<std::optional<std::string>> FlagText(const Args& args, absl::string_view flag) {
  std::optional<std::string> text = args.Get(flag);
  if (!text.has_value() || text->empty() || (*text)[0] != '@') return text;
  absl::StatusOr<std::string> contents = ReadFile(text->substr(1));
  if (!contents.ok()) return contents.status();
  return std::optional<std::string>(*std::move(contents));
}

absl::StatusOr<HloSharding> ShardingFlag(const Args& args, absl::string_view flag) {
  absl::StatusOr<std::optional<std::string>> text = FlagText(args, flag);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return Invalid(absl::StrCat("missing ", flag, " SHARDING"));
  return ParseSharding(**text);
}

absl::StatusOr<std::vector<int64_t>> ParseDims(absl::string_view text, int64_t rank) {
  std::vector<int64_t> dims;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t d = 0;
    if (!absl::SimpleAtoi(part, &d)) {
      return Invalid(
          absl::StrCat("--dims expects a comma-separated list of tile dims, not '", text, "'"));
    }
    if (d < 0 || d >= rank) {
      return Invalid(
          absl::StrCat("--dims: tile dim ", d, " is out of range (tile rank ", rank, ")"));
    }
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) {
      return Invalid(absl::StrCat("--dims lists tile dim ", d, " twice"));
    }
    dims.push_back(d);
  }
  return dims;
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

int RunChainVerb(const std::string& verb, const Args& args, int64_t timeout, std::ostream& out,
                 std::ostream& err) {
  const std::vector<std::string>& pos = args.positional();
  const size_t want = verb == "chain" ? 1 : 2;
  if (pos.size() != want) {
    return BadInput(err, kCommand,
                    absl::StrCat(verb, ": expected ", want, " file(s), got ", pos.size()));
  }
  smt::ChainProofOptions options;
  options.from = args.Get("--from").value_or("");
  options.to = args.Get("--to").value_or("");
  options.timeout_ms = timeout;
  absl::StatusOr<int64_t> n = args.GetInt("--num-partitions", 0);
  if (!n.ok()) return BadInput(err, kCommand, n.status().message());
  if (args.Has("--num-partitions") && *n <= 0) {
    return BadInput(err, kCommand, "--num-partitions must be positive");
  }
  options.num_partitions = *n;
  std::vector<std::unique_ptr<HloModule>> modules;
  for (const std::string& path : pos) {
    absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
    if (!module.ok()) return BadInput(err, kCommand, module.status().message());
    absl::Status names = CheckNames(**module, options, path);
    if (!names.ok()) return BadInput(err, kCommand, names.message());
    modules.push_back(*std::move(module));
  }
  if (verb == "equiv-chain") {
    return Report(smt::ProveEquivChain(*modules[0], *modules[1], options), out);
  }
  if (std::optional<std::string> global_path = args.Get("--global")) {
    absl::StatusOr<std::unique_ptr<HloModule>> global = LoadVerifiedModule(*global_path, err);
    if (!global.ok()) return BadInput(err, kCommand, global.status().message());
    absl::StatusOr<std::string> text = ReadFile(pos[0]);
    if (!text.ok()) return BadInput(err, kCommand, text.status().message());
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
  std::set<std::string> value_flags = {"--timeout-ms"};
  const bool is_fact = verb == "sharding" || verb == "same" || verb == "groups" || verb == "pairs";
  if (is_fact) value_flags.insert("--procedure");
  if (verb == "sharding") {
    value_flags.insert("--num-partitions");
  } else if (verb == "groups") {
    value_flags.insert({"--sharding", "--dims", "--groups"});
  } else if (verb == "pairs") {
    value_flags.insert({"--from", "--to", "--pairs"});
  } else if (verb == "chain" || verb == "equiv-chain") {
    value_flags.insert({"--from", "--to", "--num-partitions"});
    if (verb == "chain") value_flags.insert("--global");
  } else if (verb != "same") {
    BadInput(err, kCommand,
             absl::StrCat("unknown verb '", verb,
                          "' (expected sharding, same, groups, pairs, chain, equiv-chain, "
                          "instructions, rewrites or rule)"));
    err << kProveHelp;
    return kExitBadInput;
  }
  absl::StatusOr<Args> args = Args::Parse(verb_args, value_flags, {"--help"});
  if (!args.ok()) return BadInput(err, kCommand, absl::StrCat(verb, ": ", args.status().message()));
  if (args->Has("--help")) {
    out << kProveHelp;
    return kExitHolds;
  }
  absl::StatusOr<int64_t> timeout = args->GetInt("--timeout-ms", smt::kDefaultTimeoutMs);
  if (!timeout.ok()) return BadInput(err, kCommand, timeout.status().message());
  if (*timeout <= 0) return BadInput(err, kCommand, "--timeout-ms must be positive");
  if (verb == "chain" || verb == "equiv-chain")
    return RunChainVerb(verb, *args, *timeout, out, err);
  smt::FactOptions facts;
  facts.timeout_ms = *timeout;
  absl::StatusOr<smt::Procedure> procedure = ProcedureFlag(*args);
  if (!procedure.ok()) return BadInput(err, kCommand, procedure.status().message());
  facts.procedure = *procedure;
  const std::vector<std::string>& pos = args->positional();
  const size_t want_positional = verb == "sharding" ? 1 : verb == "same" ? 2 : 0;
  if (pos.size() != want_positional) {
    return BadInput(
        err, kCommand,
        absl::StrCat(verb, ": expected ", want_positional, " positional argument(s), got ",
                     pos.size(), " (quote shardings for the shell)"));
  }
  if (verb == "sharding") {
    absl::StatusOr<HloSharding> s = ParseSharding(pos[0]);
    if (!s.ok()) return BadInput(err, kCommand, s.status().message());
    absl::StatusOr<int64_t> n = args->GetInt("--num-partitions", 0);
    if (!n.ok()) return BadInput(err, kCommand, n.status().message());
    if (args->Has("--num-partitions") && *n <= 0) {
      return BadInput(err, kCommand, "--num-partitions must be positive");
    }
    return Report(smt::ProveSharding(*s, *n, facts), out);
  }
  if (verb == "same") {
    absl::StatusOr<HloSharding> a = ParseSharding(pos[0]);
    if (!a.ok()) return BadInput(err, kCommand, a.status().message());
    absl::StatusOr<HloSharding> b = ParseSharding(pos[1]);
    if (!b.ok()) return BadInput(err, kCommand, b.status().message());
    return Report(smt::ProveSame(*a, *b, facts), out);
  }
  if (verb == "groups") {
    absl::StatusOr<HloSharding> s = ShardingFlag(*args, "--sharding");
    if (!s.ok()) return BadInput(err, kCommand, s.status().message());
    if (!s->IsTiled()) {
      return BadInput(err, kCommand,
                      absl::StrCat("groups needs a tiled sharding, not ", s->ToString(false)));
    }
    std::optional<std::string> dims_text = args->Get("--dims");
    absl::StatusOr<std::optional<std::string>> groups_flag = FlagText(*args, "--groups");
    if (!groups_flag.ok()) return BadInput(err, kCommand, groups_flag.status().message());
    const std::optional<std::string>& groups_text = *groups_flag;
    if (!dims_text.has_value() || !groups_text.has_value()) {
      return BadInput(err, kCommand, "groups needs --dims D,D,... and --groups G");
    }
    absl::StatusOr<std::vector<int64_t>> dims =
        ParseDims(*dims_text, s->tile_assignment().num_dimensions());
    if (!dims.ok()) return BadInput(err, kCommand, dims.status().message());
    absl::StatusOr<ReplicaGroups> groups = ParseReplicaGroups(*groups_text);
    if (!groups.ok()) return BadInput(err, kCommand, groups.status().message());
    return Report(smt::ProveGroups(*s, *dims, *groups, facts), out);
  }
  // pairs
  absl::StatusOr<HloSharding> from = ShardingFlag(*args, "--from");
  if (!from.ok()) return BadInput(err, kCommand, from.status().message());
  absl::StatusOr<HloSharding> to = ShardingFlag(*args, "--to");
  if (!to.ok()) return BadInput(err, kCommand, to.status().message());
  absl::StatusOr<std::optional<std::string>> pairs_flag = FlagText(*args, "--pairs");
  if (!pairs_flag.ok()) return BadInput(err, kCommand, pairs_flag.status().message());
  const std::optional<std::string>& pairs_text = *pairs_flag;
  if (!pairs_text.has_value()) return BadInput(err, kCommand, "pairs needs --pairs {{s,t},...}");
  absl::StatusOr<SourceTargetPairs> pairs = ParsePairs(*pairs_text);
  if (!pairs.ok()) return BadInput(err, kCommand, pairs.status().message());
  return Report(smt::ProvePairs(*from, *to, *pairs, facts), out);
}

}  // namespace spmdcheck::cli
