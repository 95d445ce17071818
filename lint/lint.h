// The collective lint: finds chains of data movement and collectives in a partitioned module
// that a cheaper chain of collectives could replace, proposes that chain (the partitioner run on
// the chain's global meaning with intermediate shardings chosen by a dynamic program over
// candidate shardings), and proves the replacement gives every device the same values
// (smt/chain_prover.h). Pattern rules (lint/patterns.h) add local rewrites, each backed by a rule
// of the rewrite catalog. See docs/lint.md.
#ifndef SPMDCHECK_LINT_LINT_H_
#define SPMDCHECK_LINT_LINT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/cost_model.h"
#include "ir/hlo_module.h"
#include "ir/mesh.h"
#include "lint/inference.h"
#include "lint/topology.h"

namespace spmdcheck::lint {

// The sharding a finding says to change: `instruction` (as written in the linted module) holds
// the global value `holds` (the pre-partitioning name when the module says so, else the same
// name) under `sharding`; `better_sharding` is what the proposed chain uses instead. Users apply
// it as a sharding constraint on `holds` in their program.
struct ShardingCause {
  std::string instruction;
  std::string holds;
  std::string sharding;
  std::string better_sharding;
  // The same constraint in JAX's notation when the mesh has named axes and whole axes express
  // `better_sharding` (`jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P(...)))`).
  std::string jax;
};

// Cost of a chain: the flat alpha-beta figures (analysis/cost_model.h) and, with a topology,
// the same traffic with bytes that cross a fast domain weighted (lint/topology.h).
struct ChainCost {
  analysis::CollectiveCost flat;
  std::optional<analysis::CollectiveCost> topology;
};

enum class FindingStatus {
  kProved,     // A cheaper replacement, proved to give every device the same values.
  kUnproven,   // A cheaper replacement whose proof failed or timed out: shown, never counted.
  kIncorrect,  // The chain does not implement the shardings it claims (an smt refutation).
};
absl::string_view FindingStatusName(FindingStatus status);  // proved | unproven | incorrect

struct Finding {
  FindingStatus status = FindingStatus::kUnproven;
  // `search` (the intermediate-sharding search), `incorrect-chain`, or a pattern rule's name.
  std::string rule;
  std::string message;                    // One line, e.g. what to change.
  std::vector<std::string> instructions;  // As named in the linted module, in program order.
  int64_t first_line = 0;                 // Source lines of the first and last instruction (0:
  int64_t last_line = 0;                  // no location).
  std::string global_meaning;             // E.g. `copy.428 = reshape(transpose(...))`.
  ChainCost current;
  ChainCost proposed;
  std::string proposed_hlo;  // A partitioned module for the replacement chain; empty if none.
  std::string proof;         // FormatProofResult of the equivalence (or refutation) proof.
  std::string catalog_rule;  // Pattern findings: the rewrite-catalog rule that proves the rewrite.
  std::optional<ShardingCause> cause;
};

struct LintOptions {
  int64_t num_partitions = 0;         // 0: the module's num_partitions.
  const HloModule* global = nullptr;  // --global: the pre-partitioning program.
  // Infer what unannotated values hold (lint/inference.h) before splitting into chains; off, only
  // the module's own annotations are read (as before issue 14).
  bool infer = true;
  bool holdings_only = false;  // Stop after the inference (`--holdings`).
  // The named device mesh (`--mesh data=2,model=4`); else read from the module's text.
  std::optional<Mesh> mesh;
  std::optional<Topology> topology;
  int64_t timeout_ms = 20000;  // Per proof.
  // The `global` program is what the user wrote, before sharding propagation (the fuzz campaign's
  // programs): its sharding= annotations are the user's, and the values they annotate keep their
  // shardings like parameters, the result and custom-call Sharding constraints always do. Off,
  // `global` is taken to be a dump after propagation (every value annotated).
  bool global_shardings_are_constraints = false;
};

struct LintReport {
  std::string path;
  int64_t num_partitions = 0;
  int64_t chains = 0;  // Chains examined.
  // The inference: data values without an annotation, the shardings inferred for them, and the
  // annotations checked against it.
  int64_t unannotated = 0;
  std::vector<InferredValue> holdings;
  std::vector<ClaimCheck> claims;
  std::vector<Finding> findings;   // In program order.
  std::vector<std::string> notes;  // Chains skipped, and why.
  int64_t proved() const;
  int64_t incorrect() const;
};

// Lints the entry computation of `module` (parsed from `source_text`, which is read for the
// `// holds=NAME` comments XLA-style dumps carry). Errors: InvalidArgument for a module whose
// partition count is unknown or inconsistent.
absl::StatusOr<LintReport> LintModule(const HloModule& module, absl::string_view source_text,
                                      const LintOptions& options);

// Report renderings (lint/report.cc). Text is for people; JSON's schema is documented in
// docs/lint.md and stable; SARIF is 2.1.0 with one result per finding.
std::string FormatText(const LintReport& report);
// `--holdings`: one line per inferred value and per checked annotation, then a count.
std::string FormatHoldings(const LintReport& report);
std::string FormatJson(const LintReport& report);
std::string FormatSarif(const LintReport& report);

}  // namespace spmdcheck::lint

#endif  // SPMDCHECK_LINT_LINT_H_
