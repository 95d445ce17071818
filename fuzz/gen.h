// RapidCheck generators (with shrinking) for the fuzzing room: element types, shapes, meshes,
// shardings valid for a shape and a mesh, and replica groups. Every generator is composed from
// rc::gen combinators, so counterexamples shrink structurally (smaller ranks, fewer axes,
// simpler device orders, simpler sharding forms).
#ifndef SPMDCHECK_FUZZ_GEN_H_
#define SPMDCHECK_FUZZ_GEN_H_

#include <rapidcheck.h>

#include <cstdint>
#include <ostream>
#include <vector>

#include "ir/mesh.h"
#include "ir/primitive_type.h"
#include "ir/replica_groups.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace spmdcheck {

// RapidCheck prints counterexamples through these (found by ADL).
void showValue(const Shape& shape, std::ostream& os);
void showValue(const Mesh& mesh, std::ostream& os);
void showValue(const HloSharding& sharding, std::ostream& os);
void showValue(const ReplicaGroups& groups, std::ostream& os);

namespace fuzz {

// Bounds that keep generated programs small.
inline constexpr int64_t kMaxGenElements = 4096;  // Elements of one generated array.
inline constexpr int64_t kMaxGenDevices = 512;    // Devices of one generated mesh.

// A random permutation of 0..n-1 (shrinks towards the identity).
rc::Gen<std::vector<int64_t>> GenPermutation(int64_t n);

// Any array element type (never token/tuple/invalid).
rc::Gen<PrimitiveType> GenElementType();

// An array of rank 0..max_rank: uneven dims, size-1 dims, size-0 dims rarely; at most
// kMaxGenElements elements.
rc::Gen<Shape> GenShape(int64_t max_rank = 5);

// A tuple of 0..3 arrays (rank <= 3), occasionally with one nested tuple.
rc::Gen<Shape> GenTupleShape();

// Mostly arrays, sometimes tuples.
rc::Gen<Shape> GenShapeOrTuple();

// 1-4 axes named x, y, z, w; sizes include 1 and non-powers of two; at most kMaxGenDevices
// devices; device order the plain iota or a transposed iota.
rc::Gen<Mesh> GenMesh();

// A sharding valid for `shape` on `mesh` (HloSharding::Validate(shape, mesh.num_devices())
// holds): replicated, maximal, manual, tiled (via Mesh::ShardingFor with a random axis-to-dim
// mapping, or random tile dims with explicit / transposed-iota / mesh-ordered devices), partial
// replication, manual subgroups ({manual} and {manual, replicated}); flat tuple shardings (one
// element per leaf) for tuple shapes.
rc::Gen<HloSharding> GenShardingFor(const Shape& shape, const Mesh& mesh);

// A sharding of `shape` that `mesh` alone expresses: replicated, maximal, or mesh axes assigned
// to dims (unused axes replicate). What Shardy's one-mesh model imports: no random tile dims or
// device orders, no manual shardings. Flat tuple shardings for tuple shapes.
rc::Gen<HloSharding> GenOneMeshShardingFor(const Shape& shape, const Mesh& mesh);

// Uniform-size replica groups covering 0..num_devices-1 exactly once, explicit or iota form.
rc::Gen<ReplicaGroups> GenReplicaGroups(int64_t num_devices);

// A shape (array or tuple), a mesh and a sharding of the shape on the mesh.
struct ShardingCase {
  Shape shape;
  Mesh mesh;
  HloSharding sharding;
};
rc::Gen<ShardingCase> GenShardingCase();
void showValue(const ShardingCase& c, std::ostream& os);

}  // namespace fuzz
}  // namespace spmdcheck

#endif  // SPMDCHECK_FUZZ_GEN_H_
