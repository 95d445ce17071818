#include "lint/jax_hint.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "lint/search.h"

namespace spmdcheck::lint {
namespace {

// `name=size` pairs from `list` (quotes and spaces already removed).
absl::StatusOr<Mesh> MeshFromPairs(absl::string_view list) {
  std::vector<MeshAxis> axes;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> kv = absl::StrSplit(part, '=');
    MeshAxis axis;
    if (kv.size() != 2 || kv[0].empty() || !absl::SimpleAtoi(kv[1], &axis.size) || axis.size <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a mesh is NAME=SIZE,NAME=SIZE,... (e.g. data=2,model=4), not '", list, "'"));
    }
    axis.name = std::string(kv[0]);
    axes.push_back(std::move(axis));
  }
  if (axes.empty()) return absl::InvalidArgumentError("the mesh has no axes");
  return Mesh::Create(std::move(axes));
}

std::string Quoted(const std::string& name) { return absl::StrCat("'", name, "'"); }

}  // namespace

absl::StatusOr<Mesh> ParseMeshFlag(absl::string_view text) { return MeshFromPairs(text); }

std::optional<Mesh> MeshFromModuleText(absl::string_view text, int64_t num_partitions) {
  // mesh['a'=2,'b'=4] or sdy.mesh<["a"=2, "b"=4]> (quotes possibly escaped in attributes).
  static const std::regex kMesh(R"re((?:\bmesh\[|sdy\.mesh<\[)([^\]]*)\])re");
  const std::string s(text);
  for (auto it = std::sregex_iterator(s.begin(), s.end(), kMesh); it != std::sregex_iterator();
       ++it) {
    std::string list = (*it)[1].str();
    list.erase(
        std::remove_if(list.begin(), list.end(),
                       [](char c) { return c == '\'' || c == '"' || c == '\\' || c == ' '; }),
        list.end());
    absl::StatusOr<Mesh> mesh = MeshFromPairs(list);
    if (mesh.ok() && mesh->num_devices() == num_partitions) return *std::move(mesh);
  }
  return std::nullopt;
}

std::optional<std::string> PartitionSpecFor(const HloSharding& sharding, int64_t rank,
                                            const Mesh& mesh) {
  const int64_t n = mesh.num_devices();
  const int64_t axes = static_cast<int64_t>(mesh.axes().size());
  // place[a] = the dim axis a splits, or rank (unused); the order within a dim is tried too.
  std::vector<int64_t> place(axes, rank);
  std::optional<std::string> found;
  std::function<void(int64_t)> assign = [&](int64_t a) {
    if (found.has_value()) return;
    if (a == axes) {
      std::vector<std::vector<int64_t>> on(rank);
      for (int64_t k = 0; k < axes; ++k) {
        if (place[k] < rank) on[place[k]].push_back(k);
      }
      // Every order of the axes within each dim.
      std::function<void(int64_t)> orders = [&](int64_t dim) {
        if (found.has_value()) return;
        if (dim == rank) {
          std::vector<std::vector<std::string>> names(rank);
          for (int64_t d = 0; d < rank; ++d) {
            for (int64_t k : on[d]) names[d].push_back(mesh.axes()[k].name);
          }
          absl::StatusOr<HloSharding> candidate = mesh.ShardingFor(names);
          if (!candidate.ok() || !SameLayout(*candidate, sharding, rank, n)) return;
          std::vector<std::string> parts;
          for (const std::vector<std::string>& dim_names : names) {
            if (dim_names.empty()) {
              parts.push_back("None");
            } else if (dim_names.size() == 1) {
              parts.push_back(Quoted(dim_names[0]));
            } else {
              std::vector<std::string> quoted;
              for (const std::string& name : dim_names) quoted.push_back(Quoted(name));
              parts.push_back(absl::StrCat("(", absl::StrJoin(quoted, ", "), ")"));
            }
          }
          found = absl::StrCat("P(", absl::StrJoin(parts, ", "), ")");
          return;
        }
        std::sort(on[dim].begin(), on[dim].end());
        do {
          orders(dim + 1);
        } while (!found.has_value() && std::next_permutation(on[dim].begin(), on[dim].end()));
      };
      orders(0);
      return;
    }
    for (int64_t d = 0; d <= rank; ++d) {
      place[a] = d;
      assign(a + 1);
    }
  };
  assign(0);
  return found;
}

std::string JaxConstraint(absl::string_view value, absl::string_view spec) {
  return absl::StrCat("jax.lax.with_sharding_constraint(", value, ", NamedSharding(mesh, ", spec,
                      "))");
}

}  // namespace spmdcheck::lint
