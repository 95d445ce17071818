// JAX's PartitionSpec over a named mesh (`P('data', None)` on `data=2,model=4`) and the
// HloSharding it lowers to, both ways. A PartitionSpec names whole mesh axes per array dim
// (a tuple of axes splits one dim major first; None leaves a dim whole); mesh axes it does not
// name replicate the array. The inverse says why a sharding has no PartitionSpec over a mesh.
#ifndef SPMDCHECK_IR_PARTITION_SPEC_H_
#define SPMDCHECK_IR_PARTITION_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/mesh.h"
#include "ir/sharding.h"

namespace spmdcheck {

struct PartitionSpec {
  struct Dim {
    std::vector<std::string> axes;  // Major first; empty: None.
    // P.UNCONSTRAINED: the dim is left to propagation (XLA writes `unspecified_dims` on the
    // Sharding custom-call; the HloSharding itself keeps the dim whole).
    bool unconstrained = false;
    bool operator==(const Dim&) const = default;
  };
  std::vector<Dim> dims;
  std::vector<std::string> unreduced;  // P(..., unreduced={'x'})

  bool HasUnconstrained() const;
  // `P('data', None)`, `P(('data', 'model'), None)`, `P()`, `P(None, P.UNCONSTRAINED)`.
  std::string ToString() const;
  bool operator==(const PartitionSpec&) const = default;
};

// Parses `P(...)`, `PartitionSpec(...)`, `jax.P(...)` or `jax.sharding.PartitionSpec(...)` with
// entries None, 'axis', ('a', 'b') and P.UNCONSTRAINED, and an optional `unreduced={'x'}`.
// Errors carry `<input>:1:COL`.
absl::StatusOr<PartitionSpec> ParsePartitionSpec(absl::string_view text);

// Parses a mesh: `data=2,model=4` (optionally `mesh[data=2,model=4]`), optionally followed by
// ` devices=[2,4]<=[4,2]T(1,0)` or ` devices=[2,4]0,2,4,6,1,3,5,7` (the device order, as
// Mesh::ToString prints it); or Shardy's `<["data"=2, "model"=4], device_ids=[...]>` (also
// `#sdy.mesh<...>`, `sdy.mesh @name = <...>`).
absl::StatusOr<Mesh> ParseMeshSpec(absl::string_view text);

// The HloSharding `spec` gives an array of rank `rank` (-1: the spec's length) over `mesh`, as
// jax's NamedSharding lowers it. A spec shorter than the rank leaves the trailing dims whole.
absl::StatusOr<HloSharding> PartitionSpecToSharding(const Mesh& mesh, const PartitionSpec& spec,
                                                    int64_t rank = -1);

// The PartitionSpec over `mesh` that places every tile of an array of rank `rank` (-1: the
// sharding's tiled rank) where `sharding` does; an error saying why when there is none (a device
// order that is no view of the mesh, a tile dim that splits a mesh axis, manual subgroups,
// maximal or tuple shardings).
absl::StatusOr<PartitionSpec> ShardingToPartitionSpec(const Mesh& mesh, const HloSharding& sharding,
                                                      int64_t rank = -1);

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_PARTITION_SPEC_H_
