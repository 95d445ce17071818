#include "ir/hlo_module.h"

#include "absl/container/flat_hash_set.h"

namespace spmdcheck {

HloComputation* HloInstruction::called_computation(absl::string_view role) const {
  for (const CalledComputations& c : called_) {
    if (c.role == role && c.computations.size() == 1) return c.computations[0];
  }
  return nullptr;
}

std::vector<HloComputation*> HloInstruction::AllCalledComputations() const {
  std::vector<HloComputation*> out;
  for (const CalledComputations& c : called_) {
    out.insert(out.end(), c.computations.begin(), c.computations.end());
  }
  return out;
}

const RawAttribute* HloInstruction::FindRawAttribute(absl::string_view name) const {
  for (const RawAttribute& a : raw_attributes_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

HloInstruction* HloComputation::AddInstruction(std::unique_ptr<HloInstruction> instruction) {
  instruction->parent_ = this;
  HloInstruction* raw = instruction.get();
  by_name_.emplace(raw->name(), raw);
  instructions_.push_back(std::move(instruction));
  return raw;
}

HloInstruction* HloComputation::FindInstruction(absl::string_view name) const {
  auto it = by_name_.find(absl::string_view(name.data(), name.size()));
  return it == by_name_.end() ? nullptr : it->second;
}

void HloComputation::TruncateInstructions(int64_t count) {
  while (static_cast<int64_t>(instructions_.size()) > count) {
    HloInstruction* last = instructions_.back().get();
    if (root_ == last) root_ = nullptr;
    auto it = by_name_.find(last->name());
    if (it != by_name_.end() && it->second == last) by_name_.erase(it);
    instructions_.pop_back();
  }
}

std::vector<HloInstruction*> HloComputation::parameters() const {
  std::vector<HloInstruction*> params;
  for (const auto& instruction : instructions_) {
    if (instruction->opcode() != HloOpcode::kParameter) continue;
    const int64_t n = instruction->parameter_number();
    if (n < 0 || n > static_cast<int64_t>(instructions_.size())) continue;
    if (static_cast<int64_t>(params.size()) <= n) params.resize(n + 1, nullptr);
    params[n] = instruction.get();
  }
  return params;
}

std::vector<HloInstruction*> HloComputation::PostOrder() const {
  // Iterative DFS with three colours; a grey operand means a cycle.
  absl::flat_hash_map<const HloInstruction*, int> colour;
  std::vector<HloInstruction*> order;
  order.reserve(instructions_.size());
  for (const auto& start : instructions_) {
    if (colour[start.get()] != 0) continue;
    std::vector<std::pair<HloInstruction*, size_t>> stack = {{start.get(), 0}};
    colour[start.get()] = 1;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->operands().size()) {
        HloInstruction* operand = node->operands()[next++];
        if (operand == nullptr) continue;
        int& c = colour[operand];
        if (c == 1) return {};
        if (c == 0) {
          c = 1;
          stack.push_back({operand, 0});
        }
        continue;
      }
      colour[node] = 2;
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

HloComputation* HloModule::AddComputation(std::unique_ptr<HloComputation> computation) {
  computation->parent_ = this;
  HloComputation* raw = computation.get();
  by_name_.emplace(raw->name(), raw);
  computations_.push_back(std::move(computation));
  return raw;
}

HloComputation* HloModule::FindComputation(absl::string_view name) const {
  auto it = by_name_.find(absl::string_view(name.data(), name.size()));
  return it == by_name_.end() ? nullptr : it->second;
}

}  // namespace spmdcheck
