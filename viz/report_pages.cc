#include "viz/report_pages.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/cost_model.h"
#include "base/file.h"
#include "ir/hlo_opcode.h"
#include "ir/hlo_parser.h"
#include "oracle/equivalence.h"
#include "viz/html.h"

namespace spmdcheck::viz {
namespace {

std::string Num(double v) { return absl::StrFormat("%.1f", v); }

// A verdict word as check prints it.
const char* VerdictWord(check::CheckStatus status) {
  switch (status) {
    case check::CheckStatus::kHolds:
      return "holds";
    case check::CheckStatus::kFails:
    case check::CheckStatus::kCrash:
    case check::CheckStatus::kRejected:
      return "fails";
    case check::CheckStatus::kUnsupported:
    case check::CheckStatus::kTimeout:
      return "unknown";
  }
  return "unknown";
}

int ExitCode(check::CheckStatus status) {
  const std::string word = VerdictWord(status);
  return word == "holds" ? 0 : word == "fails" ? 1 : 3;
}

// Every collective but the -done halves of async pairs (their -start is drawn).
bool IsDrawnCollective(HloOpcode op) {
  return IsCollective(op) && !absl::EndsWith(HloOpcodeString(op), "-done");
}

// One collective: its line of text and a grid of the devices, coloured by replica group, with
// arrows for collective-permute pairs.
std::string DrawCollective(const HloInstruction& instruction, int64_t n, double y0,
                           double* height) {
  const int64_t cols = std::min<int64_t>(std::max<int64_t>(n, 1), 16);
  const double w = 36, h = 26, gap = 6, left = 10;
  std::string out;
  const analysis::CollectiveCost cost = analysis::CostOfInstruction(instruction, n);
  std::string dims;
  if (instruction.attrs().dimensions.has_value()) {
    dims = absl::StrCat(" dimensions={", absl::StrJoin(*instruction.attrs().dimensions, ","), "}");
  }
  absl::StrAppend(
      &out, "<text x=\"", Num(left), "\" y=\"", Num(y0 + 14),
      "\" font-size=\"12\" font-weight=\"bold\">",
      Escape(absl::StrCat(instruction.name(), " = ", HloOpcodeString(instruction.opcode()), " ",
                          instruction.shape().ToString(false), dims)),
      "</text>\n<text x=\"", Num(left), "\" y=\"", Num(y0 + 29),
      "\" font-size=\"11\" fill=\"#555\">",
      Escape(absl::StrCat("receives up to ", cost.max_recv_bytes, " bytes per device, sends up to ",
                          cost.max_send_bytes)),
      "</text>\n");
  const double grid_y = y0 + 36;
  // Group of each device (-1: in no group).
  std::vector<int64_t> group_of(static_cast<size_t>(n), -1);
  const auto& groups = instruction.attrs().replica_groups;
  const bool permute = instruction.opcode() == HloOpcode::kCollectivePermute ||
                       instruction.opcode() == HloOpcode::kCollectivePermuteStart;
  if (!permute) {
    if (!groups.has_value() || groups->empty()) {
      std::fill(group_of.begin(), group_of.end(), 0);
    } else {
      for (int64_t g = 0; g < groups->num_groups(); ++g) {
        for (int64_t d : groups->group(g)) {
          if (d >= 0 && d < n) group_of[d] = g;
        }
      }
    }
  }
  auto center = [&](int64_t d) {
    const int64_t row = d / cols;  // Whole rows above device d.
    return std::pair<double, double>{left + (w + gap) * static_cast<double>(d % cols) + w / 2,
                                     grid_y + (h + gap) * static_cast<double>(row) + h / 2};
  };
  for (int64_t d = 0; d < n; ++d) {
    auto [cx, cy] = center(d);
    const std::string fill = group_of[d] >= 0 ? GroupColor(group_of[d]) : "#eee";
    absl::StrAppend(&out, "<g class=\"device\" data-device=\"", d, "\" data-group=\"", group_of[d],
                    "\"><rect x=\"", Num(cx - w / 2), "\" y=\"", Num(cy - h / 2), "\" width=\"",
                    Num(w), "\" height=\"", Num(h), "\" rx=\"3\" fill=\"", fill, "\"/><text x=\"",
                    Num(cx), "\" y=\"", Num(cy + 4), "\" font-size=\"11\" text-anchor=\"middle\">",
                    d, "</text></g>\n");
  }
  if (permute && instruction.attrs().source_target_pairs.has_value()) {
    const auto& pairs = *instruction.attrs().source_target_pairs;
    int64_t drawn = 0;
    for (const auto& [source, target] : pairs) {
      if (source < 0 || target < 0 || source >= n || target >= n || source == target) continue;
      if (++drawn > 256) break;
      auto [x1, y1] = center(source);
      auto [x2, y2] = center(target);
      // Bend the arrow so that pairs in both directions stay apart.
      const double mx = (x1 + x2) / 2 + (y2 - y1) * 0.15, my = (y1 + y2) / 2 - (x2 - x1) * 0.15 - 8;
      absl::StrAppend(&out, "<path class=\"pair\" data-devices=\"", source, " ", target, "\" d=\"M",
                      Num(x1), " ", Num(y1 - h / 2), " Q", Num(mx), " ", Num(my), " ", Num(x2), " ",
                      Num(y2 - h / 2),
                      "\" fill=\"none\" stroke=\"#b03030\" stroke-width=\"1.5\" "
                      "marker-end=\"url(#arrow)\"/>\n");
    }
  }
  const int64_t rows = (n + cols - 1) / cols;
  *height = 36 + (h + gap) * static_cast<double>(rows) + 14;
  return out;
}

std::string ChainSvgDocument(const std::string& body, double height, const std::string& id) {
  return absl::StrCat("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chain\" id=\"", id,
                      "\" width=\"700\" height=\"", Num(height), "\" viewBox=\"0 0 700 ",
                      Num(height), "\">\n<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" ",
                      "refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" ",
                      "orient=\"auto-start-reverse\"><path d=\"M0 0 L10 5 L0 10 z\" ",
                      "fill=\"#b03030\"/></marker></defs>\n", body, "</svg>\n");
}

std::string CostRow(absl::string_view what, const analysis::CollectiveCost& cost) {
  return absl::StrCat("<tr><td>", Escape(what), "</td><td>", cost.collectives, "</td><td>",
                      cost.collective_permutes, "</td><td>", cost.max_recv_bytes, "</td><td>",
                      cost.max_send_bytes, "</td></tr>\n");
}

constexpr char kCostHeader[] =
    "<tr><th></th><th>collectives</th><th>collective-permutes</th><th>max bytes received per "
    "device</th><th>max bytes sent per device</th></tr>\n";

nlohmann::json Execution(const std::optional<check::ExecutionCheck>& check) {
  if (!check.has_value()) return nullptr;
  return {{"verdict", VerdictName(check->verdict)},
          {"detail", check->detail},
          {"wrong_devices", check->wrong_devices}};
}

// The wrong devices of a failing check as a grid (red wrong, green right).
std::string WrongDevicesSvg(const std::vector<int64_t>& wrong, int64_t n) {
  if (n <= 0 || n > 4096) return "";
  const int64_t cols = std::min<int64_t>(n, 32);
  const double w = 20, h = 18;
  std::vector<bool> is_wrong(static_cast<size_t>(n), false);
  for (int64_t d : wrong) {
    if (d >= 0 && d < n) is_wrong[d] = true;
  }
  std::string body;
  for (int64_t d = 0; d < n; ++d) {
    const int64_t row = d / cols;  // Whole rows above device d.
    const double x = 2 + w * static_cast<double>(d % cols), y = 2 + h * static_cast<double>(row);
    absl::StrAppend(
        &body, "<g class=\"device ", is_wrong[d] ? "wrong" : "right", "\" data-device=\"", d,
        "\"><rect x=\"", Num(x), "\" y=\"", Num(y), "\" width=\"", Num(w), "\" height=\"", Num(h),
        "\" fill=\"", is_wrong[d] ? "#e06060" : "#8fd18f", "\"/><text x=\"", Num(x + w / 2),
        "\" y=\"", Num(y + 13), "\" font-size=\"9\" text-anchor=\"middle\">", d, "</text></g>\n");
  }
  const int64_t rows = (n + cols - 1) / cols;  // Rounded up.
  const double height = 4 + h * static_cast<double>(rows);
  return absl::StrCat("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"wrong-devices\" width=\"",
                      Num(4 + w * static_cast<double>(cols)), "\" height=\"", Num(height), "\">\n",
                      body, "</svg>\n");
}

}  // namespace

std::string CollectiveChainSvg(const HloModule& module, int64_t num_partitions,
                               const std::vector<std::string>& instructions) {
  std::string body;
  double y = 4;
  int64_t count = 0;
  if (module.entry() == nullptr) return "";
  for (const HloInstruction* instruction : module.entry()->PostOrder()) {
    if (!IsDrawnCollective(instruction->opcode())) continue;
    if (!instructions.empty() && std::find(instructions.begin(), instructions.end(),
                                           instruction->name()) == instructions.end()) {
      continue;
    }
    if (++count > 40) {
      absl::StrAppend(&body, "<text x=\"10\" y=\"", Num(y + 14),
                      "\" font-size=\"12\">(more collectives not drawn)</text>\n");
      y += 24;
      break;
    }
    double height = 0;
    absl::StrAppend(&body, "<g class=\"collective\" data-name=\"", Escape(instruction->name()),
                    "\" data-opcode=\"", HloOpcodeString(instruction->opcode()), "\">\n",
                    DrawCollective(*instruction, num_partitions, y, &height), "</g>\n");
    y += height;
  }
  if (count == 0) {
    absl::StrAppend(&body, "<text x=\"10\" y=\"", Num(y + 14),
                    "\" font-size=\"12\">no collectives</text>\n");
    y += 24;
  }
  return ChainSvgDocument(body, y + 4, "");
}

nlohmann::json CheckOutcomeJson(const check::CheckOutcome& o, const std::string& path,
                                const std::string& reproduce, int64_t num_partitions) {
  nlohmann::json j;
  j["module"] = path;
  j["partitioner"] = o.partitioner_spec;
  j["partitioner_name"] = o.self_report.name;
  j["partitioner_version"] = o.self_report.version;
  j["partitioner_seconds"] = o.self_report.seconds;
  j["verdict"] = VerdictWord(o.status);
  j["status"] = check::CheckStatusName(o.status);
  const std::string finding = check::FindingName(o.finding);
  j["finding"] = finding.empty() ? nlohmann::json(nullptr) : nlohmann::json(finding);
  j["message"] = o.message;
  j["exit_code"] = ExitCode(o.status);
  j["oracle_ran"] = o.oracle_ran;
  j["first_wrong_device"] = nullptr;
  j["first_wrong_element"] = nullptr;
  j["wrong_devices"] = nlohmann::json::array();
  j["first_divergence"] = nullptr;
  if (o.oracle_ran) {
    const oracle::EquivReport& r = o.report;
    j["oracle"] = {{"verdict", VerdictName(r.verdict)},
                   {"num_devices", r.num_devices},
                   {"trials", r.trials_run},
                   {"seed", r.seed},
                   {"unknown_reason", r.unknown_reason},
                   {"text", oracle::FormatEquivReport(r)}};
    if (r.device >= 0) {
      j["first_wrong_device"] = r.device;
      j["first_wrong_element"] = {{"global_index", r.mismatch.global_index},
                                  {"local_index", r.mismatch.local_index},
                                  {"expected", r.mismatch.expected},
                                  {"actual", r.mismatch.actual},
                                  {"leaf", r.mismatch.leaf}};
    }
    j["wrong_devices"] = r.wrong_devices;
    if (r.first_divergence.has_value()) {
      const oracle::Divergence& d = *r.first_divergence;
      j["first_divergence"] = {{"instruction", d.instruction},
                               {"line", d.location.line},
                               {"holds", d.holds},
                               {"sharding", d.sharding},
                               {"device", d.device},
                               {"devices_wrong", d.devices_wrong},
                               {"local_index", d.mismatch.local_index},
                               {"expected", d.mismatch.expected},
                               {"actual", d.mismatch.actual}};
    }
  }
  j["xla_end_to_end"] = Execution(o.xla_end_to_end);
  j["interpreter_vs_xla"] = Execution(o.interpreter_vs_xla);
  j["cost"] = nullptr;
  const HloModule* costed = o.as_written != nullptr ? o.as_written.get() : o.partitioned.get();
  if (costed != nullptr) {
    const analysis::ModuleCost cost = analysis::CostOfModule(*costed, num_partitions);
    j["cost"] = {{"collectives", cost.total.collectives},
                 {"collective_permutes", cost.total.collective_permutes},
                 {"max_recv_bytes", cost.total.max_recv_bytes},
                 {"max_send_bytes", cost.total.max_send_bytes}};
  }
  j["notes"] = o.notes;
  j["received_changes"] = o.received_changes;
  j["warnings"] = o.self_report.warnings;
  j["partitioner_notes"] = o.self_report.notes;
  j["shrunk"] = o.shrink_note;
  j["reproduce"] = reproduce;
  // Every judge that ran or was asked for (check/judges.h), and the lint judge's chains.
  nlohmann::json judges = nlohmann::json::array();
  for (const check::JudgeRecord& record : o.judges) {
    judges.push_back({{"judge", record.judge},
                      {"verdict", VerdictName(record.verdict)},
                      {"detail", record.detail},
                      {"seconds", record.seconds},
                      {"ran", record.ran}});
  }
  j["judges"] = std::move(judges);
  nlohmann::json chains = nlohmann::json::array();
  for (const check::CheaperChain& chain : o.cheaper_chains) {
    chains.push_back(
        {{"pattern", chain.pattern}, {"message", chain.message}, {"proposal", chain.proposal}});
  }
  j["cheaper_chains"] = std::move(chains);
  return j;
}

void CheckPage::Add(const check::CheckOutcome& o, const std::string& reproduce,
                    int64_t num_partitions) {
  const std::string word = VerdictWord(o.status);
  const std::string spec = o.partitioner_spec.empty() ? "reference" : o.partitioner_spec;
  std::string s = absl::StrCat("<section class=\"outcome\" data-partitioner=\"", Escape(spec),
                               "\" data-verdict=\"", word, "\">\n<h2>", Escape(spec),
                               ": <span class=\"verdict ", word, "\">", word, "</span></h2>\n");
  if (!o.self_report.name.empty()) {
    absl::StrAppend(&s, "<p class=\"note\">partitioner: ", Escape(o.self_report.name), " ",
                    Escape(o.self_report.version), "</p>\n");
  }
  if (!o.message.empty()) absl::StrAppend(&s, "<p>", Escape(o.message), "</p>\n");
  if (o.oracle_ran) {
    const oracle::EquivReport& r = o.report;
    if (r.device >= 0) {
      absl::StrAppend(
          &s, "<p id=\"first-wrong\">first wrong device: <b>", r.device, "</b> at global index [",
          absl::StrJoin(r.mismatch.global_index, ","), "]: expected ", Escape(r.mismatch.expected),
          ", got ", Escape(r.mismatch.actual), "</p>\n<h3>Wrong devices (", r.wrong_devices.size(),
          " of ", r.num_devices, ")</h3>\n", WrongDevicesSvg(r.wrong_devices, r.num_devices));
    }
    if (r.first_divergence.has_value()) {
      const oracle::Divergence& d = *r.first_divergence;
      absl::StrAppend(&s, "<p id=\"first-divergence\">first divergence: <code>",
                      Escape(d.instruction), "</code> (line ", d.location.line,
                      ") should hold <code>", Escape(d.holds), "</code> under <code>",
                      Escape(d.sharding), "</code>; wrong on ", d.devices_wrong, " devices</p>\n");
    }
    absl::StrAppend(&s, "<h3>Oracle</h3>\n<pre>", Escape(oracle::FormatEquivReport(r)), "</pre>\n");
  }
  for (const auto* e : {&o.xla_end_to_end, &o.interpreter_vs_xla}) {
    if (!e->has_value()) continue;
    absl::StrAppend(&s, "<p>", e == &o.xla_end_to_end ? "XLA end to end" : "interpreter vs XLA",
                    ": <span class=\"verdict ", VerdictName((*e)->verdict), "\">",
                    VerdictName((*e)->verdict), "</span> ", Escape((*e)->detail), "</p>\n");
  }
  const HloModule* costed = o.as_written != nullptr ? o.as_written.get() : o.partitioned.get();
  if (costed != nullptr) {
    const analysis::ModuleCost cost = analysis::CostOfModule(*costed, num_partitions);
    absl::StrAppend(&s, "<h3>Cost</h3>\n<table class=\"cost\">", kCostHeader,
                    CostRow(spec, cost.total), "</table>\n");
    summary_rows_.push_back(CostRow(spec, cost.total));
    absl::StrAppend(&s, "<h3>Collective chain of the partitioned program</h3>\n",
                    CollectiveChainSvg(*o.partitioned, num_partitions));
  }
  for (const std::string& note : o.notes)
    absl::StrAppend(&s, "<p class=\"note\">note: ", Escape(note), "</p>\n");
  absl::StrAppend(&s, "<p>reproduce: <code>", Escape(reproduce), "</code></p>\n</section>\n");
  sections_.push_back(std::move(s));
}

std::string CheckPage::Html() const {
  std::string body = absl::StrCat("<h1>spmdcheck check <code>", Escape(path_), "</code></h1>\n");
  if (summary_rows_.size() > 1) {
    absl::StrAppend(&body, "<h2>Costs</h2>\n<table class=\"cost\">", kCostHeader,
                    absl::StrJoin(summary_rows_, ""), "</table>\n");
  }
  absl::StrAppend(&body, absl::StrJoin(sections_, "\n"));
  return Page(absl::StrCat("check ", path_), body);
}

absl::Status CheckPage::Write(const std::string& file) const {
  return base::WriteFile(file, Html());
}

std::string LintPageHtml(const lint::LintReport& report, const HloModule& module) {
  std::string body = absl::StrCat(
      "<h1>spmdcheck lint <code>", Escape(report.path), "</code></h1>\n<p>", report.chains,
      " chains examined on ", report.num_partitions, " devices: ", report.proved(),
      " proved finding(s), ", report.incorrect(), " incorrect chain(s).</p>\n");
  const std::string overall = report.proved() + report.incorrect() > 0 ? "fails" : "holds";
  absl::StrAppend(&body, "<p>verdict: <span class=\"verdict ", overall, "\" id=\"verdict\">",
                  overall == "fails" ? "findings" : "no finding", "</span></p>\n");
  int64_t index = 0;
  for (const lint::Finding& f : report.findings) {
    const std::string status(lint::FindingStatusName(f.status));
    absl::StrAppend(&body, "<section class=\"finding\" data-status=\"", status, "\" data-rule=\"",
                    Escape(f.rule), "\">\n<h2>", report.path.empty() ? "" : Escape(report.path),
                    f.first_line > 0 ? absl::StrCat(":", f.first_line) : "",
                    " <span class=\"verdict ", status, "\">", status, "</span> [", Escape(f.rule),
                    "]</h2>\n<p>", Escape(f.message), "</p>\n");
    if (!f.global_meaning.empty()) {
      absl::StrAppend(&body, "<p>global meaning: <code>", Escape(f.global_meaning),
                      "</code></p>\n");
    }
    absl::StrAppend(&body, "<table class=\"cost\">", kCostHeader, CostRow("before", f.current.flat),
                    f.proposed_hlo.empty() ? "" : CostRow("after", f.proposed.flat));
    if (f.current.topology.has_value() && f.proposed.topology.has_value()) {
      absl::StrAppend(&body, CostRow("before (topology)", *f.current.topology),
                      CostRow("after (topology)", *f.proposed.topology));
    }
    absl::StrAppend(&body, "</table>\n");
    if (f.cause.has_value()) {
      absl::StrAppend(
          &body, "<p class=\"hint\">hint: change the sharding of <code>", Escape(f.cause->holds),
          "</code> (instruction <code>", Escape(f.cause->instruction), "</code>) from <code>",
          Escape(f.cause->sharding), "</code> to <code>", Escape(f.cause->better_sharding),
          "</code>: add a sharding constraint after it in your program.</p>\n");
    }
    absl::StrAppend(&body, "<h3>Chain before</h3>\n",
                    CollectiveChainSvg(module, report.num_partitions, f.instructions));
    if (!f.proposed_hlo.empty()) {
      absl::StatusOr<ParsedModule> proposed = ParseHloModule(f.proposed_hlo);
      if (proposed.ok()) {
        absl::StrAppend(&body, "<h3>Chain after</h3>\n",
                        CollectiveChainSvg(*proposed->module, report.num_partitions));
      }
      absl::StrAppend(&body, "<details><summary>proposed HLO</summary><pre>",
                      Escape(f.proposed_hlo), "</pre></details>\n");
    }
    if (!f.proof.empty()) {
      absl::StrAppend(&body, "<details><summary>proof</summary><pre>", Escape(f.proof),
                      "</pre></details>\n");
    }
    absl::StrAppend(&body, "</section>\n");
    ++index;
  }
  if (index == 0) absl::StrAppend(&body, "<p>No chain a cheaper one replaces.</p>\n");
  for (const std::string& note : report.notes) {
    absl::StrAppend(&body, "<p class=\"note\">note: ", Escape(note), "</p>\n");
  }
  return Page(absl::StrCat("lint ", report.path), body);
}

absl::Status WriteLintPage(const std::string& file, const lint::LintReport& report,
                           const HloModule& module) {
  return base::WriteFile(file, LintPageHtml(report, module));
}

}  // namespace spmdcheck::viz
