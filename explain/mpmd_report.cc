// Text and JSON renderings of an MpmdExplanation (schema in docs/explain.md).
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "explain/mpmd_explanation.h"

namespace spmdcheck::explain {
namespace {

// At most `limit` items, then `... (N more)`.
std::string Capped(const std::vector<std::string>& items, size_t limit) {
  if (items.size() <= limit) return absl::StrJoin(items, ", ");
  std::vector<std::string> head(items.begin(), items.begin() + limit);
  return absl::StrCat(absl::StrJoin(head, ", "), ", ... (", items.size() - limit, " more)");
}

void AppendMesh(const MpmdMeshUse& mesh, std::string& out) {
  std::vector<std::string> axes;
  for (const MpmdAxisUse& axis : mesh.axes) axes.push_back(absl::StrCat(axis.axis, "=", axis.size));
  absl::StrAppend(&out, "mesh ", mesh.name, " (devices ", absl::StrJoin(mesh.devices, ","),
                  axes.empty() ? "" : absl::StrCat("; axes ", absl::StrJoin(axes, ",")),
                  "): ", mesh.schedule.size(), " calls\n");
  for (const MpmdAxisUse& axis : mesh.axes) {
    if (axis.size == 1) continue;
    absl::StrAppend(&out, "  axis ", axis.axis, " (size ", axis.size, "): ",
                    axis.splits.empty() ? "replicated: no fragment value is split over it"
                                        : absl::StrCat("intra-op, splits ", Capped(axis.splits, 6)),
                    "\n");
  }
  std::vector<std::string> order;
  for (const MpmdScheduledCall& call : mesh.schedule) {
    order.push_back(absl::StrCat(call.label, "@", call.start));
  }
  absl::StrAppend(&out, "  order (stage F|B microbatch @ step): ", absl::StrJoin(order, ", "),
                  "\n");
}

}  // namespace

std::string FormatMpmdText(const MpmdExplanation& e) {
  std::string out = absl::StrCat("program: ", e.module_name, " (IFRT, MPMD-partitioned), ",
                                 e.num_devices, " devices in ", e.meshes.size(), " meshes\n\n");
  for (const MpmdMeshUse& mesh : e.meshes) AppendMesh(mesh, out);
  absl::StrAppend(&out, "\nfragments (", e.fragments.size(), "):\n");
  for (const MpmdFragmentUse& f : e.fragments) {
    absl::StrAppend(&out, "  ", f.name, ": stage ", f.parts.stage,
                    f.parts.direction.empty() ? "" : absl::StrCat(" ", f.parts.direction), " on ",
                    f.mesh, ", ", f.calls, " call", f.calls == 1 ? "" : "s", ", ", f.instructions,
                    " ops\n");
  }
  absl::StrAppend(&out, "\ntransfers (", e.transfers.size(),
                  "), bytes received in all: ", e.transfer_bytes, "\n");
  constexpr size_t kShown = 8;
  for (size_t k = 0; k < e.transfers.size() && k < kShown; ++k) {
    const MpmdTransfer& t = e.transfers[k];
    absl::StrAppend(&out, "  line ", t.location.line, ": ", t.kind, " ", t.value, " ", t.from_mesh,
                    " -> ", t.to_mesh, " (", t.from_layout, " -> ", t.to_layout, "), ", t.bytes,
                    " B\n");
  }
  if (e.transfers.size() > kShown) {
    absl::StrAppend(&out, "  ... (", e.transfers.size() - kShown, " more)\n");
  }
  absl::StrAppend(&out, "\nchecks:\n");
  for (const MpmdCheck& check : e.checks) {
    absl::StrAppend(&out, "  ", check.name, ": ", VerdictName(check.verdict), ": ", check.detail,
                    "\n");
  }
  absl::StrAppend(&out, "\npipeline: ", e.stages, " stages, ", e.microbatches, " microbatch",
                  e.microbatches == 1 ? "" : "es", ", ", e.schedule, "; ", e.steps,
                  " steps with unit-time fragments, ",
                  absl::StrFormat("%.0f%%", 100 * e.idle_fraction), " of mesh-steps idle\n");
  for (const std::string& note : e.notes) absl::StrAppend(&out, "note: ", note, "\n");
  absl::StrAppend(&out, "answer: ", e.answer, "\n");
  return out;
}

std::string FormatMpmdJson(const MpmdExplanation& e) {
  nlohmann::ordered_json meshes = nlohmann::ordered_json::array();
  for (const MpmdMeshUse& mesh : e.meshes) {
    nlohmann::ordered_json axes = nlohmann::ordered_json::array();
    for (const MpmdAxisUse& axis : mesh.axes) {
      axes.push_back({{"name", axis.axis}, {"size", axis.size}, {"splits", axis.splits}});
    }
    nlohmann::ordered_json schedule = nlohmann::ordered_json::array();
    for (const MpmdScheduledCall& call : mesh.schedule) {
      schedule.push_back({{"fragment", call.fragment},
                          {"label", call.label},
                          {"microbatch", call.microbatch},
                          {"step", call.start}});
    }
    meshes.push_back(
        {{"name", mesh.name}, {"devices", mesh.devices}, {"axes", axes}, {"schedule", schedule}});
  }
  nlohmann::ordered_json fragments = nlohmann::ordered_json::array();
  for (const MpmdFragmentUse& f : e.fragments) {
    fragments.push_back({{"name", f.name},
                         {"stage", f.parts.stage},
                         {"direction", f.parts.direction},
                         {"mesh", f.mesh},
                         {"calls", f.calls},
                         {"ops", f.instructions}});
  }
  nlohmann::ordered_json transfers = nlohmann::ordered_json::array();
  for (const MpmdTransfer& t : e.transfers) {
    transfers.push_back({{"line", t.location.line},
                         {"kind", t.kind},
                         {"value", t.value},
                         {"from", t.from_mesh},
                         {"to", t.to_mesh},
                         {"from_layout", t.from_layout},
                         {"to_layout", t.to_layout},
                         {"bytes", t.bytes}});
  }
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  for (const MpmdCheck& c : e.checks) {
    checks.push_back({{"name", c.name}, {"verdict", VerdictName(c.verdict)}, {"detail", c.detail}});
  }
  nlohmann::ordered_json json = {{"schema", "spmdcheck-explain-mpmd/1"},
                                 {"path", e.path},
                                 {"module", e.module_name},
                                 {"num_devices", e.num_devices},
                                 {"meshes", meshes},
                                 {"fragments", fragments},
                                 {"transfers", transfers},
                                 {"transfer_bytes", e.transfer_bytes},
                                 {"stages", e.stages},
                                 {"microbatches", e.microbatches},
                                 {"schedule", e.schedule},
                                 {"steps", e.steps},
                                 {"idle_fraction", e.idle_fraction},
                                 {"checks", checks},
                                 {"notes", e.notes},
                                 {"answer", e.answer},
                                 {"verdict", VerdictName(e.verdict())}};
  return json.dump(2) + "\n";
}

}  // namespace spmdcheck::explain
