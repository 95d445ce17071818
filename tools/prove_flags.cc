#include "tools/prove_flags.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "smt/proof_result.h"

namespace spmdcheck::cli {
namespace {

std::string VerdictWord(const smt::RuleReport& r) {
  switch (r.verdict.verdict) {
    case Verdict::kHolds:
      return r.expected_sound ? "proved" : "PROVED (expected refuted)";
    case Verdict::kFails:
      return r.expected_sound ? "REFUTED (expected proved)" : "refuted (expected)";
    case Verdict::kUnknown:
      return "unknown";
  }
  return "unknown";
}

}  // namespace

void AddTimeoutMsFlag(CLI::App& app, int64_t& timeout_ms, const std::string& what) {
  app.add_option("--timeout-ms", timeout_ms,
                 absl::StrCat(what, " (default ", timeout_ms, "); a timeout is `unknown`"))
      ->type_name("MS")
      ->transform(DecimalInt64());
}

absl::Status CheckTimeoutMs(int64_t timeout_ms) {
  if (timeout_ms <= 0) return absl::InvalidArgumentError("--timeout-ms must be positive");
  return absl::OkStatus();
}

void AddProcedureFlag(CLI::App& app, std::string& procedure) {
  procedure = "auto";
  app.add_option("--procedure", procedure,
                 "decide by enumerating every tile position (the device count is concrete),\n"
                 "by Z3, or both (they must agree; both times printed); auto (default)\n"
                 "enumerates up to 2^24 positions and asks Z3 beyond")
      ->type_name("auto|enumerate|z3|both");
}

absl::StatusOr<smt::Procedure> ParseProcedureFlag(const std::string& procedure) {
  std::optional<smt::Procedure> parsed = smt::ParseProcedure(procedure);
  if (!parsed.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--procedure must be auto, enumerate, z3 or both, not '", procedure, "'"));
  }
  return *parsed;
}

void AddCatalogFlags(CLI::App& app, CatalogFlags& flags) {
  app.add_option(
         "--max-devices", flags.max_devices,
         absl::StrCat("meshes of at most N devices, in [2, 64] (default ", flags.max_devices, ")"))
      ->type_name("N")
      ->transform(DecimalInt64());
  AddOptional(app, "--rule", flags.rule, "only the rule NAME")->type_name("NAME");
  AddTimeoutMsFlag(app, flags.timeout_ms, "per Z3 query");
  app.add_flag("--no-parametric", flags.no_parametric,
               "skip the proof for every size at once (symbolic sizes)");
}

absl::StatusOr<smt::CatalogOptions> CatalogOptionsFrom(const CatalogFlags& flags,
                                                       const std::vector<std::string>& names) {
  smt::CatalogOptions options;
  if (flags.max_devices < 2 || flags.max_devices > 64) {
    return absl::InvalidArgumentError("--max-devices must be in [2, 64]");
  }
  options.max_devices = flags.max_devices;
  if (absl::Status timeout = CheckTimeoutMs(flags.timeout_ms); !timeout.ok()) return timeout;
  options.timeout_ms = flags.timeout_ms;
  options.parametric_timeout_ms =
      std::min<int64_t>(flags.timeout_ms, options.parametric_timeout_ms);
  options.parametric = !flags.no_parametric;
  if (flags.rule.has_value()) {
    if (std::find(names.begin(), names.end(), *flags.rule) == names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown rule '", *flags.rule, "'; rules: ", absl::StrJoin(names, ", ")));
    }
    options.rule = *flags.rule;
  }
  return options;
}

int PrintRuleReports(const std::vector<smt::RuleReport>& reports, int64_t max_devices,
                     std::ostream& out) {
  size_t width = 4;
  for (const smt::RuleReport& r : reports) width = std::max(width, r.name.size());
  out << absl::StrFormat("%-*s | %-26s | %-25s | %s\n", width, "rule", "verdict", "meshes checked",
                         "time");
  out << std::string(width, '-') << "-|-" << std::string(26, '-') << "-|-" << std::string(25, '-')
      << "-|-------\n";
  bool any_wrong = false, any_unknown = false;
  int sound_proved = 0, sound_total = 0, wrong_refuted = 0, wrong_total = 0;
  for (const smt::RuleReport& r : reports) {
    std::string meshes = absl::StrCat(r.meshes_checked, " (", r.mesh_shapes, " shapes)");
    if (r.parametric) absl::StrAppend(&meshes, " + all n");
    out << absl::StrFormat("%-*s | %-26s | %-25s | %.2fs\n", width, r.name, VerdictWord(r), meshes,
                           r.seconds);
    if (r.expected_sound) {
      ++sound_total;
      if (r.verdict.verdict == Verdict::kHolds) ++sound_proved;
    } else {
      ++wrong_total;
      if (r.verdict.verdict == Verdict::kFails) ++wrong_refuted;
    }
    if (r.verdict.verdict == Verdict::kUnknown) {
      any_unknown = true;
    } else if (!r.AsExpected()) {
      any_wrong = true;
    }
  }
  out << "\n";
  for (const smt::RuleReport& r : reports) {
    out << r.name << ": " << r.summary << "\n";
    if (!r.xla_pass.empty()) out << "  xla: " << r.xla_pass << "\n";
    if (r.expected_sound) out << "  parametric: " << r.parametric_note << "\n";
    if (r.verdict.verdict == Verdict::kFails) {
      out << "  counterexample: " << r.verdict.counterexample << "\n";
    } else if (r.verdict.verdict == Verdict::kUnknown) {
      out << "  unknown: " << r.verdict.reason << "\n";
    }
  }
  out << absl::StrFormat(
      "\nsummary: %d/%d sound rules proved, %d/%d wrong "
      "variants refuted (meshes up to %d "
      "devices)\n",
      sound_proved, sound_total, wrong_refuted, wrong_total, max_devices);
  if (any_wrong) return kExitFails;
  if (any_unknown) return kExitUnknown;
  return kExitHolds;
}

}  // namespace spmdcheck::cli
