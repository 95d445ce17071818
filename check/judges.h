// The judges of a partitioning, as a table: each judge compares the partitioned program with the
// global one in its own way and records what it found in the CheckOutcome; one verdict policy
// (check/verdict_policy.cc) then combines their records into the outcome's status. The check
// pipeline (check/check_pipeline.cc) prepares the two programs, runs every judge of `Judges()`
// that applies, in order, and applies the policy. A new judge is a class here and a line in
// `Judges()`, as llvm-reduce registers its delta passes.
//
// Registered, in order:
//  * oracle: our N-device interpreter runs the partitioned program against the global one
//    (exact collectives, poisoned padding, localisation of the first divergence);
//  * round-trip: when the partitioner received another module than the one sent (XLA's
//    HLO -> StableHLO -> HLO route), our interpreter runs both on the same inputs; different
//    values mean the partitioned module was judged against another program, and the policy
//    lets no `holds` stand over it (round-trip-changes-meaning);
//  * xla-executions: the partitioner's own executables (XLA's sharded executable against its
//    one-device run of the global program: "xla-end-to-end") and our interpreter against that
//    one-device run ("interpreter-vs-xla"); applies when the partitioner has executables and
//    --no-execute is not given;
//  * lint (CheckOptions::lint): the collective lint (lint/) on a partitioned program the oracle
//    finds correct: `fails` when it proves a cheaper chain (CheckOutcome::cheaper_chains). It
//    judges cost, not values: the verdict policy makes it a note, never a miscompile;
//  * smt-proofs (CheckOptions::prove): Z3 proves every collective of the partitioned program
//    consistent with the shardings at its ends (smt/instruction_checks.h). A refutation is a
//    proof against the partitioning: the policy never lets the status hold over it. A timeout
//    or a collective it cannot encode is unknown, never holds.
#ifndef SPMDCHECK_CHECK_JUDGES_H_
#define SPMDCHECK_CHECK_JUDGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "check/check_pipeline.h"
#include "ir/hlo_module.h"
#include "ir/primitive_type.h"
#include "ir/sharding.h"
#include "oracle/sharded_values.h"
#include "target/partitioner_under_test.h"

namespace spmdcheck::check {

// What every judge sees: the programs (as the partitioner received them, and as judged: XLA's
// received module with the shardings it settled on), their oracle forms (narrow floats widened),
// the partitioner's output (its executables), the shardings of the entry's parameters and
// result leaves, and the check's options.
struct JudgeInputs {
  target::PartitionerUnderTest& partitioner;
  const target::PartitionOutput& output;
  const HloModule& sent;
  const HloModule& judged;
  const HloModule& oracle_global;
  const HloModule& oracle_partitioned;
  const std::vector<HloSharding>& parameter_shardings;
  const std::vector<HloSharding>& output_shardings;
  int64_t num_partitions = 0;
  const CheckOptions& options;
  // Set by the check pipeline: the judged module is not the one given (XLA's received module).
  bool judged_is_received = false;
};

// A partitioning the oracle found correct, as the judges that read programs alone see it
// (Judge::JudgesProgramsAlone).
struct CorrectPartitioning {
  const HloModule& partitioned;
  const std::string& partitioned_text;
  // What it was judged against: the program the partitioner received (its annotations are the
  // user's constraints).
  const HloModule& judged;
  int64_t proof_timeout_ms = 2000;
};

class Judge {
 public:
  virtual ~Judge() = default;
  // The name its records carry (`oracle`, `xla-executions` ...).
  virtual absl::string_view name() const = 0;
  // Whether it has anything to judge for these inputs.
  virtual bool Applies(const JudgeInputs& inputs) const = 0;
  // Judges; appends its records (one per comparison it makes) to `outcome.judges` and fills the
  // outcome's detail fields it owns (the oracle's report, the execution checks, timings).
  // `outcome.judges` holds the records of the judges before it (a later judge may use them: XLA's
  // executions run the oracle's failing inputs first).
  virtual void Run(const JudgeInputs& inputs, CheckOutcome& outcome) const = 0;
  // Whether it judges a correct partitioning from its programs alone (no partitioner, no
  // executables, no other judge's record): a fuzz campaign runs those on a thread of its own,
  // beside its next cases (JudgeProgramsAlone), instead of in the check.
  virtual bool JudgesProgramsAlone() const { return false; }
  // For those: judges `partitioning` as Run would, appending its record to `outcome.judges` and
  // filling the fields it owns. Safe to call from any thread.
  virtual void RunOnPrograms(const CorrectPartitioning& /*partitioning*/,
                             CheckOutcome& /*outcome*/) const {}
};

// The table, in the order the judges run.
absl::Span<const Judge* const> Judges();

// Sets `outcome.status`, `finding` and `message` from the judges' records (the one verdict
// policy: `fails` against XLA only when XLA's own execution shows it). `executed` says whether
// the partitioner's executables were run.
void ApplyVerdictPolicy(CheckOutcome& outcome);

// Runs every judge of the table that judges programs alone (today: the lint), in the table's
// order, on a correct partitioning; the outcome holds their records and what they found
// (cheaper_chains). The fuzz campaign's cost check (tools/lint_cost_check.h): the same judges
// as `check --lint`, run beside the cases. Safe to call from any thread.
CheckOutcome JudgeProgramsAlone(const CorrectPartitioning& partitioning);

// Judges' helpers shared with tests.
// The trials XLA's executables run, in order: the oracle's trials 0..trials-1; when only the
// oracle has seen a difference (on `oracle_failing_trial`), that trial's inputs first and as many
// fresh trials again after them, so that a difference XLA shows on other inputs is not missed.
std::vector<int64_t> ExecutionTrialOrder(int64_t trials, int64_t oracle_failing_trial);

// The sharding of each array leaf of `shape` under `sharding` (a tuple sharding's elements).
std::vector<HloSharding> LeafShardings(const HloSharding& sharding, const Shape& shape);

// Tolerance between two executions of the same program (two compiles, our interpreter against
// XLA's, or our interpreter on two forms of one program): integers exact; floats within 64 units
// in the last place of their type.
oracle::Tolerance ExecutionTolerance(PrimitiveType type);

// `[output {L} ]at [i,j]: expected E, got A`.
std::string MismatchText(const oracle::ElementMismatch& m);

// The record of judge `name` in `outcome`, or null.
const JudgeRecord* FindJudgeRecord(const CheckOutcome& outcome, absl::string_view name);

}  // namespace spmdcheck::check

#endif  // SPMDCHECK_CHECK_JUDGES_H_
