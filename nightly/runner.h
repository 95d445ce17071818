// `spmdcheck nightly`: one night of every campaign, time-boxed, resumable after a kill.
//
// A night runs its targets in order — the canary (the reference partitioner with an injected
// bug, which must be found), the campaigns (`spmdcheck fuzz --partitioner reference|xla|shardy`
// as child processes, or through the Ray driver), each libFuzzer binary in fork mode followed by
// a merge into the kept corpus — each with its share of the time left. The night record is
// saved atomically before and after every step and while a target runs (its spent time), and
// the findings database is updated after every target from what is on disk, so a kill loses at
// most the time of the target in hand: `--resume` starts it again with the time that was left
// and picks up every finding the killed run had written.
#ifndef SPMDCHECK_NIGHTLY_RUNNER_H_
#define SPMDCHECK_NIGHTLY_RUNNER_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace spmdcheck::nightly {

// The partitioners a night runs fuzz campaigns of (`--targets` names them), in plan order.
inline const std::vector<std::string> kCampaignTargets = {"reference", "xla", "shardy"};

struct NightlyOptions {
  std::string dir;     // The state directory (created).
  double seconds = 0;  // The night's budget.
  // Of kCampaignTargets (the first that takes injected bugs runs the canary too), "libfuzzer".
  std::vector<std::string> targets = {"xla", "shardy", "reference", "libfuzzer"};
  bool resume = false;
  std::string night;             // Empty: the date (YYYY-MM-DD, .2, .3, ... when taken).
  std::optional<uint64_t> seed;  // Empty: derived from the night's id.
  std::string spmdcheck_binary;  // Runs the campaigns (`spmdcheck fuzz`).
  std::string source_dir;        // The checkout: corpus/, fuzz/targets/*.dict, workers/ray/.
  std::string libfuzzer_dir;     // Where the libFuzzer binaries are (build-fuzz/fuzz).
  std::vector<std::string> libfuzzer_targets;  // Empty: every target of the project.
  std::string ray_address;                     // Non-empty: campaigns through the Ray driver.
  std::string ray_driver;  // workers/ray/ray_fuzz.py of the checkout ($SPMDCHECK_RAY_DRIVER).
  int64_t ray_workers = 2;
  std::string xla_python;  // The python that runs the Ray driver.
  std::string canary_bug = "dot-padding-unmasked";
  std::string canary_signature;  // Empty: the known one of the default bug, else any bug claim.
  double canary_seconds = 0;     // 0: 5% of the night, between 3 and 60 seconds.
  // A drill: this injected bug is switched on in the campaigns of partitioners that take
  // injected bugs (the reference campaign) too, so that the whole
  // pipeline (findings, new vs known, reports) runs on a bug that is there. Empty: none.
  std::string inject_bug;
  int64_t jobs = 1;  // Campaign threads; libFuzzer -fork jobs.
  // Per new campaign finding; -1: a quarter of the target's share, at most spmdcheck fuzz's
  // default (the partitioner's reduce_seconds: 10 s for ours, 90 s for XLA's).
  double reduce_seconds = -1;
  int64_t max_devices = 8;
  const std::atomic<bool>* cancel = nullptr;  // SIGINT/SIGTERM: stop, leave it resumable.
};

struct NightlyResult {
  std::string night;
  std::string status;  // Of the night record.
  int64_t new_bug_claims = 0;
  int64_t new_to_investigate = 0;  // New findings that are not bug claims (wasteful excluded).
  int64_t unknown_targets = 0;     // Targets that could not run or failed.
  bool broken = false;             // The canary missed its bug.
  bool stopped = false;            // Cancelled before the end (resumable).
  // 0 ok, 1 new bug claims, 3 broken night, unknown targets, new findings to investigate or
  // stopped (errors are returned as a status: exit 2).
  int ExitCode() const;
};

// The signature the canary's default bugs show (`wrong-result.all-reduce` for
// dot-padding-unmasked), or empty when not known (then any bug claim counts).
std::string CanarySignatureFor(const std::string& bug);

absl::StatusOr<NightlyResult> RunNightly(const NightlyOptions& options, std::ostream& out);

}  // namespace spmdcheck::nightly

#endif  // SPMDCHECK_NIGHTLY_RUNNER_H_
