#include "oracle/engine.h"

#include <algorithm>
#include <chrono>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oracle/kernel_util.h"

namespace spmdcheck::oracle {
namespace {

constexpr int kMaxCallDepth = 256;

// A value owned elsewhere (an argument of a scalar call), viewed without copying.
ValueRef Borrow(const Literal* literal) { return ValueRef(ValueRef(), literal); }

ValueRef Own(Literal literal) { return std::make_shared<const Literal>(std::move(literal)); }

bool IsEngineOp(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kCall:
    case HloOpcode::kFusion:
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kAsyncStart:
    case HloOpcode::kAsyncUpdate:
    case HloOpcode::kAsyncDone:
      return true;
    default:
      return false;
  }
}

// Element `index` of a tuple value, copied.
absl::StatusOr<Literal> TupleElement(const HloInstruction& instruction, const Literal& tuple,
                                     int64_t index) {
  if (!tuple.shape().IsTuple() || index < 0 || index >= tuple.tuple_size()) {
    return InstructionError(instruction, absl::StrCat("expected a tuple with an element ", index,
                                                      ", got ", tuple.shape().ToString(false)));
  }
  return tuple.tuple_elements()[index];
}

}  // namespace

bool IsDeviceDependent(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kPartitionId:
    case HloOpcode::kReplicaId:
    case HloOpcode::kRng:
    case HloOpcode::kRngBitGenerator:
    case HloOpcode::kRngGetAndUpdateState:
    case HloOpcode::kCustomCall:  // SPMDFullToShardShape takes the running device's tile.
      return true;
    default:
      return false;
  }
}

Engine::Engine(const HloModule& module, EngineOptions options, const OpRegistry& registry)
    : module_(module), options_(options), registry_(registry) {}

absl::Status Engine::CheckRunnable() const {
  for (const auto& computation : module_.computations()) {
    if (computation->is_opaque()) {
      return absl::UnimplementedError(absl::StrCat(
          "computation '", computation->name(), "' is only referenced, not defined: cannot run"));
    }
    for (const auto& instruction : computation->instructions()) {
      const HloOpcode opcode = instruction->opcode();
      if (!IsEngineOp(opcode) && registry_.Find(opcode) == nullptr &&
          registry_.FindCollective(opcode) == nullptr) {
        return absl::UnimplementedError(absl::StrCat(instruction->name(), ": opcode ",
                                                     HloOpcodeString(opcode),
                                                     " is not supported by the interpreter"));
      }
      std::vector<const Shape*> leaves = {&instruction->shape()};
      while (!leaves.empty()) {
        const Shape* shape = leaves.back();
        leaves.pop_back();
        if (shape->IsTuple()) {
          for (const Shape& element : shape->tuple_shapes()) leaves.push_back(&element);
          continue;
        }
        if (shape->IsArray() && shape->ElementCount() > options_.max_elements_per_array) {
          return absl::ResourceExhaustedError(
              absl::StrCat(instruction->name(), ": ", shape->ToString(false), " has ",
                           shape->ElementCount(), " elements, over the budget of ",
                           options_.max_elements_per_array, " per array (--max-elements)"));
        }
      }
    }
  }
  return absl::OkStatus();
}

EvalEnv Engine::EnvFor(int64_t device) {
  EvalEnv env;
  env.num_partitions = options_.num_partitions;
  env.replica_count = options_.replica_count;
  env.replica_id = device / options_.num_partitions;
  env.partition_id = device % options_.num_partitions;
  env.seed = options_.seed;
  env.call = [this, device](const HloComputation& computation,
                            absl::Span<const Literal* const> args) {
    return CallScalar(computation, device, args);
  };
  return env;
}

absl::StatusOr<Literal> Engine::CallScalar(const HloComputation& computation, int64_t device,
                                           absl::Span<const Literal* const> args) {
  std::vector<std::vector<ValueRef>> wrapped(1);
  for (const Literal* arg : args) wrapped[0].push_back(Borrow(arg));
  const int64_t devices[] = {device};
  absl::StatusOr<std::vector<ValueRef>> result =
      RunComputation(computation, devices, std::move(wrapped), 1, /*allow_collectives=*/false);
  if (!result.ok()) return result.status();
  return *(*result)[0];
}

absl::StatusOr<std::vector<Literal>> Engine::Run(std::vector<std::vector<Literal>> args) {
  std::vector<std::vector<ValueRef>> refs(args.size());
  for (size_t d = 0; d < args.size(); ++d) {
    for (Literal& arg : args[d]) refs[d].push_back(Own(std::move(arg)));
  }
  absl::StatusOr<std::vector<ValueRef>> results = RunShared(std::move(refs));
  if (!results.ok()) return results.status();
  std::vector<Literal> out;
  out.reserve(results->size());
  for (ValueRef& value : *results) {
    // The last holder of a value may take it; shared values are copied.
    if (value.use_count() == 1) {
      out.push_back(std::move(const_cast<Literal&>(*value)));
    } else {
      out.push_back(*value);
    }
  }
  return out;
}

absl::StatusOr<std::vector<ValueRef>> Engine::RunShared(std::vector<std::vector<ValueRef>> args) {
  const HloComputation* entry = module_.entry();
  if (entry == nullptr) return absl::InvalidArgumentError("the module has no entry computation");
  const int64_t n = num_devices();
  if (static_cast<int64_t>(args.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected arguments for ", n, " devices, got ", args.size()));
  }
  std::vector<int64_t> devices(n);
  for (int64_t d = 0; d < n; ++d) devices[d] = d;
  return RunComputation(*entry, devices, std::move(args), 0, /*allow_collectives=*/true);
}

// One running computation: the devices it runs on, their arguments, and the live value of every
// instruction on each of them (values[instruction][i] belongs to devices[i]).
struct Engine::Frame {
  absl::Span<const int64_t> devices;
  std::vector<std::vector<ValueRef>> args;
  int depth = 0;
  bool allow_collectives = true;
  absl::flat_hash_map<const HloInstruction*, std::vector<ValueRef>> values;

  size_t size() const { return devices.size(); }

  // Operand values of the i-th device, as literal pointers.
  std::vector<const Literal*> OperandsOf(const HloInstruction& instruction, size_t i) {
    std::vector<const Literal*> operands;
    operands.reserve(instruction.operand_count());
    for (const HloInstruction* operand : instruction.operands()) {
      operands.push_back(values[operand][i].get());
    }
    return operands;
  }
  std::vector<ValueRef> OperandRefsOf(const HloInstruction& instruction, size_t i) {
    std::vector<ValueRef> refs;
    for (const HloInstruction* operand : instruction.operands()) refs.push_back(values[operand][i]);
    return refs;
  }
  // The device ids at `indices` (positions in `devices`).
  std::vector<int64_t> Subset(const std::vector<size_t>& indices) const {
    std::vector<int64_t> ids;
    for (size_t i : indices) ids.push_back(devices[i]);
    return ids;
  }
};

absl::StatusOr<std::vector<ValueRef>> Engine::RunComputation(
    const HloComputation& computation, absl::Span<const int64_t> devices,
    std::vector<std::vector<ValueRef>> args, int depth, bool allow_collectives) {
  if (depth > kMaxCallDepth) {
    return absl::ResourceExhaustedError(
        absl::StrCat("calls nested deeper than ", kMaxCallDepth, " in ", computation.name()));
  }
  if (computation.is_opaque()) {
    return absl::UnimplementedError(
        absl::StrCat("computation '", computation.name(), "' is not defined: cannot run it"));
  }
  const std::vector<HloInstruction*> order = computation.PostOrder();
  if (order.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("computation ", computation.name(), " has a cycle or no instructions"));
  }
  absl::flat_hash_map<const HloInstruction*, int64_t> remaining_uses;
  for (const HloInstruction* instruction : order) {
    for (const HloInstruction* operand : instruction->operands()) ++remaining_uses[operand];
  }
  ++remaining_uses[computation.root()];
  Frame frame;
  frame.devices = devices;
  frame.args = std::move(args);
  frame.depth = depth;
  frame.allow_collectives = allow_collectives;
  for (const HloInstruction* instruction_ptr : order) {
    const HloInstruction& instruction = *instruction_ptr;
    std::vector<ValueRef> out(frame.size());
    if (absl::Status status = EvalInstruction(frame, instruction, &out); !status.ok()) {
      return status;
    }
    // Control flow from the entry may run collectives; an op's applied computation (CallScalar)
    // may not, and is not observed.
    if (allow_collectives && observer_) observer_(instruction, devices, out);
    frame.values[&instruction] = std::move(out);
    for (const HloInstruction* operand : instruction.operands()) {
      auto it = remaining_uses.find(operand);
      if (it != remaining_uses.end() && --it->second == 0) frame.values.erase(operand);
    }
  }
  return frame.values[computation.root()];
}

absl::Status Engine::EvalInstruction(Frame& frame, const HloInstruction& instruction,
                                     std::vector<ValueRef>* out) {
  const size_t n = frame.size();
  switch (instruction.opcode()) {
    case HloOpcode::kParameter: {
      const int64_t number = instruction.parameter_number();
      for (size_t i = 0; i < n; ++i) {
        if (number < 0 || number >= static_cast<int64_t>(frame.args[i].size())) {
          return InstructionError(instruction, absl::StrCat("no argument for parameter ", number));
        }
        (*out)[i] = frame.args[i][number];
      }
      return absl::OkStatus();
    }
    case HloOpcode::kConstant: {
      if (!instruction.literal().has_value() || instruction.literal()->elided()) {
        return Unsupported(instruction, "a constant whose contents were elided ({...})");
      }
      ValueRef shared = Own(*instruction.literal());
      std::fill(out->begin(), out->end(), shared);
      return absl::OkStatus();
    }
    case HloOpcode::kCall:
    case HloOpcode::kFusion:
    case HloOpcode::kAsyncStart:
      return EvalCall(frame, instruction, out);
    case HloOpcode::kAsyncUpdate:
      for (size_t i = 0; i < n; ++i) (*out)[i] = frame.values[instruction.operand(0)][i];
      return absl::OkStatus();
    case HloOpcode::kAsyncDone:
      for (size_t i = 0; i < n; ++i) {
        absl::StatusOr<Literal> element =
            TupleElement(instruction, *frame.values[instruction.operand(0)][i], 1);
        if (!element.ok()) return element.status();
        (*out)[i] = Own(*std::move(element));
      }
      return absl::OkStatus();
    case HloOpcode::kWhile:
      return EvalWhile(frame, instruction, out);
    case HloOpcode::kConditional:
      return EvalConditional(frame, instruction, out);
    default:
      break;
  }
  CollectiveHandler collective = registry_.FindCollective(instruction.opcode());
  if (instruction.opcode() == HloOpcode::kCustomCall && n > 1 &&
      instruction.attrs().custom_call_target.value_or("") == "SPMDShardToFullShape") {
    collective = EvaluateShardToFull;
  }
  if (collective != nullptr) return EvalCollective(frame, instruction, collective, out);
  return EvalOp(frame, instruction, out);
}

absl::Status Engine::EvalCall(Frame& frame, const HloInstruction& instruction,
                              std::vector<ValueRef>* out) {
  const HloOpcode opcode = instruction.opcode();
  const size_t n = frame.size();
  const HloComputation* callee =
      instruction.called_computation(opcode == HloOpcode::kCall ? "to_apply" : "calls");
  if (callee == nullptr) return InstructionError(instruction, "no called computation");
  std::vector<std::vector<ValueRef>> call_args(n);
  for (size_t i = 0; i < n; ++i) call_args[i] = frame.OperandRefsOf(instruction, i);
  absl::StatusOr<std::vector<ValueRef>> result = RunComputation(
      *callee, frame.devices, std::move(call_args), frame.depth + 1, frame.allow_collectives);
  if (!result.ok()) return result.status();
  if (opcode != HloOpcode::kAsyncStart) {
    *out = *std::move(result);
    return absl::OkStatus();
  }
  // async-start: ((operands...), result, context...) as the written shape says.
  const Shape& shape = instruction.shape();
  if (!shape.IsTuple() || shape.tuple_size() < 2) {
    return InstructionError(instruction, "async-start must return a tuple");
  }
  for (size_t i = 0; i < n; ++i) {
    std::vector<Literal> elements;
    std::vector<Literal> operand_values;
    for (const Literal* operand : frame.OperandsOf(instruction, i)) {
      operand_values.push_back(*operand);
    }
    elements.push_back(Literal::Tuple(std::move(operand_values)));
    elements.push_back(*(*result)[i]);
    for (int64_t k = 2; k < shape.tuple_size(); ++k) {
      elements.emplace_back(shape.tuple_shapes()[k]);
    }
    (*out)[i] = Own(Literal::Tuple(std::move(elements)));
  }
  return absl::OkStatus();
}

absl::Status Engine::EvalWhile(Frame& frame, const HloInstruction& instruction,
                               std::vector<ValueRef>* out) {
  const size_t n = frame.size();
  const HloComputation* condition = instruction.called_computation("condition");
  const HloComputation* body = instruction.called_computation("body");
  if (condition == nullptr || body == nullptr || instruction.operand_count() != 1) {
    return InstructionError(instruction, "while needs one operand, a condition and a body");
  }
  std::vector<ValueRef> state = frame.values[instruction.operand(0)];
  std::vector<size_t> active(n);
  for (size_t i = 0; i < n; ++i) active[i] = i;
  for (int64_t iteration = 0;; ++iteration) {
    std::vector<int64_t> ids = frame.Subset(active);
    std::vector<std::vector<ValueRef>> cond_args;
    for (size_t i : active) cond_args.push_back({state[i]});
    absl::StatusOr<std::vector<ValueRef>> keep_going = RunComputation(
        *condition, ids, std::move(cond_args), frame.depth + 1, frame.allow_collectives);
    if (!keep_going.ok()) return keep_going.status();
    std::vector<size_t> next;
    for (size_t k = 0; k < active.size(); ++k) {
      const Literal& pred = *(*keep_going)[k];
      if (!pred.shape().IsScalar() || pred.shape().element_type() != PrimitiveType::kPred) {
        return InstructionError(instruction, "the condition must return pred[]");
      }
      if (pred.GetBits(0) != 0) next.push_back(active[k]);
    }
    if (next.empty()) break;
    if (options_.deadline.has_value() && std::chrono::steady_clock::now() > *options_.deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(instruction.name(), ": the loop was still running at the time limit (after ",
                       iteration, " iterations)"));
    }
    if (iteration >= options_.max_while_iterations) {
      return absl::ResourceExhaustedError(absl::StrCat(instruction.name(), ": the loop ran ",
                                                       iteration, " iterations, over the limit of ",
                                                       options_.max_while_iterations));
    }
    std::vector<std::vector<ValueRef>> body_args;
    for (size_t i : next) body_args.push_back({state[i]});
    absl::StatusOr<std::vector<ValueRef>> new_state = RunComputation(
        *body, frame.Subset(next), std::move(body_args), frame.depth + 1, frame.allow_collectives);
    if (!new_state.ok()) return new_state.status();
    for (size_t k = 0; k < next.size(); ++k) state[next[k]] = (*new_state)[k];
    active = std::move(next);
  }
  *out = std::move(state);
  return absl::OkStatus();
}

absl::Status Engine::EvalConditional(Frame& frame, const HloInstruction& instruction,
                                     std::vector<ValueRef>* out) {
  const size_t n = frame.size();
  std::vector<const HloComputation*> branches;
  const bool by_pred = instruction.called_computation("true_computation") != nullptr;
  if (by_pred) {
    branches = {instruction.called_computation("true_computation"),
                instruction.called_computation("false_computation")};
  } else {
    for (const CalledComputations& called : instruction.called()) {
      if (called.role == "branch_computations") {
        branches.assign(called.computations.begin(), called.computations.end());
      }
    }
  }
  if (branches.empty() || std::find(branches.begin(), branches.end(), nullptr) != branches.end() ||
      instruction.operand_count() != static_cast<int64_t>(branches.size()) + 1) {
    return InstructionError(instruction, "conditional needs a selector and one operand per branch");
  }
  std::vector<std::vector<size_t>> taking(branches.size());
  for (size_t i = 0; i < n; ++i) {
    const Literal& selector = *frame.values[instruction.operand(0)][i];
    int64_t branch = 0;
    if (by_pred) {
      branch = selector.GetBits(0) != 0 ? 0 : 1;
    } else {
      branch = selector.GetInt64(0);
      // An out-of-range index runs the last branch.
      if (branch < 0 || branch >= static_cast<int64_t>(branches.size())) {
        branch = static_cast<int64_t>(branches.size()) - 1;
      }
    }
    taking[branch].push_back(i);
  }
  for (size_t b = 0; b < branches.size(); ++b) {
    if (taking[b].empty()) continue;
    std::vector<std::vector<ValueRef>> branch_args;
    for (size_t i : taking[b]) {
      branch_args.push_back({frame.values[instruction.operand(static_cast<int64_t>(b) + 1)][i]});
    }
    absl::StatusOr<std::vector<ValueRef>> result =
        RunComputation(*branches[b], frame.Subset(taking[b]), std::move(branch_args),
                       frame.depth + 1, frame.allow_collectives);
    if (!result.ok()) return result.status();
    for (size_t k = 0; k < taking[b].size(); ++k) (*out)[taking[b][k]] = (*result)[k];
  }
  return absl::OkStatus();
}

absl::Status Engine::EvalCollective(Frame& frame, const HloInstruction& instruction,
                                    CollectiveHandler collective, std::vector<ValueRef>* out) {
  const size_t n = frame.size();
  if (!frame.allow_collectives) {
    return InstructionError(instruction, "a collective inside a reducer or comparator computation");
  }
  std::vector<std::vector<const Literal*>> operands(n);
  for (size_t i = 0; i < n; ++i) operands[i] = frame.OperandsOf(instruction, i);
  CollectiveArgs collective_args;
  collective_args.instruction = &instruction;
  collective_args.devices = frame.devices;
  collective_args.operands = &operands;
  collective_args.num_partitions = options_.num_partitions;
  collective_args.replica_count = options_.replica_count;
  const int64_t first_device = frame.devices.empty() ? 0 : frame.devices[0];
  collective_args.call = [this, first_device](const HloComputation& c,
                                              absl::Span<const Literal* const> a) {
    return CallScalar(c, first_device, a);
  };
  absl::StatusOr<std::vector<Literal>> result = collective(collective_args);
  if (!result.ok()) return result.status();
  if (result->size() != n) {
    return InstructionError(instruction, "collective returned the wrong number of values");
  }
  for (size_t i = 0; i < n; ++i) (*out)[i] = Own(std::move((*result)[i]));
  return absl::OkStatus();
}

absl::Status Engine::EvalOp(Frame& frame, const HloInstruction& instruction,
                            std::vector<ValueRef>* out) {
  const HloOpcode opcode = instruction.opcode();
  const size_t n = frame.size();
  OpHandler handler = registry_.Find(opcode);
  if (handler == nullptr) {
    return absl::UnimplementedError(absl::StrCat(instruction.name(), ": opcode ",
                                                 HloOpcodeString(opcode),
                                                 " is not supported by the interpreter"));
  }
  // A device-independent op whose operands are the same objects on every device is computed
  // once and shared.
  bool shared = n > 1 && !IsDeviceDependent(opcode);
  for (const HloInstruction* operand : instruction.operands()) {
    const std::vector<ValueRef>& v = frame.values[operand];
    for (size_t i = 1; shared && i < n; ++i) shared = v[i] == v[0];
  }
  const size_t distinct = shared ? 1 : n;
  for (size_t i = 0; i < distinct; ++i) {
    std::vector<const Literal*> operands = frame.OperandsOf(instruction, i);
    absl::StatusOr<Literal> result = handler(instruction, operands, EnvFor(frame.devices[i]));
    if (!result.ok()) return result.status();
    (*out)[i] = Own(*std::move(result));
  }
  if (shared) std::fill(out->begin() + 1, out->end(), (*out)[0]);
  return absl::OkStatus();
}

}  // namespace spmdcheck::oracle
