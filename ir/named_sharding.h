// XLA's named-mesh sharding ("HloSharding V3"), as jaxlib 0.12's dumps print every sharding of a
// Shardy compile:
//   {mesh['x'=2,'y'=4], [{'x'}, {'y', ?}], replicated={...}, unreduced={'y'}, manual={'x'}}
//   {mesh['a'=2,'b'=4], device_ids=([4,2]T(1,0)), [{'b':(2)2}]}    (device order, a sub-axis)
//   {mesh['x'=2,'y'=4], replicated}, {mesh[...], manual}, {mesh[...], unreduced=max},
//   {mesh[], replicated}, {single_device[device_id=3]}
// A NamedSharding is the form as written: the mesh, the (sub-)axes on each dim (major first),
// open dims (`?`), and the replicated, unreduced and manual axes. Its meaning is an ordinary
// HloSharding (ToHloSharding: XLA's V3 -> V2 conversion, the same as a Shardy sharding's); the
// HloSharding keeps the form to print it back (HloSharding::named()).
#ifndef SPMDCHECK_IR_NAMED_SHARDING_H_
#define SPMDCHECK_IR_NAMED_SHARDING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/mesh.h"
#include "ir/sharding.h"

namespace spmdcheck {

class NamedSharding {
 public:
  // What the sharding says as a whole: per-dim axes (the general form), or one of the short
  // forms that name no dims.
  enum class Form : uint8_t {
    kDims,          // `[{...}, ...]` (with optional replicated=/unreduced=/manual= lists)
    kReplicated,    // `{mesh[...], replicated}`
    kManual,        // `{mesh[...], manual}`: manual over every axis
    kUnreduced,     // `{mesh[...], unreduced}`: unreduced over every axis (or the glued list)
    kSingleDevice,  // `{single_device[device_id=N]}`
  };
  struct Dim {
    std::vector<MeshAxisRef> axes;  // Major first.
    bool open = false;              // `?`: propagation may shard it further.
    bool operator==(const Dim&) const = default;
  };

  // The general form. Validates every reference (axes of the mesh, sub-axes that divide their
  // axis, no axis or part of one used twice across dims and lists).
  static absl::StatusOr<NamedSharding> Create(Mesh mesh, std::vector<Dim> dims,
                                              std::vector<MeshAxisRef> replicated = {},
                                              std::vector<MeshAxisRef> unreduced = {},
                                              std::vector<MeshAxisRef> manual = {},
                                              std::string unreduced_op = "");
  static NamedSharding Replicated(Mesh mesh);
  static NamedSharding Manual(Mesh mesh);
  // Unreduced over `axes` (empty: every axis).
  static absl::StatusOr<NamedSharding> Unreduced(Mesh mesh, std::vector<MeshAxisRef> axes = {},
                                                 std::string unreduced_op = "");
  static NamedSharding SingleDevice(int64_t device);

  Form form() const { return form_; }
  const Mesh& mesh() const { return mesh_; }
  const std::vector<Dim>& dims() const { return dims_; }
  const std::vector<MeshAxisRef>& replicated() const { return replicated_; }
  const std::vector<MeshAxisRef>& unreduced() const { return unreduced_; }
  const std::vector<MeshAxisRef>& manual() const { return manual_; }
  // The reduction of unreduced values: "" (sum, the default), "max" or "min".
  const std::string& unreduced_op() const { return unreduced_op_; }
  int64_t device() const { return device_; }
  bool HasOpenDims() const;

  // The sharding it denotes (XLA's V3 -> V2 conversion): every mesh axis cut at the sub-axis
  // boundaries used, the pieces of each dim's axes as its tile dim (major first), then the
  // manual, unreduced and remaining (replicated) pieces as subgroup dims.
  absl::StatusOr<HloSharding> ToHloSharding() const;

  // The same sharding inside a manual computation over `axes` (added to the manual axes; the
  // short forms become `rank` empty dims). Errors when an axis is already used otherwise.
  absl::StatusOr<NamedSharding> WithManualAxes(absl::Span<const MeshAxisRef> axes,
                                               int64_t rank) const;
  // XLA drops a dims list that is all empty (`[]`), so a rank-2 value can carry
  // `{mesh[...], [], manual={'x'}}`: the same with `rank` empty dims, so that the HloSharding has
  // the value's data rank. Itself when the dims are not all empty or already that many.
  absl::StatusOr<NamedSharding> WithRank(int64_t rank) const;

  // XLA's text without the braces, e.g. `mesh['x'=2,'y'=4], [{'x'}, {}]` (`metadata` is the raw
  // `{...}` value; empty: none).
  std::string ToString(absl::string_view metadata = "") const;

  bool operator==(const NamedSharding& other) const;

 private:
  NamedSharding() = default;
  Form form_ = Form::kReplicated;
  Mesh mesh_;
  std::vector<Dim> dims_;
  std::vector<MeshAxisRef> replicated_, unreduced_, manual_;
  std::string unreduced_op_;
  int64_t device_ = -1;
};

// `sharding` with each named form whose dims list XLA left empty (`[]`, `{mesh[...], manual}`
// inside a body) widened to the data rank of its leaf of `shape`; nullopt when nothing changes.
std::optional<HloSharding> FitNamedShardingsToShape(const HloSharding& sharding,
                                                    const Shape& shape);

// `mesh['x'=2,'y'=4]`, plus `, device_ids=(...)` when the device order is not the plain iota:
// `([reshape]T(perm))` for a transposed iota, else the explicit row-major list.
std::string XlaMeshText(const Mesh& mesh);
// `'x'` or `'x':(pre)size`.
std::string XlaAxisRefText(const Mesh& mesh, const MeshAxisRef& ref);

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_NAMED_SHARDING_H_
