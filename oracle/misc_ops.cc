// Device ids, tokens, pass-through ops, random numbers and the SPMD custom-calls.
#include <cmath>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ir/tile_assignment.h"
#include "oracle/kernel_util.h"
#include "oracle/op_registry.h"
#include "oracle/sharded_values.h"
#include "oracle/sort.h"

namespace spmdcheck::oracle {
namespace {

absl::StatusOr<Literal> IdValue(const HloInstruction& instruction, int64_t id) {
  const Shape& shape = instruction.shape();
  if (!shape.IsScalar() || !IsIntegralType(shape.element_type())) {
    return Unsupported(instruction, absl::StrCat("a device id of shape ", shape.ToString(false)));
  }
  Literal value(shape);
  value.SetInt64(0, id);
  return value;
}

absl::StatusOr<Literal> HandlePartitionId(const HloInstruction& instruction,
                                          absl::Span<const Literal* const>, const EvalEnv& env) {
  return IdValue(instruction, env.partition_id);
}

absl::StatusOr<Literal> HandleReplicaId(const HloInstruction& instruction,
                                        absl::Span<const Literal* const>, const EvalEnv& env) {
  return IdValue(instruction, env.replica_id);
}

absl::StatusOr<Literal> HandleToken(const HloInstruction& instruction,
                                    absl::Span<const Literal* const>, const EvalEnv&) {
  return Literal(instruction.shape());
}

// add-dependency, domain: the value of operand 0.
absl::StatusOr<Literal> HandleFirstOperand(const HloInstruction& instruction,
                                           absl::Span<const Literal* const> operands,
                                           const EvalEnv&) {
  if (operands.empty()) return InstructionError(instruction, "needs an operand");
  return *operands[0];
}

// SplitMix64: a small, well-mixed deterministic generator.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t HashName(absl::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

// rng: uniform in [a, b) or normal(mu, sigma), deterministic from the seed and the device.
// XLA leaves rng's values unspecified; spmdcheck's are reproducible, not XLA's.
absl::StatusOr<Literal> HandleRng(const HloInstruction& instruction,
                                  absl::Span<const Literal* const> operands, const EvalEnv& env) {
  const Shape& shape = instruction.shape();
  if (operands.size() != 2 || !shape.IsArray() || !instruction.attrs().distribution) {
    return InstructionError(instruction, "rng needs two scalar operands and a distribution");
  }
  const bool normal = *instruction.attrs().distribution == "rng_normal";
  const double a = operands[0]->GetDouble(0);
  const double b = operands[1]->GetDouble(0);
  Literal value(shape);
  uint64_t state = Mix(
      env.seed ^ HashName(instruction.name()) ^
      Mix(static_cast<uint64_t>(env.partition_id) * 7919 + static_cast<uint64_t>(env.replica_id)));
  for (int64_t i = 0; i < value.element_count(); ++i) {
    state = Mix(state);
    const double u = static_cast<double>(state >> 11) * 0x1.0p-53;
    if (normal) {
      state = Mix(state);
      const double v = static_cast<double>(state >> 11) * 0x1.0p-53;
      const double z = std::sqrt(-2.0 * std::log(1.0 - u)) * std::cos(2.0 * M_PI * v);
      value.SetDouble(i, a + b * z);
    } else if (IsIntegralType(shape.element_type())) {
      const int64_t lo = operands[0]->GetInt64(0);
      const int64_t hi = operands[1]->GetInt64(0);
      value.SetInt64(
          i, hi > lo ? lo + static_cast<int64_t>(state % static_cast<uint64_t>(hi - lo)) : lo);
    } else {
      value.SetDouble(i, a + (b - a) * u);
    }
  }
  return value;
}

// rng-bit-generator(state) -> (new state, random bits): deterministic from the state and seed
// (not XLA's Philox/ThreeFry streams).
absl::StatusOr<Literal> HandleRngBitGenerator(const HloInstruction& instruction,
                                              absl::Span<const Literal* const> operands,
                                              const EvalEnv& env) {
  const Shape& shape = instruction.shape();
  if (operands.size() != 1 || !shape.IsTuple() || shape.tuple_size() != 2) {
    return InstructionError(instruction, "rng-bit-generator takes a state and returns a pair");
  }
  uint64_t state = Mix(env.seed ^ HashName(instruction.name()));
  for (int64_t i = 0; i < operands[0]->element_count(); ++i) {
    state = Mix(state ^ operands[0]->GetBits(i));
  }
  Literal new_state(shape.tuple_shapes()[0]);
  for (int64_t i = 0; i < new_state.element_count(); ++i) {
    state = Mix(state);
    new_state.SetBits(i, WrapToType(new_state.shape().element_type(), state));
  }
  Literal bits(shape.tuple_shapes()[1]);
  for (int64_t i = 0; i < bits.element_count(); ++i) {
    state = Mix(state);
    bits.SetBits(i, state);
  }
  std::vector<Literal> elements;
  elements.push_back(std::move(new_state));
  elements.push_back(std::move(bits));
  return Literal::Tuple(std::move(elements));
}

// The sharding of the value a manual-region custom-call converts (its operand's annotation).
const HloSharding* OperandSharding(const HloInstruction& instruction) {
  if (instruction.operand_count() < 1) return nullptr;
  const auto& sharding = instruction.operand(0)->sharding();
  return sharding.has_value() ? &*sharding : nullptr;
}

absl::StatusOr<Literal> HandleCustomCall(const HloInstruction& instruction,
                                         absl::Span<const Literal* const> operands,
                                         const EvalEnv& env) {
  const std::string target = instruction.attrs().custom_call_target.value_or("");
  if (IsShardingAnnotationTarget(target) ||
      (target == "SPMDShardToFullShape" && env.num_partitions == 1)) {
    // A sharding annotation is the identity on values.
    return HandleFirstOperand(instruction, operands, env);
  }
  if (target == "SPMDFullToShardShape") {
    // Global view -> this device's shard of the manual region (per the operand's sharding).
    const HloSharding* sharding = OperandSharding(instruction);
    if (operands.size() == 1 && (sharding == nullptr || sharding->IsReplicated()) &&
        operands[0]->shape().Compatible(instruction.shape())) {
      // A replicated value enters the manual region whole on every device.
      return HandleFirstOperand(instruction, operands, env);
    }
    if (operands.size() != 1 || sharding == nullptr || !sharding->IsTiled()) {
      return Unsupported(instruction, "SPMDFullToShardShape without a tiled operand sharding");
    }
    absl::StatusOr<Literal> shard =
        ShardOf(*operands[0], *sharding, env.partition_id, PaddingFill::kZero);
    if (!shard.ok()) return InstructionError(instruction, shard.status().message());
    if (!shard->shape().Compatible(instruction.shape())) {
      return InstructionError(
          instruction, absl::StrCat("the shard is ", shard->shape().ToString(false),
                                    " but the result is ", instruction.shape().ToString(false)));
    }
    return *std::move(shard);
  }
  if (target == "TopK") return EvaluateTopK(instruction, operands, env);
  return Unsupported(instruction, absl::StrCat("custom-call target \"", target, "\""));
}

// SPMDShardToFullShape on N devices: every device receives the full array assembled from the
// shards (the tile of each data index is taken from the first device holding it).
absl::StatusOr<std::vector<Literal>> HandleShardToFull(const CollectiveArgs& args) {
  const HloInstruction& instruction = *args.instruction;
  const std::string target = instruction.attrs().custom_call_target.value_or("");
  if (target != "SPMDShardToFullShape") {
    return Unsupported(instruction, absl::StrCat("custom-call target \"", target, "\""));
  }
  const auto& sharding = instruction.sharding();
  const Shape& full_shape = instruction.shape();
  if (!sharding.has_value() || !sharding->IsTiled() || !full_shape.IsArray()) {
    // Replicated result: every shard already is the full value.
    std::vector<Literal> out;
    for (const auto& operands : *args.operands) out.push_back(*operands[0]);
    return out;
  }
  Literal full(full_shape);
  const int64_t width = full.element_byte_width();
  absl::flat_hash_map<int64_t, size_t> index_of;
  for (size_t i = 0; i < args.devices.size(); ++i) index_of[args.devices[i]] = i;
  std::vector<bool> done(static_cast<size_t>(sharding->NumTiles()), false);
  for (int64_t device = 0; device < sharding->tile_assignment().num_elements(); ++device) {
    std::optional<std::vector<int64_t>> tile = sharding->DataTileIndexOf(device);
    auto it = index_of.find(device);  // Partition ids; replica 0 assembles.
    if (!tile || it == index_of.end()) continue;
    std::vector<int64_t> data_dims(
        sharding->tile_assignment().dims().begin(),
        sharding->tile_assignment().dims().begin() + sharding->TiledDataRank());
    const int64_t linear = LinearIndex(data_dims, *tile);
    if (done[linear]) continue;
    done[linear] = true;
    const Literal& shard = *(*args.operands)[it->second][0];
    const Shape& shard_shape = shard.shape();
    ForEachIndex(shard_shape.dimensions(), [&](absl::Span<const int64_t> local) {
      std::vector<int64_t> global(full_shape.rank());
      for (int64_t k = 0; k < full_shape.rank(); ++k) {
        global[k] = (*tile)[k] * shard_shape.dimensions(k) + local[k];
        if (global[k] >= full_shape.dimensions(k)) return;
      }
      std::memcpy(full.raw_data() + LinearIndex(full_shape.dimensions(), global) * width,
                  shard.raw_data() + LinearIndex(shard_shape.dimensions(), local) * width,
                  static_cast<size_t>(width));
    });
  }
  return std::vector<Literal>(args.devices.size(), full);
}

}  // namespace

void RegisterMiscOps(OpRegistry& registry) {
  registry.Register(HloOpcode::kPartitionId, HandlePartitionId);
  registry.Register(HloOpcode::kReplicaId, HandleReplicaId);
  registry.Register(HloOpcode::kAfterAll, HandleToken);
  registry.Register(HloOpcode::kAddDependency, HandleFirstOperand);
  registry.Register(HloOpcode::kDomain, HandleFirstOperand);
  registry.Register(HloOpcode::kRng, HandleRng);
  registry.Register(HloOpcode::kRngBitGenerator, HandleRngBitGenerator);
  registry.Register(HloOpcode::kCustomCall, HandleCustomCall);
}

absl::StatusOr<std::vector<Literal>> EvaluateShardToFull(const CollectiveArgs& args) {
  return HandleShardToFull(args);
}

}  // namespace spmdcheck::oracle
