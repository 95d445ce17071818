#include "viz/sharding_picture.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/sdy_sharding.h"
#include "ir/tile_assignment.h"
#include "viz/html.h"

namespace spmdcheck::viz {
namespace {

constexpr double kPanelWidth = 520;
constexpr double kLabelWidth = 70;
constexpr double kHeaderHeight = 22;

// An SVG fragment placed at the origin, with its size.
struct Fragment {
  std::string svg;
  double width = 0;
  double height = 0;
};

std::string Num(double v) { return absl::StrFormat("%.1f", v); }

std::string TextAt(double x, double y, absl::string_view text, double size = 12,
                   absl::string_view anchor = "middle", absl::string_view extra = "") {
  return absl::StrCat("<text x=\"", Num(x), "\" y=\"", Num(y), "\" font-size=\"", Num(size),
                      "\" text-anchor=\"", anchor, "\"", extra, ">", Escape(text), "</text>\n");
}

std::string RangeText(const std::vector<ShardRange>& ranges) {
  std::vector<std::string> parts;
  for (const ShardRange& r : ranges) parts.push_back(absl::StrCat(r.start, ":", r.limit));
  return absl::StrJoin(parts, ",");
}

// Devices as text, runs compressed: 0-7,9.
std::string DevicesText(const std::vector<int64_t>& devices) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < devices.size();) {
    size_t j = i;
    while (j + 1 < devices.size() && devices[j + 1] == devices[j] + 1) ++j;
    if (j >= i + 2) {
      parts.push_back(absl::StrCat(devices[i], "-", devices[j]));
    } else {
      for (size_t k = i; k <= j; ++k) parts.push_back(absl::StrCat(devices[k]));
    }
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
}

// One cell of a picture: a rectangle coloured by its first device, the devices listed, swatches
// of every replica's colour, and a second line (ranges).
std::string Cell(double x, double y, double w, double h, const std::vector<int64_t>& devices,
                 absl::string_view klass, absl::string_view attributes, absl::string_view line2) {
  std::string out = absl::StrCat("<g class=\"", klass, "\" data-devices=\"",
                                 absl::StrJoin(devices, " "), "\"", attributes, ">\n");
  const std::string fill = devices.empty() ? "#eee" : DeviceColor(devices[0]);
  absl::StrAppend(&out, "<rect x=\"", Num(x), "\" y=\"", Num(y), "\" width=\"", Num(w),
                  "\" height=\"", Num(h), "\" fill=\"", fill, "\"/>\n");
  if (devices.size() > 1 && w >= 12) {
    const size_t shown = std::min<size_t>(devices.size(), 16);
    const double sw = std::min(10.0, (w - 4) / static_cast<double>(shown));
    for (size_t i = 0; i < shown; ++i) {
      absl::StrAppend(&out, "<rect x=\"", Num(x + 2 + sw * static_cast<double>(i)), "\" y=\"",
                      Num(y + h - 8), "\" width=\"", Num(sw), "\" height=\"6\" fill=\"",
                      DeviceColor(devices[i]), "\" stroke-width=\"0.3\"/>\n");
    }
  }
  const double font = std::clamp(std::min(w / 6.0, h / 3.0), 6.0, 14.0);
  const std::string label = devices.empty() ? "-" : DevicesText(devices);
  absl::StrAppend(
      &out, TextAt(x + w / 2, y + h / 2 - (line2.empty() ? -font / 3 : font * 0.2), label, font));
  if (!line2.empty() && h >= 2.4 * font) {
    absl::StrAppend(&out, TextAt(x + w / 2, y + h / 2 + font * 0.9, line2, font * 0.75, "middle",
                                 " fill=\"#444\""));
  }
  return out + "</g>\n";
}

// Relative sizes of the tiles along one dim (at least a sliver for all-padding shards).
std::vector<double> Extents(int64_t size, int64_t tiles, double total) {
  const int64_t c = (size + tiles - 1) / tiles;
  std::vector<double> raw(static_cast<size_t>(tiles));
  double sum = 0;
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t len = std::max<int64_t>(0, std::min((t + 1) * c, size) - std::min(t * c, size));
    raw[t] =
        std::max(static_cast<double>(len), 0.15 * static_cast<double>(std::max<int64_t>(c, 1)));
    sum += raw[t];
  }
  for (double& r : raw) r = r / sum * total;
  return raw;
}

std::string DimRange(int64_t size, int64_t tiles, int64_t t) {
  const int64_t c = (size + tiles - 1) / tiles;
  return absl::StrCat(std::min(t * c, size), ":", std::min((t + 1) * c, size));
}

// The tiles of a tiled leaf: panels over the leading tile dims (rank > 2) and manual groups,
// each a grid over the last two dims with sizes proportional to the index ranges.
absl::StatusOr<Fragment> DrawTiles(const HloSharding& sharding, const Shape& shape) {
  const TileAssignment& tiles = sharding.tile_assignment();
  const int64_t rank = shape.rank();
  const int64_t data_rank = sharding.TiledDataRank();
  int64_t manual_dim = -1;
  for (size_t i = 0; i < sharding.subgroup_types().size(); ++i) {
    if (sharding.subgroup_types()[i] == SubgroupType::kManual) {
      manual_dim = data_rank + static_cast<int64_t>(i);
    }
  }
  if (tiles.num_elements() > kMaxPictureTiles) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the tile assignment has ", tiles.num_elements(), " devices: over the picture's limit of ",
        kMaxPictureTiles, " (sharding show prints them as text)"));
  }
  // (manual group, data tile linear index) -> devices, in tile-assignment order.
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> holders;
  std::vector<int64_t> data_dims(tiles.dims().begin(), tiles.dims().begin() + data_rank);
  for (int64_t linear = 0; linear < tiles.num_elements(); ++linear) {
    std::vector<int64_t> index = MultiIndex(tiles.dims(), linear);
    std::vector<int64_t> data(index.begin(), index.begin() + data_rank);
    const int64_t group = manual_dim >= 0 ? index[manual_dim] : 0;
    holders[{group, data.empty() ? 0 : LinearIndex(data_dims, data)}].push_back(
        tiles.DeviceAtLinear(linear));
  }
  const int64_t groups = manual_dim >= 0 ? tiles.dim(manual_dim) : 1;
  int64_t lead = 1;
  for (int64_t k = 0; k + 2 < rank; ++k) lead *= tiles.dim(k);
  const int64_t rows = rank >= 2 ? tiles.dim(rank - 2) : 1;
  const int64_t cols = rank >= 1 ? tiles.dim(rank - 1) : 1;
  constexpr int64_t kMaxPanels = 64;
  Fragment out;
  out.width = kLabelWidth + kPanelWidth + 10;
  const double row_elems = rank >= 2 ? static_cast<double>(shape.dimensions(rank - 2)) : 1;
  const double col_elems = rank >= 1 ? static_cast<double>(shape.dimensions(rank - 1)) : 1;
  double panel_height = rank >= 2 ? std::clamp(kPanelWidth * row_elems / std::max(col_elems, 1.0),
                                               std::max(60.0, 26.0 * static_cast<double>(rows)),
                                               std::max(420.0, 26.0 * static_cast<double>(rows)))
                                  : 70;
  const std::vector<double> col_w =
      Extents(rank >= 1 ? shape.dimensions(rank - 1) : 1, cols, kPanelWidth);
  const std::vector<double> row_h =
      Extents(rank >= 2 ? shape.dimensions(rank - 2) : 1, rows, panel_height);
  double y = 0;
  int64_t panels = 0;
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t l = 0; l < lead; ++l) {
      if (++panels > kMaxPanels) {
        absl::StrAppend(&out.svg, TextAt(4, y + 16,
                                         absl::StrCat("(", groups * lead - kMaxPanels,
                                                      " more panels not drawn)"),
                                         12, "start"));
        y += 24;
        g = groups;
        break;
      }
      std::vector<int64_t> lead_index =
          MultiIndex(std::vector<int64_t>(tiles.dims().begin(),
                                          tiles.dims().begin() + std::max<int64_t>(rank - 2, 0)),
                     l);
      std::vector<std::string> title;
      if (groups > 1) title.push_back(absl::StrCat("manual group ", g));
      for (size_t k = 0; k < lead_index.size(); ++k) {
        title.push_back(absl::StrCat("dim ", k, " = ",
                                     DimRange(shape.dimensions(k), tiles.dim(k), lead_index[k])));
      }
      if (!title.empty()) {
        absl::StrAppend(&out.svg, TextAt(kLabelWidth, y + 15, absl::StrJoin(title, ", "), 13,
                                         "start", " font-weight=\"bold\""));
        y += kHeaderHeight;
      }
      // Column labels (ranges of the last dim).
      double x = kLabelWidth;
      for (int64_t c = 0; c < cols && rank >= 1; ++c) {
        absl::StrAppend(&out.svg,
                        TextAt(x + col_w[c] / 2, y + 14,
                               DimRange(shape.dimensions(rank - 1), cols, c), 10, "middle"));
        x += col_w[c];
      }
      y += rank >= 1 ? 18 : 0;
      for (int64_t r = 0; r < rows; ++r) {
        if (rank >= 2) {
          absl::StrAppend(&out.svg,
                          TextAt(kLabelWidth - 6, y + row_h[r] / 2 + 4,
                                 DimRange(shape.dimensions(rank - 2), rows, r), 10, "end"));
        }
        x = kLabelWidth;
        for (int64_t c = 0; c < cols; ++c) {
          std::vector<int64_t> index = lead_index;
          if (rank >= 2) index.push_back(r);
          if (rank >= 1) index.push_back(c);
          const int64_t linear = index.empty() ? 0 : LinearIndex(data_dims, index);
          const std::vector<int64_t>& devices = holders[{g, linear}];
          std::vector<ShardRange> ranges;
          for (int64_t k = 0; k < rank; ++k) {
            const int64_t size = shape.dimensions(k);
            const int64_t t = tiles.dim(k);
            const int64_t chunk = (size + t - 1) / t;
            ranges.push_back(
                {std::min(index[k] * chunk, size), std::min((index[k] + 1) * chunk, size), chunk});
          }
          const std::string range = RangeText(ranges);
          absl::StrAppend(
              &out.svg,
              Cell(x, y, col_w[c], row_h[r], devices, "tile",
                   absl::StrCat(" data-tile=\"", absl::StrJoin(index, ","), "\" data-range=\"",
                                range, "\"",
                                groups > 1 ? absl::StrCat(" data-manual-group=\"", g, "\"") : ""),
                   rank == 0 ? "" : absl::StrCat("[", range, "]")));
          x += col_w[c];
        }
        y += row_h[r];
      }
      y += 14;
    }
  }
  out.height = y;
  return out;
}

// A row of per-device boxes (replicated, manual: every device alike or each its own).
Fragment DeviceRow(const std::vector<int64_t>& devices, absl::string_view caption, bool one_cell,
                   absl::string_view range) {
  Fragment out;
  out.width = kLabelWidth + kPanelWidth + 10;
  absl::StrAppend(&out.svg, TextAt(kLabelWidth, 15, caption, 13, "start"));
  if (one_cell) {
    absl::StrAppend(
        &out.svg, Cell(kLabelWidth, 24, kPanelWidth, 90, devices, "tile",
                       absl::StrCat(" data-range=\"", range, "\""), absl::StrCat("[", range, "]")));
    out.height = 124;
    return out;
  }
  const int64_t per_row = 16;
  const double w = kPanelWidth / per_row;
  for (size_t i = 0; i < devices.size(); ++i) {
    const double x = kLabelWidth + w * static_cast<double>(i % per_row);
    const size_t row = i / per_row;  // Whole rows above this box.
    const double y = 24 + 40 * static_cast<double>(row);
    absl::StrAppend(&out.svg, Cell(x, y, w, 36, {devices[i]}, "tile",
                                   absl::StrCat(" data-range=\"", range, "\""), ""));
  }
  const size_t rows = (devices.size() + per_row - 1) / per_row;  // Rounded up.
  out.height = 30 + 40 * static_cast<double>(rows);
  return out;
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

absl::StatusOr<Fragment> DrawLeaf(const HloSharding& sharding, const Shape& shape, int64_t n) {
  std::vector<ShardRange> whole;
  for (int64_t d : shape.dimensions()) whole.push_back({0, d, d});
  const std::string range = RangeText(whole);
  switch (sharding.kind()) {
    case HloSharding::Kind::kReplicated:
      return DeviceRow(Iota(n),
                       n > 0 ? absl::StrCat("replicated: all ", n, " devices hold the whole array")
                             : "replicated: every device holds the whole array",
                       true, range);
    case HloSharding::Kind::kMaximal:
      return DeviceRow(
          {sharding.MaximalDevice()},
          absl::StrCat("maximal: only device ", sharding.MaximalDevice(), " holds the array"), true,
          range);
    case HloSharding::Kind::kManual:
      return DeviceRow(Iota(n), "manual: each device holds its own value (no global index mapping)",
                       false, "");
    case HloSharding::Kind::kUnreduced:
      return DeviceRow(Iota(n), "unreduced: every device holds a partial sum of the whole array",
                       true, range);
    case HloSharding::Kind::kUnknown:
      return DeviceRow({}, "unknown: the sharding is not decided yet", true, range);
    case HloSharding::Kind::kTiled:
      return DrawTiles(sharding, shape);
    case HloSharding::Kind::kTuple:
      break;
  }
  return absl::InvalidArgumentError("a tuple sharding inside a leaf");
}

// The mesh as a grid: rows over every axis but the last, columns over the last; each device
// coloured as in the tiles and labelled with its data tile index.
Fragment DrawMesh(const Mesh& mesh, const HloSharding& sharding) {
  Fragment out;
  const std::vector<MeshAxis>& axes = mesh.axes();
  const int64_t cols = axes.empty() ? 1 : axes.back().size;
  const int64_t rows = mesh.num_devices() / cols;
  std::vector<std::string> names;
  for (const MeshAxis& a : axes) names.push_back(absl::StrCat(a.name, "=", a.size));
  absl::StrAppend(&out.svg,
                  TextAt(kLabelWidth, 15,
                         absl::StrCat("device mesh [", absl::StrJoin(names, ", "),
                                      "] (rows: ", axes.size() > 1 ? "the other axes" : "-",
                                      ", columns: ", axes.empty() ? "-" : axes.back().name, ")"),
                         13, "start", " class=\"mesh-title\""));
  const double w = std::min(60.0, kPanelWidth / static_cast<double>(cols));
  const double h = 34;
  double y = 24;
  std::vector<int64_t> outer_dims;
  size_t label_chars = 0;
  for (size_t i = 0; i + 1 < axes.size(); ++i) {
    outer_dims.push_back(axes[i].size);
    label_chars += axes[i].name.size() + 2 + absl::StrCat(axes[i].size - 1).size();
  }
  const double label_width = std::max(kLabelWidth, 5.6 * static_cast<double>(label_chars) + 10);
  for (int64_t c = 0; c < cols && !axes.empty(); ++c) {
    absl::StrAppend(&out.svg, TextAt(label_width + w * (static_cast<double>(c) + 0.5), y + 12,
                                     absl::StrCat(axes.back().name, "=", c), 9));
  }
  y += 16;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> index = MultiIndex(outer_dims, r);
    std::vector<std::string> label;
    for (size_t i = 0; i < index.size(); ++i) {
      label.push_back(absl::StrCat(axes[i].name, "=", index[i]));
    }
    absl::StrAppend(&out.svg,
                    TextAt(label_width - 6, y + h / 2 + 4, absl::StrJoin(label, ","), 9, "end"));
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t device = mesh.devices().DeviceAtLinear(r * cols + c);
      std::optional<std::vector<int64_t>> tile = sharding.DataTileIndexOf(device);
      const std::string tile_text = tile.has_value() && !tile->empty()
                                        ? absl::StrCat("[", absl::StrJoin(*tile, ","), "]")
                                        : "";
      const double x = label_width + w * static_cast<double>(c);
      absl::StrAppend(&out.svg, "<g class=\"device\" data-device=\"", device, "\" data-tile=\"",
                      tile.has_value() ? absl::StrJoin(*tile, ",") : "none", "\">\n", "<rect x=\"",
                      Num(x), "\" y=\"", Num(y), "\" width=\"", Num(w), "\" height=\"", Num(h),
                      "\" fill=\"", DeviceColor(device), "\"/>\n",
                      TextAt(x + w / 2, y + 14, absl::StrCat(device), 11));
      if (!tile_text.empty() && w >= 24) {
        absl::StrAppend(&out.svg,
                        TextAt(x + w / 2, y + 27, tile_text, 8, "middle", " fill=\"#444\""));
      }
      absl::StrAppend(&out.svg, "</g>\n");
    }
    y += h;
  }
  out.width = label_width + w * static_cast<double>(cols) + 10;
  out.height = y + 10;
  return out;
}

std::vector<const Shape*> Leaves(const Shape& shape) {
  std::vector<const Shape*> out;
  auto collect = [&](auto&& self, const Shape& s) -> void {
    if (!s.IsTuple()) {
      out.push_back(&s);
      return;
    }
    for (const Shape& e : s.tuple_shapes()) self(self, e);
  };
  collect(collect, shape);
  return out;
}

struct Picture {
  std::string svg_body;  // Fragments stacked, translated.
  double width = 0;
  double height = 0;
};

absl::StatusOr<Picture> Draw(const HloSharding& sharding, const Shape& shape,
                             const ShardingPictureOptions& options) {
  int64_t n = options.num_devices;
  absl::Status valid = sharding.Validate(shape, n);
  if (!valid.ok()) return valid;
  Picture picture;
  auto place = [&](const Fragment& f) {
    absl::StrAppend(&picture.svg_body, "<g transform=\"translate(0,", Num(picture.height), ")\">\n",
                    f.svg, "</g>\n");
    picture.height += f.height + 12;
    picture.width = std::max(picture.width, f.width);
  };
  const std::vector<const Shape*> leaves = Leaves(shape);
  for (size_t i = 0; i < leaves.size(); ++i) {
    const HloSharding& leaf = sharding.IsTuple() ? sharding.tuple_elements()[i] : sharding;
    const Shape& leaf_shape = *leaves[i];
    int64_t leaf_n = n;
    if (leaf_n == 0 && leaf.IsTiled()) {
      leaf_n =
          std::max(leaf.tile_assignment().num_elements(), leaf.tile_assignment().DeviceBound());
    }
    if (leaf_n > kMaxPictureDevices) {
      return absl::InvalidArgumentError(
          absl::StrCat(leaf_n, " devices: over the picture's limit of ", kMaxPictureDevices));
    }
    if (leaves.size() > 1 || !leaf_shape.IsArray()) {
      Fragment title;
      title.svg = TextAt(
          4, 16,
          absl::StrCat("leaf ", i, ": ", leaf_shape.ToString(false), " ", leaf.ToString(false)), 14,
          "start", " font-weight=\"bold\"");
      title.height = 20;
      place(title);
    }
    if (!leaf_shape.IsArray()) continue;
    absl::StatusOr<Fragment> tiles = DrawLeaf(leaf, leaf_shape, leaf_n);
    if (!tiles.ok()) return tiles.status();
    place(*tiles);
    if (leaf.IsTiled() || leaf.IsMaximal()) {
      Mesh mesh = options.mesh.has_value() ? *options.mesh : MeshForSharding(leaf, leaf_n);
      if (mesh.num_devices() <= kMaxPictureDevices && mesh.num_devices() >= leaf_n) {
        place(DrawMesh(mesh, leaf));
      }
    }
  }
  return picture;
}

}  // namespace

absl::StatusOr<std::string> ShardingSvg(const HloSharding& sharding, const Shape& shape,
                                        const ShardingPictureOptions& options) {
  absl::StatusOr<Picture> picture = Draw(sharding, shape, options);
  if (!picture.ok()) return picture.status();
  const double w = picture->width + 10, h = picture->height + 10;
  return absl::StrCat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", Num(w), "\" height=\"", Num(h),
      "\" viewBox=\"0 0 ", Num(w), " ", Num(h), "\">\n",
      "<style>text{font-family:monospace} .tile rect,.device rect{stroke:#333}</style>\n",
      "<title>", Escape(sharding.ToString(false)), " on ", Escape(shape.ToString(false)),
      "</title>\n", picture->svg_body, "</svg>\n");
}

absl::StatusOr<std::string> ShardingHtml(const HloSharding& sharding, const Shape& shape,
                                         const ShardingPictureOptions& options) {
  absl::StatusOr<Picture> picture = Draw(sharding, shape, options);
  if (!picture.ok()) return picture.status();
  const std::string title = absl::StrCat(sharding.ToString(false), " on ", shape.ToString(false));
  std::string body = absl::StrCat(
      "<h1>sharding <code id=\"sharding\">", Escape(sharding.ToString(false)),
      "</code> on <code id=\"shape\">", Escape(shape.ToString(false)), "</code></h1>\n");
  if (sharding.IsTiled() && shape.IsArray()) {
    const int64_t replicas =
        sharding.tile_assignment().num_elements() / std::max<int64_t>(1, sharding.NumTiles());
    absl::StrAppend(&body, "<p class=\"note\">", sharding.NumTiles(), " tiles",
                    replicas > 1 ? absl::StrCat(" x ", replicas, " devices each") : "",
                    ", shard shape ", Escape(sharding.TileShape(shape).ToString(false)), ", ",
                    sharding.tile_assignment().num_elements(),
                    " devices. Each tile is coloured by its first device and lists every device "
                    "holding it; hover a tile or a device to see where it is.</p>\n");
  }
  const double w = picture->width + 10, h = picture->height + 10;
  absl::StrAppend(&body, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"picture\" width=\"",
                  Num(w), "\" height=\"", Num(h), "\" viewBox=\"0 0 ", Num(w), " ", Num(h), "\">\n",
                  picture->svg_body, "</svg>\n");
  // What each device holds (array leaves of rank >= 0, up to the picture's limit).
  if (shape.IsArray() && (sharding.IsTiled() || sharding.IsMaximal() || sharding.IsReplicated())) {
    int64_t n = options.num_devices;
    if (n == 0 && sharding.IsTiled()) n = sharding.tile_assignment().num_elements();
    if (n == 0 && sharding.IsMaximal()) n = sharding.MaximalDevice() + 1;
    absl::StrAppend(&body, "<h2>Devices</h2>\n<table id=\"devices\">\n<tr><th>device</th>",
                    "<th>index ranges</th><th>replicas of its tile</th></tr>\n");
    for (int64_t d = 0; d < n && d < kMaxPictureDevices; ++d) {
      std::optional<std::vector<ShardRange>> ranges = sharding.RangesForDevice(shape, d);
      absl::StrAppend(&body, "<tr data-device=\"", d, "\"><td>", d, "</td><td>",
                      ranges.has_value() ? Escape(RangeText(*ranges)) : "nothing", "</td><td>",
                      Escape(DevicesText(sharding.ReplicasOf(d))), "</td></tr>\n");
    }
    absl::StrAppend(&body, "</table>\n");
  }
  return Page(title, body);
}

}  // namespace spmdcheck::viz
