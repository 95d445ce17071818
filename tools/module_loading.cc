#include "tools/module_loading.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "base/file.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/sdy_sharding_round_trip.h"
#include "ir/verifier.h"
#include "target/jax_import.h"
#include "target/xla_worker.h"
#include "tools/cli.h"

namespace spmdcheck::cli {
namespace {

// jax's StableHLO as a module, converted by jaxlib in a short-lived XLA worker (jax is imported
// once per conversion); without jax a FailedPrecondition that says what is needed.
absl::StatusOr<std::unique_ptr<HloModule>> ImportMlir(const std::string& text,
                                                      const std::string& path,
                                                      std::vector<std::string>* warnings) {
  target::XlaWorkerOptions options;
  options.devices = 1;
  target::XlaWorker worker(options);
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      target::ImportStableHlo(worker, text, path, warnings);
  if (absl::IsUnavailable(module.status())) {
    return absl::FailedPreconditionError(absl::StrCat(
        path,
        ": this is StableHLO/MLIR text (as jax's .lower(...).as_text() prints it); reading it "
        "needs jax (the pinned jaxlib of workers/xla/requirements.txt) in the project's virtual "
        "environment .venv (./scripts/run-tests makes it) or in SPMDCHECK_XLA_VENV / "
        "SPMDCHECK_XLA_PYTHON, which is not available: ",
        module.status().message(),
        ". Without jax, give HLO text instead (XLA's dumps, or "
        "jax.jit(f).lower(...).compiler_ir('hlo').as_hlo_text())"));
  }
  return module;
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
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok() || !LooksLikeMlir(*text)) return text;
  absl::StatusOr<std::unique_ptr<HloModule>> module = ImportMlir(*text, path, nullptr);
  if (!module.ok()) return module.status();
  return PrintModule(**module);
}

absl::StatusOr<std::unique_ptr<HloModule>> LoadVerifiedModule(const std::string& path,
                                                              std::ostream& err) {
  absl::StatusOr<std::string> raw = base::ReadFile(path);
  if (!raw.ok()) return raw.status();
  std::unique_ptr<HloModule> module;
  std::vector<std::string> warnings;
  if (LooksLikeMlir(*raw)) {
    // XLA's partitioners compile what jax lowered, as jax.jit does (the module keeps the text).
    absl::StatusOr<std::unique_ptr<HloModule>> imported = ImportMlir(*raw, path, &warnings);
    if (!imported.ok()) return imported.status();
    module = *std::move(imported);
  } else {
    absl::StatusOr<ParsedModule> parsed = ParseHloModule(*raw, {.path = path});
    if (!parsed.ok()) return parsed.status();
    warnings = parsed->warnings;
    module = std::move(parsed->module);
    if (HasShardyRoundTrip(*module)) {
      // Shardy's round-trip form (a Shardy module printed as HLO) -> GSPMD's form, printed and
      // parsed again so that the new instructions are in program order.
      absl::StatusOr<int64_t> lowered = LowerShardyRoundTrip(*module);
      if (!lowered.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": Shardy's round-trip form: ", lowered.status().message()));
      }
      absl::StatusOr<ParsedModule> reparsed =
          ParseHloModule(PrintModule(*module),
                         {.path = absl::StrCat(path, " (Shardy's form rewritten as GSPMD's)")});
      if (!reparsed.ok()) return reparsed.status();
      reparsed->module->set_source_path(path);
      module = std::move(reparsed->module);
    }
  }
  for (const std::string& warning : warnings) err << warning << "\n";
  std::vector<std::string> errors;
  for (const VerifierDiagnostic& diagnostic : VerifyModuleDiagnostics(*module)) {
    if (diagnostic.is_warning) {
      err << FormatDiagnostic(*module, diagnostic) << "\n";
    } else {
      errors.push_back(FormatDiagnostic(*module, diagnostic));
    }
  }
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
  return module;
}

}  // namespace spmdcheck::cli
