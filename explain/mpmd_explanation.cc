// explain for MPMD programs in IFRT IR (explain/mpmd_explanation.h).
#include "explain/mpmd_explanation.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/status.h"

namespace spmdcheck::explain {
namespace {

std::string Where(const IfrtProgram& program, const IfrtLocation& location) {
  return base::SourceLocation(program.path, location.line, location.column);
}

std::string DevicesText(const std::vector<int64_t>& devices) {
  return absl::StrCat("[", absl::StrJoin(devices, ","), "]");
}

// The mesh a call runs on: its `ifrt.mesh_name`, else its devices.
std::string MeshOf(const IfrtOp& call) {
  return call.mesh_name.empty() ? DevicesText(call.devices) : call.mesh_name;
}

// Collects the first counterexample of a check (the rest are counted).
class CheckBuilder {
 public:
  explicit CheckBuilder(std::string name) : name_(std::move(name)) {}
  void Fail(std::string what) {
    if (failures_++ == 0) first_ = std::move(what);
  }
  MpmdCheck Finish(std::string holds_detail) {
    if (failures_ == 0) return MpmdCheck{name_, Verdict::kHolds, std::move(holds_detail)};
    std::string detail = first_;
    if (failures_ > 1) absl::StrAppend(&detail, " (and ", failures_ - 1, " more)");
    return MpmdCheck{name_, Verdict::kFails, std::move(detail)};
  }

 private:
  std::string name_;
  int failures_ = 0;
  std::string first_;
};

bool SameArray(const IfrtArrayType& a, const IfrtArrayType& b) {
  return a.shape == b.shape && a.sharding == b.sharding && a.devices == b.devices;
}

// Values: every operand, control input and returned value is defined before its use, with the
// type it was defined with.
MpmdCheck CheckValues(const IfrtProgram& program) {
  CheckBuilder check("values");
  absl::flat_hash_map<std::string, const IfrtArrayType*> defined;
  std::set<std::string> controls;
  for (size_t k = 0; k < program.param_names.size(); ++k) {
    defined[program.param_names[k]] = &program.param_types[k];
  }
  int64_t uses = 0;
  for (const IfrtOp& op : program.ops) {
    for (size_t k = 0; k < op.operands.size(); ++k) {
      ++uses;
      auto it = defined.find(op.operands[k]);
      if (it == defined.end()) {
        check.Fail(absl::StrCat(Where(program, op.location), ": ", op.operands[k],
                                " is used before it is defined"));
      } else if (!SameArray(*it->second, op.operand_types[k])) {
        check.Fail(absl::StrCat(Where(program, op.location), ": ", op.operands[k], " is ",
                                it->second->ToString(), " where defined but used as ",
                                op.operand_types[k].ToString()));
      }
    }
    for (const std::string& c : op.after) {
      if (!controls.contains(c)) {
        check.Fail(absl::StrCat(Where(program, op.location), ": control input ", c,
                                " is used before it is defined"));
      }
    }
    for (size_t k = 0; k < op.results.size(); ++k) defined[op.results[k]] = &op.result_types[k];
    controls.insert(op.control_result);
  }
  for (const std::string& v : program.returned) {
    if (!defined.contains(v)) {
      check.Fail(absl::StrCat(Where(program, program.return_location), ": returned ", v,
                              " is not defined"));
    }
  }
  return check.Finish(absl::StrCat(uses, " uses of ", defined.size(),
                                   " values: each defined before use, with its type"));
}

// Placement: each call's operands and results live on exactly the call's devices; a mesh name
// always means the same devices; different meshes share no device.
MpmdCheck CheckPlacement(const IfrtProgram& program) {
  CheckBuilder check("placement");
  std::map<std::string, std::vector<int64_t>> mesh_devices;
  int64_t calls = 0;
  for (const IfrtOp& op : program.ops) {
    if (op.kind != IfrtOpKind::kCall) continue;
    ++calls;
    auto [it, inserted] = mesh_devices.emplace(MeshOf(op), op.devices);
    if (!inserted && it->second != op.devices) {
      check.Fail(absl::StrCat(Where(program, op.location), ": mesh ", MeshOf(op), " runs on ",
                              DevicesText(op.devices), " here but on ", DevicesText(it->second),
                              " before"));
    }
    for (size_t k = 0; k < op.operands.size(); ++k) {
      if (op.operand_types[k].devices != op.devices) {
        check.Fail(absl::StrCat(Where(program, op.location), ": operand ", k, " (", op.operands[k],
                                ") of the call of ", op.callee, " lives on ",
                                DevicesText(op.operand_types[k].devices), ", the call runs on ",
                                DevicesText(op.devices)));
      }
    }
    for (size_t k = 0; k < op.results.size(); ++k) {
      if (op.result_types[k].devices != op.devices) {
        check.Fail(absl::StrCat(Where(program, op.location), ": result ", k, " of the call of ",
                                op.callee, " is placed on ",
                                DevicesText(op.result_types[k].devices), ", the call runs on ",
                                DevicesText(op.devices)));
      }
    }
  }
  std::map<int64_t, std::string> owner;
  for (const auto& [mesh, devices] : mesh_devices) {
    for (int64_t d : devices) {
      auto [it, inserted] = owner.emplace(d, mesh);
      if (!inserted) {
        check.Fail(absl::StrCat("device ", d, " belongs to meshes ", it->second, " and ", mesh));
      }
    }
  }
  return check.Finish(absl::StrCat(calls, " calls on ", mesh_devices.size(),
                                   " disjoint meshes: every operand and result on its call's "
                                   "devices"));
}

// Transfers: a copy keeps shape and layout and only changes devices (same count); a reshard
// keeps the shape.
MpmdCheck CheckTransfers(const IfrtProgram& program) {
  CheckBuilder check("transfers");
  int64_t arrays = 0;
  for (const IfrtOp& op : program.ops) {
    if (op.kind == IfrtOpKind::kCall) continue;
    if (op.operands.size() != op.results.size()) {
      check.Fail(absl::StrCat(Where(program, op.location), ": ", op.operands.size(), " arrays in, ",
                              op.results.size(), " out"));
      continue;
    }
    for (size_t k = 0; k < op.operands.size(); ++k) {
      ++arrays;
      const IfrtArrayType& in = op.operand_types[k];
      const IfrtArrayType& out = op.result_types[k];
      if (!(in.shape == out.shape)) {
        check.Fail(absl::StrCat(Where(program, op.location), ": ", op.operands[k], " is ",
                                in.shape.ToString(), " but arrives as ", out.shape.ToString()));
      } else if (op.kind == IfrtOpKind::kCopyArrays &&
                 (!(in.sharding == out.sharding) || in.devices.size() != out.devices.size())) {
        check.Fail(absl::StrCat(Where(program, op.location), ": CopyArrays of ", op.operands[k],
                                " changes its layout: ", in.ToString(), " -> ", out.ToString()));
      }
    }
  }
  return check.Finish(absl::StrCat(arrays, " arrays moved: shapes kept, copies keep their layout"));
}

// The tile count of each dim of `value` by its Shardy sharding over `mesh`.
std::vector<int64_t> SdyTiles(const IfrtFragmentValue& value, const SdyMesh& mesh) {
  std::vector<int64_t> tiles(value.shape.dimensions().size(), 1);
  for (size_t d = 0; d < value.sharding->dims.size() && d < tiles.size(); ++d) {
    for (const SdyAxisRef& ref : value.sharding->dims[d].axes) {
      int64_t size = ref.size;
      if (size == 0) {
        for (const MeshAxis& axis : mesh.axes) {
          if (axis.name == ref.name) size = axis.size;
        }
      }
      tiles[d] *= std::max<int64_t>(size, 1);
    }
  }
  return tiles;
}

// Fragments: every call's callee is defined and takes what the call passes (count and global
// shapes); where the fragment states a sharding for an argument or result, it splits each dim as
// the IFRT array does.
MpmdCheck CheckFragments(const IfrtProgram& program) {
  CheckBuilder check("fragments");
  int64_t compared = 0;
  auto compare = [&](const IfrtOp& op, const std::string& what, const IfrtFragmentValue& value,
                     const IfrtArrayType& array, const SdyMesh& mesh) {
    if (!(value.shape == array.shape)) {
      check.Fail(absl::StrCat(Where(program, op.location), ": ", what, " of ", op.callee, " is ",
                              value.shape.ToString(), ", the call passes ",
                              array.shape.ToString()));
      return;
    }
    if (!value.sharding.has_value()) return;
    ++compared;
    const std::vector<int64_t> tiles = SdyTiles(value, mesh);
    if (tiles != array.sharding.dims) {
      check.Fail(absl::StrCat(Where(program, op.location), ": ", what, " of ", op.callee,
                              " is compiled split ", absl::StrJoin(tiles, "x"), " (",
                              value.sharding->ToString(), ") but the array is split ",
                              absl::StrJoin(array.sharding.dims, "x")));
    }
  };
  for (const IfrtOp& op : program.ops) {
    if (op.kind != IfrtOpKind::kCall) continue;
    auto it = program.fragments.find(op.callee);
    if (it == program.fragments.end()) {
      check.Fail(absl::StrCat(Where(program, op.location), ": calls @", op.callee,
                              ", which the program does not define"));
      continue;
    }
    const IfrtFragment& fragment = it->second;
    if (fragment.args.size() != op.operands.size() ||
        fragment.results.size() != op.results.size()) {
      check.Fail(absl::StrCat(Where(program, op.location), ": @", op.callee, " takes ",
                              fragment.args.size(), " and returns ", fragment.results.size(),
                              " values; the call passes ", op.operands.size(), " and takes ",
                              op.results.size()));
      continue;
    }
    for (size_t k = 0; k < op.operands.size(); ++k) {
      compare(op, absl::StrCat("argument ", k), fragment.args[k], op.operand_types[k],
              fragment.sdy_mesh);
    }
    for (size_t k = 0; k < op.results.size(); ++k) {
      compare(op, absl::StrCat("result ", k), fragment.results[k], op.result_types[k],
              fragment.sdy_mesh);
    }
  }
  return check.Finish(absl::StrCat("every call matches its fragment's signature; ", compared,
                                   " stated shardings split as their arrays"));
}

std::string MicrobatchLabel(const MpmdFragmentName& parts, int64_t microbatch) {
  const std::string direction = parts.direction == "backward" ? "B" : "F";
  return absl::StrCat(parts.stage, " ", direction, microbatch);
}

// The meshes, their schedules (unit-time calls, zero-time transfers) and the fragments' uses.
void Schedule(const IfrtProgram& program, MpmdExplanation& out) {
  absl::flat_hash_map<std::string, int64_t> ready;  // Value -> the step it is ready at.
  absl::flat_hash_map<std::string, int64_t> done;   // Control output -> step.
  std::map<std::string, int64_t> mesh_index;
  std::map<std::string, size_t> fragment_index;
  std::vector<int64_t> mesh_free;
  for (const IfrtOp& op : program.ops) {
    int64_t start = 0;
    for (const std::string& v : op.operands) start = std::max(start, ready[v]);
    for (const std::string& c : op.after) start = std::max(start, done[c]);
    if (op.kind != IfrtOpKind::kCall) {
      for (size_t k = 0; k < op.results.size(); ++k) {
        ready[op.results[k]] = k < op.operands.size() ? ready[op.operands[k]] : start;
      }
      done[op.control_result] = start;
      continue;
    }
    const std::string mesh = MeshOf(op);
    auto [m, new_mesh] = mesh_index.emplace(mesh, out.meshes.size());
    if (new_mesh) {
      out.meshes.push_back(MpmdMeshUse{mesh, op.devices, {}, {}});
      mesh_free.push_back(0);
    }
    auto [f, new_fragment] = fragment_index.emplace(op.callee, out.fragments.size());
    if (new_fragment) {
      MpmdFragmentUse use{op.callee, ParseMpmdFragmentName(op.callee, program.name), mesh, 0, 0};
      if (auto it = program.fragments.find(op.callee); it != program.fragments.end()) {
        use.instructions = it->second.instructions;
      }
      out.fragments.push_back(std::move(use));
    }
    MpmdFragmentUse& fragment = out.fragments[f->second];
    start = std::max(start, mesh_free[m->second]);
    const int64_t microbatch = fragment.parts.first_call + fragment.calls++;
    out.meshes[m->second].schedule.push_back(MpmdScheduledCall{
        op.callee, MicrobatchLabel(fragment.parts, microbatch), microbatch, start});
    mesh_free[m->second] = start + 1;
    for (const std::string& r : op.results) ready[r] = start + 1;
    done[op.control_result] = start + 1;
    out.steps = std::max(out.steps, start + 1);
  }
}

// Which mesh axes split which fragment values (from the fragments' Shardy shardings).
void AxisUses(const IfrtProgram& program, MpmdExplanation& out) {
  for (MpmdMeshUse& mesh : out.meshes) {
    std::map<std::string, size_t> index;
    for (const MpmdFragmentUse& use : out.fragments) {
      if (use.mesh != mesh.name) continue;
      auto it = program.fragments.find(use.name);
      if (it == program.fragments.end()) continue;
      const IfrtFragment& fragment = it->second;
      for (const MeshAxis& axis : fragment.sdy_mesh.axes) {
        if (index.emplace(axis.name, mesh.axes.size()).second) {
          mesh.axes.push_back(MpmdAxisUse{axis.name, axis.size, {}});
        }
      }
      const std::string short_name =
          std::string(absl::StripSuffix(use.name, absl::StrCat(".", program.name)));
      auto note = [&](const std::vector<IfrtFragmentValue>& values, absl::string_view kind) {
        for (size_t k = 0; k < values.size(); ++k) {
          if (!values[k].sharding.has_value()) continue;
          for (size_t d = 0; d < values[k].sharding->dims.size(); ++d) {
            for (const SdyAxisRef& ref : values[k].sharding->dims[d].axes) {
              auto a = index.find(ref.name);
              if (a == index.end()) continue;
              mesh.axes[a->second].splits.push_back(
                  absl::StrCat(short_name, " ", kind, k, " dim ", d));
            }
          }
        }
      };
      note(fragment.args, "arg");
      note(fragment.results, "result");
    }
    // No fragment on the mesh states its mesh: the program's one mesh, when it has the size.
    if (mesh.axes.empty() && program.sdy_meshes.size() == 1) {
      const SdyMesh& only = program.sdy_meshes.front().second;
      int64_t size = 1;
      for (const MeshAxis& axis : only.axes) size *= axis.size;
      if (size == static_cast<int64_t>(mesh.devices.size())) {
        for (const MeshAxis& axis : only.axes) {
          mesh.axes.push_back(MpmdAxisUse{axis.name, axis.size, {}});
        }
      }
    }
  }
}

void Transfers(const IfrtProgram& program, MpmdExplanation& out) {
  std::map<std::vector<int64_t>, std::string> mesh_of_devices;
  for (const MpmdMeshUse& mesh : out.meshes) mesh_of_devices[mesh.devices] = mesh.name;
  auto name = [&](const std::vector<int64_t>& devices) {
    auto it = mesh_of_devices.find(devices);
    return it == mesh_of_devices.end() ? DevicesText(devices) : it->second;
  };
  for (const IfrtOp& op : program.ops) {
    if (op.kind == IfrtOpKind::kCall) continue;
    for (size_t k = 0; k < op.operands.size() && k < op.results.size(); ++k) {
      const IfrtArrayType& to = op.result_types[k];
      MpmdTransfer transfer{
          op.location,      op.kind == IfrtOpKind::kCopyArrays ? "copy" : "reshard",
          op.operands[k],   name(op.operand_types[k].devices),
          name(to.devices), op.operand_types[k].ToString(),
          to.ToString(),    to.ShardBytes() * static_cast<int64_t>(to.devices.size())};
      out.transfer_bytes += transfer.bytes;
      out.transfers.push_back(std::move(transfer));
    }
  }
}

std::string ScheduleKind(const MpmdExplanation& out) {
  bool any_backward = false;
  bool interleaved = false;
  for (const MpmdMeshUse& mesh : out.meshes) {
    bool seen_backward = false;
    for (const MpmdScheduledCall& call : mesh.schedule) {
      const bool backward = absl::StrContains(call.label, " B");
      any_backward |= backward;
      if (backward) seen_backward = true;
      if (!backward && seen_backward) interleaved = true;
    }
  }
  if (!any_backward) return "forward only (no fragment is named backward)";
  if (interleaved) return "forward and backward interleaved (1F1B-like)";
  return "all forward, then all backward on each mesh (GPipe-like)";
}

std::string Answer(const MpmdExplanation& out) {
  std::vector<std::string> meshes;
  std::vector<std::string> intra;
  for (const MpmdMeshUse& mesh : out.meshes) {
    meshes.push_back(absl::StrCat(mesh.name, ": ", mesh.devices.size(), " devices"));
    std::vector<std::string> used;
    for (const MpmdAxisUse& axis : mesh.axes) {
      if (!axis.splits.empty()) used.push_back(axis.axis);
    }
    intra.push_back(used.empty() ? absl::StrCat(mesh.name, " replicated")
                                 : absl::StrCat(mesh.name, " over ", absl::StrJoin(used, ",")));
  }
  return absl::StrCat("inter-op: ", out.stages, " stage", out.stages == 1 ? "" : "s", " over ",
                      out.meshes.size(), " mesh", out.meshes.size() == 1 ? "" : "es", " (",
                      absl::StrJoin(meshes, ", "), "), ", out.microbatches, " microbatch",
                      out.microbatches == 1 ? "" : "es", ", ", out.schedule,
                      "; intra-op within meshes: ", absl::StrJoin(intra, ", "));
}

}  // namespace

MpmdFragmentName ParseMpmdFragmentName(absl::string_view name, absl::string_view program) {
  MpmdFragmentName parts;
  absl::string_view rest = name;
  if (!program.empty()) rest = absl::StripSuffix(rest, absl::StrCat(".", program));
  // `p<k>_` prefix.
  if (absl::StartsWith(rest, "p")) {
    const size_t underscore = rest.find('_');
    int64_t k = 0;
    if (underscore != absl::string_view::npos &&
        absl::SimpleAtoi(rest.substr(1, underscore - 1), &k)) {
      rest = rest.substr(underscore + 1);
    }
  }
  // `_calls<a>to<b>` suffix.
  if (const size_t calls = rest.rfind("_calls"); calls != absl::string_view::npos) {
    absl::string_view range = rest.substr(calls + 6);
    const size_t to = range.find("to");
    int64_t first = 0;
    if (to != absl::string_view::npos && absl::SimpleAtoi(range.substr(0, to), &first)) {
      parts.first_call = first;
      rest = rest.substr(0, calls);
    }
  }
  if (absl::ConsumeSuffix(&rest, "_fwd")) {
    parts.direction = "forward";
  } else if (absl::ConsumeSuffix(&rest, "_bwd")) {
    parts.direction = "backward";
  }
  parts.stage = std::string(rest);
  return parts;
}

Verdict MpmdExplanation::verdict() const {
  Verdict verdict = Verdict::kHolds;
  for (const MpmdCheck& check : checks) {
    if (check.verdict == Verdict::kFails) return Verdict::kFails;
    if (check.verdict == Verdict::kUnknown) verdict = Verdict::kUnknown;
  }
  return verdict;
}

absl::StatusOr<MpmdExplanation> ExplainMpmd(const IfrtProgram& program) {
  MpmdExplanation out;
  out.path = program.path;
  out.module_name = program.name;
  Schedule(program, out);
  if (out.meshes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(program.path, ": @main calls no fragment (no ifrt.Call)"));
  }
  for (const MpmdMeshUse& mesh : out.meshes) {
    out.num_devices += static_cast<int64_t>(mesh.devices.size());
  }
  AxisUses(program, out);
  Transfers(program, out);
  std::set<std::string> stages;
  for (const MpmdFragmentUse& fragment : out.fragments) {
    stages.insert(fragment.parts.stage);
    out.microbatches = std::max(out.microbatches, fragment.parts.first_call + fragment.calls);
  }
  out.stages = static_cast<int64_t>(stages.size());
  out.schedule = ScheduleKind(out);
  int64_t busy = 0;
  for (const MpmdMeshUse& mesh : out.meshes) busy += static_cast<int64_t>(mesh.schedule.size());
  out.idle_fraction =
      1.0 - static_cast<double>(busy) / static_cast<double>(out.steps * out.meshes.size());
  out.checks = {CheckValues(program), CheckPlacement(program), CheckTransfers(program),
                CheckFragments(program)};
  if (!program.other_ops.empty()) {
    out.checks.push_back(MpmdCheck{
        "coverage", Verdict::kUnknown,
        absl::StrCat(program.other_ops.size(),
                     " op(s) of @main this reader does not model: ", program.other_ops.front())});
  }
  out.answer = Answer(out);
  return out;
}

}  // namespace spmdcheck::explain
