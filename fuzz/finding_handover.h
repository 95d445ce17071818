// What happens to a new finding after the case that found it: reduce it while it stays the same
// finding, then write its folder (fuzz/findings.h) with the check run again on the reduced module,
// the failing trial's inputs, a repro.py and its verdict under the other jaxlibs. The campaign
// does both within its time budget; `spmdcheck reduce DIR` does them later for a finding the
// budget left unreduced.
#ifndef SPMDCHECK_FUZZ_FINDING_HANDOVER_H_
#define SPMDCHECK_FUZZ_FINDING_HANDOVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "check/check_pipeline.h"
#include "check/version_matrix.h"
#include "fuzz/campaign.h"
#include "fuzz/findings.h"
#include "fuzz/reducer.h"
#include "ir/hlo_module.h"
#include "target/partitioner_under_test.h"

namespace spmdcheck::fuzz {

// What kind of finding is kept while reducing: a wrong result, crash or rejection (its signature
// stays the same), or a wasteful one (kBytes: `cheaper` still receives far less; kLint: the lint
// still proves the same pattern).
enum class WastefulKind { kNone, kBytes, kLint };

// The first line of `text`, at most 120 characters (for summaries).
std::string FirstLineOf(const std::string& text);
// The bytes the busiest device of a partitioned module receives (the cost model).
int64_t MaxRecvBytes(const HloModule& partitioned);

// The kind of a signature: `<p>.wasteful.bytes-vs-<q>` is kBytes, another `.wasteful.` kLint.
WastefulKind WastefulKindOf(const std::string& signature);

struct FindingPredicateOptions {
  WastefulKind wasteful = WastefulKind::kNone;
  target::PartitionerUnderTest* cheaper = nullptr;  // For kBytes.
  CostCheck cost_check;                             // For kLint.
  // For kLint: the proposal (CostFinding::proposal) the reduced case must keep; empty: any
  // proposal of the signature's pattern.
  std::string proposal;
  double wasteful_ratio = 2.0;
  int64_t wasteful_min_bytes = 64;
  // For a crash or rejection: the failed check (check::FailedCheckOf) a reduced case must fail
  // again; empty: any of the signature's source file.
  std::string failed_check;
  // Accept the signature's kind with any op (`xla.miscompile.` of `xla.miscompile.concatenate`):
  // for DescendRoot, which looks for the op that makes a wrong value.
  bool any_op_of_kind = false;
  // True when the reduction must stop now (a cancelled campaign): the predicate then errs.
  std::function<bool()> cancelled;
  // When the reduction ends: a candidate's check gets our oracle's time until then (at most
  // kReductionOracleSeconds), so that one candidate with a long loop cannot overrun it.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// A reduction candidate's oracle time at most (CheckOptions::oracle_seconds).
inline constexpr double kReductionOracleSeconds = 5;

// The lint's proved findings (`cost_check`) on `partitioner`'s output for `program` whose
// pattern names `signature` (`<partitioner>.wasteful.<pattern>`); none when the partitioning
// does not hold.
std::vector<CostFinding> WastefulFindings(target::PartitionerUnderTest& partitioner,
                                          const std::string& signature,
                                          const check::CheckOptions& check,
                                          const CostCheck& cost_check, const HloModule& program);

// Interesting = `partitioner` still fails with `signature` (or, for a wasteful finding, the same
// waste is still there: the same proposal when options.proposal says one) on the candidate.
InterestingnessFn FindingPredicate(target::PartitionerUnderTest& partitioner,
                                   const std::string& signature, const check::CheckOptions& check,
                                   const FindingPredicateOptions& options);

// True for a wrong result XLA's runs show (`<p>.miscompile.<op>`,
// `<p>.single-device-miscompile.<op>`): the signatures whose op may be an output op that only
// carries the wrong value.
bool IsMiscompileSignature(const std::string& signature);

// The op that makes a miscompile's wrong value: `reduced` with its root moved down the chain
// that makes it while the partitioner still miscompiles it (DescendRoot; any op of the
// signature's kind), and that module's signature. Nullopt when the root did not move.
// The new root keeps the sharding the partitioner's propagation gave it in `reduced`
// (PropagatedShardings), else one derived from its old consumer's (DescendRoot).
struct RootCause {
  std::unique_ptr<HloModule> module;
  std::string signature;
  int64_t steps = 0;
  std::vector<std::string> step_notes;  // DescendResult::step_notes.
};
absl::StatusOr<std::optional<RootCause>> FindRootCause(
    target::PartitionerUnderTest& partitioner, const HloModule& reduced,
    const std::string& signature, const check::CheckOptions& check, FindingPredicateOptions options,
    std::chrono::steady_clock::time_point deadline);

// What the reduction line says about a root cause: `; then the root moved N op(s) down to the op
// that makes the wrong value: SIGNATURE (a -> b (propagated sharding {...}))`.
std::string RootCauseNote(const RootCause& cause);

// The sharding `propagated` (the partitioner's module after sharding propagation,
// PartitionOutput::propagated) gives each instruction of `module`'s entry, by `module`'s names:
// XLA renames instructions and names the one each came from in its metadata (op_name); an
// instruction is matched by that name (else its own) with the same opcode and shape.
absl::flat_hash_map<std::string, HloSharding> PropagatedShardingsByName(
    const HloModule& module, const HloModule& propagated);

// PropagatedShardingsByName of `module` after `partitioner` compiled it once; empty when the
// partitioner reports no propagated module (ours, cmd:) or does not compile it.
absl::flat_hash_map<std::string, HloSharding> PropagatedShardings(
    target::PartitionerUnderTest& partitioner, const HloModule& module);

// Reduces `program` for at most `seconds` (<= 0: not reduced; the record says why, with
// `unreduced_reason`). A program from jax's level (its StableHLO is what is compiled) is kept as
// generated: the reducer changes HLO.
absl::StatusOr<ReduceResult> ReduceFinding(const HloModule& program,
                                           const InterestingnessFn& interesting, double seconds,
                                           const std::string& unreduced_reason);

struct FindingWriteOptions {
  std::string out_dir;  // The folder goes to out_dir/<signature>.
  WastefulKind wasteful = WastefulKind::kNone;
  bool bisect_passes = true;
  // Other jaxlibs to try the finding on; null: not tried (`versions_note` says why).
  check::VersionMatrix* matrix = nullptr;
  std::string versions_note;
  // Flags for the `reproduce:` commands (--partitioner, --inject-bug, --xla-venv ...).
  std::string reproduce_flags;
};

// Writes the finding's folder for `repro` (reduced or as found; `jax_source` its StableHLO for a
// jax-level program): checks it once more for the message, the partitioned module and the
// failing trial, writes the inputs, a repro.py (not for a wasteful finding), the other versions.
// `record` comes with signature, partitioner, claim, campaign, case and reduction filled in; the
// rest is filled here. Returns the folder.
absl::StatusOr<std::string> WriteFinding(target::PartitionerUnderTest& partitioner,
                                         const HloModule& repro, const std::string& jax_source,
                                         const check::CheckOptions& check,
                                         const FindingWriteOptions& options, FindingRecord& record);

}  // namespace spmdcheck::fuzz

#endif  // SPMDCHECK_FUZZ_FINDING_HANDOVER_H_
