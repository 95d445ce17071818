// `spmdcheck prove rewrites [--max-devices N] [--rule NAME] [--timeout-ms MS]
// [--no-parametric]`: checks the rewrite catalog (smt/rewrite_catalog.h) and
// prints one table row per rule.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "smt/proof_result.h"
#include "smt/rewrite_catalog.h"
#include "smt/rewrite_rules.h"
#include "tools/cli.h"
#include "tools/prove_flags.h"

namespace spmdcheck::cli {
namespace {

constexpr char kCommand[] = "prove rewrites";

constexpr char kHelp[] =
    R"(usage: spmdcheck prove rewrites [--max-devices N] [--rule NAME] [--timeout-ms MS]
                                [--no-parametric] [--list] [--show NAME]

Proves every rule of the collective rewrite catalog with Z3 for every mesh shape (axes of size
>= 2, at most 4 axes) and every choice of mesh axes with at most N devices (default 16), and,
where the rule has no loop over the group size, for symbolic sizes. Wrong variants are expected
to be refuted with a counterexample (mesh, axes, device, local index, both sides).
Exit code: 0 every sound rule proved and every wrong variant refuted, 1 a sound rule refuted or
a wrong variant proved, 2 bad input, 3 some rule unknown.
The rules are written in the rule language of `spmdcheck prove rule` (smt/rules/*.rules);
--show NAME prints one.
)";

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

int RunProveRewrites(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Args> args =
      Args::Parse(argv, {"--max-devices", "--rule", "--timeout-ms", "--show"},
                  {"--help", "--no-parametric", "--list"});
  if (!args.ok()) return BadInput(err, kCommand, args.status().message());
  if (args->Has("--help")) {
    out << kHelp;
    return kExitHolds;
  }
  if (!args->positional().empty()) {
    return BadInput(err, kCommand,
                    absl::StrCat("unexpected argument '", args->positional()[0], "'"));
  }
  const std::vector<std::string> names = smt::RewriteRuleNames();
  if (args->Has("--list")) {
    for (const std::string& name : names) out << name << "\n";
    return kExitHolds;
  }
  if (std::optional<std::string> show = args->Get("--show")) {
    for (const smt::rw::RuleDef& rule : smt::rw::RewriteRules()) {
      if (rule.name == *show) {
        out << rule.source;
        return kExitHolds;
      }
    }
    return BadInput(err, kCommand, absl::StrCat("unknown rule '", *show, "'"));
  }
  absl::StatusOr<smt::CatalogOptions> options = CatalogFlags(*args, names);
  if (!options.ok()) return BadInput(err, kCommand, options.status().message());
  return PrintRuleReports(smt::CheckRewriteCatalog(*options), options->max_devices, out);
}

absl::StatusOr<smt::Procedure> ProcedureFlag(const Args& args) {
  std::optional<std::string> text = args.Get("--procedure");
  if (!text.has_value()) return smt::Procedure::kAuto;
  std::optional<smt::Procedure> parsed = smt::ParseProcedure(*text);
  if (!parsed.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--procedure must be auto, enumerate, z3 or both, not '", *text, "'"));
  }
  return *parsed;
}

absl::StatusOr<smt::CatalogOptions> CatalogFlags(const Args& args,
                                                 const std::vector<std::string>& names) {
  smt::CatalogOptions options;
  absl::StatusOr<int64_t> max_devices = args.GetInt("--max-devices", options.max_devices);
  if (!max_devices.ok()) return max_devices.status();
  if (*max_devices < 2 || *max_devices > 64) {
    return absl::InvalidArgumentError("--max-devices must be in [2, 64]");
  }
  options.max_devices = *max_devices;
  absl::StatusOr<int64_t> timeout = args.GetInt("--timeout-ms", options.timeout_ms);
  if (!timeout.ok()) return timeout.status();
  if (*timeout <= 0) return absl::InvalidArgumentError("--timeout-ms must be positive");
  options.timeout_ms = *timeout;
  options.parametric_timeout_ms = std::min<int64_t>(*timeout, options.parametric_timeout_ms);
  options.parametric = !args.Has("--no-parametric");
  if (std::optional<std::string> rule = args.Get("--rule"); rule.has_value()) {
    if (std::find(names.begin(), names.end(), *rule) == names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown rule '", *rule, "'; rules: ", absl::StrJoin(names, ", ")));
    }
    options.rule = *rule;
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
