// Array-sharding algebra the partitioner plans with and the lint and the SMT proofs reason with:
// tile counts per data dim, folding tiled dims into replication (what an all-gather does),
// building a sharding from a per-device tile index, and the region of the array a device holds.
#ifndef SPMDCHECK_IR_SHARDING_ALGEBRA_H_
#define SPMDCHECK_IR_SHARDING_ALGEBRA_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace spmdcheck {

// Per-dim values of an array (tile counts, tile indices, regions), stored inline: the planner
// computes them in its inner loops, where a heap allocation each cost more than the arithmetic.
using TileIndex = absl::InlinedVector<int64_t, 6>;

// Tile count of each of the `rank` data dims (all 1 for replicated and maximal shardings).
TileIndex TileCounts(const HloSharding& sharding, int64_t rank);

// Number of manual subgroup positions (1 when none).
int64_t ManualSubgroupCount(const HloSharding& sharding);

// Where one device sits: its tile index along every data dim and its manual subgroup index.
struct DevicePlace {
  TileIndex data_index;
  int64_t manual_index = 0;
};

// The place of `device` under a replicated/tiled array sharding (zeros for replicated).
DevicePlace PlaceOf(const HloSharding& sharding, int64_t rank, int64_t device);

// Builds the array sharding in which every device in [0, num_devices) holds the tile `place(d)`
// of a grid with `counts` data tiles (and `manual_count` manual subgroups); devices with equal
// places replicate each other (in increasing device order). Error when the places do not cover
// the grid evenly. The result is canonical (iota where possible).
absl::StatusOr<HloSharding> BuildSharding(absl::Span<const int64_t> counts, int64_t manual_count,
                                          int64_t num_devices,
                                          const std::function<DevicePlace(int64_t)>& place);

// `sharding` with the data dims `dims` no longer tiled: each device keeps its place on the other
// dims and the devices that differed only along `dims` now replicate each other (the sharding
// that an all-gather over those dims leaves).
absl::StatusOr<HloSharding> FoldDims(const HloSharding& sharding, int64_t rank,
                                     absl::Span<const int64_t> dims, int64_t num_devices);

// True when both are tiled (or both replicated) with the same tile counts and subgroup structure:
// they differ at most in which device holds which tile.
bool SameTileGrid(const HloSharding& a, const HloSharding& b, int64_t rank);

// Per data dim, the padded start (tile index * padded tile size) and the valid element range
// [start, limit) that `device` holds of `shape` under `sharding`.
struct HeldRegion {
  TileIndex padded_start;
  TileIndex start;
  TileIndex limit;
};
HeldRegion RegionOf(const HloSharding& sharding, const Shape& shape, int64_t device);

// The sharding of element `index` of a value of tuple shape `shape` under `sharding` (XLA's tuple
// shardings list one sharding per leaf, depth first): an array sharding for an array element, a
// tuple sharding of its leaves for a nested tuple. A non-tuple sharding applies to every element.
HloSharding ElementSharding(const HloSharding& sharding, const Shape& shape, int64_t index);
// The (flat) tuple sharding of a tuple of `shape` whose elements have `elements`.
HloSharding TupleSharding(const Shape& shape, const std::vector<HloSharding>& elements);

// For each output dim of a reshape, the input dim whose tiling it can carry (nullopt: it must stay
// untiled), found by splitting both dim lists into runs of equal element count: the major dims
// of a run correspond (size-1 dims carry nothing).
std::vector<std::optional<int64_t>> ReshapeDimMap(const Shape& in, const Shape& out);

// The sharding of a reshape's result computed locally from an operand under `operand` (every
// tiled input dim carried by an output dim), or nullopt. Divisibility is the caller's check.
std::optional<HloSharding> ReshapedSharding(const Shape& in, const Shape& out,
                                            const HloSharding& operand, int64_t num_devices);

// The sharding of transpose(x, perm) computed locally from x under `operand`, or nullopt.
std::optional<HloSharding> TransposedSharding(const HloSharding& operand,
                                              absl::Span<const int64_t> perm, int64_t num_devices);

// True for shardings the planner moves data for (replicated, tiled incl. partial replication);
// maximal and manual are handled separately.
bool IsPlannable(const HloSharding& sharding);

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_SHARDING_ALGEBRA_H_
