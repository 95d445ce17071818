// The device mesh of a partitioned program, recovered from its tile assignments and collective
// groups: device ids are read as mixed-radix numbers whose digits are the finest factorisation
// every iota tile assignment and replica-group list respects ("digits"), and digits that the
// program's shardings split together are merged into one mesh axis. A user's --mesh or a mesh
// written in the module (Shardy's `sdy.mesh`, XLA's `mesh['a'=2,...]` replica groups, JAX's
// `Mesh('a': 2, ...)` in metadata) fixes the axes and their names instead. Each tile dim and each
// collective group is then described as the mesh axes (or sub-axes) it spans.
#ifndef SPMDCHECK_EXPLAIN_MESH_RECOVERY_H_
#define SPMDCHECK_EXPLAIN_MESH_RECOVERY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/mesh.h"
#include "ir/tile_assignment.h"

namespace spmdcheck::explain {

// Axis names and sizes in device-id order (the first is the most significant), as the user gave
// them or as the module states them; size-1 axes are dropped.
struct NamedMesh {
  std::vector<MeshAxis> axes;
  std::string source;  // "--mesh", "the module's sdy.mesh", ...
};

// `data=2,model=4` (also `data:2`); sizes >= 1.
absl::StatusOr<NamedMesh> ParseMeshFlag(absl::string_view text);

// A mesh the module text states whose device count is `num_devices`: Shardy's
// `sdy.mesh<["a"=2, ...]>` (frontend attributes), XLA's mesh-axes replica groups
// `mesh['a'=2,...]`, JAX's `Mesh('a': 2, ...)` in op_name metadata. nullopt when there is none
// (or only ones with an explicit device order, which this reading does not support).
std::optional<NamedMesh> MeshFromModuleText(absl::string_view text, int64_t num_devices);

// A mesh axis or the sub-axis `name:(pre_size)size` of it (the middle factor of the axis viewed as
// [pre_size, size, rest], major first).
struct AxisPart {
  int axis = -1;
  int64_t pre_size = 1;
  int64_t size = 0;  // Set always; equal to the axis size for the whole axis.
  bool operator==(const AxisPart&) const = default;
};

struct RecoveredAxis {
  std::string name;
  int64_t size = 1;
  int64_t stride = 1;  // device id = sum over axes of coordinate * stride
};

// What the mesh is recovered from.
struct MeshObservations {
  // Tile assignments of shardings with the number of leading data dims; they refine the digits
  // and vote on which digits form one axis. Anchors are the shardings a user writes (entry
  // parameters and root, sharding constraints, loop state); when some anchor votes, only anchors
  // do: a partitioner's intermediate shardings may use parts of axes.
  struct Array {
    TileAssignment tiles;
    int64_t data_dims = 0;
    bool anchor = false;
  };
  std::vector<Array> arrays;
  // Device groups of collectives (partition ids); they only refine the digits.
  std::vector<std::vector<std::vector<int64_t>>> groups;
};

class RecoveredMesh {
 public:
  // `named`: fixes the axes (its device count must be num_devices).
  static absl::StatusOr<RecoveredMesh> Recover(int64_t num_devices,
                                               const MeshObservations& observations,
                                               const std::optional<NamedMesh>& named);

  int64_t num_devices() const { return num_devices_; }
  const std::vector<RecoveredAxis>& axes() const { return axes_; }
  int num_axes() const { return static_cast<int>(axes_.size()); }
  // How the axes were found (e.g. "--mesh", "inferred from 12 shardings").
  const std::string& source() const { return source_; }
  // Observations whose breakpoints conflicted with the chosen digits (irregular).
  int64_t conflicting_observations() const { return conflicts_; }

  int64_t Coordinate(int64_t device, int axis) const {
    return device / axes_[axis].stride % axes_[axis].size;
  }
  int64_t WithCoordinate(int64_t device, int axis, int64_t value) const {
    return device + (value - Coordinate(device, axis)) * axes_[axis].stride;
  }

  // Per dim of `tiles` (a device array holding every device exactly once), the axis parts that
  // split it, major first; nullopt when the array is not a product of mesh digits.
  std::optional<std::vector<std::vector<AxisPart>>> DimAxes(const TileAssignment& tiles) const;
  // The axis parts that vary within the groups (groups partition every device, and each is all
  // devices agreeing on the other digits); nullopt otherwise. Empty for single-device groups.
  std::optional<std::vector<AxisPart>> GroupAxes(
      const std::vector<std::vector<int64_t>>& groups) const;

  // `model`, or `model:(2)4` for a sub-axis.
  std::string PartName(const AxisPart& part) const;
  // `data=2 x pipeline=4 x model=8`.
  std::string ToString() const;

 private:
  struct Digit {
    int64_t stride = 1;
    int64_t size = 1;
    int axis = 0;
  };
  int64_t DigitValue(int64_t device, int digit) const {
    return device / digits_[digit].stride % digits_[digit].size;
  }
  // Per dim of `tiles`, its digits major first; nullopt when the array is no digit product.
  std::optional<std::vector<std::vector<int>>> DigitLists(const TileAssignment& tiles) const;
  // Axis parts of an ordered digit list (major first): maximal runs within one axis.
  std::vector<AxisPart> PartsOfDigits(const std::vector<int>& digits) const;

  int64_t num_devices_ = 1;
  std::vector<Digit> digits_;  // Major (largest stride) first.
  std::vector<RecoveredAxis> axes_;
  std::string source_;
  int64_t conflicts_ = 0;
};

}  // namespace spmdcheck::explain

#endif  // SPMDCHECK_EXPLAIN_MESH_RECOVERY_H_
