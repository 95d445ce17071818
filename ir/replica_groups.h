// Replica groups of a collective (`{{0,1},{2,3}}` or the iota form `[2,4]<=[4,2]T(1,0)`) and the
// source-target pairs of a collective-permute.
#ifndef SPMDCHECK_IR_REPLICA_GROUPS_H_
#define SPMDCHECK_IR_REPLICA_GROUPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "ir/tile_assignment.h"

namespace spmdcheck {

class ReplicaGroups {
 public:
  ReplicaGroups() = default;  // Empty list: "all participants".
  explicit ReplicaGroups(std::vector<std::vector<int64_t>> groups);
  // Iota form: row g of the [num_groups, group_size] iota array is group g.
  explicit ReplicaGroups(IotaTileAssignment iota);

  bool empty() const { return num_groups() == 0; }
  bool is_iota() const { return iota_.has_value(); }
  const std::optional<IotaTileAssignment>& iota() const { return iota_; }
  int64_t num_groups() const;
  // Group g, materialised (cheap for explicit lists).
  std::vector<int64_t> group(int64_t g) const;
  std::vector<std::vector<int64_t>> groups() const;
  // Size of group 0, or 0 when empty.
  int64_t first_group_size() const;
  bool UniformSize() const;
  // Number of distinct ids over all groups (with multiplicity: the total entry count).
  int64_t TotalEntries() const;

  // `{{0,1},{2,3}}` (XLA prints no spaces) or `[2,4]<=[4,2]T(1,0)`.
  std::string ToString() const;
  // The same groups in iota form when they are one.
  ReplicaGroups Canonical() const;

  // Same groups in the same order (forms ignored).
  bool operator==(const ReplicaGroups& other) const;

 private:
  std::vector<std::vector<int64_t>> explicit_groups_;
  std::optional<IotaTileAssignment> iota_;
};

// Checks groups for an op: no empty group, no id twice, ids exactly {0..n-1}, n equal to
// `expected_participants` when that is > 1, and equal sizes when `require_uniform`.
absl::Status ValidateReplicaGroups(const ReplicaGroups& groups, int64_t expected_participants,
                                   bool require_uniform);

using SourceTargetPairs = std::vector<std::pair<int64_t, int64_t>>;
std::string SourceTargetPairsToString(const SourceTargetPairs& pairs);
// Each source and each target at most once, all in [0, limit) when limit > 1.
absl::Status ValidateSourceTargetPairs(const SourceTargetPairs& pairs, int64_t limit);

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_REPLICA_GROUPS_H_
