#include "ir/mesh.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace spmdcheck {

absl::StatusOr<Mesh> Mesh::Create(std::vector<MeshAxis> axes,
                                  std::optional<TileAssignment> devices) {
  std::vector<int64_t> sizes;
  absl::flat_hash_set<std::string> names;
  for (const MeshAxis& axis : axes) {
    if (axis.size <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh axis '", axis.name, "' has size ", axis.size));
    }
    if (!names.insert(axis.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("mesh axis '", axis.name, "' twice"));
    }
    sizes.push_back(axis.size);
  }
  if (sizes.empty()) sizes.push_back(1);
  Mesh mesh;
  mesh.axes_ = std::move(axes);
  if (devices.has_value()) {
    if (devices->dims() != sizes) {
      return absl::InvalidArgumentError("mesh device array dims differ from the axis sizes");
    }
    mesh.devices_ = *std::move(devices);
  } else {
    mesh.devices_ = TileAssignment::Iota(sizes);
  }
  return mesh;
}

std::optional<int64_t> Mesh::AxisIndex(absl::string_view name) const {
  for (size_t i = 0; i < axes_.size(); ++i) {
    if (axes_[i].name == name) return static_cast<int64_t>(i);
  }
  return std::nullopt;
}

absl::StatusOr<HloSharding> Mesh::ShardingFor(
    const std::vector<std::vector<std::string>>& dim_axes) const {
  std::vector<bool> used(axes_.size(), false);
  std::vector<int64_t> perm;
  std::vector<int64_t> tile_dims;
  for (const auto& names : dim_axes) {
    int64_t product = 1;
    for (const std::string& name : names) {
      std::optional<int64_t> index = AxisIndex(name);
      if (!index) return absl::InvalidArgumentError(absl::StrCat("no mesh axis '", name, "'"));
      if (used[*index]) {
        return absl::InvalidArgumentError(absl::StrCat("mesh axis '", name, "' used twice"));
      }
      used[*index] = true;
      perm.push_back(*index);
      product *= axes_[*index].size;
    }
    tile_dims.push_back(product);
  }
  int64_t replicated = 1;
  for (size_t i = 0; i < axes_.size(); ++i) {
    if (!used[i]) {
      perm.push_back(static_cast<int64_t>(i));
      replicated *= axes_[i].size;
    }
  }
  if (axes_.empty()) perm.push_back(0);
  TileAssignment ordered = devices_.Transpose(perm);
  if (replicated == 1) return HloSharding::Tile(ordered.Reshape(tile_dims));
  tile_dims.push_back(replicated);
  return HloSharding::PartialTile(ordered.Reshape(tile_dims));
}

std::string Mesh::ToString() const {
  std::string out = "mesh[";
  for (size_t i = 0; i < axes_.size(); ++i) {
    if (i > 0) out += ",";
    absl::StrAppend(&out, axes_[i].name, "=", axes_[i].size);
  }
  out += "]";
  if (!(devices_ == TileAssignment::Iota(devices_.dims()))) {
    absl::StrAppend(&out, " devices=", devices_.Canonical().ToString());
  }
  return out;
}

}  // namespace spmdcheck
