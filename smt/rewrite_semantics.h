// Collective semantics for the rewrite catalog, over RwExpr terms. A
// distributed value is a function from a device (its mesh coordinates) and a
// local index to an element term; collectives and local ops are higher-order
// functions on such values, following spec §3.3 (all-gather concatenates in
// group order, reduce-scatter keeps block `position`, all-to-all routes chunk j
// to member j, collective-permute fills non-receivers with zeros,
// collective-broadcast copies the first member). Mesh and local sizes are terms
// too: constants when a mesh is enumerated, variables when a rule is proved
// parametrically (then only ops without a loop over the group size are
// available; the all-reduce family marks the value unsupported).
#ifndef SPMDCHECK_SMT_REWRITE_SEMANTICS_H_
#define SPMDCHECK_SMT_REWRITE_SEMANTICS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "smt/rewrite_expr.h"

namespace spmdcheck::smt::rw {

using Device = std::vector<Expr>;  // Mesh coordinates, major axis first.
using Index = std::vector<Expr>;   // Local index.

// A device mesh: axis sizes; device id = row-major linearisation of the
// coordinates.
struct MeshModel {
  std::vector<Expr> sizes;
  int rank() const { return static_cast<int>(sizes.size()); }
  Expr Id(const Device& d) const { return RowMajor(d, sizes); }
  Device FromId(const Expr& id) const;
  Expr NumDevices() const { return Product(sizes); }
};

// Replica groups: the group of every device, the device's position in it, and
// its members.
struct Groups {
  Expr size;
  std::function<Expr(const Device&)> position;
  std::function<Device(const Device&, const Expr&)> member;  // Member at position p of d's group.
  std::string text;
};

// Groups over mesh axes `axes` (in that order, first = most significant
// position digit): the devices that agree on every other axis, i.e. iota groups
// [G,S]<=[mesh]T(others..., axes...).
Groups AxisGroups(const MeshModel& mesh, const std::vector<int>& axes);
// Explicit groups of device ids (constant mesh only); every device must be in
// one group.
Groups ExplicitGroups(const MeshModel& mesh, const std::vector<std::vector<int64_t>>& groups);

// Source-target pairs as a partial function target -> source.
struct Pairs {
  std::function<Expr(const Device&)> has_source;
  std::function<Device(const Device&)> source;
  std::string text;
};
// Every device sends to the device `shift` further along `axis` (cyclic: modulo
// the axis size; otherwise devices past the end send nothing).
Pairs ShiftPairs(const MeshModel& mesh, int axis, int64_t shift, bool cyclic);
// Explicit pairs {source, target} of device ids (constant mesh only).
Pairs ExplicitPairs(const MeshModel& mesh, const std::vector<std::pair<int64_t, int64_t>>& pairs);

struct Dist {
  std::vector<Expr> shape;  // Local shape, the same on every device.
  std::function<Expr(const Device&, const Index&)> at;
  std::string error;  // Non-empty: this value cannot be built (e.g. a reduction
                      // over a symbolic group size).
};

// X_input(device coordinates..., index...): an arbitrary value on every device.
Dist InputValue(int input, int mesh_rank, std::vector<Expr> shape);
// X_input(index...): the same (replicated) value on every device.
Dist ReplicatedInput(int input, std::vector<Expr> shape);
Dist Zeros(std::vector<Expr> shape);

Dist AllGather(const Dist& v, const Groups& g, int dim);
Dist AllReduce(const Dist& v, const Groups& g);
Dist ReduceScatter(const Dist& v, const Groups& g, int dim);
Dist AllToAll(const Dist& v, const Groups& g, int split_dim, int concat_dim);
Dist CollectivePermute(const Dist& v, const Pairs& p);
Dist CollectiveBroadcast(const Dist& v, const Groups& g);

Dist Plus(const Dist& a, const Dist& b);
Dist Scale(const Dist& a, const Expr& k);
Dist Select(const std::function<Expr(const Device&)>& mask, const Dist& a, const Dist& b);
// Start index clamped to [0, dim - size] as XLA does.
Dist DynamicSlice(const Dist& v, int dim, const std::function<Expr(const Device&)>& offset,
                  const Expr& size);
Dist DynamicUpdateSlice(const Dist& base, const Dist& update, int dim,
                        const std::function<Expr(const Device&)>& offset);
Dist Reshape(const Dist& v, std::vector<Expr> shape);
Dist Transpose(const Dist& v, const std::vector<int>& perm);
// Output dim dims[j] comes from operand dim j; the other output dims are
// broadcast.
Dist Broadcast(const Dist& v, std::vector<Expr> shape, const std::vector<int>& dims);

// Composition of explicit pair lists: `first` then `second`: {(s,t) : (s,m) in
// first, (m,t) in second}.
std::vector<std::pair<int64_t, int64_t>> ComposePairs(
    const std::vector<std::pair<int64_t, int64_t>>& first,
    const std::vector<std::pair<int64_t, int64_t>>& second);

}  // namespace spmdcheck::smt::rw

#endif  // SPMDCHECK_SMT_REWRITE_SEMANTICS_H_
