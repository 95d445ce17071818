// Proofs about device-id algebra: that a sharding's tile assignment is a bijection onto the
// devices, that two shardings place every tile on the same device, that replica groups are the
// ones a sharding implies, and that collective-permute pairs move every tile where it belongs.
// Two procedures decide them: direct enumeration of every tile position (the device count is
// concrete, so this is exact; linear in the devices) and Z3 (iota tile assignments encoded
// symbolically, never expanded; explicit lists as tables). `kAuto` enumerates up to
// kMaxEnumeratedPositions tile positions and asks Z3 beyond; `kBoth` runs both, checks that they
// agree and records both times. ProofResult::procedure says which decided.
#ifndef SPMDCHECK_SMT_DEVICE_ALGEBRA_H_
#define SPMDCHECK_SMT_DEVICE_ALGEBRA_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/replica_groups.h"
#include "ir/sharding.h"
#include "smt/proof_result.h"

namespace spmdcheck::smt {

inline constexpr int64_t kDefaultTimeoutMs = 10000;

// Above this many tile positions (or group entries, or pairs), kAuto asks Z3 instead of
// enumerating.
inline constexpr int64_t kMaxEnumeratedPositions = int64_t{1} << 24;

enum class Procedure {
  kAuto,       // Enumeration when it is small enough (always, for real device counts), else Z3.
  kEnumerate,  // Direct enumeration only.
  kZ3,         // Z3 only.
  kBoth,       // Both; the verdicts must agree (else unknown), both times recorded.
};

// `auto`, `enumerate`, `z3`, `both`; nullopt for anything else.
std::optional<Procedure> ParseProcedure(absl::string_view text);

struct FactOptions {
  int64_t timeout_ms = kDefaultTimeoutMs;  // Per Z3 query.
  Procedure procedure = Procedure::kAuto;
};

// Every device in [0, num_devices) holds exactly one tile position of the tile assignment (data
// tile per replica) and no position is on a device outside that range. num_devices == 0 means
// the number of tile positions. Tuples are checked element by element; replicated, manual,
// unknown and unreduced shardings hold trivially; {maximal device=D} holds iff D is in range.
ProofResult ProveSharding(const HloSharding& sharding, int64_t num_devices,
                          const FactOptions& options);
ProofResult ProveSharding(const HloSharding& sharding, int64_t num_devices,
                          int64_t timeout_ms = kDefaultTimeoutMs);

// Same kind, same tile dims and subgroup structure, and the same device at every tile position.
ProofResult ProveSame(const HloSharding& a, const HloSharding& b, const FactOptions& options);
ProofResult ProveSame(const HloSharding& a, const HloSharding& b,
                      int64_t timeout_ms = kDefaultTimeoutMs);

// `groups` equals sharding.GroupsAlongDims(dims): same groups, same order, same member order.
ProofResult ProveGroups(const HloSharding& sharding, absl::Span<const int64_t> dims,
                        const ReplicaGroups& groups, const FactOptions& options);
ProofResult ProveGroups(const HloSharding& sharding, absl::Span<const int64_t> dims,
                        const ReplicaGroups& groups, int64_t timeout_ms = kDefaultTimeoutMs);

// For every device t holding a tile under `to`, some pair targets t and its source holds, under
// `from`, the data tile t holds under `to`. Needs both shardings tiled with the same data tile
// grid and distinct devices (else unknown); `pairs` must have distinct targets.
ProofResult ProvePairs(const HloSharding& from, const HloSharding& to,
                       const SourceTargetPairs& pairs, const FactOptions& options);
ProofResult ProvePairs(const HloSharding& from, const HloSharding& to,
                       const SourceTargetPairs& pairs, int64_t timeout_ms = kDefaultTimeoutMs);

// Decides one fact as `options` asks: `enumerate` (visiting `work` positions, named by `what` in
// the procedure note) and/or `z3_proof` (run behind GuardZ3, naming `fact` on failure). With both,
// differing verdicts give unknown; a Z3 unknown leaves the enumeration's verdict.
ProofResult DecideFact(const FactOptions& options, int64_t work, const std::string& what,
                       absl::string_view fact, const std::function<ProofResult()>& enumerate,
                       const std::function<ProofResult()>& z3_proof);

// `0.42 ms`, `12 ms`, `1.23 s`.
std::string DurationText(double seconds);

}  // namespace spmdcheck::smt

#endif  // SPMDCHECK_SMT_DEVICE_ALGEBRA_H_
