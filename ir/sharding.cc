#include "ir/sharding.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/mesh.h"
#include "ir/named_sharding.h"

namespace spmdcheck {

absl::string_view SubgroupTypeName(SubgroupType type) {
  switch (type) {
    case SubgroupType::kManual:
      return "manual";
    case SubgroupType::kUnreduced:
      return "unreduced";
    case SubgroupType::kReplicated:
      return "replicated";
    case SubgroupType::kMaximal:
      return "maximal";
  }
  return "unknown";
}

HloSharding HloSharding::Manual() {
  HloSharding s;
  s.kind_ = Kind::kManual;
  return s;
}

HloSharding HloSharding::Unknown() {
  HloSharding s;
  s.kind_ = Kind::kUnknown;
  return s;
}

HloSharding HloSharding::Unreduced() {
  HloSharding s;
  s.kind_ = Kind::kUnreduced;
  return s;
}

HloSharding HloSharding::AssignDevice(int64_t device) {
  HloSharding s;
  s.kind_ = Kind::kMaximal;
  s.maximal_device_ = device;
  return s;
}

HloSharding HloSharding::Tile(TileAssignment tiles) {
  if (tiles.num_elements() == 1) return AssignDevice(tiles.DeviceAtLinear(0));
  HloSharding s;
  s.kind_ = Kind::kTiled;
  s.tiles_ = std::move(tiles);
  return s;
}

namespace {

// Sorts the devices of every group along the last dim ascending (keeps an iota an iota when the
// sorted array is one). An iota over more than kMaxListedDevices devices is kept as it is rather
// than listed device by device (a named sharding over a mesh of 4 x 22222222 x 8 devices asked
// for 5.7 GB here under fuzz_sharding_parser): its groups are the same devices either way, only
// their order within a group, which no partitioner reads, may differ from the sorted form.
TileAssignment SortLastDimGroups(const TileAssignment& tiles) {
  if (tiles.is_iota() && tiles.num_elements() > kMaxListedDevices) return tiles;
  const int64_t group = tiles.dims().back();
  std::vector<int64_t> devices = tiles.Devices();
  bool changed = false;
  for (size_t start = 0; start < devices.size(); start += group) {
    auto begin = devices.begin() + static_cast<int64_t>(start);
    if (!std::is_sorted(begin, begin + group)) {
      std::sort(begin, begin + group);
      changed = true;
    }
  }
  if (!changed) return tiles;
  TileAssignment sorted = *TileAssignment::Explicit(tiles.dims(), std::move(devices));
  return tiles.is_iota() ? sorted.Canonical() : sorted;
}

}  // namespace

HloSharding HloSharding::PartialTile(const TileAssignment& tiles) {
  if (tiles.num_dimensions() == 1 || tiles.dims().back() == tiles.num_elements()) {
    return Replicate();
  }
  if (tiles.dims().back() == 1) {
    std::vector<int64_t> data_dims(tiles.dims().begin(), tiles.dims().end() - 1);
    return Tile(tiles.Reshape(data_dims));
  }
  HloSharding s;
  s.kind_ = Kind::kTiled;
  s.tiles_ = SortLastDimGroups(tiles);
  s.replicate_on_last_tile_dim_ = true;
  return s;
}

HloSharding HloSharding::Subgroup(const TileAssignment& tiles,
                                  absl::Span<const SubgroupType> types) {
  if (types.empty()) return Tile(tiles);
  const int64_t data_rank = tiles.num_dimensions() - static_cast<int64_t>(types.size());
  int64_t data_tiles = 1;
  for (int64_t i = 0; i < data_rank; ++i) data_tiles *= tiles.dim(i);
  const bool all_same =
      std::all_of(types.begin(), types.end(), [&](SubgroupType t) { return t == types[0]; });
  if (all_same && data_tiles == 1) {
    switch (types[0]) {
      case SubgroupType::kManual:
        return Manual();
      case SubgroupType::kReplicated:
        return Replicate();
      case SubgroupType::kUnreduced:
        return Unreduced();
      case SubgroupType::kMaximal:
        break;
    }
  }
  // Order the non-trivial subgroup dims by type (maximal < manual < unreduced < replicated, as
  // XLA's kOrderedTypes), keeping their relative order within a type, then merge each type into
  // one dim.
  std::vector<int64_t> perm(data_rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::vector<int64_t> new_dims(tiles.dims().begin(), tiles.dims().begin() + data_rank);
  std::vector<SubgroupType> new_types;
  for (SubgroupType type : {SubgroupType::kMaximal, SubgroupType::kManual, SubgroupType::kUnreduced,
                            SubgroupType::kReplicated}) {
    int64_t merged = 1;
    for (size_t i = 0; i < types.size(); ++i) {
      int64_t dim = data_rank + static_cast<int64_t>(i);
      if (types[i] != type || tiles.dim(dim) == 1) continue;
      perm.push_back(dim);
      merged *= tiles.dim(dim);
    }
    if (merged > 1) {
      new_dims.push_back(merged);
      new_types.push_back(type);
    }
  }
  // Size-1 subgroup dims go last so that the reshape below drops them.
  for (size_t i = 0; i < types.size(); ++i) {
    int64_t dim = data_rank + static_cast<int64_t>(i);
    if (tiles.dim(dim) == 1) perm.push_back(dim);
  }
  TileAssignment reordered = tiles.Transpose(perm).Reshape(new_dims);
  if (new_types.empty()) return Tile(reordered);
  if (new_types.size() == 1 && new_types[0] == SubgroupType::kReplicated) {
    return PartialTile(reordered);
  }
  if (new_types.size() == 1 && new_types[0] == SubgroupType::kManual && data_tiles == 1) {
    return Manual();
  }
  HloSharding s;
  s.kind_ = Kind::kTiled;
  s.tiles_ =
      new_types.back() == SubgroupType::kReplicated ? SortLastDimGroups(reordered) : reordered;
  s.subgroup_types_ = std::move(new_types);
  return s;
}

HloSharding HloSharding::Tuple(std::vector<HloSharding> elements) {
  HloSharding s;
  s.kind_ = Kind::kTuple;
  s.tuple_elements_ = std::move(elements);
  return s;
}

bool HloSharding::IsFullyReplicated() const {
  if (kind_ == Kind::kTuple) {
    return std::all_of(tuple_elements_.begin(), tuple_elements_.end(),
                       [](const HloSharding& e) { return e.IsFullyReplicated(); });
  }
  return kind_ == Kind::kReplicated;
}

bool HloSharding::HasManualSubgroup() const {
  return std::find(subgroup_types_.begin(), subgroup_types_.end(), SubgroupType::kManual) !=
         subgroup_types_.end();
}

int64_t HloSharding::SubgroupDimCount() const {
  if (kind_ != Kind::kTiled) return 0;
  return (replicate_on_last_tile_dim_ ? 1 : 0) + static_cast<int64_t>(subgroup_types_.size());
}

int64_t HloSharding::TiledDataRank() const {
  if (kind_ != Kind::kTiled) return 0;
  return tiles_.num_dimensions() - SubgroupDimCount();
}

int64_t HloSharding::NumTiles() const {
  int64_t n = 1;
  for (int64_t i = 0; i < TiledDataRank(); ++i) n *= tiles_.dim(i);
  return n;
}

void HloSharding::SetShardGroup(ShardGroupKind kind, int64_t id) {
  shard_group_kind_ = kind;
  shard_group_id_ = id;
}

absl::Status HloSharding::Validate(const Shape& shape, int64_t num_devices) const {
  if (kind_ == Kind::kTuple) {
    if (!shape.IsTuple()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tuple sharding on non-tuple shape ", shape.ToString(false)));
    }
    std::vector<const Shape*> leaves;
    // Collect leaves in order.
    std::function<void(const Shape&)> collect = [&](const Shape& s) {
      if (s.IsTuple()) {
        for (const Shape& e : s.tuple_shapes()) collect(e);
      } else {
        leaves.push_back(&s);
      }
    };
    collect(shape);
    // XLA's CheckLeafCount: one element per leaf; an empty tuple may carry one element or none.
    const bool empty_tuple_ok = leaves.empty() && tuple_elements_.size() <= 1;
    if (!empty_tuple_ok && tuple_elements_.size() != leaves.size()) {
      return absl::InvalidArgumentError(absl::StrCat("tuple sharding has ", tuple_elements_.size(),
                                                     " elements but the shape has ", leaves.size(),
                                                     " leaves"));
    }
    for (size_t i = 0; i < leaves.size(); ++i) {
      absl::Status status = tuple_elements_[i].Validate(*leaves[i], num_devices);
      if (!status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("tuple sharding element ", i, ": ", status.message()));
      }
    }
    return absl::OkStatus();
  }
  if (shape.IsTuple()) {
    for (const Shape& element : shape.tuple_shapes()) {
      absl::Status status = Validate(element, num_devices);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  // Tokens carry no data; any sharding on them is accepted (XLA skips them too).
  if (shape.IsToken()) return absl::OkStatus();
  switch (kind_) {
    case Kind::kReplicated:
    case Kind::kManual:
    case Kind::kUnknown:
    case Kind::kUnreduced:
      return absl::OkStatus();
    case Kind::kMaximal:
      if (maximal_device_ < 0 || (num_devices > 0 && maximal_device_ >= num_devices)) {
        return absl::InvalidArgumentError(absl::StrCat("maximal device ", maximal_device_,
                                                       " is out of range [0, ", num_devices, ")"));
      }
      return absl::OkStatus();
    case Kind::kTiled:
      break;
    case Kind::kTuple:
      return absl::OkStatus();
  }
  const int64_t data_rank = TiledDataRank();
  const int64_t rank = shape.IsArray() ? shape.rank() : 0;
  if (data_rank != rank) {
    return absl::InvalidArgumentError(absl::StrCat("sharding ", ToString(false), " has data rank ",
                                                   data_rank, " but the shape ",
                                                   shape.ToString(false), " has rank ", rank));
  }
  if (!tiles_.DevicesDistinct()) {
    std::vector<int64_t> devices = tiles_.Devices();
    std::sort(devices.begin(), devices.end());
    auto dup = std::adjacent_find(devices.begin(), devices.end());
    return absl::InvalidArgumentError(
        absl::StrCat("sharding ", ToString(false), " lists device ", *dup, " more than once"));
  }
  if (num_devices > 0) {
    if (tiles_.DeviceBound() > num_devices) {
      return absl::InvalidArgumentError(
          absl::StrCat("sharding ", ToString(false), " uses device ", tiles_.DeviceBound() - 1,
                       " but there are only ", num_devices, " devices"));
    }
    if (tiles_.num_elements() != num_devices) {
      return absl::InvalidArgumentError(absl::StrCat("sharding ", ToString(false), " assigns ",
                                                     tiles_.num_elements(),
                                                     " devices but the module has ", num_devices));
    }
  }
  return absl::OkStatus();
}

std::optional<std::vector<int64_t>> HloSharding::DataTileIndexOf(int64_t device) const {
  if (kind_ == Kind::kMaximal && device != maximal_device_) return std::nullopt;
  if (kind_ != Kind::kTiled) return std::vector<int64_t>{};
  std::optional<std::vector<int64_t>> index = tiles_.TileIndexOf(device);
  if (!index) return std::nullopt;
  index->resize(TiledDataRank());
  return index;
}

std::optional<std::vector<ShardRange>> HloSharding::RangesForDevice(const Shape& shape,
                                                                    int64_t device) const {
  std::optional<std::vector<int64_t>> index = DataTileIndexOf(device);
  if (!index) return std::nullopt;
  std::vector<ShardRange> ranges(shape.rank());
  for (int64_t k = 0; k < shape.rank(); ++k) {
    const int64_t size = shape.dimensions(k);
    if (kind_ != Kind::kTiled) {
      ranges[k] = {0, size, size};
      continue;
    }
    const int64_t tiles = tiles_.dim(k);
    const int64_t c = (size + tiles - 1) / tiles;
    const int64_t t = (*index)[k];
    ranges[k] = {std::min(t * c, size), std::min((t + 1) * c, size), c};
  }
  return ranges;
}

Shape HloSharding::TileShape(const Shape& shape) const {
  if (kind_ != Kind::kTiled || !shape.IsArray()) return shape;
  Shape tile = shape;
  for (int64_t k = 0; k < shape.rank(); ++k) {
    const int64_t tiles = tiles_.dim(k);
    tile.set_dimensions(k, (shape.dimensions(k) + tiles - 1) / tiles);
  }
  return tile;
}

std::vector<std::vector<int64_t>> HloSharding::GroupsAlongDims(
    absl::Span<const int64_t> dims) const {
  const absl::Span<const int64_t> all = tiles_.dims();
  std::vector<bool> selected(all.size(), false);
  for (int64_t d : dims) selected[d] = true;
  std::vector<int64_t> other_sizes, selected_sizes;
  for (size_t i = 0; i < all.size(); ++i) {
    (selected[i] ? selected_sizes : other_sizes).push_back(all[i]);
  }
  const int64_t num_groups = CheckedProduct(other_sizes).value_or(1);
  const int64_t group_size = CheckedProduct(selected_sizes).value_or(1);
  std::vector<std::vector<int64_t>> groups(num_groups);
  std::vector<int64_t> index(all.size());
  for (int64_t g = 0; g < num_groups; ++g) {
    std::vector<int64_t> other_index = MultiIndex(other_sizes, g);
    groups[g].reserve(group_size);
    for (int64_t m = 0; m < group_size; ++m) {
      std::vector<int64_t> selected_index = MultiIndex(selected_sizes, m);
      size_t oi = 0, si = 0;
      for (size_t i = 0; i < all.size(); ++i) {
        index[i] = selected[i] ? selected_index[si++] : other_index[oi++];
      }
      groups[g].push_back(tiles_.DeviceAt(index));
    }
  }
  return groups;
}

std::vector<int64_t> HloSharding::ReplicasOf(int64_t device) const {
  if (kind_ != Kind::kTiled) return {device};
  std::optional<std::vector<int64_t>> index = tiles_.TileIndexOf(device);
  if (!index) return {};
  const int64_t data_rank = TiledDataRank();
  std::vector<int64_t> subgroup_sizes(tiles_.dims().begin() + data_rank, tiles_.dims().end());
  const int64_t count = CheckedProduct(subgroup_sizes).value_or(1);
  std::vector<int64_t> replicas;
  replicas.reserve(count);
  for (int64_t m = 0; m < count; ++m) {
    std::vector<int64_t> sub = MultiIndex(subgroup_sizes, m);
    std::copy(sub.begin(), sub.end(), index->begin() + data_rank);
    replicas.push_back(tiles_.DeviceAt(*index));
  }
  return replicas;
}

HloSharding HloSharding::Canonical() const {
  HloSharding s = *this;
  if (kind_ == Kind::kTiled) s.tiles_ = tiles_.Canonical();
  for (HloSharding& e : s.tuple_elements_) e = e.Canonical();
  return s;
}

absl::StatusOr<HloSharding> HloSharding::FromNamed(const NamedSharding& named) {
  absl::StatusOr<HloSharding> s = named.ToHloSharding();
  if (!s.ok()) return s.status();
  s->named_ = std::make_shared<const NamedSharding>(named);
  return s;
}

HloSharding HloSharding::WithoutNamedForms() const {
  HloSharding s = *this;
  s.named_.reset();
  for (HloSharding& e : s.tuple_elements_) e = e.WithoutNamedForms();
  return s;
}

HloSharding HloSharding::Expanded() const {
  HloSharding s = *this;
  s.named_.reset();
  if (kind_ == Kind::kTiled) s.tiles_ = *TileAssignment::Explicit(tiles_.dims(), tiles_.Devices());
  for (HloSharding& e : s.tuple_elements_) e = e.Expanded();
  return s;
}

std::string HloSharding::ToString(bool include_metadata) const {
  if (kind_ == Kind::kTuple) {
    std::string out = "{";
    for (size_t i = 0; i < tuple_elements_.size(); ++i) {
      if (i > 0) out += ", ";
      if (i > 0 && i % 5 == 0) absl::StrAppend(&out, "/*index=", i, "*/");
      out += tuple_elements_[i].ToString(include_metadata);
    }
    out += "}";
    return out;
  }
  if (named_ != nullptr) {
    return absl::StrCat("{", named_->ToString(include_metadata ? metadata_ : ""), "}");
  }
  std::string out = "{";
  switch (kind_) {
    case Kind::kReplicated:
      out += "replicated";
      break;
    case Kind::kManual:
      out += "manual";
      break;
    case Kind::kUnknown:
      out += "unknown";
      break;
    case Kind::kUnreduced:
      out += "unreduced";
      break;
    case Kind::kMaximal:
      absl::StrAppend(&out, "maximal device=", maximal_device_);
      break;
    case Kind::kTiled:
      absl::StrAppend(&out, "devices=", tiles_.ToString());
      break;
    case Kind::kTuple:
      break;
  }
  if (replicate_on_last_tile_dim_) out += " last_tile_dim_replicate";
  if (!subgroup_types_.empty()) {
    out += " last_tile_dims={";
    for (size_t i = 0; i < subgroup_types_.size(); ++i) {
      if (i > 0) out += ", ";
      absl::StrAppend(&out, SubgroupTypeName(subgroup_types_[i]));
    }
    out += "}";
  }
  if (shard_group_kind_ == ShardGroupKind::kAs)
    absl::StrAppend(&out, " shard_as ", shard_group_id_);
  if (shard_group_kind_ == ShardGroupKind::kLike) {
    absl::StrAppend(&out, " shard_like ", shard_group_id_);
  }
  if (include_metadata && !metadata_.empty()) absl::StrAppend(&out, " metadata=", metadata_);
  out += "}";
  return out;
}

bool HloSharding::operator==(const HloSharding& other) const {
  if (kind_ != other.kind_ || shard_group_kind_ != other.shard_group_kind_ ||
      shard_group_id_ != other.shard_group_id_) {
    return false;
  }
  switch (kind_) {
    case Kind::kMaximal:
      return maximal_device_ == other.maximal_device_;
    case Kind::kTiled:
      return replicate_on_last_tile_dim_ == other.replicate_on_last_tile_dim_ &&
             subgroup_types_ == other.subgroup_types_ && tiles_ == other.tiles_;
    case Kind::kTuple:
      return tuple_elements_ == other.tuple_elements_;
    default:
      return true;
  }
}

}  // namespace spmdcheck
