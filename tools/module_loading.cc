#include "tools/module_loading.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/sdy_sharding_round_trip.h"
#include "ir/verifier.h"
#include "target/xla_worker.h"
#include "tools/cli.h"

namespace spmdcheck::cli {
namespace {

// Converts MLIR text to HLO text through jaxlib in the XLA worker (a short-lived one: jax is
// imported once per conversion).
absl::StatusOr<std::string> MlirToHlo(const std::string& text, const std::string& path) {
  target::XlaWorkerOptions options;
  options.devices = 1;
  target::XlaWorker worker(options);
  absl::StatusOr<target::WorkerAnswer> answer =
      worker.Call("to_hlo", {{"mlir", text}}, /*timeout_seconds=*/300);
  if (!answer.ok()) {
    if (absl::IsUnavailable(answer.status())) {
      return absl::FailedPreconditionError(absl::StrCat(
          path,
          ": this is StableHLO/MLIR text (as jax's .lower(...).as_text() prints it); reading it "
          "needs jax (the pinned jaxlib of workers/xla/requirements.txt) in the project's virtual "
          "environment .venv (./scripts/run-tests makes it) or in SPMDCHECK_XLA_VENV / "
          "SPMDCHECK_XLA_PYTHON, which is not available: ",
          answer.status().message(),
          ". Without jax, give HLO text instead (XLA's dumps, or "
          "jax.jit(f).lower(...).compiler_ir('hlo').as_hlo_text())"));
    }
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
  return answer->result["hlo"].get<std::string>();
}

}  // namespace

bool LooksLikeMlir(absl::string_view text) {
  // Skip blank lines and comments; the first word decides.
  while (!text.empty()) {
    text = absl::StripLeadingAsciiWhitespace(text);
    if (absl::StartsWith(text, "//") || absl::StartsWith(text, "#loc")) {
      const size_t end = text.find('\n');
      text = end == absl::string_view::npos ? absl::string_view() : text.substr(end + 1);
      continue;
    }
    break;
  }
  if (absl::StartsWith(text, "func.func")) return true;
  if (!absl::StartsWith(text, "module")) return false;
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(text.substr(6));
  return (absl::StartsWith(rest, "@") || absl::StartsWith(rest, "{") ||
          absl::StartsWith(rest, "attributes")) &&
         absl::StrContains(text, "func.func");
}

absl::StatusOr<std::string> ReadModuleText(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok() || !LooksLikeMlir(*text)) return text;
  absl::StatusOr<std::string> hlo = MlirToHlo(*text, path);
  if (!hlo.ok()) return hlo.status();
  absl::StatusOr<ParsedModule> parsed =
      ParseHloModule(*hlo, {.path = absl::StrCat(path, " (as HLO, converted by jaxlib)")});
  if (!parsed.ok() || !HasShardyRoundTrip(*parsed->module)) return hlo;
  absl::StatusOr<int64_t> lowered = LowerShardyRoundTrip(*parsed->module);
  if (!lowered.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": Shardy's round-trip form: ", lowered.status().message()));
  }
  return PrintModule(*parsed->module);
}

absl::StatusOr<std::unique_ptr<HloModule>> LoadVerifiedModule(const std::string& path,
                                                              std::ostream& err) {
  absl::StatusOr<std::string> raw = ReadFile(path);
  if (!raw.ok()) return raw.status();
  const bool mlir = LooksLikeMlir(*raw);
  absl::StatusOr<std::string> text = mlir ? ReadModuleText(path) : std::move(raw);
  if (!text.ok()) return text.status();
  ParseOptions options;
  options.path = mlir ? absl::StrCat(path, " (as HLO, converted by jaxlib)") : path;
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(*text, options);
  if (!parsed.ok()) return parsed.status();
  for (const std::string& warning : parsed->warnings) err << warning << "\n";
  if (HasShardyRoundTrip(*parsed->module)) {
    // Shardy's round-trip form (a Shardy module printed as HLO) -> GSPMD's form, printed and
    // parsed again so that the new instructions are in program order.
    absl::StatusOr<int64_t> lowered = LowerShardyRoundTrip(*parsed->module);
    if (!lowered.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(options.path, ": Shardy's round-trip form: ", lowered.status().message()));
    }
    ParseOptions again = options;
    again.path = absl::StrCat(path, " (Shardy's form rewritten as GSPMD's)");
    absl::StatusOr<ParsedModule> reparsed = ParseHloModule(PrintModule(*parsed->module), again);
    if (!reparsed.ok()) return reparsed.status();
    reparsed->module->set_source_path(path);
    parsed = *std::move(reparsed);
  }
  std::vector<std::string> errors;
  for (const VerifierDiagnostic& diagnostic : VerifyModuleDiagnostics(*parsed->module)) {
    if (diagnostic.is_warning) {
      err << FormatDiagnostic(*parsed->module, diagnostic) << "\n";
    } else {
      errors.push_back(FormatDiagnostic(*parsed->module, diagnostic));
    }
  }
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
  // XLA's partitioners compile what jax lowered, as jax.jit does; the HLO is for the rest.
  if (mlir) parsed->module->set_jax_source(*std::move(raw));
  return std::move(parsed->module);
}

}  // namespace spmdcheck::cli
