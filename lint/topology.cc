#include "lint/topology.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "ir/hlo_parser.h"
#include "ir/replica_groups.h"

namespace spmdcheck::lint {
namespace {

absl::Status Invalid(absl::string_view spec, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("--topology '", spec, "': ", why,
                   " (expected nodes=K or {{ids},{ids},...}, optionally followed by ,cross=F)"));
}

}  // namespace

absl::StatusOr<Topology> ParseTopology(absl::string_view spec, int64_t num_partitions) {
  Topology topology;
  topology.spec = std::string(spec);
  if (num_partitions <= 0) return Invalid(spec, "the partition count is unknown");
  absl::string_view rest = spec;
  // A trailing `,cross=F`.
  const size_t cross_at = rest.rfind(",cross=");
  if (cross_at != absl::string_view::npos) {
    absl::string_view factor = rest.substr(cross_at + 7);
    if (!absl::SimpleAtoi(factor, &topology.cross_factor) || topology.cross_factor < 1) {
      return Invalid(spec, "cross= needs an integer >= 1");
    }
    rest = rest.substr(0, cross_at);
  }
  topology.domain_of.assign(num_partitions, -1);
  if (absl::ConsumePrefix(&rest, "nodes=")) {
    int64_t per_node = 0;
    if (!absl::SimpleAtoi(rest, &per_node) || per_node < 1) {
      return Invalid(spec, "nodes= needs a positive integer (partitions per node)");
    }
    if (num_partitions % per_node != 0) {
      return Invalid(
          spec, absl::StrCat(num_partitions, " partitions do not split into nodes of ", per_node));
    }
    for (int64_t d = 0; d < num_partitions; ++d) topology.domain_of[d] = d / per_node;
    return topology;
  }
  if (!absl::StartsWith(rest, "{")) return Invalid(spec, "unrecognised form");
  absl::StatusOr<ReplicaGroups> groups = ParseReplicaGroups(rest);
  if (!groups.ok()) return Invalid(spec, groups.status().message());
  int64_t domain = 0;
  for (const std::vector<int64_t>& group : groups->groups()) {
    for (int64_t d : group) {
      if (d < 0 || d >= num_partitions) {
        return Invalid(spec,
                       absl::StrCat("partition ", d, " is out of range [0, ", num_partitions, ")"));
      }
      if (topology.domain_of[d] != -1) {
        return Invalid(spec, absl::StrCat("partition ", d, " is in two domains"));
      }
      topology.domain_of[d] = domain;
    }
    ++domain;
  }
  for (int64_t d = 0; d < num_partitions; ++d) {
    if (topology.domain_of[d] == -1) {
      return Invalid(spec, absl::StrCat("partition ", d, " is in no domain"));
    }
  }
  return topology;
}

}  // namespace spmdcheck::lint
