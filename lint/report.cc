// Report renderings of the collective lint: text for people, JSON (schema in docs/lint.md) and
// SARIF 2.1.0 (validated against the OASIS schema in tests/data by tests/lint_report_test.cc).
// Depends only on headers and Abseil: costs are formatted here, not by CollectiveCost::ToString.
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
#include "lint/lint.h"
#include "partitioner/cost_model.h"

namespace spmdcheck::lint {
namespace {

using partitioner::CollectiveCost;

constexpr absl::string_view kToolName = "spmdcheck";
constexpr absl::string_view kSarifSchema = "https://json.schemastore.org/sarif-2.1.0.json";
// tool.driver.informationUri: must be an absolute URI; left out of the SARIF while empty.
constexpr absl::string_view kInformationUri = "";

int64_t CountStatus(const LintReport& report, FindingStatus status) {
  return std::count_if(report.findings.begin(), report.findings.end(),
                       [status](const Finding& finding) { return finding.status == status; });
}

// ---------------------------------------------------------------------------------------------
// JSON.

// Length of the valid UTF-8 sequence starting at text[i], or 0 if the bytes there are not one
// (overlong forms, surrogates and code points above U+10FFFF count as invalid).
size_t Utf8SequenceLength(absl::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  uint32_t min_code_point = 0;
  uint32_t code_point = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    min_code_point = 0x80;
    code_point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    min_code_point = 0x800;
    code_point = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    min_code_point = 0x10000;
    code_point = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3F);
  }
  if (code_point < min_code_point || code_point > 0x10FFFF) return 0;
  if (code_point >= 0xD800 && code_point <= 0xDFFF) return 0;
  return length;
}

// Appends `text` as a JSON string literal: quotes and backslashes escaped, control characters as
// \n, \t, ... or \u00XX, bytes that are not valid UTF-8 replaced by U+FFFD so that the output is
// always valid JSON. Valid non-ASCII UTF-8 is kept as is.
void AppendJsonString(std::string& out, absl::string_view text) {
  out.push_back('"');
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t length = Utf8SequenceLength(text, i);
      if (length == 0) {
        out.append("\xEF\xBF\xBD");  // U+FFFD REPLACEMENT CHARACTER.
        ++i;
      } else {
        out.append(text.data() + i, length);
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
}

// A streaming writer of pretty-printed JSON (2-space indentation, `"key": value`, empty
// containers as {} and []): the layout of Python's json.dumps(indent=2, ensure_ascii=False).
class JsonWriter {
 public:
  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }

  void Key(absl::string_view key) {
    Separate();
    AppendJsonString(out_, key);
    out_.append(": ");
    after_key_ = true;
  }
  void String(absl::string_view value) {
    Separate();
    AppendJsonString(out_, value);
  }
  void Int(int64_t value) {
    Separate();
    absl::StrAppend(&out_, value);
  }
  void Null() {
    Separate();
    out_.append("null");
  }

  // Shorthands for members of the current object.
  void StringMember(absl::string_view key, absl::string_view value) {
    Key(key);
    String(value);
  }
  void IntMember(absl::string_view key, int64_t value) {
    Key(key);
    Int(value);
  }
  // A string, or null when empty.
  void OptionalStringMember(absl::string_view key, absl::string_view value) {
    Key(key);
    if (value.empty()) {
      Null();
    } else {
      String(value);
    }
  }
  void StringArrayMember(absl::string_view key, const std::vector<std::string>& values) {
    Key(key);
    BeginArray();
    for (const std::string& value : values) String(value);
    EndArray();
  }

  std::string Finish() && {
    out_.push_back('\n');
    return std::move(out_);
  }

 private:
  // Before a value or key: a comma after the previous element, a newline and the indentation.
  // Nothing for the value of a key, or for the top-level value.
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (stack_.empty()) return;
    if (stack_.back()++ > 0) out_.push_back(',');
    out_.push_back('\n');
    out_.append(2 * stack_.size(), ' ');
  }
  void Open(char bracket) {
    Separate();
    out_.push_back(bracket);
    stack_.push_back(0);
  }
  void Close(char bracket) {
    const int64_t count = stack_.back();
    stack_.pop_back();
    if (count > 0) {
      out_.push_back('\n');
      out_.append(2 * stack_.size(), ' ');
    }
    out_.push_back(bracket);
  }

  std::string out_;
  std::vector<int64_t> stack_;  // Per open container: the elements written so far.
  bool after_key_ = false;
};

void WriteCost(JsonWriter& json, const CollectiveCost& cost) {
  json.BeginObject();
  json.IntMember("collectives", cost.collectives);
  json.IntMember("collective_permutes", cost.collective_permutes);
  json.IntMember("max_recv_bytes", cost.max_recv_bytes);
  json.IntMember("max_send_bytes", cost.max_send_bytes);
  json.EndObject();
}

void WriteOptionalCostMember(JsonWriter& json, absl::string_view key,
                             const std::optional<CollectiveCost>& cost) {
  json.Key(key);
  if (cost.has_value()) {
    WriteCost(json, *cost);
  } else {
    json.Null();
  }
}

void WriteCause(JsonWriter& json, const std::optional<ShardingCause>& cause) {
  if (!cause.has_value()) {
    json.Null();
    return;
  }
  json.BeginObject();
  json.StringMember("instruction", cause->instruction);
  json.StringMember("holds", cause->holds);
  json.StringMember("sharding", cause->sharding);
  json.StringMember("better_sharding", cause->better_sharding);
  json.EndObject();
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
  for (const std::string& note : report.notes) absl::StrAppend(&out, "note: ", note, "\n");
  return out;
}

std::string FormatJson(const LintReport& report) {
  JsonWriter json;
  json.BeginObject();
  json.StringMember("path", report.path);
  json.IntMember("num_partitions", report.num_partitions);
  json.IntMember("chains", report.chains);
  json.Key("findings");
  json.BeginArray();
  for (const Finding& finding : report.findings) {
    json.BeginObject();
    json.StringMember("status", FindingStatusName(finding.status));
    json.StringMember("rule", finding.rule);
    json.StringMember("message", finding.message);
    json.StringArrayMember("instructions", finding.instructions);
    json.Key("location");
    json.BeginObject();
    json.IntMember("first_line", finding.first_line);
    json.IntMember("last_line", finding.last_line);
    json.EndObject();
    json.StringMember("global_meaning", finding.global_meaning);
    json.Key("current");
    WriteCost(json, finding.current.flat);
    json.Key("proposed");
    WriteCost(json, finding.proposed.flat);
    WriteOptionalCostMember(json, "current_topology", finding.current.topology);
    WriteOptionalCostMember(json, "proposed_topology", finding.proposed.topology);
    json.StringMember("proposed_hlo", finding.proposed_hlo);
    json.StringMember("proof", finding.proof);
    json.OptionalStringMember("catalog_rule", finding.catalog_rule);
    json.Key("cause");
    WriteCause(json, finding.cause);
    json.EndObject();
  }
  json.EndArray();
  json.StringArrayMember("notes", report.notes);
  json.Key("summary");
  json.BeginObject();
  json.IntMember("proved", report.proved());
  json.IntMember("unproven", CountStatus(report, FindingStatus::kUnproven));
  json.IntMember("incorrect", report.incorrect());
  json.EndObject();
  json.EndObject();
  return std::move(json).Finish();
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

  JsonWriter json;
  json.BeginObject();
  json.StringMember("$schema", kSarifSchema);
  json.StringMember("version", "2.1.0");
  json.Key("runs");
  json.BeginArray();
  json.BeginObject();
  json.Key("tool");
  json.BeginObject();
  json.Key("driver");
  json.BeginObject();
  json.StringMember("name", kToolName);
  if (!kInformationUri.empty()) json.StringMember("informationUri", kInformationUri);
  json.Key("rules");
  json.BeginArray();
  for (const std::string& rule : rules) {
    json.BeginObject();
    json.StringMember("id", rule);
    json.Key("shortDescription");
    json.BeginObject();
    json.StringMember("text", RuleDescription(rule));
    json.EndObject();
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();  // driver
  json.EndObject();  // tool
  json.Key("results");
  json.BeginArray();
  for (size_t i = 0; i < report.findings.size(); ++i) {
    const Finding& finding = report.findings[i];
    json.BeginObject();
    json.StringMember("ruleId", finding.rule);
    json.IntMember("ruleIndex", rule_index[i]);
    json.StringMember("level", SarifLevel(finding.status));
    json.Key("message");
    json.BeginObject();
    json.StringMember("text", SarifMessage(finding));
    json.EndObject();
    json.Key("locations");
    json.BeginArray();
    json.BeginObject();
    json.Key("physicalLocation");
    json.BeginObject();
    json.Key("artifactLocation");
    json.BeginObject();
    json.StringMember("uri", PathToUriReference(report.path));
    json.EndObject();
    if (finding.first_line > 0) {  // SARIF lines start at 1.
      json.Key("region");
      json.BeginObject();
      json.IntMember("startLine", finding.first_line);
      json.IntMember("endLine", std::max(finding.first_line, finding.last_line));
      json.EndObject();
    }
    json.EndObject();  // physicalLocation
    json.EndObject();
    json.EndArray();
    json.Key("properties");
    json.BeginObject();
    json.StringMember("status", FindingStatusName(finding.status));
    json.StringArrayMember("instructions", finding.instructions);
    json.Key("current");
    WriteCost(json, finding.current.flat);
    json.Key("proposed");
    WriteCost(json, finding.proposed.flat);
    WriteOptionalCostMember(json, "current_topology", finding.current.topology);
    WriteOptionalCostMember(json, "proposed_topology", finding.proposed.topology);
    json.StringMember("proposed_hlo", finding.proposed_hlo);
    json.EndObject();
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();  // run
  json.EndArray();
  json.EndObject();
  return std::move(json).Finish();
}

}  // namespace spmdcheck::lint
