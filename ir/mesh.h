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
#include "ir/sharding.h"
#include "ir/tile_assignment.h"

namespace spmdcheck {

struct MeshAxis {
  std::string name;
  int64_t size = 1;
};

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

  // `mesh[data=2,model=4]`, plus ` devices=...` when the device order is not the plain iota.
  std::string ToString() const;

 private:
  std::vector<MeshAxis> axes_;
  TileAssignment devices_;
};

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_MESH_H_
