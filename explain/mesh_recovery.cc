#include "explain/mesh_recovery.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace spmdcheck::explain {
namespace {

int64_t Product(const std::vector<MeshAxis>& axes) {
  int64_t p = 1;
  for (const MeshAxis& a : axes) p *= a.size;
  return p;
}

// The digits of one iota device array: per tile dim, (stride, size) pieces of the device id,
// major first; nullopt when the tile dims cut a reshape dim unevenly.
struct Piece {
  int64_t stride = 1;
  int64_t size = 1;
};
std::optional<std::vector<std::vector<Piece>>> IotaPieces(const IotaTileAssignment& iota) {
  const absl::Span<const int64_t> reshape = iota.reshape_dims();
  const absl::Span<const int64_t> perm = iota.perm();
  std::vector<int64_t> reshape_stride(reshape.size(), 1);
  for (size_t j = reshape.size(); j-- > 1;) {
    reshape_stride[j - 1] = reshape_stride[j] * reshape[j];
  }
  std::vector<Piece> transposed;
  for (int64_t p : perm) transposed.push_back({reshape_stride[p], reshape[p]});
  const absl::Span<const int64_t> dims = iota.dims();
  std::vector<std::vector<Piece>> pieces(dims.size());
  size_t i = 0;
  int64_t a = transposed.empty() ? 1 : transposed[0].size;
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t b = dims[k];
    while (b > 1) {
      while (a == 1 && i + 1 < transposed.size()) a = transposed[++i].size;
      if (a == 1) return std::nullopt;
      int64_t p = 0;
      if (a % b == 0) {
        p = b;
      } else if (b % a == 0) {
        p = a;
      } else {
        return std::nullopt;
      }
      pieces[k].push_back({transposed[i].stride * (a / p), p});
      a /= p;
      b /= p;
    }
  }
  return pieces;
}

// Breakpoints (strides where a digit starts or ends) an array implies; nullopt when it is no iota.
std::optional<std::set<int64_t>> Breakpoints(const TileAssignment& tiles) {
  std::optional<IotaTileAssignment> iota = tiles.AsIota();
  if (!iota.has_value()) return std::nullopt;
  std::optional<std::vector<std::vector<Piece>>> pieces = IotaPieces(*iota);
  if (!pieces.has_value()) return std::nullopt;
  std::set<int64_t> out;
  for (const auto& dim : *pieces) {
    for (const Piece& p : dim) {
      out.insert(p.stride);
      out.insert(p.stride * p.size);
    }
  }
  return out;
}

// True when the sorted set is a chain under divisibility from 1 to n.
bool IsChain(const std::set<int64_t>& points) {
  int64_t prev = 0;
  for (int64_t p : points) {
    if (prev != 0 && p % prev != 0) return false;
    prev = p;
  }
  return true;
}

// Reads `name = size` items after `open` up to `close` (names quoted with ' or ", possibly
// backslash-escaped, or bare; separators `=` or `:`).
std::optional<std::vector<MeshAxis>> ReadAxisList(absl::string_view text, size_t start,
                                                  char close) {
  std::vector<MeshAxis> axes;
  size_t i = start;
  const auto skip = [&] {
    while (i < text.size() &&
           (text[i] == ' ' || text[i] == '\\' || text[i] == '\'' || text[i] == '"' ||
            text[i] == ',' || text[i] == '\n' || text[i] == '\t'))
      ++i;
  };
  for (int guard = 0; guard < 64; ++guard) {
    skip();
    if (i >= text.size()) return std::nullopt;
    if (text[i] == close) break;
    size_t name_start = i;
    while (i < text.size() &&
           (absl::ascii_isalnum(text[i]) || text[i] == '_' || text[i] == '-' || text[i] == '.'))
      ++i;
    if (i == name_start) return std::nullopt;
    std::string name(text.substr(name_start, i - name_start));
    skip();
    if (i >= text.size() || (text[i] != '=' && text[i] != ':')) return std::nullopt;
    ++i;
    skip();
    size_t num_start = i;
    while (i < text.size() && absl::ascii_isdigit(text[i])) ++i;
    int64_t size = 0;
    if (!absl::SimpleAtoi(text.substr(num_start, i - num_start), &size) || size < 1) {
      return std::nullopt;
    }
    axes.push_back({std::move(name), size});
  }
  if (axes.empty()) return std::nullopt;
  return axes;
}

std::vector<MeshAxis> DropUnitAxes(std::vector<MeshAxis> axes) {
  axes.erase(
      std::remove_if(axes.begin(), axes.end(), [](const MeshAxis& a) { return a.size == 1; }),
      axes.end());
  return axes;
}

}  // namespace

absl::StatusOr<NamedMesh> ParseMeshFlag(absl::string_view text) {
  NamedMesh mesh;
  mesh.source = "--mesh";
  std::set<std::string> seen;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::vector<absl::string_view> kv = absl::StrSplit(item, absl::ByAnyChar("=:"));
    int64_t size = 0;
    if (kv.size() != 2 || kv[0].empty() || !absl::SimpleAtoi(kv[1], &size) || size < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--mesh expects NAME=SIZE[,NAME=SIZE...] with sizes >= 1, not '", text, "'"));
    }
    std::string name(absl::StripAsciiWhitespace(kv[0]));
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("--mesh names axis '", name, "' twice"));
    }
    mesh.axes.push_back({name, size});
  }
  if (mesh.axes.empty()) return absl::InvalidArgumentError("--mesh names no axis");
  mesh.axes = DropUnitAxes(std::move(mesh.axes));
  return mesh;
}

std::optional<NamedMesh> MeshFromModuleText(absl::string_view text, int64_t num_devices) {
  struct Form {
    absl::string_view anchor;
    char close;
    absl::string_view source;
  };
  static constexpr Form kForms[] = {
      {"sdy.mesh<[", ']', "the module's sdy.mesh"},
      {"mesh[", ']', "the module's mesh-axes replica groups"},
      {"Mesh(", ')', "JAX's Mesh(...) in the module's metadata"},
  };
  for (const Form& form : kForms) {
    size_t pos = 0;
    for (int tries = 0; tries < 1000; ++tries) {
      pos = text.find(form.anchor, pos);
      if (pos == absl::string_view::npos) break;
      pos += form.anchor.size();
      std::optional<std::vector<MeshAxis>> axes = ReadAxisList(text, pos, form.close);
      if (!axes.has_value()) continue;
      // An explicit device order right after the axes is not an iota: not read.
      const size_t end = text.find(form.close, pos);
      if (end != absl::string_view::npos &&
          text.substr(end, 40).find("device_ids") != absl::string_view::npos) {
        continue;
      }
      std::vector<MeshAxis> kept = DropUnitAxes(*axes);
      if (Product(kept) != num_devices) continue;
      return NamedMesh{std::move(kept), std::string(form.source)};
    }
  }
  return std::nullopt;
}

absl::StatusOr<RecoveredMesh> RecoveredMesh::Recover(int64_t num_devices,
                                                     const MeshObservations& observations,
                                                     const std::optional<NamedMesh>& named) {
  if (num_devices < 1) return absl::InvalidArgumentError("the device count must be positive");
  RecoveredMesh mesh;
  mesh.num_devices_ = num_devices;
  std::set<int64_t> points = {1, num_devices};
  std::set<int64_t> axis_points = {1, num_devices};
  if (named.has_value()) {
    if (Product(named->axes) != num_devices) {
      std::vector<std::string> parts;
      for (const MeshAxis& a : named->axes) parts.push_back(absl::StrCat(a.name, "=", a.size));
      return absl::InvalidArgumentError(absl::StrCat("the mesh ", absl::StrJoin(parts, ","), " (",
                                                     named->source, ") has ", Product(named->axes),
                                                     " devices but the module has ", num_devices));
    }
    int64_t stride = num_devices;
    for (const MeshAxis& a : named->axes) {
      stride /= a.size;
      points.insert(stride);
      axis_points.insert(stride);
    }
  }
  // Distinct arrays, most frequent first: they decide conflicts.
  std::map<std::string, std::pair<int64_t, size_t>> distinct;
  for (size_t i = 0; i < observations.arrays.size(); ++i) {
    const MeshObservations::Array& a = observations.arrays[i];
    if (a.tiles.num_elements() != num_devices) continue;
    const std::string key =
        absl::StrCat(a.anchor ? "A" : "-", a.data_dims, ":", a.tiles.Canonical().ToString());
    auto [it, inserted] = distinct.try_emplace(key, 0, i);
    it->second.first += 1;
  }
  std::vector<std::pair<int64_t, size_t>> order;
  for (const auto& [key, value] : distinct) order.push_back(value);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  const auto add_points = [&](const std::optional<std::set<int64_t>>& candidate) {
    if (!candidate.has_value()) return;
    std::set<int64_t> merged = points;
    merged.insert(candidate->begin(), candidate->end());
    if (IsChain(merged)) {
      points = std::move(merged);
    } else {
      ++mesh.conflicts_;
    }
  };
  for (const auto& [count, index] : order) {
    add_points(Breakpoints(observations.arrays[index].tiles));
  }
  for (const auto& groups : observations.groups) {
    if (groups.empty() || groups.size() * groups[0].size() != static_cast<size_t>(num_devices)) {
      continue;
    }
    bool uniform = true;
    std::vector<int64_t> flat;
    for (const auto& g : groups) {
      uniform = uniform && g.size() == groups[0].size();
      flat.insert(flat.end(), g.begin(), g.end());
    }
    if (!uniform) continue;
    const int64_t g = static_cast<int64_t>(groups.size());
    const int64_t s = static_cast<int64_t>(groups[0].size());
    absl::StatusOr<TileAssignment> t = TileAssignment::Explicit({g, s}, flat);
    if (t.ok()) add_points(Breakpoints(*t));
  }
  // Digits, major first.
  std::vector<int64_t> sorted(points.begin(), points.end());
  for (size_t i = sorted.size() - 1; i-- > 0;) {
    mesh.digits_.push_back({sorted[i], sorted[i + 1] / sorted[i], 0});
  }
  const int m = static_cast<int>(mesh.digits_.size());
  // Which adjacent digits belong to one axis.
  std::vector<bool> merge(std::max(m - 1, 0), false);
  if (named.has_value()) {
    for (int i = 0; i + 1 < m; ++i) merge[i] = !axis_points.contains(mesh.digits_[i].stride);
  } else {
    std::vector<int64_t> together(merge.size(), 0), separated(merge.size(), 0);
    // Temporarily one axis per digit, so that DigitLists can run.
    for (int i = 0; i < m; ++i) mesh.digits_[i].axis = i;
    bool any_anchor = false;
    for (const auto& [count, index] : order) {
      const MeshObservations::Array& a = observations.arrays[index];
      any_anchor = any_anchor || (a.anchor && mesh.DigitLists(a.tiles).has_value());
    }
    for (const auto& [count, index] : order) {
      const MeshObservations::Array& a = observations.arrays[index];
      if (any_anchor && !a.anchor) continue;
      std::optional<std::vector<std::vector<int>>> lists = mesh.DigitLists(a.tiles);
      if (!lists.has_value()) continue;
      for (int64_t k = 0; k < a.data_dims && k < static_cast<int64_t>(lists->size()); ++k) {
        const std::vector<int>& l = (*lists)[k];
        for (int i = 0; i + 1 < m; ++i) {
          auto pi = std::find(l.begin(), l.end(), i);
          auto pj = std::find(l.begin(), l.end(), i + 1);
          const bool has_i = pi != l.end(), has_j = pj != l.end();
          if (has_i && has_j && pj == pi + 1) {
            together[i] += count;
          } else if (has_i || has_j) {
            separated[i] += count;
          }
        }
      }
    }
    for (int i = 0; i + 1 < m; ++i) merge[i] = together[i] > separated[i];
  }
  // Axes: maximal merged runs of digits.
  int axis = -1;
  for (int i = 0; i < m; ++i) {
    if (i == 0 || !merge[i - 1]) {
      ++axis;
      mesh.axes_.push_back({"", 1, 1});
    }
    mesh.digits_[i].axis = axis;
    mesh.axes_[axis].size *= mesh.digits_[i].size;
    mesh.axes_[axis].stride = mesh.digits_[i].stride;
  }
  if (num_devices == 1) mesh.axes_.clear();
  if (named.has_value()) {
    for (size_t i = 0; i < mesh.axes_.size() && i < named->axes.size(); ++i) {
      mesh.axes_[i].name = named->axes[i].name;
    }
    mesh.source_ = named->source;
  } else {
    for (size_t i = 0; i < mesh.axes_.size(); ++i) mesh.axes_[i].name = absl::StrCat("axis", i);
    mesh.source_ = absl::StrCat("inferred from ", observations.arrays.size(), " sharding(s) and ",
                                observations.groups.size(), " collective group list(s)");
  }
  return mesh;
}

std::optional<std::vector<std::vector<int>>> RecoveredMesh::DigitLists(
    const TileAssignment& tiles) const {
  const int64_t n = num_devices_;
  if (tiles.num_elements() != n || !tiles.DevicesDistinct() || tiles.DeviceBound() > n) {
    return std::nullopt;
  }
  const std::vector<int64_t> devices = tiles.Devices();
  const absl::Span<const int64_t> dims = tiles.dims();
  const int64_t r = static_cast<int64_t>(dims.size());
  const int m = static_cast<int>(digits_.size());
  std::vector<int64_t> pstride(r, 1);
  for (int64_t k = r - 1; k > 0; --k) pstride[k - 1] = pstride[k] * dims[k];
  std::vector<int64_t> position(n, -1);
  for (int64_t l = 0; l < n; ++l) position[devices[l]] = l;
  std::vector<int> owner(m, -1);
  std::vector<int64_t> idx(r, 0);
  for (int64_t l = 0; l < n; ++l) {
    if (l > 0) {
      for (int64_t k = r - 1; k >= 0; --k) {
        if (++idx[k] < dims[k]) break;
        idx[k] = 0;
      }
    }
    const int64_t d = devices[l];
    for (int64_t k = 0; k < r; ++k) {
      if (idx[k] + 1 >= dims[k]) continue;
      const int64_t d2 = devices[l + pstride[k]];
      for (int g = 0; g < m; ++g) {
        if (DigitValue(d, g) == DigitValue(d2, g)) continue;
        if (owner[g] != -1 && owner[g] != k) return std::nullopt;
        owner[g] = static_cast<int>(k);
      }
    }
  }
  std::vector<std::vector<int>> lists(r);
  std::vector<std::vector<int64_t>> weights(r, std::vector<int64_t>(m, 0));
  const int64_t d0 = devices[0];
  for (int64_t k = 0; k < r; ++k) {
    // Each digit's weight in the tile index along k: the index change when the digit grows by
    // one (negative when the dim runs through the digit in reverse).
    std::vector<std::pair<int64_t, int>> weighted;  // (|weight|, digit)
    for (int g = 0; g < m; ++g) {
      if (owner[g] != k) continue;
      const int64_t step = DigitValue(d0, g) + 1 < digits_[g].size ? 1 : -1;
      const int64_t dg = d0 + step * digits_[g].stride;
      const int64_t w =
          step * (position[dg] / pstride[k] % dims[k] - position[d0] / pstride[k] % dims[k]);
      if (w == 0) return std::nullopt;
      weights[k][g] = w;
      weighted.push_back({std::abs(w), g});
    }
    std::sort(weighted.begin(), weighted.end());
    int64_t expect = 1;
    for (const auto& [w, g] : weighted) {
      if (w != expect) return std::nullopt;
      expect *= digits_[g].size;
    }
    if (expect != dims[k]) return std::nullopt;
    for (auto it = weighted.rbegin(); it != weighted.rend(); ++it) lists[k].push_back(it->second);
  }
  // Verify the mixed-radix reading on every position.
  std::fill(idx.begin(), idx.end(), 0);
  for (int64_t l = 0; l < n; ++l) {
    if (l > 0) {
      for (int64_t k = r - 1; k >= 0; --k) {
        if (++idx[k] < dims[k]) break;
        idx[k] = 0;
      }
    }
    const int64_t d = devices[l];
    for (int64_t k = 0; k < r; ++k) {
      int64_t value = 0;
      for (int g : lists[k]) value += weights[k][g] * (DigitValue(d, g) - DigitValue(d0, g));
      if (value != idx[k]) return std::nullopt;
    }
  }
  return lists;
}

std::vector<AxisPart> RecoveredMesh::PartsOfDigits(const std::vector<int>& digits) const {
  std::vector<AxisPart> parts;
  int prev = -2;
  for (int g : digits) {
    const int axis = digits_[g].axis;
    if (!parts.empty() && parts.back().axis == axis && g == prev + 1) {
      parts.back().size *= digits_[g].size;
    } else {
      int64_t pre = 1;
      for (int h = 0; h < g; ++h) {
        if (digits_[h].axis == axis) pre *= digits_[h].size;
      }
      parts.push_back({axis, pre, digits_[g].size});
    }
    prev = g;
  }
  return parts;
}

std::optional<std::vector<std::vector<AxisPart>>> RecoveredMesh::DimAxes(
    const TileAssignment& tiles) const {
  std::optional<std::vector<std::vector<int>>> lists = DigitLists(tiles);
  if (!lists.has_value()) return std::nullopt;
  std::vector<std::vector<AxisPart>> out;
  for (const std::vector<int>& l : *lists) out.push_back(PartsOfDigits(l));
  return out;
}

std::optional<std::vector<AxisPart>> RecoveredMesh::GroupAxes(
    const std::vector<std::vector<int64_t>>& groups) const {
  const int m = static_cast<int>(digits_.size());
  std::vector<bool> varies(m, false);
  std::vector<bool> seen(num_devices_, false);
  int64_t total = 0;
  for (const auto& group : groups) {
    if (group.empty()) return std::nullopt;
    for (int64_t d : group) {
      if (d < 0 || d >= num_devices_ || seen[d]) return std::nullopt;
      seen[d] = true;
      ++total;
      for (int g = 0; g < m; ++g) {
        if (DigitValue(d, g) != DigitValue(group[0], g)) varies[g] = true;
      }
    }
  }
  if (total != num_devices_) return std::nullopt;
  int64_t size = 1;
  std::vector<int> digits;
  for (int g = 0; g < m; ++g) {
    if (varies[g]) {
      size *= digits_[g].size;
      digits.push_back(g);
    }
  }
  for (const auto& group : groups) {
    if (static_cast<int64_t>(group.size()) != size) return std::nullopt;
  }
  return PartsOfDigits(digits);
}

std::string RecoveredMesh::PartName(const AxisPart& part) const {
  if (part.axis < 0 || part.axis >= num_axes()) return "?";
  const RecoveredAxis& a = axes_[part.axis];
  if (part.pre_size == 1 && part.size == a.size) return a.name;
  return absl::StrCat(a.name, ":(", part.pre_size, ")", part.size);
}

std::string RecoveredMesh::ToString() const {
  if (axes_.empty()) return "one device";
  std::vector<std::string> parts;
  for (const RecoveredAxis& a : axes_) parts.push_back(absl::StrCat(a.name, "=", a.size));
  return absl::StrJoin(parts, " x ");
}

}  // namespace spmdcheck::explain
