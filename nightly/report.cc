#include "nightly/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/file.h"
#include "viz/html.h"

namespace spmdcheck::nightly {
namespace {

std::string Kind(const FindingEntry& e) {
  if (absl::StrContains(e.signature, ".wasteful.")) return "wasteful (correct)";
  return e.bug_claim ? "bug claim" : "to investigate";
}

// Text for XML 1.0: escaped, and without the control characters it does not allow.
std::string Xml(absl::string_view text) {
  std::string clean;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\n' && c != '\t' && c != '\r') continue;
    clean += c;
  }
  return viz::Escape(clean);
}

std::string Cell(absl::string_view text) {
  std::string s = absl::StrReplaceAll(text, {{"|", "\\|"}, {"\n", " "}});
  return s;
}

std::string Number(double v) {
  if (v < 0) return "-";
  if (std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15) {
    return absl::StrFormat("%.0f", v);
  }
  return absl::StrFormat("%.1f", v);
}

// series name -> value per night (nullopt: no value that night).
using Series = std::map<std::string, std::vector<std::optional<double>>>;

Series TrendSeries(const nlohmann::json& trends, const std::string& metric) {
  Series series;
  const size_t n = trends.size();
  for (size_t i = 0; i < n; ++i) {
    const nlohmann::json values = trends[i].value(metric, nlohmann::json::object());
    for (const auto& [name, value] : values.items()) {
      if (!value.is_number()) continue;
      auto& values = series[name];
      values.resize(n);
      values[i] = value.get<double>();
    }
  }
  for (auto& [name, values] : series) values.resize(n);
  return series;
}

// A line plot as inline SVG: one polyline per series over the nights, a point per value.
std::string TrendSvg(const nlohmann::json& trends, const std::string& metric,
                     const std::string& title, const std::string& unit, size_t max_series = 10) {
  Series series = TrendSeries(trends, metric);
  if (series.size() > max_series) {
    // The series with the largest values.
    std::vector<std::pair<double, std::string>> ranked;
    for (const auto& [name, values] : series) {
      double total = 0;
      for (const auto& v : values) total += v.value_or(0);
      ranked.push_back({-total, name});
    }
    std::sort(ranked.begin(), ranked.end());
    Series top;
    for (size_t i = 0; i < max_series; ++i) top[ranked[i].second] = series[ranked[i].second];
    series = top;
  }
  const size_t n = trends.size();
  const double width = 640, height = 220, left = 56, right = 170, top = 28, bottom = 36;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  double max_value = 0;
  for (const auto& [name, values] : series) {
    for (const auto& v : values) max_value = std::max(max_value, v.value_or(0));
  }
  if (max_value <= 0) max_value = 1;
  max_value *= 1.1;
  auto x = [&](size_t i) { return left + (n <= 1 ? plot_w / 2 : plot_w * i / (n - 1)); };
  auto y = [&](double v) { return top + plot_h - plot_h * v / max_value; };
  std::string svg = absl::StrFormat(
      "<svg class=\"trend\" data-metric=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\">\n"
      "<title>%s</title>\n<text x=\"%.0f\" y=\"16\" font-size=\"13\">%s</text>\n",
      viz::Escape(metric), width, height, width, height, viz::Escape(title), left,
      viz::Escape(title + (unit.empty() ? "" : " (" + unit + ")")));
  // Axes, the top value and the night labels.
  absl::StrAppendFormat(
      &svg,
      "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#888\"/>\n"
      "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#888\"/>\n"
      "<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\" text-anchor=\"end\">%s</text>\n"
      "<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\" text-anchor=\"end\">0</text>\n",
      left, top, left, top + plot_h, left, top + plot_h, left + plot_w, top + plot_h, left - 4,
      y(max_value / 1.1) + 4, viz::Escape(Number(max_value / 1.1)), left - 4, top + plot_h + 4);
  for (size_t i = 0; i < n; ++i) {
    absl::StrAppendFormat(&svg,
                          "<text class=\"night\" x=\"%.1f\" y=\"%.0f\" font-size=\"10\" "
                          "text-anchor=\"middle\">%s</text>\n",
                          x(i), height - 14, viz::Escape(trends[i].value("night", std::string())));
  }
  if (series.empty()) {
    absl::StrAppendFormat(&svg,
                          "<text class=\"empty\" x=\"%.0f\" y=\"%.0f\" font-size=\"12\">no data "
                          "yet</text>\n",
                          left + 10, top + plot_h / 2);
  }
  int index = 0;
  for (const auto& [name, values] : series) {
    const std::string color = viz::GroupColor(index);
    std::vector<std::string> points;
    std::string dots;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!values[i].has_value()) continue;
      points.push_back(absl::StrFormat("%.1f,%.1f", x(i), y(*values[i])));
      absl::StrAppendFormat(
          &dots,
          "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\" "
          "data-night=\"%s\" data-value=\"%s\"><title>%s %s: %s</title></circle>\n",
          x(i), y(*values[i]), color, viz::Escape(trends[i].value("night", std::string())),
          Number(*values[i]), viz::Escape(name),
          viz::Escape(trends[i].value("night", std::string())), Number(*values[i]));
    }
    absl::StrAppendFormat(&svg,
                          "<g class=\"series\" data-series=\"%s\">\n<polyline fill=\"none\" "
                          "stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>\n%s"
                          "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                          "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">%s</text>\n</g>\n",
                          viz::Escape(name), color, absl::StrJoin(points, " "), dots,
                          left + plot_w + 12, top + 14.0 * index, color, left + plot_w + 26,
                          top + 14.0 * index + 9, viz::Escape(name.substr(0, 24)));
    ++index;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace

nlohmann::json BuildReport(const std::vector<NightRecord>& nights, const FindingsDb& db,
                           const std::string& night_id, int exit_code) {
  const NightRecord* night = nullptr;
  for (const NightRecord& n : nights) {
    if (n.id == night_id) night = &n;
  }
  nlohmann::json report = {
      {"schema", "spmdcheck-nightly-report/1"}, {"generated", UtcNow()}, {"exit_code", exit_code}};
  nlohmann::json targets = nlohmann::json::array();
  if (night != nullptr) {
    bool found = false;
    std::vector<std::string> canary_found;
    if (const TargetRun* canary = night->Find("canary")) {
      canary_found = canary->signatures;
      for (const std::string& s : canary->signatures) {
        if (night->canary_signature.empty() || s == night->canary_signature) found = true;
      }
    }
    report["night"] = {{"id", night->id},
                       {"seed", night->seed},
                       {"status", night->status},
                       {"started", night->started},
                       {"finished", night->finished},
                       {"budget_seconds", night->budget_seconds},
                       {"spent_seconds", night->SpentSeconds()}};
    if (night->Find("canary") != nullptr) {
      report["night"]["canary"] = {{"bug", night->canary_bug},
                                   {"expected_signature", night->canary_signature},
                                   {"found", found},
                                   {"signatures", canary_found}};
    }
    for (const TargetRun& t : night->targets) {
      nlohmann::json j = t.ToJson();
      j.erase("pid");
      targets.push_back(j);
    }
  }
  report["targets"] = targets;
  // Findings: those seen tonight first (new before known), then the others of the database.
  std::vector<const FindingEntry*> entries;
  for (const auto& [signature, e] : db.entries()) entries.push_back(&e);
  auto order = [&](const FindingEntry* e) {
    const bool tonight = e->counts_by_night.count(night_id) > 0;
    return std::make_tuple(!tonight, !e->NewIn(night_id), e->signature);
  };
  std::sort(entries.begin(), entries.end(),
            [&](const FindingEntry* a, const FindingEntry* b) { return order(a) < order(b); });
  nlohmann::json findings = nlohmann::json::array();
  int64_t tonight_count = 0, new_count = 0, new_claims = 0;
  for (const FindingEntry* e : entries) {
    auto it = e->counts_by_night.find(night_id);
    const bool tonight = it != e->counts_by_night.end();
    const bool is_new = e->NewIn(night_id);
    tonight_count += tonight;
    new_count += is_new;
    new_claims += is_new && e->bug_claim;
    nlohmann::json j = e->ToJson();
    j.erase("counts_by_night");
    j["status"] = is_new ? "new" : "known";
    j["kind"] = Kind(*e);
    j["seen_tonight"] = tonight;
    j["count_tonight"] = tonight ? it->second : 0;
    findings.push_back(j);
  }
  report["findings"] = findings;
  int64_t unknown = 0;
  for (const nlohmann::json& t : targets) {
    const std::string status = t.value("status", std::string());
    if (status == "unknown" || status == "error") ++unknown;
  }
  report["summary"] = {{"findings_tonight", tonight_count},
                       {"new", new_count},
                       {"known", tonight_count - new_count},
                       {"new_bug_claims", new_claims},
                       {"findings_total", static_cast<int64_t>(db.entries().size())},
                       {"unknown_targets", unknown}};
  // Trends over the nights up to this one.
  nlohmann::json trends = nlohmann::json::array();
  for (const NightRecord& n : nights) {
    nlohmann::json cps = nlohmann::json::object(), acceptance = nlohmann::json::object(),
                   coverage = nlohmann::json::object(), execs = nlohmann::json::object(),
                   per_signature = nlohmann::json::object();
    for (const TargetRun& t : n.targets) {
      if (t.kind == "campaign" && t.cases > 0) {
        cps[t.name] = t.cases_per_second;
        if (t.acceptance_rate >= 0) acceptance[t.name] = t.acceptance_rate;
      }
      if (t.kind == "libfuzzer" && t.coverage >= 0) {
        coverage[t.partitioner] = t.coverage;
        execs[t.partitioner] = t.execs_per_second;
      }
    }
    for (const auto& [signature, e] : db.entries()) {
      auto it = e.counts_by_night.find(n.id);
      if (it != e.counts_by_night.end()) per_signature[signature] = it->second;
    }
    trends.push_back({{"night", n.id},
                      {"status", n.status},
                      {"cases_per_second", cps},
                      {"acceptance_rate", acceptance},
                      {"coverage", coverage},
                      {"execs_per_second", execs},
                      {"findings", per_signature}});
    if (n.id == night_id) break;
  }
  report["trends"] = trends;
  return report;
}

std::string ReportMarkdown(const nlohmann::json& report) {
  const nlohmann::json night = report.value("night", nlohmann::json::object());
  const nlohmann::json summary = report.value("summary", nlohmann::json::object());
  std::string md = absl::StrFormat("# spmdcheck nightly: %s\n\n", night.value("id", "?"));
  absl::StrAppendFormat(
      &md, "**%s** — seed %d, %s of %ss, started %s%s. Exit code %d.\n\n",
      night.value("status", "?"), night.value("seed", uint64_t{0}),
      Number(night.value("spent_seconds", 0.0)), Number(night.value("budget_seconds", 0.0)),
      night.value("started", ""),
      night.value("finished", "").empty() ? "" : ", finished " + night.value("finished", ""),
      report.value("exit_code", 0));
  if (night.contains("canary")) {
    const nlohmann::json& c = night["canary"];
    absl::StrAppendFormat(&md, "Canary: injected bug `%s`, expected `%s`: **%s**.\n\n",
                          c.value("bug", ""), c.value("expected_signature", "any bug claim"),
                          c.value("found", false) ? "found" : "MISSED (night broken)");
  }
  absl::StrAppendFormat(&md, "Findings tonight: %d (%d new, %d known); %d in the database.\n\n",
                        summary.value("findings_tonight", 0), summary.value("new", 0),
                        summary.value("known", 0), summary.value("findings_total", 0));
  md +=
      "## Targets\n\n| target | status | seconds | cases | cases/s | accepted | execs/s | "
      "coverage | corpus | findings |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const nlohmann::json& t : report.value("targets", nlohmann::json::array())) {
    const std::string status = t.value("status", "");
    const std::string reason = t.value("reason", "");
    const double acceptance = t.value("acceptance_rate", -1.0);
    const bool libfuzzer = t.value("kind", "") == "libfuzzer";
    absl::StrAppendFormat(
        &md, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", Cell(t.value("name", "")),
        Cell(absl::StrCat(status, reason.empty() ? "" : ": ", reason)),
        Number(t.value("spent_seconds", 0.0)),
        libfuzzer ? "-" : Number(static_cast<double>(t.value("cases", int64_t{0}))),
        libfuzzer ? "-" : Number(t.value("cases_per_second", 0.0)),
        acceptance < 0 ? "-" : absl::StrFormat("%.1f%%", 100 * acceptance),
        libfuzzer ? Number(t.value("execs_per_second", 0.0)) : "-",
        Number(static_cast<double>(t.value("coverage", int64_t{-1}))),
        Number(static_cast<double>(t.value("corpus_files", int64_t{-1}))),
        t.value("signatures", nlohmann::json::array()).size());
  }
  md +=
      "\n## Findings\n\n| signature | status | kind | tonight | total | nights | first "
      "night | last night | targets | folder |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const nlohmann::json& f : report.value("findings", nlohmann::json::array())) {
    const std::string known_as = f.value("known_as", "");
    absl::StrAppendFormat(
        &md, "| `%s` | %s | %s | %d | %d | %d | %s | %s | %s | %s |\n",
        Cell(f.value("signature", "")),
        f.value("status", "") == "new" ? "**new**"
                                       : (known_as.empty() ? "known" : "known: " + known_as),
        f.value("kind", ""), f.value("count_tonight", 0), f.value("count", 0),
        f.value("nights_seen", 0), f.value("first_night", ""), f.value("last_night", ""),
        Cell(absl::StrJoin(f.value("targets", std::vector<std::string>{}), ", ")),
        Cell(f.value("folder", "")));
  }
  md +=
      "\n## Trends\n\n| night | status | cases/s | acceptance | coverage | findings |\n"
      "|---|---|---|---|---|---|\n";
  for (const nlohmann::json& t : report.value("trends", nlohmann::json::array())) {
    auto join = [&](const char* key, bool percent) {
      std::vector<std::string> parts;
      const nlohmann::json values = t.value(key, nlohmann::json::object());
      for (const auto& [name, v] : values.items()) {
        const double value = v.get<double>();
        parts.push_back(name + " " +
                        (percent ? absl::StrFormat("%.1f%%", 100 * value) : Number(value)));
      }
      return parts.empty() ? std::string("-") : absl::StrJoin(parts, ", ");
    };
    int64_t findings = 0;
    const nlohmann::json per_signature = t.value("findings", nlohmann::json::object());
    for (const auto& [name, v] : per_signature.items()) {
      findings += v.get<int64_t>() > 0;
    }
    absl::StrAppendFormat(&md, "| %s | %s | %s | %s | %s | %d |\n", t.value("night", ""),
                          t.value("status", ""), join("cases_per_second", false),
                          join("acceptance_rate", true), join("coverage", false), findings);
  }
  return md;
}

std::string ReportHtml(const nlohmann::json& report) {
  const nlohmann::json night = report.value("night", nlohmann::json::object());
  const nlohmann::json summary = report.value("summary", nlohmann::json::object());
  const std::string status = night.value("status", "?");
  const std::string verdict_class = status == "complete"
                                        ? (report.value("exit_code", 0) == 0 ? "holds" : "unknown")
                                        : (status == "broken" ? "fails" : "unknown");
  std::string body = absl::StrFormat(
      "<h1>spmdcheck nightly: %s</h1>\n<section class=\"outcome\" data-status=\"%s\" "
      "data-exit-code=\"%d\"><span class=\"verdict %s\">%s</span> seed %d, %ss of %ss, started "
      "%s</section>\n",
      viz::Escape(night.value("id", "?")), viz::Escape(status), report.value("exit_code", 0),
      verdict_class, viz::Escape(status), night.value("seed", uint64_t{0}),
      Number(night.value("spent_seconds", 0.0)), Number(night.value("budget_seconds", 0.0)),
      viz::Escape(night.value("started", "")));
  if (night.contains("canary")) {
    const nlohmann::json& c = night["canary"];
    absl::StrAppendFormat(
        &body,
        "<p id=\"canary\" data-found=\"%s\">Canary: injected bug <code>%s</code>, "
        "expected <code>%s</code>: <span class=\"verdict %s\">%s</span></p>\n",
        c.value("found", false) ? "true" : "false", viz::Escape(c.value("bug", "")),
        viz::Escape(c.value("expected_signature", "any bug claim")),
        c.value("found", false) ? "holds" : "fails",
        c.value("found", false) ? "found" : "missed: night broken");
  }
  absl::StrAppendFormat(&body,
                        "<p>Findings tonight: %d (<b>%d new</b>, %d known); %d in the "
                        "database.</p>\n",
                        summary.value("findings_tonight", 0), summary.value("new", 0),
                        summary.value("known", 0), summary.value("findings_total", 0));
  body +=
      "<h2>Findings</h2>\n<table id=\"findings\">\n<tr><th>signature</th><th>status</th>"
      "<th>kind</th><th>tonight</th><th>total</th><th>nights</th><th>first night</th><th>last "
      "night</th><th>targets</th><th>folder</th></tr>\n";
  for (const nlohmann::json& f : report.value("findings", nlohmann::json::array())) {
    const std::string st = f.value("status", "");
    const std::string known_as = f.value("known_as", "");
    absl::StrAppendFormat(
        &body,
        "<tr class=\"finding-row\" data-signature=\"%s\" data-status=\"%s\" data-tonight=\"%s\">"
        "<td><code>%s</code></td><td><span class=\"verdict %s\">%s</span></td><td>%s</td>"
        "<td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td><code>%s</code>"
        "</td></tr>\n",
        viz::Escape(f.value("signature", "")), st, f.value("seen_tonight", false) ? "1" : "0",
        viz::Escape(f.value("signature", "")), st == "new" ? "fails" : "holds",
        viz::Escape(st == "new" ? "new" : (known_as.empty() ? "known" : "known: " + known_as)),
        viz::Escape(f.value("kind", "")), f.value("count_tonight", 0), f.value("count", 0),
        f.value("nights_seen", 0), viz::Escape(f.value("first_night", "")),
        viz::Escape(f.value("last_night", "")),
        viz::Escape(absl::StrJoin(f.value("targets", std::vector<std::string>{}), ", ")),
        viz::Escape(f.value("folder", "")));
  }
  body += "</table>\n";
  body +=
      "<h2>Targets</h2>\n<table id=\"targets\">\n<tr><th>target</th><th>status</th>"
      "<th>seconds</th><th>cases</th><th>cases/s</th><th>accepted</th><th>execs/s</th>"
      "<th>coverage</th><th>corpus</th><th>command</th></tr>\n";
  for (const nlohmann::json& t : report.value("targets", nlohmann::json::array())) {
    const std::string st = t.value("status", "");
    const std::string reason = t.value("reason", "");
    const double acceptance = t.value("acceptance_rate", -1.0);
    const bool libfuzzer = t.value("kind", "") == "libfuzzer";
    absl::StrAppendFormat(
        &body,
        "<tr data-target=\"%s\" data-status=\"%s\"><td>%s</td><td><span class=\"verdict %s\">%s"
        "</span>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
        "<td>%s</td><td><details><summary>command</summary><code>%s</code></details></td></tr>\n",
        viz::Escape(t.value("name", "")), viz::Escape(st), viz::Escape(t.value("name", "")),
        st == "done" ? "holds" : (st == "error" ? "fails" : "unknown"), viz::Escape(st),
        reason.empty() ? std::string() : absl::StrCat(" ", viz::Escape(reason)),
        Number(t.value("spent_seconds", 0.0)),
        libfuzzer ? "-" : Number(static_cast<double>(t.value("cases", int64_t{0}))),
        libfuzzer ? "-" : Number(t.value("cases_per_second", 0.0)),
        acceptance < 0 ? "-" : absl::StrFormat("%.1f%%", 100 * acceptance),
        libfuzzer ? Number(t.value("execs_per_second", 0.0)) : "-",
        Number(static_cast<double>(t.value("coverage", int64_t{-1}))),
        Number(static_cast<double>(t.value("corpus_files", int64_t{-1}))),
        viz::Escape(t.value("command", "")));
  }
  body += "</table>\n<h2>Trends</h2>\n<div id=\"trends\">\n";
  const nlohmann::json trends = report.value("trends", nlohmann::json::array());
  body += TrendSvg(trends, "cases_per_second", "campaign cases per second", "cases/s");
  body += TrendSvg(trends, "coverage", "libFuzzer coverage of the kept corpus", "edges");
  body += TrendSvg(trends, "findings", "cases per finding signature", "cases");
  // Acceptance as a percentage.
  nlohmann::json percent = trends;
  for (nlohmann::json& t : percent) {
    for (auto& [name, v] : t["acceptance_rate"].items()) v = 100 * v.get<double>();
  }
  body += TrendSvg(percent, "acceptance_rate", "partitionings accepted (XLA acceptance rate)", "%");
  body += "</div>\n";
  return viz::Page(absl::StrCat("spmdcheck nightly ", night.value("id", "")), body);
}

std::string ReportJunit(const nlohmann::json& report) {
  const nlohmann::json night = report.value("night", nlohmann::json::object());
  const std::string id = night.value("id", "");
  const std::string timestamp = night.value("started", "");
  // The targets: the canary fails a broken night; a target that could not run is skipped (not
  // a pass), one whose run failed is an error.
  std::string targets_xml;
  int t_tests = 0, t_failures = 0, t_errors = 0, t_skipped = 0;
  for (const nlohmann::json& t : report.value("targets", nlohmann::json::array())) {
    ++t_tests;
    const std::string name = t.value("name", "");
    const std::string status = t.value("status", "");
    const std::string reason = t.value("reason", "");
    absl::StrAppendFormat(
        &targets_xml, "    <testcase classname=\"nightly.%s.targets\" name=\"%s\" time=\"%.3f\">\n",
        Xml(id), Xml(name), t.value("spent_seconds", 0.0));
    if (name == "canary" && night.contains("canary") && !night["canary"].value("found", false)) {
      ++t_failures;
      absl::StrAppendFormat(
          &targets_xml,
          "      <failure type=\"broken-night\" message=\"the canary did not "
          "find its injected bug %s\">expected %s; found: %s %s</failure>\n",
          Xml(night["canary"].value("bug", "")),
          Xml(night["canary"].value("expected_signature", "a bug claim")),
          Xml(absl::StrJoin(night["canary"].value("signatures", std::vector<std::string>{}), ", ")),
          Xml(reason));
    } else if (status == "unknown" || status == "pending" || status == "running") {
      ++t_skipped;
      absl::StrAppendFormat(&targets_xml, "      <skipped message=\"%s\"/>\n",
                            Xml(absl::StrCat(status, reason.empty() ? "" : ": ", reason)));
    } else if (status == "error") {
      ++t_errors;
      absl::StrAppendFormat(&targets_xml, "      <error message=\"%s\"/>\n", Xml(reason));
    }
    absl::StrAppendFormat(&targets_xml, "      <system-out>%s</system-out>\n    </testcase>\n",
                          Xml(t.value("command", "")));
  }
  // A test case per signature: new findings fail; known ones (and those not seen tonight) pass.
  std::string findings_xml;
  int f_tests = 0, f_failures = 0;
  for (const nlohmann::json& f : report.value("findings", nlohmann::json::array())) {
    ++f_tests;
    const std::string signature = f.value("signature", "");
    absl::StrAppendFormat(
        &findings_xml, "    <testcase classname=\"nightly.%s.findings\" name=\"%s\" time=\"0\">\n",
        Xml(id), Xml(signature));
    const std::string detail = absl::StrFormat(
        "%s; %d case(s) tonight, %d in %d night(s); first night %s; targets %s; folder %s\n%s\n%s",
        f.value("kind", ""), f.value("count_tonight", 0), f.value("count", 0),
        f.value("nights_seen", 0), f.value("first_night", ""),
        absl::StrJoin(f.value("targets", std::vector<std::string>{}), ", "), f.value("folder", ""),
        f.value("reproduce", ""), f.value("message", ""));
    if (f.value("status", "") == "new") {
      ++f_failures;
      absl::StrAppendFormat(&findings_xml,
                            "      <failure type=\"new-finding\" message=\"new finding %s (%s)\">"
                            "%s</failure>\n",
                            Xml(signature), Xml(f.value("kind", "")), Xml(detail));
    } else {
      absl::StrAppendFormat(
          &findings_xml, "      <system-out>%s%s</system-out>\n",
          f.value("seen_tonight", false) ? "known, seen tonight: " : "known, not seen tonight: ",
          Xml(detail));
    }
    findings_xml += "    </testcase>\n";
  }
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  absl::StrAppendFormat(&xml,
                        "<testsuites name=\"spmdcheck nightly %s\" tests=\"%d\" failures=\"%d\" "
                        "errors=\"%d\" skipped=\"%d\">\n",
                        Xml(id), t_tests + f_tests, t_failures + f_failures, t_errors, t_skipped);
  absl::StrAppendFormat(&xml,
                        "  <testsuite name=\"nightly.targets\" tests=\"%d\" failures=\"%d\" "
                        "errors=\"%d\" skipped=\"%d\" timestamp=\"%s\">\n%s  </testsuite>\n",
                        t_tests, t_failures, t_errors, t_skipped, Xml(timestamp), targets_xml);
  absl::StrAppendFormat(&xml,
                        "  <testsuite name=\"nightly.findings\" tests=\"%d\" failures=\"%d\" "
                        "errors=\"0\" skipped=\"0\" timestamp=\"%s\">\n%s  </testsuite>\n",
                        f_tests, f_failures, Xml(timestamp), findings_xml);
  xml += "</testsuites>\n";
  return xml;
}

absl::Status WriteReports(const std::string& dir, const nlohmann::json& report) {
  if (absl::Status s = base::WriteFileAtomic(dir + "/report.json", report.dump(2) + "\n");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = base::WriteFileAtomic(dir + "/report.md", ReportMarkdown(report)); !s.ok()) {
    return s;
  }
  if (absl::Status s = base::WriteFileAtomic(dir + "/report.html", ReportHtml(report)); !s.ok()) {
    return s;
  }
  return base::WriteFileAtomic(dir + "/junit.xml", ReportJunit(report));
}

}  // namespace spmdcheck::nightly
