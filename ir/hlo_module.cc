#include "ir/hlo_module.h"

#include "absl/container/flat_hash_map.h"

namespace spmdcheck {
namespace {

const SharedValue<Shape>& InvalidShape() {
  static const auto* const shape = new SharedValue<Shape>(SharedValue<Shape>::Make());
  return *shape;
}

}  // namespace

// ================================================================= instruction

HloInstruction::HloInstruction(HloOpcode opcode, std::string name, Shape shape)
    : opcode_(opcode), name_(std::move(name)), shape_(SharedValue<Shape>::Make(std::move(shape))) {}

HloInstruction::HloInstruction(HloOpcode opcode, std::string name, SharedValue<Shape> shape)
    : opcode_(opcode),
      name_(std::move(name)),
      shape_(shape ? std::move(shape) : SharedValue<Shape>(InvalidShape())) {}

// A copy is in no computation (renaming it must not touch the original's name index).
HloInstruction::HloInstruction(const HloInstruction& other)
    : opcode_(other.opcode_),
      name_(other.name_),
      shape_(other.shape_),
      operands_(other.operands_),
      parameter_number_(other.parameter_number_),
      literal_(other.literal_),
      sharding_(other.sharding_),
      attrs_(other.attrs_),
      extras_(other.extras_ != nullptr ? std::make_unique<Extras>(*other.extras_) : nullptr),
      location_(other.location_) {}

HloInstruction& HloInstruction::operator=(const HloInstruction& other) {
  if (this == &other) return *this;
  // Takes `other`'s contents and keeps its own place (parent and position).
  HloComputation* parent = parent_;
  const int32_t index = index_;
  *this = HloInstruction(other);
  parent_ = parent;
  index_ = index;
  return *this;
}

HloInstruction::~HloInstruction() = default;

void HloInstruction::set_name(std::string name) {
  if (parent_ == nullptr) {
    name_ = std::move(name);
    return;
  }
  parent_->RenameInstruction(this, std::move(name));
}

Shape& HloInstruction::mutable_shape() {
  if (!shape_.unique()) shape_ = SharedValue<Shape>::Make(*shape_);
  return *shape_.mutable_get();
}

void HloInstruction::set_shape(Shape shape) {
  if (shape_.unique()) {
    // Assign in place, so references to shape() see the new value as with a plain member.
    *shape_.mutable_get() = std::move(shape);
  } else {
    shape_ = SharedValue<Shape>::Make(std::move(shape));
  }
}

void HloInstruction::set_shared_shape(SharedValue<Shape> shape) {
  if (shape) {
    shape_ = std::move(shape);
  } else {
    shape_ = InvalidShape();
  }
}

void HloInstruction::set_literal(Literal literal) {
  literal_ = SharedValue<std::optional<Literal>>::Make(std::move(literal));
}

void HloInstruction::set_sharding(HloSharding sharding) {
  sharding_ = SharedValue<std::optional<HloSharding>>::Make(std::move(sharding));
}

HloAttributes& HloInstruction::mutable_attrs() {
  if (!attrs_) {
    attrs_ = SharedValue<HloAttributes>::Make();
  } else if (!attrs_.unique()) {
    attrs_ = SharedValue<HloAttributes>::Make(*attrs_);
  }
  return *attrs_.mutable_get();
}

HloInstruction::Extras& HloInstruction::mutable_extras() {
  if (extras_ == nullptr) extras_ = std::make_unique<Extras>();
  return *extras_;
}

std::vector<CalledComputations>& HloInstruction::mutable_called() {
  return mutable_extras().called;
}

std::vector<RawAttribute>& HloInstruction::mutable_raw_attributes() {
  return mutable_extras().raw_attributes;
}

const std::optional<Literal>& HloInstruction::NoLiteral() {
  static const auto* const none = new std::optional<Literal>();
  return *none;
}

const std::optional<HloSharding>& HloInstruction::NoSharding() {
  static const auto* const none = new std::optional<HloSharding>();
  return *none;
}

const HloAttributes& HloInstruction::NoAttributes() {
  static const auto* const none = new HloAttributes();
  return *none;
}

const std::vector<CalledComputations>& HloInstruction::NoCalled() {
  static const auto* const none = new std::vector<CalledComputations>();
  return *none;
}

const std::vector<RawAttribute>& HloInstruction::NoRawAttributes() {
  static const auto* const none = new std::vector<RawAttribute>();
  return *none;
}

HloComputation* HloInstruction::called_computation(absl::string_view role) const {
  for (const CalledComputations& c : called()) {
    if (c.role == role && c.computations.size() == 1) return c.computations[0];
  }
  return nullptr;
}

std::vector<HloComputation*> HloInstruction::AllCalledComputations() const {
  std::vector<HloComputation*> out;
  for (const CalledComputations& c : called()) {
    out.insert(out.end(), c.computations.begin(), c.computations.end());
  }
  return out;
}

const RawAttribute* HloInstruction::FindRawAttribute(absl::string_view name) const {
  for (const RawAttribute& a : raw_attributes()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

// ================================================================= computation

HloComputation::HloComputation(std::string name) : name_(std::move(name)) {}

HloComputation::~HloComputation() = default;

const std::string& HloComputation::NoExecutionThread() {
  static const auto* const none = new std::string();
  return *none;
}

void HloComputation::set_execution_thread(std::string thread) {
  if (thread.empty()) {
    execution_thread_.reset();
  } else {
    execution_thread_ = std::make_unique<std::string>(std::move(thread));
  }
}

void HloComputation::set_name(std::string name) {
  HloModule* module = parent_;
  if (module == nullptr) {
    name_ = std::move(name);
    return;
  }
  const std::string old_name = name_;
  auto it = module->by_name_.find(absl::string_view(name_));
  if (it != module->by_name_.end() && *it == this) module->by_name_.erase(it);
  name_ = std::move(name);
  module->by_name_.insert(this);
  // Another computation may have shared the old name: it is now the first of that name.
  if (!module->by_name_.contains(absl::string_view(old_name))) {
    for (const auto& other : module->computations_) {
      if (other->name_ == old_name) {
        module->by_name_.insert(other.get());
        break;
      }
    }
  }
}

void HloComputation::IndexInstruction(HloInstruction* instruction) {
  if (by_name_ != nullptr) {
    by_name_->insert(instruction);  // The first instruction of a name stays.
  } else if (instructions_.size() > kIndexThreshold) {
    by_name_ = std::make_unique<hlo_internal::NameIndex<HloInstruction>>();
    by_name_->reserve(instructions_.size() * 2);
    for (const auto& existing : instructions_) by_name_->insert(existing.get());
  }
}

void HloComputation::UnindexInstruction(HloInstruction* instruction) {
  if (by_name_ == nullptr) return;
  auto it = by_name_->find(absl::string_view(instruction->name()));
  if (it != by_name_->end() && *it == instruction) by_name_->erase(it);
}

void HloComputation::RenameInstruction(HloInstruction* instruction, std::string name) {
  if (by_name_ == nullptr) {
    instruction->name_ = std::move(name);
    return;
  }
  const std::string old_name = instruction->name_;
  UnindexInstruction(instruction);
  instruction->name_ = std::move(name);
  by_name_->insert(instruction);
  // Another instruction may have shared the old name: it is now the first of that name.
  if (!by_name_->contains(absl::string_view(old_name))) {
    for (const auto& other : instructions_) {
      if (other->name_ == old_name) {
        by_name_->insert(other.get());
        break;
      }
    }
  }
}

HloInstruction* HloComputation::AddInstruction(std::unique_ptr<HloInstruction> instruction) {
  instruction->parent_ = this;
  instruction->index_ = static_cast<int32_t>(instructions_.size());
  HloInstruction* raw = instruction.get();
  instructions_.push_back(std::move(instruction));
  IndexInstruction(raw);
  return raw;
}

HloInstruction* HloComputation::FindInstruction(absl::string_view name) const {
  if (by_name_ != nullptr) {
    auto it = by_name_->find(name);
    return it == by_name_->end() ? nullptr : *it;
  }
  for (const auto& instruction : instructions_) {
    if (instruction->name() == name) return instruction.get();
  }
  return nullptr;
}

void HloComputation::TruncateInstructions(int64_t count) {
  while (static_cast<int64_t>(instructions_.size()) > count) {
    HloInstruction* last = instructions_.back().get();
    if (root_ == last) root_ = nullptr;
    UnindexInstruction(last);
    instructions_.pop_back();
  }
}

void HloComputation::RemoveInstructionsIf(
    const std::function<bool(const HloInstruction*)>& remove) {
  std::vector<std::unique_ptr<HloInstruction>> kept;
  kept.reserve(instructions_.size());
  for (auto& instruction : instructions_) {
    if (instruction.get() != root_ && remove(instruction.get())) {
      UnindexInstruction(instruction.get());
      continue;
    }
    instruction->index_ = static_cast<int32_t>(kept.size());
    kept.push_back(std::move(instruction));
  }
  instructions_ = std::move(kept);
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
  const size_t n = instructions_.size();
  std::vector<HloInstruction*> order;
  order.reserve(n);
  // Fast path: every operand is an earlier instruction of this computation. Then the DFS below
  // would emit the instructions in text order, so that is the answer.
  bool local = true;
  bool text_order = true;
  for (size_t i = 0; i < n && local; ++i) {
    for (const HloInstruction* operand : instructions_[i]->operands()) {
      if (operand == nullptr) continue;
      if (operand->parent_ != this || operand->index_ < 0 ||
          static_cast<size_t>(operand->index_) >= n ||
          instructions_[operand->index_].get() != operand) {
        local = false;
        break;
      }
      if (static_cast<size_t>(operand->index_) >= i) text_order = false;
    }
  }
  if (local && text_order) {
    for (const auto& instruction : instructions_) order.push_back(instruction.get());
    return order;
  }
  // Iterative DFS with three colours; a grey operand means a cycle. Colours live in a vector
  // indexed by position when every operand is in this computation, else in a map.
  std::vector<uint8_t> colour_by_index;
  absl::flat_hash_map<const HloInstruction*, uint8_t> colour_by_pointer;
  if (local) colour_by_index.assign(n, 0);
  auto colour = [&](const HloInstruction* instruction) -> uint8_t& {
    return local ? colour_by_index[instruction->index_] : colour_by_pointer[instruction];
  };
  std::vector<std::pair<HloInstruction*, size_t>> stack;
  for (const auto& start : instructions_) {
    if (colour(start.get()) != 0) continue;
    stack.clear();
    stack.push_back({start.get(), 0});
    colour(start.get()) = 1;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->operands().size()) {
        HloInstruction* operand = node->operands()[next++];
        if (operand == nullptr) continue;
        uint8_t& c = colour(operand);
        if (c == 1) return {};
        if (c == 0) {
          c = 1;
          stack.push_back({operand, 0});
        }
        continue;
      }
      colour(node) = 2;
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

// ====================================================================== module

HloModule::HloModule(std::string name) : name_(std::move(name)) {}

HloModule::~HloModule() = default;

HloComputation* HloModule::AddComputation(std::unique_ptr<HloComputation> computation) {
  computation->parent_ = this;
  HloComputation* raw = computation.get();
  computations_.push_back(std::move(computation));
  by_name_.insert(raw);  // The first computation of a name stays.
  return raw;
}

HloComputation* HloModule::FindComputation(absl::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : *it;
}

std::unique_ptr<HloModule> HloModule::Clone() const {
  auto copy = std::make_unique<HloModule>(name_);
  std::vector<const HloComputation*> all;
  all.reserve(computations_.size());
  for (const auto& computation : computations_) all.push_back(computation.get());
  HloCloner cloner;
  cloner.CloneComputations(all, *copy);
  if (entry_ != nullptr) {
    HloComputation* entry = cloner.FindComputation(entry_);
    copy->entry_ = entry != nullptr ? entry : entry_;
  }
  copy->num_partitions_ = num_partitions_;
  copy->replica_count_ = replica_count_;
  copy->is_scheduled_ = is_scheduled_;
  copy->raw_header_ = raw_header_;
  copy->source_path_ = source_path_;
  return copy;
}

// ====================================================================== cloner

std::vector<HloComputation*> HloCloner::CloneComputations(
    const std::vector<const HloComputation*>& computations, HloModule& module) {
  std::vector<HloComputation*> copies;
  copies.reserve(computations.size());
  module.ReserveComputations(
      static_cast<int64_t>(module.computations().size() + computations.size()));
  for (const HloComputation* from : computations) {
    auto to = std::make_unique<HloComputation>(from->name());
    to->execution_thread_ = from->execution_thread_ != nullptr
                                ? std::make_unique<std::string>(*from->execution_thread_)
                                : nullptr;
    to->location_ = from->location_;
    to->opaque_ = from->opaque_;
    HloComputation* raw = module.AddComputation(std::move(to));
    computations_[from] = raw;
    copies.push_back(raw);
  }
  // Map every instruction before copying any, so operands defined later in the text (or in
  // another computation) resolve too.
  for (size_t c = 0; c < computations.size(); ++c) {
    const HloComputation* from = computations[c];
    HloComputation* to = copies[c];
    to->ReserveInstructions(from->instruction_count());
    for (const auto& instruction : from->instructions()) {
      std::unique_ptr<HloInstruction> copy = std::make_unique<HloInstruction>(*instruction);
      copy->parent_ = nullptr;
      copy->index_ = -1;
      HloInstruction* raw = to->AddInstruction(std::move(copy));
      instructions_[instruction.get()] = raw;
    }
  }
  for (size_t c = 0; c < computations.size(); ++c) {
    const HloComputation* from = computations[c];
    HloComputation* to = copies[c];
    for (const auto& instruction : to->instructions()) {
      for (HloInstruction*& operand : instruction->operands_) {
        if (HloInstruction* mapped = FindInstruction(operand); mapped != nullptr) operand = mapped;
      }
      if (instruction->extras_ != nullptr) {
        for (CalledComputations& called : instruction->extras_->called) {
          for (HloComputation*& callee : called.computations) {
            if (HloComputation* mapped = FindComputation(callee); mapped != nullptr) {
              callee = mapped;
            }
          }
        }
      }
    }
    if (from->root_ != nullptr) {
      HloInstruction* root = FindInstruction(from->root_);
      to->root_ = root != nullptr ? root : from->root_;
    }
  }
  return copies;
}

std::unique_ptr<HloInstruction> HloCloner::CloneInstruction(
    const HloInstruction& instruction) const {
  auto copy = std::make_unique<HloInstruction>(instruction);
  copy->parent_ = nullptr;
  copy->index_ = -1;
  for (HloInstruction*& operand : copy->operands_) {
    if (HloInstruction* mapped = FindInstruction(operand); mapped != nullptr) operand = mapped;
  }
  if (copy->extras_ != nullptr) {
    for (CalledComputations& called : copy->extras_->called) {
      for (HloComputation*& callee : called.computations) {
        if (HloComputation* mapped = FindComputation(callee); mapped != nullptr) callee = mapped;
      }
    }
  }
  return copy;
}

HloInstruction* HloCloner::FindInstruction(const HloInstruction* from) const {
  auto it = instructions_.find(from);
  return it == instructions_.end() ? nullptr : it->second;
}

HloComputation* HloCloner::FindComputation(const HloComputation* from) const {
  auto it = computations_.find(from);
  return it == computations_.end() ? nullptr : it->second;
}

}  // namespace spmdcheck
