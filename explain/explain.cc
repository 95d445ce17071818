#include "explain/explain.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "explain/pipeline.h"
#include "explain/roles.h"

namespace spmdcheck::explain {
namespace {

constexpr size_t kMaxListedValues = 6;

std::string PartsText(const RecoveredMesh& mesh, const std::vector<AxisPart>& parts) {
  std::vector<std::string> names;
  for (const AxisPart& p : parts) names.push_back(mesh.PartName(p));
  return absl::StrJoin(names, ",");
}

std::string Plural(int64_t n, absl::string_view one, absl::string_view many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

// How a device-level claim is checked: Z3, or device by device past the table limit.
std::string HowChecked(int64_t devices, bool tables) {
  if (tables && devices > kMaxZ3TableDevices) {
    return absl::StrCat(" [checked on each of the ", devices, " devices]");
  }
  return " [Z3, every device]";
}

PipelineExplanation ExplainPipeline(const ProgramFacts& facts, const PipelineFinding& p,
                                    const ExplainOptions& options) {
  const RecoveredMesh& mesh = facts.mesh();
  PipelineExplanation out;
  out.axis = mesh.axes()[p.axis].name;
  out.stages = mesh.axes()[p.axis].size;
  if (p.loop == nullptr) {
    out.schedule = p.loop_without_rotation != nullptr
                       ? absl::StrCat("loop ", p.loop_without_rotation->name(),
                                      " moves the stages without a rotation along ", out.axis,
                                      " (no collective-permute): nothing to check")
                       : std::string("no loop in this module: nothing to check");
    out.evidence.push_back(
        absl::StrCat("stage-stacked values: ", absl::StrJoin(p.stacked_values, ", ")));
    return out;
  }
  out.loop = p.loop->name();
  if (const LoopFact* loop = facts.LoopOf(p.loop)) out.trips = loop->trips;
  if (!p.rotations.empty()) {
    std::vector<std::string> names;
    for (const HloInstruction* r : p.rotations) names.push_back(r->name());
    out.evidence.push_back(
        absl::StrCat("rotations along ", out.axis, ": ", absl::StrJoin(names, ", ")));
  } else {
    out.evidence.push_back(
        absl::StrCat("no collective-permute along ", out.axis,
                     " in the loop: the stages move some other way (the schedule run shows how)"));
  }
  {
    std::vector<std::string> names;
    for (const StageOp& s : p.stage_ops) {
      names.push_back(absl::StrCat(s.op->name(), " (", s.op->operand(s.state_operand)->name(),
                                   " dim ", s.state_dim, " x ", s.weight_param->name(), " via ",
                                   s.op->operand(s.weight_operand)->name(), " dim ", s.weight_dim,
                                   ")"));
    }
    out.evidence.push_back(absl::StrCat("stage ops: ", absl::StrJoin(names, ", ")));
  }
  if (!p.stage_state.empty()) {
    out.evidence.push_back(
        absl::StrCat("stage-split loop state: ", absl::StrJoin(p.stage_state, ", ")));
  }
  if (!p.bubble_selects.empty()) {
    std::vector<std::string> names;
    for (const HloInstruction* s : p.bubble_selects) names.push_back(s->name());
    out.evidence.push_back(
        absl::StrCat("selects on partition-id in the loop: ", absl::StrJoin(names, ", ")));
  }
  // The schedule first: it says which rotations must wrap.
  const absl::Time schedule_start = absl::Now();
  ScheduleRun run = RunSchedule(facts, p);
  const double schedule_ms = absl::ToDoubleMilliseconds(absl::Now() - schedule_start);
  out.schedule = run.schedule;
  out.micro_batches = run.micro_batches;
  for (const HloInstruction* r : p.rotations) {
    if (!r->attrs().source_target_pairs.has_value()) continue;
    const SourceTargetPairs& pairs = *r->attrs().source_target_pairs;
    auto dir_it = run.direction.find(r);
    const int dir =
        dir_it != run.direction.end() ? dir_it->second : RotationDirection(mesh, p.axis, pairs);
    const bool wrap_read = run.wrap_read.contains(r) && run.wrap_read.at(r);
    const WrapPolicy wrap = wrap_read ? WrapPolicy::kRequired : WrapPolicy::kOptional;
    PipelineCheck check;
    check.name = "rotation";
    check.claim = absl::StrCat(
        r->name(), " sends stage s's output to stage s", dir > 0 ? "+1" : "-1", " along ", out.axis,
        " on every device (other coordinates kept); the last stage ",
        wrap_read ? "wraps to the first (the schedule reads the wrapped slot)"
                  : "may wrap or send nothing (the schedule overwrites the wrapped slot)");
    absl::StrAppend(&check.claim, HowChecked(mesh.num_devices(), true));
    const absl::Time start = absl::Now();
    check.result = ProveRotation(mesh, p.axis, pairs, dir, wrap, options.timeout_ms);
    check.millis = absl::ToDoubleMilliseconds(absl::Now() - start);
    out.checks.push_back(std::move(check));
  }
  std::set<std::string> seen;
  for (const StageOp& s : p.stage_ops) {
    const std::string key = absl::StrCat(s.state_sharding.ToString(false), s.state_dim, "|",
                                         s.weight_sharding.ToString(false), s.weight_dim);
    if (!seen.insert(key).second) continue;
    PipelineCheck check;
    check.name = "own-weights";
    check.claim = absl::StrCat(
        s.op->name(), ": the device holding stage s of ", s.op->operand(s.state_operand)->name(),
        " holds stage s of ", s.op->operand(s.weight_operand)->name(), " (the weights, parameter ",
        s.weight_param->name(), "), and s is its coordinate along ", out.axis);
    absl::StrAppend(&check.claim,
                    HowChecked(mesh.num_devices(),
                               s.state_sharding.Canonical().tile_assignment().is_iota() &&
                                       s.weight_sharding.Canonical().tile_assignment().is_iota()
                                   ? false
                                   : true));
    const absl::Time start = absl::Now();
    check.result = ProveOwnWeights(mesh, p.axis, s.state_sharding, s.state_dim, s.weight_sharding,
                                   s.weight_dim, options.timeout_ms);
    check.millis = absl::ToDoubleMilliseconds(absl::Now() - start);
    out.checks.push_back(std::move(check));
  }
  PipelineCheck order;
  order.name = "micro-batch-order";
  order.claim = absl::StrCat(
      "running the loop's slot-level schedule for ",
      out.trips.has_value() ? absl::StrCat(*out.trips) : std::string("its"),
      " trips, every one of ",
      run.micro_batches > 0 ? absl::StrCat(run.micro_batches) : std::string("the"),
      " micro-batches passes the ", out.stages,
      " stages in order and is collected (or left in the final state) before it is overwritten");
  order.result = run.result;
  order.millis = schedule_ms;
  out.checks.push_back(std::move(order));
  return out;
}

}  // namespace

absl::string_view RoleKey(Role role) {
  switch (role) {
    case Role::kPipeline:
      return "pipeline";
    case Role::kData:
      return "data";
    case Role::kFsdp:
      return "fsdp";
    case Role::kTensor:
      return "tensor";
    case Role::kSequence:
      return "sequence";
    case Role::kExpert:
      return "expert";
  }
  return "data";
}

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kPipeline:
      return "pipeline";
    case Role::kData:
      return "data parallel";
    case Role::kFsdp:
      return "FSDP/ZeRO";
    case Role::kTensor:
      return "tensor/model parallel";
    case Role::kSequence:
      return "sequence/context parallel";
    case Role::kExpert:
      return "expert parallel";
  }
  return "data parallel";
}

Verdict Explanation::verdict() const {
  bool unknown = false;
  for (const PipelineExplanation& p : pipelines) {
    for (const PipelineCheck& c : p.checks) {
      if (c.result.verdict == Verdict::kFails) return Verdict::kFails;
      if (c.result.verdict == Verdict::kUnknown) unknown = true;
    }
  }
  return unknown ? Verdict::kUnknown : Verdict::kHolds;
}

absl::StatusOr<Explanation> Explain(const ModuleSource& input, const ModuleSource* global,
                                    const ExplainOptions& options) {
  const HloModule& module = *input.module;
  if (module.entry() == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(module.source_path(), ": no entry computation"));
  }
  const int64_t n = module.num_partitions();
  if (global != nullptr && global->module->num_partitions() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("--global has num_partitions=", global->module->num_partitions(),
                     " but the module has ", n));
  }
  Explanation out;
  out.path = module.source_path();
  out.module_name = module.name();
  out.num_devices = n;
  // The mesh.
  std::optional<NamedMesh> named = options.mesh;
  if (!named.has_value()) named = MeshFromModuleText(input.text, n);
  if (!named.has_value() && global != nullptr) named = MeshFromModuleText(global->text, n);
  MeshObservations observations;
  {
    Annotations annotations(input);
    CollectMeshObservations(module, annotations, observations);
    if (global != nullptr)
      CollectMeshObservations(*global->module, Annotations(*global), observations);
  }
  absl::StatusOr<RecoveredMesh> mesh = RecoveredMesh::Recover(n, observations, named);
  if (!mesh.ok()) return mesh.status();
  out.mesh = mesh->ToString();
  out.mesh_source = mesh->source();
  if (mesh->conflicting_observations() > 0) {
    out.notes.push_back(absl::StrCat(
        mesh->conflicting_observations(),
        " sharding(s) or group list(s) factor the devices differently from the mesh chosen; they "
        "are described as irregular"));
  }
  ProgramFacts facts(input, global, *mesh);
  out.partitioned = facts.partitioned();
  if (!out.partitioned) {
    out.notes.push_back(
        "the module is a global (pre-partitioning) program: roles come from its shardings; the "
        "only collectives are those written in manual regions (run `spmdcheck partition` to see a "
        "partitioner's)");
  }
  bool any_value = false, all_manual = true;
  for (const ValueFact& v : facts.values()) {
    any_value = true;
    all_manual = all_manual && v.manual;
  }
  if (any_value && all_manual) {
    out.notes.push_back(
        "every annotated value is manual (a shard_map or manual region): the program partitions "
        "itself, so its collectives are all the axes say");
  }
  const PipelineDetection detection = DetectPipelines(facts);
  const std::vector<std::vector<Evidence>> evidence = InferRoles(facts, detection);
  // Per axis.
  for (int a = 0; a < mesh->num_axes(); ++a) {
    AxisExplanation ax;
    ax.name = mesh->axes()[a].name;
    ax.size = mesh->axes()[a].size;
    ax.stride = mesh->axes()[a].stride;
    ax.evidence = evidence[a];
    std::stable_sort(ax.evidence.begin(), ax.evidence.end(),
                     [](const Evidence& x, const Evidence& y) { return x.strength > y.strength; });
    ax.roles = RankRoles(ax.evidence);
    std::set<std::string> listed;
    for (const ValueFact& v : facts.values()) {
      if (!v.regular || v.manual) continue;
      for (size_t k = 0; k < v.dim_axes.size(); ++k) {
        for (const AxisPart& p : v.dim_axes[k]) {
          if (p.axis != a) continue;
          const std::string base = v.in_global ? absl::StrCat(v.name, " (global)") : v.name;
          if (!listed.insert(base).second) continue;
          ++ax.sharded_value_count;
          if (ax.sharded_values.size() < kMaxListedValues) {
            ax.sharded_values.push_back(absl::StrCat(
                base, " dim ", k,
                p.size == ax.size ? std::string() : absl::StrCat(" (", mesh->PartName(p), ")")));
          }
        }
      }
    }
    out.axes.push_back(std::move(ax));
  }
  std::vector<std::string> irregular;
  for (const CollectiveFact& c : facts.collectives()) {
    ++out.collectives;
    const int64_t times = c.executions < 0 ? 1 : c.executions;
    out.bytes_per_step += c.bytes * times;
    if (!c.axes.has_value()) {
      irregular.push_back(c.instruction->name());
      continue;
    }
    std::set<int> axes;
    for (const AxisPart& p : *c.axes) axes.insert(p.axis);
    for (int a : axes) {
      AxisExplanation& ax = out.axes[a];
      CollectiveUse use;
      use.instruction = c.instruction->name();
      use.opcode = std::string(HloOpcodeString(c.instruction->opcode()));
      use.over = PartsText(*mesh, *c.axes);
      use.bytes = c.bytes;
      use.executions = c.executions;
      if (c.loop != nullptr) use.loop = c.loop->name();
      ax.bytes_per_step += c.bytes * times;
      if (c.executions < 0) ax.bytes_exact = false;
      ax.collectives.push_back(std::move(use));
    }
  }
  if (!irregular.empty()) {
    out.notes.push_back(
        absl::StrCat(Plural(static_cast<int64_t>(irregular.size()), "collective", "collectives"),
                     " over device groups that are no mesh axes: ",
                     absl::StrJoin(irregular.begin(),
                                   irregular.begin() + std::min<size_t>(irregular.size(), 6), ", "),
                     irregular.size() > 6 ? ", ..." : ""));
  }
  for (const PipelineFinding& p : detection.pipelines) {
    out.pipelines.push_back(ExplainPipeline(facts, p, options));
  }
  // The one-line answer.
  std::vector<std::string> intra;
  std::vector<std::string> pipes;
  for (const AxisExplanation& ax : out.axes) {
    if (ax.roles.empty()) continue;
    if (ax.roles[0] == Role::kPipeline) {
      pipes.push_back(absl::StrCat(ax.size, " pipeline stages over ", ax.name));
      continue;
    }
    std::vector<std::string> names;
    for (Role r : ax.roles) names.push_back(std::string(RoleName(r)));
    intra.push_back(absl::StrCat(absl::StrJoin(names, " + "), " over ", ax.name));
  }
  const std::string intra_text =
      intra.empty() ? std::string() : absl::StrCat(" (", absl::StrJoin(intra, ", "), ")");
  if (n == 1) {
    out.answer = "one device: no parallelism";
  } else if (pipes.empty()) {
    out.answer =
        absl::StrCat("intra-op only", intra.empty() ? " (no axis splits a value)" : intra_text);
  } else {
    out.answer = absl::StrCat("intra-op plus ", absl::StrJoin(pipes, " and "), intra_text);
  }
  return out;
}

}  // namespace spmdcheck::explain
