// Mesh: named device axes (e.g. data=2, model=4) over a device array, and the sharding a
// per-dimension axis mapping denotes (as JAX's NamedSharding lowers to GSPMD).
#ifndef SPMDCHECK_IR_MESH_H_
#define SPMDCHECK_IR_MESH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/replica_groups.h"
#include "ir/sharding.h"
#include "ir/tile_assignment.h"

namespace spmdcheck {

struct MeshAxis {
  std::string name;
  int64_t size = 1;
};

// One axis of XLA's mesh-axes replica groups (`mesh['a'=2,'b'=4] {'b'}`): mesh axis `axis`,
// whole, or its sub-axis `'b':(pre_size)size` (the middle factor when the axis is viewed as
// [pre_size, size, rest], major first).
struct MeshAxisRef {
  int64_t axis = 0;
  int64_t pre_size = 1;
  int64_t size = 0;  // 0: the whole axis.
  bool operator==(const MeshAxisRef&) const = default;
};

// The most devices an explicit device list (replica groups that no iota expresses) may have:
// 2^24 device ids take 128 MiB.
inline constexpr int64_t kMaxListedDevices = int64_t{1} << 24;

class Mesh {
 public:
  // `devices` defaults to the iota over the axis sizes; when given, its dims must equal them.
  static absl::StatusOr<Mesh> Create(std::vector<MeshAxis> axes,
                                     std::optional<TileAssignment> devices = std::nullopt);

  const std::vector<MeshAxis>& axes() const { return axes_; }
  const TileAssignment& devices() const { return devices_; }
  int64_t num_devices() const { return devices_.num_elements(); }
  std::optional<int64_t> AxisIndex(absl::string_view name) const;

  // dim_axes[k] lists the axes that split array dim k, major to minor; axes not used by any dim
  // become a replication subgroup (`last_tile_dim_replicate`). Each axis at most once.
  absl::StatusOr<HloSharding> ShardingFor(
      const std::vector<std::vector<std::string>>& dim_axes) const;

  // The replica groups XLA's mesh-axes form denotes: devices that differ only in the digits of
  // `axes` share a group, ordered by them (the first listed is the major one), groups ordered by
  // the remaining digits. Errors for unknown axes, sub-axes that do not divide their axis, and
  // overlapping references.
  absl::StatusOr<ReplicaGroups> ReplicaGroupsOver(absl::Span<const MeshAxisRef> axes) const;

  // `mesh[data=2,model=4]`, plus ` devices=...` when the device order is not the plain iota.
  std::string ToString() const;

 private:
  std::vector<MeshAxis> axes_;
  TileAssignment devices_;
};

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_MESH_H_
