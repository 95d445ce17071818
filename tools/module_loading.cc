#include "tools/module_loading.h"

#include "absl/strings/str_join.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"
#include "tools/cli.h"

namespace spmdcheck::cli {

absl::StatusOr<std::unique_ptr<HloModule>> LoadVerifiedModule(const std::string& path,
                                                              std::ostream& err) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  ParseOptions options;
  options.path = path;
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(*text, options);
  if (!parsed.ok()) return parsed.status();
  for (const std::string& warning : parsed->warnings) err << warning << "\n";
  std::vector<std::string> errors;
  for (const VerifierDiagnostic& diagnostic : VerifyModuleDiagnostics(*parsed->module)) {
    if (diagnostic.is_warning) {
      err << FormatDiagnostic(*parsed->module, diagnostic) << "\n";
    } else {
      errors.push_back(FormatDiagnostic(*parsed->module, diagnostic));
    }
  }
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
  return std::move(parsed->module);
}

}  // namespace spmdcheck::cli
