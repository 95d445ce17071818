#include "lint/search.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/sharding_algebra.h"
#include "lint/chains.h"

namespace spmdcheck::lint {
namespace {

using analysis::CollectiveCost;

// The chain's parameters and resharding copies are written without layouts.
Shape WithoutLayout(Shape shape) {
  shape.clear_layout();
  return shape;
}

// The parameter holding `value` (the chain's input, or the first value of a segment).
HloInstruction* AddInput(HloComputation& computation, const GlobalValue& value, std::string name) {
  auto parameter = std::make_unique<HloInstruction>(HloOpcode::kParameter, std::move(name),
                                                    WithoutLayout(value.shape));
  parameter->set_parameter_number(0);
  return computation.AddInstruction(std::move(parameter));
}

// `value`'s op named `name`, applied to `operand`.
absl::StatusOr<HloInstruction*> AddOp(HloComputation& computation, const GlobalValue& value,
                                      std::string name, HloInstruction* operand) {
  if (!value.op.has_value()) {
    return absl::InternalError(absl::StrCat("global value ", value.name, " has no op"));
  }
  auto op = std::make_unique<HloInstruction>(*value.op);
  op->set_name(std::move(name));
  op->set_operands({operand});
  op->clear_sharding();
  return computation.AddInstruction(std::move(op));
}

// A module whose entry is `entry` (named like the module) with `root` as its root.
std::unique_ptr<HloModule> GlobalModule(std::unique_ptr<HloComputation> entry, HloInstruction* root,
                                        int64_t num_partitions) {
  auto module = std::make_unique<HloModule>(entry->name());
  module->set_num_partitions(num_partitions);
  entry->set_root(root);
  module->set_entry(module->AddComputation(std::move(entry)));
  return module;
}

// The module holding values [first, last] of the chain (values[first] as the parameter).
absl::StatusOr<std::unique_ptr<HloModule>> ChainSegment(const GlobalChain& chain, size_t first,
                                                        size_t last, int64_t num_partitions) {
  auto entry = std::make_unique<HloComputation>("segment");
  HloInstruction* value = AddInput(*entry, chain.values[first], chain.values[first].name);
  for (size_t i = first + 1; i <= last; ++i) {
    absl::StatusOr<HloInstruction*> next =
        AddOp(*entry, chain.values[i], chain.values[i].name, value);
    if (!next.ok()) return next.status();
    value = *next;
  }
  return GlobalModule(std::move(entry), value, num_partitions);
}

}  // namespace

std::vector<int64_t> InferMesh(const std::vector<HloSharding>& seen, int64_t num_partitions) {
  for (const HloSharding& sharding : seen) {
    if (!sharding.IsTiled()) continue;
    std::optional<IotaTileAssignment> iota = sharding.tile_assignment().AsIota();
    if (!iota.has_value() || iota->num_elements() != num_partitions) continue;
    if (iota->reshape_dims().size() > 1) {
      return std::vector<int64_t>(iota->reshape_dims().begin(), iota->reshape_dims().end());
    }
  }
  // No iota to read a mesh from: the prime factors of the partition count, largest first.
  std::vector<int64_t> factors;
  int64_t n = num_partitions;
  for (int64_t f = 2; f * f <= n; ++f) {
    while (n % f == 0) {
      factors.push_back(f);
      n /= f;
    }
  }
  if (n > 1) factors.push_back(n);
  return factors;
}

bool SameLayout(const HloSharding& a, const HloSharding& b, int64_t rank, int64_t num_partitions) {
  if (TileCounts(a, rank) != TileCounts(b, rank)) return false;
  for (int64_t d = 0; d < num_partitions; ++d) {
    if (PlaceOf(a, rank, d).data_index != PlaceOf(b, rank, d).data_index) {
      return false;
    }
  }
  return true;
}

std::vector<HloSharding> CandidateShardings(const Shape& shape, const std::vector<int64_t>& mesh,
                                            int64_t num_partitions,
                                            const std::vector<HloSharding>& extra) {
  const int64_t rank = shape.rank();
  std::vector<HloSharding> out;
  absl::flat_hash_set<std::string> seen;
  // Deduplicated by layout (which tile each device holds), not by spelling.
  const auto add = [&](const HloSharding& s) {
    if (!s.Validate(shape, num_partitions).ok()) return;
    std::string key = absl::StrJoin(TileCounts(s, rank), ",");
    for (int64_t d = 0; d < num_partitions; ++d) {
      absl::StrAppend(&key, ";", absl::StrJoin(PlaceOf(s, rank, d).data_index, ","));
    }
    if (seen.insert(std::move(key)).second) out.push_back(s);
  };
  for (const HloSharding& s : extra) {
    if (s.IsReplicated() || (s.IsTiled() && s.TiledDataRank() == rank)) add(s);
  }
  const int64_t axes = static_cast<int64_t>(mesh.size());
  std::vector<int64_t> place(axes, rank);  // rank = replicated.
  std::function<void(int64_t)> assign = [&](int64_t axis) {
    if (axis == axes) {
      std::vector<int64_t> counts(rank, 1);
      std::vector<int64_t> axes_on(rank, 0);
      for (int64_t a = 0; a < axes; ++a) {
        if (place[a] < rank) {
          counts[place[a]] *= mesh[a];
          if (++axes_on[place[a]] > 1) return;  // One axis per dim (extras may have more).
        }
      }
      for (int64_t d = 0; d < rank; ++d) {
        if (shape.dimensions()[d] % counts[d] != 0) return;
      }
      absl::StatusOr<HloSharding> s = BuildSharding(counts, 1, num_partitions, [&](int64_t device) {
        std::vector<int64_t> coords(axes);
        for (int64_t a = axes - 1; a >= 0; --a) {
          coords[a] = device % mesh[a];
          device /= mesh[a];
        }
        DevicePlace p;
        p.data_index.assign(rank, 0);
        for (int64_t a = 0; a < axes; ++a) {
          if (place[a] < rank) {
            p.data_index[place[a]] = p.data_index[place[a]] * mesh[a] + coords[a];
          }
        }
        return p;
      });
      if (s.ok()) add(*s);
      return;
    }
    for (int64_t d = 0; d <= rank; ++d) {
      place[axis] = d;
      assign(axis + 1);
    }
  };
  assign(0);
  return out;
}

std::optional<HloSharding> LocalResultSharding(const HloInstruction& op, const HloSharding& operand,
                                               int64_t num_partitions) {
  if (op.operand_count() != 1 || !op.shape().IsArray()) return std::nullopt;
  const Shape& in = op.operand(0)->shape();
  const Shape& out = op.shape();
  if (!IsPlannable(operand) || ManualSubgroupCount(operand) != 1) {
    return std::nullopt;
  }
  const TileIndex counts = TileCounts(operand, in.rank());
  switch (op.opcode()) {
    case HloOpcode::kCopy:
      return operand;
    case HloOpcode::kSlice: {
      if (!op.attrs().slice.has_value()) return std::nullopt;
      for (int64_t d = 0; d < in.rank(); ++d) {
        const SliceDim& sd = (*op.attrs().slice)[d];
        if (counts[d] == 1 || (sd.start == 0 && sd.stride == 1 && sd.limit == in.dimensions(d))) {
          continue;
        }
        // A leading slice keeps a tiled dim's tiles when the tile size does not change.
        const int64_t t = counts[d];
        if (sd.start != 0 || sd.stride != 1 ||
            (in.dimensions(d) + t - 1) / t != (out.dimensions(d) + t - 1) / t) {
          return std::nullopt;
        }
      }
      return operand;
    }
    case HloOpcode::kTranspose:
      if (!op.attrs().dimensions.has_value()) return std::nullopt;
      return TransposedSharding(operand, *op.attrs().dimensions, num_partitions);
    case HloOpcode::kReshape: {
      std::optional<HloSharding> result = ReshapedSharding(in, out, operand, num_partitions);
      if (!result.has_value()) return std::nullopt;
      const TileIndex out_counts = TileCounts(*result, out.rank());
      const std::vector<std::optional<int64_t>> out_to_in = ReshapeDimMap(in, out);
      int64_t in_local = 1, out_local = 1;
      for (int64_t d = 0; d < in.rank(); ++d) {
        in_local *= (in.dimensions(d) + counts[d] - 1) / counts[d];
      }
      for (int64_t j = 0; j < out.rank(); ++j) {
        const int64_t c = out_counts[j];
        out_local *= (out.dimensions(j) + c - 1) / c;
        if (c == 1) continue;
        const int64_t i = *out_to_in[j];
        if (in.dimensions(i) != out.dimensions(j) &&
            (out.dimensions(j) % c != 0 || in.dimensions(i) % c != 0)) {
          return std::nullopt;
        }
      }
      if (in_local != out_local) return std::nullopt;
      return result;
    }
    case HloOpcode::kBroadcast: {
      if (!op.attrs().dimensions.has_value()) return std::nullopt;
      const std::vector<int64_t>& map = *op.attrs().dimensions;
      std::vector<int64_t> out_counts(out.rank(), 1);
      for (size_t i = 0; i < map.size(); ++i) {
        if (in.dimensions(i) != out.dimensions(map[i]) && counts[i] > 1) return std::nullopt;
        out_counts[map[i]] = counts[i];
      }
      absl::StatusOr<HloSharding> result =
          BuildSharding(out_counts, 1, num_partitions, [&](int64_t device) {
            DevicePlace p = PlaceOf(operand, in.rank(), device);
            DevicePlace q;
            q.data_index.assign(out.rank(), 0);
            for (size_t i = 0; i < map.size(); ++i) q.data_index[map[i]] = p.data_index[i];
            return q;
          });
      if (!result.ok()) return std::nullopt;
      return *std::move(result);
    }
    default:
      return std::nullopt;
  }
}

namespace {

// The global module of the chain in which value i is computed under computed[i] and, where
// held[i] differs, resharded to it by a copy (the copy takes the value's name; the value computed
// is NAME.computed).
absl::StatusOr<std::unique_ptr<HloModule>> PlannedModule(const GlobalChain& chain,
                                                         const std::vector<bool>& resharded,
                                                         int64_t num_partitions) {
  auto entry = std::make_unique<HloComputation>("proposed");
  HloInstruction* value = nullptr;
  for (size_t i = 0; i < chain.values.size(); ++i) {
    const GlobalValue& v = chain.values[i];
    std::string name = resharded[i] ? absl::StrCat(v.name, ".computed") : v.name;
    if (i == 0) {
      value = AddInput(*entry, v, std::move(name));
    } else {
      absl::StatusOr<HloInstruction*> next = AddOp(*entry, v, std::move(name), value);
      if (!next.ok()) return next.status();
      value = *next;
    }
    if (resharded[i]) {
      auto copy =
          std::make_unique<HloInstruction>(HloOpcode::kCopy, v.name, WithoutLayout(v.shape));
      copy->AppendOperand(value);
      value = entry->AddInstruction(std::move(copy));
    }
  }
  return GlobalModule(std::move(entry), value, num_partitions);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HloModule>> PartitionGlobalChain(
    const GlobalChain& chain, const std::vector<HloSharding>& shardings, int64_t num_partitions,
    const partitioner::Planner& planner) {
  return PartitionPlannedChain(chain, shardings, shardings, num_partitions, planner);
}

absl::StatusOr<std::unique_ptr<HloModule>> PartitionPlannedChain(
    const GlobalChain& chain, const std::vector<HloSharding>& computed,
    const std::vector<HloSharding>& held, int64_t num_partitions,
    const partitioner::Planner& planner) {
  const size_t k = chain.values.size();
  std::vector<bool> resharded(k, false);
  for (size_t i = 0; i < k; ++i) {
    resharded[i] =
        !SameLayout(computed[i], held[i], chain.values[i].shape.rank(), num_partitions) ||
        (i + 1 == k && !(computed[i] == held[i]));
  }
  absl::StatusOr<std::unique_ptr<HloModule>> global =
      PlannedModule(chain, resharded, num_partitions);
  if (!global.ok()) return global.status();
  for (size_t i = 0; i < k; ++i) {
    const std::string& name = chain.values[i].name;
    HloInstruction* value = (*global)->entry()->FindInstruction(name);
    if (value == nullptr) return absl::InternalError(absl::StrCat("lost ", name));
    value->set_sharding(held[i]);
    if (resharded[i]) {
      (*global)
          ->entry()
          ->FindInstruction(absl::StrCat(name, ".computed"))
          ->set_sharding(computed[i]);
    }
  }
  return planner.Partition(**global, num_partitions);
}

absl::StatusOr<SearchResult> SearchShardings(
    const GlobalChain& chain, const HloSharding& input_sharding, const HloSharding& end_sharding,
    const std::vector<int64_t>& mesh, int64_t num_partitions,
    const analysis::DomainWeights* weights, const partitioner::Planner& planner) {
  const size_t k = chain.values.size();
  if (k < 2) return absl::InvalidArgumentError("the chain has no global op");
  absl::StatusOr<std::unique_ptr<HloModule>> global = ChainSegment(chain, 0, k - 1, num_partitions);
  if (!global.ok()) return global.status();
  std::vector<const HloInstruction*> ops(k, nullptr);
  for (size_t i = 0; i < k; ++i) {
    ops[i] = (*global)->entry()->FindInstruction(chain.values[i].name);
    if (ops[i] == nullptr) return absl::InternalError("global chain value lost");
  }
  std::vector<std::vector<HloSharding>> candidates(k);
  for (size_t i = 0; i + 1 < k; ++i) {
    // Resharding the input before the first op only pays when the op cannot run on it locally
    // or grows the data (a broadcast).
    if (i == 0 && ops[1]->opcode() != HloOpcode::kBroadcast &&
        LocalResultSharding(*ops[1], input_sharding, num_partitions).has_value()) {
      candidates[0] = {input_sharding};
      continue;
    }
    std::vector<HloSharding> extra;
    if (i == 0) extra.push_back(input_sharding);
    if (chain.values[i].current.has_value()) extra.push_back(*chain.values[i].current);
    extra.push_back(input_sharding);
    extra.push_back(end_sharding);
    candidates[i] = CandidateShardings(chain.values[i].shape, mesh, num_partitions, extra);
  }
  candidates[k - 1] = {end_sharding};
  for (size_t i = 1; i + 1 < k; ++i) {
    if (chain.values[i].fixed && chain.values[i].current.has_value()) {
      candidates[i] = {*chain.values[i].current};
    }
  }
  SearchResult result;
  // Price of resharding value i from `from` to `to` (weighted by the topology when given).
  const auto reshard = [&](size_t i, const HloSharding& from,
                           const HloSharding& to) -> std::optional<int64_t> {
    ++result.transitions_priced;
    if (SameLayout(from, to, chain.values[i].shape.rank(), num_partitions)) return 0;
    absl::StatusOr<int64_t> score =
        planner.ReshardScore(chain.values[i].shape, from, to, num_partitions, weights);
    if (!score.ok()) return std::nullopt;
    return *score;
  };
  constexpr int64_t kInfinity = std::numeric_limits<int64_t>::max() / 4;
  // Ties on cost go to the assignment that keeps less data per device (summed over values).
  const auto local_elements = [&](size_t i, const HloSharding& sharding) {
    const TileIndex counts = TileCounts(sharding, chain.values[i].shape.rank());
    int64_t elements = 1;
    for (int64_t d = 0; d < chain.values[i].shape.rank(); ++d) {
      elements *= (chain.values[i].shape.dimensions(d) + counts[d] - 1) / counts[d];
    }
    return elements;
  };
  std::vector<std::vector<int64_t>> best(k), memory(k), from(k);
  best[0].assign(candidates[0].size(), kInfinity);
  memory[0].assign(candidates[0].size(), 0);
  from[0].assign(candidates[0].size(), -1);
  for (size_t c = 0; c < candidates[0].size(); ++c) {
    if (std::optional<int64_t> cost = reshard(0, input_sharding, candidates[0][c])) {
      best[0][c] = *cost;
      memory[0][c] = local_elements(0, candidates[0][c]);
    }
  }
  for (size_t i = 1; i < k; ++i) {
    best[i].assign(candidates[i].size(), kInfinity);
    memory[i].assign(candidates[i].size(), 0);
    from[i].assign(candidates[i].size(), -1);
    // Cheapest predecessors first, so that the bound below prunes early.
    std::vector<size_t> order(candidates[i - 1].size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return best[i - 1][x] < best[i - 1][y]; });
    for (size_t a : order) {
      if (best[i - 1][a] >= kInfinity) break;
      std::optional<HloSharding> computed =
          LocalResultSharding(*ops[i], candidates[i - 1][a], num_partitions);
      if (!computed.has_value()) continue;
      for (size_t b = 0; b < candidates[i].size(); ++b) {
        // Any resharding costs at least one collective: skip the planner when that cannot win.
        const bool free =
            SameLayout(*computed, candidates[i][b], chain.values[i].shape.rank(), num_partitions);
        if (!free && best[i - 1][a] + analysis::kAlphaBytes > best[i][b]) continue;
        std::optional<int64_t> cost = free ? 0 : reshard(i, *computed, candidates[i][b]);
        if (!cost.has_value()) continue;
        const int64_t total = best[i - 1][a] + *cost;
        const int64_t held = memory[i - 1][a] + local_elements(i, candidates[i][b]);
        if (total < best[i][b] || (total == best[i][b] && held < memory[i][b])) {
          best[i][b] = total;
          memory[i][b] = held;
          from[i][b] = static_cast<int64_t>(a);
        }
      }
    }
  }
  if (best[k - 1][0] >= kInfinity) {
    return absl::UnimplementedError("no assignment of shardings computes the chain locally");
  }
  std::vector<int64_t> pick(k, 0);
  for (size_t i = k - 1; i > 0; --i) pick[i - 1] = from[i][pick[i]];
  std::vector<HloSharding> computed(k);
  for (size_t i = 0; i < k; ++i) result.shardings.push_back(candidates[i][pick[i]]);
  computed[0] = input_sharding;
  for (size_t i = 1; i < k; ++i) {
    computed[i] = *LocalResultSharding(*ops[i], result.shardings[i - 1], num_partitions);
  }
  std::optional<size_t> first_difference;
  for (size_t i = 1; i + 1 < k; ++i) {
    const std::optional<HloSharding>& current = chain.values[i].current;
    if (!current.has_value() || chain.values[i].holder.empty() ||
        SameLayout(*current, result.shardings[i], chain.values[i].shape.rank(), num_partitions)) {
      continue;
    }
    if (!first_difference.has_value()) first_difference = i;
    const std::optional<HloSharding>& before =
        i == 1 ? std::optional<HloSharding>(input_sharding) : chain.values[i - 1].current;
    std::optional<HloSharding> local;
    if (before.has_value()) local = LocalResultSharding(*ops[i], *before, num_partitions);
    if (!local.has_value() ||
        !SameLayout(*local, *current, chain.values[i].shape.rank(), num_partitions)) {
      result.cause = i;
      break;
    }
  }
  if (!result.cause.has_value()) result.cause = first_difference;
  absl::StatusOr<std::unique_ptr<HloModule>> partitioned =
      PartitionPlannedChain(chain, computed, result.shardings, num_partitions, planner);
  if (!partitioned.ok()) return partitioned.status();
  result.partitioned = *std::move(partitioned);
  result.cost = analysis::CostOfModule(*result.partitioned, num_partitions).total;
  result.weighted =
      weights == nullptr
          ? result.cost
          : analysis::CostOfModule(*result.partitioned, num_partitions, weights).total;
  return result;
}

}  // namespace spmdcheck::lint
