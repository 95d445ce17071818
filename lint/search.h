// The intermediate-sharding search: the global meaning of a chain as a small global module, the
// candidate shardings of each of its values, and a dynamic program over them (each transition
// priced by partitioning one global op with a planner, partitioner/planner.h: the reference
// partitioner's unless another is given, and the cost model).
#ifndef SPMDCHECK_LINT_SEARCH_H_
#define SPMDCHECK_LINT_SEARCH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/cost_model.h"
#include "ir/hlo_module.h"
#include "ir/sharding.h"
#include "partitioner/planner.h"

namespace spmdcheck::lint {

// One value of a chain's global meaning.
struct GlobalValue {
  std::string name;  // In the global chain module.
  // The op computing this value from the previous one, without sharding (its own operands are
  // not used: the chain's modules pass it the previous value); empty for the input.
  std::optional<HloInstruction> op;
  Shape shape;
  std::optional<HloSharding> current;  // What the linted module gives it, when it says.
  std::string holder;                  // The linted instruction that holds it (may be empty).
  // An entry parameter, the entry result or a user's sharding constraint: the search keeps
  // `current` (a proposal that changes it is no finding).
  bool fixed = false;
};

struct GlobalChain {
  std::vector<GlobalValue> values;  // values[0] is the chain's input, values.back() its end.
  std::string text;                 // Human-readable meaning.
};

// Device mesh the candidate shardings are built on (axis sizes, device id row-major): the reshape
// dims of the first iota sharding in `seen` (in order of preference) that has more than one,
// else the prime factors of the partition count.
std::vector<int64_t> InferMesh(const std::vector<HloSharding>& seen, int64_t num_partitions);

// Every tiling of `shape` that puts each mesh axis on a dim it divides or on replication (mesh
// order within a dim), plus `extra` shardings that fit the rank. Deduplicated.
std::vector<HloSharding> CandidateShardings(const Shape& shape, const std::vector<int64_t>& mesh,
                                            int64_t num_partitions,
                                            const std::vector<HloSharding>& extra);

// True when both shardings place every device on the same tile (whatever their spelling).
bool SameLayout(const HloSharding& a, const HloSharding& b, int64_t rank, int64_t num_partitions);

struct SearchResult {
  std::vector<HloSharding> shardings;      // One per value.
  std::unique_ptr<HloModule> partitioned;  // The partitioner's output for those shardings.
  analysis::CollectiveCost cost;           // Flat.
  analysis::CollectiveCost weighted;       // With the topology (same as flat without one).
  int64_t transitions_priced = 0;
  // The value whose sharding to change (a sharding-constraint hint): of the values whose chosen
  // sharding differs from `current`, the first at which the current shardings reshard (its
  // current sharding is not what its op computes locally from the previous value's).
  std::optional<size_t> cause;
};

// The cheapest assignment of shardings to the chain's values, the input's and the end's fixed (and
// each value marked `fixed` held at its current sharding),
// under `weights` (may be null): a dynamic program over candidate shardings per value in which
// every global op runs locally on its operand's sharding and any value may then be resharded
// (priced by the planner).
absl::StatusOr<SearchResult> SearchShardings(
    const GlobalChain& chain, const HloSharding& input_sharding, const HloSharding& end_sharding,
    const std::vector<int64_t>& mesh, int64_t num_partitions,
    const analysis::DomainWeights* weights,
    const partitioner::Planner& planner = partitioner::ReferencePlanner());

// The sharding of `op`'s result (a copy, slice, reshape, transpose or broadcast) computed
// locally from its operand under `operand`, or nullopt when it cannot be.
std::optional<HloSharding> LocalResultSharding(const HloInstruction& op, const HloSharding& operand,
                                               int64_t num_partitions);

// Partitions the chain's global module with value i computed under computed[i] and resharded
// (by an explicit copy) to held[i] where they differ.
absl::StatusOr<std::unique_ptr<HloModule>> PartitionPlannedChain(
    const GlobalChain& chain, const std::vector<HloSharding>& computed,
    const std::vector<HloSharding>& held, int64_t num_partitions,
    const partitioner::Planner& planner = partitioner::ReferencePlanner());

// Partitions the chain's global module with the given shardings.
absl::StatusOr<std::unique_ptr<HloModule>> PartitionGlobalChain(
    const GlobalChain& chain, const std::vector<HloSharding>& shardings, int64_t num_partitions,
    const partitioner::Planner& planner = partitioner::ReferencePlanner());

}  // namespace spmdcheck::lint

#endif  // SPMDCHECK_LINT_SEARCH_H_
