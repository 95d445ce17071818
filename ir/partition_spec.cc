#include "ir/partition_spec.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "ir/hlo_parser.h"
#include "ir/lexer.h"
#include "ir/sdy_sharding.h"

namespace spmdcheck {
namespace {

absl::Status Invalid(absl::string_view message) { return absl::InvalidArgumentError(message); }

absl::Status ErrorAt(const Lexer& lexer, absl::string_view message) {
  return Invalid(absl::StrCat("<input>:1:", lexer.pos() + 1, ": error: ", message));
}

absl::StatusOr<std::string> ReadAxisName(Lexer& in) {
  const char c = in.Peek();
  if (c != '\'' && c != '"') return ErrorAt(in, "expected a quoted mesh axis name like 'data'");
  return in.ConsumeString();
}

bool IsUnconstrained(absl::string_view word) {
  return word == "P.UNCONSTRAINED" || word == "PartitionSpec.UNCONSTRAINED" ||
         word == "UNCONSTRAINED" || word == "jax.P.UNCONSTRAINED" ||
         word == "jax.sharding.PartitionSpec.UNCONSTRAINED";
}

std::string Quoted(const std::string& name) { return absl::StrCat("'", name, "'"); }

}  // namespace

bool PartitionSpec::HasUnconstrained() const {
  return std::any_of(dims.begin(), dims.end(), [](const Dim& d) { return d.unconstrained; });
}

std::string PartitionSpec::ToString() const {
  std::vector<std::string> parts;
  for (const Dim& dim : dims) {
    if (dim.unconstrained) {
      parts.push_back("P.UNCONSTRAINED");
    } else if (dim.axes.empty()) {
      parts.push_back("None");
    } else if (dim.axes.size() == 1) {
      parts.push_back(Quoted(dim.axes[0]));
    } else {
      std::vector<std::string> names;
      for (const std::string& axis : dim.axes) names.push_back(Quoted(axis));
      parts.push_back(absl::StrCat("(", absl::StrJoin(names, ", "), ")"));
    }
  }
  if (!unreduced.empty()) {
    std::vector<std::string> names;
    for (const std::string& axis : unreduced) names.push_back(Quoted(axis));
    parts.push_back(absl::StrCat("unreduced={", absl::StrJoin(names, ", "), "}"));
  }
  return absl::StrCat("P(", absl::StrJoin(parts, ", "), ")");
}

absl::StatusOr<PartitionSpec> ParsePartitionSpec(absl::string_view text) {
  Lexer in(text);
  absl::string_view head = in.ConsumeIdentifier();
  if (head != "P" && head != "PartitionSpec" && head != "jax.P" &&
      head != "jax.sharding.PartitionSpec") {
    return ErrorAt(in, "expected P(...) or PartitionSpec(...)");
  }
  if (!in.TryConsume('(')) return ErrorAt(in, "expected '('");
  PartitionSpec spec;
  while (!in.TryConsume(')')) {
    PartitionSpec::Dim dim;
    const char c = in.Peek();
    if (c == '(') {
      in.TryConsume('(');
      while (!in.TryConsume(')')) {
        absl::StatusOr<std::string> name = ReadAxisName(in);
        if (!name.ok()) return name.status();
        dim.axes.push_back(*std::move(name));
        if (!in.TryConsume(',') && in.Peek() != ')') return ErrorAt(in, "expected ',' or ')'");
      }
    } else if (c == '\'' || c == '"') {
      absl::StatusOr<std::string> name = ReadAxisName(in);
      if (!name.ok()) return name.status();
      dim.axes.push_back(*std::move(name));
    } else {
      const size_t at = in.pos();
      absl::string_view word = in.ConsumeIdentifier();
      if (word == "unreduced") {
        if (!in.TryConsume('=') || !in.TryConsume('{')) {
          return ErrorAt(in, "expected unreduced={'axis', ...}");
        }
        while (!in.TryConsume('}')) {
          absl::StatusOr<std::string> name = ReadAxisName(in);
          if (!name.ok()) return name.status();
          spec.unreduced.push_back(*std::move(name));
          if (!in.TryConsume(',') && in.Peek() != '}') return ErrorAt(in, "expected ',' or '}'");
        }
        if (!in.TryConsume(',') && in.Peek() != ')') return ErrorAt(in, "expected ')'");
        continue;
      }
      if (IsUnconstrained(word)) {
        dim.unconstrained = true;
      } else if (word != "None") {
        in.set_pos(at);
        return ErrorAt(in,
                       "expected None, 'axis', ('axis', ...) or P.UNCONSTRAINED in a "
                       "PartitionSpec");
      }
    }
    spec.dims.push_back(std::move(dim));
    if (!in.TryConsume(',') && in.Peek() != ')') return ErrorAt(in, "expected ',' or ')'");
  }
  if (!in.AtEnd()) return ErrorAt(in, "unexpected text after the PartitionSpec");
  return spec;
}

absl::StatusOr<Mesh> ParseMeshSpec(absl::string_view text) {
  absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (absl::StartsWith(trimmed, "<") || absl::StartsWith(trimmed, "#sdy.mesh") ||
      absl::StartsWith(trimmed, "mesh<") || absl::StartsWith(trimmed, "sdy.mesh")) {
    absl::StatusOr<SdyMesh> sdy = ParseSdyMesh(trimmed);
    if (!sdy.ok()) return sdy.status();
    if (sdy->IsMaximal()) {
      return Invalid("a mesh without axes holds one device: it has no PartitionSpec layouts");
    }
    return sdy->ToMesh();
  }
  Lexer in(trimmed);
  const bool bracketed = in.TryConsume("mesh[");
  std::vector<MeshAxis> axes;
  do {
    absl::string_view name = in.ConsumeIdentifier();
    if (name.empty() || name == "devices") return ErrorAt(in, "expected an axis like data=2");
    if (!in.TryConsume('=')) return ErrorAt(in, "expected '=' after the axis name");
    std::optional<int64_t> size = in.ConsumeInt();
    if (!size.has_value() || *size < 1) return ErrorAt(in, "expected a positive axis size");
    axes.push_back({std::string(name), *size});
  } while (in.TryConsume(','));
  if (bracketed && !in.TryConsume(']')) return ErrorAt(in, "expected ']'");
  std::optional<TileAssignment> devices;
  if (in.TryConsume("devices=")) {
    const size_t at = in.pos();
    absl::StatusOr<HloSharding> parsed =
        ParseSharding(absl::StrCat("{devices=", trimmed.substr(at), "}"));
    if (!parsed.ok()) {
      return Invalid(
          absl::StrCat("mesh devices=", trimmed.substr(at), ": ", parsed.status().message()));
    }
    TileAssignment tiles =
        parsed->IsMaximal() ? TileAssignment() : parsed->tile_assignment();  // [1] -> maximal.
    std::vector<int64_t> sizes;
    for (const MeshAxis& axis : axes) sizes.push_back(axis.size);
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    if (tiles.num_elements() != n) {
      return Invalid(
          absl::StrCat("the mesh has ", n, " devices, devices= lists ", tiles.num_elements()));
    }
    devices = tiles.Reshape(sizes);
  } else if (!in.AtEnd()) {
    return ErrorAt(in, "expected ',' or ' devices=...' after the mesh axes");
  }
  return Mesh::Create(std::move(axes), std::move(devices));
}

absl::StatusOr<HloSharding> PartitionSpecToSharding(const Mesh& mesh, const PartitionSpec& spec,
                                                    int64_t rank) {
  const int64_t spec_rank = static_cast<int64_t>(spec.dims.size());
  if (rank < 0) rank = spec_rank;
  if (spec_rank > rank) {
    return Invalid(absl::StrCat(spec.ToString(), " has ", spec_rank, " entries, the array only ",
                                rank, " dims"));
  }
  AxisLayout layout;
  layout.dims.resize(static_cast<size_t>(rank));
  auto resolve = [&](const std::string& name) -> absl::StatusOr<MeshAxisRef> {
    std::optional<int64_t> index = mesh.AxisIndex(name);
    if (!index.has_value()) {
      return Invalid(absl::StrCat("no mesh axis ", Quoted(name), " in ", mesh.ToString()));
    }
    return MeshAxisRef{*index, 1, 0};
  };
  for (int64_t d = 0; d < spec_rank; ++d) {
    for (const std::string& name : spec.dims[d].axes) {
      absl::StatusOr<MeshAxisRef> ref = resolve(name);
      if (!ref.ok()) return ref.status();
      layout.dims[d].push_back(*ref);
    }
  }
  for (const std::string& name : spec.unreduced) {
    absl::StatusOr<MeshAxisRef> ref = resolve(name);
    if (!ref.ok()) return ref.status();
    layout.unreduced.push_back(*ref);
  }
  absl::StatusOr<HloSharding> sharding = LayoutToHloSharding(mesh, layout);
  if (!sharding.ok()) {
    return Invalid(absl::StrCat(spec.ToString(), ": ", sharding.status().message()));
  }
  return sharding;
}

absl::StatusOr<PartitionSpec> ShardingToPartitionSpec(const Mesh& mesh, const HloSharding& sharding,
                                                      int64_t rank) {
  if (sharding.IsManual() || sharding.HasManualSubgroup()) {
    return Invalid(absl::StrCat(sharding.ToString(false),
                                " is manual: JAX writes that as a shard_map over the manual axes "
                                "(in_specs/out_specs), not as a PartitionSpec"));
  }
  if (rank < 0) rank = sharding.IsTiled() ? sharding.TiledDataRank() : 0;
  absl::StatusOr<AxisLayout> layout = HloShardingToLayout(mesh, sharding, rank);
  if (!layout.ok()) return layout.status();
  PartitionSpec spec;
  auto name = [&](const MeshAxisRef& ref) -> absl::StatusOr<std::string> {
    const std::string& axis = mesh.axes()[ref.axis].name;
    if (ref.size != 0) {
      return Invalid(absl::StrCat(sharding.ToString(false), " over ", mesh.ToString(),
                                  " splits mesh axis ", Quoted(axis), " (it needs the sub-axis \"",
                                  axis, "\":(", ref.pre_size, ")", ref.size,
                                  "): a PartitionSpec names whole axes only; Shardy can say it "
                                  "(spmdcheck sharding to-sdy)"));
    }
    return axis;
  };
  for (const std::vector<MeshAxisRef>& refs : layout->dims) {
    PartitionSpec::Dim dim;
    for (const MeshAxisRef& ref : refs) {
      absl::StatusOr<std::string> axis = name(ref);
      if (!axis.ok()) return axis.status();
      dim.axes.push_back(*std::move(axis));
    }
    spec.dims.push_back(std::move(dim));
  }
  for (const MeshAxisRef& ref : layout->unreduced) {
    absl::StatusOr<std::string> axis = name(ref);
    if (!axis.ok()) return axis.status();
    spec.unreduced.push_back(*std::move(axis));
  }
  return spec;
}

}  // namespace spmdcheck
