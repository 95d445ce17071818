#include "ir/named_sharding.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/sdy_sharding.h"

namespace spmdcheck {
namespace {

std::string Quoted(absl::string_view name) {
  std::string out = "'";
  for (char c : name) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  out += "'";
  return out;
}

std::string RefList(const Mesh& mesh, absl::Span<const MeshAxisRef> refs) {
  std::vector<std::string> parts;
  for (const MeshAxisRef& ref : refs) parts.push_back(XlaAxisRefText(mesh, ref));
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

bool SameRefs(absl::Span<const MeshAxisRef> a, absl::Span<const MeshAxisRef> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].axis != b[i].axis || a[i].pre_size != b[i].pre_size || a[i].size != b[i].size) {
      return false;
    }
  }
  return true;
}

// Every mesh axis, size-1 ones included, in mesh order.
std::vector<MeshAxisRef> EveryAxis(const Mesh& mesh) {
  std::vector<MeshAxisRef> refs;
  for (size_t i = 0; i < mesh.axes().size(); ++i) refs.push_back({static_cast<int64_t>(i), 1, 0});
  return refs;
}

// XLA's ContainsAllMeshAxesInOrder as its V3 -> V2 conversion uses it: a non-empty list of
// whole axes that holds every axis of size > 1, in mesh order (size-1 axes do not count).
bool CoversEverySizedAxis(const Mesh& mesh, absl::Span<const MeshAxisRef> refs) {
  if (refs.empty()) return false;
  std::vector<int64_t> listed;
  for (const MeshAxisRef& ref : refs) {
    if (ref.size != 0) return false;
    if (mesh.axes()[ref.axis].size > 1) listed.push_back(ref.axis);
  }
  std::vector<int64_t> sized;
  for (size_t i = 0; i < mesh.axes().size(); ++i) {
    if (mesh.axes()[i].size > 1) sized.push_back(static_cast<int64_t>(i));
  }
  return listed == sized;
}

AxisLayout LayoutOf(const std::vector<NamedSharding::Dim>& dims,
                    const std::vector<MeshAxisRef>& unreduced,
                    const std::vector<MeshAxisRef>& manual) {
  AxisLayout layout;
  for (const NamedSharding::Dim& dim : dims) layout.dims.push_back(dim.axes);
  layout.unreduced = unreduced;
  layout.manual = manual;
  return layout;
}

}  // namespace

std::string XlaAxisRefText(const Mesh& mesh, const MeshAxisRef& ref) {
  std::string name = ref.axis >= 0 && ref.axis < static_cast<int64_t>(mesh.axes().size())
                         ? Quoted(mesh.axes()[ref.axis].name)
                         : absl::StrCat("<axis ", ref.axis, ">");
  if (ref.size == 0) return name;
  return absl::StrCat(name, ":(", ref.pre_size, ")", ref.size);
}

std::string XlaMeshText(const Mesh& mesh) {
  std::vector<std::string> axes;
  for (const MeshAxis& axis : mesh.axes()) {
    axes.push_back(absl::StrCat(Quoted(axis.name), "=", axis.size));
  }
  std::string out = absl::StrCat("mesh[", absl::StrJoin(axes, ","), "]");
  if (mesh.axes().empty()) return out;
  const TileAssignment& devices = mesh.devices();
  if (devices == TileAssignment::Iota(devices.dims())) return out;
  if (std::optional<IotaTileAssignment> iota = devices.AsIota();
      iota.has_value() && devices.is_iota()) {
    absl::StrAppend(&out, ", device_ids=([", absl::StrJoin(iota->reshape_dims(), ","), "]T(",
                    absl::StrJoin(iota->perm(), ","), "))");
    return out;
  }
  absl::StrAppend(&out, ", device_ids=(", absl::StrJoin(devices.Devices(), ","), ")");
  return out;
}

absl::StatusOr<NamedSharding> NamedSharding::Create(Mesh mesh, std::vector<Dim> dims,
                                                    std::vector<MeshAxisRef> replicated,
                                                    std::vector<MeshAxisRef> unreduced,
                                                    std::vector<MeshAxisRef> manual,
                                                    std::string unreduced_op) {
  if (!unreduced_op.empty() && unreduced_op != "sum" && unreduced_op != "max" &&
      unreduced_op != "min") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown unreduced reduction '", unreduced_op, "' (sum, max or min)"));
  }
  // Every reference valid and none overlapping another, the replicated list included: checked
  // by laying all of them out once.
  AxisLayout check = LayoutOf(dims, unreduced, manual);
  check.dims.push_back(replicated);
  absl::StatusOr<HloSharding> laid_out = LayoutToHloSharding(mesh, check);
  if (!laid_out.ok()) return laid_out.status();
  NamedSharding s;
  s.form_ = Form::kDims;
  // The short forms XLA prints for an empty dims list `[]`: replicated when nothing is listed;
  // manual or unreduced when that list alone covers every axis of size > 1.
  if (dims.empty() && replicated.empty()) {
    if (unreduced.empty() && manual.empty()) s.form_ = Form::kReplicated;
    if (unreduced.empty() && CoversEverySizedAxis(mesh, manual)) s.form_ = Form::kManual;
    if (manual.empty() && CoversEverySizedAxis(mesh, unreduced)) s.form_ = Form::kUnreduced;
  }
  s.mesh_ = std::move(mesh);
  s.dims_ = std::move(dims);
  s.replicated_ = std::move(replicated);
  s.unreduced_ = std::move(unreduced);
  s.manual_ = std::move(manual);
  s.unreduced_op_ = unreduced_op == "sum" ? "" : std::move(unreduced_op);
  return s;
}

NamedSharding NamedSharding::Replicated(Mesh mesh) {
  NamedSharding s;
  s.form_ = Form::kReplicated;
  s.mesh_ = std::move(mesh);
  return s;
}

NamedSharding NamedSharding::Manual(Mesh mesh) {
  NamedSharding s;
  s.form_ = Form::kManual;
  s.manual_ = EveryAxis(mesh);
  s.mesh_ = std::move(mesh);
  return s;
}

absl::StatusOr<NamedSharding> NamedSharding::Unreduced(Mesh mesh, std::vector<MeshAxisRef> axes,
                                                       std::string unreduced_op) {
  if (axes.empty()) axes = EveryAxis(mesh);
  absl::StatusOr<NamedSharding> s =
      Create(std::move(mesh), {}, {}, std::move(axes), {}, std::move(unreduced_op));
  if (!s.ok()) return s.status();
  s->form_ = Form::kUnreduced;
  return s;
}

NamedSharding NamedSharding::SingleDevice(int64_t device) {
  NamedSharding s;
  s.form_ = Form::kSingleDevice;
  s.device_ = device;
  return s;
}

bool NamedSharding::HasOpenDims() const {
  return std::any_of(dims_.begin(), dims_.end(), [](const Dim& d) { return d.open; });
}

absl::StatusOr<HloSharding> NamedSharding::ToHloSharding() const {
  switch (form_) {
    case Form::kReplicated:
      return HloSharding::Replicate();
    case Form::kManual:
      return HloSharding::Manual();
    case Form::kSingleDevice:
      return HloSharding::AssignDevice(device_);
    case Form::kUnreduced:
      if (CoversEverySizedAxis(mesh_, unreduced_)) return HloSharding::Unreduced();
      return LayoutToHloSharding(mesh_, LayoutOf({}, unreduced_, {}));
    case Form::kDims:
      break;
  }
  // XLA's IsManual()/IsUnreduced(): no dim sharded, nothing else listed, and the manual (or
  // unreduced) axes cover every axis of size > 1: the whole-value kind.
  const bool no_dims =
      std::all_of(dims_.begin(), dims_.end(), [](const Dim& d) { return d.axes.empty(); });
  if (no_dims && replicated_.empty()) {
    if (unreduced_.empty() && CoversEverySizedAxis(mesh_, manual_)) return HloSharding::Manual();
    if (manual_.empty() && CoversEverySizedAxis(mesh_, unreduced_)) {
      return HloSharding::Unreduced();
    }
  }
  return LayoutToHloSharding(mesh_, LayoutOf(dims_, unreduced_, manual_));
}

absl::StatusOr<NamedSharding> NamedSharding::WithManualAxes(absl::Span<const MeshAxisRef> axes,
                                                            int64_t rank) const {
  if (form_ == Form::kSingleDevice) {
    return absl::InvalidArgumentError("a single-device sharding has no manual axes");
  }
  std::vector<Dim> dims = dims_;
  if (form_ != Form::kDims) dims.assign(static_cast<size_t>(std::max<int64_t>(rank, 0)), Dim{});
  std::vector<MeshAxisRef> manual =
      form_ == Form::kReplicated ? std::vector<MeshAxisRef>{} : manual_;
  for (const MeshAxisRef& ref : axes) {
    const bool present = std::any_of(manual.begin(), manual.end(), [&](const MeshAxisRef& m) {
      return m.axis == ref.axis && m.pre_size == ref.pre_size && m.size == ref.size;
    });
    if (!present) manual.push_back(ref);
  }
  // Manual axes in mesh order, as XLA's export writes them.
  std::stable_sort(manual.begin(), manual.end(), [](const MeshAxisRef& a, const MeshAxisRef& b) {
    return a.axis != b.axis ? a.axis < b.axis : a.pre_size < b.pre_size;
  });
  if (form_ == Form::kManual) return *this;
  return Create(mesh_, std::move(dims), replicated_, unreduced_, std::move(manual), unreduced_op_);
}

absl::StatusOr<NamedSharding> NamedSharding::WithRank(int64_t rank) const {
  if (form_ != Form::kDims || static_cast<int64_t>(dims_.size()) >= rank) return *this;
  for (const Dim& dim : dims_) {
    if (!dim.axes.empty()) return *this;  // Mismatched ranks: the verifier says so.
  }
  std::vector<Dim> dims(static_cast<size_t>(rank));
  for (size_t i = 0; i < dims_.size(); ++i) dims[i].open = dims_[i].open;
  return Create(mesh_, std::move(dims), replicated_, unreduced_, manual_, unreduced_op_);
}

std::optional<HloSharding> FitNamedShardingsToShape(const HloSharding& sharding,
                                                    const Shape& shape) {
  if (sharding.IsTuple()) {
    if (!shape.IsTuple() ||
        shape.tuple_size() != static_cast<int64_t>(sharding.tuple_elements().size())) {
      return std::nullopt;
    }
    bool changed = false;
    std::vector<HloSharding> elements;
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      std::optional<HloSharding> fitted =
          FitNamedShardingsToShape(sharding.tuple_elements()[i], shape.tuple_shapes()[i]);
      changed = changed || fitted.has_value();
      elements.push_back(fitted.has_value() ? *std::move(fitted) : sharding.tuple_elements()[i]);
    }
    if (!changed) return std::nullopt;
    HloSharding tuple = HloSharding::Tuple(std::move(elements));
    tuple.set_metadata(sharding.metadata());
    return tuple;
  }
  const NamedSharding* named = sharding.named();
  if (named == nullptr || !shape.IsArray() || !sharding.IsTiled() ||
      sharding.TiledDataRank() == shape.rank()) {
    return std::nullopt;
  }
  absl::StatusOr<NamedSharding> widened = named->WithRank(shape.rank());
  if (!widened.ok() || *widened == *named) return std::nullopt;
  absl::StatusOr<HloSharding> result = HloSharding::FromNamed(*widened);
  if (!result.ok()) return std::nullopt;
  result->set_metadata(sharding.metadata());
  return *std::move(result);
}

std::string NamedSharding::ToString(absl::string_view metadata) const {
  std::string out;
  if (form_ == Form::kSingleDevice) {
    out = absl::StrCat("single_device[device_id=", device_, "]");
  } else {
    out = XlaMeshText(mesh_);
    switch (form_) {
      case Form::kReplicated:
        out += ", replicated";
        break;
      case Form::kManual:
        out += ", manual";
        break;
      case Form::kUnreduced:
        out += ", unreduced";
        if (!unreduced_op_.empty()) absl::StrAppend(&out, "=", unreduced_op_);
        if (!SameRefs(unreduced_, EveryAxis(mesh_))) out += RefList(mesh_, unreduced_);
        break;
      case Form::kDims: {
        std::vector<std::string> dims;
        for (const Dim& dim : dims_) {
          std::vector<std::string> parts;
          for (const MeshAxisRef& ref : dim.axes) parts.push_back(XlaAxisRefText(mesh_, ref));
          if (dim.open) parts.push_back("?");
          dims.push_back(absl::StrCat("{", absl::StrJoin(parts, ", "), "}"));
        }
        absl::StrAppend(&out, ", [", absl::StrJoin(dims, ", "), "]");
        if (!replicated_.empty())
          absl::StrAppend(&out, ", replicated=", RefList(mesh_, replicated_));
        if (!unreduced_.empty()) {
          absl::StrAppend(&out, ", unreduced=", unreduced_op_, RefList(mesh_, unreduced_));
        }
        if (!manual_.empty()) absl::StrAppend(&out, ", manual=", RefList(mesh_, manual_));
        break;
      }
      case Form::kSingleDevice:
        break;
    }
  }
  if (!metadata.empty()) absl::StrAppend(&out, ", metadata=", metadata);
  return out;
}

bool NamedSharding::operator==(const NamedSharding& other) const {
  if (form_ != other.form_ || device_ != other.device_ || dims_ != other.dims_ ||
      unreduced_op_ != other.unreduced_op_ || !SameRefs(replicated_, other.replicated_) ||
      !SameRefs(unreduced_, other.unreduced_) || !SameRefs(manual_, other.manual_)) {
    return false;
  }
  if (mesh_.axes().size() != other.mesh_.axes().size()) return false;
  for (size_t i = 0; i < mesh_.axes().size(); ++i) {
    if (mesh_.axes()[i].name != other.mesh_.axes()[i].name ||
        mesh_.axes()[i].size != other.mesh_.axes()[i].size) {
      return false;
    }
  }
  return mesh_.devices() == other.mesh_.devices();
}

}  // namespace spmdcheck
