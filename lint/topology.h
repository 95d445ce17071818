// Which partitions share a fast interconnect domain (a host's NVLink island, a TPU slice) and how
// much more a byte costs when it crosses domains. `--topology nodes=8` puts ids 8k..8k+7 in one
// domain; `--topology {{0,1,2,3},{4,5,6,7}}` lists the domains; `,cross=K` (default 8) sets the
// factor a crossing byte is charged.
#ifndef SPMDCHECK_LINT_TOPOLOGY_H_
#define SPMDCHECK_LINT_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/cost_model.h"

namespace spmdcheck::lint {

struct Topology {
  std::string spec;                // As given.
  std::vector<int64_t> domain_of;  // Per partition id.
  int64_t cross_factor = 8;
  analysis::DomainWeights Weights() const { return {domain_of, cross_factor}; }
};

// Parses `nodes=K[,cross=F]` or `{{ids},{ids},...}[,cross=F]` for `num_partitions` partitions;
// every id must be in exactly one domain.
absl::StatusOr<Topology> ParseTopology(absl::string_view spec, int64_t num_partitions);

}  // namespace spmdcheck::lint

#endif  // SPMDCHECK_LINT_TOPOLOGY_H_
