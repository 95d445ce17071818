// prepare -> partition (through the partitioner under test) -> judge: the one judgement that
// `check`, `reduce` and the fuzz campaign share.
//
// Verdicts for XLA's partitioners combine three checks on the same module:
//  * oracle: XLA's module after spmd-partitioning against the global module XLA received, on our
//    N-device interpreter (exact collectives, poisoned padding);
//  * XLA end to end: XLA's sharded executable against XLA's single-device compile of the same
//    global program, on the same inputs;
//  * interpreter vs XLA: our interpreter against XLA's single-device run of the global program.
// `fails` is claimed only when XLA's own execution confirms it (end to end). A disagreement only
// our oracle sees is `oracle-only`, one between the interpreters `oracle-disagrees`: both are
// unknown verdicts to investigate, never reported as XLA bugs.
#ifndef SPMDCHECK_CHECK_CHECK_PIPELINE_H_
#define SPMDCHECK_CHECK_CHECK_PIPELINE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/partition_stats.h"
#include "ir/hlo_module.h"
#include "ir/verdict.h"
#include "oracle/equivalence.h"
#include "target/partitioner_under_test.h"

namespace spmdcheck::check {

struct CheckOptions {
  int64_t num_partitions = 0;  // 0: the module's.
  int64_t trials = 2;
  uint64_t seed = 1;
  // Only for the overload without a partitioner (the reference partitioner with this bug).
  std::string inject_bug;
  bool shrink = true;  // Shrink shapes over the oracle's budget first.
  // Evaluate bf16/f16/f8 programs as f32 in the oracle (partitioning reorders sums; in narrow
  // types that changes roundings, which is not a partitioning bug). Both programs alike.
  bool widen_narrow_floats = true;
  int64_t max_elements_per_array = int64_t{1} << 22;
  // With `shrink`: modules with a larger array are shrunk until every array has at most this
  // many elements (small arrays keep 64-device checks fast).
  int64_t shrink_elements_per_array = int64_t{1} << 12;
  // Run the partitioner's executables where it has them (XLA end to end, interpreter vs XLA).
  bool execute = true;
  // Print a partitioned module that the partitioner built in memory (ours) and parse it back:
  // the text a user gets must be valid HLO. Modules that arrive as text (XLA, cmd:) are parsed
  // anyway. The reference campaign turns it off (the in-memory module is still verified; the
  // print/parse round trip has its own libFuzzer target and properties).
  bool round_trip_in_memory_output = true;
  // Our oracle and interpreter stop a check's loops after this many seconds (unknown); 0: no
  // limit. Campaigns and reductions set one: a program whose loop runs a million times must not
  // take their time budget.
  double oracle_seconds = 0;
  // The lint judge: the collective lint (lint/) on a partitioned program the oracle finds
  // correct; a proved cheaper chain is a wasteful finding (a cost, never a miscompile).
  bool lint = false;
  // The SMT proofs judge: Z3 proves every collective of the partitioned program consistent with
  // the shardings at its two ends (smt/instruction_checks.h, unannotated values inferred).
  bool prove = false;
  // Per proof, for both judges; a proof that runs out of it is unknown, never holds.
  int64_t proof_timeout_ms = 2000;
};

enum class CheckStatus {
  kHolds,        // The partitioned program equals the global one on every trial.
  kFails,        // A counterexample (for XLA: confirmed by XLA's own execution).
  kUnsupported,  // Unknown: the oracle, the partitioner or XLA cannot judge it (message says).
  kCrash,        // The partitioner crashed, failed internally, or produced invalid HLO.
  kRejected,     // The partitioner refused the module (its message).
  kTimeout,      // The partitioner did not finish in time.
};
const char* CheckStatusName(CheckStatus status);

// What kind of unknown or fail it is, for signatures and reports.
enum class Finding {
  kNone,
  kConfirmedByXla,   // XLA's sharded run differs from its single-device run.
  kOracleOnly,       // Only our oracle sees a difference.
  kOracleDisagrees,  // Our interpreter and XLA disagree on the global program.
  kUnavailable,      // The partitioner is not there (no jax...).
  // XLA's sharded run is wrong only when the padding of uneven input shards holds garbage.
  kReadsInputPadding,
  // XLA's sharded run differs from its single-device run, and our interpreter agrees with the
  // sharded run: XLA's single-device compile (code generation, buffer sharing) is the suspect,
  // not the partitioner.
  kSingleDeviceSuspect,
  // XLA's HLO -> StableHLO -> HLO route changed what the program computes (our interpreter
  // gives the module as sent and as XLA received it different values): the partitioned module
  // was judged against another program, so no `holds` stands.
  kRoundTripChangesMeaning,
};
const char* FindingName(Finding finding);

// A differential check on executions.
struct ExecutionCheck {
  Verdict verdict = Verdict::kUnknown;
  std::string detail;  // The first mismatch, or why unknown.
  int64_t device = -1;
  // The flat output (the root's array leaves in order) of the first mismatch; -1 when unknown.
  int64_t output = -1;
  std::vector<int64_t> wrong_devices;
  int64_t trial = -1;
  int64_t trials_run = 0;
  bool padding_dependent = false;  // Fails with poisoned input padding, holds with zeros.
  // End to end, when it fails: XLA's sharded run on that trial equals our interpreter's run of
  // the global program (so the single-device run is the odd one out).
  bool sharded_agrees_with_interpreter = false;
  // What XLA's sharded run was compared with (target::PartitionerUnderTest::GlobalRunName).
  std::string reference = "single-device run";
};

// A cheaper chain the lint proved in a correct partitioning (the lint judge): the pattern names
// the signature `<partitioner>.wasteful.<pattern>`.
struct CheaperChain {
  std::string pattern;
  std::string message;
  // What it proposes, in terms a reduction keeps (no sizes): the value whose sharding to change
  // and the better sharding, or the collectives the proposed chain uses.
  std::string proposal;
};

// What one judge (check/judges.h) found: its verdict, the first difference or why it could not
// judge, its time. `ran` is false when it could not run at all (the oracle refused the program,
// XLA's executables not run under --no-execute).
struct JudgeRecord {
  // `oracle`, `round-trip`, `xla-end-to-end`, `interpreter-vs-xla`, `lint`, `smt-proofs`.
  std::string judge;
  Verdict verdict = Verdict::kUnknown;
  std::string detail;
  double seconds = 0;
  bool ran = true;
};

struct CheckOutcome {
  CheckStatus status = CheckStatus::kUnsupported;
  Finding finding = Finding::kNone;
  std::string message;             // One line: why unknown / crash, or the first mismatch.
  std::string shrink_note;         // Non-empty when shapes were shrunk: what to.
  std::vector<std::string> notes;  // How the module was prepared, what XLA changed.
  std::string partitioner_spec;
  target::PartitionerSelfReport self_report;
  double oracle_seconds = 0;       // Our oracle's check (both programs, every trial).
  double execution_seconds = 0;    // XLA's executions and our interpreter on the global program.
  double interpreter_seconds = 0;  // ... of which our interpreter.
  std::vector<target::PassDump> pass_dumps;  // The partitioner's, when it was asked for them.
  std::vector<JudgeRecord> judges;  // In the order the judges ran; the status combines them.
  std::vector<CheaperChain> cheaper_chains;  // The lint judge's proved findings.
  bool oracle_ran = false;
  oracle::EquivReport report;  // The oracle: partitioned vs global.
  std::optional<ExecutionCheck> xla_end_to_end;
  std::optional<ExecutionCheck> interpreter_vs_xla;
  analysis::PartitionStats stats;
  std::unique_ptr<HloModule> partitioned;  // May be null (crash before partitioning ended).
  std::string partitioned_text;            // As the partitioner wrote it (XLA's dump).
  // The global module the partitioned one was judged against when it is not the one given
  // (XLA: what XLA received, with the shardings XLA settled on). Null otherwise.
  std::unique_ptr<HloModule> judged_global;
  // When the module was widened or shrunk for the check, and the partitioner is ours: the
  // partitioning of the module as written (what costs are reported on). Null otherwise.
  std::unique_ptr<HloModule> as_written;
  // How the module the partitioner received differs from the one sent (XLA's round trip).
  std::vector<std::string> received_changes;
};

// `op_name="..."` of an instruction's metadata (XLA names the instruction of the module it
// received that a partitioned instruction came from there), or empty.
std::string MetadataOpName(const HloInstruction& instruction);

// InvalidArgument only for a module that does not verify (or that the reference partitioner
// calls inconsistent); everything else is an outcome.
absl::StatusOr<CheckOutcome> CheckPartitioning(const HloModule& global,
                                               target::PartitionerUnderTest& partitioner,
                                               const CheckOptions& options);
// The reference partitioner (with options.inject_bug).
absl::StatusOr<CheckOutcome> CheckPartitioning(const HloModule& global,
                                               const CheckOptions& options);

// Opcode-count differences between two modules ("tuple: 1 -> 0"), and parameter/result shape
// changes: what a round trip changed.
std::vector<std::string> DescribeModuleChanges(const HloModule& sent, const HloModule& received);

}  // namespace spmdcheck::check

#endif  // SPMDCHECK_CHECK_CHECK_PIPELINE_H_
