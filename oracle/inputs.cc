#include "oracle/inputs.h"

#include <algorithm>
#include <functional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace spmdcheck::oracle {
namespace {

// Operand positions of `instruction` that are indices, and the largest dim they index.
std::vector<std::pair<int64_t, int64_t>> IndexOperands(const HloInstruction& instruction) {
  std::vector<std::pair<int64_t, int64_t>> out;
  auto max_dim = [](const Shape& shape) {
    int64_t m = 0;
    if (shape.IsArray()) {
      for (int64_t d : shape.dimensions()) m = std::max(m, d);
    }
    return m;
  };
  const int64_t n = instruction.operand_count();
  switch (instruction.opcode()) {
    case HloOpcode::kGather:
      if (n == 2) out.push_back({1, max_dim(instruction.operand(0)->shape())});
      break;
    case HloOpcode::kScatter:
      if (n >= 3) out.push_back({(n - 1) / 2, max_dim(instruction.operand(0)->shape())});
      break;
    case HloOpcode::kDynamicSlice:
      for (int64_t i = 1; i < n; ++i) out.push_back({i, max_dim(instruction.operand(0)->shape())});
      break;
    case HloOpcode::kDynamicUpdateSlice:
      for (int64_t i = 2; i < n; ++i) out.push_back({i, max_dim(instruction.operand(0)->shape())});
      break;
    default:
      break;
  }
  return out;
}

}  // namespace

std::vector<ParameterProfile> ProfileParameters(const HloModule& module) {
  std::vector<ParameterProfile> profiles;
  const HloComputation* entry = module.entry();
  if (entry == nullptr) return profiles;
  std::vector<HloInstruction*> params = entry->parameters();
  profiles.resize(params.size());
  absl::flat_hash_map<const HloInstruction*, int64_t> param_number;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i] != nullptr) param_number[params[i]] = static_cast<int64_t>(i);
  }
  for (const auto& instruction : entry->instructions()) {
    for (const auto& [position, bound] : IndexOperands(*instruction)) {
      // Walk up through integer-valued producers to the parameters feeding this index.
      std::vector<const HloInstruction*> stack = {instruction->operand(position)};
      absl::flat_hash_set<const HloInstruction*> seen;
      while (!stack.empty()) {
        const HloInstruction* at = stack.back();
        stack.pop_back();
        if (!seen.insert(at).second) continue;
        auto it = param_number.find(at);
        if (it != param_number.end()) {
          ParameterProfile& profile = profiles[it->second];
          profile.feeds_index = true;
          profile.index_bound = std::max(profile.index_bound, bound);
          continue;
        }
        for (const HloInstruction* operand : at->operands()) {
          const PrimitiveType type = operand->shape().element_type();
          if (IsIntegralType(type) || operand->shape().IsTuple()) stack.push_back(operand);
        }
      }
    }
  }
  return profiles;
}

Literal RandomLiteral(const Shape& shape, const ParameterProfile& profile, InputStyle style,
                      std::mt19937_64& rng) {
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    for (const Shape& element : shape.tuple_shapes()) {
      elements.push_back(RandomLiteral(element, profile, style, rng));
    }
    return Literal::Tuple(std::move(elements));
  }
  Literal literal(shape);
  if (!shape.IsArray()) return literal;
  const PrimitiveType type = shape.element_type();
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    if (type == PrimitiveType::kPred) {
      literal.SetBits(i, rng() & 1);
    } else if (profile.feeds_index && IsIntegralType(type)) {
      const int64_t span = profile.index_bound + 5;
      int64_t v = static_cast<int64_t>(rng() % static_cast<uint64_t>(span)) - 2;
      if (IsUnsignedIntegralType(type) && v < 0) v = 0;
      literal.SetInt64(i, v);
    } else if ((IsFloatingType(type) || IsComplexType(type)) && style == InputStyle::kReals) {
      std::uniform_real_distribution<double> uniform(-1.0, 1.0);
      literal.SetDouble(i, uniform(rng));
    } else if (IsUnsignedIntegralType(type)) {
      literal.SetInt64(i, static_cast<int64_t>(rng() % 7));
    } else {
      literal.SetInt64(i, static_cast<int64_t>(rng() % 7) - 3);
    }
  }
  return literal;
}

uint64_t TrialSeed(uint64_t seed, int64_t trial) {
  uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(trial + 1));
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::vector<Literal> TrialInputs(const HloModule& global, uint64_t seed, int64_t trial,
                                 InputStyle style) {
  const std::vector<ParameterProfile> profiles = ProfileParameters(global);
  std::mt19937_64 rng(TrialSeed(seed, trial));
  std::vector<Literal> inputs;
  const std::vector<HloInstruction*> params = global.entry()->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const ParameterProfile profile = i < profiles.size() ? profiles[i] : ParameterProfile{};
    inputs.push_back(RandomLiteral(params[i]->shape(), profile, style, rng));
  }
  return inputs;
}

}  // namespace spmdcheck::oracle
