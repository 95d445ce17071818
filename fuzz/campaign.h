// The fuzz campaign the nightly job runs: generate a sharded program, partition it with the
// reference partitioner, judge it with the oracle; every new failure signature is reduced and
// written as a replayable repro. Deterministic: case i of seed S is always the same program.
#ifndef SPMDCHECK_FUZZ_CAMPAIGN_H_
#define SPMDCHECK_FUZZ_CAMPAIGN_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fuzz/findings.h"
#include "nlohmann/json.hpp"
#include "target/partitioner_under_test.h"

namespace spmdcheck::fuzz {

// A cheaper partitioning of a correct module, proved (the collective lint): the pattern names
// the signature `<partitioner>.wasteful.<pattern>`.
struct CostFinding {
  std::string pattern;
  std::string message;
  // What it proposes, in terms a reduction keeps (no sizes): the value whose sharding to change
  // and the better sharding, or the collectives the proposed chain uses. A reduced case must
  // show the same proposal, not merely the same pattern.
  std::string proposal;
};
// Looks for proved cheaper chains in a partitioned module that holds (`global`: the module it
// was judged against). The CLI sets it to the table's judges of programs alone
// (check::JudgeProgramsAlone: the lint judge, tools/lint_cost_check.h); tests set their own.
using CostCheck = std::function<std::vector<CostFinding>(
    const HloModule& partitioned, const std::string& text, const HloModule& global)>;

struct CampaignOptions {
  // Set from outside (a signal handler, another thread) to stop the campaign at once: workers
  // finish the case in hand (a reduction in progress is abandoned and the unreduced program
  // written), and RunCampaign returns the report so far with `stopped` set. Not owned.
  const std::atomic<bool>* cancel = nullptr;
  double seconds = 60;  // Stop after this long (0: no limit).
  int64_t cases = 0;    // Stop after this many cases (0: no limit).
  // Which case indices this campaign runs: first_case + k * shard_count + shard_index for
  // k = 0, 1, ... (several processes or machines split one seed's cases without overlap; case
  // i of seed S is the same program everywhere).
  int64_t first_case = 0;
  int64_t shard_index = 0;
  int64_t shard_count = 1;
  uint64_t seed = 1;
  int64_t max_devices = 8;
  // The partitioners under test (`reference`, `xla`, `shardy`, `cmd:...`, comma-separated; an
  // injected bug as `reference+bug=NAME`): every case goes through each. Each job makes its own
  // (one XLA worker per job).
  std::string partitioners = target::kDefaultPartitionerSpec;
  // Generator pattern weights, `name=w,...` (fuzz/program_gen.h SetPatternWeights); empty: the
  // defaults.
  std::string pattern_weights;
  // Share of one-mesh programs (ProgramGenOptions::one_mesh_percent); -1: 50 when a partitioner
  // under test prefers them (Shardy: only one-mesh programs import into it), else 0.
  int one_mesh_percent = -1;
  // Share of cases that are sdy-level programs (fuzz/sdy_program_gen.h), run by the Shardy
  // partitioners that compile them (Shardy, as jax.jit compiles them); -1: 50 when one is
  // under test.
  int sdy_percent = -1;
  target::TargetOptions target;
  std::string reproduce_flags;  // Flags for `reproduce:` lines (--xla-venv, --timeout).
  std::string out_dir = "fuzz-out";
  int64_t jobs = 1;
  double reduce_seconds = 10;  // Per new failure.
  // Known findings (corpus/xla-findings/known.json): their signatures are counted, not reduced
  // or written again. Empty: none.
  std::string known_findings;
  // Other jaxlibs to try each new XLA finding on: the python of each virtual environment.
  std::vector<std::string> other_xla_pythons;
  // For a miscompile XLA's execution shows but the module after spmd-partitioning does not:
  // name the later pass that broke it (check/pass_bisection.h).
  bool bisect_passes = true;
  // `<a>.wasteful.bytes-vs-<b>`: on a program both partitioned correctly, partitioner a's
  // busiest device receives at least `wasteful_ratio` times, and `wasteful_min_bytes` more
  // than, partitioner b's.
  double wasteful_ratio = 2.0;
  int64_t wasteful_min_bytes = 64;
  // `<partitioner>.wasteful.<pattern>`: the lint proves a cheaper chain in a correct
  // partitioning (not for partitioners that plan with the lint's own planner). Null: not checked.
  CostCheck cost_check;
  // Where the machine-readable summary goes (default: out_dir/summary.json).
  std::string summary_path;
  // When set, each HLO-level case's generated module is written there as `case-<index>.hlo`
  // (for benches that run the same modules through something else: bench/xla_vs_jax_bench.sh).
  std::string save_modules_dir;
};

struct CampaignFailure {
  // e.g. `wrong-result.dot`, `crash.reshape` (reference), `xla.miscompile.dynamic-update-slice`
  // (confirmed by XLA's execution), `shardy.oracle-only.dot` (to investigate, not a bug claim),
  // `xla.crash.compile`, `xla.xla-rejects-valid`, `xla.timeout`.
  std::string signature;
  std::string partitioner;  // The spec.
  bool claim = true;        // A bug claim (false: oracle-only/oracle-disagrees, to investigate).
  std::string path;         // The finding's folder (fuzz/findings.h), empty when known.
  std::string known_as;     // The known finding it matches (corpus/xla-findings), or empty.
  // A miscompile whose reduced case's root moved down to the op that makes the wrong value
  // (fuzz::FindRootCause): that case's signature; empty when the root did not move.
  std::string root_cause;
  int64_t first_case = 0;
  uint64_t case_seed = 0;
  int64_t count = 0;  // Cases with this signature.
  int64_t instructions_before = 0, instructions_after = 0;
  int64_t devices_before = 0, devices_after = 0;
  double seconds_to_find = 0;
  std::string message;
  std::vector<VersionCheck> versions;  // Other jaxlibs.
  std::string broken_by;               // The pass, for a miscompile made after partitioning.
  bool has_repro_script = false;
};

struct CampaignProgress {
  int64_t cases = 0;
  int64_t holds = 0;
  int64_t failures = 0;  // Cases that failed (all signatures).
  int64_t unsupported = 0;
  int64_t partitionings = 0;  // Cases x partitioners tried.
  int64_t accepted = 0;       // ... that produced a module (neither rejected nor crashed).
  int64_t findings = 0;       // Distinct signatures so far (known ones included).
  int64_t new_findings = 0;   // ... of which not known.
  double elapsed = 0;
};

// Per partitioner: how its cases ended.
struct PartitionerTally {
  int64_t cases = 0;
  int64_t holds = 0;
  int64_t failures = 0;     // Bug claims (confirmed miscompiles, crashes, rejections).
  int64_t investigate = 0;  // oracle-only, oracle-disagrees.
  int64_t unknown = 0;
  int64_t accepted = 0;  // The partitioner produced a module (it neither rejected nor crashed).
  // Of the cases not accepted: XLA crashed, timed out or refused a module our verifier accepts
  // (each a finding: crash.*, timeout, xla-rejects-valid.*). The rest of the shortfall is the
  // generator's (invalid input) or the import's (unknown).
  int64_t rejected_by_bug = 0;
  int64_t one_mesh_cases = 0;  // Of `cases`: one-mesh programs (the generator's option).
  int64_t one_mesh_accepted = 0;
  int64_t sdy_cases = 0;  // Of `cases`: sdy-level programs (fuzz/sdy_program_gen.h).
  int64_t sdy_accepted = 0;
  double seconds = 0;  // In the partitioner (XLA: compiles).
};

// Where the campaign's time went, summed over jobs (seconds).
struct CampaignTimes {
  double generate = 0;   // Ours: the program generator.
  double partition = 0;  // The partitioners under test (XLA: its compiles, as the worker times
                         // them inside jaxlib).
  // The partitioner's own runtime on the reference and partitioned programs (XLA: compiling the
  // one-device program and executing both, as the worker times them inside jaxlib).
  double execute = 0;
  double interpreter = 0;  // Ours: our interpreter on the global program, against XLA's.
  double oracle = 0;       // Ours: the N-device oracle.
  // Ours: the round-trip judge (check/judges.h: our interpreter on the module as sent and as
  // the partitioner received it, when a route such as HLO -> StableHLO -> HLO changed it).
  double round_trip = 0;
  // Ours: the collective lint on correct partitionings. It runs on a thread of its own while the
  // next cases compile (fuzz/background_cost_check.h), so it is not part of `cases`; a case that
  // waited for it (two partitionings already waiting) counts the wait in `Other()`.
  double lint = 0;
  double reduce = 0;  // Reductions, repros, version checks, pass bisection.
  // Wall time of the cases themselves (reductions left out).
  double cases = 0;
  // Every second of the cases that is not the partitioner compiling or running: the parts
  // above that are ours, and `Other()`.
  double Ours() const {
    const double theirs = partition + execute;
    return cases > theirs ? cases - theirs : 0.0;
  }
  // The part of `Ours()` no named part covers: worker round trips (encoding arrays, JSON,
  // pipes), HLO -> StableHLO, XLA's dumps written and parsed, inputs, comparisons, waiting for
  // the lint's thread.
  double Other() const {
    const double parts = generate + partition + execute + interpreter + oracle + round_trip;
    return cases > parts ? cases - parts : 0.0;
  }
  double Total() const { return cases + reduce; }
};

struct CampaignReport {
  CampaignProgress progress;
  CampaignTimes times;
  // Cases that contained each pattern of the generator (fuzz/program_gen.h).
  std::map<std::string, int64_t> pattern_hits;
  int64_t sdy_cases = 0;  // Cases that were sdy-level programs (generated; read or not).
  std::map<std::string, PartitionerTally> partitioners;
  std::string unavailable;  // Why a partitioner is not there (the campaign stopped at once).
  std::vector<CampaignFailure> failures;               // Unique signatures, first found first.
  std::map<std::string, int64_t> unsupported_reasons;  // First line of the reason -> count.
  bool stopped = false;  // `cancel` was set before the campaign reached its limit.
  std::string ToString() const;
  // The summary file's content (schema in docs/fuzz.md).
  nlohmann::json ToJson(const CampaignOptions& options) const;
  bool HasBugClaim() const;  // A new or known failure that is a bug claim.
};

// `progress` is called every few hundred milliseconds (from the calling thread). A repro that
// cannot be written (the stream fails) stops the campaign and is returned as an error.
absl::StatusOr<CampaignReport> RunCampaign(
    const CampaignOptions& options,
    const std::function<void(const CampaignProgress&)>& progress = {});

}  // namespace spmdcheck::fuzz

#endif  // SPMDCHECK_FUZZ_CAMPAIGN_H_
