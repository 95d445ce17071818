// The partitioner driver: chooses a sharding for every instruction (annotation, else a simple
// propagation rule), partitions each instruction with its handler or the fallback, reshards the
// result to the chosen sharding and names it after the global instruction.
//
// Propagation rule (documented in docs/partition.md): an instruction without a `sharding=`
// takes (1) for get-tuple-element, the operand's element sharding; for tuple, its operands';
// for while, its operand's; (2) else the sharding of the first operand with the same dimensions
// (manual when any operand is manual); (3) else the sharding of the first user with the same
// dimensions that carries one; (4) else replicated.
#include "partitioner/partitioner.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "ir/sharding_algebra.h"
#include "ir/verifier.h"
#include "partitioner/injected_bugs.h"
#include "partitioner/partition_context.h"

namespace spmdcheck::partitioner {

absl::Status Decline(absl::string_view reason) { return absl::FailedPreconditionError(reason); }
bool IsDecline(const absl::Status& status) { return absl::IsFailedPrecondition(status); }

HloSharding ReplicatedLike(const Shape& shape) {
  if (!shape.IsTuple()) return HloSharding::Replicate();
  return HloSharding::Tuple(std::vector<HloSharding>(shape.LeafCount(), HloSharding::Replicate()));
}

Shape LocalShape(const Shape& shape, const HloSharding& sharding) {
  if (shape.IsTuple()) {
    std::vector<Shape> elements;
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      elements.push_back(LocalShape(shape.tuple_shapes()[i], ElementSharding(sharding, shape, i)));
    }
    return Shape::Tuple(std::move(elements));
  }
  if (!shape.IsArray() || !sharding.IsTiled()) return shape;
  Shape local = sharding.TileShape(shape);
  if (shape.layout().has_value()) local.set_layout(*shape.layout());
  return local;
}

namespace {

bool SameDims(const Shape& a, const Shape& b) {
  return a.IsArray() && b.IsArray() && a.dimensions() == b.dimensions();
}

// A sharding is usable on a shape when it fits it (tuple arity, data rank).
bool Fits(const HloSharding& sharding, const Shape& shape, int64_t n) {
  if (sharding.kind() == HloSharding::Kind::kUnknown) return false;
  return sharding.Validate(shape, n).ok();
}

}  // namespace

class ModulePartitioner {
 public:
  ModulePartitioner(const HloModule& global, const PartitionOptions& options, HloModule* out,
                    int64_t num_partitions)
      : options_(options) {
    state_.module = out;
    state_.inject_bug = options.inject_bug;
    state_.num_partitions = num_partitions;
    state_.replica_count = global.replica_count();
    for (const auto& c : global.computations()) {
      for (const auto& i : c->instructions()) {
        if (i->attrs().channel_id.has_value()) {
          state_.next_channel_id = std::max(state_.next_channel_id, *i->attrs().channel_id + 1);
        }
      }
    }
    RegisterElementwiseHandlers(registry_);
    RegisterShapeHandlers(registry_);
    RegisterReduceHandlers(registry_);
    RegisterDotHandlers(registry_);
    RegisterControlFlowHandlers(registry_);
    RegisterCustomCallHandlers(registry_);
    RegisterIndexingHandlers(registry_);
  }

  const PartitionOptions& options() const { return options_; }
  analysis::PartitionStats& stats() { return stats_; }
  // The reshard steps' claims, by instruction name: the entry's in `result.step_claims`, the
  // other computations' in `result.called_step_claims`.
  void CollectStepClaims(PartitionResult& result) const {
    for (const auto& computation : result.module->computations()) {
      const bool entry = computation.get() == result.module->entry();
      for (const auto& instruction : computation->instructions()) {
        auto it = state_.step_claims.find(instruction.get());
        if (it == state_.step_claims.end()) continue;
        (entry ? result.step_claims : result.called_step_claims[computation->name()])
            .emplace(instruction->name(), it->second);
      }
    }
  }
  ModuleBuildState& state() { return state_; }

  HloComputation* CloneCalled(const HloComputation* global) {
    auto it = clones_.find(global);
    if (it != clones_.end()) return it->second;
    auto copy = std::make_unique<HloComputation>(state_.UniqueComputationName(global->name()));
    absl::flat_hash_map<const HloInstruction*, HloInstruction*> map;
    for (HloInstruction* instruction : global->PostOrder()) {
      auto clone = std::make_unique<HloInstruction>(*instruction);
      std::vector<HloInstruction*> operands;
      for (HloInstruction* operand : instruction->operands()) operands.push_back(map[operand]);
      clone->set_operands(std::move(operands));
      clone->clear_sharding();
      for (CalledComputations& called : clone->mutable_called()) {
        for (HloComputation*& c : called.computations) c = CloneCalled(c);
      }
      map[instruction] = copy->AddInstruction(std::move(clone));
    }
    copy->set_root(map[global->root()]);
    HloComputation* added = state_.module->AddComputation(std::move(copy));
    clones_[global] = added;
    return added;
  }

  // Partitions `global` into a new computation. `param_shardings` empty: the parameters' own
  // (propagated) shardings. `root_sharding` nullopt: the root's chosen sharding.
  absl::StatusOr<HloComputation*> Partition(const HloComputation* global,
                                            const std::vector<HloSharding>& param_shardings,
                                            const std::optional<HloSharding>& root_sharding,
                                            bool is_entry) {
    const std::string name =
        is_entry ? global->name()
                 : state_.UniqueComputationName(absl::StrCat(global->name(), ".spmd"));
    if (is_entry) state_.computation_names.insert(name);
    auto computation = std::make_unique<HloComputation>(name);
    absl::flat_hash_set<std::string> reserved;
    for (const auto& i : global->instructions()) reserved.insert(i->name());
    SpmdBuilder builder(&state_, computation.get(), std::move(reserved));

    std::vector<HloInstruction*> order = global->PostOrder();
    if (order.empty() && global->instruction_count() > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("computation ", global->name(), " has a cycle"));
    }
    absl::flat_hash_map<const HloInstruction*, HloSharding> shardings =
        ChooseShardings(order, param_shardings);
    absl::flat_hash_map<const HloInstruction*, PartitionedValue> values;
    PartitionContext context(this, &builder, &shardings, &values);

    for (HloInstruction* instruction : order) {
      const HloSharding& target = shardings.at(instruction);
      const int64_t before = builder.computation()->instruction_count();
      state_.handler_start[builder.computation()] = before;
      absl::StatusOr<PartitionedValue> value = PartitionOne(*instruction, target, context);
      if (!value.ok()) {
        return base::WithContext(value.status(), absl::StrCat(instruction->name(), " (line ",
                                                              instruction->location().line, ")"));
      }
      HloInstruction* local = value->local;
      if (local != nullptr && local->index_in_parent() >= before) {
        builder.TryRename(local, instruction->name());
        if (!value->sharding.IsManual()) local->set_sharding(value->sharding);
        if (!instruction->raw_attributes().empty() && local->raw_attributes().empty() &&
            local->opcode() == instruction->opcode()) {
          local->mutable_raw_attributes() = instruction->raw_attributes();
        }
      }
      values[instruction] = *value;
    }
    const HloInstruction* global_root = global->root();
    PartitionedValue root = values.at(global_root);
    if (root_sharding.has_value() && root.sharding != *root_sharding) {
      ReshardingScope scope(builder.state(), global_root->name());
      absl::StatusOr<PartitionedValue> moved = Reshard(builder, root, *root_sharding);
      if (!moved.ok()) return moved.status();
      root = *moved;
      if (!root.sharding.IsManual()) root.local->set_sharding(root.sharding);
    }
    computation->set_root(root.local);
    RemoveDeadInstructions(*computation);
    if (is_entry) {
      entry_ = computation.get();
      pending_entry_ = std::move(computation);
      return entry_;
    }
    return state_.module->AddComputation(std::move(computation));
  }

  void AddEntry() {
    HloComputation* entry = state_.module->AddComputation(std::move(pending_entry_));
    state_.module->set_entry(entry);
  }

 private:
  friend class PartitionContext;

  absl::flat_hash_map<const HloInstruction*, HloSharding> ChooseShardings(
      const std::vector<HloInstruction*>& order, const std::vector<HloSharding>& param_shardings) {
    const int64_t n = state_.num_partitions;
    absl::flat_hash_map<const HloInstruction*, std::vector<const HloInstruction*>> users;
    for (HloInstruction* i : order) {
      for (HloInstruction* operand : i->operands()) users[operand].push_back(i);
    }
    absl::flat_hash_map<const HloInstruction*, HloSharding> chosen;
    for (HloInstruction* i : order) {
      const Shape& shape = i->shape();
      std::optional<HloSharding> pick;
      if (i->opcode() == HloOpcode::kParameter && !param_shardings.empty() &&
          i->parameter_number() < static_cast<int64_t>(param_shardings.size())) {
        pick = param_shardings[i->parameter_number()];
      } else if (i->sharding().has_value() && Fits(*i->sharding(), shape, n)) {
        pick = *i->sharding();
      } else if (i->opcode() == HloOpcode::kGetTupleElement && i->attrs().tuple_index.has_value()) {
        pick = ElementSharding(chosen.at(i->operand(0)), i->operand(0)->shape(),
                               *i->attrs().tuple_index);
      } else if (i->opcode() == HloOpcode::kTuple) {
        std::vector<HloSharding> elements;
        for (HloInstruction* operand : i->operands()) elements.push_back(chosen.at(operand));
        pick = TupleSharding(shape, elements);
      } else if (i->opcode() == HloOpcode::kWhile && i->operand_count() == 1) {
        pick = chosen.at(i->operand(0));
      } else {
        for (HloInstruction* operand : i->operands()) {
          if (AllLeavesManual(chosen.at(operand))) pick = ManualLike(shape);
        }
        if (!pick.has_value() && i->opcode() != HloOpcode::kParameter) {
          for (HloInstruction* operand : i->operands()) {
            if (SameDims(operand->shape(), shape) && Fits(chosen.at(operand), shape, n)) {
              pick = chosen.at(operand);
              break;
            }
          }
        }
        if (!pick.has_value()) {
          for (const HloInstruction* user : users[i]) {
            if (user->sharding().has_value() && SameDims(user->shape(), shape) &&
                Fits(*user->sharding(), shape, n) && !user->sharding()->IsManual()) {
              pick = *user->sharding();
              break;
            }
          }
        }
      }
      if (!pick.has_value() || !Fits(*pick, shape, n)) pick = ReplicatedLike(shape);
      chosen[i] = *pick;
    }
    return chosen;
  }

  absl::StatusOr<PartitionedValue> PartitionOne(const HloInstruction& instruction,
                                                const HloSharding& target,
                                                PartitionContext& context) {
    ++stats_.instructions;
    SpmdBuilder& b = context.builder();
    if (instruction.opcode() == HloOpcode::kParameter) {
      ++stats_.handled;
      HloInstruction* p = b.Add(HloOpcode::kParameter, LocalShape(instruction.shape(), target), {},
                                instruction.name(), /*use_reserved=*/true);
      p->set_parameter_number(instruction.parameter_number());
      return PartitionedValue{p, instruction.shape(), target};
    }
    absl::StatusOr<PartitionedValue> value = Decline("no handler for this op");
    if (target.IsTiled() && target.HasManualSubgroup() && IsCollective(instruction.opcode()) &&
        instruction.operand_count() == 1 &&
        instruction.operand(0)->shape().dimensions() == instruction.shape().dimensions()) {
      // A collective written inside manual subgroups (its groups are global device ids): the
      // operand takes the instruction's sharding and the collective stays as written.
      absl::StatusOr<PartitionedValue> operand = context.OperandAs(instruction, 0, target);
      if (!operand.ok()) return operand.status();
      ++stats_.handled;
      return PartitionedValue{context.CloneLocal(instruction, {operand->local},
                                                 LocalShape(instruction.shape(), target)),
                              instruction.shape(), target};
    }
    const std::string custom_target = instruction.attrs().custom_call_target.value_or("");
    const bool sharding_custom_call =
        instruction.opcode() == HloOpcode::kCustomCall &&
        (custom_target == "Sharding" || custom_target == "SPMDFullToShardShape" ||
         custom_target == "SPMDShardToFullShape");
    if (AllLeavesManual(target) && !sharding_custom_call) {
      // Inside a manual region the program is already per device: keep it as written.
      std::vector<HloInstruction*> operands;
      for (const HloInstruction* operand : instruction.operands()) {
        operands.push_back(context.ValueOf(operand).local);
      }
      ++stats_.handled;
      return PartitionedValue{
          context.CloneLocal(instruction, std::move(operands), instruction.shape()),
          instruction.shape(), target};
    }
    if (const Handler* handler = registry_.Find(instruction.opcode())) {
      value = (*handler)(instruction, context);
    }
    if (!value.ok() && !IsDecline(value.status())) return value.status();
    if (value.ok()) {
      ++stats_.handled;
    } else {
      const std::string reason =
          absl::StrCat(HloOpcodeString(instruction.opcode()), ": ", value.status().message());
      ++stats_.fallback_reasons[reason];
      value = Fallback(instruction, context);
      if (!value.ok()) return value.status();
    }
    if (value->sharding == target) return value;
    if (std::optional<PartitionedValue> scattered = ReduceScatterInstead(b, *value, target)) {
      return *scattered;
    }
    context.RememberForm(&instruction, *value);
    // The handler's result holds the instruction's value too, under its own sharding.
    // (Only an instruction the handler made: one it passed through holds another value.)
    if (value->local != nullptr && value->global_shape.IsArray() && !value->sharding.IsManual() &&
        value->local->parent() == b.computation() &&
        value->local->index_in_parent() >= b.state()->handler_start[b.computation()]) {
      b.state()->step_claims.try_emplace(value->local, instruction.name(), value->sharding);
    }
    ReshardingScope scope(b.state(), instruction.name());
    return Reshard(b, *value, target);
  }

  // A handler's all-reduce (of partial sums) whose reshard to the target is one dynamic-slice
  // keeping, on each device, block p of one dim for the device at position p of its all-reduce
  // group: a reduce-scatter over the same groups computes exactly that, with (n-1)/n of the
  // bytes instead of 2(n-1)/n (XLA's ReduceScatterCreator). The all-reduce is left dead.
  static std::optional<PartitionedValue> ReduceScatterInstead(SpmdBuilder& b,
                                                              const PartitionedValue& value,
                                                              const HloSharding& target) {
    const HloInstruction* sum = value.local;
    if (sum == nullptr || sum->opcode() != HloOpcode::kAllReduce || sum->operand_count() != 1 ||
        !sum->shape().IsArray() || !sum->attrs().replica_groups.has_value() ||
        sum->called_computation("to_apply") == nullptr || !IsPlannable(value.sharding) ||
        !IsPlannable(target)) {
      return std::nullopt;
    }
    const int64_t n = b.num_partitions();
    absl::StatusOr<ReshardPlan> plan = PlanReshard(value.global_shape, value.sharding, target, n);
    if (!plan.ok() || plan->steps.size() != 1 ||
        plan->steps[0].kind != ReshardStepKind::kDynamicSlice) {
      return std::nullopt;
    }
    const Shape& before = sum->shape();
    const Shape after = LocalShape(value.global_shape, target);
    int64_t dim = -1;
    for (int64_t k = 0; k < before.rank(); ++k) {
      if (before.dimensions(k) == after.dimensions(k)) continue;
      if (dim >= 0) return std::nullopt;
      dim = k;
    }
    if (dim < 0) return std::nullopt;
    const std::vector<std::vector<int64_t>> groups = sum->attrs().replica_groups->groups();
    if (groups.empty()) return std::nullopt;
    const int64_t size = static_cast<int64_t>(groups[0].size());
    if (before.dimensions(dim) != size * after.dimensions(dim)) return std::nullopt;
    const int64_t rank = before.rank();
    for (const std::vector<int64_t>& group : groups) {
      if (static_cast<int64_t>(group.size()) != size) return std::nullopt;
      for (int64_t p = 0; p < size; ++p) {
        const int64_t device = group[p];
        if (device < 0 || device >= n) return std::nullopt;
        const HeldRegion held = RegionOf(value.sharding, value.global_shape, device);
        const HeldRegion want = RegionOf(target, value.global_shape, device);
        for (int64_t k = 0; k < rank; ++k) {
          const int64_t offset = want.padded_start[k] - held.padded_start[k];
          if (offset != (k == dim ? p * after.dimensions(dim) : 0)) return std::nullopt;
        }
      }
    }
    HloInstruction* scattered =
        b.ReduceScatter(sum->operand(0), dim, groups, sum->called_computation("to_apply"));
    return PartitionedValue{scattered, value.global_shape, target};
  }

  // Drops instructions nothing live uses (values materialised for an annotation whose users all
  // took a cheaper form), keeping parameters and ops with side effects.
  void RemoveDeadInstructions(HloComputation& computation) {
    absl::flat_hash_set<const HloInstruction*> live;
    std::vector<const HloInstruction*> stack;
    for (const auto& instruction : computation.instructions()) {
      switch (instruction->opcode()) {
        case HloOpcode::kParameter:
        case HloOpcode::kInfeed:
        case HloOpcode::kOutfeed:
        case HloOpcode::kSend:
        case HloOpcode::kSendDone:
        case HloOpcode::kRecv:
        case HloOpcode::kRecvDone:
        case HloOpcode::kCustomCall:
        case HloOpcode::kAfterAll:
        case HloOpcode::kRng:
        case HloOpcode::kRngBitGenerator:
        case HloOpcode::kRngGetAndUpdateState:
          stack.push_back(instruction.get());
          break;
        default:
          break;
      }
    }
    if (computation.root() != nullptr) stack.push_back(computation.root());
    while (!stack.empty()) {
      const HloInstruction* h = stack.back();
      stack.pop_back();
      if (!live.insert(h).second) continue;
      for (const HloInstruction* operand : h->operands()) stack.push_back(operand);
    }
    computation.RemoveInstructionsIf([&](const HloInstruction* h) {
      if (live.contains(h)) return false;
      state_.step_claims.erase(h);
      return true;
    });
  }

  // Replicate every operand, compute the op on full arrays, and hand back a replicated value.
  absl::StatusOr<PartitionedValue> Fallback(const HloInstruction& instruction,
                                            PartitionContext& context) {
    std::vector<HloInstruction*> operands;
    for (int64_t i = 0; i < instruction.operand_count(); ++i) {
      const HloInstruction* operand = instruction.operand(i);
      const PartitionedValue& value = context.ValueOf(operand);
      if (value.sharding.IsManual() ||
          (value.sharding.IsTuple() && HasManualLeaf(value.sharding))) {
        return absl::UnimplementedError("the fallback cannot replicate a manually sharded operand");
      }
      absl::StatusOr<PartitionedValue> replicated =
          context.OperandAs(instruction, i, ReplicatedLike(operand->shape()));
      if (!replicated.ok()) return replicated.status();
      operands.push_back(replicated->local);
    }
    HloInstruction* local =
        context.CloneLocal(instruction, std::move(operands), instruction.shape());
    return PartitionedValue{local, instruction.shape(), ReplicatedLike(instruction.shape())};
  }

  static HloSharding ManualLike(const Shape& shape) {
    if (!shape.IsTuple()) return HloSharding::Manual();
    return HloSharding::Tuple(std::vector<HloSharding>(shape.LeafCount(), HloSharding::Manual()));
  }

  static bool AllLeavesManual(const HloSharding& s) {
    if (s.IsManual()) return true;
    if (!s.IsTuple() || s.tuple_elements().empty()) return false;
    for (const HloSharding& e : s.tuple_elements()) {
      if (!e.IsManual()) return false;
    }
    return true;
  }

  static bool HasManualLeaf(const HloSharding& s) {
    if (s.IsManual()) return true;
    for (const HloSharding& e : s.tuple_elements()) {
      if (HasManualLeaf(e)) return true;
    }
    return false;
  }

  const PartitionOptions& options_;
  ModuleBuildState state_;
  HandlerRegistry registry_;
  analysis::PartitionStats stats_;
  absl::flat_hash_map<const HloComputation*, HloComputation*> clones_;
  HloComputation* entry_ = nullptr;
  std::unique_ptr<HloComputation> pending_entry_;
};

const PartitionOptions& PartitionContext::options() const { return module_->options(); }

const HloSharding& PartitionContext::ShardingOf(const HloInstruction* global) const {
  return shardings_->at(global);
}

const PartitionedValue& PartitionContext::ValueOf(const HloInstruction* global) const {
  return values_->at(global);
}

absl::StatusOr<PartitionedValue> PartitionContext::OperandAs(const HloInstruction& instruction,
                                                             int64_t i,
                                                             const HloSharding& sharding) {
  const HloInstruction* operand = instruction.operand(i);
  const PartitionedValue& value = ValueOf(operand);
  if (value.sharding == sharding) return value;
  std::pair<const HloInstruction*, std::string> key(operand, sharding.ToString(false));
  auto cached = reshards_.find(key);
  if (cached != reshards_.end()) return cached->second;
  const PartitionedValue& start = *CheapestForm(operand, sharding).first;
  ReshardingScope scope(builder_->state(), operand->name());
  absl::StatusOr<PartitionedValue> moved = Reshard(*builder_, start, sharding);
  if (!moved.ok()) return moved.status();
  if (moved->local != start.local && !moved->sharding.IsManual()) {
    moved->local->set_sharding(moved->sharding);
  }
  // Later users of the same operand under the same sharding reuse this value.
  reshards_.emplace(std::move(key), *moved);
  return moved;
}

void PartitionContext::RememberForm(const HloInstruction* global, const PartitionedValue& value) {
  if (value.sharding.IsManual() || value.sharding.IsTuple() || value.local == nullptr) return;
  if (!value.local->sharding().has_value()) value.local->set_sharding(value.sharding);
  reshards_.emplace(std::make_pair(global, value.sharding.ToString(false)), value);
  forms_[global].push_back(value);
}

std::pair<const PartitionedValue*, int64_t> PartitionContext::CheapestForm(
    const HloInstruction* operand, const HloSharding& sharding) {
  const auto score = [&](const PartitionedValue& v) {
    absl::StatusOr<analysis::CollectiveCost> cost =
        ReshardCost(v.global_shape, v.sharding, sharding, num_partitions());
    return cost.ok() ? cost->Score() : int64_t{1} << 60;
  };
  // Earlier forms win ties: the annotated value may then have no user left and be dropped.
  const PartitionedValue* best = nullptr;
  int64_t best_score = 0;
  auto it = forms_.find(operand);
  if (it != forms_.end()) {
    for (const PartitionedValue& form : it->second) {
      const int64_t s = score(form);
      if (best == nullptr || s < best_score) {
        best = &form;
        best_score = s;
      }
    }
  }
  const int64_t current = score(ValueOf(operand));
  if (best == nullptr || current < best_score) {
    best = &ValueOf(operand);
    best_score = current;
  }
  return {best, best_score};
}

int64_t PartitionContext::ReshardScore(const HloInstruction& instruction, int64_t i,
                                       const HloSharding& sharding) {
  const HloInstruction* operand = instruction.operand(i);
  if (ValueOf(operand).sharding == sharding ||
      reshards_.contains(std::make_pair(operand, sharding.ToString(false)))) {
    return 0;
  }
  // Priced from the value as the driver holds it: pricing every remembered form here too would
  // multiply the planner's work for every choice a handler weighs (OperandAs still starts the
  // reshard it emits from the cheapest form).
  const PartitionedValue& value = ValueOf(operand);
  absl::StatusOr<analysis::CollectiveCost> cost =
      ReshardCost(value.global_shape, value.sharding, sharding, num_partitions());
  return cost.ok() ? cost->Score() : int64_t{1} << 60;
}

HloComputation* PartitionContext::CloneCalled(const HloComputation* global) {
  return module_->CloneCalled(global);
}

absl::StatusOr<HloComputation*> PartitionContext::PartitionCalled(
    const HloComputation* global, const std::vector<HloSharding>& param_shardings,
    const HloSharding& root_sharding) {
  return module_->Partition(global, param_shardings, root_sharding, /*is_entry=*/false);
}

HloInstruction* PartitionContext::CloneLocal(const HloInstruction& global,
                                             std::vector<HloInstruction*> operands, Shape shape) {
  HloInstruction* local =
      builder_->Add(global.opcode(), std::move(shape), std::move(operands), global.name());
  if (global.has_attrs()) local->set_shared_attrs(global.shared_attrs());
  if (global.literal().has_value()) local->set_shared_literal(global.shared_literal());
  for (const CalledComputations& called : global.called()) {
    CalledComputations copy = called;
    for (HloComputation*& c : copy.computations) c = CloneCalled(c);
    local->mutable_called().push_back(std::move(copy));
  }
  if (global.parameter_number() >= 0) local->set_parameter_number(global.parameter_number());
  return local;
}

absl::StatusOr<PartitionResult> PartitionModule(const HloModule& global,
                                                const PartitionOptions& options) {
  if (global.entry() == nullptr)
    return absl::InvalidArgumentError("module has no entry computation");
  if (!options.inject_bug.empty() && !IsInjectedBug(options.inject_bug)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown injected bug '", options.inject_bug,
                                                   "' (spmdcheck fuzz --list-bugs)"));
  }
  const int64_t n = options.num_partitions > 0 ? options.num_partitions : global.num_partitions();
  if (n <= 0) return absl::InvalidArgumentError("--num-partitions must be positive");
  auto out = std::make_unique<HloModule>(global.name());
  out->set_num_partitions(n);
  if (global.has_replica_count()) out->set_replica_count(global.replica_count());
  ModulePartitioner partitioner(global, options, out.get(), n);
  absl::StatusOr<HloComputation*> entry =
      partitioner.Partition(global.entry(), {}, std::nullopt, /*is_entry=*/true);
  if (!entry.ok()) return entry.status();
  partitioner.AddEntry();
  PartitionResult result;
  result.module = std::move(out);
  result.stats = partitioner.stats();
  partitioner.CollectStepClaims(result);
  return result;
}

}  // namespace spmdcheck::partitioner
