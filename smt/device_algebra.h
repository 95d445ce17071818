// Z3 proofs about device-id algebra: that a sharding's tile assignment is a bijection onto the
// devices, that two shardings place every tile on the same device, that replica groups are the
// ones a sharding implies, and that collective-permute pairs move every tile where it belongs.
// Iota tile assignments are encoded symbolically (never expanded); explicit lists as tables.
#ifndef SPMDCHECK_SMT_DEVICE_ALGEBRA_H_
#define SPMDCHECK_SMT_DEVICE_ALGEBRA_H_

#include <cstdint>

#include "absl/types/span.h"
#include "ir/replica_groups.h"
#include "ir/sharding.h"
#include "smt/proof_result.h"

namespace spmdcheck::smt {

inline constexpr int64_t kDefaultTimeoutMs = 10000;

// Every device in [0, num_devices) holds exactly one tile position of the tile assignment (data
// tile per replica) and no position is on a device outside that range. num_devices == 0 means
// the number of tile positions. Tuples are checked element by element; replicated, manual,
// unknown and unreduced shardings hold trivially; {maximal device=D} holds iff D is in range.
ProofResult ProveSharding(const HloSharding& sharding, int64_t num_devices,
                          int64_t timeout_ms = kDefaultTimeoutMs);

// Same kind, same tile dims and subgroup structure, and the same device at every tile position.
ProofResult ProveSame(const HloSharding& a, const HloSharding& b,
                      int64_t timeout_ms = kDefaultTimeoutMs);

// `groups` equals sharding.GroupsAlongDims(dims): same groups, same order, same member order.
ProofResult ProveGroups(const HloSharding& sharding, absl::Span<const int64_t> dims,
                        const ReplicaGroups& groups, int64_t timeout_ms = kDefaultTimeoutMs);

// For every device t holding a tile under `to`, some pair targets t and its source holds, under
// `from`, the data tile t holds under `to`. Needs both shardings tiled with the same data tile
// grid and distinct devices (else unknown); `pairs` must have distinct targets.
ProofResult ProvePairs(const HloSharding& from, const HloSharding& to,
                       const SourceTargetPairs& pairs, int64_t timeout_ms = kDefaultTimeoutMs);

}  // namespace spmdcheck::smt

#endif  // SPMDCHECK_SMT_DEVICE_ALGEBRA_H_
