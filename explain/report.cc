// Text, JSON and HTML renderings of an Explanation (schema in docs/explain.md).
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "explain/explain.h"

namespace spmdcheck::explain {
namespace {

absl::string_view StrengthName(int strength) {
  switch (strength) {
    case 1:
      return "weak";
    case 2:
      return "medium";
    default:
      return "strong";
  }
}

std::string RolesText(const std::vector<Role>& roles) {
  if (roles.empty()) return "unused";
  std::vector<std::string> names;
  for (Role r : roles) names.push_back(std::string(RoleName(r)));
  return absl::StrJoin(names, " + ");
}

std::string Millis(double ms) { return absl::StrFormat("%.1f ms", ms); }

std::string BytesText(const AxisExplanation& ax) {
  return absl::StrCat(
      ax.bytes_per_step,
      ax.bytes_exact ? "" : " (at least: loops with unknown trip counts counted once)");
}

std::string UseText(const CollectiveUse& c) {
  std::string times;
  if (c.executions < 0) {
    times = absl::StrCat(" in loop ", c.loop, ", trips unknown");
  } else if (!c.loop.empty()) {
    times = absl::StrCat(" x", c.executions, " (loop ", c.loop, ")");
  }
  return absl::StrCat(c.instruction, " (", c.opcode, " over ", c.over, ", ", c.bytes, " B", times,
                      ")");
}

std::string Escape(absl::string_view s) {
  return absl::StrReplaceAll(s, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

nlohmann::json CheckJson(const PipelineCheck& c) {
  nlohmann::json j;
  j["name"] = c.name;
  j["claim"] = c.claim;
  j["verdict"] = std::string(VerdictName(c.result.verdict));
  j["counterexample"] = c.result.counterexample;
  j["reason"] = c.result.reason;
  j["millis"] = c.millis;
  return j;
}

}  // namespace

std::string FormatText(const Explanation& e) {
  std::string out;
  absl::StrAppend(&out, "module: ", e.module_name, " (", e.partitioned ? "partitioned" : "global",
                  "), ", e.num_devices, " devices\n");
  absl::StrAppend(&out, "mesh: ", e.mesh, " (", e.mesh_source, ")\n");
  for (const AxisExplanation& ax : e.axes) {
    absl::StrAppend(&out, "\naxis ", ax.name, " (size ", ax.size, ", device stride ", ax.stride,
                    "): ", RolesText(ax.roles), "\n");
    for (const Evidence& ev : ax.evidence) {
      absl::StrAppend(&out, "  [", StrengthName(ev.strength), "] ", RoleName(ev.role), ": ",
                      ev.text);
      if (!ev.instructions.empty()) {
        absl::StrAppend(&out, ": ", absl::StrJoin(ev.instructions, ", "));
      }
      absl::StrAppend(&out, "\n");
    }
    if (ax.collectives.empty()) {
      absl::StrAppend(&out, "  collectives: none\n");
    } else {
      std::vector<std::string> uses;
      for (const CollectiveUse& c : ax.collectives) uses.push_back(UseText(c));
      absl::StrAppend(&out, "  collectives (", ax.collectives.size(),
                      "): ", absl::StrJoin(uses, ", "), "\n");
    }
    absl::StrAppend(&out, "  bytes received per device per step: ", BytesText(ax), "\n");
    absl::StrAppend(
        &out, "  sharded values (", ax.sharded_value_count, ")",
        ax.sharded_values.empty() ? "" : ": ", absl::StrJoin(ax.sharded_values, ", "),
        ax.sharded_value_count > static_cast<int64_t>(ax.sharded_values.size()) ? ", ..." : "",
        "\n");
  }
  for (const PipelineExplanation& p : e.pipelines) {
    absl::StrAppend(&out, "\npipeline over ", p.axis, ": ", p.stages, " stages");
    if (p.loop.empty()) {
      absl::StrAppend(&out, ": ", p.schedule, "\n");
    } else {
      absl::StrAppend(&out, ", loop ", p.loop, ", ",
                      p.trips.has_value() ? absl::StrCat(*p.trips) : std::string("unknown"),
                      " trips, ",
                      p.micro_batches > 0 ? absl::StrCat(p.micro_batches) : std::string("unknown"),
                      " micro-batches\n");
      absl::StrAppend(&out, "  schedule (trip 0): ", p.schedule.empty() ? "-" : p.schedule, "\n");
    }
    for (const std::string& ev : p.evidence) absl::StrAppend(&out, "  ", ev, "\n");
    for (const PipelineCheck& c : p.checks) {
      absl::StrAppend(&out, "  check ", c.name, ": ", smt::FormatProofResult(c.result), " (",
                      Millis(c.millis), ")\n    claim: ", c.claim, "\n");
    }
  }
  absl::StrAppend(&out, "\ncollectives: ", e.collectives,
                  ", bytes received per device per step: ", e.bytes_per_step, "\n");
  for (const std::string& note : e.notes) absl::StrAppend(&out, "note: ", note, "\n");
  absl::StrAppend(&out, "answer: ", e.answer, "\n");
  return out;
}

std::string FormatJson(const Explanation& e) {
  nlohmann::json j;
  j["path"] = e.path;
  j["module"] = e.module_name;
  j["partitioned"] = e.partitioned;
  j["num_devices"] = e.num_devices;
  j["mesh"] = {{"text", e.mesh}, {"source", e.mesh_source}};
  j["axes"] = nlohmann::json::array();
  for (const AxisExplanation& ax : e.axes) {
    nlohmann::json a;
    a["name"] = ax.name;
    a["size"] = ax.size;
    a["stride"] = ax.stride;
    a["roles"] = nlohmann::json::array();
    for (Role r : ax.roles) a["roles"].push_back(std::string(RoleKey(r)));
    a["evidence"] = nlohmann::json::array();
    for (const Evidence& ev : ax.evidence) {
      a["evidence"].push_back({{"role", std::string(RoleKey(ev.role))},
                               {"strength", ev.strength},
                               {"text", ev.text},
                               {"instructions", ev.instructions}});
    }
    a["collectives"] = nlohmann::json::array();
    for (const CollectiveUse& c : ax.collectives) {
      a["collectives"].push_back({{"instruction", c.instruction},
                                  {"opcode", c.opcode},
                                  {"over", c.over},
                                  {"bytes", c.bytes},
                                  {"executions", c.executions},
                                  {"loop", c.loop}});
    }
    a["bytes_per_step"] = ax.bytes_per_step;
    a["bytes_exact"] = ax.bytes_exact;
    a["sharded_values"] = ax.sharded_values;
    a["sharded_value_count"] = ax.sharded_value_count;
    j["axes"].push_back(std::move(a));
  }
  j["pipelines"] = nlohmann::json::array();
  for (const PipelineExplanation& p : e.pipelines) {
    nlohmann::json pj;
    pj["axis"] = p.axis;
    pj["stages"] = p.stages;
    pj["loop"] = p.loop;
    pj["trips"] = p.trips.has_value() ? nlohmann::json(*p.trips) : nlohmann::json(nullptr);
    pj["micro_batches"] = p.micro_batches;
    pj["schedule"] = p.schedule;
    pj["evidence"] = p.evidence;
    pj["checks"] = nlohmann::json::array();
    for (const PipelineCheck& c : p.checks) pj["checks"].push_back(CheckJson(c));
    j["pipelines"].push_back(std::move(pj));
  }
  j["collectives"] = e.collectives;
  j["bytes_per_step"] = e.bytes_per_step;
  j["notes"] = e.notes;
  j["answer"] = e.answer;
  j["verdict"] = std::string(VerdictName(e.verdict()));
  return j.dump(2) + "\n";
}

std::string FormatHtml(const Explanation& e) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>spmdcheck "
      "explain: " +
      Escape(e.module_name) +
      "</title>\n<style>\nbody{font-family:sans-serif;margin:2em;max-width:70em}\n"
      "table{border-collapse:collapse;margin:1em 0}\ntd,th{border:1px solid #999;padding:4px "
      "8px;vertical-align:top;text-align:left}\nth{background:#eee}\n.proved{color:#060}\n"
      ".refuted{color:#a00}\n.unknown{color:#a60}\ncode{font-size:90%}\n"
      ".answer{font-size:120%;font-weight:bold;border:2px solid #333;padding:0.5em}\n</style>\n"
      "</head>\n<body>\n";
  absl::StrAppend(&out, "<h1>", Escape(e.module_name), "</h1>\n<p>",
                  e.partitioned ? "partitioned" : "global", " module, ", e.num_devices,
                  " devices; mesh <code>", Escape(e.mesh), "</code> (", Escape(e.mesh_source),
                  ")</p>\n<p class=\"answer\">", Escape(e.answer), "</p>\n");
  absl::StrAppend(&out,
                  "<h2>Axes</h2>\n<table>\n<tr><th>axis</th><th>size</th><th>roles</th>"
                  "<th>evidence</th><th>collectives</th><th>bytes received per device per "
                  "step</th><th>sharded values</th></tr>\n");
  for (const AxisExplanation& ax : e.axes) {
    std::string evidence;
    for (const Evidence& ev : ax.evidence) {
      absl::StrAppend(&evidence, "<li>[", StrengthName(ev.strength), "] ",
                      Escape(RoleName(ev.role)), ": ", Escape(ev.text),
                      ev.instructions.empty() ? "" : ": <code>",
                      Escape(absl::StrJoin(ev.instructions, ", ")),
                      ev.instructions.empty() ? "" : "</code>", "</li>");
    }
    std::string uses;
    for (const CollectiveUse& c : ax.collectives) {
      absl::StrAppend(&uses, "<li><code>", Escape(UseText(c)), "</code></li>");
    }
    absl::StrAppend(&out, "<tr><td>", Escape(ax.name), "</td><td>", ax.size, "</td><td>",
                    Escape(RolesText(ax.roles)), "</td><td><ul>", evidence, "</ul></td><td><ul>",
                    uses, "</ul></td><td>", Escape(BytesText(ax)), "</td><td>",
                    ax.sharded_value_count, ": <code>",
                    Escape(absl::StrJoin(ax.sharded_values, ", ")), "</code></td></tr>\n");
  }
  absl::StrAppend(&out, "</table>\n");
  for (const PipelineExplanation& p : e.pipelines) {
    absl::StrAppend(&out, "<h2>Pipeline over ", Escape(p.axis), ": ", p.stages,
                    " stages</h2>\n<ul>\n");
    if (!p.loop.empty()) {
      absl::StrAppend(&out, "<li>loop <code>", Escape(p.loop), "</code>, ",
                      p.trips.has_value() ? absl::StrCat(*p.trips) : std::string("unknown"),
                      " trips, ", p.micro_batches,
                      " micro-batches</li>\n<li>schedule (trip 0): ", Escape(p.schedule),
                      "</li>\n");
    }
    for (const std::string& ev : p.evidence) absl::StrAppend(&out, "<li>", Escape(ev), "</li>\n");
    absl::StrAppend(&out, "</ul>\n");
    if (!p.checks.empty()) {
      absl::StrAppend(
          &out, "<table>\n<tr><th>check</th><th>claim</th><th>result</th><th>time</th></tr>\n");
      for (const PipelineCheck& c : p.checks) {
        const char* cls = c.result.verdict == Verdict::kHolds   ? "proved"
                          : c.result.verdict == Verdict::kFails ? "refuted"
                                                                : "unknown";
        absl::StrAppend(&out, "<tr><td>", Escape(c.name), "</td><td>", Escape(c.claim),
                        "</td><td class=\"", cls, "\">", Escape(smt::FormatProofResult(c.result)),
                        "</td><td>", Millis(c.millis), "</td></tr>\n");
      }
      absl::StrAppend(&out, "</table>\n");
    }
  }
  absl::StrAppend(&out, "<p>", e.collectives,
                  " collectives; bytes received per device per step: ", e.bytes_per_step, "</p>\n");
  if (!e.notes.empty()) {
    absl::StrAppend(&out, "<h2>Notes</h2>\n<ul>\n");
    for (const std::string& n : e.notes) absl::StrAppend(&out, "<li>", Escape(n), "</li>\n");
    absl::StrAppend(&out, "</ul>\n");
  }
  absl::StrAppend(&out, "</body>\n</html>\n");
  return out;
}

}  // namespace spmdcheck::explain
