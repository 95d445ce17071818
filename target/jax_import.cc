#include "target/jax_import.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/sdy_sharding_round_trip.h"

namespace spmdcheck::target {

absl::StatusOr<std::unique_ptr<HloModule>> ImportStableHlo(XlaWorker& worker,
                                                           const std::string& text,
                                                           const std::string& path,
                                                           std::vector<std::string>* warnings,
                                                           double timeout_seconds) {
  absl::StatusOr<WorkerAnswer> answer = worker.Call("to_hlo", {{"mlir", text}}, timeout_seconds);
  if (!answer.ok()) {
    if (absl::IsUnavailable(answer.status())) return answer.status();
    return absl::InternalError(absl::StrCat(
        path, ": converting StableHLO to HLO through jaxlib: ", answer.status().message()));
  }
  if (!answer->ok()) {
    // MLIR names the text it parsed `-`: say which file (`-:3:8:` -> `FILE:3:8:`).
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ",
        absl::StrReplaceAll(answer->error_message, {{" -:", absl::StrCat(" ", path, ":")}})));
  }
  if (!answer->result.contains("hlo") || !answer->result["hlo"].is_string()) {
    return absl::InternalError("the XLA worker's to_hlo answer has no HLO text");
  }
  const std::string hlo = answer->result["hlo"].get<std::string>();
  ParseOptions options;
  options.path = absl::StrCat(path, " (as HLO, converted by jaxlib)");
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(hlo, options);
  if (!parsed.ok()) return parsed.status();
  if (warnings != nullptr) {
    warnings->insert(warnings->end(), parsed->warnings.begin(), parsed->warnings.end());
  }
  if (HasShardyRoundTrip(*parsed->module)) {
    // Shardy's round-trip form -> GSPMD's, printed and parsed again so that the new
    // instructions are in program order.
    absl::StatusOr<int64_t> lowered = LowerShardyRoundTrip(*parsed->module);
    if (!lowered.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(options.path, ": Shardy's round-trip form: ", lowered.status().message()));
    }
    ParseOptions again = options;
    again.path = absl::StrCat(path, " (Shardy's form rewritten as GSPMD's)");
    absl::StatusOr<ParsedModule> reparsed = ParseHloModule(PrintModule(*parsed->module), again);
    if (!reparsed.ok()) return reparsed.status();
    parsed = *std::move(reparsed);
  }
  parsed->module->set_source_path(path);
  parsed->module->set_jax_source(text);
  return std::move(parsed->module);
}

}  // namespace spmdcheck::target
