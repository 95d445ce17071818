// `spmdcheck prove instructions FILE [--num-partitions N] [--timeout-ms MS]`: every collective of
// a partitioned module is consistent with the shardings annotated on its operand and result
// (smt/instruction_checks.h). One line per collective.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/hlo_module.h"
#include "lint/chains.h"
#include "lint/global_program.h"
#include "lint/inference.h"
#include "smt/chain_prover.h"
#include "smt/device_algebra.h"
#include "smt/instruction_checks.h"
#include "smt/proof_result.h"
#include "tools/cli.h"
#include "tools/module_loading.h"
#include "tools/prove_flags.h"

namespace spmdcheck::cli {
namespace {

constexpr char kCommand[] = "prove instructions";

constexpr char kUsage[] =
    R"(usage: spmdcheck prove instructions FILE [--num-partitions N] [--timeout-ms MS]
                                       [--procedure auto|enumerate|z3|both] [--global PRE.hlo]
)";

constexpr char kDescription[] =
    R"(Checks every collective (all-gather, all-reduce, reduce-scatter, all-to-all, collective-permute,
collective-broadcast) of a partitioned module against the shardings annotated on its operand and
its result: `sharding=` attributes, or `// ... sharding={...}` comments on the instruction's line,
else the sharding inferred from the parameters' (as `lint --holdings` shows; --no-infer: none).
Groups are proved against the groups the operand/result sharding implies along the changed tile
dims, pairs against the two tile assignments, and the dimension against the changed dim.
Group, pair and placement facts are decided by enumeration (auto, the default) or Z3
(--procedure, as for `prove groups`).
With --global, every chain of data movement (as `lint` splits them) is also proved against the
global program's ops (`prove chain --global`), one `chain SOURCE -> END` line each.
One line per collective: NAME (line L): proved | refuted: ... | unknown: ...)";

constexpr char kFooter[] =
    "Exit code: 0 all proved, 1 some refuted, 2 bad input, 3 some unknown (none refuted).";

}  // namespace

int RunProveInstructions(const std::vector<std::string>& argv, std::ostream& out,
                         std::ostream& err) {
  Command command(kCommand, kUsage, kDescription, kFooter);
  CLI::App& app = command.app();
  std::string path;
  app.add_option("FILE", path, "the partitioned module")->required();
  std::optional<int64_t> partitions;
  AddOptional(app, "--num-partitions", partitions, "partition count (default: the module's)")
      ->type_name("N")
      ->transform(DecimalInt64());
  int64_t timeout = smt::kDefaultTimeoutMs;
  AddTimeoutMsFlag(app, timeout, "per Z3 query");
  std::string procedure_text;
  AddProcedureFlag(app, procedure_text);
  std::optional<std::string> global_path;
  AddOptional(app, "--global", global_path,
              "the pre-partitioning program: also prove every chain against its ops")
      ->type_name("PRE.hlo")
      ->check(InputFile());
  bool no_infer = false;
  app.add_flag("--no-infer", no_infer, "read only the module's own annotations (no inference)");
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  if (partitions.has_value() && *partitions <= 0) {
    return BadInput(err, kCommand, "--num-partitions must be positive");
  }
  const int64_t num_partitions = partitions.value_or(0);
  if (absl::Status valid = CheckTimeoutMs(timeout); !valid.ok()) {
    return BadInput(err, kCommand, valid.message());
  }

  absl::StatusOr<std::string> text = ReadModuleText(path);
  if (!text.ok()) return BadInput(err, kCommand, text.status().message());
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
  if (!module.ok()) return BadInput(err, kCommand, module.status().message());

  // Operands and results without an annotation get the inferred sharding (lint/inference.h).
  std::unique_ptr<HloModule> inferred;
  if (!no_infer) {
    lint::InferenceOptions inference;
    inference.num_partitions = num_partitions;
    inference.timeout_ms = timeout;
    absl::StatusOr<lint::Inference> result = lint::InferHoldings(**module, *text, inference);
    if (result.ok()) inferred = std::move(result->module);
  }
  const HloModule* checked = inferred != nullptr ? inferred.get() : module->get();
  smt::InstructionCheckOptions options;
  options.num_partitions = num_partitions;
  options.timeout_ms = timeout;
  options.source_text = *text;
  absl::StatusOr<smt::Procedure> procedure = ParseProcedureFlag(procedure_text);
  if (!procedure.ok()) return BadInput(err, kCommand, procedure.status().message());
  options.procedure = *procedure;
  absl::StatusOr<std::vector<smt::InstructionCheck>> checks =
      smt::CheckCollectiveInstructions(*checked, options);
  if (!checks.ok()) {
    out << "unknown: " << checks.status().message() << "\n";
    return kExitUnknown;
  }
  int proved = 0, refuted = 0, unknown = 0;
  for (const smt::InstructionCheck& c : *checks) {
    out << c.name << " (" << c.opcode << ", line " << c.line
        << "): " << smt::FormatProofResult(c.result);
    if (c.result.verdict == Verdict::kHolds && !c.detail.empty()) out << " (" << c.detail << ")";
    out << "\n";
    switch (c.result.verdict) {
      case Verdict::kHolds:
        ++proved;
        break;
      case Verdict::kFails:
        ++refuted;
        break;
      case Verdict::kUnknown:
        ++unknown;
        break;
    }
  }
  out << absl::StrCat("summary: ", checks->size(), " collectives: ", proved, " proved, ", refuted,
                      " refuted, ", unknown, " unknown\n");
  if (global_path.has_value()) {
    absl::StatusOr<std::unique_ptr<HloModule>> global = LoadVerifiedModule(*global_path, err);
    if (!global.ok()) return BadInput(err, kCommand, global.status().message());
    const int64_t p = num_partitions > 0 ? num_partitions : (*module)->num_partitions();
    int chains = 0, chains_proved = 0, chains_refuted = 0;
    for (const lint::Chain& chain : lint::SplitIntoChains(**module).chains) {
      smt::ChainProofOptions chain_options;
      chain_options.from = chain.source->name();
      chain_options.to = chain.end->name();
      chain_options.num_partitions = p;
      chain_options.timeout_ms = timeout;
      const smt::ProofResult r =
          lint::ProveChainAgainstGlobal(**module, *text, **global, chain_options, nullptr);
      out << "chain " << chain.source->name() << " -> " << chain.end->name()
          << " (against --global): " << smt::FormatProofResult(r) << "\n";
      ++chains;
      if (r.verdict == Verdict::kHolds) ++chains_proved;
      if (r.verdict == Verdict::kFails) ++chains_refuted;
    }
    out << absl::StrCat("summary: ", chains, " chains against --global: ", chains_proved,
                        " proved, ", chains_refuted, " refuted, ",
                        chains - chains_proved - chains_refuted, " unknown\n");
    refuted += chains_refuted;
    unknown += chains - chains_proved - chains_refuted;
  }
  if (refuted > 0) return kExitFails;
  if (unknown > 0) return kExitUnknown;
  return kExitHolds;
}

}  // namespace spmdcheck::cli
