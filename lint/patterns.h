// Pattern rules of the lint: names for the shapes of waste the search removes (each tied to the
// rewrite-catalog rule that proves the rewrite for every mesh), and the repeated-collective rule
// that looks across chains.
#ifndef SPMDCHECK_LINT_PATTERNS_H_
#define SPMDCHECK_LINT_PATTERNS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/hlo_module.h"
#include "lint/chains.h"
#include "lint/lint.h"
#include "lint/topology.h"

namespace spmdcheck::lint {

struct PatternMatch {
  std::string rule;          // Empty: no named pattern.
  std::string catalog_rule;  // smt/rewrite_catalog rule proving the rewrite (may be empty).
  std::string description;
};

// The named pattern `chain` shows, given the cheaper `proposed` module for it.
PatternMatch MatchPattern(const Chain& chain, const HloModule& proposed);

// A local rewrite of a chain that a pattern suggests: the chain's module with some statements
// replaced. It counts only when cheaper and proved equal to the chain (lint.cc).
struct PatternRewrite {
  PatternMatch match;
  std::unique_ptr<HloModule> module;
};

// Rewrites to try on `chain`: identity permutes and collectives over groups of one dropped,
// consecutive permutes composed, a masked all-reduce that only broadcasts replaced by a
// collective-broadcast, an all-gather followed by a slice of the device's own part dropped, an
// all-reduce followed by a dynamic-slice replaced by a reduce-scatter.
std::vector<PatternRewrite> PatternRewrites(const HloModule& module, const Chain& chain,
                                            int64_t num_partitions);

// A chain whose source and end hold the same global value, split n times finer along one dim at
// the source: one all-gather over groups of the n devices that hold the parts of each end tile
// (the resharding planner only gathers whole tile dims). nullopt when the shardings do not
// allow it. The proposed module's parameter is the chain's source.
std::optional<PatternRewrite> SubgroupAllGather(const Chain& chain, int64_t num_partitions);

// Collectives applied twice to the same operand with the same attributes (channel ids aside):
// one finding per repeat, proved by the equivalence prover on the two chains.
std::vector<Finding> RepeatedCollectives(const HloModule& module, int64_t num_partitions,
                                         const std::optional<Topology>& topology,
                                         int64_t timeout_ms);

// A concatenate of the same all-gather (along another dim) or collective-permute applied to
// several sources (a chain with two sources): one collective of the sources' local concatenate
// does the same in one step. One finding per such concatenate, proved by the equivalence prover
// on the two (multi-parameter) modules.
std::vector<Finding> ConcatenatedCollectives(const HloModule& module, int64_t num_partitions,
                                             const std::optional<Topology>& topology,
                                             int64_t timeout_ms);

}  // namespace spmdcheck::lint

#endif  // SPMDCHECK_LINT_PATTERNS_H_
