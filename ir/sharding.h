// HloSharding: how an array (or each leaf of a tuple) is laid out over devices. Built only
// through factories that apply XLA's normalisations, so two equal shardings have equal parts.
#ifndef SPMDCHECK_IR_SHARDING_H_
#define SPMDCHECK_IR_SHARDING_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/shape.h"
#include "ir/tile_assignment.h"

namespace spmdcheck {

class NamedSharding;  // ir/named_sharding.h

// Types of trailing subgroup dims (`last_tile_dims={manual, replicated}`). Normalised shardings
// order them as XLA does: maximal, manual, unreduced, replicated.
enum class SubgroupType : uint8_t { kManual, kUnreduced, kReplicated, kMaximal };
absl::string_view SubgroupTypeName(SubgroupType type);

// The index range one device holds in each dim of an array: [start, limit) valid elements,
// with `padded_size` = ceil(dim / tiles) buffer elements per device.
struct ShardRange {
  int64_t start = 0;
  int64_t limit = 0;
  int64_t padded_size = 0;
};

class HloSharding {
 public:
  enum class Kind : uint8_t {
    kReplicated,
    kMaximal,
    kManual,
    kUnknown,
    kUnreduced,
    kTiled,
    kTuple
  };
  enum class ShardGroupKind : uint8_t { kNone, kAs, kLike };

  HloSharding() = default;  // Replicated.
  static HloSharding Replicate() { return HloSharding(); }
  static HloSharding Manual();
  static HloSharding Unknown();
  static HloSharding Unreduced();
  static HloSharding AssignDevice(int64_t device);
  // Fully tiled. A one-device assignment becomes `{maximal device=d}` (Dec-2023 FromProto rule).
  static HloSharding Tile(TileAssignment tiles);
  // Tiled with the last tile dim a replication dim: collapses to replicated when that dim holds
  // every device, drops a size-1 last dim, and sorts each replication group ascending.
  static HloSharding PartialTile(const TileAssignment& tiles);
  // Tiled with trailing subgroup dims of the given types: merges and reorders them, drops
  // size-1 ones and collapses the degenerate cases (XLA's HloSharding::Subgroup).
  static HloSharding Subgroup(const TileAssignment& tiles, absl::Span<const SubgroupType> types);
  static HloSharding Tuple(std::vector<HloSharding> elements);

  Kind kind() const { return kind_; }
  bool IsReplicated() const { return kind_ == Kind::kReplicated; }
  bool IsMaximal() const { return kind_ == Kind::kMaximal; }
  bool IsManual() const { return kind_ == Kind::kManual; }
  bool IsTiled() const { return kind_ == Kind::kTiled; }
  bool IsTuple() const { return kind_ == Kind::kTuple; }
  // True when every device holds the whole value (replicated, or tuple of such).
  bool IsFullyReplicated() const;

  const TileAssignment& tile_assignment() const { return tiles_; }
  bool ReplicateOnLastTileDim() const { return replicate_on_last_tile_dim_; }
  const std::vector<SubgroupType>& subgroup_types() const { return subgroup_types_; }
  bool HasManualSubgroup() const;
  // Number of leading tile dims that map to array dims.
  int64_t TiledDataRank() const;
  // Number of trailing tile dims that only group devices.
  int64_t SubgroupDimCount() const;
  // Product of the data tile dims.
  int64_t NumTiles() const;
  int64_t MaximalDevice() const { return maximal_device_; }
  const std::vector<HloSharding>& tuple_elements() const { return tuple_elements_; }

  ShardGroupKind shard_group_kind() const { return shard_group_kind_; }
  int64_t shard_group_id() const { return shard_group_id_; }
  void SetShardGroup(ShardGroupKind kind, int64_t id);
  // The named-mesh form (XLA's V3, `{mesh['x'=2], [{'x'}]}`) the sharding was written in, kept to
  // print it back; null for the V2 forms and for every sharding spmdcheck computes. The meaning
  // is always the fields above.
  const NamedSharding* named() const { return named_.get(); }
  // The sharding a named form denotes, keeping the form.
  static absl::StatusOr<HloSharding> FromNamed(const NamedSharding& named);
  // The same sharding with every named form dropped (tuple elements too): prints as V2, which
  // every XLA reads.
  HloSharding WithoutNamedForms() const;
  // Raw `metadata={...}` value text, kept and printed back.
  const std::string& metadata() const { return metadata_; }
  void set_metadata(std::string metadata) { metadata_ = std::move(metadata); }

  // Checks the sharding against a shape and a device count (0 = unknown): data rank, device
  // range, each device exactly once, tuple arity.
  absl::Status Validate(const Shape& shape, int64_t num_devices) const;

  // Tile indices of `device` along the data dims (all zeros for non-tiled shardings); nullopt if
  // the device holds no tile.
  std::optional<std::vector<int64_t>> DataTileIndexOf(int64_t device) const;
  // Per-dim index ranges the device holds of an array of `shape` (padding included in
  // padded_size). Non-tiled shardings hold the whole array.
  std::optional<std::vector<ShardRange>> RangesForDevice(const Shape& shape, int64_t device) const;
  // Local (per-device) shape: ceil(dim / tiles) per data dim.
  Shape TileShape(const Shape& shape) const;
  // Devices that hold the same data tile as `device` (the replication group, in row-major
  // tile order), including `device` itself.
  std::vector<int64_t> ReplicasOf(int64_t device) const;
  // Groups of devices that differ only in their tile index along `dims` (tile-assignment dims),
  // each group in row-major order of those dims; groups ordered row-major over the other dims.
  // This is XLA's GetPartitionGroupsForReplication.
  std::vector<std::vector<int64_t>> GroupsAlongDims(absl::Span<const int64_t> dims) const;

  // The same sharding with every tile assignment held as an iota where possible.
  HloSharding Canonical() const;
  // The same sharding with every tile assignment held as an explicit device list (and no named
  // form).
  HloSharding Expanded() const;

  // XLA text, e.g. `{devices=[2,2]<=[4] last_tile_dim_replicate}`; the named form when there
  // is one.
  std::string ToString(bool include_metadata = true) const;

  // Semantic equality: kinds, device arrays (not their forms), subgroup types, shard groups.
  // Metadata and named forms are ignored.
  bool operator==(const HloSharding& other) const;

 private:
  Kind kind_ = Kind::kReplicated;
  TileAssignment tiles_;
  bool replicate_on_last_tile_dim_ = false;
  std::vector<SubgroupType> subgroup_types_;
  int64_t maximal_device_ = -1;
  std::vector<HloSharding> tuple_elements_;
  ShardGroupKind shard_group_kind_ = ShardGroupKind::kNone;
  int64_t shard_group_id_ = -1;
  std::string metadata_;
  std::shared_ptr<const NamedSharding> named_;
};

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_SHARDING_H_
