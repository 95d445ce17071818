#include "explain/program_facts.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analysis/cost_model.h"
#include "ir/holds_comment.h"

namespace spmdcheck::explain {
namespace {

bool IsShardingCustomCall(const HloInstruction& h) {
  if (h.opcode() != HloOpcode::kCustomCall || !h.attrs().custom_call_target.has_value()) {
    return false;
  }
  const std::string& t = *h.attrs().custom_call_target;
  return IsShardingAnnotationTarget(t) || t == "SPMDFullToShardShape" ||
         t == "SPMDShardToFullShape";
}

bool IsFullToShard(const HloInstruction& h) {
  return h.opcode() == HloOpcode::kCustomCall && h.attrs().custom_call_target.has_value() &&
         *h.attrs().custom_call_target == "SPMDFullToShardShape";
}

bool IsManualSharding(const HloSharding* s) {
  return s != nullptr && (s->IsManual() || (s->IsTiled() && s->HasManualSubgroup()));
}

// Array leaves of a (possibly tuple) shape with their shardings: (path suffix, shape, sharding).
void ForEachLeaf(
    const Shape& shape, const HloSharding& sharding, const std::string& suffix,
    const std::function<void(const std::string&, const Shape&, const HloSharding&)>& fn) {
  if (shape.IsTuple()) {
    const auto& shapes = shape.tuple_shapes();
    for (size_t i = 0; i < shapes.size(); ++i) {
      HloSharding element = sharding;
      if (sharding.IsTuple()) {
        if (i >= sharding.tuple_elements().size()) return;
        element = sharding.tuple_elements()[i];
      }
      ForEachLeaf(shapes[i], element, absl::StrCat(suffix, "{", i, "}"), fn);
    }
    return;
  }
  if (!shape.IsArray() || sharding.IsTuple()) return;
  fn(suffix, shape, sharding);
}

bool IsDataMovementForWeights(HloOpcode op) {
  switch (op) {
    case HloOpcode::kCopy:
    case HloOpcode::kConvert:
    case HloOpcode::kBitcast:
    case HloOpcode::kReshape:
    case HloOpcode::kTranspose:
    case HloOpcode::kBroadcast:
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllGatherDone:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kSlice:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kReverse:
    case HloOpcode::kPad:
    case HloOpcode::kOptimizationBarrier:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool CountsAsCollective(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectivePermuteStart:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kCollectiveBroadcast:
      return true;
    default:
      return false;
  }
}

Annotations::Annotations(const ModuleSource& source) {
  std::vector<absl::string_view> lines = absl::StrSplit(source.text, '\n');
  for (const auto& comp : source.module->computations()) {
    const auto& all = comp->instructions();
    for (size_t k = 0; k < all.size(); ++k) {
      const HloInstruction* h = all[k].get();
      if (h->sharding().has_value()) {
        map_.emplace(h, std::make_pair(*h->sharding(), false));
        continue;
      }
      const int64_t first = h->location().line;
      if (first <= 0 || lines.empty()) continue;
      int64_t last = first;
      if (k + 1 < all.size()) last = std::max(first, all[k + 1]->location().line - 1);
      for (int64_t line = first; line <= last && line <= static_cast<int64_t>(lines.size());
           ++line) {
        std::optional<HoldsComment> c = ParseHoldsComment(lines[line - 1]);
        if (c.has_value() && c->sharding.has_value()) {
          map_.emplace(h, std::make_pair(*c->sharding, true));
          ++comments_;
          break;
        }
      }
    }
  }
}

const HloSharding* Annotations::Of(const HloInstruction* instruction) const {
  auto it = map_.find(instruction);
  return it == map_.end() ? nullptr : &it->second.first;
}

bool Annotations::FromComment(const HloInstruction* instruction) const {
  auto it = map_.find(instruction);
  return it != map_.end() && it->second.second;
}

bool IsManualCollective(const HloInstruction& h, const Annotations& annotations) {
  if (IsManualSharding(annotations.Of(&h))) return true;
  for (const HloInstruction* o : h.operands()) {
    if (IsFullToShard(*o) || IsManualSharding(annotations.Of(o))) return true;
  }
  return false;
}

bool LooksPartitioned(const HloModule& module, const Annotations& annotations) {
  if (annotations.comment_count() > 0) return true;
  if (module.entry() != nullptr && absl::EndsWith(module.entry()->name(), "_spmd")) return true;
  for (const auto& comp : module.computations()) {
    if (absl::EndsWith(comp->name(), ".spmd")) return true;
    for (const auto& h : comp->instructions()) {
      if (CountsAsCollective(h->opcode()) && !IsManualCollective(*h, annotations)) return true;
    }
  }
  return false;
}

std::vector<std::vector<int64_t>> PartitionGroups(const HloInstruction& h, int64_t n) {
  std::vector<std::vector<int64_t>> groups;
  const bool cross_partition = h.attrs().channel_id.has_value();
  if (!cross_partition) {
    // Cross-replica: with one replica every partition is alone.
    for (int64_t d = 0; d < n; ++d) groups.push_back({d});
    return groups;
  }
  if (h.attrs().replica_groups.has_value()) groups = h.attrs().replica_groups->groups();
  if (groups.empty()) {
    std::vector<int64_t> all(n);
    for (int64_t d = 0; d < n; ++d) all[d] = d;
    groups.push_back(std::move(all));
  }
  return groups;
}

void CollectMeshObservations(const HloModule& module, const Annotations& annotations,
                             MeshObservations& observations) {
  const int64_t n = module.num_partitions();
  for (const auto& comp : module.computations()) {
    for (const auto& h : comp->instructions()) {
      if (const HloSharding* s = annotations.Of(h.get())) {
        const bool in_entry = comp.get() == module.entry();
        const bool anchor =
            (in_entry && (h->opcode() == HloOpcode::kParameter || h.get() == comp->root())) ||
            h->opcode() == HloOpcode::kWhile ||
            (h->opcode() == HloOpcode::kCustomCall &&
             IsShardingAnnotationTarget(h->attrs().custom_call_target.value_or("")));
        ForEachLeaf(
            h->shape(), *s, "", [&](const std::string&, const Shape&, const HloSharding& leaf) {
              if (!leaf.IsTiled() || leaf.HasManualSubgroup()) return;
              observations.arrays.push_back({leaf.tile_assignment(), leaf.TiledDataRank(), anchor});
            });
      }
      if (CountsAsCollective(h->opcode()) && h->opcode() != HloOpcode::kCollectivePermute &&
          h->opcode() != HloOpcode::kCollectivePermuteStart) {
        observations.groups.push_back(PartitionGroups(*h, n));
      }
    }
  }
}

LoopFact AnalyzeLoop(const HloInstruction& loop) {
  LoopFact fact;
  fact.loop = &loop;
  const HloComputation* cond = loop.called_computation("condition");
  const HloComputation* body = loop.called_computation("body");
  // The counter: cond root compare(gte(param, k), constant) (either side).
  if (cond != nullptr && cond->root() != nullptr && cond->root()->opcode() == HloOpcode::kCompare &&
      cond->root()->operand_count() == 2 && cond->root()->attrs().direction.has_value()) {
    const HloInstruction* cmp = cond->root();
    const HloInstruction* a = cmp->operand(0);
    const HloInstruction* b = cmp->operand(1);
    ComparisonDirection dir = *cmp->attrs().direction;
    if (a->opcode() == HloOpcode::kConstant && b->opcode() == HloOpcode::kGetTupleElement) {
      std::swap(a, b);
      switch (dir) {
        case ComparisonDirection::kGt:
          dir = ComparisonDirection::kLt;
          break;
        case ComparisonDirection::kGe:
          dir = ComparisonDirection::kLe;
          break;
        case ComparisonDirection::kLt:
          dir = ComparisonDirection::kGt;
          break;
        case ComparisonDirection::kLe:
          dir = ComparisonDirection::kGe;
          break;
        default:
          break;
      }
    }
    if (a->opcode() == HloOpcode::kGetTupleElement &&
        a->operand(0)->opcode() == HloOpcode::kParameter && b->opcode() == HloOpcode::kConstant &&
        b->literal().has_value() && b->literal()->element_count() == 1 &&
        a->attrs().tuple_index.has_value()) {
      const int64_t k = *a->attrs().tuple_index;
      const int64_t limit = b->literal()->GetInt64(0);
      // Initial value.
      std::optional<int64_t> init;
      const HloInstruction* init_tuple = loop.operand(0);
      if (init_tuple->opcode() == HloOpcode::kTuple && k < init_tuple->operand_count()) {
        const HloInstruction* c = init_tuple->operand(k);
        while (c->opcode() == HloOpcode::kCopy) c = c->operand(0);
        if (c->opcode() == HloOpcode::kConstant && c->literal().has_value() &&
            c->literal()->element_count() == 1) {
          init = c->literal()->GetInt64(0);
        }
      }
      // Step: body root tuple element k = add(gte(param, k), 1).
      bool step_one = false;
      if (body != nullptr && body->root() != nullptr &&
          body->root()->opcode() == HloOpcode::kTuple && k < body->root()->operand_count()) {
        const HloInstruction* next = body->root()->operand(k);
        if (next->opcode() == HloOpcode::kAdd) {
          for (int side = 0; side < 2; ++side) {
            const HloInstruction* x = next->operand(side);
            const HloInstruction* one = next->operand(1 - side);
            if (x->opcode() == HloOpcode::kGetTupleElement && x->attrs().tuple_index == k &&
                x->operand(0)->opcode() == HloOpcode::kParameter &&
                one->opcode() == HloOpcode::kConstant && one->literal().has_value() &&
                one->literal()->element_count() == 1 && one->literal()->GetInt64(0) == 1) {
              step_one = true;
            }
          }
        }
      }
      if (init.has_value() && step_one) {
        fact.counter_index = k;
        fact.counter_init = *init;
        int64_t trips = -1;
        if (dir == ComparisonDirection::kLt || dir == ComparisonDirection::kNe) {
          trips = limit - *init;
        } else if (dir == ComparisonDirection::kLe) {
          trips = limit - *init + 1;
        }
        if (trips >= 0 || dir == ComparisonDirection::kLt || dir == ComparisonDirection::kLe) {
          fact.trips = std::max<int64_t>(trips, 0);
          fact.trip_source =
              absl::StrCat("counter from ", *init, ", ", ComparisonDirectionName(dir), " ", limit);
        }
      }
    }
  }
  if (const RawAttribute* config = loop.FindRawAttribute("backend_config")) {
    const size_t pos = config->text.find("known_trip_count");
    if (pos != std::string::npos) {
      const size_t n = config->text.find("\"n\"", pos);
      if (n != std::string::npos) {
        size_t i = config->text.find_first_of("0123456789", n);
        size_t j = i == std::string::npos ? i : config->text.find_first_not_of("0123456789", i);
        int64_t value = 0;
        if (i != std::string::npos &&
            absl::SimpleAtoi(config->text.substr(i, j == std::string::npos ? j : j - i), &value)) {
          fact.trips = value;
          fact.trip_source = "known_trip_count in backend_config";
        }
      }
    }
  }
  return fact;
}

ProgramFacts::ProgramFacts(const ModuleSource& input, const ModuleSource* global,
                           const RecoveredMesh& mesh)
    : input_(input), global_(global), mesh_(mesh), annotations_(input) {
  if (global_ != nullptr) global_annotations_ = Annotations(*global_);
  partitioned_ = global_ != nullptr || LooksPartitioned(*input_.module, annotations_);
  WalkCalls();
  AddValues(input_, annotations_, false);
  if (global_ != nullptr) AddValues(*global_, global_annotations_, true);
  AddCollectives();
  AddDots(global_ != nullptr ? *global_ : input_,
          global_ != nullptr ? global_annotations_ : annotations_, global_ != nullptr);
}

void ProgramFacts::WalkCalls() {
  const HloComputation* entry = input_.module->entry();
  if (entry == nullptr) return;
  std::vector<const HloComputation*> stack = {entry};
  calls_[entry] = {1, nullptr};
  while (!stack.empty()) {
    const HloComputation* comp = stack.back();
    stack.pop_back();
    const auto [executions, loop] = calls_[comp];
    for (const auto& h : comp->instructions()) {
      if (h->opcode() == HloOpcode::kWhile) {
        LoopFact fact = AnalyzeLoop(*h);
        fact.executions = executions;
        fact.parent_loop = loop;
        const int64_t body_exec =
            executions < 0 || !fact.trips.has_value() ? -1 : executions * *fact.trips;
        for (const HloComputation* c : h->AllCalledComputations()) {
          if (c == nullptr || calls_.contains(c)) continue;
          calls_[c] = {body_exec, h.get()};
          stack.push_back(c);
        }
        if (const HloComputation* body = h->called_computation("body")) {
          loop_of_body_[body] = h.get();
        }
        loops_.push_back(std::move(fact));
        continue;
      }
      for (const HloComputation* c : h->AllCalledComputations()) {
        if (c == nullptr || calls_.contains(c)) continue;
        calls_[c] = {executions, loop};
        stack.push_back(c);
      }
    }
  }
}

const LoopFact* ProgramFacts::LoopOf(const HloInstruction* loop) const {
  for (const LoopFact& l : loops_) {
    if (l.loop == loop) return &l;
  }
  return nullptr;
}

const HloInstruction* ProgramFacts::EnclosingLoop(const HloInstruction* instruction) const {
  auto it = calls_.find(instruction->parent());
  return it == calls_.end() ? nullptr : it->second.second;
}

const HloInstruction* ProgramFacts::LoopWithBody(const HloComputation* body) const {
  auto it = loop_of_body_.find(body);
  return it == loop_of_body_.end() ? nullptr : it->second;
}

std::optional<std::vector<std::vector<AxisPart>>> ProgramFacts::DimAxes(
    const HloSharding& sharding) const {
  if (!sharding.IsTiled() || sharding.HasManualSubgroup()) return std::nullopt;
  const std::string key = sharding.tile_assignment().ToString();
  auto it = dim_axes_memo_.find(key);
  if (it != dim_axes_memo_.end()) return it->second;
  std::optional<std::vector<std::vector<AxisPart>>> out = mesh_.DimAxes(sharding.tile_assignment());
  dim_axes_memo_[key] = out;
  return out;
}

void ProgramFacts::AddLeaf(const HloInstruction* instruction, std::string name, const Shape& shape,
                           const HloSharding& sharding, bool in_global, bool from_comment) {
  ValueFact v;
  v.instruction = instruction;
  v.name = std::move(name);
  v.in_global = in_global;
  v.from_comment = from_comment;
  v.sharding = sharding;
  v.manual = IsManualSharding(&sharding);
  const bool local = !in_global && partitioned_;
  v.global_dims = shape.dimensions();
  if (sharding.IsTiled() && !v.manual) {
    const int64_t rank = sharding.TiledDataRank();
    if (rank != shape.rank()) return;
    if (local) {
      for (int64_t k = 0; k < rank; ++k) v.global_dims[k] *= sharding.tile_assignment().dim(k);
    }
    std::optional<std::vector<std::vector<AxisPart>>> dims = DimAxes(sharding);
    if (dims.has_value()) {
      v.dim_axes.assign(dims->begin(), dims->begin() + rank);
      for (size_t k = rank; k < dims->size(); ++k) {
        v.replicated_over.insert(v.replicated_over.end(), (*dims)[k].begin(), (*dims)[k].end());
      }
    } else {
      v.regular = false;
    }
  } else if (sharding.IsReplicated()) {
    v.dim_axes.assign(shape.rank(), {});
    for (int a = 0; a < mesh_.num_axes(); ++a) {
      v.replicated_over.push_back({a, 1, mesh_.axes()[a].size});
    }
  } else {
    return;
  }
  values_.push_back(std::move(v));
}

void ProgramFacts::AddValues(const ModuleSource& source, const Annotations& annotations,
                             bool in_global) {
  for (const auto& comp : source.module->computations()) {
    for (const auto& h : comp->instructions()) {
      const HloSharding* s = annotations.Of(h.get());
      if (s == nullptr) continue;
      const bool comment = annotations.FromComment(h.get());
      ForEachLeaf(h->shape(), *s, "",
                  [&](const std::string& suffix, const Shape& shape, const HloSharding& leaf) {
                    AddLeaf(h.get(), h->name() + suffix, shape, leaf, in_global, comment);
                  });
    }
  }
}

void ProgramFacts::AddCollectives() {
  const int64_t n = mesh_.num_devices();
  for (const auto& comp : input_.module->computations()) {
    auto call = calls_.find(comp.get());
    if (call == calls_.end()) continue;
    for (const auto& h : comp->instructions()) {
      if (!CountsAsCollective(h->opcode())) continue;
      CollectiveFact c;
      c.instruction = h.get();
      c.executions = call->second.first;
      c.loop = call->second.second;
      c.manual = IsManualCollective(*h, annotations_);
      c.bytes = analysis::CostOfInstruction(*h, n).max_recv_bytes;
      c.axis_moved.assign(mesh_.num_axes(), false);
      if (h->opcode() == HloOpcode::kCollectivePermute ||
          h->opcode() == HloOpcode::kCollectivePermuteStart) {
        std::vector<AxisPart> parts;
        if (h->attrs().source_target_pairs.has_value()) {
          for (const auto& [s, t] : *h->attrs().source_target_pairs) {
            if (s == t || s < 0 || t < 0 || s >= n || t >= n) continue;
            CollectiveFact::Move m{s, t, std::vector<int64_t>(mesh_.num_axes(), 0)};
            for (int a = 0; a < mesh_.num_axes(); ++a) {
              m.delta[a] = mesh_.Coordinate(t, a) - mesh_.Coordinate(s, a);
              if (m.delta[a] != 0) c.axis_moved[a] = true;
            }
            c.moves.push_back(std::move(m));
          }
        }
        for (int a = 0; a < mesh_.num_axes(); ++a) {
          if (c.axis_moved[a]) parts.push_back({a, 1, mesh_.axes()[a].size});
        }
        c.axes = parts;
      } else {
        c.groups = PartitionGroups(*h, n);
        c.axes = mesh_.GroupAxes(c.groups);
        if (c.axes.has_value()) {
          for (const AxisPart& p : *c.axes) c.axis_moved[p.axis] = true;
        }
      }
      collectives_.push_back(std::move(c));
    }
  }
}

const HloSharding* ProgramFacts::AnnotationThrough(const HloInstruction* h) const {
  const bool in_global =
      global_ != nullptr && h->parent() != nullptr && h->parent()->parent() == global_->module;
  const Annotations& ann = in_global ? global_annotations_ : annotations_;
  for (int depth = 0; depth < 16 && h != nullptr; ++depth) {
    if (const HloSharding* s = ann.Of(h)) {
      if (!s->IsTuple()) return s;
      if (h->opcode() != HloOpcode::kGetTupleElement) return nullptr;
    }
    if (h->opcode() == HloOpcode::kCopy || h->opcode() == HloOpcode::kConvert ||
        h->opcode() == HloOpcode::kBitcast || IsShardingCustomCall(*h)) {
      h = h->operand(0);
      continue;
    }
    if (h->opcode() == HloOpcode::kGetTupleElement) {
      // The tuple element's annotation on the tuple-shaped operand.
      const HloSharding* t = ann.Of(h->operand(0));
      if (t != nullptr && t->IsTuple() && h->attrs().tuple_index.has_value() &&
          *h->attrs().tuple_index < static_cast<int64_t>(t->tuple_elements().size())) {
        return &t->tuple_elements()[*h->attrs().tuple_index];
      }
    }
    return nullptr;
  }
  return nullptr;
}

const HloInstruction* ProgramFacts::WeightSource(const HloInstruction* h) const {
  auto it = weight_memo_.find(h);
  if (it != weight_memo_.end()) return it->second;
  weight_memo_[h] = nullptr;  // Cycle guard.
  const HloInstruction* out = nullptr;
  const HloComputation* comp = h->parent();
  const HloModule* module = comp != nullptr ? comp->parent() : nullptr;
  if (h->opcode() == HloOpcode::kParameter) {
    if (module != nullptr && comp == module->entry()) out = h;
  } else if (IsDataMovementForWeights(h->opcode()) || IsShardingCustomCall(*h)) {
    out = WeightSource(h->operand(0));
  } else if (h->opcode() == HloOpcode::kGetTupleElement && h->attrs().tuple_index.has_value()) {
    const HloInstruction* t = h->operand(0);
    const int64_t k = *h->attrs().tuple_index;
    if (t->opcode() == HloOpcode::kTuple && k < t->operand_count()) {
      out = WeightSource(t->operand(k));
    } else if (t->opcode() == HloOpcode::kParameter && comp != nullptr) {
      // Loop state: a weight when the body passes it through unchanged and it enters as one.
      const HloInstruction* loop = nullptr;
      if (module != nullptr) {
        for (const auto& c : module->computations()) {
          for (const auto& w : c->instructions()) {
            if (w->opcode() == HloOpcode::kWhile && w->called_computation("body") == comp) {
              loop = w.get();
            }
          }
        }
      }
      const HloInstruction* root = comp->root();
      if (loop != nullptr && root != nullptr && root->opcode() == HloOpcode::kTuple &&
          k < root->operand_count()) {
        const HloInstruction* back = root->operand(k);
        while (back->opcode() == HloOpcode::kCopy) back = back->operand(0);
        const bool invariant = back->opcode() == HloOpcode::kGetTupleElement &&
                               back->operand(0) == t && back->attrs().tuple_index == k;
        const HloInstruction* init = loop->operand(0);
        if (invariant && init->opcode() == HloOpcode::kTuple && k < init->operand_count()) {
          out = WeightSource(init->operand(k));
        }
      }
    } else if (t->opcode() == HloOpcode::kWhile) {
      const HloInstruction* init = t->operand(0);
      const HloComputation* body = t->called_computation("body");
      if (init->opcode() == HloOpcode::kTuple && k < init->operand_count() && body != nullptr &&
          body->root() != nullptr && body->root()->opcode() == HloOpcode::kTuple &&
          k < body->root()->operand_count()) {
        const HloInstruction* back = body->root()->operand(k);
        if (back->opcode() == HloOpcode::kGetTupleElement &&
            back->operand(0)->opcode() == HloOpcode::kParameter && back->attrs().tuple_index == k) {
          out = WeightSource(init->operand(k));
        }
      }
    }
  }
  weight_memo_[h] = out;
  return out;
}

void ProgramFacts::AddDots(const ModuleSource& source, const Annotations& annotations,
                           bool in_global) {
  for (const auto& comp : source.module->computations()) {
    for (const auto& h : comp->instructions()) {
      const bool dot =
          h->opcode() == HloOpcode::kDot && h->attrs().dot_dimension_numbers.has_value();
      const bool conv = h->opcode() == HloOpcode::kConvolution &&
                        h->attrs().dim_labels.has_value() &&
                        h->attrs().feature_group_count.value_or(1) == 1 &&
                        h->attrs().batch_group_count.value_or(1) == 1;
      if ((!dot && !conv) || h->operand_count() != 2) continue;
      DotFact d;
      d.dot = h.get();
      d.in_global = in_global;
      d.lhs = AnnotationThrough(h->operand(0));
      d.rhs = AnnotationThrough(h->operand(1));
      d.out = annotations.Of(h.get());
      if (d.out != nullptr && d.out->IsTuple()) d.out = nullptr;
      d.lhs_weight = WeightSource(h->operand(0));
      d.rhs_weight = WeightSource(h->operand(1));
      if (!in_global) d.loop = EnclosingLoop(h.get());
      dots_.push_back(d);
    }
  }
}

// ---- IntEvaluator ---------------------------------------------------------------------------

bool IntEvaluator::DependsOnDevice(const HloInstruction* h) const {
  absl::flat_hash_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack = {h};
  while (!stack.empty()) {
    const HloInstruction* x = stack.back();
    stack.pop_back();
    if (!seen.insert(x).second) continue;
    if (x->opcode() == HloOpcode::kPartitionId || x->opcode() == HloOpcode::kReplicaId) {
      return true;
    }
    for (const HloInstruction* o : x->operands()) stack.push_back(o);
  }
  return false;
}

bool IntEvaluator::DependsOnCounter(const HloInstruction* h) const {
  absl::flat_hash_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack = {h};
  while (!stack.empty()) {
    const HloInstruction* x = stack.back();
    stack.pop_back();
    if (!seen.insert(x).second) continue;
    if (x->opcode() == HloOpcode::kGetTupleElement &&
        x->operand(0)->opcode() == HloOpcode::kParameter &&
        x->attrs().tuple_index == counter_index_) {
      return true;
    }
    for (const HloInstruction* o : x->operands()) stack.push_back(o);
  }
  return false;
}

std::optional<int64_t> IntEvaluator::Eval(const HloInstruction* h, int64_t device,
                                          int64_t trip) const {
  return EvalRec(h, device, trip, 0);
}

std::optional<int64_t> IntEvaluator::EvalRec(const HloInstruction* h, int64_t device, int64_t trip,
                                             int depth) const {
  if (depth > 64) return std::nullopt;
  const auto arg = [&](int i) { return EvalRec(h->operand(i), device, trip, depth + 1); };
  switch (h->opcode()) {
    case HloOpcode::kConstant:
      if (h->literal().has_value() && h->literal()->element_count() >= 1 &&
          !IsFloatingType(h->shape().element_type())) {
        // A constant array read as a scalar only when all its elements agree.
        const int64_t v = h->literal()->GetInt64(0);
        for (int64_t i = 1; i < h->literal()->element_count(); ++i) {
          if (h->literal()->GetInt64(i) != v) return std::nullopt;
        }
        return v;
      }
      return std::nullopt;
    case HloOpcode::kPartitionId:
      return device;
    case HloOpcode::kReplicaId:
      return 0;
    case HloOpcode::kGetTupleElement:
      if (h->operand(0)->opcode() == HloOpcode::kParameter &&
          h->attrs().tuple_index == counter_index_ && counter_index_ >= 0) {
        return counter_init_ + trip;
      }
      return std::nullopt;
    case HloOpcode::kConvert:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
    case HloOpcode::kCopy:
    case HloOpcode::kBroadcast:
      return arg(0);
    case HloOpcode::kNegate: {
      auto a = arg(0);
      return a ? std::optional<int64_t>(-*a) : std::nullopt;
    }
    case HloOpcode::kAbs: {
      auto a = arg(0);
      return a ? std::optional<int64_t>(std::abs(*a)) : std::nullopt;
    }
    case HloOpcode::kNot: {
      auto a = arg(0);
      if (!a) return std::nullopt;
      return h->shape().element_type() == PrimitiveType::kPred ? int64_t{*a == 0} : ~*a;
    }
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kXor: {
      auto a = arg(0), b = arg(1);
      if (!a || !b) return std::nullopt;
      switch (h->opcode()) {
        case HloOpcode::kAdd:
          return *a + *b;
        case HloOpcode::kSubtract:
          return *a - *b;
        case HloOpcode::kMultiply:
          return *a * *b;
        case HloOpcode::kDivide:
          return *b == 0 ? std::nullopt : std::optional<int64_t>(*a / *b);
        case HloOpcode::kRemainder:
          return *b == 0 ? std::nullopt : std::optional<int64_t>(*a % *b);
        case HloOpcode::kMaximum:
          return std::max(*a, *b);
        case HloOpcode::kMinimum:
          return std::min(*a, *b);
        case HloOpcode::kAnd:
          return *a & *b;
        case HloOpcode::kOr:
          return *a | *b;
        default:
          return *a ^ *b;
      }
    }
    case HloOpcode::kClamp: {
      auto lo = arg(0), x = arg(1), hi = arg(2);
      if (!lo || !x || !hi) return std::nullopt;
      return std::min(std::max(*x, *lo), *hi);
    }
    case HloOpcode::kCompare: {
      auto a = arg(0), b = arg(1);
      if (!a || !b || !h->attrs().direction.has_value()) return std::nullopt;
      switch (*h->attrs().direction) {
        case ComparisonDirection::kEq:
          return int64_t{*a == *b};
        case ComparisonDirection::kNe:
          return int64_t{*a != *b};
        case ComparisonDirection::kLt:
          return int64_t{*a < *b};
        case ComparisonDirection::kLe:
          return int64_t{*a <= *b};
        case ComparisonDirection::kGt:
          return int64_t{*a > *b};
        case ComparisonDirection::kGe:
          return int64_t{*a >= *b};
      }
      return std::nullopt;
    }
    case HloOpcode::kSelect: {
      auto p = arg(0);
      if (!p) return std::nullopt;
      return *p != 0 ? arg(1) : arg(2);
    }
    case HloOpcode::kDynamicSlice: {
      // table[index] of a rank-1 constant table.
      const HloInstruction* table = h->operand(0);
      if (table->opcode() != HloOpcode::kConstant || !table->literal().has_value() ||
          table->shape().rank() != 1 || h->operand_count() != 2 || h->shape().ElementCount() != 1) {
        return std::nullopt;
      }
      auto i = arg(1);
      if (!i) return std::nullopt;
      const int64_t size = table->shape().dimensions(0);
      const int64_t at = std::clamp<int64_t>(*i, 0, size - 1);
      return table->literal()->GetInt64(at);
    }
    default:
      return std::nullopt;
  }
}

}  // namespace spmdcheck::explain
