// Sharding hints in the user's notation: the JAX constraint
// `jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P('data', None, 'model')))` that gives a
// value a sharding, when the device mesh has named axes (read from the module, or given with
// `--mesh data=2,model=4`). A small private formatter: the PartitionSpec is found by trying every
// placement of the mesh axes on the array dims (ir/mesh.h's Mesh::ShardingFor builds the sharding
// JAX would lower each to) and keeping one that puts every device on the same tile.
#ifndef SPMDCHECK_LINT_JAX_HINT_H_
#define SPMDCHECK_LINT_JAX_HINT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/mesh.h"
#include "ir/sharding.h"

namespace spmdcheck::lint {

// `data=2,model=4` (devices in row-major order over the axes).
absl::StatusOr<Mesh> ParseMeshFlag(absl::string_view text);

// The named mesh a module's text mentions with `num_partitions` devices: XLA's mesh-axes replica
// groups (`mesh['data'=2,'model'=4] {...}`) or Shardy's `sdy.mesh<["data"=2, "model"=4]>`; the
// first that fits. nullopt when there is none.
std::optional<Mesh> MeshFromModuleText(absl::string_view text, int64_t num_partitions);

// The PartitionSpec (`P('data', None, 'model')`, `P(('data', 'model'), None)`, `P(None, None)`
// for replicated; one entry per dim) whose NamedSharding over `mesh` lays out an array of `rank`
// dims as `sharding` does; nullopt when no placement of whole mesh axes does.
std::optional<std::string> PartitionSpecFor(const HloSharding& sharding, int64_t rank,
                                            const Mesh& mesh);

// `jax.lax.with_sharding_constraint(VALUE, NamedSharding(mesh, SPEC))`.
std::string JaxConstraint(absl::string_view value, absl::string_view spec);

}  // namespace spmdcheck::lint

#endif  // SPMDCHECK_LINT_JAX_HINT_H_
