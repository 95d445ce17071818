#include "ir/sdy_sharding.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "ir/lexer.h"
#include "ir/tile_assignment.h"

namespace spmdcheck {
namespace {

absl::Status Invalid(absl::string_view message) { return absl::InvalidArgumentError(message); }

int64_t Product(absl::Span<const int64_t> values) {
  int64_t p = 1;
  for (int64_t v : values) p *= v;
  return p;
}

std::string RefText(const Mesh& mesh, const MeshAxisRef& ref) {
  const std::string& name = mesh.axes()[ref.axis].name;
  if (ref.size == 0) return absl::StrCat("'", name, "'");
  return absl::StrCat("'", name, "':(", ref.pre_size, ")", ref.size);
}

// The mesh with every axis split at the sub-axis boundaries that `refs` use: factor sizes in
// row-major order over the mesh (axis 0's factors first, each axis's factors major first), and
// for each ref the factors it covers, major first. Every factor is covered at most once.
// Small inline sizes: a mesh has a handful of axes, and a sharding is converted per parsed
// instruction (no allocation for meshes of up to 8 factors).
template <typename T, size_t N = 8>
using SmallVector = absl::InlinedVector<T, N>;

struct Refinement {
  SmallVector<int64_t> factor_sizes;
  SmallVector<SmallVector<int64_t, 4>> factors_of_ref;
};

absl::StatusOr<Refinement> Refine(const Mesh& mesh, absl::Span<const MeshAxisRef> refs) {
  const std::vector<MeshAxis>& axes = mesh.axes();
  SmallVector<SmallVector<int64_t, 6>, 4> bounds(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) bounds[i] = {1, axes[i].size};
  for (const MeshAxisRef& ref : refs) {
    if (ref.axis < 0 || ref.axis >= static_cast<int64_t>(axes.size())) {
      return Invalid(absl::StrCat("axis index ", ref.axis, " is not in ", mesh.ToString()));
    }
    if (ref.size == 0) continue;
    const int64_t axis_size = axes[ref.axis].size;
    if (ref.pre_size < 1 || ref.size < 1 || axis_size % ref.pre_size != 0 ||
        axis_size % (ref.pre_size * ref.size) != 0) {
      return Invalid(absl::StrCat("sub-axis ", RefText(mesh, ref), " does not divide axis '",
                                  axes[ref.axis].name, "' of size ", axis_size));
    }
    bounds[ref.axis].push_back(ref.pre_size);
    bounds[ref.axis].push_back(ref.pre_size * ref.size);
  }
  Refinement out;
  // (axis, pre-size bound) -> factor index.
  SmallVector<SmallVector<std::pair<int64_t, int64_t>, 4>, 4> factors(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    SmallVector<int64_t, 6>& b = bounds[i];
    std::sort(b.begin(), b.end());
    b.erase(std::unique(b.begin(), b.end()), b.end());
    for (size_t j = 0; j + 1 < b.size(); ++j) {
      if (b[j + 1] % b[j] != 0) {
        return Invalid(absl::StrCat("sub-axes of mesh axis '", axes[i].name, "' overlap"));
      }
      factors[i].push_back({b[j], static_cast<int64_t>(out.factor_sizes.size())});
      out.factor_sizes.push_back(b[j + 1] / b[j]);
    }
  }
  SmallVector<bool, 16> used(out.factor_sizes.size(), false);
  for (const MeshAxisRef& ref : refs) {
    const int64_t low = ref.size == 0 ? 1 : ref.pre_size;
    const int64_t high = ref.size == 0 ? axes[ref.axis].size : ref.pre_size * ref.size;
    SmallVector<int64_t, 4> covered;
    for (const auto& [bound, index] : factors[ref.axis]) {
      if (bound < low || bound >= high) continue;
      if (used[index]) {
        return Invalid(
            absl::StrCat("mesh axis '", axes[ref.axis].name, "' (or a part of it) is used twice"));
      }
      used[index] = true;
      covered.push_back(index);
    }
    out.factors_of_ref.push_back(std::move(covered));
  }
  return out;
}

// A digit of a device array that is a transposed iota: `size` values `stride` apart.
struct Digit {
  int64_t size;
  int64_t stride;
};

// The digits of each dim of `dims` viewed over the iota (flattened order, major first).
absl::StatusOr<std::vector<std::vector<Digit>>> DigitsPerDim(const IotaTileAssignment& iota,
                                                             absl::Span<const int64_t> dims) {
  const absl::Span<const int64_t> reshape = iota.reshape_dims();
  std::vector<Digit> factors;
  for (int64_t p : iota.perm()) {
    int64_t stride = 1;
    for (size_t q = static_cast<size_t>(p) + 1; q < reshape.size(); ++q) stride *= reshape[q];
    if (reshape[p] > 1) factors.push_back({reshape[p], stride});
  }
  std::vector<std::vector<Digit>> out;
  size_t k = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<Digit> digits;
    int64_t need = dims[d];
    while (need > 1) {
      if (k >= factors.size()) return Invalid("the tile dims do not match the device array");
      Digit& f = factors[k];
      if (need % f.size == 0) {
        digits.push_back(f);
        need /= f.size;
        ++k;
      } else if (f.size % need == 0) {
        // The major part of this digit.
        digits.push_back({need, f.stride * (f.size / need)});
        f.size /= need;
        need = 1;
      } else {
        return Invalid(absl::StrCat("tile dim ", d, " (", dims[d],
                                    " tiles) cuts across a digit of the device ids"));
      }
    }
    out.push_back(std::move(digits));
  }
  return out;
}

// Splits a digit of mesh positions into the mesh (sub-)axes it spans, major first.
absl::StatusOr<std::vector<MeshAxisRef>> DigitToAxes(const Mesh& mesh, Digit digit) {
  const std::vector<MeshAxis>& axes = mesh.axes();
  std::vector<int64_t> strides(axes.size(), 1);
  for (int64_t i = static_cast<int64_t>(axes.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * axes[i + 1].size;
  }
  std::vector<MeshAxisRef> minor_first;
  int64_t s = digit.stride, k = digit.size;
  while (k > 1) {
    int64_t axis = -1;
    for (size_t i = 0; i < axes.size(); ++i) {
      if (strides[i] <= s && s < strides[i] * axes[i].size) axis = static_cast<int64_t>(i);
    }
    if (axis < 0 || s % strides[axis] != 0) {
      return Invalid(absl::StrCat("a run of ", digit.size, " devices ", digit.stride,
                                  " mesh positions apart is not along mesh axes"));
    }
    const int64_t a = axes[axis].size;
    const int64_t inner = s / strides[axis];
    if (a % inner != 0) return Invalid("a device digit is not aligned with a mesh axis");
    const int64_t room = a / inner;
    int64_t take;
    if (k <= room && room % k == 0) {
      take = k;
    } else if (k > room && k % room == 0) {
      take = room;
    } else {
      return Invalid(absl::StrCat("a run of ", digit.size, " devices does not split along axis '",
                                  axes[axis].name, "' of size ", a));
    }
    MeshAxisRef ref{axis, a / (inner * take), take};
    if (ref.pre_size == 1 && take == a) ref = {axis, 1, 0};
    minor_first.push_back(ref);
    s *= take;
    k /= take;
  }
  return std::vector<MeshAxisRef>(minor_first.rbegin(), minor_first.rend());
}

// Merges adjacent sub-axes of one axis that are consecutive (major then minor) into one.
std::vector<MeshAxisRef> MergeAdjacent(const Mesh& mesh, const std::vector<MeshAxisRef>& refs) {
  std::vector<MeshAxisRef> out;
  for (const MeshAxisRef& ref : refs) {
    if (!out.empty() && out.back().axis == ref.axis && out.back().size != 0 && ref.size != 0 &&
        out.back().pre_size * out.back().size == ref.pre_size) {
      out.back().size *= ref.size;
    } else {
      out.push_back(ref);
    }
    MeshAxisRef& last = out.back();
    if (last.size != 0 && last.pre_size == 1 && last.size == mesh.axes()[last.axis].size) {
      last = {last.axis, 1, 0};
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<HloSharding> LayoutToHloSharding(const Mesh& mesh, const AxisLayout& layout) {
  SmallVector<MeshAxisRef> refs;
  for (const auto& dim : layout.dims) refs.insert(refs.end(), dim.begin(), dim.end());
  refs.insert(refs.end(), layout.manual.begin(), layout.manual.end());
  refs.insert(refs.end(), layout.unreduced.begin(), layout.unreduced.end());
  absl::StatusOr<Refinement> refinement = Refine(mesh, refs);
  if (!refinement.ok()) return refinement.status();
  const SmallVector<int64_t>& sizes = refinement->factor_sizes;
  SmallVector<bool, 16> used(sizes.size(), false);
  SmallVector<int64_t> perm, tile_dims;
  size_t next_ref = 0;
  // Appends the factors of the next `count` refs as one tile dim.
  auto take = [&](size_t count) {
    int64_t product = 1;
    for (size_t r = 0; r < count; ++r, ++next_ref) {
      for (int64_t f : refinement->factors_of_ref[next_ref]) {
        used[f] = true;
        perm.push_back(f);
        product *= sizes[f];
      }
    }
    return product;
  };
  for (const auto& dim : layout.dims) tile_dims.push_back(take(dim.size()));
  SmallVector<SubgroupType, 3> types;
  const int64_t manual = take(layout.manual.size());
  const int64_t unreduced = take(layout.unreduced.size());
  int64_t replicated = 1;
  for (size_t f = 0; f < sizes.size(); ++f) {
    if (used[f]) continue;
    perm.push_back(static_cast<int64_t>(f));
    replicated *= sizes[f];
  }
  if (mesh.num_devices() == 1 && manual == 1 && unreduced == 1) return HloSharding::Replicate();
  for (auto [size, type] :
       {std::pair{manual, SubgroupType::kManual}, std::pair{unreduced, SubgroupType::kUnreduced},
        std::pair{replicated, SubgroupType::kReplicated}}) {
    if (size > 1) {
      tile_dims.push_back(size);
      types.push_back(type);
    }
  }
  if (tile_dims.empty()) return HloSharding::Replicate();  // Rank 0 on a one-device mesh.
  SmallVector<int64_t> factor_dims = sizes;
  if (factor_dims.empty()) factor_dims.push_back(1);
  if (perm.empty()) perm.push_back(0);
  TileAssignment tiles = mesh.devices().Reshape(factor_dims).Transpose(perm).Reshape(tile_dims);
  if (types.size() == 1 && types[0] == SubgroupType::kReplicated) {
    return HloSharding::PartialTile(tiles);
  }
  return HloSharding::Subgroup(tiles, types);
}

absl::StatusOr<AxisLayout> HloShardingToLayout(const Mesh& mesh, const HloSharding& sharding,
                                               int64_t rank) {
  AxisLayout layout;
  layout.dims.resize(static_cast<size_t>(std::max<int64_t>(rank, 0)));
  std::vector<MeshAxisRef> all_axes;
  for (size_t i = 0; i < mesh.axes().size(); ++i) {
    if (mesh.axes()[i].size > 1) all_axes.push_back({static_cast<int64_t>(i), 1, 0});
  }
  switch (sharding.kind()) {
    case HloSharding::Kind::kReplicated:
      return layout;
    case HloSharding::Kind::kManual:
    case HloSharding::Kind::kUnreduced:
      if (all_axes.empty()) {
        return Invalid(absl::StrCat(sharding.ToString(false), " over ", mesh.ToString(),
                                    ": the mesh has no axis to be ",
                                    sharding.IsManual() ? "manual" : "unreduced", " over"));
      }
      (sharding.IsManual() ? layout.manual : layout.unreduced) = all_axes;
      return layout;
    case HloSharding::Kind::kMaximal:
      if (mesh.num_devices() == 1 && mesh.devices().DeviceAtLinear(0) == sharding.MaximalDevice()) {
        return layout;
      }
      return Invalid(absl::StrCat(sharding.ToString(false),
                                  " puts the whole array on one device; no layout over ",
                                  mesh.ToString(), " does (Shardy writes it over the mesh ",
                                  "<[], device_ids=[", sharding.MaximalDevice(), "]>)"));
    case HloSharding::Kind::kTuple:
      return Invalid("a tuple sharding has one layout per leaf");
    case HloSharding::Kind::kUnknown:
      return Invalid("{unknown} has no layout");
    case HloSharding::Kind::kTiled:
      break;
  }
  const TileAssignment& tiles = sharding.tile_assignment();
  const int64_t data_rank = sharding.TiledDataRank();
  if (rank >= 0 && data_rank != rank) {
    return Invalid(absl::StrCat(sharding.ToString(false), " tiles ", data_rank,
                                " dims, the array has ", rank));
  }
  layout.dims.resize(static_cast<size_t>(data_rank));
  if (tiles.num_elements() != mesh.num_devices()) {
    return Invalid(absl::StrCat(sharding.ToString(false), " uses ", tiles.num_elements(),
                                " devices, ", mesh.ToString(), " has ", mesh.num_devices()));
  }
  // Where each device sits in the mesh's device order.
  std::vector<int64_t> positions(static_cast<size_t>(tiles.num_elements()));
  for (int64_t i = 0; i < tiles.num_elements(); ++i) {
    std::optional<int64_t> position = mesh.devices().LinearIndexOf(tiles.DeviceAtLinear(i));
    if (!position.has_value()) {
      return Invalid(
          absl::StrCat("device ", tiles.DeviceAtLinear(i), " is not in ", mesh.ToString()));
    }
    positions[i] = *position;
  }
  // Devices of one replication group are interchangeable (XLA sorts them): the mesh order is
  // the canonical one.
  std::vector<SubgroupType> types = sharding.subgroup_types();
  if (sharding.ReplicateOnLastTileDim()) types = {SubgroupType::kReplicated};
  if (!types.empty() && types.back() == SubgroupType::kReplicated) {
    const int64_t group = tiles.dims().back();
    for (size_t start = 0; start < positions.size(); start += group) {
      std::sort(positions.begin() + start, positions.begin() + start + group);
    }
  }
  std::optional<IotaTileAssignment> iota = DetectIota(tiles.dims(), positions);
  if (!iota.has_value()) {
    return Invalid(absl::StrCat("the device order of ", sharding.ToString(false),
                                " is no view of the mesh: no assignment of the axes of ",
                                mesh.ToString(), " to its tile dims gives it"));
  }
  absl::StatusOr<std::vector<std::vector<Digit>>> digits = DigitsPerDim(*iota, tiles.dims());
  if (!digits.ok()) {
    return Invalid(absl::StrCat(sharding.ToString(false), " over ", mesh.ToString(), ": ",
                                digits.status().message()));
  }
  for (size_t d = 0; d < digits->size(); ++d) {
    std::vector<MeshAxisRef> refs;
    for (const Digit& digit : (*digits)[d]) {
      absl::StatusOr<std::vector<MeshAxisRef>> pieces = DigitToAxes(mesh, digit);
      if (!pieces.ok()) {
        return Invalid(absl::StrCat(sharding.ToString(false), " over ", mesh.ToString(), ": ",
                                    pieces.status().message()));
      }
      refs.insert(refs.end(), pieces->begin(), pieces->end());
    }
    refs = MergeAdjacent(mesh, refs);
    if (d < static_cast<size_t>(data_rank)) {
      layout.dims[d] = std::move(refs);
      continue;
    }
    switch (types[d - data_rank]) {
      case SubgroupType::kManual:
        layout.manual.insert(layout.manual.end(), refs.begin(), refs.end());
        break;
      case SubgroupType::kUnreduced:
        layout.unreduced.insert(layout.unreduced.end(), refs.begin(), refs.end());
        break;
      case SubgroupType::kReplicated:
        break;
      case SubgroupType::kMaximal:
        return Invalid("a maximal subgroup has no layout over a mesh");
    }
  }
  // Never a silent wrong answer: the layout must place every tile where the sharding does.
  absl::StatusOr<HloSharding> back = LayoutToHloSharding(mesh, layout);
  if (!back.ok() || !(*back == sharding)) {
    return absl::InternalError(
        absl::StrCat("the layout found for ", sharding.ToString(false), " over ", mesh.ToString(),
                     " does not give it back (",
                     back.ok() ? back->ToString(false) : back.status().message(), ")"));
  }
  return layout;
}

Mesh MeshForSharding(const HloSharding& sharding, int64_t num_devices) {
  auto plain = [](int64_t n) {
    std::vector<MeshAxis> axes;
    if (n > 1) axes.push_back({"x0", n});
    return *Mesh::Create(std::move(axes));
  };
  if (!sharding.IsTiled()) return plain(num_devices);
  const TileAssignment& tiles = sharding.tile_assignment();
  std::optional<IotaTileAssignment> iota = tiles.AsIota();
  if (iota.has_value()) {
    absl::StatusOr<std::vector<std::vector<Digit>>> digits = DigitsPerDim(*iota, tiles.dims());
    if (digits.ok()) {
      std::vector<Digit> all;
      for (const auto& dim : *digits) all.insert(all.end(), dim.begin(), dim.end());
      std::sort(all.begin(), all.end(),
                [](const Digit& a, const Digit& b) { return a.stride > b.stride; });
      std::vector<MeshAxis> axes;
      for (const Digit& digit : all) {
        axes.push_back({absl::StrCat("x", axes.size()), digit.size});
      }
      if (Product(tiles.dims()) == tiles.num_elements()) return *Mesh::Create(std::move(axes));
    }
  }
  std::vector<MeshAxis> axes;
  std::vector<int64_t> sizes;
  for (int64_t d : tiles.dims()) {
    if (d == 1) continue;
    axes.push_back({absl::StrCat("x", axes.size()), d});
    sizes.push_back(d);
  }
  absl::StatusOr<TileAssignment> devices = TileAssignment::Explicit(sizes, tiles.Devices());
  absl::StatusOr<Mesh> mesh = Mesh::Create(std::move(axes), *std::move(devices));
  return *std::move(mesh);
}

// ------------------------------------------------------------------------------------------
// Shardy attributes.

namespace {

// A cursor over Shardy attribute text with `<input>:1:COL` errors.
class SdyReader {
 public:
  explicit SdyReader(absl::string_view text) : lexer_(text) {}

  absl::Status Error(absl::string_view message) {
    return Invalid(absl::StrCat("<input>:1:", lexer_.pos() + 1, ": error: ", message));
  }
  bool TryConsume(absl::string_view s) { return lexer_.TryConsume(s); }
  bool TryConsume(char c) { return lexer_.TryConsume(c); }
  char Peek() { return lexer_.Peek(); }
  bool AtEnd() { return lexer_.AtEnd(); }
  absl::Status Expect(absl::string_view s) {
    if (lexer_.TryConsume(s)) return absl::OkStatus();
    return Error(absl::StrCat("expected '", s, "'"));
  }
  absl::StatusOr<int64_t> Int(absl::string_view what) {
    std::optional<int64_t> value = lexer_.ConsumeInt();
    if (!value.has_value()) return Error(absl::StrCat("expected an integer (", what, ")"));
    return *value;
  }
  absl::StatusOr<std::string> String(absl::string_view what) {
    if (Peek() != '"') return Error(absl::StrCat("expected a quoted ", what));
    return lexer_.ConsumeString();
  }
  absl::string_view Identifier() {
    lexer_.SkipSpace();
    return lexer_.ConsumeIdentifier();
  }
  size_t pos() const { return lexer_.pos(); }
  absl::string_view rest() const { return lexer_.text().substr(lexer_.pos()); }

 private:
  Lexer lexer_;
};

#define SDY_ASSIGN(lhs, expr)                   \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = *std::move(lhs##_or)  // NOLINT(bugprone-macro-parentheses): lhs is the declared name

#define SDY_RETURN_IF_ERROR(expr)      \
  do {                                 \
    absl::Status status_ = (expr);     \
    if (!status_.ok()) return status_; \
  } while (false)

// `<[...], device_ids=[...]>` after the prefix.
absl::StatusOr<SdyMesh> ReadMeshBody(SdyReader& in) {
  SdyMesh mesh;
  SDY_RETURN_IF_ERROR(in.Expect("<"));
  SDY_RETURN_IF_ERROR(in.Expect("["));
  if (!in.TryConsume(']')) {
    do {
      SDY_ASSIGN(name, in.String("axis name"));
      SDY_RETURN_IF_ERROR(in.Expect("="));
      SDY_ASSIGN(size, in.Int("axis size"));
      if (size < 1) return in.Error(absl::StrCat("axis '", name, "' has size ", size));
      mesh.axes.push_back({name, size});
    } while (in.TryConsume(','));
    SDY_RETURN_IF_ERROR(in.Expect("]"));
  }
  if (in.TryConsume(',')) {
    SDY_RETURN_IF_ERROR(in.Expect("device_ids"));
    SDY_RETURN_IF_ERROR(in.Expect("="));
    SDY_RETURN_IF_ERROR(in.Expect("["));
    if (!in.TryConsume(']')) {
      do {
        SDY_ASSIGN(id, in.Int("device id"));
        mesh.device_ids.push_back(id);
      } while (in.TryConsume(','));
      SDY_RETURN_IF_ERROR(in.Expect("]"));
    }
  }
  SDY_RETURN_IF_ERROR(in.Expect(">"));
  if (mesh.axes.empty()) {
    if (mesh.device_ids.size() > 1) {
      return in.Error("a mesh without axes has at most one device id");
    }
    return mesh;
  }
  int64_t n = 1;
  for (const MeshAxis& axis : mesh.axes) n *= axis.size;
  if (!mesh.device_ids.empty()) {
    if (static_cast<int64_t>(mesh.device_ids.size()) != n) {
      return in.Error(absl::StrCat("device_ids has ", mesh.device_ids.size(),
                                   " ids, the axes make ", n, " devices"));
    }
    std::vector<int64_t> sorted = mesh.device_ids;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i) {
      if (sorted[i] != i) {
        return in.Error(absl::StrCat("device_ids must hold every device 0..", n - 1, " once"));
      }
    }
  }
  return mesh;
}

absl::StatusOr<SdyAxisRef> ReadAxisRef(SdyReader& in) {
  SdyAxisRef ref;
  SDY_ASSIGN(name, in.String("axis name"));
  ref.name = name;
  if (in.TryConsume(':')) {
    SDY_RETURN_IF_ERROR(in.Expect("("));
    SDY_ASSIGN(pre, in.Int("sub-axis pre-size"));
    SDY_RETURN_IF_ERROR(in.Expect(")"));
    SDY_ASSIGN(size, in.Int("sub-axis size"));
    if (pre < 1 || size < 2) {
      return in.Error(absl::StrCat("sub-axis \"", name, "\":(", pre, ")", size,
                                   " needs pre-size >= 1 and size > 1"));
    }
    ref.pre_size = pre;
    ref.size = size;
  }
  return ref;
}

absl::StatusOr<std::vector<SdyAxisRef>> ReadAxisRefSet(SdyReader& in) {
  std::vector<SdyAxisRef> refs;
  SDY_RETURN_IF_ERROR(in.Expect("{"));
  if (in.TryConsume('}')) return refs;
  do {
    SDY_ASSIGN(ref, ReadAxisRef(in));
    refs.push_back(ref);
  } while (in.TryConsume(','));
  SDY_RETURN_IF_ERROR(in.Expect("}"));
  return refs;
}

// `p1` after a dim: the lexer reads identifiers with digits, so priorities are parsed from the
// raw text here.
absl::StatusOr<SdyDimSharding> ReadDimWithPriority(SdyReader& in, absl::string_view text) {
  SdyDimSharding dim;
  SDY_RETURN_IF_ERROR(in.Expect("{"));
  while (!in.TryConsume('}')) {
    if (in.TryConsume('?')) {
      dim.closed = false;
      SDY_RETURN_IF_ERROR(in.Expect("}"));
      break;
    }
    SDY_ASSIGN(ref, ReadAxisRef(in));
    dim.axes.push_back(ref);
    if (!in.TryConsume(',') && in.Peek() != '}') return in.Error("expected ',' or '}'");
  }
  const size_t at = in.pos();
  if (at < text.size() && text[at] == 'p') {
    absl::string_view word = in.Identifier();
    int64_t priority = 0;
    if (word.size() < 2) return in.Error("expected a priority like p1");
    for (char c : word.substr(1)) {
      if (c < '0' || c > '9') return in.Error("expected a priority like p1");
      priority = priority * 10 + (c - '0');
    }
    dim.priority = priority;
  }
  return dim;
}

absl::StatusOr<SdySharding> ReadShardingBody(SdyReader& in, absl::string_view text) {
  SdySharding sharding;
  SDY_RETURN_IF_ERROR(in.Expect("<"));
  if (in.TryConsume('@')) {
    absl::string_view name = in.Identifier();
    if (name.empty()) return in.Error("expected a mesh name after '@'");
    sharding.mesh_name = std::string(name);
  } else if (in.TryConsume("#sdy.mesh") || in.TryConsume("mesh")) {
    SDY_ASSIGN(mesh, ReadMeshBody(in));
    sharding.inline_mesh = mesh;
  } else {
    return in.Error("expected '@mesh_name' or an inline mesh<[...]>");
  }
  SDY_RETURN_IF_ERROR(in.Expect(","));
  SDY_RETURN_IF_ERROR(in.Expect("["));
  if (!in.TryConsume(']')) {
    do {
      SDY_ASSIGN(dim, ReadDimWithPriority(in, text));
      sharding.dims.push_back(dim);
    } while (in.TryConsume(','));
    SDY_RETURN_IF_ERROR(in.Expect("]"));
  }
  while (in.TryConsume(',')) {
    absl::string_view key = in.Identifier();
    if (key != "replicated" && key != "unreduced") {
      return in.Error(absl::StrCat("expected replicated= or unreduced=, not '", key, "'"));
    }
    SDY_RETURN_IF_ERROR(in.Expect("="));
    if (in.Peek() != '{') {
      absl::string_view kind = in.Identifier();
      if (kind != "sum") {
        return in.Error(absl::StrCat("unreduced axes reduced by '", kind,
                                     "' have no HloSharding (XLA's unreduced is a sum)"));
      }
    }
    SDY_ASSIGN(refs, ReadAxisRefSet(in));
    (key == "replicated" ? sharding.replicated : sharding.unreduced) = refs;
  }
  SDY_RETURN_IF_ERROR(in.Expect(">"));
  return sharding;
}

std::string Unescape(absl::string_view text) { return absl::StrReplaceAll(text, {{"\\\"", "\""}}); }

std::string AxisRefText(const SdyAxisRef& ref) {
  if (ref.size == 0) return absl::StrCat("\"", ref.name, "\"");
  return absl::StrCat("\"", ref.name, "\":(", ref.pre_size, ")", ref.size);
}

std::string AxisRefsText(const std::vector<SdyAxisRef>& refs) {
  std::vector<std::string> parts;
  for (const SdyAxisRef& ref : refs) parts.push_back(AxisRefText(ref));
  return absl::StrJoin(parts, ", ");
}

absl::StatusOr<MeshAxisRef> ResolveRef(const Mesh& mesh, const SdyAxisRef& ref) {
  std::optional<int64_t> axis = mesh.AxisIndex(ref.name);
  if (!axis.has_value()) {
    return Invalid(absl::StrCat("axis \"", ref.name, "\" is not in the mesh ", mesh.ToString()));
  }
  if (ref.size != 0 && ref.pre_size == 1 && ref.size == mesh.axes()[*axis].size) {
    return Invalid(absl::StrCat("sub-axis ", AxisRefText(ref), " is the whole axis: write \"",
                                ref.name, "\""));
  }
  return MeshAxisRef{*axis, ref.pre_size, ref.size};
}

}  // namespace

absl::StatusOr<Mesh> SdyMesh::ToMesh() const {
  if (axes.empty()) return Mesh::Create({});
  std::optional<TileAssignment> devices;
  if (!device_ids.empty()) {
    std::vector<int64_t> sizes;
    for (const MeshAxis& axis : axes) sizes.push_back(axis.size);
    absl::StatusOr<TileAssignment> explicit_devices = TileAssignment::Explicit(sizes, device_ids);
    if (!explicit_devices.ok()) return explicit_devices.status();
    devices = *std::move(explicit_devices);
  }
  return Mesh::Create(axes, std::move(devices));
}

SdyMesh SdyMesh::FromMesh(const Mesh& mesh) {
  SdyMesh out;
  out.axes = mesh.axes();
  const TileAssignment& devices = mesh.devices();
  if (!(devices == TileAssignment::Iota(devices.dims()))) out.device_ids = devices.Devices();
  return out;
}

std::string SdyMesh::ToString() const {
  std::vector<std::string> parts;
  for (const MeshAxis& axis : axes)
    parts.push_back(absl::StrCat("\"", axis.name, "\"=", axis.size));
  std::string out = absl::StrCat("<[", absl::StrJoin(parts, ", "), "]");
  if (!device_ids.empty())
    absl::StrAppend(&out, ", device_ids=[", absl::StrJoin(device_ids, ", "), "]");
  return out + ">";
}

std::string SdySharding::ToString(bool bare) const {
  std::string out = bare ? "<" : "#sdy.sharding<";
  if (inline_mesh.has_value()) {
    absl::StrAppend(&out, "mesh", inline_mesh->ToString());
  } else {
    absl::StrAppend(&out, "@", mesh_name);
  }
  std::vector<std::string> dim_texts;
  for (const SdyDimSharding& dim : dims) {
    // StrCat, not "{" + string: g++ 12 at -O3 warns (-Wrestrict) on the inlined insert.
    std::string text = absl::StrCat("{", AxisRefsText(dim.axes),
                                    dim.closed ? "" : (dim.axes.empty() ? "?" : ", ?"), "}");
    if (dim.priority.has_value()) absl::StrAppend(&text, "p", *dim.priority);
    dim_texts.push_back(std::move(text));
  }
  absl::StrAppend(&out, ", [", absl::StrJoin(dim_texts, ", "), "]");
  if (!replicated.empty()) absl::StrAppend(&out, ", replicated={", AxisRefsText(replicated), "}");
  if (!unreduced.empty()) absl::StrAppend(&out, ", unreduced={", AxisRefsText(unreduced), "}");
  return out + ">";
}

bool SdySharding::HasPropagationHints() const {
  return std::any_of(dims.begin(), dims.end(),
                     [](const SdyDimSharding& d) { return !d.closed || d.priority.has_value(); });
}

absl::StatusOr<SdyMesh> ParseSdyMesh(absl::string_view raw, std::string* name) {
  const std::string text = Unescape(raw);
  SdyReader in(text);
  if (in.TryConsume("sdy.mesh")) {
    SDY_RETURN_IF_ERROR(in.Expect("@"));
    absl::string_view symbol = in.Identifier();
    if (symbol.empty()) return in.Error("expected the mesh's name after '@'");
    if (name != nullptr) *name = std::string(symbol);
    SDY_RETURN_IF_ERROR(in.Expect("="));
    SDY_ASSIGN(mesh, ReadMeshBody(in));
    return mesh;  // Attributes after the mesh (`{stablehlo.mesh = ...}`) are not ours.
  }
  if (!in.TryConsume("#sdy.mesh")) in.TryConsume("mesh");
  SDY_ASSIGN(mesh, ReadMeshBody(in));
  if (!in.AtEnd()) return in.Error("unexpected text after the mesh");
  return mesh;
}

absl::StatusOr<SdySharding> ParseSdySharding(absl::string_view raw) {
  const std::string text = Unescape(raw);
  SdyReader in(text);
  in.TryConsume("#sdy.sharding");
  SDY_ASSIGN(sharding, ReadShardingBody(in, text));
  if (!in.AtEnd()) return in.Error("unexpected text after the sharding");
  return sharding;
}

absl::StatusOr<std::vector<SdySharding>> ParseSdyShardingPerValue(absl::string_view raw) {
  const std::string text = Unescape(raw);
  SdyReader in(text);
  in.TryConsume("#sdy.sharding_per_value");
  SDY_RETURN_IF_ERROR(in.Expect("<"));
  SDY_RETURN_IF_ERROR(in.Expect("["));
  std::vector<SdySharding> out;
  if (!in.TryConsume(']')) {
    do {
      in.TryConsume("#sdy.sharding");
      SDY_ASSIGN(sharding, ReadShardingBody(in, text));
      out.push_back(std::move(sharding));
    } while (in.TryConsume(','));
    SDY_RETURN_IF_ERROR(in.Expect("]"));
  }
  SDY_RETURN_IF_ERROR(in.Expect(">"));
  if (!in.AtEnd()) return in.Error("unexpected text after the shardings");
  return out;
}

absl::StatusOr<std::vector<std::pair<std::string, SdyMesh>>> ParseSdyMeshes(absl::string_view raw) {
  const std::string text = Unescape(raw);
  SdyReader in(text);
  std::vector<std::pair<std::string, SdyMesh>> out;
  SDY_RETURN_IF_ERROR(in.Expect("{"));
  if (in.TryConsume('}')) return out;
  do {
    absl::string_view name = in.Identifier();
    if (name.empty()) return in.Error("expected a mesh name");
    SDY_RETURN_IF_ERROR(in.Expect("="));
    if (!in.TryConsume("#sdy.mesh")) return in.Error("expected #sdy.mesh<...>");
    SDY_ASSIGN(mesh, ReadMeshBody(in));
    out.emplace_back(std::string(name), std::move(mesh));
  } while (in.TryConsume(','));
  SDY_RETURN_IF_ERROR(in.Expect("}"));
  return out;
}

absl::StatusOr<HloSharding> SdyToHloSharding(const SdySharding& sharding, const SdyMesh& sdy_mesh,
                                             absl::Span<const std::string> manual_axes) {
  const SdyMesh& mesh_attr = sharding.inline_mesh.has_value() ? *sharding.inline_mesh : sdy_mesh;
  if (mesh_attr.axes.empty()) {
    for (const SdyDimSharding& dim : sharding.dims) {
      if (!dim.axes.empty()) return Invalid("a mesh without axes cannot shard a dim");
    }
    if (!sharding.replicated.empty() || !sharding.unreduced.empty()) {
      return Invalid("a mesh without axes has no axes to replicate or reduce over");
    }
    if (mesh_attr.device_ids.size() == 1) {
      return HloSharding::AssignDevice(mesh_attr.device_ids[0]);
    }
    return HloSharding::Replicate();
  }
  absl::StatusOr<Mesh> mesh = mesh_attr.ToMesh();
  if (!mesh.ok()) return mesh.status();
  AxisLayout layout;
  for (const SdyDimSharding& dim : sharding.dims) {
    std::vector<MeshAxisRef> refs;
    for (const SdyAxisRef& ref : dim.axes) {
      absl::StatusOr<MeshAxisRef> resolved = ResolveRef(*mesh, ref);
      if (!resolved.ok()) return resolved.status();
      refs.push_back(*resolved);
    }
    layout.dims.push_back(std::move(refs));
  }
  for (const SdyAxisRef& ref : sharding.unreduced) {
    absl::StatusOr<MeshAxisRef> resolved = ResolveRef(*mesh, ref);
    if (!resolved.ok()) return resolved.status();
    layout.unreduced.push_back(*resolved);
  }
  for (const std::string& name : manual_axes) {
    absl::StatusOr<MeshAxisRef> resolved = ResolveRef(*mesh, {name, 1, 0});
    if (!resolved.ok()) return resolved.status();
    // Manual axes come first in each dim (Shardy's rule); inside the body they are gone.
    for (auto& dim : layout.dims) {
      dim.erase(std::remove_if(dim.begin(), dim.end(),
                               [&](const MeshAxisRef& r) { return r.axis == resolved->axis; }),
                dim.end());
    }
    layout.manual.push_back(*resolved);
  }
  // Explicitly replicated axes change nothing but must name axes not used elsewhere.
  AxisLayout check = layout;
  for (const SdyAxisRef& ref : sharding.replicated) {
    absl::StatusOr<MeshAxisRef> resolved = ResolveRef(*mesh, ref);
    if (!resolved.ok()) return resolved.status();
    check.unreduced.push_back(*resolved);
  }
  absl::StatusOr<HloSharding> checked = LayoutToHloSharding(*mesh, check);
  if (!checked.ok()) return checked.status();
  return LayoutToHloSharding(*mesh, layout);
}

absl::StatusOr<SdySharding> HloToSdySharding(const HloSharding& sharding, const SdyMesh& sdy_mesh,
                                             int64_t rank, absl::string_view mesh_name) {
  SdySharding out;
  out.mesh_name = std::string(mesh_name);
  out.dims.resize(static_cast<size_t>(std::max<int64_t>(rank, 0)));
  if (sharding.IsMaximal()) {
    if (sdy_mesh.IsMaximal() && sdy_mesh.device_ids[0] == sharding.MaximalDevice()) return out;
    return Invalid(absl::StrCat(
        sharding.ToString(false), " lives on a mesh without axes: ", "sdy.mesh @maximal_mesh_",
        sharding.MaximalDevice(), " = <[], ", "device_ids=[", sharding.MaximalDevice(), "]>"));
  }
  if (sharding.IsManual() || sharding.HasManualSubgroup()) {
    return Invalid(absl::StrCat(sharding.ToString(false),
                                " is manual: in Shardy manual axes belong to an "
                                "sdy.manual_computation (manual_axes={...}), not to a tensor "
                                "sharding"));
  }
  absl::StatusOr<Mesh> mesh = sdy_mesh.ToMesh();
  if (!mesh.ok()) return mesh.status();
  absl::StatusOr<AxisLayout> layout = HloShardingToLayout(*mesh, sharding, rank);
  if (!layout.ok()) return layout.status();
  auto to_sdy = [&](const MeshAxisRef& ref) {
    return SdyAxisRef{mesh->axes()[ref.axis].name, ref.size == 0 ? 1 : ref.pre_size, ref.size};
  };
  out.dims.resize(layout->dims.size());
  for (size_t d = 0; d < layout->dims.size(); ++d) {
    for (const MeshAxisRef& ref : layout->dims[d]) out.dims[d].axes.push_back(to_sdy(ref));
  }
  for (const MeshAxisRef& ref : layout->unreduced) out.unreduced.push_back(to_sdy(ref));
  return out;
}

}  // namespace spmdcheck
