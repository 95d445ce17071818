// Shardy's sharding notation (`#sdy.sharding<@mesh, [{"data"}, {}]>` over
// `sdy.mesh @mesh = <["data"=2, "model"=4]>`) and the axis-based layout behind it and behind
// JAX's PartitionSpec: per array dim, the mesh axes or sub-axes that split it, major first.
// Both directions to and from HloSharding; the inverse says why when a sharding has no such form
// over a given mesh. Syntax as in openxla/shardy's docs (sharding_representation.md,
// sdy_dialect.md): sub-axes `"x":(pre)size`, open dims `{"a", ?}`, priorities `{"a"}p1`,
// `replicated={...}`, `unreduced={...}`, inline meshes `mesh<[...]>`, `device_ids=[...]`.
#ifndef SPMDCHECK_IR_SDY_SHARDING_H_
#define SPMDCHECK_IR_SDY_SHARDING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/mesh.h"
#include "ir/sharding.h"

namespace spmdcheck {

// ------------------------------------------------------------------------------------------
// The layout of an array over a named mesh (the common meaning of Shardy shardings and JAX
// PartitionSpecs). Axis refs are mesh axis indices with an optional sub-axis (MeshAxisRef:
// `size` 0 = the whole axis; else the middle factor of [pre_size, size, rest]).

struct AxisLayout {
  // Per array dim, the (sub-)axes that split it, major first.
  std::vector<std::vector<MeshAxisRef>> dims;
  // Axes over which the value is manual (inside a shard_map / sdy.manual_computation).
  std::vector<MeshAxisRef> manual;
  // Axes over which the value is an unreduced partial sum.
  std::vector<MeshAxisRef> unreduced;
  // Every other axis replicates the value.
};

// The HloSharding the layout denotes (as XLA's Shardy export writes it): the mesh's device
// array with every axis split at the sub-axis boundaries used, transposed so that each dim's
// factors come first (major first), then the manual, unreduced and replicated factors. Errors:
// unknown axes, sub-axes that do not divide their axis or overlap, an axis used twice.
absl::StatusOr<HloSharding> LayoutToHloSharding(const Mesh& mesh, const AxisLayout& layout);

// The inverse, for an array of rank `rank`: the layout over `mesh` whose HloSharding places
// every tile on the same devices as `sharding` (checked by converting back). Sub-axes are used
// where a tile dim splits a mesh axis. Errors say why there is none: a device order that is no
// transposed view of the mesh's device order, a tile count no product of (sub-)axes gives, a
// device count that differs from the mesh's, maximal/tuple/unknown shardings.
absl::StatusOr<AxisLayout> HloShardingToLayout(const Mesh& mesh, const HloSharding& sharding,
                                               int64_t rank);

// A mesh over which `sharding` (non-tuple) has a layout: the digits of its device ids as axes
// named x0, x1, ... (major first) when the device array is a transposed iota, else one axis per
// tile dim with the sharding's device order as the mesh's device order. Shardings without a tile
// assignment get one axis over `num_devices` devices.
Mesh MeshForSharding(const HloSharding& sharding, int64_t num_devices);

// ------------------------------------------------------------------------------------------
// Shardy's attributes.

// `"x"` or `"x":(pre_size)size`.
struct SdyAxisRef {
  std::string name;
  int64_t pre_size = 1;
  int64_t size = 0;  // 0: the whole axis.
  bool operator==(const SdyAxisRef&) const = default;
};

// `{"a", "b"}`, `{"a", ?}` (open), `{?}`, `{"a"}p1` (priority).
struct SdyDimSharding {
  std::vector<SdyAxisRef> axes;
  bool closed = true;
  std::optional<int64_t> priority;
  bool operator==(const SdyDimSharding&) const = default;
};

// `<["a"=2, "b"=4]>`, `<["a"=2, "b"=4], device_ids=[0, 2, 4, 6, 1, 3, 5, 7]>`, `<[]>`,
// `<[], device_ids=[3]>` (maximal: no axes, one device).
struct SdyMesh {
  std::vector<MeshAxis> axes;
  std::vector<int64_t> device_ids;  // Empty: iota(product of the axis sizes).

  bool IsMaximal() const { return axes.empty() && device_ids.size() == 1; }
  // The mesh as spmdcheck's Mesh (the maximal mesh is a mesh of one device, id 0).
  absl::StatusOr<Mesh> ToMesh() const;
  static SdyMesh FromMesh(const Mesh& mesh);
  // `<["a"=2, "b"=4]>` (the form after `sdy.mesh @name =`; prefix `#sdy.mesh` for the attribute).
  std::string ToString() const;
};

// `#sdy.sharding<@mesh, [{"a"}, {}], replicated={"b"}>` (or with an inline `mesh<[...]>`).
struct SdySharding {
  std::string mesh_name;               // The referenced mesh, without `@`; empty when inline.
  std::optional<SdyMesh> inline_mesh;  // Set when the mesh is written inline.
  std::vector<SdyDimSharding> dims;
  std::vector<SdyAxisRef> replicated;
  std::vector<SdyAxisRef> unreduced;

  // `#sdy.sharding<@mesh, [{"a"}, {}]>`; without the `#sdy.sharding` prefix when `bare`
  // (the form inside sharding_per_value, sharding_constraint, manual_computation).
  std::string ToString(bool bare = false) const;
  // True when some dim is open (`?`) or has a priority: hints for propagation that an
  // HloSharding does not carry.
  bool HasPropagationHints() const;
};

// Parses a mesh: `<[...]>`, `#sdy.mesh<[...]>`, `mesh<[...]>` or a whole
// `sdy.mesh @name = <[...]>` line (then `name` receives the symbol name).
absl::StatusOr<SdyMesh> ParseSdyMesh(absl::string_view text, std::string* name = nullptr);
// Parses `#sdy.sharding<...>` or the bare `<...>` form.
absl::StatusOr<SdySharding> ParseSdySharding(absl::string_view text);
// Parses `#sdy.sharding_per_value<[<...>, ...]>` (one sharding per result).
absl::StatusOr<std::vector<SdySharding>> ParseSdyShardingPerValue(absl::string_view text);
// The meshes of an HLO module's `xla.sdy.meshes={mesh = #sdy.mesh<[...]>, ...}` frontend
// attribute value (escaped quotes `\"` accepted), in order, as (name, mesh).
absl::StatusOr<std::vector<std::pair<std::string, SdyMesh>>> ParseSdyMeshes(absl::string_view text);

// The sharding's HloSharding over `mesh` (the one it references); `manual_axes` are the
// axes of an enclosing manual computation (they become a manual subgroup). Open dims,
// priorities and explicit replication do not change where tiles live.
absl::StatusOr<HloSharding> SdyToHloSharding(const SdySharding& sharding, const SdyMesh& mesh,
                                             absl::Span<const std::string> manual_axes = {});

// `sharding` over `mesh` as a Shardy sharding of an array of rank `rank` referencing
// `@mesh_name`, all dims closed. Errors as HloShardingToLayout; a maximal sharding needs the
// maximal mesh of its device, manual subgroups have no Shardy sharding (they are the manual axes
// of an sdy.manual_computation).
absl::StatusOr<SdySharding> HloToSdySharding(const HloSharding& sharding, const SdyMesh& mesh,
                                             int64_t rank, absl::string_view mesh_name = "mesh");

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_SDY_SHARDING_H_
