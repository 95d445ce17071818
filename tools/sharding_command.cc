// `spmdcheck sharding expand|canon|show|groups SHARDING ...`: inspects one XLA sharding — its
// explicit device list, its canonical iota text, the index range every device holds of an array,
// and the replica groups of the devices that differ only along some tile dims.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "base/file.h"
#include "ir/hlo_parser.h"
#include "ir/mesh.h"
#include "ir/partition_spec.h"
#include "ir/replica_groups.h"
#include "ir/sdy_sharding.h"
#include "ir/shape.h"
#include "ir/sharding.h"
#include "ir/tile_assignment.h"
#include "tools/cli.h"
#include "viz/html.h"
#include "viz/sharding_picture.h"

namespace spmdcheck::cli {
namespace {

constexpr char kCommand[] = "sharding";

constexpr char kShardingHelp[] = R"help(usage: spmdcheck sharding <verb> SHARDING [flags]

Inspects one XLA sharding, written as in HLO text (quote it for the shell), e.g.
'{devices=[2,2]<=[2,2]T(1,0)}' or '{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}'.

verbs:
  expand SHARDING [--num-partitions N]        every tile assignment as an explicit device list
  canon SHARDING [--num-partitions N]         canonical form: iota wherever the devices are one
  show SHARDING --shape SHAPE [--num-partitions N] [--svg FILE] [--html FILE] [--mesh MESH]
                                              the index range each device holds of an array
                                              (and a picture of the tiles and the mesh)
  groups SHARDING --dims D,D,... [--explicit] replica groups of the devices that differ only
                                              in those tile dims (what an all-gather uses)
  from-spec SPEC --mesh MESH [--shape SHAPE]  JAX's PartitionSpec, e.g. "P('data', None)", as an
                                              HloSharding
  to-spec SHARDING --mesh MESH [--shape SHAPE]
                                              the PartitionSpec of a sharding, or why it has none
  from-sdy SDY [--mesh MESH] [--shape SHAPE] [--manual-axes A,B]
                                              Shardy's #sdy.sharding<@mesh, [...]> as an HloSharding
  to-sdy SHARDING [--mesh MESH] [--shape SHAPE]
                                              the Shardy sharding (and a mesh when none is given)

Run `spmdcheck sharding <verb> --help` for details.
Exit code: 0 on success, 1 when to-spec/to-sdy finds no such form (the reason is printed),
2 on bad input (malformed sharding, mismatch, unknown verb or flag).
)help";

// The usage and the description of each verb (their flags are described where they are added).
struct VerbHelp {
  const char* verb;
  const char* usage;
  const char* description;
};

constexpr VerbHelp kVerbHelp[] = {
    {"expand", "usage: spmdcheck sharding expand SHARDING [--num-partitions N]\n",
     R"help(Prints SHARDING with every tile assignment written as an explicit row-major device list (the
V1 form), e.g. '{devices=[2,2]<=[2,2]T(1,0)}' prints {devices=[2,2]0,2,1,3}.
Normalisation is applied as XLA's parser does (sorted replication groups, merged subgroup dims,
degenerate cases collapsed to {replicated} / {manual}).)help"},
    {"canon", "usage: spmdcheck sharding canon SHARDING [--num-partitions N]\n",
     R"help(Prints SHARDING in canonical form: every tile assignment whose device array is an iota is
written in XLA's iota form `[dims]<=[reshape]T(perm)` with the reshape canonicalised (size-1
dims dropped, consecutive transpose runs merged); other assignments stay explicit lists.
E.g. '{devices=[2,2]0,2,1,3}' prints {devices=[2,2]<=[2,2]T(1,0)}.)help"},
    {"show",
     "usage: spmdcheck sharding show SHARDING --shape SHAPE [--num-partitions N] [--svg FILE]\n"
     "                               [--html FILE] [--mesh MESH]\n",
     R"help(Checks SHARDING against SHAPE (e.g. f32[16,8]) and prints, for every device 0..N-1, the index
range start:limit it holds in each dim, e.g. `device 3: [8:16, 4:8]`. N is --num-partitions, or
else the number of devices of the tile assignment.
  * uneven shards: every device's buffer has ceil(dim/tiles) elements; the missing ones are
    shown as padding, e.g. `device 7: [9:10 +2 padding, 0:8]` (a shard may be all padding:
    `5:5 +2 padding`)
  * partially replicated shardings add (replica R of K): the device's 0-based position among
    the K devices holding the same tile; manual subgroups add (manual group G of K)
  * for arrays of rank <= 2 a grid follows showing which device(s) hold each tile
  * {replicated}: every device holds everything; {maximal device=D}: only D holds the array;
    {manual}: the value is already per-device, there is no global index mapping
A tuple SHAPE is shown leaf by leaf (a non-tuple sharding applies to every leaf).)help"},
    {"groups", "usage: spmdcheck sharding groups SHARDING --dims D,D,... [--explicit]\n",
     R"help(Prints the groups of devices whose tile indices differ only along the listed tile-assignment
dims (0-based; trailing replication/subgroup dims count too) — the replica groups an
all-gather or all-reduce over those dims uses (XLA's GetPartitionGroupsForReplication).
Within a group devices are in row-major order of the listed dims; groups are ordered row-major
over the other dims. Printed in iota form (e.g. [4,2]<=[8]) when the groups are one, else as
an explicit list.)help"},
    {"from-spec", "usage: spmdcheck sharding from-spec SPEC --mesh MESH [--shape SHAPE]\n",
     R"help(Prints the HloSharding that JAX's NamedSharding(mesh, SPEC) lowers to, e.g.
  spmdcheck sharding from-spec "P('data', None)" --mesh data=2,model=4 --shape f32[8,16]
prints {devices=[2,1,4]<=[8] last_tile_dim_replicate}. SPEC is P(...) or PartitionSpec(...)
with entries None, 'axis', ('axis', 'axis') (one dim split by several axes, major first) and
P.UNCONSTRAINED, and optionally unreduced={'axis'}. Mesh axes SPEC does not name replicate the
array. A SPEC shorter than the shape's rank leaves the trailing dims whole.)help"},
    {"to-spec", "usage: spmdcheck sharding to-spec SHARDING --mesh MESH [--shape SHAPE]\n",
     R"help(Prints the PartitionSpec over MESH that places every tile where SHARDING does, e.g.
'{devices=[2,1,4]<=[8] last_tile_dim_replicate}' over data=2,model=4 prints P('data', None).
When there is none it says why and exits 1: a device order that is no view of the mesh (an
explicit device list no assignment of the mesh axes gives), a tile dim that splits a mesh axis
(Shardy's sub-axes can say that: to-sdy), manual shardings (shard_map), maximal shardings.)help"},
    {"from-sdy",
     "usage: spmdcheck sharding from-sdy SDY [--mesh MESH] [--shape SHAPE] [--manual-axes A,B]\n",
     R"help(Prints the HloSharding of a Shardy sharding, as XLA's Shardy export writes it, e.g.
  spmdcheck sharding from-sdy '#sdy.sharding<@mesh, [{"data"}, {}]>' --mesh '<["data"=2, "model"=4]>'
SDY is `#sdy.sharding<@mesh, [{"a"}, {"b":(2)2, ?}], replicated={"c"}>` or its bare `<...>`
form (escaped quotes \" as in HLO dumps are accepted); --mesh gives the referenced mesh unless
the sharding has an inline `mesh<[...]>`. Open dims (?), priorities (p1) and replicated={...}
do not change where tiles live; unreduced={...} becomes an unreduced subgroup.)help"},
    {"to-sdy", "usage: spmdcheck sharding to-sdy SHARDING [--mesh MESH] [--shape SHAPE]\n",
     R"help(Prints SHARDING as a Shardy sharding over MESH: a line `sdy.mesh @mesh = <[...]>` and the
`#sdy.sharding<@mesh, [...]>`. Without --mesh the mesh is made from the sharding: its device-id
digits as axes x0, x1, ... (major first) when the device array is a transposed iota, else one
axis per tile dim with `device_ids` in the sharding's order. Tile dims that split a mesh axis use
sub-axes ("x":(1)2). Exits 1 with the reason when SHARDING has no Shardy form over MESH (manual
shardings are an sdy.manual_computation's manual_axes, not a tensor sharding).)help"},
};

constexpr char kMeshHelp[] =
    R"help(MESH is `data=2,model=4` (axis sizes, major first; device order 0..N-1), optionally with the
device order: `data=2,model=4 devices=[2,4]<=[4,2]T(1,0)` or `devices=[2,4]0,2,4,6,1,3,5,7`; or
Shardy's `<["data"=2, "model"=4], device_ids=[...]>` (also `sdy.mesh @mesh = <...>`).)help";

constexpr char kVerbFooter[] =
    R"(Exit code: 0 on success, 1 when to-spec/to-sdy finds no such form (the reason is printed),
2 on bad input.)";

// A verb's arguments, as given.
struct VerbArgs {
  std::vector<std::string> positional;  // SHARDING (SPEC, SDY): one, quoted for the shell.
  std::optional<int64_t> num_partitions;
  std::optional<std::string> shape, svg, html, mesh;
  std::vector<int64_t> dims;
  bool explicit_list = false;
  std::vector<std::string> manual_axes;
};

// The verb's command line; nullptr for an unknown verb.
std::unique_ptr<Command> VerbCommand(const std::string& verb, VerbArgs& args) {
  const VerbHelp* help = nullptr;
  for (const VerbHelp& h : kVerbHelp) {
    if (verb == h.verb) help = &h;
  }
  if (help == nullptr) return nullptr;
  const bool notation = absl::StrContains(verb, "-spec") || absl::StrContains(verb, "-sdy");
  auto command = std::make_unique<Command>(
      absl::StrCat(kCommand, " ", verb), help->usage, help->description,
      notation ? absl::StrCat(kMeshHelp, "\n", kVerbFooter) : std::string(kVerbFooter));
  CLI::App& app = command->app();
  const std::string what = verb == "from-spec" ? "SPEC" : verb == "from-sdy" ? "SDY" : "SHARDING";
  app.add_option(what, args.positional,
                 verb == "from-spec"  ? "JAX's PartitionSpec, e.g. \"P('data', None)\""
                 : verb == "from-sdy" ? "Shardy's sharding, e.g. '#sdy.sharding<@mesh, [{\"a\"}]>'"
                                      : "the sharding as in HLO text (quote it for the shell)")
      ->required();
  if (verb == "expand" || verb == "canon" || verb == "show") {
    AddOptional(app, "--num-partitions", args.num_partitions,
                verb == "show" ? "number of partitions; the sharding must use exactly devices "
                                 "0..N-1"
                               : "also check that the sharding fits N partitions (each tile\n"
                                 "assignment holds exactly the devices 0..N-1 once; a maximal\n"
                                 "device is below N)")
        ->type_name("N")
        ->transform(DecimalInt64());
  }
  if (verb == "show") {
    AddOptional(app, "--shape", args.shape, "the array (or tuple) shape, required")
        ->type_name("SHAPE");
    AddOptional(app, "--svg", args.svg,
                "also draw it: the tiles coloured by device with every replica listed\n"
                "(panels for rank > 2 and for manual groups), and the device mesh")
        ->type_name("FILE");
    AddOptional(app, "--html", args.html,
                "the same picture in a self-contained page with a device table (hover a\n"
                "tile or a device to see where it lives)")
        ->type_name("FILE");
    AddOptional(app, "--mesh", args.mesh,
                "the mesh to draw (data=2,model=4 or Shardy's <[...]>); default: a mesh\n"
                "made from the sharding's device-id digits")
        ->type_name("MESH");
  } else if (verb == "groups") {
    app.add_option("--dims", args.dims, "tile dims to group along, required")
        ->type_name("D,D,...")
        ->delimiter(',')
        ->transform(DecimalInt64());
    app.add_flag("--explicit", args.explicit_list, "always print the explicit list {{0,1},{2,3}}");
  } else if (notation) {
    const bool needs_mesh = verb == "from-spec" || verb == "to-spec";
    AddOptional(app, "--mesh", args.mesh,
                needs_mesh           ? "required (see below)"
                : verb == "from-sdy" ? "the mesh @name refers to (see below)"
                                     : "the mesh (see below)")
        ->type_name("MESH");
    AddOptional(app, "--shape", args.shape,
                verb == "from-spec" ? "the array (rank and validation); default: rank = SPEC's "
                                      "length"
                : verb == "to-spec" ? "the array (rank and validation); default: the sharding's\n"
                                      "tiled rank"
                                    : "the array (rank and validation)")
        ->type_name("SHAPE");
    if (verb == "from-sdy") {
      app.add_option("--manual-axes", args.manual_axes,
                     "the sharding is inside a manual computation over these axes (manual\n"
                     "subgroup, as inside shard_map)")
          ->type_name("A,B")
          ->delimiter(',');
    }
  }
  return command;
}

absl::Status Invalid(absl::string_view message) { return absl::InvalidArgumentError(message); }

// An array shape whose rank matches the data rank of `sharding` (tuples leaf by leaf), to check
// a sharding against a partition count when no shape is given.
Shape ShapeMatching(const HloSharding& sharding) {
  if (sharding.IsTuple()) {
    std::vector<Shape> elements;
    for (const HloSharding& e : sharding.tuple_elements()) elements.push_back(ShapeMatching(e));
    return Shape::Tuple(std::move(elements));
  }
  const absl::Span<const int64_t> tile_dims = sharding.tile_assignment().dims();
  std::vector<int64_t> dims(tile_dims.begin(), tile_dims.begin() + sharding.TiledDataRank());
  return Shape::Array(PrimitiveType::kF32, dims);
}

absl::StatusOr<HloSharding> ParseShardingArg(const std::vector<std::string>& positional) {
  if (positional.empty()) return Invalid("missing the SHARDING argument");
  if (positional.size() > 1) {
    return Invalid(absl::StrCat("expected one SHARDING argument, got ", positional.size(),
                                " (quote the sharding for the shell)"));
  }
  return ParseSharding(positional[0]);
}

// Checks the sharding against --num-partitions when given; returns N (0 when absent).
absl::StatusOr<int64_t> CheckPartitions(const VerbArgs& args, const HloSharding& sharding,
                                        const Shape& shape) {
  const int64_t n = args.num_partitions.value_or(0);
  if (args.num_partitions.has_value() && n <= 0) {
    return Invalid(absl::StrCat("--num-partitions must be positive, not ", n));
  }
  absl::Status valid = sharding.Validate(shape, n);
  if (!valid.ok()) return valid;
  return n;
}

// ------------------------------------------------------------------------ show

// `8:16`, or `9:10 +2 padding` when the device's buffer is longer than its valid range.
std::string RangeText(const ShardRange& range) {
  std::string text = absl::StrCat(range.start, ":", range.limit);
  const int64_t padding = range.padded_size - (range.limit - range.start);
  if (padding > 0) absl::StrAppend(&text, " +", padding, " padding");
  return text;
}

std::string RangesText(const std::vector<ShardRange>& ranges) {
  if (ranges.empty()) return "[] (scalar)";
  std::vector<std::string> parts;
  for (const ShardRange& r : ranges) parts.push_back(RangeText(r));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

std::string WholeText(const Shape& shape) {
  std::vector<ShardRange> ranges;
  for (int64_t d : shape.dimensions()) ranges.push_back({0, d, d});
  return RangesText(ranges);
}

// Text for the subgroup position of a device: `(replica 1 of 2)`, `(manual group 0 of 4)`.
std::string SubgroupText(const HloSharding& sharding, const std::vector<int64_t>& tile_index) {
  const int64_t data_rank = sharding.TiledDataRank();
  const absl::Span<const int64_t> dims = sharding.tile_assignment().dims();
  std::vector<std::string> parts;
  if (sharding.ReplicateOnLastTileDim()) {
    parts.push_back(absl::StrCat("replica ", tile_index.back(), " of ", dims.back()));
  } else {
    const std::vector<SubgroupType>& types = sharding.subgroup_types();
    for (size_t i = 0; i < types.size(); ++i) {
      const size_t dim = static_cast<size_t>(data_rank) + i;
      const std::string what = types[i] == SubgroupType::kReplicated
                                   ? "replica"
                                   : absl::StrCat(SubgroupTypeName(types[i]), " group");
      parts.push_back(absl::StrCat(what, " ", tile_index[dim], " of ", dims[dim]));
    }
  }
  if (parts.empty()) return "";
  return absl::StrCat(" (", absl::StrJoin(parts, ", "), ")");
}

// The ASCII grid of a tiled sharding of rank <= 2: which devices hold each tile.
void PrintGrid(const HloSharding& sharding, const Shape& shape, std::ostream& out) {
  const int64_t rank = shape.rank();
  const TileAssignment& tiles = sharding.tile_assignment();
  const int64_t rows = rank == 2 ? tiles.dim(0) : 1;
  const int64_t cols = rank == 0 ? 1 : tiles.dim(rank - 1);
  constexpr int64_t kMaxRows = 64, kMaxCols = 32;
  if (rows > kMaxRows || cols > kMaxCols) {
    out << "(grid omitted: " << rows << " x " << cols << " tiles)\n";
    return;
  }
  // Devices of each data tile, in row-major tile-assignment order (replicas in order).
  std::vector<std::vector<int64_t>> holders(static_cast<size_t>(rows * cols));
  const int64_t data_rank = sharding.TiledDataRank();
  for (int64_t linear = 0; linear < tiles.num_elements(); ++linear) {
    std::vector<int64_t> index = MultiIndex(tiles.dims(), linear);
    int64_t cell = 0;
    for (int64_t k = 0; k < data_rank; ++k) cell = cell * tiles.dim(k) + index[k];
    holders[static_cast<size_t>(cell)].push_back(tiles.DeviceAtLinear(linear));
  }
  // Range labels of the rows and columns.
  auto label = [&](int64_t dim, int64_t t) {
    const int64_t size = shape.dimensions(dim);
    const int64_t c = (size + tiles.dim(dim) - 1) / tiles.dim(dim);
    return absl::StrCat(std::min(t * c, size), ":", std::min((t + 1) * c, size));
  };
  std::vector<std::string> col_labels(static_cast<size_t>(cols), "");
  std::vector<std::string> row_labels(static_cast<size_t>(rows), "");
  if (rank >= 1) {
    for (int64_t c = 0; c < cols; ++c) col_labels[c] = label(rank - 1, c);
  }
  if (rank == 2) {
    for (int64_t r = 0; r < rows; ++r) row_labels[r] = label(0, r);
  }
  std::vector<std::string> cells(holders.size());
  for (size_t i = 0; i < holders.size(); ++i) cells[i] = absl::StrJoin(holders[i], ",");
  std::vector<size_t> widths(static_cast<size_t>(cols), 0);
  for (int64_t c = 0; c < cols; ++c) {
    widths[c] = col_labels[c].size();
    for (int64_t r = 0; r < rows; ++r) widths[c] = std::max(widths[c], cells[r * cols + c].size());
  }
  size_t label_width = 0;
  for (const std::string& l : row_labels) label_width = std::max(label_width, l.size());
  const std::string indent(label_width + 1, ' ');
  auto pad = [](const std::string& s, size_t width) {
    return s + std::string(width - s.size(), ' ');
  };
  std::string rule = indent + "+";
  for (size_t w : widths) rule += std::string(w + 2, '-') + "+";
  out << "devices holding each tile";
  if (rank == 2) out << " (rows: dim 0, columns: dim 1)";
  if (rank == 1) out << " (columns: dim 0)";
  out << ":\n";
  if (rank >= 1) {
    std::string header = indent + " ";
    for (int64_t c = 0; c < cols; ++c)
      absl::StrAppend(&header, " ", pad(col_labels[c], widths[c]), "  ");
    while (!header.empty() && header.back() == ' ') header.pop_back();
    out << header << "\n";
  }
  out << rule << "\n";
  for (int64_t r = 0; r < rows; ++r) {
    std::string line = pad(row_labels[r], label_width) + " |";
    for (int64_t c = 0; c < cols; ++c)
      absl::StrAppend(&line, " ", pad(cells[r * cols + c], widths[c]), " |");
    out << line << "\n" << rule << "\n";
  }
}

// Shows one array leaf. `n` is the partition count from the flag (0 = not given).
void ShowLeaf(const HloSharding& sharding, const Shape& shape, int64_t n, std::ostream& out) {
  if (!shape.IsArray()) {
    out << "  " << shape.ToString(false) << " holds no data\n";
    return;
  }
  switch (sharding.kind()) {
    case HloSharding::Kind::kReplicated:
      out << "replicated: every device holds the whole array " << WholeText(shape) << "\n";
      if (n == 0) out << "(pass --num-partitions N to list the devices)\n";
      for (int64_t d = 0; d < n; ++d) out << "device " << d << ": " << WholeText(shape) << "\n";
      return;
    case HloSharding::Kind::kMaximal: {
      const int64_t owner = sharding.MaximalDevice();
      out << "maximal: only device " << owner << " holds the array " << WholeText(shape) << "\n";
      for (int64_t d = 0; d < std::max(n, owner + 1); ++d) {
        out << "device " << d << ": " << (d == owner ? WholeText(shape) : "nothing") << "\n";
      }
      return;
    }
    case HloSharding::Kind::kManual:
      out << "manual: the value is already partitioned by hand; each device holds its own "
             "per-device value of shape "
          << shape.ToString(false) << " and there is no global index mapping\n";
      return;
    case HloSharding::Kind::kUnknown:
      out << "unknown: the sharding is not decided yet; nothing to show\n";
      return;
    case HloSharding::Kind::kUnreduced:
      out << "unreduced: every device holds a partial value of the whole array " << WholeText(shape)
          << " awaiting a cross-device reduction\n";
      return;
    case HloSharding::Kind::kTiled:
    case HloSharding::Kind::kTuple:
      break;
  }
  const TileAssignment& tiles = sharding.tile_assignment();
  std::vector<int64_t> data_dims(tiles.dims().begin(),
                                 tiles.dims().begin() + sharding.TiledDataRank());
  const int64_t replicas = tiles.num_elements() / std::max<int64_t>(1, sharding.NumTiles());
  const int64_t devices = n > 0 ? n : std::max(tiles.num_elements(), tiles.DeviceBound());
  out << "tile grid [" << absl::StrJoin(data_dims, ",") << "], " << sharding.NumTiles() << " tiles";
  if (replicas > 1) out << " x " << replicas << " devices each";
  out << ", shard shape " << sharding.TileShape(shape).ToString(false) << ", " << devices
      << " devices\n";
  if (sharding.HasManualSubgroup()) {
    out << "manual subgroups: each manual group holds its own value; ranges are within it\n";
  }
  for (int64_t d = 0; d < devices; ++d) {
    std::optional<std::vector<int64_t>> index = tiles.TileIndexOf(d);
    std::optional<std::vector<ShardRange>> ranges = sharding.RangesForDevice(shape, d);
    out << "device " << d << ": ";
    if (!index.has_value() || !ranges.has_value()) {
      out << "nothing (not in the tile assignment)\n";
      continue;
    }
    out << RangesText(*ranges) << SubgroupText(sharding, *index) << "\n";
  }
  if (shape.rank() <= 2) PrintGrid(sharding, shape, out);
}

absl::StatusOr<Mesh> MeshArg(const VerbArgs& args, bool required);

int RunShow(const VerbArgs& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<HloSharding> sharding = ParseShardingArg(args.positional);
  if (!sharding.ok()) return BadInput(err, kCommand, sharding.status().message());
  const std::optional<std::string>& shape_text = args.shape;
  if (!shape_text.has_value()) {
    return BadInput(err, kCommand, "show needs --shape SHAPE (e.g. --shape f32[16,8])");
  }
  absl::StatusOr<Shape> shape = ParseShape(*shape_text);
  if (!shape.ok()) return BadInput(err, kCommand, shape.status().message());
  absl::StatusOr<int64_t> n = CheckPartitions(args, *sharding, *shape);
  if (!n.ok()) return BadInput(err, kCommand, n.status().message());
  if (args.svg.has_value() || args.html.has_value()) {
    viz::ShardingPictureOptions options;
    options.num_devices = *n;
    if (args.mesh.has_value()) {
      absl::StatusOr<Mesh> mesh = MeshArg(args, true);
      if (!mesh.ok()) return BadInput(err, kCommand, mesh.status().message());
      options.mesh = *std::move(mesh);
    }
    for (const std::optional<std::string>* file : {&args.svg, &args.html}) {
      if (!file->has_value()) continue;
      absl::StatusOr<std::string> picture = file == &args.svg
                                                ? viz::ShardingSvg(*sharding, *shape, options)
                                                : viz::ShardingHtml(*sharding, *shape, options);
      if (!picture.ok()) return BadInput(err, kCommand, picture.status().message());
      absl::Status written = base::WriteFile(**file, *picture);
      if (!written.ok()) return BadInput(err, kCommand, written.message());
    }
  }
  out << "sharding " << sharding->ToString(false) << " on " << shape->ToString(false) << "\n";
  if (!shape->IsTuple()) {
    ShowLeaf(*sharding, *shape, *n, out);
    return kExitHolds;
  }
  // Leaf by leaf; a non-tuple sharding applies to every leaf.
  std::vector<const Shape*> leaves;
  auto collect = [&](auto&& self, const Shape& s) -> void {
    if (!s.IsTuple()) {
      leaves.push_back(&s);
      return;
    }
    for (const Shape& e : s.tuple_shapes()) self(self, e);
  };
  collect(collect, *shape);
  for (size_t i = 0; i < leaves.size(); ++i) {
    const HloSharding& leaf_sharding =
        sharding->IsTuple() ? sharding->tuple_elements()[i] : *sharding;
    out << "\nleaf " << i << ": " << leaves[i]->ToString(false) << " "
        << leaf_sharding.ToString(false) << "\n";
    ShowLeaf(leaf_sharding, *leaves[i], *n, out);
  }
  return kExitHolds;
}

// ---------------------------------------------------------------------- groups

absl::Status CheckDims(const std::vector<int64_t>& dims, int64_t tile_rank) {
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i];
    if (d < 0 || d >= tile_rank) {
      return Invalid(absl::StrCat("--dims: tile dim ", d,
                                  " is out of range; the tile "
                                  "assignment has ",
                                  tile_rank, " dims (0..", tile_rank - 1, ")"));
    }
    if (std::find(dims.begin(), dims.begin() + i, d) != dims.begin() + i) {
      return Invalid(absl::StrCat("--dims lists tile dim ", d, " twice"));
    }
  }
  return absl::OkStatus();
}

int RunGroups(const VerbArgs& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<HloSharding> sharding = ParseShardingArg(args.positional);
  if (!sharding.ok()) return BadInput(err, kCommand, sharding.status().message());
  if (args.dims.empty()) {
    return BadInput(err, kCommand, "groups needs --dims D,D,... (tile dims to group along)");
  }
  if (!sharding->IsTiled()) {
    return BadInput(err, kCommand,
                    absl::StrCat("groups needs a tiled sharding (devices=...), not ",
                                 sharding->ToString(false)));
  }
  absl::Status dims = CheckDims(args.dims, sharding->tile_assignment().num_dimensions());
  if (!dims.ok()) return BadInput(err, kCommand, dims.message());
  ReplicaGroups groups(sharding->GroupsAlongDims(args.dims));
  out << (args.explicit_list ? groups.ToString() : groups.Canonical().ToString()) << "\n";
  return kExitHolds;
}

// ------------------------------------------------------------- notations (spec, sdy)

// --shape when given, and its rank (-1 when absent).
absl::StatusOr<std::optional<Shape>> OptionalShape(const VerbArgs& args) {
  if (!args.shape.has_value()) return std::optional<Shape>();
  absl::StatusOr<Shape> shape = ParseShape(*args.shape);
  if (!shape.ok()) return shape.status();
  if (!shape->IsArray()) return Invalid("--shape must be an array shape, not a tuple");
  return std::optional<Shape>(*std::move(shape));
}

absl::StatusOr<Mesh> MeshArg(const VerbArgs& args, bool required) {
  const std::optional<std::string>& text = args.mesh;
  if (!text.has_value()) {
    if (required) return Invalid("needs --mesh MESH (e.g. --mesh data=2,model=4)");
    return absl::NotFoundError("no --mesh");
  }
  absl::StatusOr<Mesh> mesh = ParseMeshSpec(*text);
  if (!mesh.ok()) return Invalid(absl::StrCat("--mesh: ", mesh.status().message()));
  return mesh;
}

std::string OneArg(const VerbArgs& args) { return args.positional[0]; }

absl::Status CheckOneArg(const VerbArgs& args, absl::string_view what) {
  if (args.positional.size() != 1) {
    return Invalid(absl::StrCat("expected one ", what, " argument, got ", args.positional.size(),
                                " (quote it for the shell)"));
  }
  return absl::OkStatus();
}

int RunFromSpec(const VerbArgs& args, std::ostream& out, std::ostream& err) {
  if (absl::Status s = CheckOneArg(args, "SPEC"); !s.ok())
    return BadInput(err, kCommand, s.message());
  absl::StatusOr<PartitionSpec> spec = ParsePartitionSpec(OneArg(args));
  if (!spec.ok()) return BadInput(err, kCommand, spec.status().message());
  absl::StatusOr<Mesh> mesh = MeshArg(args, true);
  if (!mesh.ok()) return BadInput(err, kCommand, mesh.status().message());
  absl::StatusOr<std::optional<Shape>> shape = OptionalShape(args);
  if (!shape.ok()) return BadInput(err, kCommand, shape.status().message());
  const int64_t rank = shape->has_value() ? (*shape)->rank() : -1;
  absl::StatusOr<HloSharding> sharding = PartitionSpecToSharding(*mesh, *spec, rank);
  if (!sharding.ok()) return BadInput(err, kCommand, sharding.status().message());
  if (shape->has_value()) {
    absl::Status valid = sharding->Validate(**shape, mesh->num_devices());
    if (!valid.ok()) return BadInput(err, kCommand, valid.message());
  }
  out << sharding->Canonical().ToString() << "\n";
  if (spec->HasUnconstrained()) {
    std::vector<int64_t> dims;
    for (size_t d = 0; d < spec->dims.size(); ++d) {
      if (spec->dims[d].unconstrained) dims.push_back(static_cast<int64_t>(d));
    }
    out << "note: P.UNCONSTRAINED dims " << absl::StrJoin(dims, ",")
        << " are left to sharding propagation: XLA writes backend_config=\"unspecified_dims=["
        << absl::StrJoin(dims, ",") << "]\" on the Sharding custom-call; the sharding keeps "
        << "them whole\n";
  }
  return kExitHolds;
}

int RunToSpec(const VerbArgs& args, std::ostream& out, std::ostream& err) {
  if (absl::Status s = CheckOneArg(args, "SHARDING"); !s.ok()) {
    return BadInput(err, kCommand, s.message());
  }
  absl::StatusOr<HloSharding> sharding = ParseSharding(OneArg(args));
  if (!sharding.ok()) return BadInput(err, kCommand, sharding.status().message());
  if (sharding->IsTuple()) return BadInput(err, kCommand, "a tuple sharding: give one leaf");
  absl::StatusOr<Mesh> mesh = MeshArg(args, true);
  if (!mesh.ok()) return BadInput(err, kCommand, mesh.status().message());
  absl::StatusOr<std::optional<Shape>> shape = OptionalShape(args);
  if (!shape.ok()) return BadInput(err, kCommand, shape.status().message());
  if (shape->has_value()) {
    absl::Status valid = sharding->Validate(**shape, 0);
    if (!valid.ok()) return BadInput(err, kCommand, valid.message());
  }
  absl::StatusOr<PartitionSpec> spec =
      ShardingToPartitionSpec(*mesh, *sharding, shape->has_value() ? (*shape)->rank() : -1);
  if (!spec.ok()) {
    out << "no PartitionSpec: " << spec.status().message() << "\n";
    return kExitFails;
  }
  out << spec->ToString() << "\n";
  return kExitHolds;
}

std::vector<std::string> AxisNames(const VerbArgs& args) {
  std::vector<std::string> names;
  for (const std::string& name : args.manual_axes) {
    if (!name.empty()) names.emplace_back(absl::StripAsciiWhitespace(name));
  }
  return names;
}

int RunFromSdy(const VerbArgs& args, std::ostream& out, std::ostream& err) {
  if (absl::Status s = CheckOneArg(args, "SDY"); !s.ok())
    return BadInput(err, kCommand, s.message());
  absl::StatusOr<SdySharding> sdy = ParseSdySharding(OneArg(args));
  if (!sdy.ok()) return BadInput(err, kCommand, sdy.status().message());
  SdyMesh mesh;
  if (args.mesh.has_value()) {
    const std::string text = *args.mesh;
    absl::StatusOr<SdyMesh> parsed = ParseSdyMesh(text);
    if (!parsed.ok()) {
      absl::StatusOr<Mesh> plain = MeshArg(args, true);
      if (!plain.ok()) return BadInput(err, kCommand, plain.status().message());
      parsed = SdyMesh::FromMesh(*plain);
    }
    mesh = *std::move(parsed);
  } else if (!sdy->inline_mesh.has_value()) {
    return BadInput(err, kCommand,
                    absl::StrCat("the sharding refers to @", sdy->mesh_name,
                                 ": give that mesh with --mesh (e.g. --mesh '<[\"data\"=2, "
                                 "\"model\"=4]>' or --mesh data=2,model=4)"));
  }
  absl::StatusOr<HloSharding> sharding = SdyToHloSharding(*sdy, mesh, AxisNames(args));
  if (!sharding.ok()) return BadInput(err, kCommand, sharding.status().message());
  absl::StatusOr<std::optional<Shape>> shape = OptionalShape(args);
  if (!shape.ok()) return BadInput(err, kCommand, shape.status().message());
  if (shape->has_value()) {
    if ((*shape)->rank() != static_cast<int64_t>(sdy->dims.size())) {
      return BadInput(err, kCommand,
                      absl::StrCat("the sharding has ", sdy->dims.size(), " dims, the shape ",
                                   (*shape)->ToString(false), " has rank ", (*shape)->rank()));
    }
    absl::Status valid = sharding->Validate(**shape, 0);
    if (!valid.ok()) return BadInput(err, kCommand, valid.message());
  }
  out << sharding->Canonical().ToString() << "\n";
  if (sdy->HasPropagationHints()) {
    out << "note: open dims (?) and priorities guide Shardy's propagation; they do not change "
           "where tiles live\n";
  }
  return kExitHolds;
}

int RunToSdy(const VerbArgs& args, std::ostream& out, std::ostream& err) {
  if (absl::Status s = CheckOneArg(args, "SHARDING"); !s.ok()) {
    return BadInput(err, kCommand, s.message());
  }
  absl::StatusOr<HloSharding> sharding = ParseSharding(OneArg(args));
  if (!sharding.ok()) return BadInput(err, kCommand, sharding.status().message());
  if (sharding->IsTuple()) return BadInput(err, kCommand, "a tuple sharding: give one leaf");
  absl::StatusOr<std::optional<Shape>> shape = OptionalShape(args);
  if (!shape.ok()) return BadInput(err, kCommand, shape.status().message());
  if (shape->has_value()) {
    absl::Status valid = sharding->Validate(**shape, 0);
    if (!valid.ok()) return BadInput(err, kCommand, valid.message());
  }
  const int64_t rank = shape->has_value()    ? (*shape)->rank()
                       : sharding->IsTiled() ? sharding->TiledDataRank()
                                             : 0;
  SdyMesh mesh;
  std::string mesh_name = "mesh";
  if (args.mesh.has_value()) {
    absl::StatusOr<SdyMesh> parsed = ParseSdyMesh(*args.mesh, &mesh_name);
    if (!parsed.ok()) {
      absl::StatusOr<Mesh> plain = MeshArg(args, true);
      if (!plain.ok()) return BadInput(err, kCommand, plain.status().message());
      parsed = SdyMesh::FromMesh(*plain);
    }
    mesh = *std::move(parsed);
  } else if (sharding->IsMaximal()) {
    mesh.device_ids = {sharding->MaximalDevice()};
    mesh_name = absl::StrCat("maximal_mesh_", sharding->MaximalDevice());
  } else {
    mesh = SdyMesh::FromMesh(MeshForSharding(*sharding, 1));
  }
  absl::StatusOr<SdySharding> sdy = HloToSdySharding(*sharding, mesh, rank, mesh_name);
  if (!sdy.ok()) {
    out << "no Shardy sharding: " << sdy.status().message() << "\n";
    return kExitFails;
  }
  out << "sdy.mesh @" << mesh_name << " = " << mesh.ToString() << "\n" << sdy->ToString() << "\n";
  return kExitHolds;
}
}  // namespace

int RunSharding(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  if (argv.empty()) {
    err << kShardingHelp;
    return kExitBadInput;
  }
  const std::string& verb = argv[0];
  if (verb == "--help" || verb == "-h" || verb == "help") {
    out << kShardingHelp;
    return kExitHolds;
  }
  VerbArgs args;
  std::unique_ptr<Command> command = VerbCommand(verb, args);
  if (command == nullptr) {
    BadInput(err, kCommand,
             absl::StrCat("unknown verb '", verb,
                          "' (expected expand, canon, show, groups, from-spec, to-spec, "
                          "from-sdy or to-sdy)"));
    err << kShardingHelp;
    return kExitBadInput;
  }
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (std::optional<int> done = command->Parse(rest, out, err)) return *done;
  if (verb == "from-spec") return RunFromSpec(args, out, err);
  if (verb == "to-spec") return RunToSpec(args, out, err);
  if (verb == "from-sdy") return RunFromSdy(args, out, err);
  if (verb == "to-sdy") return RunToSdy(args, out, err);
  if (verb == "show") return RunShow(args, out, err);
  if (verb == "groups") return RunGroups(args, out, err);
  absl::StatusOr<HloSharding> sharding = ParseShardingArg(args.positional);
  if (!sharding.ok()) return BadInput(err, kCommand, sharding.status().message());
  absl::StatusOr<int64_t> n = CheckPartitions(args, *sharding, ShapeMatching(*sharding));
  if (!n.ok()) return BadInput(err, kCommand, n.status().message());
  const HloSharding result = verb == "expand" ? sharding->Expanded() : sharding->Canonical();
  out << result.ToString() << "\n";
  return kExitHolds;
}

}  // namespace spmdcheck::cli
