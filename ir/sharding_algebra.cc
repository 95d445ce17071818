#include "ir/sharding_algebra.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/tile_assignment.h"

namespace spmdcheck {

TileIndex TileCounts(const HloSharding& sharding, int64_t rank) {
  TileIndex counts(rank, 1);
  if (!sharding.IsTiled()) return counts;
  for (int64_t k = 0; k < rank && k < sharding.TiledDataRank(); ++k) {
    counts[k] = sharding.tile_assignment().dim(k);
  }
  return counts;
}

namespace {

// Position of the manual subgroup dim in the tile assignment, or -1.
int64_t ManualDimPosition(const HloSharding& sharding) {
  if (!sharding.IsTiled()) return -1;
  const int64_t data_rank = sharding.TiledDataRank();
  for (size_t i = 0; i < sharding.subgroup_types().size(); ++i) {
    if (sharding.subgroup_types()[i] == SubgroupType::kManual) {
      return data_rank + static_cast<int64_t>(i);
    }
  }
  return -1;
}

}  // namespace

int64_t ManualSubgroupCount(const HloSharding& sharding) {
  const int64_t pos = ManualDimPosition(sharding);
  return pos < 0 ? 1 : sharding.tile_assignment().dim(pos);
}

DevicePlace PlaceOf(const HloSharding& sharding, int64_t rank, int64_t device) {
  DevicePlace place;
  place.data_index.assign(rank, 0);
  if (!sharding.IsTiled()) return place;
  const TileAssignment& tiles = sharding.tile_assignment();
  const std::optional<int64_t> linear = tiles.LinearIndexOf(device);
  if (!linear.has_value()) return place;
  // The tile index digit by digit (row-major, last dim fastest), without materialising it.
  const int64_t data_rank = std::min<int64_t>(rank, sharding.TiledDataRank());
  const int64_t manual = ManualDimPosition(sharding);
  int64_t rest = *linear;
  for (int64_t i = tiles.num_dimensions() - 1; i >= 0; --i) {
    const int64_t digit = rest % tiles.dim(i);
    rest /= tiles.dim(i);
    if (i < data_rank) place.data_index[i] = digit;
    if (i == manual) place.manual_index = digit;
  }
  return place;
}

namespace {

struct BuiltShardingKey {
  std::vector<int64_t> counts;
  int64_t manual_count = 1;
  std::vector<int64_t> tile_of;  // Per device, its linear tile (data dims, manual).
  bool operator==(const BuiltShardingKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const BuiltShardingKey& k) {
    return H::combine(std::move(h), k.counts, k.manual_count, k.tile_of);
  }
};

std::mutex built_shardings_mu;
absl::flat_hash_map<BuiltShardingKey, HloSharding>* const built_shardings =
    new absl::flat_hash_map<BuiltShardingKey, HloSharding>();

absl::StatusOr<HloSharding> BuildFromDevices(absl::Span<const int64_t> counts, int64_t manual_count,
                                             int64_t replicas, std::vector<int64_t> devices);

}  // namespace

absl::StatusOr<HloSharding> BuildSharding(absl::Span<const int64_t> counts, int64_t manual_count,
                                          int64_t num_devices,
                                          const std::function<DevicePlace(int64_t)>& place) {
  int64_t tiles = manual_count;
  for (int64_t c : counts) tiles *= c;
  if (tiles <= 0 || num_devices % tiles != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(tiles, " tiles do not divide ", num_devices, " devices"));
  }
  const int64_t replicas = num_devices / tiles;
  // Row-major over (data dims, manual) -> devices in increasing order: tile t's holders fill
  // positions [t * replicas, (t + 1) * replicas) of the device array in the order of `dims`
  // (data dims, manual, replication).
  std::vector<int64_t> tile_of(num_devices);
  std::vector<int64_t> holders(tiles, 0);
  for (int64_t d = 0; d < num_devices; ++d) {
    const DevicePlace p = place(d);
    int64_t linear = 0;
    for (size_t k = 0; k <= counts.size(); ++k) {
      const int64_t index = k < counts.size() ? p.data_index[k] : p.manual_index;
      const int64_t size = k < counts.size() ? counts[k] : manual_count;
      if (index < 0 || index >= size) {
        return absl::InternalError(absl::StrCat("device ", d, " placed outside the tile grid"));
      }
      linear = linear * size + index;
    }
    tile_of[d] = linear;
    ++holders[linear];
  }
  for (int64_t h : holders) {
    if (h != replicas) {
      return absl::InvalidArgumentError("tiles are held by different numbers of devices");
    }
  }
  // The result depends only on (counts, manual_count, tile_of): the planner builds the same
  // shardings over and over (across candidate plans and programs), so they are memoised.
  BuiltShardingKey key{std::vector<int64_t>(counts.begin(), counts.end()), manual_count,
                       std::move(tile_of)};
  {
    std::lock_guard<std::mutex> lock(built_shardings_mu);
    auto it = built_shardings->find(key);
    if (it != built_shardings->end()) return it->second;
  }
  std::vector<int64_t> devices(num_devices);
  std::fill(holders.begin(), holders.end(), 0);
  for (int64_t d = 0; d < num_devices; ++d) {
    const int64_t t = key.tile_of[d];
    devices[t * replicas + holders[t]++] = d;
  }
  absl::StatusOr<HloSharding> built =
      BuildFromDevices(counts, manual_count, replicas, std::move(devices));
  if (!built.ok()) return built;
  std::lock_guard<std::mutex> lock(built_shardings_mu);
  if (built_shardings->size() > 200000) built_shardings->clear();
  built_shardings->emplace(std::move(key), *built);
  return built;
}

namespace {

absl::StatusOr<HloSharding> BuildFromDevices(absl::Span<const int64_t> counts, int64_t manual_count,
                                             int64_t replicas, std::vector<int64_t> devices) {
  std::vector<int64_t> dims(counts.begin(), counts.end());
  std::vector<SubgroupType> types;
  if (manual_count > 1) {
    dims.push_back(manual_count);
    types.push_back(SubgroupType::kManual);
  }
  if (replicas > 1) {
    dims.push_back(replicas);
    types.push_back(SubgroupType::kReplicated);
  }
  if (dims.empty()) return HloSharding::Replicate();
  bool all_one = true;
  for (int64_t c : counts) all_one = all_one && c == 1;
  if (all_one && manual_count == 1) return HloSharding::Replicate();
  // An iota device array is held as one from the start (the result is canonical either way;
  // this skips building the explicit assignment's device map).
  std::optional<IotaTileAssignment> iota = DetectIota(dims, devices);
  absl::StatusOr<TileAssignment> tiles_assignment =
      iota.has_value() ? absl::StatusOr<TileAssignment>(TileAssignment(*std::move(iota)))
                       : TileAssignment::Explicit(dims, std::move(devices));
  if (!tiles_assignment.ok()) return tiles_assignment.status();
  return HloSharding::Subgroup(*tiles_assignment, types).Canonical();
}

}  // namespace

absl::StatusOr<HloSharding> FoldDims(const HloSharding& sharding, int64_t rank,
                                     absl::Span<const int64_t> dims, int64_t num_devices) {
  TileIndex counts = TileCounts(sharding, rank);
  for (int64_t k : dims) counts[k] = 1;
  return BuildSharding(counts, ManualSubgroupCount(sharding), num_devices, [&](int64_t d) {
    DevicePlace p = PlaceOf(sharding, rank, d);
    for (int64_t k : dims) p.data_index[k] = 0;
    return p;
  });
}

bool SameTileGrid(const HloSharding& a, const HloSharding& b, int64_t rank) {
  if (a.IsReplicated() && b.IsReplicated()) return true;
  if (!a.IsTiled() || !b.IsTiled()) return false;
  return a.tile_assignment().dims() == b.tile_assignment().dims() &&
         a.subgroup_types() == b.subgroup_types() && TileCounts(a, rank) == TileCounts(b, rank);
}

HeldRegion RegionOf(const HloSharding& sharding, const Shape& shape, int64_t device) {
  const int64_t rank = shape.rank();
  HeldRegion region;
  region.padded_start.reserve(rank);
  region.start.reserve(rank);
  region.limit.reserve(rank);
  const DevicePlace place = PlaceOf(sharding, rank, device);
  const int64_t tiled_rank = sharding.IsTiled() ? sharding.TiledDataRank() : 0;
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t count = k < tiled_rank ? sharding.tile_assignment().dim(k) : 1;
    const int64_t size = shape.dimensions(k);
    const int64_t per_tile = (size + count - 1) / count;
    const int64_t start = place.data_index[k] * per_tile;
    region.padded_start.push_back(start);
    region.start.push_back(std::min(start, size));
    region.limit.push_back(std::min(start + per_tile, size));
  }
  return region;
}

HloSharding ElementSharding(const HloSharding& sharding, const Shape& shape, int64_t index) {
  if (!sharding.IsTuple()) return sharding;
  int64_t offset = 0;
  for (int64_t i = 0; i < index; ++i) offset += shape.tuple_shapes()[i].LeafCount();
  const Shape& element = shape.tuple_shapes()[index];
  const std::vector<HloSharding>& leaves = sharding.tuple_elements();
  if (!element.IsTuple()) {
    return offset < static_cast<int64_t>(leaves.size()) ? leaves[offset] : HloSharding::Replicate();
  }
  std::vector<HloSharding> sub;
  for (int64_t i = 0; i < element.LeafCount(); ++i) {
    sub.push_back(offset + i < static_cast<int64_t>(leaves.size()) ? leaves[offset + i]
                                                                   : HloSharding::Replicate());
  }
  return HloSharding::Tuple(std::move(sub));
}

HloSharding TupleSharding(const Shape& shape, const std::vector<HloSharding>& elements) {
  std::vector<HloSharding> leaves;
  for (int64_t i = 0; i < shape.tuple_size(); ++i) {
    const Shape& element = shape.tuple_shapes()[i];
    if (!element.IsTuple()) {
      leaves.push_back(elements[i].IsTuple() && !elements[i].tuple_elements().empty()
                           ? elements[i].tuple_elements()[0]
                           : elements[i]);
    } else if (elements[i].IsTuple()) {
      for (const HloSharding& leaf : elements[i].tuple_elements()) leaves.push_back(leaf);
    } else {
      for (int64_t j = 0; j < element.LeafCount(); ++j) leaves.push_back(elements[i]);
    }
  }
  return HloSharding::Tuple(std::move(leaves));
}

bool IsPlannable(const HloSharding& sharding) {
  if (sharding.IsReplicated()) return true;
  if (!sharding.IsTiled()) return false;
  return true;
}

std::vector<std::optional<int64_t>> ReshapeDimMap(const Shape& in, const Shape& out) {
  std::vector<std::optional<int64_t>> out_to_in(out.rank(), std::nullopt);
  int64_t i = 0, j = 0;
  while (i < in.rank() && j < out.rank()) {
    if (in.dimensions(i) == 1) {
      ++i;
      continue;
    }
    if (out.dimensions(j) == 1) {
      ++j;
      continue;
    }
    // Grow the run until both sides hold the same element count.
    int64_t i_end = i + 1, j_end = j + 1;
    int64_t in_count = in.dimensions(i), out_count = out.dimensions(j);
    while (in_count != out_count) {
      if (in_count < out_count) {
        if (i_end >= in.rank()) return out_to_in;
        in_count *= in.dimensions(i_end++);
      } else {
        if (j_end >= out.rank()) return out_to_in;
        out_count *= out.dimensions(j_end++);
      }
    }
    out_to_in[j] = i;
    i = i_end;
    j = j_end;
  }
  return out_to_in;
}

std::optional<HloSharding> ReshapedSharding(const Shape& in, const Shape& out,
                                            const HloSharding& operand, int64_t num_devices) {
  if (!IsPlannable(operand) || ManualSubgroupCount(operand) != 1) return std::nullopt;
  const std::vector<std::optional<int64_t>> out_to_in = ReshapeDimMap(in, out);
  const TileIndex in_counts = TileCounts(operand, in.rank());
  std::vector<int64_t> counts(out.rank(), 1);
  for (int64_t i = 0; i < in.rank(); ++i) {
    if (in_counts[i] == 1) continue;
    auto it = std::find(out_to_in.begin(), out_to_in.end(), std::optional<int64_t>(i));
    if (it == out_to_in.end()) return std::nullopt;
    counts[it - out_to_in.begin()] = in_counts[i];
  }
  absl::StatusOr<HloSharding> result = BuildSharding(counts, 1, num_devices, [&](int64_t device) {
    DevicePlace p = PlaceOf(operand, in.rank(), device);
    DevicePlace q;
    q.data_index.assign(out.rank(), 0);
    for (int64_t j = 0; j < out.rank(); ++j) {
      if (counts[j] > 1) q.data_index[j] = p.data_index[*out_to_in[j]];
    }
    return q;
  });
  if (!result.ok()) return std::nullopt;
  return *std::move(result);
}

std::optional<HloSharding> TransposedSharding(const HloSharding& operand,
                                              absl::Span<const int64_t> perm, int64_t num_devices) {
  if (!IsPlannable(operand) || ManualSubgroupCount(operand) != 1) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(perm.size());
  TileIndex in_counts = TileCounts(operand, rank), counts(rank, 1);
  for (int64_t j = 0; j < rank; ++j) counts[j] = in_counts[perm[j]];
  absl::StatusOr<HloSharding> result = BuildSharding(counts, 1, num_devices, [&](int64_t device) {
    DevicePlace p = PlaceOf(operand, rank, device);
    DevicePlace q;
    q.data_index.assign(rank, 0);
    for (int64_t j = 0; j < rank; ++j) q.data_index[j] = p.data_index[perm[j]];
    return q;
  });
  if (!result.ok()) return std::nullopt;
  return *std::move(result);
}

}  // namespace spmdcheck
