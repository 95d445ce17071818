#include "partitioner/reshard.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "ir/sharding_algebra.h"

namespace spmdcheck::partitioner {

using analysis::CollectiveCost;

namespace {

// Searching two data-moving steps deep is quadratic in the candidate moves; above this many
// devices the planner searches one step deep.
constexpr int64_t kDeepSearchDeviceLimit = 1024;

int64_t Bytes(const Shape& local) { return local.ByteSize(); }

std::vector<int64_t> TiledDims(const HloSharding& s, int64_t rank) {
  std::vector<int64_t> dims;
  TileIndex counts = TileCounts(s, rank);
  for (int64_t k = 0; k < rank; ++k) {
    if (counts[k] > 1) dims.push_back(k);
  }
  return dims;
}

// ---- Step semantics on shardings (no HLO) ----

struct AllGatherEffect {
  HloSharding result;
  CollectiveCost cost;
};

absl::StatusOr<AllGatherEffect> AllGatherOver(const Shape& shape, const HloSharding& from,
                                              std::vector<int64_t> dims, int64_t n_devices) {
  std::sort(dims.rbegin(), dims.rend());
  HloSharding cur = from;
  CollectiveCost cost;
  const int64_t rank = shape.rank();
  for (int64_t k : dims) {
    const int64_t n = TileCounts(cur, rank)[k];
    if (n <= 1) continue;
    const int64_t b = Bytes(cur.TileShape(shape));
    cost.collectives += 1;
    cost.max_recv_bytes += (n - 1) * b;
    cost.max_send_bytes += (n - 1) * b;
    absl::StatusOr<HloSharding> next = FoldDims(cur, rank, {k}, n_devices);
    if (!next.ok()) return next.status();
    cur = *next;
  }
  return AllGatherEffect{cur, cost};
}

absl::StatusOr<AllGatherEffect> AllToAllMove(const Shape& shape, const HloSharding& from, int64_t a,
                                             int64_t b, int64_t n_devices) {
  const int64_t rank = shape.rank();
  TileIndex counts = TileCounts(from, rank);
  const int64_t n = counts[a];
  if (n <= 1 || counts[b] != 1) return absl::InvalidArgumentError("not an all-to-all move");
  TileIndex new_counts = counts;
  new_counts[a] = 1;
  new_counts[b] = n;
  absl::StatusOr<HloSharding> result =
      BuildSharding(new_counts, ManualSubgroupCount(from), n_devices, [&](int64_t d) {
        DevicePlace p = PlaceOf(from, rank, d);
        p.data_index[b] = p.data_index[a];
        p.data_index[a] = 0;
        return p;
      });
  if (!result.ok()) return result.status();
  Shape local = from.TileShape(shape);
  const int64_t size_b = shape.dimensions(b);
  local.set_dimensions(b, ((size_b + n - 1) / n) * n);
  CollectiveCost cost;
  cost.collectives = 1;
  cost.max_recv_bytes = (n - 1) * Bytes(local) / n;
  cost.max_send_bytes = cost.max_recv_bytes;
  return AllGatherEffect{*result, cost};
}

// Gathers dim k (at most one element per tile) with a masked all-reduce over its groups.
absl::StatusOr<AllGatherEffect> AllReduceGatherDim(const Shape& shape, const HloSharding& from,
                                                   int64_t k, int64_t n_devices) {
  const int64_t rank = shape.rank();
  const int64_t n = TileCounts(from, rank)[k];
  const int64_t size = shape.dimensions(k);
  if (n <= 1 || size >= n) return absl::InvalidArgumentError("not a sparse dim");
  absl::StatusOr<HloSharding> result = FoldDims(from, rank, {k}, n_devices);
  if (!result.ok()) return result.status();
  Shape local = from.TileShape(shape);
  local.set_dimensions(k, size);
  CollectiveCost cost;
  cost.collectives = 1;
  if (size == 1) {
    // One holder per group: a collective-broadcast from it.
    cost.max_recv_bytes = Bytes(local);
    cost.max_send_bytes = (n - 1) * Bytes(local);
  } else {
    cost.max_recv_bytes = 2 * (n - 1) * Bytes(local) / n;
    cost.max_send_bytes = cost.max_recv_bytes;
  }
  return AllGatherEffect{*result, cost};
}

// `from`'s tile grid with the devices placed so that the dims `to` tiles alike (all but
// `changed`) already sit where `to` wants them; devices keep their own place along `changed`
// where they can. nullopt when no such placement exists.
std::optional<HloSharding> PermuteFirstTarget(const Shape& shape, const HloSharding& from,
                                              const HloSharding& to,
                                              const std::vector<int64_t>& changed,
                                              int64_t n_devices) {
  const int64_t rank = shape.rank();
  TileIndex from_counts = TileCounts(from, rank);
  std::vector<int64_t> g_counts;
  for (int64_t k : changed) g_counts.push_back(from_counts[k]);
  int64_t g = 1;
  for (int64_t c : g_counts) g *= c;
  // Devices grouped by their place under `to` on the unchanged dims.
  std::map<TileIndex, std::vector<int64_t>> groups;
  for (int64_t d = 0; d < n_devices; ++d) {
    DevicePlace t = PlaceOf(to, rank, d);
    for (int64_t k : changed) t.data_index[k] = 0;
    groups[t.data_index].push_back(d);
  }
  std::vector<std::vector<int64_t>> g_index(n_devices);
  for (auto& [key, members] : groups) {
    if (members.size() % g != 0) return std::nullopt;
    const int64_t replicas = static_cast<int64_t>(members.size()) / g;
    std::vector<int64_t> capacity(g, replicas);
    std::vector<int64_t> pending;
    for (int64_t d : members) {
      DevicePlace f = PlaceOf(from, rank, d);
      std::vector<int64_t> own;
      for (int64_t k : changed) own.push_back(f.data_index[k]);
      const int64_t linear = LinearIndex(g_counts, own);
      if (capacity[linear] > 0) {
        --capacity[linear];
        g_index[d] = own;
      } else {
        pending.push_back(d);
      }
    }
    int64_t next = 0;
    for (int64_t d : pending) {
      while (capacity[next] == 0) ++next;
      --capacity[next];
      g_index[d] = MultiIndex(g_counts, next);
    }
  }
  absl::StatusOr<HloSharding> result = BuildSharding(from_counts, 1, n_devices, [&](int64_t d) {
    DevicePlace p = PlaceOf(to, rank, d);
    for (size_t i = 0; i < changed.size(); ++i) p.data_index[changed[i]] = g_index[d][i];
    return p;
  });
  if (!result.ok()) return std::nullopt;
  return *result;
}

// Per device and dim: the offset into the local piece under `from` where the piece under `to`
// starts, and how much high padding the local piece needs first. nullopt when some device does
// not hold what it must keep.
struct SliceOffsets {
  std::vector<std::vector<int64_t>> offset;  // [dim][device]
  std::vector<int64_t> pad_high;             // [dim]
};

// Fills `out` (when given) and returns true, or returns false. The regions are computed here
// (as RegionOf does) from each device's place: this runs for every candidate plan.
bool DynamicSliceOffsets(const Shape& shape, const HloSharding& from, const HloSharding& to,
                         int64_t n_devices, SliceOffsets* out) {
  const int64_t rank = shape.rank();
  // Entering manual subgroups from a value every group holds whole is a slice; otherwise the
  // manual groups must stay as they are.
  const bool entering_manual = ManualSubgroupCount(from) == 1;
  if (!entering_manual && ManualSubgroupCount(from) != ManualSubgroupCount(to)) return false;
  const TileIndex from_counts = TileCounts(from, rank);
  const TileIndex to_counts = TileCounts(to, rank);
  TileIndex from_per(rank), to_per(rank);  // Padded tile sizes == local dims.
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t size = shape.dimensions(k);
    from_per[k] = (size + from_counts[k] - 1) / from_counts[k];
    to_per[k] = (size + to_counts[k] - 1) / to_counts[k];
  }
  if (out != nullptr) {
    out->offset.assign(rank, std::vector<int64_t>(n_devices, 0));
    out->pad_high.assign(rank, 0);
  }
  for (int64_t d = 0; d < n_devices; ++d) {
    const DevicePlace held = PlaceOf(from, rank, d);
    const DevicePlace want = PlaceOf(to, rank, d);
    if (!entering_manual && held.manual_index != want.manual_index) return false;
    for (int64_t k = 0; k < rank; ++k) {
      const int64_t size = shape.dimensions(k);
      const int64_t held_padded = held.data_index[k] * from_per[k];
      const int64_t want_padded = want.data_index[k] * to_per[k];
      const int64_t want_start = std::min(want_padded, size);
      const int64_t want_limit = std::min(want_padded + to_per[k], size);
      int64_t offset = 0;
      if (want_start < want_limit) {
        if (want_start < std::min(held_padded, size) ||
            want_limit > std::min(held_padded + from_per[k], size)) {
          return false;
        }
        offset = want_padded - held_padded;
      }
      if (out != nullptr) {
        out->offset[k][d] = offset;
        out->pad_high[k] = std::max(out->pad_high[k], offset + to_per[k] - from_per[k]);
      }
    }
  }
  return true;
}

// Pairs (source, target) moving every tile from its holders under `from` to its holders under
// `to` (same tile grid): identity pairs first, then the remaining holders in device order.
SourceTargetPairs PermutePairs(const HloSharding& from, const HloSharding& to, int64_t rank,
                               int64_t n_devices) {
  std::map<std::pair<TileIndex, int64_t>, std::vector<int64_t>> sources, targets;
  for (int64_t d = 0; d < n_devices; ++d) {
    DevicePlace f = PlaceOf(from, rank, d);
    DevicePlace t = PlaceOf(to, rank, d);
    sources[{f.data_index, f.manual_index}].push_back(d);
    targets[{t.data_index, t.manual_index}].push_back(d);
  }
  SourceTargetPairs pairs;
  for (auto& [tile, target_devices] : targets) {
    std::vector<int64_t>& source_devices = sources[tile];
    std::vector<int64_t> unmatched_targets;
    std::vector<bool> used(source_devices.size(), false);
    for (int64_t t : target_devices) {
      auto it = std::find(source_devices.begin(), source_devices.end(), t);
      if (it != source_devices.end()) {
        used[it - source_devices.begin()] = true;
        pairs.push_back({t, t});
      } else {
        unmatched_targets.push_back(t);
      }
    }
    size_t next = 0;
    for (int64_t t : unmatched_targets) {
      while (next < used.size() && used[next]) ++next;
      if (next >= used.size()) break;
      used[next] = true;
      pairs.push_back({source_devices[next], t});
    }
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

CollectiveCost PermuteCost(const Shape& shape, const HloSharding& from, const HloSharding& to,
                           int64_t n_devices) {
  CollectiveCost cost;
  SourceTargetPairs pairs = PermutePairs(from, to, shape.rank(), n_devices);
  bool moves = false;
  for (const auto& [s, t] : pairs) moves = moves || s != t;
  if (!moves) return cost;
  cost.collectives = 1;
  cost.collective_permutes = 1;
  cost.max_recv_bytes = Bytes(to.TileShape(shape));
  cost.max_send_bytes = cost.max_recv_bytes;
  return cost;
}

// `to`'s tile grid with devices placed so that each can dynamic-slice its tile out of what it
// holds under `from` (preferring the device's own place under `to`); nullopt when the greedy
// placement fails.
std::optional<HloSharding> SliceableTarget(const Shape& shape, const HloSharding& from,
                                           const HloSharding& to, int64_t n_devices) {
  const int64_t rank = shape.rank();
  if (!to.IsTiled() || ManualSubgroupCount(to) != 1 || ManualSubgroupCount(from) != 1) {
    return std::nullopt;
  }
  TileIndex counts = TileCounts(to, rank);
  int64_t tiles = 1;
  for (int64_t c : counts) tiles *= c;
  const int64_t replicas = n_devices / tiles;
  // Valid range [start, limit) of tile index t along dim k under `to`.
  std::vector<HeldRegion> held_by(n_devices);
  for (int64_t d = 0; d < n_devices; ++d) held_by[d] = RegionOf(from, shape, d);
  auto tile_fits = [&](int64_t d, absl::Span<const int64_t> index) {
    const HeldRegion& held = held_by[d];
    for (int64_t k = 0; k < rank; ++k) {
      const int64_t size = shape.dimensions(k);
      const int64_t per = (size + counts[k] - 1) / counts[k];
      const int64_t start = std::min(index[k] * per, size);
      const int64_t limit = std::min(start + per, size);
      if (start < limit && (start < held.start[k] || limit > held.limit[k])) return false;
    }
    return true;
  };
  std::vector<int64_t> capacity(tiles, replicas);
  std::vector<std::vector<int64_t>> tile_index(tiles);
  for (int64_t t = 0; t < tiles; ++t) tile_index[t] = MultiIndex(counts, t);
  std::vector<std::optional<std::vector<int64_t>>> assigned(n_devices);
  for (int64_t d = 0; d < n_devices; ++d) {
    DevicePlace own = PlaceOf(to, rank, d);
    const int64_t linear = LinearIndex(counts, own.data_index);
    if (capacity[linear] > 0 && tile_fits(d, own.data_index)) {
      --capacity[linear];
      assigned[d] = std::vector<int64_t>(own.data_index.begin(), own.data_index.end());
    }
  }
  for (int64_t d = 0; d < n_devices; ++d) {
    if (assigned[d].has_value()) continue;
    for (int64_t t = 0; t < tiles && !assigned[d].has_value(); ++t) {
      if (capacity[t] == 0) continue;
      const std::vector<int64_t>& index = tile_index[t];
      if (tile_fits(d, index)) {
        --capacity[t];
        assigned[d] = index;
      }
    }
    if (!assigned[d].has_value()) return std::nullopt;
  }
  absl::StatusOr<HloSharding> result = BuildSharding(counts, 1, n_devices, [&](int64_t d) {
    DevicePlace p;
    p.data_index.assign(assigned[d]->begin(), assigned[d]->end());
    return p;
  });
  if (!result.ok()) return std::nullopt;
  return *result;
}

// How PlanArray searches: the naive plan only, or the two-step search with or without pruning
// the candidates that cannot beat the best plan so far.
enum class PlanSearch { kNaive, kPruned, kExhaustive };

class Planner {
 public:
  Planner(const Shape& shape, const HloSharding& to, int64_t n_devices, bool prune)
      : shape_(shape), to_(to), n_(n_devices), rank_(shape.rank()), prune_(prune) {}

  // True when pruning and no plan of at least `min_steps` steps whose first steps already score
  // `score` can be kept: scores only add up along a plan (CollectiveCost::Score is linear in
  // non-negative counts), and Offer keeps a plan only when it scores less than the best, or the
  // same with fewer steps. Skipping such candidates leaves the chosen plan unchanged.
  bool Hopeless(int64_t score, size_t min_steps) const {
    if (!prune_ || !best_.has_value()) return false;
    const int64_t best = best_->cost.Score();
    return score > best || (score == best && min_steps >= best_->steps.size());
  }

  // Adds every way to finish from `cur` (after `prefix`) to the candidates. The prefix is
  // passed by pointer: it is only copied into a plan that beats the best so far.
  void Finish(absl::Span<const ReshardStep* const> prefix, const HloSharding& cur) {
    int64_t prefix_score = 0;
    for (const ReshardStep* s : prefix) prefix_score += s->cost.Score();
    if (Hopeless(prefix_score, prefix.size())) return;
    if (cur == to_) {
      Offer(prefix);
      return;
    }
    if (SameTileGrid(cur, to_, rank_)) {
      Offer(prefix,
            {{ReshardStepKind::kCollectivePermute, {}, to_, PermuteCost(shape_, cur, to_, n_)}});
      return;
    }
    if (DynamicSliceOffsets(shape_, cur, to_, n_, nullptr)) {
      Offer(prefix, {{ReshardStepKind::kDynamicSlice, {}, to_, {}}});
      return;
    }
    std::optional<HloSharding> sliceable = SliceableTarget(shape_, cur, to_, n_);
    if (sliceable.has_value() && DynamicSliceOffsets(shape_, cur, *sliceable, n_, nullptr)) {
      Offer(prefix, {{ReshardStepKind::kDynamicSlice, {}, *sliceable, {}},
                     {ReshardStepKind::kCollectivePermute,
                      {},
                      to_,
                      PermuteCost(shape_, *sliceable, to_, n_)}});
    }
  }

  // Data-moving first steps from `cur`.
  std::vector<ReshardStep> Moves(const HloSharding& cur) {
    std::vector<ReshardStep> moves;
    std::vector<int64_t> tiled = TiledDims(cur, rank_);
    const int64_t subsets = int64_t{1} << tiled.size();
    // AllGatherOver(cur, dims of mask) folds the dims from the highest down, so its result is
    // that of the mask without its lowest dim, folded once more along that dim: each subset
    // costs one fold (as AllGatherOver, a failed fold drops every subset containing it).
    std::vector<std::optional<AllGatherEffect>> gathered(subsets);
    gathered[0] = AllGatherEffect{cur, {}};
    for (int64_t mask = 1; mask < subsets; ++mask) {
      const std::optional<AllGatherEffect>& before = gathered[mask & (mask - 1)];
      if (!before.has_value()) continue;
      const int64_t low = std::countr_zero(static_cast<uint64_t>(mask));
      absl::StatusOr<AllGatherEffect> step =
          AllGatherOver(shape_, before->result, {tiled[low]}, n_);
      if (!step.ok()) continue;
      AllGatherEffect effect{step->result, before->cost};
      effect.cost += step->cost;
      std::vector<int64_t> dims;
      for (int64_t i = static_cast<int64_t>(tiled.size()) - 1; i >= 0; --i) {
        if (mask & (int64_t{1} << i)) dims.push_back(tiled[i]);
      }
      moves.push_back({ReshardStepKind::kAllGather, dims, effect.result, effect.cost});
      gathered[mask] = std::move(effect);
    }
    for (int64_t k : tiled) {
      absl::StatusOr<AllGatherEffect> effect = AllReduceGatherDim(shape_, cur, k, n_);
      if (!effect.ok()) continue;
      moves.push_back({ReshardStepKind::kAllReduceGather, {k}, effect->result, effect->cost});
    }
    TileIndex counts = TileCounts(cur, rank_);
    for (int64_t a : tiled) {
      for (int64_t b = 0; b < rank_; ++b) {
        if (b == a || counts[b] != 1) continue;
        absl::StatusOr<AllGatherEffect> effect = AllToAllMove(shape_, cur, a, b, n_);
        if (!effect.ok()) continue;
        moves.push_back({ReshardStepKind::kAllToAll, {a, b}, effect->result, effect->cost});
      }
    }
    return moves;
  }

  std::optional<ReshardPlan> best() const { return best_; }

  // `steps` then `tail`: kept when cheaper than the best so far (fewer steps on a tie). The
  // plan is only copied together when it is kept.
  void Offer(absl::Span<const ReshardStep* const> steps,
             std::initializer_list<ReshardStep> tail = {}) {
    CollectiveCost cost;
    for (const ReshardStep* s : steps) cost += s->cost;
    for (const ReshardStep& s : tail) cost += s.cost;
    const size_t size = steps.size() + tail.size();
    if (best_.has_value() &&
        !(cost.Score() < best_->cost.Score() ||
          (cost.Score() == best_->cost.Score() && size < best_->steps.size()))) {
      return;
    }
    ReshardPlan plan;
    plan.steps.reserve(size);
    for (const ReshardStep* s : steps) plan.steps.push_back(*s);
    plan.steps.insert(plan.steps.end(), tail.begin(), tail.end());
    plan.cost = cost;
    best_ = std::move(plan);
  }

 private:
  const Shape& shape_;
  const HloSharding& to_;
  int64_t n_;
  int64_t rank_;
  bool prune_;
  std::optional<ReshardPlan> best_;
};

absl::Status CheckFits(const Shape& shape, const HloSharding& s, int64_t n) {
  absl::Status status = s.Validate(shape, n);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("sharding ", s.ToString(false), " does not fit ",
                                                   shape.ToString(false), " on ", n,
                                                   " devices: ", status.message()));
  }
  return absl::OkStatus();
}

bool HasUnsupportedSubgroups(const HloSharding& s) {
  for (SubgroupType t : s.subgroup_types()) {
    if (t != SubgroupType::kManual && t != SubgroupType::kReplicated) return true;
  }
  return false;
}

// Shardings as the planner sees them: maximal -> replicated after a broadcast step.
absl::StatusOr<ReshardPlan> PlanArray(const Shape& shape, const HloSharding& from,
                                      const HloSharding& to, int64_t n, PlanSearch search) {
  if (!shape.IsArray()) return absl::InvalidArgumentError("PlanReshard expects an array shape");
  const bool naive_only = search == PlanSearch::kNaive;
  ReshardPlan plan;
  if (from == to) return plan;
  if (from.IsReplicated() && to.IsManual()) {
    // Every device holds the whole value: inside a manual region it is the same value on
    // each device.
    plan.steps.push_back({ReshardStepKind::kRelabel, {}, to, {}});
    return plan;
  }
  if (from.IsManual() || to.IsManual()) {
    return absl::UnimplementedError(
        absl::StrCat("cannot reshard between ", from.ToString(false), " and ", to.ToString(false)));
  }
  if (!(from.IsReplicated() || from.IsTiled() || from.IsMaximal()) ||
      !(to.IsReplicated() || to.IsTiled() || to.IsMaximal()) || HasUnsupportedSubgroups(from) ||
      HasUnsupportedSubgroups(to)) {
    return absl::UnimplementedError(absl::StrCat("resharding ", from.ToString(false), " to ",
                                                 to.ToString(false), " is not supported"));
  }
  if (absl::Status s = CheckFits(shape, from, n); !s.ok()) return s;
  if (absl::Status s = CheckFits(shape, to, n); !s.ok()) return s;
  HloSharding source = from;
  if (from.IsMaximal()) {
    CollectiveCost cost;
    cost.collectives = 1;
    cost.max_recv_bytes = n <= 1 ? 0 : 2 * (n - 1) * Bytes(shape) / n;
    cost.max_send_bytes = cost.max_recv_bytes;
    plan.steps.push_back({ReshardStepKind::kBroadcastMaximal, {}, HloSharding::Replicate(), cost});
    plan.cost += cost;
    source = HloSharding::Replicate();
  }
  HloSharding target = to.IsMaximal() ? HloSharding::Replicate() : to;
  if (source != target) {
    Planner planner(shape, target, n, search == PlanSearch::kPruned);
    // The naive plan: gather every tiled dim, then slice.
    {
      std::vector<ReshardStep> naive;
      std::vector<int64_t> tiled = TiledDims(source, shape.rank());
      HloSharding cur = source;
      // With manual subgroups, gathering stays inside each manual group (the groups only vary
      // the gathered dims) and the final slice keeps every device in its manual group.
      if (ManualSubgroupCount(source) != 1 &&
          ManualSubgroupCount(source) != ManualSubgroupCount(target)) {
        return absl::UnimplementedError("resharding between different manual subgroups");
      }
      if (!tiled.empty()) {
        absl::StatusOr<AllGatherEffect> effect = AllGatherOver(shape, source, tiled, n);
        if (!effect.ok()) return effect.status();
        std::sort(tiled.rbegin(), tiled.rend());
        naive.push_back({ReshardStepKind::kAllGather, tiled, effect->result, effect->cost});
        cur = effect->result;
      }
      if (cur != target) naive.push_back({ReshardStepKind::kDynamicSlice, {}, target, {}});
      std::vector<const ReshardStep*> naive_steps;
      for (const ReshardStep& step : naive) naive_steps.push_back(&step);
      planner.Offer(naive_steps);
    }
    if (!naive_only && source.IsTiled() && ManualSubgroupCount(source) == 1 &&
        ManualSubgroupCount(target) == 1) {
      // Permute first (while pieces are small), then gather or slice.
      TileIndex from_counts = TileCounts(source, shape.rank());
      TileIndex to_counts = TileCounts(target, shape.rank());
      std::vector<int64_t> changed;
      for (int64_t k = 0; k < shape.rank(); ++k) {
        if (from_counts[k] != to_counts[k]) changed.push_back(k);
      }
      std::optional<HloSharding> pre = PermuteFirstTarget(shape, source, target, changed, n);
      if (pre.has_value() && *pre != source) {
        ReshardStep permute{
            ReshardStepKind::kCollectivePermute, {}, *pre, PermuteCost(shape, source, *pre, n)};
        planner.Finish({&permute}, *pre);
        const std::vector<ReshardStep> nexts = planner.Hopeless(permute.cost.Score(), 2)
                                                   ? std::vector<ReshardStep>()
                                                   : planner.Moves(*pre);
        for (const ReshardStep& next : nexts) {
          planner.Finish({&permute, &next}, next.result);
        }
      }
    }
    if (!naive_only) {
      planner.Finish({}, source);
      for (const ReshardStep& first : planner.Moves(source)) {
        planner.Finish({&first}, first.result);
        if (n > kDeepSearchDeviceLimit || planner.Hopeless(first.cost.Score(), 2)) continue;
        for (const ReshardStep& second : planner.Moves(first.result)) {
          planner.Finish({&first, &second}, second.result);
        }
      }
    }
    const std::optional<ReshardPlan> best = planner.best();
    for (const ReshardStep& step : best->steps) {
      plan.steps.push_back(step);
      plan.cost += step.cost;
    }
  }
  if (to.IsMaximal()) {
    plan.steps.push_back({ReshardStepKind::kRelabel, {}, to, {}});
  }
  return plan;
}

// ---- Emission ----

absl::StatusOr<PartitionedValue> EmitAllGather(SpmdBuilder& b, PartitionedValue v,
                                               const std::vector<int64_t>& dims) {
  const int64_t rank = v.global_shape.rank();
  for (int64_t k : dims) {
    const int64_t n = TileCounts(v.sharding, rank)[k];
    if (n <= 1) continue;
    std::vector<std::vector<int64_t>> groups = v.sharding.GroupsAlongDims({k});
    if (b.Bug("all-gather-group-order")) {
      for (auto& g : groups) std::reverse(g.begin(), g.end());
    }
    if (b.Bug("replicate-dim-ignored") && v.sharding.ReplicateOnLastTileDim()) {
      groups = v.sharding.GroupsAlongDims({k, v.sharding.tile_assignment().num_dimensions() - 1});
    }
    HloInstruction* gathered = b.AllGather(v.local, k, groups);
    absl::StatusOr<HloSharding> next = FoldDims(v.sharding, rank, {k}, b.num_partitions());
    if (!next.ok()) return next.status();
    v.sharding = *next;
    v.local = b.SliceToSize(gathered, v.sharding.TileShape(v.global_shape).dimensions());
  }
  return v;
}

absl::StatusOr<PartitionedValue> EmitAllToAll(SpmdBuilder& b, PartitionedValue v, int64_t a,
                                              int64_t bd, const HloSharding& result) {
  const int64_t rank = v.global_shape.rank();
  const int64_t n = TileCounts(v.sharding, rank)[a];
  std::vector<std::vector<int64_t>> groups = v.sharding.GroupsAlongDims({a});
  const int64_t size_b = v.global_shape.dimensions(bd);
  const int64_t chunk = (size_b + n - 1) / n;
  std::vector<int64_t> local = v.local->shape().dimensions();
  std::vector<int64_t> high(rank, 0);
  high[bd] = chunk * n - local[bd];
  HloInstruction* x = b.PadHighWithZero(v.local, high);
  // Split dim bd into (n, chunk).
  std::vector<int64_t> split;
  std::vector<std::string> labels;
  for (int64_t i = 0; i < rank; ++i) {
    if (i == bd) {
      split.push_back(n);
      split.push_back(chunk);
      labels.push_back("N");
      labels.push_back("B");
    } else {
      split.push_back(local[i]);
      labels.push_back(absl::StrCat("D", i));
    }
  }
  x = b.Reshape(x, split);
  x = b.AllToAll(x, bd, groups);
  // Move the received-chunk dim in front of dim a and merge.
  std::vector<std::string> order;
  const bool wrong_merge = b.Bug("all-to-all-wrong-merge");
  for (int64_t i = 0; i < rank; ++i) {
    if (i == a) {
      order.push_back(wrong_merge ? absl::StrCat("D", i) : "N");
      order.push_back(wrong_merge ? "N" : absl::StrCat("D", i));
    } else if (i == bd) {
      order.push_back("B");
    } else {
      order.push_back(absl::StrCat("D", i));
    }
  }
  std::vector<int64_t> perm;
  for (const std::string& label : order) {
    perm.push_back(std::find(labels.begin(), labels.end(), label) - labels.begin());
  }
  x = b.Transpose(x, perm);
  std::vector<int64_t> merged;
  for (int64_t i = 0; i < rank; ++i) {
    if (i == a) {
      merged.push_back(n * local[a]);
    } else if (i == bd) {
      merged.push_back(chunk);
    } else {
      merged.push_back(local[i]);
    }
  }
  x = b.Reshape(x, merged);
  v.sharding = result;
  v.local = b.SliceToSize(x, result.TileShape(v.global_shape).dimensions());
  return v;
}

absl::StatusOr<PartitionedValue> EmitDynamicSlice(SpmdBuilder& b, PartitionedValue v,
                                                  const HloSharding& to) {
  const int64_t n = b.num_partitions();
  std::optional<SliceOffsets> offsets = SliceOffsets();
  if (!DynamicSliceOffsets(v.global_shape, v.sharding, to, n, &*offsets)) {
    return absl::InternalError(absl::StrCat("planned dynamic-slice from ",
                                            v.sharding.ToString(false), " to ", to.ToString(false),
                                            " is not possible"));
  }
  const Shape to_local = to.TileShape(v.global_shape);
  HloInstruction* x = b.PadHighWithZero(v.local, offsets->pad_high);
  bool all_zero = true;
  std::vector<HloInstruction*> starts;
  for (int64_t k = 0; k < v.global_shape.rank(); ++k) {
    if (b.Bug("uneven-offset-off-by-one") &&
        v.global_shape.dimensions(k) % TileCounts(to, v.global_shape.rank())[k] != 0) {
      for (int64_t& o : offsets->offset[k]) o = o > 0 ? o - 1 : o;
    }
    for (int64_t o : offsets->offset[k]) all_zero = all_zero && o == 0;
    starts.push_back(b.TableLookup(offsets->offset[k], absl::StrCat("offset.dim", k)));
  }
  if (all_zero && x->shape().dimensions() == to_local.dimensions()) {
    x = x == v.local ? b.Copy(x) : x;
  } else if (all_zero) {
    x = b.SliceToSize(x, to_local.dimensions());
  } else {
    x = b.DynamicSlice(x, starts, to_local.dimensions());
  }
  v.local = x;
  v.sharding = to;
  return v;
}

PartitionedValue EmitPermute(SpmdBuilder& b, PartitionedValue v, const HloSharding& to) {
  SourceTargetPairs pairs = PermutePairs(v.sharding, to, v.global_shape.rank(), b.num_partitions());
  bool moves = false;
  for (const auto& [s, t] : pairs) moves = moves || s != t;
  if (b.Bug("permute-pairs-inverted")) {
    for (auto& [s, t] : pairs) std::swap(s, t);
  }
  v.local = moves ? b.CollectivePermute(v.local, pairs) : b.Copy(v.local);
  v.sharding = to;
  return v;
}

PartitionedValue EmitBroadcastMaximal(SpmdBuilder& b, PartitionedValue v) {
  const Shape& local = v.local->shape();
  HloInstruction* owner =
      b.ConstantScalar(PrimitiveType::kU32, static_cast<double>(v.sharding.MaximalDevice()));
  HloInstruction* is_owner = b.Compare(b.PartitionId(), owner, ComparisonDirection::kEq);
  HloInstruction* mask =
      local.rank() == 0
          ? is_owner
          : b.Broadcast(is_owner, Shape::Array(PrimitiveType::kPred, local.dimensions()), {});
  HloInstruction* masked = b.Select(mask, v.local, b.AddIdentity(local));
  std::vector<int64_t> all(b.num_partitions());
  for (int64_t i = 0; i < b.num_partitions(); ++i) all[i] = i;
  v.local = b.AllReduce(masked, {all}, b.AddReducer(local.element_type()));
  v.sharding = HloSharding::Replicate();
  return v;
}

// Dim k has at most one element per tile: devices whose tile holds an element write it at its
// index into a zero buffer of the dim's full size; an all-reduce(sum) over the dim's groups
// gives everyone every element.
absl::StatusOr<PartitionedValue> EmitAllReduceGather(SpmdBuilder& b, PartitionedValue v,
                                                     int64_t k) {
  const int64_t rank = v.global_shape.rank();
  const int64_t size = v.global_shape.dimensions(k);
  const int64_t n_devices = b.num_partitions();
  std::vector<int64_t> valid(n_devices), offset(n_devices);
  for (int64_t d = 0; d < n_devices; ++d) {
    const int64_t t = PlaceOf(v.sharding, rank, d).data_index[k];
    valid[d] = t < size ? 1 : 0;
    offset[d] = std::min(t, size - 1);
  }
  const Shape& local = v.local->shape();
  std::vector<std::vector<int64_t>> groups = v.sharding.GroupsAlongDims({k});
  if (size == 1) {
    // Only the device at tile 0 along k holds the element: it broadcasts to its group (listed
    // from tile 0 up, so it is the group's first device).
    for (std::vector<int64_t>& group : groups) {
      std::stable_sort(group.begin(), group.end(), [&](int64_t a, int64_t c) {
        return PlaceOf(v.sharding, rank, a).data_index[k] <
               PlaceOf(v.sharding, rank, c).data_index[k];
      });
    }
    absl::StatusOr<HloSharding> next = FoldDims(v.sharding, rank, {k}, n_devices);
    if (!next.ok()) return next.status();
    v.local = b.CollectiveBroadcast(v.local, groups);
    v.sharding = *next;
    return v;
  }
  HloInstruction* is_valid = b.Compare(b.TableLookup(valid, absl::StrCat("holds.dim", k)),
                                       b.ConstantS32(1), ComparisonDirection::kEq);
  HloInstruction* mask =
      local.rank() == 0
          ? is_valid
          : b.Broadcast(is_valid, Shape::Array(PrimitiveType::kPred, local.dimensions()), {});
  HloInstruction* x = b.Select(mask, v.local, b.AddIdentity(local));
  if (size > 1) {
    Shape buffer_shape = local;
    buffer_shape.set_dimensions(k, size);
    std::vector<HloInstruction*> starts;
    for (int64_t j = 0; j < rank; ++j) {
      starts.push_back(j == k ? b.TableLookup(offset, absl::StrCat("offset.dim", k))
                              : b.ConstantS32(0));
    }
    x = b.DynamicUpdateSlice(b.AddIdentity(buffer_shape), x, starts);
  }
  x = b.AllReduce(x, groups, b.AddReducer(local.element_type()));
  absl::StatusOr<HloSharding> next = FoldDims(v.sharding, rank, {k}, n_devices);
  if (!next.ok()) return next.status();
  v.sharding = *next;
  v.local = x;
  return v;
}

struct PlanCacheKey {
  std::string text;
  bool operator==(const PlanCacheKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const PlanCacheKey& k) {
    return H::combine(std::move(h), k.text);
  }
};

}  // namespace

std::string ReshardPlan::Describe() const {
  if (steps.empty()) return "nothing";
  std::vector<std::string> parts;
  for (const ReshardStep& s : steps) {
    switch (s.kind) {
      case ReshardStepKind::kAllGather:
        parts.push_back(absl::StrCat("all-gather(dims=", absl::StrJoin(s.dims, ","), ")"));
        break;
      case ReshardStepKind::kAllToAll:
        parts.push_back(absl::StrCat("all-to-all(dim ", s.dims[0], " -> dim ", s.dims[1], ")"));
        break;
      case ReshardStepKind::kDynamicSlice:
        parts.push_back("dynamic-slice");
        break;
      case ReshardStepKind::kCollectivePermute:
        parts.push_back("collective-permute");
        break;
      case ReshardStepKind::kBroadcastMaximal:
        parts.push_back("masked all-reduce (maximal -> replicated)");
        break;
      case ReshardStepKind::kAllReduceGather:
        parts.push_back(
            absl::StrCat("masked all-reduce or collective-broadcast(dim ", s.dims[0], ")"));
        break;
      case ReshardStepKind::kRelabel:
        parts.push_back("copy");
        break;
    }
  }
  return absl::StrJoin(parts, " -> ");
}

namespace {

// PlanReshard's memo (process-wide). Hands out the plan or only its cost: handlers price many
// candidate shardings (ReshardCost) and copying whole plans for that was a cost of its own.
absl::Status CachedPlan(const Shape& shape, const HloSharding& from, const HloSharding& to,
                        int64_t num_devices, ReshardPlan* plan_out, CollectiveCost* cost_out) {
  static std::mutex mu;
  static auto* cache = new absl::flat_hash_map<PlanCacheKey, ReshardPlan>();
  PlanCacheKey key{absl::StrCat(shape.ToString(false), "|", from.ToString(false), "|",
                                to.ToString(false), "|", num_devices)};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache->find(key);
    if (it != cache->end()) {
      if (plan_out != nullptr) *plan_out = it->second;
      if (cost_out != nullptr) *cost_out = it->second.cost;
      return absl::OkStatus();
    }
  }
  absl::StatusOr<ReshardPlan> plan = PlanArray(shape, from, to, num_devices, PlanSearch::kPruned);
  if (!plan.ok()) return plan.status();
  if (cost_out != nullptr) *cost_out = plan->cost;
  std::lock_guard<std::mutex> lock(mu);
  if (cache->size() > 100000) cache->clear();
  ReshardPlan& cached = (*cache)[key];
  cached = *std::move(plan);
  if (plan_out != nullptr) *plan_out = cached;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReshardPlan> PlanReshard(const Shape& shape, const HloSharding& from,
                                        const HloSharding& to, int64_t num_devices) {
  ReshardPlan plan;
  absl::Status status = CachedPlan(shape, from, to, num_devices, &plan, nullptr);
  if (!status.ok()) return status;
  return plan;
}

absl::StatusOr<ReshardPlan> NaiveReshardPlan(const Shape& shape, const HloSharding& from,
                                             const HloSharding& to, int64_t num_devices) {
  return PlanArray(shape, from, to, num_devices, PlanSearch::kNaive);
}

absl::StatusOr<ReshardPlan> ExhaustiveReshardPlan(const Shape& shape, const HloSharding& from,
                                                  const HloSharding& to, int64_t num_devices) {
  return PlanArray(shape, from, to, num_devices, PlanSearch::kExhaustive);
}

absl::StatusOr<PartitionedValue> ApplyReshardPlan(SpmdBuilder& builder,
                                                  const PartitionedValue& value,
                                                  const ReshardPlan& plan) {
  PartitionedValue v = value;
  for (const ReshardStep& step : plan.steps) {
    absl::StatusOr<PartitionedValue> next = v;
    switch (step.kind) {
      case ReshardStepKind::kAllGather:
        next = EmitAllGather(builder, v, step.dims);
        break;
      case ReshardStepKind::kAllToAll:
        next = EmitAllToAll(builder, v, step.dims[0], step.dims[1], step.result);
        break;
      case ReshardStepKind::kDynamicSlice:
        next = EmitDynamicSlice(builder, v, step.result);
        break;
      case ReshardStepKind::kCollectivePermute:
        next = EmitPermute(builder, v, step.result);
        break;
      case ReshardStepKind::kBroadcastMaximal:
        next = EmitBroadcastMaximal(builder, v);
        break;
      case ReshardStepKind::kAllReduceGather:
        next = EmitAllReduceGather(builder, v, step.dims[0]);
        break;
      case ReshardStepKind::kRelabel:
        next = v;
        next->local = builder.Copy(v.local);
        next->sharding = step.result;
        break;
    }
    if (!next.ok()) return next.status();
    v = *next;
    ModuleBuildState& state = *builder.state();
    if (!state.resharding.empty() && v.local != nullptr && v.local != value.local &&
        v.global_shape.IsArray() && !v.sharding.IsManual()) {
      state.step_claims[v.local] = {state.resharding, v.sharding};
    }
    if (v.sharding != step.result) {
      return absl::InternalError(absl::StrCat("reshard step left ", v.sharding.ToString(false),
                                              ", planned ", step.result.ToString(false)));
    }
  }
  return v;
}

absl::StatusOr<PartitionedValue> Reshard(SpmdBuilder& builder, const PartitionedValue& value,
                                         const HloSharding& to) {
  if (value.sharding == to) return value;
  if (value.global_shape.IsTuple()) {
    // An element's steps hold the tuple's leaf: `NAME{i}`.
    const std::string tuple_name = builder.state()->resharding;
    std::vector<HloInstruction*> elements;
    std::vector<HloSharding> shardings;
    for (int64_t i = 0; i < value.global_shape.tuple_size(); ++i) {
      ReshardingScope leaf_claims(builder.state(),
                                  tuple_name.empty() ? "" : absl::StrCat(tuple_name, "{", i, "}"));
      PartitionedValue leaf{builder.GetTupleElement(value.local, i),
                            value.global_shape.tuple_shapes()[i],
                            ElementSharding(value.sharding, value.global_shape, i)};
      absl::StatusOr<PartitionedValue> moved =
          Reshard(builder, leaf, ElementSharding(to, value.global_shape, i));
      if (!moved.ok()) return moved.status();
      elements.push_back(moved->local);
      shardings.push_back(moved->sharding);
    }
    return PartitionedValue{builder.Tuple(std::move(elements)), value.global_shape,
                            TupleSharding(value.global_shape, shardings)};
  }
  if (!value.global_shape.IsArray()) return value;  // Tokens.
  absl::StatusOr<ReshardPlan> plan =
      PlanReshard(value.global_shape, value.sharding, to, builder.num_partitions());
  if (!plan.ok()) return plan.status();
  return ApplyReshardPlan(builder, value, *plan);
}

absl::StatusOr<CollectiveCost> ReshardCost(const Shape& shape, const HloSharding& from,
                                           const HloSharding& to, int64_t num_devices) {
  CollectiveCost cost;
  if (from == to) return cost;
  if (shape.IsTuple()) {
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      absl::StatusOr<CollectiveCost> leaf =
          ReshardCost(shape.tuple_shapes()[i], ElementSharding(from, shape, i),
                      ElementSharding(to, shape, i), num_devices);
      if (!leaf.ok()) return leaf.status();
      cost += *leaf;
    }
    return cost;
  }
  if (!shape.IsArray()) return cost;
  absl::Status status = CachedPlan(shape, from, to, num_devices, nullptr, &cost);
  if (!status.ok()) return status;
  return cost;
}

absl::StatusOr<std::unique_ptr<HloModule>> BuildReshardModule(const Shape& shape,
                                                              const HloSharding& from,
                                                              const ReshardPlan& plan,
                                                              int64_t num_devices) {
  auto module = std::make_unique<HloModule>("reshard");
  module->set_num_partitions(num_devices);
  ModuleBuildState state;
  state.module = module.get();
  state.num_partitions = num_devices;
  auto computation = std::make_unique<HloComputation>("main");
  state.computation_names.insert("main");
  SpmdBuilder builder(&state, computation.get(), {});
  Shape local = from.IsTiled() ? from.TileShape(shape) : shape;
  HloInstruction* param = builder.Add(HloOpcode::kParameter, local, {}, "param");
  param->set_parameter_number(0);
  param->set_sharding(from);
  absl::StatusOr<PartitionedValue> result =
      ApplyReshardPlan(builder, PartitionedValue{param, shape, from}, plan);
  if (!result.ok()) return result.status();
  HloInstruction* root = result->local;
  if (root == param) root = builder.Copy(param);
  root->set_sharding(result->sharding);
  computation->set_root(root);
  module->set_entry(module->AddComputation(std::move(computation)));
  return module;
}

PartitionedValue MaskPadding(SpmdBuilder& builder, const PartitionedValue& value, double fill,
                             HloInstruction* fill_value) {
  const Shape& global = value.global_shape;
  const int64_t rank = global.rank();
  TileIndex counts = TileCounts(value.sharding, rank);
  const Shape local = value.local->shape();
  HloInstruction* mask = nullptr;
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t per = local.dimensions(k);
    if (counts[k] <= 1 || per * counts[k] == global.dimensions(k)) continue;
    std::vector<int64_t> offsets(builder.num_partitions());
    for (int64_t d = 0; d < builder.num_partitions(); ++d) {
      offsets[d] = RegionOf(value.sharding, global, d).padded_start[k];
    }
    const Shape index_shape = Shape::Array(PrimitiveType::kS32, local.dimensions());
    HloInstruction* iota = builder.Iota(index_shape, k);
    HloInstruction* offset = builder.TableLookup(offsets, absl::StrCat("offset.dim", k));
    HloInstruction* global_index =
        builder.Binary(HloOpcode::kAdd, iota, builder.Broadcast(offset, index_shape, {}));
    HloInstruction* limit =
        builder.Broadcast(builder.ConstantS32(global.dimensions(k)), index_shape, {});
    HloInstruction* in_range = builder.Compare(global_index, limit, ComparisonDirection::kLt);
    mask = mask == nullptr ? in_range : builder.Binary(HloOpcode::kAnd, mask, in_range);
  }
  if (mask == nullptr) return value;
  HloInstruction* filler =
      fill_value != nullptr
          ? (local.rank() == 0 ? fill_value : builder.Broadcast(fill_value, local, {}))
          : builder.Filled(local, fill);
  PartitionedValue masked = value;
  masked.local = builder.Select(mask, value.local, filler);
  return masked;
}

}  // namespace spmdcheck::partitioner
