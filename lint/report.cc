// Report renderings of the collective lint: text for people, JSON (schema in docs/lint.md) and
// SARIF 2.1.0 (validated against the OASIS schema in tests/data by tests/lint_report_test.cc).
// JSON is built and written by nlohmann_json; costs are formatted here, not by
// CollectiveCost::ToString.
// LintReport::proved() and incorrect() are defined in lint/lint.cc.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "analysis/cost_model.h"
#include "lint/lint.h"
#include "nlohmann/json.hpp"

namespace spmdcheck::lint {
namespace {

using analysis::CollectiveCost;

constexpr absl::string_view kToolName = "spmdcheck";
constexpr absl::string_view kSarifSchema = "https://json.schemastore.org/sarif-2.1.0.json";
// tool.driver.informationUri: must be an absolute URI; left out of the SARIF while empty.
constexpr absl::string_view kInformationUri = "";

int64_t CountStatus(const LintReport& report, FindingStatus status) {
  return std::count_if(report.findings.begin(), report.findings.end(),
                       [status](const Finding& finding) { return finding.status == status; });
}

// ---------------------------------------------------------------------------------------------
// JSON (nlohmann::ordered_json: members in the order written).

using Json = nlohmann::ordered_json;

// Pretty-printed with 2-space indentation, `"key": value`, empty containers as {} and [], UTF-8
// kept and bytes that are not valid UTF-8 replaced by U+FFFD: the layout of Python's
// json.dumps(indent=2, ensure_ascii=False), so that the output is always valid JSON.
std::string Dump(const Json& json) {
  return json.dump(2, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace) + "\n";
}

Json CostJson(const CollectiveCost& cost) {
  Json json = Json::object();
  json["collectives"] = cost.collectives;
  json["collective_permutes"] = cost.collective_permutes;
  json["max_recv_bytes"] = cost.max_recv_bytes;
  json["max_send_bytes"] = cost.max_send_bytes;
  return json;
}

Json OptionalCostJson(const std::optional<CollectiveCost>& cost) {
  return cost.has_value() ? CostJson(*cost) : Json(nullptr);
}

Json CauseJson(const std::optional<ShardingCause>& cause) {
  if (!cause.has_value()) return nullptr;
  Json json = Json::object();
  json["instruction"] = cause->instruction;
  json["holds"] = cause->holds;
  json["sharding"] = cause->sharding;
  json["better_sharding"] = cause->better_sharding;
  json["jax"] = cause->jax.empty() ? Json(nullptr) : Json(cause->jax);
  return json;
}

Json StringArray(const std::vector<std::string>& values) {
  Json json = Json::array();
  for (const std::string& value : values) json.push_back(value);
  return json;
}

// ---------------------------------------------------------------------------------------------
// Text.

std::string CostText(const CollectiveCost& cost) {
  return absl::StrFormat(
      "%d collective(s), %d collective-permute(s), max %d bytes received / %d bytes sent per "
      "device",
      cost.collectives, cost.collective_permutes, cost.max_recv_bytes, cost.max_send_bytes);
}

std::string CauseHint(const ShardingCause& cause) {
  return absl::StrCat("change the sharding of ", cause.holds, " (instruction ", cause.instruction,
                      ") from ", cause.sharding, " to ", cause.better_sharding,
                      ": add a sharding constraint ", cause.better_sharding, " on ", cause.holds,
                      " in the program");
}

// Appends the lines of `text`, each prefixed by `indent` (empty lines stay empty; trailing
// empty lines are dropped).
void AppendIndentedLines(std::string& out, absl::string_view indent, absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (absl::string_view line : lines) {
    if (line.empty()) {
      out.push_back('\n');
    } else {
      absl::StrAppend(&out, indent, line, "\n");
    }
  }
}

// `  label: text` for a one-line text; a multi-line text goes on its own lines, indented by 4.
void AppendBlock(std::string& out, absl::string_view label, absl::string_view text) {
  const absl::string_view trimmed = absl::StripTrailingAsciiWhitespace(text);
  if (trimmed.find('\n') == absl::string_view::npos) {
    absl::StrAppend(&out, "  ", label, ": ", trimmed, "\n");
    return;
  }
  absl::StrAppend(&out, "  ", label, ":\n");
  AppendIndentedLines(out, "    ", trimmed);
}

void AppendCostLines(std::string& out, absl::string_view label, const ChainCost& cost) {
  absl::StrAppend(&out, "  ", label, ": ", CostText(cost.flat), "\n");
  if (cost.topology.has_value()) {
    absl::StrAppend(&out, "    with topology: ", CostText(*cost.topology), "\n");
  }
}

// ---------------------------------------------------------------------------------------------
// SARIF.

// `path` as a URI reference: characters outside RFC 3986's unreserved, sub-delims, ':', '@' and
// '/' are percent-encoded (a plain relative or absolute path comes out unchanged).
std::string PathToUriReference(absl::string_view path) {
  constexpr absl::string_view kKept = "-._~!$&'()*+,;=:@/";
  std::string uri;
  for (const char ch : path) {
    const unsigned char c = static_cast<unsigned char>(ch);
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      kKept.find(ch) != absl::string_view::npos;
    if (keep) {
      uri.push_back(ch);
    } else {
      absl::StrAppendFormat(&uri, "%%%02X", c);
    }
  }
  return uri;
}

absl::string_view SarifLevel(FindingStatus status) {
  switch (status) {
    case FindingStatus::kIncorrect:
      return "error";
    case FindingStatus::kProved:
      return "warning";
    case FindingStatus::kUnproven:
      return "note";
  }
  return "note";
}

std::string RuleDescription(absl::string_view rule) {
  if (rule == "search") {
    return "A chain of collectives that a cheaper chain, found by the intermediate-sharding "
           "search, can replace.";
  }
  if (rule == "incorrect-chain") {
    return "A chain of collectives that does not implement the shardings it claims.";
  }
  return absl::StrCat("A local rewrite found by the pattern rule ", rule,
                      ", backed by a rule of the rewrite catalog.");
}

std::string SarifMessage(const Finding& finding) {
  std::string text = finding.message;
  absl::StrAppend(&text, "\ncost now: ", CostText(finding.current.flat));
  if (finding.current.topology.has_value()) {
    absl::StrAppend(&text, " (with topology: ", CostText(*finding.current.topology), ")");
  }
  absl::StrAppend(&text, "\nproposed: ", CostText(finding.proposed.flat));
  if (finding.proposed.topology.has_value()) {
    absl::StrAppend(&text, " (with topology: ", CostText(*finding.proposed.topology), ")");
  }
  if (finding.cause.has_value()) absl::StrAppend(&text, "\nhint: ", CauseHint(*finding.cause));
  return text;
}

}  // namespace

absl::string_view FindingStatusName(FindingStatus status) {
  switch (status) {
    case FindingStatus::kProved:
      return "proved";
    case FindingStatus::kUnproven:
      return "unproven";
    case FindingStatus::kIncorrect:
      return "incorrect";
  }
  return "unknown";
}

std::string FormatText(const LintReport& report) {
  std::string out;
  for (const Finding& finding : report.findings) {
    absl::StrAppend(&out, report.path);
    if (finding.first_line > 0) absl::StrAppend(&out, ":", finding.first_line);
    absl::StrAppend(&out, ": ", FindingStatusName(finding.status), " [", finding.rule, "] ",
                    finding.message, "\n");
    if (!finding.instructions.empty()) {
      absl::StrAppend(&out, "  instructions: ", absl::StrJoin(finding.instructions, ", "), "\n");
    }
    if (!finding.global_meaning.empty()) {
      AppendBlock(out, "global meaning", finding.global_meaning);
    }
    AppendCostLines(out, "cost now", finding.current);
    AppendCostLines(out, "proposed", finding.proposed);
    if (!finding.proof.empty()) AppendBlock(out, "proof", finding.proof);
    if (!finding.catalog_rule.empty()) {
      absl::StrAppend(&out, "  catalog rule: ", finding.catalog_rule, "\n");
    }
    if (finding.cause.has_value()) {
      absl::StrAppend(&out, "  hint: ", CauseHint(*finding.cause), "\n");
      if (!finding.cause->jax.empty()) {
        absl::StrAppend(&out, "  in JAX: ", finding.cause->jax, "\n");
      }
    }
    if (!finding.proposed_hlo.empty()) {
      absl::StrAppend(&out, "  proposed HLO:\n");
      AppendIndentedLines(out, "    ", finding.proposed_hlo);
    }
    out.push_back('\n');
  }
  absl::StrAppend(&out, report.chains, " chain(s) examined, ", report.proved(),
                  " proved finding(s), ", CountStatus(report, FindingStatus::kUnproven),
                  " unproven, ", report.incorrect(), " incorrect chain(s)\n");
  if (report.unannotated > 0) {
    absl::StrAppend(&out, "inferred: the sharding of ", report.holdings.size(), " of ",
                    report.unannotated, " unannotated value(s) (--holdings lists them)\n");
  }
  for (const std::string& note : report.notes) absl::StrAppend(&out, "note: ", note, "\n");
  return out;
}

std::string FormatHoldings(const LintReport& report) {
  std::string out;
  for (const InferredValue& v : report.holdings) {
    absl::StrAppend(&out, v.instruction, ": ", v.sharding.ToString(false), "  (", v.rule, "; ",
                    v.proof, ")\n");
  }
  for (const ClaimCheck& c : report.claims) {
    absl::StrAppend(&out, c.instruction, ": annotated ", c.claimed.ToString(false), ": ",
                    ClaimStatusName(c.status));
    if (c.status == ClaimStatus::kDiffers) {
      absl::StrAppend(&out, " (holds ", c.inferred->ToString(false), ")");
    }
    out.push_back('\n');
  }
  absl::StrAppend(&out, "inferred: the sharding of ", report.holdings.size(), " of ",
                  report.unannotated, " unannotated value(s); ", report.claims.size(),
                  " annotation(s) checked\n");
  return out;
}

std::string FormatJson(const LintReport& report) {
  Json json = Json::object();
  json["schema"] = "spmdcheck-lint/1";  // tests/data/lint-schema.json; fields are only added.
  json["path"] = report.path;
  json["num_partitions"] = report.num_partitions;
  json["chains"] = report.chains;
  Json findings = Json::array();
  for (const Finding& finding : report.findings) {
    Json f = Json::object();
    f["status"] = std::string(FindingStatusName(finding.status));
    f["rule"] = finding.rule;
    f["message"] = finding.message;
    f["instructions"] = StringArray(finding.instructions);
    f["location"] = {{"first_line", finding.first_line}, {"last_line", finding.last_line}};
    f["global_meaning"] = finding.global_meaning;
    f["current"] = CostJson(finding.current.flat);
    f["proposed"] = CostJson(finding.proposed.flat);
    f["current_topology"] = OptionalCostJson(finding.current.topology);
    f["proposed_topology"] = OptionalCostJson(finding.proposed.topology);
    f["proposed_hlo"] = finding.proposed_hlo;
    f["proof"] = finding.proof;
    f["catalog_rule"] = finding.catalog_rule.empty() ? Json(nullptr) : Json(finding.catalog_rule);
    f["cause"] = CauseJson(finding.cause);
    findings.push_back(std::move(f));
  }
  json["findings"] = std::move(findings);
  json["notes"] = StringArray(report.notes);
  Json holdings = Json::array();
  for (const InferredValue& v : report.holdings) {
    holdings.push_back({{"instruction", v.instruction},
                        {"sharding", v.sharding.ToString(false)},
                        {"rule", v.rule},
                        {"proof", v.proof}});
  }
  Json claims = Json::array();
  for (const ClaimCheck& c : report.claims) {
    claims.push_back(
        {{"instruction", c.instruction},
         {"line", c.line},
         {"claimed", c.claimed.ToString(false)},
         {"inferred", c.inferred.has_value() ? Json(c.inferred->ToString(false)) : Json(nullptr)},
         {"status", std::string(ClaimStatusName(c.status))}});
  }
  json["inference"] = {{"unannotated", report.unannotated},
                       {"holdings", std::move(holdings)},
                       {"claims", std::move(claims)}};
  json["summary"] = {{"proved", report.proved()},
                     {"unproven", CountStatus(report, FindingStatus::kUnproven)},
                     {"incorrect", report.incorrect()}};
  return Dump(json);
}

std::string FormatSarif(const LintReport& report) {
  // Distinct rules in order of first use; results refer to them by index.
  std::vector<std::string> rules;
  std::vector<int64_t> rule_index;
  for (const Finding& finding : report.findings) {
    auto it = std::find(rules.begin(), rules.end(), finding.rule);
    if (it == rules.end()) it = rules.insert(rules.end(), finding.rule);
    rule_index.push_back(it - rules.begin());
  }

  Json driver = Json::object();
  driver["name"] = std::string(kToolName);
  if (!kInformationUri.empty()) driver["informationUri"] = std::string(kInformationUri);
  Json rules_json = Json::array();
  for (const std::string& rule : rules) {
    Json r = Json::object();
    r["id"] = rule;
    r["shortDescription"] = {{"text", RuleDescription(rule)}};
    rules_json.push_back(std::move(r));
  }
  driver["rules"] = std::move(rules_json);

  Json results = Json::array();
  for (size_t i = 0; i < report.findings.size(); ++i) {
    const Finding& finding = report.findings[i];
    Json physical = Json::object();
    physical["artifactLocation"] = {{"uri", PathToUriReference(report.path)}};
    if (finding.first_line > 0) {  // SARIF lines start at 1.
      physical["region"] = {{"startLine", finding.first_line},
                            {"endLine", std::max(finding.first_line, finding.last_line)}};
    }
    Json location = Json::object();
    location["physicalLocation"] = std::move(physical);
    Json properties = Json::object();
    properties["status"] = std::string(FindingStatusName(finding.status));
    properties["instructions"] = StringArray(finding.instructions);
    properties["current"] = CostJson(finding.current.flat);
    properties["proposed"] = CostJson(finding.proposed.flat);
    properties["current_topology"] = OptionalCostJson(finding.current.topology);
    properties["proposed_topology"] = OptionalCostJson(finding.proposed.topology);
    properties["proposed_hlo"] = finding.proposed_hlo;
    Json result = Json::object();
    result["ruleId"] = finding.rule;
    result["ruleIndex"] = rule_index[i];
    result["level"] = std::string(SarifLevel(finding.status));
    result["message"] = {{"text", SarifMessage(finding)}};
    result["locations"] = Json::array({std::move(location)});
    result["properties"] = std::move(properties);
    results.push_back(std::move(result));
  }

  Json run = Json::object();
  run["tool"] = {{"driver", std::move(driver)}};
  run["results"] = std::move(results);
  Json sarif = Json::object();
  sarif["$schema"] = std::string(kSarifSchema);
  sarif["version"] = "2.1.0";
  sarif["runs"] = Json::array({std::move(run)});
  return Dump(sarif);
}

}  // namespace spmdcheck::lint
