// The pre-partitioning ("global") program of a partitioned module, as `lint --global` and
// `prove chain|instructions --global` read it: which global value each instruction of the
// partitioned module holds (its `// holds=NAME` comment, else its own name), the run of global ops
// a chain implements, and the partitioned chain those ops give under the global program's
// shardings (the reference partitioner), against which a chain is proved or refuted.
#ifndef SPMDCHECK_LINT_GLOBAL_PROGRAM_H_
#define SPMDCHECK_LINT_GLOBAL_PROGRAM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/hlo_module.h"
#include "ir/sharding.h"
#include "lint/chains.h"
#include "lint/search.h"
#include "smt/chain_prover.h"
#include "smt/proof_result.h"

namespace spmdcheck::lint {

// What the partitioned module says about one of its instructions: the global value it holds and
// the sharding (attribute first, then the trailing comment).
struct Annotation {
  std::string holds;
  std::optional<HloSharding> sharding;
};
Annotation AnnotationOf(const HloInstruction& h, const LineComments& comments);

// The chain's global meaning read from the global program: the run of shape ops (copy, bitcast,
// reshape, transpose, slice, broadcast) from the value the source holds to the value the end
// holds. NotFound when the global program has no such values; Unimplemented when another op lies
// between them.
absl::StatusOr<GlobalChain> MeaningFromGlobal(const Chain& chain, const HloModule& global,
                                              const LineComments& comments);

// The partitioned chain that computes `global`'s ops with the global program's shardings, the
// chain's own source and end shardings at its ends (`end_sharding` when the end has none).
absl::StatusOr<std::unique_ptr<HloModule>> ReferenceChain(
    const Chain& chain, const GlobalChain& global, const std::optional<HloSharding>& end_sharding,
    int64_t num_partitions);

// `prove chain FILE --global PRE.hlo`: the chain of `module` from options.from (default: the one
// parameter the end depends on) to options.to (default: the root) gives every device what the
// global program's ops give it under the global program's shardings: proved, refuted with the
// device, local index and both values, or unknown (no such global values, unsupported ops).
// `checked` (may be null) receives what was compared.
smt::ProofResult ProveChainAgainstGlobal(const HloModule& module, absl::string_view source_text,
                                         const HloModule& global,
                                         const smt::ChainProofOptions& options,
                                         std::string* checked);

}  // namespace spmdcheck::lint

#endif  // SPMDCHECK_LINT_GLOBAL_PROGRAM_H_
